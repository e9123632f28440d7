"""Readers of upstream harness outputs, shared by the runner and the verifier.

A reader turns a harness's own output files (by their path relative to its output directory)
into the evidence records the replay reads: SparkBench quality, repeat reliability and quarantine
marker; Hermes task lines; BenchLocal pack scores; BFCL shard reports. The runner parses what a
harness wrote with these; the verifier parses the raw outputs kept in the bundle with the very
same code and refuses a record that disagrees with them. A reader never scores, and never
raises anything but :class:`OutputsUnreadable`.

Two families of readers: those of the project's reference harnesses (``spark``, ``hermes``,
``benchlocal``; the embedded default's), and those of the real upstreams in their own output
formats (``spark-bench``: Spark Bench's long-format ``spark_bench.csv``; ``benchlocal-cli``:
benchlocal-cli's RunResult JSON; ``infermark``: Infermark's JSON report; ``bfcl-eval``: what
``bfcl generate`` and ``bfcl evaluate`` write, its score files' per-subset counts; ``bfcl``:
seed-003 shard reports). docs/upstreams.md says how each real format is read and mapped to seed
000's components, and ADR 0013 why (ADR 0022 for bfcl-eval, a gate).
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bundle_schema import (
    canonical_bytes,
    digest_of,
    kind_of,
    loads_strict,
    validate_document,
)
from bundle_schema.errors import CheckFailed, DocumentError, InvalidInput
from bundle_schema.models import (
    BenchLocalPacks,
    BfclShard,
    ComponentName,
    HermesTask,
    InfermarkStreaming,
    QuarantineMarker,
    SparkQuality,
    SparkRepeat,
    Tally,
    TaskTallies,
    Tier2,
)
from verify.replies import answer_key, copy_digest, last_user_message
from verify.scorers import load_plan, load_shard, score_shards
from verify.scorers.bfcl import V4_SUBSET_SIZES, LoadedShard

__all__ = [
    "BENCHLOCAL_TOOL_INSTRUCTION_PACKS",
    "GATE_RECORDS",
    "READERS",
    "READS",
    "SPARK_BENCH_CODE_DOMAIN",
    "SPARK_BENCH_COLUMNS",
    "SPARK_BENCH_CSV",
    "SPARK_BENCH_SLACK",
    "Outputs",
    "OutputsUnreadable",
    "bfcl_model_folder",
    "escaped_path",
    "gate_place",
    "gate_record",
    "markers_alone",
    "raw_name",
    "read_gate_outputs",
    "read_markers",
    "read_outputs",
    "spark_code_scores",
]


class OutputsUnreadable(CheckFailed):
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


_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")


def escaped_path(relative: str) -> str:
    """The evidence name of a raw output file, from its path under the harness's output
    directory: each segment lowercased (as ever), and a segment that is no logical name segment
    even so (``.file_locks``, ``_tmp``, ``a b``, ``ü``) escaped as ``x`` and its characters,
    each one outside ``[a-z0-9.-]`` as ``_`` and its UTF-8 bytes in hex, a leading ``.`` or
    ``-`` too (``.file_locks`` is ``x_2efile_5flocks``): reversible, and never a name that
    fails. (:func:`raw_name` is the whole logical name of a component's raw file.) The runner
    keeps a harness's outputs by these names and both it and the verifier read them by them."""
    segments = []
    for segment in relative.split("/"):
        lower = segment.lower()
        if _SEGMENT.match(lower):
            segments.append(lower)
            continue
        escaped = "".join(
            c
            if c in _KEPT and (i or c not in ".-")
            else "".join(f"_{b:02x}" for b in c.encode("utf-8", "surrogateescape"))
            for i, c in enumerate(lower)
        )
        segments.append("x" + escaped)
    return "/".join(segments)


def raw_name(component: str, relative: str) -> str:
    """The logical name a raw output file is kept under: its path escaped (:func:`escaped_path`)
    at its component's raw place."""
    return f"components/{component}/raw/{escaped_path(relative)}"


_M = TypeVar("_M", bound=BaseModel)


def _document(files: Files, name: str, model: type[_M]) -> _M:
    data = files.get(name)
    if data is None:
        raise OutputsUnreadable(f"{name}: the harness did not write it")
    try:
        return validate_document(kind_of(model), loads_strict(data, name), name)
    except DocumentError as exc:
        raise OutputsUnreadable(str(exc)) from None


def _spark(files: Files, components: Sequence[ComponentName]) -> Outputs:
    quality = _document(files, "quality.json", SparkQuality)
    repeat = _document(files, "repeat.json", SparkRepeat)
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
    outputs.quarantines.update(_spark_marker(files, components))
    return outputs


def _spark_marker(
    files: Files, components: Sequence[ComponentName]
) -> dict[ComponentName, QuarantineMarker]:
    """The reference SparkBench's ``quarantine.json``, a file of its own: read alone, as it
    is whatever else the harness wrote; the marker of the first component the harness ran for
    (where its outputs are kept), as Spark Bench's is."""
    marker = files.get("quarantine.json")
    if marker is None or not components:
        return {}
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
    first = components[0]
    return {
        first: _build(
            QuarantineMarker,
            "quarantine.json",
            schema_version=1,
            component=first,
            upstream_reason=str(reason or "no reason given")[:4096],
            provisional_metrics=metrics,
            source=raw_name(first, "quarantine.json"),
        )
    }


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
            task = validate_document(kind_of(HermesTask), loads_strict(line, where), where)
        except DocumentError as exc:
            raise OutputsUnreadable(str(exc)) from None
        tasks.append(task)
    if not tasks:
        raise OutputsUnreadable("tasks.jsonl: no task")
    passed = sum(t.outcome == "PASS" for t in tasks)
    return Outputs(
        records={"components/hermes/tasks.jsonl": ("hermes-task", tuple(tasks))},
        metrics={"hermes": {"tasks_selected": len(tasks), "tasks_passed": passed}},
    )


def _benchlocal(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    packs = _document(files, "packs.json", BenchLocalPacks)
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


# --- the real upstreams, in their own output formats --------------------------------------------


def _show(value: object) -> str:
    return repr(value)[:60]


def _json(files: Files, name: str) -> Any:
    data = files.get(name)
    if data is None:
        raise OutputsUnreadable(f"{name}: the harness did not write it")
    try:
        return loads_strict(data, name)
    except DocumentError as exc:
        raise OutputsUnreadable(str(exc)) from None


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OutputsUnreadable(f"{where}: {_show(value)} is not an object")
    return value


def _count(value: Any, where: str) -> int:
    if type(value) is not int or value < 0:
        raise OutputsUnreadable(f"{where}: {_show(value)} is not a count")
    return value


def _number(value: Any, where: str, high: float = math.inf) -> float:
    """A finite number in [0, ``high``] (an integer too large for a float is not one)."""
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float):
        with contextlib.suppress(OverflowError):
            number = float(value)
    if not math.isfinite(number) or not 0 <= number <= high:
        bound = f"[0, {high:g}]" if math.isfinite(high) else ">= 0"
        raise OutputsUnreadable(f"{where}: {_show(value)} is not a number {bound}")
    return number


def _build(model: type[_M], where: str, **fields: Any) -> _M:
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise OutputsUnreadable(f"{where}: {path}: {first['msg']}") from None


# Spark Bench (github Weschera/spark-bench, spark_bench.py): one long-format CSV, appended to by
# every run, one row per measured value.

SPARK_BENCH_CSV = "spark_bench.csv"
SPARK_BENCH_COLUMNS = (
    "run_id", "timestamp", "tier", "model", "label", "endpoint", "topology", "parallelism",
    "context", "batch", "spec_decode", "workload", "metric", "value", "unit", "notes",
)  # fmt: skip
"""The columns spark_bench.py writes; a file may carry more (kept as raw evidence, unread)."""
SPARK_BENCH_CODE_DOMAIN = "code"
"""The workload of the ``eval`` rows of Spark's execution-backed code domain."""
SPARK_BENCH_PASS_MARK = 0.5
"""A scenario passes at this score or above (Spark's own mark, as in its trial statistics)."""
MAX_CSV_ROWS = 1_000_000
_GATE_WORDS = (
    frozenset({"1", "true", "yes", "pass", "passed", "ok", "valid"}),
    frozenset({"0", "false", "no", "fail", "failed", "invalid"}),
)
_FLAG_WORDS = (frozenset({"1", "true", "yes"}), frozenset({"0", "false", "no"}))
SPARK_BENCH_FLAGS = (
    "golden_gate", "run_valid", "self_integrity", "sampling_contamination", "quarantine",
)  # fmt: skip
"""The metrics of the gate and quarantine rows the reader honours wherever they are (the seed's
words; the public Spark Bench writes none of them, docs/upstreams.md)."""
_N = re.compile(r"(?:^|\s)n=(\d{1,9})(?:\s|$)")


@dataclass(frozen=True)
class _Row:
    line: int
    tier: str
    context: str
    batch: str
    workload: str
    metric: str
    value: str
    notes: str


def _spark_header(header: list[str] | None) -> dict[str, int]:
    where = SPARK_BENCH_CSV
    if not header:
        raise OutputsUnreadable(f"{where}:1: no header row")
    index: dict[str, int] = {}
    for number, name in enumerate(header):
        if name in index:
            raise OutputsUnreadable(f"{where}:1: column {_show(name)} twice")
        index[name] = number
    missing = [c for c in SPARK_BENCH_COLUMNS if c not in index]
    if missing:
        raise OutputsUnreadable(
            f"{where}:1: no column {', '.join(missing)}: not Spark Bench's long format"
        )
    return index


_ROW_COLUMNS = ("tier", "context", "batch", "workload", "metric", "value", "notes")


def _spark_rows(data: bytes) -> tuple[str, list[_Row]]:
    """The rows of the one run a ``spark_bench.csv`` holds, and its run id."""
    where = SPARK_BENCH_CSV
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OutputsUnreadable(f"{where}: invalid UTF-8 at byte {exc.start}") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[_Row] = []
    runs: dict[str, int] = {}
    try:
        header = next(reader, None)
        index = _spark_header(header)
        width = len(index)
        for fields in reader:
            line = reader.line_num
            if not fields:
                continue
            if len(rows) >= MAX_CSV_ROWS:
                raise OutputsUnreadable(f"{where}:{line}: more than {MAX_CSV_ROWS} rows")
            if len(fields) != width:
                raise OutputsUnreadable(
                    f"{where}:{line}: {len(fields)} fields, the header has {width}"
                )
            run = fields[index["run_id"]]
            if not run:
                raise OutputsUnreadable(f"{where}:{line}: no run_id")
            runs.setdefault(run, line)
            rows.append(_Row(line, *(fields[index[c]] for c in _ROW_COLUMNS)))
    except csv.Error as exc:
        raise OutputsUnreadable(f"{where}:{reader.line_num}: {exc}") from None
    if not rows:
        raise OutputsUnreadable(f"{where}: no rows after the header")
    if len(runs) > 1:
        named = ", ".join(f"{_show(r)} (from line {n})" for r, n in list(runs.items())[:3])
        raise OutputsUnreadable(
            f"{where}: rows of {len(runs)} runs: {named}: the file is appended across runs and "
            "this reader does not choose one; keep one run's file"
        )
    return next(iter(runs)), rows


class _SparkRun:
    """One run's rows, looked up so that two rows for one value are refused, never chosen."""

    def __init__(self, rows: list[_Row]) -> None:
        self.rows = rows

    def one(self, which: Callable[[_Row], bool], what: str) -> _Row | None:
        found = [r for r in self.rows if which(r)]
        if len(found) > 1:
            raise OutputsUnreadable(
                f"{SPARK_BENCH_CSV}:{found[1].line}: a second row of {what} "
                f"(the first at line {found[0].line})"
            )
        return found[0] if found else None

    def value(
        self, tier: str, workload: str, metric: str, context: str | None = None
    ) -> _Row | None:
        return self.one(
            lambda r: (
                (r.tier, r.workload, r.metric) == (tier, workload, metric)
                and (context is None or r.context == context)
            ),
            f"{tier} {workload} {metric}",
        )

    def flag(self, metric: str, words: tuple[frozenset[str], frozenset[str]]) -> bool | None:
        row = self.one(lambda r: r.metric == metric, metric)
        if row is None:
            return None
        word = row.value.strip().lower()
        if word in words[0]:
            return True
        if word in words[1]:
            return False
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}:{row.line}: {metric} is {_show(row.value)}, neither of "
            f"{', '.join(sorted(words[0] | words[1]))}"
        )


_CSV_NUMBER = re.compile(r"-?[0-9]{1,32}(?:\.[0-9]{1,32})?(?:[eE][+-]?[0-9]{1,3})?")
"""A number as Spark Bench writes one (Python's ``str`` of a rounded float or an int): ASCII
digits, no spaces, no ``_`` (``float`` itself also takes ``" 100 "``, ``"1_00"`` and
full-width digits, none of which Spark writes)."""


def _csv_number(row: _Row, high: float) -> float:
    value = float(row.value) if _CSV_NUMBER.fullmatch(row.value) else math.nan
    if not math.isfinite(value) or not 0 <= value <= high:
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}:{row.line}: {row.metric} is {_show(row.value)}, not a number "
            f"in [0, {high:g}]"
        )
    return value


_CONTEXT = re.compile(r"[0-9]{1,9}")
"""A tier2 row's context length: ASCII digits (``str.isdigit`` takes ``²``, which ``int``
does not)."""


def _tier2(run: _SparkRun) -> Tier2 | None:
    """Tier2 single-stream serving figures at the smallest context measured: non-scoring; a
    figure that failed is null (never a refusal: it does not invalidate the quality result)."""
    if not any(r.tier == "tier2" for r in run.rows):
        return None
    single = [r for r in run.rows if r.tier == "tier2" and r.workload == "single_stream"]
    contexts = sorted({r.context for r in single if _CONTEXT.fullmatch(r.context)}, key=int)
    figures: dict[str, float | None] = {"decode_tps": None, "prefill_tps": None, "ttft_ms": None}
    if contexts:
        for metric in figures:
            row = run.value("tier2", "single_stream", metric, contexts[0])
            try:
                value = float(row.value) if row is not None else math.nan
            except ValueError:
                value = math.nan
            figures[metric] = value if math.isfinite(value) and value >= 0 else None
    measured = sum(v is not None for v in figures.values())
    ttft = figures["ttft_ms"]
    return Tier2(
        status="AVAILABLE" if measured == 3 else "PARTIAL" if measured else "UNAVAILABLE",
        decode_tokens_per_second=figures["decode_tps"],
        prefill_tokens_per_second=figures["prefill_tps"],
        ttft_seconds=None if ttft is None else ttft / 1000,
    )


SPARK_BENCH_SLACK = 0.1 + 1e-9
"""How far a domain's quality may lie from what its scenarios' scores give (x 100): Spark
writes the quality rounded to 0.1 and each score to 0.001 (0.05 and 0.05 of the same scale),
and the float error of 100 x a rounded score."""


def _within_scenarios(row: _Row, quality: float, scores: Sequence[float]) -> None:
    """Spark's domain quality is the difficulty-weighted mean of its scenarios' scores (x 100;
    ``eval_suite.run_suite``), so it lies between their least and greatest: a quality its
    scenarios cannot give, or one with no scenario scored, is refused."""
    if not scores:
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}:{row.line}: the {row.workload} domain's quality is "
            f"{_show(row.value)} with no {row.workload} scenario scored"
        )
    low, high = 100 * min(scores), 100 * max(scores)
    if not low - SPARK_BENCH_SLACK <= quality <= high + SPARK_BENCH_SLACK:
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}:{row.line}: the {row.workload} domain's quality is "
            f"{_show(row.value)}, outside what its {len(scores)} scenarios' scores give "
            f"(a weighted mean of {min(scores):g} to {max(scores):g}, x 100)"
        )


def spark_code_scores(data: bytes) -> dict[str, float]:
    """The code domain's scenario scores of a Spark Bench CSV (by scenario id), read as the
    reader reads them.

    Raises:
        OutputsUnreadable: the file is not one run's CSV, or a score is not a number in [0, 1].
    """
    _, rows = _spark_rows(data)
    return {row.workload: _csv_number(row, 1) for row in _scenario_rows(rows)}


SPARK_SINGLE_STREAM = ("ttft_ms", "decode_tps", "prefill_tps", "output_tokens")
"""The tier2 single-stream figures of a context that are held to its exchange."""


def spark_single_stream(data: bytes) -> dict[str, dict[str, float]]:
    """The tier2 single-stream figures of a Spark Bench CSV (:data:`SPARK_SINGLE_STREAM`), by
    the context its rows name, each a number as the reader reads it (one that is not is left
    out: a figure that failed is no figure).

    Raises:
        OutputsUnreadable: the file is not one run's CSV, or a figure is given twice.
    """
    _, rows = _spark_rows(data)
    run = _SparkRun(rows)
    contexts = sorted(
        {r.context for r in rows if r.tier == "tier2" and r.workload == "single_stream"}
    )
    figures: dict[str, dict[str, float]] = {}
    for context in contexts:
        for metric in SPARK_SINGLE_STREAM:
            row = run.value("tier2", "single_stream", metric, context)
            if row is not None and _CSV_NUMBER.fullmatch(row.value):
                figures.setdefault(context, {})[metric] = float(row.value)
    return figures


SPARK_CONCURRENCY = ("agg_decode_tps", "per_stream_tps", "ttft_p50_ms", "ttft_p99_ms")
"""The tier2 figures of a concurrency level (a batch of requests sent at once), in the order
``run_tier2`` writes them; held to its exchanges."""


@dataclass(frozen=True)
class SparkLevel:
    """One concurrency level's rows as ``run_tier2`` writes them: an ``error`` row, or its
    figures (:data:`SPARK_CONCURRENCY`, each once)."""

    line: int
    batch: str
    """The ``batch`` column as written."""
    error: bool
    given: tuple[str, ...] = ()
    """The metrics of its rows, in the file's order (figures not a number included)."""
    figures: dict[str, float] = field(default_factory=dict)
    """Those that are numbers, as the reader reads them."""


def spark_concurrency(data: bytes) -> list[SparkLevel]:
    """The tier2 concurrency levels of a Spark Bench CSV, in the file's order: a row of
    ``error`` is a level; figure rows run on as one level until a row of another batch, or of a
    metric the level has already (``run_tier2`` writes each level's four figures together, the
    levels one after another, so the k-th level here is the k-th it ran). What the pinned
    levels make of them is the verifier's (:mod:`verify._consistency.spark`).

    Raises:
        OutputsUnreadable: the file is not one run's CSV.
    """
    _, rows = _spark_rows(data)
    levels: list[SparkLevel] = []
    first: _Row | None = None  # the first row of the level of figures being read
    given: dict[str, None] = {}  # its metrics, in order (a dict: linear in the rows)
    figures: dict[str, float] = {}

    def close() -> None:
        if first is not None:
            levels.append(SparkLevel(first.line, first.batch, False, tuple(given), figures))

    for row in rows:
        if (row.tier, row.workload) != ("tier2", "concurrency"):
            continue
        if (
            row.metric == "error"
            or first is None
            or first.batch != row.batch
            or row.metric in given
        ):
            close()
            first, given, figures = row, {}, {}
            if row.metric == "error":
                levels.append(SparkLevel(row.line, row.batch, error=True, given=("error",)))
                first = None
                continue
        given[row.metric] = None
        if _CSV_NUMBER.fullmatch(row.value):
            figures[row.metric] = float(row.value)
    close()
    return levels


def spark_flag_rows(data: bytes) -> list[tuple[int, str]]:
    """The gate and quarantine rows of a Spark Bench CSV (:data:`SPARK_BENCH_FLAGS`), as (line,
    metric), in the file's order.

    Raises:
        OutputsUnreadable: the file is not one run's CSV.
    """
    _, rows = _spark_rows(data)
    return [(row.line, row.metric) for row in rows if row.metric in SPARK_BENCH_FLAGS]


def _scenario_rows(rows: Sequence[_Row], domain: str = SPARK_BENCH_CODE_DOMAIN) -> list[_Row]:
    """The ``eval`` score rows of ``domain``'s scenarios (their notes start ``<domain>:``)."""
    return [
        r
        for r in rows
        if r.tier == "eval" and r.metric == "score" and r.notes.split(":", 1)[0] == domain
    ]


def _spark_bench(files: Files, components: Sequence[ComponentName]) -> Outputs:
    """Spark Bench's ``spark_bench.csv``: coding is the ``eval`` row of the code domain's
    ``domain_quality``, reliability the ``eval`` ``overall`` ``reliability`` (Spark's repeat
    consistency); golden_gate, run_valid, self_integrity, sampling_contamination and
    quarantine rows are honoured wherever they are. A gate the run did not report is not
    passed."""
    data = files.get(SPARK_BENCH_CSV)
    if data is None:
        raise OutputsUnreadable(f"{SPARK_BENCH_CSV}: the harness did not write it")
    run_id, rows = _spark_rows(data)
    run = _SparkRun(rows)
    domain = SPARK_BENCH_CODE_DOMAIN
    quality_row = run.value("eval", domain, "domain_quality")
    if quality_row is None:
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}: run {_show(run_id)} has no eval row of the {domain!r} "
            "domain's domain_quality: Spark Bench did not score the code domain"
        )
    quality = _csv_number(quality_row, 100)
    scenarios = _scenario_rows(rows, domain)
    seen: dict[str, int] = {}
    for row in scenarios:
        if row.workload in seen:
            raise OutputsUnreadable(
                f"{SPARK_BENCH_CSV}:{row.line}: a second score of scenario "
                f"{_show(row.workload)} (the first at line {seen[row.workload]})"
            )
        seen[row.workload] = row.line
    scores = [_csv_number(r, 1) for r in scenarios]
    passed = sum(score >= SPARK_BENCH_PASS_MARK for score in scores)
    _within_scenarios(quality_row, quality, scores)
    stated = _N.search(quality_row.notes)
    if stated is not None and int(stated.group(1)) != len(scenarios):
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}:{quality_row.line}: the {domain} domain states "
            f"n={stated.group(1)}, the run scored {len(scenarios)} {domain} scenarios"
        )
    golden = run.flag("golden_gate", _GATE_WORDS)
    valid = run.flag("run_valid", _GATE_WORDS)
    integrity = run.flag("self_integrity", _GATE_WORDS)
    contamination = run.flag("sampling_contamination", _FLAG_WORDS)
    quality_record = _build(
        SparkQuality, SPARK_BENCH_CSV, generation="spark-bench", code_domain_quality=quality,
        tasks=len(scenarios), passed=passed,
        golden_gate="PASS" if golden else "FAIL",
        self_integrity="FAIL" if integrity is False else "PASS",
        run_valid=valid is True, sampling_contamination=contamination is True,
        tier2=_tier2(run),
    )  # fmt: skip
    coding: dict[str, float | int | None] = {
        "code_domain_quality": quality, "tasks": len(scenarios), "passed": passed,
        "spark_gates_reported": int(golden is not None and valid is not None),
    }  # fmt: skip
    outputs = Outputs(
        records={"components/coding/spark-quality.json": ("spark-quality", quality_record)},
        metrics={"coding": coding},
    )
    reliability_row = run.value("eval", "overall", "reliability")
    if reliability_row is None and "reliability" in components:
        raise OutputsUnreadable(
            f"{SPARK_BENCH_CSV}: run {_show(run_id)} has no eval overall reliability row: "
            "Spark Bench measured no repeat reliability"
        )
    provisional = dict(coding)
    if reliability_row is not None:
        reliability = _csv_number(reliability_row, 100)
        repeat = _build(SparkRepeat, SPARK_BENCH_CSV, repeats=0, repeat_reliability=reliability)
        outputs.records["components/reliability/spark-repeat.json"] = ("spark-repeat", repeat)
        outputs.metrics["reliability"] = {"repeat_reliability": reliability}
        provisional["repeat_reliability"] = reliability
    provisional.pop("spark_gates_reported")
    outputs.quarantines.update(_spark_bench_quarantine(run, components, provisional))
    return outputs


def _spark_bench_quarantine(
    run: _SparkRun, components: Sequence[ComponentName], provisional: dict[str, float | int | None]
) -> dict[ComponentName, QuarantineMarker]:
    """Spark Bench's quarantine row, if it quarantines: the first component's marker, with the
    ``provisional`` metrics read beside it."""
    marker = run.one(lambda r: r.metric == "quarantine", "quarantine")
    if marker is None or marker.value.strip().lower() in _FLAG_WORDS[1] | {""}:
        return {}
    word = marker.value.strip().lower()
    reason = marker.notes or (marker.value if word not in _FLAG_WORDS[0] else "")
    first = components[0]
    return {
        first: _build(
            QuarantineMarker,
            f"{SPARK_BENCH_CSV}:{marker.line}",
            schema_version=1,
            component=first,
            upstream_reason=(reason or "no reason given")[:4096],
            provisional_metrics=provisional,
            source=raw_name(first, SPARK_BENCH_CSV),
        )
    }


def _spark_bench_marker(
    files: Files, components: Sequence[ComponentName]
) -> dict[ComponentName, QuarantineMarker]:
    """Spark Bench's quarantine row read from rows that read, whatever else the run lacks (no
    provisional metrics then: they are the rows that did not read)."""
    data = files.get(SPARK_BENCH_CSV)
    if data is None:
        return {}
    return _spark_bench_quarantine(_SparkRun(_spark_rows(data)[1]), components, {})


# benchlocal-cli 0.9.9 (github noonghunna/benchlocal-cli): the RunResult JSON of --save-json.

BENCHLOCAL_JSON = "benchlocal.json"
BENCHLOCAL_TOOL_INSTRUCTION_PACKS = (
    "toolcall-15",
    "instructfollow-15",
    "structoutput-15",
    "dataextract-15",
)
"""The BenchLocal behavioural packs whose mean is the tool/instruction score (seed 000): tool
calls, instruction following, structured output and data extraction, the deterministic
verifier-backed ports of BenchLocal. Not numeric reasoning (reasonmath-15), the sandboxed
packs, the reasoning suite or aider-polyglot-30 (docs/upstreams.md)."""


def _benchlocal_pack(pack: Any, at: str) -> float:
    pack = _object(pack, at)
    if pack.get("skipped") is not False:
        raise OutputsUnreadable(f"{at}.skipped: {_show(pack.get('skipped'))}: the pack did not run")
    if pack.get("status") != "ok":
        raise OutputsUnreadable(f"{at}.status: {_show(pack.get('status'))}, not 'ok'")
    total = _count(pack.get("total"), f"{at}.total")
    passed = _count(pack.get("passed"), f"{at}.passed")
    if total == 0 or passed > total:
        raise OutputsUnreadable(f"{at}: {passed} passed of {total}: no pass@1 score")
    score = _number(pack.get("score"), f"{at}.score", 1)
    if not math.isclose(score, passed / total, rel_tol=1e-9, abs_tol=1e-12):
        raise OutputsUnreadable(f"{at}.score: {score} is not {passed} passed of {total}")
    counted, counted_passed = _benchlocal_scenarios(pack.get("scenarios"), f"{at}.scenarios")
    if (passed, total) != (counted_passed, counted):
        raise OutputsUnreadable(
            f"{at}: {passed} passed of {total}, its scenarios {counted_passed} passed of {counted}"
        )
    return 100 * score


BENCHLOCAL_UNCOUNTED = "verifier_not_implemented"
"""The failure mode of a scenario benchlocal-cli leaves out of its pack's count
(``runner.run_pack`` at 47d1d66: ``passed`` is the counted scenarios that passed, ``total``
the counted ones). Only its stub scorer gives it (``scoring/_stub.py``: the sandboxed packs
BugFind, HermesAgent and CLI), never a scenario of the verifier-backed packs read here, so a
scenario of those marked so is refused: relabelled, a failure would leave the count."""
BENCHLOCAL_SCENARIOS = 1 << 16
"""The most scenarios a pack's array may hold here (a behavioural pack has 15 a repeat)."""
BENCHLOCAL_REPEATS = 1000
"""The most repeats of a run read here (``--repeat N``; each repeat runs every scenario)."""


def _benchlocal_scenarios(value: Any, at: str) -> tuple[int, int]:
    """The scenarios a pack's count is made of: (counted, counted that passed); each a
    scenario run with a boolean ``passed`` and a string ``failure_mode``, as its ``result``
    has them when it has one, and none left uncounted (:data:`BENCHLOCAL_UNCOUNTED`)."""
    counted = passed = 0
    for number, scenario in enumerate(_list(value, at, BENCHLOCAL_SCENARIOS)):
        where = f"{at}[{number}]"
        run = _object(scenario, where)
        verdict, mode = run.get("passed"), run.get("failure_mode")
        if type(verdict) is not bool or not isinstance(mode, str):
            raise OutputsUnreadable(
                f"{where}: passed {_show(verdict)}, failure_mode {_show(mode)}: not a "
                "scenario's result"
            )
        result = run.get("result")
        if result is not None and (
            _object(result, f"{where}.result").get("passed") is not verdict
            or result.get("failure_mode") != mode
        ):
            raise OutputsUnreadable(f"{where}: its result says otherwise than the scenario")
        if mode == BENCHLOCAL_UNCOUNTED:
            raise OutputsUnreadable(
                f"{where}: failure_mode {mode!r}, which only benchlocal-cli's sandboxed packs' "
                "stub gives: this pack's scenarios are verifier-backed"
            )
        counted += 1
        passed += verdict
    return counted, passed


def _benchlocal_cli(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    """benchlocal-cli's RunResult: the tool/instruction score is the mean of the selected packs'
    pass@1 scores (0-1, as percentages); a selected pack missing, skipped or not ``ok``, and a
    non-canonical (sampling-overridden) run, are refused."""
    name = BENCHLOCAL_JSON
    result = _object(_json(files, name), f"{name}: $")
    if result.get("schema_version") != "1":
        raise OutputsUnreadable(
            f"{name}: $.schema_version: {_show(result.get('schema_version'))}, not '1'"
        )
    for key in ("sampling_overrides", "sampling_source"):
        if result.get(key) is not None:
            raise OutputsUnreadable(
                f"{name}: $.{key}: {_show(result[key])}: a non-canonical run, not comparable to "
                "the packs' own sampling"
            )
    packs = result.get("packs")
    if not isinstance(packs, list):
        raise OutputsUnreadable(f"{name}: $.packs: {_show(packs)} is not a list")
    where: dict[str, int] = {}
    for number, pack in enumerate(packs):
        pack_id = _object(pack, f"{name}: $.packs[{number}]").get("pack_id")
        if not isinstance(pack_id, str):
            raise OutputsUnreadable(f"{name}: $.packs[{number}].pack_id: {_show(pack_id)}")
        if pack_id in where:
            raise OutputsUnreadable(
                f"{name}: $.packs[{number}].pack_id: {pack_id!r} again "
                f"(as $.packs[{where[pack_id]}])"
            )
        where[pack_id] = number
    scores: dict[str, float] = {}
    for pack_id in BENCHLOCAL_TOOL_INSTRUCTION_PACKS:
        if pack_id not in where:
            raise OutputsUnreadable(
                f"{name}: $.packs: no {pack_id}: the tool/instruction score is the mean of "
                f"{', '.join(BENCHLOCAL_TOOL_INSTRUCTION_PACKS)}"
            )
        scores[pack_id] = _benchlocal_pack(
            packs[where[pack_id]], f"{name}: $.packs[{where[pack_id]}]"
        )
    _object(result.get("totals"), f"{name}: $.totals")
    validity = result.get("thinking_validity")
    if validity is not None:
        validity = _object(validity, f"{name}: $.thinking_validity")
    contaminated = sorted(
        k
        for k, v in (validity or {}).items()
        if isinstance(v, dict) and v.get("status") == "contaminated"
    )
    mean = math.fsum(scores.values()) / len(scores)
    record = _build(BenchLocalPacks, name, packs=scores, mean=mean)
    return Outputs(
        records={"components/tool_instruction/benchlocal-packs.json": ("benchlocal-packs", record)},
        metrics={"tool_instruction": {
            "mean_pack_score": mean, "packs": len(scores),
            "packs_in_run": len(packs), "thinking_contaminated_packs": len(contaminated),
        }},
    )  # fmt: skip


@dataclass(frozen=True)
class BenchlocalRun:
    """One scenario run of a benchlocal-cli RunResult, as the cross-checks hold it to the
    pinned packs and the transport log (:func:`benchlocal_runs`)."""

    where: str
    pack: str
    scenario: str
    repeat: int
    """Its ``repeat_index`` (1 to the run's ``repeat``)."""
    passed: bool
    answer: bytes | None
    """Its ``raw_response``'s answer, with its token counts when it has them
    (:func:`verify.replies.answer_key`); None when it gives none (no ``raw_response``, or one
    without a message)."""
    reply: Any = None
    """Its ``raw_response`` (None when it has none): what it was graded on."""
    retries: tuple[bytes | None, ...] = ()
    """The answers of its later attempts (``retry_attempts``, each as :attr:`answer`), in their
    order: benchlocal-cli retries a failed run and keeps the first attempt's grade."""
    copy: bytes | None = None
    """:func:`verify.replies.copy_digest` of its ``raw_response`` (None when it has none): held
    to the transport log's reply as benchlocal-cli keeps it, whole."""


@dataclass(frozen=True)
class BenchlocalRuns:
    """What a RunResult says it ran: its ``repeat``, each pack that ran (not skipped) by id
    with its scenario runs, in the file's order."""

    repeat: int
    packs: dict[str, list[BenchlocalRun]]


def benchlocal_runs(data: bytes) -> BenchlocalRuns:
    """The scenario runs of benchlocal-cli's RunResult (``benchlocal.json``), read as its
    reader reads the file.

    Raises:
        OutputsUnreadable: the file is not a RunResult the reader takes.
    """
    name = BENCHLOCAL_JSON
    result = _object(_json({name: data}, name), f"{name}: $")
    repeat = _count(result.get("repeat", 1), f"{name}: $.repeat")
    if not 1 <= repeat <= BENCHLOCAL_REPEATS:
        raise OutputsUnreadable(
            f"{name}: $.repeat: {repeat}, not a number of repeats (1 to {BENCHLOCAL_REPEATS})"
        )
    packs: dict[str, list[BenchlocalRun]] = {}
    for number, value in enumerate(_list(result.get("packs"), f"{name}: $.packs", 1 << 10)):
        at = f"{name}: $.packs[{number}]"
        pack = _object(value, at)
        pack_id = pack.get("pack_id")
        if not isinstance(pack_id, str) or pack_id in packs:
            raise OutputsUnreadable(f"{at}.pack_id: {_show(pack_id)}, not a pack's id once")
        if pack.get("skipped") is True:
            continue
        runs = packs[pack_id] = []
        for index, scenario in enumerate(
            _list(pack.get("scenarios"), f"{at}.scenarios", BENCHLOCAL_SCENARIOS)
        ):
            where = f"{at}.scenarios[{index}]"
            run = _object(scenario, where)
            key, turn, passed = run.get("id"), run.get("repeat_index", 1), run.get("passed")
            if not isinstance(key, str) or type(turn) is not int or type(passed) is not bool:
                raise OutputsUnreadable(
                    f"{where}: id {_show(key)}, repeat_index {_show(turn)}, passed "
                    f"{_show(passed)}: not a scenario's run"
                )
            answer = _attempt_answer(run)
            reply = run.get("raw_response")
            kept = reply if isinstance(reply, dict) else None
            retried = run.get("retry_attempts")
            retries = tuple(
                _attempt_answer(attempt)
                for attempt in (retried if isinstance(retried, list) else ())
            )
            copy = copy_digest(kept) if kept is not None else None
            runs.append(
                BenchlocalRun(where, pack_id, key, turn, passed, answer, kept, retries, copy)
            )
    return BenchlocalRuns(repeat, packs)


def _attempt_answer(attempt: Any) -> bytes | None:
    """The answer (:func:`verify.replies.answer_key`) of a run's or an attempt's
    ``raw_response``; None when it has none."""
    reply = attempt.get("raw_response") if isinstance(attempt, dict) else None
    return answer_key(reply) if isinstance(reply, dict) else None


# Infermark 0.3.0 (PyPI): the JSON report of ``infermark run ... -o FILE``.

INFERMARK_JSON = "infermark.json"
_STATS = ("p50", "p75", "p90", "p95", "p99", "mean", "min", "max", "std")


_ORDER = ("min", "p50", "p75", "p90", "p95", "p99", "max")


def _stats(value: Any, at: str, *, required: bool) -> dict[str, float] | None:
    """A distribution's figures as Infermark's ``compute_stats`` gives them: in order (the
    least, the percentiles, the most, to a float's rounding), the mean between the least and
    the most, and a deviation no more than half their distance (no values read further apart)."""
    if value is None and not required:
        return None
    stats = _object(value, at)
    figures = {key: _number(stats.get(key), f"{at}.{key}") for key in _STATS}
    ordered = [*itertools.pairwise(_ORDER), ("min", "mean"), ("mean", "max")]
    for low, high in ordered:
        if not _at_most(figures[low], figures[high]):
            raise OutputsUnreadable(
                f"{at}: {low} {figures[low]!r} is more than {high} {figures[high]!r}"
            )
    if not _at_most(figures["std"], (figures["max"] - figures["min"]) / 2):
        raise OutputsUnreadable(
            f"{at}.std: {figures['std']!r} is more than half the distance from min to max"
        )
    return figures


def _at_most(low: float, high: float) -> bool:
    """``low <= high`` but for a float's rounding (Infermark interpolates its percentiles)."""
    return low <= high or math.isclose(low, high, rel_tol=1e-9, abs_tol=1e-12)


def _infermark(files: Files, _components: Sequence[ComponentName]) -> Outputs:
    """Infermark's report, one streaming level at concurrency 1 and no warmup (each request of
    every level, warmups included, is a performance exchange the verifier counts against it):
    ``tokens_per_second`` (visible content chunks over the level's wall) and the TTFT median
    are seed 000's performance inputs."""
    name = INFERMARK_JSON
    report = _object(_json(files, name), f"{name}: $")
    config = _object(report.get("config"), f"{name}: $.config")
    if config.get("mode") != "streaming":
        raise OutputsUnreadable(
            f"{name}: $.config.mode: {_show(config.get('mode'))}: the performance score reads "
            "the streaming measurement"
        )
    warmup = _count(config.get("warmup"), f"{name}: $.config.warmup")
    if warmup:
        raise OutputsUnreadable(
            f"{name}: $.config.warmup: {warmup} warmup requests are exchanges no level counts "
            "(run infermark with --warmup 0)"
        )
    results = report.get("results")
    if not isinstance(results, list):
        raise OutputsUnreadable(f"{name}: $.results: {_show(results)} is not a list")
    levels = [
        _object(r, f"{name}: $.results[{i}]").get("concurrency") for i, r in enumerate(results)
    ]
    if levels != [1]:
        raise OutputsUnreadable(
            f"{name}: $.results: concurrency levels {_show(levels)}: the performance "
            "score measures concurrency 1 alone, and every level's requests are performance "
            "exchanges (run infermark with -c 1)"
        )
    at = f"{name}: $.results[0]"
    level = results[0]
    requests = _count(level.get("n_requests"), f"{at}.n_requests")
    success = _count(level.get("n_success"), f"{at}.n_success")
    errors = _count(level.get("n_error"), f"{at}.n_error")
    if success + errors != requests:
        raise OutputsUnreadable(f"{at}: {success} successes and {errors} errors of {requests}")
    if config.get("n_requests") != requests:
        raise OutputsUnreadable(
            f"{name}: $.config.n_requests: {_show(config.get('n_requests'))}, the level made "
            f"{requests}"
        )
    kinds = _object(level.get("errors"), f"{at}.errors")
    counted = sum(_count(v, f"{at}.errors.{k}") for k, v in kinds.items())
    if counted != errors:
        raise OutputsUnreadable(f"{at}.errors: {counted} errors by kind, n_error says {errors}")
    wall = _number(level.get("total_duration"), f"{at}.total_duration")
    rate = _number(level.get("tokens_per_second"), f"{at}.tokens_per_second")
    if not math.isfinite(rate * wall):
        raise OutputsUnreadable(
            f"{at}.tokens_per_second: {rate} over {wall} s is past any count of chunks"
        )
    chunks = round(rate * wall)
    if (wall == 0 and rate != 0) or (
        wall > 0 and not math.isclose(chunks / wall, rate, rel_tol=1e-9, abs_tol=1e-12)
    ):
        raise OutputsUnreadable(
            f"{at}.tokens_per_second: {rate} over {wall} s is no whole number of visible chunks"
        )
    ttft, itl = _distributions(level, at, success, wall)
    record = _build(
        InfermarkStreaming, name, concurrency=1, visible_chunks=chunks, wall_seconds=wall,
        tokens_per_second=rate, ttft_p50_seconds=ttft["p50"] if ttft else None,
        itl_mean_seconds=itl["mean"] if itl else None, requests=requests, errors=errors,
    )  # fmt: skip
    return Outputs(
        records={"components/performance/infermark-c1.json": ("infermark-streaming", record)},
        metrics={"performance": {
            "concurrency_1_tokens_per_second": rate,
            "ttft_p50_seconds": record.ttft_p50_seconds, "errors": errors,
        }},
    )  # fmt: skip


def _distributions(
    level: Mapping[str, Any], at: str, success: int, wall: float
) -> tuple[dict[str, float] | None, dict[str, float] | None]:
    """A level's request rate and its latency, TTFT and ITL distributions (:func:`_stats`) as
    Infermark's ``_aggregate_results`` makes them: the successes over the wall, each key
    written, and no figures but a latency of 0 where no request succeeded; its TTFT and ITL."""
    per_second = _number(level.get("requests_per_second"), f"{at}.requests_per_second")
    if not math.isclose(
        per_second, success / wall if wall > 0 else 0.0, rel_tol=1e-9, abs_tol=1e-12
    ):
        raise OutputsUnreadable(
            f"{at}.requests_per_second: {per_second!r} is not its {success} successful requests "
            f"over {wall} s"
        )
    for key in ("latency", "ttft", "itl"):
        if key not in level:
            raise OutputsUnreadable(f"{at}: no {key} (Infermark writes it, null where none)")
    latency = _stats(level.get("latency"), f"{at}.latency", required=True) or {}
    ttft = _stats(level.get("ttft"), f"{at}.ttft", required=False)
    itl = _stats(level.get("itl"), f"{at}.itl", required=False)
    if success == 0 and (any(latency.values()) or ttft or itl):
        raise OutputsUnreadable(
            f"{at}: figures of no successful request: the latency's are 0, TTFT and ITL null"
        )
    return ttft, itl


# bfcl-eval 2026.3.23 (PyPI; github ShishirPatil/gorilla, berkeley-function-call-leaderboard):
# what ``bfcl generate`` and ``bfcl evaluate`` write under their project root.

BFCL_EVAL_OVERALL = "score/data_overall.csv"
MAX_BFCL_EVAL_BYTES = 256 * 1024 * 1024
"""A result or score file larger than this is refused before it is read."""
MAX_BFCL_EVAL_LINES = 1_000_000
"""A result or score file of more lines than this is refused (the whole BFCL V4 is 5,000)."""
_BFCL_FILE = re.compile(
    r"^(result|score)/([^/]+)/(?:[^/]+/){0,3}(?i:BFCL_v4_)([a-z][a-z0-9_]{0,63}?)_(result|score)"
    r"\.json$"
)
"""A result or score file of one subset (``bfcl_v4_...`` too: a bundle keeps raw outputs under
lower-case names, and the verifier re-reads them so)."""
_BFCL_OVERALL_COLUMNS = ("Rank", "Overall Acc", "Model")
"""The first columns of bfcl-eval's ``data_overall.csv`` (generate_leaderboard_csv)."""


def _bfcl_lines(files: Files, name: str) -> list[dict[str, Any]]:
    """A JSON Lines file (bfcl-eval's, one object a line as ``write_list_of_dicts_to_file``
    writes; lm-evaluation-harness's samples), each line strict JSON; bounded in bytes and
    lines."""
    data = files[name]
    if len(data) > MAX_BFCL_EVAL_BYTES:
        raise OutputsUnreadable(
            f"{name}: {len(data)} bytes, over the {MAX_BFCL_EVAL_BYTES} this reader reads"
        )
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) > MAX_BFCL_EVAL_LINES:
        raise OutputsUnreadable(f"{name}: more than {MAX_BFCL_EVAL_LINES} lines")
    entries = []
    for number, line in enumerate(lines, start=1):
        where = f"{name}:{number}"
        if not line.strip():
            raise OutputsUnreadable(f"{where}: an empty line (JSON Lines: one object a line)")
        try:
            value = loads_strict(line, where)
        except DocumentError as exc:
            raise OutputsUnreadable(str(exc)) from None
        entries.append(_object(value, where))
    if not entries:
        raise OutputsUnreadable(f"{name}: no line")
    return entries


def _bfcl_ids(entries: Sequence[dict[str, Any]], name: str, first: int) -> dict[str, int]:
    """Each entry's ``id`` and its line; an id twice is refused (it would count twice)."""
    ids: dict[str, int] = {}
    for number, entry in enumerate(entries, start=first):
        sample = entry.get("id")
        if not isinstance(sample, str) or not 0 < len(sample) <= 256:
            raise OutputsUnreadable(f"{name}:{number}: id {_show(sample)} is not a test entry id")
        if sample in ids:
            raise OutputsUnreadable(
                f"{name}:{number}: test entry {sample!r} again (first at line {ids[sample]})"
            )
        ids[sample] = number
    return ids


def _bfcl_score(files: Files, name: str) -> tuple[int, int, dict[str, int]]:
    """A ``BFCL_v4_<subset>_score.json``: its header (accuracy, correct_count, total_count)
    and the ids of the failed entries that follow it, one a line."""
    entries = _bfcl_lines(files, name)
    header, failures = entries[0], entries[1:]
    where = f"{name}:1"
    correct = _count(header.get("correct_count"), f"{where}: correct_count")
    total = _count(header.get("total_count"), f"{where}: total_count")
    if total == 0 or correct > total:
        raise OutputsUnreadable(f"{where}: correct_count {correct} of total_count {total}")
    accuracy = _number(header.get("accuracy"), f"{where}: accuracy", 1)
    if not math.isclose(accuracy, correct / total, rel_tol=1e-12, abs_tol=1e-15):
        raise OutputsUnreadable(
            f"{where}: accuracy {accuracy!r} is not correct_count/total_count = {correct}/{total}"
        )
    for number, entry in enumerate(failures, start=2):
        if entry.get("valid") is not False:
            raise OutputsUnreadable(
                f"{name}:{number}: valid is {_show(entry.get('valid'))}: bfcl-eval lists only "
                "the failed entries after the header"
            )
    if len(failures) != total - correct:
        raise OutputsUnreadable(
            f"{name}: {len(failures)} failed entries listed, the header says "
            f"{total - correct} ({total} - {correct})"
        )
    return correct, total, _bfcl_ids(failures, name, 2)


def _bfcl_overall(files: Files, model: str) -> float:
    """``Overall Acc`` of the one model row of ``score/data_overall.csv``, as a percentage.
    bfcl-eval writes the rows joined with commas, unquoted: a row whose field count is not the
    header's, or whose Model is not ``model`` (the score files' directory), is refused."""
    name = BFCL_EVAL_OVERALL
    data = files.get(name)
    if data is None:
        raise OutputsUnreadable(f"{name}: bfcl evaluate did not write it (it did not finish)")
    if len(data) > MAX_BFCL_EVAL_BYTES:
        raise OutputsUnreadable(f"{name}: {len(data)} bytes, over {MAX_BFCL_EVAL_BYTES}")
    try:
        rows = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise OutputsUnreadable(f"{name}: invalid UTF-8 at byte {exc.start}") from None
    rows = [row for row in rows if row]
    header = rows[0].split(",") if rows else []
    if tuple(header[: len(_BFCL_OVERALL_COLUMNS)]) != _BFCL_OVERALL_COLUMNS:
        raise OutputsUnreadable(
            f"{name}:1: the header {_show(rows[0] if rows else '')} is not bfcl-eval's "
            f"({','.join(_BFCL_OVERALL_COLUMNS)},...)"
        )
    if len(rows) != 2:
        raise OutputsUnreadable(
            f"{name}: {len(rows) - 1} model rows: a run scores one model, and this reader does "
            "not choose one"
        )
    fields = rows[1].split(",")
    if len(fields) != len(header):
        raise OutputsUnreadable(f"{name}:2: {len(fields)} fields, the header has {len(header)}")
    if model != bfcl_model_folder(fields[2]):  # the score files' folder, as the bundle keeps it
        raise OutputsUnreadable(
            f"{name}:2: the row of model {_show(fields[2])}, the score files of {model!r}"
        )
    shown = fields[1]
    try:
        value = float(shown.removesuffix("%")) if shown.endswith("%") else math.nan
    except ValueError:
        value = math.nan
    if not 0 <= value <= 100:  # also refuses nan
        raise OutputsUnreadable(f"{name}:2: Overall Acc {_show(shown)} is not a percentage")
    return value


def bfcl_model_folder(model: str) -> str:
    """The folder bfcl-eval writes a model's score and result files in (its name, ``/`` as
    ``_``), as the bundle keeps it (:func:`escaped_path`: ``qwen3-coder:30b`` is
    ``xqwen3-coder_3a30b``)."""
    return escaped_path(model.replace("/", "_"))


def _bfcl_files(files: Files) -> tuple[str, dict[str, str], dict[str, str]]:
    """The one model of a run (its directory's name), and its score and result files by
    subset; a subset's file twice, or the files of two models, are refused."""
    found: dict[tuple[str, str], str] = {}
    models: dict[str, str] = {}
    for name in sorted(files):
        match = _BFCL_FILE.fullmatch(name)
        if match is None or match[1] != match[4]:
            continue
        kind, model, subset = match[1], match[2], match[3]
        models.setdefault(model, name)
        if (kind, subset) in found:
            raise OutputsUnreadable(
                f"{name}: a second {kind} file of subset {subset!r} (the first: "
                f"{found[kind, subset]}): this reader does not choose one"
            )
        found[kind, subset] = name
    if len(models) > 1:
        shown = ", ".join(f"{m!r} ({n})" for m, n in list(models.items())[:3])
        raise OutputsUnreadable(
            f"outputs of {len(models)} models: {shown}: a run scores one model, and this reader "
            "does not choose one"
        )
    scores = {subset: name for (kind, subset), name in found.items() if kind == "score"}
    results = {subset: name for (kind, subset), name in found.items() if kind == "result"}
    if not scores:
        raise OutputsUnreadable("score/: bfcl evaluate wrote no BFCL_v4_<subset>_score.json")
    for subset in sorted(set(results) - set(scores)):
        raise OutputsUnreadable(
            f"{results[subset]}: bfcl generate answered subset {subset!r}, which no score file "
            "evaluates"
        )
    for subset in sorted(set(scores) - set(results)):
        raise OutputsUnreadable(
            f"{scores[subset]}: no result file of subset {subset!r} it was scored from"
        )
    return next(iter(models)), scores, results


@dataclass(frozen=True)
class BfclAnswer:
    """One answer bfcl-eval recorded, as its handler took it from the engine's reply
    (``OpenAICompletionsHandler._parse_query_response_FC``): the reply's tool calls as
    ``[{name: arguments}, ...]`` (where the reply has a ``tool_calls`` list), else its message's
    content, and the reply's ``usage`` token counts."""

    where: str
    """``<result file>:<line>``."""
    sample: str
    """The entry's id (with the turn and step of a step's answer)."""
    answer: Any
    prompt_tokens: int
    completion_tokens: int
    subset: str = ""
    entry: str = ""
    """The test entry's id."""
    turn: int | None = None
    """The turn of a step's answer; None for a single-turn entry's."""


BFCL_INFERENCE_ERROR = "Error during inference: "
"""How bfcl-eval 2026.3.23 records an entry whose inference raised (``_llm_response_generation``):
this and the exception's message as its result, with a ``traceback``, no token counts."""


@dataclass(frozen=True)
class BfclResults:
    """What bfcl-eval's result files record: every answer, the entries that are neither answers
    nor an inference error (each as where, id), and every entry of each subset (its id and
    where), answered or not."""

    answers: list[BfclAnswer]
    others: list[tuple[str, str]]
    entries: dict[str, dict[str, str]]
    """By subset: each entry's id and where (``<result file>:<line>``), in file order."""
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    """The inference errors bfcl-eval recorded in place of an answer: (where, subset, id)."""


def bfcl_answers(files: Files) -> BfclResults:
    """Every answer in bfcl-eval's result files, one a request: and the entries that are
    neither answers nor an inference error, every entry by subset, and the inference errors.

    An entry answered in one request (a single-turn entry) has integer ``input_token_count``
    and ``output_token_count`` and its ``result`` is the answer. An entry answered in turns of
    steps (multi-turn and agentic entries: ``inference_multi_turn_FC``) has a list of turns,
    each a list of steps, in its ``result`` and both counts, of one shape, each step one request
    (its answer ``<id> turn T step S``). An inference error bfcl-eval recorded in place of an
    answer (its message, :data:`BFCL_INFERENCE_ERROR`, and a traceback, no counts) holds none.
    Subset names decide nothing: an entry's shape says how it was answered.

    Raises:
        OutputsUnreadable: the files do not read (as the reader refuses them).
    """
    _model, _scores, results = _bfcl_files(files)
    answers, others, entries, errors = [], [], {}, []
    for subset, name in sorted(results.items()):
        lines = _bfcl_lines(files, name)
        ids = _bfcl_ids(lines, name, 1)
        entries[subset] = {sample: f"{name}:{number}" for sample, number in ids.items()}
        for (sample, number), entry in zip(ids.items(), lines, strict=True):
            where = f"{name}:{number}"
            steps = _bfcl_steps(entry)
            if steps is not None:
                answers += [
                    BfclAnswer(where, f"{sample}{at}", answer, prompt, completion,
                               subset=subset, entry=sample, turn=turn)
                    for at, turn, answer, prompt, completion in steps
                ]  # fmt: skip
            elif _bfcl_inference_error(entry):
                errors.append((where, subset, sample))
            else:
                others.append((where, sample))
    return BfclResults(answers, others, entries, errors)


BFCL_DATA = "bfcl_eval/data/BFCL_v4_{subset}.json"
"""Where bfcl-eval 2026.3.23 keeps a subset's test entries, under its harness directory."""


BFCL_DRAW = "test_case_ids_to_generate.json"
"""The entries ``bfcl generate --run-ids`` answers, in its project root (the outputs' top)."""


def bfcl_drawn(data: bytes, name: str) -> dict[str, list[str]]:
    """The entries a ``test_case_ids_to_generate.json`` names: a JSON object of test category
    to a list of entry ids (bfcl-eval's ``load_test_entries_from_id_file``), each id once.

    Raises:
        OutputsUnreadable: it is no such object, or over the reader's bound; the message says
            where.
    """
    if len(data) > MAX_BFCL_EVAL_BYTES:
        raise OutputsUnreadable(f"{name}: {len(data)} bytes, over {MAX_BFCL_EVAL_BYTES}")
    try:
        drawn = _object(loads_strict(data, name), name)
    except DocumentError as exc:
        raise OutputsUnreadable(str(exc)) from None
    found: dict[str, list[str]] = {}
    for category, ids in drawn.items():
        where = f"{name}: {category!r}"
        if not isinstance(ids, list) or not all(
            isinstance(i, str) and 0 < len(i) <= 256 for i in ids
        ):
            raise OutputsUnreadable(f"{where}: {_show(ids)} is not a list of test entry ids")
        seen: set[str] = set()
        for sample in ids:
            if sample in seen:
                raise OutputsUnreadable(f"{where}: test entry {sample!r} twice")
            seen.add(sample)
        found[category] = ids
    return found


@dataclass(frozen=True)
class BfclQuestion:
    """What bfcl-eval asks of one test entry (its data: ``question``, turns of messages, and
    ``function``, the functions it offers by name)."""

    turns: tuple[Any, ...]
    functions: tuple[str, ...]

    def last_user(self, turn: int) -> Any:
        """The content of the last user message asked by ``turn``: of the latest turn up to it
        that has one (a turn may add a function instead); None when none has."""
        for messages in reversed(self.turns[: turn + 1]):
            user = last_user_message(messages)
            if user is not None:
                return user["content"]
        return None


def bfcl_questions(
    data: bytes, name: str, wanted: Collection[str]
) -> tuple[frozenset[str], dict[str, BfclQuestion]]:
    """The ids of a subset's data file (bfcl-eval's, one test entry a line), and what bfcl-eval
    asks of each ``wanted`` entry. An entry whose ``question`` is no list of turns is left out
    of the questions.

    Raises:
        OutputsUnreadable: the file does not read (bounded and strict as the result files), or
            names an entry twice.
    """
    questions: dict[str, BfclQuestion] = {}
    lines = _bfcl_lines({name: data}, name)
    ids = _bfcl_ids(lines, name, 1)  # an id twice: neither entry is chosen
    for sample, entry in zip(ids, lines, strict=True):
        if sample not in wanted:
            continue
        turns, functions = entry.get("question"), entry.get("function")
        offered = functions if isinstance(functions, list) else []
        if isinstance(turns, list) and turns:
            names = tuple(str(f.get("name")) for f in offered if isinstance(f, dict))
            questions[sample] = BfclQuestion(tuple(turns), names)
    return frozenset(ids), questions


def _bfcl_steps(entry: dict[str, Any]) -> list[tuple[str, int | None, Any, int, int]] | None:
    """An entry's answers, each (where in the entry, its turn, answer, prompt tokens,
    completion tokens): one for counts that are integers (turn None), one a step for turns of
    steps of one shape (at least one turn, each of at least one step); None for any other
    shape."""
    result = entry.get("result")
    prompt, completion = entry.get("input_token_count"), entry.get("output_token_count")
    if type(prompt) is int and type(completion) is int:  # not a bool, not a float
        return [("", None, result, prompt, completion)]
    if not (isinstance(result, list) and isinstance(prompt, list) and isinstance(completion, list)):
        return None
    if not result or not len(result) == len(prompt) == len(completion):
        return None  # bfcl-eval asks at least once a turn, and an entry has a turn
    steps: list[tuple[str, int | None, Any, int, int]] = []
    for t, (answers, prompts, completions) in enumerate(
        zip(result, prompt, completion, strict=True)
    ):
        parts = (answers, prompts, completions)
        shaped = all(isinstance(p, list) for p in parts) and answers
        if not shaped or not len(answers) == len(prompts) == len(completions):
            return None
        steps += [(f" turn {t} step {s}", t, answer, p, c)
                  for s, (answer, p, c) in enumerate(zip(*parts, strict=True))]  # fmt: skip
    return steps if all(type(p) is int and type(c) is int for *_, p, c in steps) else None


def _bfcl_inference_error(entry: dict[str, Any]) -> bool:
    result = entry.get("result")
    return (
        isinstance(result, str)
        and result.startswith(BFCL_INFERENCE_ERROR)
        and isinstance(entry.get("traceback"), str)
        and "input_token_count" not in entry
        and "output_token_count" not in entry
    )


def _bfcl_subset(files: Files, subset: str, score: str, result: str) -> tuple[Tally, list[str]]:
    """One subset's tally from its score file, checked against its result file."""
    correct, total, failed = _bfcl_score(files, score)
    answered = _bfcl_ids(_bfcl_lines(files, result), result, 1)
    if len(answered) != total:
        raise OutputsUnreadable(
            f"{score}:1: total_count {total}, but {result} holds {len(answered)} test entries"
        )
    unknown = next((i for i in failed if i not in answered), None)
    if unknown is not None:
        raise OutputsUnreadable(
            f"{score}:{failed[unknown]}: failed entry {unknown!r} is not in {result}"
        )
    size = V4_SUBSET_SIZES.get(subset)  # a subset bfcl-eval does not ship: the shard refuses it
    if size is not None and total > size:
        raise OutputsUnreadable(
            f"{score}:1: total_count {total}, but bfcl-eval's {subset} has {size} entries"
        )
    return Tally(hits=correct, n=total), list(answered)


def _bfcl_eval(files: Files, components: Sequence[ComponentName]) -> Outputs:
    """bfcl-eval's own outputs: per subset (hits, n) = (correct_count, total_count) of each
    ``score/<model>/.../BFCL_v4_<subset>_score.json`` (one file per subset, one model), checked
    against the header's accuracy, the failed entries listed after it and the subset's
    ``result/<model>/.../BFCL_v4_<subset>_result.json`` (one entry per test entry: n of them,
    every failed id among them), then aggregated as ``audit score bfcl`` does, BFCL V4's
    overall cross-checked with ``score/data_overall.csv``. The aggregate is a non-scoring
    metric of the first component the harness serves (its gate, ADR 0022)."""
    model, scores, results = _bfcl_files(files)
    tallies: dict[str, Tally] = {}
    samples: list[str] = []
    for subset, name in sorted(scores.items()):
        tallies[subset], answered = _bfcl_subset(files, subset, name, results[subset])
        samples += answered
    shard = _build(BfclShard, "score/", subset_totals=tallies, sample_ids=tuple(sorted(samples)))
    loaded = LoadedShard("score/", digest_of(canonical_bytes(shard.model_dump(mode="json"))), shard)
    try:
        v4 = score_shards([loaded], None, "bfcl-v4")
    except InvalidInput as exc:
        raise OutputsUnreadable(str(exc)) from None
    overall = v4.categories["overall_accuracy"]
    stated = _bfcl_overall(files, model)
    if overall is None or abs(100 * overall - stated) > 0.005 + 1e-9:
        raise OutputsUnreadable(
            f"{BFCL_EVAL_OVERALL}:2: Overall Acc {stated:.2f}%, the score files' tallies give "
            f"{'none' if overall is None else f'{100 * overall:.4f}%'} (BFCL V4's weighting)"
        )
    hits = sum(t.hits for t in tallies.values())
    n = sum(t.n for t in tallies.values())
    component = components[0]
    return Outputs(
        records={f"components/{component}/bfcl-eval.json": ("bfcl-shard", shard)},
        metrics={component: {
            "bfcl_overall_accuracy": 100 * hits / n, "bfcl_samples": n,
            "bfcl_v4_overall": 100 * overall, "bfcl_subsets": len(tallies),
        }},
    )  # fmt: skip


# Inspect AI 0.3.285 (PyPI inspect-ai; github UKGovernmentBEIS/inspect_ai): the log of each
# task ``inspect eval --log-format json --log-dir logs`` writes, one JSON document a task.

MAX_TASK_LOG_BYTES = 256 * 1024 * 1024
"""An Inspect AI log or lm-evaluation-harness file larger than this is refused before it is
read."""
MAX_TASK_SAMPLES = 100_000
"""A task of more samples than this is refused (the project's own tasks have eight)."""
MAX_TASK_FILES = 64
"""A run of more task logs (or lm-evaluation-harness results files) than this is refused."""
_INSPECT_LOG = re.compile(r"^logs/[^/]{1,200}\.json$", re.IGNORECASE)
_INSPECT_VALUES: Mapping[str, int] = {"C": 1, "I": 0}
"""The sample score values this reader counts: Inspect's CORRECT and INCORRECT (a partial or a
numeric value is no exact-match tally)."""


def _text(value: Any, where: str, limit: int = 256) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= limit:
        raise OutputsUnreadable(
            f"{where}: {_show(value)} is not a string of 1 to {limit} characters"
        )
    return value


def _list(value: Any, where: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        raise OutputsUnreadable(f"{where}: {_show(value)} is not an array")
    if len(value) > limit:
        raise OutputsUnreadable(
            f"{where}: {len(value)} entries, over the {limit} this reader reads"
        )
    return value


_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+/-]{0,127}$")
"""A task name the ``task-tallies`` record holds (bundle_schema.models.TaskName)."""


def _task_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or _TASK_NAME.fullmatch(value) is None:
        raise OutputsUnreadable(
            f"{where}: {_show(value)} is not a task name (letters, digits, _.:+/-; at most 128)"
        )
    return value


def _bounded_json(files: Files, name: str) -> dict[str, Any]:
    data = files[name]
    if len(data) > MAX_TASK_LOG_BYTES:
        raise OutputsUnreadable(
            f"{name}: {len(data)} bytes, over the {MAX_TASK_LOG_BYTES} this reader reads"
        )
    return _object(_json(files, name), name)


def _accuracy(accuracy: float, hits: int, n: int, where: str, counted: str) -> None:
    """A reported accuracy is hits/n of the records it was computed from, or refused."""
    if not math.isclose(accuracy, hits / n, rel_tol=1e-9, abs_tol=1e-12):
        raise OutputsUnreadable(
            f"{where}: accuracy {accuracy!r}, but {counted} {hits} of {n} correct ({hits / n!r})"
        )


def _inspect_samples(log: dict[str, Any], name: str, scorer: str, n: int) -> tuple[int, list[str]]:
    """The correct samples of one log's ``samples`` (each epoch 1, its scorer's value C or I)
    and their ids, every id once."""
    if "samples" not in log:
        raise OutputsUnreadable(
            f"{name}: samples: none (written with --no-log-samples): the accuracy cannot be "
            "checked against the samples"
        )
    samples = _list(log["samples"], f"{name}: samples", MAX_TASK_SAMPLES)
    if len(samples) != n:
        raise OutputsUnreadable(f"{name}: samples: {len(samples)}, the results say {n}")
    hits, ids, seen = 0, [], set()
    for index, entry in enumerate(samples):
        where = f"{name}: samples[{index}]"
        sample = _object(entry, where)
        key = sample.get("id")
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise OutputsUnreadable(f"{where}: id {_show(key)} is not a sample id")
        shown = _text(str(key), f"{where}: id")
        if shown in seen:
            raise OutputsUnreadable(f"{where}: sample {shown!r} again (one epoch, one record each)")
        ids.append(shown)
        seen.add(shown)
        epoch = sample.get("epoch")
        if type(epoch) is not int or epoch != 1:
            raise OutputsUnreadable(f"{where}: epoch {_show(epoch)}, not 1")
        score = _object(_object(sample.get("scores"), f"{where}: scores").get(scorer),
                        f"{where}: scores.{scorer}")  # fmt: skip
        value = score.get("value")
        if not isinstance(value, str) or value not in _INSPECT_VALUES:
            raise OutputsUnreadable(
                f"{where}: scores.{scorer}.value {_show(value)} is neither 'C' nor 'I'"
            )
        hits += _INSPECT_VALUES[value]
    return hits, ids


def _inspect_reductions(log: dict[str, Any], name: str, scorer: str, ids: list[str]) -> int:
    """The correct samples of the log's ``reductions`` of ``scorer`` (where it wrote them): one
    value 0 or 1 for each sample, the same samples."""
    if "reductions" not in log:
        return -1
    reductions = _list(log["reductions"], f"{name}: reductions", 16)
    mine = [r for r in reductions if isinstance(r, dict) and r.get("scorer") == scorer]
    if len(mine) != 1:
        raise OutputsUnreadable(
            f"{name}: reductions: {len(mine)} of scorer {scorer!r}; this reader reads one"
        )
    samples = _list(mine[0].get("samples"), f"{name}: reductions.samples", MAX_TASK_SAMPLES)
    hits, seen = 0, set()
    for index, entry in enumerate(samples):
        where = f"{name}: reductions.samples[{index}]"
        sample = _object(entry, where)
        value = sample.get("value")
        if isinstance(value, bool) or value not in (0, 1):
            raise OutputsUnreadable(f"{where}: value {_show(value)} is neither 0 nor 1")
        seen.add(str(sample.get("sample_id")))
        hits += int(value)
    if len(samples) != len(ids) or seen != set(ids):
        raise OutputsUnreadable(f"{name}: reductions.samples are not the log's {len(ids)} samples")
    return hits


def _inspect_log(files: Files, name: str) -> tuple[str, str, str, Tally, str | None]:
    """One Inspect AI log: (task, model, version, tally, its evaluation's id where it names
    one), its accuracy checked against its samples and reductions."""
    log = _bounded_json(files, name)
    if log.get("version") != 2:
        raise OutputsUnreadable(f"{name}: version {_show(log.get('version'))}, not Inspect's 2")
    if log.get("status") != "success":
        raise OutputsUnreadable(
            f"{name}: status {_show(log.get('status'))}: the task did not complete "
            f"({_show(_object(log.get('error') or {}, f'{name}: error').get('message'))})"
        )
    spec = _object(log.get("eval"), f"{name}: eval")
    task = _task_name(spec.get("task"), f"{name}: eval.task")
    model = _text(spec.get("model"), f"{name}: eval.model")
    packages = _object(spec.get("packages"), f"{name}: eval.packages")
    version = _text(packages.get("inspect_ai"), f"{name}: eval.packages.inspect_ai", 64)
    epochs = _object(spec.get("config", {}), f"{name}: eval.config").get("epochs", 1)
    if type(epochs) is not int or epochs != 1:
        raise OutputsUnreadable(f"{name}: eval.config.epochs {_show(epochs)}: this reader reads 1")
    results = _object(log.get("results"), f"{name}: results")
    n = _count(results.get("total_samples"), f"{name}: results.total_samples")
    done = _count(results.get("completed_samples"), f"{name}: results.completed_samples")
    if n == 0 or done != n or n > MAX_TASK_SAMPLES:
        raise OutputsUnreadable(f"{name}: results: {done} of {n} samples completed")
    scores = _list(results.get("scores"), f"{name}: results.scores", 16)
    if len(scores) != 1:
        raise OutputsUnreadable(
            f"{name}: results.scores: {len(scores)} scorers; this reader reads one, and does not "
            "choose"
        )
    where = f"{name}: results.scores[0]"
    score = _object(scores[0], where)
    scorer = _text(score.get("name"), f"{where}.name", 128)
    scored = _count(score.get("scored_samples"), f"{where}.scored_samples")
    unscored = _count(score.get("unscored_samples", 0), f"{where}.unscored_samples")
    if scored != n or unscored:
        raise OutputsUnreadable(f"{where}: {scored} scored, {unscored} unscored of {n} samples")
    metrics = _object(score.get("metrics"), f"{where}.metrics")
    metric = _object(metrics.get("accuracy"), f"{where}.metrics.accuracy")
    accuracy = _number(metric.get("value"), f"{where}.metrics.accuracy.value", 1)
    hits, ids = _inspect_samples(log, name, scorer, n)
    _accuracy(accuracy, hits, n, f"{where}.metrics.accuracy", "its samples score")
    reduced = _inspect_reductions(log, name, scorer, ids)
    if reduced not in (-1, hits):
        raise OutputsUnreadable(f"{name}: reductions: {reduced} of {n} correct, its samples {hits}")
    dataset = _object(spec.get("dataset", {}), f"{name}: eval.dataset")
    listed = dataset.get("sample_ids")
    if listed is not None and sorted(map(str, _list(listed, f"{name}: eval.dataset.sample_ids",
                                                    MAX_TASK_SAMPLES))) != sorted(ids):  # fmt: skip
        raise OutputsUnreadable(f"{name}: eval.dataset.sample_ids are not the samples scored")
    eval_id = spec.get("eval_id")
    return (
        task,
        model,
        version,
        Tally(hits=hits, n=n),
        eval_id if isinstance(eval_id, str) else None,
    )


def _tally_outputs(
    harness: str, tasks: Mapping[str, Tally], *, model: str, version: str,
    component: ComponentName,
) -> Outputs:  # fmt: skip
    """A supplementary harness's per-task tallies: one ``task-tallies`` record and the
    component's non-scoring metrics (ADR 0027)."""
    prefix = harness.replace("-", "_")
    fields = {"harness": harness, "version": version, "model": model, "tasks": dict(tasks)}
    try:
        record = TaskTallies.model_validate(fields)
    except ValidationError as exc:  # a task name the format cannot hold
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise OutputsUnreadable(f"{harness}: {path}: {first['msg']}") from None
    hits = sum(t.hits for t in tasks.values())
    n = sum(t.n for t in tasks.values())
    return Outputs(
        records={f"components/{component}/tasks.json": ("task-tallies", record)},
        metrics={component: {
            f"{prefix}_accuracy": 100 * hits / n, f"{prefix}_samples": n,
            f"{prefix}_tasks": len(tasks),
        }},
    )  # fmt: skip


def _inspect_ai(files: Files, components: Sequence[ComponentName]) -> Outputs:
    """Inspect AI's JSON logs (``logs/*.json``, one a task): per task (hits, n) = the correct
    samples of its one scorer and its sample count, checked against the accuracy the log
    reports, its reductions and its dataset's sample ids; one model, one version, each task
    once. A non-scoring metric of the component it gates (ADR 0027)."""
    names = sorted(n for n in files if _INSPECT_LOG.fullmatch(n))
    if not names:
        raise OutputsUnreadable("logs/: inspect eval wrote no JSON log (--log-format json)")
    if len(names) > MAX_TASK_FILES:
        raise OutputsUnreadable(f"logs/: {len(names)} logs, over the {MAX_TASK_FILES} read")
    tasks: dict[str, Tally] = {}
    seen: dict[str, str] = {}
    models: dict[str, str] = {}
    versions: dict[str, str] = {}
    evals: dict[str, list[str]] = {}
    for name in names:
        task, model, version, tally, eval_id = _inspect_log(files, name)
        if eval_id is not None:
            evals.setdefault(eval_id, []).append(name)
        if task in seen:
            raise OutputsUnreadable(
                f"{name}: task {task!r} again (the first: {seen[task]}): this reader does not "
                "choose one"
            )
        seen[task] = name
        models.setdefault(model, name)
        versions.setdefault(version, name)
        tasks[task] = tally
    for what, found in (("models", models), ("Inspect AI versions", versions)):
        if len(found) > 1:
            shown = ", ".join(f"{k!r} ({v})" for k, v in list(found.items())[:3])
            raise OutputsUnreadable(f"logs of {len(found)} {what}: {shown}: a run has one")
    for eval_id, kept in evals.items():  # one evaluation, one log: a copy, its task renamed
        if len(kept) > 1:
            raise OutputsUnreadable(
                f"{kept[1]}: eval.eval_id {eval_id!r} again (the first: {kept[0]}): one "
                "evaluation's log kept twice"
            )
    return _tally_outputs("inspect-ai", tasks, model=next(iter(models)),
                          version=next(iter(versions)), component=components[0])  # fmt: skip


# lm-evaluation-harness 0.4.13 (PyPI lm-eval; github EleutherAI/lm-evaluation-harness): what
# ``lm_eval run --output_path OUT --log_samples`` writes under ``OUT/<model_name_sanitized>/``.

_LM_EVAL_FILE = re.compile(
    r"^(?:([^/]{1,200})/)?(results|samples_(.{1,128}?))_([0-9][0-9T:.-]{9,40})\.(json|jsonl)$",
    re.IGNORECASE,
)
"""A results file (``results_<date>.json``) or a task's samples (``samples_<task>_<date>.jsonl``)
of one run, in the model's directory."""
_LM_EVAL_METRICS = ("exact_match", "acc")
"""The per-sample 0-or-1 metrics this reader counts (``<metric>,<filter>`` in the results)."""


def _lm_eval_files(files: Files) -> tuple[str, dict[str, str]]:
    """The one results file, and the samples file of each task (lower-cased task names: a
    bundle keeps raw outputs under lower-case names), of one run."""
    results: list[str] = []
    samples: dict[str, str] = {}
    for name in sorted(files):
        match = _LM_EVAL_FILE.fullmatch(name)
        if match is None:
            continue
        kind, suffix = match[2].lower(), match[5].lower()
        if kind == "results" and suffix == "json":
            results.append(name)
        elif kind != "results" and suffix == "jsonl":
            task = match[3].lower()
            if task in samples:
                raise OutputsUnreadable(
                    f"{name}: a second samples file of task {match[3]!r} (the first: "
                    f"{samples[task]}): this reader does not choose one"
                )
            samples[task] = name
    if not results:
        raise OutputsUnreadable("lm_eval wrote no results_<date>.json (--output_path)")
    if len(results) > 1:
        raise OutputsUnreadable(
            f"{len(results)} results files ({results[0]}, {results[1]}): a run writes one, and "
            "this reader does not choose"
        )
    return results[0], samples


def _lm_eval_metric(row: dict[str, Any], where: str) -> tuple[str, str, float]:
    """A task's one 0-or-1 metric: (metric, filter, value)."""
    found = [
        (key, *key.split(",", 1))
        for key in row
        if isinstance(key, str) and key.split(",", 1)[0] in _LM_EVAL_METRICS and "," in key
    ]
    if len(found) != 1:
        shown = ", ".join(k for k, *_ in found) or "none"
        raise OutputsUnreadable(
            f"{where}: {len(found)} metrics of {'/'.join(_LM_EVAL_METRICS)} ({shown}); this "
            "reader reads one, and does not choose"
        )
    key, metric, filtered = found[0]
    return metric, filtered, _number(row[key], f"{where}.{key}", 1)


def _lm_eval_samples(files: Files, name: str, metric: str, filtered: str, n: int) -> int:
    """The correct samples of a task's samples file: one line a document, each ``doc_id`` once,
    its ``filter`` the results' and its metric 0 or 1."""
    entries = _bfcl_lines(files, name)
    if len(entries) != n:
        raise OutputsUnreadable(f"{name}: {len(entries)} samples, the results say {n}")
    hits, seen = 0, set()
    for number, entry in enumerate(entries, start=1):
        where = f"{name}:{number}"
        doc = _count(entry.get("doc_id"), f"{where}: doc_id")
        if doc in seen:
            raise OutputsUnreadable(f"{where}: doc_id {doc} again")
        seen.add(doc)
        if entry.get("filter") != filtered:
            raise OutputsUnreadable(
                f"{where}: filter {_show(entry.get('filter'))}, the results' is {filtered!r}"
            )
        value = entry.get(metric)
        if isinstance(value, bool) or value not in (0, 1):
            raise OutputsUnreadable(f"{where}: {metric} {_show(value)} is neither 0 nor 1")
        hits += int(value)
    return hits


def _lm_eval(files: Files, components: Sequence[ComponentName]) -> Outputs:
    """lm-evaluation-harness's results and samples: per task (hits, n) = (the correct samples of
    its one 0-or-1 metric, its effective sample count), the accuracy the results report checked
    against the task's samples file (``--log_samples``); one results file, one model, no group.
    A non-scoring metric of the component it gates (ADR 0027)."""
    name, samples = _lm_eval_files(files)
    report = _bounded_json(files, name)
    version = _text(report.get("lm_eval_version"), f"{name}: lm_eval_version", 64)
    model = _text(report.get("model_name"), f"{name}: model_name")
    groups = report.get("group_subtasks", {})
    if _object(groups, f"{name}: group_subtasks"):
        raise OutputsUnreadable(
            f"{name}: group_subtasks: groups {_show(sorted(groups))}; this reader reads tasks "
            "alone (name them)"
        )
    results = _object(report.get("results"), f"{name}: results")
    counts = _object(report.get("n-samples"), f"{name}: n-samples")
    if not results or len(results) > MAX_TASK_FILES:
        raise OutputsUnreadable(f"{name}: results: {len(results)} tasks (1 to {MAX_TASK_FILES})")
    if set(counts) != set(results):
        raise OutputsUnreadable(f"{name}: n-samples does not name the tasks of results")
    tasks: dict[str, Tally] = {}
    folded: dict[str, str] = {}
    for task in sorted(results):
        where = f"{name}: results.{task}"
        _task_name(task, f"{name}: results")
        other = folded.setdefault(task.lower(), task)
        if other != task:  # the bundle keeps raw outputs by lower-cased names: one file
            raise OutputsUnreadable(
                f"{where}: tasks {other!r} and {task!r} differ only in case, and would be "
                "counted from one samples file"
            )
        row = _object(results[task], where)
        counted = _object(counts[task], f"{name}: n-samples.{task}")
        n = _count(counted.get("effective"), f"{name}: n-samples.{task}.effective")
        original = _count(counted.get("original"), f"{name}: n-samples.{task}.original")
        if not 0 < n <= min(original, MAX_TASK_SAMPLES):
            raise OutputsUnreadable(
                f"{name}: n-samples.{task}: effective {n} of original {original}"
            )
        if row.get("sample_len", n) != n:
            raise OutputsUnreadable(
                f"{where}.sample_len: {_show(row.get('sample_len'))}, n-samples says {n}"
            )
        metric, filtered, accuracy = _lm_eval_metric(row, where)
        file = samples.get(task.lower())
        if file is None:
            raise OutputsUnreadable(
                f"{where}: no samples_{task}_<date>.jsonl (written without --log_samples): the "
                "accuracy cannot be checked against the samples"
            )
        hits = _lm_eval_samples(files, file, metric, filtered, n)
        _accuracy(accuracy, hits, n, f"{where}.{metric},{filtered}", "its samples score")
        tasks[task] = Tally(hits=hits, n=n)
    extra = sorted(set(samples) - {t.lower() for t in tasks})
    if extra:
        raise OutputsUnreadable(
            f"{samples[extra[0]]}: samples of task {extra[0]!r}, which {name} does not report"
        )
    return _tally_outputs("lm-eval", tasks, model=model, version=version,
                          component=components[0])  # fmt: skip


READERS: Mapping[str, Callable[[Files, Sequence[ComponentName]], Outputs]] = {
    "spark": _spark,
    "hermes": _hermes,
    "benchlocal": _benchlocal,
    "bfcl": _bfcl,
    "spark-bench": _spark_bench,
    "benchlocal-cli": _benchlocal_cli,
    "infermark": _infermark,
    "bfcl-eval": _bfcl_eval,
    "inspect-ai": _inspect_ai,
    "lm-eval": _lm_eval,
}
"""Each named reader of the pin set's harness declarations (``parser = ...``)."""


_Markers = Callable[[Files, Sequence[ComponentName]], dict[ComponentName, QuarantineMarker]]
MARKERS: Mapping[str, _Markers] = {
    "spark": _spark_marker,
    "spark-bench": _spark_bench_marker,
}
"""The readers of a quarantine marker alone, for the harnesses whose upstream writes one."""


READS: Mapping[str, Callable[[str], bool]] = {
    "spark": lambda name: name in ("quality.json", "repeat.json", "quarantine.json"),
    "hermes": lambda name: name == "tasks.jsonl",
    "benchlocal": lambda name: name == "packs.json",
    "bfcl": lambda name: (
        name == "plan.json" or (name.startswith("shards/") and name.endswith(".json"))
    ),
    "spark-bench": lambda name: name == SPARK_BENCH_CSV,
    "benchlocal-cli": lambda name: name == BENCHLOCAL_JSON,
    "infermark": lambda name: name == INFERMARK_JSON,
    "bfcl-eval": lambda name: (
        name == BFCL_EVAL_OVERALL
        or ((match := _BFCL_FILE.fullmatch(name)) is not None and match[1] == match[4])
    ),
    "inspect-ai": lambda name: _INSPECT_LOG.fullmatch(name) is not None,
    "lm-eval": lambda name: _LM_EVAL_FILE.fullmatch(name) is not None,
}
"""Which output files (by relative path) each reader reads: the rest of a harness's raw
outputs is kept as evidence, and listed as unread."""


def gate_place(component: str, upstream: str) -> str:
    """Where a supplementary harness's evidence is kept: beside the component it gates, under
    its upstream's name (its raw outputs at ``raw/``, its reader's records next to them)."""
    return f"components/{component}/gates/{upstream}/"


GATE_RECORDS: Mapping[str, str] = {
    "bfcl-eval": "bfcl-eval.json",
    "inspect-ai": "tasks.json",
    "lm-eval": "tasks.json",
}
"""The tallies record each gate's reader makes, by its name under :func:`gate_place`
(bundle_schema/roles: ``gate tallies``, ``gate task tallies``)."""


def gate_record(component: str, upstream: str, parser: str) -> str:
    """The entry of the tallies a gate's reader made (its ``bfcl-eval.json``, ``tasks.json``)."""
    return gate_place(component, upstream) + GATE_RECORDS.get(parser, "bfcl-eval.json")


def read_gate_outputs(
    parser: str, files: Files, component: ComponentName, upstream: str
) -> Outputs:
    """Read a supplementary harness's output files, run beside ``component``'s upstream as its
    gate: the reader's records placed under :func:`gate_place`, its metrics the component's.

    Raises:
        OutputsUnreadable: an output is missing or malformed, or no reader has that name.
    """
    outputs = read_outputs(parser, files, [component])
    prefix, place = f"components/{component}/", gate_place(component, upstream)
    return Outputs(
        records={place + name.removeprefix(prefix): v for name, v in outputs.records.items()},
        metrics=outputs.metrics,
    )


def read_markers(
    parser: str, files: Files, components: Sequence[ComponentName]
) -> dict[ComponentName, QuarantineMarker]:
    """The quarantine markers a harness's outputs hold: those its reader reads when every
    output reads, else those that read on their own (seed 000: the upstream's marker is
    authoritative, whatever else its run lacks). A marker that does not read itself, or is
    there twice, is none."""
    try:
        return read_outputs(parser, files, components).quarantines
    except OutputsUnreadable:
        return markers_alone(parser, files, components)


def markers_alone(
    parser: str, files: Files, components: Sequence[ComponentName]
) -> dict[ComponentName, QuarantineMarker]:
    """The quarantine markers among a harness's outputs that read on their own, whatever the
    rest of its outputs are (none where its upstream writes no marker)."""
    reader = MARKERS.get(parser)
    try:
        return reader(files, components) if reader is not None and components else {}
    except OutputsUnreadable:
        return {}


def read_outputs(parser: str, files: Files, components: Sequence[ComponentName]) -> Outputs:
    """Read a harness's output files with the named reader, for the components it serves.

    Raises:
        OutputsUnreadable: an output is missing or malformed, or no reader has that name.
    """
    reader = READERS.get(parser)
    if reader is None:
        raise OutputsUnreadable(f"no reader of harness outputs is named {parser!r}")
    if not components:
        raise OutputsUnreadable(f"the {parser} outputs serve no component")
    return reader(files, components)
