"""The transport observer's cost: added latency per request and streamed chunks per second.

Targets (runner issue): p50 added latency < 1 ms per request; >= 5,000 streamed chunks/s.
The reference endpoint (no chunk delay) runs on 127.0.0.1; the same requests go to it directly
and through the observer, each over one kept-alive connection. Best of three rounds.

Run: .venv/bin/python -m benchmarks.observer_overhead
"""

from __future__ import annotations

import http.client
import json
import platform
import statistics
import time

from audit.demo.reference_endpoint import MODEL_ID, Behaviour, serve
from audit.observer import observe

REQUESTS = 400
STREAM_WORDS = 20_000
ROUNDS = 3


def _latencies(port: int) -> list[float]:
    body = json.dumps(
        {
            "model": MODEL_ID,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Reply with exactly: READY"}],
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port)
    times = []
    for _ in range(REQUESTS):
        start = time.perf_counter()
        connection.request(
            "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        connection.getresponse().read()
        times.append(time.perf_counter() - start)
    connection.close()
    return times


def _stream(port: int) -> tuple[float, int]:
    body = json.dumps(
        {
            "model": MODEL_ID,
            "max_tokens": STREAM_WORDS,
            "stream": True,
            "messages": [{"role": "user", "content": "Say a lot."}],
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port)
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    data = connection.getresponse().read()
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed, data.count(b"data: ")


def main() -> int:
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    with serve(Behaviour(verbose=True)) as endpoint, observe(endpoint.url) as observer:
        added, rates, direct_rates = [], [], []
        for _ in range(ROUNDS):
            direct = statistics.median(_latencies(endpoint.port))
            via = statistics.median(_latencies(observer.port))
            added.append(via - direct)
            before = len(observer.exchanges())
            seconds, events = _stream(observer.port)
            recorded = "".join(c.data for c in observer.wait_for(before + 1)[-1].chunks)
            assert recorded.count("data: ") == events  # every event relayed and recorded
            rates.append(events / seconds)
            direct_seconds, _ = _stream(endpoint.port)
            direct_rates.append(events / direct_seconds)
        best_added = min(added)
        best_rate = max(rates)
    print(
        f"added latency p50: {best_added * 1000:.3f} ms per request "
        f"(target < 1 ms: {'met' if best_added < 0.001 else 'MISSED'})"
    )
    print(
        f"streamed through the observer: {best_rate:,.0f} SSE chunks/s relayed and recorded "
        f"(target >= 5,000: {'met' if best_rate >= 5000 else 'MISSED'}); the endpoint alone "
        f"sends {max(direct_rates):,.0f} events/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
