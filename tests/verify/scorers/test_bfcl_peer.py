"""The real peer: bfcl-eval 2026.3.23 computes the same BFCL V4 numbers from the same tallies.

Uses bfcl-eval's own save_eval_results, update_leaderboard_table_with_local_score_file and
generate_leaderboard_csv, capturing the unrounded rows it would write to its CSV files.
Skipped (not failed) where bfcl-eval and its numeric dependencies are not installed
(``requirements-peer*.lock``; ``make test`` installs them).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundle_schema.models import Tally
from verify.scorers import aggregate, aggregate_v4
from verify.scorers.bfcl import V4_DATASET_SIZES

if any(importlib.util.find_spec(m) is None for m in ("bfcl_eval", "numpy", "pandas", "filelock")):
    pytest.skip(
        "bfcl-eval 2026.3.23 and its dependencies are not installed", allow_module_level=True
    )

MODEL = "peer_model"  # bfcl-eval turns "_" back into "/" to look the model up


@pytest.fixture(scope="module")
def helper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """bfcl-eval's eval_runner_helper, imported with its project root in a temp dir and its
    model-config registry (which imports every provider SDK) replaced by a one-model stub."""
    root = tmp_path_factory.mktemp("bfcl-root")
    saved_env = {k: os.environ.get(k) for k in ("BFCL_PROJECT_ROOT", "WANDB_BFCL_PROJECT")}
    os.environ["BFCL_PROJECT_ROOT"] = str(root)
    os.environ.pop("WANDB_BFCL_PROJECT", None)
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
        "peer/model": types.SimpleNamespace(
            display_name="peer", url="", org="", license="", input_price=None, output_price=None
        )
    }
    saved_modules = {k: v for k, v in sys.modules.items() if k.startswith("bfcl_eval")}
    sys.modules["bfcl_eval.constants.model_config"] = stub
    try:
        yield importlib.import_module("bfcl_eval.eval_checker.eval_runner_helper")
    finally:
        for name in [k for k in sys.modules if k.startswith("bfcl_eval")]:
            del sys.modules[name]
        sys.modules.update(saved_modules)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def peer_numbers(helper: Any, tallies: dict[str, Tally], work: Path) -> dict[str, Any]:
    """Run bfcl-eval's own pipeline on tallies; return its unrounded category values."""
    score_dir = work / "score"
    for subset, tally in tallies.items():
        samples = [{"id": f"{subset}_{i}"} for i in range(tally.n)]
        helper.save_eval_results([], tally.hits, samples, subset, MODEL, score_dir)
    table: dict[str, Any] = {}
    helper.update_leaderboard_table_with_local_score_file(table, score_dir)
    rows: dict[str, list[Any]] = {}

    def capture(data: list[list[Any]], file_path: Any, *_args: Any, **_kwargs: Any) -> None:
        rows[Path(file_path).name] = data[0]

    original = helper.write_score_csv_file
    helper.write_score_csv_file = capture
    try:
        helper.generate_leaderboard_csv(table, work)
    finally:
        helper.write_score_csv_file = original
    overall = rows["data_overall.csv"]
    return {
        "overall_accuracy": overall[1],
        "non_live": rows["data_non_live.csv"][2],
        "live": rows["data_live.csv"][2],
        "multi_turn": rows["data_multi_turn.csv"][2],
        "agentic": rows["data_agentic.csv"][2],
        "web_search": overall[23],
        "memory": overall[26],
        "irrelevance": overall[31],
    }


def tallies(rows: dict[str, tuple[int, int]]) -> dict[str, Tally]:
    return {s: Tally(hits=h, n=n) for s, (h, n) in rows.items()}


COMPLETE = {s: ((size * 7) // 11, size) for s, size in V4_DATASET_SIZES.items()}
PARTIAL = {
    s: t for s, t in COMPLETE.items() if s not in ("simple_java", "live_parallel", "memory_kv")
}
NON_LIVE_ONLY = {s: COMPLETE[s] for s in ("simple_python", "multiple", "irrelevance")}


@pytest.mark.parametrize(
    "rows", [COMPLETE, PARTIAL, NON_LIVE_ONLY], ids=["complete", "partial", "non-live only"]
)
def test_bfcl_v4_agrees_with_bfcl_eval(
    helper: Any, rows: dict[str, tuple[int, int]], tmp_path: Path
) -> None:
    ours = aggregate_v4(tallies(rows))
    theirs = peer_numbers(helper, tallies(rows), tmp_path)
    for name, value in theirs.items():
        if value == "N/A":  # bfcl-eval shows a summary with a missing part as N/A
            continue
        assert ours[name] == pytest.approx(value, rel=0, abs=1e-12), name
    assert ours["overall_accuracy"] == pytest.approx(theirs["overall_accuracy"], rel=0, abs=1e-12)


def test_score_py_and_bfcl_v4_differ_by_design_only_on_missing_subsets() -> None:
    """On a complete draw the seed's score.py and BFCL V4 agree on the shared categories; with a
    subset missing, score.py drops it from the divisor and V4 counts it as 0 at full size."""
    complete, partial = tallies(COMPLETE), tallies(PARTIAL)
    assert aggregate(complete)["non_live"] == pytest.approx(
        aggregate_v4(complete)["non_live"], abs=1e-12
    )
    assert aggregate(complete)["live"] == pytest.approx(aggregate_v4(complete)["live"], abs=1e-12)
    assert aggregate(complete)["hallucination"] == pytest.approx(
        aggregate_v4(complete)["irrelevance"], abs=1e-12
    )
    assert aggregate(partial)["non_live"] > aggregate_v4(partial)["non_live"]  # type: ignore[operator]
    assert aggregate(partial)["live"] > aggregate_v4(partial)["live"]  # type: ignore[operator]
