"""Figures measured on exchanges, and what else a completed component's harness is held to.

Probe and Infermark figures agree with the exchanges they were measured on, each probe asked
what its contract fixes, and the log's exchange ids skip none. Beside them: a completed
component's harness is held to its pinned data listings and environment, checkout evidence of an
upstream the manifest does not name is a finding, and the raw outputs no reader reads are listed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import statistics
from collections.abc import Collection, Iterator
from typing import Any

from bundle_schema.documents import KINDS, parse_document
from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    DirectProbe,
    Finding,
    Gx10Evidence,
    HarnessEnvironment,
    TransportExchange,
)
from pins import PROBE_CONTRACTS, PinSetSource, missing_requirements, other_files
from verify._consistency._common import SPAN_SLACK_S, TTFT_SLACK_S, Reader, _disagrees, _finding
from verify._consistency.latencies import FIGURES, latency_problems
from verify._facts import ReplyFacts, infermark_facts, infermark_payload, reply_facts
from verify.harness_outputs import INFERMARK_JSON, READS, raw_name
from verify.infermark import (
    DEFAULT_PROMPT,
    DEFAULT_TIMEOUT,
    InfermarkRun,
    body_digest,
    infermark_run,
)
from verify.replies import body_json, read_reply

PROBE_PLACES = {"response": "probes/direct-response.json", "tool_call": "probes/tool-call.json"}
"""The logical name of each probe's record (bundle_schema/roles.py)."""


def _probed(evidence: Gx10Evidence) -> Iterator[tuple[DirectProbe, str, TransportExchange | None]]:
    """Each probe record, its logical name and the exchange it names (None: not in the log)."""
    exchanges = {e.id: e for e in evidence.transport or ()}
    for probe in evidence.probes:
        yield probe, PROBE_PLACES[probe.kind], exchanges.get(probe.exchange)


def _probes(evidence: Gx10Evidence) -> list[Finding]:
    findings = []
    for probe, name, exchange in _probed(evidence):
        if exchange is None:
            continue  # the transport gate says so
        finish, _message, tokens = read_reply(body_json(exchange.response_body))
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        if probe.completion_tokens != tokens or probe.finish_reason != finish:
            findings.append(
                _disagrees(
                    name,
                    f"the probe records {probe.completion_tokens} tokens and finish "
                    f"{probe.finish_reason!r}; exchange {probe.exchange} says {tokens} and "
                    f"{finish!r}",
                )
            )
    return findings


def _pinned_infermark(pins: PinSetSource, model: str) -> InfermarkRun | None:
    """The pinned Infermark command as ``infermark run`` reads it (``model``: the run's runtime
    model id, for ``{model}``), where the pin set runs Infermark's CLI for performance with
    options this reader knows."""
    upstream = pins.pins.component_upstreams.get("performance")
    harness = pins.pins.harnesses.get(upstream) if upstream is not None else None
    if harness is None or harness.parser != "infermark":
        return None
    return infermark_run(harness.command, model)


def _infermark(
    evidence: Gx10Evidence, pins: PinSetSource, read: Reader, foreign: Collection[str] = ()
) -> list[Finding]:
    """Infermark's report held to the performance exchanges, each read as Infermark's client
    reads it (:mod:`verify.infermark`): its requests, errors, tokens (visible chunks) and
    wall, and a TTFT median no lower than the observer's; its report's latency, TTFT and ITL
    figures within what the observer saw (:mod:`.latencies`); and, where the pin set runs
    Infermark's CLI, each performance exchange the request the pinned command sends, no other
    exchange that request, and the report's configuration the pinned one (not where the
    performance harness is ``foreign``: its requests are another harness's, ADR 0036)."""
    record = evidence.infermark
    name = "components/performance/infermark-c1.json"
    if record is None or evidence.transport is None:
        return []
    measured = [e for e in evidence.transport or () if e.component == "performance"]
    problems = []
    upstream = pins.pins.component_upstreams.get("performance")
    model = evidence.model.runtime_model_id
    run = _pinned_infermark(pins, model) if upstream not in foreign else None
    if run is not None and record.requests != run.requests:
        problems.append(f"{record.requests} requests; the pinned command makes {run.requests} (-n)")
    timeout = run.timeout if run is not None else DEFAULT_TIMEOUT
    counted = [
        (i, r.under(timeout))
        for i, e in enumerate(measured)
        if (r := infermark_facts(e)) is not None
    ]
    readings = [r for _, r in counted]
    errors = sum(r.failed for r in readings)
    tokens = sum(r.tokens for r in readings)
    if record.requests != len(measured):
        problems.append(f"{record.requests} requests, the log holds {len(measured)}")
    if record.errors != errors:
        problems.append(
            f"{record.errors} errors, Infermark's reading of the exchanges fails {errors}"
        )
    if record.visible_chunks != tokens:
        problems.append(
            f"{record.visible_chunks} visible chunks, Infermark's reading of the streams counts "
            f"{tokens}"
        )
    rate = record.visible_chunks / record.wall_seconds if record.wall_seconds > 0 else 0.0
    if not math.isclose(float(record.tokens_per_second), rate, rel_tol=1e-6, abs_tol=1e-9):
        problems.append(
            f"{record.tokens_per_second} chunk/s is not {record.visible_chunks} chunks over "
            f"{record.wall_seconds} s"
        )
    ends = [_end(e, reply_facts(e)) for e in measured]
    span = max(ends) - min(e.started for e in measured) if measured else None
    busy = sum(end - e.started for e, end in zip(measured, ends, strict=True))  # one after another
    if span is not None and record.wall_seconds + SPAN_SLACK_S < span:
        problems.append(f"a wall of {record.wall_seconds} s, the exchanges span {span:.3f} s")
    elif record.wall_seconds + SPAN_SLACK_S < busy:  # at concurrency 1
        problems.append(
            f"a wall of {record.wall_seconds} s at concurrency 1; its {len(measured)} "
            f"exchanges took {busy:.3f} s one after another"
        )
    problems += _ttft(record.ttft_p50_seconds, [r.first for r in readings if r.first is not None])
    findings = [_disagrees(name, f"the record says {p}", path=name) for p in problems]
    raw = raw_name("performance", INFERMARK_JSON)
    report = _report(read(raw))
    stats = _reported_stats(report)
    if stats is not None:
        read_ok = [(r, ends[i] - measured[i].started) for i, r in counted if not r.failed]
        told = [
            (r.first, r.last, r.tokens)
            for r, _ in read_ok
            if r.first is not None and r.last is not None
        ]
        problems = latency_problems(
            stats,
            record.wall_seconds,
            spans=[span for _, span in read_ok],
            firsts=[first for first, _, _ in told],
            lasts=[last for _, last, _ in told],
            gaps=sum(tokens - 1 for _, _, tokens in told),
        )
        findings += [_disagrees(raw, f"the report says {p}") for p in problems]
    if run is not None:
        findings += _infermark_requests(evidence, run, report)
    return findings


def _report(data: bytes | None) -> Any:
    """Infermark's raw report parsed (None: absent, or not JSON: its reader says so)."""
    try:
        return json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None


def _reported_stats(report: Any) -> dict[str, dict[str, float] | None] | None:
    """The ``latency``, ``ttft`` and ``itl`` figures of Infermark's report (its one level's),
    each a mapping of :data:`verify._consistency.latencies.FIGURES` or None; None where the
    report does not read so (its reader says what does not read)."""
    if report is None:
        return None
    try:
        level = report["results"][0]
        stats: dict[str, dict[str, float] | None] = {}
        for key in ("latency", "ttft", "itl"):
            value = level.get(key)  # the reader requires each key; None: no figures
            if value is not None and not all(type(value[f]) in (int, float) for f in FIGURES):
                return None
            stats[key] = {f: float(value[f]) for f in FIGURES} if value is not None else None
    except (ValueError, LookupError, TypeError, RecursionError, OverflowError):
        return None
    if any(not math.isfinite(f) for value in stats.values() for f in (value or {}).values()):
        return None
    return stats


def _ttft(p50: float | None, firsts: list[float]) -> list[str]:
    """Infermark's TTFT median (None: it measured none) against the first tokens' lines as
    the observer timed them: it has one exactly when a request read a token, and it is no
    lower than theirs (its clock starts before the request is sent)."""
    if p50 is None:
        return [f"no TTFT, and {len(firsts)} requests read a token"] if firsts else []
    if not firsts:
        return [f"a TTFT p50 of {p50} s, and no request read a token"]
    if p50 + TTFT_SLACK_S < (median := statistics.median(firsts)):
        return [
            f"a TTFT p50 of {p50} s, the observer saw the first tokens' lines at a median "
            f"{median:.3f} s"
        ]
    return []


def _infermark_requests(evidence: Gx10Evidence, run: InfermarkRun, report: Any) -> list[Finding]:
    """Each performance exchange asked what the pinned command sends, to its path, its body
    the very bytes the observer forwards of it (:meth:`InfermarkRun.body`); no exchange of
    another component asked it; and the report's ``config`` is the pinned command's."""
    entry = "transport/exchanges.jsonl"
    policy = evidence.config.reasoning_policy if evidence.config is not None else None
    body = run.body(policy.serialization if policy is not None else None)
    wanted, path = body_digest(body), run.path()
    findings = []
    for exchange in evidence.transport or ():
        asks = infermark_payload(exchange) == wanted and exchange.method == "POST"
        if exchange.component == "performance" and not (
            asks and (path is None or exchange.path == path)
        ):
            findings.append(_disagrees(entry, f"performance exchange {exchange.id} "
                                              f"({exchange.method} {exchange.path}) is not the "
                                              f"request the pinned Infermark command sends "
                                              f"({_shown(body.decode())})"))  # fmt: skip
        elif exchange.component != "performance" and asks:
            findings.append(_disagrees(entry, f"exchange {exchange.id} of "
                                              f"{exchange.component or 'no component'} asked "
                                              "what the pinned Infermark command sends: a "
                                              "performance request is performance's"))  # fmt: skip
        if len(findings) >= _MAX_SAID:
            break
    raw = raw_name("performance", INFERMARK_JSON)
    config = report.get("config") if isinstance(report, dict) else None  # else: its reader's
    if isinstance(config, dict):
        pinned = {"prompt_length": len(run.prompt or DEFAULT_PROMPT),
                  "max_tokens": run.max_tokens, "n_requests": run.requests}  # fmt: skip
        differ = [
            f"{key} {_shown(config.get(key))} (pinned: {value})"
            for key, value in pinned.items()
            if not (type(config.get(key)) is int and config.get(key) == value)
        ]
        if differ:
            findings.append(_disagrees(raw, f"the report's config says {'; '.join(differ)}"))
    return findings


_MAX_SAID = 20
"""The most exchanges named of one performance log (the rest are the same finding)."""


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:160]


def _end(exchange: TransportExchange, facts: ReplyFacts) -> float:
    """The last thing the observer saw of an exchange (``facts``: its reply's): its end, or its
    last chunk where that came later or no end is recorded (an end left out, or set before the
    chunks, never makes an exchange shorter)."""
    last = exchange.started + facts.last_chunk
    return max(last, exchange.ended if exchange.ended is not None else last)


def _probe_contracts(evidence: Gx10Evidence) -> list[Finding]:
    """Each probe asked and expected what its contract fixes (``pins/_probes.py``), never what
    its record says: the prompt of its exchange's request, the tools offered, the answer that
    passes, and the exchange is one the probes made."""
    findings = []
    for probe, name, exchange in _probed(evidence):
        contract = PROBE_CONTRACTS.get(probe.contract)
        if contract is None:
            continue  # the probe gate says the contract is not the pinned one
        problems = []
        wanted = contract.expected(probe.kind)
        if probe.expected != wanted:
            problems.append(f"it expects {json.dumps(probe.expected)[:120]}; its contract "
                            f"{probe.contract} expects {json.dumps(wanted)}")  # fmt: skip
        if exchange is not None:
            request = body_json(exchange.request_body)
            messages = request.get("messages") if isinstance(request, dict) else None
            last = messages[-1] if isinstance(messages, list) and messages else None
            asked = last.get("content") if isinstance(last, dict) else None
            prompt = contract.prompt(probe.kind)
            if asked != prompt:
                problems.append(f"exchange {probe.exchange} asked {json.dumps(asked)[:120]}, "
                                f"not the contract's {json.dumps(prompt)}")  # fmt: skip
            tools = request.get("tools") if isinstance(request, dict) else None
            if probe.kind == "tool_call" and tools != [dict(contract.tool)]:
                problems.append(
                    f"exchange {probe.exchange} offered other tools than the contract's"
                )
            for key, pinned in contract.sampling.items():  # the sampling the contract pins
                given = isinstance(request, dict) and key in request
                value = request[key] if given else None
                if not given or type(value) not in (int, float) or value != pinned:
                    shown = f"{key} {json.dumps(value)[:60]}" if given else f"no {key}"
                    problems.append(f"exchange {probe.exchange} asked with {shown}, not the "
                                    f"contract's pinned {key} {json.dumps(pinned)}")  # fmt: skip
            if exchange.component != "probes":
                problems.append(
                    f"exchange {probe.exchange} is {exchange.component!r}'s, not a probe's"
                )
            sent = _without_policy(request, evidence)
            wanted_request = contract.request(
                probe.kind, evidence.model.runtime_model_id, probe.ceiling_tokens
            )
            if not problems and sent != wanted_request:
                keys = sorted(
                    k for k in {*sent, *wanted_request} if sent.get(k) != wanted_request.get(k)
                )
                problems.append(
                    f"exchange {probe.exchange} asked otherwise than the contract's request "
                    f"({', '.join(keys)[:200]} differ): a probe asks the contract's question alone"
                )
        findings += [_disagrees(name, p) for p in problems]
    return findings


def _without_policy(request: object, evidence: Gx10Evidence) -> dict[str, Any]:
    """A recorded request body without the run's reasoning policy where its serialization
    writes it (and the objects it made on the way, left empty): what the runner sent before the
    observer wrote the policy in. The policy itself is the reasoning gates' to check."""
    config = evidence.config
    serialization = config.reasoning_policy.serialization if config is not None else None
    if serialization is None:
        return copy.deepcopy(request) if isinstance(request, dict) else {}
    return serialization.removed_from(request)


def _exchange_ids(evidence: Gx10Evidence) -> list[Finding]:
    """The observer numbers exchanges 0, 1, 2, ... as it receives them and writes them in that
    order: a log whose ids skip lost an exchange, whatever count the run config states."""
    for expected, exchange in enumerate(evidence.transport or ()):
        if exchange.id != expected:
            return [
                _disagrees(
                    "transport/exchanges.jsonl",
                    f"exchange ids go from {expected - 1} to {exchange.id}: an exchange is "
                    "missing from the log",
                    expected=str(expected),
                    got=str(exchange.id),
                )
            ]
    return []


def _unknown_upstreams(evidence: Gx10Evidence, names: Collection[str]) -> list[Finding]:
    """Checkout evidence of an upstream the manifest does not name: evidence of nothing."""
    known = {u.name for u in evidence.upstreams}
    return [
        _finding(
            "checkout_mismatch",
            name,
            f"{name}: checkout evidence of {name.split('/')[1]!r}, an upstream the manifest "
            "does not name",
        )
        for name in sorted(names)
        if name.startswith("upstreams/") and name.split("/")[1] not in known
    ]


def _completed_by(upstream: str, evidence: Gx10Evidence, pins: PinSetSource) -> list[str]:
    """The components a harness completed, or partly completed (a partial one is scored too,
    so it is held to the same pins): the ones it is the upstream of, and those it gates where
    its gate passed (a gate that did not run is upstream_checkout's). A partial one is named
    ``<component> (partial)``."""
    return [
        c if result.status == "COMPLETED" else f"{c} (partial)"
        for c, u in pins.pins.component_upstreams.items()
        if (
            u == upstream
            or (upstream in pins.pins.gates_of(c) and upstream in evidence.supplementary.get(c, {}))
        )
        and (result := evidence.results.get(c)) is not None
        and result.status in ("COMPLETED", "PARTIAL")
    ]


def pinned_listings(pins: PinSetSource, foreign: Collection[str] = ()) -> set[str]:
    """The data listings the pin set pins, which the verifier reads, but a ``foreign``
    harness's (ADR 0036; any other is unread)."""
    return {
        f"upstreams/{upstream}/data/{name}.jsonl"
        for upstream, harness in pins.pins.harnesses.items()
        if upstream not in foreign
        for name in harness.data
    }


def _data_listings(
    evidence: Gx10Evidence, pins: PinSetSource, read: Reader, foreign: Collection[str] = ()
) -> list[Finding]:
    """A component completed by a harness the pins give data directories holds only when the
    listing kept of each is the one the pin set pins (its SHA-256 is the pin); not held against
    a ``foreign`` harness (ADR 0036)."""
    findings = []
    for upstream, harness in sorted(pins.pins.harnesses.items()):
        pinned_data = bool(harness.data) and upstream not in foreign
        completed = _completed_by(upstream, evidence, pins) if pinned_data else []
        for name, pinned in sorted(harness.data.items()) if completed else ():
            entry = f"upstreams/{upstream}/data/{name}.jsonl"
            data = read(entry)
            digest = None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()
            if digest != pinned:
                shown = "no listing shows" if digest is None else f"lists as {digest}, not"
                findings.append(
                    _disagrees(
                        entry,
                        f"{', '.join(completed)} completed by {upstream}, whose pinned data "
                        f"directory {name} {shown} the pinned {pinned}",
                        expected=pinned,
                        got=digest or "none",
                    )
                )
    return findings


def _environments(
    evidence: Gx10Evidence, pins: PinSetSource, read: Reader, foreign: Collection[str] = ()
) -> list[Finding]:
    """A component completed by a harness the pins give requirements or variables holds only
    when the recorded environment of that harness shows every requirement among its
    interpreter's distributions, every pinned files digest (ADR 0042) and every pinned variable
    with its pinned value. A ``foreign`` harness's environment is not held to the pins
    (ADR 0036)."""
    findings = []
    for upstream, harness in sorted(pins.pins.harnesses.items()):
        if upstream in foreign or not (harness.requirements or harness.env):
            continue
        completed = _completed_by(upstream, evidence, pins)
        if not completed:
            continue
        entry = f"upstreams/{upstream}/environment.json"
        who = f"{', '.join(completed)} completed by {upstream}"
        record, problem = _environment_record(read(entry), entry, upstream)
        if record is None:
            findings.append(
                _disagrees(
                    entry,
                    f"{who}, whose pinned environment no readable environment record shows "
                    f"({problem})",
                )
            )
            continue
        variables = record.variables
        lacking = missing_requirements(harness.requirements, record.distributions)
        if lacking:
            findings.append(
                _disagrees(entry, f"{who}, whose interpreter lacks the pinned {', '.join(lacking)}")
            )
        if files := other_files(harness.installed, record.installed, "nothing recorded"):
            said, pinned, got = files
            findings.append(
                _disagrees(entry, f"{who}, whose interpreter {said}", expected=pinned, got=got)
            )
        other = [n for n, v in sorted(harness.env.items()) if variables.get(n) != v]
        if other:
            name = other[0]
            shown = json.dumps(variables.get(name))[:80] if name in variables else "not set"
            findings.append(
                _disagrees(
                    entry,
                    f"{who}, which ran with {name} {shown}, not the pinned "
                    f"{json.dumps(harness.env[name])[:80]}",
                    expected=harness.env[name][:200],
                    got=None if name not in variables else str(variables[name])[:200],
                )
            )
    return findings


def _environment_record(
    data: bytes | None, entry: str, upstream: str
) -> tuple[HarnessEnvironment | None, str]:
    """The environment record at ``entry`` if it reads as one of ``upstream``'s harness, else
    None and why not. Strict: a repeated key, NaN, a member of no meaning or a version this
    verifier does not read is no record; nor is one that names another harness (a record
    copied from another harness's place is not this one's)."""
    if data is None:
        return None, f"{entry} is not in the bundle"
    try:
        record: HarnessEnvironment = parse_document(KINDS["harness-environment"], data, entry)
    except InvalidInput as exc:
        return None, str(exc)
    if record.upstream != upstream:
        return None, f"{entry}: the environment of {record.upstream!r}, not of {upstream!r}"
    return record, ""


def unread_raw_outputs(
    pins: PinSetSource, names: Collection[str], foreign: Collection[str] = ()
) -> list[str]:
    """Raw outputs no reader reads: at the raw place of a component whose harness has no
    reader or is ``foreign`` (another harness's outputs, ADR 0036), or files its reader does
    not open. Kept as evidence; listed as unread."""
    upstreams = pins.pins.component_upstreams
    unread = []
    for name in sorted(names):
        gate = name.split("/", 5)
        if len(gate) == 6 and gate[0] == "components" and gate[2] == "gates" and gate[4] == "raw":
            # a gate's raw output: read when the pins run that upstream as that component's gate
            gated = gate[3] in pins.pins.gates_of(gate[1]) and gate[3] not in foreign
            if not gated or not READS[pins.pins.harnesses[gate[3]].parser](gate[5]):
                unread.append(name)
            continue
        parts = name.split("/", 3)
        if len(parts) < 4 or parts[0] != "components" or parts[2] != "raw":
            continue
        upstream = upstreams.get(parts[1], "")  # type: ignore[call-overload]
        harness = None if upstream in foreign else pins.pins.harnesses.get(upstream)
        if harness is None or not READS[harness.parser](parts[3]):
            unread.append(name)
    return unread
