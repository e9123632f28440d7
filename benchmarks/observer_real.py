"""The observer's added latency against a real engine: llama-cpp-python's server with
SmolLM2-135M-Instruct (the live venv of ``make test-live``), each in a process of its own;
with ``--llama-server PATH``, llama.cpp's C++ ``llama-server`` at PATH with the same weights
instead (``PATH -m GGUF --host 127.0.0.1 --port N``, its defaults otherwise).

Three processes: the engine; the observer (``observe()`` in a process of its own, as in a run,
where the harness is another process); this client. Each request is sent twice, once straight
to the engine and once through the observer, one after the other (the order alternating), each
over a kept-alive connection of its own; the added latency is the difference of the pair. Five
kinds of request:

- ``GET /v1/models``: the proxy's cost with almost no engine work;
- a non-streaming chat completion (temperature 0, seed 0, 8 tokens): the whole reply;
- a streaming chat completion (same): the time to the first byte of the body (the first event);
- ``POST /extras/tokenize`` (``POST /tokenize`` on ``llama-server``): a request with a JSON body
  that the engine answers at once;
- ``GET /v1/models`` sent 60 ms after the previous request ended: the proxy's cost after an idle
  gap as long as a completion's (the observer's code and data no longer in the CPU's caches,
  its thread asleep), with no engine work.

The last two tell a body's cost from an idle gap's: a completion is both. ``llama-server`` closes
a connection after a streamed reply and after 5 s idle (without ``Connection: close``), so there
the client opens its connection again when the engine has closed it, inside the request's time,
as a proxy does.

``--baseline DIR`` runs a second observer from another source tree (e.g. ``git worktree add DIR
<commit>``) beside this one, and each request goes to the engine, through the baseline and through
this observer in turn (the order rotating): a before/after comparison under the same load.
``--floor`` adds, the same way, a proxy that only copies bytes between the two sockets (asyncio
protocols, callbacks only: no parsing, no task, no record): the least a proxy on Python's asyncio
adds on this machine, against which the observer's own work is what it adds above it.

Target (issue 17): p50 of the added latency < 0.5 ms per request. The engine's own jitter is in
every pair; the p50 of the differences is robust to it, the p90 is not.

Run: .venv/bin/python -m benchmarks.observer_real [--python .venv-live/bin/python]
[--llama-server PATH] [--pairs N] [--baseline DIR] [--floor]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.live.engine import free_port, smollm2_gguf

REPO = Path(__file__).resolve().parent.parent
ALIAS = "smollm2-135m-instruct"
TARGET_P50_MS = 0.5
_CHAT = {
    "model": ALIAS,
    "messages": [{"role": "user", "content": "Reply with exactly: READY"}],
    "max_tokens": 8,
    "temperature": 0,
    "seed": 0,
}


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def live_engine(python: Path | None, cpp_server: Path | None = None) -> tuple[Path, Path]:
    """The live venv's interpreter (``python``, else ``$EVIDENCE_AUDIT_LIVE_PYTHON``, else
    ``.venv-live``) and SmolLM2's weights in it; prints the machine, its load and the engine
    (``cpp_server``: llama.cpp's ``llama-server`` at that path)."""
    python = python or Path(
        os.environ.get("EVIDENCE_AUDIT_LIVE_PYTHON", REPO / ".venv-live" / "bin" / "python")
    )
    model = smollm2_gguf(python)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f", load average {load()}"
    )
    if cpp_server is None:
        print(f"engine: llama-cpp-python server ({python}), {model.name}")
    else:
        print(f"engine: llama.cpp llama-server ({cpp_server}), {model.name}")
    return python, model


@contextlib.contextmanager
def llama_server(python: Path, model: Path) -> Iterator[str]:
    """llama-cpp-python's server on a free loopback port, until the block ends; yields its URL."""
    port = free_port()
    with _engine(
        [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
         "--host", "127.0.0.1", "--port", str(port)],
        port,
    ) as url:  # fmt: skip
        yield url


@contextlib.contextmanager
def cpp_llama_server(binary: Path, model: Path) -> Iterator[str]:
    """llama.cpp's C++ ``llama-server`` (``binary``) on a free loopback port, its defaults
    otherwise, until the block ends (ready once ``/health`` answers 200: it answers 503 while
    the model loads); yields its URL."""
    port = free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    with _engine(command, port, ready="/health") as url:
        yield url


@contextlib.contextmanager
def _engine(command: list[str], port: int, ready: str = "/v1/models") -> Iterator[str]:
    """The engine ``command`` listening on loopback ``port``, once it answers ``ready`` with
    a success, until the block ends; yields its URL."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the engine exited with {process.returncode}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(url + ready, timeout=5),  # noqa: S310 - loopback
            ):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the engine did not answer {ready} within 180 s")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have exited (crashed) already
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


@contextlib.contextmanager
def observer_process(
    upstream: str, tree: Path = REPO, serve: str = "--serve-observer"
) -> Iterator[int]:
    """The observer of the source tree ``tree`` (``serve="--serve-floor"``: the byte-copying
    proxy) in a process of its own in front of ``upstream``; yields its port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.observer_real", serve, upstream],
        cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        yield int(process.stdout.readline())
    finally:
        process.stdin.close()  # the observer stops when its stdin closes
        process.wait(timeout=30)
        process.stdout.close()


def _serve_observer(upstream: str) -> int:
    from audit.observer import observe  # noqa: PLC0415 - only the observer's process needs it

    with observe(upstream) as observer:
        print(observer.port, flush=True)
        sys.stdin.read()
        exchanges = observer.exchanges()
    failed = [e.id for e in exchanges if e.error or e.status != 200]
    if failed:
        print(f"observer: {len(failed)} exchanges failed: {failed[:10]}", file=sys.stderr)
    return 0


class _Copied(asyncio.Protocol):
    """The engine's side of the byte-copying proxy: what arrives is written to the harness."""

    def __init__(self, harness: _Harness) -> None:
        self.harness = harness
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.harness.transport is not None:
            self.harness.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.harness.upstream is self:  # the engine closed it: the next request reconnects
            self.harness.upstream = None


class _Harness(asyncio.Protocol):
    """The harness's side of the byte-copying proxy: what arrives is written to the engine, over
    a connection made when the first bytes come and made again when the engine has closed it
    (as the observer does, so that an engine's idle close does not end the harness's
    connection)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.upstream: _Copied | None = None
        self.pending: list[bytes] = []
        self.connecting: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None and not self.pending:
            upstream.transport.write(data)
            return
        self.pending.append(data)
        if self.connecting is None:
            self.connecting = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        _, upstream = await loop.create_connection(lambda: _Copied(self), *self.address)
        self.upstream, self.connecting = upstream, None
        pending, self.pending = self.pending, []
        assert upstream.transport is not None
        upstream.transport.writelines(pending)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.close()


def _serve_floor(upstream: str) -> int:
    host, port = upstream.removeprefix("http://").rsplit(":", 1)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Harness((host, int(port))), "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await loop.run_in_executor(None, sys.stdin.read)

    asyncio.run(serve())
    return 0


Request = Callable[[http.client.HTTPConnection], float]


def _models(connection: http.client.HTTPConnection) -> float:
    start = time.perf_counter()
    connection.request("GET", "/v1/models")
    reply = connection.getresponse()
    reply.read()
    assert reply.status == 200
    return time.perf_counter() - start


def _chat(connection: http.client.HTTPConnection) -> float:
    body = json.dumps(_CHAT)
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    reply = connection.getresponse()
    reply.read()
    assert reply.status == 200
    return time.perf_counter() - start


def _first_byte(connection: http.client.HTTPConnection) -> float:
    body = json.dumps(_CHAT | {"stream": True})
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    reply = connection.getresponse()
    assert reply.status == 200
    while not reply.read1(65536):
        pass
    first = time.perf_counter() - start
    reply.read()
    return first


def _post(connection: http.client.HTTPConnection, path: str, body: str) -> float:
    start = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "application/json"})
    reply = connection.getresponse()
    reply.read()
    assert reply.status == 200
    return time.perf_counter() - start


def _tokenize(connection: http.client.HTTPConnection) -> float:
    body = json.dumps({"input": "Reply with exactly: READY", "model": ALIAS})
    return _post(connection, "/extras/tokenize", body)


def _cpp_first_byte(engine_port: int) -> Request:
    """``_first_byte`` against ``llama-server``, which closes the connection after a streamed
    reply without saying so (no ``Connection: close``): the client's own connection to it (on
    ``engine_port``) is closed too, so the next request opens one inside its time, as a proxy in
    front of it does. The connections through a proxy stay open (the proxy reconnects)."""

    def request(connection: http.client.HTTPConnection) -> float:
        first = _first_byte(connection)
        if connection.port == engine_port:
            connection.close()
        return first

    return request


def _reopening(request: Request) -> Request:
    """``request`` on a connection opened again first if its peer has closed it (nothing is due
    on it between requests): ``llama-server`` closes a connection idle for 5 s, as completions
    under load leave one between its rounds, without a ``Connection: close`` before. The opening
    is inside the request's time, as a proxy's is when it reconnects."""

    def run(connection: http.client.HTTPConnection) -> float:
        if connection.sock is not None and select.select([connection.sock], [], [], 0)[0]:
            connection.close()
        return request(connection)

    return run


def _cpp_tokenize(connection: http.client.HTTPConnection) -> float:
    """``llama-server``'s tokenize endpoint."""
    return _post(connection, "/tokenize", json.dumps({"content": "Reply with exactly: READY"}))


IDLE_GAP_S = 0.06
"""About one chat completion of the benchmark's (57 to 63 ms)."""


def _models_after_idle(connection: http.client.HTTPConnection) -> float:
    time.sleep(IDLE_GAP_S)
    return _models(connection)


def _rounds(
    request: Request, connections: list[http.client.HTTPConnection], n: int
) -> list[list[float]]:
    """Each connection's times over ``n`` rounds, one request each a round, the order rotating
    from round to round (the first connection is the engine's own)."""
    times: list[list[float]] = [[] for _ in connections]
    for i in range(n):
        for j in range(len(connections)):
            k = (i + j) % len(connections)
            times[k].append(request(connections[k]))
    return times


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", type=Path, help="the live venv's interpreter")
    parser.add_argument(
        "--llama-server",
        type=Path,
        metavar="PATH",
        help="run llama.cpp's C++ llama-server at PATH as the engine (the live venv's weights)",
    )
    parser.add_argument(
        "--pairs", type=int, default=300, help="pairs (rounds) per kind (default 300)"
    )
    parser.add_argument(
        "--baseline", type=Path, metavar="DIR", help="also measure the observer of this tree"
    )
    parser.add_argument(
        "--floor", action="store_true", help="also measure a proxy that only copies bytes"
    )
    parser.add_argument("--serve-observer", metavar="UPSTREAM", help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_observer:
        return _serve_observer(args.serve_observer)
    if args.serve_floor:
        return _serve_floor(args.serve_floor)
    python, model = live_engine(args.python, args.llama_server)
    tokenize = (
        ("POST /extras/tokenize (answered at once)", _tokenize)
        if args.llama_server is None
        else ("POST /tokenize (answered at once)", _cpp_tokenize)
    )
    kinds: list[tuple[str, Request]] = [
        ("GET /v1/models", _models),
        ("chat completion, whole reply", _chat),
        ("streamed chat completion, first byte", _first_byte),
        tokenize,
        ("GET /v1/models after 60 ms idle", _models_after_idle),
    ]
    with contextlib.ExitStack() as stack:
        engine = (
            llama_server(python, model)
            if args.llama_server is None
            else cpp_llama_server(args.llama_server, model)
        )
        url = stack.enter_context(engine)
        ports = [int(url.rsplit(":", 1)[1]), stack.enter_context(observer_process(url))]
        others = []
        if args.baseline is not None:
            ports.append(stack.enter_context(observer_process(url, args.baseline.resolve())))
            others.append("baseline")
        if args.floor:
            ports.append(stack.enter_context(observer_process(url, serve="--serve-floor")))
            others.append("floor")
        if args.llama_server is not None:
            kinds[2] = (kinds[2][0], _cpp_first_byte(ports[0]))
            kinds = [(name, _reopening(request)) for name, request in kinds]
        connections = [http.client.HTTPConnection("127.0.0.1", port) for port in ports]
        rows = []
        for name, request in kinds:
            _rounds(request, connections, 10)  # warm up: connections, the engine's prompt cache
            rows.append((name, _rounds(request, connections, args.pairs)))
        for connection in connections:
            connection.close()
    print(f"load average after: {load()}")
    print(f"{args.pairs} rounds per kind; added = through an observer minus direct, per round (ms)")
    extra = "".join(f" | {name} added p50 | {name} added p90" for name in others)
    print(f"| request | direct p50 | observed p50 | added p50 | added p90{extra} | target |")
    print("| --- " * (5 + 2 * len(others)) + "| --- |")
    for name, (straight, *observers) in rows:
        cells = [statistics.median(straight), statistics.median(observers[0])]
        for observed in observers:
            added = [b - a for a, b in zip(straight, observed, strict=True)]
            cells += [_quantile(added, 0.5), _quantile(added, 0.9)]
        verdict = "met" if cells[2] * 1000 < TARGET_P50_MS else "MISSED"
        print(f"| {name} | {' | '.join(f'{c * 1000:.3f}' for c in cells)} | {verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
