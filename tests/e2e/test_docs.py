"""Docs stay true: examples shown in docs/ are what the commands print."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from audit.cli import main
from pins import Harness
from tests.paths import DOCS, SCHEMAS


def test_the_ranking_example_is_what_audit_rank_prints(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = next(iter(built_examples.values())).parent
    assert main(["rank", str(root), "--markdown"]) == 0
    printed = capsys.readouterr().out
    shown = re.search(r"```markdown\n(.*?)```", (DOCS / "ranking.md").read_text(), re.S)
    assert shown is not None
    assert shown.group(1) == printed


def test_the_python_example_of_the_ci_page_runs_as_written(
    built_examples: dict[str, Path],
) -> None:
    """docs/ci.md's Python snippet, run on a real bundle with its published digest: the demo's
    bundles are never rankable, so the snippet must refuse it with the policy's one line."""
    from bundle_schema import digest_of  # noqa: PLC0415

    bundle = built_examples["gx10-full-qualified"]
    code = re.search(r"```python\n(.*?)```", (DOCS / "ci.md").read_text(), re.S)
    assert code is not None
    published = digest_of((bundle / "manifest.json").read_bytes())
    source = code.group(1).replace('"run.tar"', repr(str(bundle)))
    source = source.replace('"sha256:…"', repr(published))
    assert repr(published) in source
    with pytest.raises(SystemExit) as stopped:
        exec(compile(source, "docs/ci.md", "exec"), {})  # noqa: S102 - the documented example
    assert str(stopped.value).startswith("not accepted: requirement not met: rankable: ")


def test_every_json_output_listed_has_its_committed_schema() -> None:
    text = (DOCS / "json-outputs.md").read_text()
    named = set(re.findall(r"`([a-z0-9-]+)(?:\.schema\.json)?`", text))
    committed = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    listed = {name for name in named if name in committed}
    assert {"verdict", "show-report", "ranking", "run-diff", "gx10-evidence"} <= listed
    rows = re.findall(r"^\| `audit [^|]*\| [^|]* \| ([^|]*) \|$", text, re.M)
    assert len(rows) >= 10
    for cell in rows:
        for name in re.findall(r"`?([a-z0-9-]+?)(?:\.schema\.json)?`?(?:,|$)", cell.strip()):
            assert name in committed, f"docs/json-outputs.md names {name!r}: no such schema"


def test_every_harness_block_of_the_upstreams_page_is_a_valid_harness() -> None:
    """The pin-set blocks docs/upstreams.md shows are what a pin set takes (the live tests run
    them; this holds them to the model on every run)."""
    blocks = re.findall(r"```toml\n(.*?)```", (DOCS / "upstreams.md").read_text("utf-8"), re.S)
    harnesses = {
        name: harness
        for block in blocks
        for name, harness in tomllib.loads(block).get("harnesses", {}).items()
    }
    assert {"inspect", "lmeval"} <= set(harnesses), sorted(harnesses)
    for name, harness in harnesses.items():
        Harness.model_validate(harness)  # raises on a block a pin set refuses
        assert "env" not in harness.get("command", [])[:1], name  # variables are pinned as env
