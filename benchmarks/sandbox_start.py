"""What the sandbox costs a harness command before and after it runs: the wall time of
``run_sandboxed`` for a command that does nothing (``python -c pass``), in this tree and, with
``--baseline DIR``, in another (a checkout of an earlier commit), the two in turn, round after
round, so that the machine's load falls on both alike. With ``--sends N``, what it costs while
it runs: the command sends N times 300 bytes on a loopback TCP connection of its own and says
how long a send took (a send stops for strace since ADR 0047 point 15).

The command runs in the runner's layout: a scratch directory under ``/tmp`` holding its
checkout, outputs, home and ``/tmp`` (each writable, the folders read-only) and two other
harnesses' places hidden, as ``audit run`` gives them. A baseline tree whose ``run_sandboxed``
takes no ``tmp`` or ``shown`` is given its own arguments alone.

Run (as root, or with unprivileged user namespaces): .venv/bin/python -m
benchmarks.sandbox_start [--rounds N] [--baseline DIR] [--sends N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# source text run with -c and the tree on its path: the baseline tree has no copy of this module
ONE = """
import inspect, json, shutil, sys, tempfile, time
from pathlib import Path
from audit.sandbox import SandboxLimits, run_sandboxed
rounds, sends = int(sys.argv[1]), bool(int(sys.argv[2]))
command = [sys.executable, "-c", sys.argv[3]]
scratch = Path(tempfile.mkdtemp(prefix="audit-run-"))
kinds = ("checkouts", "outputs", "home", "tmp")
for kind in kinds:
    for name in ("mine", "a", "b"):
        (scratch / kind / name).mkdir(parents=True)
checkout, out, home, tmp = (scratch / kind / "mine" for kind in kinds)
(checkout / ".git").mkdir()
options = {"serve": None, "port": 18123, "limits": SandboxLimits(30, 60), "cwd": checkout,
           "component": "coding", "writable": [checkout, out, home],
           "read_only": [scratch, *(scratch / k for k in kinds), checkout / ".git"],
           "hidden": [scratch / k / n for k in kinds for n in ("a", "b")]}
accepted = inspect.signature(run_sandboxed).parameters
if "tmp" in accepted:
    options["tmp"] = tmp
else:
    options["hidden"] = [p for p in options["hidden"] if p.parent.name != "tmp"]
    options["read_only"] = [p for p in options["read_only"] if p.name != "tmp"]
times = []
for _ in range(rounds):
    start = time.perf_counter()
    result = run_sandboxed(command, **options)
    wall = time.perf_counter() - start
    assert result.returncode == 0, result.stderr.decode()[-400:]
    times.append(float(result.stdout) if sends else wall)
shutil.rmtree(scratch)
print(json.dumps(times))
"""


SENDS = """
import socket, sys, threading, time
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
def sink():
    connection, _ = server.accept()
    while connection.recv(65536):
        pass
threading.Thread(target=sink, daemon=True).start()
client = socket.create_connection(server.getsockname())
start = time.perf_counter()
for _ in range(int(sys.argv[1])):
    client.send(b"x" * 300)
print((time.perf_counter() - start) / int(sys.argv[1]))
"""
"""The command of ``--sends N`` (N its argument): how long a send takes, on average."""


def _times(tree: Path, rounds: int, sends: int) -> list[float]:
    command = f"import sys; sys.argv[1:] = ['{sends}']; exec({SENDS!r})" if sends else "pass"
    done = subprocess.run(
        [sys.executable, "-c", ONE, str(rounds), str(sends), command],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the measuring process failed: {done.stderr[-800:]}")
    return list(json.loads(done.stdout.splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="commands per block (20)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks per tree, in turn (5)")
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--sends", type=int, default=0,
                        help="time N sends in the command instead of its start (0)")  # fmt: skip
    args = parser.parse_args(argv)
    trees = {"this tree": REPO, **({"baseline": args.baseline} if args.baseline else {})}
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.blocks):
        for name, tree in trees.items():
            times[name] += _times(tree, args.rounds, args.sends)
    scale, unit = (1e6, "us a send") if args.sends else (1000, "ms")
    for name, measured in times.items():
        values = sorted(t * scale for t in measured)
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{name}: n={len(values)} p50 {statistics.median(values):.1f} {unit}, "
              f"p90 {p90:.1f} {unit}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
