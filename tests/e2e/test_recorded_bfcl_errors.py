"""The recorded real bundle of bfcl-eval's gate on three whole categories with inference errors
(examples/recorded/llamacpp-smollm2-135m-bfcl-errors.tar, under the pin set kept beside it):
`audit run` against llama-cpp-python's server serving SmolLM2-135M with a 384-token context,
so that the longer prompts failed (HTTP 500) and bfcl-eval, after its client's retries,
recorded inference errors in place of their answers.

The verifier holds such a run to every entry its pinned command asks, and each inference error
to a request of its own that asked its question (ADR 0022, second amendment of 2026-12-06):
this is the honest case, on a real engine, with real retries, and what a forger who drops an
error's requests makes of it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Body
from pins import PinSetSource
from pins._loader import parse_pin_set
from tests.bfcl_kit import (
    BFCL_EVAL_DATA,
    LOG,
    forged_verdict,
    gate_findings,
    log_written,
    only_on_the_gate,
)
from tests.data.hostile.kit import Files, lines, read_bundle
from tests.gate_kit import Recorded
from tests.paths import EXAMPLES
from verify import verify_bundle
from verify.harness_outputs import BFCL_INFERENCE_ERROR
from verify.replies import body_json

TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m-bfcl-errors.tar"
PINS = EXAMPLES / "recorded" / "gx10-qualification-v5-bfcl-whole-check.toml"
CATEGORIES = {"live_parallel": 16, "live_parallel_multiple": 24, "live_relevance": 16}
RESULTS = "components/tool_instruction/gates/bfcl/raw/result/smollm2-135m-instruct/live/"


@pytest.fixture(scope="module")
def pins() -> PinSetSource:
    return parse_pin_set(PINS.read_bytes(), str(PINS))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("errors") / "bundle"
    assert main(["unpack", str(TAR), "-o", str(root)]) == 0
    return read_bundle(root)


def _entries(files: Files) -> dict[str, dict[str, Any]]:
    """Every entry of the result files, by id."""
    return {
        entry["id"]: entry
        for name in files
        if name.startswith(RESULTS) and name.endswith("_result.json")
        for entry in lines(files, name)
    }


def _errors(files: Files) -> list[str]:
    return sorted(
        sample for sample, entry in _entries(files).items()
        if isinstance(entry["result"], str) and entry["result"].startswith(BFCL_INFERENCE_ERROR)
    )  # fmt: skip


def _asked(exchange: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """What a request asked: its messages and the names of the functions it offers."""
    request = body_json(Body.model_validate(exchange["request_body"]))
    tools = tuple(t["function"]["name"] for t in request.get("tools", ()))
    return json.dumps(request["messages"], sort_keys=True), tools


def _question(sample: str) -> tuple[str, tuple[str, ...]]:
    """What bfcl-eval asks of ``sample`` (its data: the first turn, its functions' names with
    ``.`` as ``_``)."""
    subset = sample.rsplit("_", 1)[0]
    for line in (BFCL_EVAL_DATA / f"BFCL_v4_{subset}.json").read_text().splitlines():
        entry = json.loads(line)
        if entry["id"] == sample:
            names = tuple(f["name"].replace(".", "_") for f in entry["function"])
            return json.dumps(entry["question"][0], sort_keys=True), names
    raise AssertionError(f"no entry {sample}")


def test_the_run_verifies_as_the_whole_categories_it_asked(
    recorded: Recorded, pins: PinSetSource
) -> None:
    manifest, files = recorded
    assert manifest.pin_set.id == pins.id and manifest.pin_set.digest == pins.digest
    verdict = verify_bundle(TAR, pins=pins).verdict
    assert verdict.integrity.status == "ok" and verdict.integrity.findings == ()
    assert verdict.claims.match
    (gate,) = verdict.diagnostics.supplementary
    assert (gate.samples, gate.subsets) == (sum(CATEGORIES.values()), len(CATEGORIES))
    # every entry of the three categories, as bfcl-eval's data lists them
    answered = Counter(sample.rsplit("_", 1)[0] for sample in _entries(files))
    assert answered == CATEGORIES


def test_each_inference_error_is_a_request_of_its_own_that_failed(recorded: Recorded) -> None:
    """Re-derived apart from the verifier: each error's question (first turn and functions) was
    asked by requests of tool_instruction that failed (HTTP 500: the context was full), the
    client's retries among them, and no answered entry's."""
    _, files = recorded
    errors = _errors(files)
    assert errors  # the small context made some
    exchanges = [e for e in lines(files, LOG) if e["component"] == "tool_instruction"]
    asked = Counter(_asked(e) for e in exchanges if e["method"] == "POST")
    failed = Counter(_asked(e) for e in exchanges if e["method"] == "POST" and e["status"] == 500)
    for sample in errors:
        assert failed[_question(sample)] >= 1, sample
        assert asked[_question(sample)] == failed[_question(sample)], sample  # never answered
    assert sum(failed.values()) > len(errors)  # retries


def test_an_error_whose_requests_are_dropped_is_a_finding(
    recorded: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """A forger who drops every request that asked one errored entry (the log renumbered, the
    observer's count with it): the error is no request of its own."""
    _, files = recorded
    sample = _errors(files)[0]

    def edit(files: Files) -> None:
        exchanges = lines(files, LOG)
        kept = [
            e for e in exchanges
            if not (e["component"] == "tool_instruction" and e["method"] == "POST"
                    and _asked(e) == _question(sample))
        ]  # fmt: skip
        assert len(kept) < len(exchanges)
        log_written(files, kept)

    verdict = forged_verdict(recorded, pins, tmp_path / "b", edit)
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert f"inference error of {sample!r} is no request of tool_instruction" in message
