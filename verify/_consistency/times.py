"""Times: the run's times agree with each other, with the transport log's clock and with the pinned
harness limits."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import NamedTuple

from bundle_schema.models import ComponentName, ComponentResult, Finding, Gx10Evidence
from pins import PinSetSource
from verify._consistency._common import TIME_SLACK_S, _disagrees, _stamp


def _times(
    evidence: Gx10Evidence, pins: PinSetSource, foreign: Collection[str] = ()
) -> list[Finding]:
    """The bundle's creation time reads; each component's times read (a component that ran
    has both), it starts before it ends
    and ends before the bundle was made, and its harness ran within its pinned wall (not a
    ``foreign`` harness's: ADR 0036); no two harnesses' windows overlap."""
    created = _stamp(evidence.created_at)
    findings = []
    if created is None:  # else nothing here would hold the results to it (a copy's date wins)
        findings.append(_disagrees("manifest.json", f"created_at {evidence.created_at} is no time"))
    for component, result in sorted(evidence.results.items()):
        name = f"components/{component}/result.json"
        started, ended = _stamp(result.started_at), _stamp(result.ended_at)
        upstream = pins.pins.component_upstreams.get(component)
        for field, value, read in (("started_at", result.started_at, started),
                                   ("ended_at", result.ended_at, ended)):  # fmt: skip
            if value is not None and read is None:
                findings.append(_disagrees(name, f"{field} {value} is no time"))
            elif value is None and result.status in RAN and upstream not in foreign:
                findings.append(_disagrees(name, f"{result.status}, and no {field}: it ran"))
        if started is not None and ended is not None and ended < started:
            findings.append(_disagrees(name, f"ends at {result.ended_at}, before it starts"))
        if ended is not None and created is not None and ended > created + TIME_SLACK_S:
            findings.append(
                _disagrees(
                    name,
                    f"ends at {result.ended_at}, after the bundle was made ({evidence.created_at})",
                )
            )
        harness = (
            pins.pins.harnesses.get(upstream) if upstream and upstream not in foreign else None
        )
        took = ended - started if started is not None and ended is not None else None
        # a component's gates run after its harness, each within its own wall (ADR 0022)
        gates = [pins.pins.harnesses[g].wall_s for g in pins.pins.gates_of(component)]
        wall = harness.wall_s + sum(gates) if harness is not None else 0
        if harness is not None and took is not None and took > wall + TIME_SLACK_S:
            whose = "its harness's pinned wall" + (" and its gates'" if gates else "")
            findings.append(
                _disagrees(name, f"ran {took:g} s, over {whose} of {wall:g} s, yet was not stopped")
            )
        if result.status == "FAILED" and upstream not in foreign:
            stopped = _stopped_early(result.reason or "", upstream or "", pins, took)
            if stopped is not None:
                findings.append(_disagrees(name, stopped))
    windows = _windows(evidence)
    return findings + _overlaps(windows, pins, foreign) + _on_the_log_clock(evidence, windows)


class _Window(NamedTuple):
    """A component's window in seconds since the epoch, and its result."""

    component: ComponentName
    started: float
    ended: float
    result: ComponentResult


def _windows(evidence: Gx10Evidence) -> dict[str, _Window]:
    """Each component's window, where both its times read and it ends no earlier than it
    starts, by component (in the order of the results)."""
    windows = {}
    for component, result in evidence.results.items():
        started, ended = _stamp(result.started_at), _stamp(result.ended_at)
        if started is not None and ended is not None and started <= ended:
            windows[str(component)] = _Window(component, started, ended, result)
    return windows


PREAMBLE = ("identity", "probes")
"""The observer's labels of the exchanges a run makes before any harness: the identity's
questions and the direct probes."""


def _on_the_log_clock(evidence: Gx10Evidence, windows: Mapping[str, _Window]) -> list[Finding]:
    """The windows agree with the transport log's clock: the observer times each exchange on
    one monotonic clock, so there is one offset from it to the runner's times at which every
    exchange a component's harness made starts inside that component's window, and the run's
    identity and probe exchanges start before every window. A window moved alone (the first
    harness's start moved back before the probes, to make a stop at its wall plausible) leaves
    no such offset; every time moved alike does."""
    if not windows:
        return []
    first = min(windows, key=lambda c: windows[c].started)
    low: tuple[float, str, str] = (-math.inf, "", "")
    high: tuple[float, str, str] = (math.inf, "", "")
    for exchange in evidence.transport or ():
        at = f"exchange {exchange.id} ({exchange.component}, at {exchange.started:g} s)"
        label = exchange.component or ""
        window = windows.get(label)
        if window is not None:
            if window.started - exchange.started - TIME_SLACK_S > low[0]:
                low = (window.started - exchange.started - TIME_SLACK_S, at, label)
            if window.ended - exchange.started + TIME_SLACK_S < high[0]:
                high = (window.ended - exchange.started + TIME_SLACK_S, at, label)
        elif label in PREAMBLE:
            bound = windows[first].started - exchange.started + TIME_SLACK_S
            if bound < high[0]:
                high = (bound, f"{at}, before {first}'s start", first)
    if low[0] <= high[0]:
        return []
    # a window moved earlier is what lowers the bound its own exchanges (or the preamble) set
    moved = windows[high[2]].result
    return [
        _disagrees(
            f"components/{high[2]}/result.json",
            f"ran from {moved.started_at} to {moved.ended_at}, which the observer's clock "
            f"cannot hold with the other windows: {low[1]} and {high[1]} cannot both start "
            "inside their components' windows on one clock",
        )
    ]


def _overlaps(
    windows: Mapping[str, _Window], pins: PinSetSource, foreign: Collection[str]
) -> list[Finding]:
    """No two harnesses ran at once: the runner runs one at a time, and the transport log
    names the component of each exchange by the harness running then. Components of one
    harness's run share its start (a component's gates extend its end only: its other
    components, whose exchanges the log names by the first, have no window of their own to
    move); so two windows overlap only from one start, of one upstream (of a ``foreign``
    harness, ADR 0036, the pin set cannot tell the runs apart: any). An overlap up to
    :data:`TIME_SLACK_S` is whole-second stamps."""
    upstreams = pins.pins.component_upstreams
    spans = [
        (c, w.started, w.ended, upstreams.get(w.component)) for c, w in sorted(windows.items())
    ]
    findings = []
    for number, (component, started, ended, upstream) in enumerate(spans):
        pinned = upstream is not None and upstream not in foreign
        for other, other_started, other_ended, other_upstream in spans[number + 1 :]:
            first, second = sorted([(started, component), (other_started, other)])
            early, later = windows[first[1]].result, windows[second[1]].result
            if pinned and upstream == other_upstream and started != other_started:
                findings.append(
                    _disagrees(
                        f"components/{second[1]}/result.json",
                        f"starts at {later.started_at}, and {first[1]} at {early.started_at}: "
                        f"one run of {upstream} gives the components it serves its one start",
                    )
                )
                continue
            if min(ended, other_ended) - max(started, other_started) <= TIME_SLACK_S:
                continue
            one_run = upstream == other_upstream or upstream in foreign or other_upstream in foreign
            if one_run and started == other_started:
                continue
            findings.append(
                _disagrees(
                    f"components/{second[1]}/result.json",
                    f"ran from {later.started_at} to {later.ended_at}, while {first[1]} ran (from "
                    f"{early.started_at} to {early.ended_at}), of another harness: the runner "
                    "runs one harness at a time",
                )
            )
    return findings


RAN = ("COMPLETED", "PARTIAL", "QUARANTINED")
"""The statuses of a component whose harness ran: each has the window the runner stamped."""

LIMIT_STOP = re.compile(r"\b(inactivity|wall) limit exceeded\b")
"""A component's reason when the sandbox stopped a harness of it at a limit (the runner's
words: "<upstream> wall limit exceeded", "its gate <gate> failed: <gate> wall limit
exceeded"), wherever in the reason they are."""
_GATE_FAILED = re.compile(r"^its gate (\S+) failed: ")


def _stopped_early(
    reason: str, upstream: str, pins: PinSetSource, took: float | None
) -> str | None:
    """Why a FAILED result's stop at a limit cannot be: the sandbox stops a harness only once
    the limit has passed, and the result's times (which must read) enclose its run, and its
    gates' after it. The limit is the gate's when the reason names a failed gate."""
    stop = LIMIT_STOP.search(reason)
    if stop is None:
        return None
    gate = _GATE_FAILED.match(reason)
    stopped = gate.group(1) if gate is not None else upstream
    harness = pins.pins.harnesses.get(stopped)
    if harness is None:
        return f"says a harness was stopped at a limit, and {stopped!r} is no pinned harness"
    kind = stop.group(1)
    limit = harness.wall_s if kind == "wall" else harness.inactivity_s
    if took is None:
        return f"says {stopped} was stopped at its {kind} limit, and its times do not read"
    if took < limit - TIME_SLACK_S:
        return (
            f"says {stopped} was stopped at its {kind} limit of {limit:g} s, yet the component "
            f"ran {took:g} s"
        )
    return None
