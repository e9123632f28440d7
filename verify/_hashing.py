"""Stream bundle members through SHA-256, on every core.

hashlib releases the GIL while it hashes buffers larger than 2 KiB, and file reads release it too,
so threads keep both cores busy on large blobs. Small members are grouped into batches so that
thread hand-off costs are paid per batch, not per file. Memory stays bounded: each worker holds
one read buffer at a time.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from verify._source import Member

__all__ = ["Hashed", "default_workers", "hash_members"]

BATCH_BYTES = 8 << 20
BATCH_COUNT = 256


@dataclass(frozen=True)
class Hashed:
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


def _hash_one(member: Member) -> Hashed:
    digest = hashlib.sha256()
    size = 0
    try:
        for data in member.chunks():
            digest.update(data)
            size += len(data)
    except OSError as exc:
        return Hashed(None, size, exc.strerror or str(exc))
    return Hashed("sha256:" + digest.hexdigest(), size)


def _hash_batch(batch: Sequence[Member]) -> list[tuple[str, Hashed]]:
    return [(member.path, _hash_one(member)) for member in batch]


def _batches(members: Sequence[Member]) -> list[list[Member]]:
    ordered = sorted(members, key=lambda m: (m.file, m.offset))
    batches: list[list[Member]] = []
    current: list[Member] = []
    current_bytes = 0
    for member in ordered:
        current.append(member)
        current_bytes += member.size
        if current_bytes >= BATCH_BYTES or len(current) >= BATCH_COUNT:
            batches.append(current)
            current, current_bytes = [], 0
    if current:
        batches.append(current)
    return batches


def hash_members(
    members: Sequence[Member],
    workers: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, Hashed]:
    """Hash members, in parallel when there is more than one worker.

    Args:
        members: what to hash.
        workers: threads to use; default: the cores this process may run on.
        advance: called from the calling thread with the bytes of each finished batch.

    Returns:
        A :class:`Hashed` for every member, by path. Read errors are results, not exceptions.
    """
    workers = workers or default_workers()
    batches = _batches(members)
    results: dict[str, Hashed] = {}
    if workers == 1 or len(batches) == 1:
        finished = map(_hash_batch, batches)
        for done in finished:
            results.update(done)
            if advance:
                advance(sum(h.size for _, h in done))
        return results
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sha256") as pool:
        for done in pool.map(_hash_batch, batches):
            results.update(done)
            if advance:
                advance(sum(h.size for _, h in done))
    return results
