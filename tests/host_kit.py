"""A host's layout made for a test, in a mount namespace of the test's own: what a hostile
harness may find on a host (a mount under ``/run`` or ``/sys``, a socket bound on a file, a
terminal outside ``/dev``) without a mount in the host's own namespace."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAME = "evidence-audit-test"
"""In the name of everything a test plants on the host (checked gone from its mount table)."""
Step = list[Any]
"""A step of :func:`in_a_mount_namespace_of_its_own`: its kind, then its arguments."""


REACH = r"""
import errno
def connect(path):
    return errno.errorcode.get(socket.socket(socket.AF_UNIX).connect_ex(path), 'connected')
def opened(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        return errno.errorcode[exc.errno]
    try:
        os.write(fd, b'harness')
    except OSError:
        pass
    os.close(fd)
    return 'opened'
def reach(given):
    kind, path = given.split(':', 1)
    print(kind, connect(path) if kind == 'sock' else opened(path), flush=True)
"""
"""A harness's prelude (``errno``, ``os`` and ``socket`` imported): ``reach("sock:PATH")``
connects to a Unix socket, ``reach("fifo:PATH")`` (any other kind) opens a FIFO or device for
writing and writes to it; each prints its kind and ``connected``/``opened`` or the error's
name."""


def mounted(where: Path, kind: str = "tmpfs", options: str = "size=256k,mode=0755") -> Step:
    """A step mounting a file system of ``kind`` at ``where`` (in the test's namespace)."""
    return ["sh", "mount", "--no-mtab", "-t", kind, "-o", options, "host", str(where)]


def made(*paths: Path) -> Step:
    """A step making each of ``paths`` a directory (mode 0755), its parents too."""
    return ["sh", "mkdir", "-p", "-m", "0755", *map(str, paths)]


DRIVER = r"""
import json, os, socket, subprocess, sys, threading, time
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["root"])
from pathlib import Path
from tests.sandbox_kit import as_nobody, harness
servers, held = [], []
def step(kind, *args):
    if kind == "sh":  # mount, mkdir, ... : the first word of args is the program
        made = subprocess.run(list(args), capture_output=True)
        if made.returncode:
            print(json.dumps(["setup", " ".join(args) + ": " + made.stderr.decode()]), flush=True)
            os._exit(0)
    elif kind == "listen":
        server = socket.socket(socket.AF_UNIX)
        server.bind(args[0]); server.listen(4); server.setblocking(False)
        os.chmod(args[0], 0o777)
        servers.append(server)
    elif kind == "fifo":
        os.mkfifo(args[0])
        held.append(os.open(args[0], os.O_RDONLY | os.O_NONBLOCK))
    elif kind == "mknod":
        os.mknod(args[0], 0o600 | 0o020000, os.makedev(args[1], args[2]))
    elif kind == "pty":  # a host process holds the master of a terminal of that devpts
        held.append(os.open(args[0], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK))
        import fcntl, struct
        fcntl.ioctl(held[-1], 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlockpt
    elif kind == "link":
        os.link(args[0], args[1])
    elif kind == "symlink":
        os.symlink(args[0], args[1])
    elif kind == "write":
        Path(args[0]).write_text(args[1])
for each in spec["before"]:
    step(*each)
work = Path(spec["work"])
def late():
    deadline = time.monotonic() + 30
    while not (work / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    for each in spec["late"]:
        step(*each)
    (work / "made").touch()
thread = threading.Thread(target=late)
if spec["late"]:
    thread.start()
if spec["nobody"]:
    (work / "harness.py").write_text(
        "import ctypes, os, signal, socket, subprocess, sys, time\n" + spec["body"])
    run = as_nobody(work, *spec["args"])
    answer = [run["returncode"], run["stdout"], run["stderr"][-800:]]
else:
    result = harness(work, spec["body"], *spec["args"],
                     **{key: [Path(p) for p in value] for key, value in spec["given"].items()})
    answer = [result.returncode, result.stdout.decode(), result.stderr.decode()[-800:]]
if spec["late"]:
    thread.join()
came = []
for server in servers:
    try:
        server.accept()
        came.append(server.getsockname())
    except BlockingIOError:
        pass
for fd in held:  # a FIFO's reader, a terminal's master: what a harness wrote there
    try:
        got = os.read(fd, 100)
    except OSError:
        continue
    if got:
        came.append("read: " + got.decode(errors="replace"))
print(json.dumps([*answer, came]))
"""


def in_a_mount_namespace_of_its_own(
    tmp_path: Path,
    work: Path,
    before: list[Step],
    body: str,
    *args: str,
    late: Sequence[Step] = (),
    nobody: bool = False,
    **given: list[Path],
) -> tuple[int, str, str, list[str]]:
    """``body`` run as a harness in ``work`` (:func:`tests.sandbox_kit.harness`, given
    ``given``; under a runner of uid 65534 with ``nobody``) from a process in a mount namespace
    of its own (private: nothing reaches the host's), after the steps of ``before``
    (``["sh", program, ...]``, ``["listen", path]``, ``["fifo", path]``, ``["mknod", path,
    major, minor]``, ``["pty", ptmx]``, ``["link" | "symlink", source, target]``,
    ``["write", path, text]``), and of ``late`` once the harness made ``work/ready`` (then
    ``work/made``): its exit status, stdout, stderr and what of the host's it reached (a
    socket's name; ``read: ...``, what a FIFO's reader or a terminal's master read)."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    spec = {"root": str(ROOT), "work": str(work), "body": body, "args": list(args),
            "before": before, "late": list(late), "nobody": nobody,
            "given": {key: list(map(str, value)) for key, value in given.items()}}  # fmt: skip
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", sys.executable, str(driver),
         json.dumps(spec)],
        capture_output=True, cwd=ROOT, timeout=150, check=False,
    )  # fmt: skip
    with open("/proc/self/mountinfo") as table:  # nothing of it is in the host's
        text = table.read()
    assert NAME not in text and str(tmp_path) not in text
    skipped = re.search(rb"Skipped: (.*)", done.stderr)  # tests.sandbox_kit.as_nobody's
    if done.returncode != 0 and skipped:
        pytest.skip(skipped[1].decode(errors="replace"))
    assert done.returncode == 0, done.stderr.decode()[-1500:]
    answer = json.loads(done.stdout.decode().splitlines()[-1])
    if answer[0] == "setup":
        pytest.skip(f"the host's layout cannot be made here: {answer[1]}")
    return answer[0], answer[1], answer[2], answer[3]
