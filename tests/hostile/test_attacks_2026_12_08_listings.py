"""Hostile tests of an archive's LISTING (ADR 0024, ADR 0025, docs/scale.md): the publisher
writes the list of bundles (``--from FILE``, which docs/scale.md tells them to publish next to
the tars), runs the web server, or runs the S3-compatible store whose ListObjectsV2 an
``s3://bucket/prefix/`` is expanded from. Flipped bytes, copies and signatures are the earlier
reviews' (``test_attacks_2026_12_02_sources``, ``_07_listing``, ``_07_signed_copies``); the
lies of ``tests/http_range.py`` (short bodies, long lengths, redirects elsewhere, no ranges,
changed ETags) are ``tests/verify/test_url_sources.py``'s. Network on 127.0.0.1 only: a stdlib
server speaking just enough S3 (ListObjectsV2, GetObject's 404) stands in for a lying store,
since moto cannot be made to lie; commands that could hang run as a subprocess with a bound,
and the transport's time-outs (``verify._remote.*_TIMEOUT_S``) are scaled down to 1 s there.

Attacked: ``--from`` a URL; a list naming ``file:///etc/passwd``, ``/proc/self/environ``,
``../`` paths out of its folder, a local tar holding a private name; a list naming a second
origin while ``FSSPEC_HTTP_HEADERS`` carries a bearer token; one tar listed under eight
spellings (scheme case, ``./``, ``%62``, ``?``, a fragment, ``sub/../``, ``file://localhost``,
``//``); NUL, ESC, a user name and password, an unclosed IPv6 bracket, a ``file://`` folder of
another host with a password, a list that is not UTF-8; an S3 listing with keys outside the
prefix, a continuation token that repeats or cycles, fresh tokens for ever, the same key on
every page, ``IsTruncated`` without a token, an AccessDenied message with ESC, a line break
and a URL with a password; HTTP servers that trickle a byte at a time, go quiet after the
headers, never answer, promise a Content-Length they never send and keep the connection open,
redirect to ``file:``, in a loop, or answer 403 with ESC in the reason phrase.

Holes (strict xfails against 8e982c8; all four closed in the commit that added this file, each
test now asserting the fixed behaviour: ``prefix_keys`` reads the listing a page at a time
itself and refuses a key outside the prefix, a continuation token given before, a page that
says more follow without a token, and more than ``MAX_LIST_PAGES`` pages or
``MAX_LISTED_KEYS`` keys; every request has a deadline, ``RESPONSE_TIMEOUT_S`` a MiB asked for
(at least) beyond the connect time-out; ``read_list`` refuses a list named by a URL other than
``file://``):

1. ``verify._remote.prefix_keys`` (s3fs ``_iterdir``/``_list_pages``) took every key the
   store listed, inside the prefix or not: ``s3://runs/v5/`` read ``s3://runs/v4/...`` (and
   named it in the report) when the store listed it.
2. The listing never ended when the store's pagination did not: s3fs's ``_list_pages`` has no
   check on ``NextContinuationToken`` (not even botocore's paginator's "the same token twice"),
   and ``prefix_keys``/``_prefix`` had no bound on pages or keys; a token that repeats or
   cycles, or fresh tokens for ever, held the command for ever (with a key a page, each
   appended to the on-disk ``SourceList`` in ``TMPDIR``, which grew until the disk was full).
   Fresh tokens for ever now end at ``MAX_LIST_PAGES`` (100,000; 50 in this file's runs).
3. No deadline for a response as a whole (``_Http.__init__``: ``ClientTimeout(total=None,
   sock_read=60)``): a server that sent a byte every few seconds (under ``READ_TIMEOUT_S``)
   held one read of 1 MiB (``FIRST_READ``) for days, each of 3 tries.
4. ``--from https://host/list.txt`` (``verify.archive.read_list``) was opened as the local path
   ``https:/host/list.txt`` and refused "cannot read: No such file or directory".

Decisions (strict xfails, "DECISION: ..."):

1. A list's lines go wherever they point: absolute paths, ``../`` out of its folder,
   ``file://``, and any host. The file's bytes never reach the report (a file that is not a
   tar is "no tar header"), but the refusal tells a file that exists from one that does not
   and names a local tar's first member: a published report of a publisher's list is an
   oracle over the operator's disk. Were a list's sources confined to its folder (and its
   URLs to one origin), ``--from`` would be as safe as a folder.
2. ``FSSPEC_HTTP_HEADERS`` (an ``Authorization`` header, ADR 0024 point 10) goes to every
   host a list names: a publisher's list that names ``https://attacker/x.tar`` receives the
   operator's token, which ADR 0024 point 8 refuses to send on a redirect for that very
   reason ("the headers and credentials an operator configured are meant for the host they
   named"). A list is the operator's word only if the operator wrote it.

Held: a list file is never fetched; no byte of ``/etc/passwd``, ``/proc/self/environ`` or a
local secret reaches stdout or stderr; one tar under eight spellings is one bundle with eight
sources, passed; NUL, ESC, an unclosed bracket, a password (never shown) and a list that is not
UTF-8 are refusals or exit 2 on one line; a listing of the same key on several pages judges it
once; ``IsTruncated`` without a token and an AccessDenied with a hostile message are exit 2 on
one line, ESC written out, the password masked; a server quiet after its headers, one that
never answers, and a Content-Length never met on an open connection are refused, exit 2, once
the (scaled) read time-out has passed three times; a redirect to ``file:`` or in a loop is
refused; a 403 with ESC in its reason is one line, ESC written out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from audit._archive import pack
from audit.cli import main
from tests.factories import write_small_bundle
from tests.http_range import listening, serve, url_of

pytestmark = pytest.mark.timeout(120)

SCALED = """
import sys
import verify._remote as remote
for name in dir(remote):
    if name.endswith("_TIMEOUT_S"):
        setattr(remote, name, float(sys.argv[1]))
remote._BACKOFF_S = (0.05, 0.05)
remote.MAX_LIST_PAGES = 50
from audit.cli import main
raise SystemExit(main(sys.argv[2:]))
"""
"""The CLI with every time-out of ``verify._remote`` set to ``argv[1]`` seconds (a fix that
adds a deadline named ``*_TIMEOUT_S`` is scaled too), and a listing's bound on pages at 50."""

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "evidence-audit-test",
    "AWS_SECRET_ACCESS_KEY": "evidence-audit-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


class Ran:
    """A CLI run in a subprocess: its exit status (None: still running at the bound, killed),
    stdout, stderr and how long it took."""

    def __init__(self, code: int | None, out: str, err: str, took: float) -> None:
        self.code, self.out, self.err, self.took = code, out, err, took


def _run(
    args: list[str], *, bound: float, env: dict[str, str] | None = None, scale: float = 1.0
) -> Ran:
    """``audit ARGS`` in a subprocess with its time-outs scaled to ``scale`` seconds, killed
    (its own process group) after ``bound`` seconds."""
    environment = {**os.environ, **(env or {})}
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", SCALED, str(scale), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=bound)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = None
    return Ran(code, out, err, time.monotonic() - started)


@pytest.fixture(scope="module")
def tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small honest bundle's tar, alone in its folder."""
    root = tmp_path_factory.mktemp("bundle")
    write_small_bundle(root / "bundle")
    served = root / "served"
    served.mkdir()
    pack(root / "bundle", served / "b.tar")
    return served / "b.tar"


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- 1. the list itself -------------------------------------------------------------------


class _Recorder(BaseHTTPRequestHandler):
    """Records every request (path and headers) on the class's ``seen``; 404 to all."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, dict[str, str]]]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.seen.append((self.path, dict(self.headers.items())))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _recorder() -> type[_Recorder]:
    return type("Recorder", (_Recorder,), {"seen": []})


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_list_given_as_a_url_is_never_fetched(
    scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing is asked of the server: a list is read from disk only (``Path(file)``)."""
    handler = _recorder()
    with listening(handler, "list-server") as url:
        given = url.replace("http", scheme, 1) + "/list.txt"
        assert main(["verify-archive", "--from", given]) == 2
    assert handler.seen == []
    out, err = capsys.readouterr()
    assert out == ""
    line = _one_line(err)
    assert given in line


def test_a_list_given_as_a_url_is_refused_as_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify-archive", "--from", "https://127.0.0.1:9/list.txt"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "No such file" not in line
    assert "download" in line or "local" in line


def test_a_list_naming_local_files_prints_none_of_their_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``file:///etc/passwd``, ``/proc/self/environ``, a private file out of the list's folder
    by ``../``: each refused as no tar, and no byte of theirs in the report or on stderr."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "secret.txt").write_text("root:SECRET-CONTENT-1234:0:0\n" * 100, "utf-8")
    monkeypatch.setenv("EVIDENCE_AUDIT_TEST_SECRET", "SECRET-ENV-5678")
    lists = tmp_path / "published"
    lists.mkdir()
    listed = lists / "bundles.txt"
    listed.write_text(
        "file:///etc/passwd\n/proc/self/environ\n../home/secret.txt\n"
        f"file://localhost{outside / 'secret.txt'}\n",
        "utf-8",
    )
    assert main(["verify-archive", "--from", str(listed), "--json"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["counts"]["refused"] == 4
    for reason in (r["reason"] for r in report["refused"]):
        assert reason.startswith("not a readable uncompressed tar"), reason
    passwd = Path("/etc/passwd").read_text("utf-8", "replace").splitlines()[0]
    for secret in ("SECRET-CONTENT", "SECRET-ENV", passwd):
        assert secret not in out + err


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: a list's lines are read wherever they point (verify/archive.py expand: "
    "absolute paths, '../' out of the list's folder, file://); the refusal tells a path that "
    "exists from one that does not, and names a local tar's first member, so a published "
    "report of a publisher's list is an oracle over the operator's disk",
)
def test_a_list_reads_nothing_outside_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "home"
    outside.mkdir()
    with tarfile.open(outside / "backup.tar", "w", format=tarfile.USTAR_FORMAT) as archive:
        info = tarfile.TarInfo("id_ed25519-of-alice")
        archive.addfile(info)
    lists = tmp_path / "published"
    lists.mkdir()
    said = []
    for name in ("backup.tar", "nothing.tar"):
        listed = lists / f"{name}.txt"
        listed.write_text(f"../home/{name}\n", "utf-8")
        code = main(["verify-archive", "--from", str(listed), "--json"])
        out, err = capsys.readouterr()
        assert "id_ed25519-of-alice" not in out + err
        said.append(code)
    assert said[0] == said[1]  # the same answer whether the file is there or not


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: FSSPEC_HTTP_HEADERS (an Authorization header) goes to every host a list "
    "file names (verify/_remote.py _Http.fetch sends fs.kwargs['headers'] to any URL), where "
    "ADR 0024 point 8 refuses a redirect to another origin so that they do not: a publisher's "
    "list naming its own host receives the operator's token",
)
def test_a_list_does_not_send_the_operators_headers_to_another_origin(
    tar: Path, tmp_path: Path
) -> None:
    other = _recorder()
    with serve(tar.parent) as server, listening(other, "other-origin") as elsewhere:
        listed = tmp_path / "bundles.txt"
        listed.write_text(f"{url_of(server, tar)}\n{elsewhere}/b.tar\n", "utf-8")
        headers = json.dumps({"Authorization": "Bearer OPERATOR-TOKEN"})
        ran = _run(
            ["verify-archive", "--from", str(listed), "--json"],
            bound=60,
            env={"FSSPEC_HTTP_HEADERS": headers},
        )
    assert ran.code == 1, ran.err  # the second source: not found
    assert other.seen, "the other origin was asked"
    for _, sent in other.seen:
        assert "OPERATOR-TOKEN" not in json.dumps(sent)


def test_one_tar_under_many_spellings_is_one_bundle(
    tar: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Eight spellings of one tar (scheme case, ``./``, ``%62``, an empty query, a fragment,
    ``sub/../``, ``file://localhost``, ``//``): one bundle, eight sources, each checked."""
    (tar.parent / "sub").mkdir(exist_ok=True)
    with serve(tar.parent) as server:
        url = url_of(server, tar)
        host = server.url.removeprefix("http://")
        spellings = [
            url,
            f"HTTP://{host}/b.tar",
            f"{server.url}/./b.tar",
            f"{server.url}/%62.tar",
            f"{url}?",
            f"{url}#fragment",
            str(tar.parent / "sub" / ".." / "b.tar"),
            f"file://localhost{tar.parent}//b.tar",
        ]
        listed = tar.parent.parent / "spellings.txt"
        listed.write_text("\n".join(spellings) + "\n", "utf-8")
        code = main(["verify-archive", "--from", str(listed), "--json"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 0, (err, report["refused"])
    assert report["counts"] == {
        "bundles": 1, "failed": 0, "passed": 1, "refused": 0, "sources": 8,
    }  # fmt: skip
    assert len(report["bundles"][0]["sources"]) == 8


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("http://127.0.0.1:9/a\x00b.tar", None),
        ("http://127.0.0.1:9/\x1b]0;owned\x07.tar", None),
        ("http://alice:PASSWORD-1@127.0.0.1:9/x.tar", "PASSWORD-1"),
        ("http://[::1/x.tar", None),
        ("s3://b/a\x00.tar", None),
        ("file://alice:PASSWORD-2@evil.example/runs/", "PASSWORD-2"),
        ("file://alice:PASSWORD-3@evil.example/runs/x.tar", "PASSWORD-3"),
    ],
)
def test_a_hostile_line_is_one_line(
    line: str,
    secret: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a refused connection is not tried for 25 s
    listed = tmp_path / "bundles.txt"
    listed.write_text(f"# published\n{line}\n", "utf-8")
    code = main(["verify-archive", "--from", str(listed), "--json"])
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert "\x1b" not in out + err
    if code == 2:
        assert out == ""
        assert _one_line(err).startswith(f"audit verify-archive: {listed}:2: ")
    else:
        assert json.loads(out)["counts"]["refused"] == 1
    if secret is not None:
        assert secret not in out + err


def test_a_list_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = tmp_path / "bundles.txt"
    listed.write_bytes(b"https://127.0.0.1:9/a.tar\n\xff\xfe\x00https://127.0.0.1:9/b.tar\n")
    assert main(["verify-archive", "--from", str(listed)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert _one_line(err).startswith(f"audit verify-archive: {listed}: not UTF-8")


# --- 2. a lying S3-compatible store -------------------------------------------------------

NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def _contents(key: str) -> str:
    return (
        f"<Contents><Key>{key}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
        '<ETag>"x"</ETag><Size>10240</Size><StorageClass>STANDARD</StorageClass></Contents>'
    )


class Store:
    """A stdlib HTTP server speaking ListObjectsV2 (``page(token)`` gives a page's keys, its
    next token and whether it is truncated) and answering every other request NoSuchKey."""

    def __init__(self, page: Callable[[str | None], tuple[list[str], str | None, bool]]) -> None:
        self.page = page
        self.lists = 0
        self.gets: list[str] = []
        self.error: tuple[int, str, str] | None = None
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        store = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def _xml(self, status: int, body: str) -> None:
                data = ('<?xml version="1.0" encoding="UTF-8"?>' + body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                if "list-type" not in query:
                    with store.lock:
                        store.gets.append(parts.path)
                    self._xml(404, "<Error><Code>NoSuchKey</Code><Message>no</Message></Error>")
                    return
                with store.lock:
                    store.lists += 1
                if store.error is not None:
                    status, code, message = store.error
                    self._xml(
                        status, f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
                    )
                    return
                token = query.get("continuation-token", [None])[0]
                keys, following, truncated = store.page(token)
                tail = (
                    f"<NextContinuationToken>{following}</NextContinuationToken>"
                    if following
                    else ""
                )
                self._xml(
                    200,
                    f'<ListBucketResult xmlns="{NS}"><Name>runs</Name><Prefix>v5/</Prefix>'
                    f"<KeyCount>{len(keys)}</KeyCount><MaxKeys>1000</MaxKeys>"
                    f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{tail}"
                    + "".join(_contents(k) for k in keys)
                    + "</ListBucketResult>",
                )

        return Handler


@contextmanager
def _store(
    page: Callable[[str | None], tuple[list[str], str | None, bool]],
) -> Iterator[tuple[Store, dict[str, str]]]:
    store = Store(page)
    with listening(store.handler(), "lying-s3") as url:
        yield store, S3_ENV | {"AWS_ENDPOINT_URL": url}


def test_keys_outside_the_prefix_are_not_read() -> None:
    def page(token: str | None) -> tuple[list[str], str | None, bool]:
        return ["v5/a.tar", "v4/secret.tar", "private/x.tar"], None, False

    with _store(page) as (store, env):
        ran = _run(["verify-archive", "s3://runs/v5/", "--json"], bound=60, env=env)
    assert ran.code is not None
    assert "Traceback" not in ran.err
    assert all(path.startswith("/runs/v5/") for path in store.gets), store.gets
    assert "v4/secret.tar" not in ran.out


def _cycle(given: str | None) -> tuple[list[str], str | None, bool]:
    return [], "B" if given == "A" else "A", True


def _same(token: str | None) -> tuple[list[str], str | None, bool]:
    return [], "again", True


def _fresh_with_a_key(token: str | None) -> tuple[list[str], str | None, bool]:
    number = int(token or 0)
    return [f"v5/{number:012d}.tar"], str(number + 1), True


@pytest.mark.parametrize(
    "pages", [_same, _cycle, _fresh_with_a_key], ids=["same", "cycle", "fresh"]
)
def test_a_listing_that_never_ends_is_refused(
    pages: Callable[[str | None], tuple[list[str], str | None, bool]],
) -> None:
    with _store(pages) as (store, env):
        ran = _run(["verify-archive", "s3://runs/v5/", "--json"], bound=8, env=env)
    assert store.lists > 1
    assert ran.code == 2, f"still listing after {ran.took:.1f} s, {store.lists} pages"
    _one_line(ran.err)


def test_the_same_key_on_every_page_is_judged_once() -> None:
    def page(token: str | None) -> tuple[list[str], str | None, bool]:
        number = int(token or 0)
        return ["v5/a.tar", "v5/a.tar"], str(number + 1) if number < 4 else None, number < 4

    with _store(page) as (store, env):
        ran = _run(["verify-archive", "s3://runs/v5/", "--json"], bound=60, env=env)
    assert ran.code == 1, ran.err
    report = json.loads(ran.out)
    assert report["refused"] == [
        {"reason": "cannot open: not found (NoSuchKey)", "source": "s3://runs/v5/a.tar"}
    ]
    assert store.gets == ["/runs/v5/a.tar"]


def test_truncated_without_a_token_is_one_line() -> None:
    def page(token: str | None) -> tuple[list[str], str | None, bool]:
        return ["v5/a.tar"], None, True

    with _store(page) as (_, env):
        ran = _run(["verify-archive", "s3://runs/v5/"], bound=60, env=env)
    assert ran.code == 2
    assert "s3://runs/v5/: cannot list" in _one_line(ran.err)


def test_a_listing_error_message_is_one_line_masked() -> None:
    with _store(_same) as (store, env):
        store.error = (
            403,
            "AccessDenied",
            "denied\x1b]0;owned\x07\n audit: passed https://alice:PASSWORD-4@h.example/x",
        )
        ran = _run(["verify-archive", "s3://runs/v5/"], bound=60, env=env)
    assert ran.code == 2
    line = _one_line(ran.err)
    assert "\x1b" not in line
    assert "PASSWORD-4" not in line
    assert "s3://runs/v5/: cannot list" in line


# --- 3. slow, silent and redirecting web servers -------------------------------------------

SIZE = 2 << 20


def _partial(handler: BaseHTTPRequestHandler, length: int) -> None:
    """The headers of a 206 of the tar's first ``length`` bytes, of ``SIZE`` in all."""
    handler.send_response(206)
    handler.send_header("Content-Range", f"bytes 0-{length - 1}/{SIZE}")
    handler.send_header("Content-Length", str(length))
    handler.send_header("ETag", '"one"')
    handler.end_headers()
    handler.wfile.flush()


def _slow(behaviour: str, stop: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:
            match = self.headers.get("Range", "bytes=0-0").removeprefix("bytes=")
            low, high = (int(n) for n in match.split("-"))
            length = high + 1 - low
            if behaviour == "never-answers":
                stop.wait(30)
                return
            _partial(self, length)
            if behaviour == "trickle":
                for _ in range(length):
                    if stop.wait(0.25):
                        return
                    self.wfile.write(b"\0")
                    self.wfile.flush()
            elif behaviour == "quiet-after-headers":
                stop.wait(30)
            elif behaviour == "long-length-kept-open":
                self.wfile.write(b"\0" * 512)
                self.wfile.flush()
                stop.wait(30)

    return Handler


@contextmanager
def _slow_server(behaviour: str) -> Iterator[str]:
    stop = threading.Event()
    with listening(_slow(behaviour, stop), behaviour) as url:
        try:
            yield url
        finally:
            stop.set()  # the handlers still waiting return before the server shuts down


@pytest.mark.parametrize(
    "behaviour", ["quiet-after-headers", "never-answers", "long-length-kept-open"]
)
def test_a_silent_server_is_refused_after_the_read_timeout(behaviour: str) -> None:
    """With the time-outs scaled to 1 s: three tries, each ended by the read time-out, exit 2."""
    with _slow_server(behaviour) as url:
        ran = _run(["verify", f"{url}/b.tar"], bound=30, scale=1.0)
    assert ran.code == 2, (ran.took, ran.err)
    line = _one_line(ran.err)
    assert "no answer in time" in line or "broke off" in line, line
    assert "3 tries" in line


def test_a_trickle_is_refused_in_bounded_time() -> None:
    with _slow_server("trickle") as url:
        ran = _run(["verify", f"{url}/b.tar"], bound=12, scale=1.0)
    assert ran.code == 2, f"still reading after {ran.took:.1f} s"
    _one_line(ran.err)


def _redirecting(location: Callable[[str], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", location(self.path))
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


@pytest.mark.parametrize(
    ("location", "said"),
    [
        (lambda path: "file:///etc/passwd", "another origin, file:///etc/passwd"),
        (lambda path: path + "x", "more than 5 redirects"),
        (lambda path: "/b.tar", "more than 5 redirects"),
        (lambda path: "http://alice:PASSWORD-5@127.0.0.1:9/b.tar", "another origin"),
    ],
    ids=["file", "growing-loop", "loop", "credentials"],
)
def test_a_redirect_out_or_in_a_loop_is_refused(
    location: Callable[[str], str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with listening(_redirecting(location), "redirects") as url:
        code = main(["verify-archive", f"{url}/b.tar", "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    (refused,) = json.loads(out)["refused"]
    assert said in refused["reason"]
    assert "PASSWORD-5" not in out + err
    assert "root:" not in out + err


def test_a_hostile_reason_phrase_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:
            self.wfile.write(
                b"HTTP/1.1 403 denied \x1b]0;owned\x07 https://alice:PASSWORD-6@h.example/\r\n"
                b"Content-Length: 0\r\n\r\n"
            )

    with listening(Handler, "reason") as url:
        code = main(["verify", f"{url}/b.tar"])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert "\x1b" not in line
    assert "PASSWORD-6" not in line
