"""The CSV and Markdown outputs of `audit rank` and `audit rejudge`: a header row and one row a
bundle, then one a refused source; one output format at a time. And `audit verify-archive`
refuses --workers with an existing cluster."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from audit.cli import main
from pins import load_builtin
from tests.audit.test_rank_archive import FULL, FULL_RUN, SMOKE, SMOKE_RUN, Archive
from tests.conftest import DEPLOYMENT_PINS

PINS = ["--pins", str(DEPLOYMENT_PINS)]


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_rank_csv_is_one_row_a_bundle_then_one_a_refused_source(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = Archive(tmp_path, ranked_examples)
    full = archive.copy(FULL, "full")
    junk = archive.junk("junk.tar", b"not a tar at all")
    paths = [str(full), str(archive.tar(full)), str(archive.copy(SMOKE, "smoke")), str(junk)]
    assert main(["rank", *paths, *PINS, "--json"]) == 1
    ranking = json.loads(capsys.readouterr().out)
    assert main(["rank", *paths, *PINS, "--csv"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"audit rank: refused {junk}: not a readable uncompressed tar: truncated header\n"
    )
    header = captured.out.splitlines()[0]
    assert header == (
        "table,position,run_id,model,reasoning_policy,pin_set,pin_set_digest,outcome,"
        "result_validity,profile_decision,rank_group,aggregate,coding,hermes,tool_instruction,"
        "reliability,performance,created_at,first_reason,bundle_digest,source"
    )
    rows = _csv(captured.out)
    assert [(r["table"], r["run_id"]) for r in rows] == [
        ("ranked", FULL_RUN), ("apart", SMOKE_RUN), ("refused", "")
    ]  # fmt: skip
    placed, apart, refused = rows
    want = ranking["ranked"][0]
    assert placed["position"] == "1"
    assert placed["source"] == want["source"] == f"{full}, {full}.tar"
    assert placed["bundle_digest"] == want["bundle_digest"]
    assert float(placed["aggregate"]) == want["scores"]["aggregate"]
    assert placed["pin_set_digest"] == want["pin_set"]["digest"]
    assert apart["position"] == "" and apart["hermes"] == ""  # not numbered; no Hermes score
    assert apart["first_reason"] == ranking["apart"][0]["reasons"][0]
    assert refused["source"] == str(junk)
    assert refused["first_reason"] == "not a readable uncompressed tar: truncated header"


@pytest.mark.parametrize("command", ["rank", "rejudge"])
@pytest.mark.parametrize("formats", [("--json", "--csv"), ("--json", "--markdown"),
                                     ("--markdown", "--csv")])  # fmt: skip
def test_one_output_format_at_a_time(
    command: str, formats: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "some/archive", "--pins", "gx10-reference-v5", *formats]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"audit {command}: argument {formats[1]}: not allowed with argument")


def _rejudged(
    built_examples: dict[str, Path], tmp_path: Path
) -> tuple[list[str], Path, dict[str, Path]]:
    archive = Archive(tmp_path, built_examples)
    full = archive.copy(FULL, "full")
    rerun = archive.rerun(FULL, "rerun", "rerun-01", "2026-11-09T00:00:00Z")
    smoke = archive.copy(SMOKE, "smoke")
    junk = archive.junk("junk.tar", b"not a tar at all")
    paths = [str(p) for p in (full, archive.tar(full), rerun, smoke, junk)]
    stricter = tmp_path / "stricter.toml"  # the full example no longer meets the aggregate
    text = Path("pins/gx10-reference-v5.toml").read_text("utf-8")
    stricter.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    return paths, stricter, {"full": full, "rerun": rerun, "smoke": smoke, "junk": junk}


def test_rejudge_csv_is_one_row_a_bundle_with_each_decision_before_and_after(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, stricter, at = _rejudged(built_examples, tmp_path)
    assert main(["rejudge", *paths, "--pins", str(stricter), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert main(["rejudge", *paths, "--pins", str(stricter), "--csv"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"audit rejudge: refused {at['junk']}: ")
    assert captured.out.splitlines()[0] == (
        "status,bundle_digest,run_id,pin_set_before,pin_set_before_digest,pin_set,pin_set_digest,"
        "integrity_before,integrity,outcome_before,outcome,result_validity_before,"
        "result_validity,profile_decision_before,profile_decision,rankable_before,rankable,"
        "copy_of,first_reason,bundle"
    )
    rows = _csv(captured.out)
    assert len(rows) == report["bundles"] + len(report["refused"]) == 4
    by_run = {r["run_id"]: r for r in rows}
    full = by_run[FULL_RUN]
    assert full["status"] == "changed"
    assert (full["outcome_before"], full["outcome"]) == ("QUALIFIED", "NOT_QUALIFIED")
    assert (full["profile_decision_before"], full["profile_decision"]) == (
        "MEETS_PROFILE", "DOES_NOT_MEET_PROFILE"
    )  # fmt: skip
    assert full["result_validity_before"] == full["result_validity"] == "VALID"
    assert full["integrity_before"] == full["integrity"] == "ok"
    assert (full["pin_set"], full["pin_set_digest"]) == (
        report["pin_set"]["id"], report["pin_set"]["digest"]
    )  # fmt: skip
    named = load_builtin(full["pin_set_before"])  # the shipped pin set the example names
    assert full["pin_set_before_digest"] == named.digest != full["pin_set_digest"]
    assert full["rankable_before"] == full["rankable"] == "no"  # demo-only: never ranked
    assert full["bundle"] == f"{at['full']}, {at['full']}.tar"
    assert full["copy_of"] == ""
    changed = {c["run_id"]: c for c in report["changed"]}
    assert full["first_reason"] == changed[FULL_RUN]["reasons"][0]
    assert by_run["rerun-01"]["copy_of"] == report["copies"][0]["copy_of"]
    smoke = by_run[SMOKE_RUN]
    assert smoke["status"] == "same"
    assert smoke["outcome_before"] == smoke["outcome"]
    assert rows[-1]["status"] == "refused"
    assert rows[-1]["bundle"] == str(at["junk"])
    assert rows[-1]["first_reason"] == report["refused"][0]["reason"]
    assert [r["bundle_digest"] for r in rows[:-1]] == sorted(r["bundle_digest"] for r in rows[:-1])


def test_rejudge_markdown_lists_the_changes_copies_refusals_and_notes(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, stricter, at = _rejudged(built_examples, tmp_path)
    assert main(["rejudge", *paths, "--pins", str(stricter), "--markdown"]) == 1
    text = capsys.readouterr().out
    assert text.startswith("## Rejudged under gx10-reference-v5 (sha256:")
    assert "\n2 of 3 verdicts change; before: the pin set each bundle names\n" in text
    assert "\n## Changed\n\n| run | what changes | first reason | bundle |\n" in text
    assert (
        f"| {FULL_RUN} | outcome QUALIFIED -> NOT_QUALIFIED; profile_decision MEETS_PROFILE -> "
        f"DOES_NOT_MEET_PROFILE | aggregate 87.835 is under 90 | {at['full']}, {at['full']}.tar |"
    ) in text
    assert "\n## Copies\n\n| run | copy of | bundle |\n" in text
    assert "| rerun-01 | a copy of sha256:" in text
    assert f"\n## Refused\n\n| source | reason |\n| --- | --- |\n| {at['junk']} | " in text
    assert "\n## Notes\n\n- sha256:" in text

    assert main(["rejudge", *paths[:2], "--pins", "gx10-reference-v5", "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "\n0 of 1 verdicts change; before: the pin set each bundle names\n" in text
    assert "\n## Changed\n\n(none)\n" in text
    assert "## Copies" not in text and "## Refused" not in text


def test_verify_archive_refuses_workers_for_an_existing_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["verify-archive", str(tmp_path), "--engine", "dask", "--scheduler",
            "tcp://127.0.0.1:9", "--workers", "2"]  # fmt: skip
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "audit verify-archive: --workers is for the LocalCluster the command starts; an "
        "existing cluster (--scheduler) has its own workers\n"
    )
