"""An attack on ADR 0047 points 10 and 11 at 7617611 (2026-12-06): a ``/dev`` and a ``/tmp`` of
the harness's own.

The adversary is a hostile harness driven for real through ``run_sandboxed``
(``tests.sandbox_kit``). Its goals: read or write the host's ``/tmp``, ``/var/tmp``, ``/dev``
or ``/dev/shm`` (or what they stand for) beyond what it is given; make the init (root, before
the command) create, mount or write something outside the harness's own places; make a shown
place writable or uncover a hidden one through the re-binding; or find an honest program that
breaks. Each test asserts the safe behaviour; a hole is a strict xfail that says what happens
and where. Every write a probe makes to a host object writes back what is there (a ``chmod``
to the mode it has); what the tests plant on the host is under ``tmp_path`` or an IPC object of
a random name, removed after.

Holes: 1, 2, 4 and 5 closed the same day, each test failing before its fix (the init gives the
command a stdin of the view's own ``/dev/null``; ``ISOLATE`` makes an IPC namespace; the runner's
interpreter places are asked of ``sys.executable -I`` once, with the command's ``PYTHONPATH``;
``_unlinked`` looks at every part of the path with ``lstat``); 3 was a strict xfail until ADR
0047 point 12 (a directory shown under ``/tmp`` is an overlay of it, whose sockets refuse
``connect()``), and failed before it.

1. The host's ``/dev/null`` is still the harness's to ``chmod`` (point 10 says no): the
   command's stdin is the ``/dev/null`` the supervisor opened in the host's mount namespace
   (``audit/sandbox.py`` ``run_sandboxed``: ``stdin=subprocess.DEVNULL``), handed down through
   ``unshare``, strace, ``ISOLATE``, the init and ``CONFINE``. ``fchmod(0, ...)`` and
   ``chmod("/proc/self/fd/0", ...)`` reach the inode through the host's writable ``/dev`` mount,
   not the sandbox's read-only bind, and the command's uid 0 is its owner under a root runner:
   a ``chmod 000`` would break every program of the host. Fix: the init gives the command a
   stdin of the view's own (``os.open("/dev/null")`` after ``_view``, dup'ed onto 0 in the
   child before ``CONFINE``), or the supervisor passes a pipe.
2. The host's shared memory is still shared (point 10 says the host's ``/dev/shm`` no longer
   is): no part of the sandbox makes an IPC namespace (``_unshare``, ``ISOLATE``, ``CONFINE``:
   no ``--ipc``), so System V shared memory, semaphores and message queues, and POSIX message
   queues (``mq_open``: the IPC namespace's own ``mqueue`` mount, whatever ``/dev`` shows), are
   the host's: a harness reads and writes a segment a host process made (owner's bits: the
   same uid), and leaves one for a later harness of the run (point 4) or for the host. Fix:
   ``--ipc`` in ``ISOLATE`` (or ``_unshare``).
3. A host's Unix socket in a place the harness is shown is connectable, and the ledger counts
   it inside the sandbox: point 11 binds the shown place back read-only, but a read-only mount
   does not refuse ``connect()`` (``sb_permission`` refuses writes to regular files,
   directories and links only; ``access(W_OK)`` says so too), and ``verify._facts.host_socket``
   counts only ``/run``. A socket a host daemon keeps in ``/tmp`` (ssh-agent's
   ``/tmp/ssh-*/agent.*``, PostgreSQL's ``/tmp/.s.PGSQL.5432``, X11's ``/tmp/.X11-unix``) in
   a data directory, an interpreter's path or a path the command line names is reached out of
   the network namespace unseen. Fix: the init covers each socket in a place bound back (an
   empty file bound over it), or ``host_socket`` counts a connected ``AF_UNIX`` path outside
   the harness's own places.
4. The runner's working directory is shown to every harness: ``audit/sandbox.py``
   ``_interpreter_places`` takes the runner's live ``sys.path``, whose first entry is the
   working directory under ``python -m audit run`` (``audit/__main__.py``), and which holds the
   runner's ``PYTHONPATH`` too; neither is where a harness run with that interpreter reads
   from (its ``sys.path[0]`` is its own script's directory). An operator working in
   ``/tmp/work`` (pin sets, keys, other bundles) shows it all, read-only. Fix: the places of
   ``sys.executable -I`` asked once (``sys.prefix``, ``sys.base_prefix`` and its ``sys.path``,
   as ``audit.environments`` asks a harness's), not this process's ``sys.path``.
5. The refusal of a link left in a ``tmp`` given again (7617611) is passed by a magic link:
   ``_sandbox_inside._unlinked`` compares ``os.path.realpath(place)`` with ``place``, and a link
   at the working directory's place to ``/proc/self/cwd`` reads as the init's working
   directory, which is that very path. The init binds through it, onto the covered host's
   dentry, and its ``chdir(os.getcwd())`` follows it too: the command's working directory is
   the host's directory under the ``/tmp`` cover (read-only, but readable), and ``..`` lists and
   reads what the host's ``/tmp`` holds beside the harness's places (up to the first directory
   under ``/tmp``: a further ``..`` crosses into the cover). Needs a ``tmp`` given twice and a
   working directory that is a place of its own (``run_sandboxed``'s default); ``audit run``
   gives each harness a fresh ``tmp`` and holds its scratch directory, not the working
   directory. Fix: refuse a link at any component with ``lstat`` (or ``openat2`` with
   ``RESOLVE_NO_SYMLINKS``, and mount on the descriptor it gives), and ``chdir`` to the working
   directory the same way.

Held: the host's ``/tmp`` and ``/dev`` under the sandbox's own (``umount`` of ``/tmp`` and
``/dev``, a non-recursive bind or ``open_tree`` of ``/``, a recursive ``open_tree`` moved
elsewhere and its ``/tmp`` unmounted there: ``EINVAL``, the mounts are locked; ``fspick`` of a
tmpfs the init made opens but reconfigures nothing, ``EPERM``; ``open_tree`` of the inherited
stdin, the host's ``/dev``: ``EINVAL``); the init, given a ``tmp`` again with a link on the way
(not at the place) to its own working directory (``/proc/self/cwd``: the host's dentry until
its ``chdir``), makes nothing there: the mount under it is read-only by then (exit 126); a
command line that names the directory holding a hidden place, a link to a hidden place and the
hidden place itself: it stays covered, a writable place in the named directory stays writable
and the directory read-only; an honest harness (process substitution through ``/dev/fd``, a pty
by ``script``, ``multiprocessing.shared_memory`` and a lock in ``/dev/shm``, ``mkstemp``, a
FIFO, a venv made and run in ``/tmp``, SQLite's WAL, a Unix socket, ``/var/tmp`` as ``/tmp``,
``mktemp``, and node where it is installed).
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said
from tests.sandbox_kit import sandboxed as _sandboxed

_LIBC = ctypes.CDLL(None, use_errno=True)
_IPC_CREAT, _IPC_EXCL, _IPC_RMID = 0o1000, 0o2000, 0


def _key() -> int:
    return int.from_bytes(os.urandom(3), "big") | 0x5A000000


# --- holes -------------------------------------------------------------------------------------

STDIN = """
mode = os.fstat(0).st_mode & 0o7777  # written back as it is: nothing changes on the host
def said(what, call):
    try:
        call()
        print(what, 'changed', flush=True)
    except OSError as exc:
        print(what, exc.strerror, flush=True)
said('chmod /dev/null', lambda: os.chmod('/dev/null', mode))
said('fchmod stdin', lambda: os.fchmod(0, mode))
said('chmod /proc/self/fd/0', lambda: os.chmod('/proc/self/fd/0', mode))
"""


def test_the_host_s_dev_null_is_not_the_harness_s_to_chmod(tmp_path: Path, sandbox: None) -> None:
    before = os.stat("/dev/null")
    result = _harness(tmp_path, STDIN)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert os.stat("/dev/null").st_mode == before.st_mode  # the probe wrote back what it read
    assert result.stdout.decode().splitlines() == [
        "chmod /dev/null Read-only file system",
        "fchmod stdin Read-only file system",
        "chmod /proc/self/fd/0 Read-only file system",
    ]


SYSV = """
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(ctypes.c_int(int(sys.argv[1])), ctypes.c_size_t(0), 0)
if segment < 0:
    print('shmget', os.strerror(ctypes.get_errno()), flush=True)
else:
    address = libc.shmat(segment, None, 0)
    print('read', ctypes.string_at(address).decode(), flush=True)
    ctypes.memmove(address, b"the harness's\\0", 14)
"""


def test_the_host_s_shared_memory_is_not_the_harness_s(tmp_path: Path, sandbox: None) -> None:
    _LIBC.shmat.restype = ctypes.c_void_p
    key = _key()
    segment = _LIBC.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), _IPC_CREAT | _IPC_EXCL | 0o600)
    if segment < 0:
        pytest.skip(f"no System V shared memory here: {os.strerror(ctypes.get_errno())}")
    address = _LIBC.shmat(segment, None, 0)
    try:
        ctypes.memmove(address, b"the host's\0", 11)
        result = _harness(tmp_path, SYSV, str(key))
        seen = ctypes.string_at(address).decode()
    finally:
        _LIBC.shmdt(ctypes.c_void_p(address))
        _LIBC.shmctl(segment, _IPC_RMID, None)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert seen == "the host's"
    assert result.stdout.decode().splitlines() == ["shmget No such file or directory"]


MQUEUE = """
libc = ctypes.CDLL(None, use_errno=True)
queue = libc.mq_open(sys.argv[1].encode(), os.O_RDWR)
if queue < 0:
    print('mq_open', os.strerror(ctypes.get_errno()), flush=True)
else:
    message = ctypes.create_string_buffer(8192)
    size = libc.mq_receive(queue, message, ctypes.c_size_t(8192), None)
    print('received', message.raw[:max(size, 0)].decode(), flush=True)
    libc.mq_send(queue, b"the harness's", ctypes.c_size_t(13), 0)
"""


def test_the_host_s_message_queues_are_not_the_harness_s(tmp_path: Path, sandbox: None) -> None:
    name = f"/audit-{os.getpid()}-{os.urandom(4).hex()}".encode()
    queue = _LIBC.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)
    if queue < 0:
        pytest.skip(f"no POSIX message queues here: {os.strerror(ctypes.get_errno())}")
    try:
        _LIBC.mq_send(queue, b"the host's", ctypes.c_size_t(10), 0)
        result = _harness(tmp_path, MQUEUE, name.decode())
        message = ctypes.create_string_buffer(8192)
        os.set_blocking(queue, False)  # mqd_t is a descriptor on Linux: never wait here
        size = _LIBC.mq_receive(queue, message, ctypes.c_size_t(8192), None)
        left = message.raw[: max(size, 0)].decode()
    finally:
        _LIBC.mq_close(queue)
        _LIBC.mq_unlink(name)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert left == "the host's"  # the host's message is still there, and no other
    assert result.stdout.decode().splitlines() == ["mq_open No such file or directory"]


SOCKET = """
path = sys.argv[1]
client = socket.socket(socket.AF_UNIX)
print('writable', os.access(path, os.W_OK), flush=True)
print('connect', client.connect_ex(path), flush=True)
"""


def test_a_host_s_socket_in_a_shown_place_is_out_of_reach(tmp_path: Path, sandbox: None) -> None:
    shown, work = tmp_path / "shown", tmp_path / "work"
    shown.mkdir()
    work.mkdir()
    (work / "harness.py").write_text("import os, socket, sys\n" + SOCKET)
    path = shown / "s"  # a host daemon's socket in /tmp (ssh-agent's, PostgreSQL's, X11's)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(1)
        result = _sandboxed([sys.executable, str(work / "harness.py"), str(path)], work,
                            shown=[shown])  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-800:]
    said = result.stdout.decode().splitlines()  # access(W_OK) said True too: a read-only bind
    # the socket is the overlay's node, not the host's (point 12): connect() is refused
    assert said[1] == f"connect {errno.ECONNREFUSED}", (said, result.ledger)
    assert not _outside(result)


def test_the_runner_s_working_directory_is_not_shown(
    tmp_path: Path, sandbox: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator, work = tmp_path / "operator", tmp_path / "work"
    operator.mkdir()
    work.mkdir()
    (operator / "signing.key").write_text("the operator's")
    monkeypatch.syspath_prepend(str(operator))  # as `cd /tmp/work; python -m audit run` has it
    (work / "harness.py").write_text("import os\nprint(os.path.exists(os.environ['SECRET']))\n")
    # the key's path is in the harness's environment, not on its command line (which is shown)
    env = {**os.environ, "SECRET": str(operator / "signing.key")}
    result = _sandboxed([sys.executable, str(work / "harness.py")], work, env=env)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout == b"False\n"


MAGIC = """
import os
print('cwd writable', os.access('.', os.W_OK), flush=True)
print('beside it', sorted(os.listdir('..')), flush=True)
if os.path.exists('../sibling'):
    print('read', open('../sibling').read(), flush=True)
"""


def test_a_magic_link_at_a_place_in_a_tmp_given_again_is_refused(
    tmp_path: Path, sandbox: None
) -> None:
    if tmp_path.parts[1] != "tmp":
        pytest.skip("the test's directory is not under /tmp here")
    work, other, own = tmp_path / "work", tmp_path / "other", tmp_path / "own-tmp"
    for place in (work, other):
        place.mkdir()
    (other / "secret").write_text("another harness's")
    (tmp_path / "sibling").write_text("not given")  # of the host's /tmp, given to no harness
    (work / "harness.py").write_text(MAGIC)
    # what the command left in its tmp the first time: its working directory's place there a
    # link to the init's working directory, which that place is
    left = own / tmp_path.relative_to("/tmp") / "work"
    left.parent.mkdir(parents=True)
    left.symlink_to("/proc/self/cwd")
    result = _sandboxed([sys.executable, str(work / "harness.py")], work, hidden=[other],
                        tmp=own)  # fmt: skip
    assert b"not given" not in result.stdout, result.stdout.decode()
    assert result.returncode == 126, result.stdout.decode()
    assert b"a link on the way to" in result.stderr, result.stderr


# --- held --------------------------------------------------------------------------------------

UNCOVER = """
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def said(code):
    return 'ok' if code >= 0 else os.strerror(ctypes.get_errno())
planted = sys.argv[1]
for place in ('/tmp/bound', '/tmp/tree'):
    os.makedirs(place, exist_ok=True)
MS_BIND, MNT_DETACH, CLONE, RECURSIVE, EMPTY = 4096, 2, 1, 0x8000, 0x1000
print('umount /tmp', said(libc.umount2(b'/tmp', MNT_DETACH)))
print('umount /dev', said(libc.umount2(b'/dev', MNT_DETACH)))
print('bind /', said(libc.mount(b'/', b'/tmp/bound', None, MS_BIND, None)))
print('open_tree /', said(libc.syscall(428, -100, b'/', CLONE)))
tree = libc.syscall(428, -100, b'/', CLONE | RECURSIVE)
print('open_tree -r /', said(tree))
print('move_mount', said(libc.syscall(429, tree, b'', -100, b'/tmp/tree', 4)))  # F_EMPTY_PATH
print('umount its /tmp', said(libc.umount2(b'/tmp/tree/tmp', MNT_DETACH)))
print('open_tree stdin', said(libc.syscall(428, 0, b'', CLONE | EMPTY)))
picked = libc.syscall(433, -100, b'/dev/shm', 0)  # a tmpfs the init made: its, not the command's
libc.syscall(431, picked, 1, b'size', b'2m', 0)  # FSCONFIG_SET_STRING
print('reconfigure', said(libc.syscall(431, picked, 7, None, None, 0)))  # FSCONFIG_CMD_RECONFIGURE
for where in ('/tmp/', '/var/tmp/', '/tmp/tree/tmp/', '/tmp/bound/tmp/'):
    print(where, os.path.exists(where + planted), flush=True)
"""


def test_held_the_host_s_tmp_and_dev_stay_under_the_sandbox_s(
    tmp_path: Path, sandbox: None
) -> None:
    planted = Path("/tmp") / f"host-{os.getpid()}-{os.urandom(4).hex()}"  # the host's
    planted.write_text("the host's")
    try:
        result = _harness(tmp_path, UNCOVER, planted.name)
    finally:
        planted.unlink()
    assert _said(result) == [
        "umount /tmp Invalid argument",  # locked: CONFINE's user namespace
        "umount /dev Invalid argument",
        "bind / Invalid argument",  # it would show what the locked mounts cover
        "open_tree / Invalid argument",
        "open_tree -r / ok",  # every mount as it is, covers and all
        "move_mount ok",
        "umount its /tmp Invalid argument",
        "open_tree stdin Invalid argument",  # the host's /dev: not this mount namespace's
        "reconfigure Operation not permitted",
        "/tmp/ False",
        "/var/tmp/ False",
        "/tmp/tree/tmp/ False",
        "/tmp/bound/tmp/ False",
    ]


def test_held_a_link_in_a_tmp_given_again_to_the_init_s_own_cwd(
    tmp_path: Path, sandbox: None
) -> None:
    # the init's working directory is the host's dentry until its chdir, after the tmp is
    # made: a link through /proc/self/cwd would have it make the way to the harness's working
    # directory there, on the host, as root; the mount under it is read-only by then
    if tmp_path.parts[1] != "tmp":
        pytest.skip("the test's directory is not under /tmp here")
    own = tmp_path / "own-tmp"
    (own / tmp_path.parts[2]).mkdir(parents=True)  # pytest-of-<user>
    (own / tmp_path.parts[2] / tmp_path.parts[3]).symlink_to("/proc/self/cwd")
    result = _harness(tmp_path, "print('ran')", tmp=own)
    assert result.returncode == 126, result.stderr
    assert b"cannot make the command's view" in result.stderr, result.stderr
    assert b"Read-only file system" in result.stderr, result.stderr  # not the link refusal
    assert result.stdout == b""
    assert not (tmp_path / tmp_path.name).exists()  # nothing made on the host


NAMED = """
import os, sys
named, secret, linked, work = sys.argv[1:5]
print('named', os.path.isdir(named), os.access(named, os.W_OK), flush=True)
print('secret', os.path.exists(secret), os.path.exists(linked), flush=True)
print('hidden empty', os.listdir(os.path.dirname(secret)), flush=True)
print('work', os.access(work, os.W_OK), flush=True)
"""


def test_held_a_command_line_naming_a_hidden_place_s_surroundings_uncovers_nothing(
    tmp_path: Path, sandbox: None
) -> None:
    # the directory that holds the hidden place, a link to a file in it and the place itself,
    # all named: the cover stays, and the writable place beside it stays writable
    top = tmp_path / "top"
    other, work, links = top / "other", top / "work", tmp_path / "links"
    for place in (other, work, links):
        place.mkdir(parents=True)
    (other / "secret").write_text("another harness's")
    (links / "to-secret").symlink_to(other / "secret")
    (work / "harness.py").write_text(NAMED)
    command = [sys.executable, str(work / "harness.py"), str(top), str(other / "secret"),
               str(links / "to-secret"), str(work), str(other), str(links)]  # fmt: skip
    result = _sandboxed(command, work, writable=[work], hidden=[other])
    assert _said(result) == [
        "named True False",
        "secret False False",
        "hidden empty []",
        "work True",
    ]


HONEST = r"""
import multiprocessing, multiprocessing.shared_memory, sqlite3, tempfile
def run(what, command):
    done = subprocess.run(command, capture_output=True, text=True)
    print(what, done.returncode, done.stdout.strip() or done.stderr.strip()[-200:], flush=True)
def said(what, call):
    try:
        print(what, call(), flush=True)
    except Exception as exc:
        print(what, 'failed', repr(exc), flush=True)
if __name__ == '__main__':
    run('process substitution', ['bash', '-c', 'cat <(echo /dev/fd)'])
    if sys.argv[1] == 'script':
        run('pty', ['script', '-qec', 'tty | cut -c1-9', '/dev/null'])
    said('shared memory', lambda: multiprocessing.shared_memory.SharedMemory(
        create=True, size=16).unlink())
    said('lock', lambda: type(multiprocessing.Lock()).__name__)
    said('mkstemp', lambda: os.path.dirname(tempfile.mkstemp()[1]))
    said('fifo', lambda: os.mkfifo('/tmp/fifo'))
    run('venv', [sys.executable, '-m', 'venv', '--without-pip', '/tmp/venv'])
    run('venv python', ['/tmp/venv/bin/python', '-c', 'import sys; print(sys.prefix)'])
    said('wal', lambda: sqlite3.connect('/tmp/db').execute('pragma journal_mode=wal').fetchone())
    server = socket.socket(socket.AF_UNIX)
    server.bind('/tmp/socket')
    server.listen()
    said('unix socket', lambda: socket.socket(socket.AF_UNIX).connect_ex('/tmp/socket'))
    with open('/var/tmp/one', 'w') as f:
        f.write('x')
    said('var tmp', lambda: os.path.exists('/tmp/one'))
    run('mktemp', ['bash', '-c', 'dirname "$(mktemp -d)"'])
    if sys.argv[2] == 'node':
        run('node', ['node', '-e', "const os = require('os'), fs = require('fs');"
                     "fs.writeFileSync(os.tmpdir() + '/n', 'x'); console.log(os.tmpdir())"])
"""


def test_held_an_honest_harness_s_devices_and_tmp_work(tmp_path: Path, sandbox: None) -> None:
    script = "script" if shutil.which("script") else "-"
    node = "node" if shutil.which("node") else "-"
    result = _harness(tmp_path, HONEST, script, node)
    assert _said(result) == [
        "process substitution 0 /dev/fd",
        *(["pty 0 /dev/pts/"] if script == "script" else []),
        "shared memory None",
        "lock Lock",
        "mkstemp /tmp",
        "fifo None",
        "venv 0 ",
        "venv python 0 /tmp/venv",
        "wal ('wal',)",
        "unix socket 0",
        "var tmp True",
        "mktemp 0 /tmp",
        *(["node 0 /tmp"] if node == "node" else []),
    ]
