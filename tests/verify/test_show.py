"""`audit show`: the reviewer's view, led by the forensic answer for results that are not a
valid model decision."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from audit.cli import main
from pins import PinSetSource, load_builtin
from tests.gate_kit import RECORDED_TAR
from verify import open_source, parse_manifest, verify_with_evidence
from verify.forensics import show_report
from verify.render import render_show
from verify.report_html import report_html


def show(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["show", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_an_isolation_failure_is_named_with_its_first_evidence(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report = show(built_examples["gx10-full-infra-error"], capsys)
    forensic = report["forensic"]
    assert isinstance(forensic, dict)
    assert forensic["failed_part"] == "isolation"
    assert forensic["first_evidence"].startswith(
        "socket ledger seq 2: node (pid 4391) tried 104.18.32.47:443 (ENETUNREACH)"
    )
    assert "no gate found a failure of the model" in forensic["summary"]
    assert forensic["best_aggregate"] == forensic["worst_aggregate"] == pytest.approx(87.835)
    assert [e["address"] for e in report["non_loopback"]] == ["104.18.32.47"]  # type: ignore[union-attr]


def test_a_quarantine_bounds_what_the_run_could_have_reached(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    forensic = show(built_examples["gx10-spark-quarantined"], capsys)["forensic"]
    assert isinstance(forensic, dict)
    assert forensic["failed_part"] == "quarantine"
    assert forensic["first_evidence"].startswith("coding QUARANTINED at 2026-11-03T09:00:02Z")
    assert (forensic["worst_aggregate"], forensic["best_aggregate"]) == (0, 100)


def test_a_valid_result_needs_no_forensics_and_lists_its_evidence(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report = show(built_examples["gx10-full-qualified"], capsys)
    assert report["forensic"] is None
    gates = {g["id"]: g for g in report["gates"]}  # type: ignore[union-attr]
    assert [e["name"] for e in gates["network_isolation"]["evidence"]] == [
        "network/socket-ledger.jsonl", "transport/exchanges.jsonl"
    ]  # fmt: skip
    transport = report["transport"]
    assert isinstance(transport, dict)
    assert (transport["requests"], transport["statuses"]) == (24, {"200": 24})
    assert [t["name"] for t in report["timeline"] if t["kind"] == "task"] == [  # type: ignore[union-attr]
        "fix-date-parser", "add-retry-policy"
    ]  # fmt: skip


def test_show_renders_for_people(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(built_examples["gx10-full-infra-error"])]) == 0
    out = capsys.readouterr().out
    assert "what broke, and was it the model?" in out
    assert "non-loopback" in out


def _report_of(path: Path) -> tuple[Any, Any, Any, PinSetSource]:
    verdict, evidence = verify_with_evidence(path)
    manifest = parse_manifest(open_source(path).manifest_bytes())
    return verdict, evidence, manifest.model.evidence, load_builtin(verdict.pin_set.id)


def test_a_record_reason_of_the_longest_length_still_fits_the_forensic_answer(
    built_examples: dict[str, Path],
) -> None:
    verdict, evidence, entries, pins = _report_of(built_examples["gx10-full-qualified"])
    failed = evidence.results["coding"].model_copy(
        update={"status": "FAILED", "reason": "r" * 4096}
    )
    evidence = evidence.model_copy(update={"results": evidence.results | {"coding": failed}})
    verdict = verdict.model_copy(update={"result_validity": "INFRA_FAILURE"})
    forensic = show_report(verdict, evidence, entries, pins).forensic
    assert forensic is not None
    assert forensic.first_evidence is not None
    assert forensic.first_evidence.startswith("coding FAILED at ")
    assert len(forensic.first_evidence) == 4096
    assert forensic.first_evidence.endswith("r…")


def test_bundle_text_is_shown_as_it_is_not_read_as_markup(
    built_examples: dict[str, Path],
) -> None:
    verdict, evidence, entries, pins = _report_of(built_examples["gx10-full-infra-error"])
    odd = "[/] [bold]:warning:"
    escape = "clear\x1b[2J\x1b]0;title\x07\x9b"
    verdict = verdict.model_copy(update={"reasons": (odd, escape, *verdict.reasons)})
    evidence = evidence.model_copy(
        update={"model": evidence.model.model_copy(update={"runtime_model_id": odd})}
    )
    report = show_report(verdict, evidence, entries, pins)
    console = Console(file=io.StringIO(), width=200, highlight=False)
    render_show(report, console, "bundle[/]")
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"  - {odd}" in out
    assert f"model {odd} " in out
    assert "evidence bundle bundle[/]" in out
    assert "  - clear\\x1b[2J\\x1b]0;title\\x07\\x9b" in out
    assert "\x1b" not in out


@pytest.mark.parametrize(
    "times",
    [
        ("2026-13-45T99:99:99Z", "2026-11-02T11:41:48Z"),
        ("0000-01-01T00:00:00Z", "2026-11-02T11:41:48Z"),
        ("2026-11-02T11:40:03Z", "2026-11-02T23:59:60Z"),
    ],
)
def test_html_lists_times_that_name_no_calendar_time_apart(
    built_examples: dict[str, Path], times: tuple[str, str]
) -> None:
    verdict, evidence, entries, pins = _report_of(built_examples["gx10-full-qualified"])
    started, ended = times
    odd = evidence.results["coding"].model_copy(update={"started_at": started, "ended_at": ended})
    evidence = evidence.model_copy(update={"results": evidence.results | {"coding": odd}})
    html = report_html(show_report(verdict, evidence, entries, pins), (), (), {})
    assert f"not calendar times, left off the chart: coding ({started} to {ended})" in html
    assert 'id="timeline-chart"' in html  # the other components are still charted
    assert "fix-date-parser" in html  # and the tasks listed


def test_a_component_that_never_started_is_named_without_a_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The recorded real run: Hermes FAILED before it started (the pin set pins no harness for
    it), so its result has no start time to name."""
    first = show(RECORDED_TAR, capsys)["forensic"]["first_evidence"]  # type: ignore[index]
    assert first.startswith("hermes FAILED: pin set gx10-qualification-v5 pins no"), first
    assert " at None" not in first
