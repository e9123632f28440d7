"""Hostile tests of 2026-12-04 (c): an adversarial publisher against the verifier's readers of
the real upstream outputs (``verify/harness_outputs.py``) and their cross-checks
(``verify/_consistency/``): Spark Bench's CSV, benchlocal-cli's RunResult, Infermark's report,
the bfcl-eval / Inspect AI gates.

Every bundle attack starts from the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar), edits its raw outputs (and, where the attack
needs it, the records a runner would have derived from them with the same reader), and reseals it
with claims that repeat its own replay (a forger's honest-looking claims). Gate readers that the
recorded bundle does not run are attacked on the real outputs of tests/data/upstream_outputs/.

Holes (each test asserts the safe behaviour; all seven failed before the fixes of the same
day and pass now: 1-3 and the quadratic reader 4 by ``_number``, ``_CONTEXT``, a finite
``rate * wall`` and a set of seen samples in ``verify/harness_outputs.py``; 5 by
``_benchlocal_scenarios`` (a pack's count is its scenario runs'); 6 by ``_within_scenarios``
(Spark's weighted mean lies between its scores); 7 by ``_consistency._metrics`` for the main
harnesses too):

1. ``audit verify`` crashes with a traceback (ValueError) on a Spark Bench tier2
   ``single_stream`` row whose context is a superscript digit (``"²"``): ``str.isdigit`` is
   true, ``int`` refuses it (``_tier2``, the ``sorted(..., key=int)``).
2. ``audit verify`` crashes (OverflowError) on an Infermark report whose ``tokens_per_second``
   and ``total_duration`` are finite but their product is not (``1e200 * 1e200``):
   ``round(rate * wall)`` in ``_infermark``.
3. ``audit verify`` crashes (OverflowError) on any number field that is a 400-digit JSON
   integer (legal for ``loads_strict``, which caps integers at 4,300 digits):
   ``math.isfinite`` in ``_number`` cannot convert it. Reached through Infermark's latency
   stats, benchlocal-cli's pack ``score``, bfcl-eval's ``accuracy`` and Inspect AI's accuracy.
4. Inspect AI's reader is quadratic in the samples of a log (``shown in ids``, a list, in
   ``_inspect_samples``): 100,000 samples (about 6 MB, under every cap) take minutes, 64 such
   logs hours; docs/upstreams.md: "Reading is linear in the file's size".
5. benchlocal-cli: a pack's ``passed``/``score`` are trusted without looking at its
   ``scenarios``: a pack claiming 15 of 15 whose scenarios record 2 passes, or with
   ``scenarios: []`` (docs/upstreams.md: "Refused: a selected pack ... with no scenario"), is
   accepted, and tool_instruction is replayed at 50.0 instead of the 28.33 the scenarios give,
   integrity ok, claims matching (``_benchlocal_pack``).
6. Spark Bench: the code domain's ``domain_quality`` is not bounded by the code scenarios'
   scores it aggregates: ``domain_quality`` 100.0 beside ten code scenario rows all scoring
   0.0 replays coding = 100, integrity ok (``_spark_bench``).
7. The main harnesses' component results' ``metrics`` are never compared with what the raw
   outputs say (only a gate's are, ``_gate_metrics``): coding's result can claim
   ``spark_gates_reported: 1`` and ``code_domain_quality: 100`` beside a CSV that reports no
   gate and a quality of 0, and the bundle verifies with no finding (``_raw_outputs``).

Held: rows of a second run appended, a duplicated header line, a BOM, a NUL in a value read,
NaN / inf / ``1e400`` values (CRLF, the recorded file's own line endings, reads), a quarantine
row no record carries, the CSV kept twice (at coding's and reliability's raw place), an
Infermark report with ``ttft`` null (TTFT 0) against exchanges that streamed, JSON with a
duplicate key. Quirks noted then: ``float`` read ``"1_00"``, full-width digits and
``" 100 "`` as 100 in Spark's value column (refused since: ``_CSV_NUMBER``, tested in
tests/verify/test_adapters.py), and ``-0`` as 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.models import Verdict
from tests.data.hostile.kit import Files, reseal
from tests.gate_kit import RECORDED_TAR, Recorded, forged, unpacked_recorded
from tests.paths import DATA
from verify import verify_bundle
from verify.harness_outputs import OutputsUnreadable, read_outputs

TAR = RECORDED_TAR
CSV = "components/coding/raw/spark_bench.csv"
QUALITY = "components/coding/spark-quality.json"
CODING = "components/coding/result.json"
BENCHLOCAL = "components/tool_instruction/raw/benchlocal.json"
PACKS = "components/tool_instruction/benchlocal-packs.json"
TOOL = "components/tool_instruction/result.json"
INFERMARK = "components/performance/raw/infermark.json"
OUTPUTS = DATA / "upstream_outputs"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


# --- forging --------------------------------------------------------------------------------------


_forge = forged


def _resealed(recorded: Recorded, target: Path, edit: Callable[[Files], None]) -> Path:
    """The recorded bundle edited and resealed as it is (for edits the replay cannot survive)."""
    manifest, original = recorded
    files = dict(original)
    edit(files)
    reseal(target, manifest, files, {})
    return target


def _put(files: Files, name: str, data: bytes) -> None:
    files[name] = (data, files[name][1])


def _json(files: Files, name: str) -> Any:
    return json.loads(files[name][0])


def _derive(files: Files, parser: str, raw: str, components: list[str]) -> None:
    """What a forger's runner does: re-derive the records (and the results' metrics) from the
    edited raw output with the very reader the verifier uses."""
    relative = raw.rsplit("/raw/", 1)[1]
    try:
        parsed = read_outputs(parser, {relative: files[raw][0]}, components)  # type: ignore[arg-type]
    except OutputsUnreadable:  # refused: no record the reader would make; the old ones stay
        return
    for name, (_, record) in parsed.records.items():
        if name in files:
            _put(files, name, canonical_bytes(record.model_dump(mode="json")))  # type: ignore[union-attr]
    for component, metrics in parsed.metrics.items():
        result = f"components/{component}/result.json"
        document = _json(files, result)
        document["metrics"] = metrics
        _put(files, result, canonical_bytes(document))


def _verify_cli(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(["verify", "--json", str(bundle)])
    except Exception as exc:
        pytest.fail(f"audit verify crashed: {type(exc).__name__}: {exc}")
    out, err = capsys.readouterr()
    assert err.count("\n") <= 1, err
    return code, out


def _disagreeing(verdict: Verdict) -> list[str]:
    return [
        f"{f.entry}: {f.message}"
        for f in verdict.integrity.findings
        if f.code == "record_disagrees"
    ]


# --- holes: crashes -------------------------------------------------------------------------------


def test_a_tier2_context_of_a_superscript_digit_does_not_crash_the_verifier(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 1: '²'.isdigit() is True, int('²') raises ValueError (_tier2)."""

    def edit(files: Files) -> None:
        text = files[CSV][0].decode()
        assert ",1024,,na,single_stream," in text
        _put(
            files,
            CSV,
            text.replace(",1024,,na,single_stream,", ",\u00b2,,na,single_stream,").encode(),
        )

    code, _ = _verify_cli(_resealed(recorded, tmp_path / "b", edit), capsys)
    assert code in (0, 1)


def test_an_infermark_rate_times_wall_past_a_float_does_not_crash_the_verifier(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 2: round(1e200 * 1e200) is round(inf): OverflowError (_infermark)."""

    def edit(files: Files) -> None:
        report = _json(files, INFERMARK)
        report["results"][0]["tokens_per_second"] = 1e200
        report["results"][0]["total_duration"] = 1e200
        _put(files, INFERMARK, json.dumps(report).encode())

    code, out = _verify_cli(_resealed(recorded, tmp_path / "b", edit), capsys)
    assert code == 1
    assert "infermark raw outputs do not read" in out


@pytest.mark.parametrize(
    "where",
    ["infermark latency.p99", "benchlocal toolcall-15 score"],
)
def test_a_400_digit_integer_in_a_report_does_not_crash_the_verifier(
    where: str, recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 3 through a bundle: math.isfinite(10**400) raises OverflowError (_number)."""

    def edit(files: Files) -> None:
        if where.startswith("infermark"):
            report = _json(files, INFERMARK)
            report["results"][0]["latency"]["p99"] = 10**400
            _put(files, INFERMARK, json.dumps(report).encode())
        else:
            run = _json(files, BENCHLOCAL)
            next(p for p in run["packs"] if p["pack_id"] == "toolcall-15")["score"] = 10**400
            _put(files, BENCHLOCAL, json.dumps(run).encode())

    code, out = _verify_cli(_resealed(recorded, tmp_path / "b", edit), capsys)
    assert code == 1
    assert "raw outputs do not read" in out


def _bfcl_files() -> dict[str, bytes]:
    root = OUTPUTS / "bfcl-eval"
    return {
        p.relative_to(root).as_posix().lower(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file()
    }


def _huge_bfcl_accuracy() -> tuple[str, dict[str, bytes], str]:
    files = _bfcl_files()
    name = next(n for n in files if n.endswith("bfcl_v4_multiple_score.json"))
    first, _, rest = files[name].partition(b"\n")
    header = json.loads(first)
    header["accuracy"] = 10**400
    files[name] = json.dumps(header).encode() + b"\n" + rest
    return "bfcl-eval", files, "accuracy"


def _huge_inspect_accuracy() -> tuple[str, dict[str, bytes], str]:
    (path,) = (OUTPUTS / "inspect-ai" / "logs").glob("*.json")
    log = json.loads(path.read_bytes())
    log["results"]["scores"][0]["metrics"]["accuracy"]["value"] = 10**400
    return "inspect-ai", {"logs/a.json": json.dumps(log).encode()}, "accuracy"


@pytest.mark.parametrize("case", [_huge_bfcl_accuracy, _huge_inspect_accuracy])
def test_a_400_digit_integer_in_a_gate_report_is_unreadable_not_a_crash(
    case: Callable[[], tuple[str, dict[str, bytes], str]],
) -> None:
    """Hole 3 through the gate readers (_gate_outputs catches only OutputsUnreadable)."""
    parser, files, field = case()
    try:
        read_outputs(parser, files, ["tool_instruction"])
    except OutputsUnreadable as exc:
        assert field in str(exc)
    except Exception as exc:
        pytest.fail(f"the {parser} reader raised {type(exc).__name__}: {exc}")
    else:
        pytest.fail(f"the {parser} reader took a 400-digit {field}")


# --- hole: work without bound ---------------------------------------------------------------------


def _inspect_log(samples: int) -> bytes:
    log = {
        "version": 2, "status": "success",
        "eval": {"task": "t", "model": "m", "packages": {"inspect_ai": "0.3.285"},
                 "config": {"epochs": 1}},
        "results": {"total_samples": samples, "completed_samples": samples, "scores": [
            {"name": "match", "scored_samples": samples, "unscored_samples": 0,
             "metrics": {"accuracy": {"value": 1.0}}}]},
        "samples": [{"id": f"s{i:06d}", "epoch": 1, "scores": {"match": {"value": "C"}}}
                    for i in range(samples)],
    }  # fmt: skip
    return json.dumps(log, separators=(",", ":")).encode()


def test_a_large_inspect_log_is_read_and_a_late_repeated_sample_found() -> None:
    """Hole 4: 20,000 samples (1.2 MB, far under the 100,000-sample and 256 MiB caps) took 4 to
    9 s; ``shown in ids`` over a list made the reader quadratic (100,000 samples about 110 s,
    and a gate reads up to 64 logs). Its time is measured in docs/performance.md ("Inspect AI
    logs"), not here; here, the set that replaced the list still finds a sample id given
    twice, the second at the end."""
    data = _inspect_log(20_000)
    read_outputs("inspect-ai", {"logs/a.json": data}, ["tool_instruction"])
    twice = data.replace(b'"id":"s019999"', b'"id":"s000000"')
    assert twice != data
    with pytest.raises(OutputsUnreadable, match=r"samples\[19999\]: sample 's000000' again"):
        read_outputs("inspect-ai", {"logs/a.json": twice}, ["tool_instruction"])


# --- holes: scores the raw evidence does not support ---------------------------------------------


def _benchlocal_pack_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        run = _json(files, BENCHLOCAL)
        change(next(p for p in run["packs"] if p["pack_id"] == "toolcall-15"))
        _put(files, BENCHLOCAL, json.dumps(run, indent=2).encode())
        _derive(files, "benchlocal-cli", BENCHLOCAL, ["tool_instruction"])

    return edit


def _all_passed(pack: dict[str, Any]) -> None:
    assert sum(s["passed"] is True for s in pack["scenarios"]) == 2  # what the model did
    pack["passed"], pack["score"] = pack["total"], 1.0


def _no_scenario(pack: dict[str, Any]) -> None:
    pack["scenarios"] = []
    pack["passed"], pack["score"] = pack["total"], 1.0


@pytest.mark.parametrize("change", [_all_passed, _no_scenario], ids=["15-of-15", "no-scenario"])
def test_a_benchlocal_pack_score_its_scenarios_do_not_give_is_refused(
    change: Callable[[dict[str, Any]], None], recorded: Recorded, tmp_path: Path
) -> None:
    """Hole 5: toolcall-15 recorded 2 passes of 15 scenarios; its summary says 15 of 15."""
    honest = verify_bundle(TAR).verdict.scores.tool_instruction
    verdict = verify_bundle(_forge(recorded, tmp_path / "b", _benchlocal_pack_edit(change))).verdict
    assert verdict.integrity.status == "failed" or verdict.scores.tool_instruction == honest, (
        f"tool_instruction replayed as {verdict.scores.tool_instruction} (scenarios give "
        f"{honest}), integrity {verdict.integrity.status}"
    )


def test_a_spark_domain_quality_its_scenarios_cannot_give_is_refused(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Hole 6: every code scenario scored 0.0, so their (difficulty-weighted) mean is 0, yet
    the domain_quality row says 100.0 and coding is replayed as 100."""

    def edit(files: Files) -> None:
        text = files[CSV][0].decode()
        row = ",na,code,domain_quality,0.0,score0-100,capability n=10"
        assert row in text
        _put(files, CSV, text.replace(row, row.replace(",0.0,", ",100.0,")).encode())
        try:
            _derive(files, "spark-bench", CSV, ["coding", "reliability"])
        except OutputsUnreadable:  # the reader refuses it now: the forger writes the records
            for name in (CODING, "components/coding/spark-quality.json"):
                document = _json(files, name)
                inner = document["metrics"] if name == CODING else document
                inner["code_domain_quality"] = 100
                _put(files, name, canonical_bytes(document))

    verdict = verify_bundle(_forge(recorded, tmp_path / "b", edit)).verdict
    assert verdict.integrity.status == "failed" or verdict.scores.coding == 0.0, (
        f"coding replayed as {verdict.scores.coding} over ten code scenarios scoring 0.0"
    )


@pytest.mark.parametrize(("quality", "caught"), [("100.0", True), ("12.6", False), ("9.6", True)])
def test_a_spark_quality_its_weighted_scenarios_cannot_give_is_a_finding(
    recorded: Recorded, tmp_path: Path, quality: str, caught: bool
) -> None:
    """One code scenario of ten scores 1.0 (CODE-10), so the quality lies anywhere in 0 to 100
    by the reader's bound; the recorded Spark Bench checkout's eval_suite.py weighs CODE-10 by
    its difficulty, and Spark writes that weighted mean (checked at 0.1): a forger's 100.0 is a
    finding, the mean Spark itself would write is not."""

    def edit(files: Files) -> None:
        text = files[CSV][0].decode()
        row = ",na,code,domain_quality,0.0,score0-100,capability n=10"
        scored = ",na,CODE-10,score,0.0,frac,"
        assert row in text and scored in text
        text = text.replace(scored, scored.replace(",0.0,", ",1.0,"))
        _put(files, CSV, text.replace(row, row.replace(",0.0,", f",{quality},")).encode())
        _derive(files, "spark-bench", CSV, ["coding", "reliability"])

    verdict = verify_bundle(_forge(recorded, tmp_path / "b", edit)).verdict
    found = [f for f in verdict.integrity.findings if "weighted by their difficulties" in f.message]
    assert bool(found) is caught, (quality, found, verdict.scores.coding)
    if not caught:
        assert verdict.scores.coding == float(quality)


def test_a_spark_csv_moved_to_reliability_s_place_is_weighed_too(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The CSV is read at any raw place of the components its harness serves; kept only at
    reliability's, the weighted mean was not recomputed and a claimed 100 stood."""
    moved = "components/reliability/raw/spark_bench.csv"

    def edit(files: Files) -> None:
        text = files[CSV][0].decode()
        row = ",na,code,domain_quality,0.0,score0-100,capability n=10"
        scored = ",na,CODE-10,score,0.0,frac,"
        text = text.replace(scored, scored.replace(",0.0,", ",1.0,"))
        _put(files, CSV, text.replace(row, row.replace(",0.0,", ",100.0,")).encode())
        _derive(files, "spark-bench", CSV, ["coding", "reliability"])
        files[moved] = files.pop(CSV)
        for component, kept in (("coding", []), ("reliability", [moved])):
            name = f"components/{component}/result.json"
            result = _json(files, name)
            result["raw_outputs"] = sorted([*(n for n in result["raw_outputs"] if n != CSV), *kept])
            _put(files, name, canonical_bytes(result))

    verdict = verify_bundle(_forge(recorded, tmp_path / "b", edit)).verdict
    assert [f.entry for f in verdict.integrity.findings] == [moved], verdict.integrity.findings
    assert "weighted by their difficulties" in verdict.integrity.findings[0].message


def test_a_component_result_whose_metrics_are_not_its_raw_outputs_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Hole 7: coding's result claims Spark reported its gates and scored 100; the CSV says it
    reported none and scored 0. A gate's metrics are held to its raw outputs; these are not."""

    def edit(files: Files) -> None:
        result = _json(files, CODING)
        result["metrics"] |= {"spark_gates_reported": 1, "code_domain_quality": 100}
        _put(files, CODING, canonical_bytes(result))

    verdict = verify_bundle(_forge(recorded, tmp_path / "b", edit)).verdict
    assert any(CODING in f for f in _disagreeing(verdict)), verdict.integrity.findings


# --- held -----------------------------------------------------------------------------------------


def _csv_edit(change: Callable[[str], str]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        _put(files, CSV, change(files[CSV][0].decode()).encode())

    return edit


def _another_run(text: str) -> str:
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    return text + last.replace("gx10-20261201-133428", "gx10-20261201-999999") + "\n"


def _header_twice(text: str) -> str:
    header, _, rest = text.partition("\n")
    return f"{header}\n{header}\n{rest}"


def _quality(value: str) -> Callable[[str], str]:
    row = ",na,code,domain_quality,0.0,"
    return lambda text: text.replace(row, f",na,code,domain_quality,{value},")


def _quarantine_row(text: str) -> str:
    last = text.rstrip("\n").rsplit("\n", 1)[1].split(",")
    last[11:16] = ["overall", "quarantine", "yes", "", "golden drift"]
    return text + ",".join(last) + "\n"


HELD_CSV = {
    "rows of another run appended": _another_run,
    "the header twice": _header_twice,
    "a byte-order mark": lambda text: "\ufeff" + text,
    "a NUL in the quality value": _quality("0.0\0"),
    "quality nan": _quality("nan"),
    "quality inf": _quality("inf"),
    "quality 1e400": _quality("1e400"),
    "a quarantine row no record carries": _quarantine_row,
}


@pytest.mark.parametrize("name", list(HELD_CSV))
def test_held_spark_csv_edits_are_findings(name: str, recorded: Recorded, tmp_path: Path) -> None:
    verdict = verify_bundle(_resealed(recorded, tmp_path / "b", _csv_edit(HELD_CSV[name]))).verdict
    assert verdict.integrity.status == "failed"
    assert _disagreeing(verdict), verdict.integrity.findings
    assert verdict.outcome == "INFRA_ERROR"


def test_held_the_csv_kept_at_two_raw_places_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        files["components/reliability/raw/spark_bench.csv"] = files[CSV]

    verdict = verify_bundle(_resealed(recorded, tmp_path / "b", edit)).verdict
    assert any("a second raw output 'spark_bench.csv'" in f for f in _disagreeing(verdict))


def test_held_an_infermark_ttft_of_null_is_bounded_by_the_exchanges(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        report = _json(files, INFERMARK)
        report["results"][0]["ttft"] = None
        _put(files, INFERMARK, json.dumps(report).encode())
        _derive(files, "infermark", INFERMARK, ["performance"])

    verdict = verify_bundle(_forge(recorded, tmp_path / "b", edit)).verdict
    # no TTFT is measured only where no request read a token (ADR 0049): these did
    assert any("no TTFT, and 20 requests read a token" in f for f in _disagreeing(verdict)), (
        verdict.integrity.findings
    )


def test_held_a_duplicate_key_in_a_report_is_unreadable() -> None:
    data = (OUTPUTS / "infermark" / "infermark.json").read_bytes()
    forged = data.replace(b'"n_error": 0,', b'"n_error": 0, "n_error": 0,', 1)
    assert forged != data
    with pytest.raises(OutputsUnreadable, match="duplicate key"):
        read_outputs("infermark", {"infermark.json": forged}, ["performance"])
    assert math.isfinite(1.0)
