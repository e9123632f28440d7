"""A harness's view of the observer: requests from inside the sandbox of ``audit run`` (its own
network namespace, the observer its only way out) against the same requests sent straight to
the engine, llama-cpp-python's server with SmolLM2-135M-Instruct (the live venv of ``make
test-live``).

``benchmarks.observer_real`` measures the observer alone, in pairs. A harness in a run reaches
it from inside the sandbox; until ADR 0034 through a relay of the namespace's own (a Python
forwarder on asyncio streams, piping each connection to the observer's Unix socket), now on the
namespace's listening socket, which the observer accepts on itself. A client process inside a
namespace cannot also reach the engine, so the requests cannot be paired: the client runs in
blocks (straight to the engine; through this tree's sandbox and observer; through
``--baseline DIR``'s), the blocks in turn, several times over, and the p50 of each is compared.
The engine's own jitter is in every block; more blocks and rounds narrow it.

Run (as root, or with unprivileged user namespaces): .venv/bin/python -m
benchmarks.observer_sandboxed [--python .venv-live/bin/python] [--rounds N] [--blocks B]
[--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from audit.run import SANDBOX_PORT
from benchmarks.observer_real import ALIAS, live_engine, llama_server, load

REPO = Path(__file__).resolve().parent.parent

# The client and the sandboxed runner are source text, run with ``-c``: the baseline tree has
# no copy of this module, and the client runs inside the sandbox with that tree on its path.
CLIENT = """
import http.client, json, sys, time
url, rounds, alias = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host, port = url.removeprefix("http://").rsplit(":", 1)
connection = http.client.HTTPConnection(host, int(port), timeout=60)
chat = {"model": alias, "messages": [{"role": "user", "content": "Reply with exactly: READY"}],
        "max_tokens": 8, "temperature": 0, "seed": 0}

def models():
    start = time.perf_counter()
    connection.request("GET", "/v1/models")
    reply = connection.getresponse(); reply.read(); assert reply.status == 200
    return time.perf_counter() - start

def whole():
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", json.dumps(chat),
                       {"Content-Type": "application/json"})
    reply = connection.getresponse(); reply.read(); assert reply.status == 200
    return time.perf_counter() - start

def first_byte():
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", json.dumps(chat | {"stream": True}),
                       {"Content-Type": "application/json"})
    reply = connection.getresponse(); assert reply.status == 200
    while not reply.read1(65536):
        pass
    first = time.perf_counter() - start
    reply.read()
    return first

kinds = {"GET /v1/models": models, "chat completion, whole reply": whole,
         "streamed chat completion, first byte": first_byte}
for request in kinds.values():  # warm up: the connection, the engine's prompt cache
    for _ in range(5):
        request()
print(json.dumps({name: [request() for _ in range(rounds)] for name, request in kinds.items()}))
"""

SANDBOXED = """
import inspect, json, sys
from pathlib import Path
from audit.observer import observe
from audit.sandbox import SandboxLimits, run_sandboxed
engine, rounds, alias, port, client, scratch = sys.argv[1:7]
command = [sys.executable, "-c", client, f"http://127.0.0.1:{port}", rounds, alias]
limits = SandboxLimits(inactivity_s=600, wall_s=1800)
scratch = Path(scratch)
parameters = inspect.signature(run_sandboxed).parameters
extra = {"scratch": scratch} if "scratch" in parameters else {}  # a tree before ADR 0047
if "serve" in parameters:  # the observer accepts (ADR 0034)
    with observe(engine) as observer:
        result = run_sandboxed(command, serve=observer.serving, port=int(port), cwd=scratch,
                               limits=limits, **extra)
else:  # a tree before ADR 0034: the namespace's forwarder to the observer's Unix socket
    with observe(engine, unix_path=str(scratch / "observer.sock")):
        result = run_sandboxed(command, observer_socket=scratch / "observer.sock",
                               port=int(port), cwd=scratch, limits=limits, **extra)
if result.returncode != 0:
    raise SystemExit("the client failed in the sandbox: " + result.stderr.decode()[-2000:])
sys.stdout.write(result.stdout.decode())
"""


def _block(target: str, engine: str, rounds: int, scratch: Path) -> dict[str, list[float]]:
    """One block of the client's rounds: straight to the engine (``target`` "direct") or from
    inside the sandbox of the tree at ``target``."""
    if target == "direct":
        command = [sys.executable, "-c", CLIENT, engine, str(rounds), ALIAS]
        env = None
    else:
        command = [sys.executable, "-c", SANDBOXED, engine, str(rounds), ALIAS,
                   str(SANDBOX_PORT), CLIENT, str(scratch)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": target}
    # in the tree's directory: ``-c`` puts it first on sys.path, before PYTHONPATH
    cwd = REPO if target == "direct" else target
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{target}: {done.stderr[-2000:]}")
    times: dict[str, list[float]] = json.loads(done.stdout)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", type=Path, help="the live venv's interpreter")
    parser.add_argument("--rounds", type=int, default=100, help="rounds per kind and block")
    parser.add_argument("--blocks", type=int, default=4, help="blocks per target (default 4)")
    parser.add_argument(
        "--baseline", type=Path, metavar="DIR", help="also measure the sandbox of this tree"
    )
    args = parser.parse_args(argv)
    python, model = live_engine(args.python)
    targets = {"direct": "direct", "this tree": str(REPO)}
    if args.baseline is not None:
        targets["baseline"] = str(args.baseline.resolve())
    times: dict[str, dict[str, list[float]]] = {name: {} for name in targets}
    with contextlib.ExitStack() as stack:
        engine = stack.enter_context(llama_server(python, model))
        scratch = REPO / "build" / "bench-sandboxed"
        scratch.mkdir(parents=True, exist_ok=True)
        for block in range(args.blocks):
            order = list(targets.items())
            order = order[block % len(order) :] + order[: block % len(order)]
            for name, target in order:
                for kind, values in _block(target, engine, args.rounds, scratch).items():
                    times[name].setdefault(kind, []).extend(values)
    print(f"load average after: {load()}")
    print(f"{args.blocks} blocks of {args.rounds} rounds per kind and target; p50 in ms")
    others = [name for name in targets if name != "direct"]
    header = "".join(f" | {name} p50 | {name} added" for name in others)
    print(f"| request | direct p50{header} |")
    print("| --- " * (2 + 2 * len(others)) + "|")
    for kind, direct in times["direct"].items():
        cells = [statistics.median(direct)]
        for name in others:
            through = statistics.median(times[name][kind])
            cells += [through, through - cells[0]]
        print(f"| {kind} | {' | '.join(f'{c * 1000:.3f}' for c in cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
