"""The sandbox's raw trace and the one parser that turns it into socket-ledger entries.

The sandbox supervisor runs each harness under ``strace -f -Y -ttt -s 0
-e trace=connect,sendto,sendmsg,...`` (``audit._sandbox_inside.STRACE_OPTIONS``), its
output appended (``-A``) to a file whose first line the supervisor wrote before the harness
started: :func:`trace_header`, saying where the entries' times count from, the ledger sequence
number of the first entry and the component. The runner builds the socket ledger from these files
with :func:`trace_entries` and keeps each file as evidence (``network/strace/<name>``, ADR 0017);
the verifier re-parses each with the very same function and requires the ledger to be exactly
their entries, in order: a ledger cut short, with its closing count lowered to match, no longer
agrees with the traces it was built from.

Reading is bounded: lines are taken one at a time under a cap, and a call left unfinished is
remembered per process only up to :data:`MAX_UNFINISHED`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import ValidationError

from bundle_schema.errors import DefectiveBundle
from bundle_schema.models import SocketLedgerEntry
from bundle_schema.roles import TRACE_MEDIA_TYPE

__all__ = [
    "MAX_UNFINISHED",
    "TRACE_MEDIA_TYPE",
    "TraceError",
    "TraceHeader",
    "read_header",
    "trace_entries",
    "trace_header",
    "trace_name",
]

MAX_UNFINISHED = 65536
"""Calls left unfinished at once (one per traced process at most, in a real trace)."""
MAX_LINE = 1 << 20
_HEADER = re.compile(
    r"^# evidence-audit sandbox trace: origin=(?P<origin>\d{1,12}(?:\.\d{1,20})?) "
    r"first_seq=(?P<seq>\d{1,15}) component=(?P<component>[a-z0-9_]{1,64}|-)$"
)
_QUOTED = r'"(?:[^"\\]|\\.)*"'
"""A quoted string as strace writes it (its C escapes, \\" among them), taken whole."""
# An address's fields, with up to three levels of braces inside (AF_RXRPC's transport={sin={...}})
_ADDRESS = f'(?:{_QUOTED}|[^"{{}}])*'
for _ in range(3):  # a brace in the fields holds fields
    _ADDRESS = rf'(?:{_QUOTED}|[^"{{}}]|\{{{_ADDRESS}\}})*'
_TARGET = rf"(?:\{{(?P<addr>{_ADDRESS})\}}|(?P<pointer>0x[0-9a-f]{{1,16}})|(?P<null>NULL))"
"""Where a call goes: an address's fields; the pointer alone, where strace could not read the
address; or none (``NULL``)."""
_CALL = re.compile(
    # a process with no name shows none, its pid padded: the spaces before the time vary
    r"^(?P<pid>\d+)(?:<(?P<comm>[^>]*)>)? +(?P<t>\d+\.\d+) (?P<call>connect|sendto|sendmsg)\("
    r"(?P<args>.*)$"
)
_ARGUMENTS = {
    "connect": re.compile(rf"\d+, {_TARGET}, \d+(?P<rest>.*)$"),
    # the data is not shown (-s 0): "" and its length (a netlink message: ...); the flags hold
    # no comma
    "sendto": re.compile(
        rf"\d+, (?:{_QUOTED}(?:\.\.\.)?|\.\.\.|0x[0-9a-f]{{1,16}}|NULL), \d+, [^,]*, {_TARGET}, "
        r"(?P<length>\d+)(?P<rest>.*)$"
    ),
    # the message header's first fields, or the header's pointer where strace could not read it
    "sendmsg": re.compile(
        rf"\d+, (?:\{{msg_name={_TARGET}, msg_namelen=(?P<length>\d+)"
        r"|(?P<header>0x[0-9a-f]{1,16}|NULL))(?P<rest>.*)$"
    ),
}
"""Each traced call's arguments, up to where it goes (``rest``: the line after it)."""


def _cut(text: str) -> str:
    """``text`` short enough to be an entry's address, whole where it fits."""
    return text if len(text) <= 200 else f"{text[:200]}..."


_RESUMED = re.compile(
    r"^(?P<pid>\d+)(?:<[^>]*>)? +\d+\.\d+ <\.\.\. (?:connect|sendto|sendmsg) resumed>.*?"
    r"= (?P<result>.*)$"
)
_RESULT = re.compile(r"= (?P<code>-?\d+)(?: (?P<errno>E[A-Z0-9]+))?")


class TraceError(DefectiveBundle):
    """The bytes are not a sandbox trace this parser reads; the message says why."""


@dataclass(frozen=True)
class TraceHeader:
    """What the supervisor wrote first: the time origin, the first sequence number, the
    component."""

    origin: float
    first_seq: int
    component: str | None


def trace_header(origin: float, first_seq: int, component: str | None) -> str:
    """The first line of a trace file (with its newline)."""
    return (
        f"# evidence-audit sandbox trace: origin={origin!r} first_seq={first_seq} "
        f"component={component or '-'}\n"
    )


def trace_name(first_seq: int, component: str | None) -> str:
    """The logical name the runner keeps a trace under."""
    return f"network/strace/{first_seq:06d}-{component or 'command'}.txt"


UNREACHABLE = frozenset({"ENETUNREACH", "EHOSTUNREACH"})
"""Outcomes no attempt to this host's own addresses has in the sandbox (its loopback is up, and
``::1`` where IPv6 is off fails ``EADDRNOTAVAIL``): where the kernel found no route, the call
went elsewhere than a loopback address or none, whatever strace read before the kernel did (a
second thread can rewrite the address in between)."""
NONE_SHOWN = "none shown"
"""The address of an attempt strace showed with no address, or none strace counts (netlink),
that the kernel found no route for: an attempt to an unknown address (:data:`UNREACHABLE`)."""
UNREADABLE = "unreadable"
"""The family of an attempt whose address strace could not read (it shows the pointer): where
it went is not known, so it counts as outside the sandbox (ADR 0047)."""
NOT_ATTEMPTS = frozenset({"AF_UNSPEC", "AF_NETLINK"})
"""Families whose connect() is no attempt to reach anything: ``AF_UNSPEC`` dissolves a
socket's association (glibc's resolver does it after each probe of an address), netlink is a
channel to the kernel. Every other family is an attempt, recorded. A send names no netlink
address but the kernel's (``getifaddrs``), and is no attempt either; a send to ``AF_UNSPEC`` is
one (an IPv4 datagram socket takes it for ``AF_INET``)."""


def _attempt(call: str, match: re.Match[str]) -> tuple[str, str, int | None] | None:
    """The family, address and port a traced call's line names (:data:`_ARGUMENTS`), or None
    when it is no attempt: a send that names no address (none, or one of length 0, which the
    kernel takes for none: on a connected socket, whose ``connect()`` is the entry) or one of
    :data:`NOT_ATTEMPTS`. A ``connect()`` to ``NULL``, or an address or message header strace
    could not read, is an attempt to an unknown address."""
    fields = match.groupdict()
    if fields.get("header") is not None:
        return UNREADABLE, fields["header"], None
    if call != "connect" and (fields["null"] is not None or fields["length"] == "0"):
        return None
    if fields["pointer"] is not None:
        return UNREADABLE, fields["pointer"], None
    if fields["null"] is not None:
        return UNREADABLE, "NULL", None
    if call != "connect" and fields["addr"].startswith("sa_family=AF_UNSPEC"):
        return "AF_UNSPEC", fields["addr"], None  # where its bytes say: outside
    return _address(fields["addr"])


def _address(fields: str) -> tuple[str, str, int | None] | None:
    family = re.search(r"sa_family=(AF_[A-Z0-9_]+)", fields)
    if family is None:  # a family strace has no name for: its number
        return UNREADABLE, fields, None
    name = family.group(1)
    port = re.search(r"sin6?_port=htons\((\d+)\)", fields)
    if port and len(port.group(1)) > 5:
        raise TraceError(f"a port of {len(port.group(1))} digits")
    if name == "AF_INET":
        address = re.search(r'inet_addr\("([^"]*)"\)', fields)
    elif name == "AF_INET6":
        address = re.search(r'inet_pton\(AF_INET6, "([^"]*)"', fields)
    elif name == "AF_UNIX":
        address = re.search(r'sun_path=(@?"(?:[^"\\]|\\.)*")', fields)  # \" kept in it
    elif name in NOT_ATTEMPTS:
        return None
    else:  # a family the sandbox does not keep to loopback (AF_VSOCK: the hypervisor's host)
        return name, fields, None
    shown = address.group(1).strip('"') if address else "?"
    return name, shown, int(port.group(1)) if port else None


MAX_PID_DIGITS = 10
"""A pid has at most this many digits (Linux's are below 2**22)."""


def _time(text: str) -> float:
    """A call's time as strace writes it (seconds since the epoch, with microseconds), finite
    and within the header's range."""
    if len(text) > 32 or not math.isfinite(value := float(text)):
        raise TraceError(f"a call time of {len(text)} characters")
    return value


def _outcome(text: str, sends: bool) -> str | None:
    """What a call's result says: ``connected`` (``in-progress``) for a ``connect()``,
    ``sent`` for a send (``sends``) that returned a count, else its error."""
    result = _RESULT.search(text)
    if result is None:
        return None
    if not result.group("code").startswith("-"):
        return "sent" if sends else "connected"
    errno = result.group("errno") or "EUNKNOWN"
    return "in-progress" if errno == "EINPROGRESS" else errno


class _Cut(str):
    """The last line of a trace that a kill (or the trace's limit) cut short."""

    __slots__ = ()


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    pending = b""
    for data in chunks:
        pending += data
        *complete, pending = pending.split(b"\n")
        if len(pending) > MAX_LINE:
            raise TraceError(f"a line is over {MAX_LINE} bytes")
        for line in complete:
            if len(line) > MAX_LINE:
                raise TraceError(f"a line is over {MAX_LINE} bytes")
            yield line.decode("utf-8", "replace")
    if pending:
        yield _Cut(pending.decode("utf-8", "replace"))  # a trace cut by a kill ends mid-line


def _header(line: str | None) -> TraceHeader:
    match = _HEADER.match(line or "")
    if match is None:
        raise TraceError("it does not start with the sandbox supervisor's header line")
    component = match["component"]
    return TraceHeader(
        float(match["origin"]), int(match["seq"]), None if component == "-" else component
    )


def read_header(chunks: Iterable[bytes]) -> TraceHeader:
    """The header of a trace.

    Raises:
        TraceError: the first line is not a supervisor's header.
    """
    return _header(next(_lines(chunks), None))


def trace_entries(chunks: Iterable[bytes]) -> Iterator[SocketLedgerEntry]:
    """The socket-ledger entries of a trace file, given as byte chunks, in order.

    Each ``connect()``, and each ``sendto()`` or ``sendmsg()`` that names where it sends, is
    an entry, and so is any of them the kernel found no route for (:data:`UNREACHABLE`) whatever
    strace read of it. A call split across lines by another process (``<unfinished ...>`` / ``<...
    connect resumed>``) is joined; one never resumed (a limit killed the sandbox) is an entry
    at the end, outcome ``EUNKNOWN``. Lines that are no attempt (:func:`_attempt`) are
    skipped. An attempt of any other family is an entry, its fields as its address, and one
    whose address strace could not read is one of family :data:`UNREADABLE`.

    Raises:
        TraceError: no supervisor's header, a line over the cap, too many unfinished calls.
    """
    lines = _lines(chunks)
    header = _header(next(lines, None))
    seq = header.first_seq
    pending: dict[str, _Call] = {}
    for line in lines:
        resumed = _RESUMED.match(line)
        if resumed and resumed.group("pid") in pending:
            call = pending.pop(resumed.group("pid"))
            outcome = _outcome("= " + resumed.group("result"), call.sends)
        else:
            read = _read(line)
            if read is None:
                continue
            call, rest = read
            if "<unfinished" in rest:
                pending[call.pid] = call
                if len(pending) > MAX_UNFINISHED:
                    raise TraceError(f"over {MAX_UNFINISHED} calls left unfinished")
                continue
            outcome = _outcome(rest, call.sends)
        if not call.shown and outcome not in UNREACHABLE:
            continue  # no attempt: no address, or none that leaves (its connect() is one)
        yield _entry(header, seq, call, outcome)
        seq += 1
    for call in pending.values():  # never resumed: where it went was tried, its end unknown
        if call.shown:
            yield _entry(header, seq, call, None)
            seq += 1


def _read(line: str) -> tuple[_Call, str] | None:
    """The call a traced call's first line shows and the rest of the line after where it goes,
    or None for any other line (or one a kill cut before its address was whole)."""
    line_match = _CALL.match(line)
    if line_match is None:
        return None
    kind, args = line_match["call"], line_match["args"]
    match = _ARGUMENTS[kind].match(args)
    parsed: tuple[str, str, int | None] | None
    if match is None and isinstance(line, _Cut):  # its address never written whole
        return None
    if match is None:  # a form this parser does not know: an attempt to an unknown place
        rest, parsed = args, (UNREADABLE, _cut(f"{kind}({args}"), None)
    else:
        rest, parsed = match["rest"], _attempt(kind, match)
    call = _Call(line_match["pid"], line_match["comm"] or "?", _time(line_match["t"]),
                 parsed or (UNREADABLE, NONE_SHOWN, None), kind != "connect",
                 parsed is not None)  # fmt: skip
    if len(call.pid) > MAX_PID_DIGITS:
        raise TraceError(f"a pid of {len(call.pid)} digits")
    return call, rest


@dataclass(frozen=True, slots=True)
class _Call:
    """A traced call as its first line shows it (``sends``: a send, not a ``connect()``;
    ``shown``: an attempt by what strace read, else one only if the kernel found no route)."""

    pid: str
    comm: str
    when: float
    address: tuple[str, str, int | None]
    sends: bool
    shown: bool


def _entry(header: TraceHeader, seq: int, call: _Call, outcome: str | None) -> SocketLedgerEntry:
    family, host, port = call.address
    try:
        return SocketLedgerEntry(
            schema_version=1,
            seq=seq,
            t=max(0.0, call.when - header.origin),
            pid=int(call.pid),
            process=call.comm[:256],
            family=family,
            address=host[:256],
            port=port,
            outcome=outcome or "EUNKNOWN",
            component=header.component,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TraceError(f"attempt {seq - header.first_seq + 1}: {where}: {first['msg']}") from None
