"""An attack on ADR 0047 point 13 at 0575922 (2026-12-06): the init shows every directory of
``/`` and every mount point of the host's through an overlay of its own
(``audit/_sandbox_inside.py`` ``_host``, ``_placed``, ``_place``, ``_cut_off``), so that no
host's Unix socket or FIFO is within a harness's reach.

The adversary is a hostile harness driven for real through ``run_sandboxed``
(``tests.sandbox_kit``), root in a user namespace of its own, on a host whose layout it does not
choose but may find: a socket or device bound on a file, a mount under ``/run`` or ``/sys``, a
mount overlayfs refuses, a directory the host makes in ``/`` while the harness runs. Each test
asserts the safe behaviour; a hole is a strict xfail that says what happens and where. What the
tests plant lies in a directory of the runner's home, in ``tmp_path``, or under a name of the
test's own directly in ``/`` or ``/run``, each removed after; a host mount a test needs is made
in a mount namespace of its own (``unshare --mount --propagation private``), gone with it, never
in the host's; a device node is made only inside a tmpfs of that namespace.

Holes: all but 5 closed the same day, each test failing before its fix (the read-only pass
makes read-only only a mount that is still what its path leads to, by ``statx``'s mount id; a
socket, FIFO or device directly in ``/`` or bound on a file has the host's ``/dev/null`` bound
over it; a directory overlayfs refuses is hidden under an empty tmpfs, with a line on stderr;
what is left uncovered is chosen by file system type, not by path). 5 stayed a strict xfail
until the command's ``/`` became a tmpfs of its own holding ``/``'s entries as they were
(``_rooted``: ``pivot_root`` into it), its test failing before. 6 is closed for what is in ``/``
at the start.


1. A cover over a host's WRITABLE mount point loses ``nodev`` and ``nosuid``, so a host's
   device node on that mount opens (here ``kmsg``, for writing: the host's kernel log). The
   read-only pass of ``_view`` remounts every ``rw`` mount of ``/proc/self/mountinfo`` by its
   PATH with that mount's own flags (``_read_only(point, options)``: ``MS_REMOUNT | MS_BIND``
   replaces the per-mount flags); at that path the cover ``_cut_off`` made is on top, so the
   overlay is remounted ``ro,relatime``, as the host's tmpfs (or a ``/home`` or ``/var``
   partition) was. Point 12's fix (an overlay always ``nodev``) is undone for every host mount
   point that is ``rw``. Fix: the read-only pass remounts a mount only where it is still the
   top of its path (``statx(STATX_MNT_ID)`` of the path equals the mountinfo line's id); a
   mount under a cover, a hidden place or ``/run`` is out of reach and left alone (this fixes
   3 and 4 too). Or ``_read_only`` keeps the flags of the mount it reaches, not of the line.
2. A host's socket, FIFO or device bound on a FILE directly in ``/`` is reached: ``_host``
   lists the mount point, ``_place`` returns False for a non-directory, non-regular cover
   ("not shown, or the overlay's node around it"), but ``/`` itself has no overlay around it,
   so the host's bind stays (made read-only, which refuses neither ``connect()`` nor a FIFO's
   ``open``; the device keeps ``nodev``-less flags). A ``-v $SSH_AUTH_SOCK:/ssh-agent`` layout.
   Fix: bind an empty read-only regular file (a node of the sandbox's own tmpfs) over every
   socket, FIFO or device mount point, wherever it is; or fix 5.
3. (an honest harness; a regression of point 13) The same bind on a file inside a covered
   directory (a home's ``agent.sock``, a ``/dev/null`` bound over a file to mask it) makes
   every harness exit 126 (``[Errno 22] Invalid argument: <its path>``): ``_place`` mounts
   nothing there, the path now leads into the parent's overlay, and the read-only pass
   remounts the host's ``rw`` bind by that path. Before 0575922 the harness ran. Fix: as 1.
4. (an honest harness; older than point 13, kept by it) Any mount under ``/run`` makes every
   harness exit 126 (``[Errno 2] No such file or directory: /run/...``): ``/run`` is under an
   empty tmpfs (``_hide_runtime_dirs``) and the read-only pass remounts the host's mounts
   under it by their paths, which no longer exist. A systemd host has ``/run/user/<uid>``
   (a tmpfs per logged-in user), ``/run/lock``, ``/run/credentials/*``, ``/run/snapd/ns``,
   ``/run/docker/netns/*``: the sandbox does not start there at all. Fix: as 1 (or skip
   mounts under :data:`RUNTIME_DIRS` and ``hidden`` in the read-only pass).
5. A directory the host makes in ``/`` after the harness started is not covered (``_host``
   scans ``/`` once, and ``/`` itself is the host's root mount, read-only): a host's socket
   made there is reached. Point 13 says "a host process that makes a socket in a directory
   after the harness started is out of reach too"; not for a new directory of ``/`` (nor for
   one the host renamed there). Fix: give the command a root of its own: a tmpfs holding a
   mount point or a link for each entry of ``/`` as it was at the start (a directory through
   its cover, a link made again, a file bound read-only), ``pivot_root`` into it before
   ``CONFINE``; that closes 6 and 2 too.
6. A host's socket directly in ``/`` is reached. Point 13 leaves it "by design"; fix 5 closes
   it at no cost, so it is kept here as a hole.
7. A cover overlayfs refuses (a mount it does not take as a lower layer: here an overlay
   already two deep) is left as it is (``_place``: "silently"): directly in ``/`` the host's
   mount stays, read-only, and a host's socket in it is reached. Inside a covered directory the
   same refusal makes the harness exit 126 (the read-only pass, as 3), so point 13's "stays as
   it is, read-only, rather than fail every harness" holds for neither. Fix: a refused cover
   hides the place (an empty tmpfs) and says so on stderr, or fails the harness (126), as a
   refused read-only place does; never a host's directory left as it is.
8. A host's mount under ``/sys`` is not covered (``UNCOVERED`` is chosen by path): a tmpfs
   mounted in ``/sys`` (a ``/sys/fs/cgroup`` tmpfs is one on a cgroup v1 host) holding a
   host's socket is reached. "``/proc`` and ``/sys`` hold no socket of a process's" is true of
   the kernel's file systems, not of what is mounted there. Fix: leave uncovered by file
   system type (``proc``, ``sysfs``, ``cgroup``, ``cgroup2``, ``bpf``, ``debugfs``,
   ``tracefs``, ``securityfs``, ``pstore``, ``efivarfs``, ``configfs``, ``fusectl``,
   ``devtmpfs``, ``devpts``, ``mqueue``, ``hugetlbfs``, ``binfmt_misc``), cover every other
   mount wherever it is.

Held: a device node on the root file system outside ``/tmp`` no longer opens (the covers are
``nodev``; before 0575922 it opened); a host's socket in ``/run`` reached through a link of
``/`` or ``/var/run`` is not there; a mount point whose path holds a space, a newline, a
backslash and a literal ``\\040`` (``/proc/self/mountinfo``'s escapes) is covered; a host's
mount made after the start, even under a shared ``/``, does not reach the sandbox (private
propagation); a refused cover inside a covered directory fails the harness closed (126; since
the fix of 7 it is hidden instead, and the harness runs); a
harness's ``flock``/``fcntl`` lock on a host's file does not hold the host's process (before
0575922 it did: a harness could block a host's program on any file it can read), and
``/proc`` holds no way out (descriptors 0-2 only, ``/proc/1/root`` and ``/proc/1/cwd``
``EACCES``). An honest harness outside ``/tmp``: the project's venv, compiled extensions,
a read-only SQLite database, ``git log``/``status`` on a repository in the home, ``node``,
``df``, ``du -x``, ``find -xdev``, ``realpath``, hard-link counts.

Noted, not holes: a host's lock on a file outside ``/tmp`` is not seen by the harness either
(an overlay's inode is not the host's): a harness reading an SQLite database a host process
writes no longer waits for its writer. ``df`` names every cover ``sandbox``, each top-level
directory is a device and a mount point of its own (``os.path.ismount('/usr')``,
``find / -xdev`` stops at ``/usr``). Cost: ``run_sandboxed`` of ``python -c pass`` and of
``import json, ssl, sqlite3`` is unchanged here (about 150-165 ms either way, 0575922 and
5482c86); over 5482c86, 1500 directory mounts add about 0.45 s a start, 1000 FILE bind
mounts about 3.5 s (``_bound_read_only`` read ``/proc/self/mountinfo`` again for each:
quadratic; it reads ``statvfs`` of the bind now).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.host_kit import NAME, Step, in_a_mount_namespace_of_its_own
from tests.sandbox_kit import AFTER_THE_HOST
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import listening as _listening
from tests.sandbox_kit import nobody_came as _nobody_came
from tests.sandbox_kit import said as _said


@pytest.fixture
def top(root: None) -> object:
    """A maker of names directly in ``/`` (and in ``/run``), each removed after."""
    made: list[Path] = []

    def name(where: str = "/") -> Path:
        path = Path(where) / f".{NAME}-{os.getpid()}-{os.urandom(4).hex()}"
        made.append(path)
        return path

    yield name
    for path in reversed(made):
        if path.is_symlink() or path.is_file() or path.is_socket():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)


def _in_a_mount_namespace_of_its_own(
    tmp_path: Path,
    before: list[Step],
    body: str,
    *args: str,
    late: Sequence[Step] = (),
    **given: list[Path],
) -> tuple[int, str, str, list[str]]:
    """:func:`tests.host_kit.in_a_mount_namespace_of_its_own`, the harness in ``tmp_path/work``."""
    return in_a_mount_namespace_of_its_own(
        tmp_path, tmp_path / "work", before, body, *args, late=late, **given
    )


def _tmpfs(where: Path, options: str = "size=256k") -> Step:
    return ["sh", "mount", "--no-mtab", "-t", "tmpfs", "-o", options, "host", str(where)]


def _bind(source: Path, target: Path) -> Step:
    return ["sh", "mount", "--no-mtab", "--bind", str(source), str(target)]


REACH = r"""
import errno
def connect(path):
    return errno.errorcode.get(socket.socket(socket.AF_UNIX).connect_ex(path), 'connected')
def opened(path):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # opened, closed: nothing written
        return 'opened'
    except OSError as exc:
        return errno.errorcode[exc.errno]
for given in sys.argv[1:]:
    kind, path = given.split(':', 1)
    print(kind, connect(path) if kind == 'sock' else opened(path), flush=True)
"""
"""Each argument ``KIND:PATH`` connected to (``sock``) or opened for writing (any other kind):
a line ``KIND <errno name | connected | opened>`` each."""


# --- holes -------------------------------------------------------------------------------------


def test_a_cover_over_a_host_s_writable_mount_stays_nodev(
    tmp_path: Path, work: Path, home: Path, root: None, sandbox: None
) -> None:
    mount = home / "mnt"  # a /home or /var partition, a Docker volume: rw, no nodev
    mount.mkdir()
    body = REACH + "print('nodev', bool(os.statvfs(sys.argv[1][5:]).f_flag & os.ST_NODEV))\n"
    code, out, err, _ = _in_a_mount_namespace_of_its_own(
        tmp_path,
        [_tmpfs(mount), ["mknod", str(mount / "kmsg"), 1, 11]],
        body,
        f"kmsg:{mount / 'kmsg'}",
    )
    assert code == 0, err
    assert out.splitlines()[0] in {"kmsg EACCES", "kmsg EPERM", "kmsg ENOENT"}, out
    assert out.splitlines()[1] == "nodev True", out


def test_a_host_s_socket_fifo_or_device_bound_on_a_file_in_root_is_out_of_reach(
    tmp_path: Path, work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    nodes = tmp_path / "nodes"  # a tmpfs of the namespace's: the nodes go with it
    nodes.mkdir()
    targets = {end: top() for end in ("sock", "fifo", "kmsg")}
    for target in targets.values():
        target.touch()  # what a bind on a file is made on
    before = [_tmpfs(nodes), ["listen", str(nodes / "s")], ["fifo", str(nodes / "f")],
              ["mknod", str(nodes / "k"), 1, 11], _bind(nodes / "s", targets["sock"]),
              _bind(nodes / "f", targets["fifo"]), _bind(nodes / "k", targets["kmsg"])]  # fmt: skip
    # what is there in the harness's view, if anything: a node of its own (the host's /dev/null)
    body = REACH + "for given in sys.argv[1:]:\n    print('rdev', os.stat(given[5:]).st_rdev)\n"
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, before, body, *(f"{end}:{target}" for end, target in targets.items())
    )
    assert code == 0, err
    lines = out.splitlines()
    said = dict(line.split(" ", 1) for line in lines[:3])
    assert said["sock"] != "connected" and not came, (out, came)
    null = str(os.stat("/dev/null").st_rdev)
    for end in ("fifo", "kmsg"):  # refused, or the host's /dev/null in its place
        assert said[end] != "opened" or lines[3:] == [f"rdev {null}"] * 3, out


def test_a_host_s_socket_bound_on_a_file_in_a_covered_directory_does_not_stop_the_harness(
    tmp_path: Path, work: Path, home: Path, root: None, sandbox: None
) -> None:
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    for name in ("agent-sock", "masked"):
        (home / name).touch()
    before = [_tmpfs(nodes), ["listen", str(nodes / "s")], _bind(nodes / "s", home / "agent-sock"),
              _bind(Path("/dev/null"), home / "masked")]  # fmt: skip
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, before, REACH, f"sock:{home / 'agent-sock'}"
    )
    assert (code, came) == (0, []), (code, err)
    assert out.split()[1] != "connected", out


def test_a_host_s_mount_under_run_does_not_stop_the_harness(
    tmp_path: Path, work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    user = top("/run")
    user.mkdir()  # /run/user/<uid>, say
    body = "print('run', sorted(os.listdir('/run')), flush=True)\n"
    code, out, err, _ = _in_a_mount_namespace_of_its_own(tmp_path, [_tmpfs(user)], body)
    assert (code, out) == (0, "run []\n"), (code, out, err)


LATE = (
    AFTER_THE_HOST
    + """
import errno
late, work = sys.argv[1], sys.argv[2]
after_the_host(work)
code = socket.socket(socket.AF_UNIX).connect_ex(late)
print(os.path.exists(late), errno.errorcode.get(code, 'connected'), flush=True)
"""
)


def test_a_directory_the_host_makes_in_root_after_the_start_holds_no_reachable_socket(
    work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    late = top()
    servers: list[socket.socket] = []

    def host() -> None:
        deadline = time.monotonic() + 20
        while not (work / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        late.mkdir()
        servers.append(_listening(late / "s"))
        (work / "made").touch()

    thread = threading.Thread(target=host)
    thread.start()
    result = _harness(work, LATE, str(late / "s"), str(work))
    thread.join()
    _nobody_came(*servers)
    assert _said(result)[0].split()[1] != "connected", result.stdout


def test_a_host_s_socket_directly_in_root_is_out_of_reach(
    work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    path = top()
    server = _listening(path)
    result = _harness(work, REACH, f"sock:{path}")
    _nobody_came(server)
    assert _said(result) != ["sock connected"]


def _two_deep(tmp_path: Path, at: Path) -> list[Step]:
    """Steps mounting at ``at`` an overlay (with an upper layer) of an overlay: one more is
    past the kernel's stacking depth, so a cover of it is refused."""
    layers = tmp_path / "layers"
    layers.mkdir()
    mkdirs = ["sh", "mkdir", *(str(layers / n) for n in ("l1", "l2", "o1", "up", "wk"))]
    return [
        _tmpfs(layers, "size=1m"),
        mkdirs,
        ["sh", "mount", "--no-mtab", "-t", "overlay", "o1", "-o",
         f"lowerdir={layers / 'l1'}:{layers / 'l2'}", str(layers / "o1")],
        ["sh", "mount", "--no-mtab", "-t", "overlay", "o2", "-o",
         f"lowerdir={layers / 'o1'},upperdir={layers / 'up'},workdir={layers / 'wk'}", str(at)],
        ["listen", str(at / "s")],  # a host's socket there (bound through the overlay)
    ]  # fmt: skip


def test_a_cover_the_kernel_refuses_leaves_no_host_s_socket_in_reach(
    tmp_path: Path, work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    deep = top()
    deep.mkdir()
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, _two_deep(tmp_path, deep), REACH, f"sock:{deep / 's'}"
    )
    assert not came and "connected" not in out, (code, out, err)
    assert code == 0 or (code == 126 and "cannot make the command's view" in err), (code, err)


def test_a_host_s_mount_under_sys_holds_no_reachable_socket(
    tmp_path: Path, work: Path, root: None, sandbox: None
) -> None:
    where = next((Path(p) for p in ("/sys/fs/bpf", "/sys/kernel/tracing", "/sys/firmware")
                  if os.path.isdir(p)), None)  # fmt: skip
    if where is None:
        pytest.skip("no directory of /sys to mount on here")
    before = [_tmpfs(where), ["listen", str(where / "s")]]
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, before, REACH, f"sock:{where}/s"
    )
    assert code == 0, err
    assert (out, came) == ("sock ECONNREFUSED\n", []), (out, came)


# --- held --------------------------------------------------------------------------------------


def test_held_a_device_on_the_root_file_system_does_not_open(
    tmp_path: Path, work: Path, home: Path, root: None, sandbox: None
) -> None:
    if os.stat(home).st_dev != os.stat("/").st_dev:
        pytest.skip("the home is a mount of its own here (hole 1)")
    os.mknod(home / "kmsg", 0o600 | 0o020000, os.makedev(1, 11))  # the host's kernel log
    try:
        result = _harness(work, REACH, f"kmsg:{home / 'kmsg'}")
    finally:
        (home / "kmsg").unlink()
    assert _said(result)[0] in {"kmsg EACCES", "kmsg EPERM"}  # opened before 0575922


def test_held_the_host_s_run_through_links_is_not_there(
    work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    daemon = top("/run")
    daemon.mkdir()
    server = _listening(daemon / "s")
    link = top()
    link.symlink_to(daemon)  # a link of / into /run
    paths = [f"sock:{link}/s", f"sock:{daemon}/s"]
    if os.path.islink("/var/run"):
        paths.append(f"sock:/var/run/{daemon.name}/s")
    result = _harness(work, REACH, *paths)
    _nobody_came(server)
    assert _said(result) == ["sock ENOENT"] * len(paths)


def test_held_a_mount_point_with_odd_characters_is_covered(
    tmp_path: Path, work: Path, home: Path, root: None, sandbox: None
) -> None:
    odd = home / "a b\nc\\d\\040e\te"  # escaped in mountinfo as \040, \012, \134, \011
    odd.mkdir()
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, [_tmpfs(odd), ["listen", str(odd / "s")]], REACH, f"sock:{odd / 's'}"
    )
    assert (code, out, came) == (0, "sock ECONNREFUSED\n", []), (code, out, err)


def test_held_a_host_s_mount_made_after_the_start_does_not_reach_the_harness(
    tmp_path: Path, work: Path, top: Callable[..., Path], sandbox: None
) -> None:
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    target = top()
    target.touch()
    # / shared in the test's namespace (new peer groups there only, the host's untouched): a
    # sandbox namespace that kept the propagation would get the bind made after its start
    before = [["sh", "mount", "--no-mtab", "--make-rshared", "/"], _tmpfs(nodes)]
    late = [["listen", str(nodes / "s")], _bind(nodes / "s", target)]
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, before, LATE, str(target), str(work), late=late
    )
    assert code == 0, err
    assert out.split()[1] != "connected" and not came, (out, came)


def test_held_a_refused_cover_inside_a_covered_directory_is_hidden(
    tmp_path: Path, work: Path, home: Path, root: None, sandbox: None
) -> None:
    deep = home / "deep"
    deep.mkdir()
    code, out, err, came = _in_a_mount_namespace_of_its_own(
        tmp_path, _two_deep(tmp_path, deep), REACH, f"sock:{deep / 's'}"
    )
    # hidden (an empty tmpfs over it, and a line in the harness's log), or the harness fails
    assert not came and "connected" not in out, (code, out, err)
    assert (code, out) in {(0, "sock ENOENT\n"), (126, "")}, (code, out, err)
    assert "is hidden: no overlay of it could be made" in err or "cannot make the" in err, err


LOCK = """
import errno, fcntl
held = open(sys.argv[1])
fcntl.flock(held, fcntl.LOCK_EX)  # a read-only descriptor takes an exclusive flock
fcntl.lockf(held, fcntl.LOCK_SH)  # and a POSIX read lock
print('locked', flush=True)
open(os.path.join(sys.argv[2], 'ready'), 'w').close()
for _ in range(200):
    if os.path.exists(os.path.join(sys.argv[2], 'made')):
        break
    time.sleep(0.05)
"""


def test_held_a_harness_s_lock_on_a_host_s_file_does_not_hold_the_host(
    work: Path, home: Path, sandbox: None
) -> None:
    shared = home / "shared.db"
    shared.write_text("a host's database")
    tried: list[str] = []

    def host() -> None:  # a host's program takes its lock while the harness holds one
        deadline = time.monotonic() + 20
        while not (work / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(shared, "r+") as mine:
            for name, call in (
                ("flock", lambda: fcntl.flock(mine, fcntl.LOCK_EX | fcntl.LOCK_NB)),
                ("lockf", lambda: fcntl.lockf(mine, fcntl.LOCK_EX | fcntl.LOCK_NB)),
            ):
                try:
                    call()
                    tried.append(f"{name} taken")
                except OSError as exc:
                    tried.append(f"{name} {errno.errorcode.get(exc.errno or 0, exc)}")
        (work / "made").touch()

    thread = threading.Thread(target=host)
    thread.start()
    result = _harness(work, LOCK, str(shared), str(work))
    thread.join()
    assert _said(result) == ["locked"]
    assert tried == ["flock taken", "lockf taken"]  # before 0575922: each EAGAIN


PROC = """
import errno
print('fds', sorted(os.listdir('/proc/self/fd')), flush=True)
for path in ('/proc/1/root', '/proc/1/cwd', '/proc/1/fd/0'):
    try:
        os.stat(path)
        print(path, 'ok', flush=True)
    except OSError as exc:
        print(path, errno.errorcode[exc.errno], flush=True)
print('root', os.readlink('/proc/self/root'), flush=True)
"""


def test_held_proc_holds_no_way_to_the_host(work: Path, sandbox: None) -> None:
    assert _said(_harness(work, PROC)) == [
        "fds ['0', '1', '2', '3']",  # stdin, stdout, stderr and the listing's own
        "/proc/1/root EACCES",
        "/proc/1/cwd EACCES",
        "/proc/1/fd/0 EACCES",
        "root /",
    ]


HONEST = r"""
import _sqlite3, _ssl, sqlite3
repo = sys.argv[1]
print('prefix outside /tmp', not sys.prefix.startswith('/tmp/'), flush=True)
print('extensions', os.path.exists(_ssl.__file__), os.path.exists(_sqlite3.__file__), flush=True)
database = sqlite3.connect(f'file:{repo}/data.db?mode=ro', uri=True)
print('sqlite', database.execute('select count(*) from t').fetchone()[0], flush=True)
def run(*command):
    return subprocess.run(command, capture_output=True, text=True)
for command in (['log', '--format=%s'], ['status', '--porcelain']):
    done = run('git', '-C', repo, *command)
    print(f'git {command[0]} {done.returncode} {done.stdout.strip()}'.strip(), flush=True)
if len(sys.argv) > 2:
    print('node', run(sys.argv[2], '-e', 'console.log(1 + 1)').stdout.strip(), flush=True)
print('df', run('df', '-P', repo).returncode, flush=True)
sizes = [run('du', '-s', *x, repo).stdout.split()[0] for x in ([], ['-x'])]
print('du -x counts it all', sizes[0] == sizes[1], flush=True)
print('find -xdev', run('find', repo, '-xdev', '-name', 'a.txt').stdout.strip() == repo + '/a.txt',
      flush=True)
print('realpath', os.path.realpath(repo + '/../' + os.path.basename(repo) + '/a.txt')
      == repo + '/a.txt', flush=True)
hard = os.path.samefile(repo + '/a.txt', repo + '/hard.txt')
print('links', os.stat(repo + '/a.txt').st_nlink, hard, flush=True)
"""


def test_held_an_honest_harness_runs_on_the_host_s_files(
    work: Path, home: Path, sandbox: None
) -> None:
    for tool in ("git", "df", "du", "find"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} here")
    repo = home / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.txt").write_text("a\n")
    os.link(repo / "a.txt", repo / "hard.txt")
    database = sqlite3.connect(repo / "data.db")
    with database:
        database.execute("create table t (x)")
        database.execute("insert into t values (1)")
    database.close()
    (repo / ".gitignore").write_text("data.db\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    node = shutil.which("node")
    result = _harness(work, HONEST, str(repo), *([node] if node else []))
    assert _said(result) == [
        f"prefix outside /tmp {not sys.prefix.startswith('/tmp/')}",
        "extensions True True",
        "sqlite 1",
        "git log 0 first",
        "git status 0",
        *(["node 2"] if node else []),
        "df 0",
        "du -x counts it all True",
        "find -xdev True",
        "realpath True",
        "links 2 True",
    ]
