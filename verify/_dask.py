"""``audit verify-archive --engine dask`` (ADR 0026): the per-bundle verifications of an archive
as Dask tasks, on a cluster given by address or a ``LocalCluster``; the report is the bytes the
default engine writes.

Three stages, so that every bundle digest is verified once and every file shared by several
bundles is hashed once across the workers:

1. **List** (one task per chunk of up to :data:`MAX_CHUNK` sources): open each source, read
   its manifest's digest, and name the identity (device, inode, size, mtime, ctime) of each
   of its blob files (directory bundles). A tar's members are never shared: a tar is verified here,
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

The driver keeps its state on disk (:data:`_DRIVER`, a private spool and SQLite database: the
sources, each listed bundle's file identities and how many bundles link each, the stage-2
digests, each step's result until it is used), submits each stage's chunks through a window
of :data:`WINDOW` a worker as earlier ones finish, and starts its LocalCluster before it reads
the first source: neither it nor its forked workers grow with the archive (ADR 0026 point 8).
Entries go to the :class:`~verify.archive.ArchiveWriter`'s spool as tasks finish. This module
is imported only when ``--engine dask`` is given; it imports Dask.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import logging
import os
import pickle
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import distributed

from bundle_schema import digest_of
from bundle_schema.errors import EvidenceAuditError, InvalidInput
from verify._hashing import (
    BlobCache,
    FileKey,
    Hashed,
    default_workers,
    file_keys,
    hash_identified,
    packed_key,
)
from verify._remote import shown_url, url_snapshots
from verify._shell import _blob_files
from verify._signature import IdentityPolicy
from verify._source import BundleSource
from verify._spool import Spool, Spooled
from verify._spool import named as _named
from verify._spool import text as _text
from verify.archive import (
    ArchiveWriter,
    Judged,
    Source,
    as_listed,
    check,
    judge,
    listed_ahead,
    located,
    open_in,
    refusal_reason,
    shown,
    signatures_of,
)
from verify.judging import (
    Job,
    JudgedArchive,
    Judgement,
    Refused,
    bytes_of,
    held_text,
    judge_archive,
    walked,
)

__all__ = ["judge_on_dask", "verify_on_dask"]

T = TypeVar("T")


@dataclass(frozen=True)
class _Rules:
    """What ``verify-archive`` judges each bundle by: the pin set (None: the one each names)
    and who must have signed it (None: signatures are not checked)."""

    pins: Any = None
    policy: IdentityPolicy | None = None


_Listed = tuple[str | None, str | None, list[tuple[FileKey, str]], Judged | None, str | None]
"""A source's digest (None: refused), the refusal's reason, its blob files' keys and paths,
for a tar, its verification, and, for a directory under an identity policy, the fingerprint of
its signature files as listed (:func:`verify.archive.signatures_of`)."""


def _list(source: Source, listing: Future[BundleSource], rules: _Rules, cwd: str) -> _Listed:
    """Stage 1 for one source, on a worker (within the task's :func:`url_snapshots`; ``cwd``:
    the command's working directory, see :func:`verify.archive.located`; ``listing``: its
    listing, :func:`verify.archive.listed_ahead`).

    A tar is verified here too (ADR 0031): its members are never shared, so nothing of stage 2
    is needed for it, and the task has just read it (at a URL, the whole of a small tar: its
    verification reads the listing and the bytes received, no request more). If another source
    of its digest comes first, the driver uses the result as the check of its bytes. Under an
    identity policy a directory's signature files are fingerprinted here, so that a further
    source signed otherwise than its bundle's first is verified in stage 3, not checked there
    and verified after it (ADR 0043, amended)."""
    try:
        bundle = listing.result()
        digest = digest_of(bundle.manifest_bytes())
    except (EvidenceAuditError, OSError) as exc:
        return None, refusal_reason(source, exc, located(source, cwd)), [], None, None
    if bundle.kind != "directory":
        return digest, None, [], _verify(source, digest, [], rules, cwd, bundle), None
    signed = None if rules.policy is None else signatures_of(bundle)
    return digest, None, _blob_keys(bundle), None, signed


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
    """Stage 2, on a worker: each file once, in this process (the cluster is the parallelism),
    its digest kept only if the bytes were read from the file of the identity listed
    (:func:`~verify._hashing.hash_identified`): the path is the second bundle's that linked it,
    which may lead elsewhere by now; a file not found as listed is hashed again where a bundle
    links it (stage 3)."""
    hashed = ((key, hash_identified(file, key)) for key, file in files)
    return [(key, result) for key, result in hashed if result is not None]


def _verify(  # noqa: PLR0917 - one source, and where it is
    source: Source,
    digest: str,
    seed: Sequence[tuple[FileKey, Hashed]],
    rules: _Rules,
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
    return as_listed(
        digest, judge(source, rules.pins, cache, opened=opened, cwd=cwd, policy=rules.policy)
    )


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


_ToVerify = tuple[str, str, bool]
"""A bundle's source, its listed digest, and whether it is verified (its first source) or
only its bytes checked (a further source)."""


@dataclass(frozen=True, slots=True)
class _Links:
    """A chunk's listed bundles' blob files as the driver keeps them, made on the worker: for
    each source, the :func:`~verify._hashing.packed_key` of each of its blob files, joined
    (None: a source the driver does not link, refused or a tar verify-archive verified as it
    listed it), and for each file the chunk links, its count of links in the chunk with the
    path of its first and its second link (None: linked once). The driver then counts a
    chunk's links in one statement a file, not one a link: a store's shared files are linked
    by every bundle of a chunk, and the driver runs the scheduler on a core the workers need."""

    keys: list[bytes | None]
    counted: list[tuple[bytes, int, bytes, bytes | None]]


def _links(files: Iterable[Sequence[tuple[FileKey, str]] | None]) -> _Links:
    """The :class:`_Links` of a chunk's sources' blob files (None: a source not linked), in
    source order."""
    keys: list[bytes | None] = []
    counted: dict[bytes, list[Any]] = {}
    for linked in files:
        if linked is None:
            keys.append(None)
            continue
        packed = [packed_key(key) for key, _ in linked]
        keys.append(b"".join(packed))
        for key, (_, file) in zip(packed, linked, strict=True):
            if (seen := counted.get(key)) is None:
                counted[key] = [1, _text(file), None]
            else:
                seen[0] += 1
                if seen[2] is None:
                    seen[2] = _text(file)
    return _Links(keys, [(key, *seen) for key, seen in counted.items()])


_Folded = tuple[str | None, str | None, Judged | None, str | None]
"""A source's listing as the driver folds it: :data:`_Listed` without its files (they are in
the chunk's :class:`_Links`)."""


def _list_many(chunk: _Chunk[str], rules: _Rules) -> tuple[list[_Folded], _Links]:
    """Stage 1 for a chunk of sources: one task, one :func:`url_snapshots` block (its sources
    are distinct; their URLs share one file system, made from the worker's environment). The
    driver links each directory bundle listed (:meth:`_Driver._link`)."""
    with url_snapshots():
        sources = (_unwired(item) for item in chunk.items)
        listed = [
            _list(source, listing, rules, chunk.cwd)
            for source, listing in listed_ahead(sources, chunk.cwd)
        ]
    folded = [(digest, reason, judged, signed) for digest, reason, _, judged, signed in listed]
    # a directory bundle is linked; a refused source and a tar verified as listed are not
    linked = [
        files if digest is not None and judged is None else None
        for digest, _, files, judged, _ in listed
    ]
    return folded, _links(linked)


def _verify_many(chunk: _Chunk[_ToVerify], rules: _Rules) -> list[Judged]:
    """Stage 3 for a chunk of sources: one task, one :func:`url_snapshots` block."""
    with url_snapshots():
        return [
            _verify(_unwired(item), digest, chunk.known, rules, chunk.cwd, whole=whole)
            for item, digest, whole in chunk.items
        ]


MAX_CHUNK = 256
"""The most sources one task takes, with at least 8 chunks per worker so that the workers stay
balanced (ADR 0031). A task costs the driver, which also runs the scheduler, about 3 ms of CPU
with its chunk's arguments and results: more than listing a small bundle, twice verifying one.
On 10,000 small bundles and two workers, chunks of 256 instead of 64 took the driver's CPU from
0.21 to 0.15 ms a bundle; the last chunk of a worker is then at most about half a second."""


class _Local(str):
    """A local path as a task takes it: its text, marked as a path (a ``Path`` is parsed again
    each time it is unpickled, on the scheduler and on the worker: a tenth of the driver's
    time). The task makes it a ``Path`` again (:func:`_unwired`): a plain ``str`` is a URL to
    :func:`~verify.archive.shown`, which masks its query, where a path is shown as it is."""

    __slots__ = ()


def _wired(source: Source) -> str:
    """A source as a task takes it: a local path as :class:`_Local` (the task opens it joined
    to the chunk's working directory when it is relative), a URL as it is."""
    return _Local(os.fspath(source)) if isinstance(source, Path) else source


def _unwired(item: str) -> Source:
    """The source :func:`_wired` sent, on a worker: a path a ``Path`` again."""
    return Path(item) if isinstance(item, _Local) else item


def _chunk_size(count: int, workers: int) -> int:
    """How many of ``count`` sources a chunk takes (:data:`MAX_CHUNK`)."""
    return max(1, min(MAX_CHUNK, count // (8 * max(1, workers))))


def _chunks(count: int, workers: int) -> Iterator[range]:
    size = _chunk_size(count, workers)
    return (range(i, min(count, i + size)) for i in range(0, count, size))


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


LOG_LENGTH = 16
"""Dask's ``distributed.admin.low-level-log-length`` in the command's process and in the
LocalCluster it starts (an existing cluster keeps its own): how many recent messages each
batched stream keeps for a developer to read, and how many transitions and events the
scheduler logs. Dask's 1,000 kept each message a stream sent: in the client, every chunk's
pickled task; in the scheduler, every chunk's task as sent to its worker, its sources and all
(tracemalloc: 400 bytes a bundle, and up to 1,000 chunks of 256 sources a worker before it
stops growing)."""


def _client(scheduler: str | None, workers: int | None, scratch: str) -> tuple[Any, Any]:
    """A client of the scheduler at ``scheduler``, or of a new LocalCluster (and the cluster),
    Dask's scratch space (its workers' and its locks) under ``scratch``, not in
    ``TMPDIR/dask-scratch-space``, which Dask leaves behind. The LocalCluster's scheduler,
    nannies and workers log nothing below CRITICAL: a worker whose heartbeat meets the
    scheduler closing logs an ERROR with a traceback (a race of Dask's at a close), and a
    task's failure reaches the command as its exception, so none of Dask's own log lines is
    the user's. The client of a LocalCluster gathers results from its workers directly: its
    scheduler runs in this process, on a core the workers need, and would receive and send
    each result again; a client of a cluster given by address keeps Dask's default (through
    the scheduler: the workers of an operator's cluster may not be reachable from here)."""
    dask: Any = distributed  # Dask's API is untyped
    if scheduler is not None:
        try:
            return dask.Client(scheduler), None
        except (OSError, TimeoutError, ValueError) as exc:  # no such address, none answering
            raise InvalidInput(
                f"--scheduler {shown_url(scheduler)}: cannot reach a Dask scheduler there "
                f"({type(exc).__name__})"
            ) from None
    dask_config: Any = importlib.import_module("dask.config")
    with dask_config.set({**_local_config(), "temporary-directory": scratch}):
        cluster = dask.LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
    return dask.Client(cluster, direct_to_workers=True), cluster


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Dask's loggers (``distributed`` and each of its own with a level of its own) at
    CRITICAL while the command's LocalCluster runs, their levels restored after: a record
    below is not made at all, so it takes no handler's lock, Dask's or one that a program
    embedding the command put on the root logger. The cluster's scheduler and nannies run in
    this process and its workers are forked from a nanny's thread: a worker forked while
    another thread held a handler's stream lock (the scheduler logs each worker it registers)
    waited forever at its own first record (seen under pytest, whose handlers are on the root
    logger: the worker stuck in the handler's flush). Forked workers inherit the levels."""
    loggers = [logging.getLogger("distributed")] + [
        logger
        for name, logger in logging.root.manager.loggerDict.items()
        if name.startswith("distributed.") and isinstance(logger, logging.Logger) and logger.level
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@contextlib.contextmanager
def _session(client: Any, scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """``client``, else a client of the scheduler at ``scheduler``, else of a new
    ``LocalCluster`` of ``workers`` processes (default: the cores, Dask's loggers quiet while
    it runs: :func:`_quiet`); what it opened is closed when done."""
    if client is not None:
        yield client
        return
    dask_config: Any = importlib.import_module("dask.config")
    with (
        dask_config.set({"distributed.admin.low-level-log-length": LOG_LENGTH}),
        tempfile.TemporaryDirectory(prefix="audit-dask-") as scratch,
        _quiet() if scheduler is None else contextlib.nullcontext(),
    ):
        client, cluster = _client(scheduler, workers, scratch)
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


def verify_on_dask(
    sources: Iterable[Source],
    writer: ArchiveWriter,
    pins: Any = None,
    *,
    policy: IdentityPolicy | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Any = None,
) -> None:
    """Verify ``sources`` (in the order :func:`verify.archive.ordered` gives) on Dask into
    ``writer``: on ``client``, else the scheduler at ``scheduler``, else a new ``LocalCluster``
    of ``workers`` processes (default: the cores), closed when done. The cluster is up before
    the first source is read (its forked workers inherit nothing of the archive), and the
    sources are read once, as they come."""
    with (
        _session(client, scheduler, workers) as session,
        _Verifying(session, _Rules(pins, policy)) as run,
    ):
        run.verify(sources, writer)


WINDOW = 4
"""How many chunks a worker has in flight at most (one running, the next ones queued): the
driver submits a stage's chunks as earlier ones finish, never all at once, so that the
scheduler (in the driver's process for a LocalCluster) holds a few chunks' sources, not the
archive's."""

MEMO = 4096
"""How many files' stage-2 lookups the driver keeps at hand (a few hundred KB)."""

MAX_HASH_BATCH = 1024
"""The most shared files one stage-2 task hashes."""

_DRIVER = """
CREATE TABLE source (idx INTEGER PRIMARY KEY, wired BLOB, local INTEGER, shown BLOB);
CREATE TABLE listed (idx INTEGER PRIMARY KEY, keys BLOB);
CREATE TABLE link (key BLOB PRIMARY KEY, count INTEGER, path BLOB) WITHOUT ROWID;
CREATE TABLE hashed (key BLOB PRIMARY KEY, result BLOB) WITHOUT ROWID;
CREATE TABLE chosen (digest TEXT PRIMARY KEY, idx INTEGER, signed TEXT) WITHOUT ROWID;
CREATE TABLE other (digest TEXT, idx INTEGER, signed TEXT, PRIMARY KEY (digest, idx))
    WITHOUT ROWID;
CREATE TABLE walked (idx INTEGER PRIMARY KEY, seq INTEGER, digest TEXT, reason BLOB);
CREATE INDEX walked_by_digest ON walked (digest, seq);
CREATE TABLE todo (seq INTEGER PRIMARY KEY, idx INTEGER, digest TEXT, whole INTEGER,
                   first INTEGER);
CREATE TABLE done (idx INTEGER, whole INTEGER, offset INTEGER, length INTEGER, digest TEXT,
                   held BLOB, PRIMARY KEY (idx, whole)) WITHOUT ROWID;
"""
"""The driver's state (a private :class:`~verify._spool.Spool`: on disk past a page cache of
2 MiB, so that it does not grow with the archive): ``source``, the sources verify-archive
verifies, by their place in its order, as a task takes them and as reports show them;
``listed``, each listed directory bundle's blob files (their packed :data:`FileKey`);
``link``, how many listed bundles link each file identity and, once a second does, a path of
it; ``hashed``, the stage-2 results; ``chosen`` and ``other``, verify-archive's first source
of each bundle digest and the further ones; ``walked``, rank's and rejudge's listing in the
walk's order; ``todo``, a stage's steps, chunked by ranges of ``seq``; ``done``, each step's
result spooled (with, for rank's and rejudge's walk, the digest and bytes a step found)."""


class _Driver(Spooled):
    """What both archive walks on Dask share: the cluster, the driver's state on disk, tasks
    submitted through a bounded window, the listing's link counts and the shared files hashed
    once (stage 2)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.workers = max(1, len(client.scheduler_info()["workers"]))
        self.cwd = os.getcwd()  # the workers' own is another on any real cluster
        self._spool = Spool(_DRIVER, prefix="audit-dask-")
        self.db = self._spool.db
        self._memo: dict[bytes, Hashed | None] = {}

    def _map(
        self, function: Any, chunks: Iterable[tuple[T, Any]], **kwargs: Any
    ) -> Iterator[tuple[T, Any]]:
        """``function(chunk, **kwargs)`` for each chunk as a task, at most :data:`WINDOW` a
        worker in flight; each chunk's payload with its task's result, in the order given. The
        window is filled, then topped up whenever half of it is done, each time in one
        ``client.map`` (one message to the scheduler, not one a chunk)."""
        pending: deque[tuple[T, Any]] = deque()
        window = WINDOW * self.workers
        given = iter(chunks)
        while True:
            if len(pending) <= window // 2:
                batch = list(itertools.islice(given, window - len(pending)))
                if batch:
                    futures = self.client.map(
                        function, [chunk for _, chunk in batch], pure=False, **kwargs
                    )
                    pending.extend(zip((payload for payload, _ in batch), futures, strict=True))
            if not pending:
                return
            yield self._result(pending.popleft())

    @staticmethod
    def _result(submitted: tuple[T, Any]) -> tuple[T, Any]:
        payload, future = submitted
        result = future.result()
        future.release()
        return payload, result

    def _link(self, indexes: Sequence[int], links: _Links) -> None:
        """A chunk's listed bundles' blob files (the sources at ``indexes``, in order): kept
        by bundle, and counted by file identity, with a path of a file once a second bundle
        links it (the second's)."""
        self.db.executemany(
            "INSERT INTO listed VALUES (?, ?)",
            [(i, keys) for i, keys in zip(indexes, links.keys, strict=True) if keys is not None],
        )
        self.db.executemany(
            "INSERT INTO link VALUES (?1, ?2, CASE WHEN ?2 > 1 THEN ?4 END) "
            "ON CONFLICT (key) DO UPDATE SET count = count + ?2, "
            "path = CASE WHEN count = 1 THEN ?3 ELSE path END",
            links.counted,
        )

    def _hash_shared(self) -> int:
        """Stage 2: every file that more than one listed bundle links, hashed once, in tasks of
        at most :data:`MAX_HASH_BATCH` files; the counts are dropped. How many were hashed."""
        (shared,) = self.db.execute("SELECT count(*) FROM link WHERE count > 1").fetchone()
        size = max(1, min(MAX_HASH_BATCH, -(-shared // (4 * self.workers))))

        def batches() -> Iterator[tuple[None, list[tuple[FileKey, str]]]]:
            after = b""
            while True:
                rows = self.db.execute(
                    "SELECT key, path FROM link WHERE count > 1 AND key > ? ORDER BY key LIMIT ?",
                    (after, size),
                ).fetchall()
                if not rows:
                    return
                after = rows[-1][0]
                yield None, [(file_keys(key)[0], _named(path)) for key, path in rows]

        for _, batch in self._map(_hash, batches()):
            self.db.executemany(
                "INSERT INTO hashed VALUES (?, ?)",
                [(packed_key(key), pickle.dumps(result)) for key, result in batch],
            )
        self.db.execute("DELETE FROM link")
        return int(shared)

    def _known(self, indexes: Iterable[int]) -> tuple[tuple[FileKey, Hashed], ...]:
        """The stage-2 digests of the shared files the listed bundles at ``indexes`` link, each
        once."""
        known: dict[bytes, tuple[FileKey, Hashed]] = {}
        for index in indexes:
            row = self.db.execute("SELECT keys FROM listed WHERE idx = ?", (index,)).fetchone()
            if row is None:
                continue
            for key in file_keys(row[0]):
                packed = packed_key(key)
                if packed not in known and (result := self._hashed(packed)) is not None:
                    known[packed] = (key, result)
        return tuple(known.values())

    def _hashed(self, packed: bytes) -> Hashed | None:
        """The stage-2 result of a file (None: it was not shared), the last
        :data:`MEMO` looked up kept at hand (a store's shared files are looked up by every
        chunk)."""
        if packed in self._memo:
            return self._memo[packed]
        row = self.db.execute("SELECT result FROM hashed WHERE key = ?", (packed,)).fetchone()
        result = None if row is None else pickle.loads(row[0])  # noqa: S301 - this process's
        if len(self._memo) >= MEMO:
            self._memo.clear()
        self._memo[packed] = result
        return result

    def _in_chunks(self, table: str, query: str, make: Callable[[list[Any]], T]) -> Iterator[T]:
        """The rows of ``table`` a task's chunk at a time, each range of them read by ``query``
        (whose two parameters bound the range) and made into what is submitted by
        ``make(rows)``."""
        (count,) = self.db.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
        for part in _chunks(count, self.workers):
            yield make(self.db.execute(query, (part.start, part.stop)).fetchall())

    def _chunked(self, make: Any) -> Iterator[tuple[list[Any], Any]]:
        """The steps of ``todo`` in chunks (by ranges of ``seq``), each made into a task's
        chunk by ``make(rows)``: (the rows, the chunk)."""
        query = "SELECT idx, digest, whole, first FROM todo WHERE seq >= ? AND seq < ? ORDER BY seq"
        return self._in_chunks("todo", query, lambda rows: (rows, make(rows)))

    def _plan(self, steps: Iterable[tuple[int, str, bool, bool]]) -> None:
        """``todo``: ``steps`` (a source, its digest, whether it is verified or only checked,
        whether it is its bundle's first source), in order."""
        self.db.execute("DELETE FROM todo")
        self.db.executemany(
            "INSERT INTO todo VALUES (?, ?, ?, ?, ?)",
            ((seq, *step) for seq, step in enumerate(steps)),
        )

    def _keep(
        self, index: int, whole: bool, done: object, digest: str | None, held: bytes | None
    ) -> None:
        """A step's result, spooled (read back by :meth:`_taken`)."""
        self.db.execute(
            "INSERT OR REPLACE INTO done VALUES (?, ?, ?, ?, ?, ?)",
            (index, whole, *self._spool.put(done), digest, held),
        )

    def _taken(self, index: int, whole: bool) -> Any:
        """The result :meth:`_keep` kept of a step, dropped from the index; None when none."""
        row = self.db.execute(
            "SELECT offset, length FROM done WHERE idx = ? AND whole = ?", (index, whole)
        ).fetchone()
        if row is None:
            return None
        self.db.execute("DELETE FROM done WHERE idx = ? AND whole = ?", (index, whole))
        return self._spool.get(*row)


def _wire(text: bytes, local: int) -> str:
    """A source as the driver's ``source`` table keeps it, as a task takes it (:func:`_wired`)."""
    return _Local(_named(text)) if local else _named(text)


class _Verifying(_Driver):
    """``verify-archive`` on Dask (see the module's docstring for the three stages)."""

    def __init__(self, client: Any, rules: _Rules) -> None:
        super().__init__(client)
        self.policy = rules.policy is not None
        given = rules.pins is not None or rules.policy is not None
        self.rules = client.scatter(rules, broadcast=True) if given else rules

    def verify(self, sources: Iterable[Source], writer: ArchiveWriter) -> None:
        self.writer = writer
        self._take(sources)
        self._list()
        writer.stats.hashed += self._hash_shared()
        self._verify()
        self._add_further()

    def _take(self, sources: Iterable[Source]) -> None:
        def row(index: int, source: Source) -> tuple[int, bytes, bool, bytes]:
            wired = _wired(source)
            return index, _text(wired), isinstance(wired, _Local), _text(shown(source))

        self.db.executemany(
            "INSERT INTO source VALUES (?, ?, ?, ?)", itertools.starmap(row, enumerate(sources))
        )

    def _wired(self, index: int) -> str:
        row = self.db.execute("SELECT wired, local FROM source WHERE idx = ?", (index,)).fetchone()
        return _wire(*row)

    def _list(self) -> None:
        """Stage 1, folded in source order: the first source of each digest, the others, and,
        for the listed directory bundles, their files' identities and how many link each."""

        def make(rows: list[Any]) -> tuple[list[tuple[int, str]], _Chunk[str]]:
            payload = [(index, _named(name)) for index, _, _, name in rows]
            wired = [_wire(text, local) for _, text, local, _ in rows]
            return payload, _Chunk(wired, self.cwd)

        query = (
            "SELECT idx, wired, local, shown FROM source WHERE idx >= ? AND idx < ? ORDER BY idx"
        )
        chunks = self._in_chunks("source", query, make)
        for payload, (results, links) in self._map(_list_many, chunks, rules=self.rules):
            for (index, shown_as), listed in zip(payload, results, strict=True):
                self._fold(index, shown_as, listed)
            self._link([index for index, _ in payload], links)

    def _fold(self, index: int, shown_as: str, listed: _Folded) -> None:
        """A source listed: refused, a further source of its bundle, or its first; a tar's
        verification kept or added. A directory bundle is linked with its chunk
        (:func:`_list_many`)."""
        digest, reason, judged, signed = listed
        if digest is None:
            self.writer.add(Judged(shown_as, None, (reason or "").encode()))
            return
        chosen = self.db.execute("SELECT 1 FROM chosen WHERE digest = ?", (digest,)).fetchone()
        if chosen is not None:
            self.db.execute("INSERT INTO other VALUES (?, ?, ?)", (digest, index, signed))
            if judged is not None:  # a later tar's result: its check, or its entry
                self._keep(index, False, judged, None, None)
                return
        else:
            self.db.execute("INSERT INTO chosen VALUES (?, ?, ?)", (digest, index, signed))
            if judged is not None:  # a tar, verified as it was listed
                self.writer.add(judged)

    def _verify(self) -> None:
        """Stage 3: each bundle's first directory source verified, each further directory
        source checked (or verified: :meth:`_verified`); the first added as they come, the
        further kept."""
        first = self.db.execute(
            "SELECT c.idx, c.digest FROM chosen AS c JOIN listed AS l ON l.idx = c.idx "
            "ORDER BY c.idx"
        )
        further = self.db.execute(
            "SELECT o.idx, o.digest, o.signed FROM other AS o JOIN listed AS l ON l.idx = o.idx "
            "ORDER BY o.idx"
        )
        self._plan(  # read as planned, a row at a time
            itertools.chain(
                ((index, digest, True, True) for index, digest in first),
                (
                    (index, digest, self._verified(digest, signed), False)
                    for index, digest, signed in further
                ),
            )
        )

        def make(rows: list[tuple[int, str, int, int]]) -> _Chunk[_ToVerify]:
            items = [(self._wired(i), digest, bool(whole)) for i, digest, whole, _ in rows]
            return _Chunk(items, self.cwd, self._known(i for i, *_ in rows))

        for rows, results in self._map(_verify_many, self._chunked(make), rules=self.rules):
            for (index, _, _, is_first), judged in zip(rows, results, strict=True):
                if is_first:
                    self.writer.add(judged)
                else:
                    self._keep(index, False, judged, None, None)

    def _verified(self, digest: str, signed: str | None) -> bool:
        """Whether a further directory source of a bundle (``signed``: its signature files'
        fingerprint as listed) is verified in stage 3 rather than only checked: when the
        bundle's first source is a tar, verified as it was listed, that was refused or lacks
        bytes (then this source's verification may take its place, as in the default engine; a
        bundle whose first source is a directory is verified in the same stage, and its further
        sources are checked); and, under an identity policy, when its signature files are not
        the first source's (the writer verifies such a source, ADR 0043 amended: here in the
        parallel stage, not after it, a task at a time)."""
        row = self.db.execute(
            "SELECT l.idx, c.signed FROM chosen AS c LEFT JOIN listed AS l ON l.idx = c.idx "
            "WHERE c.digest = ?",
            (digest,),
        ).fetchone()
        otherwise = self.policy and row is not None and signed != row[1]
        if row is not None and row[0] is not None:  # a directory, verified in this stage
            return bool(otherwise)
        if not self.writer.intact(digest):
            return True
        return self.policy and signed != self.writer.signed(digest)

    def _add_further(self) -> None:
        """The further sources of each bundle, in source order, as the default engine adds
        them; one that holds bytes its bundle's first sources lack is verified (a task)."""
        rows = self.db.execute("SELECT digest, idx FROM other ORDER BY digest, idx")
        for digest, index in rows:
            done: Judged = self._taken(index, False)
            if self.writer.seen(digest) and not self.writer.add(done):
                continue
            # its first sources were refused, or lack bytes this one holds: it is verified
            if done.digest is not None and not done.data:  # only checked so far
                item = (self._wired(index), digest, True)
                chunk = _Chunk([item], self.cwd, self._known([index]))
                done = self.client.submit(_verify_many, chunk, self.rules, pure=False).result()[0]
            self.writer.add(done)


# --- rank and rejudge (verify.judging) ---------------------------------------------------------

_Walked = tuple[str | None, str]
"""A source's digest (None: refused) and the refusal's reason; its blob files (a directory
bundle's; a tar's members are never shared) are in the chunk's :class:`_Links`."""


def _walk_list_many(chunk: _Chunk[str]) -> tuple[list[_Walked], _Links]:
    """The listing of :func:`verify.judging.judge_archive` for a chunk of sources, on a worker;
    every source not refused is linked."""
    listed: list[_Walked] = []
    files: list[list[tuple[FileKey, str]] | None] = []
    with url_snapshots():
        for item in chunk.items:
            source = _unwired(item)
            try:
                bundle = open_in(source, chunk.cwd)
                digest = digest_of(bundle.manifest_bytes())
            except (EvidenceAuditError, OSError) as exc:
                listed.append((None, refusal_reason(source, exc, located(source, chunk.cwd))))
                files.append(None)
                continue
            listed.append((digest, ""))
            files.append(_blob_keys(bundle) if bundle.kind == "directory" else [])
    return listed, _links(files)


_Done = Judged | Judgement | str
"""A check of a further source, a verification, or the reason a verified source was refused."""


def _walk_steps_many(chunk: _Chunk[_ToVerify], job: Job) -> list[_Done]:
    """Sources of a chunk verified as ``job`` keeps them (``whole``), or only their bytes checked,
    on a worker: one :class:`~verify.BlobCache` for the chunk, seeded with the shared files'
    digests (the walk refuses a source whose manifest changed since it was listed)."""
    cache = _seeded(chunk.known)
    done: list[_Done] = []
    with url_snapshots():
        for item, digest, whole in chunk.items:
            source = _unwired(item)
            if not whole:
                done.append(check(source, digest, cache, opened=None, cwd=chunk.cwd))
                continue
            try:
                done.append(job.judge(open_in(source, chunk.cwd), shown(source), cache, 1))
            except (EvidenceAuditError, OSError) as exc:
                done.append(refusal_reason(source, exc, located(source, chunk.cwd)))
    return done


class _OnDask(_Driver):
    """The :class:`verify.judging.Steps` of an archive on Dask: every source listed, the shared
    files hashed once, then every bundle's first source verified and each further one checked,
    then the further sources whose bytes differ from those verified (the ones the walk will
    verify) verified, all as tasks; the walk then takes their results. A step it did not foresee
    (a copy whose first source was refused) is a task of its own when the walk asks for it.
    Each result is spooled till the walk asks (the driver's state is on disk, ``_DRIVER``)."""

    def __init__(self, client: Any, sources: Sequence[Source], job: Job) -> None:
        super().__init__(client)
        self.sources, self.job = sources, job
        self.job_future = client.scatter(job, broadcast=True)
        self.late = 0
        """Steps the walk asked for that were not foreseen (each a task of its own)."""
        self._list()
        self._plan(self._first_and_further())
        self._submit()
        self._plan(self._differing())
        self._submit()
        self.db.execute("DELETE FROM listed")

    def _list(self) -> None:
        """Stage 1 in the walk's order (the twins left to the walk), then stage 2."""

        def chunks() -> Iterator[tuple[list[int], _Chunk[str]]]:
            size = _chunk_size(len(self.sources), self.workers)
            with walked(self.sources) as walk:
                kept = ((index, source) for index, source, twin in walk if not twin)
                while part := list(itertools.islice(kept, size)):
                    wired = [_wired(source) for _, source in part]
                    yield [index for index, _ in part], _Chunk(wired, self.cwd)

        seq = 0
        for indexes, (results, links) in self._map(_walk_list_many, chunks()):
            for index, (digest, reason) in zip(indexes, results, strict=True):
                self.db.execute(
                    "INSERT INTO walked VALUES (?, ?, ?, ?)",
                    (index, seq, digest, None if digest is not None else _text(reason)),
                )
                seq += 1
            self._link(indexes, links)
        self._hash_shared()

    def _groups(self) -> Iterator[tuple[str, list[int]]]:
        """Each listed bundle digest with its sources, in the walk's order."""
        rows = self.db.execute(
            "SELECT digest, idx FROM walked WHERE digest IS NOT NULL ORDER BY digest, seq"
        )
        for digest, group in itertools.groupby(rows, key=lambda row: row[0]):
            yield digest, [index for _, index in group]

    def _first_and_further(self) -> Iterator[tuple[int, str, bool, bool]]:
        """Every bundle's first source, to verify; then each further one, to check."""
        for digest, indexes in self._groups():
            yield indexes[0], digest, True, True
        for digest, indexes in self._groups():
            for index in indexes[1:]:
                yield index, digest, False, False

    def _submit(self) -> None:
        """Run the steps of ``todo`` as tasks; each result kept (:meth:`_done`)."""

        def make(rows: list[tuple[int, str, int, int]]) -> _Chunk[_ToVerify]:
            items = [(_wired(self.sources[i]), digest, bool(whole)) for i, digest, whole, _ in rows]
            return _Chunk(items, self.cwd, self._known(i for i, *_ in rows))

        for rows, results in self._map(_walk_steps_many, self._chunked(make), job=self.job_future):
            for (index, _, whole, _), result in zip(rows, results, strict=True):
                self._done(index, bool(whole), result)

    def _done(self, index: int, whole: bool, done: _Done) -> None:
        """A step's result, spooled, with what :meth:`_differing` reads of it: a verification's
        bytes held, a check's digest and bytes held."""
        if isinstance(done, Judgement):
            self._keep(index, whole, done, None, held_text(done.held))
        elif isinstance(done, Judged):
            self._keep(index, whole, done, done.digest, held_text(bytes_of(done)))
        else:
            self._keep(index, whole, done, None, None)

    def _differing(self) -> Iterator[tuple[int, str, bool, bool]]:
        """The further sources the walk will verify: each first of its bundle whose bytes differ
        from those of every source verified before it (or whose check was refused)."""
        for digest, indexes in self._groups():
            first = self._read(indexes[0], whole=True)
            seen: set[bytes | None] = {first[1]} if first[1] is not None else set()
            for index in indexes[1:]:
                got, held = self._read(index, whole=False)
                if got == digest and held in seen:
                    continue
                yield index, digest, True, False
                if got == digest:
                    seen.add(held)

    def _read(self, index: int, *, whole: bool) -> tuple[str | None, bytes | None]:
        row = self.db.execute(
            "SELECT digest, held FROM done WHERE idx = ? AND whole = ?", (index, whole)
        ).fetchone()
        return row[0], row[1]

    def listed(self, index: int) -> tuple[str, str | None]:
        row = self.db.execute(
            "SELECT digest, reason FROM walked WHERE idx = ?", (index,)
        ).fetchone()
        digest, reason = row
        if digest is None:
            raise Refused(_named(reason))
        return digest, None  # a cluster's file identities are not this machine's

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
        done = self._taken(index, whole)
        if done is None:
            self.late += 1
            self._plan([(index, self.listed(index)[0], whole, False)])
            self._submit()
            done = self._taken(index, whole)
        return done  # type: ignore[no-any-return]


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
    with _session(client, scheduler, workers) as session, _OnDask(session, sources, job) as steps:
        return judge_archive(sources, steps)
