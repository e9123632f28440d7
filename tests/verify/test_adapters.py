"""Readers of the real upstreams' own output formats (docs/upstreams.md, ADR 0013).

Each reader is tested on what the real harness wrote (tests/data/upstream_outputs/, recorded
against the reference endpoint on 127.0.0.1; the README there says how), on variants of those
files that change one thing, and on the malformed and ambiguous forms it must refuse with a
located message. The runner's reader (audit/parsers.py) and the verifier's re-reading of the
kept raw outputs are the same code and give the same records.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.parsers import ParseFailed, parse_outputs
from bundle_schema.models import (
    BenchLocalPacks,
    ComponentResult,
    Gx10Evidence,
    InfermarkStreaming,
    SparkQuality,
    SparkRepeat,
)
from pins import PinSetSource, load_builtin, pin_set_source
from tests.paths import DATA
from verify._consistency import _raw_outputs, unread_raw_outputs
from verify.gx10 import performance_score, replay
from verify.harness_outputs import (
    BENCHLOCAL_TOOL_INSTRUCTION_PACKS,
    SPARK_BENCH_COLUMNS,
    Outputs,
    OutputsUnreadable,
    raw_name,
    read_markers,
    read_outputs,
)

DATA = DATA / "upstream_outputs"
SPARK = (DATA / "spark-bench" / "spark_bench.csv").read_bytes()
BENCHLOCAL = (DATA / "benchlocal-cli" / "benchlocal.json").read_bytes()
INFERMARK = (DATA / "infermark" / "infermark.json").read_bytes()
INFERMARK_LEVELS = (DATA / "infermark" / "infermark-default-levels.json").read_bytes()
SPARK_SERVES = ["coding", "reliability"]


def spark(data: bytes, components: list[str] = SPARK_SERVES) -> Outputs:
    return read_outputs("spark-bench", {"spark_bench.csv": data}, components)  # type: ignore[arg-type]


def benchlocal(data: bytes) -> Outputs:
    return read_outputs("benchlocal-cli", {"benchlocal.json": data}, ["tool_instruction"])


def infermark(data: bytes) -> Outputs:
    return read_outputs("infermark", {"infermark.json": data}, ["performance"])


def record(outputs: Outputs, name: str) -> Any:
    return outputs.records[name][1]


# --- Spark Bench --------------------------------------------------------------------------------


def spark_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(SPARK.decode())))


def spark_csv(rows: list[dict[str, str]], columns: tuple[str, ...] = SPARK_BENCH_COLUMNS) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def extra_row(metric: str, value: str, notes: str = "", tier: str = "eval") -> dict[str, str]:
    row = dict(spark_rows()[0])
    row.update(tier=tier, workload="gates", metric=metric, value=value, unit="", notes=notes)
    return row


def with_rows(*extra: dict[str, str]) -> bytes:
    return spark_csv([*spark_rows(), *extra])


def passing_gates() -> list[dict[str, str]]:
    return [extra_row("golden_gate", "PASS"), extra_row("run_valid", "1")]


def test_spark_bench_as_recorded() -> None:
    """The real run against the reference endpoint: the code domain scored 0 of 10 scenarios,
    repeat consistency 100, tier2 measured; this public version reports no golden gate and no
    run-valid marker, so the record does not pass them."""
    outputs = spark(SPARK)
    quality = record(outputs, "components/coding/spark-quality.json")
    assert isinstance(quality, SparkQuality)
    rows = spark_rows()
    code = next(r for r in rows if r["workload"] == "code" and r["metric"] == "domain_quality")
    assert quality.code_domain_quality == float(code["value"]) == 0.0
    assert quality.tasks == 10
    assert quality.passed == 0
    assert (quality.golden_gate, quality.run_valid, quality.self_integrity) == (
        "FAIL",
        False,
        "PASS",
    )
    assert quality.sampling_contamination is False
    assert quality.tier2 is not None
    assert quality.tier2.status == "AVAILABLE"
    assert quality.tier2.ttft_seconds == pytest.approx(0.003)
    repeat = record(outputs, "components/reliability/spark-repeat.json")
    assert isinstance(repeat, SparkRepeat)
    overall = next(r for r in rows if r["workload"] == "overall" and r["metric"] == "reliability")
    assert repeat.repeat_reliability == float(overall["value"])
    assert outputs.metrics["coding"]["spark_gates_reported"] == 0
    assert outputs.quarantines == {}


def test_spark_bench_code_domain_and_passes() -> None:
    rows = spark_rows()
    for row in rows:
        if row["workload"] == "code" and row["metric"] == "domain_quality":
            row["value"] = "71.5"
        if row["metric"] == "score" and row["workload"] in ("CODE-01", "CODE-02", "CODE-03"):
            row["value"] = "0.5" if row["workload"] == "CODE-03" else "1.0"
        if row["metric"] == "score" and row["workload"] == "IF-01":  # not the code domain
            row["value"] = "1.0"
    outputs = spark(spark_csv([*rows, *passing_gates()]))
    quality = record(outputs, "components/coding/spark-quality.json")
    assert (quality.code_domain_quality, quality.tasks, quality.passed) == (71.5, 10, 3)
    assert (quality.golden_gate, quality.run_valid) == ("PASS", True)
    assert outputs.metrics["coding"]["spark_gates_reported"] == 1


@pytest.mark.parametrize(
    ("rows", "golden", "valid", "integrity", "contaminated"),
    [
        ([("golden_gate", "FAIL"), ("run_valid", "1")], "FAIL", True, "PASS", False),
        ([("golden_gate", "pass"), ("run_valid", "false")], "PASS", False, "PASS", False),
        ([("golden_gate", "PASS"), ("run_valid", "1"), ("self_integrity", "FAIL")],
         "PASS", True, "FAIL", False),
        ([("golden_gate", "PASS"), ("run_valid", "1"), ("sampling_contamination", "1")],
         "PASS", True, "PASS", True),
    ],
)  # fmt: skip
def test_spark_bench_gate_rows_are_honoured(
    rows: list[tuple[str, str]], golden: str, valid: bool, integrity: str, contaminated: bool
) -> None:
    quality = record(
        spark(with_rows(*(extra_row(m, v) for m, v in rows))),
        "components/coding/spark-quality.json",
    )
    assert quality.golden_gate == golden
    assert quality.run_valid is valid
    assert quality.self_integrity == integrity
    assert quality.sampling_contamination is contaminated


def test_spark_bench_quarantine_row_is_the_marker_the_replay_honours() -> None:
    outputs = spark(
        with_rows(*passing_gates(), extra_row("quarantine", "1", "golden replay drifted"))
    )
    marker = outputs.quarantines["coding"]
    assert marker.upstream_reason == "golden replay drifted"
    assert marker.source == raw_name("coding", "spark_bench.csv")
    assert marker.provisional_metrics["code_domain_quality"] == 0.0
    assert marker.provisional_metrics["repeat_reliability"] == 100.0
    # a reason as the value, and a row that says "not quarantined"
    reason = spark(with_rows(extra_row("quarantine", "judge drift")))
    assert reason.quarantines["coding"].upstream_reason == "judge drift"
    assert spark(with_rows(extra_row("quarantine", "0"))).quarantines == {}


def test_spark_bench_quarantine_row_counts_when_the_rest_does_not_read() -> None:
    """Seed 000: the upstream's marker is authoritative whatever else its run lacks. A run with
    no code-domain score does not read; its quarantine row still quarantines (no provisional
    metrics: those are the rows that did not read). Two rows of it, or rows that do not read as
    CSV, are no marker."""
    rows = [r for r in spark_rows() if r["metric"] != "domain_quality"]
    quarantined = spark_csv([*rows, extra_row("quarantine", "1", "golden replay drifted")])
    with pytest.raises(OutputsUnreadable, match="domain_quality"):
        spark(quarantined)
    marker = read_markers("spark-bench", {"spark_bench.csv": quarantined}, SPARK_SERVES)
    assert marker["coding"].upstream_reason == "golden replay drifted"
    assert marker["coding"].provisional_metrics == {}
    assert marker["coding"].source == raw_name("coding", "spark_bench.csv")
    twice = spark_csv([*rows, extra_row("quarantine", "1"), extra_row("quarantine", "1")])
    for data in (twice, spark_csv(rows), b"\xff" + quarantined):
        assert read_markers("spark-bench", {"spark_bench.csv": data}, SPARK_SERVES) == {}
    # when every output reads, the markers are the reader's own, provisional metrics and all
    whole = with_rows(extra_row("quarantine", "1", "drift"))
    assert read_markers("spark-bench", {"spark_bench.csv": whole}, SPARK_SERVES) == (
        spark(whole).quarantines
    )


def test_reference_spark_marker_counts_without_its_repeat() -> None:
    marker = json.dumps({"quarantined": True, "reason": "drift", "provisional": {"q": 1}})
    files = {"quality.json": b"{}", "quarantine.json": marker.encode()}
    found = read_markers("spark", files, SPARK_SERVES)
    assert found["coding"].upstream_reason == "drift"
    assert found["coding"].provisional_metrics == {"q": 1}
    assert read_markers("spark", {"quarantine.json": b"{"}, SPARK_SERVES) == {}
    assert read_markers("benchlocal-cli", {"quarantine.json": marker.encode()},
                        ["tool_instruction"]) == {}  # fmt: skip


def test_spark_bench_tier2_failure_is_null_not_a_refusal() -> None:
    rows = [r for r in spark_rows() if not (r["tier"] == "tier2" and r["metric"] == "decode_tps")]
    for row in rows:
        if row["tier"] == "tier2" and row["metric"] == "prefill_tps":
            row["value"] = "timed out"
    tier2 = record(spark(spark_csv(rows)), "components/coding/spark-quality.json").tier2
    assert tier2.status == "PARTIAL"
    assert tier2.decode_tokens_per_second is None
    assert tier2.prefill_tokens_per_second is None
    assert tier2.ttft_seconds is not None
    untiered = [r for r in spark_rows() if r["tier"] != "tier2"]
    assert record(spark(spark_csv(untiered)), "components/coding/spark-quality.json").tier2 is None


def test_spark_bench_extra_columns_are_kept_unread() -> None:
    """The public repository's own results file carries two more columns; they are kept in
    the raw file and not read."""
    rows = [{**r, "mark": "new", "size_tier": "Small"} for r in spark_rows()]
    data = spark_csv(rows, (*SPARK_BENCH_COLUMNS, "mark", "size_tier"))
    assert spark(data).records == spark(SPARK).records


def _two_runs(rows: list[dict[str, str]]) -> None:
    rows.extend({**r, "run_id": "ref-code-20261201-130000"} for r in list(rows))


def _drop(column: str) -> Callable[[list[dict[str, str]]], None]:
    def edit(rows: list[dict[str, str]]) -> None:
        for row in rows:
            row.pop(column)

    return edit


def _set(workload: str, metric: str, value: str) -> Callable[[list[dict[str, str]]], None]:
    def edit(rows: list[dict[str, str]]) -> None:
        for row in rows:
            if (row["workload"], row["metric"]) == (workload, metric):
                row["value"] = value

    return edit


def _twice(workload: str, metric: str) -> Callable[[list[dict[str, str]]], None]:
    def edit(rows: list[dict[str, str]]) -> None:
        rows.append(next(r for r in rows if (r["workload"], r["metric"]) == (workload, metric)))

    return edit


def _without(workload: str, metric: str) -> Callable[[list[dict[str, str]]], None]:
    def edit(rows: list[dict[str, str]]) -> None:
        rows[:] = [r for r in rows if (r["workload"], r["metric"]) != (workload, metric)]

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_two_runs, r"spark_bench.csv: rows of 2 runs: 'ref-code-20261201-125117' \(from line 2\), "
                    r"'ref-code-20261201-130000' \(from line 62\): .* does not choose one"),
        (_twice("code", "domain_quality"),
         r"spark_bench.csv:62: a second row of eval code domain_quality \(the first at line 11\)"),
        (_twice("CODE-01", "score"), r"spark_bench.csv:62: a second score of scenario 'CODE-01'"),
        (_without("code", "domain_quality"), "no eval row of the 'code' domain's domain_quality"),
        (_without("overall", "reliability"), "no eval overall reliability row"),
        (_without("CODE-01", "score"), r"spark_bench.csv:11: the code domain states n=10, the "
                                       "run scored 9 code scenarios"),
        (_set("code", "domain_quality", "101"), r"spark_bench.csv:11: domain_quality is '101', "
                                                r"not a number in \[0, 100\]"),
        (_set("code", "domain_quality", "nan"), "spark_bench.csv:11: domain_quality is 'nan'"),
        (_set("CODE-02", "score", "x"), r"spark_bench.csv:\d+: score is 'x', not a number in "
                                        r"\[0, 1\]"),
        # float() takes these; Spark writes none of them
        (_set("overall", "reliability", "1_00"), r"reliability is '1_00', not a number"),
        (_set("overall", "reliability", " 100 "), r"reliability is ' 100 ', not a number"),
        (_set("overall", "reliability", "\uff11\uff10\uff10"), r"reliability is .*, not a number"),
        (_set("code", "domain_quality", "100.0"), r"spark_bench.csv:11: the code domain's quality "
                                                  r"is '100.0', outside what its 10 scenarios"),
        (_drop("metric"), "spark_bench.csv:1: no column metric: not Spark Bench's long format"),
    ],
)  # fmt: skip
def test_spark_bench_malformed_or_ambiguous_is_refused(
    edit: Callable[[list[dict[str, str]]], None], message: str
) -> None:
    rows = spark_rows()
    edit(rows)
    columns = tuple(rows[0]) if rows else SPARK_BENCH_COLUMNS
    with pytest.raises(OutputsUnreadable, match=message):
        spark(spark_csv(rows, columns))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"spark_bench.csv:1: no header row"),
        (SPARK.split(b"\r\n", 1)[0] + b"\r\n", "no rows after the header"),
        (SPARK.replace(b"thinking=auto", b"\xff", 1), "invalid UTF-8 at byte"),
        (SPARK + b"a,b\r\n", r"spark_bench.csv:62: 2 fields, the header has 16"),
        (SPARK + b',' * 15 + b"\r\n", "spark_bench.csv:62: no run_id"),
        (SPARK + b'x,"unterminated\r\n', r"spark_bench.csv:\d+: .*"),
        (SPARK.replace(b"run_id,", b"run_id,run_id,", 1), "column 'run_id' twice"),
        (with_rows(extra_row("golden_gate", "maybe")), "golden_gate is 'maybe', neither of"),
        (with_rows(extra_row("run_valid", "1"), extra_row("run_valid", "1")),
         "a second row of run_valid"),
        (with_rows(extra_row("quarantine", "1"), extra_row("quarantine", "0")),
         "a second row of quarantine"),
    ],
)  # fmt: skip
def test_spark_bench_unreadable_files(data: bytes, message: str) -> None:
    with pytest.raises(OutputsUnreadable, match=message):
        spark(data)


def test_spark_bench_file_missing() -> None:
    with pytest.raises(OutputsUnreadable, match=r"spark_bench.csv: the harness did not write it"):
        read_outputs("spark-bench", {"runs/x.md": b""}, ["coding"])


def test_spark_bench_reliability_not_served_is_not_required() -> None:
    rows = [r for r in spark_rows() if (r["workload"], r["metric"]) != ("overall", "reliability")]
    outputs = spark(spark_csv(rows), ["coding"])
    assert sorted(outputs.records) == ["components/coding/spark-quality.json"]


# --- benchlocal-cli -----------------------------------------------------------------------------


def bl_run() -> dict[str, Any]:
    return json.loads(BENCHLOCAL)


def bl_bytes(run: dict[str, Any]) -> bytes:
    return json.dumps(run).encode()


def bl_pack(run: dict[str, Any], pack_id: str) -> dict[str, Any]:
    return next(p for p in run["packs"] if p["pack_id"] == pack_id)


def test_benchlocal_cli_as_recorded() -> None:
    outputs = benchlocal(BENCHLOCAL)
    packs = record(outputs, "components/tool_instruction/benchlocal-packs.json")
    assert isinstance(packs, BenchLocalPacks)
    assert sorted(packs.packs) == sorted(BENCHLOCAL_TOOL_INSTRUCTION_PACKS)
    assert "reasonmath-15" in {p["pack_id"] for p in bl_run()["packs"]}  # run, not selected
    assert packs.mean == 0.0
    metrics = outputs.metrics["tool_instruction"]
    assert (metrics["packs"], metrics["packs_in_run"], metrics["thinking_contaminated_packs"]) == (
        4,
        5,
        0,
    )


def bl_passes(pack: dict[str, Any], passed: int) -> None:
    """The pack's first ``passed`` scenarios passed, the others not, and its count so."""
    for number, scenario in enumerate(pack["scenarios"]):
        verdict = number < passed
        mode = "passed" if verdict else scenario["failure_mode"]
        scenario.update(passed=verdict, failure_mode=mode)
        scenario["result"].update(passed=verdict, failure_mode=mode)
    pack["passed"] = passed
    pack["score"] = passed / pack["total"]


def test_benchlocal_cli_score_is_the_mean_of_the_selected_packs() -> None:
    run = bl_run()
    for pack_id, passed in (("toolcall-15", 2), ("instructfollow-15", 1), ("reasonmath-15", 1)):
        bl_passes(bl_pack(run, pack_id), passed)
    bl_passes(bl_pack(run, "structoutput-15"), 1)
    packs = record(benchlocal(bl_bytes(run)), "components/tool_instruction/benchlocal-packs.json")
    assert packs.packs == {"toolcall-15": 100.0, "instructfollow-15": 50.0,
                           "structoutput-15": 100.0, "dataextract-15": 0.0}  # fmt: skip
    assert packs.mean == pytest.approx(62.5)  # reasonmath-15 is not a behavioural pack
    # the replay's own mean (verify/gx10/scores.py) of the same record
    assert math.fsum(packs.packs.values()) / len(packs.packs) == pytest.approx(62.5)


def test_a_benchlocal_pack_is_counted_from_its_scenarios() -> None:
    """benchlocal-cli counts a pack from its scenario runs (runner.run_pack at 47d1d66); a
    count they do not give is refused, and so is a scenario of a verifier-backed pack marked
    verifier_not_implemented (only the sandboxed packs' stub gives that: relabelled, a failure
    would leave the count)."""
    run = bl_run()
    pack = bl_pack(run, "toolcall-15")
    bl_passes(pack, 1)
    assert record(benchlocal(bl_bytes(run)), "components/tool_instruction/benchlocal-packs.json"
                  ).packs["toolcall-15"] == 50.0  # fmt: skip

    def relabelled(p: dict[str, Any]) -> None:  # the failing scenario out of the count
        for where in (p["scenarios"][1], p["scenarios"][1]["result"]):
            where.update(failure_mode="verifier_not_implemented")
        p.update(total=1, score=1.0)

    for edit, said in [
        (relabelled, r"scenarios\[1\]: failure_mode 'verifier_not_implemented', which only"),
        (lambda p: p.update(passed=2, score=1.0), r"2 passed of 2, its scenarios 1 passed of 2"),
        (lambda p: p.update(scenarios=[]), r"1 passed of 2, its scenarios 0 passed of 0"),
        (lambda p: p["scenarios"][0]["result"].update(passed=False), "its result says otherwise"),
        (lambda p: p["scenarios"][0].update(passed=1), "not a scenario's result"),
        (lambda p: p.update(score=10**400), r"\.score: .* is not a number \[0, 1\]"),
    ]:
        forged = copy.deepcopy(run)
        edit(bl_pack(forged, "toolcall-15"))
        with pytest.raises(OutputsUnreadable, match=said):
            benchlocal(bl_bytes(forged))


def test_benchlocal_cli_upstream_contamination_is_counted() -> None:
    run = bl_run()
    run["thinking_validity"]["toolcall-15"]["status"] = "contaminated"
    outputs = benchlocal(bl_bytes(run))
    assert outputs.metrics["tool_instruction"]["thinking_contaminated_packs"] == 1


def _bl(edit: Callable[[dict[str, Any]], Any]) -> bytes:
    run = bl_run()
    edit(run)
    return bl_bytes(run)


def _pack_index(pack_id: str) -> int:
    return next(i for i, p in enumerate(bl_run()["packs"]) if p["pack_id"] == pack_id)


TC = _pack_index("toolcall-15")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[]", r"benchlocal.json: \$: \[\] is not an object"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"{", "benchlocal.json"),
        (_bl(lambda r: r.update(schema_version="2")), r"\$.schema_version: '2', not '1'"),
        (_bl(lambda r: r.update(sampling_overrides={"temperature": 0.7})),
         r"\$.sampling_overrides: .* a non-canonical run"),
        (_bl(lambda r: r.update(sampling_source="server")), r"\$.sampling_source: 'server'"),
        (_bl(lambda r: r.update(packs={})), r"\$.packs: \{\} is not a list"),
        (_bl(lambda r: r["packs"].append(copy.deepcopy(r["packs"][TC]))),
         rf"\$.packs\[5\].pack_id: 'toolcall-15' again \(as \$.packs\[{TC}\]\)"),
        (_bl(lambda r: r.update(packs=[p for p in r["packs"] if p["pack_id"] != "dataextract-15"])),
         r"\$.packs: no dataextract-15: the tool/instruction score is the mean of"),
        (_bl(lambda r: r["packs"][TC].update(skipped=True)),
         rf"\$.packs\[{TC}\].skipped: True: the pack did not run"),
        (_bl(lambda r: r["packs"][TC].update(status="error")),
         rf"\$.packs\[{TC}\].status: 'error', not 'ok'"),
        (_bl(lambda r: r["packs"][TC].update(score=0.5)),
         rf"\$.packs\[{TC}\].score: 0.5 is not 0 passed of 2"),
        (_bl(lambda r: r["packs"][TC].update(score=1.5)),
         rf"\$.packs\[{TC}\].score: 1.5 is not a number \[0, 1\]"),
        (_bl(lambda r: r["packs"][TC].update(total=0, passed=0)), "0 passed of 0: no pass@1"),
        (_bl(lambda r: r["packs"][TC].update(total=-1)), r"total: -1 is not a count"),
        (_bl(lambda r: r["packs"][TC].update(passed=True)), r"passed: True is not a count"),
        (_bl(lambda r: r.update(totals=None)), r"\$.totals: None is not an object"),
    ],
)  # fmt: skip
def test_benchlocal_cli_malformed_or_ambiguous_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(OutputsUnreadable, match=message):
        benchlocal(data)


# --- Infermark ----------------------------------------------------------------------------------


def im_report() -> dict[str, Any]:
    return json.loads(INFERMARK)


def test_infermark_as_recorded() -> None:
    outputs = infermark(INFERMARK)
    streaming = record(outputs, "components/performance/infermark-c1.json")
    assert isinstance(streaming, InfermarkStreaming)
    level = im_report()["results"][0]
    assert streaming.tokens_per_second == level["tokens_per_second"]
    assert streaming.wall_seconds == level["total_duration"]
    assert streaming.visible_chunks == 45
    assert streaming.visible_chunks / streaming.wall_seconds == pytest.approx(
        level["tokens_per_second"], rel=1e-9
    )
    assert streaming.ttft_p50_seconds == level["ttft"]["p50"]
    assert streaming.itl_mean_seconds == level["itl"]["mean"]
    assert (streaming.requests, streaming.errors) == (5, 0)


def test_infermark_performance_is_seed_000s_formula() -> None:
    streaming = record(infermark(INFERMARK), "components/performance/infermark-c1.json")
    level = im_report()["results"][0]
    throughput = min(100, level["tokens_per_second"] * 10)
    ttft = max(0, 100 - max(0, level["ttft"]["p50"] - 1) * 10)
    assert performance_score(
        streaming.tokens_per_second, streaming.ttft_p50_seconds, streaming.errors
    ) == pytest.approx((throughput + ttft) / 2)
    report = im_report()
    level = report["results"][0]
    level.update(n_success=4, n_error=1, errors={"HTTP 502": 1})
    level["requests_per_second"] = 4 / level["total_duration"]  # as Infermark computes it
    failed = record(
        infermark(json.dumps(report).encode()), "components/performance/infermark-c1.json"
    )
    assert performance_score(failed.tokens_per_second, failed.ttft_p50_seconds, failed.errors) == 0


def test_infermark_default_levels_are_refused() -> None:
    """Infermark's own defaults (warmup requests, several levels), as the real tool wrote them:
    the warmups and the other levels are performance exchanges no concurrency-1 figure counts."""
    with pytest.raises(OutputsUnreadable, match=r"\$.config.warmup: 3 warmup requests"):
        infermark(INFERMARK_LEVELS)
    report = json.loads(INFERMARK_LEVELS)
    report["config"]["warmup"] = 0
    with pytest.raises(OutputsUnreadable, match=r"concurrency levels \[1, 2\]: .* -c 1"):
        infermark(json.dumps(report).encode())


def _im(edit: Callable[[dict[str, Any]], Any]) -> bytes:
    report = im_report()
    edit(report)
    return json.dumps(report).encode()


def _level(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda r: r["results"][0].update(fields)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"null", r"infermark.json: \$: None is not an object"),
        (_im(lambda r: r.pop("config")), r"\$.config: None is not an object"),
        (_im(lambda r: r["config"].update(mode="non_streaming")),
         r"\$.config.mode: 'non_streaming': the performance score reads the streaming"),
        (_im(lambda r: r.update(results=[])), r"concurrency levels \[\]"),
        (_im(lambda r: r["results"][0].update(concurrency=4)), r"concurrency levels \[4\]"),
        (_im(_level(n_error=1)), r"\$.results\[0\]: 5 successes and 1 errors of 5"),
        (_im(lambda r: r["config"].update(n_requests=6)), r"\$.config.n_requests: 6, the level"),
        (_im(_level(errors={"timeout": 1})), r"\$.results\[0\].errors: 1 errors by kind"),
        (_im(_level(errors={"timeout": -1})), r"errors.timeout: -1 is not a count"),
        (_im(_level(tokens_per_second=243.0)), "no whole number of visible chunks"),
        (_im(_level(total_duration=0)), "no whole number of visible chunks"),
        (_im(_level(total_duration=-1.0)), r"total_duration: -1.0 is not a number >= 0"),
        (_im(_level(tokens_per_second="fast")), r"tokens_per_second: 'fast' is not a number"),
        (_im(_level(latency=None)), r"\$.results\[0\].latency: None is not an object"),
        (_im(lambda r: r["results"][0]["ttft"].pop("p50")), r"ttft.p50: None is not a number"),
        (_im(_level(n_requests=2**60, n_success=2**60)), r"requests: .*"),
        (INFERMARK.replace(b"0.185", b"1e999", 1), r"number 1e999\d* is out of range"),
    ],
)  # fmt: skip
def test_infermark_malformed_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(OutputsUnreadable, match=message):
        infermark(data)


def test_infermark_without_visible_content() -> None:
    """No request streamed visible content: no TTFT measured (None, as the runner's own
    measurement has it; it scores no TTFT points, ADR 0049) and no chunks, so no throughput."""
    data = _im(_level(tokens_per_second=0.0, ttft=None, itl=None))
    streaming = record(infermark(data), "components/performance/infermark-c1.json")
    assert (streaming.visible_chunks, streaming.ttft_p50_seconds) == (0, None)
    assert streaming.itl_mean_seconds is None
    assert performance_score(0.0, None, 0) == 0.0
    assert performance_score(5.0, None, 0) == 25.0  # the throughput half alone


# --- every reader -------------------------------------------------------------------------------

FIXTURES = {
    "spark-bench": ({"spark_bench.csv": SPARK}, SPARK_SERVES),
    "benchlocal-cli": ({"benchlocal.json": BENCHLOCAL}, ["tool_instruction"]),
    "infermark": ({"infermark.json": INFERMARK}, ["performance"]),
}


@pytest.mark.parametrize("parser", sorted(FIXTURES))
def test_runner_reader_is_the_verifiers(parser: str, tmp_path: Path) -> None:
    files, components = FIXTURES[parser]
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "unread.md").write_text("kept, not read")
    ran = parse_outputs(parser, tmp_path, components)  # type: ignore[arg-type]
    again = read_outputs(parser, {**files, "runs/unread.md": b"kept, not read"}, components)  # type: ignore[arg-type]
    assert ran.records == again.records
    assert ran.metrics == again.metrics
    assert ran.quarantines == again.quarantines


@pytest.mark.parametrize("parser", sorted(FIXTURES))
def test_runner_refusal_is_a_parse_failure(parser: str, tmp_path: Path) -> None:
    with pytest.raises(ParseFailed, match="the harness did not write it"):
        parse_outputs(parser, tmp_path, FIXTURES[parser][1])  # type: ignore[arg-type]


def test_unknown_reader_is_refused() -> None:
    with pytest.raises(OutputsUnreadable, match="no reader of harness outputs is named 'nope'"):
        read_outputs("nope", {}, ["coding"])


@pytest.mark.parametrize("parser", sorted(FIXTURES))
@pytest.mark.parametrize("cut", [1, 7, 100, 1000, -20])
def test_truncated_outputs_are_refused_not_crashed(parser: str, cut: int) -> None:
    files, components = FIXTURES[parser]
    cut_files = {name: data[:cut] for name, data in files.items()}
    with pytest.raises(OutputsUnreadable):
        read_outputs(parser, cut_files, components)  # type: ignore[arg-type]


# --- the pin set's harnesses, and the verifier's re-reading -------------------------------------

REAL_HARNESSES: dict[str, dict[str, Any]] = {
    "coding": {"command": ["{python}", "spark_bench.py", "eval"],
               "outputs": ["spark_bench.csv"], "parser": "spark-bench",
               "inactivity_s": 900, "wall_s": 7200},
    "tool_instruction": {"command": ["{python}", "-m", "benchlocal_cli.cli", "run"],
                         "outputs": ["benchlocal.json"], "parser": "benchlocal-cli",
                         "inactivity_s": 900, "wall_s": 7200},
    "performance": {"command": ["{python}", "-m", "infermark.cli", "run"],
                    "outputs": ["infermark.json"], "parser": "infermark",
                    "inactivity_s": 300, "wall_s": 1800},
}  # fmt: skip
"""By the component whose upstream runs it."""


def real_pins(evidence: Gx10Evidence) -> PinSetSource:
    """The pin set the example run was made under, its SparkBench, BenchLocal and Infermark
    upstreams run as the real harnesses with the real readers."""
    base = load_builtin(evidence.pin_set.id)
    data = copy.deepcopy(dict(base.data))
    upstreams = data["component_upstreams"]
    data["harnesses"] = {
        **data.get("harnesses", {}),
        **{upstreams[component]: harness for component, harness in REAL_HARNESSES.items()},
    }
    return pin_set_source(data, "test")


@pytest.fixture(scope="module")
def full_evidence(built_examples: dict[str, Path]) -> Gx10Evidence:
    from verify import verify_with_evidence  # noqa: PLC0415 - the module's only verify run

    return verify_with_evidence(built_examples["gx10-full-qualified"])[1]


def with_real_outputs(
    evidence: Gx10Evidence, spark_data: bytes
) -> tuple[Gx10Evidence, dict[str, bytes]]:
    """The example run with the real harnesses' records in place of the reference ones, each
    result listing the raw file it was read from."""
    kept = {
        raw_name("coding", "spark_bench.csv"): spark_data,
        raw_name("tool_instruction", "benchlocal.json"): BENCHLOCAL,
        raw_name("performance", "infermark.json"): INFERMARK,
    }
    sparked, bl, im = spark(spark_data), benchlocal(BENCHLOCAL), infermark(INFERMARK)
    results = dict(evidence.results)
    read = {"coding": sparked, "tool_instruction": bl, "performance": im}
    for component, raw in (("coding", "coding"), ("reliability", "coding"),
                           ("tool_instruction", "tool_instruction"),
                           ("performance", "performance")):  # fmt: skip
        name = {"coding": "spark_bench.csv", "tool_instruction": "benchlocal.json",
                "performance": "infermark.json"}[raw]  # fmt: skip
        results[component] = ComponentResult.model_validate(
            {
                **results[component].model_dump(mode="json"),  # type: ignore[index]
                "raw_outputs": [raw_name(raw, name)],
                "status": "COMPLETED",
                "metrics": read[raw].metrics.get(component, {}),  # as the runner writes them
            }
        )
    changed = evidence.model_copy(
        update={
            "results": results,
            "spark_quality": record(sparked, "components/coding/spark-quality.json"),
            "spark_repeat": record(sparked, "components/reliability/spark-repeat.json"),
            "benchlocal": record(bl, "components/tool_instruction/benchlocal-packs.json"),
            "infermark": record(im, "components/performance/infermark-c1.json"),
            "quarantines": dict(sparked.quarantines),
        }
    )
    return changed, kept


def test_verifier_rereads_the_real_raw_outputs(full_evidence: Gx10Evidence) -> None:
    evidence, kept = with_real_outputs(full_evidence, with_rows(*passing_gates()))
    pins = real_pins(full_evidence)
    assert _raw_outputs(evidence, pins, kept.get, kept) == []
    assert unread_raw_outputs(pins, [*kept, "components/coding/raw/runs/x.md"]) == [
        "components/coding/raw/runs/x.md"
    ]
    # a record that is not what its raw file says is a finding, for each real reader
    for field, name, value in (
        ("spark_quality", "components/coding/spark-quality.json",
         evidence.spark_quality.model_copy(update={"code_domain_quality": 99.0})),  # type: ignore[union-attr]
        ("benchlocal", "components/tool_instruction/benchlocal-packs.json",
         BenchLocalPacks(packs=dict.fromkeys(BENCHLOCAL_TOOL_INSTRUCTION_PACKS, 90.0))),
        ("infermark", "components/performance/infermark-c1.json",
         evidence.infermark.model_copy(update={"ttft_p50_seconds": 0.001})),  # type: ignore[union-attr]
    ):  # fmt: skip
        forged = evidence.model_copy(update={field: value})
        findings = _raw_outputs(forged, pins, kept.get, kept)
        assert [(f.code, f.entry) for f in findings] == [("record_disagrees", name)]
    # and a completed result whose metrics are not what its raw file says
    coding = evidence.results["coding"]
    assert coding is not None and coding.metrics["code_domain_quality"] == 0.0
    claimed = coding.model_copy(update={"metrics": {**coding.metrics, "code_domain_quality": 100}})
    forged = evidence.model_copy(update={"results": {**evidence.results, "coding": claimed}})
    [finding] = _raw_outputs(forged, pins, kept.get, kept)
    assert (finding.code, finding.entry) == ("record_disagrees", "components/coding/result.json")
    assert "metric code_domain_quality is 100; the raw outputs of sparkbench say 0.0" in (
        finding.message
    )


def test_verifier_finds_the_quarantine_row_no_record_carries(full_evidence: Gx10Evidence) -> None:
    marked = with_rows(*passing_gates(), extra_row("quarantine", "1", "drift"))
    evidence, kept = with_real_outputs(full_evidence, marked)
    pins = real_pins(full_evidence)
    assert _raw_outputs(evidence, pins, kept.get, kept) == []
    hidden = evidence.model_copy(update={"quarantines": {}})
    [finding] = _raw_outputs(hidden, pins, kept.get, kept)
    assert "wrote a quarantine marker (drift) that no quarantine record carries" in finding.message


def test_replay_of_the_real_records(full_evidence: Gx10Evidence) -> None:
    """Seed 000's mapping, replayed: coding is Spark's code domain_quality, reliability its
    repeat reliability, tool/instruction the mean of the behavioural packs, performance the
    formula over Infermark's concurrency-1 fields; a gate the upstream did not report blocks
    the result as infrastructure, and a quarantine row quarantines the run."""
    pins = real_pins(full_evidence)
    evidence, _ = with_real_outputs(full_evidence, with_rows(*passing_gates()))
    judged = replay(evidence, pins)
    scores = judged.scores
    assert scores.coding == 0.0
    assert scores.reliability == 100.0
    assert scores.tool_instruction == 0.0
    level = im_report()["results"][0]
    assert scores.performance == pytest.approx(
        performance_score(level["tokens_per_second"], level["ttft"]["p50"], 0)
    )
    assert judged.profile_decision == "DOES_NOT_MEET_PROFILE"
    unreported, _ = with_real_outputs(full_evidence, SPARK)
    assert (
        next(g for g in replay(unreported, pins).gates if g.id == "upstream_integrity").status
        == "infra"
    )
    marked, _ = with_real_outputs(
        full_evidence, with_rows(*passing_gates(), extra_row("quarantine", "1", "drift"))
    )
    assert replay(marked, pins).result_validity == "QUARANTINED"
