"""Hostile review of 2026-12-07 (ADR 0053, "the bytes judged are the bytes hashed"): a publisher
who runs the web server a bundle's tar is read from, and answers a second or third read of the
same bytes with other bytes while every response says it is the same object.

What was reviewed. Commit 8cf6365 proved bytes in the URL reader (``verify._remote.RemoteTar.
pread``): a range let go kept its SHA-256 and was asked for again only whole, new requests were
cut so that none reached into a range received before, one request at a time per tar. Attacked
with a server of this file's own on 127.0.0.1 (:class:`Site`: one ETag and Last-Modified,
``If-Match`` honoured, exact ``Content-Range`` and ``Content-Length``, whatever bytes it sends),
the reader's sizes shrunk so that small tars are read as large ones: random reads on one thread
and three, GAP starts over ranges let go, a range let go read a third time, a range asked again
answered short or whole, the recorded real bundle, tars at the edge of ``CACHE_BYTES``, archives
of URLs and one URL twice in a command.

What the review found. No hole: every read was the file's bytes or a refusal. Four regressions
(strict xfails then), against the parent commit's reader:

1. Requests: hashing a 26 MB tar of 200 blobs of 130 KiB took 194 requests where it took 4 (a
   request stopped at every window the listing had kept); 388 in all against 198.
2. Bytes: a small read of a range let go received the whole range again, up to ``BLOCK``: 40
   reads of 200 bytes received 319,488 bytes where they received 6,600; the recorded bundle at a
   sixteenth of the sizes received 194 MB where it received 72 MB (a 29 MB tar): 2.7x.
3. Latency: a read from memory waited for another thread's request in flight.
4. Memory: about 235 bytes for each range let go, about two a member: some 235 MB for a 100 GB
   tar of 500,000 members.

The range proof was withdrawn for them (d8e5c39, ADR 0053 "Considered and withdrawn"). The
promise is kept one layer up, for every source (4f486fc): ``verify._source.Member.proven``
hashes every blob read to be judged (records, the Reader's raw outputs, git blob ids, traces) as
it is read, and raises ``ChangedWhileRead`` (exit 2, one line: "<url>: blobs/sha256/<digest>:
other bytes than when it was hashed: the bundle changed while it was verified; nothing was
judged") when they are not its name's digest. ``RemoteTar`` is as ADR 0024 and 0031 left it: it
returns what the server sends for a range received again, and its requests may run on into
bytes it received before.

What this file holds now (the tests of the withdrawn mechanism, "no byte is received twice",
are gone with it):

- the layer the promise lives at: the URL reader passes other bytes on, ``Member.proven``
  refuses them, naming the URL and the blob;
- the four regressions as plain controls of the current reader (memory: nothing is kept per
  range let go any more, so there is nothing to measure): the recorded bundle by URL receives
  at most 3x the tar (72 MB of 29 MB, 2.5x, as before the range proof); hashing the 26 MB tar
  asks for about one request per ``BLOCK`` (4, after the listing's 194); a read from memory
  does not wait for another thread's request; small reads receive about what they read;
- whole commands, from an honest server (always the disk's verdict bytes) and from liars. The
  safe answers to a lie: exit 2 naming a blob (``ChangedWhileRead``) when it reaches a blob
  read to be judged, also where its reader stops at the first line the lie spoils (the rest is
  then read and the whole proven, ``verify/_shell.py`` ``_prove``); a verdict whose integrity
  FAILED (exit 1) when it reaches the hashing; a refusal (exit 1: ``manifest.json: invalid
  UTF-8``, a tar's end not zeros) when it reaches the manifest or the listing; a refusal of the
  URL reader (exit 2) for a range answered short or whole. Never exit 0 or integrity ok with a
  verdict other than the disk's; exit 0 only with the disk's verdict bytes, where no flipped
  byte was read by anything. Each scenario's answer is asserted exactly, and why it is that one
  is in its docstring.

Holes found: one, closed the same day (``test_a_copy_from_a_liar_does_not_fail_the_honest_
original``). A transport log whose reader stopped at a refused line was never proven, and
``verify/_shell.py`` ``_slim_reading`` kept that refusal (``_READ_LOGS``, ADR 0051) under the
digest of the honest log. A lying server's copy of a rival's run (another run id, the same log),
judged first in one process, left "line 1: invalid UTF-8" kept, and the honest original judged
after it was given it: integrity FAILED where alone it is ok (``verify-archive``; ``rank`` too).
It could only fail a bundle, never pass one. Now a reading refused before its end is never
kept, and a record refused before its end is read to its end and proven (other bytes: the
whole bundle refused, exit 2).

Seen on the way, not holes: a refusal of an invalid manifest named no source (``audit diff:
manifest.json: invalid UTF-8 at byte 0``, for a command given one URL twice; ``diff`` names
which of its two since, ``show`` and ``verify`` are given one); a lie that
reaches only bytes nothing reads (a header, the rest of a response larger than what is kept)
changes nothing, and the verdict is the disk's.

The sandbox traces' headers, read by a reader that stops early, were unproven, and the traces
are ordered and their first sequence numbers held to the ledger by them: the rest of each trace
is now read with its header and the whole proven (``verify/_ledger_trace.py``
``_proven_header``); not attacked with a server of chosen bytes. S3: moto gives a PUT a new
ETag and VersionId, so it cannot send other bytes as the same object; ``Member.proven`` sits
above every backend.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import random
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import verify._remote as remote
from tests.http_range import listening
from verify._remote import RemoteTar
from verify._shell import _READ_LOGS
from verify._source import ChangedWhileRead

CHANGED = (
    "other bytes than when it was hashed: the bundle changed while it was verified; nothing was "
    "judged"
)
"""What ``Member.proven`` says of a blob whose bytes read to be judged are not its digest."""
RESULT = "components/coding/result.json"
"""The record every bundle here has, the first one judged."""
_FLIPPED = bytes(255 - i for i in range(256))
"""``bytes.translate`` table: each byte XOR 0xFF."""


def _rng(seed: object) -> random.Random:
    return random.Random(str(seed))  # noqa: S311 - reproducible test bytes, not a secret


MODES = ("honest", "flip-again", "flip-third", "short-again", "fewer-again", "whole-again")


# --- the publisher's server ----------------------------------------------------------------------


@dataclass
class Site:
    """A web server on 127.0.0.1 of the publisher's, serving ``files`` (path -> bytes) by
    ranges, every response as for the same object (one ETag and Last-Modified, ``If-Match``
    honoured, exact ``Content-Range`` and ``Content-Length``), whatever bytes it sends.

    ``mode`` (one of :data:`MODES`) is how it answers a request for bytes it sent before:
    ``flip-again`` flips every such byte; ``flip-third`` flips those sent twice before already
    (honest to the listing and the hashing, lying to a third reading); ``short-again`` sends
    half the body under the full Content-Length and closes; ``fewer-again`` answers one byte
    fewer than asked (a Content-Range and Content-Length that agree); ``whole-again`` answers
    200 with the whole object. ``only``: the one path it lies about (None: all); ``within``:
    the only bytes it flips (``[from, to)``; None: all). ``hold_at``: a
    request starting there waits for ``release`` (``held`` is set when it arrives)."""

    files: dict[str, bytes]
    url: str = ""
    mode: str = "honest"
    log: list[tuple[str, int, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    only: str | None = None
    within: tuple[int, int] | None = None
    hold_at: int | None = None
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def reset(self, mode: str = "honest") -> None:
        with self.lock:
            self.log.clear()
        self.mode, self.hold_at, self.only, self.within = mode, None, None, None
        self.held.clear()
        self.release.clear()

    def ranges(self, path: str = "t.tar") -> list[tuple[int, int]]:
        with self.lock:
            return [(a, b) for p, a, b in self.log if p == path]

    def sent(self, path: str = "t.tar") -> int:
        return sum(b - a for a, b in self.ranges(path))

    def at(self, path: str = "t.tar") -> str:
        return f"{self.url}/{path}"


def _times(before: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int, int]]:
    """``[start, end)`` cut where the count of ranges of ``before`` holding it changes: (from,
    to, how many times those bytes were sent before)."""
    cuts = {start, end}
    for a, b in before:
        cuts.update(x for x in (a, b) if start < x < end)
    edges = sorted(cuts)
    return [(a, b, sum(c <= a and b <= d for c, d in before)) for a, b in itertools.pairwise(edges)]


def _most_sent(ranges: list[tuple[int, int]]) -> int:
    """The most times any one byte was sent, over the ranges asked for (in order)."""
    return max(
        (count + 1 for i, (a, b) in enumerate(ranges) for _, _, count in _times(ranges[:i], a, b)),
        default=0,
    )


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def _send(self, status: int, headers: dict[str, str], body: bytes, length: int) -> None:
            self.send_response(status)
            for name, value in (headers | {"Content-Length": str(length)}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            if len(body) != length:
                self.close_connection = True

        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            data = site.files.get(path)
            if data is None:
                self._send(404, {}, b"", 0)
                return
            headers = {
                "ETag": '"the-same-object"',
                "Last-Modified": email.utils.formatdate(1_700_000_000, usegmt=True),
                "Accept-Ranges": "bytes",
            }
            if self.headers.get("If-Match", headers["ETag"]) != headers["ETag"]:
                self._send(412, headers, b"", 0)
                return
            text = self.headers.get("Range", "")
            if not text.startswith("bytes="):
                self._send(200, headers, data, len(data))
                return
            low, _, high = text.removeprefix("bytes=").partition("-")
            start, end = int(low), min(int(high) + 1, len(data))
            if start >= len(data):
                self._send(416, headers | {"Content-Range": f"bytes */{len(data)}"}, b"", 0)
                return
            with site.lock:
                before = [(a, b) for p, a, b in site.log if p == path]
                site.log.append((path, start, end))
            if site.hold_at == start:
                site.held.set()
                site.release.wait(20)
            body = data[start:end]
            pieces = _times(before, start, end)
            mode = site.mode if site.only in (None, path) else "honest"
            again = any(count for _, _, count in pieces)
            if mode in ("flip-again", "flip-third"):
                least = 1 if mode == "flip-again" else 2
                body = b"".join(
                    body[a - start : b - start].translate(_FLIPPED)
                    if count >= least
                    else body[a - start : b - start]
                    for a, b, count in pieces
                )
                if site.within is not None:  # honest outside [from, to)
                    first, last = (min(max(x, start), end) - start for x in site.within)
                    body = data[start : start + first] + body[first:last] + data[start + last : end]
            if again and mode == "whole-again":
                self._send(200, headers, data, len(data))
                return
            if again and mode == "fewer-again" and end - start > 1:
                end -= 1
                body = body[:-1]
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
            if again and mode == "short-again":
                self._send(206, headers, body[: len(body) // 2], len(body))
                return
            self._send(206, headers, body, len(body))

    return Handler


@pytest.fixture(scope="module")
def running() -> Iterator[Site]:
    site = Site({})
    with listening(_handler(site), "publisher-site") as site.url:
        try:
            yield site
        finally:
            site.release.set()  # a request held until released ends before the server stops


@pytest.fixture
def site(running: Site) -> Iterator[Site]:
    running.files.clear()
    running.reset()
    yield running
    running.release.set()
    running.reset()


@pytest.fixture(autouse=True)
def _no_logs_kept() -> Iterator[None]:
    """Each test as in a fresh process: no transport log kept read from another test's bundle
    (``verify._shell._READ_LOGS``, ADR 0051), and none left to the next."""
    _READ_LOGS.clear()
    yield
    _READ_LOGS.clear()


def _small(monkeypatch: pytest.MonkeyPatch, **sizes: int) -> None:
    """The URL reader's sizes shrunk (a small file stands for a tar past ``CACHE_BYTES``)."""
    for name, value in sizes.items():
        monkeypatch.setattr(remote, name, value)
    if "BLOCK" in sizes:
        monkeypatch.setattr(RemoteTar, "block", sizes["BLOCK"])


def _tiny(monkeypatch: pytest.MonkeyPatch, cache: int) -> None:
    """Sizes for a 30 KiB tar to be read as a large one: a first read of 1 KiB, 4 KiB blocks,
    a GAP of 512 bytes, listing windows of 1 KiB, ``cache`` bytes kept."""
    import verify._source as source  # noqa: PLC0415

    _small(monkeypatch, FIRST_READ=1024, BLOCK=4096, GAP=512, CACHE_BYTES=cache, SMALL_TAR=0)
    monkeypatch.setattr(source, "_WINDOW", 1024)


def _blob_digest(tar: Path, name: str) -> str:
    """The hex digest that names evidence entry ``name``'s blob in ``tar``."""
    with tarfile.open(tar) as archive:
        manifest = json.loads(archive.extractfile("manifest.json").read())  # type: ignore[union-attr]
    return str(manifest["evidence"][name]["digest"]).removeprefix("sha256:")


def _data_of(tar: Path, name: str) -> tuple[int, int]:
    """Where evidence entry ``name``'s blob's bytes are in ``tar``: ``[from, to)``."""
    with tarfile.open(tar) as archive:
        member = archive.getmember(f"blobs/sha256/{_blob_digest(tar, name)}")
    return member.offset_data, member.offset_data + member.size


def _blobs_sent_again(tar: Path, ranges: list[tuple[int, int]]) -> set[str]:
    """The blobs of ``tar`` (their paths) any byte of which the server sent more than once."""
    again = set()
    with tarfile.open(tar) as archive:
        for member in archive.getmembers():
            low, high = member.offset_data, member.offset_data + member.size
            held = [(max(a, low), min(b, high)) for a, b in ranges if a < high and low < b]
            if member.name.startswith("blobs/") and _most_sent(held) >= 2:
                again.add(member.name)
    return again


# --- the layer the promise lives at --------------------------------------------------------------


@pytest.fixture(scope="module")
def small_tars(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two small bundles' tars (30 KiB: six raw blobs of 3000 bytes, a record, its output)."""
    from audit._archive import pack  # noqa: PLC0415
    from tests.factories import write_small_bundle  # noqa: PLC0415

    root = tmp_path_factory.mktemp("small")
    tars = {}
    for name in ("a", "b"):
        blobs = [(f"raw/f{i}.bin", _rng(f"{name}{i}").randbytes(3000)) for i in range(6)]
        write_small_bundle(root / name, blobs, run_id=f"run-{name}", durable=False)
        pack(root / name, root / f"{name}.tar")
        tars[name] = root / f"{name}.tar"
    return tars


@pytest.mark.parametrize("mode", ["honest", "flip-again"])
def test_the_url_reader_passes_other_bytes_on_and_the_member_refuses_them(
    mode: str, site: Site, small_tars: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control. Since d8e5c39 the URL reader does not prove a range it receives again: a blob
    whose bytes the listing received (its windows), let go (4 KiB kept) and asked for again,
    comes back from a server that flips every byte it sends again as other bytes
    (``Member.chunks``). Read to be judged (``Member.proven``) the same blob is refused: one
    line naming the URL and the blob. From an honest server both are the blob's bytes."""
    from verify import open_source, url_snapshots  # noqa: PLC0415

    _tiny(monkeypatch, 4096)
    tar = small_tars["a"]
    site.files["t.tar"] = tar.read_bytes()
    name = f"blobs/sha256/{_blob_digest(tar, 'raw/f0.bin')}"
    with tarfile.open(tar) as archive:
        truth = archive.extractfile(name).read()  # type: ignore[union-attr]
    for proven in (False, True):
        site.reset()
        with url_snapshots():
            member = open_source(site.at()).members[name]  # listed from honest bytes
            site.mode = mode
            assert isinstance(member.reader, RemoteTar)
            if mode == "honest":
                got = b"".join(member.proven() if proven else member.chunks())
                assert got == truth
            elif not proven:
                got = b"".join(member.chunks())
                assert len(got) == len(truth) and got != truth  # passed on, unproven
            else:
                with pytest.raises(ChangedWhileRead) as refused:
                    b"".join(member.proven())
                assert str(refused.value) == f"{site.at()}: {name}: {CHANGED}"
                assert refused.value.exit_code == 2
        assert _most_sent(site.ranges()) == 2  # the blob's first bytes, received again


# --- what the reader costs (the review's regressions, as controls of the reader now) -------------


def _waits(read: Any, seconds: float = 10) -> bool:
    """Whether ``read()`` is still running after ``seconds`` (it runs on a thread of its own)."""
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(seconds)
    return thread.is_alive()


def test_a_read_from_memory_does_not_wait_for_another_threads_request(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control (the review's regression 3). A read wholly in what is kept (the caller reading
    the manifest or a record kept since the first read) returns at once while another thread's
    request (the hashing thread's block) is held by the server."""
    _small(monkeypatch, FIRST_READ=4096, BLOCK=8192, GAP=0, CACHE_BYTES=1 << 20, SMALL_TAR=0)
    truth = _rng(10).randbytes(100_000)
    site.files["t.tar"] = truth
    tar = RemoteTar(site.at())
    site.hold_at = 50_000
    hashing = threading.Thread(target=tar.pread, args=(50_000, 8192), daemon=True)
    hashing.start()
    try:
        assert site.held.wait(10)  # the other thread's request is in flight
        got: list[bytes] = []
        started = time.monotonic()
        assert not _waits(lambda: got.append(tar.pread(100, 200)), 1), "waited for the network"
        assert got == [truth[100:300]] and time.monotonic() - started < 1
    finally:
        site.release.set()
        hashing.join(10)
    assert not hashing.is_alive()


def test_small_reads_of_ranges_let_go_receive_about_what_they_read(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control (the review's regression 2). A tar hashed a block at a time, eight blocks kept,
    then 40 records of 200 bytes read in another order than the tar's (the publisher orders
    the tar): each receives its own bytes, from at most ``GAP`` before, not a block."""
    block, gap = 8192, 1024
    _small(monkeypatch, FIRST_READ=block, BLOCK=block, GAP=gap, CACHE_BYTES=8 * block, SMALL_TAR=0)
    truth = _rng(11).randbytes(40 * block)
    site.files["t.tar"] = truth
    tar = RemoteTar(site.at())
    for position in range(0, len(truth), block):  # hashing: in order, a block at a time
        assert tar.pread(position, block) == truth[position : position + block]
    hashed = tar.received
    for index in range(40):  # records: 200 bytes each, in another order than the tar's
        offset = (index * 9) % 40 * block + 100
        assert tar.pread(offset, 200) == truth[offset : offset + 200]
    assert tar.received - hashed <= 40 * (200 + gap), tar.received - hashed


@pytest.fixture(scope="module")
def medium_tar(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A bundle's tar (26 MB) of 200 blobs of 130 KiB: each past the listing's 64 KiB window,
    so the listing reads a window at each header and steps over the rest."""
    from audit._archive import pack  # noqa: PLC0415
    from tests.factories import write_small_bundle  # noqa: PLC0415

    root = tmp_path_factory.mktemp("medium")
    rng = _rng(12)
    blobs = [(f"raw/{i}.bin", rng.randbytes(130 << 10)) for i in range(200)]
    write_small_bundle(root / "b", blobs, durable=False)
    pack(root / "b", root / "b.tar")
    return (root / "b.tar").read_bytes()


def test_hashing_asks_for_a_block_at_a_time(site: Site, medium_tar: bytes) -> None:
    """Control (the review's regression 1). With the sizes as shipped and a tar within
    ``CACHE_BYTES``, hashing reads the members in requests of ``BLOCK`` (ADR 0024 decision 3),
    running on through the windows the listing kept, not a request per gap between them."""
    from verify import open_source, url_snapshots, verify_bundle  # noqa: PLC0415

    assert len(medium_tar) < remote.CACHE_BYTES
    site.files["t.tar"] = medium_tar
    with url_snapshots():
        source = open_source(site.at())
        listing = len(site.ranges())
        assert verify_bundle(source).verdict.integrity.status == "ok"
    hashing = len(site.ranges()) - listing
    assert hashing <= len(medium_tar) // remote.BLOCK + 4, (hashing, listing)


# --- whole commands: the recorded real bundle ----------------------------------------------------

RECORDED = (
    Path(__file__).resolve().parents[2] / "examples" / "recorded" / "llamacpp-smollm2-135m.tar"
)
"""A real recorded bundle (29 MB, 464 members; its largest blob the 4 MB transport log)."""


def _scaled(monkeypatch: pytest.MonkeyPatch, scale: int) -> None:
    """The URL reader's sizes divided by ``scale``, their ratios kept (a 29 MB tar read as a
    ``29 * scale`` MB one would be)."""
    _small(
        monkeypatch,
        **{
            name: getattr(remote, name) // scale
            for name in ("FIRST_READ", "BLOCK", "GAP", "CACHE_BYTES", "SMALL_TAR")
        },
    )


_Outcome = tuple[int, bytes, str]
"""A command's exit code, its standard output's bytes, its standard error."""


def _cli(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> _Outcome:
    from audit.cli import main  # noqa: PLC0415 - as the other hostile tests

    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err.decode()


def _never_judged_on_other_bytes(got: _Outcome, disk: _Outcome) -> None:
    """What holds under every liar: exit 0 only with the disk's verdict bytes, and no verdict
    whose integrity is ok but the disk's."""
    code, out, _ = got
    if code == 0:
        assert got == disk
    if out.startswith(b"{") and json.loads(out).get("integrity", {}).get("status") == "ok":
        assert out == disk[1]


def _integrity_failed(got: _Outcome, command: str) -> set[str]:
    """``got`` is exit 1 with a verdict whose integrity failed, every finding a blob that does
    not hash to its name, and one line saying so; the blobs (their paths)."""
    code, out, err = got
    assert code == 1, err
    verdict = json.loads(out)
    assert verdict["integrity"]["status"] == "failed" and not verdict["rankable"]
    findings = verdict["integrity"]["findings"]
    assert findings and {f["code"] for f in findings} == {"digest_mismatch"}, findings
    assert err.startswith(f"audit {command}: integrity failed: {len(findings)} finding(s); ")
    assert err.endswith(", not to its name\n") and err.count("\n") == 1, err
    return {f["path"] for f in findings}


def _changed(got: _Outcome, command: str, url: str, digest: str) -> None:
    """``got`` is exit 2, nothing on standard output, one line: the blob ``digest`` at ``url``
    read to be judged was other bytes than when it was hashed."""
    assert got == (2, b"", f"audit {command}: {url}: blobs/sha256/{digest}: {CHANGED}\n"), got


def _captured(argv: list[str]) -> _Outcome:
    """:func:`_cli` for a module's fixture (``capsysbinary`` is a test's)."""
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    from audit.cli import main  # noqa: PLC0415

    out, err = io.BytesIO(), io.StringIO()
    text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def recorded_disk() -> _Outcome:
    """``audit verify --json`` of the recorded bundle from disk (no transport log kept)."""
    _READ_LOGS.clear()
    return _captured(["verify", str(RECORDED), "--json"])


@dataclass(frozen=True)
class _Read:
    """A verification by URL: its outcome, the ranges asked for and the bytes sent."""

    got: _Outcome
    asked: list[tuple[int, int]]
    sent: int


@pytest.fixture(scope="module")
def recorded_by_url(running: Site) -> _Read:
    """``audit verify --json`` of the recorded bundle from an honest server, the reader's sizes
    a sixteenth (as a 464 MB tar of its layout would be read: 4 MiB kept of 29 MB)."""
    _READ_LOGS.clear()
    running.files.clear()
    running.reset()
    running.files["t.tar"] = RECORDED.read_bytes()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _scaled(monkeypatch, 16)
        got = _captured(["verify", running.at(), "--json"])
    return _Read(got, running.ranges(), running.sent())


def test_a_real_bundle_received_again_gives_the_disks_verdict(
    recorded_by_url: _Read, recorded_disk: _Outcome
) -> None:
    """Control. The recorded bundle from an honest server, with 4 MiB kept of its 29 MB: its
    blobs are received again to be hashed and its records again to be judged, each proven as it
    is read; the disk's verdict bytes, exit 0."""
    assert recorded_disk[0] == 0 and recorded_disk[1].startswith(b"{")
    assert recorded_by_url.got == recorded_disk
    assert _most_sent(recorded_by_url.asked) >= 3  # bytes received three times, at least


def test_a_real_bundle_read_by_url_costs_what_it_did(recorded_by_url: _Read) -> None:
    """Control (the review's regression 2, whole). The recorded bundle through the sizes
    divided by 16 receives at most 3x the tar: 72 MB of 29 MB, 2.5x, as before the range proof
    (which made it 194 MB, 6.7x); less when the process read its transport log before (ADR
    0051: 68 MB)."""
    assert recorded_by_url.sent <= 3 * RECORDED.stat().st_size, recorded_by_url.sent


@pytest.mark.parametrize("mode", [m for m in MODES if m != "honest"])
def test_a_real_bundle_from_a_server_that_lies_on_a_later_read(
    mode: str,
    site: Site,
    recorded_disk: _Outcome,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Control. The recorded bundle, 4 MiB kept of its 29 MB, from a server that answers bytes
    it sent before with other bytes, every header alike:

    - ``flip-again`` (every byte sent again flipped): the lie reaches the hashing. The listing
      received each small member's bytes and the first bytes of the large ones in its windows
      and let them go; the hashing receives them again, flipped, and the blobs do not hash to
      their names: exactly the blobs a byte of which the server sent again (461 of 463: not
      the empty blob, nor one whose bytes came once). Exit 1, a verdict whose integrity FAILED,
      nothing judged from those bytes. (The manifest, read right after the listing, is still
      kept: honest.)
    - ``flip-third`` (honest to the listing and the hashing): the lie reaches the first record
      read to be judged (``components/coding/result.json``), received a third time, flipped:
      exit 2, one line naming the URL and its blob (``ChangedWhileRead``).
    - ``short-again``, ``fewer-again``, ``whole-again`` (half a body under its full length, one
      byte fewer, the whole object): the first range asked for again is refused by the URL
      reader (a short read, tried three times; a Content-Range that answers another range; no
      byte ranges): exit 2, one line naming the URL."""
    monkeypatch.setattr(remote, "_BACKOFF_S", (0.01, 0.01))
    _scaled(monkeypatch, 16)
    site.files["t.tar"] = RECORDED.read_bytes()
    site.reset(mode)
    url = site.at()
    got = _cli(["verify", url, "--json"], capsysbinary)
    _never_judged_on_other_bytes(got, recorded_disk)
    code, out, err = got
    if mode == "flip-again":  # the blobs that fail: exactly those a byte of which came again
        failed = _integrity_failed(got, "verify")
        assert failed == _blobs_sent_again(RECORDED, site.ranges())
        assert len(failed) == 461  # of 463: not the empty blob, nor one sent once
        assert _most_sent(site.ranges()) == 2
    elif mode == "flip-third":
        _changed(got, "verify", url, _blob_digest(RECORDED, RESULT))
        assert _most_sent(site.ranges()) == 3
    else:
        assert (code, out) == (2, b""), err
        assert err.startswith(f"audit verify: {url}: ") and err.count("\n") == 1, err
        assert {
            "short-again": ": cannot read: the response broke off: ",
            "fewer-again": "; nothing was judged",
            "whole-again": ": the server does not serve byte ranges (it answered a range "
            "request with the whole object, HTTP 200)",
        }[mode] in err, err
        if mode != "whole-again":
            assert err.startswith(f"audit verify: {url}: bytes "), err


LOG = "transport/exchanges.jsonl"
"""The recorded bundle's transport log (4 MB, 235 exchanges), read once per process for
bundles that share it (``verify._shell._READ_LOGS``, ADR 0051)."""


def _other_bytes(url: str, digest: str) -> str:
    """The refusal of a blob received again with other bytes than were hashed."""
    return (
        f"{url}: blobs/sha256/{digest}: other bytes than when it was hashed: the bundle changed "
        "while it was verified; nothing was judged"
    )


def test_a_real_bundle_whose_log_alone_is_flipped_when_judged(
    site: Site,
    recorded_disk: _Outcome,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Control (ADR 0053). The recorded bundle, 4 MiB kept, from a server that lies only about
    the transport log's bytes, and only from their third sending (honest to the listing and the
    hashing): the log's first bytes, received a third time to be judged, are flipped, and its
    first line is refused. The reader stops there, before the end of the blob; the rest is read
    then and the whole compared with its digest, so the refusal is the bundle's, exit 2, naming
    the log's blob: not a finding of one record on bytes no digest vouches for."""
    _scaled(monkeypatch, 16)
    site.files["t.tar"] = RECORDED.read_bytes()
    site.reset("flip-third")
    site.within = _data_of(RECORDED, LOG)
    got = _cli(["verify", site.at(), "--json"], capsysbinary)
    _never_judged_on_other_bytes(got, recorded_disk)
    code, out, err = got
    assert (code, out) == (2, b""), err
    assert err == f"audit verify: {_other_bytes(site.at(), _blob_digest(RECORDED, LOG))}\n", err
    low, high = site.within
    in_log = [(max(a, low), min(b, high)) for a, b in site.ranges() if a < high and low < b]
    assert _most_sent(in_log) >= 3  # the log's first bytes: listed, hashed, then read


@pytest.fixture(scope="module")
def recorded_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tar of the recorded run resealed under another run id (another bundle digest), its
    transport log the same blob."""
    from audit._archive import pack  # noqa: PLC0415
    from tests.gate_kit import resealed_as_replayed, unpacked_recorded  # noqa: PLC0415

    root = tmp_path_factory.mktemp("copy")
    manifest, files = unpacked_recorded(root)
    copy = resealed_as_replayed(
        root / "copy", manifest, dict(files), fields={"run_id": f"{manifest.run_id}-copy"}
    )
    pack(copy, root / "copy.tar")
    assert _blob_digest(root / "copy.tar", LOG) == _blob_digest(RECORDED, LOG)
    return root / "copy.tar"


def test_a_copy_from_a_liar_does_not_fail_the_honest_original(
    site: Site,
    recorded_copy: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Hole found in review, closed: ``audit verify-archive`` of two URLs, 4 MiB kept:
    ``a.tar``, a copy of the recorded run under another run id, from a server that flips its
    transport log's bytes from their third sending (judged first: its name sorts first), and
    ``b.tar``, the recorded run itself, served honestly. A log's reading was kept by its digest
    (ADR 0051) even when it stopped at a refused line before its bytes were proven, and the
    honest original, sharing the log, was given the liar's refusal: integrity FAILED. Now a
    reading refused before its end is never kept, and the refused blob is read to its end and
    proven: the copy is a refused source naming its log's blob, the original is ok."""
    _scaled(monkeypatch, 16)
    site.files["a.tar"] = recorded_copy.read_bytes()
    site.files["b.tar"] = RECORDED.read_bytes()
    site.reset("flip-third")
    site.only, site.within = "a.tar", _data_of(recorded_copy, LOG)
    code, out, err = _cli(
        ["verify-archive", site.at("a.tar"), site.at("b.tar"), "--json"], capsysbinary
    )
    report = json.loads(out)
    assert code == 1, err
    ((refused,),) = [report["refused"]]
    assert refused["source"] == site.at("a.tar"), refused
    assert refused["reason"].endswith(
        _other_bytes(site.at("a.tar"), _blob_digest(RECORDED, LOG)).split(": ", 1)[1]
    ), refused
    ((original,),) = [report["bundles"]]
    assert original["sources"] == [site.at("b.tar")]
    assert original["integrity"] == "ok", original["first_reason"]


# --- whole commands: a small tar, more or less of it kept ----------------------------------------

KEPT = {"all": 30720, "half": 16384, "manifest-let-go": 4096, "one-kib": 1024}
"""``CACHE_BYTES`` for a 30 KiB tar: all of it, about half, so little that the manifest is let
go before it is read, so little that the listing asks for its own bytes again."""


@pytest.mark.parametrize("mode", ["honest", "flip-again", "flip-third"])
@pytest.mark.parametrize("kept", sorted(KEPT))
def test_a_small_tar_more_or_less_of_it_kept(  # noqa: PLR0917 - its fixtures
    kept: str,
    mode: str,
    site: Site,
    small_tars: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Control. ``CACHE_BYTES`` is no edge of a proof any more: wherever the lie lands, the
    answer is the disk's verdict bytes or a refusal. From an honest server: the disk's verdict.
    From ``flip-again``:

    - all or half kept: the hashing's requests run on into the windows the listing received
      (5632 bytes of them with all kept): exactly the blobs a byte of which came again fail
      their digests (3 of 8, 7 of 8), exit 1, integrity FAILED;
    - 4 KiB kept: the manifest's bytes (received in a listing window, let go) are received again
      when the manifest is read, before any hashing: ``manifest.json: invalid UTF-8 at byte 0``,
      exit 1, no verdict;
    - 1 KiB kept: the listing itself asks for bytes it received before, the tar's end, which
      come back other than zeros: refused (exit 1), naming the URL and the offset.

    From ``flip-third``:

    - all kept: no byte is sent three times (the records are read from memory): the liar never
      lies, the disk's verdict;
    - half or 4 KiB kept: the record is received a third time to be judged: exit 2, naming its
      blob;
    - 1 KiB kept: bytes are sent a third time, flipped, but only a member's header and the
      manifest's bytes at the end of a hashing request larger than what is kept, which nothing
      reads: the disk's verdict."""
    tar = small_tars["a"]
    disk = _cli(["verify", str(tar), "--json"], capsysbinary)
    assert disk[0] == 0 and disk[1].startswith(b"{")
    _tiny(monkeypatch, KEPT[kept])
    site.files["t.tar"] = tar.read_bytes()
    site.reset(mode)
    url = site.at()
    got = _cli(["verify", url, "--json"], capsysbinary)
    _never_judged_on_other_bytes(got, disk)
    most = _most_sent(site.ranges())
    if mode == "honest":
        assert got == disk
    elif mode == "flip-again" and kept in ("all", "half"):
        failed = _integrity_failed(got, "verify")
        assert failed == _blobs_sent_again(tar, site.ranges())
        assert len(failed) == (3 if kept == "all" else 7)  # of 8 blobs
    elif mode == "flip-again" and kept == "manifest-let-go":
        assert got == (1, b"", f"audit verify: {url}: manifest.json: invalid UTF-8 at byte 0\n")
    elif mode == "flip-again":
        code, out, err = got
        assert (code, out) == (1, b""), err
        assert err.startswith(f"audit verify: {url}: non-zero bytes at offset 27136, after the ")
        assert err.count("\n") == 1, err
    elif kept in ("half", "manifest-let-go"):
        _changed(got, "verify", url, _blob_digest(tar, RESULT))
        assert most == 3
    else:
        assert got == disk
        assert most == (2 if kept == "all" else 3)


# --- whole commands: archives, and one URL twice -------------------------------------------------


@pytest.mark.parametrize("mode", ["flip-again", "flip-third"])
def test_an_archive_of_urls_refuses_the_one_that_lies(
    mode: str,
    site: Site,
    small_tars: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Control. ``audit verify-archive`` of two URLs (the second listed while the first is
    verified), 4 KiB kept, the second's server lying: it is a refused source, the first judged
    as from disk. ``flip-again``: the archive's listing reads the manifest (for the bundle's
    digest) from bytes its window received and let go, so that read is already a second one:
    ``manifest.json: invalid UTF-8 at byte 0``. ``flip-third``: the listing's and the
    verification's reads of the manifest are honest; the record read to be judged is received a
    third time: refused, naming its blob."""
    local = json.loads(_cli(["verify-archive", str(small_tars["a"]), "--json"], capsysbinary)[1])
    _tiny(monkeypatch, 4096)
    for name, tar in small_tars.items():
        site.files[f"{name}.tar"] = tar.read_bytes()
    site.reset(mode)
    site.only = "b.tar"
    code, out, err = _cli(
        ["verify-archive", site.at("a.tar"), site.at("b.tar"), "--json"], capsysbinary
    )
    report = json.loads(out)
    assert (code, err) == (1, ""), err
    reason = (
        "manifest.json: invalid UTF-8 at byte 0"
        if mode == "flip-again"
        else f"blobs/sha256/{_blob_digest(small_tars['b'], RESULT)}: {CHANGED}"
    )
    assert report["refused"] == [{"reason": reason, "source": site.at("b.tar")}]
    assert report["counts"] == {
        "bundles": 1, "failed": 0, "passed": 1, "refused": 1, "sources": 2
    }  # fmt: skip
    ((judged,),) = [report["bundles"]]
    assert judged.pop("sources") == [site.at("a.tar")]
    assert [judged] == [{k: v for k, v in b.items() if k != "sources"} for b in local["bundles"]]


@pytest.mark.parametrize("mode", ["flip-again", "flip-third"])
def test_one_url_twice_in_one_command(
    mode: str,
    site: Site,
    small_tars: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Control. The same URL given twice to one command (one snapshot: listed once; ``show``
    given it once reads it for the verdict and for the report), 4 KiB kept; never a verdict.
    ``flip-again``: the manifest's second read is flipped (as in the archive above): ``rank``
    refuses it as each source (read once, the second given the first's result: the listing
    review of 2026-12-07), ``verify-archive`` takes it as one source and refuses it,
    ``diff`` and ``show`` refuse it, exit 1, one line naming it. ``flip-third``:
    the record read to be judged is refused, naming its blob (exit 2 for ``diff`` and
    ``show``); ``rank``'s second source is given the first's refusal."""
    _tiny(monkeypatch, 4096)
    site.files["b.tar"] = small_tars["b"].read_bytes()
    url = site.at("b.tar")
    invalid = "manifest.json: invalid UTF-8 at byte 0"
    changed = f"blobs/sha256/{_blob_digest(small_tars['b'], RESULT)}: {CHANGED}"
    first = invalid if mode == "flip-again" else changed
    for argv in (
        ["rank", url, url, "--json"],
        ["verify-archive", url, url, "--json"],
        ["diff", url, url, "--json"],
        ["show", url],
    ):
        site.reset(mode)
        code, out, err = _cli(argv, capsysbinary)
        if argv[0] == "rank":
            assert code == 1 and json.loads(out)["ranked"] == [], (out, err)
            assert err == f"audit rank: refused {url}: {first}\n" * 2  # read once, said twice
        elif argv[0] == "verify-archive":
            report = json.loads(out)
            assert (code, err) == (1, "") and report["counts"]["sources"] == 1, (out, err)
            assert report["bundles"] == [] and report["refused"] == [
                {"reason": first, "source": url}
            ]
        elif mode == "flip-again":
            assert (code, out, err) == (1, b"", f"audit {argv[0]}: {url}: {invalid}\n")
        else:
            assert (code, out, err) == (2, b"", f"audit {argv[0]}: {url}: {changed}\n")
