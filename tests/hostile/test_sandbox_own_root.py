"""The command's ``/`` is the sandbox's own (ADR 0047, point 14).

Until point 14 the command's ``/`` was the host's root mount, read-only, with an overlay on each
of its directories: a directory the host made in ``/`` after the harness started was the
host's, and a socket in it connected. Now ``/`` is a read-only tmpfs holding ``/``'s entries as
they were when the harness started (each directory the mount that shows it, each file bound,
each link as it says), and the host's root is gone from the command's view (``pivot_root``).
Under a runner that is not root, a directory holding a host's mount is such a copy too.

What the tests plant lies under a name of the test's own directly in ``/``, removed after.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host_kit import NAME
from tests.sandbox_kit import as_nobody as _as_nobody
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import said as _said

LOOK = """
import errno, json, stat
root = {}
for name in os.listdir('/'):
    path = os.path.join('/', name)
    root[name] = os.readlink(path) if os.path.islink(path) else stat.S_IFMT(os.lstat(path).st_mode)
try:
    os.mkdir('/new')
    made = 'made'
except OSError as exc:
    made = errno.errorcode[exc.errno]
with open('/proc/self/mountinfo') as table:
    mounts = [line.split() for line in table]
top = next(m for m in mounts if m[4] == '/')
shm = os.listdir('/dev/shm')
open('/dev/shm/written', 'w').close()
print(json.dumps({
    'root': root, 'mode': stat.S_IMODE(os.stat('/').st_mode), 'made': made,
    'type': top[top.index('-') + 1], 'options': top[5], 'shm': shm,
    'points': [m[4] for m in mounts if '.host' in m[4] or '.sandbox-root' in m[4]],
    'file': open(sys.argv[1]).read(), 'cwd': os.getcwd(),
    'bound': [m[5] for m in mounts if m[4] == sys.argv[1]],
}), flush=True)
"""


def _host_root() -> dict[str, object]:
    """``/`` as the host has it: a link by what it says, anything else by its type."""
    root: dict[str, object] = {}
    for entry in os.scandir("/"):
        if entry.is_symlink():
            root[entry.name] = os.readlink(entry.path)
        else:
            root[entry.name] = stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode)
    return root


def _theirs(root: dict[str, object]) -> dict[str, object]:
    """``root`` without what other tests plant in ``/`` while this one runs."""
    return {name: kind for name, kind in root.items() if NAME not in name}


@pytest.fixture
def planted(root: None) -> Iterator[Path]:
    """A file of the host's directly in ``/``, removed after."""
    path = Path("/") / f".{NAME}-{os.getpid()}-{os.urandom(4).hex()}"
    path.write_text("the host's")
    yield path
    path.unlink()


def test_the_command_s_root_is_a_read_only_copy_of_the_host_s(
    work: Path, planted: Path, sandbox: None
) -> None:
    before = _host_root()
    result = _harness(work, LOOK, str(planted))
    seen = json.loads(_said(result)[0])
    assert seen["type"] == "tmpfs" and seen["options"].split(",")[0] == "ro", seen
    assert seen["made"] == "EROFS"
    assert seen["mode"] == stat.S_IMODE(os.stat("/").st_mode)
    assert seen["file"] == "the host's"
    assert len(seen["bound"]) == 1 and {"ro", "nosuid", "nodev"} <= set(seen["bound"][0].split(","))
    assert seen["points"] == [] and seen["shm"] == [], seen
    assert seen["cwd"] == str(work)
    assert seen["root"][planted.name] == stat.S_IFREG
    assert _theirs(seen["root"]) == _theirs(before), seen
    assert planted.read_text() == "the host's"  # unwritten, still there


def test_a_file_the_host_puts_in_root_after_the_start_is_not_shown(
    work: Path, root: None, sandbox: None
) -> None:
    late = Path("/") / f".{NAME}-{os.getpid()}-{os.urandom(4).hex()}"
    body = (
        "import time\n"
        "open(os.path.join(sys.argv[2], 'ready'), 'w').close()\n"
        "for _ in range(200):\n"
        "    if os.path.exists(os.path.join(sys.argv[2], 'made')):\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "print(os.path.lexists(sys.argv[1]), flush=True)\n"
    )

    def host() -> None:
        deadline = time.monotonic() + 20
        while not (work / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        late.symlink_to("/etc")
        (work / "made").touch()

    thread = threading.Thread(target=host)
    thread.start()
    try:
        result = _harness(work, body, str(late), str(work))
    finally:
        thread.join()
        late.unlink(missing_ok=True)
    assert _said(result) == ["False"]


def test_a_non_root_runner_s_command_has_a_root_of_its_own(root: None, sandbox: None) -> None:
    work = Path(tempfile.mkdtemp(prefix="ea-hostile-", dir="/tmp"))  # reachable by uid 65534
    work.chmod(0o777)
    (work / "harness.py").write_text("import os, sys\n" + LOOK)
    try:
        run = _as_nobody(work, "/etc/hostname")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert run["returncode"] == 0, run["stderr"]
    seen = json.loads(run["stdout"].splitlines()[0])
    assert seen["type"] == "tmpfs" and seen["made"] in ("EROFS", "EACCES"), seen
    assert seen["points"] == [] and seen["shm"] == [], seen
    assert seen["file"] == Path("/etc/hostname").read_text()
    assert set(_theirs(seen["root"])) == set(_theirs(_host_root())), seen
