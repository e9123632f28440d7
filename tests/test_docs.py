"""Docs stay true: examples shown in docs/ are what the commands print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_the_ranking_example_is_what_audit_rank_prints(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = next(iter(built_examples.values())).parent
    assert main(["rank", str(root), "--markdown"]) == 0
    printed = capsys.readouterr().out
    shown = re.search(r"```markdown\n(.*?)```", (DOCS / "ranking.md").read_text(), re.S)
    assert shown is not None
    assert shown.group(1) == printed
