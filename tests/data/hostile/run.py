"""Run corpus cases through the CLI in this one process; print each answer and the peak memory.

``python -m tests.data.hostile.run PLAN.json``: PLAN lists {name, argv}; the output (stdout) is
one JSON document {results: {name: {exit, stderr}}, max_rss_bytes}. Cases run in-process so that
the peak resident memory of the process bounds every case.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys

from audit.cli import main


def run(plan: list[dict[str, object]]) -> dict[str, object]:
    results = {}
    for case in plan:
        err = io.StringIO()
        with (
            open(os.devnull, "w") as devnull,
            contextlib.redirect_stdout(devnull),
            contextlib.redirect_stderr(err),
        ):
            code = main([str(a) for a in case["argv"]])  # type: ignore[attr-defined]
        results[str(case["name"])] = {"exit": code, "stderr": err.getvalue()}
    return {"results": results, "max_rss_bytes": _peak_rss()}


def _peak_rss() -> int:
    """This process's peak resident memory, in bytes: VmHWM, which a new program image starts
    afresh (``ru_maxrss`` keeps the parent's peak across ``fork`` and ``exec``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        document = run(json.load(file))
    sys.stdout.write(json.dumps(document) + "\n")
