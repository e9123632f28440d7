"""The socket ledger against the raw traces it was parsed from (ADR 0017).

The runner builds the ledger from the sandbox supervisor's trace files and keeps each of them
(``network/strace/<name>``). Here each is re-parsed with the same parser
(:func:`verify.socket_trace.trace_entries`); the traces, ordered by the first sequence number
their headers give, must tile the ledger without gap or overlap, and the ledger's bytes must be
exactly the canonical lines of their entries: the SHA-256 of those lines is compared with the
ledger's digest, so nothing of either is kept in memory. A ledger cut short (its closing count
lowered to match) holds fewer lines than its traces; a ledger with entries and no trace is
unproven.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Mapping

from bundle_schema import canonical_bytes
from bundle_schema.models import Finding
from bundle_schema.roles import Placement
from verify._source import Member
from verify.socket_trace import TraceError, TraceHeader, read_header, trace_entries

__all__ = ["trace_findings"]


def _proven_header(member: Member) -> TraceHeader:
    """A trace's header, the rest of the trace read too so that the header is proven to be the
    bytes hashed (:meth:`Member.proven`, ADR 0053: it decides the traces' order)."""
    chunks = member.proven()
    try:
        return read_header(chunks)
    finally:
        for _ in chunks:  # a header refused is proven too: other bytes are the whole's refusal
            pass


def _disagrees(entry: str, message: str) -> Finding:
    return Finding(code="record_disagrees", entry=entry, message=f"evidence {entry!r}: {message}")


def _lines(member: Member) -> Iterator[bytes]:
    pending = b""
    for data in member.proven():
        pending += data
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending


def trace_findings(
    evidence: Mapping[str, str],
    members: Mapping[str, Member],
    placements: Mapping[str, Placement],
    intact: Collection[str],
) -> list[Finding]:
    """The ledger checked against its traces.

    Args:
        evidence: every evidence entry's digest, by logical name.
        members: every intact entry's blob, by logical name.
        placements: every entry's role.
        intact: the entries whose blobs hashed right (the others are findings already).
    """
    ledgers = [
        n
        for n, p in placements.items()
        if p.problem is None and p.role and p.role.id == "socket ledger"
    ]
    traces = sorted(
        n
        for n, p in placements.items()
        if p.problem is None and p.role and p.role.id == "socket trace"
    )
    if not ledgers or any(n not in intact for n in (*ledgers, *traces)):
        return []
    ledger = ledgers[0]
    headers: list[tuple[TraceHeader, str]] = []
    for name in traces:
        try:
            headers.append((_proven_header(members[name]), name))
        except (TraceError, OSError) as exc:
            return [_disagrees(name, f"not a sandbox trace: {exc}")]
    # in the order the harnesses ran: a harness that traced nothing shares its first sequence
    # number with the next one, and started before it
    headers.sort(key=lambda pair: (pair[0].first_seq, pair[0].origin, pair[1]))
    digest = hashlib.sha256()
    count = 0
    for header, name in headers:
        if header.first_seq != count:
            return [
                _disagrees(
                    name,
                    f"the trace starts at ledger entry {header.first_seq}; the traces before it "
                    f"end at {count}",
                )
            ]
        try:
            for entry in trace_entries(members[name].proven()):
                digest.update(canonical_bytes(entry.model_dump(mode="json")) + b"\n")
                count += 1
        except (TraceError, OSError) as exc:
            return [_disagrees(name, f"not a sandbox trace: {exc}")]
    if "sha256:" + digest.hexdigest() == evidence[ledger]:
        return []
    return [_disagrees(ledger, _difference(members[ledger], headers, members, count, len(traces)))]


def _difference(
    ledger: Member,
    headers: list[tuple[TraceHeader, str]],
    members: Mapping[str, Member],
    count: int,
    traces: int,
) -> str:
    """Where the ledger first differs from its traces' entries (a second pass, both streamed)."""
    parsed = (
        canonical_bytes(entry.model_dump(mode="json"))
        for _header, name in headers
        for entry in trace_entries(members[name].proven())
    )
    number = 0
    for number, line in enumerate(_lines(ledger), start=1):
        expected = next(parsed, None)
        if expected is None:
            return (
                f"it holds more entries than its {traces} sandbox trace(s) record ({count}); "
                f"line {number} is in no trace"
            )
        if line != expected:
            return (
                f"line {number} is not the attempt its sandbox trace records (re-parsed with "
                "the runner's parser)"
            )
    return (
        f"its {traces} sandbox trace(s) record {count} connection attempts; it holds {number}: "
        "a ledger cut short"
    )
