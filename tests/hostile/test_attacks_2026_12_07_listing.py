"""Hostile tests of two changes of 2026-12-07: an archive's source held to the digest it was
listed as (``verify.archive.as_listed``, ``verify.judging._as_listed``; ADR 0053's amendment),
and a manifest that does not read refused naming its bundle first (``parse_manifest(data,
location)``, ``_published_manifest``, and ``refusal_reason`` stripping the source's own name).

The publisher is the adversary and runs the server the tars are read from: :class:`_Lying`
answers the N-th request that covers one byte of the manifest (a digit of its ``created_at``,
XOR 0x01: another valid manifest, another bundle digest) with that byte flipped, for any set of
N, where ``tests/http_range.py`` flips every read from the N-th on. ``verify._remote.CACHE_BYTES``
is made small, so each read of the manifest is a request. The reads of one tar, in one process:
``rank`` lists it (1 the first read, 2 the scan of its headers, 3 the manifest's digest), then
verifies it (4 the manifest, 5 and 6 other members' ranges that cover the byte); ``rejudge``
verifies it twice (4 under the pin set before, 7 under the new one); ``verify-archive`` lists
it in a thread of its own (3, unused), reads the digest (4), verifies it (5).

What the review found (each hole closed the same day; its test now passes):

- holes:
  1. ``rejudge`` verifies a source twice; only the second verification is held to the listed
     digest (``Job.judge`` in ``verify/judging.py``): a source that serves manifest B to the
     verification under the pin set before, and A to the listing and to the verification under
     the new pin set, is kept as A with a ``run-diff`` whose ``before`` is bundle B's verdict,
     and nothing is refused;
  2. the ``files_of`` shortcut (``verify.judging.files_of``) keys a directory bundle by the
     identities of its files in path order, not by which name links which file: a directory of
     hard links to an honest bundle's files, one blob under another name that sorts in its
     place, is "the very same files": the honest copy walked after it is given the broken
     copy's verdict (integrity failed) unverified, and the bundle fails;
  3. the Dask engine does not take that shortcut (``_OnDask.listed`` gives no files), so it
     judges the honest copy itself: the engines differ on the same archive;
  4. ``rank`` and ``rejudge`` walk a source given twice twice (``SourceList.walk``), listing
     and verifying it again: one lying URL given twice is kept as two bundles (A and B), or
     refused as changed and kept as B, where ``verify-archive`` judges it once;
  5. a local bundle whose name holds a byte that is not UTF-8 and whose manifest does not
     parse is refused by ``rank``, ``verify-archive`` and ``rejudge`` naming itself twice
     (``refused bad\\xffdir: bad\\xffdir: manifest.json: ...``): the message names it as
     opened (a lone surrogate), ``refusal_reason`` strips it as shown (``\\xff``);
  6. ``verify --expect-digest`` on such a bundle (or one whose name holds a line break) names
     it twice: ``_published_manifest`` strips the location from ``str(exc)``, which is
     ``one_line``'d, where the location is not;
  7. (from before the change) an archive refusing a ``file://`` URL with a credential names
     it twice: ``refusal_reason`` strips the shown (masked) name from the unmasked message,
     then masks it.

  A lead the review left (``signatures_of`` read the signature again after its check) was
  closed too, and is tested last.

  Closed: ``_as_listed`` holds ``rejudge``'s verification before to the listed digest too;
  ``files_of`` keys a directory by each file under its name (a tar by its one file); the walk
  gives a source given again the first one's result, read once; ``refusal_reason`` strips the
  name as given, then as shown; ``_published_manifest`` strips the location from the message
  as raised.
- held: a manifest changed at ``rank``'s, ``rejudge``'s (second) or ``verify-archive``'s
  verification is refused as changed; ``verify-archive``'s listing thread's read is not the
  digest it keeps; an honest copy at another URL, walked after a source that changed, is judged
  for its own bytes; a further source whose byte check reads another manifest is verified
  itself, and refused when that reads another one too; every command given a bundle whose
  manifest does not parse (directory, tar, URL with a password, a token or a signed query)
  names it once, masked, with no traceback.
"""

from __future__ import annotations

import email.utils
import io
import json
import os
import re
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from audit._archive import pack
from audit.cli import main
from bundle_schema.layout import MANIFEST_SIGNATURE
from tests.factories import write_small_bundle
from tests.http_range import listening, serve, url_of
from tests.verify.test_url_sources import _digests, _manifest
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify.judging import Here, Job, judge_archive

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
PINS = "gx10-reference-v5"
"""The pin set ``rejudge`` takes (the one the small bundles name)."""


class _Lying:
    """A tar served with byte ranges, every check answered as for one object, whose byte at
    ``offset`` is XORed with 0x01 in the requests that cover it whose number (1, 2, ...) is in
    ``flips``."""

    def __init__(self, tar: Path, offset: int, flips: set[int]) -> None:
        self.data, self.offset, self.flips = tar.read_bytes(), offset, flips
        self.count = 0
        self.lock = threading.Lock()


def _handler(state: _Lying) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            data = state.data
            headers = {
                "ETag": '"one"',
                "Last-Modified": email.utils.formatdate(0, usegmt=True),
                "Accept-Ranges": "bytes",
            }
            status, body = 200, data
            match = _RANGE.fullmatch(self.headers.get("Range", ""))
            if match is not None:
                start = int(match.group(1))
                end = min(int(match.group(2)) + 1 if match.group(2) else len(data), len(data))
                status, body = 206, data[start:end]
                headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
                if start <= state.offset < end:
                    with state.lock:
                        state.count += 1
                        number = state.count
                    if number in state.flips:
                        at = state.offset - start
                        body = body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler


@contextmanager
def _lying(tar: Path, flips: set[int]) -> Iterator[tuple[str, _Lying]]:
    """The tar's URL on a server that flips a digit of its manifest in the reads ``flips``."""
    offset, _ = _manifest(tar)
    state = _Lying(tar, offset, flips)
    with listening(_handler(state), "lying") as root:
        yield f"{root}/{tar.name}", state


def _tar_of(tmp_path: Path, name: str = "b") -> tuple[Path, str]:
    write_small_bundle(tmp_path / name)
    tar = tmp_path / f"{name}.tar"
    pack(tmp_path / name, tar)
    return tar, _manifest(tar)[1]


def _cli(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, captured.out.decode(errors="replace"), captured.err.decode(errors="replace")


@pytest.fixture
def small_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read of a manifest at a URL is a request."""
    monkeypatch.setattr("verify._remote.CACHE_BYTES", 256)


# --- (a) a verdict kept under a digest whose bytes were not verified ----------------------------


@pytest.mark.usefixtures("small_cache")
def test_rejudge_whose_verification_before_reads_another_manifest_is_refused(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tar, listed = _tar_of(tmp_path)
    with _lying(tar, {4}) as (url, state):
        code, out, err = _cli(["rejudge", url, "--pins", PINS, "--json"], capsysbinary)
    assert state.count == 9, state.count  # the reads are as this file's docstring says
    assert code == 1, (out, err)
    assert f"changed while the archive was verified: listed as {listed}, then sha256:" in err


@pytest.mark.usefixtures("small_cache")
def test_rejudge_keeps_no_diff_of_another_bundle(tmp_path: Path) -> None:
    """Hole 1, as the walk keeps it: no bundle, the source refused as changed (it kept a diff
    whose ``before`` named bundle B under A)."""
    tar, listed = _tar_of(tmp_path)
    with _lying(tar, {4}) as (url, _):
        sources = [url]
        job = Job(None, rejudge=True)
        with judge_archive(sources, Here(sources, job)) as archive:
            whole = archive.whole()
    assert whole.bundles == []
    ((source, reason),) = whole.refused
    assert source == url and reason.startswith(
        f"changed while the archive was verified: listed as {listed}, then sha256:"
    )


@pytest.mark.parametrize(
    ("command", "flip"),
    [(["rank"], 4), (["rejudge", "--pins", PINS], 7), (["verify-archive"], 5)],
    ids=["rank", "rejudge-after", "verify-archive"],
)
@pytest.mark.usefixtures("small_cache")
def test_a_manifest_changed_at_the_verification_is_refused(
    command: list[str], flip: int, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tar, listed = _tar_of(tmp_path)
    with _lying(tar, {flip}) as (url, _):
        code, out, err = _cli([*command, url, "--json"], capsysbinary)
    assert code == 1, (out, err)
    said = out + err
    assert f"changed while the archive was verified: listed as {listed}, then sha256:" in said
    assert said.count(url) == (2 if command[0] == "rejudge" else 1), said  # stderr, report
    assert _digests(json.loads(out)) <= {listed}, out


@pytest.mark.usefixtures("small_cache")
def test_verify_archive_keeps_the_digest_it_verified_not_its_listing_threads(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The listing thread's read (3) is not the digest kept: the bundle kept is the one the
    digest read (4) and the verification (5) both saw."""
    tar, listed = _tar_of(tmp_path)
    with _lying(tar, {3}) as (url, _):
        code, out, err = _cli(["verify-archive", url, "--json"], capsysbinary)
    assert code == 0, (out, err)
    assert _digests(json.loads(out)) == {listed}


@pytest.mark.usefixtures("small_cache")
def test_an_honest_copy_after_a_changed_source_is_judged_for_its_own_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The lying URL sorts first (127.0.0.1 < localhost); the honest copy's verdict is its
    own, as when alone."""
    tar, _ = _tar_of(tmp_path)
    with serve(tmp_path) as honest:
        copy = url_of(honest, tar).replace("127.0.0.1", "localhost")
        code, alone, err = _cli(["rank", copy, "--json"], capsysbinary)
        assert code == 0, err
        with _lying(tar, {4}) as (url, _):
            code, out, err = _cli(["rank", url, copy, "--json"], capsysbinary)
    assert code == 1, err
    assert "changed while the archive was verified" in err and url in err
    assert out == alone


@pytest.mark.usefixtures("small_cache")
def test_a_further_source_whose_check_reads_another_manifest_is_verified_or_refused(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """An honest copy sorts first and is verified; the lying URL is a further source of its
    digest: its byte check reads B (refused as changed by ``check``), so the walk verifies it,
    which reads B again: refused, never the honest copy's verdict."""
    tar, listed = _tar_of(tmp_path)
    (tmp_path / "first").mkdir()
    os.link(tar, tmp_path / "first" / "a.tar")
    with _lying(tar, set(range(4, 40))) as (url, _):
        code, out, err = _cli(
            ["rank", str(tmp_path / "first" / "a.tar"), url, "--json"], capsysbinary
        )
    assert code == 1, err
    assert f"refused {url}: changed while the archive was verified: listed as {listed}" in err
    assert _digests(json.loads(out)) == {listed}
    assert url not in out


@pytest.mark.usefixtures("small_cache")
def test_a_lying_source_given_twice_is_judged_once(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tar, _ = _tar_of(tmp_path)
    with _lying(tar, set(range(5, 60))) as (url, _):
        _, out, err = _cli(["rank", url, url, "--json"], capsysbinary)
    report = json.loads(out)
    rows = [r for table in ("ranked", "limitations", "apart") for r in report[table]]
    kept = {r["bundle_digest"] for r in rows if url in r["source"]}
    refused = err.count(f"refused {url}:")
    assert len(kept) + refused == 1, (kept, err)


def _renamed_link_copy(honest: Path, broken: Path) -> None:
    """``broken``: every file of ``honest`` hard-linked, its first blob under another name
    that sorts in the same place (a missing blob and an extra file: integrity failed)."""
    blobs = sorted((honest / "blobs" / "sha256").iterdir())
    first = blobs[0].name
    renamed = first[:-1] + ("0" if first[-1] != "0" else "1")
    for file in sorted(honest.rglob("*")):
        if not file.is_file():
            continue
        relative = file.relative_to(honest)
        if file == blobs[0]:
            relative = relative.with_name(renamed)
        (broken / relative).parent.mkdir(parents=True, exist_ok=True)
        os.link(file, broken / relative)


def _walked(sources: list[Any], steps: Any) -> tuple[list[tuple[Any, ...]], list[str], list[Any]]:
    with judge_archive(sources, steps) as archive:
        whole = archive.whole()
    bundles = [(b.kept.source, b.sources, b.kept.facts.intact) for b in whole.bundles]
    return bundles, whole.notes, whole.refused


@pytest.fixture
def linked_copies(tmp_path: Path) -> tuple[Path, Path]:
    honest, broken = tmp_path / "b-honest", tmp_path / "a-broken"
    write_small_bundle(honest, {"data/x.bin": b"x" * 100})
    _renamed_link_copy(honest, broken)
    return broken, honest


def test_an_honest_copy_is_not_given_a_renamed_link_copys_verdict(
    linked_copies: tuple[Path, Path],
) -> None:
    broken, honest = linked_copies
    alone, _, _ = _walked([honest], Here([honest], Job(None)))
    assert alone == [(str(honest), (str(honest),), True)]
    sources = [broken, honest]
    bundles, notes, _ = _walked(sources, Here(sources, Job(None)))
    assert bundles == [(str(honest), (str(broken), str(honest)), True)], bundles
    assert any("verified differently" in note for note in notes), notes


def test_the_engines_agree_on_a_renamed_link_copy(
    linked_copies: tuple[Path, Path],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify._dask import _OnDask  # noqa: PLC0415 - Dask only here

    broken, honest = linked_copies
    sources = [broken, honest]
    here = _walked(sources, Here(sources, Job(None)))
    with _OnDask(dask_client, sources, Job(None)) as steps:
        there = _walked(sources, steps)
    assert there[0] == [(str(honest), (str(broken), str(honest)), True)]  # Dask: judged itself
    assert here == there


# --- (c) a manifest that does not read: how the refusal names its bundle ------------------------


def _unreadable(directory: Path, manifest: bytes = b"{not json") -> Path:
    write_small_bundle(directory)
    (directory / "manifest.json").write_bytes(manifest)
    return directory


def _tar(directory: Path, tar: Path) -> Path:
    """``directory`` as a tar, its manifest as it is (``audit pack`` would refuse it)."""
    with tarfile.open(tar, "w", format=tarfile.USTAR_FORMAT) as archive:
        for file in sorted(directory.rglob("*")):
            if file.is_file():
                info = tarfile.TarInfo(str(file.relative_to(directory)))
                data = file.read_bytes()
                info.size, info.mode = len(data), 0o644
                archive.addfile(info, io.BytesIO(data))
    return tar


NOT_UTF8 = os.fsdecode(b"bad\xffdir")


@pytest.mark.parametrize(
    "command",
    [["rank"], ["verify-archive"], ["rejudge", "--pins", PINS]],
    ids=["rank", "verify-archive", "rejudge"],
)
def test_an_archive_names_a_bundle_not_utf8_once(
    command: list[str],
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _unreadable(tmp_path / NOT_UTF8)
    code, out, err = _cli([*command, NOT_UTF8, "--json"], capsysbinary)
    assert code == 1
    said = out + err
    assert "manifest.json: Expecting property name" in said
    assert "bad\\\\xffdir: bad\\\\xffdir" not in said and "bad\\xffdir: bad\\xffdir" not in said
    assert "bad\\\\xffdir: manifest.json" not in out, out  # the reason, without its name


@pytest.mark.parametrize("name", [NOT_UTF8, "bad\ndir"], ids=["not-utf8", "line-break"])
def test_verify_expecting_a_digest_names_the_bundle_once(
    name: str,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _unreadable(tmp_path / name)
    expected = "sha256:" + "0" * 64
    code, _, err = _cli(["verify", name, "--expect-digest", expected], capsysbinary)
    assert code == 1
    assert "not the published bundle" in err
    assert "(and it is not a manifest: manifest.json: " in err, err


@pytest.mark.parametrize("command", [["rank"], ["verify-archive"]], ids=["rank", "archive"])
def test_an_archive_names_a_file_url_with_a_credential_once(
    command: list[str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    url = f"file://user:s3cret@localhost{tmp_path / 'b.tar'}"
    code, out, err = _cli([*command, url, "--json"], capsysbinary)
    said = out + err
    assert code == 1 and "s3cret" not in said
    shown = f"file://user:***@localhost{tmp_path / 'b.tar'}"
    assert said.count(shown) == 1, said


_COMMANDS = {
    "verify": lambda s, t: ["verify", s],
    "verify-json": lambda s, t: ["verify", s, "--json"],
    "show": lambda s, t: ["show", s],
    "diff-a": lambda s, t: ["diff", s, str(t / "good")],
    "diff-b": lambda s, t: ["diff", str(t / "good"), s],
    "pack": lambda s, t: ["pack", s, "-o", str(t / "out.tar")],
    "unpack": lambda s, t: ["unpack", s, "-o", str(t / "out")],
    "sign": lambda s, t: ["sign", s],
    "rank": lambda s, t: ["rank", s, "--json"],
    "verify-archive": lambda s, t: ["verify-archive", s, "--csv"],
    "rejudge": lambda s, t: ["rejudge", s, "--pins", PINS],
}
"""Every command that reads a bundle's manifest, given the source ``s`` (``t``: the folder)."""


@pytest.mark.parametrize("manifest", [b"{not json", b""], ids=["not-json", "empty"])
def test_every_command_names_a_bundle_whose_manifest_does_not_read_once(
    manifest: bytes, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Directories, tars and URLs (a password, a token as the user name, a signed query):
    one line naming the source once, masked, the manifest's defect, never a traceback."""
    bad = _unreadable(tmp_path / "bad dir", manifest)
    _tar(bad, tmp_path / "bad.tar")
    write_small_bundle(tmp_path / "good")
    with serve(tmp_path) as server:
        plain = url_of(server, tmp_path / "bad.tar")
        sources = {
            str(bad): str(bad),
            str(tmp_path / "bad.tar"): str(tmp_path / "bad.tar"),
            plain.replace("http://", "http://user:s3cret@"): plain.replace(
                "http://", "http://user:***@"
            ),
            plain.replace("http://", "http://s3cret@"): plain.replace("http://", "http://***@"),
            plain + "?X-Amz-Signature=s3cret": plain + "?X-Amz-Signature=***",
        }
        for source, shown in sources.items():
            for name, argv in _COMMANDS.items():
                code, out, err = _cli(argv(source, tmp_path), capsysbinary)
                said = out + err
                where = f"{name} {shown}"
                assert code in (1, 2), (where, said)
                assert "Traceback" not in said and "s3cret" not in said, (where, said)
                if "manifest.json" not in said:  # refused before: pack a tar, sign a URL
                    assert "takes a" in said or "sign a bundle directory" in said, (where, said)
                    continue
                assert said.count(shown) == 1 or (
                    name in ("rank", "verify-archive", "rejudge") and said.count(shown) == 2
                ), (where, said)
                assert f"{shown}: {shown}" not in said, (where, said)
                line = next(li for li in err.splitlines() if "manifest.json" in li) if err else ""
                if name not in ("verify-archive",):
                    assert f"{shown}: manifest.json: " in line, (where, said)


# --- the signature checked is the one fingerprinted ----------------------------------------------


def _signature_byte(tar: Path) -> int:
    """The offset in ``tar`` of the middle byte of its manifest's signature."""
    with tarfile.open(tar) as archive:
        member = archive.getmember(MANIFEST_SIGNATURE)
        return member.offset_data + member.size // 2


@pytest.mark.usefixtures("small_cache", "private_home")
def test_a_signature_shown_otherwise_to_its_fingerprint_never_refuses_an_honest_copy(
    tmp_path: Path,
    instance: Any,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """A signed tar at a lying URL (walked first: 127.0.0.1 sorts before localhost), and its
    honest copy at another, under ``verify-archive --identity``: whichever one read of the
    signature the server flips, the honest copy is one of the bundle's sources, never refused,
    and the entry's signature verified: beside the lying source where that source's check read
    the honest signature, in its place where the check read the flipped one (ADR 0043, since
    2026-12-07: until then the copy was refused as signed otherwise). The fingerprint once read
    the signature again after its check: a flip there refused the honest copy, though the
    signature checked was the same (now also held without a policy, by
    ``tests/verify/test_archive_signatures.py``)."""
    from tests.audit.test_signing import WHO, sign  # noqa: PLC0415 - as the signing tests
    from tests.private_sigstore import ISSUER  # noqa: PLC0415

    bundle = tmp_path / "b"
    write_small_bundle(bundle)
    assert sign(bundle, instance, trust) == 0
    tar = tmp_path / "b.tar"
    pack(bundle, tar)
    (tmp_path / "copy").mkdir()
    os.link(tar, tmp_path / "copy" / "b.tar")
    policy = ["--identity", WHO, "--issuer", ISSUER, "--trusted-root", trust["root"]]
    offset = _signature_byte(tar)
    with serve(tmp_path / "copy") as honest:
        copy = url_of(honest, tmp_path / "copy" / "b.tar").replace("127.0.0.1", "localhost")
        probe = _Lying(tar, offset, set())
        with listening(_handler(probe), "lying") as root:
            code, _, err = _cli(["verify-archive", f"{root}/b.tar", copy, *policy], capsysbinary)
        assert code == 0 and probe.count >= 1, (err, probe.count)
        for flip in range(1, probe.count + 2):
            state = _Lying(tar, offset, {flip})
            with listening(_handler(state), "lying") as root:
                url = f"{root}/b.tar"
                code, out, err = _cli(
                    ["verify-archive", url, copy, *policy, "--json"], capsysbinary
                )
            if not out:  # the flipped read was one a blob's proof took: nothing judged
                assert code == 2 and err.count("\n") == 1 and url in err, (flip, err)
                continue
            report = json.loads(out)
            refused = {r["source"]: r["reason"] for r in report["refused"]}
            (entry,) = report["bundles"]
            assert copy not in refused and entry["signature"] == "verified", (flip, report)
            if url in refused:  # its check read the flipped signature: the copy takes its place
                assert entry["sources"] == [copy], (flip, report)
                assert "but not the signature of" in refused[url], (flip, report)
            else:
                assert entry["sources"] == [url, copy], (flip, report)
