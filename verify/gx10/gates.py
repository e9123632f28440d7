"""The run-level hard gates of seed 000 and :data:`GATES`, every gate in the seed's order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from bundle_schema.models import (
    ComponentName,
    DirectProbe,
    ReasoningSerialization,
    TaskTallies,
    TransportExchange,
)
from bundle_schema.roles import REFERENCE_HEADER
from verify._consistency import checkout_problem, needed_upstreams
from verify._facts import (
    ReplyFacts,
    asks_a_probe,
    closing_problem,
    is_loopback,
    off_sandbox,
    outside_attempt,
    reply_facts,
    reported_digests,
    request_facts,
)
from verify.gx10._context import SPARK, Check, Gate, Run, clip_text, found
from verify.gx10.hermes import (
    allowed_changes,
    hermes_evaluator,
    hermes_evidence,
    hermes_time_limits,
    selected_tasks,
)
from verify.gx10.scores import gate_score, tasks_problem
from verify.harness_outputs import gate_record
from verify.replies import (
    asks_for_reasoning,
    body_json,
    first_tool_call,
    is_completion,
    read_reply,
    reasoning_level,
    same_model,
)
from verify.scorers.bfcl import ShardRefused


def model_identity(run: Run) -> Check:
    """Exact runtime model and immutable digest resolution (an invalid identity is infra)."""
    model = run.evidence.model
    listings = [
        e for e in run.evidence.transport or () if e.method == "GET" and e.path == "/v1/models"
    ]
    if not listings:
        return found("infra", "the endpoint's model list was not recorded")
    served: set[str] = set()
    for exchange in listings:
        body = body_json(exchange.response_body)
        data = body.get("data") if isinstance(body, dict) else None
        items = data if isinstance(data, list) else ()
        served |= {str(m.get("id")) for m in items if isinstance(m, dict)}
    evidence = f"transport exchange {listings[0].id}"
    if not any(same_model(s, model.runtime_model_id) for s in served):  # a path: its file name
        return found(
            "infra",
            f"the endpoint does not serve {model.runtime_model_id!r} (it lists "
            f"{', '.join(sorted(str(s) for s in served)) or 'nothing'})",
            evidence,
        )
    if model.digest_source == "endpoint":
        reported = _reporting(run, model.runtime_model_id, model.digest)
        if reported is None:
            return found(
                "infra",
                f"digest {model.digest} is said to come from the endpoint, and no recorded "
                f"identity reply reports it for {model.runtime_model_id!r}",
                evidence,
            )
        evidence = f"transport exchange {reported}"
    return found(
        "pass",
        f"{model.runtime_model_id} resolved, digest {model.digest} ({model.digest_source})",
        evidence,
    )


def _reporting(run: Run, model: str, digest: str) -> int | None:
    """The id of the first identity exchange (an answered request that generates nothing)
    whose reply reports ``digest`` (its hex, as Ollama's ``/api/tags`` and ``/api/show`` do)
    for the runtime ``model`` (its own entry, or a reply about it), else None."""
    hexdigest = digest.removeprefix("sha256:")
    for exchange in run.evidence.transport or ():
        reported = reported_digests(exchange)
        if any(h == hexdigest and same_model(n, model) for n, h in reported):
            return exchange.id
    return None


def local_endpoint(run: Run) -> Check:
    """Local endpoint and no-redirect policy (a breach is infrastructure: setup/isolation)."""
    endpoint = run.evidence.model.endpoint
    if endpoint is None:
        return found("infra", "the endpoint URL was not recorded")
    host = urlsplit(endpoint).hostname or ""
    if not is_loopback(host):
        return found("infra", f"endpoint {endpoint} is not on loopback")
    for exchange in run.evidence.transport or ():
        if exchange.redirect is not None or (exchange.status or 0) in range(300, 400):
            return found(
                "infra",
                f"exchange {exchange.id} was redirected ({exchange.status}); redirects are "
                "never followed",
                f"transport exchange {exchange.id}",
            )
    return found("pass", f"{endpoint} is loopback; no redirect")


def transport_evidence(run: Run) -> Check:  # noqa: PLR0911
    """Trustworthy model-transport evidence: a complete observer log."""
    config, transport = run.evidence.config, run.evidence.transport
    if transport is None:
        return found("infra", "no transport log: the observer is missing")
    if config is None:
        return found("infra", "no run configuration: no observer record")
    observer = config.observer
    if observer.status != "complete":
        return found(
            "infra",
            f"the observer failed: {observer.reason or 'no reason recorded'}",
        )
    if observer.exchanges != len(transport):
        return found(
            "infra",
            f"the observer wrote {observer.exchanges} exchanges; the log holds {len(transport)}",
        )
    ids = [e.id for e in transport]
    if len(set(ids)) != len(ids):
        return found("infra", "the transport log repeats an exchange id")
    problem = _reference_problem(run, set(ids))
    if problem is not None:
        return found("infra", problem)
    return found("pass", f"{len(transport)} exchanges, observer complete")


def _reference_problem(run: Run, ids: set[int]) -> str | None:  # noqa: PLR0911, PLR0912
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
        elif asks_a_probe(logged) and logged.id not in named:
            return (f"{where} asks a direct probe's question as {component!r}'s and no probe "
                    "record names it: a retried probe")  # fmt: skip
        elif component not in run.selected:
            return f"{where} belongs to {component!r}, not a selected component: orphaned"
        elif component == "hermes" and is_completion(logged) and logged.id not in named:
            return f"{where} of hermes is named by no task record: an orphaned exchange"
    return None


def network_isolation(run: Run) -> Check:
    """No non-local socket or auxiliary provider/fallback attempt (isolation: infrastructure)."""
    ledger = run.ledger()
    if ledger is None:
        return found("infra", "no socket ledger: isolation is unproven")
    # the ledger the supervisor closed (an empty one: the harnesses connected nowhere)
    closing, _ = closing_problem(run.evidence.config, ledger.count)
    if closing is not None:
        return found("infra", f"{closing}: isolation is unproven")
    if ledger.first_event is not None:  # the first entry out of sequence or off loopback
        expected, entry = ledger.first_event
        if entry.seq != expected:
            return found("infra",
                         f"the socket ledger skips from seq {expected - 1} to {entry.seq}: an "
                         "attempt is missing, isolation is unproven")  # fmt: skip
        if off_sandbox(entry):
            return found(
                "infra",
                f"{entry.process} (pid {entry.pid}) {outside_attempt(entry)}",
                f"socket ledger seq {entry.seq}",
            )
    substitution = fallback(
        run.evidence.transport or (), run.evidence.model.runtime_model_id, run.reply
    )
    if substitution is not None:
        return found(
            "infra",
            substitution.reason,
            *(f"transport exchange {e}" for e in substitution.exchanges),
        )
    reason = f"{ledger.count} connection attempts, all loopback"
    single = _fingerprinted(run.evidence.transport or (), run.reply)
    if single:
        reason += f"; every fingerprinted completion reply carries {single[0][1]!r}"
    return found("pass", reason)


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


REASONING_LEVELS = ("low", "medium", "high")
"""The effective policies that are a level of reasoning, each asked for by its own name."""


def _serialization_problem(effective: str, serialization: ReasoningSerialization) -> str | None:
    """Why ``serialization`` does not ask for the ``effective`` policy (the requests say what
    was asked): it disables reasoning the policy wants, or asks for what it does not, or, for a
    level, asks for another (a level is asked for by its own name)."""
    wanted = effective != "off"
    shown = f"{serialization.path} = {json.dumps(serialization.value)}"
    if asks_for_reasoning(serialization.value) != wanted:
        return (
            f"the effective policy is {effective}, but its serialization {shown} "
            f"{'disables' if wanted else 'asks for'} reasoning"
        )
    if effective in REASONING_LEVELS and reasoning_level(serialization.value) != effective:
        return (
            f"the effective policy is {effective}, but its serialization {shown} does not ask "
            "for that level"
        )
    return None


def reasoning_serialization(run: Run) -> Check:
    """Valid reasoning-policy serialization in every completion request."""
    config = run.evidence.config
    if config is None or config.reasoning_policy.serialization is None:
        return found("infra", "no reasoning-policy serialization")
    serialization = config.reasoning_policy.serialization
    wanted = config.reasoning_policy.effective != "off"
    problem = _serialization_problem(config.reasoning_policy.effective, serialization)
    if problem is not None:
        return found("infra", problem)
    for exchange in run.evidence.transport or ():
        if not is_completion(exchange):
            if run.reply(exchange).generated:  # a completion under another name goes unchecked
                return found(
                    "infra",
                    f"exchange {exchange.id} ({exchange.method} {exchange.path[:80]}) was "
                    "answered with generated text, but is not a completion request",
                    f"transport exchange {exchange.id}",
                )
            continue
        facts = request_facts(exchange, serialization, wanted)
        if not facts.carries:
            return found(
                "infra",
                f"exchange {exchange.id} does not carry {serialization.path} = "
                f"{json.dumps(serialization.value)}"
                + (f" ({clip_text(exchange.error, 600)})" if exchange.error else ""),
                f"transport exchange {exchange.id}",
            )
        conflict = facts.conflict
        if conflict is not None:
            return found(
                "infra",
                f"exchange {exchange.id} also sets {conflict}, which "
                f"{'disables reasoning or names another level' if wanted else 'asks for reasoning'}"
                f" against the effective policy {config.reasoning_policy.effective}",
                f"transport exchange {exchange.id}",
            )
    return found(
        "pass",
        f"policy {config.reasoning_policy.effective} as {serialization.path} = "
        f"{json.dumps(serialization.value)} in every completion request",
    )


def reasoning_contamination(run: Run) -> Check:
    """No reasoning contamination when the effective policy is off (a deployment failure)."""
    config = run.evidence.config
    if config is None:
        return found("infra", "no run configuration")
    if config.reasoning_policy.effective != "off":
        return found(
            "pass",
            f"effective policy {config.reasoning_policy.effective}: reasoning is allowed",
        )
    for exchange in run.evidence.transport or ():  # every exchange: a path proves nothing
        if run.reply(exchange).contaminated:
            return found(
                "fail",
                f"exchange {exchange.id} returned reasoning content with the policy off",
                f"transport exchange {exchange.id}",
            )
    return found("pass", "no reasoning content with the policy off")


def _probe_reply(exchange: TransportExchange) -> tuple[str | None, Any, int | None, Any]:
    """(finish_reason, message, completion_tokens, max_tokens) from an exchange's bodies."""
    finish, message, tokens = read_reply(body_json(exchange.response_body))
    request = body_json(exchange.request_body)
    limit = None
    if isinstance(request, dict):
        limit = request.get("max_completion_tokens", request.get("max_tokens"))
    return finish, message, tokens, limit


def _probe(run: Run, kind: Literal["response", "tool_call"]) -> Check:  # noqa: PLR0911
    probes = [p for p in run.evidence.probes if p.kind == kind]
    if not probes:
        return found("infra", f"no {kind.replace('_', ' ')} probe was recorded")
    probe: DirectProbe = probes[0]
    contract = run.pins.pins.direct_probe
    if probe.contract != contract.contract or probe.ceiling_tokens != (
        contract.total_completion_ceiling_tokens
    ):
        return found(
            "infra",
            f"probe ran under {probe.contract} with {probe.ceiling_tokens} tokens; the pin set "
            f"fixes {contract.contract} with {contract.total_completion_ceiling_tokens}",
        )
    exchange = run.exchanges.get(probe.exchange)
    where = f"transport exchange {probe.exchange}"
    if exchange is None:
        return found(
            "infra",
            f"the probe refers to exchange {probe.exchange}, which the transport log does not hold",
        )
    finish, message, tokens, limit = _probe_reply(exchange)
    if limit != contract.total_completion_ceiling_tokens:
        return found(
            "infra",
            f"the probe request asked for {limit} tokens, not the uniform ceiling of "
            f"{contract.total_completion_ceiling_tokens}",
            where,
        )
    if exchange.status != 200 or exchange.error is not None:
        return found(
            "fail",
            f"the endpoint answered {exchange.status} {exchange.error or ''}".rstrip(),
            where,
        )
    if message is None:
        return found("infra", "the probe's response body was not recorded", where)
    if not isinstance(message, dict):
        return found("fail", "the reply's message is not an object", where)
    got: Any = message.get("content") if kind == "response" else first_tool_call(message)
    if (probe.got is not None and probe.got != got) or (
        probe.finish_reason is not None and probe.finish_reason != finish
    ):
        return found("infra", "the probe record disagrees with its transport exchange", where)
    if finish == "length":
        return found("fail", f"output-limit truncation at {tokens} tokens", where)
    if isinstance(tokens, int) and tokens > contract.total_completion_ceiling_tokens:
        return found(
            "infra",
            f"the reply counts {tokens} completion tokens, past the {limit} asked for: not an "
            "answer under the uniform ceiling",
            where,
        )
    if kind == "response" and (not isinstance(got, str) or not got.strip()):
        return found("fail", "a genuinely empty direct response", where)
    if got != probe.expected:
        return found(
            "fail",
            f"got {json.dumps(got)[:120]}, expected {json.dumps(probe.expected)[:120]}",
            where,
        )
    return found("pass", f"exact {kind.replace('_', ' ')} in {tokens} tokens", where)


def direct_response(run: Run) -> Check:
    """Direct response protocol success (truncation and empty answers are the model's)."""
    return _probe(run, "response")


def tool_call_protocol(run: Run) -> Check:
    """Structured tool-call protocol success: the exact tool call."""
    return _probe(run, "tool_call")


def upstream_checkout(run: Run) -> Check:
    """Exact, clean upstream checkout and compatible structured output (setup: infrastructure)."""
    pins = run.pins.pins
    refused = _unjudgeable(run)
    if refused is not None:
        return refused
    needed = needed_upstreams(run.pins, run.selected)
    checkouts = {u.name: u for u in run.evidence.upstreams}
    problems = []
    for name in needed:
        # another repository or commit is another harness: its outputs are no evidence under
        # these pins, and the consistency checks leave them alone (ADR 0036)
        problem = checkout_problem(run.pins, run.evidence.upstreams, name)
        if problem is None and not checkouts[name].clean:
            problem = f"the {name} checkout is not clean"
        if problem is not None:
            problems.append(problem)
    if problems:  # each harness that is not the pinned one, named (not the first alone)
        return found("infra", clip_text("; ".join(problems), 2048))
    for component in run.selected:
        result = run.evidence.results.get(component)
        if result is not None and result.status == "COMPLETED" and not _output(run, component):
            return found(
                "infra",
                f"{component} completed without a structured output this verifier reads",
            )
        if result is not None and result.status == "COMPLETED":
            for upstream in pins.gates_of(component):
                problem = _gate_problem(run, component, upstream)
                if problem is not None:
                    where = _gate_place(run, component, upstream)
                    return found("infra", problem, where)
    return found("pass", f"{', '.join(needed)} at their pinned commits, clean")


def _gate_place(run: Run, component: str, upstream: str) -> str:
    """The entry of a gate's tallies (its reader's record, bundle_schema/roles)."""
    return gate_record(component, upstream, run.pins.pins.harnesses[upstream].parser)


def _gate_problem(run: Run, component: ComponentName, upstream: str) -> str | None:
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
        problem = tasks_problem(tallies)
        return None if problem is None else f"{component}: its {upstream} gate: {problem}"
    try:
        gate_score(tallies, where)
    except ShardRefused as exc:
        return f"{component}: its {upstream} gate does not aggregate: {exc}"
    return None


def _unjudgeable(run: Run) -> Check | None:
    """A setup the pin set cannot judge: a selected component it pins no harness for, or a
    demo-only pin set and a model not its reference deployment's (its harnesses score synthetic
    answers, so against any other model they are a setup failure, not a result)."""
    pins, model = run.pins.pins, run.evidence.model
    unpinned = [c for c in run.selected if c not in pins.component_upstreams]
    if unpinned:
        return found(
            "infra",
            f"pin set {run.pins.id} pins no upstream harness for {', '.join(unpinned)}: "
            f"profile {run.evidence.profile} cannot be completed under it",
        )
    if pins.judges(model.runtime_model_id, model.digest):
        return None
    reference = pins.reference
    expected = f"{reference.runtime_model_id} {reference.model_digest}" if reference else "none"
    return found(
        "infra",
        f"pin set {run.pins.id} is demo only: its reference harnesses score synthetic answers "
        f"and cannot judge {model.runtime_model_id} {model.digest} (its reference deployment: "
        f"{expected}); qualify a real deployment under a pin set of real upstream harnesses",
    )


def _output(run: Run, component: ComponentName) -> bool:
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


def upstream_integrity(run: Run) -> Check:
    """Upstream self-integrity/golden gates (an untrustworthy harness is infrastructure)."""
    spark = run.evidence.spark_quality
    if not run.has(*SPARK) or spark is None:
        return found(
            "not_selected" if not run.has(*SPARK) else "pass",
            "no SparkBench output to check",
        )
    # Spark Bench's reader says whether the run reported the two at all (its coding metric,
    # held to the raw outputs): one not reported is not passed, and the reason says which
    coding = run.evidence.results.get("coding")
    unreported = coding is not None and coding.metrics.get("spark_gates_reported") == 0
    checks = (
        ("golden gate", spark.golden_gate == "PASS"),
        ("self-integrity", spark.self_integrity == "PASS"),
        ("run-valid marker", spark.run_valid),
    )
    missing = [n for n, ok in checks if not ok and unreported and n != "self-integrity"]
    failed = [n for n, ok in checks if not ok and n not in missing]
    parts = [f"SparkBench {', '.join(failed)} failed"] if failed else []
    if missing:
        parts.append(
            f"SparkBench reported no {' or '.join(missing)} (a gate not reported is not passed)"
        )
    if parts:
        return found("infra", "; ".join(parts))
    return found("pass", "golden gate, self-integrity and run-valid pass")


def sampling_contamination(run: Run) -> Check:
    """No upstream-reported sampling contamination (the deployment's sampling: a failure)."""
    spark = run.evidence.spark_quality
    if not run.has(*SPARK):
        return found("not_selected", "SparkBench not selected")
    if spark is not None and spark.sampling_contamination:
        return found("fail", "SparkBench reports sampling contamination")
    return found("pass", "no sampling contamination reported")


def cleanup(run: Run) -> Check:
    """Run-owned candidate/runtime cleanup after evidence preservation (infrastructure)."""
    config = run.evidence.config
    if config is None or config.cleanup != "removed":
        state = "not recorded" if config is None else config.cleanup
        return found("infra", f"run-owned processes and files: cleanup {state}")
    for task in selected_tasks(run) or ():
        if task.cleanup != "removed":
            return found("infra", f"task {task.task}: candidate cleanup {task.cleanup}")
    return found("pass", "run-owned processes and files removed after preservation")


# the kinds of evidence the gates read
_EXCHANGES = "transport-exchange"
_PROBE = "direct-probe"
_CONFIG = "run-config"
_SPARK = "spark-quality"
_TASKS = "hermes-task"
_LEDGER = "socket-ledger"
_TREE = "tree"
_RESULT = "component-result"

GATES: tuple[Gate, ...] = (
    Gate("model_identity", (_EXCHANGES,), "identity", model_identity),
    Gate("local_endpoint", (_EXCHANGES,), "endpoint", local_endpoint),
    Gate("direct_response", (_PROBE, _EXCHANGES), "runner", direct_response),
    Gate("tool_call_protocol", (_PROBE, _EXCHANGES), "runner", tool_call_protocol),
    Gate("upstream_checkout", (_TREE, _RESULT), "setup", upstream_checkout),
    Gate("upstream_integrity", (_SPARK,), "harness", upstream_integrity),
    Gate("sampling_contamination", (_SPARK,), "setup", sampling_contamination),
    Gate("reasoning_contamination", (_CONFIG, _EXCHANGES), "setup", reasoning_contamination),
    Gate("reasoning_serialization", (_CONFIG, _EXCHANGES), "runner", reasoning_serialization),
    Gate("transport_evidence", (_CONFIG, _EXCHANGES), "observer", transport_evidence),
    Gate("network_isolation", (_LEDGER, _EXCHANGES), "isolation", network_isolation),
    Gate("hermes_time_limits", (_TASKS,), "harness", hermes_time_limits),
    Gate("hermes_evidence", (_TASKS,), "harness", hermes_evidence),
    Gate("hermes_evaluator", (_TASKS,), "evaluator", hermes_evaluator),
    Gate("allowed_changes", (_TASKS,), "setup", allowed_changes),
    Gate("cleanup", (_CONFIG, _TASKS), "runner", cleanup),
)
"""Every hard gate of seed 000 in the seed's order (the thresholds are judged separately)."""
