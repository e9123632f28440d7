"""Peak memory of the archive commands by process, over archives of growing size: is it flat?

For each N of ``--counts`` (default 10,000 and 20,000 small bundles sharing a store, the
archive of :mod:`benchmarks.archive_scale`), each command runs in a process of its own that
calls ``audit.cli.main`` and then reads the kernel's rusage: its own peak RSS (the command's
process; on Dask the driver, which also runs the LocalCluster's scheduler) and its children's
largest (the Dask workers, forked from it). The growth per bundle between two sizes is the
difference of the peaks over the difference of the counts.

Run: .venv/bin/python -m benchmarks.archive_memory [--counts 10000 20000] [--workers 2]
[--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.archive_scale import _write

MEASURE = """
import os, resource, sys
from audit.cli import main
code = main(sys.argv[2:])
mine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as out:
    out.write(f"{code} {mine} {kids}")
"""
"""The command in this process, then its own peak RSS and its children's largest (KiB)."""


def _peaks(argv: list[str], scratch: Path) -> tuple[float, float]:
    """The command's own peak RSS and its largest child's (MB)."""
    result = scratch / "peaks"
    subprocess.run(
        [sys.executable, "-c", MEASURE, str(result), *argv],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    code, mine, kids = result.read_text().split()
    if code not in ("0", "1"):
        raise SystemExit(f"{argv}: exit {code}")
    return int(mine) * 1024 / 1e6, int(kids) * 1024 / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[10_000, 20_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--keep",
        type=Path,
        help="write the archives into this folder and keep them; an archive found there is "
        "used again (to compare two trees on the same bundles)",
    )
    args = parser.parse_args()
    commands = {
        "verify-archive, one process": ["verify-archive"],
        "verify-archive, Dask": ["verify-archive", "--engine", "dask"],
        "rank --json, one process": ["rank", "--json"],
        "rank --json, Dask": ["rank", "--json", "--engine", "dask"],
    }
    dask = ["--workers", str(args.workers)]
    seen: dict[str, list[tuple[int, float, float]]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="audit-bench-memory-") as folder:
        scratch = Path(folder)
        for count in sorted(args.counts):
            root = (args.keep or scratch) / f"n{count}"
            archive = root / "archive"
            if not archive.is_dir():
                _write(root, count)
            os.sync()
            for name, command in commands.items():
                extra = dask if "--engine" in command else []
                mine, kids = _peaks([command[0], str(archive), *command[1:], *extra], scratch)
                seen[name].append((count, mine, kids))
                workers = f", largest worker {kids:6.1f} MB" if extra else ""
                print(f"{count:7d} bundles  {name:28s} own {mine:6.1f} MB{workers}", flush=True)
    for name, rows in seen.items():
        if len(rows) < 2:
            continue
        (n0, own0, kid0), (n1, own1, kid1) = rows[0], rows[-1]
        growth = f"{1e6 * (own1 - own0) / (n1 - n0):6.0f} B a bundle"
        if "Dask" in name:
            growth += f", workers {1e6 * (kid1 - kid0) / (n1 - n0):6.0f} B a bundle"
        print(f"{name:28s} {n0} -> {n1}: {growth}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
