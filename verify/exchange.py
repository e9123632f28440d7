"""One recorded exchange, the exact bytes (``audit show PATH --exchange N``): the request line,
headers and body, the response status, headers and body, every streamed chunk with its time and
the gap to the one before, and the evidence that cites the exchange.

:func:`read_exchange` is the shell: it streams the transport log's blob once, line by line,
hashing it as it goes, and keeps only the record asked for (ADR 0012: memory does not grow with
the log). It reads the blob whether or not it is intact: a reviewer of a tampered bundle wants
the bytes, told that they are not the sealed ones. :func:`exchange_view` is pure: the record,
the verdict, the evidence and the ``audit show`` report in, one :class:`ExchangeView` out.
:func:`render_exchange` prints it for people (ADR 0020: how bodies are printed)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bundle_schema.errors import CheckFailed, InvalidInput, written_out
from bundle_schema.models import (
    Body,
    BodyFacts,
    Chunk,
    ChunkTiming,
    EvidenceRef,
    ExchangeCitation,
    ExchangeView,
    Gx10Evidence,
    ShowReport,
    TransportExchange,
    Verdict,
)
from verify._core import ParsedManifest
from verify._source import DEFAULT_LIMITS, BundleSource, Limits
from verify.render import plain_text

__all__ = [
    "TRANSPORT_LOG",
    "RecordedExchange",
    "exchange_view",
    "names_exchange",
    "pretty_json",
    "read_exchange",
    "render_exchange",
]

TRANSPORT_LOG = "transport/exchanges.jsonl"
"""The transport log's one place in a bundle (``bundle_schema.roles``)."""

_ROLES = {"identity": "identity", "probes": "probe", "performance": "performance"}
_HARNESS = {"coding", "hermes", "tool_instruction", "reliability"}
_SAYS = {
    "identity": "an identity exchange (resolving the model the endpoint serves)",
    "probe": "a direct probe's exchange (the runner's own request)",
    "performance": "a performance exchange (the streaming measurement)",
    "harness": "a harness exchange (an upstream benchmark's request)",
    "none": "an exchange of no component (orphaned)",
}


# --- the shell: one pass over the log ------------------------------------------------------------


@dataclass(frozen=True)
class RecordedExchange:
    """One exchange as the transport log holds it, and where."""

    log: EvidenceRef
    intact: bool
    """The log's bytes hash to the manifest's digest and have its size."""
    line: int
    also_on_lines: tuple[int, ...]
    exchange: TransportExchange


def _lines(chunks: Iterator[bytes], cap: int) -> Iterator[tuple[int, bytes | None]]:
    """Each line of the blob with its number from 1; None for a line over ``cap`` bytes (it
    is skipped, never held whole). A last line without its newline is still a line."""
    number, pending, over = 1, b"", False
    for data in chunks:
        *complete, rest = data.split(b"\n")
        for part in complete:
            yield number, None if over or len(pending) + len(part) > cap else pending + part
            number, pending, over = number + 1, b"", False
        if over or len(pending) + len(rest) > cap:
            pending, over = b"", True
        else:
            pending += rest
    if pending or over:
        yield number, None if over else pending


def _id_of(line: bytes) -> int | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if type(found) is int else None


def _ids(seen: set[int]) -> str:
    if not seen:
        return "it holds no exchange"
    low, high = min(seen), max(seen)
    gaps = "" if high - low + 1 == len(seen) else ", not every id between"
    return f"its ids are {low} to {high} ({len(seen)} exchanges{gaps})"


def read_exchange(
    source: BundleSource,
    manifest: ParsedManifest,
    exchange_id: int,
    limits: Limits = DEFAULT_LIMITS,
) -> RecordedExchange:
    """Find exchange ``exchange_id`` in the bundle's transport log, reading the blob once.

    Raises:
        InvalidInput: the bundle has no transport log, or no exchange of that id (the message
            names the ids the log holds).
        CheckFailed: the log's blob cannot be read, or the exchange is not found and the log
            is damaged (a line that does not parse, bytes that are not the sealed ones), or the
            exchange's line is not a transport exchange.
    """
    entry = manifest.model.evidence.get(TRANSPORT_LOG)
    if entry is None:
        raise InvalidInput(f"no exchange {exchange_id}: the bundle has no {TRANSPORT_LOG}")
    member = source.members.get(manifest.blob_paths[TRANSPORT_LOG])
    if member is None:
        raise CheckFailed(
            f"no exchange {exchange_id}: the blob of {TRANSPORT_LOG} ({entry.digest}) is missing"
        )
    digest, size = hashlib.sha256(), 0

    def hashed() -> Iterator[bytes]:
        nonlocal size
        for data in member.chunks():
            digest.update(data)
            size += len(data)
            yield data

    seen: set[int] = set()
    broken: list[int] = []
    found: tuple[int, bytes] | None = None
    also: list[int] = []
    try:
        for number, line in _lines(hashed(), limits.max_record_line):
            got = None if line is None else _id_of(line)
            if got is None:
                broken.append(number)
                continue
            seen.add(got)
            if got == exchange_id:
                if found is None and line is not None:
                    found = (number, line)
                else:
                    also.append(number)
    except OSError as exc:
        raise CheckFailed(
            f"no exchange {exchange_id}: the blob of {TRANSPORT_LOG} cannot be read: "
            f"{exc.strerror or exc}"
        ) from None
    intact = size == entry.size and f"sha256:{digest.hexdigest()}" == entry.digest
    damage = ", ".join(
        (
            [
                f"line {broken[0]} is not a record"
                + (f" (and {len(broken) - 1} more)" if broken[1:] else "")
            ]
            if broken
            else []
        )
        + ([] if intact else [f"its bytes do not hash to {entry.digest}"])
    )
    if found is None:
        message = f"no exchange {exchange_id} in {TRANSPORT_LOG}: {_ids(seen)}"
        if damage:
            raise CheckFailed(f"{message}; the log is damaged: {damage}")
        raise InvalidInput(message)
    number, line = found
    try:
        exchange = TransportExchange.model_validate_json(line)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "the record"
        raise CheckFailed(
            f"exchange {exchange_id}, line {number} of {TRANSPORT_LOG}: not a transport "
            f"exchange: {where}: {error['msg']}"
        ) from None
    return RecordedExchange(
        log=EvidenceRef(name=TRANSPORT_LOG, digest=entry.digest),
        intact=intact,
        line=number,
        also_on_lines=tuple(also),
        exchange=exchange,
    )


# --- the core: what cites it ---------------------------------------------------------------------


def names_exchange(text: str, exchange_id: int) -> bool:
    """Whether ``text`` names exchange ``exchange_id`` ("exchange 12", not "exchange 123")."""
    return re.search(rf"\bexchange {exchange_id}(?![0-9])", text) is not None


def _body_bytes(body: Body) -> bytes:
    if body.encoding == "base64":
        return base64.b64decode(body.data, validate=True)
    return body.data.encode("utf-8", "surrogatepass")


def _text_of(body: Body) -> str | None:
    """The body as text: as recorded, or its base64 decoded when that is UTF-8."""
    if body.encoding == "utf-8":
        return body.data
    try:
        return base64.b64decode(body.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _facts(body: Body | None) -> BodyFacts | None:
    if body is None:
        return None
    data = _body_bytes(body)
    text = _text_of(body)
    form = "binary" if text is None else "json" if is_json(text) else "text"
    return BodyFacts(
        bytes=len(data), sha256=f"sha256:{hashlib.sha256(data).hexdigest()}", form=form
    )


def _received(chunk: Chunk) -> int:
    """How many bytes the chunk brought (its ``raw`` when it has one; a text with a lone
    surrogate, which no bytes read as, counted as written)."""
    if chunk.raw is not None:
        return len(chunk.received())
    return len(chunk.data.encode("utf-8", "surrogatepass"))


def _timings(exchange: TransportExchange) -> tuple[ChunkTiming, ...]:
    timings, previous = [], 0.0
    for index, chunk in enumerate(exchange.chunks):
        timings.append(
            ChunkTiming(
                index=index,
                t=chunk.t,
                gap=round(chunk.t - previous, 9),
                at=round(exchange.started + chunk.t, 9),
                bytes=_received(chunk),
            )
        )
        previous = chunk.t
    return tuple(timings)


def _role(exchange: TransportExchange) -> str:
    component = exchange.component
    if component in _ROLES:
        return _ROLES[component]
    return "harness" if component in _HARNESS else "none"


def _claimed_by(exchange_id: int, evidence: Gx10Evidence) -> tuple[str, ...]:
    claims = [
        f"the {probe.kind.replace('_', ' ')} probe (contract {probe.contract})"
        for probe in evidence.probes
        if probe.exchange == exchange_id
    ]
    claims += [
        f"Hermes task {task.task}"
        for task in evidence.hermes_tasks or ()
        if exchange_id in task.exchanges
    ]
    return tuple(claims)


def exchange_view(
    recorded: RecordedExchange,
    verdict: Verdict,
    evidence: Gx10Evidence,
    report: ShowReport,
    failed_check: str | None,
) -> ExchangeView:
    """The exchange as ``audit show --exchange`` presents it, with what cites it."""
    exchange = recorded.exchange
    cited = tuple(
        ExchangeCitation(
            gate=gate.id,
            status=gate.status,
            cites=tuple(t for t in (gate.reason, *gate.details) if names_exchange(t, exchange.id)),
        )
        for gate in report.gates
        if any(names_exchange(t, exchange.id) for t in (gate.reason, *gate.details))
    )
    first = report.forensic.first_evidence if report.forensic is not None else None
    return ExchangeView(
        schema_version=1,
        bundle_digest=verdict.bundle_digest,
        failed_check=failed_check,
        log=recorded.log,
        log_intact=recorded.intact,
        line=recorded.line,
        also_on_lines=recorded.also_on_lines,
        exchange=exchange,
        request_body=_facts(exchange.request_body),
        response_body=_facts(exchange.response_body),
        chunks=_timings(exchange),
        role=_role(exchange),
        claimed_by=_claimed_by(exchange.id, evidence),
        read_by=tuple(
            gate.id
            for gate in report.gates
            if any(ref.name == recorded.log.name for ref in gate.evidence)
        ),
        cited_by=cited,
        first_evidence=first,
        first_evidence_names_it=first is not None and names_exchange(first, exchange.id),
    )


# --- for people -----------------------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', re.S)
_CLOSE = {"{": "}", "[": "]"}
_CLOSING = {"}", "]"}


def _not_a_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


MAX_INDENT = 32
"""Levels past this are printed at this indentation: a body nested a thousand deep would
otherwise print as its size times its depth."""


def is_json(text: str) -> bool:
    """Whether ``text`` is one JSON value (strict: no NaN or Infinity)."""
    try:
        json.loads(text, parse_constant=_not_a_constant)
    except (ValueError, RecursionError):
        return False
    return True


def pretty_json(text: str) -> str | None:
    """``text`` re-indented (two spaces a level, at most :data:`MAX_INDENT` levels) when it is
    one JSON value, else None.

    Only the whitespace between tokens changes: every string keeps its escapes, every number
    its digits, a repeated key stays repeated, so the printed body holds what the recorded one
    holds (``json.dumps(json.loads(...))`` would round numbers and merge repeated keys)."""
    if not is_json(text):
        return None
    tokens = _TOKEN.findall(text)
    out: list[str] = []
    depth, index = 0, 0
    while index < len(tokens):
        piece = tokens[index]
        if piece in _CLOSE:
            if index + 1 < len(tokens) and tokens[index + 1] == _CLOSE[piece]:
                out.append(piece + _CLOSE[piece])
                index += 2
                continue
            depth += 1
            out.append(piece + "\n" + "  " * min(depth, MAX_INDENT))
        elif piece in _CLOSING:
            depth -= 1
            out.append("\n" + "  " * min(depth, MAX_INDENT) + piece)
        elif piece == ",":
            out.append(",\n" + "  " * min(depth, MAX_INDENT))
        elif piece == ":":
            out.append(": ")
        else:
            out.append(piece)
        index += 1
    return "".join(out)


def _seconds(value: float) -> str:
    """Seconds to the microsecond, with at least three decimals: 0.380, 0.380125."""
    shown = f"{value:.6f}".rstrip("0")
    whole, _, decimals = shown.partition(".")
    return f"{whole}.{decimals.ljust(3, '0')}"


_Printable = Text | Table
_Line = tuple[_Printable, bool]
"""Something to print, and whether it is recorded text (written as it is, never folded)."""
_BLANK: _Line = (Text(""), False)


def _fields(title: str, rows: list[tuple[str, str, str]]) -> _Line:
    """A titled two-column table: its values fold at the console's width under themselves."""
    table = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 1))
    table.title_style = "bold"
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for field, value, style in rows:
        table.add_row(field, plain_text(value, style))
    return table, False


def _body_lines(label: str, body: Body | None, facts: BodyFacts | None) -> list[_Line]:
    if body is None or facts is None:
        return [(plain_text(f"{label}: none", "bold"), False)]
    text = _text_of(body)
    size = f"{label}: {facts.bytes} bytes"
    decoded = "recorded as base64, decoded: UTF-8 " if body.encoding == "base64" else ""
    if facts.form == "binary" or text is None:
        head, shown = f"{size}, not UTF-8: shown as the base64 recorded", body.data
    elif facts.form == "json":
        head = f"{size}, {decoded}JSON, re-indented (whitespace only)"
        shown = pretty_json(text) or text
    else:
        head, shown = f"{size}, {decoded}text, as it is", text
    lines: list[_Line] = [
        (plain_text(head, "bold"), False),
        (plain_text(f"  {facts.sha256}"), True),
    ]
    return [*lines, (plain_text(shown), True)] if shown else lines


def _message(mark: str, first: str, headers: dict[str, str]) -> list[_Line]:
    """The request or status line and the headers, marked as ``curl -v`` marks them; a control
    character in them (a line break HTTP never carries there) written out, never a line more."""
    lines = [(plain_text(f"{mark} {written_out(first)}"), True)]
    lines += [
        (plain_text(f"{mark} {written_out(name)}: {written_out(value)}"), True)
        for name, value in headers.items()
    ]
    return [*lines, (plain_text(mark), True)]


def _head(view: ExchangeView, location: str) -> list[_Line]:
    """Where the record was read from, digests on lines of their own (they fit 80 columns)."""
    e = view.exchange
    lines: list[tuple[str, str]] = []
    if view.failed_check is not None:
        lines.append((f"verification failed: {view.failed_check}", "bold red"))
    status = "no response" if e.status is None else e.status
    lines += [
        (f"exchange {e.id}: {e.method} {e.path} -> {status}", "bold"),
        (f"  bundle {location}", ""),
        (f"    {view.bundle_digest}", ""),
        (
            (f"  line {view.line} of {view.log.name}, whose bytes hash to its sealed digest", "")
            if view.log_intact
            else (
                f"  line {view.line} of {view.log.name}, whose bytes do NOT hash to its sealed "
                "digest: not the bytes that were sealed",
                "bold red",
            )
        ),
        (f"    {view.log.digest}", ""),
    ]
    if view.also_on_lines:
        also = ", ".join(str(n) for n in view.also_on_lines)
        lines.append((f"  the same id is also on line {also} of the log", "bold red"))
    ended = (
        f", ended {_seconds(e.ended)} s (took {_seconds(e.ended - e.started)} s)"
        if e.ended is not None
        else ", never ended"
    )
    lines.append((f"  observer's clock: started {_seconds(e.started)} s{ended}", ""))
    notes = (
        ("error", e.error, "bold red"),
        ("redirect", e.redirect, "bold red"),
        ("reply model (the observer's note)", e.response_model, ""),
    )
    lines += [(f"  {label}: {value}", style) for label, value, style in notes if value is not None]
    return [(plain_text(text, style), False) for text, style in lines]


def _chunks(view: ExchangeView) -> list[_Line]:
    if not view.chunks:
        return []
    total = sum(c.bytes for c in view.chunks)
    lines = [
        _BLANK,
        (
            plain_text(f"streamed: {len(view.chunks)} chunks, {total} bytes", "bold underline"),
            False,
        ),
        (plain_text("(t: seconds after the request started; gap: since the chunk before)"), False),
    ]
    for timing, chunk in zip(view.chunks, view.exchange.chunks, strict=True):
        shown = f"chunk {timing.index}  t {_seconds(timing.t)} s  gap {_seconds(timing.gap)} s"
        lines.append((plain_text(f"{shown}  {timing.bytes} bytes", "bold"), False))
        lines.append((plain_text(chunk.data.removesuffix("\n")), True))
    return lines


def _evidence(view: ExchangeView) -> list[_Line]:
    e = view.exchange
    rows = [
        ("whose", f"{_SAYS[view.role]}; component {e.component or '-'}", ""),
        ("claimed by", ", ".join(view.claimed_by) or "no record", ""),
    ]
    rows += [
        ("cited by", f"{citation.gate} ({citation.status}): {cite}", "")
        for citation in view.cited_by
        for cite in citation.cites
    ]
    if not view.cited_by:
        rows.append(("cited by", "no gate names it in its reason or evidence", ""))
    rows.append(("read by", ", ".join(view.read_by) or "no gate", ""))
    first = view.first_evidence
    if first is None:
        rows.append(("first evidence", "none: the forensic answer names no first evidence", ""))
    elif view.first_evidence_names_it:
        rows.append(("first evidence", f"names it: {first}", "bold"))
    else:
        rows.append(("first evidence", f"names another: {first}", ""))
    return [_fields("the evidence that cites it", rows)]


def render_exchange(view: ExchangeView, console: Console, location: str) -> None:
    """Print one exchange for a reviewer: where it was read from, the request and the response
    as ``curl -v`` marks them (``>`` and ``<``), bodies whole, every chunk with its time and
    gap, and the evidence that cites it. Bundle text is never read as markup and its control
    characters (but tab and line feed) are shown as ``\\xNN``; recorded text (headers, bodies,
    chunks) is written as it is, never folded at the console's width nor its tabs expanded, so
    that a copy of it is what was recorded (the prose around it folds at the width)."""
    e = view.exchange
    lines = [
        *_head(view, location),
        _BLANK,
        (plain_text("request", "bold underline"), False),
        *_message(">", f"{e.method} {e.path}", e.request_headers),
        *_body_lines("request body", e.request_body, view.request_body),
        _BLANK,
        (plain_text("response", "bold underline"), False),
        *_message("<", "no response" if e.status is None else str(e.status), e.response_headers),
        *_body_lines("response body", e.response_body, view.response_body),
        *_chunks(view),
        _BLANK,
        *_evidence(view),
    ]
    for shown, whole in lines:
        if whole and isinstance(shown, Text):
            console.file.write(shown.plain + "\n")  # rich would expand its tabs
        else:
            console.print(shown)
