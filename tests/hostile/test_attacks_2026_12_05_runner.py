"""Hostile tests of 2026-12-05: a buggy or hostile HARNESS (pinned upstream code the runner runs
in its sandbox) and a careless OPERATOR against the runner (audit/run.py, audit/sandbox.py,
audit/observer.py, audit/_store.py, audit/cli/recording.py).

Every run is a real ``audit run`` of the smoke profile against the reference endpoint, with the
reference SparkBench harness wrapped by a hostile prologue/epilogue (``_WRAP``: code given in
``HOSTILE_PRE``/``HOSTILE_POST``, ``out`` its output directory); the observer attacks use
small ``http.server`` endpoints on 127.0.0.1. Each test asserts the safe behaviour; a hole is a
strict xfail whose reason says what happens and where.

Holes (each failed on the code as found, 2026-12-05). Fixed the same day: 1 to 4 by
``audit.parsers.collect_outputs`` (the outputs read once, no link followed, what is not a
regular file refused by name; a name that is not UTF-8 kept escaped by ``escaped_path``; the
scratch removed by ``rm -r``), 8 and 9 by ``audit.run._check_store``, 10 by
``pins._model.Harness._known_placeholders``; 6 by the sandbox's PID namespace (``unshare
--pid``, the next day); 7 on 2026-12-06 (a chunk keeps its bytes, ``raw``, where they are not
its text's UTF-8: ``bundle_schema.models.stream_chunks``); 5 on 2026-12-06 as well (ADR 0047:
strace in a PID namespace above the harness's, the trace's directory covered), with two more
ways to the same end that were open too (the trace rewritten through ``/proc/<pid>/fd``, strace
killed before the connect).

1. A harness output whose name is not UTF-8 (``r\xff.json``), or a tree of 1,100 nested
   directories, ends the whole run with exit 2 and no bundle ("the run failed before its
   bundle was written: UnicodeEncodeError ..." / "RecursionError ...", naming no file):
   ``raw_name`` encodes a surrogate (audit/run.py) and ``out.rglob`` recurses
   (audit/run.py ``_Harnesses._keep_outputs``), both raised out of ``_keep_outputs`` into
   ``_gather_and_write``'s ``except Exception`` (audit/run.py). The harness's components should
   fail, the bundle be written.
2. A symlink among the outputs is followed by the runner (``p.is_file()``, ``read_bytes()``,
   audit/run.py ``_Harnesses._keep_outputs``): ``leak.txt -> /any/file`` and
   ``environ.txt -> /proc/self/environ`` put the bytes of a file outside the output directory, and
   the runner's own unredacted environment, into the bundle as if the harness wrote them (the
   parser's ``output_files`` skips links, so what is kept and what is parsed differ).
3. A harness that replaces its output directory by a symlink to another directory gets that
   directory's files kept as its raw outputs (``out.rglob`` through the link).
4. A FIFO or a dangling symlink among the outputs is silently dropped: neither kept nor
   refused by name, and the component is COMPLETED (``is_file()`` filter, audit/run.py
   ``_Harnesses._keep_outputs``).
5. The socket ledger is read from a file the harness can write: strace appends to
   ``scratch/strace-<component>-<seq>.txt`` (audit/sandbox.py ``run_sandboxed``), two levels above
   ``{out}``; a harness that connects to 93.184.216.34 and then rewrites that file without the line
   is QUALIFIED (the unforged control is INFRA_ERROR).
6. A harness child made with ``clone(CLONE_UNTRACED)`` that calls ``setsid()`` and
   ``unshare(CLONE_NEWNET)`` is in neither the command's process group nor the sandbox's
   network namespace: ``_kill_group`` and ``_kill_namespace`` (audit/sandbox.py) miss it, it
   outlives the run (the run config still says ``cleanup: removed``) and can touch the scratch
   and the bundle later.
7. A streamed reply that is not UTF-8 is recorded with U+FFFD in place of its bytes
   (``getincrementaldecoder("utf-8")("replace")``, audit/observer.py ``Observer._stream``;
   ``Chunk.data`` is text): the chunks are not "the exact stream the harness received" (a whole body
   that is not UTF-8 is kept as base64).
8. ``--store`` naming a sealed bundle (it has the store's ``blobs/sha256`` layout) writes the
   new run's blobs into it: the old bundle fails verification afterwards (extra blobs).
9. ``--store`` inside ``--out``: the store lands in the new bundle, which is sealed (exit 0)
   and fails integrity (``unexpected_file store/blobs/...``). Neither is checked
   (``run_qualification``, audit/run.py; ``BundleWriter._add_stored``).
10. A pin set whose harness command names an unknown placeholder (``{nope}``) is loaded, the
    run does its checkouts and probes, then stops at ``part.format(**values)``
    (audit/run.py ``_Harnesses._execute``) with "KeyError: 'nope'", naming neither the harness nor
    the command, leaving its scratch directory and an empty ``--out``; ``pins/_model.py``
    ``Harness.command`` checks no placeholder.

Held: the unforged non-loopback connect() is in the ledger and the run is INFRA_ERROR; a
harness that deletes its own output directory (from inside it) fails its component with "did
not write quality.json"; a symlinked sub-directory is not descended (Python 3.11's rglob); the
observer takes pipelined requests, a chunked body with ``Expect: 100-continue``, HTTP/1.0 and a
percent-encoded chat path (``/v1/chat/%63ompletions``), writes the policy into each and records
exactly what the endpoint got; SIGINT while a harness runs exits 130 with the one line
``audit run: interrupted``, kills the harness and leaves nothing in TMPDIR (the evidence gathered
until then, probes and exchanges, is removed with the scratch directory: by design, ADR 0008,
unlike a defect mid-run, which keeps it).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from audit.observer import observe
from audit.run import RunRequest, default_policy, run_qualification
from bundle_schema.errors import InvalidInput
from bundle_schema.models import TransportExchange
from pins import PinSetSource, load_builtin, pin_set_source
from tests.factories import write_small_bundle
from tests.host_processes import kill_marked, marked
from verify import parse_manifest, verify_bundle
from verify._source import open_source

REFERENCE = load_builtin("gx10-reference-v5")
REFERENCE_TOML = Path(__file__).resolve().parents[2] / "pins" / "gx10-reference-v5.toml"

_WRAP = "\n".join([
    "import os, runpy, sys",
    "out = sys.argv[sys.argv.index('--out') + 1]",
    "exec(os.environ.get('HOSTILE_PRE', ''))",
    "sys.argv = ['spark.run'] + sys.argv[1:]",
    "code = 0",
    "try:",
    "    runpy.run_module('spark.run', run_name='__main__')",
    "except SystemExit as exc:",
    "    code = exc.code",
    "exec(os.environ.get('HOSTILE_POST', ''))",
    "sys.exit(code)",
])  # fmt: skip
"""SparkBench as pinned, with a hostile prologue and epilogue (code in HOSTILE_PRE and
HOSTILE_POST; ``out`` is its output directory)."""


@pytest.fixture(autouse=True)
def scratch_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The runs' scratch directories (kept when a run fails) under the test's own folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def _pins() -> PinSetSource:
    data = json.loads(json.dumps(dict(REFERENCE.data)))
    command = data["harnesses"]["sparkbench"]["command"]
    data["harnesses"]["sparkbench"]["command"] = ["{python}", "-c", _WRAP, *command[3:]]
    return pin_set_source(data, "hostile")


def _run(
    tmp_path: Path,
    mirrors: dict[str, Path],
    *,
    pre: str = "",
    post: str = "",
    profile: str = "smoke",
    **changes: Any,
) -> tuple[Path, PinSetSource]:
    pins = _pins()
    out = tmp_path / "bundle"
    with serve() as endpoint:
        run_qualification(
            RunRequest(
                endpoint=endpoint.url, pins=pins, profile=profile, out=out,
                model_digest=DEMO_DIGEST, mirrors=mirrors,
                harness_env={"HOSTILE_PRE": pre, "HOSTILE_POST": post}, **changes,
            )
        )  # fmt: skip
    return out, pins


def _blobs(bundle: Path) -> list[bytes]:
    return [p.read_bytes() for p in (bundle / "blobs" / "sha256").iterdir()]


def _coding(bundle: Path) -> dict[str, Any]:
    manifest = parse_manifest(open_source(bundle).manifest_bytes()).model
    digest = manifest.evidence["components/coding/result.json"].digest.split(":")[1]
    result: dict[str, Any] = json.loads((bundle / "blobs" / "sha256" / digest).read_bytes())
    return result


# --- outputs ---------------------------------------------------------------------------------

NOT_UTF8 = "open(os.path.join(os.fsencode(out), b'r\\xff.json'), 'w').write('{}')"
DEEP = "\n".join([
    "d = os.open(out, os.O_RDONLY)",
    "for _ in range(1100):",
    "    os.mkdir('a', dir_fd=d); n = os.open('a', os.O_RDONLY, dir_fd=d); os.close(d); d = n",
    "open(os.open('f', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d), 'w').write('x')",
])  # fmt: skip


def test_an_output_named_by_bytes_that_are_not_utf8_is_kept_by_an_escaped_name(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, pins = _run(tmp_path, mirrors, post=NOT_UTF8)
    result = _coding(out)
    assert result["status"] == "COMPLETED"
    assert "components/coding/raw/xr_ff.json" in result["raw_outputs"]  # escaped_path: reversible
    assert verify_bundle(out, pins=pins).verdict.integrity.findings == ()


def test_an_output_tree_too_deep_fails_its_component_not_the_run(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, _ = _run(tmp_path, mirrors, post=DEEP)
    result = _coding(out)
    assert result["status"] == "FAILED"
    assert "sparkbench wrote " in result["reason"] and "levels deep" in result["reason"]


SECRET = b"runner-only-secret-4f1c9e"


def test_a_symlinked_output_keeps_no_bytes_from_outside_the_output_directory(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    post = (
        f"os.symlink({str(secret)!r}, os.path.join(out, 'leak.txt')); "
        "os.symlink('/proc/self/environ', os.path.join(out, 'environ.txt'))"
    )
    out, _ = _run(tmp_path, mirrors, post=post)
    ours = Path("/proc/self/environ").read_bytes()
    blobs = _blobs(out)
    leaked_file = any(SECRET in b for b in blobs)
    leaked_environment = ours in blobs  # (never printed: a boolean only)
    assert not leaked_file
    assert not leaked_environment


def test_an_output_directory_swapped_for_a_link_reads_nothing_outside(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "quality.json").write_bytes(SECRET)
    post = f"import shutil; shutil.move(out, out + '.real'); os.symlink({str(outside)!r}, out)"
    out, _ = _run(tmp_path, mirrors, post=post)
    assert not any(SECRET in b for b in _blobs(out))


@pytest.mark.parametrize(
    "post",
    [
        "os.mkfifo(os.path.join(out, 'progress.fifo'))",
        "os.symlink('/nonexistent/x', os.path.join(out, 'progress.log'))",
    ],
    ids=["fifo", "dangling-link"],
)
def test_an_output_that_is_no_regular_file_is_refused_by_name(
    post: str, tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, _ = _run(tmp_path, mirrors, post=post)
    manifest = parse_manifest(open_source(out).manifest_bytes()).model
    kept = "components/coding/raw/progress.fifo" in manifest.evidence or (
        "components/coding/raw/progress.log" in manifest.evidence
    )
    result = _coding(out)
    refused = result["status"] == "FAILED" and "progress." in (result.get("reason") or "")
    assert kept or refused


def test_held_an_output_directory_the_harness_deleted_fails_its_component(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, _ = _run(tmp_path, mirrors, post="import shutil; os.chdir(out); shutil.rmtree(out)")
    result = _coding(out)
    assert result["status"] == "FAILED"
    # its contents go; the directory itself is a mount point in its view (ADR 0047), so
    # rmtree ends in EROFS (its folder is read-only) and the harness exits 1 (before, it went:
    # no quality.json)
    assert "Read-only file system" in result["reason"], result["reason"]


# --- the sandbox's evidence ------------------------------------------------------------------

CONNECT = "\n".join([
    "import socket",
    "s = socket.socket()",
    "s.settimeout(2)",
    "print(s.connect_ex(('93.184.216.34', 443)), flush=True)",
])  # fmt: skip

SCRATCH = "scratch = os.path.dirname(os.path.dirname(out))"
FORGE = "\n".join([
    CONNECT,
    "import glob",
    SCRATCH,
    "for t in glob.glob(os.path.join(scratch, '**', 'strace-*.txt'), recursive=True):",
    "    lines = open(t).read().splitlines(True)",
    "    os.unlink(t)",
    "    open(t, 'w').writelines(l for l in lines if '93.184.216.34' not in l)",
])  # fmt: skip
"""The trace rewritten by its name: the runner's scratch directory is two levels above ``out``."""

UNCOVER = "\n".join([
    "import ctypes",
    "libc = ctypes.CDLL(None, use_errno=True)",
    SCRATCH,
    "for line in open('/proc/self/mountinfo').read().splitlines()[::-1]:",
    "    point = line.split()[4]",
    "    if point.startswith(scratch + '/'):",
    "        done = libc.umount2(point.encode(), 2)  # MNT_DETACH",
    "        print('umount', point, done, ctypes.get_errno(), flush=True)",
    FORGE,
])  # fmt: skip
"""The tmpfs over the trace's directory taken off first (``umount2(MNT_DETACH)``)."""

THROUGH_PROC = "\n".join([
    CONNECT,
    "import glob",
    "for link in glob.glob('/proc/[0-9]*/fd/*'):",
    "    try:",
    "        if 'strace-' not in os.readlink(link): continue",
    "        lines = open(link).read().splitlines(True)",
    "        with open(link, 'r+') as f:",
    "            f.truncate(0)",
    "            f.writelines(l for l in lines if '93.184.216.34' not in l)",
    "    except OSError:",
    "        pass",
])  # fmt: skip
"""The trace rewritten through strace's (or any process's) open file, ``/proc/<pid>/fd/<n>``."""

STRACE_KILLED = "\n".join([
    "import glob, signal, time",
    "for comm in glob.glob('/proc/[0-9]*/comm'):",
    "    try:",
    "        if open(comm).read().strip() == 'strace':",
    "            os.kill(int(comm.split('/')[2]), signal.SIGKILL)",
    "    except OSError:",
    "        pass",
    "time.sleep(0.5)",
    CONNECT,
])  # fmt: skip
"""strace killed before the connect, so nothing records it."""


SNOOP = "\n".join([
    "import json",
    SCRATCH,
    "seen = {}",
    "for kind in ('checkouts', 'outputs', 'home'):",
    "    for name in sorted(os.listdir(os.path.join(scratch, kind))):",
    "        place = os.path.join(scratch, kind, name)",
    "        if name != 'sparkbench':",
    "            seen[f'{kind}/{name}'] = sorted(os.listdir(place))",
    "            open(os.path.join(place, 'planted.py'), 'w').write('raise SystemExit(3)')",
    "print('SEEN', json.dumps({'home': os.environ['HOME'], 'others': seen}), flush=True)",
])  # fmt: skip


def test_a_harness_sees_nothing_of_the_run_s_other_harnesses(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    """SparkBench runs last of the full profile's harnesses (benchlocal, hermesbench,
    sparkbench): their checkouts, outputs and homes are in the same scratch directory. Before
    ADR 0047's hiding it read them all, and could write an earlier harness's outputs before they
    were kept or a later harness's checkout before it ran (a file git ignores shows in no
    record); one home served them all."""
    out, pins = _run(tmp_path, mirrors, post=SNOOP, profile="full")
    manifest = parse_manifest(open_source(out).manifest_bytes()).model
    digest = manifest.evidence["logs/sparkbench.stdout.txt"].digest.split(":")[1]
    stdout = (out / "blobs" / "sha256" / digest).read_text()
    seen = json.loads(next(line for line in stdout.splitlines() if line.startswith("SEEN "))[5:])
    assert seen["home"].endswith("/home/sparkbench")
    assert set(seen["others"]) >= {
        f"{kind}/{name}" for kind in ("checkouts", "outputs", "home")
        for name in ("benchlocal", "hermesbench")
    }  # fmt: skip
    assert all(listing == [] for listing in seen["others"].values()), seen
    assert verify_bundle(out, pins=pins).verdict.outcome == "QUALIFIED"


@pytest.mark.parametrize(
    "post",
    [
        pytest.param(CONNECT, id="connect"),
        pytest.param(FORGE, id="connect-then-rewrite-the-trace"),
        pytest.param(UNCOVER, id="uncover-then-rewrite-the-trace"),
        pytest.param(THROUGH_PROC, id="rewrite-the-trace-through-proc"),
        pytest.param(STRACE_KILLED, id="kill-strace-then-connect"),
    ],
)
def test_a_harness_cannot_hide_a_connect_outside_from_the_ledger(
    post: str, tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, pins = _run(tmp_path, mirrors, post=post)
    manifest = parse_manifest(open_source(out).manifest_bytes()).model
    ledger = manifest.evidence["network/socket-ledger.jsonl"].digest.split(":")[1]
    entries = (out / "blobs" / "sha256" / ledger).read_text().splitlines()
    assert any(json.loads(e)["address"] == "93.184.216.34" for e in entries)
    verdict = verify_bundle(out, pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR", verdict.reasons


ESCAPE = "\n".join([
    "import ctypes, time",
    "libc = ctypes.CDLL(None, use_errno=True)",
    "if libc.syscall(56, 0x00800000 | 17, 0, 0, 0, 0) == 0:  # clone(CLONE_UNTRACED | SIGCHLD)",
    "    os.setsid()",
    "    libc.unshare(0x40000000)  # CLONE_NEWNET: a network namespace of its own",
    "    null = os.open(os.devnull, os.O_RDWR)",
    "    [os.dup2(null, fd) for fd in (0, 1, 2)]",
    "    open(os.environ['PIDFILE'] + '.tmp', 'w').write(os.readlink('/proc/self'))",
    "    os.rename(os.environ['PIDFILE'] + '.tmp', os.environ['PIDFILE'])",
    "    time.sleep(30)",
    "    os._exit(0)",
    "for _ in range(1000):",
    "    if os.path.exists(os.environ['PIDFILE']): break",
    "    time.sleep(0.01)",
    "print('ESCAPED', os.path.exists(os.environ['PIDFILE']), flush=True)",
])  # fmt: skip


def test_a_process_in_a_network_namespace_of_its_own_does_not_outlive_the_run(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    # in the harness's own /tmp, named in the escaped child's environment: the host finds it
    pidfile = f"/tmp/escaped-{os.urandom(8).hex()}.pid"
    pins = _pins()
    out = tmp_path / "bundle"
    try:
        with serve() as endpoint:
            run_qualification(
                RunRequest(
                    endpoint=endpoint.url, pins=pins, profile="smoke", out=out,
                    model_digest=DEMO_DIGEST, mirrors=mirrors,
                    harness_env={"HOSTILE_POST": ESCAPE, "PIDFILE": pidfile},
                )
            )  # fmt: skip
        left = marked(f"PIDFILE={pidfile}")
    finally:
        kill_marked(f"PIDFILE={pidfile}")
    manifest = parse_manifest(open_source(out).manifest_bytes()).model
    evidence = manifest.evidence.items()
    logs = [(out / "blobs" / "sha256" / entry.digest[7:]).read_text()
            for name, entry in evidence if name.endswith(".stdout.txt")]  # fmt: skip
    assert any("ESCAPED True" in log for log in logs)  # the child escaped trace and namespace
    assert not Path(pidfile).exists()  # written in the harness's /tmp, not the host's
    assert left == []


# --- the observer ----------------------------------------------------------------------------


class _Quiet(BaseHTTPRequestHandler):
    """A test endpoint: HTTP/1.1, no log lines."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Garbled(_Quiet):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        event = b'{"model":"m","choices":[{"delta":{"content":"caf\xe9 \xff"}}]}'
        body = b"data: " + event + b"\n\ndata: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def _server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _streamed(handler: type[BaseHTTPRequestHandler]) -> tuple[bytes, TransportExchange]:
    """One chat completion through the observer to ``handler``: what the client got, and the
    exchange recorded."""
    with _server(handler) as url, observe(url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request(
            "POST", "/v1/chat/completions", b"{}", {"Content-Type": "application/json"}
        )
        got = connection.getresponse().read()
        connection.close()
        return got, observer.wait_for(1)[0]


def test_a_stream_that_is_not_utf8_is_recorded_as_the_harness_got_it() -> None:
    """Closed 2026-12-06: a chunk whose bytes are not its text's UTF-8 keeps them (``raw``);
    until then the observer recorded the text a reader makes of them, U+FFFD for ``\xff``."""
    got, exchange = _streamed(_Garbled)
    recorded = b"".join(c.received() for c in exchange.chunks)
    assert b"\xff" in got
    assert recorded == got
    assert "caf\ufffd \ufffd" in "".join(c.data for c in exchange.chunks)  # as a reader reads it


class _Pieces(_Quiet):
    """An endpoint that streams its ``pieces``, each in a chunk of its own, 50 ms apart."""

    pieces: ClassVar[tuple[bytes, ...]] = ()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in self.pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            time.sleep(0.05)
        self.wfile.write(b"0\r\n\r\n")


class _Split(_Pieces):
    """An endpoint that streams a character's two bytes in two writes, apart in time."""

    pieces = (b'data: {"model":"m","choices":[{"delta":{"content":"caf\xc3',
              b'\xa9"}}]}\n\n', b"data: [DONE]\n\n")  # fmt: skip


def test_a_character_split_across_writes_is_recorded_as_it_came() -> None:
    got, exchange = _streamed(_Split)
    assert b"".join(c.received() for c in exchange.chunks) == got
    assert '"content":"caf\u00e9"' in "".join(c.data for c in exchange.chunks)
    split = [c for c in exchange.chunks if c.data.endswith("caf")]  # the writes came apart
    assert all(c.raw is not None for c in split)  # its bytes end in half a character


class _Echo(_Quiet):
    """An endpoint that answers every POST with a chat reply and keeps the bodies it got."""

    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        type(self).received.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        choice = {"message": {"content": "ok"}, "finish_reason": "stop"}
        body = json.dumps({"model": "m", "choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_held_odd_framing_still_carries_the_policy_and_is_recorded_as_sent() -> None:
    """Pipelined in one write: a chunked request with ``Expect: 100-continue`` to a
    percent-encoded chat path, then an HTTP/1.0 legacy completion; each reaches the endpoint
    with the policy, and each record is what the endpoint got."""
    _Echo.received = []
    chunked = b'{"model":"m","messages":[]}'
    legacy = b'{"model":"m","prompt":"x"}'
    wire = (
        b"POST /v1/chat/%63ompletions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked), chunked)
        + b"POST /v1/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (len(legacy), legacy)
    )
    policy = default_policy("off").serialization
    with _server(_Echo) as url, observe(url, policy=policy) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(wire)
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        exchanges = observer.wait_for(2)
    assert answer.count(b'"content": "ok"') == 2
    assert len(_Echo.received) == 2
    for exchange, got in zip(exchanges, _Echo.received, strict=True):
        assert json.loads(got)["chat_template_kwargs"] == {"enable_thinking": False}
        assert exchange.request_body is not None
        assert exchange.request_body.data.encode() == got


# --- the operator ----------------------------------------------------------------------------


def test_a_store_that_is_a_sealed_bundle_is_not_written_into(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    old = tmp_path / "old-run"
    write_small_bundle(old)
    before = sorted(p.relative_to(old).as_posix() for p in old.rglob("*"))
    assert verify_bundle(old).verdict.integrity.status == "ok"
    with contextlib.suppress(InvalidInput):  # refused: the safe answer too
        _run(tmp_path, mirrors, store=old)
    after = sorted(p.relative_to(old).as_posix() for p in old.rglob("*"))
    assert after == before
    assert verify_bundle(old).verdict.integrity.status == "ok"


def test_a_store_inside_the_bundle_is_refused_or_the_bundle_verifies(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out = tmp_path / "bundle"
    try:
        _, pins = _run(tmp_path, mirrors, store=out / "store")
    except InvalidInput:
        return
    verdict = verify_bundle(out, pins=pins).verdict
    assert verdict.integrity.status == "ok", verdict.integrity


def _pins_file(tmp_path: Path, command: list[str]) -> Path:
    text = REFERENCE_TOML.read_text("utf-8")
    line = next(
        x for x in text.splitlines() if x.startswith('command = ["{python}", "-m", "spark.run"')
    )
    path = tmp_path / "pins.toml"
    path.write_text(text.replace(line, "command = " + json.dumps(command), 1), "utf-8")
    return path


def _argv(endpoint: str, pins: Path, out: Path, mirrors: dict[str, Path]) -> list[str]:
    return ["run", "--endpoint", endpoint, "--pins", str(pins), "--profile", "smoke",
            "--out", str(out), "--model-digest", DEMO_DIGEST, "--json",
            *(f"--mirror={name}={path}" for name, path in mirrors.items())]  # fmt: skip


def test_a_harness_command_with_an_unknown_placeholder_is_refused_before_the_run(
    tmp_path: Path,
    mirrors: dict[str, Path],
    scratch_here: Path,
    capsys: pytest.CaptureFixture[str],
    sandbox: None,
) -> None:
    pins = _pins_file(tmp_path, ["{python}", "-m", "spark.run", "--out", "{out}", "--x", "{nope}"])
    out = tmp_path / "bundle"
    with serve() as endpoint:
        code = main(_argv(endpoint.url, pins, out, mirrors))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "sparkbench" in err and "{nope}" in err
    assert not out.exists()
    assert not list(scratch_here.iterdir())


SLEEPER = (
    "import os, sys, time; open(os.path.join(sys.argv[1], 'started'), 'w')"
    ".write('up'); time.sleep(60)"
)


def test_held_an_interrupt_while_a_harness_runs_is_one_line_and_leaves_no_process(
    tmp_path: Path, mirrors: dict[str, Path], scratch_here: Path, sandbox: None
) -> None:
    pins = _pins_file(tmp_path, ["{python}", "-c", SLEEPER, "{out}"])
    out = tmp_path / "bundle"
    env = {**os.environ, "TMPDIR": str(scratch_here)}
    with serve() as endpoint:
        process = subprocess.Popen(
            [sys.executable, "-m", "audit", *_argv(endpoint.url, pins, out, mirrors)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            started: list[Path] = []
            while not started and time.monotonic() < deadline and process.poll() is None:
                started = list(scratch_here.glob("audit-run-*/outputs/sparkbench/started"))
                time.sleep(0.02)
            assert started, "the harness did not start"
            while not started[0].read_text() and time.monotonic() < deadline:
                time.sleep(0.02)  # made, not yet written
            harness = marked(str(started[0].parent))  # its output directory in its argv
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130, err
    assert err.decode() == "audit run: interrupted\n"
    assert harness
    assert marked(str(started[0].parent)) == []
    assert not list(scratch_here.iterdir())
