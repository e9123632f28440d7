"""Hostile tests of 2026-12-07 (concurrency): Spark Bench's tier2 concurrency figures held to the
transport log (``verify/_consistency/spark.py`` ``_spark_concurrency``, ``_concurrency_problems``;
``verify/harness_outputs.py`` ``spark_concurrency``; ``verify/sparkbench.py``; ADR 0050, "Later:
the tier2 concurrency figures held too").

The publisher controls every byte of the bundle and the model server, but not the observer's
measurement: each attack either forges the recorded real bundle's CSV (one level, batch 1,
exchange 234: first token at 297.8 ms, ``[DONE]`` at 1505.9 ms, 143 tokens; the CSV shows
an aggregate of 94.7 tok/s, per-stream 118.33, p50 = p99 = 299.3 ms) and reseals it with claims
equal to its replay, or calls the check directly with exchanges made from exchange 234 as an
honest or a hostile server would have them recorded.

A hole is a strict xfail asserting the right behaviour; an attack that is stopped passes.

Holes found, 1 to 6 closed the same day (the CSV's concurrency rows read as levels in order,
each held to its pinned level: its batch, an error row or Spark's four figures, each a number;
a reply of no line timed at the exchange's end; a reply the harness went from before its
``[DONE]`` read as one the client raised on); 7 is a decision:

1. A second row of a figure makes ``spark_concurrency`` refuse the CSV, and ``_tier2`` (for
   ``_spark_concurrency``) swallows the refusal ("the raw outputs' own check says so"), but
   the raw outputs' own reader (``_spark_bench``) never reads the concurrency rows: one extra
   row turns the whole check off, and any figure stands.
2. Figures are looked up only under ``str(n)`` of each pinned level: rows under a batch no
   pinned level names (``01``, or a level the command never asked, ``8``) are never held.
3. The per-stream rate is bounded only when a numeric ``ttft_p99_ms`` stands beside it: drop
   that row (or make it ``n/a``, which the reader leaves out) and any per-stream rate stands,
   though Spark writes the four figures of a level together or none.
4. A level repeated in the pinned option (``1,1``) of which one run failed (its ``error``
   row): the other level's figures are held to the failed level's exchanges too, and an
   honest run is a finding ("reads none of its replies").
5. A streamed 200 with no chunks is timed at 0.0 s (``_answer`` takes ``done`` 0.0 when no
   line came), though the client read it no earlier than the exchange's end: a level's
   TTFT p50 may then be claimed at 1 ms.
6. A reply the harness went from before ``[DONE]`` (``GONE_MID_STREAM``, the client timed out
   and raised: ``_concurrency_run`` drops it) is counted as read: an honest run whose client
   timed out on one reply of a level is a finding.
7. Spark's own report (``runs/<run>.md``, its "Throughput under concurrency" table) is raw
   evidence a reader sees, as the ADR says, and is held to nothing.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bundle_schema.models import TransportExchange
from bundle_schema.models.records import GONE_MID_STREAM
from tests.data.hostile.kit import Files
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import (
    SPARK_CSV,
    _findings,
    _set,
    _spark_rows,
    _verdict,
)
from verify._consistency.spark import (
    _concurrency_problems,
    _Spark,
    _spark_concurrency,
    spark_replies,
)
from verify.harness_outputs import spark_concurrency
from verify.sparkbench import SparkReply, SparkTiming, spark_reply

LOG = "transport/exchanges.jsonl"
REPORT = "components/coding/raw/runs/gx10-20261201-133428.md"
HEADER = (
    "run_id,timestamp,tier,model,label,endpoint,topology,parallelism,context,batch,spec_decode,"
    "workload,metric,value,unit,notes\n"
)
HONEST = {"agg_decode_tps": "94.7", "per_stream_tps": "118.33", "ttft_p50_ms": "299.3",
          "ttft_p99_ms": "299.3"}  # fmt: skip
"""The recorded level's figures, as Spark wrote them."""
FASTER = {"agg_decode_tps": "10000.0", "per_stream_tps": "10000.0", "ttft_p50_ms": "1.0",
          "ttft_p99_ms": "1.0"}  # fmt: skip
"""Figures far faster than exchange 234 allows (each alone is a finding at batch 1)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


@pytest.fixture(scope="module")
def e234(recorded: Recorded) -> TransportExchange:
    """The recorded run's one concurrency exchange."""
    lines = recorded[1][LOG][0].decode().splitlines()
    (exchange,) = [e for e in map(TransportExchange.model_validate_json, lines) if e.id == 234]
    return exchange


def _csv_edit(change: Callable[[list[str]], list[list[str]]]) -> Callable[[Files], None]:
    """An edit of spark_bench.csv in which each row becomes the rows ``change`` returns (so a
    row may be added or dropped), the records re-derived as the forger's runner would."""

    def edit(files: Files) -> None:
        header, *rows = files[SPARK_CSV][0].decode("utf-8").splitlines()
        kept = [header] + [",".join(r) for row in rows for r in change(row.split(","))]
        files[SPARK_CSV] = (("\n".join(kept) + "\n").encode(), files[SPARK_CSV][1])
        _spark_rows(lambda fields: fields)(files)  # re-derived

    return edit


def _concurrency_findings(
    recorded: Recorded, target: Path, edit: Callable[[Files], None]
) -> list[str]:
    verdict = _verdict(recorded, target, edit)
    return [f for f in _findings(verdict) if SPARK_CSV in f]


def _rows(batch: str, figures: dict[str, str]) -> str:
    return "".join(
        f"r,t,tier2,m,l,e,u,1,,{batch},na,concurrency,{metric},{value},u,\n"
        for metric, value in figures.items()
    )


def _check(levels: str, exchanges: Sequence[TransportExchange], rows: str) -> list[str]:
    """``_spark_concurrency`` of a run pinned to ``--throughput-concurrency levels`` whose log
    holds ``exchanges`` and whose CSV holds ``rows``: its findings' messages."""
    command = ["{python}", "spark_bench.py", "eval", "--throughput-concurrency", levels]
    harness: Any = SimpleNamespace(command=command)
    spark = _Spark("sparkbench", harness, SPARK_CSV, (HEADER + rows).encode())
    evidence: Any = SimpleNamespace(transport=list(exchanges))
    return [f.message for f in _spark_concurrency(spark_replies(evidence), spark, b"suite")]


def _later(exchange: TransportExchange, seconds: float, **update: Any) -> TransportExchange:
    """``exchange`` with every chunk ``seconds`` later (a slower reply), and ``update``."""
    chunks = tuple(c.model_copy(update={"t": c.t + seconds}) for c in exchange.chunks)
    return exchange.model_copy(update={"chunks": chunks, **update})


# --- 1. a second row of a figure turns the check off ---------------------------------------------


def test_the_reader_takes_a_second_row_of_a_figure_as_another_level() -> None:
    """``spark_concurrency`` reads a figure given twice as the start of the next level (as
    ``run_tier2`` writes a level repeated in the pinned option), never choosing one: the
    check then holds the levels to the pinned ones (closed: hole 1)."""
    rows = _rows("1", HONEST) + _rows("1", {"agg_decode_tps": "94.7"})
    levels = spark_concurrency((HEADER + rows).encode())
    assert [(level.batch, level.given) for level in levels] == [
        ("1", tuple(HONEST)),
        ("1", ("agg_decode_tps",)),
    ]


def test_a_second_row_of_a_figure_does_not_turn_the_check_off(
    recorded: Recorded, tmp_path: Path
) -> None:
    """An aggregate of 10,000 tok/s (found alone) followed by a second, honest row of the same
    figure: the CSV is refused by the concurrency reader only, and the verdict says nothing."""

    def twice(fields: list[str]) -> list[list[str]]:
        if fields[11] == "concurrency" and fields[12] == "agg_decode_tps":
            return [_set("concurrency", "agg_decode_tps", "10000.0")(list(fields)), fields]
        return [fields]

    assert _concurrency_findings(recorded, tmp_path / "x", _csv_edit(twice))


# --- 2. figures under a batch no pinned level names ----------------------------------------------


@pytest.mark.parametrize("how", ["renamed-01", "added-8"])
def test_figures_under_a_batch_no_pinned_level_names_are_found(
    recorded: Recorded, tmp_path: Path, how: str
) -> None:
    """The pinned command asks level 1 only. The forger either writes the level's rows under
    batch ``01`` (what a reader takes for batch 1) with faster figures, or keeps them and adds
    a batch 8 the run never measured at 10,000 tok/s: Spark writes figures only under
    ``str(n)`` of a level it ran, so either is a finding."""

    def edit(fields: list[str]) -> list[list[str]]:
        if fields[11] != "concurrency":
            return [fields]
        forged = _set("concurrency", fields[12], FASTER[fields[12]])(list(fields))
        if how == "renamed-01":
            forged[9] = "01"
            return [forged]
        forged[9] = "8"
        return [fields, forged]

    assert _concurrency_findings(recorded, tmp_path / "x", _csv_edit(edit))


# --- 3. the per-stream rate unbounded without its p99 --------------------------------------------


@pytest.mark.parametrize("p99", [None, "n/a"], ids=["dropped", "not-a-number"])
def test_a_per_stream_rate_without_its_p99_is_found(
    recorded: Recorded, tmp_path: Path, p99: str | None
) -> None:
    """A per-stream rate of 10,000 tok/s (found with the honest p99 beside it), its p99 row
    dropped or made ``n/a``."""

    def edit(fields: list[str]) -> list[list[str]]:
        if fields[11] == "concurrency" and fields[12] == "ttft_p99_ms":
            return [] if p99 is None else [_set("concurrency", "ttft_p99_ms", p99)(fields)]
        return [_set("concurrency", "per_stream_tps", "10000.0")(fields)]

    assert _concurrency_findings(recorded, tmp_path / "x", _csv_edit(edit))


# --- held: numbers that are not finite, a reordered log ------------------------------------------


def test_an_infinite_aggregate_is_found_without_a_traceback(
    recorded: Recorded, tmp_path: Path
) -> None:
    """``1e309`` matches the reader's number pattern and reads as inf: an infinite aggregate
    is a finding (its allowance printed), an infinite p99 a slower TTFT (held)."""

    def edit(fields: list[str]) -> list[list[str]]:
        fields = _set("concurrency", "agg_decode_tps", "1e309")(fields)
        return [_set("concurrency", "ttft_p99_ms", "1e309")(fields)]

    (finding,) = _concurrency_findings(recorded, tmp_path / "x", _csv_edit(edit))
    assert "an aggregate decode of inf tok/s" in finding, finding


def test_the_figures_read_as_the_reader_reads_them() -> None:
    """``nan``, ``inf`` and spaced numbers are not Spark's numbers and are left out; ``1e309``
    is inf; batch keys are kept as written (held: what the checks above rely on)."""
    rows = _rows("1", {"agg_decode_tps": "nan", "per_stream_tps": "inf", "ttft_p50_ms": " 1",
                       "ttft_p99_ms": "1e309"})  # fmt: skip
    rows += _rows("01", {"agg_decode_tps": "5"}) + _rows("", {"agg_decode_tps": "6"})
    levels = spark_concurrency((HEADER + rows).encode())
    assert [(level.batch, level.figures) for level in levels] == [
        ("1", {"ttft_p99_ms": float("inf")}), ("01", {"agg_decode_tps": 5.0}),
        ("", {"agg_decode_tps": 6.0}),
    ]  # fmt: skip
    assert levels[0].given == tuple(HONEST)  # each metric given, numbers or not


def test_a_reordered_log_is_found(recorded: Recorded, tmp_path: Path) -> None:
    """The levels are taken in the log's order: a forger who moves the concurrency exchange
    ahead of the single-stream one (to put another exchange in a level) is found by the log's
    own id order (held)."""

    def swap(files: Files) -> None:
        lines = files[LOG][0].decode().splitlines()
        lines[233], lines[234] = lines[234], lines[233]
        files[LOG] = (("\n".join(lines) + "\n").encode(), files[LOG][1])

    verdict = _verdict(recorded, tmp_path / "x", swap)
    assert any("exchange ids go from 232 to 234" in f for f in _findings(verdict))


# --- held: Spark's own arithmetic on an honest run is never a finding ----------------------------


def _spark_pct(ordered: Sequence[float], p: int) -> float:
    """``spark_bench._pct`` as the pinned commit writes it."""
    if not ordered:
        return 0.0
    k = max(0, min(len(ordered) - 1, int(round((p / 100) * (len(ordered) - 1)))))  # noqa: RUF046
    return ordered[k]


def _honest_level(
    rng: random.Random, n: int, tight: bool
) -> tuple[list[tuple[float, SparkReply]], dict[str, float]]:
    """A level of ``n`` replies as the observer saw them, and the figures Spark's client writes
    of them (``_concurrency_run`` and ``chat_stream``'s arithmetic, ``run_tier2``'s rounding),
    its clock never ahead of the observer's: each send before the observer's start, each line
    read after the observer saw it (by nothing when ``tight``)."""

    def lag() -> float:
        return 0.0 if tight else rng.choice([0.0, rng.uniform(0, 0.002), rng.uniform(0, 0.5)])

    wall_t0 = 100.0
    batch: list[tuple[float, SparkReply]] = []
    ttfts: list[float] = []
    rates: list[float] = []
    ends: list[float] = []
    total_out = 0.0
    for _ in range(n):
        t0 = wall_t0 + lag()
        started = t0 + lag()
        first = None if rng.random() < 0.05 else rng.uniform(0.0, 3.0)
        done = (first or 0.0) + rng.uniform(0.0, 5.0)
        completion = rng.choice([0, 1, rng.randint(1, 600)])
        first_abs = None if first is None else started + first + lag()
        end_abs = max(started + done + lag(), first_abs or 0.0)
        total = end_abs - t0
        ttft = total if first_abs is None else first_abs - t0
        decode = max(total - (ttft or total), 1e-6)
        rates.append(completion / decode if completion else 0.0)
        ttfts.append(ttft * 1000)
        total_out += completion
        ends.append(end_abs)
        timing = SparkTiming(first, done, float(completion), None)
        batch.append((started, SparkReply(b"", None, None, timing, concurrency=True)))
    wall = max(ends) + lag() - wall_t0
    ttfts.sort()
    row = {
        "agg_decode_tps": round(total_out / wall, 1),
        "per_stream_tps": round(statistics.mean(rates), 2),
        "ttft_p50_ms": round(_spark_pct(ttfts, 50), 1),
        "ttft_p99_ms": round(_spark_pct(ttfts, 99), 1),
    }
    return batch, row


def test_honest_levels_are_never_a_finding() -> None:
    """Many levels (1 to 60 replies, some with no token, some of 0 tokens; the client's clock
    as tight as the observer's, or lagging), each with the figures Spark writes of them:
    Python's half-to-even rounding of the index and of the figures, and the float error of
    the client's own subtraction, are within the check's slack (held)."""
    rng = random.Random(20261207)  # noqa: S311 (a reproducible sample, not a secret)
    for trial in range(1500):
        n = rng.choice([1, 2, 3, 4, 5, 6, 8, 16, 50, 51, 52, 60])
        batch, row = _honest_level(rng, n, tight=trial % 2 == 0)
        assert _concurrency_problems("b", batch, row) == [], (trial, n, row)


# --- held: empty and odd levels, no traceback ----------------------------------------------------


@pytest.mark.parametrize("levels", ["0,1", "0", "1,0", ""])
def test_a_level_of_no_requests_is_no_traceback(e234: TransportExchange, levels: str) -> None:
    """A pinned level of 0 (Spark itself cannot run it), or none: figures under batch 0 are a
    finding ("reads none of its replies"), never a traceback (held)."""
    found = _check(levels, [e234], _rows("0", HONEST))
    assert all(isinstance(f, str) for f in found)
    if levels == "0":
        assert found and "the transport log holds 1" in found[0]


def test_replies_of_no_time_at_all_are_no_division_by_zero() -> None:
    """Replies with no token whose observer's span is 0 (their ends at their start): no bound
    is drawn where the span or a decode time is 0, and an empty level is a finding, never a
    division by zero (held)."""
    timing = SparkTiming(None, 0.0, 5.0, None)
    batch = [(10.0, SparkReply(b"", None, None, timing, concurrency=True))] * 3
    assert _concurrency_problems("b", batch, {k: float(v) for k, v in FASTER.items()}) == []
    assert _concurrency_problems("b", [], {"agg_decode_tps": 1.0}) == [
        "b: figures, but Spark's client reads none of its replies (no figures: an error row)"
    ]


# --- 4. a repeated level of which one failed -----------------------------------------------------


def test_a_repeated_level_of_which_one_failed_holds(e234: TransportExchange) -> None:
    """Pinned ``1,1``: the first run of level 1 is exchange 234 (honest figures); the second's
    reply is a 500, Spark's client drops it and writes ``error`` for batch 1. The honest CSV
    holds one set of figures and one error row for batch 1."""
    failed = e234.model_copy(update={"id": 235, "started": e234.started + 2, "status": 500,
                                     "chunks": ()})  # fmt: skip
    rows = _rows("1", HONEST) + _rows("1", {"error": "no completed requests"})
    assert _check("1,1", [e234, failed], rows) == []


def test_a_repeated_level_run_twice_is_no_finding(e234: TransportExchange) -> None:
    """Pinned ``1,1`` both run: Spark writes two rows of each figure for batch 1, read as two
    levels, each held to its own exchange: an honest run is no finding (held)."""
    second = _later(e234, 0.0, id=235, started=e234.started + 2)
    assert _check("1,1", [e234, second], _rows("1", HONEST) + _rows("1", HONEST)) == []


# --- 5. a streamed 200 with no chunks timed at 0.0 -----------------------------------------------


def test_an_empty_stream_is_timed_at_its_end(e234: TransportExchange) -> None:
    """A level of 2: reply A is exchange 234 five seconds later (first token at 5297.8 ms);
    reply B a streamed 200 that ends, empty, at 5 s. Spark's client reads both, B's TTFT its
    total (at least 5 s: the observer records its end before the end goes out), so its p50
    is at least 5000 ms: a p50 of 1 ms is faster than the log allows."""
    slow = _later(e234, 5.0)
    empty = e234.model_copy(update={"id": 235, "chunks": (), "ended": e234.started + 5.0})
    reply = spark_reply(empty)
    assert reply is not None and reply.timing == SparkTiming(None, 5.0, 1, None)  # its end
    figures = dict(HONEST, ttft_p50_ms="1.0", ttft_p99_ms="5299.3", agg_decode_tps="20.0",
                   per_stream_tps="118.33")  # fmt: skip
    found = _check("2", [slow, empty], _rows("2", figures))
    assert found and "a TTFT p50 of 1 ms" in found[0], found


# --- 6. a reply the harness went from counted as read --------------------------------------------


def _gone(exchange: TransportExchange, at: float) -> TransportExchange:
    """``exchange``'s reply as recorded when its first token came at ``at`` s, after Spark's
    client had timed out and closed (``--timeout``, 900 s): the role chunk, then the token
    chunk the observer could not send (recorded as it arrived), ``GONE_MID_STREAM``."""
    role, token = exchange.chunks[0], exchange.chunks[1]
    chunks = (role.model_copy(update={"t": 0.2}), token.model_copy(update={"t": at}))
    return exchange.model_copy(update={"id": 235, "chunks": chunks, "error": GONE_MID_STREAM,
                                       "ended": exchange.started + at})  # fmt: skip


def test_an_honest_level_whose_client_timed_out_on_a_reply_holds(
    e234: TransportExchange,
) -> None:
    """A level of 2 on a slow server: reply A is exchange 234; reply B's first token comes at
    950 s, after the client's 900 s socket timeout. Spark's client raises on B and writes the
    figures of A alone (p50 = p99 = 299.3 ms, per-stream 118.33, the aggregate over its
    900 s wall). Honest: no finding."""
    late = _gone(e234, 950.0)
    rows = _rows("2", dict(HONEST, agg_decode_tps="0.2"))
    assert _check("2", [e234, late], rows) == []


# --- 7. Spark's own report ------------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="DECISION (ADR 0050, the concurrency figures): Spark's markdown and HTML reports are "
    "renderings the verifier does not read; the verdict lists them as unread (the threat "
    "model's defence for an entry no check reads), and shows the CSV's figures, which it holds",
)
def test_a_report_showing_faster_concurrency_figures_is_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The CSV honest; Spark's markdown report's row for batch 1 rewritten to 10,000 tok/s
    aggregate and per-stream, a TTFT of 1 ms."""

    def edit(files: Files) -> None:
        text = files[REPORT][0].decode()
        honest = "| 1 | 95 | 118.3 | 299 | 299 | 1/1 |"
        assert honest in text
        forged = text.replace(honest, "| 1 | 10000 | 10000.0 | 1 | 1 | 1/1 |")
        files[REPORT] = (forged.encode(), files[REPORT][1])

    verdict = _verdict(recorded, tmp_path / "x", edit)
    assert _findings(verdict)
