"""Inspect AI read in its own output format, and run beside tool/instruction as its gate
(ADR 0027).

The reader is tested on the log the real Inspect AI 0.3.285 wrote against a real llama.cpp
server, on the task the project ships (tests/data/inspect_ai_tasks/: `arithmetic.py` reads
`arithmetic.jsonl` with `json_dataset`, no hub; tests/data/upstream_outputs/inspect-ai/, README
there), and on hostile variants of it; the gate end to end by `audit run` against the reference
endpoint with the pin set fragment tests/data/pins/inspect-ai-gate.toml, whose command is a
stand-in writing Inspect's log (tests/data/inspect_ai_tasks/inspect_ref.py), in the sandbox, and
by the verifier on that bundle and on forged copies of it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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

RECORDED = DATA / "upstream_outputs" / "inspect-ai"
TASKS = DATA / "inspect_ai_tasks"
FRAGMENT = DATA / "pins" / "inspect-ai-gate.toml"
LOG = "logs/2026-12-01T16-16-41-00-00_arithmetic_3GWuMMCcSpvsE7A5Pqwc4G.json"
TALLIES = "components/tool_instruction/gates/inspect/tasks.json"
TOOL_RESULT = "components/tool_instruction/result.json"
SAMPLE_ENDINGS = (
    "Answer with the number only.",
    "Reply with exactly: yes",
    "Reply with exactly: blue",
)
"""How the data set's eight inputs end (arithmetic.jsonl)."""


def recorded() -> dict[str, bytes]:
    return output_files(RECORDED)


def _log(files: dict[str, bytes]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(files[LOG])
    return value


# --- the reader, on what the real Inspect AI wrote ----------------------------------------------


def test_the_real_log_reads_as_inspect_counted_it() -> None:
    files = recorded()
    log = _log(files)
    outputs = read_outputs("inspect-ai", files, ["tool_instruction"])
    ((name, (kind, tallies)),) = outputs.records.items()
    assert (name, kind) == ("components/tool_instruction/tasks.json", "task-tallies")
    # what inspect eval printed: "match / accuracy 0.375", 8 samples
    (score,) = log["results"]["scores"]
    assert score["metrics"]["accuracy"]["value"] == 0.375
    assert tallies.tasks["arithmetic"].model_dump() == {"hits": 3, "n": 8}
    assert (tallies.harness, tallies.version) == ("inspect-ai", "0.3.285")
    assert tallies.model == "openai-api/local/smollm2-135m-instruct" == log["eval"]["model"]
    assert sum(s["scores"]["match"]["value"] == "C" for s in log["samples"]) == 3
    assert outputs.metrics == {
        "tool_instruction": {
            "inspect_ai_accuracy": 37.5, "inspect_ai_samples": 8, "inspect_ai_tasks": 1,
        }
    }  # fmt: skip


def test_the_verifier_reads_the_kept_lower_case_names_alike() -> None:
    files = recorded()
    lower = {name.lower(): data for name, data in files.items()}
    assert lower.keys() != files.keys()
    ran = read_gate_outputs("inspect-ai", files, "tool_instruction", "inspect")
    reread = read_gate_outputs("inspect-ai", lower, "tool_instruction", "inspect")
    assert ran.records == reread.records and ran.metrics == reread.metrics
    assert list(ran.records) == [TALLIES]


Edit = Callable[[dict[str, bytes]], None]


def _edit(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        log = _log(files)
        change(log)
        files[LOG] = json.dumps(log).encode()

    return edit


def _accuracy(value: float) -> Callable[[dict[str, Any]], None]:
    def change(log: dict[str, Any]) -> None:
        log["results"]["scores"][0]["metrics"]["accuracy"]["value"] = value

    return change


def _sample(index: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(log: dict[str, Any]) -> None:
        log["samples"][index].update(fields)

    return change


def _flip(log: dict[str, Any]) -> None:
    log["samples"][0]["scores"]["match"]["value"] = "I"  # add-1 was correct


def _value(value: object) -> Callable[[dict[str, Any]], None]:
    def change(log: dict[str, Any]) -> None:
        log["samples"][1]["scores"]["match"]["value"] = value

    return change


def _second_scorer(log: dict[str, Any]) -> None:
    log["results"]["scores"].append(copy.deepcopy(log["results"]["scores"][0]))


def _reduced(log: dict[str, Any]) -> None:
    log["reductions"][0]["samples"][1]["value"] = 1.0  # add-2 was incorrect


def _results(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(log: dict[str, Any]) -> None:
        log["results"].update(fields)

    return change


def _nine(log: dict[str, Any]) -> None:
    log["results"].update(total_samples=9, completed_samples=9)
    log["results"]["scores"][0]["scored_samples"] = 9


def _no_samples(log: dict[str, Any]) -> None:
    del log["samples"]


def _another(task: str, model: str | None = None, version: str | None = None) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        log = _log(files)
        log["eval"]["task"] = task
        log["eval"]["model"] = model or log["eval"]["model"]
        log["eval"]["packages"]["inspect_ai"] = version or "0.3.285"
        files["logs/second.json"] = json.dumps(log).encode()

    return edit


def _drop(files: dict[str, bytes]) -> None:
    del files[LOG]


def _raw(old: bytes, new: bytes) -> Edit:
    def edit(files: dict[str, bytes]) -> None:
        assert old in files[LOG]
        files[LOG] = files[LOG].replace(old, new, 1)

    return edit


def _huge(files: dict[str, bytes]) -> None:
    files[LOG] = b" " * (MAX_TASK_LOG_BYTES + 1)


SCORE = f"{LOG}: results.scores[0]"
HOSTILE: dict[str, tuple[Edit, str]] = {
    "accuracy not the samples'": (
        _edit(_accuracy(0.5)),
        f"{SCORE}.metrics.accuracy: accuracy 0.5, but its samples score 3 of 8 correct",
    ),
    "a sample's score changed": (
        _edit(_flip),
        f"{SCORE}.metrics.accuracy: accuracy 0.375, but its samples score 2 of 8 correct",
    ),
    "accuracy above 1": (_edit(_accuracy(3.0)), f"{SCORE}.metrics.accuracy.value: 3.0 is not a"),
    "a sample twice": (
        _edit(_sample(1, id="add-1")),
        f"{LOG}: samples[1]: sample 'add-1' again",
    ),
    "a second epoch": (_edit(_sample(2, epoch=2)), f"{LOG}: samples[2]: epoch 2, not 1"),
    "a partial score": (
        _edit(_value("P")),
        f"{LOG}: samples[1]: scores.match.value 'P' is neither 'C' nor 'I'",
    ),
    "a boolean score": (_edit(_value(True)), "scores.match.value True is neither"),
    "reductions disagree": (_edit(_reduced), f"{LOG}: reductions: 4 of 8 correct, its samples 3"),
    "two scorers": (_edit(_second_scorer), f"{LOG}: results.scores: 2 scorers"),
    "a sample missing": (
        _edit(_nine),
        f"{LOG}: samples: 8, the results say 9",
    ),
    "not completed": (
        _edit(_results(completed_samples=7)),
        f"{LOG}: results: 7 of 8 samples completed",
    ),
    "no samples": (_edit(_no_samples), f"{LOG}: samples: none (written with --no-log-samples)"),
    "an error status": (
        _edit(lambda log: log.update(status="error", error={"message": "boom"})),
        f"{LOG}: status 'error': the task did not complete ('boom')",
    ),
    "another format version": (
        _edit(lambda log: log.update(version=1)),
        f"{LOG}: version 1, not Inspect's 2",
    ),
    "epochs": (
        _edit(lambda log: log["eval"]["config"].update(epochs=3)),
        f"{LOG}: eval.config.epochs 3",
    ),
    "dataset ids not the samples": (
        _edit(lambda log: log["eval"]["dataset"]["sample_ids"].pop()),
        f"{LOG}: eval.dataset.sample_ids are not the samples scored",
    ),
    "a task twice": (_another("arithmetic"), "logs/second.json: task 'arithmetic' again"),
    "two models": (_another("other", model="openai/gpt-x"), "logs of 2 models"),
    "two versions": (_another("other", version="0.3.1"), "logs of 2 Inspect AI versions"),
    "a task name the format cannot hold": (
        _another("a b"),
        "logs/second.json: eval.task: 'a b' is not a task name",
    ),
    "no log": (_drop, "logs/: inspect eval wrote no JSON log"),
    "NaN": (_raw(b'"value": 0.375', b'"value": NaN'), f"{LOG}: "),
    "a key twice": (_raw(b'"status": "success"', b'"status": "success", "status": "x"'), LOG),
    "huge": (_huge, f"{LOG}: {MAX_TASK_LOG_BYTES + 1} bytes, over the"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_logs_are_one_located_refusal(case: str) -> None:
    edit, message = HOSTILE[case]
    files = recorded()
    edit(files)
    with pytest.raises(OutputsUnreadable) as raised:
        read_outputs("inspect-ai", files, ["tool_instruction"])
    assert message in str(raised.value), str(raised.value)
    assert "\n" not in str(raised.value)


def test_any_value_anywhere_reads_or_is_refused_never_crashes() -> None:
    """Totality: each field the reader could look at (the log's first sample and reduction
    among them) replaced by a hostile value, or removed, reads or is one located refusal."""
    files = recorded()
    skip = frozenset({"events", "messages", "attachments", "events_data", "plan", "stats"})
    refused = 0
    for where, changed in every_field_replaced(_log(files), skip):
        try:
            read_outputs("inspect-ai", {LOG: json.dumps(changed).encode()}, ["tool_instruction"])
        except OutputsUnreadable as exc:
            assert str(exc).startswith(("logs/", "inspect-ai: ")) and "\n" not in str(exc), where
            refused += 1
    assert refused > 100


# --- the pin set ------------------------------------------------------------------------------


def _gated_pins(commit: str, *extra: str) -> PinSetSource:
    return merged_pins(FRAGMENT, "inspect", commit, "gx10-reference-v5-inspect", *extra)


def test_a_gate_of_inspect_ai_is_validated_with_the_pin_set() -> None:
    data = copy.deepcopy(dict(_gated_pins("0" * 40).data))
    data["component_upstreams"]["tool_instruction"] = "inspect"
    with pytest.raises(InvalidInput) as raised:
        pin_set_source(data, "mine.toml")
    assert "'inspect' runs inspect-ai, whose outputs are no score input under gx10" in str(
        raised.value
    )


# --- audit run: the gate beside tool/instruction, in the sandbox ------------------------------


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[dict[str, Path], str]:
    root = tmp_path_factory.mktemp("inspect-mirror")
    return gate_mirror(root, mirrors, TASKS, "inspect")


@pytest.fixture(scope="module")
def good_run(
    tmp_path_factory: pytest.TempPathFactory, gated: tuple[dict[str, Path], str]
) -> tuple[Path, PinSetSource, Verdict]:
    return gated_run(tmp_path_factory.mktemp("inspect-run") / "bundle", gated, _gated_pins)


def test_a_run_keeps_the_logs_and_reports_their_figures_beside_the_scores(
    good_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    bundle, _, verdict = good_run
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("QUALIFIED", "VALID")
    gates = {g.id: g for g in verdict.gates}
    assert gates["upstream_checkout"].status == "pass"
    assert "inspect" in gates["upstream_checkout"].reason
    tallies = json.loads(blob(bundle, TALLIES))
    (task,) = tallies["tasks"].values()
    raw = "components/tool_instruction/gates/inspect/raw/logs/"
    result = json.loads(blob(bundle, TOOL_RESULT))
    (log_name,) = [n for n in result["raw_outputs"] if n.startswith(raw)]
    log = json.loads(blob(bundle, log_name))
    hits = sum(s["scores"]["match"]["value"] == "C" for s in log["samples"])
    assert task == {"hits": hits, "n": 8}
    (shown,) = verdict.diagnostics.supplementary
    assert (shown.component, shown.upstream, shown.subsets, shown.samples) == (
        "tool_instruction", "inspect", 1, 8
    )  # fmt: skip
    assert shown.overall_accuracy == pytest.approx(100 * hits / 8)
    assert (shown.v4_overall, shown.harness_version) == (None, "0.3.285")
    assert shown.harness_model == tallies["model"] == log["eval"]["model"]
    assert tallies["model"].startswith("openai-api/local/")
    # never a score: tool/instruction is the BenchLocal pack mean as without the gate
    packs = json.loads(blob(bundle, "components/tool_instruction/benchlocal-packs.json"))
    assert verdict.scores.tool_instruction == pytest.approx(packs["mean"])
    assert result["status"] == "COMPLETED"
    assert result["metrics"]["inspect_ai_samples"] == 8
    # the exchanges it made are the component's, through the observer
    exchanges = [
        json.loads(line) for line in blob(bundle, "transport/exchanges.jsonl").splitlines()
    ]
    asked = [e for e in exchanges if asks_a_sample(e["request_body"], SAMPLE_ENDINGS)]
    assert len(asked) == 8 and {e["component"] for e in asked} == {"tool_instruction"}
    # the reference endpoint answers "Reply with exactly: X" with X, and the sums with noise
    assert hits == 2


def test_a_gate_whose_log_does_not_read_fails_its_component_as_infrastructure(
    tmp_path: Path, gated: tuple[dict[str, Path], str]
) -> None:
    mirrors, commit = gated
    verdict = run_gated(tmp_path / "bundle", mirrors, _gated_pins(commit, "--broken"))
    assert verdict.integrity.findings == () and verdict.claims.match
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    result = json.loads(blob(tmp_path / "bundle", TOOL_RESULT))
    assert result["status"] == "FAILED"
    assert result["reason"].startswith("its gate inspect failed: inspect: logs/")
    assert "metrics.accuracy: accuracy 1.0, but its samples score" in result["reason"]
    assert verdict.scores.tool_instruction is None and verdict.diagnostics.supplementary == ()


# --- the verifier: a record that disagrees with the raw outputs ---------------------------------


def _more_hits(files: Files) -> None:
    tallies = json.loads(files[TALLIES][0])
    tallies["tasks"]["arithmetic"]["hits"] += 1
    put_json(files, TALLIES, tallies)


def _better_metric(files: Files) -> None:
    result = json.loads(files[TOOL_RESULT][0])
    result["metrics"]["inspect_ai_accuracy"] = 99.0
    put_json(files, TOOL_RESULT, result)


def _raw_edited(files: Files) -> None:
    (name,) = [n for n in files if "/gates/inspect/raw/logs/" in n]
    log = json.loads(files[name][0])
    log["results"]["scores"][0]["metrics"]["accuracy"]["value"] = 1.0
    files[name] = (json.dumps(log).encode(), files[name][1])


def _other_model(files: Files) -> None:
    tallies = json.loads(files[TALLIES][0])
    tallies["model"] = "openai-api/local/another-model"
    put_json(files, TALLIES, tallies)


def _log_of_another_model(files: Files) -> None:
    """A log of another model's run, its tallies written from it as a runner would."""
    (name,) = [n for n in files if "/gates/inspect/raw/logs/" in n]
    log = json.loads(files[name][0])
    log["eval"]["model"] = "openai-api/local/another-model"
    files[name] = (json.dumps(log).encode(), files[name][1])
    _other_model(files)


@pytest.mark.parametrize(
    ("edit", "entry", "message"),
    [
        (_more_hits, TALLIES, "the tallies are not what the raw outputs of inspect say"),
        (_other_model, TALLIES, "the tallies are not what the raw outputs of inspect say"),
        (_better_metric, TOOL_RESULT, "metric inspect_ai_accuracy is 99; the raw outputs of"),
        (_raw_edited, TALLIES, "the inspect raw outputs do not read: logs/"),
        (
            _log_of_another_model,
            TALLIES,
            "inspect's outputs are of model 'openai-api/local/another-model'; the run's model is",
        ),
    ],
    ids=["tallies", "model", "metric", "raw", "log-model"],
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
    verdict = assert_held_without_tallies(good_run, tmp_path / "forged", TALLIES, "inspect")
    assert verdict.diagnostics.supplementary == ()


def test_one_evaluation_s_log_kept_twice_is_refused() -> None:
    """A copy of a log with its task renamed counts its samples twice; Inspect AI gives every
    evaluation its own ``eval_id``, which the copy keeps: refused (the real log reads)."""
    files = recorded()
    log = _log(files)
    log["eval"]["task"] = "arithmetic_again"
    copy_name = LOG.replace("_arithmetic_", "_arithmetic-again_")
    assert copy_name != LOG
    files[copy_name] = json.dumps(log).encode()
    with pytest.raises(OutputsUnreadable, match=r"eval.eval_id '.*' again \(the first: "):
        read_outputs("inspect-ai", files, ["tool_instruction"])
