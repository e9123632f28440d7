"""Parsers of upstream harness outputs: each reads a harness's output directory into the
evidence records the verifier replays, or says what is wrong with it.

A parser never scores: it turns the harness's own files into typed records (SparkBench quality,
repeat reliability and quarantine marker; Hermes task lines; BenchLocal pack scores). A missing or
malformed output is a :class:`ParseFailed`, which the runner records as a failed component (an
infrastructure failure: "compatible structured output"). BFCL shard reports are checked and
aggregated as evidence; no gx10 component scores them yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from bundle_schema import KINDS, loads_strict, validate_document
from bundle_schema.errors import DocumentError, InvalidInput
from bundle_schema.models import (
    BenchLocalPacks,
    ComponentName,
    HermesTask,
    QuarantineMarker,
    SparkQuality,
    SparkRepeat,
)
from verify.scorers import load_plan, load_shard, score_shards

__all__ = ["PARSERS", "ParseFailed", "Parsed", "parse_outputs"]


class ParseFailed(Exception):
    """A harness's outputs cannot be read as evidence; the message says which and why."""


@dataclass
class Parsed:
    """What a harness produced, as records for the bundle."""

    records: dict[str, tuple[str, BaseModel | tuple[BaseModel, ...]]] = field(default_factory=dict)
    """By logical name: (kind, record or JSONL records)."""
    quarantines: dict[ComponentName, QuarantineMarker] = field(default_factory=dict)
    metrics: dict[ComponentName, dict[str, float | int | None]] = field(default_factory=dict)


def _document(path: Path, kind: str) -> BaseModel:
    if not path.is_file():
        raise ParseFailed(f"{path.name}: the harness did not write it")
    try:
        return validate_document(KINDS[kind], loads_strict(path.read_bytes(), path.name), path.name)
    except DocumentError as exc:
        raise ParseFailed(str(exc)) from None


def _spark(out: Path, _components: Sequence[ComponentName]) -> Parsed:
    quality = _document(out / "quality.json", "spark-quality")
    repeat = _document(out / "repeat.json", "spark-repeat")
    assert isinstance(quality, SparkQuality) and isinstance(repeat, SparkRepeat)  # noqa: S101
    parsed = Parsed(
        records={
            "components/coding/spark-quality.json": ("spark-quality", quality),
            "components/reliability/spark-repeat.json": ("spark-repeat", repeat),
        },
        metrics={
            "coding": {"code_domain_quality": quality.code_domain_quality,
                       "tasks": quality.tasks, "passed": quality.passed},
            "reliability": {"repeat_reliability": repeat.repeat_reliability},
        },
    )  # fmt: skip
    marker = out / "quarantine.json"
    if marker.is_file():
        try:
            raw = loads_strict(marker.read_bytes(), marker.name)
        except DocumentError as exc:
            raise ParseFailed(str(exc)) from None
        reason = raw.get("reason") if isinstance(raw, dict) else None
        provisional = raw.get("provisional") if isinstance(raw, dict) else None
        metrics = {
            k: v
            for k, v in (provisional or {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        parsed.quarantines["coding"] = QuarantineMarker(
            schema_version=1,
            component="coding",
            upstream_reason=str(reason or "no reason given")[:4096],
            provisional_metrics=metrics,
            source="components/coding/raw/quarantine.json",
        )
    return parsed


def _hermes(out: Path, _components: Sequence[ComponentName]) -> Parsed:
    path = out / "tasks.jsonl"
    if not path.is_file():
        raise ParseFailed("tasks.jsonl: the harness did not write it")
    tasks: list[HermesTask] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"tasks.jsonl:{number}"
        try:
            task = validate_document(KINDS["hermes-task"], loads_strict(line, where), where)
        except DocumentError as exc:
            raise ParseFailed(str(exc)) from None
        assert isinstance(task, HermesTask)  # noqa: S101
        tasks.append(task)
    if not tasks:
        raise ParseFailed("tasks.jsonl: no task")
    passed = sum(t.outcome == "PASS" for t in tasks)
    return Parsed(
        records={"components/hermes/tasks.jsonl": ("hermes-task", tuple(tasks))},
        metrics={"hermes": {"tasks_selected": len(tasks), "tasks_passed": passed}},
    )


def _benchlocal(out: Path, _components: Sequence[ComponentName]) -> Parsed:
    packs = _document(out / "packs.json", "benchlocal-packs")
    assert isinstance(packs, BenchLocalPacks)  # noqa: S101
    return Parsed(
        records={"components/tool_instruction/benchlocal-packs.json": ("benchlocal-packs", packs)},
        metrics={"tool_instruction": {"mean_pack_score": packs.mean}},
    )


def _bfcl(out: Path, components: Sequence[ComponentName]) -> Parsed:
    """BFCL shard reports (``shards/*.json``) and their plan (``plan.json``), checked and
    aggregated as ``audit score bfcl`` does (score.py); the aggregate is a metric of the first
    component the harness serves."""
    paths = sorted((out / "shards").glob("*.json")) if (out / "shards").is_dir() else []
    if not paths:
        raise ParseFailed("shards/: the harness wrote no shard report")
    try:
        shards = [load_shard(path.read_bytes(), f"shards/{path.name}") for path in paths]
        plan = load_plan((out / "plan.json").read_bytes(), "plan.json") if (
            out / "plan.json").is_file() else None  # fmt: skip
        score = score_shards(shards, plan)
    except InvalidInput as exc:
        raise ParseFailed(str(exc)) from None
    component = components[0]
    records: dict[str, tuple[str, BaseModel | tuple[BaseModel, ...]]] = {
        f"components/{component}/bfcl/shard-{i:04d}.json": ("bfcl-shard", shard.shard)
        for i, shard in enumerate(shards)
    }
    if plan is not None:
        records[f"components/{component}/bfcl/plan.json"] = ("bfcl-plan", plan)
    overall = score.categories.get("overall_accuracy")
    return Parsed(
        records=records,
        metrics={component: {"bfcl_overall_accuracy": None if overall is None else 100 * overall,
                             "bfcl_samples": sum(t.n for t in score.tallies.values())}},
    )  # fmt: skip


PARSERS: Mapping[str, Callable[[Path, Sequence[ComponentName]], Parsed]] = {
    "spark": _spark,
    "hermes": _hermes,
    "benchlocal": _benchlocal,
    "bfcl": _bfcl,
}
"""Each named parser of the pin set's harness declarations."""


def parse_outputs(parser: str, out: Path, components: Sequence[ComponentName]) -> Parsed:
    """Read a harness's output directory with the named parser, for the components it serves.

    Raises:
        ParseFailed: an output is missing or malformed.
    """
    return PARSERS[parser](out, components)
