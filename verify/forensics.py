"""What ``audit show`` presents: the verdict first, then for a result that is not a valid model
decision the forensic answer (which part failed, its first evidence, what the model had done
before it, and the best and worst aggregate the run could have reached), then each gate with the
evidence entries it read, the run's timeline against its limits (with, for a task or component
that ran out of time, its exchanges and whether the model or the agent was the slow one), the
transport log summarized, and the socket ledger's non-loopback attempts. Pure: it reads a
verdict and the evidence.

A bundle that fails integrity is answered with that first: its first finding is the first
evidence and no aggregate is computed from evidence that is not what was recorded. A fallback
or model substitution found in the replies (a clean ledger) is its own part, ``substitution``,
with the exchanges another model or engine answered and which one (docs/review.md)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from bundle_schema.models import (
    ComponentResult,
    EvidenceEntry,
    EvidenceRef,
    ExchangeIds,
    ForensicAnswer,
    GateView,
    Gx10Evidence,
    HermesTask,
    ShowReport,
    SocketLedgerEntry,
    Substitution,
    TimedOut,
    TimelineItem,
    TransportExchange,
    TransportSummary,
    Verdict,
)
from bundle_schema.roles import place
from pins import PinSetSource
from verify._consistency import LIMIT_STOP
from verify._facts import ReplyFacts, ledger_facts, outside_attempt, reply_facts
from verify.gx10 import GATES, Fallback, Gate, fallback, off_sandbox
from verify.replies import harness_went, is_completion, same_model

__all__ = ["show_report"]

_GATES: Mapping[str, Gate] = {gate.id: gate for gate in GATES}
"""Each gate by id: the kinds of evidence it reads (``tree``: upstream listings) and the part
its ``infra`` result blames, as the gate declares them."""


def _gate(gate_id: str) -> Gate:
    """The gate a verdict names (a verdict of this verifier names no other)."""
    gate = _GATES.get(gate_id)
    if gate is None:
        raise ValueError(f"the verdict names gate {gate_id!r}, which this verifier does not have")
    return gate


_BY: Mapping[str, str] = {
    "model": "a reply names another model",
    "fingerprint": "completion replies carry more than one system_fingerprint",
}
"""How a substitution showed, for the forensic summary."""

_TEXT_MAX = 4096
"""The longest text a report field holds (the schema's ``Text``)."""


def _clip(text: str) -> str:
    """Text built from evidence, cut to fit a report field: a record's own 4096-character
    reason, with the words around it, must not make the report invalid."""
    return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


def _kind(name: str, entry: EvidenceEntry) -> str:
    if name.startswith("upstreams/") and name.endswith("/tree.txt"):
        return "tree"
    media = entry.media_type
    return media.removeprefix("application/vnd.evidence-audit.").split("+")[0]


def _gates(verdict: Verdict, entries: Mapping[str, EvidenceEntry]) -> tuple[GateView, ...]:
    by_kind: dict[str, list[EvidenceRef]] = {}
    for name, entry in sorted(entries.items()):
        placed = place(name, entry.media_type)
        if placed.role is None or placed.problem is not None:
            continue  # off its place: no gate read it (a finding, or unread)
        by_kind.setdefault(_kind(name, entry), []).append(
            EvidenceRef(name=name, digest=entry.digest)
        )
    return tuple(
        GateView(
            id=gate.id,
            status=gate.status,
            reason=gate.reason,
            details=gate.evidence,
            evidence=tuple(ref for kind in _gate(gate.id).reads for ref in by_kind.get(kind, ())),
        )
        for gate in verdict.gates
    )


def _timeline(evidence: Gx10Evidence) -> tuple[TimelineItem, ...]:
    exchanges = evidence.transport or ()
    items = [
        TimelineItem(
            kind="component",
            name=name,
            status=result.status,
            started_at=result.started_at,
            ended_at=result.ended_at,
            reason=result.reason,
            timed_out=_component_timed_out(name, result, evidence),
        )
        for name, result in sorted(
            evidence.results.items(), key=lambda kv: (kv[1].started_at or "", kv[0])
        )
    ]
    attributed = any(task.exchanges for task in evidence.hermes_tasks or ())
    hermes = [e for e in exchanges if e.component == "hermes"]
    by_id = {e.id: e for e in exchanges}
    items += [
        TimelineItem(
            kind="task",
            name=task.task,
            status=task.outcome,
            wall_s=task.wall_s,
            wall_limit_s=task.wall_limit_s,
            inactivity_s=task.max_inactivity_s,
            inactivity_limit_s=task.inactivity_limit_s,
            cleanup=task.cleanup,
            timed_out=(
                _timed_out(
                    "task",
                    [by_id[i] for i in task.exchanges if i in by_id],
                    task.wall_s,
                    _silence(task),
                    None if attributed or not hermes else len(hermes),
                )
                if _ran_out_of_time(task)
                else None
            ),
        )
        for task in evidence.hermes_tasks or ()
    ]
    return tuple(items)


_FIRST = 5
"""How many exchange ids a report lists; the rest are counted."""
_SLOW_SHARE = 0.5
"""A stopped item whose exchanges were open at least this share of its wall waited on the model."""


def _ids(ids: Sequence[int]) -> ExchangeIds:
    return ExchangeIds(count=len(ids), first=tuple(ids[:_FIRST]))


def _ran_out_of_time(task: HermesTask) -> bool:
    """A task stopped at a limit, or past one (the time-limit gate's failures)."""
    silent, wall = task.max_inactivity_s, task.wall_s
    return (
        task.outcome == "TIMEOUT"
        or (silent is not None and silent > task.inactivity_limit_s)
        or (wall is not None and wall > task.wall_limit_s)
    )


def _silence(task: HermesTask) -> str:
    """The limit a task ran out of, in its own record's numbers."""
    if task.wall_s is not None and task.wall_s > task.wall_limit_s:
        return f"it ran {_s(task.wall_s)} (wall limit {_s(task.wall_limit_s)})"
    if task.max_inactivity_s is None:
        return f"its silence was not recorded (limit {_s(task.inactivity_limit_s)})"
    return f"it was silent {_s(task.max_inactivity_s)} (limit {_s(task.inactivity_limit_s)})"


def _s(seconds: float) -> str:
    return f"{round(seconds, 3):g} s"


def _wall(result: ComponentResult) -> float | None:
    """A component's wall from its timestamps, when both name a calendar time."""
    try:
        began = dt.datetime.fromisoformat(result.started_at or "")
        ended = dt.datetime.fromisoformat(result.ended_at or "")
    except ValueError:
        return None
    seconds = (ended - began).total_seconds()
    return float(seconds) if seconds >= 0 else None


def _component_timed_out(
    name: str, result: ComponentResult, evidence: Gx10Evidence
) -> TimedOut | None:
    """For a component whose harness the sandbox stopped at a limit: the exchanges of that
    harness run (every component it served fails with the same reason and start)."""
    limit = LIMIT_STOP.search(result.reason or "")
    if result.status != "FAILED" or limit is None:
        return None
    served = {
        other
        for other, r in evidence.results.items()
        if (r.reason, r.started_at) == (result.reason, result.started_at)
    } | {name}
    exchanges = [e for e in evidence.transport or () if e.component in served]
    stopped = f"the sandbox stopped it at its {limit.group(1)} limit"
    return _timed_out("component", exchanges, _wall(result), stopped, None)


def _cut(exchange: TransportExchange) -> bool:
    """Still streaming when it stopped: never ended, or cut off mid-stream."""
    return exchange.ended is None or (exchange.error is not None and bool(exchange.chunks))


def _end(exchange: TransportExchange) -> float:
    """When an exchange was last seen: its end, else its last chunk, else its start."""
    return exchange.ended if exchange.ended is not None else _last_bytes(exchange)


def _open_for(exchanges: Sequence[TransportExchange]) -> float:
    """Seconds during which at least one of the exchanges was open (their spans' union)."""
    total, reach = 0.0, None
    for began, ended in sorted((e.started, max(e.started, _end(e))) for e in exchanges):
        if reach is None or began > reach:
            total += ended - began
            reach = ended
        elif ended > reach:
            total += ended - reach
            reach = ended
    return round(total, 3)


def _timed_out(
    kind: str,
    exchanges: Sequence[TransportExchange],
    wall: float | None,
    stopped: str,
    unattributed: int | None,
) -> TimedOut:
    """Slow model or hung agent: an exchange still streaming when the item stopped (any of
    them, not only the last to start: one never answered stays open while others come and
    go), or its exchanges open for at least half its wall, is the model; otherwise the agent,
    with how long no exchange was open. ``unattributed``: the run ties no exchange to a task,
    though its Hermes component made this many (then it cannot be told)."""
    ids = [e.id for e in exchanges]
    last = max(exchanges, key=lambda e: (e.started, e.id), default=None)
    still = max((e for e in exchanges if _cut(e)), key=lambda e: (e.started, e.id), default=None)
    model = _open_for(exchanges)
    wall_s = None if wall is None else round(wall, 3)
    of_wall = f" of its {_s(wall_s)} wall" if wall_s is not None else ""
    cause: Literal["slow model", "hung agent", "unknown"]
    if last is None:
        cause = "hung agent" if unattributed is None else "unknown"
        words = (
            f"hung agent: no exchange at all{of_wall.replace(' of its', ' in its', 1)}"
            if unattributed is None
            else f"unknown: the run ties none of its Hermes component's {unattributed} "
            "exchanges to a task, so what this task waited on cannot be told"
        )
    else:
        more = f" and {len(ids) - _FIRST} more" if len(ids) > _FIRST else ""
        shown = ", ".join(str(i) for i in ids[:_FIRST]) + more
        many = len(ids) != 1
        made = f"its {len(ids)} exchange{'s' if many else ''} (id{'s' if many else ''} {shown})"
        were = "were" if many else "was"
        if still is not None:
            cause = "slow model"
            how = f" ({still.error})" if still.error else ", never ended"
            seen = f", its last bytes at {_s(_last_bytes(still))}" if still.chunks else ""
            words = (
                f"slow model: exchange {still.id} was still streaming when the {kind} stopped"
                f"{how}; it began at {_s(still.started)}{seen} on the observer's clock; {made} "
                f"{were} open {_s(model)}{of_wall}"
            )
        else:
            waited = wall_s is not None and wall_s > 0 and model >= _SLOW_SHARE * wall_s
            cause = "slow model" if waited else "hung agent"
            idle = (
                f"; no exchange was open for {_s(max(0.0, wall_s - model))} of it"
                if wall_s is not None and not waited
                else ""
            )
            words = (
                f"{cause}: no exchange was open when the {kind} stopped; {made} {were} open "
                f"{_s(model)}{of_wall}{idle}; the last (exchange {last.id}) ended at "
                f"{_s(_end(last))} on the observer's clock"
            )
    return TimedOut(
        exchanges=_ids(ids),
        last_exchange=None if last is None else last.id,
        last_ended=None if last is None or last.ended is None else last.ended,
        still_open=still is not None,
        model_s=model,
        wall_s=wall_s,
        cause=cause,
        explanation=_clip(f"{words}; {stopped}"),
    )


def _last_bytes(exchange: TransportExchange) -> float:
    return exchange.started + (exchange.chunks[-1].t if exchange.chunks else 0.0)


def _transport(evidence: Gx10Evidence) -> TransportSummary | None:
    if evidence.transport is None:
        return None
    exchanges = evidence.transport
    facts = [reply_facts(e) for e in exchanges]
    return TransportSummary(
        requests=len(exchanges),
        statuses=dict(sorted(Counter(str(e.status or "none") for e in exchanges).items())),
        streamed_chunks=sum(len(e.chunks) for e in exchanges),
        errors=tuple(e.id for e in exchanges if e.error is not None),
        abandoned=tuple(e.id for e in exchanges if harness_went(e)),
        truncations=tuple(e.id for e, f in zip(exchanges, facts, strict=True) if f.truncated),
        redirects=tuple(e.id for e in exchanges if e.redirect is not None),
        suspected_fallbacks=_suspected(evidence, facts),
    )


def _suspected(evidence: Gx10Evidence, replies: Sequence[ReplyFacts]) -> tuple[int, ...]:
    """The exchanges whose reply names another model than the runtime one (the reply itself
    or the observer's note), and the completion replies whose fingerprints differ from the
    first fingerprint of the run's completion replies (or that carry several); ``replies`` the
    facts of the transport log's exchanges, in its order."""
    runtime = evidence.model.runtime_model_id
    first: str | None = None
    suspected = []
    for exchange, facts in zip(evidence.transport or (), replies, strict=True):
        noted = exchange.response_model
        if any(not same_model(m, runtime) for m in facts.models) or (
            noted is not None and not same_model(noted, runtime)
        ):
            suspected.append(exchange.id)
        elif is_completion(exchange) and facts.fingerprints:
            first = first or facts.fingerprints[0]
            if len(facts.fingerprints) > 1 or facts.fingerprints[0] != first:
                suspected.append(exchange.id)
    return tuple(suspected)


def _substitution(evidence: Gx10Evidence) -> Fallback | None:
    """The fallback activity the network_isolation gate failed on, when it failed on that
    (a clean ledger) rather than on a socket."""
    ledger = evidence.socket_ledger
    if ledger is None or ledger_facts(ledger).first_event is not None:
        return None
    return fallback(evidence.transport or (), evidence.model.runtime_model_id)


_NAME_MAX = 256
"""The longest model name or fingerprint a report field holds."""


def _named(text: str) -> str:
    return text if len(text) <= _NAME_MAX else text[: _NAME_MAX - 1] + "…"


def _substituted(evidence: Gx10Evidence, found: Fallback) -> Substitution:
    """Which exchanges another model or engine answered, and which one: by ``model``, every
    reply naming another model than the runtime one (the first such model named); by
    ``fingerprint``, every completion reply carrying another fingerprint than the run's first
    (or several)."""
    runtime = evidence.model.runtime_model_id
    answered: list[int] = []
    other: str | None = None
    expected = runtime if found.by == "model" else found.fingerprints[0]
    for exchange in evidence.transport or ():
        facts = reply_facts(exchange)
        if found.by == "model":
            noted = exchange.response_model
            named = [m for m in facts.models if not same_model(m, runtime)]
            named += [noted] if noted is not None and not same_model(noted, runtime) else []
            if named:
                answered.append(exchange.id)
                other = other or named[0]
        elif is_completion(exchange) and facts.fingerprints:
            differing = [f for f in facts.fingerprints if f != expected]
            if differing:
                answered.append(exchange.id)
                other = other or differing[0]
    return Substitution(
        by=found.by,
        exchanges=_ids(answered or found.exchanges),
        answered_by=_named(other or "-"),
        expected=_named(expected),
    )


def _non_loopback(evidence: Gx10Evidence) -> tuple[SocketLedgerEntry, ...]:
    return tuple(entry for entry in evidence.socket_ledger or () if off_sandbox(entry))


def _aggregates(
    verdict: Verdict, evidence: Gx10Evidence, pins: PinSetSource
) -> tuple[float | None, float | None]:
    profile = pins.pins.profiles.get(evidence.profile)
    if profile is None:
        return None, None
    weights = pins.pins.weights
    scores = verdict.scores.model_dump()
    total = sum(weights[c] for c in profile.components)
    if not total:
        return None, None

    def aggregate(missing: float) -> float:
        return (
            sum(
                (scores[c] if scores[c] is not None else missing) * weights[c]
                for c in profile.components
            )
            / total
        )

    return aggregate(100.0), aggregate(0.0)


def _first_evidence(
    part: str, evidence: Gx10Evidence, found: Fallback | None
) -> tuple[str | None, float | None]:
    """The first evidence of the failure, and its time on the observer's clock if it has one."""
    exchanges = evidence.transport or ()
    if part == "isolation":
        outside = _non_loopback(evidence)
        if outside:
            first = outside[0]
            return (
                f"socket ledger seq {first.seq}: {first.process} (pid {first.pid}) "
                f"{outside_attempt(first)}, {first.t:.3f} s into its sandbox"
            ), None
    if part == "substitution" and found is not None:
        started = {e.id: e.started for e in exchanges}
        when = started.get(found.exchanges[-1])
        at = f" at {when:.3f} s" if when is not None else ""
        return f"model substitution{at}: {found.reason}", when
    if part == "endpoint":
        for exchange in exchanges:
            if exchange.redirect is not None:
                return (
                    f"exchange {exchange.id} redirected ({exchange.status}) to "
                    f"{exchange.redirect} at {exchange.started:.3f} s"
                ), exchange.started
    for name, result in sorted(evidence.results.items()):
        if result.status in ("FAILED", "QUARANTINED"):
            at = f" at {result.started_at}" if result.started_at is not None else ""
            return f"{name} {result.status}{at}: {result.reason}", None
    return None, None


def _model_before(evidence: Gx10Evidence, when: float | None) -> str:
    exchanges = [e for e in evidence.transport or () if when is None or e.started < when]
    answered = sum(1 for e in exchanges if e.status == 200)
    chunks = sum(len(e.chunks) for e in exchanges)
    scope = "before it" if when is not None else "in the whole run"
    return f"{len(exchanges)} exchanges {scope}, {answered} answered 200, {chunks} streamed chunks"


def _integrity(verdict: Verdict, evidence: Gx10Evidence) -> ForensicAnswer:
    """A bundle that fails integrity: that leads, with its first finding; nothing is computed
    from evidence that is not what was recorded (no aggregate)."""
    findings = verdict.integrity.findings
    first = findings[0] if findings else None
    count = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
    before = (
        _model_before(evidence, None)
        if evidence.transport is not None
        else "not read: the transport log is not intact"
    )
    return ForensicAnswer(
        failed_part="integrity",
        summary=_clip(
            f"{verdict.result_validity}: integrity failed ({count}): the bundle is not what "
            "was recorded, so no verdict on the model stands and no aggregate is computed"
        ),
        first_evidence=None if first is None else _clip(f"{first.code}: {first.message}"),
        model_before=_clip(before),
        best_aggregate=None,
        worst_aggregate=None,
    )


def _forensic(
    verdict: Verdict, evidence: Gx10Evidence, pins: PinSetSource
) -> ForensicAnswer | None:
    if verdict.integrity.findings or verdict.integrity.status == "failed":
        return _integrity(verdict, evidence)
    if verdict.result_validity == "VALID":
        return None
    if verdict.result_validity == "QUARANTINED":
        part = "quarantine"
    elif verdict.result_validity == "INCOMPLETE":
        part = "incomplete"
    else:
        infra = [g for g in verdict.gates if g.status == "infra"]
        failed = [r for r in evidence.results.values() if r.status == "FAILED"]
        part = _gate(infra[0].id).part if infra else ("harness" if failed else "setup")
    isolation = any(g.status == "infra" and _gate(g.id).part == "isolation" for g in verdict.gates)
    found = _substitution(evidence) if isolation else None  # first or not: it is named
    if found is not None and part == "isolation":
        part = "substitution"  # the replies show it, and no socket left the sandbox
    first, when = _first_evidence(part, evidence, found)
    best, worst = _aggregates(verdict, evidence, pins)
    model_failures = [g.id for g in verdict.gates if g.status == "fail"]
    verdict_on_model = (
        f"the model also failed {', '.join(model_failures)}"
        if model_failures
        else "no gate found a failure of the model"
    )
    substitution = None if found is None else _substituted(evidence, found)
    if substitution is None:
        summary = f"{verdict.result_validity}: the {part} failed; {verdict_on_model}"
    else:
        answered = substitution.exchanges
        before = "" if part == "substitution" else f"the {part} failed, and "
        summary = (
            f"{verdict.result_validity}: {before}model substitution (fallback activity: "
            f"{_BY[substitution.by]}), not a socket outside the sandbox: {answered.count} "
            f"exchange{'s' if answered.count != 1 else ''} answered by "
            f"{substitution.answered_by!a}, not {substitution.expected!a}; "
            f"{verdict_on_model}"
        )
    return ForensicAnswer(
        failed_part=part,
        summary=_clip(summary),
        first_evidence=None if first is None else _clip(first),
        model_before=_clip(_model_before(evidence, when)),
        best_aggregate=best,
        worst_aggregate=worst,
        substitution=substitution,
    )


def show_report(
    verdict: Verdict,
    evidence: Gx10Evidence,
    entries: Mapping[str, EvidenceEntry],
    pins: PinSetSource,
) -> ShowReport:
    """Everything a reviewer needs about one verified bundle, as one document."""
    return ShowReport(
        schema_version=1,
        verdict=verdict,
        forensic=_forensic(verdict, evidence, pins),
        gates=_gates(verdict, entries),
        timeline=_timeline(evidence),
        transport=_transport(evidence),
        socket_attempts=len(evidence.socket_ledger or ()),
        non_loopback=_non_loopback(evidence),
        upstreams=evidence.upstreams,
        model=evidence.model,
    )
