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

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Protocol

from bundle_schema import digest_of
from bundle_schema.errors import EvidenceAuditError, InvalidInput
from bundle_schema.models import RunDiff
from pins import PinSetSource
from verify._hashing import BlobCache
from verify._shell import Verification, verify_bundle
from verify._source import BundleSource, open_source
from verify.archive import (
    MASKED_TWIN,
    Judged,
    Source,
    check,
    defect_of,
    refusal_reason,
    shown,
    signatures_of,
    sort_key,
)
from verify.diffing import diff_runs
from verify.ranking import Distinct, Facts, Found, contents_key, distinct

__all__ = [
    "Here",
    "Job",
    "JudgedArchive",
    "Judgement",
    "Refused",
    "Steps",
    "bytes_of",
    "files_of",
    "judge_archive",
    "order_of",
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
    with ``rejudge``, by ``before`` too (None: the pin set each names), keeping the diff."""

    pins: PinSetSource | None
    rejudge: bool = False
    before: PinSetSource | None = None

    def judge(
        self, bundle: BundleSource, name: str, cache: BlobCache, workers: int | None = None
    ) -> Judgement:
        """Verify ``bundle`` (found at ``name``, as shown; ``workers``: its hashing threads);
        raises what verification raises."""
        diff = None
        if self.rejudge:
            named = verify_bundle(bundle, pins=self.before, cache=cache, workers=workers)
            done = verify_bundle(bundle, pins=self.pins, cache=cache, workers=workers)
            diff = diff_runs((named.verdict, named.evidence), (done.verdict, done.evidence))
        else:
            done = verify_bundle(bundle, pins=self.pins, cache=cache, workers=workers)
        found, defect = _found(name, done)
        return Judgement(found, defect, diff, signatures_of(bundle))


def _found(name: str, done: Verification) -> tuple[Found, str | None]:
    """What an archive keeps of a verified bundle: the facts of its verdict, not its evidence;
    and the fingerprint of what its bytes lack."""
    verdict = done.verdict
    found = Found(name, Facts.of(verdict, done.evidence), contents_key(done.manifest.model))
    defect = defect_of(verdict.bundle_digest, done.byte_findings)
    return found, None if defect is None else defect.fingerprint


class Refused(InvalidInput):
    """A source refused where the work was done (a Dask task): ``reason`` is the line said,
    without the source's name in front."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def files_of(bundle: BundleSource) -> str | None:
    """The digest of the local files a bundle is read from, each by the identity and state a
    :class:`BlobCache` keys it by (device, inode, size, mtime): two sources that are the same
    files (hard links to one tar) hold the same bytes. None when a file is not local (a URL).
    A digest, not the identities: a directory bundle has a file a blob."""
    if any(member.reader is not None for member in bundle.members.values()):
        return None
    files = sorted({member.file for member in bundle.members.values()})
    keys = [BlobCache.key_of(file) for file in files]
    return None if None in keys else digest_of(repr(keys).encode())


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


@dataclass(frozen=True)
class JudgedArchive:
    """The bundles under an archive command's paths: each counted once, copies flagged, the
    sources refused (each with its one-line reason), and the diffs a ``rejudge`` keeps."""

    bundles: list[Distinct]
    notes: list[str]
    refused: list[tuple[str, str]]
    diffs: dict[str, RunDiff] = field(default_factory=dict)
    """By the source verified (shown): its ``run-diff``."""


def bytes_of(checked: Judged) -> tuple[str | None, str | None]:
    """What a check found of a further source's bytes, as :attr:`Judgement.held` says it."""
    return checked.defect and checked.defect.fingerprint, checked.signed


def order_of(sources: Sequence[Source]) -> tuple[list[int], set[int]]:
    """The indexes of ``sources`` in the order an archive is walked
    (:func:`verify.archive.sort_key`), and those of the sources refused as another's masked
    twin (:data:`verify.archive.MASKED_TWIN`: shown alike, given differently; the first is
    walked)."""
    order = sorted(range(len(sources)), key=lambda i: sort_key(sources[i]))
    given: dict[str, str] = {}  # shown -> as given
    twins = {
        i
        for i in order
        if given.setdefault(shown(sources[i]), os.fspath(sources[i])) != os.fspath(sources[i])
    }
    return order, twins


def judge_archive(sources: Sequence[Source], steps: Steps) -> JudgedArchive:
    """Judge every source, each bundle digest once (see the module's docstring)."""
    found: list[Found] = []
    refused: list[tuple[int, str, str]] = []
    diffs: dict[str, RunDiff] = {}
    verified: dict[str, dict[tuple[str | None, str | None], Found]] = {}  # digest, then bytes
    at_files: dict[tuple[str, str], Found] = {}
    order, twins = order_of(sources)
    for index in order:
        source = sources[index]
        name = shown(source)
        if index in twins:
            refused.append((index, name, MASKED_TWIN))
            continue
        try:
            digest, files = steps.listed(index)
            same = None if files is None else at_files.get((digest, files))
            if same is None and digest in verified:
                held = steps.checked(index, digest)
                if held.digest == digest:  # else verified in full below, which says why
                    same = verified[digest].get(bytes_of(held))
            if same is None:
                judgement = steps.judged(index)
                same = judgement.found
                verified.setdefault(digest, {}).setdefault(judgement.held, same)
                if judgement.diff is not None:
                    diffs[name] = judgement.diff
            item = replace(same, source=name)
        except Refused as exc:
            refused.append((index, name, exc.reason))
            continue
        except (EvidenceAuditError, OSError) as exc:
            refused.append((index, name, refusal_reason(source, exc)))
            continue
        if files is not None:
            at_files.setdefault((digest, files), item)
        found.append(item)
    bundles, notes = distinct(found)
    reasons = [(name, reason) for _, name, reason in sorted(refused)]
    return JudgedArchive(bundles, notes, reasons, diffs)
