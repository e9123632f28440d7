"""``audit verify-archive --engine dask`` (ADR 0026): the per-bundle verifications of an archive
as Dask tasks, on a cluster given by address or a ``LocalCluster``; the report is the bytes the
default engine writes.

Three stages, so that every bundle digest is verified once and every file shared by several
bundles is hashed once across the workers:

1. **List** (one task per chunk of up to :data:`MAX_CHUNK` sources): open each source, read
   its manifest's digest, and name the identity (device, inode, size, mtime, ctime) of each of its
   blob files (directory bundles). A tar's members are never shared: a tar is verified here,
   as it has just been read (ADR 0031), and the result kept if the tar is chosen or a further
   source of its bundle.
2. **Hash** (a few tasks): the files that more than one listed directory bundle links (its
   first source or a further one), each once.
3. **Verify** (one task per chunk of bundle digests, each from its first source in sorted
   order) and **check** the bytes of each further directory source of a bundle
   (:func:`verify.archive.check`): a :class:`~verify.BlobCache` seeded with the stage-2
   digests of the source's shared files; a file whose identity changed since is hashed again.
   The digest must be the one listed, or the source is refused (it changed while the archive
   was verified). The driver then adds the further sources of each bundle in source order, as
   the default engine does (:meth:`~verify.archive.ArchiveWriter.add`).

A task opens a relative local path joined to the command's working directory (a worker's own
is another on any real cluster) and names it as given (:func:`verify.archive.open_in`).

The driver keeps the small keys (digests, sources, file identities); entries go to the
:class:`~verify.archive.ArchiveWriter`'s spool as tasks finish. This module is imported only
when ``--engine dask`` is given; it imports Dask.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import distributed

from bundle_schema import digest_of
from bundle_schema.errors import EvidenceAuditError
from verify._hashing import BlobCache, FileKey, Hashed, default_workers, hash_members
from verify._remote import url_snapshots
from verify._shell import _blob_files
from verify._source import BundleSource, Member
from verify._spool import Spool
from verify.archive import (
    ArchiveWriter,
    Judged,
    Source,
    changed,
    check,
    judge,
    located,
    open_in,
    refusal_reason,
    shown,
)
from verify.judging import (
    Job,
    JudgedArchive,
    Judgement,
    Refused,
    bytes_of,
    judge_archive,
    order_of,
)

__all__ = ["judge_on_dask", "verify_on_dask"]

T = TypeVar("T")
_Listed = tuple[str | None, str | None, list[tuple[FileKey, str]], Judged | None]
"""A source's digest (None: refused), the refusal's reason, its blob files' keys and paths,
and, for a tar, its verification."""


def _list(source: Source, pins: Any, cwd: str) -> _Listed:
    """Stage 1 for one source, on a worker (within the task's :func:`url_snapshots`; ``cwd``:
    the command's working directory, see :func:`verify.archive.located`).

    A tar is verified here too (ADR 0031): its members are never shared, so nothing of stage 2
    is needed for it, and the task has just read it (at a URL, the whole of a small tar: its
    verification reads the listing and the bytes received, no request more). If another source
    of its digest comes first, the driver uses the result as the check of its bytes."""
    try:
        bundle = open_in(source, cwd)
        digest = digest_of(bundle.manifest_bytes())
    except (EvidenceAuditError, OSError) as exc:
        return None, refusal_reason(source, exc, located(source, cwd)), [], None
    if bundle.kind != "directory":
        return digest, None, [], _verify(source, digest, [], pins, cwd, bundle)
    return digest, None, _blob_keys(bundle), None


def _blob_keys(bundle: BundleSource) -> list[tuple[FileKey, str]]:
    """The identity and path of each blob file of a directory bundle (one that cannot be
    stat'ed is left to its verification to name)."""
    files = []
    for member in _blob_files(bundle):
        key = BlobCache.key_of(member.file)
        if key is not None:
            files.append((key, member.file))
    return files


def _seeded(known: Sequence[tuple[FileKey, Hashed]]) -> BlobCache:
    """A cache that knows the stage-2 digests ``known`` (each reused only while its file keeps
    that identity)."""
    cache = BlobCache()
    for key, result in known:
        cache.know(key, result)
    return cache


def _hash(files: Sequence[tuple[FileKey, str]]) -> list[tuple[FileKey, Hashed]]:
    """Stage 2, on a worker: each file once, in this process (the cluster is the parallelism)."""
    results = hash_members([Member(file, file) for _, file in files], workers=1)
    return [(key, results[file]) for key, file in files]


def _verify(  # noqa: PLR0917 - one source, and where it is
    source: Source,
    digest: str,
    seed: Sequence[tuple[FileKey, Hashed]],
    pins: Any,
    cwd: str,
    opened: BundleSource | None = None,
    *,
    whole: bool = True,
) -> Judged:
    """Stage 3 for one source, on a worker (within the task's :func:`url_snapshots`;
    ``opened``: the bundle as the task listed it): verified, or (not ``whole``) only its bytes
    checked, as a further source of its bundle."""
    cache = _seeded(seed)
    if not whole:
        return check(source, digest, cache, opened=opened, cwd=cwd)
    judged = judge(source, pins, cache, opened=opened, cwd=cwd)
    if judged.digest is not None and judged.digest != digest:
        reason = changed(digest, judged.digest).encode()
        return Judged(judged.source, None, reason, judged.hashed, judged.reused)
    return judged


@dataclass(frozen=True, slots=True)
class _Chunk(Generic[T]):
    """A task's chunk of work, in one object: Dask walks a task's arguments that are lists,
    tuples, dicts and sets, item by item, looking for futures in them (about a quarter of a
    millisecond of the driver's time per small bundle, on the core a worker needs); an object
    of another type is pickled whole, without a walk."""

    items: Sequence[T]
    cwd: str
    """The command's working directory: a relative local path is opened joined to it."""
    known: Sequence[tuple[FileKey, Hashed]] = ()
    """Stage 3: the stage-2 digests of the shared files the chunk's bundles link, each once
    (not once a bundle: a chunk of small bundles of one store links the same few files, and
    each copy was pickled by the driver, which runs the scheduler on a core the workers
    need). Each bundle's cache is seeded with them all; a bundle looks up only its own."""


_ToVerify = tuple[Source, str, bool]
"""A bundle's source, its listed digest, and whether it is verified (its first source) or
only its bytes checked (a further source)."""


def _list_many(chunk: _Chunk[Source], pins: Any) -> list[_Listed]:
    """Stage 1 for a chunk of sources: one task, one :func:`url_snapshots` block (its sources
    are distinct; their URLs share one file system, made from the worker's environment)."""
    with url_snapshots():
        return [_list(source, pins, chunk.cwd) for source in chunk.items]


def _verify_many(chunk: _Chunk[_ToVerify], pins: Any) -> list[Judged]:
    """Stage 3 for a chunk of sources: one task, one :func:`url_snapshots` block."""
    with url_snapshots():
        return [
            _verify(source, digest, chunk.known, pins, chunk.cwd, whole=whole)
            for source, digest, whole in chunk.items
        ]


MAX_CHUNK = 256
"""The most sources one task takes, with at least 8 chunks per worker so that the workers stay
balanced (ADR 0031). A task costs the driver, which also runs the scheduler, about 3 ms of CPU
with its chunk's arguments and results: more than listing a small bundle, twice verifying one.
On 10,000 small bundles and two workers, chunks of 256 instead of 64 took the driver's CPU from
0.21 to 0.15 ms a bundle; the last chunk of a worker is then at most about half a second."""


def _wired(source: Source) -> Source:
    """A source as a task takes it: a local path as its text (what
    :func:`~verify.archive.shown` shows for either; the task opens it joined to the chunk's
    working directory when it is relative), a URL as it is. A ``Path`` is parsed again each
    time it is unpickled, on the scheduler and on the worker: a tenth of the driver's time."""
    return os.fspath(source) if isinstance(source, Path) else source


def _chunks(count: int, workers: int) -> list[range]:
    size = max(1, min(MAX_CHUNK, count // (8 * max(1, workers))))
    return [range(i, min(count, i + size)) for i in range(0, count, size)]


def _local_config() -> dict[str, Any]:
    """Dask's settings for the workers of a LocalCluster this command starts (an existing
    cluster keeps its own): no statistical profiler (it samples every thread's stack every
    10 ms, under the GIL the verification needs), no ``MALLOC_TRIM_THRESHOLD_`` of 64 KiB
    (it makes glibc return freed memory at once: 15 to 20 % more CPU for each small bundle's
    many short-lived objects; a worker's memory is bounded by its chunk, not its life), and
    workers forked from this process rather than spawned (ADR 0035): a spawned worker starts a
    new interpreter that imports Dask and the verifier again, about a second of the two
    cores for two workers, where a forked one has them already (a LocalCluster of two up in
    0.2 s, not 1.1 to 1.6 s)."""
    dask_config: Any = importlib.import_module("dask.config")
    environ = dict(dask_config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {
        "distributed.worker.profile.enabled": False,
        "distributed.nanny.pre-spawn-environ": environ,
        "distributed.worker.multiprocessing-method": "fork",
    }


def _client(scheduler: str | None, workers: int | None, scratch: str) -> tuple[Any, Any]:
    """A client of the scheduler at ``scheduler``, or of a new LocalCluster (and the cluster),
    Dask's scratch space (its workers' and its locks) under ``scratch``, not in
    ``TMPDIR/dask-scratch-space``, which Dask leaves behind."""
    dask: Any = distributed  # Dask's API is untyped
    if scheduler is not None:
        return dask.Client(scheduler), None
    dask_config: Any = importlib.import_module("dask.config")
    with dask_config.set({**_local_config(), "temporary-directory": scratch}):
        cluster = dask.LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
    return dask.Client(cluster), cluster


@contextlib.contextmanager
def _session(client: Any, scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """``client``, else a client of the scheduler at ``scheduler``, else of a new
    ``LocalCluster`` of ``workers`` processes (default: the cores); what it opened is closed
    when done."""
    if client is not None:
        yield client
        return
    with tempfile.TemporaryDirectory(prefix="audit-dask-") as scratch:
        client, cluster = _client(scheduler, workers, scratch)
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


def verify_on_dask(
    sources: Sequence[Source],
    writer: ArchiveWriter,
    pins: Any = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Any = None,
) -> None:
    """Verify ``sources`` (in the order :func:`verify.archive.ordered` gives) on Dask into
    ``writer``: on ``client``, else the scheduler at ``scheduler``, else a new ``LocalCluster``
    of ``workers`` processes (default: the cores), closed when done."""
    with _session(client, scheduler, workers) as session:
        _run(session, sources, writer, pins)


class _Links:
    """How many listed directory bundles link each file identity (one object per identity),
    and a path only for a file that a second one links (any link of one identity is the file):
    memory is a few hundred bytes per bundle, not every listed file's path (ADR 0031)."""

    def __init__(self) -> None:
        self.keys: dict[FileKey, FileKey] = {}
        self.count: dict[FileKey, int] = {}
        self.where: dict[FileKey, str] = {}

    def add(self, files: Sequence[tuple[FileKey, str]]) -> tuple[FileKey, ...]:
        """One listed bundle's blob files (identity, path); their identities, as kept."""
        keys = []
        for listed_key, file in files:
            key = self.keys.setdefault(listed_key, listed_key)
            count = self.count.get(key, 0) + 1
            self.count[key] = count
            if count == 2:
                self.where[key] = file
            keys.append(key)
        return tuple(keys)

    def hash_shared(self, client: Any, workers: int) -> dict[FileKey, Hashed]:
        """Stage 2: every file that more than one listed bundle links, hashed once, in a few
        tasks; the counts are dropped."""
        shared = sorted(self.where)
        hashed: dict[FileKey, Hashed] = {}
        if shared:
            count = max(1, min(len(shared), 4 * workers))
            batches = [[(key, self.where[key]) for key in shared[i::count]] for i in range(count)]
            for batch in client.gather(client.map(_hash, batches, pure=False)):
                hashed.update(batch)
        self.keys.clear()
        self.count.clear()
        self.where.clear()
        return hashed


class _Listing:
    """The driver's fold of stage 1, in source order, as each chunk's results arrive: the first
    source of each digest, the others, and, for the listed directory bundles, their files'
    identities and how many of them link each (:class:`_Links`)."""

    def __init__(self, writer: ArchiveWriter) -> None:
        self.writer = writer
        self.chosen: dict[str, int] = {}  # digest -> index of its first source
        self.others: dict[str, list[int]] = defaultdict(list)
        self.verified: dict[int, Judged] = {}  # a later tar's result: its check, or its entry
        self.files: dict[int, tuple[FileKey, ...]] = {}
        self.links = _Links()

    def add(self, index: int, shown_as: str, listed: _Listed) -> None:
        digest, reason, files, judged = listed
        if digest is None:
            self.writer.add(Judged(shown_as, None, (reason or "").encode()))
            return
        if digest in self.chosen:
            self.others[digest].append(index)
            if judged is not None:
                self.verified[index] = judged
                return
        else:
            self.chosen[digest] = index
            if judged is not None:  # a tar, verified as it was listed
                self.writer.add(judged)
                return
        self.files[index] = self.links.add(files)


def _linked(keys: Sequence[FileKey], hashed: dict[FileKey, Hashed]) -> list[tuple[FileKey, Hashed]]:
    """The stage-2 digests of the shared files among ``keys``."""
    return [(key, hashed[key]) for key in keys if key in hashed]


def _run(client: Any, sources: Sequence[Source], writer: ArchiveWriter, pins: Any) -> None:
    workers = len(client.scheduler_info()["workers"])
    pins_future = client.scatter(pins, broadcast=True) if pins is not None else None
    cwd = os.getcwd()  # the workers' own is another on any real cluster
    wired = [_wired(source) for source in sources]
    listing = _Listing(writer)
    parts = _chunks(len(sources), workers)
    chunked = [_Chunk([wired[i] for i in part], cwd) for part in parts]
    for part, future in zip(
        parts, client.map(_list_many, chunked, pins=pins_future, pure=False), strict=True
    ):
        for index, listed in zip(part, future.result(), strict=True):
            listing.add(index, shown(sources[index]), listed)
        future.release()
    del chunked
    hashed = listing.links.hash_shared(client, workers)
    writer.stats.hashed += len(hashed)
    first = {i for i in listing.chosen.values() if i in listing.files}
    order = [(i, digest, True, True) for digest, i in listing.chosen.items() if i in first]
    order += [
        (i, digest, _verified(listing, digest), False)
        for digest, others in listing.others.items()
        for i in others
        if i in listing.files
    ]
    seeds: dict[int, list[tuple[FileKey, Hashed]]] = {}  # a further source's, if verified next
    futures = {}
    for part in _chunks(len(order), workers):
        chunk = _stage_three([order[j] for j in part], listing.files, hashed, wired, cwd, seeds)
        futures[client.submit(_verify_many, chunk, pins_future, pure=False)] = [
            order[j][0] for j in part
        ]
    listing.files.clear()
    del order
    checked: dict[int, Judged] = {}  # further sources, added after their bundle's first
    completed: Any = distributed.as_completed
    for future in completed(futures):
        for index, judged in zip(futures[future], future.result(), strict=True):
            if index in first:
                writer.add(judged)
            else:
                checked[index] = judged
        future.release()
    for digest, others in listing.others.items():
        for index in others:  # in source order, as the default engine adds them
            done = checked.pop(index, None) or listing.verified.pop(index)
            if writer.seen(digest) and not writer.add(done):
                continue
            # its first sources were refused, or lack bytes this one holds: it is verified
            if done.digest is not None and not done.data:  # only checked so far
                chunk = _Chunk([(wired[index], digest, True)], cwd, seeds.get(index, ()))
                done = _verify_remotely(client, chunk, pins_future)
            writer.add(done)


def _stage_three(  # noqa: PLR0917 - the driver's state for one chunk
    part: Sequence[tuple[int, str, bool, bool]],
    files: dict[int, tuple[FileKey, ...]],
    hashed: dict[FileKey, Hashed],
    wired: Sequence[Source],
    cwd: str,
    seeds: dict[int, list[tuple[FileKey, Hashed]]],
) -> _Chunk[_ToVerify]:
    """A stage-3 chunk of sources (index, digest, whether verified, whether its bundle's first
    source), with the digests of the shared files they link, each once; a further source's
    own are kept in ``seeds``."""
    known: dict[FileKey, Hashed] = {}
    for i, _, _, is_first in part:
        linked = _linked(files[i], hashed)
        known.update(linked)
        if not is_first:
            seeds[i] = linked
    items: list[_ToVerify] = [(wired[i], digest, whole) for i, digest, whole, _ in part]
    return _Chunk(items, cwd, tuple(known.items()))


def _verified(listing: _Listing, digest: str) -> bool:
    """Whether a further directory source of a bundle is verified in stage 3 rather than only
    checked: when the bundle's first source is a tar, verified as it was listed, that was
    refused or lacks bytes (then this source's verification may take its place, as in the
    default engine; a bundle whose first source is a directory is verified in the same stage,
    and its further sources are checked)."""
    chosen = listing.chosen[digest]
    return chosen not in listing.files and not listing.writer.intact(digest)


def _verify_remotely(client: Any, chunk: _Chunk[_ToVerify], pins: Any) -> Judged:
    """One further source of a bundle, verified as a task of its own (see :func:`_run`)."""
    return client.submit(_verify_many, chunk, pins, pure=False).result()[0]  # type: ignore[no-any-return]


# --- rank and rejudge (verify.judging) ---------------------------------------------------------

_Walked = tuple[str | None, str, list[tuple[FileKey, str]]]
"""A source's digest (None: refused), the refusal's reason, and its blob files' keys and paths
(a directory bundle's; a tar's members are never shared)."""


def _walk_list_many(chunk: _Chunk[Source]) -> list[_Walked]:
    """The listing of :func:`verify.judging.judge_archive` for a chunk of sources, on a worker."""
    listed: list[_Walked] = []
    with url_snapshots():
        for source in chunk.items:
            try:
                bundle = open_in(source, chunk.cwd)
                digest = digest_of(bundle.manifest_bytes())
            except (EvidenceAuditError, OSError) as exc:
                listed.append((None, refusal_reason(source, exc, located(source, chunk.cwd)), []))
                continue
            listed.append((digest, "", _blob_keys(bundle) if bundle.kind == "directory" else []))
    return listed


_Done = Judged | Judgement | str
"""A check of a further source, a verification, or the reason a verified source was refused."""


def _walk_steps_many(chunk: _Chunk[_ToVerify], job: Job) -> list[_Done]:
    """Sources of a chunk verified as ``job`` keeps them (``whole``), or only their bytes checked,
    on a worker: one :class:`~verify.BlobCache` for the chunk, seeded with the shared files'
    digests. A source whose manifest changed since it was listed is refused."""
    cache = _seeded(chunk.known)
    done: list[_Done] = []
    with url_snapshots():
        for source, digest, whole in chunk.items:
            if not whole:
                done.append(check(source, digest, cache, opened=None, cwd=chunk.cwd))
                continue
            try:
                judgement = job.judge(open_in(source, chunk.cwd), shown(source), cache, 1)
            except (EvidenceAuditError, OSError) as exc:
                done.append(refusal_reason(source, exc, located(source, chunk.cwd)))
                continue
            got = judgement.found.facts.bundle_digest
            done.append(judgement if got == digest else changed(digest, got))
    return done


class _OnDask:
    """The :class:`verify.judging.Steps` of an archive on Dask: every source listed, the shared
    files hashed once, then every bundle's first source verified and each further one checked,
    then the further sources whose bytes differ from those verified (the ones the walk will
    verify) verified, all as tasks; the walk then takes their results. A step it did not foresee
    (a copy whose first source was refused) is a task of its own when the walk asks for it."""

    def __init__(self, client: Any, sources: Sequence[Source], job: Job) -> None:
        self.client, self.job = client, job
        self.workers = len(client.scheduler_info()["workers"])
        self.job_future = client.scatter(job, broadcast=True)
        self.cwd = os.getcwd()  # the workers' own is another on any real cluster
        self.wired = [_wired(source) for source in sources]
        self.digests: dict[int, str] = {}
        self.reasons: dict[int, str] = {}
        self.files: dict[int, tuple[FileKey, ...]] = {}
        self.hashed: dict[FileKey, Hashed] = {}
        self.done: dict[tuple[int, bool], _Done | _Spooled] = {}
        """Each step's result; a verification's spooled (:class:`_Spooled`) till the walk asks."""
        self._spool = Spool("", prefix="audit-dask-")
        self.late = 0
        """Steps the walk asked for that were not foreseen (each a task of its own)."""
        order, twins = order_of(sources)
        walk = [i for i in order if i not in twins]  # the walk refuses the twins itself
        self._list(walk)
        groups: dict[str, list[int]] = defaultdict(list)
        for index in walk:
            if index in self.digests:
                groups[self.digests[index]].append(index)
        first = [(i[0], True) for i in groups.values()]
        further = [(i, False) for indexes in groups.values() for i in indexes[1:]]
        self._submit(first + further)
        self._submit(self._differing(groups))
        self.files.clear()

    def _list(self, walk: Sequence[int]) -> None:
        links = _Links()
        parts = _chunks(len(walk), self.workers)
        chunks = [_Chunk([self.wired[walk[j]] for j in part], self.cwd) for part in parts]
        for part, future in zip(
            parts, self.client.map(_walk_list_many, chunks, pure=False), strict=True
        ):
            for j, (digest, reason, files) in zip(part, future.result(), strict=True):
                index = walk[j]
                if digest is None:
                    self.reasons[index] = reason
                    continue
                self.digests[index] = digest
                self.files[index] = links.add(files)
            future.release()
        self.hashed = links.hash_shared(self.client, self.workers)

    def _submit(self, steps: Sequence[tuple[int, bool]]) -> None:
        """Run ``steps`` (a source, and whether it is verified or only checked) as tasks."""
        futures = {}
        for part in _chunks(len(steps), self.workers):
            chunk = self._chunk([steps[j] for j in part])
            futures[self.client.submit(_walk_steps_many, chunk, self.job_future, pure=False)] = [
                steps[j] for j in part
            ]
        completed: Any = distributed.as_completed
        for future in completed(futures):
            for step, result in zip(futures[future], future.result(), strict=True):
                self.done[step] = self._kept(result)
            future.release()

    def _chunk(self, steps: Sequence[tuple[int, bool]]) -> _Chunk[_ToVerify]:
        known: dict[FileKey, Hashed] = {}
        for index, _ in steps:
            known.update(_linked(self.files.get(index, ()), self.hashed))
        items = [(self.wired[i], self.digests[i], whole) for i, whole in steps]
        return _Chunk(items, self.cwd, tuple(known.items()))

    def _differing(self, groups: dict[str, list[int]]) -> list[tuple[int, bool]]:
        """The further sources the walk will verify: each first of its bundle whose bytes differ
        from those of every source verified before it (or whose check was refused)."""
        steps = []
        for digest, indexes in groups.items():
            first = self.done[indexes[0], True]
            seen = {first.held} if isinstance(first, _Spooled) else set()
            for index in indexes[1:]:
                held = self.done[index, False]
                assert isinstance(held, Judged)  # noqa: S101 - a check's result
                if held.digest == digest and bytes_of(held) in seen:
                    continue
                steps.append((index, True))
                if held.digest == digest:
                    seen.add(bytes_of(held))
        return steps

    def listed(self, index: int) -> tuple[str, str | None]:
        if index in self.reasons:
            raise Refused(self.reasons[index])
        return self.digests[index], None  # a cluster's file identities are not this machine's

    def checked(self, index: int, digest: str) -> Judged:
        done = self._step(index, whole=False)
        assert isinstance(done, Judged)  # noqa: S101 - a check's result
        return done

    def judged(self, index: int) -> Judgement:
        done = self._step(index, whole=True)
        if isinstance(done, str):
            raise Refused(done)
        assert isinstance(done, Judgement)  # noqa: S101 - a verification's result
        return done

    def _step(self, index: int, *, whole: bool) -> _Done:
        if (index, whole) not in self.done:
            self.late += 1
            self._submit([(index, whole)])
        done = self.done.pop((index, whole))
        return self._spool.get(done.offset, done.length) if isinstance(done, _Spooled) else done

    def _kept(self, done: _Done) -> _Done | _Spooled:
        """A verification's :class:`Judgement` spooled to disk (the facts of 10,000 bundles
        are not kept in memory till the walk asks for them); a check or refusal as it is."""
        if isinstance(done, Judgement):
            return _Spooled(*self._spool.put(done), done.held)
        return done

    def close(self) -> None:
        self._spool.close()


class _Spooled(NamedTuple):
    """Where a verification's :class:`Judgement` is spooled, and the bytes it held."""

    offset: int
    length: int
    held: tuple[str | None, str | None]


def judge_on_dask(
    sources: Sequence[Source],
    job: Job,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Any = None,
) -> JudgedArchive:
    """``rank`` / ``rejudge`` of ``sources`` on Dask (see :func:`verify_on_dask` for the cluster):
    the archive :func:`verify.judging.judge_archive` judges in this process."""
    with _session(client, scheduler, workers) as session:
        steps = _OnDask(session, sources, job)
        try:
            return judge_archive(sources, steps)
        finally:
            steps.close()
