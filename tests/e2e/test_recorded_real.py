"""The recorded real bundles (examples/recorded/): runs of gx10-qualification-v5 with the real
upstream harnesses (Spark Bench, benchlocal-cli, Infermark) against llama-cpp-python's server
and SmolLM2-135M-Instruct, verified on every `make test` without a server. The newest ran
bfcl-eval's gate too, on a draw its pin set names (ADR 0046); the first, recorded before that
gate joined the pin set, is the bundle the attack tests forge from. Every expectation is derived
from the bundle's raw evidence (the transport log, the ledger, the harnesses' own output files)
and seed 000's formulas, never from the verdict itself."""

from __future__ import annotations

import csv
import html
import io
import json
import statistics
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import TransportExchange
from pins import CURRENT, PinSetSource, load_builtin
from pins._loader import parse_pin_set
from tests.paths import EXAMPLES
from tests.real_runs import (
    RECORDED_DRAW,
    RECORDING_PINS,
    Bundle,
    check_gates,
    check_outcome,
    reply,
)
from verify import verify_bundle
from verify._consistency.spark import _suite_asks
from verify.sparkbench import NO_CODE, NO_COMPILE, SparkReply, spark_reply

RECORDED = EXAMPLES / "recorded"
TAR = RECORDED / "llamacpp-smollm2-135m.tar"
"""Recorded 2026-12-01 under an earlier digest of the shipped pin set, before bfcl-eval's gate."""
DRAW_TAR = RECORDED / "llamacpp-smollm2-135m-bfcl-draw.tar"
"""Recorded 2026-12-06 under the pin set beside it (ADR 0046)."""
DRAW_PINS = RECORDED / f"{RECORDING_PINS}.toml"
BEHAVIOURAL_PACKS = ("toolcall-15", "instructfollow-15", "structoutput-15", "dataextract-15")


def _own_pins(tar: Path) -> PinSetSource | None:
    """The pin set a recording ran under when it is not a shipped one (None: the shipped one
    it names judges it)."""
    return parse_pin_set(DRAW_PINS.read_bytes(), str(DRAW_PINS)) if tar == DRAW_TAR else None


@pytest.fixture(scope="module", params=[TAR, DRAW_TAR], ids=["2026-12-01", "bfcl-draw"])
def tar(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


@pytest.fixture(scope="module")
def unpacked(tar: Path, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("recorded") / "bundle"
    assert main(["unpack", str(tar), "-o", str(root)]) == 0
    return Bundle(root)


@pytest.fixture(scope="module")
def verdict(tar: Path) -> dict[str, Any]:
    """Judged by the pin set it ran under."""
    return json.loads(verify_bundle(tar, pins=_own_pins(tar)).verdict.model_dump_json())


def test_the_recorded_bundle_is_whole_and_its_claims_are_the_replay(
    tar: Path, verdict: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert verdict["integrity"] == verdict["integrity"] | {"status": "ok", "findings": []}
    assert verdict["claims"] == {"match": True, "differences": []}
    named = json.loads(_manifest(tar))["pin_set"]
    judge = _own_pins(tar) or load_builtin(CURRENT)
    assert verdict["pin_set"] == {"id": judge.id, "digest": judge.digest}
    # judged by the shipped pin set (the first recording's default; the draw's when asked):
    # where it is not the pin set the run names, the verdict says so, and the claims still match
    shipped = json.loads(verify_bundle(tar, pins=load_builtin(CURRENT)).verdict.model_dump_json())
    judged = f"the run names pin set {named['id']} {named['digest']}; judged by {CURRENT} "
    assert shipped["claims"]["match"], shipped["claims"]
    # the draw's bfcl-eval gate is not the shipped pin set's (its command asks every entry)
    asked = "the pinned command asks (--test-category single_turn: every entry of"
    found = [f["message"] for f in shipped["integrity"]["findings"]]
    assert [asked in m for m in found] == ([True] if _own_pins(tar) else []), found
    assert (named["digest"] != shipped["pin_set"]["digest"]) == any(
        r.startswith(judged) for r in shipped["reasons"]
    ), shipped["reasons"]
    pins = ["--pins", str(DRAW_PINS)] if _own_pins(tar) else []
    assert main(["verify", str(tar), *pins]) == 0  # a verdict reached: INFRA_ERROR is not exit 1
    capsys.readouterr()


def test_the_gates_and_the_outcome_follow_the_raw_evidence(
    unpacked: Bundle, verdict: dict[str, Any]
) -> None:
    exchanges = unpacked.lines("transport/exchanges.jsonl")
    check_gates(unpacked, exchanges, verdict)
    check_outcome(verdict)
    gates = {g["id"]: g for g in verdict["gates"]}
    # the shipped real pin set names no Hermes harness (ADR 0016), nor the draw's made from it
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


def _manifest(path: Path) -> bytes:
    with tarfile.open(path) as tar:
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


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("drawn") / "bundle"
    assert main(["unpack", str(DRAW_TAR), "-o", str(root)]) == 0
    return Bundle(root)


BFCL_RAW = "components/tool_instruction/gates/bfcl/raw/"


def _bfcl_files(bundle: Bundle, kind: str) -> dict[str, str]:
    """bfcl-eval's score or result files in the bundle, by subset."""
    prefix = f"{BFCL_RAW}{kind}/"
    return {
        n.rsplit("/", 1)[1].removeprefix("bfcl_v4_").removesuffix(f"_{kind}.json"): n
        for n in bundle.evidence
        if n.startswith(prefix) and n.endswith(f"_{kind}.json")
    }


def test_the_draw_is_the_one_its_pin_set_names(drawn: Bundle) -> None:
    """The pin set kept beside the bundle is the one the run names; the draw bfcl-eval read
    (among its outputs) is the one that pin set's command names, entry by entry."""
    pins = parse_pin_set(DRAW_PINS.read_bytes(), str(DRAW_PINS))
    assert drawn.manifest["pin_set"] == {"id": RECORDING_PINS, "digest": pins.digest}
    command = pins.pins.harnesses["bfcl"].command
    drawn_args = command[command.index("{endpoint}/v1") + 1 : command.index("generate")]
    named = dict(a.split("=") for a in drawn_args)
    assert {k: v.split(",") for k, v in named.items()} == RECORDED_DRAW
    assert drawn.json(f"{BFCL_RAW}test_case_ids_to_generate.json") == RECORDED_DRAW
    # each subset's result file answers exactly its drawn entries
    results = _bfcl_files(drawn, "result")
    assert set(results) == set(RECORDED_DRAW)
    for subset, name in results.items():
        ids = sorted(json.loads(line)["id"] for line in drawn.blob(name).splitlines())
        assert ids == sorted(RECORDED_DRAW[subset]), subset


def test_the_bfcl_gate_is_bfcl_eval_s_own_count(
    drawn: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate's figures in the verdict are bfcl-eval's score files' own: each subset's header
    counts, their sum, and data_overall.csv's Overall Acc (BFCL V4's weighting)."""
    verdict = json.loads(
        verify_bundle(DRAW_TAR, pins=_own_pins(DRAW_TAR)).verdict.model_dump_json()
    )
    gates = {g["id"]: g for g in verdict["gates"]}
    headers = {
        subset: json.loads(drawn.blob(name).split(b"\n", 1)[0])
        for subset, name in _bfcl_files(drawn, "score").items()
    }
    assert {s: h["total_count"] for s, h in headers.items()} == {
        s: len(ids) for s, ids in RECORDED_DRAW.items()
    }
    hits = sum(h["correct_count"] for h in headers.values())
    n = sum(h["total_count"] for h in headers.values())
    overall = drawn.blob(f"{BFCL_RAW}score/data_overall.csv").decode().splitlines()[1].split(",")
    (gate,) = verdict["diagnostics"]["supplementary"]
    assert gate["upstream"] == "bfcl" and gate["component"] == "tool_instruction"
    assert (gate["samples"], gate["subsets"]) == (n, len(RECORDED_DRAW))
    assert gate["overall_accuracy"] == pytest.approx(100 * hits / n)
    assert f"{gate['v4_overall']:.2f}%" == overall[1]
    # and audit verify says them under the scores
    assert main(["verify", str(DRAW_TAR), "--pins", str(DRAW_PINS)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert (
        f"bfcl (tool_instruction's gate, not scored): {n} samples in {len(RECORDED_DRAW)} "
        f"subsets, {100 * hits / n:.2f}% right; BFCL V4 overall {overall[1]}"
    ) in said
    # the gate read and aggregated: tool/instruction completed, its checkout not failed
    assert "bfcl " not in gates["upstream_checkout"]["reason"]
    assert drawn.json("components/tool_instruction/result.json")["status"] == "COMPLETED"


def test_each_bfcl_answer_is_a_reply_in_the_transport_log(drawn: Bundle) -> None:
    """Every answer bfcl-eval recorded is one reply the observer saw: its text (or the names of
    the functions it called) and the engine's token counts, each reply used once."""
    replies: Counter[tuple[Any, ...]] = Counter()
    for exchange in drawn.lines("transport/exchanges.jsonl"):
        if exchange["component"] != "tool_instruction" or exchange["status"] != 200:
            continue
        body = reply(exchange)
        if not isinstance(body, dict) or "usage" not in body:
            continue  # a streamed reply (benchlocal-cli's): bfcl-eval's are not
        message = body["choices"][0]["message"]
        calls = tuple(sorted(c["function"]["name"] for c in message.get("tool_calls") or ()))
        usage = body["usage"]
        said = calls or message.get("content")
        replies[usage["prompt_tokens"], usage["completion_tokens"], said] += 1
    answers = 0
    for name in _bfcl_files(drawn, "result").values():
        for line in drawn.blob(name).splitlines():
            entry = json.loads(line)
            result = entry["result"]
            said = (
                result if isinstance(result, str) else tuple(sorted(next(iter(c)) for c in result))
            )
            key = (entry["input_token_count"], entry["output_token_count"], said)
            assert replies[key] > 0, f"{entry['id']}: no reply in the transport log says {said!r}"
            replies[key] -= 1
            answers += 1
    assert answers == sum(len(ids) for ids in RECORDED_DRAW.values())


def test_the_html_report_shows_the_gate_s_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The review page says what audit verify says of the gate, under the scores."""
    page = tmp_path / "report.html"
    assert main(["show", str(DRAW_TAR), "--pins", str(DRAW_PINS), "--html", str(page)]) == 0
    capsys.readouterr()
    text = html.unescape(page.read_text())
    scores = text[text.index('<section id="scores">') :]
    scores = scores[: scores.index("</section>")]
    assert (
        '<p class="gate-figures">bfcl (tool_instruction\'s gate, not scored): 39 samples' in scores
    )


COMPILE_ERRORS = ("SyntaxError", "IndentationError", "TabError")


def test_each_spark_code_score_is_one_its_logged_answers_can_earn(unpacked: Bundle) -> None:
    """Each code scenario Spark Bench scored was asked twice (its pinned ``--repeats``) in the
    transport log, with its messages and ``max_tokens``. Where Spark's own note on a scenario
    (the reason of its last repeat) says that answer's code did not compile, the verifier's
    reading of that logged answer says so too (ADR 0050); and no score is more than its two
    answers can earn."""
    listing = unpacked.blob("upstreams/sparkbench/tree.txt").decode()
    (suite_blob,) = [r.split()[2] for r in listing.splitlines() if r.endswith("\teval_suite.py")]
    asks = _suite_asks(unpacked.blob(f"upstreams/sparkbench/files/{suite_blob}"))
    answers: dict[bytes, list[tuple[int, SparkReply]]] = {}
    for line in unpacked.lines("transport/exchanges.jsonl"):
        if (read := spark_reply(TransportExchange.model_validate(line))) is not None:
            answers.setdefault(read.ask, []).append((line["id"], read))
    rows = csv.DictReader(
        io.StringIO(unpacked.blob("components/coding/raw/spark_bench.csv").decode())
    )
    scored = [r for r in rows if r["metric"] == "score" and r["notes"].startswith("code:")]
    assert len(scored) == 10
    did_not_compile = 0
    for row in scored:
        scenario = asks[row["workload"]]
        assert scenario.ask is not None and scenario.grader in ("python", "sql")
        asked = sorted(answers[scenario.ask], key=lambda a: a[0])
        assert len(asked) == 2, row["workload"]
        why = [getattr(read, scenario.grader) for _, read in asked]
        if row["notes"].startswith(
            ("code:execution failed: SyntaxError", "code:execution failed: IndentationError")
        ):
            assert why[-1] == NO_COMPILE, row
            did_not_compile += 1
        if row["notes"] == "code:no python code found":
            assert why[-1] == NO_CODE, row
        if row["notes"].startswith("code:SQL error"):
            assert why[-1] is None, row  # a query was found: SQLite refused it when run
        most = sum(w is None for w in why) / 2
        assert float(row["value"]) <= most, (row, why)
    assert did_not_compile >= 2
