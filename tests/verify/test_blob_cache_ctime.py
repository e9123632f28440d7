"""The blob cache keys a file by its change time too (ADR 0039): a blob rewritten in place with
the same size and its modification time set back by ``os.utime`` is hashed again, where a key
of (device, inode, size, mtime) reused the digest of the bytes it held before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import bundles_sharing_a_blob
from verify import BlobCache, verify_with_evidence

IN_MEMORY = [1 << 12, 0]
"""In memory, and every digest moved to the cache's database."""


@pytest.mark.parametrize("in_memory", IN_MEMORY)
def test_a_blob_rewritten_with_its_mtime_set_back_is_hashed_again(
    tmp_path: Path, in_memory: int
) -> None:
    paths, blob = bundles_sharing_a_blob(tmp_path)
    cache = BlobCache(in_memory)
    for path in paths:
        assert verify_with_evidence(path, cache=cache)[0].integrity.status == "ok"
    before = blob.stat()
    blob.chmod(0o644)
    with blob.open("r+b") as file:  # the same inode and size, other bytes
        file.write(os.urandom(1 << 16))
    os.utime(blob, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = blob.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    hashed = cache.hashed
    for path in paths:
        assert verify_with_evidence(path, cache=cache)[0].integrity.status == "failed"
    assert cache.hashed > hashed


def test_the_key_holds_the_change_time(tmp_path: Path) -> None:
    file = tmp_path / "blob"
    file.write_bytes(b"x")
    status = file.stat()
    assert BlobCache.key_of(str(file)) == (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )
