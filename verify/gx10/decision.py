"""The replay: the gates, the scores, the three verdict axes in the seed's precedence,
rankability and the comparison with the runner's claims."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bundle_schema.models import (
    ClaimsCheck,
    ComponentName,
    GateResult,
    Gx10Evidence,
    Gx10Replay,
    Gx10Scores,
    PinSetRef,
    ProfileDecision,
    QualificationOutcome,
    ResultValidity,
)
from pins import COMPONENTS, PinSetSource
from verify._consistency import foreign_harnesses, profile_components
from verify._facts import (
    LedgerFacts,
    infermark_facts,
)
from verify.gx10._context import Gate, Run, clip_text, shown
from verify.gx10.gates import GATES
from verify.gx10.ranking import rank_blockers, rank_group
from verify.gx10.scores import (
    component_scores,
    diagnostics,
    threshold_misses,
    under_pins,
    unscored,
)
from verify.replies import (
    exchange_failed,
)

GX10_VERSION = "1"
"""The version of this replay; it changes whenever a decision it makes could change."""

CLAIM_TOLERANCE = 1e-6
"""Claimed scores agree with the replay within this (absolute): they are printed decimals."""


Axes = tuple[QualificationOutcome, ResultValidity, ProfileDecision]


def replay(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    integrity_failure: str | None = None,
    *,
    ledger: LedgerFacts | None = None,
    gates: Sequence[Gate] = GATES,
) -> Gx10Replay:
    """Replay a run under a trusted pin set and compare with its claims.

    Args:
        evidence: the run's evidence.
        pins: the pin set to judge it by (trusted: shipped or named on the command line).
        integrity_failure: why the bundle failed integrity, if it did: nothing in it can then
            be trusted, and the result is an infrastructure failure.
        ledger: the socket ledger's facts, when a bounded reader kept them instead of its
            entries (default: read from ``evidence.socket_ledger``).
        gates: the gates to judge (default: every gate of seed 000). A list without all of
            them, or with one they do not hold, fails closed: no such replay is a result.
    """
    run = Run(evidence, pins, profile_components(pins, evidence), ledger)
    # the gates, decision, scores and diagnostics read only what is evidence under these pins:
    # not the outputs of a harness the bundle holds at another repository or commit (ADR 0036)
    foreign = foreign_harnesses(evidence, pins, run.selected)
    pinned = Run(under_pins(evidence, pins, foreign), pins, run.selected, ledger)
    judged = tuple(gate.judge(pinned) for gate in gates)
    statuses = {
        c: evidence.results[c].status if c in evidence.results else None for c in run.selected
    }
    executed = [c for c in run.selected if statuses[c] in ("COMPLETED", "PARTIAL")]
    left_out = unscored(run, executed, foreign)
    scores = component_scores(pinned, [c for c in executed if c not in left_out])
    weights = pins.pins.weights
    counted = [c for c in executed if scores[c] is not None]
    executed_weight = float(sum(weights[c] for c in counted))
    aggregate = (
        math.fsum((scores[c] or 0.0) * weights[c] for c in counted) / executed_weight
        if executed_weight
        else None
    )
    unjudged = _gate_list_problem(gates)
    if integrity_failure is not None:
        axes: Axes = ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
        reasons = [f"integrity failed: {integrity_failure}"]
    elif unjudged is not None:
        axes, reasons = ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED"), [unjudged]
    else:
        axes, reasons = _axes(
            pinned,
            judged,
            statuses=statuses,
            scores=scores,
            aggregate=aggregate,
        )
    reasons += list(left_out.values())
    reasons += _performance_zero(pinned, scores)
    if executed_weight < 100:
        reasons.append(
            f"executed weight {executed_weight:g} < 100: a plumbing qualification, not a "
            "comparable full deployment score"
        )
    outcome, validity, decision = axes
    score_model = Gx10Scores(
        **{c: scores[c] for c in COMPONENTS}, aggregate=aggregate, executed_weight=executed_weight
    )
    blockers = rank_blockers(run, validity, decision, executed_weight)
    primary = evidence.config is not None and evidence.config.track == "primary"
    claims = _compare_claims(evidence, axes, rankable=not blockers and primary, scores=score_model)
    if not claims.match:
        blockers.append("the runner's claims differ from the replay")
        reasons += [f"claims: {d}" for d in claims.differences]
    return Gx10Replay(
        schema_version=1,
        scorer="gx10",
        scorer_version=GX10_VERSION,
        run_id=evidence.run_id,
        pin_set=PinSetRef(id=pins.id, digest=pins.digest),
        outcome=outcome,
        result_validity=validity,
        profile_decision=decision,
        rankable=not blockers and primary,
        rank_group=None if blockers else rank_group(run),
        scores=score_model,
        gates=judged,
        claims=claims,
        reasons=tuple(clip_text(r) for r in reasons + [r for r in blockers if r not in reasons]),
        diagnostics=diagnostics(pinned.evidence, executed_weight, pins.pins.hermes_evaluator),
    )


def _gate_list_problem(gates: Sequence[Gate]) -> str | None:
    """Why a list of gates cannot decide a result: it is empty, misses a gate of seed 000,
    holds one twice, or holds one this replay does not know. None: it is every gate."""
    ids = [g.id for g in gates]
    known = {g.id: g for g in GATES}
    unknown = [g.id for g in gates if known.get(g.id) is not g]
    missing = [i for i in known if i not in ids]
    if not ids or unknown or missing or len(set(ids)) != len(ids):
        shown_ids = ", ".join(unknown or missing) or "a gate twice"
        return f"the gate list is not seed 000's ({shown_ids}): no result is decided without it"
    return None


def _performance_zero(run: Run, scores: Mapping[ComponentName, float | None]) -> list[str]:
    """Why the performance score is zero: when errors made it so, which streaming exchanges
    failed and how (their status and the observer's error, or a stream Infermark's client
    fails on: the reading the bounded path keeps, so it says the same); otherwise the two
    measurements the seed's formula made zero."""
    record = run.evidence.infermark
    if record is None or scores.get("performance") != 0.0:
        return []
    if not record.errors:
        return [
            f"performance 0: {record.tokens_per_second:g} visible chunks/s scores 0 for throughput "
            f"(10 a chunk/s, at most 100) and {_ttft(record.ttft_p50_seconds)} scores 0 "
            "(100 less 10 a second over 1 s)"
        ]
    failed = [
        e
        for e in run.evidence.transport or ()
        if e.component == "performance"
        and (exchange_failed(e) or ((r := infermark_facts(e)) is not None and r.failed))
    ]
    listed = [
        f"exchange {e.id} ({e.status if e.status is not None else 'no response'}"
        f"{': ' + clip_text(e.error, 300) if e.error else ''}"
        f"{'' if exchange_failed(e) else _FAILS_ON})"
        for e in failed[:5]
    ]
    if len(failed) > 5:
        listed.append(f"{len(failed) - 5} more")
    return [
        f"performance 0: {record.errors} of {record.requests} streaming requests failed, and "
        f"any error scores zero: "
        f"{', '.join(listed) or 'the transport log shows no failed exchange'}"
    ]


_FAILS_ON = ": a stream Infermark's client fails on"
"""How a 200 whose stream ended Infermark's request as an error is named (ADR 0049)."""


def _ttft(p50: float | None) -> str:
    return (
        "no TTFT (no request streamed a visible chunk)"
        if p50 is None
        else (f"a TTFT p50 of {p50:g} s")
    )


def _axes(
    run: Run,
    gates: Sequence[GateResult],
    *,
    statuses: Mapping[ComponentName, str | None],
    scores: Mapping[ComponentName, float | None],
    aggregate: float | None,
) -> tuple[Axes, list[str]]:
    """The three decisions in the seed's precedence (quarantine, infrastructure, incomplete,
    then the model's) and why. ``run.evidence`` holds no marker of a foreign harness (its
    outputs are no evidence here, ADR 0036)."""
    evidence, selected = run.evidence, run.selected
    if not selected:
        reason = f"profile {evidence.profile!r} is not defined by pin set {run.pins.id}"
        return ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED"), [reason]
    # the upstream's marker quarantines (seed 000: it is authoritative), never a status alone:
    # a QUARANTINED result without one is a record that disagrees (verify._consistency)
    quarantined = [c for c in selected if c in evidence.quarantines]
    if quarantined:
        reasons = [
            f"{c} quarantined by its upstream: {evidence.quarantines[c].upstream_reason}"
            for c in quarantined
        ]
        return ("INFRA_ERROR", "QUARANTINED", "NOT_ASSESSED"), reasons
    infra = [g for g in gates if g.status == "infra"]
    failed = [c for c in selected if statuses[c] == "FAILED"]  # a failed runner
    if infra or failed:
        reasons = [f"{g.id}: {g.reason}" for g in infra]
        for c in failed:
            reasons.append(f"{c} failed: {evidence.results[c].reason or 'no reason recorded'}")
        return ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED"), reasons
    missing = [c for c in selected if statuses[c] in (None, "NOT_RUN")]
    partial = [
        c for c in selected if c not in missing and (statuses[c] == "PARTIAL" or scores[c] is None)
    ]
    if missing or partial:
        reasons = [f"{c} did not complete ({statuses[c] or 'no result'})" for c in missing]
        reasons += [f"{c} is partial: its score stays visible but cannot qualify" for c in partial]
        return ("INFRA_ERROR", "INCOMPLETE", "NOT_ASSESSED"), reasons
    failures = [f"{g.id}: {g.reason}" for g in gates if g.status == "fail"]
    failures += threshold_misses(run, scores, aggregate)
    if failures:
        return ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE"), failures
    return ("QUALIFIED", "VALID", "MEETS_PROFILE"), []


def _compare_claims(
    evidence: Gx10Evidence, axes: Axes, *, rankable: bool, scores: Gx10Scores
) -> ClaimsCheck:
    claims = evidence.claims
    claimed_axes = (claims.outcome, claims.result_validity, claims.profile_decision)
    names = ("outcome", "result_validity", "profile_decision")
    differences = [
        f"{name}: claimed {claimed}, replayed {replayed}"
        for name, claimed, replayed in zip(names, claimed_axes, axes, strict=True)
        if claimed != replayed
    ]
    if claims.rankable != rankable:
        differences.append(f"rankable: claimed {claims.rankable}, replayed {rankable}")
    for name, claimed_value, replayed_value in _numbers(claims, scores):
        if (claimed_value is None) != (replayed_value is None) or (
            claimed_value is not None
            and replayed_value is not None
            and abs(claimed_value - replayed_value) > CLAIM_TOLERANCE
        ):
            differences.append(
                f"{name}: claimed {shown(claimed_value)}, replayed {shown(replayed_value)}"
            )
    for name in sorted(set(claims.component_scores) - set(COMPONENTS)):
        claimed = claims.component_scores[name]
        differences.append(
            f"component_scores.{name}: claimed {shown(claimed)}, and there is no such component"
        )
    return ClaimsCheck(match=not differences, differences=tuple(differences))


def _numbers(claims: Any, scores: Gx10Scores) -> Iterable[tuple[str, float | None, float | None]]:
    yield "aggregate_score", claims.aggregate_score, scores.aggregate
    yield "executed_weight", float(claims.executed_weight), scores.executed_weight
    for component in COMPONENTS:
        claimed = claims.component_scores.get(component)
        yield (
            f"component_scores.{component}",
            None if claimed is None else float(claimed),
            getattr(scores, component),
        )
