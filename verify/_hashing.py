"""Stream bundle members through SHA-256, on every core, in the background.

Two ways to use the cores, chosen by the number of blobs:

- a few blobs (fewer than :data:`PROCESS_THRESHOLD`): threads. hashlib releases the GIL while it
  hashes buffers larger than 2 KiB and file reads release it too, so threads keep every core busy
  on large blobs without the cost of starting processes;
- many blobs: processes, one fewer than the cores, since the calling process parses the manifest
  meanwhile; per-file work in the interpreter (open, read, close) holds the GIL, so threads
  contend on small files. With fewer than :data:`MIN_PROCESSES` helpers (two cores or fewer)
  the calling process hashes them itself, after parsing: that measured fastest.

Work starts when a :class:`HashJob` is made, so the caller can parse the manifest meanwhile.
Memory stays bounded: each worker holds one read buffer at a time.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from types import TracebackType
from typing import Any, NamedTuple

from verify._source import READ_CHUNK, Member, read_range

__all__ = [
    "MIN_PROCESSES",
    "PROCESS_THRESHOLD",
    "BlobCache",
    "HashJob",
    "Hashed",
    "default_workers",
    "hash_members",
]

PROCESS_THRESHOLD = 64
"""From this many blobs on, hash in worker processes rather than threads."""
MIN_PROCESSES = 2
"""Fewer worker processes than this cost more than they save on many small blobs (measured on
two cores: one helper process made verification slower than hashing in the calling process)."""
MAX_BATCH = 4096
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


def _hash_fd(fd: int, digest: Any, offset: int, size: int | None) -> int:
    """Feed an open file (all of it, or ``size`` bytes from ``offset``) to ``digest``."""
    total = 0
    if size is None:  # read_all, inlined: this loop runs once per small file
        while data := os.read(fd, READ_CHUNK):
            digest.update(data)
            total += len(data)
        return total
    for data in read_range(fd, offset, size):
        digest.update(data)
        total += len(data)
    return total


_Job = tuple[str, str, int | None, int]
"""A member as plain data (path, file, size, offset): cheap to send to a worker process."""
_Result = tuple[str, str | None, int, str | None]
"""A result as plain data (path, hex digest, size, error)."""


def _hash_batch(batch: Sequence[_Job]) -> list[_Result]:
    """Hash a batch of members.

    Files of a directory bundle are opened relative to their directory (one path lookup per
    file, not one per path component: half the cost on many small files); a tar is opened once.
    """
    results: list[_Result] = []
    opened: dict[str, int] = {}
    try:
        for path, file, size, offset in batch:
            digest = hashlib.sha256()
            try:
                if size is None:
                    parent, _, name = file.rpartition("/")
                    if parent not in opened:
                        opened[parent] = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
                    fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=opened[parent])
                    try:
                        count = _hash_fd(fd, digest, 0, None)
                    finally:
                        os.close(fd)
                else:
                    if file not in opened:
                        opened[file] = os.open(file, os.O_RDONLY | _NOFOLLOW)
                    count = _hash_fd(opened[file], digest, offset, size)
            except OSError as exc:
                results.append((path, None, 0, exc.strerror or str(exc)))
                continue
            results.append((path, digest.hexdigest(), count, None))
    finally:
        for fd in opened.values():
            os.close(fd)
    return results


def _batches(members: Sequence[Member], workers: int) -> list[list[_Job]]:
    jobs = [(m.path, m.file, m.size, m.offset) for m in members]  # listing order: tar offsets
    size = max(1, min(MAX_BATCH, len(jobs) // (workers * 8)))
    return [jobs[i : i + size] for i in range(0, len(jobs), size)]


def _process_context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class HashJob:
    """Hashing of some members, started at construction; a context manager that cancels.

    Args:
        members: what to hash.
        workers: processes or threads to use; default: the cores this process may run on.
    """

    def __init__(self, members: Sequence[Member], workers: int | None = None) -> None:
        workers = workers or default_workers()
        self._batches = _batches(members, workers)
        self._pool: Executor | None = None
        self._futures: list[Future[list[_Result]]] = []
        if len(self._batches) > 1:
            if len(members) < PROCESS_THRESHOLD and workers > 1:
                self._pool = ThreadPoolExecutor(workers, thread_name_prefix="sha256")
            elif workers - 1 >= MIN_PROCESSES:
                # the calling process parses the manifest meanwhile: it keeps one core
                self._pool = ProcessPoolExecutor(workers - 1, mp_context=_process_context())
        if self._pool is not None:
            self._futures = [self._pool.submit(_hash_batch, b) for b in self._batches]

    def results(self, advance: Callable[[int], None] | None = None) -> dict[str, Hashed]:
        """Wait for every member's result (read errors are results, not exceptions).

        Args:
            advance: called with the bytes of each finished batch, from the calling thread.
        """
        finished = (
            (future.result() for future in self._futures)
            if self._pool
            else map(_hash_batch, self._batches)
        )
        results: dict[str, Hashed] = {}
        for done in finished:
            for path, hexdigest, size, error in done:
                digest = None if hexdigest is None else "sha256:" + hexdigest
                results[path] = Hashed(digest, size, error)
            if advance:
                advance(sum(size for _, _, size, _ in done))
        return results

    def close(self) -> None:
        """Stop the workers, cancelling what has not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> HashJob:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.close()


_FileKey = tuple[int, int, int, int]
"""A file's identity and state: device, inode, size, modification time (ns)."""


class BlobCache:
    """Digests of files already hashed, by file identity: a blob hard-linked into many bundles
    (a store shared by runs, see ``audit run --store``) is hashed once per process.

    Only the same file is reused: the key is (device, inode, size, mtime), so a copy of a blob
    in another bundle, or a blob rewritten since, is hashed again. Tar members are never cached.
    """

    def __init__(self) -> None:
        self._known: dict[_FileKey, Hashed] = {}
        self.hashed = 0
        """Files hashed through this cache."""
        self.reused = 0
        """Files whose digest was reused."""

    def split(
        self, members: Sequence[Member]
    ) -> tuple[dict[str, Hashed], list[Member], dict[str, _FileKey]]:
        """Sort members into those already known (with their results) and those to hash."""
        known: dict[str, Hashed] = {}
        todo: list[Member] = []
        keys: dict[str, _FileKey] = {}
        for member in members:
            if member.size is not None:  # a tar member
                todo.append(member)
                continue
            try:
                status = os.stat(member.file, follow_symlinks=False)
            except OSError:
                todo.append(member)  # hashing will say what is wrong
                continue
            key = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
            found = self._known.get(key)
            if found is None:
                todo.append(member)
                keys[member.path] = key
            else:
                known[member.path] = found
        self.reused += len(known)
        return known, todo, keys

    def remember(self, results: dict[str, Hashed], keys: dict[str, _FileKey]) -> None:
        """Keep the results of files hashed after :meth:`split` (read errors are not kept)."""
        self.hashed += len(results)
        for path, result in results.items():
            if path in keys and result.error is None:
                self._known[keys[path]] = result


def hash_members(
    members: Sequence[Member],
    workers: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, Hashed]:
    """Hash members and wait for the results (see :class:`HashJob`)."""
    with HashJob(members, workers) as job:
        return job.results(advance)
