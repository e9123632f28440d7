"""A gate's tallies are read only where the pin set runs that gate: figures of a gate that never
ran, added to an honest bundle and resealed, are a finding, never diagnostics of a QUALIFIED run
(found by tests/hostile/test_forgery_properties.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.cli import main
from bundle_schema import canonical_bytes
from tests.data.hostile.kit import read_bundle, reseal
from verify import verify_bundle

BFCL_SHARD = "application/vnd.evidence-audit.bfcl-shard+json"
TASK_TALLIES = "application/vnd.evidence-audit.task-tallies+json"


@pytest.mark.parametrize(
    ("name", "media", "record"),
    [
        (
            "components/reliability/gates/z/bfcl-eval.json",
            BFCL_SHARD,
            {"subset_totals": {"parallel": {"hits": 1, "n": 1}}},
        ),
        (
            "components/tool_instruction/gates/bfcl/tasks.json",
            TASK_TALLIES,
            {
                "harness": "inspect-ai",
                "version": "1",
                "model": "m",
                "tasks": {"arithmetic": {"hits": 8, "n": 8}},
            },
        ),
    ],
    ids=["shard tallies of an unknown gate", "task tallies of a gate not pinned"],
)
def test_tallies_of_a_gate_not_run_are_a_finding(  # noqa: PLR0917
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    media: str,
    record: dict[str, object],
) -> None:
    honest = built_examples["gx10-full-qualified"]
    assert verify_bundle(honest).verdict.outcome == "QUALIFIED"
    manifest, files = read_bundle(honest)
    files[name] = (canonical_bytes(record), media)
    forged = tmp_path / "forged"
    reseal(forged, manifest, files, {})
    verdict = verify_bundle(forged).verdict
    assert verdict.outcome != "QUALIFIED"
    found = [f for f in verdict.integrity.findings if f.entry == name]
    assert [f.code for f in found] == ["record_disagrees"]
    assert "a gate the pin set gx10-reference-v5 does not run there" in found[0].message
    assert main(["verify", str(forged)]) == 1
    assert "integrity failed" in capsys.readouterr().err
