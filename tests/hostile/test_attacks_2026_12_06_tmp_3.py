"""A third attack on ADR 0047 points 10 and 11 (2026-12-06): what a harness leaves for the next
sandbox run, or takes from the runner, past a ``/dev``, a ``/tmp`` and an IPC namespace of its
own.

The adversary is a hostile harness driven for real through ``run_sandboxed``
(``tests.sandbox_kit``). Its goals: read something of the runner's that is not a file, or plant
something that the runner or a later harness (another upstream's, each with a ``tmp`` of its own
and the others hidden) finds, through any kernel object the sandbox's namespaces do not cover.
Each test asserts the safe behaviour; a hole is a strict xfail that says what happens and where.
What the tests plant on the host is under ``tmp_path`` or in a session keyring made for the
test, in a process of its own (pytest's own keyring is not touched).

Holes: 1 and 2 closed the same day, each test failing before the fix: strace makes
``add_key``, ``keyctl`` and ``request_key`` absent (ENOSYS, ``STRACE_OPTIONS``), as Docker's
default profile refuses them. ``/proc/acpi`` and ``/proc/scsi`` (below) were made read-only
with the host's other kernel settings (``KERNEL_SETTINGS``), untested here (this host has
neither).

1. The kernel's keyrings are not namespaced, and the command keeps the runner's session
   keyring. A keyring is a credential, inherited across ``fork``, ``exec`` and
   ``unshare(CLONE_NEWUSER)``; nothing in ``audit/sandbox.py`` ``_unshare``,
   ``audit._sandbox_inside.ISOLATE``, ``CONFINE`` or ``init`` gives the command a session
   keyring of its own, and strace (``STRACE_OPTIONS``) lets ``keyctl``/``add_key``/
   ``request_key`` through. The command possesses the runner's session keyring
   (``keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)`` names the runner's), so it
   searches and reads every key the runner keeps there (a login session's, a Kerberos
   ``KEYRING:`` cache, an ``ecryptfs`` or ``fscrypt`` key: possessor permissions), and 2.
2. ... it adds keys there: the runner sees them after, and so does every later harness of the
   run, which inherits the same keyring: a channel from one harness to the next that no
   ``tmp``, ``/dev/shm``, IPC or network namespace closes (point 4: "a harness sees nothing of
   the run's other harnesses"), and that no record shows. Docker's default seccomp profile
   refuses ``add_key``, ``keyctl`` and ``request_key`` for this very reason ("not namespaced").
   Fix: the init (or the child before ``CONFINE``) joins a new anonymous session keyring
   (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``, ``keyctl session -``) so the command
   possesses nothing of the runner's; better, strace refuses ``add_key``, ``keyctl`` and
   ``request_key`` (``inject=...:error=ENOSYS``, as for ``seccomp``; no benchmark needs them):
   with a fresh session keyring alone, ``/proc/keys`` would still list the runner's keys (the
   command's uid is the runner's, which has ``view`` on them; not tested) though not read their
   payloads.

Held: ``/proc/keys`` (and ``/proc/timer_list``) read as empty (``_sandbox_inside.MASKED``,
added with the fix: ``/proc/keys`` listed the runner's keys by their descriptions); nothing of a
run's own ``/tmp`` (no ``tmp`` given: a tmpfs), ``/dev/shm``, System V
shared memory, POSIX message queues or abstract Unix sockets is there for the next run: each
is the sandbox's own and gone with it. The command has no terminal of the host's: its
descriptors are the view's ``/dev/null`` and two pipes, ``/dev/tty`` is ``ENXIO`` (a session of
its own, no controlling terminal), ``TIOCSTI`` on its output is ``ENOTTY``; a pty of its own
``/dev/pts`` works. A host link under ``/tmp`` whose target is relative with ``..`` on the way
to a named file is made again and leads to that file, read-only.

Noted, not holes: ``/proc/self/mountinfo`` shows the host's paths of every place bound or
covered (the other harnesses' upstream names among the hidden ones) and the host's mount
sources; the tmpfs over a hidden place is writable by the command (only in its own mount
namespace, gone with it); the ``/tmp`` tmpfs (no ``tmp`` given) and ``/dev/shm`` have no size
limit (half the host's memory, as the host's ``/dev/shm`` had); a harness whose ``tmp`` is given
again (a gate run for two components) finds what it left, links the init had made replaced by
its own (``_temporary`` makes a link only where nothing is): the same upstream's code, which
writes its checkout and home too. ``/proc`` is writable beyond ``KERNEL_SETTINGS``; no file here
other than ``/proc/pressure/*`` (``0666`` by design) takes a write from the command's uid 0
(``/proc/mtrr`` asks for ``CAP_SYS_ADMIN``), but a host with ``/proc/scsi/scsi`` or
``/proc/acpi/wakeup`` (uid checks only, as ``/proc/sys``) should be looked at: Docker masks them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import said as _said
from tests.sandbox_kit import sandboxed as _sandboxed

ROOT = Path(__file__).resolve().parents[2]

# --- holes -------------------------------------------------------------------------------------

KEYS = r"""
import ctypes, json, os, pathlib, sys
sys.path.insert(0, sys.argv[1])
from tests.sandbox_kit import harness
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL, ADD_KEY, SESSION = 250, 248, ctypes.c_long(-3)
libc.syscall(KEYCTL, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a new one, this process's only
libc.syscall(ADD_KEY, b"user", b"operator:token", b"the runner's", 12, SESSION)
FIND = '''
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def read(name):
    key = libc.syscall(250, 10, ctypes.c_long(-3), b"user", name.encode(), 0)  # KEYCTL_SEARCH
    if key < 0:
        return os.strerror(ctypes.get_errno())
    buf = ctypes.create_string_buffer(64)
    size = libc.syscall(250, 11, ctypes.c_long(key), buf, 64)  # KEYCTL_READ
    return buf.raw[: max(size, 0)].decode()
print(json.dumps({"runner's": read("operator:token"), "planted": read("planted")}))
if sys.argv[1] == "plant":
    libc.syscall(248, b"user", b"planted", b"harness a's", 11, ctypes.c_long(-3))
'''
said = {}
for name, what in (("a", "plant"), ("b", "look")):
    place = pathlib.Path(sys.argv[2]) / name
    place.mkdir()
    done = harness(place, "import json\n" + FIND, what)
    said[name] = json.loads(done.stdout) if done.returncode == 0 else done.stderr.decode()
found = libc.syscall(KEYCTL, 10, SESSION, b"user", b"planted", 0)
said["runner"] = "finds it" if found >= 0 else os.strerror(ctypes.get_errno())
print(json.dumps(said))
"""
"""In a process of its own (a session keyring made for it, pytest's untouched): the runner keeps
a key, harness ``a`` reads it and plants one, harness ``b`` (a later run, a ``tmp`` of its own)
and the runner look for it."""


@pytest.fixture(scope="module")
def keyrings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    where = tmp_path_factory.mktemp("keys")
    done = subprocess.run([sys.executable, "-c", KEYS, str(ROOT), str(where)], cwd=ROOT,
                          capture_output=True, check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-800:]
    said = json.loads(done.stdout.decode().splitlines()[-1])
    assert isinstance(said["a"], dict) and isinstance(said["b"], dict), said
    return said


REFUSED = "Function not implemented"
"""What the keyring calls answer in the sandbox: strace makes them absent (ENOSYS)."""


def test_the_runner_s_keys_are_not_the_harness_s(
    keyrings: dict[str, dict[str, str]], sandbox: None
) -> None:
    assert keyrings["a"]["runner's"] == REFUSED, keyrings


def test_a_key_a_harness_plants_is_there_for_no_later_harness(
    keyrings: dict[str, dict[str, str]], sandbox: None
) -> None:
    assert keyrings["a"]["planted"] == REFUSED, keyrings
    assert keyrings["b"]["planted"] == REFUSED, keyrings
    # the runner's own search works, and finds nothing planted
    assert keyrings["runner"] == "Required key not available", keyrings


# --- held --------------------------------------------------------------------------------------

PLANT = """
libc = ctypes.CDLL(None, use_errno=True)
key, queue = int(sys.argv[2]), sys.argv[3].encode()
if sys.argv[1] == 'plant':
    open('/tmp/planted', 'w').write('x')
    open('/dev/shm/planted', 'w').write('x')
    print('shm', libc.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), 0o1000 | 0o600) >= 0)
    print('mq', libc.mq_open(queue, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0)
    server = socket.socket(socket.AF_UNIX)
    server.bind(b'\\0' + queue)
    server.listen()
    print('abstract', True, flush=True)
else:
    print('tmp', os.path.exists('/tmp/planted'))
    print('dev shm', os.listdir('/dev/shm'))
    print('shm', libc.shmget(ctypes.c_int(key), ctypes.c_size_t(0), 0) >= 0)
    print('mq', libc.mq_open(queue, os.O_RDWR) >= 0)
    print('abstract', socket.socket(socket.AF_UNIX).connect_ex(b'\\0' + queue) == 0, flush=True)
"""


def test_held_nothing_a_run_plants_in_its_own_objects_is_there_for_the_next(
    tmp_path: Path, sandbox: None
) -> None:
    key = int.from_bytes(os.urandom(3), "big") | 0x5B000000
    queue = f"/audit-{os.getpid()}-{os.urandom(4).hex()}"
    first = _harness(tmp_path, PLANT, "plant", str(key), queue)
    assert first.returncode == 0, first.stderr.decode()[-800:]
    assert first.stdout.decode().split() == ["shm", "True", "mq", "True", "abstract", "True"]
    second = _harness(tmp_path, PLANT, "look", str(key), queue)
    assert _said(second) == [
        "tmp False", "dev shm []", "shm False", "mq False", "abstract False",
    ]  # fmt: skip


TERMINAL = """
import fcntl, termios, pty
listed = os.listdir('/proc/self/fd')  # the listing's own descriptor is closed by now
print('fds', sorted(n for n in listed if os.path.exists('/proc/self/fd/' + n)))
print('in', os.readlink('/proc/self/fd/0'))
try:
    os.open('/dev/tty', os.O_RDWR)
    print('tty opened')
except OSError as exc:
    print('tty', exc.strerror)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'x')
        print('tiocsti', fd, 'done')
    except OSError as exc:
        print('tiocsti', fd, exc.strerror)
main, follower = pty.openpty()
print('own pty', os.ttyname(follower).startswith('/dev/pts/'), flush=True)
"""


def test_held_no_terminal_of_the_host_s(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, TERMINAL)
    assert _said(result) == [
        "fds ['0', '1', '2']",
        "in /dev/null",
        "tty No such device or address",
        "tiocsti 0 Inappropriate ioctl for device",
        "tiocsti 1 Inappropriate ioctl for device",
        "tiocsti 2 Inappropriate ioctl for device",
        "own pty True",
    ]


RELATIVE = """
import os, sys
link = sys.argv[1]
print('read', open(link).read(), flush=True)
try:
    open(link, 'a').write('harness')
    print('wrote', flush=True)
except OSError as exc:
    print('write', exc.strerror, flush=True)
print('link', os.readlink(os.path.dirname(link)), flush=True)
"""


def test_held_a_host_link_with_a_relative_target_leads_where_it_does_read_only(
    tmp_path: Path, sandbox: None
) -> None:
    if tmp_path.parts[1] != "tmp":
        pytest.skip("the test's directory is not under /tmp here")
    data, work, links = tmp_path / "deep" / "data", tmp_path / "work", tmp_path / "links"
    for place in (data, work, links):
        place.mkdir(parents=True)
    (data / "file").write_text("the host's")
    (links / "to-data").symlink_to("../deep/./data/../data")
    (work / "harness.py").write_text(RELATIVE)
    named = links / "to-data" / "file"
    result = _sandboxed([sys.executable, str(work / "harness.py"), str(named)], work)
    assert _said(result) == [
        "read the host's",
        "write Read-only file system",
        "link ../deep/./data/../data",
    ]
    assert (data / "file").read_text() == "the host's"


def test_held_proc_tells_nothing_of_the_runner_s_keys(tmp_path: Path, sandbox: None) -> None:
    # /proc/keys lists every key the runner's uid may view, by its description: read as empty
    body = """
    for place in ('/proc/keys', '/proc/timer_list', '/proc/sched_debug'):
        if os.path.exists(place):
            print(place, len(open(place, 'rb').read()), flush=True)
    """
    result = _harness(tmp_path, body)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    lines = result.stdout.decode().splitlines()
    assert lines and all(line.endswith(" 0") for line in lines), lines
