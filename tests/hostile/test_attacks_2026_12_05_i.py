"""Hostile tests of 2026-12-05 (i): status laundering. A publisher whose model failed (a
NOT_QUALIFIED / VALID result, the "completed with profile limitations" table) wants it not to
look like the model's fault: an INFRA_ERROR ("the infrastructure broke"), another rank group
or profile, or a forensic answer (``audit show``) that blames the harness. Attacked: the
component result statuses and reasons the runner writes (against the raw outputs kept under
``components/<c>/raw/``), the Hermes task outcomes and times (against their own evaluation and
limits), the harness TIMEOUT reasons (against the component's timings), the run's profile
(which components are selected, the executed weight), its track, and its reasoning policy
(against what every completion request carried).

The starting points are the example runs built by the project's own example builder under the
tests' deployment pin set (tests/data/pins/gx10-deployment-v5.toml: not demo only, so a
qualified run ranks). Every forgery is resealed with claims equal to its own replay
(``tests.gate_kit.resealed_as_replayed``), so integrity holds and the claims match: only the
verifier's own decisions can stop it. Not repeated here: what test_attacks_2026_12_05_h.py
covers (a QUARANTINED status or marker, claims of unknown components, demo-only pins, ``--pins``
resolution, ``digest_source``).

Holes (each test asserts the safe behaviour; the strict expected failures are the holes):

1. A FAILED status beside a record that re-reads cleanly (``verify/_consistency/outputs.py``
   ``_raw_outputs``; ``verify/gx10/decision.py`` ``_axes``): the runner records a harness's
   records only when its reader read the outputs, and then writes COMPLETED (or QUARANTINED
   beside a marker); FAILED beside records happens only when a pinned gate of the component
   failed (``audit/run.py`` ``run``, ``run_gate``). Hermes has no gate in this pin set, yet a
   ``status`` of FAILED ("hermesbench exited 1") over its clean records and raw outputs turns
   the NOT_QUALIFIED run into INFRA_ERROR / INFRA_FAILURE, executed weight 70, no finding.
2. PARTIAL and NOT_RUN (``verify/gx10/decision.py`` ``_axes``): the runner never writes either
   (``audit/run.py`` writes COMPLETED, QUARANTINED and FAILED only; a component it did not run
   is FAILED "not run"). Either status over a complete Hermes record (every pinned task
   recorded, which ``_hermes`` itself checks) and its raw outputs makes the run INCOMPLETE; the
   forensic part is ``incomplete``.
3. A wall-limit stop the timings do not support (``verify/_consistency/times.py`` ``_times``;
   ``verify/forensics.py`` ``_component_timed_out``): a FAILED result whose reason is the
   runner's "hermesbench wall limit exceeded" after 1577 s of a 3600 s pinned wall is taken;
   ``_times`` bounds a component's time only from above. ``audit show`` explains it as "hung
   agent: ... the sandbox stopped it at its wall limit".
4. A Hermes TIMEOUT within both limits (``verify/_consistency/hermes.py`` ``_task_self``;
   ``verify/gx10/hermes.py`` ``hermes_time_limits``): a task the evaluator failed, relabelled
   TIMEOUT in the harness's raw output and the record, with wall 904 s of 1800 and silence
   58.9 s of 300 and its evaluator cases still there, passes without a finding: the reason
   "evaluator did not pass" becomes "timed out", the disproved completion claim's
   truthfulness 0 becomes null (unmeasured), and ``audit show`` blames a "hung agent". The
   verdict stays NOT_QUALIFIED (held below: a timeout is the model's failure).
5. A HARNESS_ERROR beside a complete evaluation (``verify/_consistency/hermes.py`` ``_task_self``;
   ``verify/gx10/hermes.py`` ``hermes_evidence``): the same task relabelled HARNESS_ERROR, with
   all five kinds of evidence present and trusted and its evaluator cases (one failed) kept,
   makes the run INFRA_ERROR / INFRA_FAILURE, the Hermes score null, and the forensic answer
   "the harness failed; no gate found a failure of the model". ``_task_self`` derives PASS
   from the cases; no outcome is derived for an evaluated task otherwise.
6. The profile (``verify/_consistency/__init__.py`` ``consistency_findings``;
   ``verify/gx10/decision.py`` ``replay`` judges only ``run.selected``): the failed full run's
   manifest relabelled ``smoke`` is QUALIFIED / VALID / MEETS_PROFILE (``--require qualified``
   holds): the results, records and raw outputs of the three components the smoke profile does not
   select (the runner writes results only for selected components) are never looked at. (With Hermes
   exchanges in the log, as a real run has, ``transport_evidence`` fails instead as an orphaned
   exchange: INFRA_ERROR blaming the observer; either way the model's failure is gone.)
7. The reasoning level (``verify/gx10/gates.py`` ``reasoning_serialization``): the gate compares
   only whether the serialization asks for reasoning. A run whose every completion request
   carried ``reasoning_effort = "high"`` (the runner's serialization of effective ``high``,
   ``audit/run.py`` ``default_policy``) relabelled effective ``low`` passes and ranks, its row
   recording the policy ``low``.

Fixed the same day: 1, 2 and 6 by ``verify._consistency._statuses`` (a result only for a
selected component, a record of none other; beside a component's records, never PARTIAL or
NOT_RUN, and FAILED only when a pinned gate of it does not read: ``_a_gate_failed``); 3 by
``_stopped_early`` (a stop at a limit needs the limit's time); 4 and 5 by ``_outcome_problem``
(a TIMEOUT reached a limit and no evaluation; a HARNESS_ERROR left no whole, trusted
evaluation); 7 by ``verify.gx10.gates._serialization_problem`` (a level is asked for by its own
name).

By design (strict expected failures marked DECISION, not holes):

8. The exit status of a harness is the runner's word: it is kept nowhere but in the FAILED
   reason (strace runs with ``-qq``, no exit record), and a harness that exited non-zero after
   writing readable outputs is a FAILED result with raw outputs and no records (ADR 0007: "a
   harness that ... exited non-zero ... is infrastructure"). So a FAILED "exited 1" with the
   Hermes record left out, its raw outputs (which read, and hold the failed evaluation) kept, is
   that, and ``audit show`` says "no gate found a failure of the model". (The other way too:
   a harness that exited non-zero after writing readable outputs, its records added and its
   result made COMPLETED, is a completed harness.) Keeping the exit status and the stderr tail
   the reason quotes checkable (``logs/<upstream>.stderr.txt`` is kept) would narrow this.
9. The track is the operator's ``--track``: the runner sends the same requests on both tracks
   (``default_policy`` depends on the effective policy only), so no evidence tells them apart.
   The failed primary run relabelled ``controlled`` stays NOT_QUALIFIED / VALID (held below)
   but leaves the "completed with profile limitations" table for "listed apart"
   (``verify/ranking.py`` ``_limited``).

Held (kept as guards): under a FAILED status the kept Hermes record still names the model's
failure in the forensic answer ("the model also failed hermes_evaluator"); a TIMEOUT relabel
and a controlled relabel keep NOT_QUALIFIED / VALID; the honest ``high`` run ranks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundle_schema.models import PinSetRef
from pins import PinSetSource
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.decision_kit import (
    FAILED_TASK,
    axes,
    built_examples,
    deployment_pins,
    disagreeing,
    forged,
    json_edit,
    report_of,
    task_edit,
    verdict_of,
)
from tests.paths import DATA
from verify import verify_bundle
from verify.ranking import Ranked, place

DEPLOYMENT_PINS = DATA / "pins" / "gx10-deployment-v5.toml"
QUALIFIED, NOT_QUALIFIED = "gx10-full-qualified", "gx10-full-not-qualified"
RESULT, TASKS, RAW_TASKS = (
    "components/hermes/result.json", "components/hermes/tasks.jsonl",
    "components/hermes/raw/tasks.jsonl",
)  # fmt: skip
HONEST = ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE", False)


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    built = built_examples(root, deployment, (QUALIFIED, NOT_QUALIFIED))
    assert axes(verify_bundle(built[NOT_QUALIFIED], pins=deployment).verdict) == HONEST
    return built


def _status(status: str, reason: str | None, *, record: bool = True) -> Callable[[Files], None]:
    """Hermes's result given ``status`` and ``reason`` (its raw outputs kept); without its
    record when ``record`` is false, as the runner writes a harness it failed (no metrics)."""

    def edit(files: Files) -> None:
        changed: dict[str, Any] = {"status": status, "reason": reason}
        if not record:
            del files[TASKS]
            changed["metrics"] = {}
        json_edit(files, RESULT, lambda d: d.update(changed))

    return edit


# --- 1, 2, 8. component statuses against the raw outputs ------------------------------------------


def test_a_failed_status_over_clean_records_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    edit = _status("FAILED", "hermesbench exited 1: Traceback (most recent call last)")
    verdict = verdict_of(
        forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit), deployment
    )
    assert axes(verdict) == HONEST or disagreeing(verdict, RESULT), verdict.reasons


def test_under_a_failed_status_the_kept_record_still_names_the_model(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: the forged FAILED status is a finding, and the forensic answer names integrity
    first, never the infrastructure of the run (before 1 was fixed it said "the model also
    failed hermes_evaluator": why a forger leaves the record out, 8)."""
    edit = _status("FAILED", "hermesbench exited 1: Traceback (most recent call last)")
    report = report_of(
        forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit), deployment
    )
    assert report.forensic is not None
    assert report.forensic.failed_part == "integrity", report.forensic.summary


@pytest.mark.parametrize("status", ["PARTIAL", "NOT_RUN"])
def test_a_status_the_runner_never_writes_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path, status: str
) -> None:
    edit = _status(status, None)
    verdict = verdict_of(
        forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit), deployment
    )
    assert axes(verdict) == HONEST or disagreeing(verdict, RESULT), verdict.reasons


@pytest.mark.xfail(
    strict=True,
    reason="DECISION (ADR 0007, 'failed runner'): a harness's exit status is the runner's word, "
    "kept only in the FAILED reason (strace -qq records no exit); a FAILED 'exited 1' with raw "
    "outputs and no record is what the runner writes for a harness that exited non-zero after "
    "writing them, so the Hermes record left out (its raw outputs, which hold the failed "
    "evaluation, kept) is INFRA_FAILURE and audit show finds no failure of the model "
    "(verify/_consistency/outputs.py _raw_outputs reads such outputs for a marker only; "
    "verify/forensics.py _forensic)",
)
def test_raw_outputs_that_read_are_not_left_unjudged(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    edit = _status("FAILED", "hermesbench exited 1: Traceback", record=False)
    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit)
    _, files = read_bundle(bundle)
    assert RAW_TASKS in files and b'"outcome": "FAIL"' in files[RAW_TASKS][0]
    report = report_of(bundle, deployment)
    verdict = report.verdict
    assert axes(verdict) == HONEST or disagreeing(verdict, RESULT), (
        report.forensic.summary if report.forensic else verdict.reasons
    )


# --- 3. a harness timeout the timings do not support --------------------------------------------


def test_a_wall_limit_stop_needs_the_wall(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    edit = _status("FAILED", "hermesbench wall limit exceeded", record=False)
    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit)
    report = report_of(bundle, deployment)
    item = next(i for i in report.timeline if i.kind == "component" and i.name == "hermes")
    assert deployment.pins.harnesses["hermesbench"].wall_s == 3600
    claimed = item.timed_out
    assert disagreeing(report.verdict, RESULT) or claimed is None, claimed


# --- 4, 5. Hermes task outcomes against their times and their evaluation ------------------------


def test_a_timeout_within_both_limits_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    bundle = forged(
        examples[NOT_QUALIFIED], tmp_path / "b", deployment, task_edit(outcome="TIMEOUT")
    )
    report = report_of(bundle, deployment)
    metrics = {t.task: t for t in report.verdict.diagnostics.hermes_tasks}[FAILED_TASK]
    assert disagreeing(report.verdict, TASKS) or metrics.truthfulness == 0, (
        metrics,
        [i.timed_out for i in report.timeline if i.name == FAILED_TASK],
    )


def test_a_task_relabelled_timeout_stays_the_models_failure(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: a Hermes TIMEOUT is judged by the time-limit gate, the model's failure (seed 000:
    every selected task completes within both limits), never infrastructure; with its
    evaluator cases kept it is a record that disagrees too (4)."""
    bundle = forged(
        examples[NOT_QUALIFIED], tmp_path / "b", deployment, task_edit(outcome="TIMEOUT")
    )
    verdict = verdict_of(bundle, deployment)
    assert next(g for g in verdict.gates if g.id == "hermes_time_limits").status == "fail"
    assert disagreeing(verdict, TASKS), verdict.integrity.findings


def test_a_harness_error_beside_a_complete_evaluation_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    edit = task_edit(outcome="HARNESS_ERROR")
    report = report_of(
        forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit), deployment
    )
    verdict = report.verdict
    assert axes(verdict) == HONEST or disagreeing(verdict, TASKS), (
        report.forensic.summary if report.forensic else verdict.reasons
    )


# --- 6. the profile: which components are selected ----------------------------------------------


def test_a_full_run_relabelled_smoke_keeps_its_failure(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    bundle = forged(
        examples[NOT_QUALIFIED], tmp_path / "b", deployment, fields={"profile": "smoke"}
    )
    manifest, _ = read_bundle(bundle)
    assert {c.name for c in manifest.components} > {"coding", "performance"}  # five recorded
    verdict = verdict_of(bundle, deployment)
    assert verdict.outcome != "QUALIFIED" and (
        verdict.outcome == "NOT_QUALIFIED" or verdict.integrity.status == "failed"
    ), (axes(verdict), verdict.reasons)


# --- 7. the reasoning level against the requests ------------------------------------------------


def _sent(level: str, effective: str) -> Callable[[Files], None]:
    """Every completion request carrying ``reasoning_effort = level`` (the runner's
    serialization of a level), the run configuration saying ``effective``."""

    def edit(files: Files) -> None:
        exchanges = lines(files, "transport/exchanges.jsonl")
        for exchange in exchanges:
            body = exchange.get("request_body")
            if exchange["method"] != "POST" or not body:
                continue
            request = json.loads(body["data"])
            request.get("chat_template_kwargs", {}).pop("enable_thinking", None)
            if request.get("chat_template_kwargs") == {}:
                del request["chat_template_kwargs"]
            body["data"] = json.dumps(request | {"reasoning_effort": level})
        put_lines(files, "transport/exchanges.jsonl", exchanges)
        policy = {"effective": effective,
                  "serialization": {"path": "reasoning_effort", "value": level}}  # fmt: skip
        json_edit(files, "run/config.json", lambda d: d.update(reasoning_policy=policy))

    return edit


def test_a_level_the_requests_carried_ranks(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held (the baseline of 7): the run with ``high`` sent and said ranks."""
    bundle = forged(examples[QUALIFIED], tmp_path / "b", deployment, _sent("high", "high"))
    verdict = verdict_of(bundle, deployment)
    assert axes(verdict) == ("QUALIFIED", "VALID", "MEETS_PROFILE", True), verdict.reasons


def test_a_level_other_than_the_requests_carried_is_caught(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    bundle = forged(examples[QUALIFIED], tmp_path / "b", deployment, _sent("high", "low"))
    verdict = verdict_of(bundle, deployment)
    gate = next(g for g in verdict.gates if g.id == "reasoning_serialization")
    assert gate.status != "pass" and not verdict.rankable, gate.reason


# --- 9. the track -------------------------------------------------------------------------------


def _controlled(files: Files) -> None:
    json_edit(files, "run/config.json", lambda d: d.update(track="controlled"))


def test_a_track_relabel_keeps_the_models_failure(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: the track moves no decision; a controlled group is given only to a run that
    would otherwise qualify."""
    verdict = verdict_of(
        forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, _controlled), deployment
    )
    assert axes(verdict) == HONEST and verdict.rank_group is None


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: the track is the operator's --track; the runner sends the same requests "
    "on both tracks (audit/run.py default_policy reads the effective policy only), so a failed "
    "primary run relabelled controlled leaves the 'completed with profile limitations' table "
    "for 'listed apart' (verify/ranking.py _limited)",
)
def test_a_failed_primary_run_stays_in_the_limitations_table(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    ref = PinSetRef(id=deployment.id, digest=deployment.digest)
    done = verify_bundle(examples[NOT_QUALIFIED], pins=deployment, keep_evidence=True)
    assert done.evidence is not None
    assert place(Ranked("honest", done.verdict, done.evidence), ref)[0] == "limitations"
    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, _controlled)
    relabelled = verify_bundle(bundle, pins=deployment, keep_evidence=True)
    assert relabelled.evidence is not None
    table, _, row = place(Ranked("forged", relabelled.verdict, relabelled.evidence), ref)
    assert table == "limitations", (table, row.reasons)
