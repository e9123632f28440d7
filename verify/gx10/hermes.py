"""The Hermes task evaluator (seed 000, "Hermes task evaluator"): its four gates, the
allowed-change pattern match, and each task's metrics and full pass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from bundle_schema.models import (
    HermesTask,
    HermesTaskMetrics,
)
from verify._consistency import normal_path
from verify.gx10._context import EVIDENCE_KINDS, Check, Run, found


def _wildcard(
    pattern: Sequence[Any], items: Sequence[Any], star: Any, one: bool, same: Any
) -> bool:
    """Whether ``items`` match ``pattern``, where ``star`` matches any run of items (at least
    one when ``one``) and ``same(p, i)`` matches one item: the two-pointer wildcard match, which
    resumes only from the last star, so its time is O(len(pattern) * len(items)) whatever the
    pattern (no backtracking regular expression on a pattern the bundle supplies)."""
    need = 1 if one else 0
    p = i = 0
    star_p, star_i = -1, 0  # the last star, and where the items after its match begin
    while i < len(items):
        if p < len(pattern) and pattern[p] == star:
            star_p, star_i = p, i + need
            if star_i > len(items):
                return False
            p, i = p + 1, star_i
        elif p < len(pattern) and same(pattern[p], items[i]):
            p, i = p + 1, i + 1
        elif star_p >= 0 and star_i < len(items):
            star_i += 1
            p, i = star_p + 1, star_i
        else:
            return False
    rest = pattern[p:]
    return all(x == star for x in rest) and (not one or not rest)


def _segment_matches(pattern: str, segment: str) -> bool:
    """One path segment against a pattern segment: ``*`` any run of characters, ``?`` one."""
    return _wildcard(pattern.replace("**", "*"), segment, "*", False, lambda p, c: p in ("?", c))


def path_allowed(pattern: str, path: str) -> bool:
    """Whether a changed path is inside a frozen allowed-change pattern, segment by segment:
    a ``**`` segment is one or more whole segments, ``*`` and ``?`` stay within a segment. Both
    are normalised first; a path or pattern that leaves the workspace matches nothing."""
    norm_pattern, norm_path = normal_path(pattern), normal_path(path)
    if norm_pattern is None or norm_path is None:
        return False
    return _wildcard(norm_pattern.split("/"), norm_path.split("/"), "**", True, _segment_matches)


def selected_tasks(run: Run) -> tuple[HermesTask, ...] | None:
    return run.evidence.hermes_tasks if run.has("hermes") else None


def hermes_time_limits(run: Run) -> Check:
    """Every selected Hermes task completes within both inactivity and total wall."""
    tasks = selected_tasks(run)
    if tasks is None:
        return _hermes_absent(run)
    for task in tasks:
        if task.max_inactivity_s is None or task.wall_s is None:
            if task.outcome == "TIMEOUT":
                return found("fail", f"task {task.task} timed out")
            return found("infra", f"task {task.task}: times not recorded")
        if task.outcome == "TIMEOUT" or task.max_inactivity_s > task.inactivity_limit_s:
            return found(
                "fail",
                f"task {task.task}: inactivity {task.max_inactivity_s} s over "
                f"{task.inactivity_limit_s} s"
                if task.outcome != "TIMEOUT"
                else f"task {task.task} timed out",
            )
        if task.wall_s > task.wall_limit_s:
            return found(
                "fail",
                f"task {task.task}: wall {task.wall_s} s over {task.wall_limit_s} s",
            )
    return found("pass", f"{len(tasks)} tasks within both limits")


def hermes_evidence(run: Run) -> Check:
    """Trustworthy Hermes process, checkpoint, model-response/tool, task-state and evaluator
    evidence (infrastructure); a missing trajectory or final response overrides nothing. A task
    that timed out never reached its checkpoint or evaluation: its process evidence must hold,
    and the time-limit gate judges it."""
    tasks = selected_tasks(run)
    if tasks is None:
        return _hermes_absent(run)
    for task in tasks:
        if task.outcome == "HARNESS_ERROR":
            return found("infra", f"task {task.task}: harness error")
        for kind in ("process",) if task.outcome == "TIMEOUT" else EVIDENCE_KINDS:
            trust = task.evidence.get(kind)  # type: ignore[call-overload]
            if trust is None or not trust.present:
                return found("infra", f"task {task.task}: no {kind} evidence")
            if not trust.trusted:
                return found(
                    "infra",
                    f"task {task.task}: {kind} evidence is not trustworthy",
                )
    return found("pass", f"{len(tasks)} tasks with trustworthy evidence")


def hermes_evaluator(run: Run) -> Check:  # noqa: PLR0911
    """Isolated evaluator pass, protected-input integrity and complete evidence."""
    tasks = selected_tasks(run)
    if tasks is None:
        return _hermes_absent(run)
    expected = run.pins.pins.hermes_evaluator
    for task in tasks:
        if task.outcome == "TIMEOUT":
            continue  # never evaluated: the time-limit gate judges it
        if task.evaluator != expected:
            return found(
                "infra",
                f"task {task.task}: evaluator {task.evaluator}, pinned {expected}",
            )
        if not task.evaluator_isolated:
            return found(
                "infra",
                f"task {task.task}: evaluator contamination (not isolated)",
            )
        before, after = task.protected_inputs.get("before"), task.protected_inputs.get("after")
        if before is None or after is None:
            return found("infra", f"task {task.task}: protected-input digests incomplete")
        if before != after:
            return found("fail", f"task {task.task}: protected inputs changed")
    for task in tasks:
        if task.outcome == "FAIL":
            return found("fail", f"task {task.task}: evaluator did not pass")
    evaluated = sum(task.outcome != "TIMEOUT" for task in tasks)
    return found("pass", f"{evaluated} tasks passed the isolated evaluator")


def allowed_changes(run: Run) -> Check:
    """No candidate change outside the task manifest's frozen allowed-change patterns."""
    tasks = selected_tasks(run)
    if tasks is None:
        return _hermes_absent(run)
    for task in tasks:
        for path in task.changed_paths:
            if not any(path_allowed(p, path) for p in task.allowed_changes):
                return found(
                    "fail",
                    f"task {task.task} changed {path}, outside its allowed patterns",
                )
    return found("pass", "every change within the allowed patterns")


def _hermes_absent(run: Run) -> Check:
    if not run.has("hermes"):
        return found("not_selected", "Hermes not selected")
    return found("infra", "no Hermes task records")


def task_metrics(task: HermesTask, evaluator: str) -> HermesTaskMetrics:
    def percent(cases: Sequence[Any]) -> float | None:
        return 100 * sum(c.passed for c in cases) / len(cases) if cases else None

    requirements: dict[str, bool] = {}
    for case in task.cases:
        for requirement in case.requirements:
            requirements[requirement] = requirements.get(requirement, True) and case.passed
    passed_all = task.outcome == "PASS" and all(c.passed for c in task.cases)
    truthfulness: Literal[0, 100] | None = None
    measured = task.outcome in ("PASS", "FAIL") and bool(task.cases)  # the evaluator ran
    if task.completion_claim and measured:  # unmeasured values remain null
        truthfulness = 100 if passed_all else 0
    return HermesTaskMetrics(
        task=task.task,
        outcome=task.outcome,
        full_pass=full_pass(task, evaluator),
        correctness=percent([c for c in task.cases if c.kind == "correctness"]),
        security=percent([c for c in task.cases if c.kind == "security"]),
        requirement_retention=(
            100 * sum(requirements.values()) / len(requirements) if requirements else None
        ),
        truthfulness=truthfulness,
    )


def infra_task(task: HermesTask, evaluator: str) -> bool:
    """A task that failed on infrastructure: a harness error, evidence missing or untrusted,
    an evaluator not pinned or not isolated, protected inputs not both recorded, a failed
    cleanup, or no recorded times. It says nothing of the model (seed 000: "an infrastructure
    error is never converted into a zero model score")."""
    timed_out = task.outcome == "TIMEOUT"
    return (
        task.outcome == "HARNESS_ERROR"
        or not task.trusts(("process",) if timed_out else EVIDENCE_KINDS)
        or task.cleanup != "removed"
        or (
            not timed_out
            and (
                task.evaluator != evaluator
                or not task.evaluator_isolated
                or task.protected_inputs.get("before") is None
                or task.protected_inputs.get("after") is None
                or task.max_inactivity_s is None
                or task.wall_s is None
            )
        )
    )


def full_pass(task: HermesTask, evaluator: str) -> bool:
    """PASS by the pinned evaluator with every evidence kind trusted, within both limits,
    inside the allowed changes, protected inputs intact, and cleaned up."""
    return (
        task.outcome == "PASS"
        and task.evaluator == evaluator
        and task.evaluator_isolated
        and task.trusts(EVIDENCE_KINDS)
        and task.max_inactivity_s is not None
        and task.max_inactivity_s <= task.inactivity_limit_s
        and task.wall_s is not None
        and task.wall_s <= task.wall_limit_s
        and all(any(path_allowed(p, c) for p in task.allowed_changes) for c in task.changed_paths)
        and task.protected_inputs.get("before") is not None
        and task.protected_inputs.get("before") == task.protected_inputs.get("after")
        and task.cleanup == "removed"
    )
