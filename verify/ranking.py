"""The public ranking of seed 000: which verified runs enter it, in which order, and where the
others are listed instead; and how an archive counts each bundle once (:func:`distinct`).
Pure: it orders verdicts it is given; it reads no bundle.

An archive keeps of each bundle only its :class:`Facts` (what the ranking and :func:`distinct`
read), never its evidence, so that memory does not grow with the evidence of 10,000 bundles."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import one_line
from bundle_schema.models import (
    Gx10Evidence,
    Gx10Scores,
    Manifest,
    PinSetRef,
    ProfileDecision,
    QualificationOutcome,
    RankGroup,
    Ranking,
    RankRow,
    ResultValidity,
    Verdict,
)

__all__ = ["Distinct", "Entry", "Facts", "Found", "Ranked", "contents_key", "distinct", "rank"]

_ORDER = ("aggregate", "coding", "hermes", "tool_instruction", "reliability", "performance")


@dataclass(frozen=True)
class Facts:
    """What :func:`rank` and :func:`distinct` read of one verified run: a few fields of its
    verdict and of its evidence (a kilobyte or two, where the evidence is megabytes)."""

    run_id: str
    bundle_digest: str
    pin_set: PinSetRef
    """The pin set the run was judged by (the verdict's)."""
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rankable: bool
    rank_group: RankGroup | None
    scores: Gx10Scores
    reasons: tuple[str, ...]
    intact: bool
    """The integrity check found nothing."""
    claims_match: bool
    comparable: bool
    why: str
    """Why the verdict is what it is, in one line: its first integrity finding, else its
    first reason (what a note on a source that verified differently says)."""
    verdict_digest: str
    """The digest of the whole verdict's canonical JSON: two sources verified the same when
    theirs are equal."""
    created_at: str
    model: str
    model_digest: str
    reasoning_policy: str | None
    track: str | None
    recorded_pin_set: PinSetRef
    """The pin set the run was recorded under (the evidence's)."""

    @classmethod
    def of(cls, verdict: Verdict, evidence: Gx10Evidence) -> Facts:
        """The facts of a verdict and the evidence it was decided from."""
        config = evidence.config
        return cls(
            run_id=verdict.run_id,
            bundle_digest=verdict.bundle_digest,
            pin_set=verdict.pin_set,
            outcome=verdict.outcome,
            result_validity=verdict.result_validity,
            profile_decision=verdict.profile_decision,
            rankable=verdict.rankable,
            rank_group=verdict.rank_group,
            scores=verdict.scores,
            reasons=verdict.reasons,
            intact=verdict.integrity.status == "ok",
            claims_match=verdict.claims.match,
            comparable=verdict.diagnostics.comparable,
            why=_why(verdict),
            verdict_digest=digest_of(canonical_bytes(verdict.model_dump(mode="json"))),
            created_at=evidence.created_at,
            model=evidence.model.runtime_model_id,
            model_digest=evidence.model.digest,
            reasoning_policy=config.reasoning_policy.effective if config else None,
            track=config.track if config else None,
            recorded_pin_set=evidence.pin_set,
        )


@dataclass(frozen=True)
class Ranked:
    """One verified run to place: where it came from, its verdict, and its evidence."""

    source: str
    verdict: Verdict
    evidence: Gx10Evidence
    copy_of: str | None = None
    """Why the run is listed apart as a copy of another bundle (see :func:`distinct`)."""

    @property
    def facts(self) -> Facts:
        """What :func:`rank` reads of it."""
        return Facts.of(self.verdict, self.evidence)


@dataclass(frozen=True)
class Entry:
    """One verified run to place, as an archive keeps it: its source, its :class:`Facts`, and
    why it is a copy of another bundle, if it is one."""

    source: str
    facts: Facts
    copy_of: str | None = None


@dataclass(frozen=True)
class Found:
    """One source of an archive as verified: a bundle directory or tar, the :class:`Facts` of
    its verdict and evidence, and the :func:`contents_key` of its manifest."""

    source: str
    facts: Facts
    contents: str


@dataclass(frozen=True)
class Distinct:
    """One bundle of an archive: the source whose verdict counts, every source that holds the
    same bundle digest, and, for a copy of another bundle, why it is not placed."""

    kept: Found
    sources: tuple[str, ...]
    copy_of: str | None = None

    def ranked(self) -> Entry:
        """The bundle as :func:`rank` places it; its source names every source of it."""
        return Entry(_joined(self.sources), self.kept.facts, self.copy_of)


MAX_SOURCE = 4096
"""A row's ``source`` is at most this long (the ranking schema's bound)."""


def _joined(sources: Sequence[str]) -> str:
    text = ", ".join(sources)
    if len(text) <= MAX_SOURCE:
        return text
    tail = f", ... ({len(sources)} sources)"
    return text[: MAX_SOURCE - len(tail)] + tail


def contents_key(manifest: Manifest) -> str:
    """What a copy shares with the bundle it copies: the model digest and the digest of every
    evidence entry by logical name. Two bundles that differ only in run id or creation time
    (so in bundle digest) have the same key."""
    value = {
        "model_digest": manifest.model.digest,
        "evidence": {name: entry.digest for name, entry in manifest.evidence.items()},
    }
    return digest_of(canonical_bytes(value))


def _why(verdict: Verdict) -> str:
    findings = verdict.integrity.findings
    if findings:
        return f"integrity failed: {findings[0].message}"
    return verdict.reasons[0] if verdict.reasons else "another verdict"


def distinct(found: Iterable[Found]) -> tuple[list[Distinct], list[str]]:
    """Count each bundle of an archive once, and flag the copies.

    - Sources with the same bundle digest (a directory and its tar, one path given twice) are one
      bundle. Its verdict is that of the first intact source by path; a source whose verdict
      differs (a corrupted copy) is named in a note.
    - Bundles with the same :func:`contents_key` but another bundle digest (the same evidence and
      model, another run id or creation time) are copies: the first intact one by creation time,
      then bundle digest, is kept; every other one gets ``copy_of``, a reason naming it.

    Returns:
        The bundles, ordered by bundle digest, and the notes (sources that were one bundle,
        sources that verified differently), in the same order.
    """
    by_digest: dict[str, list[Found]] = defaultdict(list)
    for item in found:
        by_digest[item.facts.bundle_digest].append(item)
    bundles: list[Distinct] = []
    notes: list[str] = []
    for digest, group in sorted(by_digest.items()):
        group.sort(key=lambda f: (not f.facts.intact, f.source))
        kept, sources = group[0], tuple(sorted({f.source for f in group}))
        if len(sources) > 1:
            notes.append(f"{digest} is one bundle, counted once: {', '.join(sources)}")
        for other in group[1:]:
            if other.facts.verdict_digest != kept.facts.verdict_digest:
                notes.append(
                    f"{other.source}: the same bundle as {kept.source}, verified differently "
                    f"({other.facts.why}); {kept.source} counts"
                )
        bundles.append(Distinct(kept, sources))
    by_contents: dict[str, list[Distinct]] = defaultdict(list)
    for bundle in bundles:
        by_contents[bundle.kept.contents].append(bundle)
    flagged: dict[str, str] = {}
    for same in by_contents.values():
        same.sort(
            key=lambda b: (
                not b.kept.facts.intact,
                b.kept.facts.created_at,
                b.kept.facts.bundle_digest,
            )
        )
        original = same[0].kept
        for copy in same[1:]:
            flagged[copy.kept.facts.bundle_digest] = one_line(
                f"a copy of {original.facts.bundle_digest} (run {original.facts.run_id}, "
                f"{original.source}): the same evidence entries and model digest under another "
                "run id or creation time; only the earliest intact one is placed",
                MAX_SOURCE,
            )
    result = [Distinct(b.kept, b.sources, flagged.get(b.kept.facts.bundle_digest)) for b in bundles]
    return result, notes


def _key(row: RankRow) -> tuple[object, ...]:
    """Overall score descending, then coding, Hermes, tool/instruction, reliability and
    performance descending, then timestamp and run id: the tie-break alters no score."""
    scores = row.scores.model_dump()
    descending = tuple(-(scores[name] if scores[name] is not None else -1.0) for name in _ORDER)
    return (*descending, row.created_at, row.run_id, row.bundle_digest)


def _row(source: str, facts: Facts, reasons: Sequence[str] = ()) -> RankRow:
    return RankRow(
        position=None,
        run_id=facts.run_id,
        source=source,
        bundle_digest=facts.bundle_digest,
        created_at=facts.created_at,
        model=facts.model,
        model_digest=facts.model_digest,
        reasoning_policy=facts.reasoning_policy,
        pin_set=facts.pin_set,
        outcome=facts.outcome,
        result_validity=facts.result_validity,
        profile_decision=facts.profile_decision,
        rank_group=facts.rank_group,
        scores=facts.scores,
        reasons=tuple(reasons) or facts.reasons,
    )


def _limited(facts: Facts, pin_set: PinSetRef) -> bool:
    """A complete NOT_QUALIFIED result that would otherwise be comparable."""
    return (
        facts.intact
        and facts.claims_match
        and facts.result_validity == "VALID"
        and facts.profile_decision == "DOES_NOT_MEET_PROFILE"
        and facts.pin_set == pin_set
        and facts.recorded_pin_set == pin_set
        and facts.comparable
        and facts.track == "primary"
    )


def _other_pins(facts: Facts, pin_set: PinSetRef) -> str:
    """Why a row stands apart from the ranking of ``pin_set``: judged under another pin set, or
    another digest of it, or recorded under another than the one that judged it."""
    judged, recorded = facts.pin_set, facts.recorded_pin_set
    if judged.id != pin_set.id:
        return f"judged under {judged.id}, not {pin_set.id}"
    if judged.digest != pin_set.digest:
        return f"judged under {judged.id} {judged.digest}, not {pin_set.digest}"
    return (
        f"recorded under {recorded.id} {recorded.digest}, judged under {pin_set.id} "
        f"{pin_set.digest}"
    )


def rank(
    items: Iterable[Ranked | Entry], pin_set: PinSetRef, *, demo_only: bool = False
) -> Ranking:
    """Place verified runs: the ranking under ``pin_set``, the limitations table, the
    controlled-policy groups, and everything else apart with its reasons (a copy of another
    bundle, see :func:`distinct`, is apart with the bundle it copies as its first reason).
    Under a ``demo_only`` pin set (reference harnesses) every run is apart."""
    ranked: list[RankRow] = []
    limitations: list[RankRow] = []
    controlled: dict[str, list[RankRow]] = defaultdict(list)
    apart: list[RankRow] = []
    for item in items:
        source, facts = item.source, item.facts
        if item.copy_of is not None:
            apart.append(_row(source, facts, (item.copy_of, *facts.reasons)))
            continue
        if demo_only:
            note = f"{pin_set.id} is a demo-only pin set (reference harnesses): nothing ranks"
            apart.append(_row(source, facts, (note, *facts.reasons)))
            continue
        same_pins = facts.pin_set == pin_set and facts.recorded_pin_set == pin_set
        group = facts.rank_group
        if group == "primary" and facts.rankable and same_pins:
            ranked.append(_row(source, facts))
        elif group is not None and group.startswith("controlled:") and same_pins:
            controlled[group].append(_row(source, facts))
        elif _limited(facts, pin_set):
            limitations.append(_row(source, facts))
        else:
            reasons = list(facts.reasons)
            if not same_pins:
                reasons.insert(0, _other_pins(facts, pin_set))
            apart.append(_row(source, facts, reasons))

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
