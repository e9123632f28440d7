"""The demo's summary reads at 80 columns (issue 14 point 7): every run's name whole on its
row, so that the rows stay distinguishable, each verdict axis whole, and every bundle digest
whole on a line of its own. The real demo builds, packs and verifies the example bundles."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from audit.demo.examples import example_runs, expected_digests
from audit.demo.pipeline import run_demo


def test_the_demo_summary_keeps_every_run_name_whole_at_80_columns(tmp_path: Path) -> None:
    console = Console(width=80, record=True, file=io.StringIO())
    assert run_demo(tmp_path / "demo", console)
    out = console.export_text()
    table = out[: out.index("└") + 1]
    assert all(len(line) <= 80 for line in table.splitlines())
    cells = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    names = [run.name for run in example_runs()]
    assert [row[0] for row in cells if row[0]] == names  # each name whole, once, in order
    assert "…" not in table
    verdicts = [row[1] for row in cells]
    for axis in ("INFRA_ERROR", "NOT_QUALIFIED", "QUARANTINED", "DOES_NOT_MEET_PROFILE"):
        assert axis in verdicts, axis
    digests = expected_digests()
    for name in names:
        shown = re.search(rf"^{re.escape(name)}\n  (sha256:[0-9a-f]{{64}})$", out, re.M)
        assert shown is not None, name  # whole, on a line of its own
        assert shown.group(1) == digests[name]
