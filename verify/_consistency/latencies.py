"""Infermark's latency, TTFT and ITL distributions held to the exchanges they were measured on.

Seed 000 shows them always (and 1 / mean ITL as the estimated visible generation chunk/s), so
a report's figures are a publisher's word unless the transport log bounds them. What bounds
them is what the observer saw of each successful request, on the same monotonic clock
(``_common.SPAN_SLACK_S``): Infermark's client starts its clock before the request is sent and
stops it after the reply's last byte, and takes a token's time when it reads its line; the
observer sees the request after it is sent, and each line and the reply's end before the client
does. So, for each successful request (Infermark 0.3.0 ``runner._aggregate``: latencies of the
successes, TTFTs of those that read a token, every gap between two tokens of a request):

- its latency is no shorter than the observer's span of the exchange, and its TTFT no shorter
  than the observer's time to that token's line. A bound on each value bounds each order
  statistic, and so every figure Infermark computes from them (its percentiles interpolate
  between two neighbouring order statistics with weights that add up to one; the mean, the
  least and the most): each is no lower than the same figure of the observer's times;
- one request after another at concurrency 1, the latencies add up to no more than the level's
  wall: the least they can add up to (each order statistic at least the observer's, and at
  least what the reported percentiles and most force) is held to it;
- each TTFT is no more than its request's latency: the most TTFT no more than the most
  latency, and, where every success read a token, each TTFT figure no more than the latency's;
- its TTFT and its gaps add up to when it read its last token, which is no earlier than the
  observer saw that line, and no later than its end: summed over the requests, the TTFTs and
  the gaps lie between the observer's last tokens and the latencies. With the number of TTFTs
  and of gaps the exchanges fix, a mean ITL the report lowers must be paid for by a TTFT mean
  it raises;
- a mean is within what its percentiles allow: each is at least the order statistic at the
  lower of the two ranks it interpolates between and at most the one at the higher, so every
  value up to the lower rank is no more than it, every value from the higher rank on no less,
  the first is the least and the last the most (:func:`most_total`, :func:`least_total`).

The figures are not bound from the other side: nothing the observer sees stops a client from
reading a whole stream at once at its end (a TTFT as long as its latency, gaps of nought), so a
report can still trade a slower TTFT tail for a faster ITL within these sums. ADR 0052.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from verify._consistency._common import TTFT_SLACK_S

PERCENTILES = (50, 75, 90, 95, 99)
"""The percentiles Infermark's ``compute_stats`` reports, as ``p50`` ... ``p99``."""
FIGURES = (*(f"p{p}" for p in PERCENTILES), "mean", "min", "max")
"""The figures of a distribution that a bound on each value bounds (not ``std``)."""


def percentile(ordered: Sequence[float], p: float) -> float:
    """Infermark 0.3.0's ``percentile`` (``_types.py``) of values in ascending order: linear
    between the order statistics around rank ``p / 100 * (n - 1)``; 0.0 of none."""
    if not ordered:
        return 0.0
    k = p / 100.0 * (len(ordered) - 1)
    low, high = math.floor(k), math.ceil(k)
    if low == high:
        return ordered[int(k)]
    return ordered[low] * (high - k) + ordered[high] * (k - low)


def figures(values: Sequence[float]) -> dict[str, float]:
    """:data:`FIGURES` of ``values`` (at least one) as Infermark computes them."""
    ordered = sorted(values)
    shown = {f"p{p}": percentile(ordered, p) for p in PERCENTILES}
    mean = sum(values) / len(values)  # in their order, as Infermark adds them
    return {**shown, "mean": mean, "min": ordered[0], "max": ordered[-1]}


def most_total(stats: Mapping[str, float], count: int) -> float:
    """The most ``count`` values can add up to with these percentiles, least and most: the
    least, then each value at or below the lower rank a percentile interpolates from no more
    than that percentile (nor any later one), each above the last such rank no more than the
    most."""
    ceiling = stats["max"]
    bounds = []  # (last rank it bounds, bound), the latest percentile first
    for p in reversed(PERCENTILES):
        ceiling = min(ceiling, stats[f"p{p}"])
        bounds.append((math.floor(p / 100.0 * (count - 1)), ceiling))
    total, done = stats["min"], 0  # rank 0 is the least
    for rank, bound in reversed(bounds):
        if rank > done:
            total += (rank - done) * bound
            done = rank
    return total + (count - 1 - done) * stats["max"]


def _a(name: str) -> str:
    return f"an {name}" if name == "ITL" else f"a {name}"


def _below(name: str, reported: Mapping[str, float], seen: Mapping[str, float], what: str) -> str:
    """The first figure of ``reported`` lower than the observer's, said; "" when none is."""
    for key in FIGURES:
        if reported[key] + TTFT_SLACK_S < seen[key]:
            return (
                f"{_a(name)} {key} of {reported[key]:g} s; the observer saw {what} at a {key} of "
                f"{seen[key]:.4f} s"
            )
    return ""


def _past_latency(ttft: Mapping[str, float], latency: Mapping[str, float], *, every: bool) -> str:
    """A TTFT figure past the latency's same figure: each TTFT is no more than its request's
    latency, so the most is no more than the latencies' most, and where every successful
    request has a TTFT (``every``) each figure is no more than the latencies' same one."""
    for key in FIGURES if every else ("max",):
        if ttft[key] > latency[key] + TTFT_SLACK_S:
            return f"a TTFT {key} of {ttft[key]:g} s, past the latency {key} of {latency[key]:g} s"
    return ""


def least_total(stats: Mapping[str, float], count: int, floors: Sequence[float] = ()) -> float:
    """The least ``count`` values can add up to with these percentiles, least and most: each
    value at or past the higher rank a percentile interpolates to is at least that percentile
    (and any earlier one), the last is the most; with ``floors`` (``count`` of them, in
    ascending order: bounds on the values), each order statistic is also at least its floor."""
    events = sorted(
        [(0, stats["min"]), (count - 1, stats["max"])]
        + [(math.ceil(p / 100.0 * (count - 1)), stats[f"p{p}"]) for p in PERCENTILES]
    )
    if floors:
        total, bound, at = 0.0, -math.inf, 0
        for rank, floor in enumerate(floors):
            while at < len(events) and events[at][0] <= rank:
                bound = max(bound, events[at][1])
                at += 1
            total += max(bound, floor)
        return total
    total, bound = 0.0, -math.inf
    for (rank, value), (following, _) in itertools.pairwise([*events, (count, 0.0)]):
        bound = max(bound, value)
        total += (following - rank) * bound
    return total


def _mean_outside(
    name: str, stats: Mapping[str, float], count: int, floors: Sequence[float] = ()
) -> str:
    """Why a distribution's mean is not one its own figures (and ``floors``, the observer's
    bounds on its values, with their slack) allow; "" when it is."""
    most, least = most_total(stats, count), least_total(stats, count, floors)
    total = stats["mean"] * count
    slack = count * TTFT_SLACK_S if floors else 0.0  # one report's own figures: no clocks
    if total > most * (1 + 1e-9) + 1e-12:
        return (
            f"{_a(name)} mean of {stats['mean']:g} s over {count} values; its percentiles, least "
            f"and most allow at most {most / count:.4f} s"
        )
    if total < least * (1 - 1e-9) - 1e-12 - slack:
        what = " and the observer's times" if floors else ""
        return (
            f"{_a(name)} mean of {stats['mean']:g} s over {count} values; its percentiles, least "
            f"and most{what} need at least {least / count:.4f} s"
        )
    return ""


def latency_problems(
    stats: Mapping[str, Mapping[str, float] | None],
    wall: float,
    *,
    spans: Sequence[float],
    firsts: Sequence[float],
    lasts: Sequence[float],
    gaps: int,
) -> list[str]:
    """What the report's ``latency``, ``ttft`` and ``itl`` figures (``stats``: each the nine
    figures, or None where the report has none) say that the observer's view of its successful
    requests rules out. ``spans``: each success's span (the request seen to its end);
    ``firsts``/``lasts``: the first and last token line of each that read a token; ``gaps``:
    how many gaps between two tokens of one request those read; ``wall``: the level's."""
    latency, ttft, itl = stats.get("latency"), stats.get("ttft"), stats.get("itl")
    problems: list[str] = []
    spanned = sorted(span - TTFT_SLACK_S for span in spans)
    if latency is not None and spans:
        problems.append(_below("latency", latency, figures(spans), "the requests end"))
        problems.append(_mean_outside("latency", latency, len(spans), spanned))
        least = least_total(latency, len(spans), spanned)
        if least > wall + TTFT_SLACK_S:
            problems.append(
                f"{len(spans)} latencies, one after another at concurrency 1, that add up to at "
                f"least {least:.4f} s (each no shorter than its request's span, and its "
                f"percentiles and max as reported) in a wall of {wall:g} s"
            )
        elif latency["mean"] * len(spans) > wall + len(spans) * TTFT_SLACK_S:
            problems.append(
                f"{len(spans)} latencies of {latency['mean']:g} s on average, one after "
                f"another at concurrency 1, in a wall of {wall:g} s"
            )
    if ttft is not None and firsts:
        # the median is held with the record (exchanges._ttft), for a harness with no report too
        seen = {**figures(firsts), "p50": 0.0}
        problems.append(_below("TTFT", ttft, seen, "the first tokens' lines"))
        floors = sorted(first - TTFT_SLACK_S for first in firsts)
        problems.append(_mean_outside("TTFT", ttft, len(firsts), floors))
        if latency is not None and spans:
            problems.append(_past_latency(ttft, latency, every=len(firsts) == len(spans)))
    if (itl is not None) != (gaps > 0):
        problems.append(
            "ITL figures, and no request read two tokens"
            if itl is not None
            else f"no ITL, and the requests read {gaps} gaps between two tokens"
        )
    if itl is not None and ttft is not None and gaps > 0 and firsts:
        problems.append(_mean_outside("ITL", itl, gaps))
        if latency is not None and spans and itl["max"] > latency["max"] + TTFT_SLACK_S:
            problems.append(f"an ITL max of {itl['max']:g} s, past the latency max")
        reach = ttft["mean"] * len(firsts) + itl["mean"] * gaps
        slack = len(firsts) * TTFT_SLACK_S
        if reach + slack < math.fsum(lasts):
            problems.append(
                f"TTFTs and ITLs that reach the requests' last tokens in {reach:.4f} s in all; "
                f"the observer saw those lines at {math.fsum(lasts):.4f} s in all"
            )
        elif latency is not None and reach > latency["mean"] * len(spans) + slack:
            problems.append(
                f"TTFTs and ITLs adding up to {reach:.4f} s, past the latencies' "
                f"{latency['mean'] * len(spans):.4f} s"
            )
    return [p for p in problems if p]
