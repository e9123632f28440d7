"""Frozen pydantic models of every document in a bundle, version 1.

Top-level documents (the manifest, each evidence record, the verdict) carry ``schema_version``;
objects embedded in them (evidence entry, upstream checkout, model identity, claims) are versioned
by the document that holds them. Every model is frozen and refuses unknown fields. The JSON
Schema files in ``bundle_schema/json/`` are generated from these models (``audit schema --out``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
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
    "AttestationReport",
    "BfclPlan",
    "BfclScore",
    "BfclShard",
    "Body",
    "BundlePredicate",
    "BundleStatement",
    "Chunk",
    "Claims",
    "ComponentRef",
    "ComponentResult",
    "EvidenceEntry",
    "ExchangeView",
    "Finding",
    "Integrity",
    "Manifest",
    "ModelIdentity",
    "PinSetRef",
    "QuarantineMarker",
    "RunnerInfo",
    "SignatureCheck",
    "SocketLedgerEntry",
    "StatementSubject",
    "Tally",
    "TaskTallies",
    "TransportExchange",
    "UpstreamCheckout",
    "Verdict",
    "VerificationPredicate",
    "VerificationStatement",
    "VerifierInfo",
]

SCHEMA_VERSION = 1
"""The one document version this code writes and reads."""


def _integer(value: object) -> object:
    """An integer literal is an integer, never ``true`` or ``1.0`` (which Python's ``==`` and
    pydantic's Literal would take for one): as strict as the committed schema's ``const``."""
    if type(value) is not int:
        raise ValueError(f"expected the integer, not {value!r}")
    return value


One = Annotated[Literal[1], BeforeValidator(_integer)]
"""The integer 1, exactly."""
SchemaVersion = One
"""The one ``schema_version`` this code reads and writes."""

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


QualificationOutcome = Literal["QUALIFIED", "NOT_QUALIFIED", "INFRA_ERROR"]
ResultValidity = Literal["VALID", "QUARANTINED", "INFRA_FAILURE", "INCOMPLETE"]
ProfileDecision = Literal["MEETS_PROFILE", "DOES_NOT_MEET_PROFILE", "NOT_ASSESSED"]
RankGroup = Annotated[str, StringConstraints(max_length=256)]


class Claims(_Model):
    """What the runner claims the run achieved; the verifier compares its replay with these."""

    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
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

    schema_version: SchemaVersion
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


BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with its padding, nothing else (no line breaks, no URL-safe alphabet)."""
_BASE64 = re.compile(BASE64_PATTERN)


class Body(_Model):
    """An HTTP body: UTF-8 text as it was, or base64 when it was not valid UTF-8 (then its
    data must be base64: bytes that decode to nothing are no evidence of a body)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"encoding": {"const": "base64"}}},
            "then": {"properties": {"data": {"pattern": BASE64_PATTERN}}},
        },
    )

    encoding: Literal["utf-8", "base64"]
    data: str

    @model_validator(mode="after")
    def _decodable(self) -> Body:
        if self.encoding == "base64" and not _BASE64.match(self.data):
            raise ValueError("a base64 body whose data is not base64")
        return self


class Chunk(_Model):
    """One streamed chunk, as its bytes arrived, ``t`` seconds after the request started."""

    t: Seconds
    data: str


class TransportExchange(_Model):
    """One HTTP exchange between harness and model, as the observer saw it (one JSONL line)."""

    schema_version: SchemaVersion
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

    schema_version: SchemaVersion
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

    schema_version: SchemaVersion
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

    schema_version: SchemaVersion
    component: Identifier
    upstream_reason: Text
    provisional_metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    source: LogicalName | None = None
    """Evidence entry holding the raw upstream marker file."""


# --- component evidence of gx10-qualification (seed 000) --------------------------------------

GateStatus = Literal["PASS", "FAIL"]
Percent = (
    Annotated[float, Field(strict=True, ge=0, le=100)]
    | Annotated[int, Field(strict=True, ge=0, le=100)]
)


class Tier2(_Model):
    """SparkBench tier2 serving performance: non-scoring; failed fields are null."""

    status: Literal["AVAILABLE", "PARTIAL", "UNAVAILABLE"]
    decode_tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | None = None
    prefill_tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | None = None
    ttft_seconds: Annotated[float, Field(strict=True, ge=0)] | None = None


class SparkQuality(_Model):
    """SparkBench's code-domain quality output, with its own integrity gates."""

    generation: Identifier
    code_domain_quality: Percent
    tasks: Count
    passed: Count
    golden_gate: GateStatus
    self_integrity: GateStatus
    run_valid: StrictBool
    sampling_contamination: StrictBool
    tier2: Tier2 | None = None


class SparkRepeat(_Model):
    """SparkBench's repeat-reliability output."""

    repeats: Count
    repeat_reliability: Percent
    agreement: tuple[Annotated[float, Field(strict=True, ge=0, le=1)], ...] = ()


class EvidenceTrust(_Model):
    """One kind of Hermes execution evidence: whether it exists and can be trusted."""

    present: StrictBool
    trusted: StrictBool


class HermesCase(_Model):
    """One frozen evaluator test case and the requirement ids it is mapped to."""

    case: Identifier
    kind: Literal["correctness", "security"]
    passed: StrictBool
    requirements: tuple[Identifier, ...] = ()


class HermesTask(_Model):
    """One Hermes task of a run (one JSONL line), as the harness and its evaluator recorded it."""

    task: Identifier
    outcome: Literal["PASS", "FAIL", "TIMEOUT", "HARNESS_ERROR"]
    inactivity_limit_s: Seconds
    max_inactivity_s: Seconds | None
    wall_limit_s: Seconds
    wall_s: Seconds | None
    evaluator: Identifier
    evaluator_isolated: StrictBool
    evidence: dict[
        Literal["process", "checkpoint", "model_response", "task_state", "evaluator"],
        EvidenceTrust,
    ]
    cases: tuple[HermesCase, ...]
    completion_claim: StrictBool | None
    changed_paths: tuple[Annotated[str, StringConstraints(min_length=1, max_length=1024)], ...]
    allowed_changes: tuple[Annotated[str, StringConstraints(min_length=1, max_length=1024)], ...]
    protected_inputs: dict[Literal["before", "after"], Digest | None]
    cleanup: Literal["removed", "failed", "not_run"]
    trajectory: Literal["present", "missing", "malformed"] = "missing"
    final_response: Text | None = None
    exchanges: tuple[Size, ...] = ()
    """The transport exchanges the task's agent made (by id), where the runner could tell."""


class BenchLocalPacks(_Model):
    """BenchLocal behavioral/targeted pack scores."""

    packs: dict[Identifier, Percent]
    mean: Percent | None = None
    """As the harness printed it; the replay recomputes it."""


class InfermarkStreaming(_Model):
    """Infermark's legacy concurrency-1 streaming fields.

    ``tokens_per_second`` counts non-empty visible ``delta.content`` chunks over the whole
    concurrency-level wall: it is reported as E2E visible chunk/s, never as token/s.
    """

    concurrency: One
    visible_chunks: Count
    wall_seconds: Seconds
    tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | Count
    ttft_p50_seconds: Seconds
    itl_mean_seconds: Seconds | None
    requests: Count
    errors: Count


class DirectProbe(_Model):
    """A direct probe: the exchange it made and what it expected; ``finish_reason``,
    ``completion_tokens`` and ``got`` are the runner's reading of that exchange."""

    kind: Literal["response", "tool_call"]
    contract: Identifier
    ceiling_tokens: Count
    exchange: Size
    expected: str | dict[str, object]
    finish_reason: Annotated[str, StringConstraints(max_length=64)] | None = None
    completion_tokens: Count | None = None
    got: str | dict[str, object] | None = None


_DOTTED_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class ReasoningSerialization(_Model):
    """Where and how the effective reasoning policy is written into every completion request."""

    path: Annotated[
        str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    ]
    value: StrictBool | str | StrictInt


class ReasoningPolicy(_Model):
    """The run's effective reasoning policy and its serialization evidence."""

    effective: Literal["off", "on", "low", "medium", "high"]
    serialization: ReasoningSerialization | None


class ObserverRecord(_Model):
    """The transport observer's own account: complete, with how many exchanges it wrote."""

    status: Literal["complete", "failed"]
    exchanges: Count
    reason: Text | None = None


class LedgerRecord(_Model):
    """The supervisor's closing record of the socket ledger, written after the last traced
    process exited: how many attempts the ledger holds, so that a cut tail shows."""

    entries: Count


class RunConfig(_Model):
    """How the run was configured: its track, reasoning policy, observer and ledger."""

    schema_version: SchemaVersion
    track: Literal["primary", "controlled"]
    reasoning_policy: ReasoningPolicy
    observer: ObserverRecord
    ledger: LedgerRecord | None = None
    cleanup: Literal["removed", "failed", "not_run"]
    """Run-owned processes and files, removed after the evidence was preserved."""


ComponentName = Literal["coding", "hermes", "tool_instruction", "reliability", "performance"]


class Gx10Evidence(_Model):
    """Every piece of a run's evidence that the gx10 replay reads, in one document.

    ``audit verify`` assembles it from a bundle; ``audit score gx10`` reads it from a file. A
    missing record is null (or absent from its map), never an empty placeholder.
    """

    schema_version: SchemaVersion
    run_id: Identifier
    created_at: Timestamp
    profile: Identifier
    scoring_generation: Identifier
    pin_set: PinSetRef
    model: ModelIdentity
    upstreams: tuple[UpstreamCheckout, ...]
    claims: Claims
    config: RunConfig | None = None
    results: dict[ComponentName, ComponentResult] = Field(default_factory=dict)
    quarantines: dict[ComponentName, QuarantineMarker] = Field(default_factory=dict)
    spark_quality: SparkQuality | None = None
    spark_repeat: SparkRepeat | None = None
    hermes_tasks: tuple[HermesTask, ...] | None = None
    benchlocal: BenchLocalPacks | None = None
    infermark: InfermarkStreaming | None = None
    supplementary: dict[ComponentName, dict[Identifier, BfclShard | TaskTallies]] = Field(
        default_factory=dict
    )
    """The tallies of each supplementary harness run beside a component's upstream as its gate
    (``[gate_upstreams]``), by component and upstream: bfcl-eval's per subset (ADR 0022),
    Inspect AI's and lm-evaluation-harness's per task (ADR 0027)."""
    probes: tuple[DirectProbe, ...] = ()
    transport: tuple[TransportExchange, ...] | None = None
    socket_ledger: tuple[SocketLedgerEntry, ...] | None = None


class GateResult(_Model):
    """One hard gate of seed 000: pass, a model/deployment failure (fail), an infrastructure
    failure (infra), or not selected by the profile."""

    id: Identifier
    status: Literal["pass", "fail", "infra", "not_selected"]
    reason: Text
    evidence: tuple[Annotated[str, StringConstraints(max_length=512)], ...] = ()


class Gx10Scores(_Model):
    """Component scores on 0-100 (null where not executed), the aggregate and executed weight."""

    coding: Score | None
    hermes: Score | None
    tool_instruction: Score | None
    reliability: Score | None
    performance: Score | None
    aggregate: Score | None
    executed_weight: Score


class HermesTaskMetrics(_Model):
    """The evaluator's metrics of one Hermes task; null where unmeasured."""

    task: Identifier
    outcome: Literal["PASS", "FAIL", "TIMEOUT", "HARNESS_ERROR"]
    full_pass: StrictBool
    correctness: Score | None
    security: Score | None
    requirement_retention: Score | None
    truthfulness: Literal[0, 100] | None


class Gx10Diagnostics(_Model):
    """Shown beside the scores; none of it is scored except as the seed says."""

    comparable: StrictBool
    """Executed weight 100: a comparable full deployment score (else a plumbing qualification)."""
    e2e_visible_chunks_per_second: float | None
    """Infermark's legacy ``tokens_per_second``: visible content chunks over the whole wall."""
    estimated_visible_generation_chunks_per_second: float | None
    """1 / mean ITL. Neither figure is a decode token/s."""
    ttft_p50_seconds: float | None
    itl_mean_seconds: float | None
    requests: Count | None
    errors: Count | None
    tier2: Tier2 | None
    hermes_tasks: tuple[HermesTaskMetrics, ...]
    quarantine: QuarantineMarker | None
    supplementary: tuple[SupplementaryMetrics, ...] = ()
    """Each supplementary harness's figures (a gate's, never a score input: ADR 0022)."""


class SupplementaryMetrics(_Model):
    """What a supplementary harness measured beside a component's upstream, replayed from its
    tallies: shown, never scored."""

    component: ComponentName
    upstream: Identifier
    subsets: Count
    samples: Count
    overall_accuracy: Score
    """Hits over samples, in percent (score.py's flat ``overall_accuracy``)."""
    v4_overall: Score | None = None
    """BFCL V4's weighted overall, in percent, as bfcl-eval 2026.3.23 computes it (a subset
    not run counts as zero); null for a harness that is not bfcl-eval."""
    harness_version: Annotated[str, StringConstraints(max_length=64)] | None = None
    """The version the harness reported of itself (Inspect AI, lm-evaluation-harness)."""
    harness_model: Annotated[str, StringConstraints(max_length=256)] | None = None
    """The model name the harness said it evaluated (Inspect AI, lm-evaluation-harness)."""


class ClaimsCheck(_Model):
    """The runner's claims compared with the replay."""

    match: StrictBool
    differences: tuple[Text, ...]


class Gx10Decision(_Model):
    """The decisions of seed 000 about one run under one pin set."""

    pin_set: PinSetRef
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rankable: StrictBool
    rank_group: RankGroup | None
    scores: Gx10Scores
    gates: tuple[GateResult, ...]
    claims: ClaimsCheck
    reasons: tuple[Text, ...]
    diagnostics: Gx10Diagnostics


class Gx10Replay(Gx10Decision):
    """The replay of one run's evidence document under a pin set (``audit score gx10``)."""

    schema_version: SchemaVersion
    scorer: Literal["gx10"]
    scorer_version: Identifier
    """The version of the gx10 replay that decided (``verify.gx10.GX10_VERSION``), as the other
    scorers record theirs: a change to how a verdict is derived changes it."""
    run_id: Identifier


class RankRow(_Model):
    """One run in a ranking listing; repeated trials are separate rows, never averaged."""

    position: Annotated[int, Field(strict=True, ge=1)] | None
    run_id: Identifier
    source: Annotated[str, StringConstraints(max_length=4096)]
    bundle_digest: Digest
    created_at: Timestamp
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    model_digest: Digest
    reasoning_policy: Annotated[str, StringConstraints(max_length=256)] | None
    pin_set: PinSetRef
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rank_group: RankGroup | None
    scores: Gx10Scores
    reasons: tuple[Text, ...]


class Ranking(_Model):
    """The public ranking under one pin set (seed 000), with everything else listed apart."""

    schema_version: SchemaVersion
    pin_set: PinSetRef
    ranked: tuple[RankRow, ...]
    """Complete VALID / MEETS_PROFILE primary-track results of this exact pin set, in order."""
    limitations: tuple[RankRow, ...]
    """"Completed with profile limitations": complete NOT_QUALIFIED results, same order."""
    controlled: dict[Annotated[str, StringConstraints(max_length=256)], tuple[RankRow, ...]]
    """Controlled-policy runs, grouped by their exact effective policy, same order."""
    apart: tuple[RankRow, ...]
    """Everything else, with its reasons: other generations, smoke, quarantined, incomplete,
    infrastructure, integrity or claims failures."""


class DiffItem(_Model):
    """One thing that differs between two runs, each side as the JSON value it is (a number,
    a boolean, text, or null); ``delta`` is b - a for scores."""

    field: Annotated[str, StringConstraints(max_length=256)]
    a: StrictBool | StrictInt | StrictFloat | Text | None
    b: StrictBool | StrictInt | StrictFloat | Text | None
    delta: float | None = None


class DiffSide(_Model):
    """One bundle of a diff: its digest, whether it is intact, and its signature's status."""

    bundle_digest: Digest
    integrity: Literal["ok", "failed"]
    signature: Literal["verified", "unsigned", "unchecked", "failed"]


class RunDiff(_Model):
    """What differs between two verified runs (``audit diff``): the same deployment when the
    pin set, the model (runtime id and digest), the engine and its version and every upstream
    commit are; the same verdict when the outcome, validity, profile decision and rankability
    are."""

    schema_version: SchemaVersion
    a: DiffSide
    b: DiffSide
    same_deployment: StrictBool
    same_verdict: StrictBool
    differences: tuple[DiffItem, ...]


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
    exchanges: tuple[Size, ...] | None = None
    """The transport exchanges the shard's samples were scored from, where the runner recorded
    them (the harness names them ``bfcl/<shard_id>``)."""


TaskName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+/-]{0,127}$")]
"""A harness's task name (``arithmetic``, ``inspect_evals/gsm8k``, ``arith_local``)."""


class TaskTallies(_Model):
    """Per task, (hits, n) as a supplementary harness reported them, each checked by its reader
    against the harness's own per-sample records: Inspect AI's log, lm-evaluation-harness's
    results (ADR 0027). Every sample scores exactly 0 or 1."""

    harness: Literal["inspect-ai", "lm-eval"]
    version: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    """The harness's version, as its output reports it."""
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    """The model name the harness reports it evaluated."""
    tasks: dict[TaskName, Tally]


class BfclPlan(_Model):
    """The shards a BFCL run was split into, by the digest of each shard report's bytes."""

    shards: tuple[Digest, ...]


class BfclScore(_Model):
    """A replayed BFCL aggregate: every category unrounded in [0, 1], null where not computable."""

    schema_version: SchemaVersion
    scorer: Literal["bfcl"]
    scorer_version: Identifier
    aggregation: Literal["score-py", "bfcl-v4"]
    categories: dict[Identifier, Fraction | None]
    tallies: dict[SubsetName, Tally]
    missing_subsets: tuple[SubsetName, ...]
    """Subsets the aggregation weighs that no shard scored: left out of their category
    (score-py) or counted as accuracy 0 with their full dataset size (bfcl-v4)."""
    shards: tuple[Digest, ...]


# --- quality measurement (seed 001) ----------------------------------------------------------

ItemId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,31}$")]
"""A rubric item's identity: letters, digits, underscore and dash, under 32 bytes."""
TaskId = Annotated[str, StringConstraints(pattern=r"^[^\t\n\r]{1,31}$")]
"""A task item's identity: no tab or line break, under 32 bytes (checked in bytes on load)."""
PairName = Annotated[str, StringConstraints(pattern=r"^[^\t\n\r]{1,256}$")]
Real = StrictFloat | StrictInt
"""A finite number (strict JSON refuses NaN and infinities)."""
PairNumber = Annotated[int, Field(strict=True, ge=1, le=256)]
Dose = Annotated[float, Field(strict=True, ge=0)] | Annotated[int, Field(strict=True, ge=0)]
Outcome = Literal["win", "loss", "tie"]
_SEGMENT = r"([^/\x00.][^/\x00]*|\.[^/\x00.][^/\x00]*|\.\.[^/\x00]+|\.)"
RelativePath = Annotated[
    str, StringConstraints(pattern=rf"^{_SEGMENT}(/{_SEGMENT})*$", max_length=1024)
]
"""A path relative to the measurement file, never absolute and never through ``..``."""


class QualityPairLogit(_Model):
    """One recorded pair-mode query: the answer logits at its last row (one JSONL line).

    ``cut`` says whether the side's conversation was cut to 400 tokens for this query;
    ``query_bytes`` is the size of the query the tool built.
    """

    pair: PairNumber
    side: Literal["a", "b"]
    item: ItemId
    logit_yes: Real
    logit_no: Real
    query_bytes: Count
    cut: StrictBool


class QualityTaskLogit(_Model):
    """One recorded task-mode query: the four letter logits at its last row (one JSONL line)."""

    dose: Dose
    item: TaskId
    logits: tuple[Real, Real, Real, Real]
    query_bytes: Count


class QualityItemOutcome(_Model):
    """One rubric item of one pair: each side's log-odds in nats and the result for side b."""

    a: float
    b: float
    result: Outcome


class QualityPairLine(_Model):
    """One pair line of the pair mode's ``pairs.jsonl``."""

    line: Literal["pair"]
    pair: PairNumber
    name: PairName
    cut: Literal[0, 1]
    a: float
    """Side a's score: the mean log-odds over the rubric items, in nats."""
    b: float
    delta: float
    """b - a, in nats."""
    result: Outcome
    items: dict[ItemId, QualityItemOutcome]


class QualityWinTally(_Model):
    """Wins, losses and ties of side b; ties count one half; Wilson bounds at nominal 90%."""

    wins: Count
    losses: Count
    ties: Count
    win_rate: Fraction
    wilson_low: Fraction
    wilson_high: Fraction


class QualitySummaryLine(_Model):
    """The summary line that ends the pair mode's ``pairs.jsonl``."""

    line: Literal["summary"]
    pairs: Count
    cut: Count
    margin: Annotated[float, Field(strict=True, ge=0.5, le=0.5)]
    """0.5, a constant of the tool."""
    margin_unit: Literal["nats"]
    confidence: Annotated[float, Field(strict=True, ge=0.9, le=0.9)]
    """The nominal level of the Wilson interval, 0.9."""
    overall: QualityWinTally
    items: dict[ItemId, QualityWinTally]


class QualityCheck(_Model):
    """One comparison of the replay with what the run recorded."""

    check: Identifier
    status: Literal["pass", "fail", "not_recorded"]
    message: Text


class QualityPairsScore(_Model):
    """A replayed pair-mode measurement."""

    schema_version: SchemaVersion
    scorer: Literal["quality-pairs"]
    scorer_version: Identifier
    pair_lines: tuple[QualityPairLine, ...]
    summary: QualitySummaryLine
    checks: tuple[QualityCheck, ...]


class CapabilityLine(_Model):
    """One line of ``capability.jsonl``: the task-set score of one dose."""

    axis: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    dose: Dose
    score: Fraction
    items: Count


class QualityTaskItem(_Model):
    """One item at one dose, as ``--print-items`` prints it."""

    item: TaskId
    answer: Literal["A", "B", "C", "D"]
    largest: Literal["A", "B", "C", "D"]
    result: Literal[0, 1]
    logit: float


class QualityDose(_Model):
    """The replay of one dose: its capability line, its items, and the answers it lost."""

    capability: CapabilityLine
    correct: Count
    lost: tuple[TaskId, ...]
    """Items correct at dose 0 and wrong at this dose."""
    items: tuple[QualityTaskItem, ...]


class QualityTasksScore(_Model):
    """A replayed task-mode measurement."""

    schema_version: SchemaVersion
    scorer: Literal["quality-tasks"]
    scorer_version: Identifier
    axis: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    doses: tuple[QualityDose, ...]
    checks: tuple[QualityCheck, ...]


class QualityPairsFiles(_Model):
    """The pair mode's recorded files."""

    pairs: RelativePath
    rubric: RelativePath
    logits: RelativePath
    claimed: RelativePath | None = None
    blind_transcripts: RelativePath | None = None
    blind_key: RelativePath | None = None


class QualityTasksFiles(_Model):
    """The task mode's recorded files and arguments."""

    tasks: RelativePath
    logits: RelativePath
    axis: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    doses: Annotated[str, StringConstraints(max_length=256)]
    claimed: RelativePath | None = None


class QualityMeasurement(_Model):
    """A paired-substrate measurement: every file the protocol conditions are judged from."""

    schema_version: SchemaVersion
    pairs: QualityPairsFiles
    tasks: QualityTasksFiles
    working_dose: Dose
    quality_off: RelativePath
    """``quality.jsonl`` of the run with the substrate off (side a)."""
    quality_on: RelativePath
    """``quality.jsonl`` of the run with the substrate on (side b)."""
    blind_read: RelativePath | None = None


class QualityCondition(_Model):
    """One protocol condition, reported on its own."""

    id: Literal["win_rate", "coherence", "repetition", "task_cost", "blind_read"]
    met: StrictBool
    rule: Text
    observed: Text


class QualityProtocolReport(_Model):
    """The paired-substrate protocol judged from a replayed measurement."""

    schema_version: SchemaVersion
    scorer: Literal["quality-protocol"]
    scorer_version: Identifier
    verdict: Literal["a gain", "a style gain at a cost", "no measured gain", "incomplete"]
    conditions: tuple[QualityCondition, ...]
    summary: QualitySummaryLine
    capability: tuple[CapabilityLine, ...]
    means: dict[Literal["coherence_off", "coherence_on", "repetition_off", "repetition_on"], float]
    checks: tuple[QualityCheck, ...]


# --- LMSpeed Category Score V3 (seed 002) ------------------------------------------------------

LmspeedCategory = Literal[
    "agents",
    "coding",
    "reasoning",
    "knowledge",
    "math",
    "multilingual",
    "multimodal",
    "instruction_following",
]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
IsoDate = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
EvidenceSource = Literal["verified", "official", "reported", "self_reported"]


class LmspeedMetric(_Model):
    """One catalog entry: where a metric counts, and how it is read.

    A metric whose ``direction`` or ``protocol`` is null is catalogued but not eligible.
    """

    metric: Identifier
    category: LmspeedCategory
    dimension: Slug
    family: Slug
    """The canonical benchmark family; versions and protocols of one family share its cap."""
    protocol: Slug | None
    direction: Literal["higher", "lower"] | None
    transform: Literal["bounded_logit", "identity"]
    status: Literal["eligible", "display_only"]


class LmspeedCatalog(_Model):
    """The versioned catalog of metrics that Category Score V3 may use."""

    schema_version: SchemaVersion
    methodology: Literal["category-score-v3.0"]
    version: Identifier
    metrics: tuple[LmspeedMetric, ...]


class LmspeedModel(_Model):
    """A model of the run and its developer (for developer diversity)."""

    id: Identifier
    developer: Identifier


class LmspeedResult(_Model):
    """One benchmark result of one model, as collected."""

    id: Identifier
    model: Identifier
    metric: Identifier
    value: Real
    unit: Slug
    stderr: (
        Annotated[float, Field(strict=True, ge=0)] | Annotated[int, Field(strict=True, ge=0)] | None
    ) = None
    """In the unit of ``value``."""
    source: EvidenceSource
    confidence: Fraction
    observed_at: IsoDate
    kind: Literal["measured", "aggregated", "estimated", "inferred"]


class LmspeedResults(_Model):
    """The results of one scoring run: its date, its models and every collected result."""

    schema_version: SchemaVersion
    run_date: IsoDate
    models: tuple[LmspeedModel, ...]
    results: tuple[LmspeedResult, ...]


class LmspeedExclusion(_Model):
    """A result that does not count, and why."""

    result: Identifier
    reason: Text


class LmspeedBenchmark(_Model):
    """One benchmark (canonical family + protocol) of a category, after dedupe."""

    benchmark: Identifier
    dimension: Slug
    family: Slug
    protocol: Slug
    models: Count
    developers: Count
    status: Literal["used", "too_few_models", "no_spread"]
    median: float | None
    scale: float | None
    q: float | None
    overlap_calibrated: StrictBool


class LmspeedDimension(_Model):
    """A model's posterior ability in one dimension."""

    mean: float
    variance: float
    benchmarks: Count
    families: Count
    overlap_calibrated: StrictBool


class LmspeedModelScore(_Model):
    """One model's Category Score: Rated, Estimated or Unrated (no score, shown as a dash)."""

    model: Identifier
    status: Literal["Rated", "Estimated", "Unrated"]
    score: Score | None
    mean: float | None
    """mu_c, unrounded: the mean of the observed dimensions' posterior means."""
    sd: float | None
    central80: tuple[float, float] | None
    """mu_c -/+ 1.281552 sigma_c."""
    central80_score: tuple[Score, Score] | None
    observed_dimensions: Count
    families: Count
    overlap_calibrated_dimensions: Count
    effective_coverage: Fraction
    rank: Annotated[int, Field(strict=True, ge=1)] | None
    dimensions: dict[Slug, LmspeedDimension]


class LmspeedCategoryScore(_Model):
    """One category of a run: its benchmarks and its models, Rated first in rank order."""

    benchmarks: tuple[LmspeedBenchmark, ...]
    models: tuple[LmspeedModelScore, ...]


class LmspeedScore(_Model):
    """A replayed Category Score V3 run. There is no average across categories."""

    schema_version: SchemaVersion
    scorer: Literal["lmspeed"]
    scorer_version: Identifier
    methodology: Literal["category-score-v3.0"]
    catalog_version: Identifier
    run_date: IsoDate
    categories: dict[LmspeedCategory, LmspeedCategoryScore]
    excluded: tuple[LmspeedExclusion, ...]


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
    "misplaced_evidence",
    "record_disagrees",
    "checkout_mismatch",
    "ledger_incoherent",
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


SignatureStatus = Literal["verified", "unsigned", "unchecked", "failed"]


class SignatureCheck(_Model):
    """What the verifier found of the bundle's Sigstore signature over its manifest.

    ``unchecked``: a signature is present but no identity policy was given, so nothing is claimed
    about it. ``identity``, ``issuer`` and ``integrated_time`` are those of a verified signature;
    ``trusted_root`` is the digest of the trust root it was checked against.
    """

    status: SignatureStatus
    identity: Text | None = None
    issuer: Text | None = None
    integrated_time: Timestamp | None = None
    trusted_root: Digest | None = None
    reason: Text | None = None


class Verdict(Gx10Decision):
    """The verifier's verdict on one bundle: integrity, signature, then the replay of seed 000."""

    schema_version: SchemaVersion
    bundle_digest: Digest
    run_id: Identifier
    integrity: Integrity
    signature: SignatureCheck
    verifier: VerifierInfo
    unread: tuple[LogicalName, ...] = ()
    """Entries kept as evidence that no gate reads (logs, replies shown to reviewers, files at
    no place of the format): listed, so that nothing in a bundle is silently ignored."""


# --- in-toto statements ------------------------------------------------------------------------

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
BUNDLE_PREDICATE_TYPE = "https://evidence-audit.dev/predicates/bundle/v1"
VERIFICATION_PREDICATE_TYPE = "https://evidence-audit.dev/predicates/verification/v1"


class SubjectDigest(_Model):
    """A subject's digest set: this project names its subjects by SHA-256 only."""

    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class StatementSubject(_Model):
    """One subject of an in-toto Statement v1."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    digest: SubjectDigest


class _Statement(_Model):
    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: Annotated[tuple[StatementSubject, ...], Field(min_length=1, max_length=1)]


class BundlePredicate(_Model):
    """What a publisher's signature over a bundle says about the run it seals."""

    run_id: Identifier
    created_at: Timestamp
    scoring_generation: Identifier
    profile: Identifier
    pin_set: PinSetRef
    runner: RunnerInfo


class BundleStatement(_Statement):
    """The in-toto Statement signed over a bundle: subject ``manifest.json`` by its digest."""

    predicate_type: Literal["https://evidence-audit.dev/predicates/bundle/v1"] = Field(
        alias="predicateType"
    )
    predicate: BundlePredicate


class VerificationPredicate(_Model):
    """A verifier's verdict on a bundle, as an attestation's predicate."""

    verdict: Verdict
    pin_set: PinSetRef
    verifier: VerifierInfo


class VerificationStatement(_Statement):
    """The in-toto Statement of a verification: subject the bundle by its digest."""

    predicate_type: Literal["https://evidence-audit.dev/predicates/verification/v1"] = Field(
        alias="predicateType"
    )
    predicate: VerificationPredicate


VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://evidence-audit.dev/verifier/audit-verify"
"""The SLSA Verification Summary ``verifier.id`` of ``audit verify``."""
VSA_RANKABLE_LEVEL = "EVIDENCE_AUDIT_RANKABLE"
"""The ``verifiedLevels`` value of a PASSED summary (SLSA reserves the ``SLSA_`` prefix)."""


class VsaVerifier(_Model):
    """SLSA VSA ``verifier``: who verified, and the versions of its parts."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    version: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=128)],
        Annotated[str, StringConstraints(min_length=1, max_length=128)],
    ]


class VsaResource(_Model):
    """A resource by URI and digest (SLSA VSA ``policy`` and ``inputAttestations`` items)."""

    uri: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    digest: SubjectDigest


class VsaPredicate(_Model):
    """A SLSA Verification Summary (v1) of one verification by ``audit verify``: PASSED only for a
    rankable result whose checks all passed; the whole verdict in the documented extension field
    ``evidenceAuditVerdict`` (SLSA consumers ignore fields they do not know)."""

    verifier: VsaVerifier
    time_verified: Timestamp = Field(alias="timeVerified")
    resource_uri: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(
        alias="resourceUri"
    )
    policy: VsaResource
    """The pin set the run was judged by: ``urn:evidence-audit:pin-set:<id>`` and its digest."""
    input_attestations: tuple[VsaResource, ...] = Field(alias="inputAttestations")
    """The bundle's own signature (its Sigstore bundle file), when it carries one."""
    verification_result: Literal["PASSED", "FAILED"] = Field(alias="verificationResult")
    verified_levels: tuple[Annotated[str, StringConstraints(min_length=1, max_length=128)], ...] = (
        Field(alias="verifiedLevels")
    )
    evidence_audit_verdict: Verdict = Field(alias="evidenceAuditVerdict")


class VsaStatement(_Statement):
    """The in-toto Statement of a SLSA Verification Summary: subject the bundle by its digest."""

    predicate_type: Literal["https://slsa.dev/verification_summary/v1"] = Field(
        alias="predicateType"
    )
    predicate: VsaPredicate


class AttestationReport(_Model):
    """``audit verify-attestation``: the signature over an attestation, and what it attests."""

    schema_version: SchemaVersion
    signature: SignatureCheck
    bundle_digest: Digest | None
    verdict: Verdict | None


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
    """The last exchange was still streaming when the item stopped: never ended, or cut off
    mid-stream."""
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


# --- what `audit run --json` and `audit rejudge --json` print -----------------------------------

CommandPath = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
"""A path as the user gave it on the command line."""
Sources = Annotated[str, StringConstraints(min_length=1, max_length=1 << 20)]
"""Every source of one bundle, as given, joined with ", " (a directory and its tar are one)."""


class RunResult(_Model):
    """What ``audit run --json`` prints once the bundle is sealed (and, with ``--sign``, signed)."""

    schema_version: SchemaVersion
    bundle: CommandPath
    """The bundle directory, as given with ``--out``."""
    bundle_digest: Digest
    """The sealed bundle's digest: ``sha256:`` of its manifest.json."""
    signature: CommandPath | None
    """With ``--sign``: the Sigstore bundle written (signatures/manifest.sigstore.json in the
    bundle); null without it."""


class RejudgedRun(_Model):
    """A run whose verdict changes under the new pin set."""

    bundle: Sources
    run_id: Identifier
    diff: RunDiff
    """What differs: A judged under the pin set the bundle names, B under the new one."""
    reasons: tuple[Text, ...]
    """The reasons of the verdict under the new pin set."""


class RejudgedCopy(_Model):
    """A bundle that copies another one (the same evidence and model, another run id or
    creation time)."""

    bundle: Sources
    run_id: Identifier
    copy_of: Text
    """Which bundle it copies, and why it is taken for a copy."""


class RefusedBundle(_Model):
    """A bundle that could not be read, and why (it has no verdict)."""

    bundle: CommandPath
    reason: Text


class RejudgeReport(_Model):
    """What ``audit rejudge --json`` prints: the runs of an archive whose verdict changes under
    another pin set. Each bundle counts once, by bundle digest."""

    schema_version: SchemaVersion
    pin_set: PinSetRef
    """The pin set the archive was judged under again."""
    bundles: Count
    """Distinct bundles judged (a directory and its tar are one)."""
    changed: tuple[RejudgedRun, ...]
    copies: tuple[RejudgedCopy, ...]
    notes: tuple[Sources, ...]
    """Sources that were one bundle, and sources of one bundle that verified differently."""
    refused: tuple[RefusedBundle, ...]


# --- what `audit verify-archive` prints ---------------------------------------------------------


class ArchiveBundle(_Model):
    """One bundle of an archive as ``audit verify-archive`` judged it (verified once, from the
    first of its sources in sorted order)."""

    bundle_digest: Digest
    sources: Annotated[tuple[CommandPath, ...], Field(min_length=1)]
    """Every source that holds this bundle digest, sorted; the first is the one verified."""
    run_id: Identifier
    pin_set: PinSetRef
    """The pin set it was judged under."""
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rankable: StrictBool
    integrity: Literal["ok", "failed"]
    signature: SignatureStatus
    claims_match: StrictBool
    failed_check: Text | None
    """Why the bundle failed a check (integrity, signature, claims), as ``audit verify`` says
    it; null when it passed."""
    first_reason: Text | None
    """The verdict's first reason; null when it has none."""


class ArchiveRefusal(_Model):
    """A source of an archive that could not be read or judged, and why (it has no verdict)."""

    source: CommandPath
    reason: Text


class ArchiveCounts(_Model):
    """How many sources, distinct bundles, passed and failed bundles, and refusals."""

    sources: Count
    bundles: Count
    passed: Count
    failed: Count
    refused: Count


class ArchiveReport(_Model):
    """What ``audit verify-archive`` prints: every bundle of an archive, by bundle digest, and
    every refused source, by source. Written incrementally in canonical form (ADR 0025)."""

    schema_version: SchemaVersion
    pin_set: PinSetRef | None
    """The pin set given with ``--pins``; null: each bundle judged by the pin set it names."""
    bundles: tuple[ArchiveBundle, ...]
    counts: ArchiveCounts
    refused: tuple[ArchiveRefusal, ...]
