"""Attacks on the change of 2026-12-06 that hides the host's ``/run`` from the sandbox (ADR 0045:
``audit/sandbox.py`` ``_unshare --mount``, ``audit/_sandbox_inside.py`` ``_hide_runtime_dirs``,
``verify/_facts.py`` ``host_socket`` / ``off_sandbox``, the trace parser
``verify/socket_trace.py``).

Two adversaries: a hostile harness run for real by ``run_sandboxed`` (against a real socket
bound in the host's ``/run``), and a publisher whose sandbox trace lines the verifier parses.
Each test asserts the safe behaviour: a harness either cannot connect to the host's socket, or
the ledger has an entry that ``off_sandbox`` (the ``network_isolation`` gate's test) counts.

Holes found (2026-12-06), all closed the same day:

1. ``/proc`` in the sandbox was the host's (``unshare --pid`` without ``--mount-proc``): the
   harness reached the host's ``/run`` through ``/proc/<runner pid>/root/run/...``, through a
   ``/proc/self/fd/N`` of a directory opened there, or by a relative path after ``fchdir`` to
   it; none of those ledger paths is under ``/run``. Closed: the sandbox mounts a ``/proc`` of
   its PID namespace's (``--mount-proc``), where no host process is.
2. The tmpfs over ``/run`` was the harness's to take off: it was root in the sandbox's mount
   namespace (also with ``--map-root-user``). After ``umount /run`` the same socket by
   ``//run/x`` (``posixpath.normpath`` keeps POSIX's two leading slashes), by a relative path
   after ``chdir("/run")``, by a symlink elsewhere, or by a path with an escaped ``"`` or a
   ``}, 1`` in a component (the trace parser's ``sun_path`` and ``connect`` regexes stopped
   there) was not counted. Closed: the command runs in a user namespace of its own
   (``audit._sandbox_inside.CONFINE``), so the mounts above it are locked (``umount`` fails);
   ``host_socket`` folds any number of leading slashes; the parser takes a quoted string
   whole, escapes and all.

Held: normalised spellings (``/./run``, ``///run``,
``/var//run``, ``..``), an honest harness's multiprocessing (forkserver, spawn, a manager),
asyncio, tempfile, getpass and name lookups, and the host's mount table and ``/run`` after a
harness that unmounts and mounts in its namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.sandbox import SandboxLimits, SandboxResult, run_sandboxed
from bundle_schema.models import SocketLedgerEntry
from tests.sandbox_kit import as_nobody as _as_nobody
from verify._facts import host_socket, off_sandbox
from verify.socket_trace import trace_entries, trace_header

PORT = 18080
LIMITS = SandboxLimits(inactivity_s=20, wall_s=40)

PRELUDE = textwrap.dedent(
    """
    import json, os, socket, subprocess, sys
    NAME = sys.argv[1]

    def reach(path):
        s = socket.socket(socket.AF_UNIX)
        try:
            code = s.connect_ex(path)
        finally:
            s.close()
        print(json.dumps({"path": path, "code": code}), flush=True)
        return code

    def host_run():
        # any process outside the sandbox's mount namespace: /proc is the host's
        mine = os.readlink("/proc/self/ns/mnt")
        for pid in sorted(os.listdir("/proc"), key=lambda p: -int(p) if p.isdigit() else 0):
            if not pid.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{pid}/ns/mnt") == mine:
                    continue
                if os.path.exists(f"/proc/{pid}/root/run/{NAME}"):
                    return f"/proc/{pid}/root/run"
            except OSError:
                continue
        print(json.dumps({"path": "a host's /run", "code": "not found"}), flush=True)
        raise SystemExit(0)

    def unmount():
        done = subprocess.run(["umount", "/run"], capture_output=True)
        print(json.dumps({"umount": done.returncode}), flush=True)
    """
)


def _root_and_run() -> None:
    if os.geteuid() != 0:
        pytest.skip("not root: the sandbox's mount namespace and a socket in /run need it")
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here: no host socket can be made there")


@pytest.fixture
def daemon() -> Iterator[Path]:
    """A listening socket in the host's /run, as a daemon's (Docker's) would be."""
    _root_and_run()
    path = Path("/run") / f"ea-hostile-{os.getpid()}-{time.monotonic_ns()}.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        try:
            path.chmod(0o777)
            listener.listen(64)
            yield path
        finally:
            path.unlink()


def _sandboxed(tmp_path: Path, body: str, name: str) -> SandboxResult:
    script = tmp_path / "harness.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    return run_sandboxed(
        [sys.executable, str(script), name], serve=None, port=PORT, cwd=tmp_path,
        limits=LIMITS,
    )  # fmt: skip


def _reached(stdout: bytes) -> list[str]:
    lines = [json.loads(line) for line in stdout.decode().splitlines() if line.startswith("{")]
    return [line["path"] for line in lines if line.get("code") == 0]


def _assert_unreached_or_counted(result: SandboxResult) -> None:
    assert result.returncode == 0, result.stderr.decode()
    reached = _reached(result.stdout)
    counted = [e.address for e in result.ledger if off_sandbox(e)]
    assert not reached or counted, (reached, [(e.address, e.outcome) for e in result.ledger])


# --- 1. the host's /proc: its processes' roots ------------------------------------------------

PROC_ROUTES = {
    "proc-pid-root": "reach(host_run() + '/' + NAME)\n",
    "proc-self-fd": (
        "fd = os.open(host_run(), os.O_RDONLY | os.O_DIRECTORY)\n"
        "reach(f'/proc/self/fd/{fd}/{NAME}')\n"
    ),
    "fchdir-relative": (
        "fd = os.open(host_run(), os.O_RDONLY | os.O_DIRECTORY)\nos.fchdir(fd)\nreach(NAME)\n"
    ),
}


@pytest.mark.parametrize("route", sorted(PROC_ROUTES))
def test_the_host_s_run_through_proc_is_out_of_reach_or_counted(
    tmp_path: Path, daemon: Path, route: str
) -> None:
    """A harness looks for a host process in /proc to connect through its root (closed: the
    sandbox's /proc is its PID namespace's, where there is none)."""
    result = _sandboxed(tmp_path, PROC_ROUTES[route], daemon.name)
    _assert_unreached_or_counted(result)


# --- 2. the tmpfs taken off ---------------------------------------------------------------------

UNMOUNTED = {
    "plain": "unmount()\nreach('/run/' + NAME)\n",
    "double-slash": "unmount()\nreach('//run/' + NAME)\n",
    "relative": "unmount()\nos.chdir('/run')\nreach(NAME)\n",
    "symlink": (
        "unmount()\nos.symlink('/run/' + NAME, 'link.sock')\nreach(os.path.abspath('link.sock'))\n"
    ),
    "escaped-quote": (
        "unmount()\nsubprocess.run(['mount', '-t', 'tmpfs', 'harness', '/tmp'], check=True)\n"
        "os.mkdir('/tmp/q\"')\nreach('/tmp/q\"/../../run/' + NAME)\n"
    ),
    "brace-in-path": (
        "unmount()\nsubprocess.run(['mount', '-t', 'tmpfs', 'harness', '/tmp'], check=True)\n"
        "os.mkdir('/tmp/b}, 1')\nreach('/tmp/b}, 1/../../run/' + NAME)\n"
    ),
}


@pytest.mark.parametrize("variant", sorted(UNMOUNTED))
def test_the_host_s_run_after_an_unmount_is_counted(
    tmp_path: Path, daemon: Path, variant: str
) -> None:
    """The harness tries to take the tmpfs off /run, then reaches for the host's socket by
    every spelling: the unmount fails (the mount is locked for the harness's user namespace),
    and no spelling reaches the socket (were one to, its ledger path would be counted: the
    spellings are the verifier's tests below)."""
    result = _sandboxed(tmp_path, UNMOUNTED[variant], daemon.name)
    assert '{"umount": 0}' not in result.stdout.decode()  # the tmpfs stays
    _assert_unreached_or_counted(result)
    assert not _reached(result.stdout)


def test_a_non_root_runner_s_harness_cannot_uncover_the_host_s_run(
    tmp_path: Path, daemon: Path
) -> None:
    """The runner as uid 65534 (``--map-root-user``): the harness must not reach the socket."""
    work = Path(tempfile.mkdtemp(prefix="ea-hostile-", dir="/tmp"))  # reachable by uid 65534
    work.chmod(0o777)
    (work / "harness.py").write_text(
        PRELUDE
        + "unmount()\nos.symlink('/run/' + NAME, 'link.sock')\n"
        + "reach(os.path.abspath('link.sock'))\n"
    )
    try:
        run = _as_nobody(work, daemon.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert run["returncode"] == 0, run["stderr"]
    reached = _reached(run["stdout"].encode())
    assert not reached or run["counted"], (reached, run["ledger"])


# --- the publisher's (and strace's) spellings ---------------------------------------------------


def _entry(address: str, outcome: str = "connected") -> SocketLedgerEntry:
    return SocketLedgerEntry(
        schema_version=1, seq=0, t=0.1, pid=7, process="python", family="AF_UNIX",
        address=address, outcome=outcome,
    )  # fmt: skip


@pytest.mark.parametrize(
    "address",
    [
        "/run/docker.sock",
        "/run",
        "/run/",
        "/./run/docker.sock",
        "///run/docker.sock",
        "/run//systemd/../docker.sock",
        "/tmp/../run/docker.sock",
        "/var/run/docker.sock",
        "/var//run/docker.sock",
        "/var/./run/docker.sock",
        "/run/\\303\\251.sock",
    ],
)
@pytest.mark.parametrize("outcome", ["connected", "in-progress"])
def test_spellings_of_a_path_under_run_are_counted(address: str, outcome: str) -> None:
    """Held: every lexical spelling of a path under /run or /var/run that normpath folds (and
    strace's octal escapes after the prefix) is counted, connected or in progress."""
    assert host_socket(_entry(address, outcome))
    assert off_sandbox(_entry(address, outcome))


@pytest.mark.parametrize("address", ["//run/docker.sock", "//var/run/docker.sock"])
def test_a_double_leading_slash_is_counted(address: str) -> None:
    assert host_socket(_entry(address))


def _trace_line(sun_path_as_printed: str) -> bytes:
    return (
        trace_header(1000.0, 0, "coding")
        + f'9<python> 1000.5 connect(3, {{sa_family=AF_UNIX, sun_path="{sun_path_as_printed}"}}, '
        "60) = 0\n"
    ).encode()


@pytest.mark.parametrize(
    "printed", ['/tmp/q\\"/../../run/docker.sock', "/tmp/b}, 1/../../run/docker.sock"]
)
def test_a_quote_or_brace_in_a_printed_path_does_not_cut_it_short(printed: str) -> None:
    (entry,) = trace_entries([_trace_line(printed)])
    assert off_sandbox(entry), entry.address


def test_a_failed_or_abstract_or_elsewhere_attempt_is_not_counted() -> None:
    """Held (as ADR 0045 decides): a failed attempt, an abstract socket and /tmp are not the
    host's runtime directories; nor is a path that merely starts with the letters."""
    for address, outcome in (
        ("/run/docker.sock", "ENOENT"),
        ("/run/docker.sock", "EACCES"),
        ("@/run/docker.sock", "connected"),
        ("/tmp/listener-x", "connected"),
        ("/running/x", "connected"),
        ("/var/runner/x", "connected"),
    ):
        assert not off_sandbox(_entry(address, outcome)), address


# --- an honest harness, and the host left as it was ---------------------------------------------

HONEST = """
import asyncio, getpass, multiprocessing, os, socket, sys, tempfile

def square(x):
    return x * x

async def echo():
    async def handle(reader, writer):
        writer.write(await reader.read(5))
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello")
    await writer.drain()
    data = await reader.read(5)
    writer.close()
    server.close()
    await server.wait_closed()
    return data.decode()

if __name__ == "__main__":
    for method in ("fork", "forkserver", "spawn"):
        with multiprocessing.get_context(method).Pool(2) as pool:
            print(method, pool.map(square, [1, 2, 3]))
    with multiprocessing.get_context("spawn").Manager() as manager:
        shared = manager.dict(a=1)
        print("manager", dict(shared))
    print("user", getpass.getuser())
    with tempfile.TemporaryDirectory() as d, tempfile.NamedTemporaryFile(dir=d) as f:
        print("tempfile", os.path.exists(f.name))
    print("asyncio", asyncio.run(echo()))
    print("localhost", sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80)}))
    try:
        print("login", os.getlogin())
    except OSError as exc:
        print("login", type(exc).__name__)
"""


def test_an_honest_harness_runs_as_it_does_outside(tmp_path: Path) -> None:
    """Held: multiprocessing (fork, forkserver, spawn, a manager), getpass, tempfile, asyncio on
    loopback, a name lookup of localhost and os.getlogin behave in the sandbox as outside it,
    and none of their connect()s is counted as the host's."""
    _root_and_run()
    script = tmp_path / "honest.py"
    script.write_text(HONEST)
    outside = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, check=True,
        stdin=subprocess.DEVNULL, timeout=40,
    )  # fmt: skip
    result = run_sandboxed(
        [sys.executable, str(script)], serve=None, port=PORT, cwd=tmp_path,
        limits=LIMITS,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == outside.stdout.decode()
    assert not [e for e in result.ledger if off_sandbox(e)]


_TOUCHED = {"/", "/run", "/var/run", "/tmp"}
"""Where the harness below mounts, or changes propagation: the mounts it could leak."""


def _mounts() -> list[str]:
    # mount ids and the fields that name a mount, optional fields aside, of the mount points
    # the harness touches (tests in the other worker may mount elsewhere meanwhile)
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return sorted(" ".join(line.split()[:5]) for line in lines if line.split()[4] in _TOUCHED)


def _run_listing() -> list[str]:
    # the host's /run, less the sockets tests (this file's and test_sandbox.py's) bind there
    return sorted(
        n for n in os.listdir("/run") if not n.startswith(("ea-hostile-", "evidence-audit-test-"))
    )


def test_the_host_s_mounts_and_run_are_untouched(tmp_path: Path, daemon: Path) -> None:
    """Held: a harness that unmounts /run, makes / shared and mounts over /run and /tmp, writing
    there, changes nothing of the host's mounts at those points nor of its /run (private
    propagation, unshare's default), and the sandbox's tmpfs is not left behind."""
    before, listing = _mounts(), _run_listing()
    result = _sandboxed(
        tmp_path,
        """
        unmount()
        for command in (["mount", "--make-rshared", "/"],
                        ["mount", "-t", "tmpfs", "harness", "/run"],
                        ["mount", "-t", "tmpfs", "harness", "/tmp"]):
            print(json.dumps({"command": command[1],
                              "rc": subprocess.run(command, capture_output=True).returncode}))
        open("/run/marker", "w").close()
        """,
        daemon.name,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert _mounts() == before
    assert _run_listing() == listing
    assert not Path("/run/marker").exists()
