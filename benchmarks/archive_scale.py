"""`audit verify-archive` over N small bundles sharing a store (issue 16 point 4).

Each bundle links SHARED blobs of 64 KiB from one store (as runs of one deployment share their
data) and holds one small blob of its own; every bundle passes its check (integrity ok), so that
each is verified in full. Measured, each as its own process
(wall time, and the peak RSS of the largest process, from the kernel's rusage):

- a bare loop that lists each bundle and hashes each distinct file once (by inode) with
  hashlib: the floor for "list and hash the same objects";
- `audit verify-archive` in one process, and with `--engine dask` on a LocalCluster of 1 and
  of 2 workers;
- from the local S3 server (moto, its own process on 127.0.0.1): the same bundles as tars
  under a prefix (a tar holds its own copy of every blob: nothing to share), against a bare
  loop that lists the prefix and GETs and hashes each object whole.

Targets: within 1.3x of the bare loop; memory flat in N (10,000 bundles under 1 GiB RSS); 2
workers at least 1.6x one worker.

With ``--rank``, `audit rank --json` over the same bundles from disk, in the same three ways
(it verifies each bundle as verify-archive does, then places it in the ranking).

Run: .venv/bin/python -m benchmarks.archive_scale [--count N] [--s3-count M] [--quick] [--rank]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.factories import write_small_bundle
from verify import default_workers

SHARED = 5
BARE_LOCAL = """
import hashlib, os, sys
seen = set()
for name in sorted(os.listdir(sys.argv[1])):
    bundle = os.path.join(sys.argv[1], name)
    with open(os.path.join(bundle, "manifest.json"), "rb") as f:
        hashlib.sha256(f.read())
    folder = os.path.join(bundle, "blobs", "sha256")
    for entry in os.scandir(folder):
        status = entry.stat(follow_symlinks=False)
        if (status.st_dev, status.st_ino) in seen:
            continue
        seen.add((status.st_dev, status.st_ino))
        with open(entry.path, "rb") as f:
            hashlib.sha256(f.read()).hexdigest()
"""
BARE_S3 = """
import hashlib, sys
import boto3
client = boto3.client("s3")
pages = client.get_paginator("list_objects_v2").paginate(Bucket="runs", Prefix="v5/")
for page in pages:
    for item in page.get("Contents", []):
        body = client.get_object(Bucket="runs", Key=item["Key"])["Body"].read()
        hashlib.sha256(body).hexdigest()
"""


def _timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run a command to the end; its wall time (s) and the largest process's peak RSS (MiB)."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "wall = time.perf_counter() - start\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(code, wall, peak)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    if out[0] not in ("0", "1"):
        raise SystemExit(f"{argv}: exit {out[0]}")
    return float(out[1]), float(out[2])


def _write(root: Path, count: int) -> Path:
    shared = [(f"data/shared-{i}.bin", os.urandom(64 << 10)) for i in range(SHARED)]
    archive = root / "archive"
    for number in range(count):
        own = [("data/own.bin", f"run {number}".encode())]
        write_small_bundle(archive / f"run-{number:05d}", shared + own, durable=False,
                           store=root / "store", run_id=f"run-{number}",
                           media_type="application/octet-stream")  # fmt: skip
    return archive


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _row(name: str, wall: float, peak: float, count: int, bare: float) -> None:
    load = os.getloadavg()[0]  # the machine is shared: the 1-minute load after the run
    print(f"  {name:34s} {wall:8.1f} s  {1000 * wall / count:6.2f} ms/bundle  "
          f"{wall / bare:5.2f} x bare  peak RSS {peak:6.0f} MiB  load {load:4.2f}")  # fmt: skip


def _local(
    root: Path, archive: Path, count: int, dask: bool = True, commands: tuple[str, ...] = ()
) -> None:
    os.sync()
    bare, bare_peak = _timed([sys.executable, "-c", BARE_LOCAL, str(archive)])
    print(f"local disk, {count} bundles:")
    _row("bare loop (list, hash each file once)", bare, bare_peak, count, bare)
    for command in ("verify-archive", *commands):
        audit = [str(Path(sys.executable).with_name("audit")), command, str(archive)]
        if command == "rank":
            audit.append("--json")
        one, one_peak = _timed(audit)
        _row(f"{command}, one process", one, one_peak, count, bare)
        if not dask:
            continue
        dask1, peak1 = _timed([*audit, "--engine", "dask", "--workers", "1"])
        _row(f"{command}, Dask, 1 worker", dask1, peak1, count, bare)
        dask2, peak2 = _timed([*audit, "--engine", "dask", "--workers", "2"])
        _row(f"{command}, Dask, 2 workers", dask2, peak2, count, bare)
        print(f"  2 workers / 1 worker: {dask1 / dask2:.2f} x")


def _s3(root: Path, archive: Path, count: int, dask: bool = True) -> None:
    import boto3  # type: ignore[import-untyped]  # noqa: PLC0415 - a test dependency

    from audit._archive import pack  # noqa: PLC0415

    tars = root / "tars"
    tars.mkdir()
    for path in sorted(archive.iterdir())[:count]:
        pack(path, tars / f"{path.name}.tar")
    port = _free_port()
    env = os.environ | {
        "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        os.environ.update(env)  # the moto server's test credentials, nothing real
        client = boto3.client("s3")
        client.create_bucket(Bucket="runs")
        for tar in sorted(tars.iterdir()):
            client.upload_file(str(tar), "runs", f"v5/{tar.name}")
        audit = [str(Path(sys.executable).with_name("audit")), "verify-archive", "s3://runs/v5/"]
        print(f"local S3 server (moto), {count} tars under one prefix:")
        bare, bare_peak = _timed([sys.executable, "-c", BARE_S3], env)
        _row("bare loop (list, GET and hash each)", bare, bare_peak, count, bare)
        one, one_peak = _timed(audit, env)
        _row("verify-archive, one process", one, one_peak, count, bare)
        if not dask:
            return
        dask1, peak1 = _timed([*audit, "--engine", "dask", "--workers", "1"], env)
        _row("verify-archive, Dask, 1 worker", dask1, peak1, count, bare)
        dask2, peak2 = _timed([*audit, "--engine", "dask", "--workers", "2"], env)
        _row("verify-archive, Dask, 2 workers", dask2, peak2, count, bare)
        print(f"  2 workers / 1 worker: {dask1 / dask2:.2f} x")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--s3-count", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="500 bundles, 100 from S3")
    parser.add_argument("--no-dask", action="store_true", help="only the default engine")
    parser.add_argument("--no-local", action="store_true", help="only the S3 rows")
    parser.add_argument(
        "--rank", action="store_true", help="from disk, `audit rank --json` too (its rows)"
    )
    args = parser.parse_args()
    count, s3_count = (500, 100) if args.quick else (args.count, args.s3_count)
    print(f"machine: {platform.machine()}, {default_workers()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="audit-bench-archive-") as scratch:
        root = Path(scratch)
        started = time.perf_counter()
        archive = _write(root, count)
        print(f"wrote {count} bundles in {time.perf_counter() - started:.1f} s "
              f"({SHARED} shared blobs of 64 KiB, one own each)")  # fmt: skip
        if not args.no_local:
            ranked = ("rank",) if args.rank else ()
            _local(root, archive, count, dask=not args.no_dask, commands=ranked)
        if s3_count:
            _s3(root, archive, min(s3_count, count), dask=not args.no_dask)
        shutil.rmtree(root / "archive")
    return 0


if __name__ == "__main__":
    sys.exit(main())
