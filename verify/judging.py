"""``audit rank`` and ``audit rejudge`` over an archive (ADR 0025): every source judged, each
bundle digest verified once per pin set, in this process or on Dask (``--engine dask``,
ADR 0026).

:func:`judge_archive` is the one walk of an archive's sources, whichever engine does the work:
sorted as they are shown, each one's bundle digest read from its manifest; the first source of
a digest is verified; a further one reuses that verdict unverified when it holds the same bytes
(the very same local files, :func:`files_of`, or the byte-level check
:func:`verify.archive.check` finds in it what it found in a source verified: nothing, or the
same defect, and the same signature files); a source whose bytes differ is verified itself. A
source that is refused is set apart with its reason and never aborts the rest. The walk asks a
:class:`Steps` for each listing, check and verification: :class:`Here` computes each when
asked; the Dask engine (:mod:`verify._dask`) computes them on the cluster first, then answers
from its results, so the report is the same bytes.

What is kept of a bundle is what a :class:`Job` says: the :class:`~verify.ranking.Facts` of its
verdict, and (``rejudge``) the diff of its verdicts before and under the new pin set.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

from bundle_schema import digest_of
from bundle_schema.errors import EvidenceAuditError, InvalidInput, one_line
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import RunDiff
from pins import PinSetSource
from verify._hashing import BlobCache
from verify._shell import Verification, verify_bundle
from verify._signature import IdentityPolicy
from verify._source import BundleSource, open_source
from verify._spool import Spool, Spooled, named, text
from verify.archive import (
    MASKED_TWIN,
    Judged,
    Source,
    SourceList,
    changed,
    check,
    defect_of,
    refusal_reason,
    shown,
    signatures_of,
    unsigned_copy,
)
from verify.diffing import diff_runs
from verify.ranking import (
    MAX_SOURCE,
    TABLES,
    Distinct,
    Entry,
    Facts,
    Found,
    contents_key,
    instant,
    place,
)

__all__ = [
    "Here",
    "Job",
    "JudgedArchive",
    "Judgement",
    "Refused",
    "Steps",
    "Whole",
    "bytes_of",
    "files_of",
    "held_text",
    "judge_archive",
    "walked",
]


class Judgement(NamedTuple):
    """What an archive keeps of one verified source."""

    found: Found
    defect: str | None
    """The fingerprint of what its bytes lack (:func:`verify.archive.defect_of`; None: nothing)."""
    diff: RunDiff | None = None
    """``rejudge``: the ``run-diff`` of its verdicts before and under the new pin set."""
    signed: str | None = None
    """Its :func:`verify.archive.signatures_of`."""

    @property
    def held(self) -> tuple[str | None, str | None]:
        """What two sources of one bundle digest must share to be the same bytes: the defect
        of their blobs and their signature files (:func:`bytes_of`)."""
        return self.defect, self.signed


@dataclass(frozen=True)
class Job:
    """How an archive command judges one bundle: by ``pins`` (None: the pin set each names);
    with ``rejudge``, by ``before`` too (None: the pin set each names), keeping the diff; its
    signature checked under ``policy`` (None: not checked)."""

    pins: PinSetSource | None
    rejudge: bool = False
    before: PinSetSource | None = None
    policy: IdentityPolicy | None = None

    def judge(
        self, bundle: BundleSource, name: str, cache: BlobCache, workers: int | None = None
    ) -> Judgement:
        """Verify ``bundle`` (found at ``name``, as shown; ``workers``: its hashing threads);
        raises what verification raises."""
        verify = functools.partial(
            verify_bundle, bundle, cache=cache, workers=workers, signature_policy=self.policy
        )
        named = verify(pins=self.before) if self.rejudge else None
        done = verify(pins=self.pins)
        diff = None
        found, defect = _found(name, done)
        if named is not None:
            if named.signature_digest != done.signature_digest:
                raise Refused(f"{MANIFEST_SIGNATURE}: other bytes at its second reading: "
                              "changed while the archive was verified")  # fmt: skip
            # two manifests read: _as_listed refuses the source, naming both
            same = named.verdict.bundle_digest == done.verdict.bundle_digest
            if same and _defect(named) != defect:  # a blob, hashed as each reads it
                raise Refused(
                    "other bytes of its blobs at the verification under each pin set "
                    f"({_lacking(named)}, then {_lacking(done)}): changed while the archive "
                    "was verified"
                )
            diff = diff_runs((named.verdict, named.evidence), (done.verdict, done.evidence))
        return Judgement(found, defect, diff, signatures_of(bundle, done.signature_digest))


def _found(name: str, done: Verification) -> tuple[Found, str | None]:
    """What an archive keeps of a verified bundle: the facts of its verdict, not its evidence;
    and the fingerprint of what its bytes lack."""
    verdict = done.verdict
    found = Found(name, Facts.of(verdict, done.evidence), contents_key(done.manifest.model))
    return found, _defect(done)


def _defect(done: Verification) -> str | None:
    """The fingerprint of what a verified source's bytes lack (None: nothing)."""
    defect = defect_of(done.verdict.bundle_digest, done.byte_findings)
    return None if defect is None else defect.fingerprint


def _lacking(done: Verification) -> str:
    """What a verification found its source's bytes to lack, in a few words."""
    findings = done.byte_findings
    return f"{len(findings)} finding(s) of its bytes" if findings else "every byte as named"


class Refused(InvalidInput):
    """A source refused where the work was done (a Dask task): ``reason`` is the line said,
    without the source's name in front."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def files_of(bundle: BundleSource) -> str | None:
    """The digest of the local files a bundle is read from, each by the identity and state a
    :class:`BlobCache` keys it by (device, inode, size, mtime, ctime), and for a directory each
    under the name it is read as: two sources that are the same files under the same names
    (hard links to one tar, or to a directory's every file) hold the same bytes. None when a
    file is not local (a URL). A digest, not the identities: a directory bundle has a file a
    blob."""
    members = bundle.members
    if any(member.reader is not None for member in members.values()):
        return None
    keys = {file: BlobCache.key_of(file) for file in {member.file for member in members.values()}}
    if None in keys.values():
        return None
    if bundle.kind == "tar":  # one file: its members' names are its own bytes
        return digest_of(repr(list(keys.values())).encode())
    named = [(name, keys[member.file]) for name, member in sorted(members.items())]
    return digest_of(repr(named).encode())


class Steps(Protocol):
    """The work :func:`judge_archive` asks for, source by source (by index into its sources).
    Each raises what opening or verifying the source raises (or :class:`Refused`)."""

    def listed(self, index: int) -> tuple[str, str | None]:
        """The source's bundle digest, and its :func:`files_of` (None: not known)."""
        ...

    def checked(self, index: int, digest: str) -> Judged:
        """:func:`verify.archive.check` of a further source of bundle ``digest``."""
        ...

    def judged(self, index: int) -> Judgement:
        """The source verified, as the :class:`Job` keeps it."""
        ...


class Here:
    """The default engine: each step done in this process when asked, one :class:`BlobCache`
    for the archive (a blob linked into many bundles from a shared store is hashed once), each
    source opened once for its listing, check and verification."""

    def __init__(self, sources: Sequence[Source], job: Job) -> None:
        self.sources, self.job = sources, job
        self.cache = BlobCache()
        self._opened: tuple[int, BundleSource] | None = None

    def _bundle(self, index: int) -> BundleSource:
        if self._opened is None or self._opened[0] != index:
            self._opened = None
            self._opened = (index, open_source(self.sources[index]))
        return self._opened[1]

    def listed(self, index: int) -> tuple[str, str | None]:
        bundle = self._bundle(index)
        return digest_of(bundle.manifest_bytes()), files_of(bundle)

    def checked(self, index: int, digest: str) -> Judged:
        bundle = self._bundle(index)
        return check(self.sources[index], digest, self.cache, workers=None, opened=bundle)

    def judged(self, index: int) -> Judgement:
        return self.job.judge(self._bundle(index), shown(self.sources[index]), self.cache)


def bytes_of(checked: Judged) -> tuple[str | None, str | None]:
    """What a check found of a further source's bytes, as :attr:`Judgement.held` says it."""
    return checked.defect and checked.defect.fingerprint, checked.signed


def _standing(facts: Facts) -> int:
    """Which of a bundle's copies is placed first: one passing its checks (integrity,
    signature, claims) before one that does not, and among those that pass, by the table the
    ranking under the pin set they were judged by gives them (:data:`TABLES`: ranked, then
    limitations, controlled, apart): a copy the pin set judges into another table (one naming
    another pin set, or another model) never displaces the run it copies."""
    if not facts.passed:
        return len(TABLES)
    table, _, _ = place(Entry("", facts), facts.pin_set)
    return TABLES.index(table)


@contextmanager
def walked(sources: Sequence[Source]) -> Iterator[Iterator[tuple[int, Source, bool]]]:
    """:meth:`verify.archive.SourceList.walk` of ``sources`` (listed on disk first, unless
    they are)."""
    if isinstance(sources, SourceList):
        yield sources.walk()
        return
    with SourceList(sources) as listed:
        yield listed.walk()


_SCHEMA = """
CREATE TABLE facts (ref INTEGER PRIMARY KEY, offset INTEGER, length INTEGER, digest TEXT,
                    intact INTEGER, standing INTEGER, verdict_digest TEXT, contents TEXT,
                    created_at BLOB, same_verdict INTEGER);
CREATE TABLE verified (digest TEXT, held BLOB, ref INTEGER, PRIMARY KEY (digest, held))
    WITHOUT ROWID;
CREATE TABLE at_files (digest TEXT, files TEXT, ref INTEGER, PRIMARY KEY (digest, files))
    WITHOUT ROWID;
CREATE TABLE found (source BLOB, ref INTEGER);
CREATE TABLE refused (source BLOB, reason BLOB);
CREATE TABLE bundles (digest TEXT PRIMARY KEY, ref INTEGER, kept BLOB, sources TEXT,
                      contents TEXT) WITHOUT ROWID;
CREATE INDEX bundles_by_contents ON bundles (contents);
CREATE TABLE copies (digest TEXT PRIMARY KEY, copy_of BLOB) WITHOUT ROWID;
CREATE TABLE notes (note BLOB);
"""
"""The index of a judged archive (a :class:`verify._spool.Spool`'s): each verification
(``facts``: where its :class:`Judgement` is spooled, and what counting reads of it), the
verifications of each bundle digest by the bytes they held, each source kept and the
verification it took its verdict from, the refused sources in the order they were walked;
then, when the walk is done, each bundle once (``bundles``), the copies and the notes."""


class Whole(NamedTuple):
    """A judged archive at once: its bundles, notes and refused sources."""

    bundles: list[Distinct]
    notes: list[str]
    refused: list[tuple[str, str]]


class JudgedArchive(Spooled):
    """The bundles under an archive command's paths, kept on disk: each counted once, copies
    flagged, the sources refused (each with its one-line reason), and the diffs a ``rejudge``
    keeps; read back a bundle at a time, so that 10,000 of them never sit in memory as Python
    objects at once. Close it (or use it as a context manager) when done.

    How a bundle is counted once, as :func:`judge_archive` leaves it (:meth:`_count`):

    - Sources with the same bundle digest (a directory and its tar, one path given twice) are
      one bundle. Its verdict is that of the first intact source by path; a source whose
      verdict differs (a corrupted copy) is named in a note.
    - Bundles with the same :func:`~verify.ranking.contents_key` but another bundle digest (the
      same evidence and model, another run id or creation time) are copies: one is kept, by
      :func:`_standing` (passing its checks, then the table the pin set places it in: a copy
      minted to fail them, or to be judged into another table, never displaces the run it
      copies), then creation
      time (as an instant, not as text), then bundle digest; every other one gets ``copy_of``,
      a reason naming it.
    """

    def __init__(self) -> None:
        self._spool = Spool(_SCHEMA)
        self._db = self._spool.db

    # --- the walk ---------------------------------------------------------------------------

    def _keep(self, digest: str, judgement: Judgement) -> int:
        """Spool a verification of a source listed as bundle ``digest``; its ``ref``."""
        facts = judgement.found.facts
        same = None if judgement.diff is None else judgement.diff.same_verdict
        cursor = self._db.execute(
            "INSERT INTO facts VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*self._spool.put((judgement.found, judgement.diff)), facts.bundle_digest,
             facts.intact, _standing(facts), facts.verdict_digest, judgement.found.contents,
             text(facts.created_at), same),
        )  # fmt: skip
        ref = cursor.lastrowid
        assert ref is not None  # noqa: S101 - an INSERT's
        self._db.execute(
            "INSERT OR IGNORE INTO verified VALUES (?, ?, ?)",
            (digest, held_text(judgement.held), ref),
        )
        return ref

    def _verified(
        self, digest: str, held: tuple[str | None, str | None] | None = None
    ) -> int | None:
        """The verification of ``digest`` that held those bytes (None: any of it), or None."""
        if held is None:
            row = self._db.execute(
                "SELECT ref FROM verified WHERE digest = ? LIMIT 1", (digest,)
            ).fetchone()
        else:
            row = self._db.execute(
                "SELECT ref FROM verified WHERE digest = ? AND held = ?", (digest, held_text(held))
            ).fetchone()
        return None if row is None else row[0]

    def _at_files(self, digest: str, files: str) -> int | None:
        row = self._db.execute(
            "SELECT ref FROM at_files WHERE digest = ? AND files = ?", (digest, files)
        ).fetchone()
        return None if row is None else row[0]

    def _found(self, name: str, ref: int, digest: str, files: str | None) -> None:
        if files is not None:
            self._db.execute(
                "INSERT OR IGNORE INTO at_files VALUES (?, ?, ?)", (digest, files, ref)
            )
        self._db.execute("INSERT INTO found VALUES (?, ?)", (text(name), ref))

    def _refuse(self, name: str, reason: str) -> None:
        self._db.execute("INSERT INTO refused VALUES (?, ?)", (text(name), text(reason)))

    def _spooled(self, ref: int) -> tuple[Found, RunDiff | None]:
        offset, length = self._db.execute(
            "SELECT offset, length FROM facts WHERE ref = ?", (ref,)
        ).fetchone()
        spooled: tuple[Found, RunDiff | None] = self._spool.get(offset, length)
        return spooled

    def _count(self) -> None:
        """Count each bundle once, and flag the copies (see the class's docstring)."""
        rows = self._db.execute(
            "SELECT f.digest, found.source, found.ref, f.intact, f.standing, f.verdict_digest, "
            "f.contents FROM found JOIN facts AS f ON f.ref = found.ref "
            "ORDER BY f.digest, found.rowid"
        )
        for digest, group in itertools.groupby(rows, key=lambda row: row[0]):
            # the first intact source, of those the first that passes its checks (a copy
            # without the signature the ranking is held to never takes a signed one's place)
            items = sorted(
                (
                    (named(source), ref, intact, standing, verdict, contents)
                    for _, source, ref, intact, standing, verdict, contents in group
                ),
                key=lambda item: (not item[2], item[3], item[0]),
            )
            (kept, ref, _, _, verdict, contents) = items[0]
            counted, differently = [kept], []
            signed = None
            for other, other_ref, other_intact, _, other_verdict, _ in items[1:]:
                if other_verdict == verdict:
                    counted.append(other)
                    continue
                facts = self._spooled(other_ref)[0].facts
                if signed is None:
                    signed = self._spooled(ref)[0].facts.unsigned is None
                if signed and facts.unsigned is not None:
                    lacking = None if other_intact else facts.why
                    self._refuse(other, unsigned_copy(digest, kept, facts.unsigned, lacking))
                    continue
                counted.append(other)
                differently.append(
                    f"{other}: the same bundle as {kept}, verified differently ({facts.why}); "
                    f"{kept} counts"
                )
            sources = tuple(sorted(set(counted)))
            if len(sources) > 1:
                self._note(f"{digest} is one bundle, counted once: {', '.join(sources)}")
            for note in differently:
                self._note(note)
            self._db.execute(
                "INSERT INTO bundles VALUES (?, ?, ?, ?, ?)",
                (digest, ref, text(kept), json.dumps(sources), contents),  # ASCII, read back
            )
        same = self._db.execute(
            "SELECT b.contents, b.digest, b.kept, f.standing, f.created_at, b.ref "
            "FROM bundles AS b JOIN facts AS f ON f.ref = b.ref "
            "WHERE b.contents IN (SELECT contents FROM bundles "
            "GROUP BY contents HAVING count(*) > 1) ORDER BY b.contents, b.digest"
        )
        for _, group in itertools.groupby(same, key=lambda row: row[0]):
            copies = sorted(group, key=lambda row: (row[3], instant(named(row[4])), row[1]))
            _, digest, kept, _, _, ref = copies[0]
            run_id = self._spooled(ref)[0].facts.run_id
            reason = one_line(
                f"a copy of {digest} (run {run_id}, {named(kept)}): the same evidence entries "
                "and model digest under another run id or creation time; only one is placed: "
                "of those that pass their checks, the earliest in the highest table (ranked, "
                "limitations, controlled, apart), else the earliest",
                MAX_SOURCE,
            )
            for row in copies[1:]:
                self._db.execute("INSERT INTO copies VALUES (?, ?)", (row[1], text(reason)))

    def _note(self, note: str) -> None:
        self._db.execute("INSERT INTO notes VALUES (?)", (text(note),))

    # --- reading it back --------------------------------------------------------------------

    def bundles(self) -> Iterator[Distinct]:
        """Each bundle once, by bundle digest."""
        rows = self._db.execute(
            "SELECT b.kept, b.sources, c.copy_of, f.offset, f.length FROM bundles AS b "
            "JOIN facts AS f ON f.ref = b.ref LEFT JOIN copies AS c ON c.digest = b.digest "
            "ORDER BY b.digest"
        )
        for kept, sources, copy_of, offset, length in rows:
            found, diff = self._spool.get(offset, length)
            yield Distinct(
                replace(found, source=named(kept)),
                tuple(json.loads(sources)),
                None if copy_of is None else named(copy_of),
                diff,
            )

    @property
    def count(self) -> int:
        """How many bundles."""
        count: int = self._db.execute("SELECT count(*) FROM bundles").fetchone()[0]
        return count

    @property
    def changed(self) -> int:
        """``rejudge``: how many bundles' verdicts change."""
        count: int = self._db.execute(
            "SELECT count(*) FROM bundles AS b JOIN facts AS f ON f.ref = b.ref "
            "WHERE f.same_verdict = 0"
        ).fetchone()[0]
        return count

    def notes(self) -> Iterator[str]:
        """The notes, in bundle digest order: sources that were one bundle, sources of one
        bundle that verified differently."""
        for (note,) in self._db.execute("SELECT note FROM notes ORDER BY rowid"):
            yield named(note)

    def refused(self) -> Iterator[tuple[str, str]]:
        """Each refused source, and its reason, in the order the sources were walked (by how
        they are shown, then as given): not the order given, which a folder's listing or a
        bucket's makes."""
        rows = self._db.execute("SELECT source, reason FROM refused ORDER BY rowid")
        for source, reason in rows:
            yield named(source), named(reason)

    @property
    def refusals(self) -> int:
        """How many sources were refused."""
        count: int = self._db.execute("SELECT count(*) FROM refused").fetchone()[0]
        return count

    def whole(self) -> Whole:
        """Everything at once (a small archive; a test)."""
        return Whole(list(self.bundles()), list(self.notes()), list(self.refused()))


def held_text(held: tuple[str | None, str | None]) -> bytes:
    """The bytes a source held (:attr:`Judgement.held`, :func:`bytes_of`) as an index keeps
    them: two are equal when the held values are."""
    return text(repr(held))


def judge_archive(sources: Sequence[Source], steps: Steps) -> JudgedArchive:
    """Judge every source, each bundle digest once (see the module's docstring)."""
    archive = JudgedArchive()
    try:
        _walk(sources, steps, archive)
        archive._count()
    except BaseException:
        archive.close()
        raise
    return archive


def _walk(sources: Sequence[Source], steps: Steps, archive: JudgedArchive) -> None:
    """Each source judged in the walk's order; a source given again (the walk puts the two
    together) is given the first one's result, read once: one snapshot of it, as
    ``verify-archive`` takes it."""
    last: tuple[tuple[str, bool], Callable[[str], None]] | None = None
    with walked(sources) as walk:
        for index, source, twin in walk:
            given = (os.fspath(source), twin)
            if last is None or last[0] != given:
                last = (given, _step(index, source, twin, steps, archive))
            last[1](shown(source))


def _as_listed(digest: str, judgement: Judgement) -> Judgement:
    """A source listed as bundle ``digest``, verified: refused as changed when its manifest was
    another by then (a source that answers two reads with two manifests is judged as neither;
    an honest copy of either, judged after it, is judged for its own bytes); for ``rejudge``,
    both its verifications."""
    got = judgement.found.facts.bundle_digest
    if got != digest:
        raise Refused(changed(digest, got))
    if judgement.diff is not None and judgement.diff.a.bundle_digest != digest:
        raise Refused(changed(digest, judgement.diff.a.bundle_digest))
    return judgement


def _step(
    index: int, source: Source, twin: bool, steps: Steps, archive: JudgedArchive
) -> Callable[[str], None]:
    """One source of the walk: refused, or listed, checked or verified as it needs; what keeps
    its result under a name (the source's, or a repeat's)."""
    if twin:
        return functools.partial(archive._refuse, reason=MASKED_TWIN)
    try:
        digest, files = steps.listed(index)
        ref = None if files is None else archive._at_files(digest, files)
        if ref is None and archive._verified(digest) is not None:
            held = steps.checked(index, digest)
            if held.digest == digest:  # else verified in full below, which says why
                ref = archive._verified(digest, bytes_of(held))
        if ref is None:
            ref = archive._keep(digest, _as_listed(digest, steps.judged(index)))
    except Refused as exc:
        return functools.partial(archive._refuse, reason=exc.reason)
    except (EvidenceAuditError, OSError) as exc:
        return functools.partial(archive._refuse, reason=refusal_reason(source, exc))
    return functools.partial(archive._found, ref=ref, digest=digest, files=files)
