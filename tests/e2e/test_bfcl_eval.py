"""bfcl-eval read in its own output format, and run beside tool/instruction as its gate (ADR 0022).

The reader is tested on outputs the real bfcl-eval 2026.3.23 wrote against a real llama.cpp
server (tests/data/upstream_outputs/bfcl-eval/, README there), and on hostile variants of them;
the gate end to end by `audit run` against the reference endpoint with a small harness that
writes bfcl-eval's files (tests/data/bfcl_eval_harness/), in the sandbox, and by the verifier on
that bundle and on forged copies of it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.parsers import output_files
from bundle_schema.errors import InvalidInput
from bundle_schema.models import Verdict
from pins import CURRENT, DEMO, PinSetSource, load_builtin, parse_pin_set, pin_set_source
from tests.data.hostile.kit import Files, put_json
from tests.gate_kit import BFCL_REF_CATEGORIES, blob, gate_mirror, gated_run, resealed, run_gated
from tests.paths import DATA, PINS
from verify import verify_bundle
from verify.harness_outputs import (
    MAX_BFCL_EVAL_BYTES,
    OutputsUnreadable,
    read_gate_outputs,
    read_outputs,
)
from verify.scorers.bfcl import aggregate_v4

RECORDED = DATA / "upstream_outputs" / "bfcl-eval"
HARNESS = DATA / "bfcl_eval_harness"
MODEL = "smollm2-135m-instruct"
SCORE = f"score/{MODEL}/non_live/BFCL_v4_simple_python_score.json"
RESULT = f"result/{MODEL}/non_live/BFCL_v4_simple_python_result.json"
OVERALL = "score/data_overall.csv"
TALLIES = "components/tool_instruction/gates/bfcl/bfcl-eval.json"
TOOL_RESULT = "components/tool_instruction/result.json"


def recorded() -> dict[str, bytes]:
    return output_files(RECORDED)


def _header(files: dict[str, bytes], name: str) -> dict[str, Any]:
    return json.loads(files[name].split(b"\n", 1)[0])


# --- the reader, on what the real bfcl-eval wrote ---------------------------------------------


def test_the_real_outputs_read_as_bfcl_eval_counted_them() -> None:
    files = recorded()
    outputs = read_outputs("bfcl-eval", files, ["tool_instruction"])
    (name, (kind, shard)), *_ = outputs.records.items()
    assert (name, kind) == ("components/tool_instruction/bfcl-eval.json", "bfcl-shard")
    headers = {
        re.sub(r".*BFCL_v4_(\w+)_score\.json$", r"\1", n): _header(files, n)
        for n in files
        if n.endswith("_score.json")
    }
    assert len(headers) == 5
    assert {s: (t.hits, t.n) for s, t in shard.subset_totals.items()} == {
        s: (h["correct_count"], h["total_count"]) for s, h in headers.items()
    }
    assert len(shard.sample_ids) == sum(h["total_count"] for h in headers.values()) == 11
    # data_overall.csv's own figure, and the flat mean over the samples
    row = files[OVERALL].decode().splitlines()[1].split(",")
    metrics = outputs.metrics["tool_instruction"]
    assert f"{metrics['bfcl_v4_overall']:.2f}%" == row[1] == "10.00%"
    assert metrics["bfcl_overall_accuracy"] == pytest.approx(100 * 4 / 11)
    assert (metrics["bfcl_samples"], metrics["bfcl_subsets"]) == (11, 5)
    assert 100 * aggregate_v4(shard.subset_totals)["overall_accuracy"] == pytest.approx(10.0)


def test_the_verifier_reads_the_kept_lower_case_names_alike() -> None:
    """A bundle keeps raw outputs under lower-case names: the re-read is the same."""
    files = recorded()
    lower = {name.lower(): data for name, data in files.items()}
    assert lower.keys() != files.keys()
    ran = read_gate_outputs("bfcl-eval", files, "tool_instruction", "bfcl")
    reread = read_gate_outputs("bfcl-eval", lower, "tool_instruction", "bfcl")
    assert ran.records == reread.records and ran.metrics == reread.metrics
    assert list(ran.records) == [TALLIES]


def _lines(files: dict[str, bytes], name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in files[name].splitlines()]


def _put(files: dict[str, bytes], name: str, entries: list[dict[str, Any]]) -> None:
    files[name] = b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def _header_says(correct: int, total: int, accuracy: float | None = None) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        entries = _lines(files, SCORE)
        entries[0] = {"accuracy": correct / total if accuracy is None else accuracy,
                      "correct_count": correct, "total_count": total}  # fmt: skip
        _put(files, SCORE, entries)

    return edit


def _twice(files: dict[str, bytes]) -> None:
    files[SCORE.replace("non_live", "live")] = files[SCORE]


def _bad_json(files: dict[str, bytes]) -> None:
    files[SCORE] = files[SCORE].replace(b"}\n", b"\n", 1)


def _huge(files: dict[str, bytes]) -> None:
    files[RESULT] = b" " * (MAX_BFCL_EVAL_BYTES + 1)


def _nan(files: dict[str, bytes]) -> None:
    files[SCORE] = files[SCORE].replace(b'"accuracy": 0.0', b'"accuracy": NaN', 1)


def _overall(text: str) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        header, row = files[OVERALL].decode().split("\n")
        files[OVERALL] = (header + "\n" + row.replace("10.00%", text, 1)).encode()

    return edit


def _second_model(files: dict[str, bytes]) -> None:
    for name in [n for n in files if MODEL in n and "live_simple" in n]:
        files[name.replace(MODEL, "other-model")] = files.pop(name)


def _drop(name: str) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        del files[name]

    return edit


def _repeat_result(files: dict[str, bytes]) -> None:
    entries = _lines(files, RESULT)
    _put(files, RESULT, [*entries[:-1], entries[0]])


def _failed_elsewhere(files: dict[str, bytes]) -> None:
    entries = _lines(files, SCORE)
    entries[1]["id"] = "simple_python_399"
    _put(files, SCORE, entries)


def _unknown_subset(files: dict[str, bytes]) -> None:
    for name in [n for n in files if "simple_python" in n]:
        files[name.replace("simple_python", "format_sensitivity")] = files.pop(name)


def _valid_failure(files: dict[str, bytes]) -> None:
    entries = _lines(files, SCORE)
    entries[1]["valid"] = True
    _put(files, SCORE, entries)


Edit = Callable[[dict[str, bytes]], None]
HOSTILE: dict[str, tuple[Edit, str]] = {
    "hits above n": (_header_says(3, 2, 1.0), f"{SCORE}:1: correct_count 3 of total_count 2"),
    "accuracy not the counts": (_header_says(0, 3, 0.5), f"{SCORE}:1: accuracy 0.5 is not"),
    "a subset twice": (_twice, "a second score file of subset 'simple_python'"),
    "bad JSON": (_bad_json, f"{SCORE}:1: "),
    "NaN": (_nan, f"{SCORE}:1: "),
    "huge file": (_huge, f"{RESULT}: {MAX_BFCL_EVAL_BYTES + 1} bytes, over the"),
    "overall disagrees": (_overall("12.00%"), f"{OVERALL}:2: Overall Acc 12.00%, the score"),
    "overall not a percentage": (_overall("ten"), f"{OVERALL}:2: Overall Acc 'ten'"),
    "two models": (_second_model, "outputs of 2 models"),
    "no data_overall": (_drop(OVERALL), f"{OVERALL}: bfcl evaluate did not write it"),
    "no result file": (_drop(RESULT), f"{SCORE}: no result file of subset 'simple_python'"),
    "no score file": (_drop(SCORE), f"{RESULT}: bfcl generate answered subset 'simple_python'"),
    "an answer twice": (_repeat_result, f"{RESULT}:3: test entry 'simple_python_0' again"),
    "failed entry not answered": (
        _failed_elsewhere,
        f"{SCORE}:2: failed entry 'simple_python_399'",
    ),
    "a subset no aggregation knows": (_unknown_subset, "subset_totals.format_sensitivity: not a"),
    "a passing entry listed": (_valid_failure, f"{SCORE}:2: valid is True"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_outputs_are_one_located_refusal(case: str) -> None:
    edit, message = HOSTILE[case]
    files = recorded()
    edit(files)
    with pytest.raises(OutputsUnreadable) as raised:
        read_outputs("bfcl-eval", files, ["tool_instruction"])
    assert message in str(raised.value), str(raised.value)
    assert "\n" not in str(raised.value)


# --- the pin set ------------------------------------------------------------------------------

SHIPPED = PINS / f"{CURRENT}.toml"


def test_the_shipped_pin_set_runs_bfcl_eval_as_tool_instructions_gate() -> None:
    pins = load_builtin(CURRENT).pins
    assert pins.gate_upstreams == {"tool_instruction": ("bfcl",)}
    assert "bfcl" not in pins.component_upstreams.values()
    harness = pins.harnesses["bfcl"]
    assert (harness.parser, harness.requirements) == ("bfcl-eval", ("bfcl-eval==2026.3.23",))
    assert pins.upstreams["bfcl"].repository == "https://github.com/ShishirPatil/gorilla"
    assert "{" not in harness.command[2]  # the runner formats each part: no field in the program


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            '^tool_instruction = \\["bfcl"\\]$',
            'tool_instruction = ["bfc"]',
            "gate_upstreams.tool_instruction: 'bfc' is not an upstream; did you mean 'bfcl'?",
        ),
        (
            '^tool_instruction = \\["bfcl"\\]$',
            'tool_instruction = ["benchlocal"]',
            "gate_upstreams.tool_instruction: 'benchlocal' is the upstream of a scored component",
        ),
        (
            '^tool_instruction = \\["bfcl"\\]$',
            'tool_instruction = ["bfcl", "bfcl"]',
            "gate_upstreams.tool_instruction: 'bfcl' twice",
        ),
        (
            '^tool_instruction = \\["bfcl"\\]$',
            'performance = ["bfcl"]',
            "gate_upstreams.performance: performance's exchanges are its measurement",
        ),
        (
            '^tool_instruction = \\["bfcl"\\]$',
            'tool_instructions = ["bfcl"]',
            "gate_upstreams.tool_instructions: Input should be",
        ),
        (
            '^tool_instruction = "benchlocal"$',
            'tool_instruction = "bfcl"',
            "component_upstreams.tool_instruction: 'bfcl' runs bfcl-eval, whose outputs are no "
            "score input under gx10",
        ),
        (
            '^parser = "bfcl-eval"$',
            'parser = "infermark"',
            "gate_upstreams.tool_instruction: 'bfcl' is read by infermark, not a gate's reader",
        ),
        (
            "^\\[harnesses.bfcl\\]$",
            "[harnesses.bfcl-old]",
            "gate_upstreams.tool_instruction: 'bfcl' has no harness block (harnesses.bfcl)",
        ),
    ],
    ids=["typo", "scored", "twice", "performance", "component", "as-score", "parser", "harness"],
)
def test_a_bad_gate_is_one_located_line(old: str, new: str, message: str) -> None:
    text = SHIPPED.read_text("utf-8")
    assert re.search(old, text, re.M), old
    data = re.sub(old, new, text, count=1, flags=re.M).encode()
    with pytest.raises(InvalidInput) as raised:
        parse_pin_set(data, "mine.toml")
    assert re.fullmatch(r"mine\.toml:\d+: .*", str(raised.value)), str(raised.value)
    assert message in str(raised.value), str(raised.value)


# --- audit run: the gate beside tool/instruction, in the sandbox ------------------------------


def _gated_pins(mirror_commit: str, *extra: str) -> PinSetSource:
    """The demo's pin set with the bfcl-eval-format harness as tool/instruction's gate."""
    data = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["id"] = "gx10-reference-v5-bfcl" + ("-broken" if extra else "")
    data["upstreams"]["bfcl"] = {"repository": "reference://bfcl", "commit": mirror_commit}
    data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}
    data["harnesses"]["bfcl"] = {
        "command": ["{python}", "bfcl_ref.py", "--endpoint", "{endpoint}", "--model", "{model}",
                    "--out", "{out}", *BFCL_REF_CATEGORIES, *extra],
        "outputs": [OVERALL], "parser": "bfcl-eval", "inactivity_s": 120, "wall_s": 600,
    }  # fmt: skip
    return pin_set_source(data, "gated pins")


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[dict[str, Path], str]:
    root = tmp_path_factory.mktemp("bfcl-mirror")
    return gate_mirror(root, mirrors, HARNESS, "bfcl")


@pytest.fixture(scope="module")
def good_run(
    tmp_path_factory: pytest.TempPathFactory, gated: tuple[dict[str, Path], str]
) -> tuple[Path, PinSetSource, Verdict]:
    return gated_run(tmp_path_factory.mktemp("bfcl-run") / "bundle", gated, _gated_pins)


def test_a_run_keeps_the_gates_outputs_and_reports_its_figures_beside_the_scores(
    good_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    bundle, _, verdict = good_run
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("QUALIFIED", "VALID")
    gates = {g.id: g for g in verdict.gates}
    assert gates["upstream_checkout"].status == "pass"
    assert "bfcl" in gates["upstream_checkout"].reason
    # the reference endpoint calls no tool: the irrelevance entries pass, no other
    (shown,) = verdict.diagnostics.supplementary
    assert (shown.component, shown.upstream, shown.subsets, shown.samples) == (
        "tool_instruction", "bfcl", 3, 6
    )  # fmt: skip
    assert shown.overall_accuracy == pytest.approx(100 * 2 / 6)
    assert shown.v4_overall == pytest.approx(5.0)
    # never a score: tool/instruction is the BenchLocal pack mean as without the gate
    packs = json.loads(blob(bundle, "components/tool_instruction/benchlocal-packs.json"))
    assert verdict.scores.tool_instruction == pytest.approx(packs["mean"])
    result = json.loads(blob(bundle, TOOL_RESULT))
    assert result["status"] == "COMPLETED"
    assert result["metrics"]["bfcl_samples"] == 6
    assert result["metrics"]["bfcl_v4_overall"] == pytest.approx(5.0)
    raw = [n for n in result["raw_outputs"] if "/gates/bfcl/raw/" in n]
    assert "components/tool_instruction/gates/bfcl/raw/score/data_overall.csv" in raw
    tallies = json.loads(blob(bundle, TALLIES))
    assert tallies["subset_totals"]["irrelevance"] == {"hits": 2, "n": 2}
    # the exchanges it made are the component's, through the observer
    exchanges = [
        json.loads(line) for line in blob(bundle, "transport/exchanges.jsonl").splitlines()
    ]
    asked = [e for e in exchanges if "Test entry" in (e["request_body"] or {}).get("data", "")]
    assert len(asked) == 6 and {e["component"] for e in asked} == {"tool_instruction"}


def test_a_gate_whose_outputs_do_not_read_fails_its_component_as_infrastructure(
    tmp_path: Path, gated: tuple[dict[str, Path], str]
) -> None:
    mirrors, commit = gated
    pins = _gated_pins(commit, "--broken")
    verdict = run_gated(tmp_path / "bundle", mirrors, pins)
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    result = json.loads(blob(tmp_path / "bundle", TOOL_RESULT))
    assert result["status"] == "FAILED"
    assert result["reason"].startswith("its gate bfcl failed: bfcl: score/")
    assert re.search(r"_score\.json:1: correct_count (\d+) of total_count \d+$", result["reason"])
    assert any(r.startswith("tool_instruction failed: its gate bfcl") for r in verdict.reasons)
    assert verdict.scores.tool_instruction is None and verdict.diagnostics.supplementary == ()


# --- the verifier: a record that disagrees with the raw outputs ---------------------------------


def _more_hits(files: Files) -> None:
    tallies = json.loads(files[TALLIES][0])
    tallies["subset_totals"]["simple_python"]["hits"] = 3
    put_json(files, TALLIES, tallies)


def _better_metric(files: Files) -> None:
    result = json.loads(files[TOOL_RESULT][0])
    result["metrics"]["bfcl_v4_overall"] = 55.0
    put_json(files, TOOL_RESULT, result)


def _raw_edited(files: Files) -> None:
    name = "components/tool_instruction/gates/bfcl/raw/score/data_overall.csv"
    files[name] = (files[name][0].replace(b"5.00%", b"9.00%"), files[name][1])


def _no_tallies(files: Files) -> None:
    del files[TALLIES]


@pytest.mark.parametrize(
    ("edit", "entry", "message"),
    [
        (_more_hits, TALLIES, "the tallies are not what the raw outputs of bfcl say"),
        (
            _better_metric,
            TOOL_RESULT,
            "metric bfcl_v4_overall is 55; the raw outputs of bfcl say 5.0",
        ),
        (_raw_edited, TALLIES, "the bfcl raw outputs do not read: score/data_overall.csv:2"),
    ],
    ids=["tallies", "metric", "raw"],
)
def test_a_forged_record_is_caught_against_the_raw_outputs(
    good_run: tuple[Path, PinSetSource, Verdict],
    tmp_path: Path,
    edit: Callable[[Files], None],
    entry: str,
    message: str,
) -> None:
    bundle, pins, _ = good_run
    forged = resealed(bundle, tmp_path / "forged", edit, pins)
    verdict = verify_bundle(forged, pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR" and verdict.integrity.status == "failed"
    found = [f for f in verdict.integrity.findings if f.code == "record_disagrees"]
    assert any(f.entry == entry and message in f.message for f in found), found


def test_a_completed_component_without_its_gates_tallies_is_held_as_infrastructure(
    good_run: tuple[Path, PinSetSource, Verdict], tmp_path: Path
) -> None:
    bundle, pins, _ = good_run
    forged = resealed(bundle, tmp_path / "forged", _no_tallies, pins)
    verdict = verify_bundle(forged, pins=pins).verdict
    gates = {g.id: g for g in verdict.gates}
    assert gates["upstream_checkout"].status == "infra"
    assert "tool_instruction completed without its bfcl gate" in gates["upstream_checkout"].reason
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    assert verdict.diagnostics.supplementary == ()
