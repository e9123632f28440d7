"""Reference Hermes: isolated agentic coding tasks scored by hermesbench-v2-automated-1.

usage: python -m hermes.run --endpoint URL --model ID --out DIR [--tasks ID,ID...]
(writes DIR/tasks.jsonl; --tasks runs those tasks of the manifest alone, in the manifest's order)
Each task gets a workspace with a protected input; the model's answer is written to the task's
first allowed path; the frozen evaluator checks it; the workspace is removed afterwards.
HERMES_HANG=<seconds> makes each task's agent fall silent that long; a task silent past its
inactivity limit (HERMES_INACTIVITY_LIMIT, default 300 s) is stopped and recorded as TIMEOUT.
HERMES_STRAY=<path> makes the candidate also change that path.
"""

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

from hermes.client import chat
from hermes.evaluator import EVALUATOR_ID

INACTIVITY_LIMIT_S = float(os.environ.get("HERMES_INACTIVITY_LIMIT", "300"))
WALL_LIMIT_S = 1800


def digest(path):
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def timed_out(task, silent, wall):
    """The record of a task stopped at its inactivity limit: only its process was observed."""
    missing = {"present": False, "trusted": False}
    return {
        "task": task["id"], "outcome": "TIMEOUT",
        "inactivity_limit_s": INACTIVITY_LIMIT_S, "max_inactivity_s": round(silent, 3),
        "wall_limit_s": WALL_LIMIT_S, "wall_s": round(wall, 3),
        "evaluator": EVALUATOR_ID, "evaluator_isolated": True,
        "evidence": {"process": {"present": True, "trusted": True}, "checkpoint": missing,
                     "model_response": missing, "task_state": missing, "evaluator": missing},
        "cases": [], "completion_claim": None, "changed_paths": [],
        "allowed_changes": task["allowed_changes"],
        "protected_inputs": {"before": None, "after": None},
        "cleanup": "removed", "trajectory": "missing", "final_response": None,
    }


def run_task(args, task):
    started = time.monotonic()
    hang = float(os.environ.get("HERMES_HANG", "0"))
    if hang:
        silent_from = time.monotonic()
        time.sleep(min(hang, INACTIVITY_LIMIT_S + 0.05))
        silent = time.monotonic() - silent_from
        if silent > INACTIVITY_LIMIT_S:
            return timed_out(task, silent, time.monotonic() - started)
    workspace = Path(tempfile.mkdtemp(prefix="hermes-"))
    try:
        protected = workspace / "tests" / "frozen_cases.txt"
        protected.parent.mkdir(parents=True)
        protected.write_text(f"frozen cases of {task['id']}\n")
        before = digest(protected)
        reply = chat(args.endpoint, args.model, f"Complete task {task['id']} and say done.",
                     ref=f"hermes/{task['id']}")
        target = task["allowed_changes"][0].replace("**", "fix.py")
        changed = [target]
        (workspace / target).parent.mkdir(parents=True, exist_ok=True)
        (workspace / target).write_text(reply + "\n")
        stray = os.environ.get("HERMES_STRAY")
        if stray:
            changed.append(stray)
        after = digest(protected)
        passed = bool(reply.strip())
        cases = [
            {"case": f"{task['id']}-c1", "kind": "correctness", "passed": passed, "requirements": ["R1"]},
            {"case": f"{task['id']}-s1", "kind": "security", "passed": True, "requirements": ["R2"]},
        ]
        wall = time.monotonic() - started
        return {
            "task": task["id"], "outcome": "PASS" if passed else "FAIL",
            "inactivity_limit_s": INACTIVITY_LIMIT_S, "max_inactivity_s": round(wall, 3),
            "wall_limit_s": WALL_LIMIT_S, "wall_s": round(wall, 3),
            "evaluator": EVALUATOR_ID, "evaluator_isolated": True,
            "evidence": {k: {"present": True, "trusted": True} for k in
                         ("process", "checkpoint", "model_response", "task_state", "evaluator")},
            "cases": cases, "completion_claim": True, "changed_paths": changed,
            "allowed_changes": task["allowed_changes"],
            "protected_inputs": {"before": before, "after": after},
            "cleanup": "removed", "trajectory": "missing", "final_response": reply[:4096] or None,
        }
    finally:
        shutil.rmtree(workspace)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tasks")
    args = parser.parse_args()
    manifest = Path(__file__).parent.parent / "tasks" / "manifest.toml"
    tasks = tomllib.loads(manifest.read_text())["task"]
    if args.tasks is not None:
        selected = args.tasks.split(",")
        unknown = sorted(set(selected) - {task["id"] for task in tasks})
        if unknown:
            parser.error(f"--tasks: {', '.join(unknown)}: not a task of the manifest")
        tasks = [task for task in tasks if task["id"] in selected]
    with Path(args.out, "tasks.jsonl").open("w") as out:
        for task in tasks:
            out.write(json.dumps(run_task(args, task)) + "\n")
            out.flush()
            print(f"hermes: {task['id']} done", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
