"""The Hermes task set and Spark Bench's code domain weights, read from the recorded checkouts.

The Hermes task set, each task's limits and its frozen allowed-change patterns are those of the
pin set and of the task manifest inside the recorded checkout, each task once; a PASS has
evaluator cases and every one of them passed; changed paths are paths inside the workspace.
Spark Bench's code domain quality is what its scenarios' scores and their difficulties in the
recorded checkout give.
"""

from __future__ import annotations

import ast
import json
import math
import tomllib
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from bundle_schema.models import ComponentName, Finding, Gx10Evidence, HermesTask
from pins import Harness, PinSetSource
from verify._consistency._common import Reader, _disagrees, first_few, normal_path
from verify._consistency.checkouts import _Checkout, checkout_file
from verify.harness_outputs import (
    SPARK_BENCH_CODE_DOMAIN,
    SPARK_BENCH_CSV,
    SPARK_BENCH_SLACK,
    OutputsUnreadable,
    raw_name,
    spark_code_scores,
    spark_flag_rows,
)

SPARK_SUITE = "eval_suite.py"
"""Where Spark Bench's checkout defines its scenarios, each a ``dict(id=..., domain=...,
difficulty=...)``: the weights of a domain's quality."""
MAX_SPARK_SUITE = 16 << 20


class _Spark(NamedTuple):
    """The Spark Bench run the checks read: the upstream and harness that score coding, and
    its raw CSV with the place it is kept at."""

    upstream: str
    harness: Harness
    place: str
    csv: bytes


def spark_checks(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    foreign: Collection[str] = (),
) -> list[Finding]:
    """Spark Bench's raw CSV held to its recorded checkout (:func:`_spark_weights`,
    :func:`_spark_flags`), where coding is scored by a Spark Bench harness of the pin set that
    is not foreign and its CSV is kept."""
    spark = _spark_run(pins, foreign, read)
    if spark is None:
        return []
    return _spark_weights(evidence, spark, checkouts, read) + _spark_flags(spark, checkouts, read)


def _spark_weights(  # noqa: PLR0911 - one return per reason the check is left out
    evidence: Gx10Evidence, spark: _Spark, checkouts: Mapping[str, _Checkout], read: Reader
) -> list[Finding]:
    """Spark Bench's code domain held to its recorded checkout's suite (``eval_suite.py``): the
    scenarios scored are the code scenarios the suite defines in the tiers the pinned command
    selects (``--tier``; all when it names none), each once, and the domain's quality is what
    their scores give weighted by their difficulties (``eval_suite.run_suite``: 100 x the
    difficulty-weighted mean). A scenario left out, one the suite does not define, or a quality
    its scores cannot give, is a record that disagrees with them. A checkout whose suite
    defines no code scenario (another layout) is not read this way (the reader's own bound
    still holds); where a scenario's difficulty is not a literal, the mean is not recomputed."""
    upstream, harness, place, _ = spark
    quality = evidence.spark_quality
    checkout = checkouts.get(upstream)
    object_id = checkout.files.get(SPARK_SUITE) if checkout is not None else None
    data = read(f"upstreams/{upstream}/files/{object_id}") if object_id is not None else None
    if quality is None or data is None or len(data) > MAX_SPARK_SUITE:
        return []
    try:
        scores = spark_code_scores(spark.csv)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    suite = _suite_code(data)
    if not suite:
        return []
    tiers = _pinned_tiers(harness.command)
    selected = {i for i, (_, tier) in suite.items() if tiers is None or tier in tiers}
    unknown = sorted(set(scores) - set(suite))
    missing = sorted(selected - set(scores)) if tiers is not None else []
    if unknown or missing:
        said = "; ".join(
            f"{what}: {first_few([repr(i) for i in ids])}"
            for what, ids in (("not scored", missing), ("no scenario of its suite", unknown))
            if ids
        )
        return [
            _disagrees(
                place,
                f"the code domain scored {len(scores)} scenarios; the {upstream} checkout's "
                f"{SPARK_SUITE} defines {len(selected)} code scenarios in the pinned tiers "
                f"({said})",
            )
        ]
    weights = {i: difficulty for i, (difficulty, _) in suite.items()}
    if not scores or not all(weights[i] > 0 for i in scores):
        return []
    total = math.fsum(weights[i] for i in scores)
    expected = 100 * math.fsum(scores[i] * weights[i] for i in scores) / total
    if abs(expected - quality.code_domain_quality) <= SPARK_BENCH_SLACK:
        return []
    return [
        _disagrees(
            place,
            f"the code domain's quality is {quality.code_domain_quality:g}; its {len(scores)} "
            f"scenarios' scores, weighted by their difficulties in the {upstream} checkout's "
            f"{SPARK_SUITE}, give {expected:.2f}",
            expected=f"{expected:.1f}",
            got=f"{quality.code_domain_quality:g}",
        )
    ]


def _spark_run(pins: PinSetSource, foreign: Collection[str], read: Reader) -> _Spark | None:
    """The Spark Bench run that scores coding (:class:`_Spark`): None when coding is not scored
    by a Spark Bench harness (read by its reader), the harness is foreign, or its CSV is not
    kept at any raw place of a component it serves (as its records are re-read from,
    ``_raw_files``)."""
    upstream = pins.pins.component_upstreams.get("coding")
    harness = pins.pins.harnesses.get(upstream or "")
    if upstream is None or harness is None or harness.parser != "spark-bench":
        return None
    if upstream in foreign:
        return None
    for served in (c for c, u in pins.pins.component_upstreams.items() if u == upstream):
        place = raw_name(served, SPARK_BENCH_CSV)
        if (data := read(place)) is not None:
            return _Spark(upstream, harness, place, data)
    return None


_TIERS = {"all": frozenset({"base", "hard"}), "base": frozenset({"base"}),
          "hard": frozenset({"hard"})}  # fmt: skip
"""What ``spark_bench.py eval --tier`` selects (its default is ``all``; a scenario with no
``tier`` is ``base``, ``run_suite``)."""


def _pinned_tiers(command: Sequence[str]) -> frozenset[str] | None:
    """The scenario tiers a pinned Spark Bench command runs; None when it names a tier this
    check does not know (then the scenarios scored are only held to the suite's)."""
    for index, word in enumerate(command):
        if word == "--tier":
            value = command[index + 1] if index + 1 < len(command) else ""
            return _TIERS.get(value)
        if word.startswith("--tier="):
            return _TIERS.get(word.removeprefix("--tier="))
    return _TIERS["all"]


def _spark_flags(spark: _Spark, checkouts: Mapping[str, _Checkout], read: Reader) -> list[Finding]:
    """Spark Bench's gate and quarantine rows (:data:`SPARK_BENCH_FLAGS`), which its reader
    honours wherever they are, are rows the pinned code writes: each one's metric is a string
    the recorded checkout's Python files hold (parsed, never run), or in the pinned command
    (code it gives inline). The public Spark Bench writes none of them: a ``golden_gate`` row
    added to its CSV made a failing gate pass."""
    upstream, harness, place, data = spark
    try:
        rows = spark_flag_rows(data)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    if not rows:
        return []
    written = _checkout_strings(checkouts.get(upstream), upstream, read)
    if isinstance(written, str):
        why = f"its gate rows cannot be held to the {upstream} checkout's code: {written}"
        return [_disagrees(place, why)]
    for line, metric in rows:
        if metric not in written and not any(metric in word for word in harness.command):
            return [
                _disagrees(
                    place,
                    f"line {line}: a {metric} row, which the {upstream} checkout's code never "
                    f"writes (no {metric!r} in its Python files or the pinned command)",
                )
            ]
    return []


MAX_CODE = 64 << 20
"""The most Python source a check of written names reads of one checkout."""


def _checkout_strings(checkout: _Checkout | None, upstream: str, read: Reader) -> set[str] | str:
    """Every string constant of the Python files a recorded checkout keeps (a file its listing
    names and the bundle does not keep is left out: a sparse checkout keeps the harness's code),
    or why they cannot be read (the checkout not recorded whole, too much code, no Python file
    that parses)."""
    if checkout is None:
        return f"the {upstream} checkout is not recorded whole"
    found: set[str] = set()
    size = 0
    kept = [i for p, i in sorted(checkout.files.items()) if p.endswith(".py")]
    for object_id in kept:
        data = read(f"upstreams/{upstream}/files/{object_id}")
        if data is None:
            continue  # a sparse checkout keeps the harness's code, not every file listed
        size += len(data)
        if size > MAX_CODE:
            return f"over {MAX_CODE} bytes of Python"
        try:
            tree = ast.parse(data.decode("utf-8"))
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        found.update(
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )
    if not found:
        return "it keeps no Python file that parses"
    return found


def _suite_code(data: bytes) -> dict[str, tuple[float, str]]:
    """Each code scenario ``eval_suite.py`` defines, with its difficulty (NaN when not a literal
    number, or the id defined twice) and its tier (``base`` when none is given): its literal
    ``dict(id=..., domain="code", ...)`` calls, parsed, never run; none when it does not
    parse."""
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, tuple[float, str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "dict":
            continue
        given = {
            k.arg: k.value.value
            for k in node.keywords
            if k.arg in ("id", "domain", "difficulty", "tier") and isinstance(k.value, ast.Constant)
        }
        key, difficulty, tier = given.get("id"), given.get("difficulty"), given.get("tier", "base")
        if given.get("domain") != SPARK_BENCH_CODE_DOMAIN or not isinstance(key, str):
            continue
        weight = (
            float(difficulty)
            if isinstance(difficulty, int | float) and not isinstance(difficulty, bool)
            else math.nan
        )
        found[key] = (math.nan if key in found else weight, str(tier))  # twice: no weight
    return found


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
