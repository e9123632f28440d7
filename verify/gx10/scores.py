"""The component scores (seed 000, "Deployment score"), the profile thresholds, and the
diagnostics shown beside the scores (supplementary harnesses' figures included)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.models import (
    BfclScore,
    BfclShard,
    ComponentName,
    Gx10Diagnostics,
    Gx10Evidence,
    SupplementaryMetrics,
    TaskTallies,
)
from bundle_schema.roles import ROLES
from pins import COMPONENTS, PinSetSource
from verify.gx10._context import Run, shown
from verify.gx10.hermes import full_pass, infra_task, task_metrics
from verify.harness_outputs import gate_record
from verify.scorers.bfcl import LoadedShard, ShardRefused, score_shards

# --- what is evidence under the pin set (ADR 0036) --------------------------------------------

RECORD_OF: Mapping[str, str] = {
    role.fills: role.pattern.split("/")[1]
    for role in ROLES
    if role.fills is not None
    and role.pattern.startswith("components/")
    and "{" not in role.pattern.split("/")[1]
}
"""Each harness record of the evidence (the field its place fills, bundle_schema/roles) and
the component whose harness writes it: the component its place is under."""


def under_pins(
    evidence: Gx10Evidence, pins: PinSetSource, foreign: Collection[str]
) -> Gx10Evidence:
    """``evidence`` without what ``foreign`` harnesses wrote (their records, quarantine markers
    and gate tallies), nor the records of a component the pin set names no harness for: the
    outputs of another harness than the pin set pins, which none of its readers re-read, are
    no evidence under it (ADR 0036). The gates, the decision, the scores and the diagnostics
    read this, so that such records change no byte of a verdict."""
    upstreams = pins.pins.component_upstreams
    off: set[str] = {c for c, u in upstreams.items() if u in foreign}
    off |= {c for c in RECORD_OF.values() if c not in upstreams}
    off |= {c for c in evidence.quarantines if c not in upstreams}
    if not off and not foreign:
        return evidence
    update: dict[str, Any] = {field: None for field, c in RECORD_OF.items() if c in off}
    update["quarantines"] = {c: m for c, m in evidence.quarantines.items() if c not in off}
    kept = {
        c: {u: t for u, t in gates.items() if u not in foreign}
        for c, gates in evidence.supplementary.items()
    }
    update["supplementary"] = {c: gates for c, gates in kept.items() if gates}
    return evidence.model_copy(update=update)


def unscored(
    run: Run, executed: Iterable[ComponentName], foreign: Mapping[str, str]
) -> dict[ComponentName, str]:
    """The executed components no score is replayed for, and why: the pin set names no harness
    for it, or the bundle holds its harness at another repository or commit (``foreign``,
    its reason). Their records were re-read by no reader of the pin set (ADR 0036). Either
    fails ``upstream_checkout``, so a score left out never decides a verdict."""
    upstreams = run.pins.pins.component_upstreams
    why: dict[ComponentName, str] = {}
    for component in executed:
        upstream = upstreams.get(component)
        if upstream is None:
            why[component] = (
                f"{component} not scored: pin set {run.pins.id} pins no harness for it, so no "
                "reader of it re-read its records"
            )
        elif upstream in foreign:
            why[component] = (
                f"{component} not scored: {foreign[upstream]}; its records are another "
                f"harness's outputs, no evidence under pin set {run.pins.id}"
            )
    return why


# --- scores -----------------------------------------------------------------------------------


def performance_score(
    tokens_per_second: float, ttft_p50_seconds: float | None, errors: int
) -> float:
    """The seed's normalization: errors score zero; otherwise the mean of throughput and TTFT.
    A TTFT never measured (no request streamed a visible content chunk: the first never came)
    scores 0, as a TTFT past 11 s does (ADR 0049)."""
    if errors:
        return 0.0
    throughput = min(100.0, tokens_per_second * 10)
    if ttft_p50_seconds is None:
        return throughput / 2
    ttft = max(0.0, 100 - max(0.0, ttft_p50_seconds - 1) * 10)
    return (throughput + ttft) / 2


def component_scores(
    run: Run, executed: Sequence[ComponentName]
) -> dict[ComponentName, float | None]:
    evidence = run.evidence
    tasks = evidence.hermes_tasks
    evaluator = run.pins.pins.hermes_evaluator
    hermes = (
        100 * sum(full_pass(t, evaluator) for t in tasks) / len(tasks)
        if tasks and not any(infra_task(t, evaluator) for t in tasks)
        else None  # a task that failed on infrastructure leaves the score unmeasured
    )
    values: dict[ComponentName, float | None] = {
        "coding": evidence.spark_quality.code_domain_quality if evidence.spark_quality else None,
        "hermes": hermes,
        "tool_instruction": (
            math.fsum(evidence.benchlocal.packs.values()) / len(evidence.benchlocal.packs)
            if evidence.benchlocal and evidence.benchlocal.packs
            else None
        ),
        "reliability": (
            evidence.spark_repeat.repeat_reliability
            if evidence.spark_repeat
            else (hermes if evidence.spark_quality is None else None)
        ),
        "performance": (
            performance_score(
                float(evidence.infermark.tokens_per_second),
                evidence.infermark.ttft_p50_seconds,
                evidence.infermark.errors,
            )
            if evidence.infermark
            else None
        ),
    }
    return {
        c: (float(values[c]) if c in executed and values[c] is not None else None)  # type: ignore[arg-type]
        for c in COMPONENTS
    }


def threshold_misses(
    run: Run, scores: Mapping[ComponentName, float | None], aggregate: float | None
) -> list[str]:
    bounds = run.pins.pins.thresholds.get(run.evidence.profile)
    if bounds is None:
        return []
    misses = []
    if aggregate is None or aggregate < bounds.aggregate:
        misses.append(f"aggregate {shown(aggregate)} is under {bounds.aggregate}")
    for component in ("coding", "hermes", "tool_instruction", "reliability"):
        if component not in run.selected:
            continue
        bound = getattr(bounds, component)
        value = scores.get(component)
        if value is None or value < bound:
            misses.append(f"{component} {shown(value)} is under {bound}")
    return misses


def tasks_problem(tallies: TaskTallies) -> str | None:
    """Why per-task tallies do not aggregate (no task, a task of no sample, more hits than
    samples); None: they do."""
    if not tallies.tasks:
        return "no task"
    for task, tally in sorted(tallies.tasks.items()):
        if tally.n == 0 or tally.hits > tally.n:
            return f"task {task!r}: {tally.hits} hits of {tally.n} samples"
    return None


def gate_score(tallies: BfclShard, where: str) -> BfclScore:
    """A gate's tallies aggregated as BFCL V4 does (seed 003's refusals applied).

    Raises:
        ShardRefused: the tallies do not aggregate.
    """
    digest = digest_of(canonical_bytes(tallies.model_dump(mode="json")))
    return score_shards([LoadedShard(where, digest, tallies)], None, "bfcl-v4")


def diagnostics(evidence: Gx10Evidence, executed_weight: float, evaluator: str) -> Gx10Diagnostics:
    infermark = evidence.infermark
    itl = infermark.itl_mean_seconds if infermark else None
    quarantine = next(iter(sorted(evidence.quarantines.items())), (None, None))[1]
    return Gx10Diagnostics(
        comparable=executed_weight >= 100,
        e2e_visible_chunks_per_second=float(infermark.tokens_per_second) if infermark else None,
        estimated_visible_generation_chunks_per_second=_per_second(itl),
        ttft_p50_seconds=infermark.ttft_p50_seconds if infermark else None,
        itl_mean_seconds=itl,
        requests=infermark.requests if infermark else None,
        errors=infermark.errors if infermark else None,
        tier2=evidence.spark_quality.tier2 if evidence.spark_quality else None,
        hermes_tasks=tuple(task_metrics(t, evaluator) for t in evidence.hermes_tasks or ()),
        quarantine=quarantine,
        supplementary=tuple(_supplementary(evidence)),
    )


def _per_second(itl: float | None) -> float | None:
    """1 / mean ITL, the estimated visible generation chunk/s; None where there is no ITL or
    its inverse is past any float (a subnormal ITL mean)."""
    if not itl:
        return None
    rate = 1 / itl
    return rate if math.isfinite(rate) else None


def _supplementary(evidence: Gx10Evidence) -> Iterable[SupplementaryMetrics]:
    """Each supplementary harness's figures, replayed from its tallies (those that aggregate;
    the gate says why the others do not): shown beside the scores, never in them."""
    for component, gates in sorted(evidence.supplementary.items()):
        for upstream, tallies in sorted(gates.items()):
            if isinstance(tallies, TaskTallies):
                if tasks_problem(tallies) is None:
                    yield _task_figures(component, upstream, tallies)
                continue
            try:
                score = gate_score(tallies, gate_record(component, upstream, "bfcl-eval"))
            except ShardRefused:
                continue
            hits = sum(t.hits for t in score.tallies.values())
            samples = sum(t.n for t in score.tallies.values())
            v4 = score.categories.get("overall_accuracy")
            yield SupplementaryMetrics(
                component=component, upstream=upstream, subsets=len(score.tallies),
                samples=samples, overall_accuracy=100 * hits / samples if samples else 0.0,
                v4_overall=100 * (v4 or 0.0),
            )  # fmt: skip


def _task_figures(component: str, upstream: str, tallies: TaskTallies) -> SupplementaryMetrics:
    """A per-task harness's figures (Inspect AI, lm-evaluation-harness: ADR 0027): its tasks,
    samples and flat accuracy, the version and the model name it reported."""
    hits = sum(t.hits for t in tallies.tasks.values())
    samples = sum(t.n for t in tallies.tasks.values())
    return SupplementaryMetrics(
        component=component, upstream=upstream, subsets=len(tallies.tasks), samples=samples,
        overall_accuracy=100 * hits / samples, harness_version=tallies.version,
        harness_model=tallies.model,
    )  # fmt: skip
