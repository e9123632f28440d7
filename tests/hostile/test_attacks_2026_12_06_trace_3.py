"""A third attack on ADR 0047 (2026-12-06): the command's view of the files, the injected
system calls and the sandbox's init.

The adversary is a hostile harness driven for real through ``run_sandboxed``
(``tests.sandbox_kit``), given what ``audit/run.py`` gives it where it matters (its checkout,
outputs and home writable, the scratch folders and the checkout's ``.git`` read-only, the other
harnesses' directories hidden). Its goals: a write outside its places (its checkout, outputs,
home, ``/tmp``, ``/var/tmp``), a way round strace, or an honest harness that breaks. Each test
asserts the safe behaviour; a hole is a strict xfail that says what happens and where. Every
write a probe makes outside its places writes back the value it read (nothing on the host
changes); the other probes only open, or ask ``access(W_OK)``.

Holes: 1, 2 and 4 closed the same day (ADR 0047 point 6: ``/proc/sys``, ``/proc/sysrq-trigger``,
``/proc/irq``, ``/proc/bus``, ``/proc/fs`` and all of ``/sys`` read-only for the command; a
working directory is writable only inside a directory the runner gives, never by itself, so a
link leads to a read-only place); 3 was a strict xfail until a later change the same day gave
the sandbox a ``/dev`` of its own (``_sandbox_inside._devices``: the nodes a program opens by
name, bound read-only from the host's, an empty ``/dev/shm`` and terminals of its own).

1. The host's kernel settings are the harness's to write: ``/proc`` (the one ``ISOLATE``
   mounted) and ``/sys`` are left as they are (``_sandbox_inside._KERNEL_TREES``), and the
   command's uid 0 is the host's uid 0 (``CONFINE``'s ``--map-root-user`` of a root runner), so
   ``sysctl``'s own check (``test_perm``: the caller's euid is ``GLOBAL_ROOT_UID``) and
   sysfs's mode bits let it write. ``/proc/sys/kernel/domainname`` (the host's: the sandbox
   has no UTS namespace of its own) is written here; ``/proc/sys/kernel/core_pattern`` takes a
   write the same way (tried with its own value, by hand), and a ``|/tmp/x`` there is run by
   the kernel on the next crash as root in the host's namespaces: out of the sandbox's network
   namespace and of strace. ``modprobe`` is the same.
2. Same for ``/sys``: ``/sys/kernel/mm/transparent_hugepage/enabled`` (any store that checks
   only mode bits); ``/sys/fs/cgroup`` is the host's cgroup v1 hierarchy, mounted read-write.
3. ``/dev/kmsg`` (the host's kernel log) opens for writing (mode ``0644``, owner root).
   ``/dev/kvm``, ``/dev/loop-control`` and ``/dev/loop*`` open read-write too (by hand).
4. A working directory that is a symbolic link makes its target writable: the init binds
   ``os.path.realpath`` of each writable place (``init``), and ``audit/run.py`` gives
   ``checkout / harness.workdir``, a path in the upstream's checkout (``pins`` checks the
   string only). An upstream whose pinned commit has ``harness`` as a link to the runner's
   code, its environment's ``site-packages`` or the bundle's directory gets that written by
   its harness: here the project's directory is writable in the view. (A link to ``/`` fails
   closed: ``CONFINE``'s ``unshare --user`` refuses, ``EPERM``, the root bound over itself
   looking like a chroot.)

Held: i386 ``int 0x80`` ``seccomp`` (354), ``io_uring_setup`` (425) and ``ptrace`` (26)
(strace's ``inject`` covers every personality: ``(INJECTED)``; x32 ``seccomp`` too, by hand);
the init out of the command's reach (``process_vm_writev``/``readv``, ``pidfd_getfd``,
``/proc/1/mem``, ``/proc/1/root``, ``/proc/1/cwd``: the init is in the user namespace above,
``EPERM``/``EACCES``); a read-only mount made writable (``MS_REMOUNT`` of ``/`` and of a bind
of it, ``mount_setattr`` on an ``open_tree`` clone: the flags are locked), a read-only file
re-opened for writing through ``/proc/self/fd`` (``EROFS``) or hard-linked into ``/tmp``
(``EXDEV``: another mount; ``fs.protected_hardlinks`` is not reached); a child made by
``clone3(CLONE_UNTRACED)`` without a tracer of its own (its ``connect()`` meets strace's filter
with no tracer: ``ENOSYS``); an honest harness that writes its home's ``.cache`` (a SQLite
database there), its checkout, ``/dev/shm`` and ``$TMPDIR``, uses multiprocessing (fork, spawn,
forkserver, a forkserver queue), node, and ``git status``/``git log`` on its checkout (whose
``.git`` is read-only). Not tried here: a block device of the host's root filesystem (the host
itself refuses ``/dev/vda`` here, ``EPERM``, so the sandbox is not what holds it); the non-root
runner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox_kit import compiled as _compiled
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said
from tests.sandbox_kit import sandboxed as _sandboxed

STDLIB = Path(os.__file__).resolve().parent
"""A directory of the host's, read-only in every harness's view, that is not under ``/tmp``
wherever the project is (a fresh clone made with ``mktemp`` is)."""


def _under_tmp(path: Path) -> bool:
    return any(path.is_relative_to(p) for p in ("/tmp", "/var/tmp"))


# --- holes -------------------------------------------------------------------------------------

REWRITE = """
place = sys.argv[1]
value = open(place, 'rb').read()
if b'[' in value:  # sysfs's choice lists: 'always [madvise] never'
    value = value.split(b'[')[1].split(b']')[0]
try:
    fd = os.open(place, os.O_WRONLY)
    try:
        os.write(fd, value)  # the value it read: nothing changes
    finally:
        os.close(fd)
    print('written', flush=True)
except OSError as exc:
    print('refused', exc.errno, flush=True)
"""


def test_a_harness_cannot_write_the_host_s_sysctls(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, REWRITE, "/proc/sys/kernel/domainname")
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.startswith(b"refused"), result.stdout


def test_a_harness_cannot_write_the_host_s_sysfs(tmp_path: Path, sandbox: None) -> None:
    place = "/sys/kernel/mm/transparent_hugepage/enabled"
    if not os.path.exists(place):
        pytest.skip(f"no {place} here")
    result = _harness(tmp_path, REWRITE, place)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.startswith(b"refused"), result.stdout


HOST_DEVICES = ("kmsg", "kvm", "loop-control", "loop0", "mem", "port", "vda", "sda", "log")


def test_a_harness_cannot_write_the_host_s_kernel_log(tmp_path: Path, sandbox: None) -> None:
    body = """
    for name in sys.argv[1:]:
        try:
            os.close(os.open('/dev/' + name, os.O_WRONLY))  # opened only: nothing is written
            print(name, 'opened', flush=True)
        except OSError as exc:
            print(name, 'refused', exc.strerror, flush=True)
    """
    result = _harness(tmp_path, body, *HOST_DEVICES)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    # none of the host's devices but a program's is there, whatever the host has
    said = [f"{name} refused No such file or directory" for name in HOST_DEVICES]
    assert result.stdout.decode().splitlines() == said


def test_a_linked_workdir_does_not_make_its_target_writable(tmp_path: Path, sandbox: None) -> None:
    if _under_tmp(STDLIB):
        pytest.skip("the standard library is under /tmp here, writable anyway")
    scratch = tmp_path / "scratch"
    checkout, out, home = (scratch / k / "up" for k in ("checkouts", "outputs", "home"))
    for place in (checkout, out, home):
        place.mkdir(parents=True)
    (checkout / "harness").symlink_to(STDLIB)  # as a commit of the upstream's may hold it
    read_only = [scratch, *(scratch / k for k in ("outputs", "home", "checkouts"))]
    probe = f"import os; print(os.access({str(STDLIB)!r}, os.W_OK))"  # asks, writes nothing
    result = _sandboxed([sys.executable, "-c", probe], checkout / "harness",
                        writable=[checkout, out, home], read_only=read_only)  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout == b"False\n"


# --- held --------------------------------------------------------------------------------------

I386 = r"""
#include <stdio.h>
static long i386(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}
static unsigned int action = 0x7fc00000U; /* SECCOMP_RET_USER_NOTIF */
int main(void) {
    printf("seccomp %ld\n", i386(354, 2, 0, (long)&action)); /* SECCOMP_GET_ACTION_AVAIL */
    printf("io_uring_setup %ld\n", i386(425, 1, 0, 0));
    printf("ptrace %ld\n", i386(26, 0x4206, 1, 0)); /* PTRACE_SEIZE the init */
    return 0;
}
"""


def test_held_i386_seccomp_io_uring_and_ptrace_are_injected(tmp_path: Path, sandbox: None) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("int 0x80 is x86_64's")
    result = _sandboxed([str(_compiled(tmp_path, "i386", I386, "-O0"))], tmp_path)
    assert _said(result) == ["seccomp -38", "io_uring_setup -38", "ptrace -1"]
    assert result.trace.count(b"(INJECTED)") == 3, result.trace.decode()


INIT = """
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def said(code):
    return 'ok' if code >= 0 else os.strerror(ctypes.get_errno())
buf = ctypes.create_string_buffer(8)
local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 1)
remote = (ctypes.c_void_p * 2)(0x400000, 1)
for name, number in (('process_vm_readv', 310), ('process_vm_writev', 311)):
    print(name, said(libc.syscall(ctypes.c_long(number), ctypes.c_long(1), local, ctypes.c_long(1),
                                  remote, ctypes.c_long(1), ctypes.c_long(0))))
# pidfd_open(the init): a handle, no reach
pidfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(1), ctypes.c_long(0))
print('pidfd_getfd', said(libc.syscall(ctypes.c_long(438), ctypes.c_long(pidfd), ctypes.c_long(0),
                                            ctypes.c_long(0))))
for place in ('/proc/1/mem', '/proc/1/root/.', '/proc/1/cwd/.'):
    try:
        os.close(os.open(place, os.O_RDONLY))
        print(place, 'ok')
    except OSError as exc:
        print(place, exc.strerror)
"""


def test_held_the_init_is_out_of_the_command_s_reach(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, INIT)
    assert _said(result) == [
        "process_vm_readv Operation not permitted",
        "process_vm_writev Operation not permitted",
        "pidfd_getfd Operation not permitted",
        "/proc/1/mem Permission denied",
        "/proc/1/root/. Permission denied",
        "/proc/1/cwd/. Permission denied",
    ]


READ_ONLY = """
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
place, bound = sys.argv[1], sys.argv[2]
target = os.path.join(place, sorted(n for n in os.listdir(place)
                                    if os.path.isfile(os.path.join(place, n)))[0])
def said(code):
    return 'ok' if code >= 0 else os.strerror(ctypes.get_errno())
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
print('remount /', said(libc.mount(None, b'/', None, MS_REMOUNT | MS_BIND, None)))
print('bind', said(libc.mount(place.encode(), bound.encode(), None, MS_BIND | MS_REC, None)))
print('remount bind', said(libc.mount(None, bound.encode(), None, MS_REMOUNT | MS_BIND, None)))
tree = libc.syscall(428, -100, place.encode(), 1 | 0x8000)  # open_tree(OPEN_TREE_CLONE|RECURSIVE)
attr = (ctypes.c_uint64 * 4)(0, MS_RDONLY, 0, 0)  # attr_clr MOUNT_ATTR_RDONLY
print('mount_setattr', said(libc.syscall(442, tree, b'', 0x1000, attr, 32)))  # AT_EMPTY_PATH
fd = os.open(target, os.O_RDONLY)
try:
    os.close(os.open(f'/proc/self/fd/{fd}', os.O_WRONLY | os.O_APPEND))
    print('reopen ok')
except OSError as exc:
    print('reopen', exc.strerror)
try:
    os.link(target, 'linked')
    print('link ok')
except OSError as exc:
    print('link', exc.strerror)
copy = os.path.join(bound, os.path.basename(target))
print('writable', os.access(target, os.W_OK), os.access(copy, os.W_OK))
"""


def test_held_a_read_only_file_stays_read_only(tmp_path: Path, sandbox: None) -> None:
    if _under_tmp(STDLIB):
        pytest.skip("the standard library is under /tmp here, writable anyway")
    (tmp_path / "bound").mkdir()
    result = _harness(tmp_path, READ_ONLY, str(STDLIB), str(tmp_path / "bound"))
    assert _said(result) == [
        "remount / Operation not permitted",
        "bind ok",
        "remount bind Operation not permitted",
        "mount_setattr Operation not permitted",
        "reopen Read-only file system",
        "link Invalid cross-device link",
        "writable False False",
    ]


CLONE3 = """
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
args = (ctypes.c_uint64 * 11)()
args[0] = 0x00800000  # CLONE_UNTRACED: strace's -f does not follow it
args[4] = signal.SIGCHLD
pid = libc.syscall(435, args, ctypes.sizeof(args))  # clone3
if pid == 0:
    print('child connect', socket.socket().connect_ex(('93.184.216.34', 443)), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_held_an_untraced_clone3_child_cannot_connect(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, CLONE3)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    # strace's filter stops the call for a tracer it has not: ENOSYS, the call never runs
    assert result.stdout == b"child connect 38\n", result.stdout
    assert _outside(result) == [], result.trace.decode()


DEVICES = """
def said(what, call):
    try:
        value = call()
        print(what, 'ok' if value is None else value, flush=True)
    except OSError as exc:
        print(what, exc.strerror, flush=True)
def write(path, data, flags=0):
    fd = os.open(path, os.O_WRONLY | flags, 0o600)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)
said('null', lambda: write('/dev/null', b'x'))
said('full', lambda: write('/dev/full', b'x'))
said('zero', lambda: len(open('/dev/zero', 'rb').read(8)))
said('urandom', lambda: len(open('/dev/urandom', 'rb').read(8)))
said('stdout', lambda: write('/dev/stdout', b''))
said('chmod null', lambda: os.chmod('/dev/null', 0o600))
said('create', lambda: os.close(os.open('/dev/planted', os.O_CREAT | os.O_WRONLY)))
said('host shm', lambda: os.path.exists('/dev/shm/' + sys.argv[1]))
said('shm', lambda: write('/dev/shm/' + sys.argv[2], b'x', os.O_CREAT))
said('pty', lambda: [os.close(fd) for fd in os.openpty()] and None)
"""


def test_held_the_sandbox_has_a_dev_of_its_own(tmp_path: Path, sandbox: None) -> None:
    # a program's devices work, the host's nodes keep their modes, /dev/shm is the sandbox's
    planted = Path("/dev/shm") / f"host-{os.getpid()}"
    planted.write_bytes(b"the host's")
    written = f"sandbox-{os.getpid()}"
    try:
        result = _harness(tmp_path, DEVICES, planted.name, written)
    finally:
        planted.unlink()
    assert _said(result) == [
        "null 1",
        "full No space left on device",
        "zero 8",
        "urandom 8",
        "stdout 0",
        "chmod null Read-only file system",
        "create Read-only file system",
        "host shm False",
        "shm 1",
        "pty ok",
    ]
    assert not (Path("/dev/shm") / written).exists()  # it went to the sandbox's own
    assert oct(os.stat("/dev/null").st_mode & 0o777) == "0o666"


HONEST = """
import multiprocessing, sqlite3
def square(x):
    return x * x
if __name__ == '__main__':
    cache = os.path.expanduser('~/.cache/harness')
    os.makedirs(cache, exist_ok=True)
    sqlite3.connect(os.path.join(cache, 'db.sqlite')).execute('create table t (x)')
    with open('written-in-its-checkout', 'w') as f:
        f.write('a')
    with open('/dev/shm/honest-%d' % os.getpid(), 'w') as f:
        f.write('a')
    os.unlink('/dev/shm/honest-%d' % os.getpid())
    for method in ('fork', 'spawn', 'forkserver'):
        with multiprocessing.get_context(method).Pool(2) as pool:
            print(method, pool.map(square, [1, 2, 3]), flush=True)
    queue = multiprocessing.get_context('forkserver').Queue()
    queue.put(1)
    print('queue', queue.get(), flush=True)
    if sys.argv[2] == 'node':
        script = ("const fs = require('fs'), os = require('os'), p = require('path');"
                  "fs.writeFileSync(p.join(os.tmpdir(), 'n'), 'x');"
                  "fs.mkdirSync(p.join(os.homedir(), '.npm'), {recursive: true});"
                  "console.log('node ok')")
        print(subprocess.run(['node', '-e', script], capture_output=True, text=True,
                             check=True).stdout.strip(), flush=True)
    for command in (['git', 'status', '--short'], ['git', 'log', '--format=%s']):
        print(subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip())
    with open(os.path.join(sys.argv[1], 'result.json'), 'w') as f:
        f.write('{}')
"""


def test_held_an_honest_harness_writes_its_places(tmp_path: Path, sandbox: None) -> None:
    scratch = tmp_path / "scratch"
    checkout, out, home = (scratch / k / "up" for k in ("checkouts", "outputs", "home"))
    for place in (checkout, out, home, scratch / "outputs" / "other"):
        place.mkdir(parents=True)
    (checkout / "harness.py").write_text("import ctypes, os, signal, socket, subprocess, sys\n"
                                         + HONEST)  # fmt: skip
    ident = ["-c", "user.name=a", "-c", "user.email=a@example.invalid"]
    for command in (["init", "-q"], ["add", "."], [*ident, "commit", "-qm", "upstream"]):
        subprocess.run(["git", "-C", str(checkout), *command], check=True, capture_output=True)
    node = "node" if shutil.which("node") else ""
    # no TMPDIR: multiprocessing's forkserver binds a Unix socket in /tmp (108 bytes at most)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    read_only = [scratch, *(scratch / k for k in ("outputs", "home", "checkouts")),
                 checkout / ".git"]  # fmt: skip
    result = _sandboxed([sys.executable, "harness.py", str(out), node or "-"], checkout,
                        env=env, writable=[checkout, out, home], read_only=read_only,
                        hidden=[scratch / "outputs" / "other"])  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-800:]
    pools = [f"{method} [1, 4, 9]" for method in ("fork", "spawn", "forkserver")]
    expected = [*pools, "queue 1", *(["node ok"] if node else []), "?? written-in-its-checkout",
                "upstream"]  # fmt: skip
    assert result.stdout.decode().splitlines() == expected
    assert (out / "result.json").read_text() == "{}"
    assert (home / ".cache" / "harness" / "db.sqlite").is_file()
