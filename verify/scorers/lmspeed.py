"""LMSpeed Category Score V3.0 (seed 002): a replay of the category scores of one run.

Per category, from the results of the run and a versioned catalog:

1. **Eligibility.** Only catalogued metrics with status ``eligible``, a known protocol and a known
   direction count; aggregated, estimated and inferred results are excluded; a raw 0 stays.
2. **Dedupe** within canonical family + protocol, per model: source verified > official >
   reported > self-reported, then higher confidence, then fresher, then the smaller result id.
3. **Benchmarks** (family + protocol) that cover fewer than three models are dropped.
4. **Normalization** from the unit only: ``score`` / 100, ``score_fraction`` as is (bounded
   logit), ``rating`` as is (identity); other units are excluded. Lower-is-better is negated.
   Robust z per benchmark: (x - median) / (MAD_SCALE x MAD), clamped to [-3, 3], with
   MAD_SCALE = 1.482602218505602 = 1 / Phi^-1(3/4) computed in doubles (the often-quoted
   1.4826 is it rounded; see :data:`MAD_SCALE`).
5. **Evidence quality** q = min(1, n/8) x min(1, developers/3); variance =
   max(stderr_z^2, floor^2) / q with floors verified 0.25, official 0.35, reported 0.50,
   self-reported 0.75; a model's precision within one family of one dimension is capped at 1.
6. **Per dimension**, the Gaussian model z_mb = theta_m + beta_b + eps_mb with theta ~ N(0, 1),
   beta ~ N(0, 10) (variance 10) and eps ~ N(0, 1/precision), solved exactly as the joint
   posterior (the theta block is diagonal, so it is eliminated and only a benchmarks-by-
   benchmarks system is factored).
7. **Per model**: mu_c = mean of the observed dimensions' posterior means; sigma_c^2 =
   sum(sigma_d^2 / k^2) + (4 - k) / 16; score = clamp(50 + 15 mu_c, 0, 100); the central 80%
   interval mu_c -/+ 1.281552 sigma_c; Rated / Estimated / Unrated; a formal rank for Rated only.

Choices the seed leaves open are listed in docs/scorers.md.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from operator import mul
from typing import Any, Literal, NamedTuple, get_args

from bundle_schema import kind_of, loads_strict, validate_document
from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    LmspeedBenchmark,
    LmspeedCatalog,
    LmspeedCategory,
    LmspeedCategoryScore,
    LmspeedDimension,
    LmspeedExclusion,
    LmspeedMetric,
    LmspeedModelScore,
    LmspeedResult,
    LmspeedResults,
    LmspeedScore,
)
from verify._gc import collector_paused
from verify.scorers._compare import differences

__all__ = [
    "BETA_VARIANCE",
    "DIMENSIONS",
    "LMSPEED_VERSION",
    "LOGIT_BOUND",
    "LmspeedRefused",
    "compare_claimed",
    "load_catalog",
    "load_results",
    "posterior",
    "score_run",
]

LMSPEED_VERSION = "1"
"""The version of this scorer; it changes whenever a number it computes could change."""

DIMENSIONS: Mapping[str, tuple[str, str, str, str]] = {
    "agents": ("planning", "tool_use", "long_horizon", "recovery"),
    "coding": ("generation", "repository", "debugging_testing", "tools_quality"),
    "reasoning": ("abstract_logic", "scientific_causal", "multistep_constraints", "proof_checking"),
    "knowledge": ("general", "professional", "factual_accuracy", "search_open_sources"),
    "math": ("basic", "olympiad", "advanced_proofs", "applied_tools"),
    "multilingual": (
        "cross_lingual_understanding",
        "multilingual_generation",
        "reasoning_transfer",
        "low_resource_robustness",
    ),
    "multimodal": ("perception_ocr", "documents_spatial", "visual_reasoning", "video_actions"),
    "instruction_following": (
        "constraint_compliance",
        "structured_output",
        "novel_instructions",
        "long_multi_turn",
    ),
}
"""The fixed scheme: four dimensions per category (the seed's table, in English)."""

SOURCE_PRIORITY = {"verified": 0, "official": 1, "reported": 2, "self_reported": 3}
SOURCE_FLOOR = {"verified": 0.25, "official": 0.35, "reported": 0.50, "self_reported": 0.75}
"""The floor of the standard deviation of one result, by source."""
MIN_MODELS = 3
FULL_COVERAGE_MODELS = 8
FULL_DEVELOPERS = 3
Z_CLAMP = 3.0
THETA_VARIANCE = 1.0
BETA_VARIANCE = 10.0
"""beta ~ N(0, 10): the second parameter is a variance, as in eps ~ N(0, 1/precision)."""
FAMILY_PRECISION_CAP = 1.0
LOGIT_BOUND = 0.001
"""Fractions are clamped to [0.001, 0.999] before the logit, so a raw 0 or 1 stays finite."""
MAD_SCALE = 1.482602218505602
"""1 / Phi^-1(3/4) computed in doubles (``1 / NormalDist().inv_cdf(0.75)``): makes the median
absolute deviation a normal standard deviation. The exact 1 / Phi^-1(3/4) is
1.48260221850560186...; this is one unit in the last place above its nearest double
(1.4826022185056018), and 1.4826 is it rounded to four places."""
MEAN_ABS_SCALE = math.sqrt(math.pi / 2)
"""Makes the mean absolute deviation from the median a normal standard deviation."""
Z80 = 1.281552
DIMENSIONS_PER_CATEGORY = 4
RATED = (3, 4, 2)
"""Rated: observed dimensions, families and overlap-calibrated dimensions, at least."""
ESTIMATED = (2, 2)
"""Estimated: observed dimensions and families, at least."""
OVERLAP_MODELS = 3
"""Two benchmarks of a dimension are linked when they share at least this many models."""


class LmspeedRefused(InvalidInput):
    """The catalog or the results cannot be scored as given (exit 2)."""


def load_catalog(data: bytes, where: str) -> LmspeedCatalog:
    """Parse and check a catalog: known dimensions, one entry per metric, and one reading per
    canonical family + protocol.

    Raises:
        DocumentError: not a valid catalog document.
        LmspeedRefused: a dimension outside its category's four, a metric listed twice, or one
            family + protocol catalogued with different categories, dimensions, directions or
            transforms.
    """
    catalog = validate_document(kind_of(LmspeedCatalog), loads_strict(data, where), where)
    seen: set[str] = set()
    readings: dict[tuple[str, str], tuple[str, ...]] = {}
    for index, entry in enumerate(catalog.metrics):
        at = f"{where}: $.metrics[{index}] ({entry.metric})"
        if entry.dimension not in DIMENSIONS[entry.category]:
            raise LmspeedRefused(
                f"{at}: {entry.dimension!r} is not a dimension of {entry.category} "
                f"({', '.join(DIMENSIONS[entry.category])})"
            )
        if entry.metric in seen:
            raise LmspeedRefused(f"{at}: the metric is catalogued twice")
        seen.add(entry.metric)
        if entry.protocol is None or entry.direction is None or entry.status != "eligible":
            continue
        reading = (entry.category, entry.dimension, entry.direction, entry.transform)
        other = readings.setdefault((entry.family, entry.protocol), reading)
        if other != reading:
            raise LmspeedRefused(
                f"{at}: {entry.family} {entry.protocol} is catalogued as {'/'.join(other)} "
                f"and as {'/'.join(reading)}"
            )
    return catalog


def load_results(data: bytes, where: str) -> LmspeedResults:
    """Parse and check a run's results: unique model and result ids, known models.

    Raises:
        DocumentError: not a valid results document.
        LmspeedRefused: a model or result id given twice, or a result of an unknown model.
    """
    with collector_paused():
        results = validate_document(kind_of(LmspeedResults), loads_strict(data, where), where)
    models = set()
    for index, model in enumerate(results.models):
        if model.id in models:
            raise LmspeedRefused(f"{where}: $.models[{index}]: model {model.id} is given twice")
        models.add(model.id)
    ids = set()
    for index, result in enumerate(results.results):
        if result.id in ids:
            raise LmspeedRefused(f"{where}: $.results[{index}]: result {result.id} is given twice")
        ids.add(result.id)
        try:
            date.fromisoformat(result.observed_at)
        except ValueError:
            raise LmspeedRefused(
                f"{where}: $.results[{index}].observed_at: {result.observed_at} is not a date"
            ) from None
        if result.model not in models:
            raise LmspeedRefused(
                f"{where}: $.results[{index}]: result {result.id} is of model {result.model}, "
                "which is not in $.models"
            )
    return results


# --- eligibility, dedupe, normalization -------------------------------------------------------


class _Reading(NamedTuple):
    """An eligible result on the transformed scale, before standardization."""

    result: LmspeedResult
    metric: LmspeedMetric
    benchmark: tuple[str, str]
    """(family, protocol)."""
    x: float
    """Transformed and oriented so that higher is better."""
    slope: float
    """dx / d(value): turns the result's stderr into the transformed scale."""


def _logit(fraction: float) -> tuple[float, float]:
    p = min(1 - LOGIT_BOUND, max(LOGIT_BOUND, fraction))
    return math.log(p / (1 - p)), 1 / (p * (1 - p))


def _ineligible(result: LmspeedResult, metric: LmspeedMetric | None) -> str | None:
    """Why a result is not eligible evidence, or None when it is."""
    if metric is None:
        return f"metric {result.metric} is not in the catalog: display only"
    if metric.status != "eligible":
        return f"metric {result.metric} is display only in the catalog"
    if result.kind != "measured":
        return f"the result is {result.kind}"
    if metric.direction is None:
        return f"metric {result.metric} has no known direction"
    if metric.protocol is None:
        return f"metric {result.metric} has no known protocol"
    return None


def _read(result: LmspeedResult, metric: LmspeedMetric | None) -> _Reading | str:
    """The transformed reading of a result, or the reason it is excluded."""
    reason = _ineligible(result, metric)
    if reason is not None or metric is None:
        return reason or "not catalogued"
    value = float(result.value)
    if metric.transform == "bounded_logit":
        per_unit = {"score": 100.0, "score_fraction": 1.0}.get(result.unit)
        if per_unit is None:
            return f"unit {result.unit} is not a fraction unit (score or score_fraction)"
        fraction = value / per_unit
        if not 0 <= fraction <= 1:
            return f"value {value:g} {result.unit} is not a fraction in [0, 1]"
        x, slope = _logit(fraction)
        slope /= per_unit
    elif result.unit == "rating":
        x, slope = value, 1.0
    else:
        return f"unit {result.unit} is not a rating unit for an identity metric"
    if metric.direction == "lower":
        x = -x
    return _Reading(result, metric, (metric.family, metric.protocol or ""), x, slope)


def _priority(result: LmspeedResult) -> tuple[int, float, int, str]:
    """Ascending order is preference: source, then confidence, freshness and the stable id."""
    fresh = date.fromisoformat(result.observed_at).toordinal()
    return SOURCE_PRIORITY[result.source], -result.confidence, -fresh, result.id


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _robust_scale(values: Sequence[float], median: float) -> float:
    deviations = [abs(v - median) for v in values]
    mad = _median(deviations)
    if mad > 0:
        return MAD_SCALE * mad
    return MEAN_ABS_SCALE * math.fsum(deviations) / len(deviations)


class _Observation(NamedTuple):
    model: str
    benchmark: tuple[str, str]
    dimension: str
    family: str
    z: float
    precision: float


def _benchmarks(
    readings: Iterable[_Reading],
    developers: Mapping[str, str],
) -> tuple[list[_Observation], list[LmspeedBenchmark], list[LmspeedExclusion]]:
    """Standardize each benchmark of one category and weigh its observations."""
    grouped: dict[tuple[str, str], list[_Reading]] = defaultdict(list)
    for reading in readings:
        grouped[reading.benchmark].append(reading)
    observations: list[_Observation] = []
    summaries: list[LmspeedBenchmark] = []
    excluded: list[LmspeedExclusion] = []
    for (family, protocol), group in sorted(grouped.items()):
        dimension = group[0].metric.dimension
        n = len(group)
        devs = len({developers[r.result.model] for r in group})
        values = [r.x for r in group]
        status: Literal["used", "too_few_models", "no_spread"] = "used"
        median = scale = q = None
        if n < MIN_MODELS:
            status = "too_few_models"
        else:
            median = _median(values)
            scale = _robust_scale(values, median)
            if scale <= 0:
                status = "no_spread"
        if status != "used" or median is None or scale is None:
            reason = (
                f"benchmark {family}:{protocol} covers {n} model(s); at least {MIN_MODELS} needed"
                if status == "too_few_models"
                else f"benchmark {family}:{protocol} has no spread to standardize"
            )
            excluded += [LmspeedExclusion(result=r.result.id, reason=reason) for r in group]
            median = scale = None
        else:
            q = min(1.0, n / FULL_COVERAGE_MODELS) * min(1.0, devs / FULL_DEVELOPERS)
            for r in group:
                z = max(-Z_CLAMP, min(Z_CLAMP, (r.x - median) / scale))
                stderr_z = float(r.result.stderr or 0) * r.slope / scale
                floor = SOURCE_FLOOR[r.result.source]
                variance = max(stderr_z * stderr_z, floor * floor) / q
                observations.append(
                    _Observation(
                        r.result.model, (family, protocol), dimension, family, z, 1 / variance
                    )
                )
        summaries.append(
            LmspeedBenchmark(
                benchmark=f"{family}:{protocol}",
                dimension=dimension,
                family=family,
                protocol=protocol,
                models=n,
                developers=devs,
                status=status,
                median=median,
                scale=scale,
                q=q,
                overlap_calibrated=False,
            )
        )
    return observations, summaries, excluded


def _capped(observations: Sequence[_Observation]) -> list[float]:
    """Each observation's precision, with a model's total within one family of one dimension
    capped at 1 (every observation of the family scaled down in proportion)."""
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    for o in observations:
        totals[o.model, o.dimension, o.family] += o.precision
    weights = []
    for o in observations:
        total = totals[o.model, o.dimension, o.family]
        weights.append(o.precision * FAMILY_PRECISION_CAP / total if total > 1 else o.precision)
    return weights


# --- the Gaussian model -----------------------------------------------------------------------


def _cholesky_inverse(matrix: list[list[float]]) -> list[list[float]]:
    """The inverse of a symmetric positive-definite matrix, through its Cholesky factor."""
    size = len(matrix)
    lower = [[0.0] * size for _ in range(size)]
    for i in range(size):
        for j in range(i + 1):
            total = matrix[i][j] - math.fsum(lower[i][k] * lower[j][k] for k in range(j))
            if i == j:
                lower[i][i] = math.sqrt(total)
            else:
                lower[i][j] = total / lower[j][j]
    # Invert the lower factor, then inverse = L^-T L^-1.
    inverse_lower = [[0.0] * size for _ in range(size)]
    for i in range(size):
        inverse_lower[i][i] = 1 / lower[i][i]
        for j in range(i):
            total = math.fsum(lower[i][k] * inverse_lower[k][j] for k in range(j, i))
            inverse_lower[i][j] = -total / lower[i][i]
    return [
        [
            math.fsum(inverse_lower[k][i] * inverse_lower[k][j] for k in range(max(i, j), size))
            for j in range(size)
        ]
        for i in range(size)
    ]


def posterior(
    observations: Sequence[tuple[str, str, float, float]],
) -> dict[str, tuple[float, float]]:
    """The posterior mean and variance of every model's theta in one dimension.

    Args:
        observations: (model, benchmark, z, precision), at most one per model and benchmark.

    The joint posterior of (theta, beta) has precision ``A = [[D_t, W], [W^T, D_b]]`` with
    D_t = 1/1 + sum_b w_mb (diagonal), D_b = 1/10 + sum_m w_mb (diagonal) and W = [w_mb]. The
    theta block is eliminated: S = D_b - W^T D_t^-1 W, beta = S^-1 (r_b - W^T D_t^-1 r_t),
    theta = D_t^-1 (r_t - W beta), and Var(theta_m) = 1/D_t,m + u_m^T S^-1 u_m with
    u_m = W[m, :] / D_t,m: exactly the joint posterior, at the cost of a benchmarks-sized
    factorization.
    """
    models = sorted({o[0] for o in observations})
    benchmarks = sorted({o[1] for o in observations})
    column = {b: i for i, b in enumerate(benchmarks)}
    # Per model: its benchmarks' columns, weights and z, in one order used throughout.
    rows: dict[str, tuple[list[int], list[float], list[float]]] = {}
    for model, benchmark, z, weight in observations:
        row = rows.setdefault(model, ([], [], []))
        row[0].append(column[benchmark])
        row[1].append(weight)
        row[2].append(z)
    size = len(benchmarks)
    schur = [[0.0] * size for _ in range(size)]
    rhs = [0.0] * size
    for i in range(size):
        schur[i][i] = 1 / BETA_VARIANCE
    d_theta: dict[str, float] = {}
    r_theta: dict[str, float] = {}
    for model in models:
        columns, weights, zs = rows[model]
        d = 1 / THETA_VARIANCE + sum(weights)
        r = sum(map(mul, weights, zs))
        d_theta[model], r_theta[model] = d, r
        for i, wi, zi in zip(columns, weights, zs, strict=True):
            line, f = schur[i], wi / d
            line[i] += wi
            rhs[i] += wi * zi - f * r
            for j, wj in zip(columns, weights, strict=True):
                line[j] -= f * wj
    inverse = _cholesky_inverse(schur)
    beta = [math.fsum(inverse[i][j] * rhs[j] for j in range(size)) for i in range(size)]
    result: dict[str, tuple[float, float]] = {}
    for model in models:
        columns, weights, _ = rows[model]
        d = d_theta[model]
        mean = (r_theta[model] - sum(map(mul, weights, map(beta.__getitem__, columns)))) / d
        spread = 0.0
        for i, wi in zip(columns, weights, strict=True):
            spread += wi * sum(map(mul, map(inverse[i].__getitem__, columns), weights))
        result[model] = (mean, 1 / d + spread / (d * d))
    return result


# --- one category -----------------------------------------------------------------------------


def _linked(observations: Sequence[_Observation]) -> set[tuple[str, str]]:
    """Benchmarks that share at least :data:`OVERLAP_MODELS` models with another benchmark of
    their dimension: their cohort bias is calibrated by overlap."""
    members: dict[tuple[str, str], set[str]] = defaultdict(set)
    dimension_of: dict[tuple[str, str], str] = {}
    for o in observations:
        members[o.benchmark].add(o.model)
        dimension_of[o.benchmark] = o.dimension
    linked = set()
    ordered = sorted(members)
    for index, one in enumerate(ordered):
        for other in ordered[index + 1 :]:
            if (
                dimension_of[one] == dimension_of[other]
                and len(members[one] & members[other]) >= OVERLAP_MODELS
            ):
                linked |= {one, other}
    return linked


def _category(
    category: str,
    readings: Sequence[_Reading],
    models: Sequence[str],
    developers: Mapping[str, str],
) -> tuple[LmspeedCategoryScore, list[LmspeedExclusion]]:
    observations, benchmarks, excluded = _benchmarks(readings, developers)
    weights = _capped(observations)
    linked = _linked(observations)
    benchmarks = [
        b.model_copy(update={"overlap_calibrated": (b.family, b.protocol) in linked})
        for b in benchmarks
    ]
    per_dimension: dict[str, list[tuple[str, str, float, float]]] = defaultdict(list)
    by_model: dict[tuple[str, str], list[_Observation]] = defaultdict(list)
    names = {b: ":".join(b) for b in {o.benchmark for o in observations}}
    for o, weight in zip(observations, weights, strict=True):
        per_dimension[o.dimension].append((o.model, names[o.benchmark], o.z, weight))
        by_model[o.dimension, o.model].append(o)
    fitted: dict[str, dict[str, LmspeedDimension]] = defaultdict(dict)
    for dimension, group in sorted(per_dimension.items()):
        for model, (mean, variance) in posterior(group).items():
            mine = by_model[dimension, model]
            # Computed here, not input: constructed without re-validation.
            fitted[model][dimension] = LmspeedDimension.model_construct(
                mean=mean,
                variance=variance,
                benchmarks=len(mine),
                families=len({o.family for o in mine}),
                overlap_calibrated=any(o.benchmark in linked for o in mine),
            )
    families: dict[str, set[str]] = defaultdict(set)
    for o in observations:
        families[o.model].add(o.family)
    scores = [_model_score(m, fitted.get(m, {}), len(families[m])) for m in sorted(models)]
    return LmspeedCategoryScore(benchmarks=tuple(benchmarks), models=_ranked(scores)), excluded


def _model_score(
    model: str, dimensions: Mapping[str, LmspeedDimension], families: int
) -> LmspeedModelScore:
    k = len(dimensions)
    calibrated = sum(d.overlap_calibrated for d in dimensions.values())
    coverage = math.fsum(1 - min(1.0, d.variance) for d in dimensions.values())
    coverage /= DIMENSIONS_PER_CATEGORY
    if k >= RATED[0] and families >= RATED[1] and calibrated >= RATED[2]:
        status = "Rated"
    elif k >= ESTIMATED[0] and families >= ESTIMATED[1]:
        status = "Estimated"
    else:
        status = "Unrated"
    common: dict[str, Any] = {
        "model": model,
        "status": status,
        "observed_dimensions": k,
        "families": families,
        "overlap_calibrated_dimensions": calibrated,
        "effective_coverage": max(0.0, min(1.0, coverage)),
        "rank": None,
        "dimensions": dict(sorted(dimensions.items())),
    }
    if status == "Unrated":
        unscored = dict.fromkeys(("score", "mean", "sd", "central80", "central80_score"))
        return LmspeedModelScore(**common, **unscored)
    mean = math.fsum(d.mean for d in dimensions.values()) / k
    variance = math.fsum(d.variance / (k * k) for d in dimensions.values())
    variance += (DIMENSIONS_PER_CATEGORY - k) / 16
    sd = math.sqrt(variance)
    low, high = mean - Z80 * sd, mean + Z80 * sd
    return LmspeedModelScore(
        **common,
        score=_scaled(mean),
        mean=mean,
        sd=sd,
        central80=(low, high),
        central80_score=(_scaled(low), _scaled(high)),
    )


def _scaled(mu: float) -> float:
    return max(0.0, min(100.0, 50 + 15 * mu))


def _ranked(scores: Sequence[LmspeedModelScore]) -> tuple[LmspeedModelScore, ...]:
    """Rated in rank order (unrounded mean, effective coverage, diagnostic lower bound, all
    descending, then model id), then Estimated by ability (no rank), then Unrated by id."""

    def order(s: LmspeedModelScore) -> tuple[float, float, float, str]:
        assert s.mean is not None and s.central80 is not None  # noqa: S101 - scored statuses
        return -s.mean, -s.effective_coverage, -s.central80[0], s.model

    rated = sorted((s for s in scores if s.status == "Rated"), key=order)
    estimated = sorted((s for s in scores if s.status == "Estimated"), key=order)
    unrated = [s for s in scores if s.status == "Unrated"]
    ranked = [s.model_copy(update={"rank": i}) for i, s in enumerate(rated, start=1)]
    return (*ranked, *estimated, *unrated)


def score_run(catalog: LmspeedCatalog, results: LmspeedResults) -> LmspeedScore:
    """Replay Category Score V3 for every category of the scheme."""
    with collector_paused():
        return _score_run(catalog, results)


def _score_run(catalog: LmspeedCatalog, results: LmspeedResults) -> LmspeedScore:
    by_metric = {m.metric: m for m in catalog.metrics}
    developers = {m.id: m.developer for m in results.models}
    excluded: list[LmspeedExclusion] = []
    best: dict[tuple[str, str, str], _Reading] = {}
    for result in results.results:
        reading = _read(result, by_metric.get(result.metric))
        if isinstance(reading, str):
            excluded.append(LmspeedExclusion(result=result.id, reason=reading))
            continue
        key = (result.model, *reading.benchmark)
        kept = best.get(key)
        if kept is None or _priority(result) < _priority(kept.result):
            best[key] = reading
            loser = kept
        else:
            loser = reading
        if loser is not None:
            reason = (
                f"a duplicate within {reading.metric.family}:{reading.metric.protocol} of "
                f"{best[key].result.id}, which takes priority"
            )
            excluded.append(LmspeedExclusion(result=loser.result.id, reason=reason))
    by_category: dict[str, list[_Reading]] = defaultdict(list)
    for reading in best.values():
        by_category[reading.metric.category].append(reading)
    models = [m.id for m in results.models]
    categories: dict[LmspeedCategory, LmspeedCategoryScore] = {}
    for category in get_args(LmspeedCategory):
        scored, dropped = _category(category, by_category.get(category, []), models, developers)
        categories[category] = scored
        excluded += dropped
    return LmspeedScore(
        schema_version=1,
        scorer="lmspeed",
        scorer_version=LMSPEED_VERSION,
        methodology="category-score-v3.0",
        catalog_version=catalog.version,
        run_date=results.run_date,
        categories=categories,
        excluded=tuple(sorted(excluded, key=lambda e: (e.result, e.reason))),
    )


CLAIM_TOLERANCE = 1e-9
"""Published numbers agree with the replay within this, absolute or relative."""


def compare_claimed(data: bytes, where: str, replayed: LmspeedScore) -> str | None:
    """The first difference between published scores and the replay, or None.

    Raises:
        DocumentError: the published scores are not an ``lmspeed-score`` document.
    """
    claimed = validate_document(kind_of(LmspeedScore), loads_strict(data, where), where)
    found = differences(
        claimed.model_dump(mode="json"), replayed.model_dump(mode="json"), "$", CLAIM_TOLERANCE
    )
    first = next(found, None)
    return None if first is None else f"{where}: {first}"
