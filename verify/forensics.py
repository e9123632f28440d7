"""What ``audit show`` presents: the verdict first, then for a result that is not a valid model
decision the forensic answer (which part failed, its first evidence, what the model had done
before it, and the best and worst aggregate the run could have reached), then each gate with the
evidence entries it read, the run's timeline against its limits, the transport log summarized,
and the socket ledger's non-loopback attempts. Pure: it reads a verdict and the evidence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from bundle_schema.models import (
    EvidenceEntry,
    EvidenceRef,
    ForensicAnswer,
    GateView,
    Gx10Evidence,
    ShowReport,
    SocketLedgerEntry,
    TimelineItem,
    TransportSummary,
    Verdict,
)
from pins import PinSetSource
from verify._facts import ledger_facts, reply_facts
from verify.gx10 import Fallback, fallback, is_loopback
from verify.replies import is_completion, same_model

__all__ = ["show_report"]

_GATE_KINDS: Mapping[str, tuple[str, ...]] = {
    "model_identity": ("transport-exchange",),
    "local_endpoint": ("transport-exchange",),
    "direct_response": ("direct-probe", "transport-exchange"),
    "tool_call_protocol": ("direct-probe", "transport-exchange"),
    "upstream_checkout": ("tree", "component-result"),
    "upstream_integrity": ("spark-quality",),
    "sampling_contamination": ("spark-quality",),
    "reasoning_contamination": ("run-config", "transport-exchange"),
    "reasoning_serialization": ("run-config", "transport-exchange"),
    "transport_evidence": ("run-config", "transport-exchange"),
    "network_isolation": ("socket-ledger", "transport-exchange"),
    "hermes_time_limits": ("hermes-task",),
    "hermes_evidence": ("hermes-task",),
    "hermes_evaluator": ("hermes-task",),
    "allowed_changes": ("hermes-task",),
    "cleanup": ("run-config", "hermes-task"),
}
"""The kinds of evidence each gate reads (media type kinds; ``tree``: upstream listings)."""
_PART: Mapping[str, str] = {
    "model_identity": "identity",
    "local_endpoint": "endpoint",
    "direct_response": "runner",
    "tool_call_protocol": "runner",
    "upstream_checkout": "setup",
    "upstream_integrity": "harness",
    "reasoning_serialization": "runner",
    "transport_evidence": "observer",
    "network_isolation": "isolation",
    "hermes_time_limits": "harness",
    "hermes_evidence": "harness",
    "hermes_evaluator": "evaluator",
    "cleanup": "runner",
}


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
        by_kind.setdefault(_kind(name, entry), []).append(
            EvidenceRef(name=name, digest=entry.digest)
        )
    return tuple(
        GateView(
            id=gate.id,
            status=gate.status,
            reason=gate.reason,
            details=gate.evidence,
            evidence=tuple(
                ref for kind in _GATE_KINDS.get(gate.id, ()) for ref in by_kind.get(kind, ())
            ),
        )
        for gate in verdict.gates
    )


def _timeline(evidence: Gx10Evidence) -> tuple[TimelineItem, ...]:
    items = [
        TimelineItem(
            kind="component",
            name=name,
            status=result.status,
            started_at=result.started_at,
            ended_at=result.ended_at,
            reason=result.reason,
        )
        for name, result in sorted(
            evidence.results.items(), key=lambda kv: (kv[1].started_at or "", kv[0])
        )
    ]
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
        )
        for task in evidence.hermes_tasks or ()
    ]
    return tuple(items)


def _transport(evidence: Gx10Evidence) -> TransportSummary | None:
    if evidence.transport is None:
        return None
    exchanges = evidence.transport
    truncated = []
    for exchange in exchanges:
        body = exchange.response_body
        text = body.data if body is not None and body.encoding == "utf-8" else ""
        text += "".join(chunk.data for chunk in exchange.chunks)
        if '"finish_reason":"length"' in text.replace(" ", ""):
            truncated.append(exchange.id)
    return TransportSummary(
        requests=len(exchanges),
        statuses=dict(sorted(Counter(str(e.status or "none") for e in exchanges).items())),
        streamed_chunks=sum(len(e.chunks) for e in exchanges),
        errors=tuple(e.id for e in exchanges if e.error is not None),
        truncations=tuple(truncated),
        redirects=tuple(e.id for e in exchanges if e.redirect is not None),
        suspected_fallbacks=_suspected(evidence),
    )


def _suspected(evidence: Gx10Evidence) -> tuple[int, ...]:
    """The exchanges whose reply names another model than the runtime one (the reply itself
    or the observer's note), and the completion replies whose fingerprints differ from the
    first fingerprint of the run's completion replies (or that carry several)."""
    runtime = evidence.model.runtime_model_id
    first: str | None = None
    suspected = []
    for exchange in evidence.transport or ():
        facts = reply_facts(exchange)
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


def _non_loopback(evidence: Gx10Evidence) -> tuple[SocketLedgerEntry, ...]:
    return tuple(
        entry
        for entry in evidence.socket_ledger or ()
        if entry.family != "AF_UNIX" and not is_loopback(entry.address)
    )


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
                f"socket ledger seq {first.seq}: {first.process} (pid {first.pid}) tried "
                f"{first.address}:{first.port} ({first.outcome}), {first.t:.3f} s into its "
                "sandbox"
            ), None
        if found is not None:
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
            return f"{name} {result.status} at {result.started_at}: {result.reason}", None
    return None, None


def _model_before(evidence: Gx10Evidence, when: float | None) -> str:
    exchanges = [e for e in evidence.transport or () if when is None or e.started < when]
    answered = sum(1 for e in exchanges if e.status == 200)
    chunks = sum(len(e.chunks) for e in exchanges)
    scope = "before it" if when is not None else "in the whole run"
    return f"{len(exchanges)} exchanges {scope}, {answered} answered 200, {chunks} streamed chunks"


def _forensic(
    verdict: Verdict, evidence: Gx10Evidence, pins: PinSetSource
) -> ForensicAnswer | None:
    if verdict.result_validity == "VALID":
        return None
    if verdict.integrity.status == "failed":
        part = "integrity"
    elif verdict.result_validity == "QUARANTINED":
        part = "quarantine"
    elif verdict.result_validity == "INCOMPLETE":
        part = "incomplete"
    else:
        infra = [g for g in verdict.gates if g.status == "infra"]
        failed = [r for r in evidence.results.values() if r.status == "FAILED"]
        part = _PART.get(infra[0].id, "setup") if infra else ("harness" if failed else "setup")
    found = _substitution(evidence) if part == "isolation" else None
    first, when = _first_evidence(part, evidence, found)
    best, worst = _aggregates(verdict, evidence, pins)
    model_failures = [g.id for g in verdict.gates if g.status == "fail"]
    verdict_on_model = (
        f"the model also failed {', '.join(model_failures)}"
        if model_failures
        else "no gate found a failure of the model"
    )
    return ForensicAnswer(
        failed_part=part,
        summary=_clip(
            f"{verdict.result_validity}: the {part} failed; {verdict_on_model}"
            if found is None
            else f"{verdict.result_validity}: model substitution (fallback activity: "
            f"{_BY[found.by]}), not a socket outside the sandbox; {verdict_on_model}"
        ),
        first_evidence=None if first is None else _clip(first),
        model_before=_clip(_model_before(evidence, when)),
        best_aggregate=best,
        worst_aggregate=worst,
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
