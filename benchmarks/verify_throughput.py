"""Verify throughput against a bare hashlib loop and `sha256sum -c` over the same files.

Two generated bundles: 2 GiB in 32 large blobs, and 100,000 blobs of 4 KiB. Every timing is the
best of REPEATS runs with the files in the page cache (a warm-up read comes first), so the
numbers measure hashing and bookkeeping, not the disk.

Targets (issues 2 and 8): a 2 GiB bundle >= 0.8 x (cores x single-core hashlib throughput);
100,000 small blobs <= 1.2 x the bare hashlib loop's time. `audit verify` replays the run too
(the small bundle's records are a few kilobytes).

Run: make bench   (or .venv/bin/python -m benchmarks.verify_throughput [--quick])
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.factories import write_small_bundle
from verify import default_workers, verify_bundle

REPEATS = 3


def make_bundle(root: Path, count: int, size: int) -> list[Path]:
    seed = os.urandom(size)
    blobs = (  # distinct content per blob: a counter over random filler
        (f"data/blob-{i:06d}.bin", i.to_bytes(8, "big") + seed[8:]) for i in range(count)
    )
    write_small_bundle(root, blobs, media_type="application/octet-stream", durable=False)
    return sorted((root / "blobs" / "sha256").iterdir())


def bare_loop(files: list[Path]) -> None:
    for path in files:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while data := handle.read(1 << 20):
                digest.update(data)
        digest.hexdigest()


def best(action: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def sha256sum_check(root: Path, files: list[Path]) -> Callable[[], object]:
    listing = root.parent / "SHA256SUMS"
    listing.write_text("".join(f"{p.name}  blobs/sha256/{p.name}\n" for p in files))

    def run() -> object:
        return subprocess.run(["sha256sum", "-c", "--quiet", str(listing)], cwd=root, check=True)

    return run


def measure(label: str, root: Path, files: list[Path]) -> dict[str, float]:
    total = sum(p.stat().st_size for p in files)
    os.sync()  # let writeback of the generated files finish before anything is timed
    time.sleep(2)
    bare_loop(files)  # warm the page cache
    result = {
        "bytes": float(total),
        "bare": best(lambda: bare_loop(files)),
        "sha256sum": best(sha256sum_check(root, files)),
        "verify_1": best(lambda: verify_bundle(root, workers=1).verdict),
        "verify": best(lambda: verify_bundle(root).verdict),
    }
    mib = total / (1 << 20)
    print(f"\n{label}: {len(files)} blobs, {mib:.0f} MiB")
    for key in ("bare", "sha256sum", "verify_1", "verify"):
        print(f"  {key:<10} {result[key]:8.3f} s  {mib / result[key]:9.1f} MiB/s")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="256 MiB and 20,000 blobs")
    args = parser.parse_args()
    cores = default_workers()
    large = (4, 64 << 20) if args.quick else (32, 64 << 20)
    small = (20_000, 4096) if args.quick else (100_000, 4096)
    print(f"machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as scratch:
        big = Path(scratch) / "large" / "bundle"
        big.parent.mkdir()
        big_result = measure("large blobs", big, make_bundle(big, *large))
        many = Path(scratch) / "small" / "bundle"
        many.parent.mkdir()
        small_result = measure("small blobs", many, make_bundle(many, *small))
    large_ratio = (big_result["bare"] / big_result["verify"]) / cores
    small_ratio = small_result["verify"] / small_result["bare"]
    print(
        f"\nlarge: verify throughput = {large_ratio:.2f} x (cores x single-core hashlib)"
        f"  [target >= 0.80: {'met' if large_ratio >= 0.8 else 'MISSED'}]"
    )
    print(
        f"small: verify time = {small_ratio:.2f} x bare hashlib loop"
        f"  [target <= 1.20: {'met' if small_ratio <= 1.2 else 'MISSED'}]"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
