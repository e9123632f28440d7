"""Verifying many bundles whose blobs are hard-linked from one store hashes each distinct blob
once (BlobCache, used by `audit rank` and `audit rejudge`), and never trusts a copy or a
changed file for another."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from audit.cli import main
from tests.factories import write_small_bundle
from verify import BlobCache, verify_with_evidence


def _bundles(tmp_path: Path, count: int) -> tuple[list[Path], Path]:
    store = tmp_path / "store"
    shared = os.urandom(1 << 16)
    paths = []
    for number in range(count):
        path = tmp_path / "archive" / f"run-{number}"
        extra = {"data/shared.bin": shared, "data/own.bin": f"run {number}".encode()}
        write_small_bundle(path, extra, store=store, run_id=f"run-{number}")
        paths.append(path)
    return paths, store


IN_MEMORY = [1 << 12, 2, 0]
"""The default, and caches that keep (almost) nothing in memory: the digests moved to disk
are found there, the same."""


@pytest.mark.parametrize("in_memory", IN_MEMORY)
def test_each_distinct_blob_is_hashed_once(tmp_path: Path, in_memory: int) -> None:
    paths, store = _bundles(tmp_path, 6)
    distinct = len(list((store / "blobs" / "sha256").iterdir()))
    listed = sum(len(list((p / "blobs" / "sha256").iterdir())) for p in paths)
    cache = BlobCache(in_memory)
    for path in paths:
        verdict, _ = verify_with_evidence(path, cache=cache)
        assert verdict.integrity.status == "ok"
    assert (cache.hashed, cache.reused) == (distinct, listed - distinct)
    assert distinct == 3 + len(paths)  # the raw output, the result, shared.bin; one own each


@pytest.mark.parametrize("in_memory", IN_MEMORY)
def test_a_copy_is_hashed_again_and_a_changed_blob_is_caught(
    tmp_path: Path, in_memory: int
) -> None:
    paths, store = _bundles(tmp_path, 3)
    cache = BlobCache(in_memory)
    for path in paths:
        verify_with_evidence(path, cache=cache)
    copy = tmp_path / "copy"
    shutil.copytree(paths[0], copy)  # new files: nothing of the cache applies
    hashed = cache.hashed
    assert verify_with_evidence(copy, cache=cache)[0].integrity.status == "ok"
    assert cache.hashed == hashed + len(list((copy / "blobs" / "sha256").iterdir()))
    shared = next(p for p in (store / "blobs" / "sha256").iterdir() if p.stat().st_size == 1 << 16)
    shared.chmod(0o644)
    shared.write_bytes(os.urandom(1 << 16))  # same size, new bytes, new mtime
    for path in paths:
        assert verify_with_evidence(path, cache=cache)[0].integrity.status == "failed"


def test_rank_over_a_store_shared_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bundles(tmp_path, 4)
    assert main(["rank", str(tmp_path / "archive"), "--json"]) == 0
    assert capsys.readouterr().out.count("run-") >= 4
