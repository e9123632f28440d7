"""Hostile tests of 2026-12-07 (Infermark's figures): an adversarial publisher against ADR 0052,
Infermark 0.3.0's latency, TTFT and ITL distributions held to the performance exchanges
(``verify/_consistency/latencies.py``, called from ``verify/_consistency/exchanges.py``
``_infermark`` via ``_reported_stats``) and the reader's order of a distribution
(``verify/harness_outputs.py`` ``_stats``).

The bundle attacks start from the recorded real bundle (examples/recorded/llamacpp-smollm2-135m.tar:
20 streamed requests at concurrency 1, 4,680 visible chunks, 4,660 gaps, ITL mean 8.19 ms, so
an estimated generation rate of 122 chunk/s) and reseal it with claims that repeat its own
replay (``tests.gate_kit.forged``), the report written back with the record and metrics its
reader derives (``put_report``). The bounds themselves are tried on the recorded run's observer
times with ``latency_problems`` directly (cheap). Honest reports are made by Infermark's own
code, imported from the bundle's checkout of it (``_types.compute_stats``, ``report.py``
``report_to_dict`` and ``runner.py`` ``_aggregate_results``, the last taken out of its module
with ``ast``: the runner imports httpx, which is not installed here), over a client model that
reads every line a hop after the observer did.

Tried (A, forgery): the ADR's admitted trade (a slower TTFT tail paying for a lower ITL mean);
TTFT percentiles past the latencies' own; an ITL mean below what its own percentiles allow; a
latency maximum no wall holds, lifting the TTFT maximum and with it the whole trade; a report
without the ``itl`` key; a record whose ITL is a subnormal float; a record whose ITL mean and
TTFT median are not the report's; NaN, ``Infinity``, 1e400, ``"NaN"``, ``true``, a 400-digit
integer, a negative and -0.0 as figures. (B, false positives): Infermark's own aggregation of
random runs (failed requests, requests of none and of one token, all requests failing, a hop
of nought, i.e. the observer's times equal to the harness's) through the bounds and the
reader; and, on the recorded bundle, its streams reported honestly (a hop of nought and of
2 ms), one request cut to one token, one to none and one failed, every request failed, and one
request ended by the client's time-out (``InfermarkReading.under``).

Holes (each asserting the safe behaviour; all five closed the same day: a least total beside
the most, held to the observer's spans and first tokens and, for the latencies, to the wall;
each TTFT figure at most the latency's where every success has a TTFT; the reader requiring
the three keys; no estimate past any float):

1. **The latency maximum is held to nothing above** (``latencies.py`` ``latency_problems``:
   the latency's ``max`` is held to the observer's from below only; the wall bounds the *mean*
   alone, and the mean is never held to the spans with the max among them). A report of a latency
   max of 3.9 s (the observer's spans: at most 2.26 s; the other 19 latencies are at least
   their spans, 36.4 s, so the wall of 38.8 s leaves 2.4 s for the longest) lets the TTFT max,
   and so the TTFT p75 to max, be 3.9 s (``ttft max <= latency max``); their ``most_total``
   then allows a TTFT mean of 1.93 s, enough to cover every last token's line, so the ITL
   figures can be anything: ITL 10 µs, the estimated generation rate 100,000 chunk/s, no
   finding, integrity ok, the score unchanged. Fix: each latency is at least its span, so the
   latencies' sum (``mean * n``, itself within the wall) is at least the spans' sum less the
   longest span plus the reported max (more generally: a least total whose floor at each rank
   is the larger of the percentiles' and the observer's order statistic there).
2. **A TTFT percentile above the latency's same percentile** (``latency_problems`` holds only
   ``ttft max <= latency max``). When every success read a token (here all 20), each TTFT is no
   more than its own request's latency, so each TTFT order statistic, each percentile and the
   mean are no more than the latency's. A TTFT p75 to p99 of the latency max (2.264 s; the
   latency p75 is 2.154 s) passes, beyond the ADR's "towards the latencies": 0.67 s more of
   TTFT than the latencies' percentiles allow, the ITL mean 0.14 ms lower again. Fix: where
   the TTFTs are as many as the successes, hold every TTFT figure to the latency's same figure
   (fewer: the k-th least TTFT to the latency of rank k plus the successes without one).
3. **A mean below what its percentiles force** (``latencies._mean_past`` is one-sided: there
   is ``most_total`` and no least total). With the admitted trade, the report keeps its ITL
   percentiles honest (p50 7.9 ms, p75 8.6 ms, ...) and only lowers the ITL mean, the figure
   the estimated chunk/s is made of, to 3.4 ms. Half the 4,660 gaps are at least the p50, so
   the mean is at least 4.67 ms: the report contradicts itself and passes. Fix: a
   ``least_total`` beside ``most_total`` (each value at or past the higher rank a percentile
   interpolates to is at least it; the last is the max), the mean held to both.
4. **A report without the ``itl`` key skips every bound** (``exchanges._reported_stats``
   reads ``level[key]`` and returns None on the KeyError; the reader takes
   ``level.get("itl")``, no ITL). With that key left out (Infermark always writes it, ``null``
   or an object), a latency distribution of 50 ms throughout (the observer's spans are 0.5 s
   to 2.26 s) and a TTFT of 18 ms throughout (the observer's p99 is 82 ms) pass, as does "no
   ITL" over 4,660 gaps. Fix: ``level.get(key)`` as the reader does (or the reader requiring
   the three keys).
5. **A subnormal ITL mean crashes ``audit verify --json``** (``verify/gx10/scores.py``
   ``diagnostics``: ``1 / itl`` of 1e-320 is ``inf``, which ``canonical_bytes`` refuses:
   ``verdict_json`` raises ValueError, a traceback). The record alone needs to say it (a
   ``record_disagrees`` finding does not stop the diagnostics); through hole 1 the raw report
   says it too, without a finding. Attestations, summaries and archive reports serialise the
   same verdict. Fix: no estimate where ``1 / itl`` is not finite (or the reader and the
   record's model refusing an ITL mean below a floor such as a nanosecond).

Quantified and held as the ADR admits it (controls): with the TTFT p50 kept and the TTFT p75 to
max raised to the latency max, the ITL mean can drop from 8.19 ms to 3.37 ms (2.4 times the
estimated chunk/s) and no lower; raising the TTFT p50 to 1 s too (the TTFT score is 100 up to
1 s, so it costs nothing scored) takes it to 1.47 ms (5.6 times). Every figure shown is then
slower, in plain view.

Held: the record is held to the raw report (an ITL mean or TTFT median of its own is a
finding); non-numbers, NaN, infinities, huge integers, negatives and booleans as figures are
refused by the reader; -0.0 reads as nought (no estimate); every honest report tried, random
or on the bundle, is read and within every bound. Infermark's own ``compute_stats`` is refused
by the reader only for values within a few ulps of each other at 10,000 s or more (its
``std`` then exceeds half their range by more than 1e-12 s), or over a wall of a subnormal
second (its chunk/s ``Infinity``): no real run's.
Out of scope, not tested: chunk times moved (a stream's tokens compressed after its first, or
its last token's chunk timed out of order; no check wants chunk times in order) make the
observer's last tokens earlier and so any ITL pass: those are timings the observer never saw,
the fabricated run the threat model leaves open. Making requests fail so that their spans drop
out costs the performance score (errors score 0, held to the exchanges by ADR 0049).
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import itertools
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundle_schema.models import TransportExchange
from tests.data.hostile.kit import Files, lines, put_json
from tests.gate_kit import RECORDED_TAR, Recorded, tar_evidence
from tests.hostile.test_attacks_2026_12_05_transport import (
    INFERMARK,
    INFERMARK_RAW,
    LOG,
    RECORDED_WALL,
    _edit_exchanges,
    _findings,
    _forge,
    _honest,
    _json_of,
    _performance,
    _utf8,
    put_report,
    recorded,
)
from tests.hostile.test_infermark_figures import observed
from verify._consistency._common import TTFT_SLACK_S
from verify._consistency.exchanges import _reported_stats
from verify._consistency.latencies import FIGURES, PERCENTILES, latency_problems, most_total
from verify.gx10.scores import performance_score
from verify.harness_outputs import OutputsUnreadable, read_outputs
from verify.infermark import infermark_reading
from verify.render import verdict_json

__all__ = ["observed", "recorded"]  # the fixtures, shared

TIMEOUT = 120.0
"""The pinned command's client time-out (Infermark's default ``--timeout``)."""


@functools.cache
def _evidence() -> dict[str, bytes]:
    """The recorded bundle's evidence by logical name (read once)."""
    return tar_evidence(RECORDED_TAR)


# --- Infermark's own code, from the recorded checkout -------------------------------------------


@pytest.fixture(scope="module")
def infermark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """Infermark 0.3.0's ``_types`` and ``report`` modules (as ``infermark._types`` and
    ``infermark.report``, which imports the first by that name) and ``runner.py``'s
    ``_aggregate_results`` alone (its module imports httpx), from the recorded checkout."""
    files = _evidence()
    tree = files["upstreams/infermark/tree.txt"].decode().splitlines()
    listing = {path: meta.split()[2] for meta, path in (line.split("\t", 1) for line in tree)}
    folder = tmp_path_factory.mktemp("infermark")

    def source(path: str) -> Path:
        target = folder / Path(path).name
        target.write_bytes(files[f"upstreams/infermark/files/{listing[path]}"])
        return target

    assert "infermark" not in sys.modules
    package = ModuleType("infermark")
    package.__path__ = []
    sys.modules["infermark"] = package
    loaded = {}
    try:
        for name in ("_types", "report"):
            spec = importlib.util.spec_from_file_location(
                f"infermark.{name}", source(f"src/infermark/{name}.py")
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[f"infermark.{name}"] = module  # dataclasses look their module up
            spec.loader.exec_module(module)
            loaded[name] = module
        runner = ast.parse(source("src/infermark/runner.py").read_text())
        (aggregate,) = [
            node
            for node in runner.body
            if isinstance(node, ast.FunctionDef) and node.name == "_aggregate_results"
        ]
        types = loaded["_types"]
        namespace: dict[str, Any] = {
            "Dict": dict, "List": list, "RequestResult": types.RequestResult,
            "ConcurrencyResult": types.ConcurrencyResult, "compute_stats": types.compute_stats,
        }  # fmt: skip
        code = ast.Module(body=[aggregate], type_ignores=[])
        exec(compile(code, "runner.py", "exec"), namespace)  # noqa: S102 - Infermark's own code
        yield SimpleNamespace(
            types=types,
            report_to_dict=loaded["report"].report_to_dict,
            aggregate=namespace["_aggregate_results"],
        )
    finally:
        for name in ("infermark", "infermark._types", "infermark.report"):
            sys.modules.pop(name, None)


def _level(infermark: SimpleNamespace, results: list[Any], wall: float) -> dict[str, Any]:
    """The level Infermark writes of ``results`` (its ``RequestResult`` values) over ``wall``."""
    types = infermark.types
    level = infermark.aggregate(results, 1, wall)
    report = types.BenchmarkReport(
        url="http://127.0.0.1:18080/v1", model="m", timestamp="t", results=[level]
    )
    data: dict[str, Any] = infermark.report_to_dict(report)["results"][0]
    return json.loads(json.dumps(data))  # as written and read back


def _report_bytes(level: dict[str, Any]) -> bytes:
    config = {"prompt_length": 49, "max_tokens": 256, "n_requests": level["n_requests"],
              "mode": "streaming", "warmup": 0}  # fmt: skip
    return json.dumps({"config": config, "results": [level]}, indent=2).encode()


# --- an honest client over the observer's times -------------------------------------------------


def _token_times(exchange: dict[str, Any]) -> list[float]:
    """When each line Infermark counts a token on arrived (each recorded chunk here is whole
    lines): ``data:`` JSON whose first choice's ``delta.content`` is a non-empty string."""
    times = []
    for chunk in exchange["chunks"]:
        for raw in chunk["data"].splitlines():
            line = raw.strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            event = json.loads(line[5:].strip())
            choices = event.get("choices") or []
            content = choices[0].get("delta", {}).get("content") if choices else None
            if isinstance(content, str) and content:
                times.append(chunk["t"])
    return times


def _honest_results(infermark: SimpleNamespace, files: Files, hop: float) -> list[Any]:
    """Infermark's ``RequestResult`` of each performance exchange, as a client that reads each
    line (and the end) ``hop`` seconds after the observer measures it: a reply that is not a
    200 fails, so does one with a wait between two chunks past :data:`TIMEOUT`."""
    results = []
    for exchange in _performance(lines(files, LOG)):
        chunks = [c["t"] for c in exchange["chunks"]]
        end = max([*chunks, (exchange["ended"] or 0.0) - exchange["started"]])
        longest = max((b - a for a, b in itertools.pairwise(chunks)), default=0.0)
        if exchange["status"] != 200 or exchange.get("error"):
            results.append(infermark.types.RequestResult(False, end + hop, error="HTTP 500: x"))
            continue
        if longest > TIMEOUT:
            results.append(infermark.types.RequestResult(False, end + hop, error="timeout"))
            continue
        times = [t + hop for t in _token_times(exchange)]
        itl = [b - a for a, b in itertools.pairwise(times)]
        results.append(
            infermark.types.RequestResult(
                True, end + hop, times[0] if times else None, itl, output_tokens=len(times)
            )
        )
    return results


def _put_honest(
    infermark: SimpleNamespace, files: Files, hop: float = 0.002, wall: float = RECORDED_WALL
) -> dict[str, Any]:
    """The report Infermark writes of the performance exchanges as they now are (and its record
    and metrics); its level returned."""
    report = _json_of(files, INFERMARK_RAW)
    level = _level(infermark, _honest_results(infermark, files, hop), wall)
    report["results"][0] = level
    report["config"]["n_requests"] = level["n_requests"]
    put_report(files, report)
    return level


# --- the recorded run's observer times -----------------------------------------------------------


def _problems(observed: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    inputs = {k: v for k, v in observed.items() if k != "stats"}
    return latency_problems(stats, **inputs)


def _least_total(stats: dict[str, float], count: int) -> float:
    """The least ``count`` values can add up to with these percentiles, least and most: each
    value at or past the higher rank a percentile interpolates to is at least that percentile
    (and any earlier one), the last is the most, the rest at least the least."""
    floors = [stats["min"]] * count
    for p in PERCENTILES:
        for rank in range(math.ceil(p / 100.0 * (count - 1)), count):
            floors[rank] = max(floors[rank], stats[f"p{p}"])
    floors[-1] = stats["max"]
    return math.fsum(floors)


def _traded(observed: dict[str, Any], ttft_p50: float | None = None) -> dict[str, Any]:
    """The ADR's admitted trade at its end: the TTFT p75 to max raised to the latency's same
    figures (its p50 kept, or ``ttft_p50``; every success has a TTFT, so none may pass the
    latency's), the TTFT mean the most its figures allow, and the ITL mean the least the sums
    then allow (its other figures kept)."""
    stats = copy.deepcopy(observed["stats"])
    ttft, itl = stats["ttft"], stats["itl"]
    if ttft_p50 is not None:
        ttft["p50"] = ttft_p50
    for key in ("p75", "p90", "p95", "p99", "max"):
        ttft[key] = stats["latency"][key]
    count = len(observed["firsts"])
    ttft["mean"] = most_total(ttft, count) / count
    reach = math.fsum(observed["lasts"]) - count * TTFT_SLACK_S
    mean = (reach - ttft["mean"] * count) / observed["gaps"]
    stats["itl"] = dict.fromkeys(itl, mean) | {"std": 0.0}  # its percentiles may not hold it up
    return stats


# --- A. the trade the ADR admits, and past it (the bounds on the recorded run) --------------------


def test_the_admitted_trade_stops_at_the_latency_max(observed: dict[str, Any]) -> None:
    """Held, and quantified: the TTFT tail raised to the latency's own figures (and every ITL
    figure lowered with the mean) pays for an ITL mean of 3.52 ms (8.19 ms honest: 2.3 times
    the estimated chunk/s), no lower; with the TTFT p50 at 1 s as well (still a TTFT score of
    100), 1.62 ms (5.1 times)."""
    assert _problems(observed, observed["stats"]) == []
    honest = observed["stats"]["itl"]["mean"]
    traded = _traded(observed)
    itl = traded["itl"]["mean"]
    assert itl == pytest.approx(0.00352, abs=5e-5) and honest / itl == pytest.approx(2.33, abs=0.02)
    assert _problems(observed, traded) == []
    traded["itl"]["mean"] = itl * 0.99
    assert any(p.startswith("TTFTs and ITLs that reach") for p in _problems(observed, traded))

    assert performance_score(120.6, 1.0, 0) == 100.0
    slower = _traded(observed, ttft_p50=1.0)
    assert slower["itl"]["mean"] == pytest.approx(0.00162, abs=5e-5)
    assert _problems(observed, slower) == []
    slower["itl"]["mean"] *= 0.99
    assert _problems(observed, slower)


def test_a_ttft_percentile_above_the_latencys_is_said(observed: dict[str, Any]) -> None:
    """Hole 2, closed: every success read a token, so each TTFT figure is at most the
    latency's same one; the trade's first form (the TTFT p75 to max at the latency max, 2.264 s
    against a latency p75 of 2.154 s) would have bought 0.14 ms more off the ITL mean."""
    latency = observed["stats"]["latency"]
    above = _traded(observed)
    for key in ("p75", "p90", "p95", "p99", "max"):
        above["ttft"][key] = latency["max"]
    count = len(observed["firsts"])
    more = most_total(above["ttft"], count) - most_total(_traded(observed)["ttft"], count)
    assert more == pytest.approx(0.67, abs=0.02)
    assert more / observed["gaps"] == pytest.approx(0.000144, abs=5e-6)
    said = f"a TTFT p75 of {latency['max']:g} s, past the latency p75 of {latency['p75']:g} s"
    assert said in _problems(observed, above)


def test_a_mean_below_what_its_percentiles_force_is_said(observed: dict[str, Any]) -> None:
    """Hole 3, closed: the trade with the ITL's honest percentiles kept and its mean alone
    lowered (the figure the estimated chunk/s is made of): half the 4,660 gaps are at least the
    p50, so the mean is at least 4.67 ms, and 3.5 ms is said."""
    traded = _traded(observed)
    traded["itl"] = observed["stats"]["itl"] | {"mean": traded["itl"]["mean"]}
    itl, gaps = traded["itl"], observed["gaps"]
    assert itl["p50"] == observed["stats"]["itl"]["p50"]  # the shown percentiles are honest
    least = _least_total(itl, gaps) / gaps
    assert least == pytest.approx(0.00467, abs=5e-5) and itl["mean"] < least * 0.76
    assert any(p.startswith("an ITL mean of") and "need at least 0.0047 s" in p
               for p in _problems(observed, traded))  # fmt: skip


# --- A. on a resealed bundle --------------------------------------------------------------------


def _latency_max_raised(files: Files, itl: float = 1e-5, longest: float = 3.9) -> None:
    """The report's latency max ``longest`` (the rest as recorded), the TTFT p75 to max too,
    a TTFT mean that reaches every last token's line alone, and every ITL figure ``itl``."""
    exchanges = [TransportExchange.model_validate(e) for e in _performance(lines(files, LOG))]
    lasts = [infermark_reading(e).last or 0.0 for e in exchanges]
    report = _json_of(files, INFERMARK_RAW)
    level = report["results"][0]
    level["latency"]["max"] = longest
    ttft = level["ttft"]
    for key in ("p75", "p90", "p95", "p99", "max"):
        ttft[key] = longest
    ttft["mean"] = (math.fsum(lasts) - itl * 4660) / 20
    level["itl"] = dict.fromkeys(level["itl"], itl) | {"std": 0.0}
    put_report(files, report)


def test_a_latency_max_past_the_wall_does_not_buy_any_itl(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Hole 1, closed: a latency max of 3.9 s where the wall leaves the longest request 2.4 s
    (the other 19 are at least their spans, 36.4 s, in a wall of 38.8 s) lifted the TTFT max
    and tail, whose most then covered every last token: ITL 10 us, 100,000 estimated chunk/s.
    The latencies' least total, each at least its span and the max as reported, is past the
    wall."""
    verdict = _forge(recorded, tmp_path / "bundle", _latency_max_raised)
    assert verdict.diagnostics.estimated_visible_generation_chunks_per_second == pytest.approx(
        100_000
    )
    found = _findings(verdict, INFERMARK_RAW)
    assert any("latencies, one after another at concurrency 1, that add up to at least" in f
               for f in found), found  # fmt: skip


def test_a_report_without_its_itl_key_is_held_all_the_same(observed: dict[str, Any]) -> None:
    """Hole 4, closed: a report without its ``itl`` key (Infermark always writes it, null or
    an object) skipped every bound, a latency of 50 ms and a flat 18 ms TTFT passing. The
    reader refuses it now, and the bounds read its other figures all the same."""
    report = json.loads(_evidence()[INFERMARK_RAW])
    level = report["results"][0]
    del level["itl"]
    level["latency"] = dict.fromkeys(level["latency"], 0.05) | {"std": 0.0}
    data = json.dumps(report).encode()
    with pytest.raises(OutputsUnreadable, match=r"no itl \(Infermark writes it"):
        read_outputs("infermark", {"infermark.json": data}, ["performance"])
    stats = _reported_stats(json.loads(data))
    assert stats is not None and stats["itl"] is None
    inputs = {k: v for k, v in observed.items() if k != "stats"}
    assert any(p.startswith("a latency p50 of 0.05 s") for p in latency_problems(stats, **inputs))


def test_a_subnormal_itl_mean_is_no_traceback(recorded: Recorded, tmp_path: Path) -> None:
    """Hole 5, closed: 1 / 1e-320 is inf, which canonical JSON refuses (a traceback from
    ``audit verify --json``); no estimate is shown where the inverse is past any float."""

    def edit(files: Files) -> None:
        put_json(files, INFERMARK, _json_of(files, INFERMARK) | {"itl_mean_seconds": 1e-320})

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert any("the record is not what the raw outputs" in f for f in _findings(verdict))
    verdict_json(verdict)
    assert verdict.diagnostics.estimated_visible_generation_chunks_per_second is None


def test_the_record_is_held_to_the_report(recorded: Recorded, tmp_path: Path) -> None:
    """Held: a record of a lower ITL mean and TTFT median than its raw report says is a
    finding (the diagnostics show the record's)."""

    def edit(files: Files) -> None:
        record = _json_of(files, INFERMARK)
        record["itl_mean_seconds"] /= 2
        record["ttft_p50_seconds"] = 0.012
        put_json(files, INFERMARK, record)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    found = _findings(verdict, INFERMARK)
    assert any("the record is not what the raw outputs of infermark say" in f for f in found)


_ITL_MEAN = '"mean": 0.008189243413306053'


@pytest.mark.parametrize(
    "value",
    ["NaN", "Infinity", "-Infinity", "1e400", '"NaN"', '"0.001"', "true", "9" * 400, "-1e-09",
     "null"],
)  # fmt: skip
def test_a_figure_that_is_no_number_is_refused(value: str) -> None:
    data = _evidence()[INFERMARK_RAW].decode()
    assert data.count(_ITL_MEAN) == 1
    report = data.replace(_ITL_MEAN, f'"mean": {value}').encode()
    with pytest.raises(OutputsUnreadable, match=r"itl\.mean|is not a JSON number|out of range"):
        read_outputs("infermark", {"infermark.json": report}, ["performance"])


def test_a_negative_nought_reads_as_no_estimate() -> None:
    """Held: -0.0 throughout the ITL reads as an ITL mean of nought, which no estimate is made
    of (``1 / itl if itl``): not a faster figure."""
    report = json.loads(_evidence()[INFERMARK_RAW])
    report["results"][0]["itl"] = dict.fromkeys(FIGURES, -0.0) | {"std": 0.0}
    data = json.dumps(report).encode()
    parsed = read_outputs("infermark", {"infermark.json": data}, ["performance"])
    ((_, record),) = parsed.records.values()
    assert record.itl_mean_seconds == 0.0  # type: ignore[union-attr]


# --- B. honest reports (Infermark's own aggregation) ---------------------------------------------

_REQUEST = st.tuples(
    st.sampled_from(["ok", "ok", "ok", "failed"]),
    st.floats(0.0, 5.0),  # the observer's first token
    st.lists(st.floats(0.0, 0.5), max_size=12),  # the observer's gaps (a token after each)
    st.booleans(),  # no token at all
    st.floats(0.0, 1.0),  # from the last token to the end
)
_HOP = st.one_of(st.just(0.0), st.floats(0.0, 0.01))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests=st.lists(_REQUEST, min_size=1, max_size=25), hops=st.lists(_HOP, min_size=3,
       max_size=3), overhead=st.floats(1e-6, 2.0))  # fmt: skip
def test_an_honest_report_is_read_and_within_every_bound(
    infermark: SimpleNamespace,
    requests: list[tuple[str, float, list[float], bool, float]],
    hops: list[float],
    overhead: float,
) -> None:
    """Each request as the observer saw it (its token lines, its end) and as Infermark's
    client measured it: each line read some hop later (never earlier, in order), its end
    later still; failed ones counted as Infermark counts them; the wall their sum and more (at
    least a microsecond more: over a wall of a subnormal second Infermark's chunk/s is
    ``Infinity``, which no reader takes, and no run has)."""
    line_hop, end_hop, start_hop = hops
    results, spans, firsts, lasts, gaps = [], [], [], [], 0
    for outcome, first, between, silent, tail in requests:
        seen = [] if silent else [first + math.fsum(between[:i]) for i in range(len(between) + 1)]
        span = (seen[-1] if seen else first) + tail
        read: list[float] = []
        for t in seen:  # the client's clock starts before the observer's: later by start_hop
            read.append(max(read[-1] if read else 0.0, t + start_hop + line_hop))
        latency = max(span + start_hop, read[-1] if read else 0.0) + end_hop
        if outcome == "failed":
            results.append(infermark.types.RequestResult(False, latency, error="timeout"))
            continue
        itl = [b - a for a, b in itertools.pairwise(read)]
        ttft = read[0] if read else None
        results.append(infermark.types.RequestResult(True, latency, ttft, itl, len(read)))
        spans.append(span)
        if seen:
            firsts.append(seen[0])
            lasts.append(seen[-1])
            gaps += len(seen) - 1
    wall = math.fsum(r.latency for r in results) + overhead
    level = _level(infermark, results, wall)
    parsed = read_outputs("infermark", {"infermark.json": _report_bytes(level)}, ["performance"])
    ((_, record),) = parsed.records.values()
    assert record.itl_mean_seconds == (level["itl"] or {}).get("mean")  # type: ignore[union-attr]
    stats = _reported_stats(json.loads(_report_bytes(level)))
    assert stats is not None
    problems = latency_problems(stats, wall, spans=spans, firsts=firsts, lasts=lasts, gaps=gaps)
    assert problems == []


@pytest.mark.parametrize("base", [0.001, 0.5, 2.0, 120.0, 1000.0])
@pytest.mark.parametrize("count", [2, 5, 20, 4660])
def test_values_a_few_ulps_apart_are_read(
    infermark: SimpleNamespace, base: float, count: int
) -> None:
    """Held: Infermark's figures of values equal, or a few ulps apart (its mean and deviation
    then off by their rounding), up to 1,000 s: read, and their mean within its percentiles."""
    for values in ([base] * count, [base + (i % 3) * math.ulp(base) for i in range(count)]):
        stats = infermark.types.compute_stats(values)
        figures = {key: getattr(stats, key) for key in (*FIGURES, "std")}
        level = {"concurrency": 1, "n_requests": 1, "n_success": 1, "n_error": 0,
                 "total_duration": 1.0, "requests_per_second": 1.0, "tokens_per_second": 2.0,
                 "latency": figures, "ttft": figures, "itl": figures, "errors": {}}  # fmt: skip
        read_outputs("infermark", {"infermark.json": _report_bytes(level)}, ["performance"])
        assert stats.mean * count <= most_total(figures, count) * (1 + 1e-9) + 1e-12


# --- B. honest reports on the recorded bundle ----------------------------------------------------


@pytest.mark.parametrize("hop", [0.0, 0.002], ids=["observer-times", "hop-2ms"])
def test_the_recorded_streams_reported_honestly_are_no_finding(
    infermark: SimpleNamespace, recorded: Recorded, tmp_path: Path, hop: float
) -> None:
    """Held: Infermark's own report of the recorded streams (every gap its own, not the test
    kit's even spread), its client reading each line as the observer did or 2 ms later."""
    levels: list[dict[str, Any]] = []
    verdict = _forge(
        recorded, tmp_path / "bundle", lambda f: levels.append(_put_honest(infermark, f, hop))
    )
    _honest(verdict)
    assert levels[0]["itl"]["mean"] == pytest.approx(0.00819, abs=1e-5)


def _cut(exchanges: list[dict[str, Any]]) -> None:
    """The first performance stream cut to one token (its later content chunks gone), the
    second to none, the third failed (500)."""
    one, none, failed = _performance(exchanges)[:3]
    for exchange, kept in ((one, 1), (none, 0)):
        chunks, tokens = [], 0
        for chunk in exchange["chunks"]:
            if '"content": "' in chunk["data"] and '"content": ""' not in chunk["data"]:
                tokens += 1
                if tokens > kept:
                    continue
            chunks.append(chunk)
        exchange["chunks"] = chunks
    failed.update(status=500, chunks=[], response_body=_utf8({"error": "model crashed"}))


def test_requests_of_one_token_of_none_and_failed_are_no_finding(
    infermark: SimpleNamespace, recorded: Recorded, tmp_path: Path
) -> None:
    """Held: a request that read one token (a TTFT, no gap), one that read none (a latency
    alone) and one that failed (nothing), honestly reported."""
    levels: list[dict[str, Any]] = []

    def edit(files: Files) -> None:
        _edit_exchanges(files, _cut)
        cut = _performance(lines(files, LOG))[:2]
        assert [len(_token_times(e)) for e in cut] == [1, 0]
        levels.append(_put_honest(infermark, files))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    _honest(verdict)
    level = levels[0]
    assert (level["n_success"], level["n_error"]) == (19, 1)
    assert verdict.diagnostics.errors == 1 and verdict.scores.performance == 0.0


def test_every_request_failed_is_no_finding(
    infermark: SimpleNamespace, recorded: Recorded, tmp_path: Path
) -> None:
    """Held: a level of no successful request (latency figures of 0, no TTFT, no ITL)."""
    levels: list[dict[str, Any]] = []

    def edit(files: Files) -> None:
        def fail(exchanges: list[dict[str, Any]]) -> None:
            for exchange in _performance(exchanges):
                exchange.update(status=500, chunks=[], response_body=_utf8({"error": "x"}))

        _edit_exchanges(files, fail)
        levels.append(_put_honest(infermark, files))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert levels[0]["n_success"] == 0 and levels[0]["ttft"] is None
    _honest(verdict)


def test_a_request_the_client_timed_out_is_no_finding(
    infermark: SimpleNamespace, recorded: Recorded, tmp_path: Path
) -> None:
    """Held: a stream that waited past the client's 120 s between two chunks is an error
    (``InfermarkReading.under``), its span out of the latencies, as Infermark's own count."""
    stalled = 121.0
    levels: list[dict[str, Any]] = []

    def edit(files: Files) -> None:
        def stall(exchanges: list[dict[str, Any]]) -> None:
            exchange = _performance(exchanges)[-1]  # the last: no later exchange overlaps
            for chunk in exchange["chunks"][len(exchange["chunks"]) // 2 :]:
                chunk["t"] += stalled
            exchange["ended"] += stalled

        _edit_exchanges(files, stall)
        levels.append(_put_honest(infermark, files, wall=RECORDED_WALL + stalled))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert (levels[0]["n_success"], levels[0]["errors"]) == (19, {"timeout": 1})
    _honest(verdict)
