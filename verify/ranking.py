"""The public ranking of seed 000: which verified runs enter it, in which order, and where the
others are listed instead; and how an archive counts each bundle once (:func:`distinct`).
Pure: it orders verdicts it is given; it reads no bundle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import one_line
from bundle_schema.models import Gx10Evidence, Manifest, PinSetRef, Ranking, RankRow, Verdict

__all__ = ["Distinct", "Found", "Ranked", "contents_key", "distinct", "rank"]

_ORDER = ("aggregate", "coding", "hermes", "tool_instruction", "reliability", "performance")


@dataclass(frozen=True)
class Ranked:
    """One verified run to place: where it came from, its verdict, and its evidence."""

    source: str
    verdict: Verdict
    evidence: Gx10Evidence
    copy_of: str | None = None
    """Why the run is listed apart as a copy of another bundle (see :func:`distinct`)."""


@dataclass(frozen=True)
class Found:
    """One source of an archive as verified: a bundle directory or tar, its verdict, its
    evidence, and the :func:`contents_key` of its manifest."""

    source: str
    verdict: Verdict
    evidence: Gx10Evidence
    contents: str


@dataclass(frozen=True)
class Distinct:
    """One bundle of an archive: the source whose verdict counts, every source that holds the
    same bundle digest, and, for a copy of another bundle, why it is not placed."""

    kept: Found
    sources: tuple[str, ...]
    copy_of: str | None = None

    def ranked(self) -> Ranked:
        """The bundle as :func:`rank` places it; its source names every source of it."""
        kept = self.kept
        return Ranked(_joined(self.sources), kept.verdict, kept.evidence, self.copy_of)


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


def _broken(verdict: Verdict) -> bool:
    return verdict.integrity.status != "ok"


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
        by_digest[item.verdict.bundle_digest].append(item)
    bundles: list[Distinct] = []
    notes: list[str] = []
    for digest, group in sorted(by_digest.items()):
        group.sort(key=lambda f: (_broken(f.verdict), f.source))
        kept, sources = group[0], tuple(sorted({f.source for f in group}))
        if len(sources) > 1:
            notes.append(f"{digest} is one bundle, counted once: {', '.join(sources)}")
        for other in group[1:]:
            if other.verdict != kept.verdict:
                notes.append(
                    f"{other.source}: the same bundle as {kept.source}, verified differently "
                    f"({_why(other.verdict)}); {kept.source} counts"
                )
        bundles.append(Distinct(kept, sources))
    by_contents: dict[str, list[Distinct]] = defaultdict(list)
    for bundle in bundles:
        by_contents[bundle.kept.contents].append(bundle)
    flagged: dict[str, str] = {}
    for same in by_contents.values():
        same.sort(
            key=lambda b: (
                _broken(b.kept.verdict),
                b.kept.evidence.created_at,
                b.kept.verdict.bundle_digest,
            )
        )
        original = same[0].kept
        for copy in same[1:]:
            flagged[copy.kept.verdict.bundle_digest] = one_line(
                f"a copy of {original.verdict.bundle_digest} (run {original.verdict.run_id}, "
                f"{original.source}): the same evidence entries and model digest under another "
                "run id or creation time; only the earliest intact one is placed",
                MAX_SOURCE,
            )
    result = [
        Distinct(b.kept, b.sources, flagged.get(b.kept.verdict.bundle_digest)) for b in bundles
    ]
    return result, notes


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


def rank(items: Iterable[Ranked], pin_set: PinSetRef, *, demo_only: bool = False) -> Ranking:
    """Place verified runs: the ranking under ``pin_set``, the limitations table, the
    controlled-policy groups, and everything else apart with its reasons (a copy of another
    bundle, see :func:`distinct`, is apart with the bundle it copies as its first reason).
    Under a ``demo_only`` pin set (reference harnesses) every run is apart."""
    ranked: list[RankRow] = []
    limitations: list[RankRow] = []
    controlled: dict[str, list[RankRow]] = defaultdict(list)
    apart: list[RankRow] = []
    for item in items:
        verdict = item.verdict
        if item.copy_of is not None:
            apart.append(_row(item, (item.copy_of, *verdict.reasons)))
            continue
        if demo_only:
            note = f"{pin_set.id} is a demo-only pin set (reference harnesses): nothing ranks"
            apart.append(_row(item, (note, *verdict.reasons)))
            continue
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
