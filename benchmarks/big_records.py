"""Peak memory and wall time of `audit verify` on bundles with huge records.

Two bundles, each the complete full-profile example (gx10-full-qualified) with one record grown
and resealed (the run config kept in step, so the bundle stays one consistent account and the
work done is the real verification path):

- a transport log of about 1 GiB: the example's exchanges plus coding completions, each with a
  large request body (a long prompt) and a long streamed reply (thousands of SSE chunks), every
  line under the 16 MiB record-line cap; the observer's count says how many;
- a socket ledger of 1,000,000 loopback connect() attempts, the run config's closing count
  (``ledger.entries``) equal to it, and the sandbox trace it was parsed from (ADR 0017).

Both carry a traced ledger (the transport bundle one of five attempts), since the verifier
re-parses the traces against the ledger.

Each is verified by `audit verify --json` in a child process; its wall time and peak RSS
(``ru_maxrss`` of that child, from wait4) are reported.

Target (huge records): under 512 MiB peak RSS and under 30 s each.

Run: make bench   (or .venv/bin/python -m benchmarks.big_records [--quick])
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from audit import BundleWriter
from audit.demo.examples import build_example, example_runs
from bundle_schema import canonical_bytes
from tests.data.hostile.kit import lines, read_bundle
from verify import default_workers
from verify.socket_trace import TRACE_MEDIA_TYPE, trace_header

AUDIT = (sys.executable, "-m", "audit")
TRANSPORT = "transport/exchanges.jsonl"
LEDGER = "network/socket-ledger.jsonl"
CONFIG = "run/config.json"
TRACE = "network/strace/000000-coding.txt"
LEDGER_ENTRIES = 5
RSS_TARGET_MIB = 512
TIME_TARGET_S = 30.0


def _exchange(number: int, model: str, prompt_bytes: int, chunk_count: int) -> dict[str, Any]:
    prompt = ("def f(x):\n    return x * 2  # a long coding task prompt\n" * prompt_bytes)[
        :prompt_bytes
    ]
    request = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": chunk_count,
        "stream": True,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    chunks = []
    for index in range(chunk_count):
        event = {
            "id": f"chatcmpl-b{number}",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": {"content": f"tok{index} "}, "finish_reason": None}],
        }
        chunks.append(
            {"t": round(0.2 + index * 0.004, 4), "data": f"data: {json.dumps(event)}\n\n"}
        )
    chunks.append({"t": round(0.2 + chunk_count * 0.004, 4), "data": "data: [DONE]\n\n"})
    return {
        "schema_version": 1,
        "id": number,
        "component": "coding",
        "started": 1000.0 + number,
        "ended": 1000.0 + number + 0.3 + chunk_count * 0.004,
        "method": "POST",
        "path": "/v1/chat/completions",
        "status": 200,
        "request_headers": {"content-type": "application/json"},
        "response_headers": {"content-type": "text/event-stream"},
        "request_body": {"encoding": "utf-8", "data": json.dumps(request)},
        "chunks": chunks,
    }


def _base(scratch: Path) -> Path:
    run = next(r for r in example_runs() if r.name == "gx10-full-qualified")
    base = scratch / "base"
    build_example(run, base, scratch / "work")
    return base


def _write(
    target: Path,
    base: Path,
    grow: dict[str, Iterator[bytes]],
    config: dict[str, Any],
    extra: dict[str, tuple[bytes, str]] | None = None,
    *,
    size_of: str,
) -> int:
    manifest, files = read_bundle(base)
    # the ledger is replaced whole, with the one trace it is parsed from: the example's go
    kept = {n: v for n, v in files.items() if not n.startswith("network/strace/")}
    files = {**kept, **(extra or {})}
    writer = BundleWriter(target, durable=False)
    size = 0
    for name, (data, media) in sorted(files.items()):
        if name in grow:
            added = writer.add_stream(name, grow[name], media).size
            size = added if name == size_of else size
        elif name == CONFIG:
            writer.add_bytes(name, canonical_bytes(config), media)
        else:
            writer.add_bytes(name, data, media)
    fields = ("run_id", "created_at", "runner", "scoring_generation", "profile", "pin_set",
              "model", "upstreams", "components", "claims")  # fmt: skip
    writer.seal(**{key: getattr(manifest, key) for key in fields})
    return size


def transport_bundle(target: Path, base: Path, total: int) -> tuple[int, int]:
    """The example with its transport log grown to about ``total`` bytes."""
    manifest, files = read_bundle(base)
    exchanges = lines(files, TRANSPORT)
    model = manifest.model.runtime_model_id
    sample = canonical_bytes(_exchange(10**6, model, 256 << 10, 12_000))
    count = max(1, (total - len(files[TRANSPORT][0])) // (len(sample) + 1))
    first = max(e["id"] for e in exchanges) + 1

    def chunks() -> Iterator[bytes]:
        yield b"".join(canonical_bytes(e) + b"\n" for e in exchanges)
        for number in range(first, first + count):
            yield canonical_bytes(_exchange(number, model, 256 << 10, 12_000)) + b"\n"

    config = json.loads(files[CONFIG][0])
    config["observer"]["exchanges"] = len(exchanges) + count
    config["ledger"]["entries"] = LEDGER_ENTRIES
    grow = {TRANSPORT: chunks(), **_ledger(files, LEDGER_ENTRIES)}
    extra = {TRACE: (b"", TRACE_MEDIA_TYPE)}
    return _write(target, base, grow, config, extra, size_of=TRANSPORT), len(exchanges) + count


def _ledger(files: dict[str, Any], count: int) -> dict[str, Iterator[bytes]]:
    """A socket ledger of ``count`` loopback attempts by one harness, and the sandbox trace it
    was parsed from (ADR 0017: the verifier re-parses it against the ledger)."""
    first = dict(lines(files, LEDGER)[0], component="coding")

    def attempts() -> Iterator[dict[str, Any]]:
        for seq in range(count):
            yield dict(first, seq=seq, t=round(2 + seq * 0.001, 3))

    def batched(render: Any, head: bytes = b"") -> Iterator[bytes]:
        batch = [head]
        for entry in attempts():
            batch.append(render(entry))
            if len(batch) == 10_000:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch)

    def strace(entry: dict[str, Any]) -> bytes:  # origin 0.0: the time is t itself
        return (
            f"{entry['pid']}<{entry['process']}> {entry['t']!r} connect(3, {{sa_family=AF_INET, "
            f'sin_port=htons({entry["port"]}), sin_addr=inet_addr("{entry["address"]}")}}, 16)'
            " = 0\n"
        ).encode()

    return {
        LEDGER: batched(lambda e: canonical_bytes(e) + b"\n"),
        TRACE: batched(strace, trace_header(0.0, 0, "coding").encode()),
    }


def ledger_bundle(target: Path, base: Path, count: int) -> int:
    """The example with a socket ledger of ``count`` loopback attempts (and its trace)."""
    _manifest, files = read_bundle(base)
    config = json.loads(files[CONFIG][0])
    config["ledger"]["entries"] = count
    extra = {TRACE: (b"", TRACE_MEDIA_TYPE)}
    grow = _ledger(files, count)
    return _write(target, base, grow, config, extra, size_of=LEDGER)


def measure(label: str, bundle: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit code of `audit verify --json` on ``bundle``."""
    os.sync()
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen([*AUDIT, "verify", "--json", str(bundle)], stdout=out)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        verdict = json.loads(out.read() or b"{}")
    rss = usage.ru_maxrss / 1024
    met = rss < RSS_TARGET_MIB and wall < TIME_TARGET_S
    print(
        f"{label}: {wall:.2f} s, peak RSS {rss:.0f} MiB, exit {child.returncode}, outcome "
        f"{verdict.get('outcome')}  [target < {RSS_TARGET_MIB} MiB and < {TIME_TARGET_S:g} s: "
        f"{'met' if met else 'MISSED'}]"
    )
    return wall, rss, child.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="128 MiB and 100,000 lines")
    args = parser.parse_args()
    total = (128 if args.quick else 1024) << 20
    count = 100_000 if args.quick else 1_000_000
    print(f"machine: {platform.machine()}, {default_workers()} cores, Python "
          f"{platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as scratch:
        base = _base(Path(scratch))
        size, exchanges = transport_bundle(Path(scratch) / "transport", base, total)
        print(f"transport log: {size / (1 << 20):.0f} MiB in {exchanges} exchanges")
        measure("transport", Path(scratch) / "transport")
        size = ledger_bundle(Path(scratch) / "ledger", base, count)
        print(f"socket ledger: {count} lines, {size / (1 << 20):.0f} MiB")
        measure("ledger", Path(scratch) / "ledger")
    return 0


if __name__ == "__main__":
    sys.exit(main())
