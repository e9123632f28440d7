"""Frozen pydantic models of every document in a bundle, version 1.

Top-level documents (the manifest, each evidence record, the verdict) carry ``schema_version``;
objects embedded in them (evidence entry, upstream checkout, model identity, claims) are versioned
by the document that holds them. Every model is frozen and refuses unknown fields. The JSON
Schema files in ``bundle_schema/json/`` are generated from these models (``audit schema --out``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    model_validator,
)

__all__ = [
    "SCHEMA_VERSION",
    "BfclPlan",
    "BfclScore",
    "BfclShard",
    "Body",
    "Chunk",
    "Claims",
    "ComponentRef",
    "ComponentResult",
    "EvidenceEntry",
    "Finding",
    "Integrity",
    "Manifest",
    "ModelIdentity",
    "PinSetRef",
    "QuarantineMarker",
    "RunnerInfo",
    "SocketLedgerEntry",
    "Tally",
    "TransportExchange",
    "UpstreamCheckout",
    "Verdict",
    "VerifierInfo",
]

SCHEMA_VERSION = 1
"""The one document version this code writes and reads."""

MAX_SAFE_INTEGER = 2**53 - 1

LOGICAL_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"

Digest = Annotated[str, StringConstraints(pattern=DIGEST_PATTERN)]
"""``sha256:`` and 64 lowercase hex digits."""

LogicalName = Annotated[str, StringConstraints(pattern=LOGICAL_NAME_PATTERN, max_length=256)]
"""A slash-separated evidence name: lowercase segments, no empty, ``.`` or ``..`` segment."""

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$")]
MetricName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}$")]
GitCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
Timestamp = Annotated[
    str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$")
]
"""RFC 3339 in UTC with a ``Z`` suffix."""
MediaType = Annotated[
    str,
    StringConstraints(
        pattern=r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*"
        r"(; ?[a-z0-9_-]+=[A-Za-z0-9._-]+)*$",
        max_length=255,
    ),
]
Text = Annotated[str, StringConstraints(max_length=4096)]
# Scalars are strict: lax pydantic would take true for 1 or "1" for 1; the JSON Schema does not.
Size = Annotated[int, Field(strict=True, ge=0, le=MAX_SAFE_INTEGER)]
Score = Annotated[float, Field(strict=True, ge=0, le=100)]
Seconds = Annotated[float, Field(strict=True, ge=0)]
Metric = StrictFloat | StrictInt | None


class _Model(BaseModel):
    # Not pydantic-strict as a whole: its strict mode refuses JSON arrays for tuple fields. The
    # scalar types are strict one by one instead (Size, Score, StrictBool, ...).
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- embedded objects -------------------------------------------------------------------------


class EvidenceEntry(_Model):
    """One evidence file: the blob that holds its bytes."""

    digest: Digest
    size: Size
    media_type: MediaType


class PinSetRef(_Model):
    """The pin set the run was made under, by id and by digest of its canonical JSON."""

    id: Identifier
    digest: Digest


class RunnerInfo(_Model):
    """The program that recorded the run."""

    name: Identifier
    version: Identifier


class ModelIdentity(_Model):
    """The model the endpoint served: its runtime id and an immutable digest."""

    runtime_model_id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    digest: Digest
    digest_source: Literal["declared", "weights", "endpoint"]
    engine: Identifier | None = None
    engine_version: Identifier | None = None
    endpoint: Annotated[str, StringConstraints(max_length=512)] | None = None


class UpstreamCheckout(_Model):
    """One upstream harness checked out at an exact commit."""

    name: Identifier
    repository: Annotated[str, StringConstraints(min_length=1, max_length=512)]
    commit: GitCommit
    clean: StrictBool
    tree: LogicalName | None = None
    """Evidence entry holding ``git ls-tree -r`` of the commit, where recorded."""


class ComponentRef(_Model):
    """A component the run executed, and the evidence entry of its result record."""

    name: Identifier
    result: LogicalName


class Claims(_Model):
    """What the runner claims the run achieved; the verifier compares its replay with these."""

    outcome: Literal["QUALIFIED", "NOT_QUALIFIED", "INFRA_ERROR"]
    result_validity: Literal["VALID", "QUARANTINED", "INFRA_FAILURE", "INCOMPLETE"]
    profile_decision: Literal["MEETS_PROFILE", "DOES_NOT_MEET_PROFILE", "NOT_ASSESSED"]
    rankable: StrictBool
    aggregate_score: Score | None
    executed_weight: Score
    component_scores: dict[Identifier, Score | None]
    reasons: tuple[Text, ...] = ()


# --- documents --------------------------------------------------------------------------------


class Manifest(_Model):
    """``manifest.json``: the bundle's table of contents and the runner's claims.

    ``content_digest`` seals the manifest: it is ``sha256:`` of the canonical JSON of the manifest
    with ``content_digest`` itself left out. It detects corruption, not forgery (see
    docs/bundle-format.md); the bundle digest is the digest of the whole file.
    """

    schema_version: Literal[1]
    run_id: Identifier
    created_at: Timestamp
    runner: RunnerInfo
    scoring_generation: Identifier
    profile: Identifier
    pin_set: PinSetRef
    model: ModelIdentity
    upstreams: tuple[UpstreamCheckout, ...]
    components: tuple[ComponentRef, ...]
    claims: Claims
    evidence: dict[LogicalName, EvidenceEntry]
    content_digest: Digest

    @model_validator(mode="after")
    def _references_resolve(self) -> Manifest:
        names: list[tuple[str, str]] = [
            (f"components[{i}].result", c.result) for i, c in enumerate(self.components)
        ]
        names += [(f"upstreams[{i}].tree", u.tree) for i, u in enumerate(self.upstreams) if u.tree]
        for where, name in names:
            if name not in self.evidence:
                raise ValueError(f"{where} names {name!r}, which is not an evidence entry")
        for label, items in (("components", self.components), ("upstreams", self.upstreams)):
            seen: set[str] = set()
            for item in items:
                if item.name in seen:
                    raise ValueError(f"{label} lists {item.name!r} twice")
                seen.add(item.name)
        return self


class Body(_Model):
    """An HTTP body: UTF-8 text as it was, or base64 when it was not valid UTF-8."""

    encoding: Literal["utf-8", "base64"]
    data: str


class Chunk(_Model):
    """One streamed chunk, as its bytes arrived, ``t`` seconds after the request started."""

    t: Seconds
    data: str


class TransportExchange(_Model):
    """One HTTP exchange between harness and model, as the observer saw it (one JSONL line)."""

    schema_version: Literal[1]
    id: Size
    component: Identifier | None = None
    started: Seconds
    """Monotonic seconds since the observer started."""
    ended: Seconds | None = None
    method: Annotated[str, StringConstraints(pattern=r"^[A-Z]{1,16}$")]
    path: Annotated[str, StringConstraints(pattern=r"^/", max_length=4096)]
    status: Annotated[int, Field(strict=True, ge=100, le=599)] | None = None
    request_headers: dict[str, Text] = Field(default_factory=dict)
    response_headers: dict[str, Text] = Field(default_factory=dict)
    request_body: Body | None = None
    response_body: Body | None = None
    chunks: tuple[Chunk, ...] = ()
    error: Text | None = None
    redirect: Text | None = None
    response_model: Annotated[str, StringConstraints(max_length=256)] | None = None


class SocketLedgerEntry(_Model):
    """One connect() attempt by any process of a sandboxed harness (one JSONL line)."""

    schema_version: Literal[1]
    seq: Size
    t: Seconds
    pid: Annotated[int, Field(strict=True, ge=1)]
    process: Annotated[str, StringConstraints(max_length=256)]
    family: Literal["AF_INET", "AF_INET6", "AF_UNIX"]
    address: Annotated[str, StringConstraints(max_length=256)]
    port: Annotated[int, Field(strict=True, ge=0, le=65535)] | None = None
    outcome: Annotated[str, StringConstraints(pattern=r"^(connected|in-progress|E[A-Z0-9]+)$")]
    component: Identifier | None = None


class ComponentResult(_Model):
    """What one component produced: its status, raw outputs and headline metrics."""

    schema_version: Literal[1]
    component: Identifier
    status: Literal["COMPLETED", "PARTIAL", "FAILED", "QUARANTINED", "NOT_RUN"]
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    raw_outputs: tuple[LogicalName, ...] = ()
    metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    quarantine: LogicalName | None = None
    reason: Text | None = None


class QuarantineMarker(_Model):
    """An upstream quarantine marker: authoritative, with the upstream reason and metrics."""

    schema_version: Literal[1]
    component: Identifier
    upstream_reason: Text
    provisional_metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    source: LogicalName | None = None
    """Evidence entry holding the raw upstream marker file."""


# --- scorer inputs and outputs -----------------------------------------------------------------

SubsetName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SAFE_INTEGER)]
Fraction = Annotated[float, Field(strict=True, ge=0, le=1)]


class Tally(_Model):
    """Hits and scored samples of one BFCL subset (every sample scores exactly 0 or 1)."""

    hits: Count
    n: Count


class BfclShard(_Model):
    """One BFCL shard report: per-subset tallies, as the shard's run wrote them (seed 003).

    ``sample_ids``, where the shard recorded them, lets overlapping shards be detected.
    """

    subset_totals: dict[SubsetName, Tally]
    shard_id: Identifier | None = None
    sample_ids: (
        tuple[Annotated[str, StringConstraints(min_length=1, max_length=256)], ...] | None
    ) = None


class BfclPlan(_Model):
    """The shards a BFCL run was split into, by the digest of each shard report's bytes."""

    shards: tuple[Digest, ...]


class BfclScore(_Model):
    """A replayed BFCL aggregate: every category unrounded in [0, 1], null where not computable."""

    schema_version: Literal[1]
    scorer: Literal["bfcl"]
    scorer_version: Identifier
    aggregation: Literal["score-py", "bfcl-v4"]
    categories: dict[Identifier, Fraction | None]
    tallies: dict[SubsetName, Tally]
    missing_subsets: tuple[SubsetName, ...]
    """Subsets the aggregation weighs that no shard scored: left out of their category
    (score-py) or counted as accuracy 0 with their full dataset size (bfcl-v4)."""
    shards: tuple[Digest, ...]


# --- the verifier's output --------------------------------------------------------------------

FindingCode = Literal[
    "missing_blob",
    "digest_mismatch",
    "size_mismatch",
    "unreadable_blob",
    "extra_blob",
    "misnamed_blob",
    "unexpected_file",
    "content_digest_mismatch",
    "bundle_digest_mismatch",
    "record_invalid",
    "dangling_reference",
]


class Finding(_Model):
    """One thing the verifier found wrong, located by logical name and/or path."""

    code: FindingCode
    entry: LogicalName | None = None
    path: Annotated[str, StringConstraints(max_length=4096)] | None = None
    expected: Text | None = None
    got: Text | None = None
    message: Text


class Integrity(_Model):
    """The integrity layer's result."""

    status: Literal["ok", "failed"]
    findings: tuple[Finding, ...]
    blobs_checked: Size
    bytes_checked: Size


class VerifierInfo(_Model):
    """The verifier that produced a verdict."""

    name: Identifier
    version: Identifier


class Verdict(_Model):
    """The verifier's verdict on one bundle. Later layers add fields; these stay stable."""

    schema_version: Literal[1]
    bundle_digest: Digest
    run_id: Identifier
    integrity: Integrity
    verifier: VerifierInfo
