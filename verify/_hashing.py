"""Stream bundle members through SHA-256, on every core, in the background.

Two ways to use the cores, chosen by the number of blobs:

- a few blobs (fewer than :data:`PROCESS_THRESHOLD`): threads. hashlib releases the GIL while it
  hashes buffers larger than 2 KiB and file reads release it too, so threads keep every core busy
  on large blobs without the cost of starting processes;
- many blobs: helper processes, one fewer than the cores, since the calling process parses the
  manifest meanwhile (per-file work in the interpreter, open, read and close, holds the GIL, so
  threads contend on small files). Each helper gets its share of the members when it starts and
  sends all its results at once when done: a pool fed batch by batch starves while the calling
  process holds the GIL parsing the manifest.

Work starts when a :class:`HashJob` is made, so the caller can parse the manifest meanwhile.
Memory stays bounded: each worker holds one read buffer at a time.

Progress is counted while a blob is read, not only when it is done: each worker passes on what
it has hashed every :data:`PROGRESS_STEP` bytes (threads and the calling thread to a counter
behind a lock, helper processes into shared memory), so a bar moves through a large blob.

Members of a tar at a URL (ADR 0024) are hashed by one thread, in the order of their offsets,
through a read-ahead of the tar's block: small members next to each other come in one range
request, a large one in requests of a block each. The network is the bottleneck there, not the
cores; helper processes would each need a connection of their own.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, NamedTuple

from verify._source import READ_CHUNK, Member, RandomAccess, read_range
from verify._spool import Spool

__all__ = [
    "PROCESS_THRESHOLD",
    "PROGRESS_STEP",
    "BlobCache",
    "FileKey",
    "HashJob",
    "Hashed",
    "default_workers",
    "hash_identified",
    "hash_members",
]

PROCESS_THRESHOLD = 64
"""From this many blobs on, hash in worker processes rather than threads."""
MAX_BATCH = 4096
PROGRESS_STEP = 8 << 20
"""Bytes a worker hashes between two progress reports: a bar moves through a large blob (a
1 GiB blob is 128 reports) at no measurable cost to hashing."""
_POLL_S = 0.1
"""How often the calling process reads the helper processes' counts while it waits for them."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class Hashed(NamedTuple):
    """What hashing one member found: its digest and how many bytes it had, or an error."""

    digest: str | None
    size: int
    error: str | None = None


def default_workers() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


class _Counter:
    """One worker's bytes hashed, passed on to ``report`` every :data:`PROGRESS_STEP` bytes and
    at :meth:`flush`. Used by one thread only."""

    __slots__ = ("_pending", "_report")

    def __init__(self, report: Callable[[int], None]) -> None:
        self._pending = 0
        self._report = report

    def __call__(self, count: int) -> None:
        self._pending += count
        if self._pending >= PROGRESS_STEP:
            self._report(self._pending)
            self._pending = 0

    def flush(self) -> None:
        if self._pending:
            self._report(self._pending)
            self._pending = 0


class _Progress:
    """Bytes hashed so far by every worker, passed on to an ``advance`` callback once one is
    given (:meth:`start`); what was hashed before that is passed on at once then.

    Threads of this process report through :meth:`add`; helper processes count in the third
    slot of their shared bounds (:meth:`watch`), read at every report.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._here = 0
        self._helpers: list[Any] = []
        self._reported = 0
        self._advance: Callable[[int], None] | None = None

    def watch(self, bounds: Any) -> None:
        """Count what a helper process writes into ``bounds[2]``."""
        self._helpers.append(bounds)

    def add(self, count: int) -> None:
        """``count`` more bytes were hashed (from any thread)."""
        with self._lock:
            self._here += count
            self._report()

    def poll(self) -> None:
        """Pass on what the helper processes have counted since the last report."""
        with self._lock:
            self._report()

    def start(self, advance: Callable[[int], None]) -> None:
        with self._lock:
            self._advance = advance
            self._report()

    def _report(self) -> None:
        if self._advance is None:
            return
        done = self._here + sum(bounds[2] for bounds in self._helpers)
        if done > self._reported:
            self._advance(done - self._reported)
            self._reported = done


def _hash_fd(fd: int, digest: Any, offset: int, size: int | None, counter: _Counter) -> int:
    """Feed an open file (all of it, or ``size`` bytes from ``offset``) to ``digest``."""
    total = 0
    if size is None:  # read_all, inlined: this loop runs once per small file
        while data := os.read(fd, READ_CHUNK):
            digest.update(data)
            total += len(data)
            counter(len(data))
        return total
    for data in read_range(fd, offset, size):
        digest.update(data)
        total += len(data)
        counter(len(data))
    return total


_Job = tuple[str, str, int | None, int]
"""A member as plain data (path, file, size, offset): cheap to send to a worker process."""
_Result = tuple[str, str | None, int, str | None]
"""A result as plain data (path, hex digest, size, error)."""


def _hash_jobs(
    jobs: Sequence[_Job], indices: Iterable[int], report: Callable[[int], None]
) -> list[_Result]:
    """Hash ``jobs[i]`` for each index given (the indices may stop early), reporting the bytes
    hashed as it goes (see :class:`_Counter`).

    Files of a directory bundle are opened relative to their directory (one path lookup per
    file, not one per path component: half the cost on many small files); a tar is opened once.
    """
    results: list[_Result] = []
    opened: dict[str, int] = {}
    counter = _Counter(report)
    try:
        for index in indices:
            path, file, size, offset = jobs[index]
            digest = hashlib.sha256()
            try:
                if size is None:
                    parent, _, name = file.rpartition("/")
                    if parent not in opened:
                        opened[parent] = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
                    fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=opened[parent])
                    try:
                        count = _hash_fd(fd, digest, 0, None, counter)
                    finally:
                        os.close(fd)
                else:
                    if file not in opened:
                        opened[file] = os.open(file, os.O_RDONLY | _NOFOLLOW)
                    count = _hash_fd(opened[file], digest, offset, size, counter)
            except OSError as exc:
                results.append((path, None, 0, exc.strerror or str(exc)))
                continue
            results.append((path, digest.hexdigest(), count, None))
    finally:
        counter.flush()
        for fd in opened.values():
            os.close(fd)
    return results


class _ReadAhead:
    """Reads a random-access file forward through a window of its block (one request each)."""

    def __init__(self, file: RandomAccess) -> None:
        self._file = file
        self._start, self._data = 0, b""

    def pieces(self, offset: int, size: int) -> Iterator[memoryview]:
        """Yield ``size`` bytes from ``offset``; stops early at the file's end."""
        position, end = offset, offset + size
        while position < end:
            if not self._start <= position < self._start + len(self._data):
                self._start, self._data = position, self._file.pread(position, self._file.block)
                if not self._data:
                    return
            stop = min(end, self._start + len(self._data))
            yield memoryview(self._data)[position - self._start : stop - self._start]
            position = stop


def _hash_read_through(
    members: Sequence[Member], report: Callable[[int], None], stop: threading.Event
) -> list[_Result]:
    """Hash members read through their tar's reader (a tar at a URL), in offset order, through
    one read-ahead per tar, until ``stop`` is set. A URL that cannot be read raises (nothing is
    judged), it is never a member's result."""
    results: list[_Result] = []
    counter = _Counter(report)
    ahead: dict[int, _ReadAhead] = {}
    try:
        for member in sorted(members, key=lambda m: (id(m.reader), m.offset)):
            assert member.reader is not None  # noqa: S101 - the caller chose these members
            window = ahead.setdefault(id(member.reader), _ReadAhead(member.reader))
            digest = hashlib.sha256()
            count = 0
            for data in window.pieces(member.offset, member.size or 0):
                if stop.is_set():
                    return results
                digest.update(data)
                count += len(data)
                counter(len(data))
            results.append((member.path, digest.hexdigest(), count, None))
    finally:
        counter.flush()
    return results


def _hash_batch(batch: Sequence[_Job], report: Callable[[int], None]) -> list[_Result]:
    """Hash every member of a batch."""
    return _hash_jobs(batch, range(len(batch)), report)


def _from_the_front(bounds: Any, count: int) -> Iterator[int]:
    """A helper's indices: 0, 1, ... while the caller has not taken them from the back.

    ``bounds`` is shared memory [front, back]: the helper writes front, the caller back. Each
    side checks the other's bound, then writes its claim, then hashes; so no index is skipped
    whatever the order in which the writes become visible (the one where they meet may be
    hashed twice, to the same result).
    """
    index = 0
    while index < count and index <= bounds[1]:
        bounds[0] = index + 1
        yield index
        index += 1


def _from_the_back(bounds: Any, count: int) -> Iterator[int]:
    """The caller's indices into a helper's share: the last, then down to where they meet."""
    index = count - 1
    while index >= 0 and index >= bounds[0]:
        bounds[1] = index - 1
        yield index
        index -= 1


def _batches(jobs: Sequence[_Job], workers: int) -> list[Sequence[_Job]]:
    size = max(1, min(MAX_BATCH, len(jobs) // (workers * 8)))
    return [jobs[i : i + size] for i in range(0, len(jobs), size)]


_PRELOADED = ["verify._parallel", "verify._hashing"]
"""What a fork server imports once, before it forks the first helper: each helper then starts
with the verifier's modules loaded instead of importing them itself (about 0.2 s a helper)."""


def _process_context() -> multiprocessing.context.BaseContext:
    """How helper processes start: forked where the process has one thread (nothing held by
    another thread is copied half-way), else from a fork server that has the verifier's modules
    loaded (:data:`_PRELOADED`), else spawned."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOADED)  # heeded when the server starts, once a process
    return context


def _hash_part(jobs: Sequence[_Job], bounds: Any, connection: Connection) -> None:
    """A helper process: hash its share from the front, counting the bytes in ``bounds[2]``,
    then send every result at once."""

    def report(count: int) -> None:
        bounds[2] += count

    try:
        connection.send(_hash_jobs(jobs, _from_the_front(bounds, len(jobs)), report))
    finally:
        connection.close()


class _Helper(NamedTuple):
    process: multiprocessing.process.BaseProcess
    receive: Connection
    jobs: list[_Job]
    bounds: Any
    """Shared [front, back, hashed]: how far the helper and the caller have taken its share,
    and the bytes the helper has hashed."""


class HashJob:
    """Hashing of some members, started at construction; a context manager that cancels.

    Args:
        members: what to hash.
        workers: processes or threads to use; default: the cores this process may run on.
    """

    def __init__(self, members: Sequence[Member], workers: int | None = None) -> None:
        workers = workers or default_workers()
        self._batches: list[Sequence[_Job]] = []
        self._pool: Executor | None = None
        self._futures: list[Future[list[_Result]]] = []
        self._helpers: list[_Helper] = []
        self._progress = _Progress()
        self._stop = threading.Event()
        self._through: ThreadPoolExecutor | None = None
        self._through_done: Future[list[_Result]] | None = None
        through = [m for m in members if m.reader is not None]
        if through:  # a tar at a URL: one thread, in offset order (see the module docstring)
            self._through = ThreadPoolExecutor(1, thread_name_prefix="sha256-url")
            self._through_done = self._through.submit(
                _hash_read_through, through, self._progress.add, self._stop
            )
            members = [m for m in members if m.reader is None]
        jobs = [(m.path, m.file, m.size, m.offset) for m in members]  # listing order: tar offsets
        if not jobs:
            return
        if len(jobs) >= PROCESS_THRESHOLD and workers > 1:
            self._start_helpers(jobs, workers - 1)
            return
        self._batches = _batches(jobs, workers)
        if len(self._batches) > 1 and workers > 1:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="sha256")
            report = self._progress.add
            self._futures = [self._pool.submit(_hash_batch, b, report) for b in self._batches]

    def _start_helpers(self, jobs: list[_Job], count: int) -> None:
        """Give each helper process its share up front (every count-th member), so that none
        waits on the calling process while it parses the manifest (which holds the GIL)."""
        context: Any = _process_context()  # each start method's context has Process and Pipe
        for index in range(count):
            share = jobs[index::count]
            bounds = context.RawArray("q", [0, len(share) - 1, 0])
            self._progress.watch(bounds)
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_hash_part, args=(share, bounds, send), daemon=True)
            process.start()
            send.close()
            self._helpers.append(_Helper(process, receive, share, bounds))

    def _finished(self) -> Iterator[list[_Result]]:
        report = self._progress.add
        if self._helpers:
            # The caller is done parsing: it hashes each share from the back until it meets
            # the helper, then takes the helper's results.
            for helper in self._helpers:
                back = _from_the_back(helper.bounds, len(helper.jobs))
                yield _hash_jobs(helper.jobs, back, report)
            for helper in self._helpers:
                try:
                    while not helper.receive.poll(_POLL_S):
                        self._progress.poll()
                    done = helper.receive.recv()
                except (EOFError, OSError):  # the helper died: hash its share here
                    done = _hash_batch(helper.jobs, report)
                helper.receive.close()
                helper.process.join()
                yield done
        elif self._pool is not None:
            yield from (future.result() for future in self._futures)
        else:
            yield from (_hash_batch(batch, report) for batch in self._batches)
        if self._through_done is not None:
            yield self._through_done.result()

    def results(self, advance: Callable[[int], None] | None = None) -> dict[str, Hashed]:
        """Wait for every member's result (read errors are results, not exceptions).

        Args:
            advance: called with the bytes hashed since its last call: at once with what was
                hashed before this call, then while hashing goes on (every
                :data:`PROGRESS_STEP` bytes of a worker, and every tenth of a second while
                helper processes are waited for), from a hashing thread or the calling one,
                never two at a time. The calls add up to the bytes read.
        """
        if advance is not None:
            self._progress.start(advance)
        results: dict[str, Hashed] = {}
        for done in self._finished():
            for path, hexdigest, size, error in done:
                digest = None if hexdigest is None else "sha256:" + hexdigest
                results[path] = Hashed(digest, size, error)
        self._progress.poll()
        self._helpers = []
        return results

    def close(self) -> None:
        """Stop the workers, cancelling what has not started."""
        for helper in self._helpers:
            helper.process.kill()
            helper.process.join()
            helper.receive.close()
        self._helpers = []
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._stop.set()  # a URL's hashing stops at its next piece
        if self._through is not None:
            self._through.shutdown(wait=True, cancel_futures=True)
            self._through = None

    def __enter__(self) -> HashJob:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.close()


FileKey = tuple[int, int, int, int, int]
"""A file's identity and state: device, inode, size, modification and change times (ns). The
change time moves with every ``write``, ``truncate`` and ``utime`` (a process can set a file's
mtime back, never its ctime), so a file rewritten in place with the same size and its mtime
restored has another key; a store through a shared mapping is the exception (ADR 0039)."""


def file_key(status: os.stat_result) -> FileKey:
    """The :data:`FileKey` of a file from its ``lstat``."""
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


IN_MEMORY = 1 << 12
"""How many files' digests a :class:`BlobCache` keeps in memory (about 0.7 MB) before it moves
them to disk."""
_SPILLED = "CREATE TABLE known (key BLOB PRIMARY KEY, result BLOB) WITHOUT ROWID;"


class BlobCache:
    """Digests of files already hashed, by file identity: a blob hard-linked into many bundles
    (a store shared by runs, see ``audit run --store``) is hashed once per process.

    Only the same file is reused: the key is (device, inode, size, mtime, ctime), so a copy of
    a blob in another bundle, or a blob rewritten since (even with its mtime set back), is
    hashed again. Tar members are never cached.
    """

    def __init__(self, in_memory: int = IN_MEMORY) -> None:
        self._known: dict[bytes, bytes] = {}
        """Packed (:data:`_PACKED_KEY`) file identity -> packed digest and size: a third of the
        memory of the tuple and the :class:`Hashed` (about 170 bytes a file, where an archive
        of small bundles keeps one or two files of each bundle). At most ``in_memory`` of them;
        past that, all are moved to :attr:`_spilled`, and one found there comes back."""
        self._in_memory = in_memory
        self._spilled: Spool | None = None
        """A private temporary database of the entries moved out of memory (made when first
        needed): memory does not grow with an archive's files."""
        self.hashed = 0
        """Files hashed through this cache."""
        self.reused = 0
        """Files whose digest was reused."""

    @staticmethod
    def key_of(file: str) -> FileKey | None:
        """A file's identity and state as this cache keys it; None when it cannot be read."""
        try:
            status = os.stat(file, follow_symlinks=False)
        except OSError:
            return None
        return file_key(status)

    def know(self, key: FileKey, result: Hashed) -> None:
        """Take a digest hashed elsewhere (another Dask worker, :mod:`verify._dask`) for the
        file of ``key``: it is reused only while the file has that identity and state."""
        packed = _packed_result(result)
        if packed is not None:
            self._keep(packed_key(key), packed)

    def _keep(self, key: bytes, packed: bytes) -> None:
        self._known[key] = packed
        if len(self._known) > self._in_memory:
            if self._spilled is None:
                self._spilled = Spool(_SPILLED, prefix="audit-cache-")
            self._spilled.db.executemany(
                "INSERT OR REPLACE INTO known VALUES (?, ?)", self._known.items()
            )
            self._known.clear()

    def _found(self, key: bytes) -> bytes | None:
        found = self._known.get(key)
        if found is None and self._spilled is not None:
            row = self._spilled.db.execute("SELECT result FROM known WHERE key = ?", (key,))
            found = next((result for (result,) in row), None)
            if found is not None:  # a file linked again: keep it at hand
                self._keep(key, found)
        return found

    def split(
        self, members: Sequence[Member]
    ) -> tuple[dict[str, Hashed], list[Member], dict[str, FileKey]]:
        """Sort members into those already known (with their results) and those to hash."""
        known: dict[str, Hashed] = {}
        todo: list[Member] = []
        keys: dict[str, FileKey] = {}
        for member in members:
            if member.size is not None:  # a tar member
                todo.append(member)
                continue
            try:
                status = os.stat(member.file, follow_symlinks=False)
            except OSError:
                todo.append(member)  # hashing will say what is wrong
                continue
            key = file_key(status)
            found = self._found(packed_key(key))
            if found is None:
                todo.append(member)
                keys[member.path] = key
            else:
                raw, size = _PACKED_RESULT.unpack(found)
                known[member.path] = Hashed(_SHA256 + raw.hex(), size)
        self.reused += len(known)
        return known, todo, keys

    def remember(self, results: dict[str, Hashed], keys: dict[str, FileKey]) -> None:
        """Keep the results of files hashed after :meth:`split` (read errors are not kept)."""
        self.hashed += len(results)
        for path, result in results.items():
            packed = _packed_result(result) if path in keys else None
            if packed is not None:
                self._keep(packed_key(keys[path]), packed)


_PACKED_KEY = struct.Struct("<QQQqq")
"""A :data:`FileKey` (device, inode, size, mtime and ctime in ns: a time before 1970 is
negative)."""
_PACKED_RESULT = struct.Struct("<32sQ")
"""A SHA-256 digest's bytes and the size hashed."""
_SHA256 = "sha256:"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def hash_identified(file: str, key: FileKey) -> Hashed | None:
    """The digest of the file at ``file`` if it is the file ``key`` names, read from one open
    descriptor whose identity and state (``fstat``) are ``key`` before and after the read: a
    path that now leads to another file (a symlink on the way retargeted, the file replaced)
    or a file written meanwhile gives None, never a digest filed under an identity the bytes
    were not read from. None too when it cannot be read (its verification will say why)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if file_key(os.fstat(fd)) != key:
            return None
        digest = hashlib.sha256()
        size = _hash_fd(fd, digest, 0, None, _Counter(lambda _: None))
        if file_key(os.fstat(fd)) != key:
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    return Hashed(_SHA256 + digest.hexdigest(), size)


def packed_key(key: FileKey) -> bytes:
    """A :data:`FileKey` as the cache keeps it (40 bytes)."""
    return _PACKED_KEY.pack(*key)


def file_keys(packed: bytes) -> list[FileKey]:
    """The :data:`FileKey` of each of the keys :func:`packed_key` packed, joined."""
    return list(_PACKED_KEY.iter_unpack(packed))


def _packed_result(result: Hashed) -> bytes | None:
    """A result as :class:`BlobCache` keeps it; None for one it does not keep (an error)."""
    digest = result.digest
    if result.error is not None or digest is None or not _DIGEST.fullmatch(digest):
        return None
    return _PACKED_RESULT.pack(bytes.fromhex(digest[len(_SHA256) :]), result.size)


def hash_members(
    members: Sequence[Member],
    workers: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, Hashed]:
    """Hash members and wait for the results (see :class:`HashJob`)."""
    with HashJob(members, workers) as job:
        return job.results(advance)
