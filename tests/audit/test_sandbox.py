"""The sandbox: a real network namespace, real strace, the observer as the only way out."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.demo.reference_endpoint import serve
from audit.observer import observe
from audit.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    check_sandbox,
    run_sandboxed,
)
from bundle_schema.roles import TRACE_MEDIA_TYPE
from verify._facts import ledger_problem, off_sandbox, outside_attempt
from verify.socket_trace import MAX_LINE, TraceError, read_header, trace_entries, trace_header

PORT = 18080
HEADER = b"# evidence-audit sandbox trace: origin=1000.0 first_seq=0 component=coding\n"
LIMITS = SandboxLimits(inactivity_s=20, wall_s=60)

HARNESS = f"""
import json, socket, subprocess, sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:{PORT}/v1/models", timeout=10) as response:
    print(json.loads(response.read())["data"][0]["id"])
s = socket.socket()
print("outside:", s.connect_ex(("93.184.216.34", 443)))
child = ("import socket; s = socket.socket(socket.AF_INET6); "
         "print('child:', s.connect_ex(('2606:4700::1', 53)))")
subprocess.run([sys.executable, "-c", child])
"""


def test_the_ledger_joins_interrupted_calls() -> None:
    text = (
        "101<node> 1000.500000 connect(3, {sa_family=AF_INET, sin_port=htons(443), "
        'sin_addr=inet_addr("10.1.2.3")}, 16 <unfinished ...>\n'
        '102<python3> 1000.600000 connect(4, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) '
        "= 0\n"
        "101<node> 1000.700000 <... connect resumed>) = -1 EINPROGRESS "
        "(Operation now in progress)\n"
        "103<curl> 1001.000000 connect(5, {sa_family=AF_INET6, sin6_port=htons(80), "
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) '
        "= -1 ECONNREFUSED (Connection refused)\n"
        "104<x> 1001.100000 connect(6, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) "
        "= 0\n"
    )
    header = trace_header(1000.0, 5, "hermes").encode()
    entries = list(trace_entries([header, text.encode()]))
    assert [(e.seq, e.pid, e.process, e.family, e.address, e.port, e.outcome) for e in entries] == [
        (5, 102, "python3", "AF_UNIX", "/run/x.sock", None, "connected"),
        (6, 101, "node", "AF_INET", "10.1.2.3", 443, "in-progress"),
        (7, 103, "curl", "AF_INET6", "::1", 80, "ECONNREFUSED"),
    ]  # fmt: skip
    assert entries[1].t == pytest.approx(0.5)
    assert all(e.component == "hermes" for e in entries)


def test_every_attempt_is_an_entry_whatever_its_family_or_however_strace_shows_it() -> None:
    """ADR 0047: a family the sandbox does not keep to loopback, a family strace has no name
    for, an address strace could not read: each an entry, and outside the sandbox; a
    disconnect (AF_UNSPEC, glibc's resolver after each probe) and netlink are no attempts."""
    text = (
        "7<h> 1.000000 connect(3, {sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=9, "
        "svm_flags=0}, 16) = -1 ENODEV (No such device)\n"
        "7<h> 1.100000 connect(4, 0x7f3a5c001000, 16) = -1 ENETUNREACH (Network is unreachable)\n"
        "7<h> 1.200000 connect(5, NULL, 0) = -1 EFAULT (Bad address)\n"
        '7<h> 1.300000 connect(6, {sa_family=0x2a /* AF_??? */, sa_data="\\x00"}, 16) = 0\n'
        '7<h> 1.400000 connect(7, {sa_family=AF_UNSPEC, sa_data="\\x00"}, 16) = 0\n'
        "7<h> 1.500000 connect(8, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0\n"
    )
    entries = list(trace_entries([trace_header(1.0, 0, "coding").encode(), text.encode()]))
    assert [(e.family, e.address, e.port, e.outcome) for e in entries] == [
        ("AF_VSOCK", "sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=9, svm_flags=0",
         None, "ENODEV"),
        ("unreadable", "0x7f3a5c001000", None, "ENETUNREACH"),
        ("unreadable", "NULL", None, "EFAULT"),
        ("unreadable", 'sa_family=0x2a /* AF_??? */, sa_data="\\x00"', None, "connected"),
    ]  # fmt: skip
    assert all(off_sandbox(e) and ledger_problem(e) is None for e in entries)
    assert outside_attempt(entries[0]) == (
        "tried AF_VSOCK {sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=9, svm_flags=0} "
        "(ENODEV)"
    )
    assert outside_attempt(entries[1]) == (
        "tried an address strace could not read (0x7f3a5c001000, ENETUNREACH)"
    )


def test_a_send_that_names_an_address_is_an_entry_and_one_that_names_none_is_not() -> None:
    """ADR 0047 point 15: a datagram, or TCP Fast Open's data, reaches an address with no
    connect(); a sendto() or sendmsg() that names one is an entry (``sent`` when it went), one
    on a connected socket names none and is not (its connect() is), and one whose address or
    message header strace could not read is an attempt to an unknown address (but one of
    length 0: the kernel takes it for none). Lines as strace 6.1 writes them with ``-s 0``."""
    text = (
        '9<h> 2.000000 sendto(3, ""..., 7, 0, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("93.184.216.34")}, 16) = -1 ENETUNREACH (Network is unreachable)\n'
        '9<h> 2.100000 sendto(3, ""..., 2, 0, {sa_family=AF_INET, sin_port=htons(9), '
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 2\n'
        '9<h> 2.200000 sendto(4, ""..., 312, MSG_NOSIGNAL, NULL, 0) = 312\n'
        '9<h> 2.300000 sendto(4, "", 0, 0, 0x10, 16) = -1 EFAULT (Bad address)\n'
        "9<h> 2.400000 sendmsg(3, {msg_name={sa_family=AF_INET6, sin6_port=htons(123), "
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), '
        "sin6_scope_id=0}, msg_namelen=28, msg_iov=[...], msg_iovlen=2, msg_controllen=0, "
        "msg_flags=0}, 0) = -1 ENETUNREACH (Network is unreachable)\n"
        "9<h> 2.500000 sendmsg(4, {msg_name=NULL, msg_namelen=0, msg_iov=[...], msg_iovlen=1, "
        "msg_controllen=0, msg_flags=0}, MSG_NOSIGNAL) = 5\n"
        "9<h> 2.600000 sendmsg(4, 0x7ffd5a1c, 0) = -1 EFAULT (Bad address)\n"
        "9<h> 2.610000 sendmsg(4, {msg_name=0x7fde5b4120b0, msg_namelen=0, msg_iov=[...], "
        "msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = 2\n"
        '9<h> 2.620000 sendto(4, ""..., 2, 0, 0x7fde5b4120b0, 0) = -1 EINVAL (Invalid argument)\n'
        "9<h> 2.630000 sendmsg(4, {msg_name=0x7fde5b4120b0, msg_namelen=16, msg_iov=[...], "
        "msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = -1 EFAULT (Bad address)\n"
        '8<n> 2.700000 sendto(5, ""..., 5, MSG_FASTOPEN, {sa_family=AF_INET, '
        'sin_port=htons(80), sin_addr=inet_addr("10.0.0.1")}, 16 <unfinished ...>\n'
        '9<h> 2.800000 sendto(6, ""..., 3, 0, {sa_family=AF_UNIX, '
        'sun_path="/run/systemd/journal/socket"}, 30) = 3\n'
        "8<n> 2.900000 <... sendto resumed>) = -1 ENETUNREACH (Network is unreachable)\n"
        "9<h> 3.000000 sendmmsg(3, [...], 2, 0) = -1 ENOSYS (Function not implemented) "
        "(INJECTED)\n"
    )
    entries = list(trace_entries([trace_header(2.0, 0, "coding").encode(), text.encode()]))
    assert [(e.pid, e.family, e.address, e.port, e.outcome) for e in entries] == [
        (9, "AF_INET", "93.184.216.34", 53, "ENETUNREACH"),
        (9, "AF_INET", "127.0.0.1", 9, "sent"),
        (9, "unreadable", "0x10", None, "EFAULT"),
        (9, "AF_INET6", "2001:db8::1", 123, "ENETUNREACH"),
        (9, "unreadable", "0x7ffd5a1c", None, "EFAULT"),
        (9, "unreadable", "0x7fde5b4120b0", None, "EFAULT"),
        (9, "AF_UNIX", "/run/systemd/journal/socket", None, "sent"),
        (8, "AF_INET", "10.0.0.1", 80, "ENETUNREACH"),
    ]  # fmt: skip
    assert [off_sandbox(e) for e in entries] == [True, False, True, True, True, True, True, True]


def test_an_attempt_the_kernel_found_no_route_for_is_outside_whatever_strace_read() -> None:
    """No loopback address, nor none, is unreachable in the sandbox: a call that failed so went
    elsewhere than strace read (a second thread rewrote its address after strace read it).
    A traced call's line in a form the parser does not know is an attempt to an unknown place;
    one a kill cut short is not read."""
    text = (
        "9<h> 1.100000 sendmsg(3, {msg_name=NULL, msg_namelen=0, msg_iov=[...], msg_iovlen=1, "
        "msg_controllen=0, msg_flags=0}, 0) = -1 ENETUNREACH (Network is unreachable)\n"
        "9<h> 1.200000 connect(4, {sa_family=AF_INET, sin_port=htons(9), "
        'sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ENETUNREACH (Network is unreachable)\n'
        "9<h> 1.300000 sendto(5, ..., 20, 0, {sa_family=AF_NETLINK, nl_pid=0, "
        "nl_groups=00000000}, 12) = -1 EHOSTUNREACH (No route to host)\n"
        "9<h> 1.400000 sendto(5, [{nlmsg_len=20}], 20, 0, NULL, 0) = 20\n"
        "9<h> 1.500000 sendto(6, ..., 20, 0, {sa_family=AF_NETLINK, nl_pid=0, "
        "nl_groups=00000000}, 12) = 20\n"
        "9<h> 1.600000 connect(7, {sa_family=AF_INET, sin_port=htons(9), sin_add"
    )
    entries = list(trace_entries([trace_header(1.0, 0, "coding").encode(), text.encode()]))
    assert [(e.family, e.address, e.outcome) for e in entries] == [
        ("unreadable", "none shown", "ENETUNREACH"),
        ("AF_INET", "127.0.0.1", "ENETUNREACH"),
        ("unreadable", "none shown", "EHOSTUNREACH"),
        ("unreadable", "sendto(5, [{nlmsg_len=20}], 20, 0, NULL, 0) = 20", "sent"),
    ]  # fmt: skip
    assert all(off_sandbox(e) for e in entries)
    assert "the kernel sent it elsewhere" in outside_attempt(entries[1])


def test_output_past_its_limit_ends_the_command_and_is_kept_to_it(tmp_path: Path) -> None:
    """A harness that prints without end is killed at the output limit, stdout kept to it."""
    limits = SandboxLimits(inactivity_s=20, wall_s=60, output_bytes=100_000)
    flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n"
    result = run_sandboxed(
        [sys.executable, "-c", flood], serve=None, port=PORT, cwd=tmp_path, limits=limits
    )
    assert (result.timeout, result.returncode) == ("output", None)
    assert result.stdout == b"x" * 100_000


MAPPED = """
import socket
for host in ("::ffff:127.0.0.1", "::ffff:0.0.0.0", "::ffff:93.184.216.34"):
    print(socket.socket(socket.AF_INET6).connect_ex((host, 9)), flush=True)
"""


def test_a_dual_stack_socket_s_mapped_loopback_is_loopback(tmp_path: Path) -> None:
    """A dual-stack socket (a Java client's) names an IPv4 peer as ``::ffff:a.b.c.d``:
    ``::ffff:127.0.0.1`` is the sandbox's loopback, not outside; a mapped outside address is
    outside."""
    import errno  # noqa: PLC0415

    result = run_sandboxed(
        [sys.executable, "-c", MAPPED], serve=None, port=PORT, cwd=tmp_path, limits=LIMITS
    )
    assert result.returncode == 0, result.stderr.decode()
    refused, unreachable = str(errno.ECONNREFUSED), str(errno.ENETUNREACH)
    assert result.stdout.decode().split() == [refused, refused, unreachable]
    assert [(e.address, off_sandbox(e)) for e in result.ledger] == [
        ("::ffff:127.0.0.1", False), ("::ffff:0.0.0.0", False), ("::ffff:93.184.216.34", True)
    ]  # fmt: skip


SENDS = """
import ctypes, socket
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(("127.0.0.1", 9999))  # the sandbox's own loopback
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print("loopback", udp.sendto(b"hi", ("127.0.0.1", 9999)))
try:
    udp.sendmsg([b"a", b"b"], [], 0, ("93.184.216.34", 123))
except OSError as exc:
    print("outside", exc.errno)
joined = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
joined.connect(("127.0.0.1", 9999))
print("joined", joined.send(b"x"), joined.sendmsg([b"y"]))
libc = ctypes.CDLL(None, use_errno=True)
print("sendmmsg", libc.sendmmsg(udp.fileno(), None, 0, 0), ctypes.get_errno())
"""


def test_the_sandbox_records_the_sends_that_name_an_address(tmp_path: Path) -> None:
    import errno  # noqa: PLC0415

    result = run_sandboxed(
        [sys.executable, "-c", SENDS], serve=None, port=PORT, cwd=tmp_path, limits=LIMITS
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == [
        "loopback 2",
        f"outside {errno.ENETUNREACH}",
        "joined 1 1",
        f"sendmmsg -1 {errno.ENOSYS}",  # absent: strace shows a batch's addresses in full only
    ]
    assert [(e.family, e.address, e.port, e.outcome) for e in result.ledger] == [
        ("AF_INET", "127.0.0.1", 9999, "sent"),
        ("AF_INET", "93.184.216.34", 123, "ENETUNREACH"),
        ("AF_INET", "127.0.0.1", 9999, "connected"),  # the connected socket's sends are not entries
    ]


FLOOD = """
import socket
for _ in range(100000):
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9999))
"""


def test_a_trace_past_its_limit_ends_the_command_and_is_kept_to_it(tmp_path: Path) -> None:
    """A harness that makes strace write without end (a flood of sends, or of control messages
    in each, 100 MB a second) is killed at the trace's limit, its trace kept to that size and
    read as far as it goes; it does not fill the runner's memory."""
    limits = SandboxLimits(inactivity_s=20, wall_s=60, trace_bytes=200_000)
    result = run_sandboxed(
        [sys.executable, "-c", FLOOD], serve=None, port=PORT, cwd=tmp_path, limits=limits
    )
    assert (result.timeout, result.returncode) == ("trace", None)
    header = result.trace.split(b"\n", 1)[0]
    assert len(result.trace) == len(header) + 1 + 200_000
    assert 500 < len(result.ledger) < 2000  # each about 150 bytes
    assert {(e.address, e.outcome) for e in result.ledger} <= {
        ("127.0.0.1", "sent"), ("127.0.0.1", "EUNKNOWN")
    }  # fmt: skip
    assert list(trace_entries([result.trace])) == list(result.ledger)


def test_the_observer_is_the_only_way_out_and_every_attempt_is_recorded(tmp_path: Path) -> None:
    with serve() as endpoint, observe(endpoint.url) as observer:
        observer.component = "hermes"
        result = run_sandboxed(
            [sys.executable, "-c", HARNESS], serve=observer.serving, port=PORT,
            cwd=tmp_path, limits=LIMITS, component="hermes",
        )  # fmt: skip
        exchanges = observer.exchanges()
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "reference-model-q8_0"
    assert lines[1] == "outside: 101"  # ENETUNREACH: no route out of the namespace
    assert lines[2] == "child: 101"
    attempts = {(e.family, e.address, e.port, e.outcome) for e in result.ledger}
    # urllib connects with a timeout, so non-blocking: the kernel says "in progress".
    assert attempts & {("AF_INET", "127.0.0.1", PORT, o) for o in ("connected", "in-progress")}
    assert ("AF_INET", "93.184.216.34", 443, "ENETUNREACH") in attempts
    assert ("AF_INET6", "2606:4700::1", 53, "ENETUNREACH") in attempts
    assert len({e.pid for e in result.ledger if e.family != "AF_UNIX"}) >= 2  # the child too
    assert [e.seq for e in result.ledger] == list(range(len(result.ledger)))
    assert [(e.method, e.path, e.component) for e in exchanges] == [("GET", "/v1/models", "hermes")]


OWN_WAY_OUT = f"""
import os, socket
sockets = []
for fd in sorted(int(fd) for fd in os.listdir("/proc/self/fd")):
    try:
        if os.readlink(f"/proc/self/fd/{{fd}}").startswith("socket:"):
            sockets.append(fd)
    except FileNotFoundError:  # the directory listing's own descriptor
        pass
print("sockets held:", sockets)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", {PORT}))
    print("bound")
except OSError as exc:
    print("bind:", exc.errno)
"""


def test_the_harness_holds_no_socket_of_the_sandbox_and_cannot_take_the_model_s_port(
    tmp_path: Path,
) -> None:
    # The observer accepts on the namespace's listening socket itself (ADR 0034): neither it nor
    # the channel that carried it reaches the command, and the port stays taken, so a harness
    # cannot answer its own requests in the model's place.
    import errno  # noqa: PLC0415

    with serve() as endpoint, observe(endpoint.url) as observer:
        result = run_sandboxed(
            [sys.executable, "-c", OWN_WAY_OUT], serve=observer.serving, port=PORT,
            cwd=tmp_path, limits=LIMITS,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == [
        "sockets held: []",
        f"bind: {errno.EADDRINUSE}",
    ]


def test_the_command_stops_for_strace_at_connect_only(tmp_path: Path) -> None:
    # strace --seccomp-bpf: the command's processes (a child too) run under strace's seccomp
    # filter, which stops them for the tracer at connect() only; without it every system call
    # of a harness would be two ptrace stops (about 40 us on this machine)
    status = (
        "import re, subprocess, sys\n"
        "field = lambda: re.search(r'Seccomp:\\s*(\\d)', open('/proc/self/status').read())[1]\n"
        "print(field())\n"
        "subprocess.run([sys.executable, '-c', \"import re; print(re.search("
        "r'Seccomp:\\s*(\\d)', open('/proc/self/status').read())[1])\"])\n"
    )
    result = run_sandboxed(
        [sys.executable, "-c", status], serve=None, port=PORT, cwd=tmp_path,
        limits=LIMITS,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().split() == ["2", "2"]  # SECCOMP_MODE_FILTER, both processes


def test_without_an_observer_the_model_s_port_refuses(tmp_path: Path) -> None:
    harness = f"import socket; print(socket.socket().connect_ex(('127.0.0.1', {PORT})))"
    result = run_sandboxed(
        [sys.executable, "-c", harness], serve=None, port=PORT, cwd=tmp_path,
        limits=LIMITS,
    )  # fmt: skip
    import errno  # noqa: PLC0415

    assert result.stdout.decode().strip() == str(errno.ECONNREFUSED)


def test_the_raw_trace_is_kept_and_re_parses_to_the_ledger(tmp_path: Path) -> None:
    with serve() as endpoint, observe(endpoint.url) as observer:
        result = run_sandboxed(
            [sys.executable, "-c", HARNESS], serve=observer.serving, port=PORT,
            cwd=tmp_path, limits=LIMITS, component="hermes", first_seq=7,
        )  # fmt: skip
    assert result.trace.startswith(b"# evidence-audit sandbox trace: origin=")
    assert result.trace_name == "network/strace/000007-hermes.txt"
    assert result.evidence() == {result.trace_name: (result.trace, TRACE_MEDIA_TYPE)}
    header = read_header([result.trace])
    assert (header.first_seq, header.component) == (7, "hermes")
    # the verifier's parser, in chunks of any size, gives the ledger the runner recorded
    chunks = [result.trace[i : i + 37] for i in range(0, len(result.trace), 37)]
    assert tuple(trace_entries(chunks)) == result.ledger
    assert [e.seq for e in result.ledger] == list(range(7, 7 + len(result.ledger)))


@pytest.mark.parametrize(
    ("trace", "reason"),
    [
        (b'1 1.0 connect(3, {sa_family=AF_UNIX, sun_path="/x"}, 5) = 0\n', "header"),
        (HEADER + b'0 1.0 connect(3, {sa_family=AF_UNIX, sun_path="/x"}, 5) = 0\n', "pid"),
        (HEADER + b"x" * (MAX_LINE + 1), "over"),
    ],
)
def test_a_trace_the_parser_cannot_read_is_refused_with_a_reason(trace: bytes, reason: str) -> None:
    with pytest.raises(TraceError, match=reason):
        list(trace_entries([trace]))


def test_silence_past_the_inactivity_limit_kills_the_group(tmp_path: Path) -> None:
    result = run_sandboxed(
        [sys.executable, "-c", "import time; print('start', flush=True); time.sleep(60)"],
        serve=None, port=PORT, cwd=tmp_path,
        limits=SandboxLimits(inactivity_s=2, wall_s=30),
    )  # fmt: skip
    assert (result.returncode, result.timeout) == (None, "inactivity")
    assert 0.5 <= result.max_inactivity_s < 10
    assert result.stdout == b"start\n"


QUIET_ASKER = f"""
import time, urllib.request
print("started", flush=True)  # the interpreter's start is behind it, however slow
for _ in range(20):  # 6 s of requests, nothing printed
    with urllib.request.urlopen("http://127.0.0.1:{PORT}/v1/models", timeout=10) as response:
        response.read()
    time.sleep(0.3)
"""


@pytest.mark.parametrize("counted", [True, False])
def test_asking_the_model_is_activity_when_the_observer_counts_it(
    tmp_path: Path, counted: bool
) -> None:
    """A harness that prints nothing until it ends (benchlocal-cli with ``--output json``)
    is not silent while it talks to the model through the observer."""
    with serve() as endpoint, observe(endpoint.url) as observer:
        result = run_sandboxed(
            [sys.executable, "-c", QUIET_ASKER], serve=observer.serving, port=PORT,
            cwd=tmp_path, limits=SandboxLimits(inactivity_s=3, wall_s=60),
            active=(lambda: observer.last_activity) if counted else None,
        )  # fmt: skip
        asked = len(observer.exchanges())
    assert result.stdout == b"started\n", result.stderr
    if counted:
        assert (result.returncode, result.timeout, asked) == (0, None, 20), result.stderr
    else:
        assert (result.returncode, result.timeout) == (None, "inactivity")
        assert asked < 20


def test_running_past_the_wall_kills_the_group(tmp_path: Path) -> None:
    chatty = "import time\nwhile True:\n    print('.', flush=True)\n    time.sleep(0.05)"
    result = run_sandboxed(
        [sys.executable, "-c", chatty], serve=None, port=PORT,
        cwd=tmp_path, limits=SandboxLimits(inactivity_s=5, wall_s=0.8),
    )  # fmt: skip
    assert (result.returncode, result.timeout) == (None, "wall")
    assert 0.8 <= result.wall_s < 10
    assert result.max_inactivity_s < 5


def test_a_harness_that_exits_non_zero(tmp_path: Path) -> None:
    result = run_sandboxed(
        [sys.executable, "-c", "import sys; sys.stderr.write('broken'); sys.exit(3)"],
        serve=None, port=PORT, cwd=tmp_path,
        limits=LIMITS,
    )  # fmt: skip
    assert (result.returncode, result.timeout, result.stderr) == (3, None, b"broken")


def test_no_sandbox_without_its_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("unshare", "ip"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(SandboxUnavailable, match="strace is not installed"):
        check_sandbox()


def test_no_sandbox_with_a_strace_that_cannot_trace_connect_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an strace before 5.3 has no --seccomp-bpf: refused before any harness runs, with why
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("unshare", "ip", "mount", "true"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    old = tools / "strace"
    old.write_text("#!/bin/sh\necho \"strace: unrecognized option '--seccomp-bpf'\" >&2\nexit 1\n")
    old.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(SandboxUnavailable, match=r"needs strace 5\.3 or later\): strace: unrec"):
        check_sandbox()


def _pids_with(marker: str) -> list[int]:
    """The ``python -c ... MARKER`` processes, as this process sees them (not the sandbox's
    own processes whose command lines end with theirs: unshare, strace)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                if len(argv) == 4 and argv[1] == b"-c" and argv[3] == marker.encode():
                    pids.append(int(entry.name))
    return pids


def test_a_supervisor_that_fails_while_the_command_runs_leaves_no_process(tmp_path: Path) -> None:
    # serving the namespace's socket fails once the command has started: the error reaches the
    # caller, and the command (and everything in the namespace) is gone
    started = tmp_path / "started"
    marker = f"evidence-audit-test-{os.getpid()}-{time.monotonic_ns()}"
    command = f"import time; open({str(started)!r}, 'w').write('up'); time.sleep(60)"
    found: list[int] = []

    @contextlib.contextmanager
    def failing(listener: socket.socket) -> Iterator[None]:
        listener.close()
        deadline = time.monotonic() + 30
        while not started.exists() or not started.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        # its pid as this process sees it (the sandbox has a PID namespace and a /proc of its
        # own): the process whose command line holds the marker
        found.extend(_pids_with(marker))
        raise RuntimeError("the observer is gone")
        yield  # pragma: no cover

    with pytest.raises(RuntimeError, match="the observer is gone"):
        run_sandboxed(
            [sys.executable, "-c", command, marker], serve=failing, port=PORT, cwd=tmp_path,
            limits=LIMITS,
        )  # fmt: skip
    (pid,) = found
    status = Path(f"/proc/{pid}/status")
    deadline = time.monotonic() + 10
    while status.exists() and "State:\tZ" not in status.read_text():
        assert time.monotonic() < deadline, "the command outlived its supervisor"
        time.sleep(0.05)


HOST_SOCKET = """
import os, socket, sys
print(sorted(os.listdir("/run")))
s = socket.socket(socket.AF_UNIX)
print(s.connect_ex(sys.argv[1]))
"""


def test_the_host_s_sockets_in_run_are_out_of_the_sandbox_s_reach(tmp_path: Path) -> None:
    """A daemon's socket in the host's /run (Docker's, D-Bus's), reachable across network
    namespaces, is not there for the harness: the sandbox's /run is an empty tmpfs of its own
    mount namespace. The same command outside the sandbox reaches it (the control)."""
    run = Path("/run")
    if not os.access(run, os.W_OK):
        pytest.skip("/run is not writable here: no host socket can be made there")
    path = run / f"evidence-audit-test-{os.getpid()}-{time.monotonic_ns()}.sock"
    with socket.socket(socket.AF_UNIX) as daemon:
        daemon.bind(str(path))
        try:
            daemon.listen(1)
            outside = subprocess.run(
                [sys.executable, "-c", HOST_SOCKET, str(path)], capture_output=True, check=True
            )
            assert outside.stdout.decode().splitlines()[1] == "0"  # the control: it is there
            result = run_sandboxed(
                [sys.executable, "-c", HOST_SOCKET, str(path)], serve=None, port=PORT,
                cwd=tmp_path, limits=LIMITS,
            )  # fmt: skip
        finally:
            path.unlink()
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == ["[]", "2"]  # an empty /run; ENOENT
    attempts = [(e.family, e.address, e.outcome) for e in result.ledger]
    assert attempts == [("AF_UNIX", str(path), "ENOENT")]
    assert Path("/run").exists() and any(Path("/run").iterdir())  # the host's /run untouched


def test_the_sandbox_hides_the_directories_the_verifier_counts() -> None:
    """The runtime directories are named twice, in the sandbox's inside part (standard library
    only) and in the verifier (separate code): what the one hides is what the other counts."""
    from audit import _sandbox_inside  # noqa: PLC0415
    from verify import _facts  # noqa: PLC0415

    assert _sandbox_inside.RUNTIME_DIRS == _facts.RUNTIME_DIRS
