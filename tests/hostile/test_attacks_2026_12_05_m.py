"""Hostile tests of 2026-12-05 (m): the two changes of the day, attacked both ways.

Attacked: commit 848d9f6 (ADR 0040: a pin set that selects Hermes tasks passes ``{tasks}`` in
the Hermes harness's command, ``pins/_model.py`` ``PinSet._task_selection``; ``audit/run.py``
``_Harnesses._execute`` fills it; ``verify/_consistency/hermes.py`` ``_hermes`` / ``_task_manifest``
stay strict) and commit d6246f5 (``verify/_consistency/times.py`` ``_overlaps``: the windows of
components of different harnesses overlap by no more than the stamps' 2 s). Forgeries are the
example runs under the tests' deployment pin set, edited and resealed with claims equal to the
replay (``tests.decision_kit.forged``); honest runs are ``audit.run.run_qualification`` against
the reference endpoint.

Findings (strict expected failures unless HELD):

1. HOLE (near j 7): ``_overlaps`` compares windows only with each other, so the first harness's
   start has nothing before it: SparkBench (coding and reliability) FAILED "sparkbench wall
   limit exceeded", its start moved back 3600 s before its end (before the run, before the
   probes) is no finding, and ``audit show`` says the sandbox stopped a hung agent. The run's
   start is recorded nowhere the verifier reads; the observer's clock (the probes' exchanges
   before the harnesses, anchored by any later window) is not compared with the windows.
   Fixed: ``_on_the_log_clock`` (one offset from the observer's clock to the windows must put
   every component's exchanges inside its window and the identity and probes before all).
2. HOLE: the exemption for components of one upstream (``upstream == other_upstream``) needs no
   shared start, though the runner runs each upstream once and gives every component it serves
   that run's start (gates extend only the end): reliability FAILED "sparkbench wall limit
   exceeded", its start moved back into coding's window (3600 s before its end), is no finding.
   The foreign rule's "a shared start is one run" would hold it. Fixed: two windows overlap
   only from one start, of one upstream (or a foreign one).
3. HOLE: a window whose stamps do not read (second 60, which the schema's pattern takes) or are
   null is left out of ``_overlaps``, and nothing else reads them on a COMPLETED result: Hermes
   FAILED at its wall, its start moved back into SparkBench's run (what d6246f5 finds), passes
   again once coding's end and reliability's start are made unreadable (or null). Fixed: a
   stamp that does not read is a finding, and so is a missing one on a component that ran.
4. FALSE FINDING (the runner's clock): ``audit.run._now`` stamped each window with the wall
   clock; a wall clock stepped back a few seconds between two harnesses (NTP, a VM resumed)
   makes an honest run an integrity failure ("the runner runs one harness at a time"). The
   runner could stamp from one wall reading plus ``time.monotonic`` (the observer already uses
   a monotonic clock), which no step moves. Fixed: ``audit.run._Clock``.
5. FALSE FINDING (pin-set load): ``tasks = []`` with ``{tasks}`` loads (``_task_selection``
   asks ``tasks is not None``, not whether anything is selected); the runner fills ``--tasks
   ""``, which the reference Hermes refuses (exit 2: every honest run's Hermes FAILED); ADR
   0040 says a placeholder with nothing selected is refused at load. Fixed: a selection of
   no task is refused at load, and so is a task selected twice (item 7's last case).
6. HELD: Hermes's start moved to the start of reliability's window (equal starts, different
   harnesses, neither foreign) is a finding.
7. HELD: a pin set selecting every task in an order other than the manifest's: the honest run
   (the reference Hermes runs them in the manifest's order) QUALIFIES under it, and so does the
   example run; a selection naming a task twice verified too, and is now refused at load.
8. HELD: under a selection, a task recorded beyond it is "not a pinned task" (integrity), a
   task recorded twice is a finding, a selected task left out "has no record".
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import time
import tomllib
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import audit.run
from audit._faults import point as fault_point
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, run_qualification
from bundle_schema.errors import InvalidInput
from pins import PinSetSource, pin_set_source
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.decision_kit import (
    DEPLOYMENT_PINS,
    axes,
    built_examples,
    deployment_pins,
    disagreeing,
    dropped,
    edits,
    forged,
    report_of,
    result_edit,
)
from verify import verify_bundle

NOT_QUALIFIED, QUALIFIED = "gx10-full-not-qualified", "gx10-full-qualified"
CODING, RELIABILITY, HERMES, TASKS = (
    "components/coding/result.json", "components/reliability/result.json",
    "components/hermes/result.json", "components/hermes/tasks.jsonl",
)  # fmt: skip
SPARK_RECORDS = ("components/coding/spark-quality.json", "components/reliability/spark-repeat.json")
ONE_AT_A_TIME = "the runner runs one harness at a time"
SPARK_STOP, HERMES_STOP = "sparkbench wall limit exceeded", "hermesbench wall limit exceeded"
PASSED = ("QUALIFIED", "VALID", "MEETS_PROFILE", True)
MANIFEST_ORDER = ["fix-date-parser", "add-retry-policy"]


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    return built_examples(tmp_path_factory.mktemp("examples"), deployment, (NOT_QUALIFIED,))


def _stopped(bundle: Path, pins: PinSetSource, component: str) -> tuple[list[str], str | None]:
    """The findings on ``component``'s result, and what ``audit show`` says stopped it."""
    report = report_of(bundle, pins)
    item = next(i for i in report.timeline if i.kind == "component" and i.name == component)
    return disagreeing(report.verdict, f"components/{component}/result.json"), (
        item.timed_out.explanation if item.timed_out else None
    )


def _windows(bundle: Path) -> dict[str, tuple[str | None, str | None]]:
    _, files = read_bundle(bundle)
    return {
        name.split("/")[1]: (result["started_at"], result["ended_at"])
        for name, (data, _) in files.items()
        if name.endswith("/result.json") and (result := json.loads(data))
    }


# --- 1-3, 6. component windows (d6246f5) ----------------------------------------------------


def test_the_first_harness_moved_back_before_the_run_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    source = examples[NOT_QUALIFIED]
    windows = _windows(source)
    assert min(windows.values()) == windows["coding"] == ("2026-11-02T10:00:02Z",
                                                          "2026-11-02T10:59:40Z")  # fmt: skip
    moved = {"started_at": "2026-11-02T09:59:40Z", "ended_at": "2026-11-02T10:59:40Z"}  # 3600 s
    edit = edits(
        dropped(*SPARK_RECORDS),
        result_edit(CODING, status="FAILED", reason=SPARK_STOP, metrics={}, **moved),
        result_edit(RELIABILITY, status="FAILED", reason=SPARK_STOP, metrics={}, **moved),
    )
    findings, stopped = _stopped(forged(source, tmp_path / "b", deployment, edit), deployment,
                                 "coding")  # fmt: skip
    assert findings or stopped is None, stopped


def test_a_start_moved_into_a_window_of_the_same_upstream_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    source = examples[NOT_QUALIFIED]
    assert _windows(source)["coding"] == ("2026-11-02T10:00:02Z", "2026-11-02T10:59:40Z")
    edit = edits(
        dropped(SPARK_RECORDS[1]),
        result_edit(RELIABILITY, status="FAILED", reason=SPARK_STOP, metrics={},
                started_at="2026-11-02T10:02:40Z"),  # inside coding's window: another start
    )  # fmt: skip
    findings, stopped = _stopped(forged(source, tmp_path / "b", deployment, edit), deployment,
                                 "reliability")  # fmt: skip
    assert findings or stopped is None, stopped


@pytest.mark.parametrize(
    "unread",
    [
        pytest.param(("2026-11-02T10:41:60Z", "2026-11-02T10:41:60Z"), id="second-60"),
        pytest.param((None, None), id="null"),
    ],
)
def test_another_window_unread_still_holds_a_start_moved_back(
    examples: dict[str, Path],
    deployment: PinSetSource,
    tmp_path: Path,
    unread: tuple[str | None, str | None],
) -> None:
    source = examples[NOT_QUALIFIED]
    moved = "2026-11-02T10:28:57Z"  # 3600 s before Hermes's end: inside SparkBench's run
    edit = edits(
        dropped(TASKS),
        result_edit(HERMES, status="FAILED", reason=HERMES_STOP, metrics={}, started_at=moved),
        result_edit(CODING, ended_at=unread[0]),
        result_edit(RELIABILITY, started_at=unread[1]),
    )
    bundle = forged(source, tmp_path / "b", deployment, edit)
    verdict = verify_bundle(bundle, pins=deployment).verdict
    findings, stopped = _stopped(bundle, deployment, "hermes")
    anywhere = [f.message for f in verdict.integrity.findings]
    assert findings or stopped is None or anywhere, stopped


def test_an_equal_start_of_another_harness_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    source = examples[NOT_QUALIFIED]
    assert _windows(source)["reliability"][0] == "2026-11-02T10:00:02Z"
    edit = result_edit(HERMES, started_at="2026-11-02T10:00:02Z")
    verdict = verify_bundle(forged(source, tmp_path / "b", deployment, edit), pins=deployment)
    found = [f.message for f in verdict.verdict.integrity.findings if ONE_AT_A_TIME in f.message]
    assert found, verdict.verdict.integrity.findings


# --- 4. an honest run under a wall clock stepped back ---------------------------------------

_SLOW_BENCHLOCAL = (
    "import runpy, sys, time; time.sleep(4); "
    "sys.argv = ['benchlocal', '--endpoint', '{endpoint}', '--model', '{model}', '--out', "
    "'{out}']; runpy.run_module('benchlocal.run', run_name='__main__')"
)
"""BenchLocal as pinned, after 4 s of loading (an honest harness that takes its time)."""


def _deployment_data(**profile: list[str]) -> dict[str, Any]:
    data = copy.deepcopy(tomllib.loads(DEPLOYMENT_PINS.read_text("utf-8")))
    data["profiles"].update({name: {"components": c} for name, c in profile.items()})
    return data


def test_a_wall_clock_stepped_back_between_harnesses_is_no_finding(
    mirrors: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _deployment_data(two=["tool_instruction", "hermes"])
    data["id"] = "honest-two-harnesses"
    data["harnesses"]["benchlocal"]["command"] = ["{python}", "-c", _SLOW_BENCHLOCAL]
    pins = pin_set_source(data, "two harnesses, one slow")
    step = {"back": 0.0}
    seen: dict[str, float] = {}

    class Clock(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> Any:
            return dt.datetime.now(tz) - dt.timedelta(seconds=step["back"])

    def point(name: str) -> None:
        seen[name] = time.monotonic()
        if name == "harness:hermesbench":  # the clock steps back as Hermes starts (NTP)
            step["back"] = seen[name] - seen["harness:benchlocal"] - 1.0
        fault_point(name)

    monkeypatch.setattr(
        audit.run, "dt", types.SimpleNamespace(datetime=Clock, UTC=dt.UTC, timedelta=dt.timedelta)
    )
    monkeypatch.setattr(audit.run, "point", point)
    out = tmp_path / "bundle"
    with serve() as endpoint:
        run_qualification(
            RunRequest(endpoint=endpoint.url, pins=pins, profile="two", out=out,
                       model_digest=DEMO_DIGEST, mirrors=mirrors,
                       harness_env={"HERMES_HANG": "2"})
        )  # fmt: skip
    assert step["back"] > 3, step  # both harnesses ran longer than the stamps' slack
    verdict = verify_bundle(out, pins=pins).verdict
    found = [f.message for f in verdict.integrity.findings if ONE_AT_A_TIME in f.message]
    assert not found, found


# --- 5, 7, 8. the selected Hermes tasks (848d9f6) -------------------------------------------


def _selecting(tasks: list[str] | None, *, passes: bool = True) -> dict[str, Any]:
    data = _deployment_data(hermes=["hermes"])
    if tasks is not None:
        data["hermes"]["tasks"] = tasks
    if passes:
        data["harnesses"]["hermesbench"]["command"].extend(["--tasks", "{tasks}"])
    return data


def test_a_selection_of_no_task_is_refused_at_load() -> None:
    with pytest.raises(InvalidInput, match="selects no task"):
        pin_set_source(_selecting([]), "selects none")


def test_an_honest_selection_in_another_order_than_the_manifest_qualifies(
    mirrors: dict[str, Path], tmp_path: Path
) -> None:
    data = _selecting(MANIFEST_ORDER[::-1])
    data["id"] = "honest-hermes-reversed"
    pins = pin_set_source(data, "every task, the manifest's order reversed")
    out = tmp_path / "bundle"
    with serve() as endpoint:
        run_qualification(
            RunRequest(endpoint=endpoint.url, pins=pins, profile="hermes", out=out,
                       model_digest=DEMO_DIGEST, mirrors=mirrors)
        )  # fmt: skip
    _, files = read_bundle(out)
    assert [t["task"] for t in lines(files, TASKS)] == MANIFEST_ORDER  # the harness's order
    verdict = verify_bundle(out, pins=pins).verdict
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert verdict.claims.match, verdict.claims.differences
    assert axes(verdict)[:3] == PASSED[:3], verdict.reasons


def test_the_example_run_verifies_under_a_selection_of_every_task(tmp_path: Path) -> None:
    pins = pin_set_source(_selecting(MANIFEST_ORDER[::-1]), "every task selected")
    built = built_examples(tmp_path, pins, (QUALIFIED,))[QUALIFIED]
    verdict = verify_bundle(built, pins=pins).verdict
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert axes(verdict) == PASSED, verdict.reasons


def _tasks_edit(change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Any:
    """The task records changed alike in the harness's raw output and in the record."""

    def edit(files: Files) -> None:
        raw = "components/hermes/raw/tasks.jsonl"
        records = change(lines(files, TASKS))
        put_lines(files, TASKS, records)
        rows = change(lines(files, raw))
        files[raw] = (b"".join(json.dumps(r).encode() + b"\n" for r in rows),
                      files[raw][1])  # fmt: skip

    return edit


def test_a_selection_naming_a_task_twice_is_refused_at_load() -> None:
    with pytest.raises(InvalidInput, match="selects 'fix-date-parser' twice"):
        pin_set_source(_selecting([MANIFEST_ORDER[0], *MANIFEST_ORDER]), "one twice")


@pytest.mark.parametrize(
    ("selected", "change", "expected"),
    [
        pytest.param([MANIFEST_ORDER[0]], lambda r: r, "task add-retry-policy is not a pinned "
                     "task", id="beyond-the-selection"),
        pytest.param(MANIFEST_ORDER[::-1], lambda r: [*r, r[0]], "is recorded twice",
                     id="twice"),
        pytest.param(MANIFEST_ORDER[::-1], lambda r: r[1:], "pinned task fix-date-parser has "
                     "no record", id="left-out"),
    ],
)  # fmt: skip
def test_tasks_recorded_against_the_selection_are_findings(
    tmp_path: Path,
    selected: list[str],
    change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    expected: str,
) -> None:
    pins = pin_set_source(_selecting(selected), "a selection")
    built = built_examples(tmp_path / "ex", pins, (QUALIFIED,))[QUALIFIED]
    verdict = verify_bundle(forged(built, tmp_path / "b", pins, _tasks_edit(change)), pins=pins)
    assert any(expected in m for m in disagreeing(verdict.verdict, TASKS)), (
        verdict.verdict.integrity.findings
    )
    assert not verdict.verdict.rankable
