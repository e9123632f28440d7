"""The recorded real bundle (examples/recorded/): one run of gx10-qualification-v5 with the real
upstream harnesses (Spark Bench, benchlocal-cli, Infermark) against llama-cpp-python's server and
SmolLM2-135M-Instruct, verified on every `make test` without a server. Every expectation is
derived from the bundle's raw evidence (the transport log, the ledger, the harnesses' own output
files) and seed 000's formulas, never from the verdict itself."""

from __future__ import annotations

import csv
import io
import json
import statistics
import tarfile
from typing import Any

import pytest

from audit.cli import main
from pins import CURRENT, load_builtin
from tests.paths import EXAMPLES
from tests.real_runs import Bundle, check_gates, check_outcome
from verify import verify_bundle

RECORDED = EXAMPLES / "recorded"
TAR = RECORDED / "llamacpp-smollm2-135m.tar"
BEHAVIOURAL_PACKS = ("toolcall-15", "instructfollow-15", "structoutput-15", "dataextract-15")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("recorded") / "bundle"
    assert main(["unpack", str(TAR), "-o", str(root)]) == 0
    return Bundle(root)


@pytest.fixture(scope="module")
def verdict() -> dict[str, Any]:
    return json.loads(verify_bundle(TAR).verdict.model_dump_json())


def test_the_recorded_bundle_is_whole_and_its_claims_are_the_replay(
    verdict: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert verdict["integrity"] == verdict["integrity"] | {"status": "ok", "findings": []}
    assert verdict["claims"] == {"match": True, "differences": []}
    assert verdict["pin_set"]["id"] == CURRENT
    # judged by the shipped pin set; where it is not the digest the run names (the bundle was
    # recorded before the bfcl gate joined it), the verdict says so
    named = json.loads(_manifest())["pin_set"]
    judged = f"the run names pin set {named['id']} {named['digest']}; judged by {CURRENT} "
    assert (named["digest"] != verdict["pin_set"]["digest"]) == any(
        r.startswith(judged) for r in verdict["reasons"]
    ), verdict["reasons"]
    assert main(["verify", str(TAR)]) == 0  # a verdict reached: INFRA_ERROR is not exit 1
    capsys.readouterr()


def test_the_gates_and_the_outcome_follow_the_raw_evidence(
    unpacked: Bundle, verdict: dict[str, Any]
) -> None:
    exchanges = unpacked.lines("transport/exchanges.jsonl")
    check_gates(unpacked, exchanges, verdict)
    check_outcome(verdict)
    gates = {g["id"]: g for g in verdict["gates"]}
    # the shipped real pin set names no Hermes harness (ADR 0016)
    assert "hermes" not in load_builtin(CURRENT).pins.component_upstreams
    assert gates["upstream_checkout"]["status"] == "infra"
    assert "pins no upstream harness for hermes" in gates["upstream_checkout"]["reason"]
    # the public Spark Bench reports no golden gate or run-valid marker: never taken as passed
    rows = list(
        csv.DictReader(io.StringIO(unpacked.blob(_raw(unpacked, "spark_bench.csv")).decode()))
    )
    if not any(r["metric"] in ("golden_gate", "run_valid") for r in rows):
        assert gates["upstream_integrity"]["status"] == "infra"
        # and the reason says they were not reported, not that they failed
        assert gates["upstream_integrity"]["reason"] == (
            "SparkBench reported no golden gate or run-valid marker (a gate not reported is not "
            "passed)"
        )
    assert (verdict["outcome"], verdict["rankable"]) == ("INFRA_ERROR", False)


def _manifest() -> bytes:
    with tarfile.open(TAR) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        return member.read()


def _raw(bundle: Bundle, leaf: str) -> str:
    (name,) = (n for n in bundle.evidence if n.endswith(f"/raw/{leaf}"))
    return name


def test_the_scores_are_the_seeds_formulas_over_the_harnesses_own_files(
    unpacked: Bundle, verdict: dict[str, Any]
) -> None:
    scores = verdict["scores"]
    rows = list(
        csv.DictReader(io.StringIO(unpacked.blob(_raw(unpacked, "spark_bench.csv")).decode()))
    )
    value = {(r["tier"], r["workload"], r["metric"]): float(r["value"]) for r in rows if r["value"]}
    assert scores["coding"] == pytest.approx(value["eval", "code", "domain_quality"])
    assert scores["reliability"] == pytest.approx(value["eval", "overall", "reliability"])
    packs = {
        p["pack_id"]: p
        for p in json.loads(unpacked.blob(_raw(unpacked, "benchlocal.json")))["packs"]
    }
    expected = statistics.fmean(packs[p]["passed"] / packs[p]["total"] for p in BEHAVIOURAL_PACKS)
    assert scores["tool_instruction"] == pytest.approx(100 * expected)
    (level,) = json.loads(unpacked.blob(_raw(unpacked, "infermark.json")))["results"]
    assert level["concurrency"] == 1 and level["n_error"] == 0
    throughput = min(100, level["tokens_per_second"] * 10)
    ttft = max(0, 100 - max(0, level["ttft"]["p50"] - 1) * 10)
    assert scores["performance"] == pytest.approx((throughput + ttft) / 2)
    assert scores["hermes"] is None and scores["executed_weight"] == 70
