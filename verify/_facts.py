"""The small facts the gates and cross-checks read from huge records (ADR 0012).

A transport log can hold a gigabyte of bodies and streamed chunks, a socket ledger a million
attempts. The gates read little of either: an exchange's ids, route, status and times, whether
its request carries the reasoning serialization, the models its reply names, whether the reply
holds reasoning, its visible chunks and the engine fingerprints it carries; a ledger's length,
its first gap or non-loopback attempt, and its incoherent entries. This module computes those
facts once per exchange and in one pass over a ledger, so that the bounded path (``audit
verify``) keeps them instead of every parsed document, and the full path
(``verify_with_evidence``, ``audit score gx10``) computes the very same facts from the
documents it keeps. Both paths run the same gates on the same facts,
so their verdicts are the same bytes.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import PrivateAttr

from bundle_schema.canonical import MAX_DEPTH, depth_of
from bundle_schema.models import (
    Body,
    ReasoningSerialization,
    RunConfig,
    SocketLedgerEntry,
    TransportExchange,
)
from bundle_schema.roles import REFERENCE_HEADER
from pins import PROBE_CONTRACTS
from verify.infermark import InfermarkReading, body_digest, infermark_reading
from verify.replies import (
    body_bytes,
    body_json,
    is_completion,
    last_user_message,
    question_digest,
    read_exchange,
    reasoning_level,
    request_digest,
    request_reasoning,
    runtime_name,
)
from verify.socket_trace import UNREACHABLE, UNREADABLE
from verify.sparkbench import SparkReply, spark_reply

__all__ = [
    "PROBE_PROMPTS",
    "RUNTIME_DIRS",
    "LedgerFacts",
    "LedgerTally",
    "ReplyFacts",
    "RequestFacts",
    "SlimExchange",
    "asks_a_probe",
    "closing_problem",
    "host_socket",
    "infermark_facts",
    "infermark_payload",
    "is_loopback",
    "ledger_facts",
    "ledger_problem",
    "off_sandbox",
    "outside_attempt",
    "reply_facts",
    "request_facts",
    "slim_exchange",
    "spark_facts",
]

_MISSING = object()


@dataclass(frozen=True, slots=True)
class ReplyFacts:
    """What the gates read of one reply: the first two distinct models it names (enough to find
    the first that is not the runtime model, whichever that is), whether it holds reasoning,
    how many visible chunks it streamed and the time of the first, and the distinct
    ``system_fingerprint`` values it carries (a few kept, the rest counted)."""

    models: tuple[str, ...]
    contaminated: bool
    visible: int
    first_visible: float | None
    generated: bool = False
    """Whether the reply holds generated text or reasoning (a completion's reply, whatever the
    path it was sent to)."""
    fingerprints: tuple[str, ...] = ()
    """The distinct ``system_fingerprint`` values its body and streamed events carry, the
    first few in order (``FINGERPRINTS_KEPT``); empty when it names none."""
    more_fingerprints: int = 0
    """How many more distinct fingerprints it carried than are kept."""
    last_chunk: float = 0.0
    """When its last streamed chunk came, seconds after the request started (0: none)."""
    answer: bytes | None = None
    """What a client takes from it as the answer and its cost, as a digest
    (:func:`verify.replies.answer_digest`; None for a stream or a reply without them)."""
    answers: tuple[bytes, ...] = ()
    """Every digest a harness's copy of it is found by (:func:`verify.replies.answer_keys`;
    none for a stream)."""
    kept: bytes | None = None
    """The digest of it as benchlocal-cli keeps a reply (:func:`verify.replies.kept_digest`;
    None for a stream)."""
    truncated: bool = False
    """Whether it says it stopped at its length limit (:attr:`verify.replies.Reply.truncated`)."""


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """Of one request, under a serialization and wanted policy: whether it carries the
    serialization's value at its path, and the first other reasoning switch set against it."""

    key: tuple[str, str, bool]
    carries: bool
    conflict: str | None


def reply_facts(exchange: TransportExchange) -> ReplyFacts:
    """The reply facts of an exchange (stored ones for a slim exchange)."""
    if isinstance(exchange, SlimExchange):
        return exchange._reply
    reply = read_exchange(exchange)
    models: list[str] = []
    for model in reply.models:
        if model not in models:
            models.append(model)
            if len(models) == 2:  # the runtime model and one other
                break
    times = reply.visible_times
    generated = bool(reply.content.strip()) or reply.contaminated
    return ReplyFacts(
        tuple(models),
        reply.contaminated,
        len(times),
        times[0] if times else None,
        generated,
        reply.fingerprints,
        reply.more_fingerprints,
        max((chunk.t for chunk in exchange.chunks), default=0.0),
        reply.answer,
        reply.answers,
        reply.kept,
        reply.truncated,
    )


def _key(serialization: ReasoningSerialization, wanted: bool) -> tuple[str, str, bool]:
    return (serialization.path, repr(serialization.value), wanted)


def request_facts(
    exchange: TransportExchange,
    serialization: ReasoningSerialization,
    wanted: bool,
    request: Any = _MISSING,
) -> RequestFacts:
    """The request facts of an exchange under ``serialization`` and the wanted policy (its
    request body's JSON value ``request`` when already parsed)."""
    key = _key(serialization, wanted)
    if isinstance(exchange, SlimExchange) and exchange._request is not None:
        if exchange._request.key != key:  # pragma: no cover - slimmed under the run's config
            raise ValueError("a slim exchange was reduced under another reasoning policy")
        return exchange._request
    if request is _MISSING:
        request = body_json(exchange.request_body)
    carries = serialization.carried_by(request)
    asked = reasoning_level(serialization.value) if wanted else None
    conflict = next(
        (
            p
            for p, on, level in request_reasoning(request)
            if p != serialization.path
            and (on != wanted or (on and asked is not None and level not in (None, asked)))
        ),
        None,
    )
    return RequestFacts(key, carries, conflict)


class SlimExchange(TransportExchange):
    """An exchange reduced to what the gates read: its fields but bodies, chunks and headers
    (bar the reference header), with its reply and request facts computed before they went. A
    model list keeps its response body as the distinct model ids it lists."""

    _reply: ReplyFacts = PrivateAttr()
    _request: RequestFacts | None = PrivateAttr(default=None)
    _probe: bool = PrivateAttr(default=False)
    _digests: frozenset[tuple[str, str]] = PrivateAttr(default=frozenset())
    _asked: tuple[bytes | None, bytes | None] = PrivateAttr(default=(None, None))
    _infermark: InfermarkReading | None = PrivateAttr(default=None)
    _payload: bytes | None = PrivateAttr(default=None)
    _spark: SparkReply | None = PrivateAttr(default=None)


PERFORMANCE = "performance"
"""The component whose exchanges are Infermark's requests, read as Infermark reads them."""


def infermark_facts(exchange: TransportExchange) -> InfermarkReading | None:
    """A performance exchange as Infermark's client counts it (the stored reading of a slim
    one; None for a slim exchange of another component)."""
    if isinstance(exchange, SlimExchange):
        return exchange._infermark
    return infermark_reading(exchange)


SPARK_COMPONENTS = frozenset({"coding", "reliability"})
"""The components whose exchanges may be Spark Bench's code scenarios, read as it grades them."""


def spark_facts(exchange: TransportExchange) -> SparkReply | None:
    """An exchange of :data:`SPARK_COMPONENTS` as Spark Bench reads and grades a code
    scenario's answer (:func:`verify.sparkbench.spark_reply`; stored for a slim one, None for a
    slim one of another component)."""
    if isinstance(exchange, SlimExchange):
        return exchange._spark
    return spark_reply(exchange)


def infermark_payload(exchange: TransportExchange) -> bytes | None:
    """A digest of the request's body bytes as recorded (:func:`verify.infermark.body_digest`;
    stored for a slim one), to hold a performance exchange to the pinned command's request."""
    if isinstance(exchange, SlimExchange):
        return exchange._payload
    return body_digest(body_bytes(exchange.request_body))


_HEX_DIGEST = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
MAX_REPORTED = 1024
"""The most digests one identity reply is read for (an engine's list of many models; kept
while the transport log is read, so bounded)."""
_NAMING = ("id", "name", "model")
"""The members by which an identity reply, or an entry of its list, names a model."""
MAX_NAME = 256
"""The longest model name kept with a reported digest (as a reply's model names are cut)."""
_NO_MODEL = ""
"""What an object names when its naming members name different models, or a name too long."""


def reported_digests(exchange: TransportExchange) -> frozenset[tuple[str, str]]:
    """The SHA-256 digests (64 lowercase hex digits) an identity reply reports, each with the
    model it reports it for, ``(model, hex)``, the model by its runtime name. An identity reply
    is the JSON response body of an answered request that generates nothing; none for a
    completion or an error, or a body nested past :data:`MAX_DEPTH`. A digest is a model's when
    it is in that model's entry of a listed reply (``data`` or ``models``: an entry that names
    it by its ``id``, ``name`` and ``model``, as ``/v1/models`` and Ollama's ``/api/tags`` list
    them), else anywhere in a reply to a request that names the model (Ollama's ``/api/show``)
    or in a reply that names it at its top; never in an object inside that names another
    model, nor where the members of one object name different models, nor a digest the request
    itself holds (a reply may echo its request). A digest elsewhere is no model's."""
    if isinstance(exchange, SlimExchange):
        return exchange._digests
    if exchange.status != 200 or is_completion(exchange):
        return frozenset()
    reply = _shallow(body_json(exchange.response_body))
    listed = next((v for k in ("data", "models") if isinstance(v := _member(reply, k), list)), None)
    if listed is not None:
        entries = [(e, _named(e)) for e in listed if isinstance(e, dict)]
    else:
        request = _shallow(body_json(exchange.request_body) if exchange.request_body else None)
        asked, named = _named(request), _named(reply)
        agreed = asked is None or named is None or asked == named
        entries = [(reply, (named or asked) if agreed else _NO_MODEL)]
    echoed = _echoed(exchange.request_body)
    found: set[tuple[str, str]] = set()
    budget = MAX_REPORTED
    for entry, name in entries:
        if not name:
            continue
        for hexdigest in itertools.islice(_digests_in(entry, name), budget):
            budget -= 1
            if hexdigest not in echoed:
                found.add((name, hexdigest))
        if budget <= 0:
            break
    return frozenset(found)


def _shallow(value: Any) -> Any:
    """A parsed body, or None where it nests past :data:`MAX_DEPTH` (whether the parser reached
    its end depends on the caller's stack: past the bound it never counts)."""
    return None if depth_of(value) > MAX_DEPTH else value


def _member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _named(value: Any) -> str | None:
    """The one model an object names by its naming members, by its runtime name: None where it
    names none, :data:`_NO_MODEL` where they name different models or the name is longer
    than :data:`MAX_NAME`."""
    names = {runtime_name(n) for k in _NAMING if isinstance(n := _member(value, k), str) and n}
    if not names:
        return None
    name = names.pop()
    return name if not names and len(name) <= MAX_NAME else _NO_MODEL


def _digests_in(value: Any, name: str) -> Iterable[str]:
    """The 64-hex-digit runs in the strings of a JSON value about model ``name``, depth first,
    without recursion, not inside an object that names another model."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield from (m.group() for m in _HEX_DIGEST.finditer(item))
        elif isinstance(item, dict):
            if item is value or _named(item) in (None, name):
                stack.extend(reversed(item.values()))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _echoed(body: Body | None) -> frozenset[str]:
    """The digests a request body holds: a reply that repeats them does not report them."""
    data = body_bytes(body) if body is not None else None
    if not data:
        return frozenset()
    text = data.decode("utf-8", "replace")
    return frozenset(m.group() for m in itertools.islice(_HEX_DIGEST.finditer(text), MAX_REPORTED))


PROBE_PROMPTS = frozenset(
    contract.prompt(kind)
    for contract in PROBE_CONTRACTS.values()
    for kind in ("response", "tool_call")
)
"""Every question a direct probe asks (of every known contract)."""


def asks_a_probe(exchange: TransportExchange, request: Any = _MISSING) -> bool:
    """Whether an exchange's request asks a direct probe's question, alone (one user message
    whose text is a contract's prompt, however its JSON escapes it): wherever it is in the log,
    it was a probe's. ``request``: its body's JSON value, when already parsed."""
    if isinstance(exchange, SlimExchange):
        return exchange._probe
    if request is _MISSING:
        request = body_json(exchange.request_body) if exchange.request_body else None
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict):
        return False
    return messages[0].get("role") == "user" and messages[0].get("content") in PROBE_PROMPTS


def asked_digests(
    exchange: TransportExchange, request: Any = _MISSING
) -> tuple[bytes | None, bytes | None]:
    """What an exchange's request asked, as two digests: of its messages and the names of the
    functions it offers (:func:`verify.replies.request_digest`; None when it holds no list of
    messages), and of its last user message's content (:func:`verify.replies.question_digest`;
    None when it has none). ``request``: its body's JSON value, when already parsed."""
    if isinstance(exchange, SlimExchange):
        return exchange._asked
    if request is _MISSING:
        request = body_json(exchange.request_body) if exchange.request_body else None
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list):
        return None, None
    tools = request.get("tools") if isinstance(request, dict) else None
    functions = [
        t["function"].get("name") for t in (tools if isinstance(tools, list) else ())
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ]  # fmt: skip
    user = last_user_message(messages)
    last = question_digest(user["content"]) if user is not None else None
    return request_digest(messages, functions), last


def _listing(exchange: TransportExchange) -> Body | None:
    if not (exchange.method == "GET" and exchange.path == "/v1/models"):
        return None
    body = body_json(exchange.response_body)
    data = body.get("data") if isinstance(body, dict) else None
    items = data if isinstance(data, list) else ()
    served = sorted({str(m.get("id")) for m in items if isinstance(m, dict)})
    import json  # noqa: PLC0415 - only for model lists

    return Body(encoding="utf-8", data=json.dumps({"data": [{"id": s} for s in served]}))


def slim_exchange(exchange: TransportExchange, config: RunConfig | None) -> SlimExchange:
    """``exchange`` reduced to its facts under the run's ``config``."""
    headers = exchange.request_headers
    slim = SlimExchange.model_construct(
        schema_version=exchange.schema_version,
        id=exchange.id,
        component=exchange.component,
        started=exchange.started,
        ended=exchange.ended,
        method=exchange.method,
        path=exchange.path,
        status=exchange.status,
        request_headers=(
            {REFERENCE_HEADER: headers[REFERENCE_HEADER]} if REFERENCE_HEADER in headers else {}
        ),
        response_headers={},
        request_body=None,
        response_body=_listing(exchange),
        chunks=(),
        error=exchange.error,
        redirect=exchange.redirect,
        response_model=exchange.response_model,
    )
    slim._reply = reply_facts(exchange)
    slim._digests = reported_digests(exchange)
    request = body_json(exchange.request_body) if exchange.request_body else None  # parsed once
    slim._probe = asks_a_probe(exchange, request)
    slim._asked = asked_digests(exchange, request)
    slim._payload = body_digest(body_bytes(exchange.request_body))
    if exchange.component == PERFORMANCE:
        slim._infermark = infermark_reading(exchange)
    if exchange.component in SPARK_COMPONENTS:
        slim._spark = spark_reply(exchange)
    policy = config.reasoning_policy if config is not None else None
    if policy is not None and policy.serialization is not None:
        slim._request = request_facts(
            exchange, policy.serialization, policy.effective != "off", request
        )
    return slim


# --- the socket ledger --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _ip_version(address: str) -> int | None:
    try:
        return ipaddress.ip_address(address.strip("[]")).version
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``text`` is, an IPv4 one mapped into IPv6 (``::ffff:127.0.0.1``: how a
    dual-stack socket, a Java client's, names an IPv4 peer) as that IPv4 address; or None."""
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback(host: str) -> bool:
    """Whether a host name or address is loopback (``localhost``, 127.0.0.0/8, ``::1``, and
    127.0.0.0/8 mapped into IPv6)."""
    if host == "localhost":
        return True
    address = _ip(host)
    return address is not None and address.is_loopback


def closing_problem(config: RunConfig | None, count: int) -> tuple[str | None, int | None]:
    """Why a socket ledger of ``count`` attempts is not the one the supervisor closed (its
    count in the run config), or None: a cut tail, or added entries, would not show otherwise;
    and the closing count it read (None: the run config holds none)."""
    closing = config.ledger if config is not None else None
    if closing is None:
        return (
            "the run config holds no closing count of the socket ledger: a cut tail would not show",
            None,
        )
    if closing.entries != count:
        return (
            f"the supervisor closed the ledger at {closing.entries} attempts; it holds {count}",
            closing.entries,
        )
    return None, closing.entries


_IP = ("AF_INET", "AF_INET6")
"""The families the sandbox keeps to loopback; any other but ``AF_UNIX`` is outside it."""


def ledger_problem(entry: SocketLedgerEntry) -> str | None:
    """Why an entry's family and address disagree, or None."""
    if entry.family == "AF_UNIX":
        if entry.port is not None or _ip_version(entry.address) is not None:
            return "an AF_UNIX attempt names an IP address or port, not a socket path"
        return None
    if entry.family not in _IP:
        return None  # another family, or an address strace could not read: outside, as it is
    version = 4 if entry.family == "AF_INET" else 6
    if entry.port is None or _ip_version(entry.address) != version:
        return f"an {entry.family} attempt needs an IPv{version} address and a port"
    return None


RUNTIME_DIRS = ("/run", "/var/run")
"""Where a host's daemons keep their sockets, hidden in the sandbox under an empty tmpfs of its
own (audit/_sandbox_inside.py): a filesystem Unix socket is reachable across network
namespaces."""


def host_socket(entry: SocketLedgerEntry) -> bool:
    """Whether an attempt reached a host's socket: an ``AF_UNIX`` ``connect()`` that connected
    (or is in progress), or a datagram sent, to a path under :data:`RUNTIME_DIRS`, which in
    the sandbox are its own and empty, so that a socket there is the host's (a Docker daemon,
    D-Bus, systemd's resolver or journal). A failed attempt reached nothing; an abstract
    socket (``@``) is the network namespace's own."""
    if entry.family != "AF_UNIX" or entry.outcome not in ("connected", "in-progress", "sent"):
        return False
    if not entry.address.startswith("/"):
        return False
    # normpath keeps two leading slashes (POSIX lets '//' mean something else); Linux does not
    path = posixpath.normpath("/" + entry.address.lstrip("/"))
    return any(path == d or path.startswith(f"{d}/") for d in RUNTIME_DIRS)


def off_sandbox(entry: SocketLedgerEntry) -> bool:
    """Whether an attempt went outside the sandbox: an IP address that is not loopback, a
    host's socket (:func:`host_socket`), an attempt of any other family (the sandbox keeps
    only IP to loopback: ``AF_VSOCK`` reaches a hypervisor's host whatever the namespace), or
    one whose address strace could not read (ADR 0047)."""
    if entry.family == "AF_UNIX":
        return host_socket(entry)
    if entry.family not in _IP or entry.outcome in UNREACHABLE:  # not to a loopback address
        return True
    return not _this_host(entry.address)


def _this_host(address: str) -> bool:
    """Whether an attempt's address is this host's own (in the sandbox, its namespace's):
    loopback, or unspecified (:func:`_unspecified`)."""
    return is_loopback(address) or _unspecified(address)


def _unspecified(text: str) -> bool:
    """``0.0.0.0`` or ``::`` (or ``::ffff:0.0.0.0``): Linux connects there to this host itself
    (in the sandbox, its namespace's loopback), the address a local server says it serves on."""
    address = _ip(text)
    return address is not None and address.is_unspecified


def outside_attempt(entry: SocketLedgerEntry) -> str:
    """What an attempt outside the sandbox (:func:`off_sandbox`) did, for a reason: ``tried
    ADDRESS:PORT (OUTCOME)``, or, for a host's socket, ``connected to PATH (OUTCOME): ...``."""
    if entry.family == "AF_UNIX":
        return (
            f"connected to {entry.address} ({entry.outcome}): a socket of the host, whose "
            "runtime directories the sandbox hides"
        )
    if entry.family == UNREADABLE:
        return f"tried an address strace could not read ({entry.address}, {entry.outcome})"
    if entry.family not in _IP:
        return f"tried {entry.family} {{{entry.address}}} ({entry.outcome})"
    if entry.outcome in UNREACHABLE and _this_host(entry.address):
        return (
            f"tried {entry.address}:{entry.port} as strace read it ({entry.outcome}): no route, "
            "so the kernel sent it elsewhere (the address changed after strace read it, or a "
            "routing header)"
        )
    return f"tried {entry.address}:{entry.port} ({entry.outcome})"


@dataclass(frozen=True, slots=True)
class LedgerFacts:
    """What the gates read of a socket ledger: its length, the first entry (by position) whose
    seq is not its position or that went outside the sandbox (:func:`off_sandbox`), and every
    incoherent entry with its line number."""

    count: int
    first_event: tuple[int, SocketLedgerEntry] | None
    incoherent: tuple[tuple[int, SocketLedgerEntry], ...]


class LedgerTally:
    """Takes a ledger's entries one by one and keeps only its facts."""

    def __init__(self) -> None:
        self.count = 0
        self.first_event: tuple[int, SocketLedgerEntry] | None = None
        self.incoherent: list[tuple[int, SocketLedgerEntry]] = []

    def append(self, entry: SocketLedgerEntry) -> None:
        index = self.count
        self.count += 1
        if self.first_event is None and (entry.seq != index or off_sandbox(entry)):
            self.first_event = (index, entry)
        if ledger_problem(entry) is not None:
            self.incoherent.append((index + 1, entry))

    def facts(self) -> LedgerFacts:
        return LedgerFacts(self.count, self.first_event, tuple(self.incoherent))


def ledger_facts(entries: Iterable[SocketLedgerEntry]) -> LedgerFacts:
    """The facts of a whole ledger."""
    tally = LedgerTally()
    for entry in entries:
        tally.append(entry)
    return tally.facts()
