"""What ``audit show`` presents for forensic review: a bundle's gates, timeline, transport summary
and forensic answer (``ShowReport``), and one recorded exchange (``ExchangeView``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictFloat, StringConstraints

from bundle_schema.models._common import (
    MAX_SAFE_INTEGER,
    Count,
    Digest,
    Identifier,
    LogicalName,
    SchemaVersion,
    Score,
    Seconds,
    Size,
    Text,
    Timestamp,
    _Model,
)
from bundle_schema.models.manifest import ModelIdentity, UpstreamCheckout
from bundle_schema.models.records import SocketLedgerEntry, TransportExchange
from bundle_schema.models.verdict import Verdict

__all__ = [
    "BodyFacts",
    "ChunkTiming",
    "EvidenceRef",
    "ExchangeCitation",
    "ExchangeIds",
    "ExchangeView",
    "ForensicAnswer",
    "GateView",
    "ShowReport",
    "Substitution",
    "TimedOut",
    "TimelineItem",
    "TransportSummary",
]

# --- forensic review -------------------------------------------------------------------------


class EvidenceRef(_Model):
    """An evidence entry by logical name and digest."""

    name: LogicalName
    digest: Digest


class GateView(_Model):
    """A gate as ``audit show`` presents it: its result and the evidence entries it read."""

    id: Identifier
    status: Literal["pass", "fail", "infra", "not_selected"]
    reason: Text
    details: tuple[Annotated[str, StringConstraints(max_length=512)], ...]
    evidence: tuple[EvidenceRef, ...]


class ExchangeIds(_Model):
    """Some transport exchanges by id: how many, and the first few (never a long list)."""

    count: Count
    first: tuple[Size, ...]
    """The first ids in the log's order, at most five."""


class Substitution(_Model):
    """A model substitution (fallback activity) seen in the replies themselves: which exchanges
    another model or engine answered, and which one answered them."""

    by: Literal["model", "fingerprint"]
    """How it showed: a reply naming another model, or another ``system_fingerprint``."""
    exchanges: ExchangeIds
    """The exchanges another model or engine answered."""
    answered_by: Annotated[str, StringConstraints(max_length=256)]
    """The model those replies name, or the other engine's fingerprint."""
    expected: Annotated[str, StringConstraints(max_length=256)]
    """The runtime model id, or the fingerprint the run's completion replies began with."""


class ForensicAnswer(_Model):
    """For a result that is not a valid model decision: what broke, and was it the model."""

    failed_part: Literal[
        "integrity", "quarantine", "observer", "runner", "identity", "endpoint", "isolation",
        "substitution", "evaluator", "harness", "setup", "incomplete",
    ]  # fmt: skip
    summary: Text
    first_evidence: Text | None
    model_before: Text
    """What the model had done before the failure, from the transport log."""
    best_aggregate: Score | None
    """The aggregate had every unscored component scored 100 (null when integrity failed:
    nothing is computed from evidence that is not what was recorded)."""
    worst_aggregate: Score | None
    """The aggregate had every unscored component scored 0 (null when integrity failed)."""
    substitution: Substitution | None = None
    """For ``substitution``: the exchanges and the model or engine that answered them."""


class TimedOut(_Model):
    """What a task or component that ran out of time was doing with the model: its exchanges,
    whether one was still open when it stopped, and how long any was open, so that a slow model
    and a hung agent can be told apart (docs/review.md, "Where the issue is silent")."""

    exchanges: ExchangeIds
    last_exchange: Size | None
    """The last of its exchanges to start (null: it made none)."""
    last_ended: Seconds | None
    """When that exchange ended, on the observer's clock (seconds since the observer started);
    null when it made none or the exchange never ended."""
    still_open: StrictBool
    """One of its exchanges (not only the last to start) was still streaming when the item
    stopped: never ended, or cut off mid-stream."""
    model_s: Seconds
    """Seconds during which at least one of its exchanges was open (the union of their spans)."""
    wall_s: Seconds | None
    """The item's own wall time (a task's record; a component's timestamps), when known."""
    cause: Literal["slow model", "hung agent", "unknown"]
    explanation: Text
    """The answer in words, with the numbers it rests on."""


class TimelineItem(_Model):
    """A component or a task of the run, against its limits."""

    kind: Literal["component", "task"]
    name: Identifier
    status: Identifier
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    wall_s: Seconds | None = None
    wall_limit_s: Seconds | None = None
    inactivity_s: Seconds | None = None
    inactivity_limit_s: Seconds | None = None
    cleanup: Identifier | None = None
    reason: Text | None = None
    timed_out: TimedOut | None = None
    """For a task or component that ran out of time: its exchanges and what they show."""


class TransportSummary(_Model):
    """The transport log in numbers, with the exchanges a reviewer looks at first."""

    requests: Count
    statuses: dict[Annotated[str, StringConstraints(max_length=16)], Count]
    streamed_chunks: Count
    errors: tuple[Size, ...]
    abandoned: tuple[Size, ...]
    """Of the errors, the exchanges whose harness went before it had the whole answer (its
    client's time-out, a stream it left, the run's end)."""
    truncations: tuple[Size, ...]
    redirects: tuple[Size, ...]
    suspected_fallbacks: tuple[Size, ...]


class ShowReport(_Model):
    """Everything ``audit show`` presents about one bundle."""

    schema_version: SchemaVersion
    verdict: Verdict
    forensic: ForensicAnswer | None
    gates: tuple[GateView, ...]
    timeline: tuple[TimelineItem, ...]
    transport: TransportSummary | None
    socket_attempts: Count
    non_loopback: tuple[SocketLedgerEntry, ...]
    upstreams: tuple[UpstreamCheckout, ...]
    model: ModelIdentity


# --- one exchange, for review ------------------------------------------------------------------


class BodyFacts(_Model):
    """A recorded body as bytes: how many, their digest, and how it is printed for review."""

    bytes: Count
    """The body's own bytes: the text encoded as UTF-8, or the base64 decoded."""
    sha256: Digest
    form: Literal["json", "text", "binary"]
    """``json``: UTF-8 text that is JSON, printed re-indented (whitespace between tokens only);
    ``text``: UTF-8 text, printed as it is; ``binary``: not UTF-8, printed as its base64."""


class ChunkTiming(_Model):
    """When one streamed chunk arrived, on the exchange's clock and on the observer's."""

    index: Count
    t: Seconds
    """Seconds after the request started, as recorded."""
    gap: StrictFloat
    """Seconds since the previous chunk (the first: since the request started), rounded to
    nanoseconds; negative when the recorded times go backwards."""
    at: Seconds
    """``started + t``: seconds since the observer started, rounded to nanoseconds."""
    bytes: Count
    """The chunk's text encoded as UTF-8."""


class ExchangeCitation(_Model):
    """A gate whose reason or evidence names the exchange."""

    gate: Identifier
    status: Literal["pass", "fail", "infra", "not_selected"]
    cites: tuple[Text, ...]
    """The gate's reason and evidence lines that name the exchange."""


class ExchangeView(_Model):
    """One recorded exchange as ``audit show --exchange N`` presents it: the record as it is in
    the transport log, the facts of its bodies and chunks, and the evidence that cites it."""

    schema_version: SchemaVersion
    bundle_digest: Digest
    failed_check: Text | None
    """Why the bundle's verification failed (integrity, signature, claims), or null."""
    log: EvidenceRef
    """The transport log entry the record was read from."""
    log_intact: StrictBool
    """Whether the log's bytes hash to the digest the manifest gives (and have its size)."""
    line: Annotated[int, Field(strict=True, ge=1, le=MAX_SAFE_INTEGER)]
    """The record's line in the log, from 1."""
    also_on_lines: tuple[Size, ...]
    """Other lines of the log that carry the same exchange id (a defect of the log)."""
    exchange: TransportExchange
    request_body: BodyFacts | None
    response_body: BodyFacts | None
    chunks: tuple[ChunkTiming, ...]
    role: Literal["identity", "probe", "performance", "harness", "none"]
    """Whose exchange it is, by its recorded component (``none``: it names no component)."""
    claimed_by: tuple[Text, ...]
    """The records that name the exchange as theirs: a direct probe, a Hermes task."""
    read_by: tuple[Identifier, ...]
    """The gates that read the transport log, and so this exchange among the others."""
    cited_by: tuple[ExchangeCitation, ...]
    first_evidence: Text | None
    """The forensic answer's first evidence (null: no forensic answer, or it found none)."""
    first_evidence_names_it: StrictBool
    """Whether that first evidence names this exchange."""
