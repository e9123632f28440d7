"""Hostile tests of 2026-12-05 (l): a bundle judged by another pin set than it was recorded
under, and "foreign" harnesses (docs/adr/0036-judged-by-another-pin-set.md).

``verify/_consistency/harnesses.py`` ``foreign_harnesses`` (over ``checkout_problem`` and
``needed_upstreams``) names the harnesses a bundle holds no checkout of as the judging pin set
pins them; when a harness the profile needs is among them, every check that holds a pin
against a harness (``_raw_outputs``, ``_gate_outputs``, ``_times``' wall, ``_environments``,
``_data_listings``, ``_hermes``' task set, ``_spark_weights``) leaves it alone,
``unread_raw_outputs`` lists its outputs as unread, the ``upstream_checkout`` gate fails as
infrastructure, and ``verify.gx10.scores.under_pins`` / ``unscored`` keep its records out of
the scores, the decision and the diagnostics. The publisher controls every byte and reseals
(``tests.decision_kit.forged``: claims equal to the forgery's own replay, so integrity holds and
the claims match: only the verifier's decisions can stop it). The starting points are the
example runs (the demo's, under gx10-reference-v5, and the same runs recorded under the tests'
deployment pin set, tests/data/pins/gx10-deployment-v5.toml) and the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar, the real harnesses of gx10-qualification-v5).

Attacked: making a needed harness look foreign (a fork's repository, a freshly minted commit
object at another commit, the checkout dropped) to have a forged record left unchecked; a
foreign harness beside a forged record of a harness that is as pinned; a foreign *gate*
harness; a harness that counts as pinned although its checkout evidence names another commit
(the manifest's ``tree`` left out); a run judged by a pin set that does not define its
profile; Hermes, which gx10-qualification-v5 pins no harness for; the gates, the forensic
answer and the diagnostics of a foreign harness's forged records; ``audit rank --pins`` over
copies of a run that name different pin sets; ``audit verify`` (bounded), ``audit verify
--evidence-out`` (full) and ``audit score gx10`` on the same foreign bundle.

Held (kept as guards below):

- Honest: the recorded real bundle judged by gx10-reference-v5, gx10-deployment-v5 and
  gx10-qualification-v4, every demo example judged by gx10-deployment-v5, and the
  deployment-recorded examples judged by gx10-reference-v5: integrity ok, no finding,
  INFRA_ERROR / INFRA_FAILURE, no score replayed from another harness's records, the other
  harness's raw outputs listed as unread, diagnostics without its figures.
- Whenever ``foreign_harnesses`` is not empty the ``upstream_checkout`` gate is ``infra``:
  none of the forgeries (fork, minted commit, dropped checkout, most with a forged record
  beside it) is QUALIFIED or rankable, and each foreign component is unscored (null).
- A foreign harness switches off no other harness's checks: beside a forked Infermark a forged
  Spark Bench record is still ``record_disagrees``; beside a foreign (never checked out) gate
  harness a forged BenchLocal record is too.
- Hermes' own self-consistency (``_task_self``: a PASS with a failed case) still holds for a
  foreign Hermes record.
- ``audit rank --pins``: a copy naming another pin set never displaces a *ranked* run (it is
  not rankable under the ranking's pins).
- ``audit rejudge --pins gx10-deployment-v5`` of the demo smoke run: changed, intact both
  times, the first new reason naming every harness that differs.
- Bounded and full verification print the same verdict bytes for a foreign bundle, and
  ``audit score gx10`` of its evidence replays the same gates, scores and reasons.

Holes and false findings (each test asserts the safe behaviour; strict expected failures):

1. HOLE: the gates read a foreign harness's records whole (``verify/gx10/decision.py`` ``replay``,
   ``judged = tuple(gate.judge(run) ...)`` over ``run``, not ``pinned``; ADR 0036 point 4 "The
   gates read the whole evidence"), and ``audit show``'s forensic answer reads the gates
   (``verify/forensics.py`` ``_forensic``). A NOT_QUALIFIED run (Hermes evaluator failed one task)
   whose hermesbench checkout is recorded as a fork's and whose Hermes record (only the
   record: the raw output still says FAIL) says the task passed is INFRA_ERROR with integrity
   ok and matching claims, ``hermes_evaluator`` *pass*, and the forensic answer "no gate found
   a failure of the model"; without the forged record the same fork says "the model also
   failed hermes_evaluator". Under its own pins that record is ``record_disagrees``; judged
   as foreign it changes the verdict's gates and hides the model's failure (and the timeline
   of ``audit show`` lists the task as PASS). Fix: judge the gates on ``under_pins`` evidence
   too (a gate whose records are all a foreign harness's says so, e.g. ``not_selected`` "its
   records are another harness's outputs"), so that a foreign harness's records change no
   byte of the verdict; or keep re-reading a foreign harness's records against its raw
   outputs with the reader of the pin set the bundle names.
2. HOLE: a manifest upstream whose ``tree`` is null has its checkout evidence never checked
   (``verify/_consistency/checkouts.py`` ``_checkouts``, ``if upstream.tree is None: continue``):
   the three files are required present (there too) but the listing, the state record and the commit
   object are not compared with anything, and ``checkout_problem``
   (``verify/_consistency/harnesses.py``) counts the harness as pinned on the manifest's word. The
   deployment's qualified run whose sparkbench ``checkout.json`` names a fork at another commit and
   whose ``commit.txt`` is not a commit object is QUALIFIED and rankable with ``upstream_checkout``
   "at their pinned commits". Fix: check the listing at its default place
   (``upstreams/<name>/tree.txt``) when ``tree`` is null, or make a null ``tree`` a
   ``checkout_mismatch`` ("not recorded whole") / a ``checkout_problem`` ("no listing recorded"), so
   that only a checkout the evidence shows counts as pinned.
3. FALSE FINDING: an honest run of a profile the judging pin set does not define (recorded
   under a deployment's pin set with a ``quick`` profile, judged by gx10-deployment-v5, whose
   harnesses are the same) fails integrity: ``profile_components`` is empty, so
   ``needed_upstreams`` is empty and ``foreign_harnesses`` returns nothing
   (``verify/_consistency/harnesses.py``), and ``_statuses`` makes every result "a result of
   coding, which profile quick does not select" (``verify/_consistency/outputs.py``); judged by
   gx10-qualification-v5 the three findings ADR 0036 removed come back too (raw outputs do
   not read, no raw output, no environment record). The decision already says "profile
   'quick' is not defined by pin set ..." as INFRA_ERROR. Fix: when the judging pin set does
   not define the run's profile, make no finding of what depends on the profile (the
   unselected-result check) and treat every harness the bundle holds no checkout of as
   pinned as foreign (``foreign_harnesses`` with ``selected`` empty: every problem).
4. HOLE: ``audit rank --pins P`` places one of a run's copies by ``_standing``
   (``verify/judging.py``: rankable and passing, then passing), which does not ask
   whether the copy is recorded under P. A NOT_QUALIFIED run (the "completed with profile
   limitations" table) is copied, its manifest naming gx10-reference-v5, dated a second
   earlier, claims equal to its replay: both pass their checks, the earlier copy is kept and
   listed apart ("recorded under gx10-reference-v5 ..., judged under ..."), and the run
   leaves the limitations table as "a copy of" it. (The same with any copy judged by P into
   another table: another runtime model name, say.) Fix: order copies by the table
   ``verify.ranking.place`` would put them in (ranked, then controlled / limitations, then
   apart), e.g. ``_standing`` 1 only for a copy recorded and judged under the ranking's pin
   set (``Facts.recorded_pin_set == Facts.pin_set``), 2 for other passing copies, 3 for the
   rest.
5. HOLE (minor): a component the judging pin set pins no harness for (Hermes under
   gx10-qualification-v5) is unscored (ADR 0036 point 4), but its records stay in the
   evidence the diagnostics read (``verify/gx10/scores.py``: ``under_pins`` drops only
   the components of a foreign harness; ``diagnostics`` lists them): a Hermes
   record no reader re-read, forged to pass the failed task, is shown in the verdict's
   ``diagnostics.hermes_tasks`` as passing, with no finding. Fix: drop, in ``under_pins``,
   the records of every component the pin set maps to no harness (as ``unscored`` does).

Fixed the same day: 1 and 5 by ``under_pins`` (the gates judge it too, and it leaves out the
records and markers of a component the pin set names no harness for), 2 by reading a
checkout's listing at its default place where the manifest names none, 3 by leaving the
unselected-result check out, and counting every harness not as pinned foreign, under a pin set
that does not define the run's profile (INFRA_ERROR: it cannot judge it), 4 by ``_standing``
(copies that pass their checks by the table the pin set places them in: ranked, limitations,
controlled, apart).

Run time: 11-18 s here (module-scoped runs; the demo examples are the session's).
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.demo.examples import EXAMPLES_DIR, ExampleRun, build_example
from bundle_schema.models import Manifest, UpstreamCheckout, Verdict
from pins import PinSetSource, load_builtin, pin_set_source
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.decision_kit import (
    DEPLOYMENT_PINS,
    FAILED_TASK,
    HERMES_TASKS,
    axes,
    built_example,
    deployment_pins,
    forged,
    json_edit,
    report_of,
)
from tests.gate_kit import RECORDED_TAR
from verify import verify_bundle
from verify._consistency import foreign_harnesses, profile_components

REAL = load_builtin("gx10-qualification-v5")
REFERENCE = load_builtin("gx10-reference-v5")
QUALIFIED, NOT_QUALIFIED, SMOKE = "gx10-full-qualified", "gx10-full-not-qualified", "gx10-smoke"
SPARK_QUALITY = "components/coding/spark-quality.json"
PACKS = "components/tool_instruction/benchlocal-packs.json"
FORK = "https://example.invalid/fork/"
Edit = Callable[[Files], None]


# --- fixtures: the runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    """The qualified (claiming rankable) and the not-qualified example runs recorded under the
    tests' deployment pin set: what a real deployment's runs look like."""
    root = tmp_path_factory.mktemp("deployed")
    return {
        QUALIFIED: built_example(QUALIFIED, root, deployment, rankable=True),
        NOT_QUALIFIED: built_example(NOT_QUALIFIED, root, deployment),
    }


def _judged(bundle: Path, pins: PinSetSource | None) -> Verdict:
    return verify_bundle(bundle, pins=pins).verdict


def _codes(verdict: Verdict) -> list[tuple[str, str | None]]:
    return [(f.code, f.entry) for f in verdict.integrity.findings]


def _gate(verdict: Verdict, gate: str) -> tuple[str, str]:
    result = next(g for g in verdict.gates if g.id == gate)
    return result.status, result.reason


# --- forgeries ------------------------------------------------------------------------------------


def _upstreams(manifest: Manifest, name: str, **update: Any) -> tuple[UpstreamCheckout, ...]:
    """The manifest's upstreams with ``name``'s entry changed (dropped when ``update`` is
    ``{"drop": True}``)."""
    if update.get("drop"):
        return tuple(u for u in manifest.upstreams if u.name != name)
    return tuple(u.model_copy(update=update) if u.name == name else u for u in manifest.upstreams)


def _forked(name: str) -> Edit:
    """``name``'s checkout recorded as a fork's (its state record agrees with the manifest)."""

    def edit(files: Files) -> None:
        json_edit(
            files, f"upstreams/{name}/checkout.json", lambda d: d.update(repository=FORK + name)
        )

    return edit


def _minted_commit(files: Files, name: str) -> str:
    """A commit object of ``name``'s listed tree at a new commit id (any publisher can make
    one: it is a few lines hashed), written with the state record that names it; the id."""
    state = json.loads(files[f"upstreams/{name}/checkout.json"][0])
    data = (
        f"tree {state['tree']}\nauthor x <x@example.invalid> 0 +0000\n"
        "committer x <x@example.invalid> 0 +0000\n\nanother harness\n"
    ).encode()
    commit = hashlib.sha1(b"commit %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    files[f"upstreams/{name}/commit.txt"] = (data, files[f"upstreams/{name}/commit.txt"][1])
    json_edit(files, f"upstreams/{name}/checkout.json", lambda d: d.update(commit=commit))
    return commit


def _dropped(name: str) -> Edit:
    def edit(files: Files) -> None:
        for entry in [n for n in files if n.startswith(f"upstreams/{name}/")]:
            del files[entry]

    return edit


def _spark_quality(score: float) -> Edit:
    """The Spark Bench record says ``score`` (its raw outputs do not)."""

    def edit(files: Files) -> None:
        json_edit(files, SPARK_QUALITY, lambda d: d.update(code_domain_quality=score))

    return edit


def _task_passed(files: Files) -> None:
    """The Hermes record (not its raw output) says the failed task passed, every case with it
    (so that the record is consistent with itself)."""
    records = lines(files, HERMES_TASKS)
    for record in records:
        if record["task"] == FAILED_TASK:
            record["outcome"] = "PASS"
            for case in record["cases"]:
                case["passed"] = True
    put_lines(files, HERMES_TASKS, records)


def _packs(files: Files) -> None:
    """The BenchLocal record's packs all at 100 (its raw output says otherwise)."""
    json_edit(files, PACKS, lambda d: d.update(packs=dict.fromkeys(d["packs"], 100)))


def _all(*edits: Edit) -> Edit:
    def edit(files: Files) -> None:
        for one in edits:
            one(files)

    return edit


@pytest.fixture(scope="module")
def foreign_runs(
    tmp_path_factory: pytest.TempPathFactory, deployed: dict[str, Path], deployment: PinSetSource
) -> dict[str, Path]:
    """The deployment's NOT_QUALIFIED run with a needed harness made to look foreign, most with
    a forged record of it beside, each resealed with claims equal to its replay."""
    root = tmp_path_factory.mktemp("foreign")
    source = deployed[NOT_QUALIFIED]
    manifest, files = read_bundle(source)
    minted = dict(files)
    commit = _minted_commit(minted, "sparkbench")
    return {
        "spark forked, record forged": forged(
            source, root / "spark-forked", deployment,
            _all(_forked("sparkbench"), _spark_quality(99.0)),
            {"upstreams": _upstreams(manifest, "sparkbench", repository=FORK + "sparkbench")},
        ),
        "spark at a minted commit, record forged": forged(
            source, root / "spark-minted", deployment,
            _all(lambda f: f.update(minted), _spark_quality(99.0)),
            {"upstreams": _upstreams(manifest, "sparkbench", commit=commit)},
        ),
        "spark dropped, record forged": forged(
            source, root / "spark-dropped", deployment,
            _all(_dropped("sparkbench"), _spark_quality(99.0)),
            {"upstreams": _upstreams(manifest, "sparkbench", drop=True)},
        ),
        "hermes forked": forged(
            source, root / "hermes-forked", deployment, _forked("hermesbench"),
            {"upstreams": _upstreams(manifest, "hermesbench", repository=FORK + "hermesbench")},
        ),
        "hermes forked, record forged": forged(
            source, root / "hermes-forged", deployment, _all(_forked("hermesbench"), _task_passed),
            {"upstreams": _upstreams(manifest, "hermesbench", repository=FORK + "hermesbench")},
        ),
    }  # fmt: skip


# --- honest runs judged by another pin set ---------------------------------------------------


@pytest.mark.parametrize("judge", ["gx10-reference-v5", "deployment", "gx10-qualification-v4"])
def test_the_recorded_real_run_judged_by_another_pin_set_is_intact(
    judge: str, deployment: PinSetSource
) -> None:
    """Held: the real harnesses' bundle judged by pins of other harnesses: no finding, an
    infrastructure failure, nothing replayed, the other harnesses' outputs listed unread."""
    pins = deployment if judge == "deployment" else load_builtin(judge)
    verdict = _judged(RECORDED_TAR, pins)
    assert verdict.integrity.status == "ok" and _codes(verdict) == []
    assert axes(verdict) == ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED", False)
    assert _gate(verdict, "upstream_checkout")[0] == "infra"
    assert verdict.scores.executed_weight == 0 and verdict.scores.aggregate is None
    assert (verdict.diagnostics.tier2, verdict.diagnostics.requests) == (None, None)
    for raw in (
        "components/coding/raw/spark_bench.csv",
        "components/performance/raw/infermark.json",
    ):
        assert raw in verdict.unread


@pytest.mark.parametrize(
    "example",
    ["gx10-full-infra-error", NOT_QUALIFIED, QUALIFIED, SMOKE, "gx10-spark-quarantined"],
)
def test_a_demo_run_judged_by_a_deployments_pins_is_intact_and_infrastructure(
    built_examples: dict[str, Path], deployment: PinSetSource, example: str
) -> None:
    """Held: the demo's runs (gx10-reference-v5) judged by gx10-deployment-v5 (the same
    commits at other repositories): ADR 0036's verdict, without a false finding."""
    verdict = _judged(built_examples[example], deployment)
    assert verdict.integrity.status == "ok" and _codes(verdict) == []
    assert axes(verdict) == ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED", False)
    status, reason = _gate(verdict, "upstream_checkout")
    assert status == "infra" and "sparkbench " in reason
    assert verdict.scores.executed_weight == 0
    diagnostics = verdict.diagnostics
    assert diagnostics.hermes_tasks == () and diagnostics.quarantine is None
    assert diagnostics.tier2 is None and diagnostics.requests is None


@pytest.mark.parametrize("example", [QUALIFIED, NOT_QUALIFIED])
def test_a_deployments_run_judged_by_the_demo_pins_is_intact(
    deployed: dict[str, Path], example: str
) -> None:
    """Held, the other way: recorded under gx10-deployment-v5, judged by gx10-reference-v5."""
    verdict = _judged(deployed[example], REFERENCE)
    assert verdict.integrity.status == "ok" and _codes(verdict) == []
    assert axes(verdict) == ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED", False)
    assert any(
        r.startswith("hermes not scored: hermesbench is at https://") for r in verdict.reasons
    )


# --- a harness made to look foreign ---------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        "spark forked, record forged",
        "spark at a minted commit, record forged",
        "spark dropped, record forged",
        "hermes forked",
        "hermes forked, record forged",
    ],
)
def test_a_harness_made_foreign_never_makes_a_run_better(
    foreign_runs: dict[str, Path], deployment: PinSetSource, case: str
) -> None:
    """Held: whenever a needed harness is foreign, ``upstream_checkout`` fails as
    infrastructure, nothing of the foreign harness is scored, and a forged record beside it
    buys neither QUALIFIED nor rankable (the run was NOT_QUALIFIED)."""
    done = verify_bundle(foreign_runs[case], pins=deployment, keep_evidence=True)
    verdict, evidence = done.verdict, done.evidence
    assert evidence is not None
    foreign = foreign_harnesses(evidence, deployment, profile_components(deployment, evidence))
    assert foreign, case
    assert verdict.integrity.status == "ok" and verdict.claims.match
    assert axes(verdict) == ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED", False)
    assert _gate(verdict, "upstream_checkout")[0] == "infra"
    upstreams = deployment.pins.component_upstreams
    for component, upstream in upstreams.items():
        if upstream in foreign:
            assert getattr(verdict.scores, component) is None, component
    assert verdict.scores.coding != 99.0


def test_a_foreign_hermes_record_is_still_held_to_itself(
    deployed: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: a PASS with a failed evaluator case is a finding for a foreign Hermes too."""
    manifest, _ = read_bundle(deployed[NOT_QUALIFIED])

    def lie(files: Files) -> None:
        _forked("hermesbench")(files)
        records = lines(files, HERMES_TASKS)
        for record in records:
            if record["task"] == FAILED_TASK:
                record["outcome"] = "PASS"
        put_lines(files, HERMES_TASKS, records)

    bundle = forged(deployed[NOT_QUALIFIED], tmp_path / "b", deployment, lie,
                    {"upstreams": _upstreams(manifest, "hermesbench",
                                             repository=FORK + "hermesbench")})  # fmt: skip
    verdict = _judged(bundle, deployment)
    assert _codes(verdict) == [("record_disagrees", HERMES_TASKS)]


def test_a_foreign_harness_switches_off_no_other_harnesss_checks(
    deployed: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: Infermark forked (so foreign), Spark Bench as pinned with a forged record: the
    forged record is still re-read and still a finding."""
    manifest, _ = read_bundle(deployed[QUALIFIED])
    bundle = forged(
        deployed[QUALIFIED], tmp_path / "b", deployment,
        _all(_forked("infermark"), _spark_quality(99.0)),
        {"upstreams": _upstreams(manifest, "infermark", repository=FORK + "infermark")},
    )  # fmt: skip
    verdict = _judged(bundle, deployment)
    assert ("record_disagrees", SPARK_QUALITY) in _codes(verdict)
    assert axes(verdict)[0] == "INFRA_ERROR" and not verdict.rankable


def test_a_foreign_gate_harness_switches_off_no_main_harnesss_checks(
    deployed: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: a pin set that gates tool_instruction with bfcl, a run that never checked bfcl out
    (so bfcl is foreign and needed) and a forged BenchLocal record: still a finding, and the
    gate's failure is infrastructure naming bfcl."""
    data = copy.deepcopy(dict(deployment.data))
    data["id"] = "gx10-deployment-v5-gated"
    data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}
    data["upstreams"]["bfcl"] = dict(REAL.data["upstreams"]["bfcl"])
    data["harnesses"]["bfcl"] = dict(REAL.data["harnesses"]["bfcl"])
    gated = pin_set_source(data, "gated deployment pins")
    honest = _judged(deployed[QUALIFIED], gated)
    assert honest.integrity.status == "ok" and _codes(honest) == []
    assert _gate(honest, "upstream_checkout") == ("infra", "bfcl was not checked out")
    bundle = forged(deployed[QUALIFIED], tmp_path / "b", gated, _packs)
    verdict = _judged(bundle, gated)
    assert ("record_disagrees", PACKS) in _codes(verdict)
    assert not verdict.rankable


# --- 1. the gates and the forensic answer read a foreign harness's forged records ----------------


def test_a_foreign_harnesss_forged_record_changes_no_gate_and_no_forensic_answer(
    foreign_runs: dict[str, Path], deployment: PinSetSource
) -> None:
    """The fork alone already makes the NOT_QUALIFIED run INFRA_ERROR (the ADR accepts it);
    a forged record of the foreign harness, no evidence under these pins, must change nothing
    more: not the gates, not what ``audit show`` says of the model."""
    forked = foreign_runs["hermes forked"]
    lying = foreign_runs["hermes forked, record forged"]
    assert [(g.id, g.status) for g in _judged(lying, deployment).gates] == [
        (g.id, g.status) for g in _judged(forked, deployment).gates
    ]
    shown = report_of(lying, deployment).forensic
    honest = report_of(forked, deployment).forensic
    assert shown is not None and honest is not None
    assert shown.summary == honest.summary


# --- 2. a checkout that counts as pinned on the manifest's word ---------------------------------


def test_a_checkout_the_evidence_does_not_show_is_not_the_pinned_one(
    deployed: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    manifest, _ = read_bundle(deployed[QUALIFIED])

    def elsewhere(files: Files) -> None:
        json_edit(files, "upstreams/sparkbench/checkout.json",
                  lambda d: d.update(repository=FORK + "sparkbench", commit="1" * 40))  # fmt: skip
        name = "upstreams/sparkbench/commit.txt"
        files[name] = (b"not a commit object\n", files[name][1])

    bundle = forged(deployed[QUALIFIED], tmp_path / "b", deployment, elsewhere,
                    {"upstreams": _upstreams(manifest, "sparkbench", tree=None)})  # fmt: skip
    verdict = _judged(bundle, deployment)
    assert verdict.outcome != "QUALIFIED" and not verdict.rankable, _gate(
        verdict, "upstream_checkout"
    )


# --- 3. a profile the judging pin set does not define -------------------------------------------


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> Path:
    """The smoke example recorded honestly (the project's example builder) as profile
    ``quick`` under a deployment's pin set that defines it: gx10-deployment-v5 and a profile."""
    data = copy.deepcopy(dict(deployment.data))
    data["id"] = "gx10-deployment-v5-quick"
    data["profiles"]["quick"] = {"components": ["coding", "performance"]}
    quick = pin_set_source(data, "quick pins")
    root = tmp_path_factory.mktemp("quick")
    run = root / "runs" / SMOKE
    shutil.copytree(EXAMPLES_DIR / "runs" / SMOKE, run)
    meta = (run / "run.toml").read_text("utf-8")
    (run / "run.toml").write_text(meta.replace('profile = "smoke"', 'profile = "quick"', 1))
    build_example(ExampleRun(SMOKE, run), root / "bundle", root / "work", pins=quick)
    own = _judged(root / "bundle", quick)
    assert own.integrity.status == "ok" and own.claims.match, own.claims.differences
    assert own.outcome == "QUALIFIED"
    return root / "bundle"


def test_a_run_of_a_profile_the_pins_do_not_define_is_intact(
    quick_run: Path, deployment: PinSetSource
) -> None:
    verdict = _judged(quick_run, deployment)
    assert verdict.integrity.status == "ok", _codes(verdict)
    assert axes(verdict) == ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED", False)
    assert "profile 'quick' is not defined by pin set gx10-deployment-v5" in verdict.reasons


# --- 4. audit rank --pins over copies naming different pin sets ---------------------------------


@pytest.fixture(scope="module")
def copied_ranking(
    tmp_path_factory: pytest.TempPathFactory, deployed: dict[str, Path], deployment: PinSetSource
) -> dict[str, Any]:
    """``audit rank --pins gx10-deployment-v5 --json`` over the deployment's qualified and
    not-qualified runs, each beside a copy (the same evidence) whose manifest names
    gx10-reference-v5, dated a second earlier, claims equal to its replay."""
    archive = tmp_path_factory.mktemp("archive")
    runs = {}
    for name, bundle in deployed.items():
        manifest, _ = read_bundle(bundle)
        runs[name] = manifest.run_id
        shutil.copytree(bundle, archive / name)
        earlier = dt.datetime.fromisoformat(manifest.created_at) - dt.timedelta(seconds=1)
        forged(bundle, archive / f"{name}-copy", deployment, fields={
            "pin_set": {"id": REFERENCE.id, "digest": REFERENCE.digest},
            "created_at": earlier.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "run_id": f"{manifest.run_id}-copy",
        })  # fmt: skip
    return {"archive": archive, "runs": runs}


def _ranking(archive: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> dict[str, Any]:
    capsysbinary.readouterr()
    assert main(["rank", str(archive), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 0
    ranking: dict[str, Any] = json.loads(capsysbinary.readouterr().out)
    return ranking


def test_a_copy_naming_another_pin_set_does_not_displace_a_ranked_run(
    copied_ranking: dict[str, Any], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Held: judged by the ranking's pins, the copy naming other pins is not rankable, so the
    ranked run is the copy kept."""
    ranking = _ranking(copied_ranking["archive"], capsysbinary)
    assert [r["run_id"] for r in ranking["ranked"]] == [copied_ranking["runs"][QUALIFIED]]


def test_a_copy_naming_another_pin_set_does_not_empty_the_limitations_table(
    copied_ranking: dict[str, Any], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    ranking = _ranking(copied_ranking["archive"], capsysbinary)
    assert [r["run_id"] for r in ranking["limitations"]] == [copied_ranking["runs"][NOT_QUALIFIED]]


# --- 5. Hermes under gx10-qualification-v5: unscored, yet in the diagnostics --------------------


def test_hermes_records_no_reader_re_read_are_not_in_the_diagnostics(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    bundle = forged(built_examples[NOT_QUALIFIED], tmp_path / "b", REAL, _task_passed)
    verdict = _judged(bundle, REAL)
    assert _codes(verdict) == [] and verdict.scores.hermes is None
    assert verdict.diagnostics.hermes_tasks == (), [
        (t.task, t.outcome) for t in verdict.diagnostics.hermes_tasks
    ]


# --- bounded, full and `audit score gx10` agree ------------------------------------------------


@pytest.mark.parametrize("case", ["hermes forked, record forged", "demo smoke under the real pins"])
def test_bounded_and_full_verification_agree_on_a_foreign_run(
    case: str,
    foreign_runs: dict[str, Path],
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: ``audit verify`` (bounded), ``audit verify --evidence-out`` (full) print the same
    verdict bytes, and ``audit score gx10`` of the evidence replays the same decisions."""
    if case.startswith("demo"):
        bundle, pins, code = built_examples[SMOKE], REAL.id, 1  # claims differ: not scored
    else:
        bundle, pins, code = foreign_runs[case], str(DEPLOYMENT_PINS), 0
    evidence = tmp_path / "evidence.json"
    printed = []
    capsysbinary.readouterr()
    for extra in ([], ["--evidence-out", str(evidence)]):
        assert main(["verify", str(bundle), "--pins", pins, "--json", *extra]) == code
        printed.append(capsysbinary.readouterr().out)
    assert printed[0] == printed[1]
    verdict = json.loads(printed[0])
    main(["score", "gx10", str(evidence), "--pins", pins, "--json"])
    replay = json.loads(capsysbinary.readouterr().out)
    for field in ("outcome", "result_validity", "profile_decision", "rankable", "scores",
                  "gates", "reasons", "diagnostics"):  # fmt: skip
        assert replay[field] == verdict[field], field


# --- audit rejudge: a harness as pinned under one pin set, foreign under another ----------------


def test_rejudge_says_the_harnesses_differ_without_a_finding(
    built_examples: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: the demo's smoke run, QUALIFIED under the pin set it names, rejudged under
    gx10-deployment-v5 (its harnesses there foreign): listed as changed, intact both times,
    the first new reason naming every harness that differs."""
    archive = tmp_path_factory.mktemp("rejudge")
    shutil.copytree(built_examples[SMOKE], archive / SMOKE)
    capsysbinary.readouterr()
    assert main(["rejudge", str(archive), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 0
    report = json.loads(capsysbinary.readouterr().out)
    assert report["refused"] == [] and len(report["changed"]) == 1
    changed = report["changed"][0]
    assert changed["diff"]["a"]["integrity"] == changed["diff"]["b"]["integrity"] == "ok"
    fields = {d["field"]: (d["a"], d["b"]) for d in changed["diff"]["differences"]}
    assert fields["outcome"] == ("QUALIFIED", "INFRA_ERROR")
    assert fields["scores.coding"] == (78.4, None)
    assert changed["reasons"][0].startswith("upstream_checkout: infermark is at reference://")
    assert "; sparkbench is at reference://" in changed["reasons"][0]
