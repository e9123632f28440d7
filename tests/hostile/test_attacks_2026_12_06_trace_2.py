"""A second attack on ADR 0047 at 1a7212d (2026-12-06): the socket trace out of the harness's reach.

The adversary is a hostile harness driven for real through ``run_sandboxed`` (the first pass's
``_harness`` / ``_sandboxed`` helpers); its goal: a ``connect()`` to a non-local address
(93.184.216.34, which fails with ENETUNREACH in the sandbox's namespace) that is not an
off-sandbox entry (``verify._facts.off_sandbox``) of ``SandboxResult.ledger``; trace lines that
make ``verify.socket_trace.trace_entries`` drop or misattribute an entry; another harness's
directories reached by a route round their cover; a supervisor (or the runner right after the
sandbox) that hangs, crashes or runs what the harness controls. Each test asserts the safe
behaviour; a hole is a strict xfail that says what happens and where. Nothing here is tried
outside the sandbox's network namespace (the runner-side tests run no network probe at all).

Holes found, each closed the same day (ADR 0047 points 6 to 9; each test failed before its
fix, and the tests of 5 and 6 give the sandbox what ``audit/run.py`` gives it: the scratch
directory's folders and the checkout's ``.git`` read-only), and the honest-side breakage:

1. A thread or process with an empty name connects unrecorded: after ``prctl(PR_SET_NAME,
   "")`` (one ctypes call; a new thread inherits it), strace ``-Y`` shows no ``<comm>`` and pads
   the pid to five columns (``11    1796... connect(...``); ``_CONNECT`` wants one space after
   ``pid<comm>``, so ``trace_entries`` skips the line. The connect to 93.184.216.34 is in the
   raw trace, in neither ledger nor verifier.
2. A process cloned with ``CLONE_UNTRACED`` is not followed by strace (``-f`` follows through
   ptrace's fork events, which that flag turns off), and its parent, the harness, may trace
   it itself: ``PTRACE_SEIZE`` with ``PTRACE_O_TRACESECCOMP`` makes the harness the tracer
   that strace's ``--seccomp-bpf`` filter (``SECCOMP_RET_TRACE``, inherited) stops for, and a
   ``PTRACE_CONT`` lets the ``connect()`` go on. The kernel tries 93.184.216.34 (ENETUNREACH)
   and the trace is empty. Pure Python (ctypes); no compiler. Alone, without a tracer of its
   own, the untraced child's connect() fails with ENOSYS (held, below).
3. A ``connect()`` left unfinished (``<unfinished ...>``: blocked, another process's line
   printed meanwhile) when the sandbox is killed for a limit is dropped: strace is killed
   before it prints ``<... connect resumed>``, and ``trace_entries`` forgets what is still in
   ``pending`` at the end of the trace. The raw trace has the line; ledger and verifier have
   nothing. (The run is a TIMEOUT and its component FAILED, so the verdict is INFRA_ERROR all
   the same; only the record of the attempt is lost.)
4. A sockaddr strace shows with nested braces is dropped: ``_CONNECT``'s address group takes
   ``[^"}]`` or a quoted string, so a ``}`` of an inner structure ends it and the line does
   not match. ``AF_RXRPC`` (its ``transport={sin={... inet_addr("93.184.216.34")}}``),
   ``AF_X25``, ``AF_AX25``, ``AF_IEEE802154``, ``AF_MCTP``: 20 of 196 lines of a sweep of every
   family. Here the kernel refuses them (EAFNOSUPPORT on an AF_INET socket, no such modules);
   ADR 0047's claim is that every attempt is an entry whatever its family.
5. A harness writes another harness's hidden directory: it cannot rename the covered
   directory (a mount point) but can rename its parent (``scratch/outputs``, ``checkouts``,
   ``home``: not mount points), and make a new directory of the same name with what it likes
   in it. The cover moves with the old dentry; the runner later runs the next harness with
   that path as its outputs (or checkout, or home). (Reading stays held: the moved directory
   is still covered.)
6. The runner runs what a harness configured, outside the sandbox: after each harness,
   ``audit/run.py`` ``_execute`` describes its checkout (``audit/checkouts.py`` ``describe``:
   ``git status --porcelain``...) in the host's namespaces; a ``core.fsmonitor`` the harness
   wrote into its checkout's ``.git/config`` is run by git as the runner, in the host's network
   namespace, untraced, and the porcelain stays empty (``.git`` is not in the worktree). Here
   the hook only writes its network namespace into a file.
7. The runner hangs after a harness: ``describe`` reads every tracked file
   (``checkouts._tracked``: ``path.read_bytes()``); a harness that replaces one with a FIFO
   leaves the runner blocked in ``open()`` for ever, past every limit.

Honest-side breakage: a connect() to ``0.0.0.0`` or ``::`` (Linux: this host; a local server's
printed bind address, ``http.server``'s "Serving HTTP on 0.0.0.0") connects inside the
sandbox and is counted off-sandbox (``verify._facts.is_loopback``), so the run is INFRA_ERROR.
Not new at this HEAD.

Held: a (non-empty) process name (``comm``, 15 bytes, shown as ``pid<comm>``, read by strace
once per process) with ``>``, ``<``, ``"``, ``<... connect resumed>`` or ``= 0`` in it (strace
escapes ``>`` and ``<`` as ``\\76``, ``\\74``, and cuts the name at a newline); AF_UNIX paths
holding ``<unfinished ...>``, ``resumed>``, ``) = 0``, ``}``, quotes and newlines, interleaved
with real connects of other threads; i386 ``int 0x80`` ``socketcall(SYS_CONNECT)`` and
``connect`` (and x32, ENOSYS here) from a 64-bit process: strace's filter covers them; a
thread's unfinished connect() whose thread group is taken over by another thread's ``execve``
(``= ?``, EUNKNOWN), either way round; the untraced child with no tracer of its own (ENOSYS);
renaming a hidden directory's parent does not uncover it; an honest harness's threads,
asyncio, signal handlers and timers, ``subprocess`` terminate, node, a shell's ``trap``,
``spawn`` multiprocessing, and ``yes | head`` (SIGPIPE default); exit statuses by signal
(SIGKILL, SIGABRT, SIGHUP, SIGTERM from node, KeyboardInterrupt: 128 + N). Not tried: the
non-root runner; a kernel with AF_RXRPC (hole 4 would then name a real transport).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import git
import pytest

from audit.checkouts import describe
from audit.sandbox import SandboxLimits
from tests.sandbox_kit import OUTSIDE, PORT
from tests.sandbox_kit import compiled as _compiled
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import sandboxed as _sandboxed


def _checkout(place: Path) -> Path:
    """A git checkout of one commit, as the runner leaves an upstream's before its harness."""
    place.mkdir(parents=True)
    (place / "harness.py").write_text("print('upstream')\n")
    ident = ["-c", "user.name=a", "-c", "user.email=a@example.invalid"]
    for command in (["init", "-q"], ["add", "."], [*ident, "commit", "-qm", "upstream"]):
        subprocess.run(["git", "-C", str(place), *command], check=True, capture_output=True)
    return place


# --- holes -------------------------------------------------------------------------------------

NAMELESS = """
import threading
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b'', 0, 0, 0)  # PR_SET_NAME: an empty comm, which a new thread inherits
def connect():
    print('connect', socket.socket().connect_ex(('93.184.216.34', 443)), flush=True)
thread = threading.Thread(target=connect)
thread.start()
thread.join()
"""


def test_a_nameless_thread_s_connect_is_in_the_ledger(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, NAMELESS)
    assert result.stdout == b"connect 101\n", result.stderr.decode()[-800:]
    assert b'inet_addr("93.184.216.34")' in result.trace  # strace saw it
    assert _outside(result) == [("AF_INET", *OUTSIDE, "ENETUNREACH")], result.trace.decode()


UNTRACED = """
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
tracer = sys.argv[1] == 'trace'
r, w = os.pipe()
# clone(CLONE_UNTRACED | SIGCHLD): a fork that strace's -f does not follow
pid = libc.syscall(56, 0x00800000 | signal.SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os.read(r, 1)
    print('child connect', socket.socket().connect_ex(('93.184.216.34', 443)), flush=True)
    os._exit(0)
if tracer:  # PTRACE_SEIZE, PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL: the harness is its tracer
    print('seize', libc.ptrace(0x4206, pid, None, ctypes.c_void_p(0x80 | 0x100000)), flush=True)
os.write(w, b'x')
while True:
    _, status = os.waitpid(pid, 0x40000000)  # __WALL
    if os.WIFEXITED(status) or os.WIFSIGNALED(status):
        break
    sig = os.WSTOPSIG(status)
    if status >> 8 == signal.SIGTRAP | (7 << 8):  # PTRACE_EVENT_SECCOMP: strace's filter's stop
        print('seccomp stop', flush=True)
        sig = 0
    elif sig == signal.SIGTRAP:
        sig = 0
    libc.ptrace(7, pid, None, ctypes.c_void_p(sig))  # PTRACE_CONT: the connect() goes on
"""


def test_a_child_the_harness_traces_itself_cannot_connect_unrecorded(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, UNTRACED, "trace")
    assert result.returncode == 0, result.stderr.decode()[-800:]
    # ptrace is refused in the sandbox (EPERM); the untraced child's connect() meets strace's
    # filter with no tracer: ENOSYS, the call never runs (ADR 0047)
    assert result.stdout.decode().splitlines() == ["seize -1", "child connect 38"]
    assert _outside(result) == [], result.trace.decode()


LEFT_AT_A_LIMIT = """
import threading
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x40000000) == 0  # a network namespace of its own, a route into lo
for command in (['ip', 'link', 'set', 'lo', 'up'],
                ['ip', 'route', 'add', '93.184.216.34/32', 'dev', 'lo']):
    subprocess.run(command, check=True)
def stuck():  # its SYN goes into lo and nothing answers: connect() waits
    socket.socket().connect_ex(('93.184.216.34', 443))
threading.Thread(target=stuck, daemon=True).start()
time.sleep(0.5)
socket.socket().connect_ex(('127.0.0.1', 9))  # the blocked call's line: <unfinished ...>
print('silent until the limit', flush=True)
time.sleep(60)
"""


def test_a_connect_left_unfinished_at_a_limit_is_in_the_ledger(
    tmp_path: Path, sandbox: None
) -> None:
    started = time.monotonic()
    result = _harness(tmp_path, LEFT_AT_A_LIMIT, limits=SandboxLimits(inactivity_s=2, wall_s=10))
    assert time.monotonic() - started < 10
    assert result.timeout == "inactivity", result.stderr.decode()[-800:]
    assert b'inet_addr("93.184.216.34")}, 16 <unfinished ...>' in result.trace
    assert _outside(result) == [("AF_INET", *OUTSIDE, "EUNKNOWN")], result.trace.decode()


NESTED = """
import struct
libc = ctypes.CDLL(None, use_errno=True)
sin = (struct.pack('=H', socket.AF_INET) + struct.pack('!H', 443)
       + socket.inet_aton('93.184.216.34') + bytes(8))
# struct sockaddr_rxrpc: family, service, transport type and length, the transport's sockaddr
rxrpc = struct.pack('=HHHH', 33, 0, socket.SOCK_DGRAM, 16) + sin + bytes(12)
for family, data in ((33, rxrpc), (9, None), (3, None), (36, None), (45, None)):
    # AF_RXRPC, AF_X25, AF_AX25, AF_IEEE802154, AF_MCTP: strace shows an inner {...}
    data = data or struct.pack('=H', family) + bytes(range(2, 28))
    address = ctypes.create_string_buffer(data, len(data))
    s = socket.socket()
    done = libc.connect(s.fileno(), address, len(data))
    print(family, ctypes.get_errno() if done else 0, flush=True)
"""


def test_a_connect_whose_address_strace_shows_nested_is_in_the_ledger(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, NESTED)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert len(result.stdout.splitlines()) == 5, result.stdout
    assert b'transport={sin={sin_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("93.184' \
        b'.216.34")}}' in result.trace  # fmt: skip
    lines = result.trace.count(b" connect(")
    assert lines == 5
    assert len(_outside(result)) == lines, result.trace.decode()


PLANT = """
import errno
scratch, name = sys.argv[1], sys.argv[2]
print('covered', os.listdir(os.path.join(scratch, 'outputs', name)), flush=True)
for old, new in (('outputs', 'outputs.moved'), ('', '../moved')):
    try:
        os.rename(os.path.join(scratch, old), os.path.join(scratch, new))
    except OSError as exc:
        print('rename', old or 'scratch', errno.errorcode[exc.errno], flush=True)
        continue
    os.makedirs(os.path.join(scratch, 'outputs', name))
    with open(os.path.join(scratch, 'outputs', name, 'planted.json'), 'w') as planted:
        planted.write('{"by": "an earlier harness"}')
"""


def test_a_harness_cannot_put_files_into_another_harness_s_directory(
    tmp_path: Path, sandbox: None
) -> None:
    for kind in ("checkouts", "outputs", "home"):
        for name in ("hostile", "honest"):
            (tmp_path / kind / name).mkdir(parents=True)
    (tmp_path / "outputs" / "honest" / "mine.json").write_text("{}")
    others = [tmp_path / kind / "honest" for kind in ("checkouts", "outputs", "home")]
    fixed = [tmp_path, *(tmp_path / kind for kind in ("outputs", "home", "checkouts"))]
    own = [tmp_path / kind / "hostile" for kind in ("outputs", "home")]
    result = _harness(tmp_path / "checkouts" / "hostile", PLANT, str(tmp_path), "honest",
                      hidden=others, writable=own, read_only=fixed)  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-800:]
    # as audit/run.py gives them (_own, _fixed): the folders are mount points in its view
    assert result.stdout.decode().splitlines() == [
        "covered []",
        "rename outputs EROFS",
        "rename scratch EBUSY",
    ]
    assert sorted(os.listdir(tmp_path / "outputs" / "honest")) == ["mine.json"]


FSMONITOR = """
mark = sys.argv[1]
done = subprocess.run(['git', 'config', 'core.fsmonitor',
                       f'readlink /proc/self/ns/net > {mark}; false'], capture_output=True)
print('configured', done.returncode, flush=True)
"""


def test_describing_a_checkout_runs_nothing_its_harness_configured(
    tmp_path: Path, sandbox: None
) -> None:
    work = _checkout(tmp_path / "checkouts" / "hostile")
    mark = tmp_path / "ran-on-the-host"
    result = _harness(tmp_path, FSMONITOR, str(mark), cwd=work, read_only=[work / ".git"])
    assert result.stdout == b"configured 255\n", result.stderr.decode()[-800:]  # EROFS
    with git.Repo(work) as repo:  # as audit/run.py _execute does after the run
        described = describe("hostile", "r", "s", repo)
    assert described.porcelain == ""
    ran = mark.read_text().strip() if mark.exists() else None
    here = os.readlink("/proc/self/ns/net")
    assert ran is None, f"the harness's hook ran in {ran} (this process: {here})"


def test_describing_a_checkout_after_its_harness_does_not_hang(
    tmp_path: Path, sandbox: None
) -> None:
    work = _checkout(tmp_path / "checkouts" / "hostile")
    result = _harness(tmp_path, "os.unlink('harness.py'); os.mkfifo('harness.py')\n", cwd=work)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    done: list[object] = []

    def describing() -> None:
        with git.Repo(work) as repo:
            done.append(describe("hostile", "r", "s", repo))

    thread = threading.Thread(target=describing, daemon=True)
    thread.start()
    thread.join(5)
    hung = thread.is_alive()
    if hung:  # let the blocked open() end: a writer opens and closes the FIFO
        os.close(os.open(work / "harness.py", os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
    assert not hung


ANY = """
for family, address in ((socket.AF_INET, '0.0.0.0'), (socket.AF_INET6, '::')):
    server = socket.socket(family)
    server.bind((address, 0))
    server.listen()
    client = socket.socket(family)
    print('connect', client.connect_ex((address, server.getsockname()[1])), flush=True)
"""


def test_a_connect_to_the_unspecified_address_is_no_attempt_outside(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, ANY)
    assert result.stdout == b"connect 0\nconnect 0\n", result.stderr.decode()[-800:]
    assert _outside(result) == []


# --- held ---------------------------------------------------------------------------------------


def test_held_an_untraced_child_with_no_tracer_of_its_own_cannot_connect(
    tmp_path: Path, sandbox: None
) -> None:
    """strace's seccomp filter is inherited: SECCOMP_RET_TRACE with no tracer is ENOSYS."""
    result = _harness(tmp_path, UNTRACED, "alone")
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout == b"child connect 38\n"  # ENOSYS: the kernel tried nothing


COMMS = """
libc = ctypes.CDLL(None, use_errno=True)
names = [b'x> 1 connect(', b'a\\n1 1.0 <... con', b'<... connect res', b'\") = 0 <unfin', b'>']
for name in names:
    libc.prctl(15, name, 0, 0, 0)  # PR_SET_NAME: the comm a child has (strace reads it once)
    pid = os.fork()
    if pid == 0:
        socket.socket().connect_ex(('93.184.216.34', 443))
        os._exit(0)
    os.waitpid(pid, 0)
print('named', len(names), flush=True)
"""


def test_held_a_process_name_with_trace_markup_hides_no_connect(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, COMMS)
    assert result.stdout == b"named 5\n", result.stderr.decode()[-800:]
    assert _outside(result) == [("AF_INET", *OUTSIDE, "ENETUNREACH")] * 5, result.trace.decode()
    assert [e.process for e in result.ledger] == [  # escaped by strace, cut at a newline
        "x\\76 1 connect(", "a", "\\74... connect re", '\\") = 0 \\74unfin', "\\76",
    ]  # fmt: skip


PATHS = """
import threading
paths = ['/tmp/x") = 0\\n10<python> 1.0 <... connect resumed>) = 0',
         '/tmp/ <unfinished ...>', '/tmp/}, 16) = 0 {', '\\0abstract" <unfinished ...>']
barrier = threading.Barrier(len(paths) + 1)
def unix(path):
    s = socket.socket(socket.AF_UNIX)
    barrier.wait()
    for _ in range(50):
        s.connect_ex(path)
def outside():
    barrier.wait()
    for _ in range(50):
        socket.socket().connect_ex(('93.184.216.34', 443))
threads = [threading.Thread(target=unix, args=(p,)) for p in paths]
threads.append(threading.Thread(target=outside))
for t in threads:
    t.start()
for t in threads:
    t.join()
print('done', flush=True)
"""


def test_held_socket_paths_with_trace_markup_hide_no_connect_of_another_thread(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, PATHS)
    assert result.stdout == b"done\n", result.stderr.decode()[-800:]
    assert len(result.ledger) == 250, result.trace.decode()[-3000:]
    assert _outside(result) == [("AF_INET", *OUTSIDE, "ENETUNREACH")] * 50
    unix = [e for e in result.ledger if e.family == "AF_UNIX"]
    assert {e.outcome for e in unix} == {"ENOENT", "ECONNREFUSED"}


I386_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
static long int80(long nr, long a, long b, long c) {  /* the i386 entry, from a 64-bit process */
    long ret;
    __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}
static long x32(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile ("syscall" : "=a"(ret) : "a"(nr | 0x40000000L), "D"(a), "S"(b), "d"(c)
                      : "rcx", "r11", "memory");
    return ret;
}
int main(void) {
    unsigned char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    struct sockaddr_in *sin = (struct sockaddr_in *)low;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(443);
    inet_pton(AF_INET, "93.184.216.34", &sin->sin_addr);
    unsigned int *args = (unsigned int *)(low + 64);
    args[0] = socket(AF_INET, SOCK_STREAM, 0);
    args[1] = (unsigned int)(unsigned long)sin;
    args[2] = 16;
    printf("socketcall %ld\n", int80(102, 3, (long)args, 0));  /* socketcall(SYS_CONNECT) */
    printf("connect %ld\n", int80(362, socket(AF_INET, SOCK_STREAM, 0), (long)sin, 16));
    printf("x32 %ld\n", x32(42, socket(AF_INET, SOCK_STREAM, 0), (long)sin, 16));
    return 0;
}
"""


def test_held_i386_and_x32_connects_are_traced(tmp_path: Path, sandbox: None) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("x86-64 only")
    result = _sandboxed([str(_compiled(tmp_path, "i386", I386_C, "-O1"))], tmp_path)
    lines = result.stdout.decode().splitlines()
    assert lines[:2] == ["socketcall -101", "connect -101"], lines  # ENETUNREACH: tried
    tried = 2 + (lines[2] != "x32 -38")  # x32 ENOSYS: no x32 ABI in this kernel
    outside = _outside(result)
    assert outside[:2] == [("AF_INET", *OUTSIDE, "ENETUNREACH")] * 2, result.trace.decode()
    assert len(outside) >= tried


SUPERSEDED = """
import threading
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x40000000) == 0
for command in (['ip', 'link', 'set', 'lo', 'up'],
                ['ip', 'route', 'add', '93.184.216.34/32', 'dev', 'lo']):
    subprocess.run(command, check=True)
def blocked():
    socket.socket().connect_ex(('93.184.216.34', 443))
def execs():
    time.sleep(0.5)
    socket.socket().connect_ex(('127.0.0.1', 9))  # the leader's line: <unfinished ...>
    os.execv('/bin/echo', ['echo', 'replaced'])
if sys.argv[1] == 'leader-blocked':
    threading.Thread(target=execs).start()
    blocked()
else:
    threading.Thread(target=blocked, daemon=True).start()
    execs()
"""


@pytest.mark.parametrize("which", ["leader-blocked", "thread-blocked"])
def test_held_a_connect_cut_off_by_another_thread_s_execve_is_recorded(
    tmp_path: Path, sandbox: None, which: str
) -> None:
    result = _harness(tmp_path, SUPERSEDED, which)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout == b"replaced\n"
    assert b"<unfinished ...>" in result.trace
    assert _outside(result) == [("AF_INET", *OUTSIDE, "EUNKNOWN")], result.trace.decode()


COVERED = """
scratch = sys.argv[1]
os.rename(os.path.join(scratch, 'outputs'), os.path.join(scratch, 'elsewhere'))
print(os.listdir(os.path.join(scratch, 'elsewhere', 'honest')), flush=True)
os.rename(os.path.join(scratch, 'elsewhere'), os.path.join(scratch, 'outputs'))
"""


def test_held_a_hidden_directory_moved_with_its_parent_stays_covered(
    tmp_path: Path, sandbox: None
) -> None:
    (tmp_path / "outputs" / "honest").mkdir(parents=True)
    (tmp_path / "outputs" / "honest" / "mine.json").write_text("{}")
    (tmp_path / "work").mkdir()
    result = _harness(tmp_path / "work", COVERED, str(tmp_path), writable=[tmp_path],
                      hidden=[tmp_path / "outputs" / "honest"])  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout == b"[]\n"


HONEST = """
import asyncio, concurrent.futures, multiprocessing
async def probe():
    try:
        await asyncio.open_connection('127.0.0.1', int(sys.argv[1]))
        return 'connected'
    except OSError as exc:
        return type(exc).__name__
if __name__ == '__main__':
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        print('threads', sum(pool.map(abs, range(100))), flush=True)
    print('asyncio', asyncio.run(probe()), flush=True)
    hit = []
    signal.signal(signal.SIGALRM, lambda *_: hit.append('alarm'))
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    time.sleep(0.3)
    signal.signal(signal.SIGUSR1, lambda *_: hit.append('usr1'))
    os.kill(os.getpid(), signal.SIGUSR1)
    print('signals', hit, flush=True)
    child = subprocess.Popen(['sleep', '30'])
    try:
        child.wait(timeout=0.2)
    except subprocess.TimeoutExpired:
        child.terminate()
    print('terminated', child.wait(), flush=True)
    node = subprocess.run(['node', '-e', 'require("net").connect(+process.argv[1], "127.0.0.1")'
                           '.on("error", e => { console.log(e.code); process.exit(3) })',
                           sys.argv[1]], capture_output=True, text=True)
    print('node', node.stdout.strip(), node.returncode, flush=True)
    sh = subprocess.run(['sh', '-c', 'trap "echo trapped" TERM; kill -TERM $$; yes | head -1'],
                        capture_output=True, text=True)
    print('sh', sh.stdout.split(), sh.returncode, flush=True)
    context = multiprocessing.get_context('spawn')
    queue = context.Queue()
    process = context.Process(target=queue.put, args=('child',))
    process.start()
    print('spawn', queue.get(timeout=10), flush=True)
    process.join()
"""


def test_held_an_honest_harness_s_threads_asyncio_signals_and_node_behave(
    tmp_path: Path, sandbox: None
) -> None:
    if shutil.which("node") is None:
        pytest.skip("no node")
    result = _harness(tmp_path, HONEST, str(PORT))
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.decode().splitlines() == [
        "threads 4950", "asyncio ConnectionRefusedError", "signals ['alarm', 'usr1']",
        "terminated -15", "node ECONNREFUSED 3", "sh ['trapped', 'y'] 0", "spawn child",
    ]  # fmt: skip
    assert _outside(result) == []
    assert {e.process for e in result.ledger} == {"python", "node"}


ENDED = """
how = sys.argv[1]
if how == 'interrupt':
    raise KeyboardInterrupt
if how == 'node':
    os.execvp('node', ['node', '-e', 'process.kill(process.pid, "SIGTERM")'])
os.kill(os.getpid(), getattr(signal, how))
"""


@pytest.mark.parametrize(
    ("how", "status"),
    [("SIGKILL", 137), ("SIGABRT", 134), ("SIGHUP", 129), ("interrupt", 130), ("node", 143)],
)
def test_held_a_harness_ended_by_a_signal_says_which(
    tmp_path: Path, sandbox: None, how: str, status: int
) -> None:
    if how == "node" and shutil.which("node") is None:
        pytest.skip("no node")
    result = _harness(tmp_path, ENDED, how)
    assert result.returncode == status, result.stderr.decode()[-800:]
    assert b"unshare:" not in result.stderr
