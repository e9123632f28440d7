"""Readers of upstream harness outputs, shared by the runner and the verifier.

A reader turns a harness's own output files (by their path relative to its output directory)
into the evidence records the replay reads: SparkBench quality, repeat reliability and quarantine
marker; Hermes task lines; BenchLocal pack scores; BFCL shard reports. The runner parses what a
harness wrote with these; the verifier parses the raw outputs kept in the bundle with the very
same code and refuses a record that disagrees with them. A reader never scores, and never
raises anything but :class:`OutputsUnreadable`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

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

__all__ = ["READERS", "READS", "Outputs", "OutputsUnreadable", "raw_name", "read_outputs"]


class OutputsUnreadable(Exception):
    """A harness's outputs cannot be read as evidence; the message says which and why."""


@dataclass
class Outputs:
    """What a harness produced, as records for the bundle."""

    records: dict[str, tuple[str, BaseModel | tuple[BaseModel, ...]]] = field(default_factory=dict)
    """By logical name: (kind, record or JSON Lines records)."""
    quarantines: dict[ComponentName, QuarantineMarker] = field(default_factory=dict)
    metrics: dict[ComponentName, dict[str, float | int | None]] = field(default_factory=dict)


Files = Mapping[str, bytes]
"""A harness's output files by their path relative to its output directory."""


def raw_name(component: str, relative: str) -> str:
    """The logical name a raw output file is kept under (lower case, as names must be)."""
    return f"components/{component}/raw/{relative.lower()}"


def _document(files: Files, name: str, kind: str) -> BaseModel:
    data = files.get(name)
    if data is None:
        raise OutputsUnreadable(f"{name}: the harness did not write it")
    try:
        return validate_document(KINDS[kind], loads_strict(data, name), name)
    except DocumentError as exc:
        raise OutputsUnreadable(str(exc)) from None


def _spark(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    quality = _document(files, "quality.json", "spark-quality")
    repeat = _document(files, "repeat.json", "spark-repeat")
    assert isinstance(quality, SparkQuality) and isinstance(repeat, SparkRepeat)  # noqa: S101
    outputs = Outputs(
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
    marker = files.get("quarantine.json")
    if marker is not None:
        try:
            raw = loads_strict(marker, "quarantine.json")
        except DocumentError as exc:
            raise OutputsUnreadable(str(exc)) from None
        reason = raw.get("reason") if isinstance(raw, dict) else None
        provisional = raw.get("provisional") if isinstance(raw, dict) else None
        metrics = {
            k: v
            for k, v in (provisional if isinstance(provisional, dict) else {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool) and isinstance(k, str)
        }
        outputs.quarantines["coding"] = QuarantineMarker(
            schema_version=1,
            component="coding",
            upstream_reason=str(reason or "no reason given")[:4096],
            provisional_metrics=metrics,
            source=raw_name("coding", "quarantine.json"),
        )
    return outputs


def _hermes(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    data = files.get("tasks.jsonl")
    if data is None:
        raise OutputsUnreadable("tasks.jsonl: the harness did not write it")
    tasks: list[HermesTask] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"tasks.jsonl:{number}"
        try:
            task = validate_document(KINDS["hermes-task"], loads_strict(line, where), where)
        except DocumentError as exc:
            raise OutputsUnreadable(str(exc)) from None
        assert isinstance(task, HermesTask)  # noqa: S101
        tasks.append(task)
    if not tasks:
        raise OutputsUnreadable("tasks.jsonl: no task")
    passed = sum(t.outcome == "PASS" for t in tasks)
    return Outputs(
        records={"components/hermes/tasks.jsonl": ("hermes-task", tuple(tasks))},
        metrics={"hermes": {"tasks_selected": len(tasks), "tasks_passed": passed}},
    )


def _benchlocal(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    packs = _document(files, "packs.json", "benchlocal-packs")
    assert isinstance(packs, BenchLocalPacks)  # noqa: S101
    return Outputs(
        records={"components/tool_instruction/benchlocal-packs.json": ("benchlocal-packs", packs)},
        metrics={"tool_instruction": {"mean_pack_score": packs.mean}},
    )


def _bfcl(files: Files, components: Sequence[ComponentName]) -> Outputs:
    """BFCL shard reports (``shards/*.json``) and their plan (``plan.json``), checked and
    aggregated as ``audit score bfcl`` does (score.py); the aggregate is a metric of the first
    component the harness serves."""
    names = sorted(n for n in files if n.startswith("shards/") and n.endswith(".json"))
    if not names:
        raise OutputsUnreadable("shards/: the harness wrote no shard report")
    try:
        shards = [load_shard(files[name], name) for name in names]
        plan = load_plan(files["plan.json"], "plan.json") if "plan.json" in files else None
        score = score_shards(shards, plan)
    except InvalidInput as exc:
        raise OutputsUnreadable(str(exc)) from None
    component = components[0]
    records: dict[str, tuple[str, BaseModel | tuple[BaseModel, ...]]] = {
        f"components/{component}/bfcl/shard-{i:04d}.json": ("bfcl-shard", shard.shard)
        for i, shard in enumerate(shards)
    }
    if plan is not None:
        records[f"components/{component}/bfcl/plan.json"] = ("bfcl-plan", plan)
    overall = score.categories.get("overall_accuracy")
    return Outputs(
        records=records,
        metrics={component: {"bfcl_overall_accuracy": None if overall is None else 100 * overall,
                             "bfcl_samples": sum(t.n for t in score.tallies.values())}},
    )  # fmt: skip


READERS: Mapping[str, Callable[[Files, Sequence[ComponentName]], Outputs]] = {
    "spark": _spark,
    "hermes": _hermes,
    "benchlocal": _benchlocal,
    "bfcl": _bfcl,
}
"""Each named reader of the pin set's harness declarations (``parser = ...``)."""


READS: Mapping[str, Callable[[str], bool]] = {
    "spark": lambda name: name in ("quality.json", "repeat.json", "quarantine.json"),
    "hermes": lambda name: name == "tasks.jsonl",
    "benchlocal": lambda name: name == "packs.json",
    "bfcl": lambda name: (
        name == "plan.json" or (name.startswith("shards/") and name.endswith(".json"))
    ),
}
"""Which output files (by relative path) each reader reads: the rest of a harness's raw
outputs is kept as evidence, and listed as unread."""


def read_outputs(parser: str, files: Files, components: Sequence[ComponentName]) -> Outputs:
    """Read a harness's output files with the named reader, for the components it serves.

    Raises:
        OutputsUnreadable: an output is missing or malformed.
    """
    return READERS[parser](files, components)
