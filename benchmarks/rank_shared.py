"""`audit rank` over 1,000 bundles whose blobs are hard-linked from one shared store.

Each bundle holds the same SHARED blobs of 1 MiB (as runs of one deployment share their upstream
checkouts) plus a few of its own. Verified with a BlobCache (what `audit rank` does), every
distinct blob is hashed once; without it, every bundle hashes every blob.

Target (issue 8): `audit rank` over 1,000 bundles that share blobs hashes each distinct blob
once.

Run: make bench   (or .venv/bin/python -m benchmarks.rank_shared [--quick])
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from tests.factories import write_small_bundle
from verify import BlobCache, default_workers, verify_with_evidence

SHARED = 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 bundles")
    args = parser.parse_args()
    count = 100 if args.quick else 1000
    print(f"machine: {platform.machine()}, {default_workers()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="audit-bench-rank-") as scratch:
        root = Path(scratch)
        shared = [(f"upstreams/file-{i:02d}.bin", os.urandom(1 << 20)) for i in range(SHARED)]
        started = time.perf_counter()
        paths = []
        for number in range(count):
            path = root / "archive" / f"run-{number:04d}"
            own = [("data/own.bin", f"run {number}".encode())]
            write_small_bundle(
                path,
                shared + own,
                media_type="application/octet-stream",
                durable=False,
                store=root / "store",
                run_id=f"run-{number}",
            )
            paths.append(path)
        print(f"wrote {count} bundles in {time.perf_counter() - started:.1f} s")
        os.sync()
        distinct = len(list((root / "store" / "blobs" / "sha256").iterdir()))
        listed = sum(len(os.listdir(p / "blobs" / "sha256")) for p in paths)
        cache = BlobCache()
        started = time.perf_counter()
        for path in paths:
            verdict, _ = verify_with_evidence(path, cache=cache)
            assert verdict.integrity.status == "ok"
        cached = time.perf_counter() - started
        started = time.perf_counter()
        for path in paths:
            verify_with_evidence(path)
        uncached = time.perf_counter() - started
    print(f"{count} bundles, {listed} blob files, {distinct} distinct blobs in the store")
    print(f"  with BlobCache (audit rank): {cached:7.2f} s; hashed {cache.hashed}, "
          f"reused {cache.reused}")  # fmt: skip
    print(f"  without it:                  {uncached:7.2f} s; hashed {listed}")
    met = cache.hashed == distinct
    print(
        f"each distinct blob hashed once: {'met' if met else 'MISSED'} "
        f"({cache.hashed} hashed for {distinct} distinct); {uncached / cached:.1f} x faster"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
