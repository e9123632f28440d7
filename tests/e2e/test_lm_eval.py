"""lm-evaluation-harness read in its own output format, and run beside tool/instruction as its
gate (ADR 0027).

The reader is tested on what the real lm-evaluation-harness 0.4.13 wrote against a real
llama.cpp server, on the task the project ships (tests/data/lm_eval_tasks/: `arithmetic.yaml`
reads `arithmetic.jsonl` with `dataset_path: json` and local `data_files`, no hub;
tests/data/upstream_outputs/lm-eval/, README there), and on hostile variants of it; the gate end
to end by `audit run` against the reference endpoint with the pin set fragment
tests/data/pins/lm-eval-gate.toml, whose command is a stand-in writing lm-eval's results and
samples (tests/data/lm_eval_tasks/lm_eval_ref.py), in the sandbox, and by the verifier on that
bundle and on forged copies of it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.demo.reference_endpoint import MODEL_ID
from audit.parsers import output_files
from bundle_schema.errors import InvalidInput
from bundle_schema.models import Verdict
from pins import PinSetSource, pin_set_source
from tests.data.hostile.kit import Files, put_json
from tests.gate_kit import (
    asks_a_sample,
    assert_forgery_caught,
    assert_held_without_tallies,
    blob,
    every_field_replaced,
    gate_mirror,
    gated_run,
    merged_pins,
    run_gated,
)
from tests.paths import DATA
from verify.harness_outputs import (
    MAX_TASK_LOG_BYTES,
    OutputsUnreadable,
    read_gate_outputs,
    read_outputs,
)

RECORDED = DATA / "upstream_outputs" / "lm-eval"
TASKS = DATA / "lm_eval_tasks"
FRAGMENT = DATA / "pins" / "lm-eval-gate.toml"
DIR = "smollm2-135m-instruct"
RESULTS = f"{DIR}/results_2026-12-01T16-24-59.937283.json"
SAMPLES = f"{DIR}/samples_arithmetic_local_2026-12-01T16-24-59.937283.jsonl"
TASK = "arithmetic_local"
KEY = "exact_match,last-word"
TALLIES = "components/tool_instruction/gates/lmeval/tasks.json"
TOOL_RESULT = "components/tool_instruction/result.json"
SAMPLE_ENDINGS = (
    "Answer with the number only.",
    "Reply with exactly: yes",
    "Reply with exactly: blue",
)
"""How the data set's eight inputs end (arithmetic.jsonl)."""


def recorded() -> dict[str, bytes]:
    return output_files(RECORDED)


def _report(files: dict[str, bytes]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(files[RESULTS])
    return value


def _lines(files: dict[str, bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in files[SAMPLES].splitlines()]


# --- the reader, on what the real lm-evaluation-harness wrote -----------------------------------


def test_the_real_outputs_read_as_lm_eval_counted_them() -> None:
    files = recorded()
    report = _report(files)
    outputs = read_outputs("lm-eval", files, ["tool_instruction"])
    ((name, (kind, tallies)),) = outputs.records.items()
    assert (name, kind) == ("components/tool_instruction/tasks.json", "task-tallies")
    # what lm_eval printed: "arithmetic_local | last-word | exact_match | 0.375 | 0.183"
    assert report["results"][TASK][KEY] == 0.375
    assert tallies.tasks[TASK].model_dump() == {"hits": 3, "n": 8}
    assert sum(s["exact_match"] for s in _lines(files)) == 3
    assert (tallies.harness, tallies.version, tallies.model) == (
        "lm-eval", "0.4.13", "smollm2-135m-instruct"
    )  # fmt: skip
    assert outputs.metrics == {
        "tool_instruction": {"lm_eval_accuracy": 37.5, "lm_eval_samples": 8, "lm_eval_tasks": 1}
    }


def test_the_verifier_reads_the_kept_lower_case_names_alike() -> None:
    files = recorded()
    lower = {name.lower(): data for name, data in files.items()}
    assert lower.keys() != files.keys()
    ran = read_gate_outputs("lm-eval", files, "tool_instruction", "lmeval")
    reread = read_gate_outputs("lm-eval", lower, "tool_instruction", "lmeval")
    assert ran.records == reread.records and ran.metrics == reread.metrics
    assert list(ran.records) == [TALLIES]


Edit = Callable[[dict[str, bytes]], None]


def _edit(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        report = _report(files)
        change(report)
        files[RESULTS] = json.dumps(report).encode()

    return edit


def _samples(change: Callable[[list[dict[str, Any]]], None]) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        lines = _lines(files)
        change(lines)
        files[SAMPLES] = b"".join(json.dumps(line).encode() + b"\n" for line in lines)

    return edit


def _accuracy(value: object) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        report["results"][TASK][KEY] = value

    return change


def _flip(lines: list[dict[str, Any]]) -> None:
    lines[0]["exact_match"] = 0.0  # add-1 was correct


def _second_metric(report: dict[str, Any]) -> None:
    report["results"][TASK]["exact_match,none"] = 0.375


def _group(report: dict[str, Any]) -> None:
    report["group_subtasks"] = {"maths": [TASK]}


def _counts(**fields: int) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        report["n-samples"][TASK].update(fields)

    return change


def _nine(report: dict[str, Any]) -> None:
    report["n-samples"][TASK].update(original=9, effective=9)
    report["results"][TASK]["sample_len"] = 9


def _drop(name: str) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        del files[name]

    return edit


def _copy(old: str, new: str) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        files[new] = files[old]

    return edit


def _raw(old: bytes, new: bytes) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        assert old in files[RESULTS]
        files[RESULTS] = files[RESULTS].replace(old, new, 1)

    return edit


def _huge(files: dict[str, bytes]) -> None:
    files[RESULTS] = b" " * (MAX_TASK_LOG_BYTES + 1)


WHERE = f"{RESULTS}: results.{TASK}"
HOSTILE: dict[str, tuple[Edit, str]] = {
    "accuracy not the samples'": (
        _edit(_accuracy(0.5)),
        f"{WHERE}.{KEY}: accuracy 0.5, but its samples score 3 of 8 correct",
    ),
    "a sample's score changed": (
        _samples(_flip),
        f"{WHERE}.{KEY}: accuracy 0.375, but its samples score 2 of 8 correct",
    ),
    "accuracy a string": (_edit(_accuracy("0.375")), f"{WHERE}.{KEY}: '0.375' is not a number"),
    "a second metric": (_edit(_second_metric), f"{WHERE}: 2 metrics of exact_match/acc"),
    "no metric": (_edit(lambda r: r["results"][TASK].pop(KEY)), f"{WHERE}: 0 metrics"),
    "a group": (_edit(_group), f"{RESULTS}: group_subtasks: groups ['maths']"),
    "fewer samples than effective": (
        _edit(_nine),
        f"{SAMPLES}: 8 samples, the results say 9",
    ),
    "effective above original": (
        _edit(_counts(effective=9)),
        f"{RESULTS}: n-samples.{TASK}: effective 9 of original 8",
    ),
    "sample_len not n-samples": (
        _edit(lambda r: r["results"][TASK].update(sample_len=7)),
        f"{WHERE}.sample_len: 7, n-samples says 8",
    ),
    "n-samples of other tasks": (
        _edit(lambda r: r["n-samples"].update(other={"original": 1, "effective": 1})),
        f"{RESULTS}: n-samples does not name the tasks of results",
    ),
    "a document twice": (
        _samples(lambda lines: lines[1].update(doc_id=0)),
        f"{SAMPLES}:2: doc_id 0 again",
    ),
    "another filter's samples": (
        _samples(lambda lines: lines[2].update(filter="none")),
        f"{SAMPLES}:3: filter 'none', the results' is 'last-word'",
    ),
    "a partial score": (
        _samples(lambda lines: lines[3].update(exact_match=0.5)),
        f"{SAMPLES}:4: exact_match 0.5 is neither 0 nor 1",
    ),
    "a boolean score": (
        _samples(lambda lines: lines[3].update(exact_match=True)),
        f"{SAMPLES}:4: exact_match True is neither 0 nor 1",
    ),
    "no samples": (
        _drop(SAMPLES),
        f"{WHERE}: no samples_{TASK}_<date>.jsonl (written without --log_samples)",
    ),
    "samples of a task not reported": (
        _copy(SAMPLES, f"{DIR}/samples_other_2026-12-01T16-24-59.937283.jsonl"),
        "samples of task 'other', which",
    ),
    "a task's samples twice": (
        _copy(SAMPLES, f"{DIR}/samples_{TASK}_2026-12-02T00-00-00.000000.jsonl"),
        f"a second samples file of task '{TASK}'",
    ),
    "two results files": (
        _copy(RESULTS, f"{DIR}/results_2026-12-02T00-00-00.000000.json"),
        "2 results files",
    ),
    "no results": (_drop(RESULTS), "lm_eval wrote no results_<date>.json"),
    "no version": (
        _edit(lambda r: r.pop("lm_eval_version")),
        f"{RESULTS}: lm_eval_version: None is not a string",
    ),
    "a task name the format cannot hold": (
        _edit(
            lambda r: r.update(results={"a b": r["results"][TASK]}, **{"n-samples": {"a b": {}}})
        ),
        f"{RESULTS}: results: 'a b' is not a task name",
    ),
    "NaN": (_raw(b'"exact_match,last-word": 0.375', b'"exact_match,last-word": NaN'), RESULTS),
    "a key twice": (_raw(b'"results": {', b'"results": {}, "results": {'), RESULTS),
    "an empty samples line": (
        lambda files: files.update({SAMPLES: files[SAMPLES].replace(b"\n", b"\n\n", 1)}),
        f"{SAMPLES}:2: an empty line",
    ),
    "huge": (_huge, f"{RESULTS}: {MAX_TASK_LOG_BYTES + 1} bytes, over the"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_outputs_are_one_located_refusal(case: str) -> None:
    edit, message = HOSTILE[case]
    files = recorded()
    edit(files)
    with pytest.raises(OutputsUnreadable) as raised:
        read_outputs("lm-eval", files, ["tool_instruction"])
    assert message in str(raised.value), str(raised.value)
    assert "\n" not in str(raised.value)


def test_any_value_anywhere_reads_or_is_refused_never_crashes() -> None:
    """Totality: each field of the results, and of the first sample, replaced by a hostile
    value or removed, reads or is one located refusal."""
    files = recorded()
    cases = [
        (where, {**files, RESULTS: json.dumps(changed).encode()})
        for where, changed in every_field_replaced(_report(files), frozenset({"configs"}))
    ]
    lines = files[SAMPLES].splitlines(keepends=True)
    for where, changed in every_field_replaced(json.loads(lines[0])):
        first = json.dumps(changed).encode() + b"\n"
        cases.append((where, {**files, SAMPLES: first + b"".join(lines[1:])}))
    refused = 0
    for where, changed_files in cases:
        try:
            read_outputs("lm-eval", changed_files, ["tool_instruction"])
        except OutputsUnreadable as exc:
            assert str(exc).startswith((DIR, "lm-eval: ")) and "\n" not in str(exc), where
            refused += 1
    assert refused > 100


# --- the pin set ------------------------------------------------------------------------------


def _gated_pins(commit: str, *extra: str) -> PinSetSource:
    return merged_pins(FRAGMENT, "lmeval", commit, "gx10-reference-v5-lm-eval", *extra)


def test_a_gate_of_lm_eval_is_validated_with_the_pin_set() -> None:
    data = copy.deepcopy(dict(_gated_pins("0" * 40).data))
    data["component_upstreams"]["tool_instruction"] = "lmeval"
    with pytest.raises(InvalidInput) as raised:
        pin_set_source(data, "mine.toml")
    assert "'lmeval' runs lm-eval, whose outputs are no score input under gx10" in str(raised.value)


# --- audit run: the gate beside tool/instruction, in the sandbox ------------------------------


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[dict[str, Path], str]:
    root = tmp_path_factory.mktemp("lmeval-mirror")
    return gate_mirror(root, mirrors, TASKS, "lmeval")


@pytest.fixture(scope="module")
def good_run(
    tmp_path_factory: pytest.TempPathFactory, gated: tuple[dict[str, Path], str]
) -> tuple[Path, PinSetSource, Verdict]:
    return gated_run(tmp_path_factory.mktemp("lmeval-run") / "bundle", gated, _gated_pins)


def test_a_run_keeps_the_outputs_and_reports_their_figures_beside_the_scores(
    good_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    bundle, _, verdict = good_run
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("QUALIFIED", "VALID")
    gates = {g.id: g for g in verdict.gates}
    assert gates["upstream_checkout"].status == "pass"
    assert "lmeval" in gates["upstream_checkout"].reason
    tallies = json.loads(blob(bundle, TALLIES))
    (task,) = tallies["tasks"].values()
    raw = "components/tool_instruction/gates/lmeval/raw/"
    result = json.loads(blob(bundle, TOOL_RESULT))
    kept = sorted(n.removeprefix(raw) for n in result["raw_outputs"] if n.startswith(raw))
    model = MODEL_ID  # the runtime model id, as lm-eval names its directory
    date = "2026-01-01t00-00-00.000000"  # lower case, as raw outputs are kept
    assert kept == [
        f"{model}/results_{date}.json",
        f"{model}/samples_arithmetic_local_{date}.jsonl",
    ]
    report = json.loads(blob(bundle, raw + kept[0]))
    lines = [json.loads(line) for line in blob(bundle, raw + kept[1]).splitlines()]
    hits = int(sum(s["exact_match"] for s in lines))
    assert task == {"hits": hits, "n": 8}
    (shown,) = verdict.diagnostics.supplementary
    assert (shown.component, shown.upstream, shown.subsets, shown.samples) == (
        "tool_instruction", "lmeval", 1, 8
    )  # fmt: skip
    assert shown.overall_accuracy == pytest.approx(100 * hits / 8)
    assert (shown.v4_overall, shown.harness_version) == (None, "0.4.13")
    assert shown.harness_model == tallies["model"] == report["model_name"] == model
    # never a score: tool/instruction is the BenchLocal pack mean as without the gate
    packs = json.loads(blob(bundle, "components/tool_instruction/benchlocal-packs.json"))
    assert verdict.scores.tool_instruction == pytest.approx(packs["mean"])
    assert result["status"] == "COMPLETED"
    assert result["metrics"]["lm_eval_samples"] == 8
    # the exchanges it made are the component's, through the observer
    exchanges = [
        json.loads(line) for line in blob(bundle, "transport/exchanges.jsonl").splitlines()
    ]
    asked = [e for e in exchanges if asks_a_sample(e["request_body"], SAMPLE_ENDINGS)]
    assert len(asked) == 8 and {e["component"] for e in asked} == {"tool_instruction"}
    # the reference endpoint answers "Reply with exactly: X" with X, and the sums with noise
    assert hits == 2


def test_a_gate_whose_outputs_do_not_read_fail_its_component_as_infrastructure(
    tmp_path: Path, gated: tuple[dict[str, Path], str]
) -> None:
    mirrors, commit = gated
    verdict = run_gated(tmp_path / "bundle", mirrors, _gated_pins(commit, "--broken"))
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    result = json.loads(blob(tmp_path / "bundle", TOOL_RESULT))
    assert result["status"] == "FAILED"
    assert result["reason"].startswith("its gate lmeval failed: lmeval: ")
    assert (
        "results.arithmetic_local.exact_match,last-word: accuracy 1.0, but its samples score"
        in (result["reason"])
    )
    assert verdict.scores.tool_instruction is None and verdict.diagnostics.supplementary == ()


# --- the verifier: a record that disagrees with the raw outputs ---------------------------------


def _more_hits(files: Files) -> None:
    tallies = json.loads(files[TALLIES][0])
    tallies["tasks"]["arithmetic_local"]["hits"] += 1
    put_json(files, TALLIES, tallies)


def _better_metric(files: Files) -> None:
    result = json.loads(files[TOOL_RESULT][0])
    result["metrics"]["lm_eval_accuracy"] = 99.0
    put_json(files, TOOL_RESULT, result)


def _raw_edited(files: Files) -> None:
    (name,) = [n for n in files if "/gates/lmeval/raw/" in n and "/results_" in n]
    report = json.loads(files[name][0])
    report["results"]["arithmetic_local"]["exact_match,last-word"] = 1.0
    files[name] = (json.dumps(report).encode(), files[name][1])


def _other_model(files: Files) -> None:
    tallies = json.loads(files[TALLIES][0])
    tallies["model"] = "another-model"
    put_json(files, TALLIES, tallies)


def _outputs_of_another_model(files: Files) -> None:
    """Outputs of another model's run, their tallies written from them as a runner would."""
    (name,) = [n for n in files if "/gates/lmeval/raw/" in n and "/results_" in n]
    report = json.loads(files[name][0])
    report["model_name"] = "another-model"
    files[name] = (json.dumps(report).encode(), files[name][1])
    _other_model(files)


@pytest.mark.parametrize(
    ("edit", "entry", "message"),
    [
        (_more_hits, TALLIES, "the tallies are not what the raw outputs of lmeval say"),
        (_other_model, TALLIES, "the tallies are not what the raw outputs of lmeval say"),
        (_better_metric, TOOL_RESULT, "metric lm_eval_accuracy is 99; the raw outputs of"),
        (_raw_edited, TALLIES, "the lmeval raw outputs do not read: "),
        (
            _outputs_of_another_model,
            TALLIES,
            f"lmeval's outputs are of model 'another-model'; the run's model is '{MODEL_ID}'",
        ),
    ],
    ids=["tallies", "model", "metric", "raw", "outputs-model"],
)
def test_a_forged_record_is_caught_against_the_raw_outputs(
    good_run: tuple[Path, PinSetSource, Verdict],
    tmp_path: Path,
    edit: Callable[[Files], None],
    entry: str,
    message: str,
) -> None:
    assert_forgery_caught(good_run, tmp_path / "forged", edit, entry, message)


def test_a_completed_component_without_its_gates_tallies_is_held_as_infrastructure(
    good_run: tuple[Path, PinSetSource, Verdict], tmp_path: Path
) -> None:
    verdict = assert_held_without_tallies(good_run, tmp_path / "forged", TALLIES, "lmeval")
    assert verdict.diagnostics.supplementary == ()
