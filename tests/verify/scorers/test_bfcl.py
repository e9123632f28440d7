"""BFCL shard aggregation (seed 003): the worked example, properties, refusals, the CLI."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.cli import main
from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import InvalidInput
from bundle_schema.models import BfclPlan, Tally
from verify.scorers import (
    aggregate,
    aggregate_v4,
    load_shard,
    score_shards,
    tallies_from_metrics,
    union,
)
from verify.scorers.bfcl import KNOWN, V4_DATASET_SIZES, ShardRefused

# The worked example of docs/scorers.md.
EXAMPLE = {
    "simple_python": (8, 10),
    "simple_java": (1, 2),
    "simple_javascript": (0, 1),
    "multiple": (3, 4),
    "parallel": (1, 2),
    "parallel_multiple": (2, 2),
    "live_simple": (3, 4),
    "live_multiple": (5, 10),
    "irrelevance": (2, 2),
    "live_irrelevance": (1, 4),
}


def tallies(rows: dict[str, tuple[int, int]]) -> dict[str, Tally]:
    return {s: Tally(hits=h, n=n) for s, (h, n) in rows.items()}


def test_worked_example_by_hand() -> None:
    f = Fraction
    simple = (f(8, 10) + f(1, 2) + f(0, 1)) / 3
    non_live = (simple + f(3, 4) + f(1, 2) + f(2, 2)) / 4
    live = f(3 + 5, 4 + 10)
    hallucination = (f(2, 2) + f(1, 4)) / 2
    expected = {
        "overall_accuracy": f(26, 41),
        "normalized_single_turn_score": (non_live + live + hallucination) / 3,
        "non_live": non_live,
        "live": live,
        "hallucination": hallucination,
    }
    got = aggregate(tallies(EXAMPLE))
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(float(value), rel=0, abs=1e-15), name
    assert got["non_live"] == pytest.approx(0.6708333333333333, abs=1e-15)


def test_a_missing_subset_changes_its_category_divisor() -> None:
    rows = dict(EXAMPLE)
    del rows["simple_java"]
    simple = (0.8 + 0.0) / 2
    assert aggregate(tallies(rows))["non_live"] == pytest.approx((simple + 0.75 + 0.5 + 1.0) / 4)


def test_a_subset_with_no_samples_counts_as_missing() -> None:
    rows = dict(EXAMPLE, simple_java=(0, 0))
    without = dict(EXAMPLE)
    del without["simple_java"]
    assert aggregate(tallies(rows)) == aggregate(tallies(without))


def test_categories_with_no_subsets_are_null() -> None:
    got = aggregate(tallies({"live_simple": (1, 2)}))
    assert got == {
        "overall_accuracy": 0.5,
        "normalized_single_turn_score": 0.5,
        "non_live": None,
        "live": 0.5,
        "hallucination": None,
    }
    assert set(aggregate({}).values()) == {None}


def test_averaging_shard_scores_is_not_the_union() -> None:
    """The seed's point: a mean of the shards' normalized scores is not the whole-set value."""
    one = tallies({"simple_python": (9, 10)})
    two = tallies({"simple_python": (1, 10), "live_simple": (1, 1)})
    mean_of_shards = (
        aggregate(one)["normalized_single_turn_score"]  # type: ignore[operator]
        + aggregate(two)["normalized_single_turn_score"]
    ) / 2
    assert mean_of_shards == pytest.approx((0.9 + (0.1 + 1.0) / 2) / 2)
    assert aggregate(union([one, two]))["normalized_single_turn_score"] == pytest.approx(0.75)


rows = st.lists(st.tuples(st.sampled_from(sorted(KNOWN)), st.booleans()), max_size=60)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(rows, st.data())
def test_any_partition_into_shards_gives_the_same_union_result(
    samples: list[tuple[str, bool]], data: st.DataObject
) -> None:
    count = data.draw(st.integers(1, 6), label="shards")
    owners = data.draw(
        st.lists(st.integers(0, count - 1), min_size=len(samples), max_size=len(samples))
    )
    whole: dict[str, list[int]] = {}
    parts: list[dict[str, list[int]]] = [{} for _ in range(count)]
    for (subset, hit), owner in zip(samples, owners, strict=True):
        for target in (whole, parts[owner]):
            counts = target.setdefault(subset, [0, 0])
            counts[0] += hit
            counts[1] += 1
    as_tallies = [tallies({s: (h, n) for s, (h, n) in p.items()}) for p in parts]
    assert union(as_tallies) == tallies({s: (h, n) for s, (h, n) in sorted(whole.items())})
    assert aggregate(union(as_tallies)) == aggregate(
        tallies({s: (h, n) for s, (h, n) in whole.items()})
    )


def shard_bytes(rows: dict[str, tuple[int, int]], **extra: Any) -> bytes:
    body = {"subset_totals": {s: {"hits": h, "n": n} for s, (h, n) in rows.items()}, **extra}
    return json.dumps(body, indent=2).encode()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(sorted(KNOWN)), st.integers(0, 50), min_size=1),
        min_size=1,
        max_size=5,
    ),
    st.data(),
)
def test_a_duplicated_shard_is_always_refused(
    shards: list[dict[str, int]], data: st.DataObject
) -> None:
    loaded = [
        load_shard(
            shard_bytes({s: (n // 2, n) for s, n in rows.items()}, shard_id=f"s{i}"), f"s{i}"
        )
        for i, rows in enumerate(shards)
    ]
    twin = data.draw(st.sampled_from(loaded))
    position = data.draw(st.integers(0, len(loaded)))
    copy = load_shard(
        shard_bytes(
            {s: (t.hits, t.n) for s, t in twin.shard.subset_totals.items()},
            shard_id=twin.shard.shard_id,
        ),
        "copy",
    )
    with pytest.raises(ShardRefused, match="the same shard as"):
        score_shards([*loaded[:position], copy, *loaded[position:]])


def test_bfcl_v4_by_hand_with_missing_subsets_counted_as_zero() -> None:
    got = aggregate_v4(tallies(EXAMPLE))
    simple = (0.8 + 0.5 + 0.0) / 3
    non_live = (simple + 0.75 + 0.5 + 1.0) / 4
    # live_parallel (16) and live_parallel_multiple (24) were not run: accuracy 0, full size
    live = (0.75 * 4 + 0.5 * 10 + 0 * 16 + 0 * 24) / (4 + 10 + 16 + 24)
    irrelevance = (1.0 + 0.25) / 2
    assert got["non_live"] == pytest.approx(non_live, abs=1e-15)
    assert got["live"] == pytest.approx(live, abs=1e-15)
    assert got["irrelevance"] == pytest.approx(irrelevance, abs=1e-15)
    assert (got["multi_turn"], got["agentic"], got["web_search"], got["memory"]) == (0, 0, 0, 0)
    overall = 0.1 * non_live + 0.1 * live + 0.1 * irrelevance
    assert got["overall_accuracy"] == pytest.approx(overall, abs=1e-15)


def test_bfcl_v4_complete_run() -> None:
    rows = {subset: (size // 2, size) for subset, size in V4_DATASET_SIZES.items()}
    got = aggregate_v4(tallies(rows))
    assert got["memory"] == pytest.approx(((77 / 155) * 3) / 3)
    assert got["web_search"] == pytest.approx(0.5)
    expected_live = sum(
        size // 2
        for s, size in V4_DATASET_SIZES.items()
        if s.startswith("live_") and s != "live_irrelevance"
    ) / sum(
        size
        for s, size in V4_DATASET_SIZES.items()
        if s.startswith("live_") and s != "live_irrelevance"
    )
    assert got["live"] == pytest.approx(expected_live, abs=1e-15)


def test_cli_bfcl_v4_names_missing_subsets(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    a = write(
        tmp_path / "a.json", shard_bytes({"multi_turn_base": (50, 200), "live_relevance": (10, 16)})
    )
    assert main(["score", "bfcl", a, "--aggregation", "bfcl-v4", "--json"]) == 0
    result = json.loads(capsysbinary.readouterr().out)
    assert result["aggregation"] == "bfcl-v4"
    assert result["categories"]["multi_turn"] == pytest.approx(0.25 / 4)
    assert result["categories"]["overall_accuracy"] == pytest.approx(0.3 * 0.25 / 4)
    assert "multi_turn_base" not in result["missing_subsets"]
    assert len(result["missing_subsets"]) == len(V4_DATASET_SIZES) - 1
    assert main(["score", "bfcl", a]) == 2  # live_relevance and multi_turn are unknown to score.py


def test_tallies_from_metrics() -> None:
    metrics = {"subset.live_simple.hits": 3, "subset.live_simple.n": 4, "accuracy": 0.75}
    assert tallies_from_metrics(metrics) == {"live_simple": Tally(hits=3, n=4)}
    assert tallies_from_metrics({"subset.parallel.hits": 2.0, "subset.parallel.n": 2.0}) == {
        "parallel": Tally(hits=2, n=2)
    }


@pytest.mark.parametrize(
    "metrics",
    [
        {"accuracy": 0.5},
        {"subset.live_simple.hits": 3},
        {"subset.live_simple.n": 4},
        {"subset.live_simple.hits": 3, "subset.live_simple.n": None},
        {"subset.live_simple.hits": 1.5, "subset.live_simple.n": 4},
        {"subset.live_simple.hits": -1, "subset.live_simple.n": 4},
        {"subset.live_simple.hits": 5, "subset.live_simple.n": 4},
        {"subset.live_simple.hits": True, "subset.live_simple.n": 4},
    ],
    ids=[
        "no tallies",
        "hits without n",
        "n without hits",
        "null n",
        "fraction",
        "negative",
        "hits over n",
        "boolean",
    ],
)
def test_tallies_from_metrics_cannot_be_aggregated(metrics: dict[str, Any]) -> None:
    assert tallies_from_metrics(metrics) is None


# --- the CLI ----------------------------------------------------------------------------------


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_cli_json_is_the_union_and_independent_of_shard_order(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    rows = list(EXAMPLE.items())
    a = write(tmp_path / "a.json", shard_bytes(dict(rows[:4])))
    b = write(tmp_path / "b.json", shard_bytes(dict(rows[4:])))
    outputs = []
    for order in ([a, b], [b, a]):
        assert main(["score", "bfcl", *order, "--json"]) == 0
        outputs.append(capsysbinary.readouterr().out)
    assert outputs[0] == outputs[1]
    result = json.loads(outputs[0])
    assert canonical_bytes(result) + b"\n" == outputs[0]
    assert result["categories"] == aggregate(tallies(EXAMPLE))
    assert result["aggregation"] == "score-py" and result["scorer"] == "bfcl"
    assert result["shards"] == sorted(digest_of(Path(p).read_bytes()) for p in (a, b))


def test_cli_with_a_complete_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", shard_bytes({"parallel": (1, 2)}))
    plan = {"shards": [digest_of(Path(a).read_bytes())]}
    p = write(tmp_path / "plan.json", json.dumps(plan).encode())
    assert main(["score", "bfcl", a, "--plan", p]) == 0
    assert "non_live" in capsys.readouterr().out


REFUSALS = [
    (
        "hits over n",
        [{"subset_totals": {"parallel": {"hits": 3, "n": 2}}}],
        None,
        "subset_totals.parallel: hits 3 > n 2",
    ),
    (
        "negative count",
        [{"subset_totals": {"parallel": {"hits": -1, "n": 2}}}],
        None,
        "$.subset_totals.parallel.hits",
    ),
    (
        "unknown subset",
        [{"subset_totals": {"exec_simple": {"hits": 1, "n": 2}}}],
        None,
        "subset_totals.exec_simple: not a subset the score-py aggregation knows",
    ),
    ("no subset_totals", [{"shard_id": "s1"}], None, "'subset_totals' is a required property"),
    (
        "float count",
        [{"subset_totals": {"parallel": {"hits": 1.5, "n": 2}}}],
        None,
        "$.subset_totals.parallel.hits",
    ),
    (
        "overlapping samples",
        [
            {"subset_totals": {"parallel": {"hits": 1, "n": 2}}, "sample_ids": ["p1", "p2"]},
            {"subset_totals": {"parallel": {"hits": 1, "n": 1}}, "sample_ids": ["p2"]},
        ],
        None,
        "sample 'p2' is also in",
    ),
    (
        "sample ids disagree with tallies",
        [
            {"subset_totals": {"parallel": {"hits": 1, "n": 2}}, "sample_ids": ["p1"]},
        ],
        None,
        "sample_ids lists 1 samples, subset_totals count 2",
    ),
    (
        "missing planned shard",
        [{"subset_totals": {"parallel": {"hits": 1, "n": 2}}}],
        ["sha256:" + "0" * 64],
        "1 planned shard(s) missing, first: sha256:0000",
    ),
]


@pytest.mark.parametrize(
    ("shards", "plan", "fragment"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_cli_refusals(
    shards: list[dict[str, Any]],
    plan: list[str] | None,
    fragment: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths = [write(tmp_path / f"s{i}.json", json.dumps(s).encode()) for i, s in enumerate(shards)]
    extra = (
        ["--plan", write(tmp_path / "plan.json", json.dumps({"shards": plan}).encode())]
        if plan
        else []
    )
    assert main(["score", "bfcl", *paths, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err, err


def test_cli_refuses_the_same_file_twice_and_a_shard_outside_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path / "a.json", shard_bytes({"parallel": (1, 2)}))
    assert main(["score", "bfcl", a, a]) == 2
    assert "the same shard as" in capsys.readouterr().err
    b = write(tmp_path / "b.json", shard_bytes({"multiple": (1, 2)}))
    plan = write(
        tmp_path / "plan.json", json.dumps({"shards": [digest_of(Path(a).read_bytes())]}).encode()
    )
    assert main(["score", "bfcl", a, b, "--plan", plan]) == 2
    assert f"{b}: not in the shard plan" in capsys.readouterr().err


def test_no_shard_is_refused() -> None:
    with pytest.raises(InvalidInput, match="no shard to aggregate"):
        score_shards([], BfclPlan(shards=()))
