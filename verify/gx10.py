"""The gx10-qualification replay (seed 000): hard gates, component scores, the verdict axes,
rankability, and the comparison with the runner's claims, all from raw evidence.

Pure: :func:`replay` takes a :class:`~bundle_schema.models.Gx10Evidence` (assembled from a bundle
by the shell, or read from one file by ``audit score gx10``) and a trusted pin set, and returns a
:class:`~bundle_schema.models.Gx10Replay`. Every gate is a small function of the evidence; a
failure is the model's or the deployment's (``fail``) or the infrastructure's (``infra``) exactly
as the seed classifies it. The claims are read only at the end, to be compared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.models import (
    BfclScore,
    BfclShard,
    ClaimsCheck,
    ComponentName,
    DirectProbe,
    GateResult,
    Gx10Diagnostics,
    Gx10Evidence,
    Gx10Replay,
    Gx10Scores,
    HermesTask,
    HermesTaskMetrics,
    PinSetRef,
    ProfileDecision,
    QualificationOutcome,
    ResultValidity,
    SupplementaryMetrics,
    TaskTallies,
    TransportExchange,
)
from bundle_schema.roles import REFERENCE_HEADER
from pins import COMPONENTS, PinSetSource
from verify._consistency import normal_path
from verify._facts import (
    LedgerFacts,
    ReplyFacts,
    is_loopback,
    ledger_facts,
    reply_facts,
    request_facts,
)
from verify.harness_outputs import gate_record
from verify.replies import (
    asks_for_reasoning,
    body_json,
    exchange_failed,
    first_tool_call,
    is_completion,
    read_reply,
    same_model,
)
from verify.scorers.bfcl import LoadedShard, ShardRefused, score_shards

__all__ = [
    "GATES",
    "GX10_VERSION",
    "Fallback",
    "fallback",
    "first_tool_call",
    "is_loopback",
    "path_allowed",
    "performance_score",
    "read_reply",
    "replay",
]

GX10_VERSION = "1"
"""The version of this replay; it changes whenever a decision it makes could change."""

CLAIM_TOLERANCE = 1e-6
"""Claimed scores agree with the replay within this (absolute): they are printed decimals."""

Status = Literal["pass", "fail", "infra", "not_selected"]
SPARK: tuple[ComponentName, ...] = ("coding", "reliability")
EVIDENCE_KINDS = ("process", "checkpoint", "model_response", "task_state", "evaluator")


# --- helpers ----------------------------------------------------------------------------------


def _text(text: str, limit: int = 4096) -> str:
    """Text from a bundle made fit for a verdict: lone surrogates escaped, cut to ``limit``."""
    clean = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _gate(gate_id: str, status: Status, reason: str, *evidence: str) -> GateResult:
    return GateResult(
        id=gate_id,
        status=status,
        reason=_text(reason),
        evidence=tuple(_text(e, 512) for e in evidence),
    )


def _wildcard(
    pattern: Sequence[Any], items: Sequence[Any], star: Any, one: bool, same: Any
) -> bool:
    """Whether ``items`` match ``pattern``, where ``star`` matches any run of items (at least
    one when ``one``) and ``same(p, i)`` matches one item: the two-pointer wildcard match, which
    resumes only from the last star, so its time is O(len(pattern) * len(items)) whatever the
    pattern (no backtracking regular expression on a pattern the bundle supplies)."""
    need = 1 if one else 0
    p = i = 0
    star_p, star_i = -1, 0  # the last star, and where the items after its match begin
    while i < len(items):
        if p < len(pattern) and pattern[p] == star:
            star_p, star_i = p, i + need
            if star_i > len(items):
                return False
            p, i = p + 1, star_i
        elif p < len(pattern) and same(pattern[p], items[i]):
            p, i = p + 1, i + 1
        elif star_p >= 0 and star_i < len(items):
            star_i += 1
            p, i = star_p + 1, star_i
        else:
            return False
    rest = pattern[p:]
    return all(x == star for x in rest) and (not one or not rest)


def _segment_matches(pattern: str, segment: str) -> bool:
    """One path segment against a pattern segment: ``*`` any run of characters, ``?`` one."""
    return _wildcard(pattern.replace("**", "*"), segment, "*", False, lambda p, c: p in ("?", c))


def path_allowed(pattern: str, path: str) -> bool:
    """Whether a changed path is inside a frozen allowed-change pattern, segment by segment:
    a ``**`` segment is one or more whole segments, ``*`` and ``?`` stay within a segment. Both
    are normalised first; a path or pattern that leaves the workspace matches nothing."""
    norm_pattern, norm_path = normal_path(pattern), normal_path(path)
    if norm_pattern is None or norm_path is None:
        return False
    return _wildcard(norm_pattern.split("/"), norm_path.split("/"), "**", True, _segment_matches)


@dataclass(frozen=True)
class _Run:
    """What the gates read: the evidence, the trusted pins and the selected components."""

    evidence: Gx10Evidence
    pins: PinSetSource
    selected: tuple[ComponentName, ...]
    given_ledger: LedgerFacts | None = field(default=None, compare=False, repr=False)
    _replies: dict[int, ReplyFacts] = field(default_factory=dict, compare=False, repr=False)

    @property
    def exchanges(self) -> dict[int, TransportExchange]:
        return {e.id: e for e in self.evidence.transport or ()}

    def reply(self, exchange: TransportExchange) -> ReplyFacts:
        """What an exchange's reply held (its body and stream read once per run)."""
        key = id(exchange)
        if key not in self._replies:
            self._replies[key] = reply_facts(exchange)
        return self._replies[key]

    def ledger(self) -> LedgerFacts | None:
        """The socket ledger's facts (given by a bounded reader, or read from the evidence)."""
        if self.evidence.socket_ledger is None:
            return None
        if self.given_ledger is not None:
            return self.given_ledger
        return ledger_facts(self.evidence.socket_ledger)

    def has(self, *components: ComponentName) -> bool:
        return any(c in self.selected for c in components)


# --- run-level gates --------------------------------------------------------------------------


def model_identity(run: _Run) -> GateResult:
    """Exact runtime model and immutable digest resolution (an invalid identity is infra)."""
    model = run.evidence.model
    listings = [
        e for e in run.evidence.transport or () if e.method == "GET" and e.path == "/v1/models"
    ]
    if not listings:
        return _gate("model_identity", "infra", "the endpoint's model list was not recorded")
    served: set[str] = set()
    for exchange in listings:
        body = body_json(exchange.response_body)
        data = body.get("data") if isinstance(body, dict) else None
        items = data if isinstance(data, list) else ()
        served |= {str(m.get("id")) for m in items if isinstance(m, dict)}
    evidence = f"transport exchange {listings[0].id}"
    if not any(same_model(s, model.runtime_model_id) for s in served):  # a path: its file name
        return _gate(
            "model_identity",
            "infra",
            f"the endpoint does not serve {model.runtime_model_id!r} (it lists "
            f"{', '.join(sorted(str(s) for s in served)) or 'nothing'})",
            evidence,
        )
    return _gate(
        "model_identity",
        "pass",
        f"{model.runtime_model_id} resolved, digest {model.digest} ({model.digest_source})",
        evidence,
    )


def local_endpoint(run: _Run) -> GateResult:
    """Local endpoint and no-redirect policy (a breach is infrastructure: setup/isolation)."""
    endpoint = run.evidence.model.endpoint
    if endpoint is None:
        return _gate("local_endpoint", "infra", "the endpoint URL was not recorded")
    host = urlsplit(endpoint).hostname or ""
    if not is_loopback(host):
        return _gate("local_endpoint", "infra", f"endpoint {endpoint} is not on loopback")
    for exchange in run.evidence.transport or ():
        if exchange.redirect is not None or (exchange.status or 0) in range(300, 400):
            return _gate(
                "local_endpoint",
                "infra",
                f"exchange {exchange.id} was redirected ({exchange.status}); redirects are "
                "never followed",
                f"transport exchange {exchange.id}",
            )
    return _gate("local_endpoint", "pass", f"{endpoint} is loopback; no redirect")


def transport_evidence(run: _Run) -> GateResult:  # noqa: PLR0911
    """Trustworthy model-transport evidence: a complete observer log."""
    config, transport = run.evidence.config, run.evidence.transport
    if transport is None:
        return _gate("transport_evidence", "infra", "no transport log: the observer is missing")
    if config is None:
        return _gate("transport_evidence", "infra", "no run configuration: no observer record")
    observer = config.observer
    if observer.status != "complete":
        return _gate(
            "transport_evidence",
            "infra",
            f"the observer failed: {observer.reason or 'no reason recorded'}",
        )
    if observer.exchanges != len(transport):
        return _gate(
            "transport_evidence",
            "infra",
            f"the observer wrote {observer.exchanges} exchanges; the log holds {len(transport)}",
        )
    ids = [e.id for e in transport]
    if len(set(ids)) != len(ids):
        return _gate("transport_evidence", "infra", "the transport log repeats an exchange id")
    problem = _reference_problem(run, set(ids))
    if problem is not None:
        return _gate("transport_evidence", "infra", problem)
    return _gate("transport_evidence", "pass", f"{len(transport)} exchanges, observer complete")


def _reference_problem(run: _Run, ids: set[int]) -> str | None:  # noqa: PLR0911, PLR0912
    """Every exchange of the run accounted for: a record that names an exchange the log does
    not hold, two records that name one exchange, a request whose reference header names
    another record than the one that claims it, or an exchange no record or selected component
    accounts for (an orphaned exchange: a retried probe, a completion outside every component)."""
    evidence = run.evidence
    named: dict[int, str] = {}
    references = [(f"{p.kind.replace('_', ' ')} probe", p.exchange) for p in evidence.probes]
    references += [(f"task {t.task}", e) for t in evidence.hermes_tasks or () for e in t.exchanges]
    for record, exchange in references:
        if exchange not in ids:
            return f"{record} refers to exchange {exchange}, which the log does not hold"
        if exchange in named:
            return f"exchange {exchange} is claimed by both {named[exchange]} and {record}"
        named[exchange] = record
    for logged in evidence.transport or ():
        component, where = logged.component, f"exchange {logged.id}"
        ref = logged.request_headers.get(REFERENCE_HEADER)
        if ref is not None and ref.startswith("hermes/"):
            claimed = named.get(logged.id)
            if claimed != f"task {ref[7:]}":
                return (f"{where} was sent for {ref} but is claimed by "
                        f"{claimed or 'no record'}")  # fmt: skip
        if component is None:
            return f"{where} belongs to no component: an orphaned exchange"
        if component == "identity":
            if is_completion(logged):
                return f"{where} is a completion made while resolving the identity: orphaned"
        elif component == "probes":
            if logged.id not in named:
                return f"{where} of the probes is named by no probe record: a retried probe"
        elif component not in run.selected:
            return f"{where} belongs to {component!r}, not a selected component: orphaned"
        elif component == "hermes" and is_completion(logged) and logged.id not in named:
            return f"{where} of hermes is named by no task record: an orphaned exchange"
    return None


def network_isolation(run: _Run) -> GateResult:
    """No non-local socket or auxiliary provider/fallback attempt (isolation: infrastructure)."""
    ledger = run.ledger()
    if ledger is None:
        return _gate("network_isolation", "infra", "no socket ledger: isolation is unproven")
    if ledger.first_event is not None:  # the first entry out of sequence or off loopback
        expected, entry = ledger.first_event
        if entry.seq != expected:
            return _gate("network_isolation", "infra",
                         f"the socket ledger skips from seq {expected - 1} to {entry.seq}: an "
                         "attempt is missing, isolation is unproven")  # fmt: skip
        if entry.family != "AF_UNIX" and not is_loopback(entry.address):
            return _gate(
                "network_isolation",
                "infra",
                f"{entry.process} (pid {entry.pid}) tried {entry.address}:{entry.port} "
                f"({entry.outcome})",
                f"socket ledger seq {entry.seq}",
            )
    found = fallback(run.evidence.transport or (), run.evidence.model.runtime_model_id, run.reply)
    if found is not None:
        return _gate(
            "network_isolation",
            "infra",
            found.reason,
            *(f"transport exchange {e}" for e in found.exchanges),
        )
    reason = f"{ledger.count} connect() attempts, all loopback"
    single = _fingerprinted(run.evidence.transport or (), run.reply)
    if single:
        reason += f"; every fingerprinted completion reply carries {single[0][1]!r}"
    return _gate("network_isolation", "pass", reason)


@dataclass(frozen=True)
class Fallback:
    """The first sign that a reply came from another model or engine than the runtime one:
    a reply naming another model, or completion replies carrying more than one distinct
    ``system_fingerprint`` (a model substitution, whatever ``model`` the replies echo)."""

    by: Literal["model", "fingerprint"]
    exchanges: tuple[int, ...]
    """The exchanges that show it: the one naming another model; for fingerprints the first
    exchange of the first fingerprint and the first of another (or one exchange carrying two)."""
    reason: str
    fingerprints: tuple[str, ...] = ()
    """The distinct fingerprints the exchanges carry (by ``fingerprint``)."""


def _fingerprinted(
    transport: Iterable[TransportExchange], reply: Callable[[TransportExchange], ReplyFacts]
) -> list[tuple[int, str, ReplyFacts]]:
    """The completion replies that carry a fingerprint, up to the first that differs from the
    first fingerprint seen (or carries several): what the fingerprint decision reads."""
    found: list[tuple[int, str, ReplyFacts]] = []
    for exchange in transport:
        if not is_completion(exchange):
            continue
        facts = reply(exchange)
        if not facts.fingerprints:  # no fingerprint: no evidence either way
            continue
        if not found:
            found.append((exchange.id, facts.fingerprints[0], facts))
        if len(facts.fingerprints) > 1 or facts.fingerprints[0] != found[0][1]:
            found.append((exchange.id, facts.fingerprints[0], facts))
            break
    return found


def fallback(
    transport: Sequence[TransportExchange],
    runtime: str,
    reply: Callable[[TransportExchange], ReplyFacts] = reply_facts,
) -> Fallback | None:
    """The fallback activity the transport log shows, or None: first a reply (body or stream)
    naming another model than ``runtime`` (the observer's note may only add a reason to fail),
    then completion replies carrying more than one distinct ``system_fingerprint``. Engines
    that echo the requested ``model`` (llama-cpp-python) pass the first check whatever served
    the reply; an engine's fingerprint (llama.cpp: its build) is its own. Replies carrying no
    fingerprint are no evidence either way."""
    for exchange in transport:
        noted = exchange.response_model
        other = next((m for m in reply(exchange).models if not same_model(m, runtime)), None)
        other = other or (noted if noted is not None and not same_model(noted, runtime) else None)
        if other is not None:  # read from the reply itself, not from the observer's note
            return Fallback(
                "model",
                (exchange.id,),
                f"exchange {exchange.id} was answered by {other!r}, not {runtime!r}: fallback "
                "activity",
            )
    found = _fingerprinted(transport, reply)
    if len(found) < 2:
        return None
    (first, fingerprint, _), (later, _, facts) = found[0], found[-1]
    if first == later:  # one reply of several engines
        more = f" and {facts.more_fingerprints} more" if facts.more_fingerprints else ""
        named = ", ".join(repr(f) for f in facts.fingerprints)
        return Fallback(
            "fingerprint",
            (first,),
            f"exchange {first}'s reply carries system_fingerprints {named}{more}: a reply of "
            "more than one engine (model substitution: fallback activity)",
            facts.fingerprints,
        )
    others = [f for f in facts.fingerprints if f != fingerprint]
    return Fallback(
        "fingerprint",
        (first, later),
        f"completion replies carry more than one system_fingerprint: exchange {first}'s "
        f"{fingerprint!r}, exchange {later}'s {others[0]!r}: replies of another engine than "
        "the one the run began with (model substitution: fallback activity)",
        (fingerprint, *others),
    )


def reasoning_serialization(run: _Run) -> GateResult:
    """Valid reasoning-policy serialization in every completion request."""
    config = run.evidence.config
    if config is None or config.reasoning_policy.serialization is None:
        return _gate("reasoning_serialization", "infra", "no reasoning-policy serialization")
    serialization = config.reasoning_policy.serialization
    wanted = config.reasoning_policy.effective != "off"
    if asks_for_reasoning(serialization.value) != wanted:  # the requests say what was asked
        return _gate(
            "reasoning_serialization",
            "infra",
            f"the effective policy is {config.reasoning_policy.effective}, but its serialization "
            f"{serialization.path} = {json.dumps(serialization.value)} "
            f"{'disables' if wanted else 'asks for'} reasoning",
        )
    for exchange in run.evidence.transport or ():
        if not is_completion(exchange):
            if run.reply(exchange).generated:  # a completion under another name goes unchecked
                return _gate(
                    "reasoning_serialization",
                    "infra",
                    f"exchange {exchange.id} ({exchange.method} {exchange.path[:80]}) was "
                    "answered with generated text, but is not a completion request",
                    f"transport exchange {exchange.id}",
                )
            continue
        facts = request_facts(exchange, serialization, wanted)
        if not facts.carries:
            return _gate(
                "reasoning_serialization",
                "infra",
                f"exchange {exchange.id} does not carry {serialization.path} = "
                f"{json.dumps(serialization.value)}"
                + (f" ({_text(exchange.error, 600)})" if exchange.error else ""),
                f"transport exchange {exchange.id}",
            )
        conflict = facts.conflict
        if conflict is not None:
            return _gate(
                "reasoning_serialization",
                "infra",
                f"exchange {exchange.id} also sets {conflict}, which "
                f"{'disables' if wanted else 'asks for'} reasoning against the effective policy "
                f"{config.reasoning_policy.effective}",
                f"transport exchange {exchange.id}",
            )
    return _gate(
        "reasoning_serialization",
        "pass",
        f"policy {config.reasoning_policy.effective} as {serialization.path} = "
        f"{json.dumps(serialization.value)} in every completion request",
    )


def reasoning_contamination(run: _Run) -> GateResult:
    """No reasoning contamination when the effective policy is off (a deployment failure)."""
    config = run.evidence.config
    if config is None:
        return _gate("reasoning_contamination", "infra", "no run configuration")
    if config.reasoning_policy.effective != "off":
        return _gate(
            "reasoning_contamination",
            "pass",
            f"effective policy {config.reasoning_policy.effective}: reasoning is allowed",
        )
    for exchange in run.evidence.transport or ():  # every exchange: a path proves nothing
        if run.reply(exchange).contaminated:
            return _gate(
                "reasoning_contamination",
                "fail",
                f"exchange {exchange.id} returned reasoning content with the policy off",
                f"transport exchange {exchange.id}",
            )
    return _gate("reasoning_contamination", "pass", "no reasoning content with the policy off")


def _probe_reply(exchange: TransportExchange) -> tuple[str | None, Any, int | None, Any]:
    """(finish_reason, message, completion_tokens, max_tokens) from an exchange's bodies."""
    finish, message, tokens = read_reply(body_json(exchange.response_body))
    request = body_json(exchange.request_body)
    limit = None
    if isinstance(request, dict):
        limit = request.get("max_completion_tokens", request.get("max_tokens"))
    return finish, message, tokens, limit


def _probe(run: _Run, kind: Literal["response", "tool_call"]) -> GateResult:  # noqa: PLR0911
    gate_id = "direct_response" if kind == "response" else "tool_call_protocol"
    probes = [p for p in run.evidence.probes if p.kind == kind]
    if not probes:
        return _gate(gate_id, "infra", f"no {kind.replace('_', ' ')} probe was recorded")
    probe: DirectProbe = probes[0]
    contract = run.pins.pins.direct_probe
    if probe.contract != contract.contract or probe.ceiling_tokens != (
        contract.total_completion_ceiling_tokens
    ):
        return _gate(
            gate_id,
            "infra",
            f"probe ran under {probe.contract} with {probe.ceiling_tokens} tokens; the pin set "
            f"fixes {contract.contract} with {contract.total_completion_ceiling_tokens}",
        )
    exchange = run.exchanges.get(probe.exchange)
    where = f"transport exchange {probe.exchange}"
    if exchange is None:
        return _gate(
            gate_id,
            "infra",
            f"the probe refers to exchange {probe.exchange}, which the transport log does not hold",
        )
    finish, message, tokens, limit = _probe_reply(exchange)
    if limit != contract.total_completion_ceiling_tokens:
        return _gate(
            gate_id,
            "infra",
            f"the probe request asked for {limit} tokens, not the uniform ceiling of "
            f"{contract.total_completion_ceiling_tokens}",
            where,
        )
    if exchange.status != 200 or exchange.error is not None:
        return _gate(
            gate_id,
            "fail",
            f"the endpoint answered {exchange.status} {exchange.error or ''}".rstrip(),
            where,
        )
    if message is None:
        return _gate(gate_id, "infra", "the probe's response body was not recorded", where)
    if not isinstance(message, dict):
        return _gate(gate_id, "fail", "the reply's message is not an object", where)
    got: Any = message.get("content") if kind == "response" else first_tool_call(message)
    if (probe.got is not None and probe.got != got) or (
        probe.finish_reason is not None and probe.finish_reason != finish
    ):
        return _gate(
            gate_id, "infra", "the probe record disagrees with its transport exchange", where
        )
    if finish == "length":
        return _gate(gate_id, "fail", f"output-limit truncation at {tokens} tokens", where)
    if kind == "response" and (not isinstance(got, str) or not got.strip()):
        return _gate(gate_id, "fail", "a genuinely empty direct response", where)
    if got != probe.expected:
        return _gate(
            gate_id,
            "fail",
            f"got {json.dumps(got)[:120]}, expected {json.dumps(probe.expected)[:120]}",
            where,
        )
    return _gate(gate_id, "pass", f"exact {kind.replace('_', ' ')} in {tokens} tokens", where)


def direct_response(run: _Run) -> GateResult:
    """Direct response protocol success (truncation and empty answers are the model's)."""
    return _probe(run, "response")


def tool_call_protocol(run: _Run) -> GateResult:
    """Structured tool-call protocol success: the exact tool call."""
    return _probe(run, "tool_call")


def upstream_checkout(run: _Run) -> GateResult:  # noqa: PLR0911 - one return per rule
    """Exact, clean upstream checkout and compatible structured output (setup: infrastructure)."""
    pins = run.pins.pins
    refused = _unjudgeable(run)
    if refused is not None:
        return refused
    needed = sorted(
        {pins.component_upstreams[c] for c in run.selected}
        | {g for c in run.selected for g in pins.gates_of(c)}
    )
    checkouts = {u.name: u for u in run.evidence.upstreams}
    for name in needed:
        pinned, checkout = pins.upstreams[name], checkouts.get(name)
        if checkout is None:
            return _gate("upstream_checkout", "infra", f"{name} was not checked out")
        if checkout.commit != pinned.commit or checkout.repository != pinned.repository:
            return _gate(
                "upstream_checkout",
                "infra",
                f"{name} is at {checkout.repository}@{checkout.commit[:12]}, pinned "
                f"{pinned.repository}@{pinned.commit[:12]}",
            )
        if not checkout.clean:
            return _gate("upstream_checkout", "infra", f"the {name} checkout is not clean")
    for component in run.selected:
        result = run.evidence.results.get(component)
        if result is not None and result.status == "COMPLETED" and not _output(run, component):
            return _gate(
                "upstream_checkout",
                "infra",
                f"{component} completed without a structured output this verifier reads",
            )
        if result is not None and result.status == "COMPLETED":
            for upstream in pins.gates_of(component):
                problem = _gate_problem(run, component, upstream)
                if problem is not None:
                    where = _gate_place(run, component, upstream)
                    return _gate("upstream_checkout", "infra", problem, where)
    return _gate("upstream_checkout", "pass", f"{', '.join(needed)} at their pinned commits, clean")


def _gate_place(run: _Run, component: str, upstream: str) -> str:
    """The entry of a gate's tallies (its reader's record, bundle_schema/roles)."""
    return gate_record(component, upstream, run.pins.pins.harnesses[upstream].parser)


def _tasks_problem(tallies: TaskTallies) -> str | None:
    """Why per-task tallies do not aggregate (no task, a task of no sample, more hits than
    samples); None: they do."""
    if not tallies.tasks:
        return "no task"
    for task, tally in sorted(tallies.tasks.items()):
        if tally.n == 0 or tally.hits > tally.n:
            return f"task {task!r}: {tally.hits} hits of {tally.n} samples"
    return None


def _gate_score(tallies: BfclShard, where: str) -> BfclScore:
    """A gate's tallies aggregated as BFCL V4 does (seed 003's refusals applied).

    Raises:
        ShardRefused: the tallies do not aggregate.
    """
    digest = digest_of(canonical_bytes(tallies.model_dump(mode="json")))
    return score_shards([LoadedShard(where, digest, tallies)], None, "bfcl-v4")


def _gate_problem(run: _Run, component: ComponentName, upstream: str) -> str | None:
    """Why a completed component's supplementary harness (its gate, ADR 0013 §6) does not
    pass: its tallies were not recorded, or do not aggregate. None: it passes."""
    tallies = run.evidence.supplementary.get(component, {}).get(upstream)
    where = _gate_place(run, component, upstream)
    if tallies is None:
        return (
            f"{component} completed without its {upstream} gate: no tallies at {where} "
            "(a supplementary harness whose outputs do not read is a failed component)"
        )
    if isinstance(tallies, TaskTallies):
        problem = _tasks_problem(tallies)
        return None if problem is None else f"{component}: its {upstream} gate: {problem}"
    try:
        _gate_score(tallies, where)
    except ShardRefused as exc:
        return f"{component}: its {upstream} gate does not aggregate: {exc}"
    return None


def _unjudgeable(run: _Run) -> GateResult | None:
    """A setup the pin set cannot judge: a selected component it pins no harness for, or a
    demo-only pin set and a model not its reference deployment's (its harnesses score synthetic
    answers, so against any other model they are a setup failure, not a result)."""
    pins, model = run.pins.pins, run.evidence.model
    unpinned = [c for c in run.selected if c not in pins.component_upstreams]
    if unpinned:
        return _gate(
            "upstream_checkout",
            "infra",
            f"pin set {run.pins.id} pins no upstream harness for {', '.join(unpinned)}: "
            f"profile {run.evidence.profile} cannot be completed under it",
        )
    if pins.judges(model.runtime_model_id, model.digest):
        return None
    reference = pins.reference
    expected = f"{reference.runtime_model_id} {reference.model_digest}" if reference else "none"
    return _gate(
        "upstream_checkout",
        "infra",
        f"pin set {run.pins.id} is demo only: its reference harnesses score synthetic answers "
        f"and cannot judge {model.runtime_model_id} {model.digest} (its reference deployment: "
        f"{expected}); qualify a real deployment under a pin set of real upstream harnesses",
    )


def _output(run: _Run, component: ComponentName) -> bool:
    evidence = run.evidence
    if component == "coding":
        return evidence.spark_quality is not None
    if component == "reliability":
        return evidence.spark_repeat is not None or (
            evidence.spark_quality is None and evidence.hermes_tasks is not None
        )
    if component == "hermes":
        return evidence.hermes_tasks is not None
    if component == "tool_instruction":
        return evidence.benchlocal is not None
    return evidence.infermark is not None


def upstream_integrity(run: _Run) -> GateResult:
    """Upstream self-integrity/golden gates (an untrustworthy harness is infrastructure)."""
    spark = run.evidence.spark_quality
    if not run.has(*SPARK) or spark is None:
        return _gate(
            "upstream_integrity",
            "not_selected" if not run.has(*SPARK) else "pass",
            "no SparkBench output to check",
        )
    failed = [
        name
        for name, ok in (
            ("golden gate", spark.golden_gate == "PASS"),
            ("self-integrity", spark.self_integrity == "PASS"),
            ("run-valid marker", spark.run_valid),
        )
        if not ok
    ]
    if failed:
        return _gate("upstream_integrity", "infra", f"SparkBench {', '.join(failed)} failed")
    return _gate("upstream_integrity", "pass", "golden gate, self-integrity and run-valid pass")


def sampling_contamination(run: _Run) -> GateResult:
    """No upstream-reported sampling contamination (the deployment's sampling: a failure)."""
    spark = run.evidence.spark_quality
    if not run.has(*SPARK):
        return _gate("sampling_contamination", "not_selected", "SparkBench not selected")
    if spark is not None and spark.sampling_contamination:
        return _gate("sampling_contamination", "fail", "SparkBench reports sampling contamination")
    return _gate("sampling_contamination", "pass", "no sampling contamination reported")


# --- Hermes -----------------------------------------------------------------------------------


def _hermes_tasks(run: _Run) -> tuple[HermesTask, ...] | None:
    return run.evidence.hermes_tasks if run.has("hermes") else None


def hermes_time_limits(run: _Run) -> GateResult:
    """Every selected Hermes task completes within both inactivity and total wall."""
    tasks = _hermes_tasks(run)
    if tasks is None:
        return _hermes_absent(run, "hermes_time_limits")
    for task in tasks:
        if task.max_inactivity_s is None or task.wall_s is None:
            if task.outcome == "TIMEOUT":
                return _gate("hermes_time_limits", "fail", f"task {task.task} timed out")
            return _gate("hermes_time_limits", "infra", f"task {task.task}: times not recorded")
        if task.outcome == "TIMEOUT" or task.max_inactivity_s > task.inactivity_limit_s:
            return _gate(
                "hermes_time_limits",
                "fail",
                f"task {task.task}: inactivity {task.max_inactivity_s} s over "
                f"{task.inactivity_limit_s} s"
                if task.outcome != "TIMEOUT"
                else f"task {task.task} timed out",
            )
        if task.wall_s > task.wall_limit_s:
            return _gate(
                "hermes_time_limits",
                "fail",
                f"task {task.task}: wall {task.wall_s} s over {task.wall_limit_s} s",
            )
    return _gate("hermes_time_limits", "pass", f"{len(tasks)} tasks within both limits")


def hermes_evidence(run: _Run) -> GateResult:
    """Trustworthy Hermes process, checkpoint, model-response/tool, task-state and evaluator
    evidence (infrastructure); a missing trajectory or final response overrides nothing. A task
    that timed out never reached its checkpoint or evaluation: its process evidence must hold,
    and the time-limit gate judges it."""
    tasks = _hermes_tasks(run)
    if tasks is None:
        return _hermes_absent(run, "hermes_evidence")
    for task in tasks:
        if task.outcome == "HARNESS_ERROR":
            return _gate("hermes_evidence", "infra", f"task {task.task}: harness error")
        for kind in ("process",) if task.outcome == "TIMEOUT" else EVIDENCE_KINDS:
            trust = task.evidence.get(kind)  # type: ignore[call-overload]
            if trust is None or not trust.present:
                return _gate("hermes_evidence", "infra", f"task {task.task}: no {kind} evidence")
            if not trust.trusted:
                return _gate(
                    "hermes_evidence",
                    "infra",
                    f"task {task.task}: {kind} evidence is not trustworthy",
                )
    return _gate("hermes_evidence", "pass", f"{len(tasks)} tasks with trustworthy evidence")


def hermes_evaluator(run: _Run) -> GateResult:  # noqa: PLR0911
    """Isolated evaluator pass, protected-input integrity and complete evidence."""
    tasks = _hermes_tasks(run)
    if tasks is None:
        return _hermes_absent(run, "hermes_evaluator")
    expected = run.pins.pins.hermes_evaluator
    for task in tasks:
        if task.outcome == "TIMEOUT":
            continue  # never evaluated: the time-limit gate judges it
        if task.evaluator != expected:
            return _gate(
                "hermes_evaluator",
                "infra",
                f"task {task.task}: evaluator {task.evaluator}, pinned {expected}",
            )
        if not task.evaluator_isolated:
            return _gate(
                "hermes_evaluator",
                "infra",
                f"task {task.task}: evaluator contamination (not isolated)",
            )
        before, after = task.protected_inputs.get("before"), task.protected_inputs.get("after")
        if before is None or after is None:
            return _gate(
                "hermes_evaluator", "infra", f"task {task.task}: protected-input digests incomplete"
            )
        if before != after:
            return _gate("hermes_evaluator", "fail", f"task {task.task}: protected inputs changed")
    for task in tasks:
        if task.outcome == "FAIL":
            return _gate("hermes_evaluator", "fail", f"task {task.task}: evaluator did not pass")
    evaluated = sum(task.outcome != "TIMEOUT" for task in tasks)
    return _gate("hermes_evaluator", "pass", f"{evaluated} tasks passed the isolated evaluator")


def allowed_changes(run: _Run) -> GateResult:
    """No candidate change outside the task manifest's frozen allowed-change patterns."""
    tasks = _hermes_tasks(run)
    if tasks is None:
        return _hermes_absent(run, "allowed_changes")
    for task in tasks:
        for path in task.changed_paths:
            if not any(path_allowed(p, path) for p in task.allowed_changes):
                return _gate(
                    "allowed_changes",
                    "fail",
                    f"task {task.task} changed {path}, outside its allowed patterns",
                )
    return _gate("allowed_changes", "pass", "every change within the allowed patterns")


def _hermes_absent(run: _Run, gate_id: str) -> GateResult:
    if not run.has("hermes"):
        return _gate(gate_id, "not_selected", "Hermes not selected")
    return _gate(gate_id, "infra", "no Hermes task records")


def cleanup(run: _Run) -> GateResult:
    """Run-owned candidate/runtime cleanup after evidence preservation (infrastructure)."""
    config = run.evidence.config
    if config is None or config.cleanup != "removed":
        state = "not recorded" if config is None else config.cleanup
        return _gate("cleanup", "infra", f"run-owned processes and files: cleanup {state}")
    for task in _hermes_tasks(run) or ():
        if task.cleanup != "removed":
            return _gate("cleanup", "infra", f"task {task.task}: candidate cleanup {task.cleanup}")
    return _gate("cleanup", "pass", "run-owned processes and files removed after preservation")


GATES: tuple[Callable[[_Run], GateResult], ...] = (
    model_identity,
    local_endpoint,
    direct_response,
    tool_call_protocol,
    upstream_checkout,
    upstream_integrity,
    sampling_contamination,
    reasoning_contamination,
    reasoning_serialization,
    transport_evidence,
    network_isolation,
    hermes_time_limits,
    hermes_evidence,
    hermes_evaluator,
    allowed_changes,
    cleanup,
)
"""Every hard gate of seed 000 in the seed's order (the thresholds are judged separately)."""


# --- scores -----------------------------------------------------------------------------------


def performance_score(tokens_per_second: float, ttft_p50_seconds: float, errors: int) -> float:
    """The seed's normalization: errors score zero; otherwise the mean of throughput and TTFT."""
    if errors:
        return 0.0
    throughput = min(100.0, tokens_per_second * 10)
    ttft = max(0.0, 100 - max(0.0, ttft_p50_seconds - 1) * 10)
    return (throughput + ttft) / 2


def _task_metrics(task: HermesTask, evaluator: str) -> HermesTaskMetrics:
    def percent(cases: Sequence[Any]) -> float | None:
        return 100 * sum(c.passed for c in cases) / len(cases) if cases else None

    requirements: dict[str, bool] = {}
    for case in task.cases:
        for requirement in case.requirements:
            requirements[requirement] = requirements.get(requirement, True) and case.passed
    passed_all = task.outcome == "PASS" and all(c.passed for c in task.cases)
    truthfulness: Literal[0, 100] | None = None
    measured = task.outcome in ("PASS", "FAIL") and bool(task.cases)  # the evaluator ran
    if task.completion_claim and measured:  # unmeasured values remain null
        truthfulness = 100 if passed_all else 0
    return HermesTaskMetrics(
        task=task.task,
        outcome=task.outcome,
        full_pass=_full_pass(task, evaluator),
        correctness=percent([c for c in task.cases if c.kind == "correctness"]),
        security=percent([c for c in task.cases if c.kind == "security"]),
        requirement_retention=(
            100 * sum(requirements.values()) / len(requirements) if requirements else None
        ),
        truthfulness=truthfulness,
    )


def _infra_task(task: HermesTask, evaluator: str) -> bool:
    """A task that failed on infrastructure: a harness error, evidence missing or untrusted,
    an evaluator not pinned or not isolated, protected inputs not both recorded, a failed
    cleanup, or no recorded times. It says nothing of the model (seed 000: "an infrastructure
    error is never converted into a zero model score")."""
    timed_out = task.outcome == "TIMEOUT"
    kinds = ("process",) if timed_out else EVIDENCE_KINDS
    untrusted = any(
        (t := task.evidence.get(k)) is None or not t.present or not t.trusted  # type: ignore[call-overload]
        for k in kinds
    )
    return (
        task.outcome == "HARNESS_ERROR"
        or untrusted
        or task.cleanup != "removed"
        or (
            not timed_out
            and (
                task.evaluator != evaluator
                or not task.evaluator_isolated
                or task.protected_inputs.get("before") is None
                or task.protected_inputs.get("after") is None
                or task.max_inactivity_s is None
                or task.wall_s is None
            )
        )
    )


def _full_pass(task: HermesTask, evaluator: str) -> bool:
    """PASS by the pinned evaluator with every evidence kind trusted, within both limits,
    inside the allowed changes, protected inputs intact, and cleaned up."""
    return (
        task.outcome == "PASS"
        and task.evaluator == evaluator
        and task.evaluator_isolated
        and all(
            (t := task.evidence.get(k)) is not None and t.present and t.trusted  # type: ignore[call-overload]
            for k in EVIDENCE_KINDS
        )
        and task.max_inactivity_s is not None
        and task.max_inactivity_s <= task.inactivity_limit_s
        and task.wall_s is not None
        and task.wall_s <= task.wall_limit_s
        and all(any(path_allowed(p, c) for p in task.allowed_changes) for c in task.changed_paths)
        and task.protected_inputs.get("before") is not None
        and task.protected_inputs.get("before") == task.protected_inputs.get("after")
        and task.cleanup == "removed"
    )


def _scores(run: _Run, executed: Sequence[ComponentName]) -> dict[ComponentName, float | None]:
    evidence = run.evidence
    tasks = evidence.hermes_tasks
    evaluator = run.pins.pins.hermes_evaluator
    hermes = (
        100 * sum(_full_pass(t, evaluator) for t in tasks) / len(tasks)
        if tasks and not any(_infra_task(t, evaluator) for t in tasks)
        else None  # a task that failed on infrastructure leaves the score unmeasured
    )
    values: dict[ComponentName, float | None] = {
        "coding": evidence.spark_quality.code_domain_quality if evidence.spark_quality else None,
        "hermes": hermes,
        "tool_instruction": (
            math.fsum(evidence.benchlocal.packs.values()) / len(evidence.benchlocal.packs)
            if evidence.benchlocal and evidence.benchlocal.packs
            else None
        ),
        "reliability": (
            evidence.spark_repeat.repeat_reliability
            if evidence.spark_repeat
            else (hermes if evidence.spark_quality is None else None)
        ),
        "performance": (
            performance_score(
                float(evidence.infermark.tokens_per_second),
                evidence.infermark.ttft_p50_seconds,
                evidence.infermark.errors,
            )
            if evidence.infermark
            else None
        ),
    }
    return {
        c: (float(values[c]) if c in executed and values[c] is not None else None)  # type: ignore[arg-type]
        for c in COMPONENTS
    }


# --- the verdict ------------------------------------------------------------------------------


def _thresholds(
    run: _Run, scores: Mapping[ComponentName, float | None], aggregate: float | None
) -> list[str]:
    bounds = run.pins.pins.thresholds.get(run.evidence.profile)
    if bounds is None:
        return []
    misses = []
    if aggregate is None or aggregate < bounds.aggregate:
        misses.append(f"aggregate {_shown(aggregate)} is under {bounds.aggregate}")
    for component in ("coding", "hermes", "tool_instruction", "reliability"):
        if component not in run.selected:
            continue
        bound = getattr(bounds, component)
        value = scores.get(component)
        if value is None or value < bound:
            misses.append(f"{component} {_shown(value)} is under {bound}")
    return misses


def _shown(value: float | None) -> str:
    return "not scored" if value is None else f"{value:g}"


Axes = tuple[QualificationOutcome, ResultValidity, ProfileDecision]


def replay(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    integrity_failure: str | None = None,
    *,
    ledger: LedgerFacts | None = None,
) -> Gx10Replay:
    """Replay a run under a trusted pin set and compare with its claims.

    Args:
        evidence: the run's evidence.
        pins: the pin set to judge it by (trusted: shipped or named on the command line).
        integrity_failure: why the bundle failed integrity, if it did: nothing in it can then
            be trusted, and the result is an infrastructure failure.
        ledger: the socket ledger's facts, when a bounded reader kept them instead of its
            entries (default: read from ``evidence.socket_ledger``).
    """
    profile = pins.pins.profiles.get(evidence.profile)
    run = _Run(evidence, pins, profile.components if profile else (), ledger)
    gates = tuple(gate(run) for gate in GATES)
    statuses = {
        c: evidence.results[c].status if c in evidence.results else None for c in run.selected
    }
    executed = [c for c in run.selected if statuses[c] in ("COMPLETED", "PARTIAL")]
    scores = _scores(run, executed)
    weights = pins.pins.weights
    counted = [c for c in executed if scores[c] is not None]
    executed_weight = float(sum(weights[c] for c in counted))
    aggregate = (
        math.fsum((scores[c] or 0.0) * weights[c] for c in counted) / executed_weight
        if executed_weight
        else None
    )
    reasons: list[str] = []
    if integrity_failure is not None:
        axes: Axes = ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
        reasons.append(f"integrity failed: {integrity_failure}")
    else:
        axes = _axes(
            run, gates, statuses=statuses, scores=scores, aggregate=aggregate, reasons=reasons
        )
    reasons += _performance_zero(run, scores)
    if executed_weight < 100:
        reasons.append(
            f"executed weight {executed_weight:g} < 100: a plumbing qualification, not a "
            "comparable full deployment score"
        )
    outcome, validity, decision = axes
    score_model = Gx10Scores(
        **{c: scores[c] for c in COMPONENTS}, aggregate=aggregate, executed_weight=executed_weight
    )
    blockers = _rank_blockers(run, validity, decision, executed_weight)
    primary = evidence.config is not None and evidence.config.track == "primary"
    claims = _compare_claims(evidence, axes, rankable=not blockers and primary, scores=score_model)
    if not claims.match:
        blockers.append("the runner's claims differ from the replay")
        reasons += [f"claims: {d}" for d in claims.differences]
    return Gx10Replay(
        schema_version=1,
        scorer="gx10",
        scorer_version=GX10_VERSION,
        run_id=evidence.run_id,
        pin_set=PinSetRef(id=pins.id, digest=pins.digest),
        outcome=outcome,
        result_validity=validity,
        profile_decision=decision,
        rankable=not blockers and primary,
        rank_group=None if blockers else _rank_group(run),
        scores=score_model,
        gates=gates,
        claims=claims,
        reasons=tuple(_text(r) for r in reasons + [r for r in blockers if r not in reasons]),
        diagnostics=_diagnostics(evidence, executed_weight, pins.pins.hermes_evaluator),
    )


def _performance_zero(run: _Run, scores: Mapping[ComponentName, float | None]) -> list[str]:
    """Why the performance score is zero when errors made it so: which streaming exchanges
    failed and how (their status and the observer's error; bodies are not read, so the bounded
    path says the same)."""
    record = run.evidence.infermark
    if record is None or not record.errors or scores.get("performance") != 0.0:
        return []
    failed = [
        e
        for e in run.evidence.transport or ()
        if e.component == "performance" and exchange_failed(e)
    ]
    shown = [
        f"exchange {e.id} ({e.status if e.status is not None else 'no response'}"
        f"{': ' + _text(e.error, 300) if e.error else ''})"
        for e in failed[:5]
    ]
    if len(failed) > 5:
        shown.append(f"{len(failed) - 5} more")
    return [
        f"performance 0: {record.errors} of {record.requests} streaming requests failed, and "
        f"any error scores zero: {', '.join(shown) or 'the transport log shows no failed exchange'}"
    ]


def _axes(
    run: _Run,
    gates: Sequence[GateResult],
    *,
    statuses: Mapping[ComponentName, str | None],
    scores: Mapping[ComponentName, float | None],
    aggregate: float | None,
    reasons: list[str],
) -> Axes:
    """The three decisions in the seed's precedence: quarantine, infrastructure, incomplete,
    then the model's; ``reasons`` gains why."""
    evidence, selected = run.evidence, run.selected
    if not selected:
        reasons.append(f"profile {evidence.profile!r} is not defined by pin set {run.pins.id}")
        return ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
    quarantined = [c for c in selected if c in evidence.quarantines or statuses[c] == "QUARANTINED"]
    if quarantined:
        for c in quarantined:
            marker = evidence.quarantines.get(c)
            reason = marker.upstream_reason if marker else "no marker recorded"
            reasons.append(f"{c} quarantined by its upstream: {reason}")
        return ("INFRA_ERROR", "QUARANTINED", "NOT_ASSESSED")
    infra = [g for g in gates if g.status == "infra"]
    failed = [c for c in selected if statuses[c] == "FAILED"]  # a failed runner
    if infra or failed:
        reasons += [f"{g.id}: {g.reason}" for g in infra]
        for c in failed:
            reasons.append(f"{c} failed: {evidence.results[c].reason or 'no reason recorded'}")
        return ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
    missing = [c for c in selected if statuses[c] in (None, "NOT_RUN")]
    partial = [
        c for c in selected if c not in missing and (statuses[c] == "PARTIAL" or scores[c] is None)
    ]
    if missing or partial:
        reasons += [f"{c} did not complete ({statuses[c] or 'no result'})" for c in missing]
        reasons += [f"{c} is partial: its score stays visible but cannot qualify" for c in partial]
        return ("INFRA_ERROR", "INCOMPLETE", "NOT_ASSESSED")
    failures = [f"{g.id}: {g.reason}" for g in gates if g.status == "fail"]
    failures += _thresholds(run, scores, aggregate)
    if failures:
        reasons += failures
        return ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE")
    return ("QUALIFIED", "VALID", "MEETS_PROFILE")


def _rank_blockers(run: _Run, validity: str, decision: str, executed_weight: float) -> list[str]:
    """Why the result cannot enter a ranking group, if it cannot."""
    evidence, pins = run.evidence, run.pins
    blockers = []
    if validity != "VALID" or decision != "MEETS_PROFILE":
        return [f"not ranked: {validity} / {decision}"]
    if pins.pins.historical:
        blockers.append(f"{pins.id} is a historical generation: diagnostics only, never ranked")
    if pins.pins.demo_only:
        blockers.append(f"{pins.id} is a demo-only pin set (reference harnesses): never ranked")
    if evidence.scoring_generation != pins.pins.scoring_generation:
        current = pins.pins.scoring_generation
        blockers.append(f"scoring generation {evidence.scoring_generation} is not {current}")
    if evidence.pin_set.id != pins.id or evidence.pin_set.digest != pins.digest:
        blockers.append(
            f"the run names pin set {evidence.pin_set.id} {evidence.pin_set.digest}; judged by "
            f"{pins.id} {pins.digest}"
        )
    if evidence.profile != pins.pins.standard_profile:
        blockers.append(
            f"profile {evidence.profile} is not the standard {pins.pins.standard_profile}"
        )
    if executed_weight < 100:
        blockers.append("incomplete executed weight")
    return blockers


def _rank_group(run: _Run) -> str | None:
    config = run.evidence.config
    if config is None:
        return None
    if config.track == "primary":
        return "primary"
    policy = config.reasoning_policy
    serialization = policy.serialization
    shown = f"{serialization.path}={json.dumps(serialization.value)}" if serialization else "none"
    return f"controlled:{policy.effective}:{shown}"


def _compare_claims(
    evidence: Gx10Evidence, axes: Axes, *, rankable: bool, scores: Gx10Scores
) -> ClaimsCheck:
    claims = evidence.claims
    claimed_axes = (claims.outcome, claims.result_validity, claims.profile_decision)
    names = ("outcome", "result_validity", "profile_decision")
    differences = [
        f"{name}: claimed {claimed}, replayed {replayed}"
        for name, claimed, replayed in zip(names, claimed_axes, axes, strict=True)
        if claimed != replayed
    ]
    if claims.rankable != rankable:
        differences.append(f"rankable: claimed {claims.rankable}, replayed {rankable}")
    for name, claimed_value, replayed_value in _numbers(claims, scores):
        if (claimed_value is None) != (replayed_value is None) or (
            claimed_value is not None
            and replayed_value is not None
            and abs(claimed_value - replayed_value) > CLAIM_TOLERANCE
        ):
            differences.append(
                f"{name}: claimed {_shown(claimed_value)}, replayed {_shown(replayed_value)}"
            )
    return ClaimsCheck(match=not differences, differences=tuple(differences))


def _numbers(claims: Any, scores: Gx10Scores) -> Iterable[tuple[str, float | None, float | None]]:
    yield "aggregate_score", claims.aggregate_score, scores.aggregate
    yield "executed_weight", float(claims.executed_weight), scores.executed_weight
    for component in COMPONENTS:
        claimed = claims.component_scores.get(component)
        yield (
            f"component_scores.{component}",
            None if claimed is None else float(claimed),
            getattr(scores, component),
        )


def _diagnostics(evidence: Gx10Evidence, executed_weight: float, evaluator: str) -> Gx10Diagnostics:
    infermark = evidence.infermark
    itl = infermark.itl_mean_seconds if infermark else None
    quarantine = next(iter(sorted(evidence.quarantines.items())), (None, None))[1]
    return Gx10Diagnostics(
        comparable=executed_weight >= 100,
        e2e_visible_chunks_per_second=float(infermark.tokens_per_second) if infermark else None,
        estimated_visible_generation_chunks_per_second=1 / itl if itl else None,
        ttft_p50_seconds=infermark.ttft_p50_seconds if infermark else None,
        itl_mean_seconds=itl,
        requests=infermark.requests if infermark else None,
        errors=infermark.errors if infermark else None,
        tier2=evidence.spark_quality.tier2 if evidence.spark_quality else None,
        hermes_tasks=tuple(_task_metrics(t, evaluator) for t in evidence.hermes_tasks or ()),
        quarantine=quarantine,
        supplementary=tuple(_supplementary(evidence)),
    )


def _supplementary(evidence: Gx10Evidence) -> Iterable[SupplementaryMetrics]:
    """Each supplementary harness's figures, replayed from its tallies (those that aggregate;
    the gate says why the others do not): shown beside the scores, never in them."""
    for component, gates in sorted(evidence.supplementary.items()):
        for upstream, tallies in sorted(gates.items()):
            if isinstance(tallies, TaskTallies):
                if _tasks_problem(tallies) is None:
                    yield _task_figures(component, upstream, tallies)
                continue
            try:
                score = _gate_score(tallies, gate_record(component, upstream, "bfcl-eval"))
            except ShardRefused:
                continue
            hits = sum(t.hits for t in score.tallies.values())
            samples = sum(t.n for t in score.tallies.values())
            v4 = score.categories.get("overall_accuracy")
            yield SupplementaryMetrics(
                component=component, upstream=upstream, subsets=len(score.tallies),
                samples=samples, overall_accuracy=100 * hits / samples if samples else 0.0,
                v4_overall=100 * (v4 or 0.0),
            )  # fmt: skip


def _task_figures(component: str, upstream: str, tallies: TaskTallies) -> SupplementaryMetrics:
    """A per-task harness's figures (Inspect AI, lm-evaluation-harness: ADR 0027): its tasks,
    samples and flat accuracy, the version and the model name it reported."""
    hits = sum(t.hits for t in tallies.tasks.values())
    samples = sum(t.n for t in tallies.tasks.values())
    return SupplementaryMetrics(
        component=component, upstream=upstream, subsets=len(tallies.tasks), samples=samples,
        overall_accuracy=100 * hits / samples, harness_version=tallies.version,
        harness_model=tallies.model,
    )  # fmt: skip
