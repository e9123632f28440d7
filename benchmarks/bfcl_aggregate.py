"""BFCL union + aggregate over 1,000,000 recorded samples in 1,000 shard reports.

Target (scorers issue): < 2 s, reading and checking the shard files included. Each shard report
records its tallies and the ids of its 1,000 samples, so the overlap check runs on all
1,000,000 ids. Best of three runs.

Run: .venv/bin/python -m benchmarks.bfcl_aggregate
"""

from __future__ import annotations

import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from verify.scorers import load_shard, score_shards
from verify.scorers.bfcl import KNOWN

SHARDS = 1000
PER_SHARD = 1000
REPEATS = 3


def write_shards(root: Path) -> list[Path]:
    rng = random.Random(3)  # noqa: S311 - reproducible benchmark data, not cryptography
    subsets = sorted(KNOWN)  # known to both aggregations
    paths = []
    for shard in range(SHARDS):
        totals: dict[str, dict[str, int]] = {}
        ids = []
        for sample in range(PER_SHARD):
            subset = subsets[(shard * PER_SHARD + sample) % len(subsets)]
            counts = totals.setdefault(subset, {"hits": 0, "n": 0})
            counts["n"] += 1
            counts["hits"] += rng.random() < 0.7
            ids.append(f"{subset}_{shard}_{sample}")
        path = root / f"shard-{shard:04d}.json"
        path.write_text(json.dumps({"subset_totals": totals, "sample_ids": ids}))
        paths.append(path)
    return paths


def run(paths: list[Path], aggregation: str) -> float:
    start = time.perf_counter()
    shards = [load_shard(p.read_bytes(), str(p)) for p in paths]
    result = score_shards(shards, None, aggregation)
    elapsed = time.perf_counter() - start
    assert sum(t.n for t in result.tallies.values()) == SHARDS * PER_SHARD
    return elapsed


def main() -> int:
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="bfcl-bench-") as scratch:
        paths = write_shards(Path(scratch))
        for aggregation in ("score-py", "bfcl-v4"):
            best = min(run(paths, aggregation) for _ in range(REPEATS))
            verdict = "met" if best < 2 else "MISSED"
            print(
                f"{aggregation}: {SHARDS} shards, {SHARDS * PER_SHARD} samples: {best:.3f} s"
                f"  [target < 2 s: {verdict}]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
