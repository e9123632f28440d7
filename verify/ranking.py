"""The public ranking of seed 000: which verified runs enter it (:func:`place`), in which order,
and where the others are listed instead; in memory (:func:`rank`) or, for an archive, on disk
(:class:`SpooledRanking`). It orders verdicts it is given; it reads no bundle.

An archive keeps of each bundle only its :class:`Facts` (what the ranking and the count of each
bundle once, :class:`verify.judging.JudgedArchive`, read), never its evidence, so that memory
does not grow with the evidence of 10,000 bundles."""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.canonical import member_key, write_array
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
    RunDiff,
    Signer,
    Verdict,
)
from pins import takes_a_shipped_id
from verify._spool import Spool, Spooled, named, sortable, text
from verify.policy import failed_check, signature_failure

__all__ = [
    "TABLES",
    "Distinct",
    "Entry",
    "Facts",
    "Found",
    "Ranked",
    "SpooledRanking",
    "contents_key",
    "place",
    "rank",
]

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
    passed: bool
    """What ``audit verify`` checks without ``--require`` passed: integrity, signature,
    claims (:func:`verify.policy.failed_check`)."""
    unsigned: str | None
    """Why the signature failed under the identity policy the run was verified with (an
    archive command's ``--identity`` and ``--issuer``); None: it verified, or none was given."""
    comparable: bool
    why: str
    """Why the verdict is what it is, in one line: its first integrity finding, else its failed
    signature, else its first reason (what a note on a source that verified differently
    says)."""
    verdict_digest: str
    """The digest of the whole verdict's JSON: two sources verified the same when theirs are
    equal. Pydantic's JSON (one pass in its core), not canonical: it is compared only with
    another this code made of a verdict, never written out."""
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
            passed=failed_check(verdict) is None,
            unsigned=signature_failure(verdict),
            comparable=verdict.diagnostics.comparable,
            why=_why(verdict),
            verdict_digest=digest_of(verdict.model_dump_json().encode()),
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
    same bundle digest, and, for a copy of another bundle, why it is not placed; for
    ``rejudge``, the diff of the kept source's verdicts before and under the new pin set."""

    kept: Found
    sources: tuple[str, ...]
    copy_of: str | None = None
    diff: RunDiff | None = None

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
    if (unsigned := signature_failure(verdict)) is not None:
        return f"signature failed: {unsigned}"
    return verdict.reasons[0] if verdict.reasons else "another verdict"


_FRACTION = re.compile(r"[.,](\d+)")


def instant(created_at: str) -> tuple[str, str]:
    """A creation time (RFC 3339) as a sort key: the instant it names, in UTC to the
    nanosecond (RFC 3339 allows any number of digits; Python's datetime keeps six) at a fixed
    width, so that text order is time order (``11:45:00Z`` before ``11:45:00.5Z``, though
    ``.`` sorts before ``Z``; one that does not read after every other), then as written. A key
    of strings: a spooled ranking sorts its keys as bytes."""
    last = dt.datetime.max.replace(tzinfo=dt.UTC)
    try:
        moment = dt.datetime.fromisoformat(created_at)
        utc = (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    except (ValueError, OverflowError):  # not a time; or past year 9999 in UTC
        utc = last
    if utc == last:
        nanos = "999999999"
    else:
        fraction = _FRACTION.search(created_at)
        nanos = (fraction.group(1) if fraction is not None else "").ljust(9, "0")[:9]
    return f"{utc.replace(tzinfo=None, microsecond=0).isoformat()}.{nanos}", created_at


def _key(row: RankRow) -> tuple[float | str, ...]:
    """Overall score descending, then coding, Hermes, tool/instruction, reliability and
    performance descending, then timestamp (the instant) and run id: the tie-break alters no
    score."""
    scores = row.scores.model_dump()
    descending = tuple(-(scores[name] if scores[name] is not None else -1.0) for name in _ORDER)
    return (*descending, *instant(row.created_at), row.run_id, row.bundle_digest)


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


TABLES = ("ranked", "limitations", "controlled", "apart")
"""The tables of a ranking, in the order a report lists them."""


def place(
    item: Ranked | Entry, pin_set: PinSetRef, *, demo_only: bool = False
) -> tuple[str, str | None, RankRow]:
    """Where one verified run goes in the ranking under ``pin_set``: its table (of
    :data:`TABLES`), its controlled-policy group (None but in ``controlled``), and its row
    (unnumbered). A run whose signature failed under the identity policy it was verified with
    is apart with that as its first reason; a copy of another bundle (see :class:`Distinct`) is
    apart with the bundle it copies as its first reason; under a ``demo_only`` pin set
    (reference harnesses) every run is apart."""
    source, facts = item.source, item.facts
    first = _set_apart(item, pin_set, demo_only=demo_only)
    if first is not None:
        return "apart", None, _row(source, facts, (first, *facts.reasons))
    same_pins = facts.pin_set == pin_set and facts.recorded_pin_set == pin_set
    group = facts.rank_group
    if group == "primary" and facts.rankable and same_pins:
        return "ranked", None, _row(source, facts)
    if group is not None and group.startswith("controlled:") and same_pins:
        return "controlled", group, _row(source, facts)
    if _limited(facts, pin_set):
        return "limitations", None, _row(source, facts)
    reasons = list(facts.reasons)
    if not same_pins:
        reasons.insert(0, _other_pins(facts, pin_set))
    return "apart", None, _row(source, facts, reasons)


def _set_apart(item: Ranked | Entry, pin_set: PinSetRef, *, demo_only: bool) -> str | None:
    """Why a run is apart whatever its verdict says (its first reason), or None: its signature
    failed (not signed by whom the ranking names), it copies another bundle, or the pin set
    ranks nothing (demo only, or taking a shipped pin set's id with other content)."""
    if item.facts.unsigned is not None:
        return f"signature failed: {item.facts.unsigned}"
    if item.copy_of is not None:
        return item.copy_of
    if demo_only:
        return f"{pin_set.id} is a demo-only pin set (reference harnesses): nothing ranks"
    counterfeit = takes_a_shipped_id(pin_set.id, pin_set.digest)
    return None if counterfeit is None else f"{counterfeit}: nothing ranks"


def _apart_key(row: RankRow) -> tuple[float | str, ...]:
    """The order of the runs listed apart: timestamp (the instant), run id, bundle digest."""
    return (*instant(row.created_at), row.run_id, row.bundle_digest)


def _numbered(rows: Iterable[RankRow]) -> Iterator[RankRow]:
    """The ranked rows, each with its position (from 1)."""
    for i, r in enumerate(rows, start=1):
        yield r.model_copy(update={"position": i})


def rank(
    items: Iterable[Ranked | Entry],
    pin_set: PinSetRef,
    *,
    demo_only: bool = False,
    signer: Signer | None = None,
) -> Ranking:
    """Place verified runs (:func:`place`): the ranking under ``pin_set``, the limitations
    table, the controlled-policy groups, and everything else apart with its reasons; each table
    in order (:func:`_key`; apart by timestamp)."""
    tables: dict[str, list[RankRow]] = {name: [] for name in TABLES}
    controlled: dict[str, list[RankRow]] = defaultdict(list)
    for item in items:
        table, group, row = place(item, pin_set, demo_only=demo_only)
        (controlled[group] if group is not None else tables[table]).append(row)
    return Ranking(
        schema_version=1,
        pin_set=pin_set,
        ranked=tuple(_numbered(sorted(tables["ranked"], key=_key))),
        limitations=tuple(sorted(tables["limitations"], key=_key)),
        controlled={g: tuple(sorted(rows, key=_key)) for g, rows in sorted(controlled.items())},
        apart=tuple(sorted(tables["apart"], key=_apart_key)),
        signer=signer,
    )


_RANKING_SCHEMA = """
CREATE TABLE rows (tab INTEGER, grp BLOB, key BLOB, offset INTEGER, length INTEGER);
CREATE INDEX rows_in_order ON rows (tab, grp, key);
"""


class SpooledRanking(Spooled):
    """The ranking of :func:`rank`, placed a run at a time and kept on disk (a
    :class:`verify._spool.Spool`), so that an archive's rows never sit in memory at once; read
    back table by table, in the order :func:`rank` gives (a row at a time), or as the canonical
    JSON of the ``ranking`` document :func:`rank`'s would be (:meth:`write_json`)."""

    def __init__(
        self, pin_set: PinSetRef, *, demo_only: bool = False, signer: Signer | None = None
    ) -> None:
        self.pin_set, self._demo_only, self.signer = pin_set, demo_only, signer
        self._spool = Spool(_RANKING_SCHEMA, prefix="audit-rank-")

    def add(self, item: Ranked | Entry) -> None:
        """Place one run."""
        table, group, row = place(item, self.pin_set, demo_only=self._demo_only)
        key = _apart_key(row) if table == "apart" else _key(row)
        self._spool.db.execute(
            "INSERT INTO rows VALUES (?, ?, ?, ?, ?)",
            (TABLES.index(table), None if group is None else text(group), sortable(key),
             *self._spool.put(row)),
        )  # fmt: skip

    def _rows(self, table: str, group: str | None = None) -> Iterator[RankRow]:
        rows = self._spool.db.execute(
            "SELECT offset, length FROM rows WHERE tab = ? AND grp IS ? ORDER BY key, rowid",
            (TABLES.index(table), None if group is None else text(group)),
        )
        for offset, length in rows:
            yield self._spool.get(offset, length)

    def ranked(self) -> Iterator[RankRow]:
        """The ranked rows, numbered, in order."""
        return _numbered(self._rows("ranked"))

    def limitations(self) -> Iterator[RankRow]:
        return self._rows("limitations")

    def groups(self) -> list[str]:
        """The controlled-policy groups, sorted."""
        rows = self._spool.db.execute(
            "SELECT DISTINCT grp FROM rows WHERE tab = ?", (TABLES.index("controlled"),)
        )
        return sorted(named(group) for (group,) in rows)

    def controlled(self, group: str) -> Iterator[RankRow]:
        return self._rows("controlled", group)

    def apart(self) -> Iterator[RankRow]:
        return self._rows("apart")

    def write_json(self, out: IO[bytes]) -> None:
        """The ``ranking`` document, canonical (RFC 8785: members in key order), as
        ``canonical_bytes(rank(...).model_dump(mode="json"))`` is, then a newline; a row at a
        time."""

        def array(rows: Iterable[RankRow]) -> None:
            write_array(out, (canonical_bytes(row.model_dump(mode="json")) for row in rows))

        out.write(b'{"apart":')
        array(self.apart())
        out.write(b',"controlled":{')
        for index, group in enumerate(sorted(self.groups(), key=member_key)):
            out.write((b"," if index else b"") + canonical_bytes(group) + b":")
            array(self.controlled(group))
        out.write(b'},"limitations":')
        array(self.limitations())
        out.write(b',"pin_set":' + canonical_bytes(self.pin_set.model_dump(mode="json")))
        out.write(b',"ranked":')
        array(self.ranked())
        signer = None if self.signer is None else self.signer.model_dump(mode="json")
        out.write(b',"schema_version":1,"signer":' + canonical_bytes(signer) + b"}\n")
