"""Parsers of harness outputs: what they accept, and what they refuse as evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.parsers import ParseFailed, parse_outputs
from bundle_schema import canonical_bytes, digest_of


def shard(path: Path, totals: dict[str, tuple[int, int]], ids: list[str]) -> bytes:
    data = json.dumps({"subset_totals": {s: {"hits": h, "n": n} for s, (h, n) in totals.items()},
                       "sample_ids": ids}).encode()  # fmt: skip
    path.write_bytes(data)
    return data


def test_bfcl_shards_are_checked_and_aggregated(tmp_path: Path) -> None:
    (tmp_path / "shards").mkdir()
    one = shard(tmp_path / "shards" / "a.json", {"simple_python": (3, 4)}, ["s1", "s2", "s3", "s4"])
    two = shard(tmp_path / "shards" / "b.json", {"simple_python": (1, 2)}, ["s5", "s6"])
    plan = {"shards": [digest_of(one), digest_of(two)]}
    (tmp_path / "plan.json").write_bytes(canonical_bytes(plan))
    parsed = parse_outputs("bfcl", tmp_path, ["tool_instruction"])
    assert sorted(parsed.records) == [
        "components/tool_instruction/bfcl/plan.json",
        "components/tool_instruction/bfcl/shard-0000.json",
        "components/tool_instruction/bfcl/shard-0001.json",
    ]
    metrics = parsed.metrics["tool_instruction"]
    assert metrics["bfcl_samples"] == 6
    assert metrics["bfcl_overall_accuracy"] == pytest.approx(100 * 4 / 6)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "wrote no shard report"),
        ({"a.json": ["s1"], "b.json": ["s1"]}, "the same shard as shards/a.json"),
        ({"a.json": ["s1"], "b.json": ["s1", "s2"]}, "sample 's1' is also in shards/a.json"),
    ],
)
def test_bfcl_outputs_that_are_not_evidence(
    tmp_path: Path, files: dict[str, list[str]], message: str
) -> None:
    (tmp_path / "shards").mkdir()
    for name, ids in files.items():
        shard(tmp_path / "shards" / name, {"multiple": (len(ids), len(ids))}, ids)
    with pytest.raises(ParseFailed, match=message):
        parse_outputs("bfcl", tmp_path, ["tool_instruction"])


@pytest.mark.parametrize(
    ("parser", "files", "message"),
    [
        ("spark", {}, "quality.json: the harness did not write it"),
        ("spark", {"quality.json": "{}", "repeat.json": "{}"}, "quality.json: \\$: 'generation'"),
        ("hermes", {"tasks.jsonl": ""}, "tasks.jsonl: no task"),
        ("benchlocal", {"packs.json": '{"packs": {"a": 101}}'}, "packs.json: \\$.packs.a"),
    ],
)
def test_malformed_outputs_are_refused(
    tmp_path: Path, parser: str, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ParseFailed, match=message):
        parse_outputs(parser, tmp_path, ["coding"])


def test_records_gain_the_exchanges_their_header_named() -> None:
    from audit.run import _with_references  # noqa: PLC0415 - the runner's own step
    from bundle_schema.models import BfclShard, Tally  # noqa: PLC0415

    shard = BfclShard(subset_totals={"multiple": Tally(hits=1, n=1)}, shard_id="s0")
    references = {"bfcl/s0": (4, 5), "hermes/other": (6,)}
    named = _with_references("bfcl-shard", shard, references)
    assert isinstance(named, BfclShard)
    assert named.exchanges == (4, 5)
    assert _with_references("spark-quality", shard, references) is shard
