"""Hostile tests of 2026-12-06 (flip): a publisher who controls every byte of a bundle tries to
reach a better verdict or better scores than its honest evidence supports, end to end, through
the scoring replay of each component of the real upstream harnesses.

Forged from the recorded real bundle (examples/recorded/llamacpp-smollm2-135m.tar: llama.cpp
serving SmolLM2-135M, honest verdict INFRA_ERROR / INFRA_FAILURE, coding 0, tool/instruction
28.3). Each forgery edits a harness's raw outputs, re-derives the records and result metrics
with the verifier's own reader (what a careful forger's runner writes) and is resealed with
claims equal to its replay (``tests.gate_kit.forged``): integrity holds and the claims match,
so only the verifier's cross-checks can stop it. No model reply in the transport log is edited.

Holes found, each closed by a check of the raw outputs against the recorded checkout or the
transport log (``verify/_consistency/benchlocal.py``, ``verify/_consistency/spark.py``):

1. benchlocal-cli's per-scenario answers were not held to the transport log: every failed
   scenario of the four scored packs rewritten as passed, its ``raw_response`` a reply no
   exchange holds, gave tool/instruction 100 (28.3 honest). Now each scenario's reply is an
   exchange of tool_instruction to the pinned scenario's question, each taken once.
2. A benchlocal-cli pack's scenarios were whatever the file lists: the failed scenarios simply
   dropped (no reply forged) gave tool/instruction 75, over the profile's 70. Now each pack
   that ran lists the pinned pack's scenarios (``benchlocal_cli/packs/<pack>.jsonl`` in the
   recorded checkout), each once a repeat.
3. Spark Bench's code quality was recomputed only "where both are at hand": one scenario id
   renamed to one the suite does not define (``CODE-O2``), or the other nine scenario rows
   dropped (``n=1``), let the quality be 100 with no finding. Now the scenarios scored are the
   suite's code scenarios of the pinned tiers, each once.
4. Spark Bench's gate rows were honoured "whatever their tier and workload", though the pinned
   commit writes none: two appended rows made ``upstream_integrity`` pass. Now a gate or
   quarantine row is a row the checkout's code writes (its metric a string of its Python
   files), or a finding.

Then: a failed scenario of any of the four scored packs marked passed on its own real reply is
found: their graders, benchlocal-cli's ``tool_call``, ``instruct_follow``, ``struct_output``
and ``data_extract`` modules, are replayed (``verify/_consistency/benchlocal_grades.py``; held
to the modules themselves by tests/verify/test_benchlocal_grades_differential.py).

Held (kept as guards): the code quality alone raised over the recorded scenarios is a
``_spark_weights`` finding; an Infermark report without its ``ttft`` statistics (read as a
TTFT of 0 s) is bounded by the observer's first chunks; a raw output a result lists that is not
in the bundle is a dangling reference, and the record beside it is still re-read.

Not flipped (no hole found; see the report): the example runs (under the tests' deployment pin
set) whose NOT_QUALIFIED comes from a Hermes task the evaluator failed: its only evidence is the
harness's own ``tasks.jsonl``, which nothing else in the bundle corroborates (a fabricated
harness output, the limit the threat model names).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bundle_schema.models import Verdict
from tests.data.hostile.kit import Files
from tests.decision_kit import json_edit
from tests.gate_kit import (
    BENCHLOCAL_JSON,
    INFERMARK_JSON,
    SPARK_CSV,
    Recorded,
    forged,
    unpacked_recorded,
)
from tests.gate_kit import rederived as _rederived
from tests.gate_kit import spark_rows as _spark_rows
from tests.gate_kit import spark_set as _set
from verify import verify_bundle
from verify.harness_outputs import OutputsUnreadable, read_outputs

SCORED_PACKS = ("toolcall-15", "instructfollow-15", "structoutput-15", "dataextract-15")
HONEST_TOOL_INSTRUCTION = 28.333333333333332


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _verdict(recorded: Recorded, target: Path, edit: Callable[[Files], None]) -> Verdict:
    verdict = verify_bundle(forged(recorded, target, edit)).verdict
    assert verdict.claims.match, verdict.claims.differences
    return verdict


def _findings(verdict: Verdict) -> list[str]:
    return [f"{f.code} {f.entry}: {f.message}" for f in verdict.integrity.findings]


# --- benchlocal-cli ------------------------------------------------------------------------------


def _benchlocal_edit(change: Callable[[dict], None]) -> Callable[[Files], None]:
    """An edit of benchlocal.json's scored packs (its stdout copy kept alike), re-derived."""

    def edit(files: Files) -> None:
        report = json.loads(files[BENCHLOCAL_JSON][0])
        for pack in report["packs"]:
            if pack["pack_id"] in SCORED_PACKS:
                change(pack)
        data = json.dumps(report).encode()
        files[BENCHLOCAL_JSON] = (data, files[BENCHLOCAL_JSON][1])
        files["logs/benchlocal.stdout.txt"] = (data + b"\n", files["logs/benchlocal.stdout.txt"][1])
        _rederived(files, "benchlocal-cli", ["tool_instruction"])

    return edit


def _all_passed(pack: dict) -> None:
    for number, scenario in enumerate(pack["scenarios"]):
        if scenario["passed"]:
            continue
        scenario.update(passed=True, label="pass@1", failure_mode="passed",
                        detail="all tool-call assertions passed")  # fmt: skip
        if isinstance(scenario.get("result"), dict):
            scenario["result"].update(passed=True, failure_mode="passed")
        reply = scenario["raw_response"]
        reply["id"] = f"chatcmpl-forged-{pack['pack_id']}-{number}"
        reply["choices"][0]["message"]["content"] = "a forged answer no exchange holds"
    pack["passed"] = pack["total"]
    pack["score"] = 1.0


def _failures_dropped(pack: dict) -> None:
    kept = [s for s in pack["scenarios"] if s["passed"]] or pack["scenarios"][:1]
    pack["scenarios"] = kept
    pack["total"] = len(kept)
    pack["passed"] = sum(s["passed"] for s in kept)
    pack["score"] = pack["passed"] / pack["total"]


def test_benchlocal_scenario_answers_are_replies_of_the_transport_log(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Every failed scenario of the four scored packs rewritten as passed (its verdict, its
    result, the pack's counts) with a ``raw_response`` no exchange of the transport log holds
    (another id, another answer): what benchlocal-cli graded is no reply the model gave, so the
    scenario's verdict is the publisher's word. bfcl-eval's answers are held to the log
    (``_bfcl_replies``); benchlocal-cli's are not: tool/instruction goes from 28.3 to 100 and
    nothing is found. A careful verifier finds each scenario's ``raw_response`` among the
    tool_instruction exchanges (by its body, once each, to the scenario's messages)."""
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(_all_passed))
    found = _findings(verdict)
    assert len(found) == 1 and found[0] == (
        f"record_disagrees {BENCHLOCAL_JSON}: evidence {BENCHLOCAL_JSON!r}: benchlocal.json: "
        "$.packs[0].scenarios[0]: scenario 'TC-01' of pack 'toolcall-15' (passed) was graded on "
        "a reply that is no reply of tool_instruction to its question in the transport log (43 "
        "of 60 scenario runs)"
    ), found  # the forged replies are not graded again: only a copy of the log's reply is


def test_benchlocal_packs_hold_every_scenario_of_the_pack(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The failed scenarios dropped from each scored pack (one kept where none passed), its
    ``passed``/``total``/``score`` set to what remains: no reply is forged, the dropped
    scenarios' exchanges are still in the transport log and each pack still says
    ``scenario_count: 15`` (``-15`` in its id, 15 scenarios in the pinned checkout's pack).
    ``_benchlocal_pack`` only asks the counts to agree with the listed scenarios, so 2/15,
    8/15, 7/15 and 0/15 become 2/2, 8/8, 7/7 and 0/1: tool/instruction 28.3 -> 75 (the full
    profile's bound is 70), no finding. A careful verifier holds a pack's total to its
    ``scenario_count`` and to the pinned pack (and every tool_instruction completion to a
    listed scenario)."""
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(_failures_dropped))
    found = _findings(verdict)
    assert len(found) == 4, found  # one a scored pack
    assert (
        f"record_disagrees {BENCHLOCAL_JSON}: evidence {BENCHLOCAL_JSON!r}: pack 'toolcall-15' "
        "lists 2 scenario runs; the pinned pack has 15 scenarios, 1 time(s) each (missing: "
        "'TC-01', 'TC-02', 'TC-03' and 10 more)"
    ) in found, found


def _graded(pack: dict, scenario: dict, passed: bool) -> None:
    """A scenario's grade set (its result alike) and its pack's counts made to agree."""
    scenario.update(passed=passed, failure_mode="passed" if passed else "wrong_answer")
    if isinstance(scenario.get("result"), dict):
        scenario["result"].update(passed=passed, failure_mode=scenario["failure_mode"])
    pack["passed"] = sum(s["passed"] for s in pack["scenarios"])
    pack["score"] = pack["passed"] / pack["total"]


def _another_scenarios_reply(pack: dict) -> None:
    """The first failed scenario given the reply of the first that passed (a real reply of the
    log, to another question), and marked passed."""
    if pack["pack_id"] != "toolcall-15":
        return
    good = next(s for s in pack["scenarios"] if s["passed"])
    bad = next(s for s in pack["scenarios"] if not s["passed"])
    bad["raw_response"] = json.loads(json.dumps(good["raw_response"]))
    _graded(pack, bad, True)


def _a_pass_twice(pack: dict) -> None:
    """The first failed scenario's run replaced by a second copy of the first that passed."""
    if pack["pack_id"] != "toolcall-15":
        return
    good = next(i for i, s in enumerate(pack["scenarios"]) if s["passed"])
    bad = next(i for i, s in enumerate(pack["scenarios"]) if not s["passed"])
    pack["scenarios"][bad] = json.loads(json.dumps(pack["scenarios"][good]))
    _graded(pack, pack["scenarios"][bad], True)


def test_a_reply_to_another_scenarios_question_is_found(recorded: Recorded, tmp_path: Path) -> None:
    """A failed scenario graded on another scenario's real reply (an exchange of the log, once:
    the other scenario's own run is then the one left without it) is found."""
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(_another_scenarios_reply))
    found = _findings(verdict)
    said = "was graded on a reply that is no reply of tool_instruction to its question"
    assert any(said in f for f in found), found


def test_a_scenario_run_twice_in_place_of_a_failed_one_is_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """A pack of 15 whose failed run is a second copy of a passed one: 15 runs, the counts
    agree, every reply is the log's; the pinned pack has the scenario left out."""
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(_a_pass_twice))
    found = [f for f in _findings(verdict) if "pack 'toolcall-15' lists 15 scenario runs" in f]
    assert len(found) == 1 and "(missing: 'TC-01'; more than once: 'TC-" in found[0], found


def _flipped(pack_id: str) -> Callable[[dict], None]:
    """The first failed scenario of ``pack_id`` marked passed, on its own real reply."""

    def flip(pack: dict) -> None:
        if pack["pack_id"] == pack_id:
            _graded(pack, next(s for s in pack["scenarios"] if not s["passed"]), True)

    return flip


@pytest.mark.parametrize(
    ("pack_id", "said"),
    [
        ("toolcall-15", "$.packs[0].scenarios[0]: scenario 'TC-01' of pack 'toolcall-15' is "
                        "marked passed; the pinned pack's tool_call grader fails its reply: the "
                        "reply has no tool call"),
        ("instructfollow-15", "$.packs[1].scenarios[1]: scenario 'IF-02' of pack "
                              "'instructfollow-15' is marked passed; the pinned pack's "
                              "instruct_follow grader fails its reply: "),
        ("structoutput-15", "$.packs[2].scenarios[0]: scenario 'SO-01' of pack "
                            "'structoutput-15' is marked passed; the pinned pack's struct_output "
                            "grader fails its reply: no value at $.year"),
        ("dataextract-15", "$.packs[3].scenarios[0]: scenario 'DE-01' of pack 'dataextract-15' "
                           "is marked passed; the pinned pack's data_extract grader fails its "
                           "reply: the reply is not JSON"),
    ],
)  # fmt: skip
def test_a_failed_scenario_marked_passed_on_its_own_reply_is_found(
    recorded: Recorded, tmp_path: Path, pack_id: str, said: str
) -> None:
    """Every reply is the one the log holds for its question, each pack lists its pinned
    scenarios once: only the grade is forged. Each scored pack's grader (benchlocal-cli's
    ``tool_call``, ``instruct_follow``, ``struct_output`` and ``data_extract`` modules) is
    replayed on the reply (``verify/_consistency/benchlocal_grades.py``)."""
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(_flipped(pack_id)))
    (found,) = _findings(verdict)
    assert found.startswith(
        f"record_disagrees {BENCHLOCAL_JSON}: evidence {BENCHLOCAL_JSON!r}: benchlocal.json: "
        + said
    ), found


# --- Spark Bench ---------------------------------------------------------------------------------


def _one_passed(files: Files) -> None:
    """The baseline: a run whose CODE-05 passed (score 1.0) and whose code quality is the
    difficulty-weighted mean Spark writes for it, rounded to 0.1 (9.5). Both of CODE-05's
    recorded answers compile, so the transport log allows it (CODE-01's do not: a pass there is
    a finding of its own, ``tests/hostile/test_spark_answers.py``)."""
    passed, quality = _set("CODE-05", "score", "1.0"), _set("code", "domain_quality", "9.5")
    _spark_rows(lambda f: quality(passed(f)))(files)


def _renamed(fields: list[str]) -> list[str]:
    if fields[11] == "CODE-02":
        fields[11] = "CODE-O2"  # a letter O: no scenario of the pinned eval_suite.py
    return fields


def _nine_dropped(fields: list[str]) -> list[str] | None:
    if fields[11].startswith("CODE-") and fields[11] != "CODE-05":
        return None
    return _set("code", "domain_quality", fields[13], "capability n=1")(fields)


def test_a_run_whose_first_code_scenario_passed_verifies_clean(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held (the baseline of hole 3): CODE-05 scored 1.0 and the quality 9.5, as Spark writes
    them, is what ``_spark_weights`` recomputes: no finding, coding 9.5."""
    verdict = _verdict(recorded, tmp_path / "baseline", _one_passed)
    assert verdict.integrity.status == "ok", _findings(verdict)
    assert verdict.scores.coding == 9.5


def test_the_code_quality_alone_raised_is_found(recorded: Recorded, tmp_path: Path) -> None:
    """Held: over the baseline, the quality alone set to 100 (CODE-05 the only scenario that
    passed) is a ``_spark_weights`` finding on the raw CSV."""

    def edit(files: Files) -> None:
        _one_passed(files)
        _spark_rows(_set("code", "domain_quality", "100.0"))(files)

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert any(
        f.code == "record_disagrees" and f.entry == SPARK_CSV for f in verdict.integrity.findings
    ), _findings(verdict)


@pytest.mark.parametrize(
    ("trick", "said"),
    [
        (_renamed, "the code domain scored 10 scenarios; the sparkbench checkout's eval_suite.py "
                   "defines 10 code scenarios in the pinned tiers (not scored: 'CODE-02'; no "
                   "scenario of its suite: 'CODE-O2')"),
        (_nine_dropped, "the code domain scored 1 scenarios; the sparkbench checkout's "
                        "eval_suite.py defines 10 code scenarios in the pinned tiers (not "
                        "scored: 'CODE-01', 'CODE-02', 'CODE-03' and 6 more)"),
    ],
    ids=["renamed", "nine-dropped"],
)  # fmt: skip
def test_the_code_quality_is_held_to_every_pinned_code_scenario(
    recorded: Recorded,
    tmp_path: Path,
    trick: Callable[[list[str]], list[str] | None],
    said: str,
) -> None:
    """Over the baseline (CODE-05 passed, quality 9.5), one of two edits of the scenario rows
    and the quality set to 100: ``renamed``, CODE-02 written ``CODE-O2`` (no difficulty in the
    pinned eval_suite.py, so the recomputation is skipped as "another layout" and only the
    min/max bound, 0..100, holds); ``nine-dropped``, the nine failed scenarios' rows left out
    and the domain's ``n=1`` (the recomputation over CODE-05 alone gives 100). No scenario
    score is forged, yet coding goes from 9.5 to 100 with no finding. The pinned suite defines
    the ten code scenarios Spark runs: a careful verifier requires each of them scored once
    and no other, and recomputes over all of them."""

    def edit(files: Files) -> None:
        _one_passed(files)
        _spark_rows(lambda f: (None if (g := trick(f)) is None
                               else _set("code", "domain_quality", "100.0")(g)))(files)  # fmt: skip

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert _findings(verdict) == [f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: {said}"]


def test_gate_rows_the_pinned_spark_bench_never_writes_are_not_honoured(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Two rows appended to spark_bench.csv, ``overall golden_gate pass`` and ``overall
    run_valid pass``, in the run's own columns. The pinned Spark Bench (196e60d) writes no such
    row (docs/upstreams.md: "writes no golden_gate, run_valid, ... rows"; its recorded
    spark_bench.py and eval_suite.py hold neither name), so every honest run under
    gx10-qualification-v5 fails ``upstream_integrity`` ("reported no golden gate or run-valid
    marker"): the two rows can only be the publisher's, and the gate passes. A careful
    verifier honours a gate row only where the recorded checkout's code can write that metric,
    and finds any other."""

    def edit(files: Files) -> None:
        text = files[SPARK_CSV][0].decode("utf-8")
        first = text.splitlines()[1].split(",")
        for metric in ("golden_gate", "run_valid"):
            row = [*first[:11], "overall", metric, "pass", "", ""]
            text += ",".join(row) + "\n"
        files[SPARK_CSV] = (text.encode(), files[SPARK_CSV][1])
        _rederived(files, "spark-bench", ["coding", "reliability"])

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert _findings(verdict) == [
        f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: line 42: a golden_gate row, "
        "which the sparkbench checkout's code never writes (no 'golden_gate' in its Python "
        "files or the pinned command)"
    ]


def test_a_quarantine_row_the_pinned_spark_bench_never_writes_is_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """A quarantine row appended (a failing run laundered as "the upstream quarantined it",
    which the replay takes as authoritative) is no row the pinned Spark Bench writes."""

    def edit(files: Files) -> None:
        text = files[SPARK_CSV][0].decode("utf-8")
        first = text.splitlines()[1].split(",")
        text += ",".join([*first[:11], "overall", "quarantine", "1", "", "judge drifted"]) + "\n"
        files[SPARK_CSV] = (text.encode(), files[SPARK_CSV][1])
        _rederived(files, "spark-bench", ["coding", "reliability"])

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert any(
        "a quarantine row, which the sparkbench checkout's code never writes" in f
        for f in _findings(verdict)
    ), _findings(verdict)


# --- held: Infermark, raw outputs ---------------------------------------------------------------


def test_an_infermark_report_without_its_ttft_is_refused(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held: the ``ttft`` statistics left out of Infermark's report (its reader once recorded
    a TTFT p50 of 0 s then, the best the formula gives, which the observer's median of 0.016 s
    found) is refused by the reader since ADR 0052 (Infermark writes the key, null where it
    measured none): no record can be derived from it, and the report kept beside the recorded
    record is a finding."""
    report = json.loads(recorded[1][INFERMARK_JSON][0])
    del report["results"][0]["ttft"]
    data = json.dumps(report, indent=2).encode()
    with pytest.raises(OutputsUnreadable, match=r"no ttft \(Infermark writes it"):
        read_outputs("infermark", {"infermark.json": data}, ["performance"])

    def edit(files: Files) -> None:
        files[INFERMARK_JSON] = (data, files[INFERMARK_JSON][1])

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    said = "the infermark raw outputs do not read: infermark.json: $.results[0]: no ttft"
    assert any(said in f.message for f in verdict.integrity.findings), _findings(verdict)


def test_a_listed_raw_output_that_is_absent_does_not_stop_the_reread(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held: coding's result lists a raw output the bundle does not hold (``_raw_files``
    returns None for an output it cannot read, and re-reads nothing then) while its
    spark-quality record says 100: the listing is a dangling reference and the record is still
    found to disagree with the raw CSV."""

    def edit(files: Files) -> None:
        def listed(result: dict) -> None:
            result["raw_outputs"] = [*result["raw_outputs"], "components/coding/raw/ghost.csv"]
            result["metrics"]["code_domain_quality"] = 100.0

        json_edit(files, "components/coding/result.json", listed)
        json_edit(files, "components/coding/spark-quality.json",
                  lambda r: r.update(code_domain_quality=100.0))  # fmt: skip

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    codes = {(f.code, f.entry) for f in verdict.integrity.findings}
    assert ("dangling_reference", "components/coding/result.json") in codes, codes
    assert ("record_disagrees", "components/coding/spark-quality.json") in codes, codes
