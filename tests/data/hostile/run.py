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
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"results": results, "max_rss_bytes": peak}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        document = run(json.load(file))
    sys.stdout.write(json.dumps(document) + "\n")
