"""The public ranking of seed 000: which verified runs enter it, in which order, and where the
others are listed instead. Pure: it orders verdicts it is given; it reads no bundle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bundle_schema.models import Gx10Evidence, PinSetRef, Ranking, RankRow, Verdict

__all__ = ["Ranked", "rank"]

_ORDER = ("aggregate", "coding", "hermes", "tool_instruction", "reliability", "performance")


@dataclass(frozen=True)
class Ranked:
    """One verified run to place: where it came from, its verdict, and its evidence."""

    source: str
    verdict: Verdict
    evidence: Gx10Evidence


def _key(row: RankRow) -> tuple[object, ...]:
    """Overall score descending, then coding, Hermes, tool/instruction, reliability and
    performance descending, then timestamp and run id: the tie-break alters no score."""
    scores = row.scores.model_dump()
    descending = tuple(-(scores[name] if scores[name] is not None else -1.0) for name in _ORDER)
    return (*descending, row.created_at, row.run_id, row.bundle_digest)


def _row(item: Ranked, reasons: Sequence[str] = ()) -> RankRow:
    verdict, evidence = item.verdict, item.evidence
    policy = evidence.config.reasoning_policy.effective if evidence.config else None
    return RankRow(
        position=None,
        run_id=verdict.run_id,
        source=item.source,
        bundle_digest=verdict.bundle_digest,
        created_at=evidence.created_at,
        model=evidence.model.runtime_model_id,
        model_digest=evidence.model.digest,
        reasoning_policy=policy,
        pin_set=verdict.pin_set,
        outcome=verdict.outcome,
        result_validity=verdict.result_validity,
        profile_decision=verdict.profile_decision,
        rank_group=verdict.rank_group,
        scores=verdict.scores,
        reasons=tuple(reasons) or verdict.reasons,
    )


def _limited(item: Ranked, pin_set: PinSetRef) -> bool:
    """A complete NOT_QUALIFIED result that would otherwise be comparable."""
    verdict, evidence = item.verdict, item.evidence
    return (
        verdict.integrity.status == "ok"
        and verdict.claims.match
        and verdict.result_validity == "VALID"
        and verdict.profile_decision == "DOES_NOT_MEET_PROFILE"
        and verdict.pin_set == pin_set
        and evidence.pin_set == pin_set
        and verdict.diagnostics.comparable
        and evidence.config is not None
        and evidence.config.track == "primary"
    )


def rank(items: Iterable[Ranked], pin_set: PinSetRef) -> Ranking:
    """Place verified runs: the ranking under ``pin_set``, the limitations table, the
    controlled-policy groups, and everything else apart with its reasons."""
    ranked: list[RankRow] = []
    limitations: list[RankRow] = []
    controlled: dict[str, list[RankRow]] = defaultdict(list)
    apart: list[RankRow] = []
    for item in items:
        verdict = item.verdict
        same_pins = verdict.pin_set == pin_set and item.evidence.pin_set == pin_set
        group = verdict.rank_group
        if group == "primary" and verdict.rankable and same_pins:
            ranked.append(_row(item))
        elif group is not None and group.startswith("controlled:") and same_pins:
            controlled[group].append(_row(item))
        elif _limited(item, pin_set):
            limitations.append(_row(item))
        else:
            reasons = list(verdict.reasons)
            if not same_pins:
                reasons.insert(0, f"judged under {verdict.pin_set.id}, not {pin_set.id}")
            apart.append(_row(item, reasons))

    def ordered(rows: list[RankRow], numbered: bool) -> tuple[RankRow, ...]:
        rows = sorted(rows, key=_key)
        if not numbered:
            return tuple(rows)
        return tuple(r.model_copy(update={"position": i}) for i, r in enumerate(rows, start=1))

    return Ranking(
        schema_version=1,
        pin_set=pin_set,
        ranked=ordered(ranked, numbered=True),
        limitations=ordered(limitations, numbered=False),
        controlled={g: ordered(rows, numbered=False) for g, rows in sorted(controlled.items())},
        apart=tuple(sorted(apart, key=lambda r: (r.created_at, r.run_id, r.bundle_digest))),
    )
