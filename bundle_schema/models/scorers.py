"""The documents of the replay scorers: BFCL (seed 003), quality measurement (seed 001) and LMSpeed
Category Score V3 (seed 002), their inputs and their outputs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, StrictFloat, StrictInt, StringConstraints

from bundle_schema.models._common import (
    Count,
    Digest,
    Identifier,
    SchemaVersion,
    Score,
    Text,
    _Model,
    python_pattern,
)
from bundle_schema.models.records import SubsetName, Tally

__all__ = [
    "BfclScore",
    "CapabilityLine",
    "Dose",
    "EvidenceSource",
    "Fraction",
    "IsoDate",
    "ItemId",
    "LmspeedBenchmark",
    "LmspeedCatalog",
    "LmspeedCategory",
    "LmspeedCategoryScore",
    "LmspeedDimension",
    "LmspeedExclusion",
    "LmspeedMetric",
    "LmspeedModel",
    "LmspeedModelScore",
    "LmspeedResult",
    "LmspeedResults",
    "LmspeedScore",
    "Outcome",
    "PairName",
    "PairNumber",
    "QualityCheck",
    "QualityCondition",
    "QualityDose",
    "QualityItemOutcome",
    "QualityMeasurement",
    "QualityPairLine",
    "QualityPairLogit",
    "QualityPairsFiles",
    "QualityPairsScore",
    "QualityProtocolReport",
    "QualitySummaryLine",
    "QualityTaskItem",
    "QualityTaskLogit",
    "QualityTasksFiles",
    "QualityTasksScore",
    "QualityWinTally",
    "Real",
    "RelativePath",
    "Slug",
    "TaskId",
]

Fraction = Annotated[float, Field(strict=True, ge=0, le=1)]


# --- BFCL (seed 003) ------------------------------------------------------------------------------


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
_ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"
IsoDate = Annotated[
    str, StringConstraints(pattern=_ISO_DATE), AfterValidator(python_pattern(_ISO_DATE))
]
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
