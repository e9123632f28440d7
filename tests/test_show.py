"""`audit show`: the reviewer's view, led by the forensic answer for results that are not a
valid model decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.cli import main


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
    assert (transport["requests"], transport["statuses"]) == (5, {"200": 5})
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
