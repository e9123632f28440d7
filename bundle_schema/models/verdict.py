"""The gx10 replay's evidence document and decision (seed 000), and the verifier's verdict on a
bundle: integrity, signature, then that decision.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StringConstraints

from bundle_schema.models._common import (
    Count,
    Digest,
    Identifier,
    LogicalName,
    SchemaVersion,
    Score,
    Size,
    Text,
    Timestamp,
    _Model,
)
from bundle_schema.models.manifest import (
    Claims,
    ModelIdentity,
    PinSetRef,
    ProfileDecision,
    QualificationOutcome,
    RankGroup,
    ResultValidity,
    UpstreamCheckout,
)
from bundle_schema.models.records import (
    BenchLocalPacks,
    BfclShard,
    ComponentResult,
    DirectProbe,
    HermesTask,
    InfermarkStreaming,
    QuarantineMarker,
    RunConfig,
    SocketLedgerEntry,
    SparkQuality,
    SparkRepeat,
    TaskTallies,
    Tier2,
    TransportExchange,
)

__all__ = [
    "ClaimsCheck",
    "ComponentName",
    "Finding",
    "FindingCode",
    "GateResult",
    "Gx10Decision",
    "Gx10Diagnostics",
    "Gx10Evidence",
    "Gx10Replay",
    "Gx10Scores",
    "HermesTaskMetrics",
    "Integrity",
    "SignatureCheck",
    "SignatureStatus",
    "SupplementaryMetrics",
    "Verdict",
    "VerifierInfo",
]

# --- the gx10 replay (seed 000) -------------------------------------------------------------------

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
