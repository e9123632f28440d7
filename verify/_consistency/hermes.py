"""The Hermes task set, read from the recorded checkout.

The Hermes task set, each task's limits and its frozen allowed-change patterns are those of the
pin set and of the task manifest inside the recorded checkout, each task once; a PASS has
evaluator cases and every one of them passed; changed paths are paths inside the workspace.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from bundle_schema.models import ComponentName, Finding, Gx10Evidence, HermesTask
from pins import PinSetSource
from verify._consistency._common import Reader, _disagrees, normal_path
from verify._consistency.checkouts import _Checkout, checkout_file


def _task_manifest(  # noqa: PLR0911 - one return per reason the task set cannot be read
    pins: PinSetSource, checkouts: Mapping[str, _Checkout], read: Reader
) -> dict[str, dict[str, Any]] | str:
    """The pinned Hermes tasks by id (limits filled in from the pins), or why they cannot be
    read from the recorded checkout."""
    hermes = pins.pins.hermes
    assert hermes is not None  # noqa: S101 - the caller checks
    data = checkout_file(checkouts, hermes.upstream, hermes.tasks_manifest, read)
    if isinstance(data, str):
        return data
    try:
        manifest = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        return f"{hermes.tasks_manifest}: not TOML: {str(exc)[:200]}"
    tasks: dict[str, dict[str, Any]] = {}
    for task in manifest.get("task", []) if isinstance(manifest.get("task"), list) else []:
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            return f"{hermes.tasks_manifest}: a task without an id"
        patterns = task.get("allowed_changes", [])
        limits = [task.get("inactivity_s", hermes.inactivity_s), task.get("wall_s", hermes.wall_s)]
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            return (
                f"{hermes.tasks_manifest}: task {task['id']}: allowed_changes is no list of paths"
            )
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in limits):
            return f"{hermes.tasks_manifest}: task {task['id']}: a limit is not a number"
        tasks[task["id"]] = {
            "allowed_changes": tuple(patterns),
            "inactivity_s": limits[0],
            "wall_s": limits[1],
        }
    if hermes.tasks is not None:
        missing = [t for t in hermes.tasks if t not in tasks]
        if missing:
            return f"{hermes.tasks_manifest} has no task {missing[0]!r} the pin set selects"
        tasks = {t: tasks[t] for t in hermes.tasks}
    return tasks


def _hermes(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    selected: Sequence[ComponentName],
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    *,
    foreign: Collection[str] = (),
) -> list[Finding]:
    tasks = evidence.hermes_tasks
    name = "components/hermes/tasks.jsonl"
    if tasks is None or "hermes" not in selected:
        return []
    findings = []
    for number, task in enumerate(tasks, start=1):
        findings += _task_self(task, name, number)
    if pins.pins.hermes is None or pins.pins.hermes.upstream in foreign:
        return findings  # no pinned task set, or another harness's tasks (ADR 0036)
    pinned = _task_manifest(pins, checkouts, read)
    if isinstance(pinned, str):
        return [*findings, _disagrees(name, f"the pinned task set cannot be read: {pinned}")]
    seen: set[str] = set()
    for number, task in enumerate(tasks, start=1):
        where = f"{name}:{number}"
        if task.task in seen:
            findings.append(_disagrees(name, f"task {task.task} is recorded twice", path=where))
            continue
        seen.add(task.task)
        frozen = pinned.get(task.task)
        if frozen is None:
            findings.append(_disagrees(name, f"task {task.task} is not a pinned task", path=where))
            continue
        for field, got, expected in (
            ("allowed_changes", task.allowed_changes, frozen["allowed_changes"]),
            ("inactivity_limit_s", task.inactivity_limit_s, frozen["inactivity_s"]),
            ("wall_limit_s", task.wall_limit_s, frozen["wall_s"]),
        ):
            if got != expected:
                findings.append(
                    _disagrees(
                        name,
                        f"task {task.task}: {field} is {json.dumps(got)}; the pinned task "
                        f"manifest and pin set give {json.dumps(expected)}",
                        path=where,
                        expected=json.dumps(expected)[:4096],
                        got=json.dumps(got)[:4096],
                    )
                )
    for missing in sorted(set(pinned) - seen):
        findings.append(_disagrees(name, f"pinned task {missing} has no record"))
    return findings


def _task_self(task: HermesTask, name: str, number: int) -> list[Finding]:
    where = f"{name}:{number}"
    findings = []
    if task.outcome == "PASS" and (not task.cases or not all(c.passed for c in task.cases)):
        findings.append(
            _disagrees(
                name,
                f"task {task.task} is PASS, but "
                f"{'has no evaluator case' if not task.cases else 'an evaluator case failed'}",
                path=where,
            )
        )
    problem = _outcome_problem(task)
    if problem is not None:
        findings.append(_disagrees(name, f"task {task.task} is {task.outcome}, but {problem}",
                                   path=where))  # fmt: skip
    for path in (*task.changed_paths, *task.allowed_changes):
        if normal_path(path) is None:
            findings.append(
                _disagrees(
                    name,
                    f"task {task.task}: {path!r} is not a path inside the workspace",
                    path=where,
                )
            )
    return findings


def _outcome_problem(task: HermesTask) -> str | None:
    """Why a task's TIMEOUT or HARNESS_ERROR is not what its own record shows (either would
    make a model's failed task the clock's or the harness's): a task stopped at a limit has
    reached it (its wall or its silence), and never reached its evaluation; a harness that
    failed did not leave a whole, trusted evaluation behind."""
    if task.outcome == "TIMEOUT":
        if task.cases:
            return "it has evaluator cases: a task stopped at a limit never reached them"
        if task.wall_s is None or task.max_inactivity_s is None:
            return "its times are not recorded: a task is stopped at a limit it was seen to reach"
        if task.wall_s < task.wall_limit_s and task.max_inactivity_s < task.inactivity_limit_s:
            return (
                f"its wall {task.wall_s:g} s and longest silence {task.max_inactivity_s:g} s "
                f"are within both limits ({task.wall_limit_s:g} s, {task.inactivity_limit_s:g} s)"
            )
    if task.outcome == "HARNESS_ERROR" and task.trusts():
        return "its evaluation is whole: every kind of evidence present and trusted"
    return None
