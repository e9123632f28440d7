"""Hostile tests of 2026-12-05 (j): the checks the verifier gained on 2026-12-05 (h and i),
attacked both ways: a near variant of the forgery each was made for (the publisher controls
every byte and reseals, claims equal to the replay: ``tests.gate_kit.resealed_as_replayed``),
and an honest run each may fail (a false finding makes a real, honest bundle unverifiable).

Attacked: ``verify/_consistency/`` ``_raw_outputs`` / ``_marker`` (a marker read from the
raw outputs when no record is claimed), ``_quarantine_statuses``, ``_statuses`` /
``_a_gate_failed``, ``_stopped_early``, ``_outcome_problem``; ``verify/gx10/gates.py``
``model_identity`` / ``_reporting`` with ``verify/_facts.py`` ``reported_digests`` (bounded
and full verification); ``_serialization_problem``; ``verify/gx10/decision.py`` ``_numbers``
and ``_axes``; ``verify/ranking.py`` ``instant`` / ``_timestamp`` (in memory and spooled).

The honest runs: the example runs built under the tests' deployment pin set (as h and i), and
one real ``audit run`` against the reference endpoint under the demo's pin set with two
harnesses that exit 3 after writing every output (a real harness may exit non-zero, or be
stopped at a limit, after its outputs are written): SparkBench quarantining its run
(``SPARK_QUARANTINE``), and bfcl-eval's reference harness as tool/instruction's gate.

Findings (each test asserts the safe behaviour; the strict expected failures are these):

1. FALSE FINDING: a harness that writes its quarantine marker and exits non-zero (the runner
   records FAILED "sparkbench exited 3", raw outputs kept, no marker record: ``audit/run.py``
   ``_Harnesses.run`` records a marker only for a harness that completed) is a
   ``record_disagrees`` finding ("wrote a quarantine marker that no quarantine record
   carries", ``verify/_consistency/outputs.py`` ``_raw_outputs`` reads unclaimed outputs,
   ``_marker``). The honest bundle fails its integrity check (exit 1). The forgery h 2 closed and
   this honest bundle are the same bytes, so the fix belongs in the runner: record the upstream's
   marker (seed 000: authoritative) whenever the outputs read, whatever the exit status.
2. FALSE FINDING: a gate harness that writes readable outputs and exits non-zero (the runner
   records the component FAILED "its gate bfcl failed: bfcl exited 3" beside its records,
   ``run_gate``) is a finding ("FAILED beside the records ... and no gate of the component
   failed"): ``_a_gate_failed`` counts a gate failed only when its raw outputs do not read.
   The runner writes the gate's tallies record only for a gate that completed: "no tallies
   record at the gate's place" is the signal the runner leaves.
3. HOLE (near h 2): a marker left out is found only when the rest of the raw outputs read
   (``claimed`` guard): the quarantined example with its marker record dropped, its result
   FAILED "did not write repeat.json" and ``raw/repeat.json`` dropped keeps the upstream's
   ``raw/quarantine.json``, readable on its own, and is INFRA_FAILURE, not QUARANTINED.
4. HOLE (near i 1-3): a component the runner measures itself (performance under a pin set with
   no Infermark harness) FAILED "infermark wall limit exceeded", its record dropped and its 20
   exchanges kept: ``_statuses`` skips a component without records, ``_stopped_early`` one
   without a pinned harness; NOT_QUALIFIED becomes INFRA_FAILURE and ``audit show`` says the
   sandbox stopped it. The runner never fails a component it measures itself (no harness, no
   exit status, no limit).
5. HOLE (near i 3): ``_stopped_early`` matches the runner's exact words at the start of the
   reason (``startswith(f"{upstream} {kind} limit exceeded")``); ``verify/forensics.py``
   finds a stop anywhere (``\\b(inactivity|wall) limit exceeded\\b``): "hermesbench: wall limit
   exceeded" after 1577 s of a 3600 s wall is no finding and ``audit show`` says "the sandbox
   stopped it at its wall limit".
6. HOLE (near i 3): a stop at a limit with no readable times (``started_at``/``ended_at`` null,
   or a time the schema takes and ``_stamp`` does not read: second 60) is never checked
   (``took is None``); the runner always records a stopped harness's times.
7. HOLE (near i 3): the component's start is the publisher's word: moved back so that it "ran"
   3600 s, the Hermes window overlaps SparkBench's and BenchLocal's (the runner runs one
   harness at a time), and nothing compares the windows. Fixed: ``_overlaps`` (a window
   moved along with every other, all of them the publisher's, is beyond reach).
8. HOLE (near i 4): a TIMEOUT with its cases dropped and ``wall_s`` null passes
   ``_outcome_problem`` (both times must be recorded for it to compare): truthfulness 0 becomes
   null, ``audit show`` blames a "hung agent".
9. HOLE (near i 5): a HARNESS_ERROR with its cases dropped and all five kinds of evidence
   present and trusted (the evaluator's among them: it ran) passes ``_outcome_problem``
   (``task.cases`` required): NOT_QUALIFIED becomes INFRA_FAILURE.
10. HOLE: an ``endpoint`` digest is found anywhere in any identity reply, not in the runtime
    model's entry: a listing that names another model with that digest (as Ollama's
    ``/api/tags`` lists every local model's) passes ``model_identity`` and ranks.
11. HOLE: another reasoning switch asking for another level is no conflict (``request_facts``
    compares only on/off): every completion request carrying the serialization
    ``reasoning_effort = "low"`` and ``reasoning = {"effort": "high"}`` passes
    ``reasoning_serialization`` under effective ``low`` and ranks.
12. HOLE: a claimed null score of a name that is no component (``component_scores.bfcl =
    null``) is no difference (``_numbers`` yields (null, null)), though the docs say such a
    claim is one.
13. HOLE (minor): ``_timestamp`` keeps microseconds; the digits past them fall to text order,
    where ``Z`` sorts after a digit: ``11:45:00.12345691Z`` is put before ``11:45:00.1234569Z``,
    10 ns earlier (RFC 3339 and the manifest's pattern allow nine digits, Go's RFC3339Nano
    writes them).

Fixed the same day: 1 by the runner (``audit.run._Harnesses._marked``: a harness that failed
after writing a quarantine marker is QUARANTINED with the marker recorded, seed 000's authority);
2 by ``_a_gate_failed`` (a gate without its tallies record failed: its exit is the runner's
word, as a harness's is, ADR 0007); 4, 5 and 6 by ``_stopped_early`` (one matcher with
``audit show``, ``LIMIT_STOP``, anywhere in the reason; the limit of the harness or gate named,
which must be a pinned one; times that must read); 8 and 9 by ``_outcome_problem`` (a TIMEOUT
with its times recorded; a HARNESS_ERROR beside a present, trusted evaluator); 11 by
``request_facts`` (another switch naming another level is a conflict); 12 by the claims
comparison (any claim of no component is a difference); 13 by ``instant`` (the fraction to
nine digits). The next day: 10 by ``reported_digests`` (a digest is a model's when it is in
that model's entry of a listing, or in a reply about that model) and 3 by ``markers_alone`` (a
marker that reads on its own is the upstream's word whatever else its outputs lack, in the
runner and the verifier alike). Left, a strict xfail: 7 (component windows are the publisher's
word, as every time is).

Held (guards): bounded verification (slim exchanges) and ``--evidence-out`` give the same
verdict bytes for an ``endpoint`` digest reported in a base64 identity reply; the spooled and
in-memory rankings are byte-identical over fractions, leap seconds, years 0001 and 9999.
"""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, run_qualification
from bundle_schema import canonical_bytes
from bundle_schema.models import Gx10Scores, PinSetRef, Verdict
from pins import DEMO, PinSetSource, load_builtin, pin_set_source
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle, reseal
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
from tests.gate_kit import BFCL_REF_CATEGORIES, gate_mirror
from tests.paths import DATA
from verify import verify_bundle
from verify.ranking import Entry, Facts, SpooledRanking, rank

DEPLOYMENT_PINS = DATA / "pins" / "gx10-deployment-v5.toml"
QUALIFIED, NOT_QUALIFIED, QUARANTINED = (
    "gx10-full-qualified", "gx10-full-not-qualified", "gx10-spark-quarantined"
)  # fmt: skip
RESULT, TASKS, RAW_TASKS = (
    "components/hermes/result.json", "components/hermes/tasks.jsonl",
    "components/hermes/raw/tasks.jsonl",
)  # fmt: skip
PERFORMANCE = "components/performance/result.json"
HONEST = ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE", False)
EXCHANGES = "transport/exchanges.jsonl"


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    built = built_examples(root, deployment, (QUALIFIED, NOT_QUALIFIED, QUARANTINED))
    assert axes(verify_bundle(built[NOT_QUALIFIED], pins=deployment).verdict) == HONEST
    qualified = verify_bundle(built[QUALIFIED], pins=deployment).verdict
    assert qualified.rankable and qualified.claims.match, qualified.reasons
    assert verify_bundle(built[QUARANTINED], pins=deployment).verdict.result_validity == (
        "QUARANTINED"
    )
    return built


def _gate(verdict: Verdict, gate: str) -> tuple[str, str]:
    found = next(g for g in verdict.gates if g.id == gate)
    return found.status, found.reason


# --- 1, 2. an honest run whose harnesses exit non-zero after writing their outputs --------------

_EXITS_3 = (
    "import atexit, os, runpy, sys; atexit.register(os._exit, 3); "
    "sys.argv = ['harness', '--endpoint', '{endpoint}', '--model', '{model}', '--out', '{out}']; "
)
"""A harness command's start: the harness as pinned, then exit 3 once it has written all."""


@pytest.fixture(scope="module")
def exits_run(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource, Verdict]:
    """An honest ``audit run``: SparkBench quarantines its run and exits 3; bfcl-eval's
    reference harness, tool/instruction's gate, writes readable outputs and exits 3."""
    root = tmp_path_factory.mktemp("exits")
    gated, commit = gate_mirror(root, mirrors, DATA / "bfcl_eval_harness", "bfcl")
    data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["id"] = "gx10-reference-v5-exits"
    data["harnesses"]["sparkbench"] = dict(data["harnesses"]["sparkbench"]) | {
        "command": [
            "{python}",
            "-c",
            _EXITS_3 + "runpy.run_module('spark.run', run_name='__main__')",
        ]
    }
    data["upstreams"]["bfcl"] = {"repository": "reference://bfcl", "commit": commit}
    data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}
    bfcl = _EXITS_3 + "runpy.run_path('bfcl_ref.py', run_name='__main__')"
    data["harnesses"]["bfcl"] = {
        "command": ["{python}", "-c", bfcl, *BFCL_REF_CATEGORIES],  # what it answers
        "outputs": ["score/data_overall.csv"], "parser": "bfcl-eval", "inactivity_s": 120,
        "wall_s": 600,
    }  # fmt: skip
    pins = pin_set_source(data, "pins whose harnesses exit 3")
    out = root / "bundle"
    with serve() as endpoint:
        run_qualification(
            RunRequest(endpoint=endpoint.url, pins=pins, profile="full", out=out,
                       model_digest=DEMO_DIGEST, mirrors=gated,
                       harness_env={"SPARK_QUARANTINE": "golden replay drifted"})
        )  # fmt: skip
    _, files = read_bundle(out)
    results = {
        c: json.loads(files[f"components/{c}/result.json"][0])
        for c in ("coding", "tool_instruction")
    }
    # the upstream's marker is authoritative even after a non-zero exit (audit/run.py _marked)
    assert results["coding"]["status"] == "QUARANTINED", results["coding"]
    assert "components/coding/raw/quarantine.json" in files
    assert "components/coding/quarantine.json" in files
    assert results["tool_instruction"]["status"] == "FAILED", results["tool_instruction"]
    assert results["tool_instruction"]["reason"].startswith("its gate bfcl failed: bfcl exited 3")
    assert "components/tool_instruction/benchlocal-packs.json" in files  # its records, beside
    return out, pins, verify_bundle(out, pins=pins).verdict


def test_an_honest_harness_that_quarantines_and_exits_non_zero_is_no_finding(
    exits_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    _, _, verdict = exits_run
    assert not disagreeing(verdict, "components/coding/raw/quarantine.json"), (
        verdict.integrity.findings
    )


def test_an_honest_gate_that_exits_non_zero_after_writing_is_no_finding(
    exits_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    _, _, verdict = exits_run
    assert not disagreeing(verdict, "components/tool_instruction/result.json"), (
        verdict.integrity.findings
    )
    assert verdict.integrity.status == "ok", verdict.integrity.findings  # the honest bundle
    assert verdict.result_validity == "QUARANTINED", verdict.reasons


# --- 3. a marker left out beside outputs that do not read ---------------------------------------


def test_a_marker_beside_outputs_that_do_not_read_still_quarantines(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    def drop(files: Files) -> None:
        del files["components/coding/quarantine.json"]
        del files["components/coding/raw/repeat.json"]
        for record in ("components/coding/spark-quality.json",
                       "components/reliability/spark-repeat.json"):  # fmt: skip
            files.pop(record, None)
        changed: dict[str, Any] = {"status": "FAILED", "quarantine": None, "metrics": {},
                                   "reason": "sparkbench did not write repeat.json"}  # fmt: skip
        json_edit(files, "components/coding/result.json", lambda d: d.update(
            changed, raw_outputs=[n for n in d["raw_outputs"] if not n.endswith("repeat.json")]
        ))  # fmt: skip

    bundle = forged(examples[QUARANTINED], tmp_path / "b", deployment, drop)
    _, files = read_bundle(bundle)
    assert "components/coding/raw/quarantine.json" in files  # the upstream's marker, kept
    verdict = verdict_of(bundle, deployment)
    assert verdict.result_validity == "QUARANTINED" or any(
        "quarantine" in f.message for f in verdict.integrity.findings
    ), (verdict.result_validity, verdict.reasons)


# --- 4-7. a stop at a limit -----------------------------------------------------------------


def test_a_component_the_runner_measures_cannot_be_failed(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    assert "infermark" not in deployment.pins.harnesses  # the observer measures it

    def failed(files: Files) -> None:
        del files["components/performance/infermark-c1.json"]
        changed = {"status": "FAILED", "reason": "infermark wall limit exceeded",
                   "metrics": {}, "raw_outputs": []}  # fmt: skip
        json_edit(files, PERFORMANCE, lambda d: d.update(changed))

    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, failed)
    assert any(e["component"] == "performance" for e in lines(read_bundle(bundle)[1], EXCHANGES))
    verdict = verdict_of(bundle, deployment)
    assert axes(verdict) == HONEST or disagreeing(verdict, PERFORMANCE), verdict.reasons


def _hermes_stopped(reason: str, **times: str | None) -> Callable[[Files], None]:
    """Hermes FAILED at a limit (``reason``), without its record (as the runner writes a
    harness it stopped), its raw outputs kept, its times changed by ``times``."""

    def edit(files: Files) -> None:
        del files[TASKS]
        json_edit(files, RESULT, lambda d: d.update(status="FAILED", reason=reason, metrics={},
                                                     **times))  # fmt: skip

    return edit


def _timed_out(bundle: Path, pins: PinSetSource) -> tuple[list[str], str | None]:
    """The findings on Hermes's result, and what ``audit show`` says stopped it."""
    report = report_of(bundle, pins)
    item = next(i for i in report.timeline if i.kind == "component" and i.name == "hermes")
    return disagreeing(report.verdict, RESULT), (
        item.timed_out.explanation if item.timed_out else None
    )


@pytest.mark.parametrize(
    "reason",
    ["hermesbench: wall limit exceeded", "sandbox: hermesbench wall limit exceeded"],
)
def test_a_stop_at_a_limit_in_other_words_needs_the_limit(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path, reason: str
) -> None:
    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, _hermes_stopped(reason))
    findings, stopped = _timed_out(bundle, deployment)
    assert findings or stopped is None, stopped


@pytest.mark.parametrize(
    "times",
    [
        pytest.param({"started_at": None, "ended_at": None}, id="null"),
        pytest.param({"started_at": "2026-11-02T11:02:60Z"}, id="second-60"),
    ],
)
def test_a_stop_at_a_limit_without_readable_times_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path, times: dict[str, Any]
) -> None:
    edit = _hermes_stopped("hermesbench wall limit exceeded", **times)
    findings, stopped = _timed_out(forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment,
                                          edit), deployment)  # fmt: skip
    assert findings or stopped is None, stopped


def test_a_stop_at_a_limit_moved_earlier_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    _, files = read_bundle(examples[NOT_QUALIFIED])
    coding = json.loads(files["components/coding/result.json"][0])
    hermes = json.loads(files[RESULT][0])
    assert (hermes["started_at"], hermes["ended_at"]) == ("2026-11-02T11:02:40Z",
                                                         "2026-11-02T11:28:57Z")  # fmt: skip
    moved = "2026-11-02T10:28:57Z"  # 3600 s before its end: inside coding's window
    assert coding["started_at"] < moved < coding["ended_at"]
    edit = _hermes_stopped("hermesbench wall limit exceeded", started_at=moved)
    findings, stopped = _timed_out(forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment,
                                          edit), deployment)  # fmt: skip
    assert findings or stopped is None, stopped


# --- 8, 9. Hermes task outcomes -------------------------------------------------------------


def test_a_timeout_without_its_wall_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    edit = task_edit(outcome="TIMEOUT", cases=[], wall_s=None)
    verdict = verdict_of(forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment, edit),
                       deployment)  # fmt: skip
    metrics = {t.task: t for t in verdict.diagnostics.hermes_tasks}[FAILED_TASK]
    assert disagreeing(verdict, TASKS) or metrics.truthfulness == 0, metrics


def test_a_harness_error_beside_a_trusted_evaluator_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    bundle = forged(examples[NOT_QUALIFIED], tmp_path / "b", deployment,
                    task_edit(outcome="HARNESS_ERROR", cases=[]))  # fmt: skip
    task = next(r for r in lines(read_bundle(bundle)[1], TASKS) if r["task"] == FAILED_TASK)
    assert all(t == {"present": True, "trusted": True} for t in task["evidence"].values())
    verdict = verdict_of(bundle, deployment)
    assert axes(verdict) == HONEST or disagreeing(verdict, TASKS), verdict.reasons


# --- 10. model identity; bounded and full verification alike ----------------------------------


def _listing(
    change: Callable[[dict[str, Any]], None], *, base64_body: bool = False
) -> Callable[[Files], None]:
    """The recorded ``GET /v1/models`` reply changed by ``change`` (kept as base64 if asked)."""

    def edit(files: Files) -> None:
        exchanges = lines(files, EXCHANGES)
        listing = next(e for e in exchanges if e["method"] == "GET" and e["path"] == "/v1/models")
        body = json.loads(listing["response_body"]["data"])
        change(body)
        data = json.dumps(body)
        listing["response_body"] = (
            {"encoding": "base64", "data": base64.b64encode(data.encode()).decode()}
            if base64_body
            else {"encoding": "utf-8", "data": data}
        )
        put_lines(files, EXCHANGES, exchanges)

    return edit


def test_an_endpoint_digest_of_another_listed_model_does_not_rank(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    manifest, _ = read_bundle(examples[QUALIFIED])
    other = "cd" * 32

    def add(body: dict[str, Any]) -> None:
        body["data"].append({"id": "other-model-7b", "object": "model", "digest": other})

    model = manifest.model.model_dump() | {"digest_source": "endpoint", "digest": f"sha256:{other}"}
    bundle = forged(examples[QUALIFIED], tmp_path / "b", deployment, _listing(add),
                    {"model": model})  # fmt: skip
    verdict = verdict_of(bundle, deployment)
    status, reason = _gate(verdict, "model_identity")
    assert status != "pass" and not verdict.rankable, reason


def test_bounded_and_full_verification_agree_on_a_base64_identity_reply(
    examples: dict[str, Path],
    deployment: PinSetSource,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: a slim exchange keeps the digests its reply reports, read from a base64 body as
    the full exchange's are; ``audit verify`` with and without ``--evidence-out`` give the
    same verdict bytes, and ``audit score gx10`` of the evidence written agrees."""
    manifest, _ = read_bundle(examples[QUALIFIED])
    digest = manifest.model.digest

    def report(body: dict[str, Any]) -> None:
        body["data"][0]["digest"] = digest.removeprefix("sha256:")

    model = manifest.model.model_dump() | {"digest_source": "endpoint"}
    bundle = forged(examples[QUALIFIED], tmp_path / "b", deployment,
                    _listing(report, base64_body=True), {"model": model})  # fmt: skip
    outputs = []
    for extra in ([], ["--evidence-out", str(tmp_path / "evidence.json")]):
        code = main(["verify", str(bundle), "--pins", str(DEPLOYMENT_PINS), "--json", *extra])
        outputs.append((code, capsysbinary.readouterr().out))
    assert outputs[0] == outputs[1]
    verdict = json.loads(outputs[0][1])
    identity = next(g for g in verdict["gates"] if g["id"] == "model_identity")
    assert (outputs[0][0], identity["status"], verdict["rankable"]) == (0, "pass", True)
    assert identity["evidence"] == ["transport exchange 0"]
    assert main(["score", "gx10", str(tmp_path / "evidence.json"), "--pins",
                 str(DEPLOYMENT_PINS), "--json"]) == 0  # fmt: skip
    scored = json.loads(capsysbinary.readouterr().out)
    assert next(g for g in scored["gates"] if g["id"] == "model_identity") == identity


# --- 11. the reasoning level against another switch ---------------------------------------------


def test_another_switch_asking_for_another_level_is_a_conflict(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    def sent(files: Files) -> None:
        exchanges = lines(files, EXCHANGES)
        for exchange in exchanges:
            body = exchange.get("request_body")
            if exchange["method"] != "POST" or not body:
                continue
            request = json.loads(body["data"])
            request.get("chat_template_kwargs", {}).pop("enable_thinking", None)
            if request.get("chat_template_kwargs") == {}:
                del request["chat_template_kwargs"]
            other = {} if exchange["component"] == "probes" else {"reasoning": {"effort": "high"}}
            body["data"] = json.dumps(request | {"reasoning_effort": "low"} | other)
        put_lines(files, EXCHANGES, exchanges)
        policy = {"effective": "low",
                  "serialization": {"path": "reasoning_effort", "value": "low"}}  # fmt: skip
        json_edit(files, "run/config.json", lambda d: d.update(reasoning_policy=policy))

    verdict = verdict_of(forged(examples[QUALIFIED], tmp_path / "b", deployment, sent), deployment)
    status, reason = _gate(verdict, "reasoning_serialization")
    assert status != "pass" and not verdict.rankable, reason


# --- 12. claims of no component -----------------------------------------------------------------


def test_a_claimed_null_score_of_no_component_differs(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    manifest, files = read_bundle(examples[QUALIFIED])
    claims = manifest.claims.model_dump()
    claims["component_scores"] |= {"bfcl": None}
    reseal(tmp_path / "b", manifest, dict(files), {"claims": claims})
    verdict = verify_bundle(tmp_path / "b", pins=deployment).verdict
    assert not verdict.claims.match and not verdict.rankable, verdict.claims


# --- 13. ranking ties by instant ----------------------------------------------------------------

_PINS = PinSetRef(id="gx10-deployment-v5", digest="sha256:" + "a" * 64)
_TIED = Gx10Scores(coding=90.0, hermes=80.0, tool_instruction=85.0, reliability=90.0,
                   performance=75.0, aggregate=85.5, executed_weight=100.0)  # fmt: skip


def _entry(run_id: str, created_at: str, n: int, *, rankable: bool = True) -> Entry:
    facts = Facts(
        run_id=run_id, bundle_digest=f"sha256:{n:064x}", pin_set=_PINS, outcome="QUALIFIED",
        result_validity="VALID", profile_decision="MEETS_PROFILE", rankable=rankable,
        rank_group="primary", scores=_TIED, reasons=(), intact=True, claims_match=True,
        passed=True, unsigned=None, comparable=True, why="", verdict_digest="sha256:" + "c" * 64,
        created_at=created_at, model="model-x", model_digest="sha256:" + "d" * 64,
        reasoning_policy="off", track="primary", recorded_pin_set=_PINS,
    )  # fmt: skip
    return Entry(run_id, facts)


def _orders(entries: list[Entry]) -> tuple[list[str], list[str]]:
    """The ranked run ids in memory and spooled (added in reverse)."""
    with SpooledRanking(_PINS) as spooled:
        for entry in reversed(entries):
            spooled.add(entry)
        spooled_ids = [row.run_id for row in spooled.ranked()]
    return [row.run_id for row in rank(entries, _PINS).ranked], spooled_ids


def test_ties_fall_to_sub_microsecond_digits_as_time() -> None:
    entries = [
        _entry("run-late", "2026-12-01T11:45:00.12345691Z", 1),
        _entry("run-early", "2026-12-01T11:45:00.1234569Z", 2),
    ]
    in_memory, spooled = _orders(entries)
    assert in_memory == spooled == ["run-early", "run-late"], (in_memory, spooled)


def test_spooled_and_in_memory_rankings_are_byte_identical_over_odd_timestamps() -> None:
    """Held: created_at values the manifest's pattern takes (fractions of 1 to 9 digits, a
    second 60 that does not read, years 0001 and 9999) order alike in memory and spooled,
    ranked and apart, to the byte; the instant decides before the text (11:45:00Z before
    11:45:00.5Z), and one that does not read goes after the instants before year 9999."""
    stamps = [
        "2026-12-01T11:45:00.5Z", "2026-12-01T11:45:00Z", "2026-12-01T11:44:59.999999999Z",
        "2026-12-31T23:59:60Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z",
        "2027-01-01T00:00:00.000000001Z",
    ]  # fmt: skip
    entries = [
        _entry(f"run-{n}", stamp, n, rankable=rankable)
        for rankable in (True, False)
        for n, stamp in enumerate(stamps, start=10 * rankable)
    ]
    ranking = rank(entries, _PINS)
    with SpooledRanking(_PINS) as spooled:
        for entry in reversed(entries):
            spooled.add(entry)
        out = io.BytesIO()
        spooled.write_json(out)
    assert out.getvalue() == canonical_bytes(ranking.model_dump(mode="json")) + b"\n"
    order = [row.created_at for row in ranking.ranked]
    assert order[:4] == [stamps[5], stamps[2], stamps[1], stamps[0]]
    assert [row.created_at for row in ranking.apart] == order
    assert order.index(stamps[3]) > order.index(stamps[6])  # second 60: after 2027
