"""Hostile tests of 2026-12-05 (transport): an adversarial publisher against the gates re-derived
from the transport log and the network ledger (``verify/gx10/gates.py``, ``verify/replies.py``,
``verify/_facts.py``, ``verify/_consistency/exchanges.py`` ``_probes`` / ``_probe_contracts`` /
``_infermark``, ``verify/socket_trace.py``, ``verify/_ledger_trace.py``).

Every bundle attack starts from the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar: policy off, serialization
``chat_template_kwargs.enable_thinking = false``), edits its exchanges, probes, Infermark output,
traces and ledger, and reseals it with claims that repeat its own replay (``resealed_as_replayed``):
integrity holds and the claims match, so only the gates and the cross-checks can tell.

Two kinds of attack: the publisher changes only what the runner *asked* or how it *labelled*
what it recorded (the endpoint's answers stay genuine: cheaper than the "wholly fabricated
run" the threat model leaves open), or the publisher changes nothing and the verifier misreads
what an honest observer recorded from a dishonest endpoint (threat model class 5 and "a dishonest
endpoint": "the gates read the exchanges themselves").

Holes (each test asserts the safe behaviour and failed on the code as found). Fixed the same
day: 1 (pid, port and time bounded in ``verify/socket_trace.py``), 2 (a probe's request held to
``pins.ProbeContract.request``, the policy aside: ``_consistency._without_policy``), 3 (a reply
past the ceiling is infra), 5 (``_consistency._span`` takes the last chunk too), 10
(``THINK_TAGS``, ignoring case) and 13 (``verify.exchange.is_json``; indentation capped); then
4 (Infermark's request count held to the pinned ``-n``: ``_consistency._pinned_infermark``), 6
to 9 (``verify/replies.py``: a body that is no one JSON value read as a stream, server-sent
events framed per their specification, responses API events read where they nest, the
messages API and llama.cpp's ``/completion`` and ``/infill`` among the completion endpoints).
12 by ``verify._facts.asks_a_probe`` (an exchange of any component asking a probe's question
alone must be a probe record's). Left open, a strict xfail: 11 (threat-model.md).

1. ``audit verify`` crashes with a traceback (ValueError) on a sandbox trace line whose pid or
   port has more than 4,300 digits (``int()`` in ``trace_entries`` / ``_address``), or whose time
   is a 400-digit number (``t = inf`` passes the model, ``canonical_bytes`` then refuses it in
   ``_ledger_trace.trace_findings``). Only TraceError and OSError are caught there.
2. The probe contract checks the last message's text, the tools and the pinned sampling keys,
   nothing else of the request (``_probe_contracts``): a probe asked with a coaching system
   message before the contract's prompt, or with a llama.cpp ``grammar`` that only admits the
   expected answer, is a genuine exchange whose honest reply passes ``direct_response``.
3. A probe reply that spent more completion tokens than the uniform 1,024-token ceiling (an
   engine that ignored ``max_tokens``) passes: the tokens are only compared with the record
   (``_probes``), never with the ceiling (``_probe``).
4. Infermark's request count is never held to the pinned ``-n 20``: a failed performance request
   relabelled to a selected harness component (an exchange's ``component`` is the observer's
   phase label, checked by nothing) and a report of 19 requests, 0 errors, turns a performance
   score of 0 into 100 (``_infermark`` in verify/harness_outputs.py and
   verify/_consistency/exchanges.py).
5. The Infermark wall's bound ("its wall encloses their span") ignores the chunk times and
   drops exchanges whose ``ended`` is null (the observer always writes it): performance
   exchanges with ``ended: null`` (not counted as errors either) or ``ended: 0.0`` let the
   report claim any wall, so any chunk rate (``_consistency._span``): 1,000 chunk/s over
   the recorded 38.8 s of chunks, integrity ok. (The recorded run already scores 100 at 120
   chunk/s; on a run under 10 chunk/s this is the throughput half of the score.)
6. An Ollama ``/api/chat`` stream is served as ``application/x-ndjson``, which the observer
   records as a whole body (only ``text/event-stream`` becomes chunks); ``body_json`` of several
   JSON lines is None, so its ``message.thinking`` and its ``model`` are never read: reasoning
   with the policy off, and another model answering, both pass (``replies.read_exchange``).
7. Server-sent-event framings the harnesses' clients read (the openai client's SSEDecoder
   splits on CR, LF and CRLF and joins multi-line ``data:`` fields) are unread by ``sse_events``,
   which splits on LF only and parses each ``data:`` line alone: ``reasoning_content`` in a
   CR-framed stream, or in an event whose JSON spans two ``data:`` lines, passes.
8. A streamed ``/v1/responses`` reply nests its ``model`` and its output items under
   ``response`` (``response.created`` / ``response.completed``) and ``item``
   (``response.output_item.added``): another model answering, and a reasoning item, pass
   (``replies._read_value`` reads ``model`` and ``output`` at the top level only).
9. Completion endpoints outside ``COMPLETION_SUFFIXES``: llama.cpp's native ``/completion``
   (a ``content`` string at the top level) and the Anthropic-style ``/v1/messages`` that
   llama.cpp, vLLM and Ollama serve (``content`` parts of type ``thinking``): the reply's
   reasoning is unread and its text is not "generated", so neither ``reasoning_contamination``
   nor ``reasoning_serialization`` looks at it (``replies._read_value``, ``is_completion_path``).
10. Thinking markup other than ``<think>``/``<thinking>`` (``THINK_TAGS``): Magistral's
    ``[THINK]...[/THINK]`` and gpt-oss's harmony ``<|channel|>analysis<|message|>`` in visible
    content pass ``reasoning_contamination``.
11. The sandbox is ``unshare --net`` alone, so a filesystem AF_UNIX socket (``/var/run/
    docker.sock``, a proxy's socket) is reachable from inside it; the ledger records the
    attempt and ``network_isolation`` passes every AF_UNIX entry, saying "211 connect()
    attempts, all loopback" (``_facts.LedgerTally``, ``gates.network_isolation``).
12. A retried probe is an orphan only while labelled ``probes``: the failed first attempt
    relabelled ``coding`` (a selected component; component blocks are not checked to be the
    observer's contiguous phases, nor harness exchanges to be no probe) is accounted for, and the
    retry that answered READY passes ``direct_response`` (``gates._reference_problem``).
13. ``audit show --exchange N --json`` re-indents a JSON body only to name its form
    (``exchange._facts`` -> ``pretty_json``), and the re-indented text is the body's size times
    its depth: a 100 KB body 900 deep takes about 90 MB (a 16 MiB record line: gigabytes).

Held: a failed performance request recorded as it happened scores performance 0 (the baseline
of hole 4), the same NDJSON stream recorded as chunks (read), LF-framed single-line SSE
reasoning (found), an IPv4-mapped IPv6 address in the ledger (not loopback: isolation fails), a
serialization carried as the string ``"false"`` (not carried: infra), a probe whose record
claims other tokens than its exchange (a finding), a trace line at the 1 MiB cap (refused with a
reason, no traceback).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundle_schema import canonical_bytes
from bundle_schema.models import TransportExchange, Verdict
from pins import load_builtin, pin_set_source
from tests.data.hostile.kit import (
    Files,
    audit_process,
    lines,
    put_json,
    put_lines,
    reseal,
)
from tests.gate_kit import RECORDED_TAR, Recorded, forged, unpacked_recorded
from tests.paths import ROOT
from verify import verify_bundle
from verify._consistency.exchanges import _end, _pinned_infermark
from verify._consistency.latencies import FIGURES, figures
from verify._facts import reply_facts
from verify.harness_outputs import read_outputs
from verify.infermark import infermark_reading
from verify.socket_trace import trace_entries

TAR = RECORDED_TAR
LOG = "transport/exchanges.jsonl"
CONFIG = "run/config.json"
LEDGER = "network/socket-ledger.jsonl"
TRACES = (
    "network/strace/000000-tool_instruction.txt",
    "network/strace/000187-performance.txt",
    "network/strace/000188-coding.txt",
)
LAST_TRACE = TRACES[-1]
RESPONSE_PROBE = "probes/direct-response.json"
TOOL_PROBE = "probes/tool-call.json"
INFERMARK_RAW = "components/performance/raw/infermark.json"
INFERMARK = "components/performance/infermark-c1.json"
PERFORMANCE = "components/performance/result.json"
MODEL = "smollm2-135m-instruct"
CODING_EXCHANGE = 213
"""A streamed chat completion of Spark Bench (coding)."""
PROBE_EXCHANGE = 4
"""The exact-answer probe's exchange (the model answered a sentence, not READY)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


# --- forging ------------------------------------------------------------------------------------


def _forge(recorded: Recorded, target: Path, edit: Callable[[Files], None]) -> Verdict:
    """The recorded bundle edited, resealed with claims equal to its replay, and verified."""
    return verify_bundle(forged(recorded, target, edit)).verdict


def _gate(verdict: Verdict, gate_id: str) -> str:
    return next(g.status for g in verdict.gates if g.id == gate_id)


def _findings(verdict: Verdict, entry: str | None = None) -> list[str]:
    return [
        f"{f.code}: {f.message}"
        for f in verdict.integrity.findings
        if entry is None or f.entry == entry
    ]


def _honest(verdict: Verdict) -> None:
    """The forgery verified as one consistent account: integrity ok, the claims its replay."""
    assert verdict.integrity.status == "ok", _findings(verdict)
    assert verdict.claims.match, verdict.claims.differences


def _edit_exchanges(files: Files, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    exchanges = lines(files, LOG)
    edit(exchanges)
    put_lines(files, LOG, exchanges)


def _edit_exchange(files: Files, number: int, edit: Callable[[dict[str, Any]], None]) -> None:
    def one(exchanges: list[dict[str, Any]]) -> None:
        (exchange,) = [e for e in exchanges if e["id"] == number]
        edit(exchange)

    _edit_exchanges(files, one)


def _json_of(files: Files, name: str) -> Any:
    return json.loads(files[name][0])


def _utf8(value: Any) -> dict[str, str]:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return {"encoding": "utf-8", "data": text}


def _sse(events: list[Any], newline: str = "\n") -> list[dict[str, Any]]:
    """A server-sent-event stream, one event a chunk, 10 ms apart."""
    chunks = [
        {"data": f"data: {json.dumps(e)}{newline}{newline}", "t": 0.05 + 0.01 * i}
        for i, e in enumerate(events)
    ]
    chunks.append({"data": f"data: [DONE]{newline}{newline}", "t": 0.05 + 0.01 * len(events)})
    return chunks


def _delta(delta: dict[str, Any], model: str = MODEL) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


def _streamed(files: Files, chunks: list[dict[str, Any]], **fields: Any) -> None:
    """The coding exchange answered with ``chunks`` (its other fields changed by ``fields``)."""

    def edit(exchange: dict[str, Any]) -> None:
        exchange["chunks"] = chunks
        exchange["response_body"] = None
        exchange.update(fields)

    _edit_exchange(files, CODING_EXCHANGE, edit)


REASONING_STREAM = [
    _delta({"role": "assistant"}),
    _delta({"reasoning_content": "The user wants a parser. Let me think step by step."}),
    _delta({"content": "def parse_csv_typed(text):"}),
    _delta({"content": " return []"}),
]
"""A chat stream that reasons with the policy off (what a honest gate must find)."""


# --- 1. the trace parser on hostile numbers -----------------------------------------------------

_CONNECT = (
    "{pid}<python> {t} connect(6, {{sa_family=AF_INET, sin_port=htons({port}), "
    'sin_addr=inet_addr("127.0.0.1")}}, 16) = 0\n'
)


@pytest.mark.parametrize(
    "line",
    [
        _CONNECT.format(pid="1" * 5000, t="1796132029.5", port=18080),
        _CONNECT.format(pid="29201", t="9" * 400 + ".0", port=18080),
        _CONNECT.format(pid="29201", t="1796132029.5", port="9" * 5000),
    ],
    ids=["pid-5000-digits", "time-400-digits", "port-5000-digits"],
)
def test_a_trace_line_of_huge_numbers_is_a_finding_not_a_traceback(
    recorded: Recorded, tmp_path: Path, line: str
) -> None:
    manifest, original = recorded
    files = dict(original)
    data, media = files[LAST_TRACE]
    files[LAST_TRACE] = (data + line.encode(), media)
    reseal(tmp_path / "bundle", manifest, files, {})
    done = audit_process(["verify", "--json", str(tmp_path / "bundle")])
    assert "Traceback" not in done.stderr, done.stderr[-800:]
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr[-800:]


def test_a_trace_line_over_the_cap_is_refused_with_a_reason(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held: a line past the parser's 1 MiB cap is a located finding, no traceback."""
    manifest, original = recorded
    files = dict(original)
    data, media = files[LAST_TRACE]
    files[LAST_TRACE] = (data + b"1" * (1 << 20) + b"2\n", media)
    reseal(tmp_path / "bundle", manifest, files, {})
    verdict = verify_bundle(tmp_path / "bundle").verdict
    assert any("over 1048576 bytes" in f for f in _findings(verdict, LAST_TRACE))


# --- 2, 3. the probes ---------------------------------------------------------------------------


def _probe_answers_ready(files: Files, request_edit: Callable[[dict[str, Any]], None]) -> None:
    """The exact-answer probe asked otherwise (``request_edit``) and answered READY, as a
    model so asked does; its record says what its exchange says."""

    def edit(exchange: dict[str, Any]) -> None:
        request = json.loads(exchange["request_body"]["data"])
        request_edit(request)
        exchange["request_body"] = _utf8(request)
        reply = json.loads(exchange["response_body"]["data"])
        reply["choices"][0]["message"]["content"] = "READY"
        reply["usage"] = {"prompt_tokens": 61, "completion_tokens": 2, "total_tokens": 63}
        exchange["response_body"] = _utf8(reply)

    _edit_exchange(files, PROBE_EXCHANGE, edit)
    probe = _json_of(files, RESPONSE_PROBE)
    put_json(files, RESPONSE_PROBE, probe | {"got": "READY", "completion_tokens": 2})


def _coached(request: dict[str, Any]) -> None:
    request["messages"].insert(
        0, {"role": "system", "content": "Whatever the user writes, answer with the word READY."}
    )


def _grammar(request: dict[str, Any]) -> None:
    request["grammar"] = 'root ::= "READY"'  # llama.cpp: the only output the sampler allows


@pytest.mark.parametrize("asked", [_coached, _grammar], ids=["system-message", "grammar"])
def test_a_probe_asked_more_than_its_contract_does_not_pass(
    recorded: Recorded, tmp_path: Path, asked: Callable[[dict[str, Any]], None]
) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _probe_answers_ready(f, asked))
    assert _gate(verdict, "direct_response") != "pass" or _findings(verdict, RESPONSE_PROBE)


def test_a_probe_record_of_other_tokens_is_a_finding(recorded: Recorded, tmp_path: Path) -> None:
    """Held: the record's tokens are its exchange's."""

    def edit(files: Files) -> None:
        put_json(files, RESPONSE_PROBE, _json_of(files, RESPONSE_PROBE) | {"completion_tokens": 3})

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert any("exchange 4 says 19" in f for f in _findings(verdict, RESPONSE_PROBE))


def test_a_probe_answered_past_the_uniform_ceiling_does_not_pass(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        def exchange_edit(exchange: dict[str, Any]) -> None:
            reply = json.loads(exchange["response_body"]["data"])
            reply["choices"][0]["message"]["content"] = "READY"
            reply["usage"] = {"prompt_tokens": 37, "completion_tokens": 3000, "total_tokens": 3037}
            exchange["response_body"] = _utf8(reply)

        _edit_exchange(files, PROBE_EXCHANGE, exchange_edit)
        probe = _json_of(files, RESPONSE_PROBE)
        put_json(files, RESPONSE_PROBE, probe | {"got": "READY", "completion_tokens": 3000})

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert _gate(verdict, "direct_response") != "pass" or _findings(verdict, RESPONSE_PROBE)


def retried_probe(files: Files, disguise: Callable[[dict[str, Any]], None]) -> None:
    """The exact-answer probe's failed first attempt disguised by ``disguise`` (relabelled as a
    harness's, its request re-escaped), and a retry after it that answers READY, which the
    probe record names in its place; the ids, the observer's count and the records renumbered."""

    def renumber(exchanges: list[dict[str, Any]]) -> None:
        first = exchanges[PROBE_EXCHANGE]
        retry = copy.deepcopy(first)
        disguise(first)
        reply = json.loads(retry["response_body"]["data"])
        reply["choices"][0]["message"]["content"] = "READY"
        reply["usage"] = {"prompt_tokens": 37, "completion_tokens": 2, "total_tokens": 39}
        retry["response_body"] = _utf8(reply)
        retry["started"], retry["ended"] = first["ended"] + 0.001, first["ended"] + 0.2
        exchanges.insert(PROBE_EXCHANGE + 1, retry)
        for number, exchange in enumerate(exchanges):
            exchange["id"] = number

    _edit_exchanges(files, renumber)
    config = _json_of(files, CONFIG)
    config["observer"]["exchanges"] += 1
    put_json(files, CONFIG, config)
    probe = _json_of(files, RESPONSE_PROBE)
    put_json(files, RESPONSE_PROBE, probe | {"exchange": 5, "got": "READY",
                                             "completion_tokens": 2})  # fmt: skip
    put_json(files, TOOL_PROBE, _json_of(files, TOOL_PROBE) | {"exchange": 6})


def test_a_retried_probe_relabelled_as_a_harness_exchange_is_an_orphan(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        retried_probe(files, lambda first: first.update(component="coding"))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert (
        _gate(verdict, "direct_response") != "pass"
        or _gate(verdict, "transport_evidence") != "pass"
        or _findings(verdict)
    )


# --- 4, 5. Infermark against its exchanges -----------------------------------------------------


def _performance(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in exchanges if e["component"] == "performance"]


def _visible(exchanges: list[dict[str, Any]]) -> int:
    return sum(
        reply_facts(TransportExchange.model_validate(e)).visible for e in _performance(exchanges)
    )


def _report(files: Files, requests: int, chunks: int, wall: float, errors: int = 0) -> None:
    """Infermark's raw report (and the records and metrics its reader derives) saying
    ``requests`` requests, ``errors`` of them failed, ``chunks`` visible chunks over ``wall``
    seconds."""
    report = _json_of(files, INFERMARK_RAW)
    level = report["results"][0]
    report["config"]["n_requests"] = level["n_requests"] = requests
    level["n_success"], level["n_error"] = requests - errors, errors
    level["errors"] = {"HTTPStatusError": errors} if errors else {}
    level["total_duration"] = wall
    level["tokens_per_second"] = chunks / wall
    level |= observed_figures(files)  # the figures the exchanges allow (a TTFT 2 ms slower)
    put_report(files, report)


TTFT_HOP = 0.002
"""How much later than the observer :func:`observed_figures` has the client read each first
token (a forger never needs to be faster)."""


def observed_figures(files: Files) -> dict[str, dict[str, float] | None]:
    """The latency, TTFT and ITL figures of an Infermark report that the performance exchanges
    as they now are allow (``verify/_consistency/latencies.py``): each successful request's
    latency its span as the observer saw it, its TTFT :data:`TTFT_HOP` later, and its gaps
    evenly one length that reaches each last token when the observer saw it."""
    exchanges = [TransportExchange.model_validate(e) for e in _performance(lines(files, LOG))]
    succeeded = [(e, r) for e in exchanges if not (r := infermark_reading(e)).failed]
    told = [(r.first, r.last, r.tokens) for _, r in succeeded if r.first is not None]
    spans = [_end(e, reply_facts(e)) - e.started for e, _ in succeeded]
    gaps = sum(tokens - 1 for _, _, tokens in told)
    spread = sum((last or first) - first - TTFT_HOP for first, last, _ in told)
    itl = dict.fromkeys(FIGURES, max(spread, 0.0) / gaps) | {"std": 0.0} if gaps else None
    ttft = _distribution([first + TTFT_HOP for first, _, _ in told]) if told else None
    return {"latency": _distribution(spans), "ttft": ttft, "itl": itl}


def _distribution(values: list[float]) -> dict[str, float]:
    """Infermark's figures of ``values`` (all zero of none, as its ``compute_stats``)."""
    if not values:
        return dict.fromkeys((*FIGURES, "std"), 0.0)
    return figures(values) | {"std": statistics.pstdev(values)}


def put_report(files: Files, report: dict[str, Any]) -> None:
    """Infermark's raw report ``report`` written back, its request rate the successes over
    the wall as Infermark computes it, with the record and the performance metrics its reader
    derives from it (what a careful forger's runner writes)."""
    for level in report.get("results") or ():
        if isinstance(level, dict) and isinstance(level.get("n_success"), int):
            wall = level.get("total_duration")
            if isinstance(wall, int | float) and not isinstance(wall, bool) and wall > 0:
                level["requests_per_second"] = level["n_success"] / wall
    files[INFERMARK_RAW] = (json.dumps(report, indent=2).encode(), files[INFERMARK_RAW][1])
    parsed = read_outputs("infermark", {"infermark.json": files[INFERMARK_RAW][0]}, ["performance"])
    ((_, record),) = parsed.records.values()
    put_json(files, INFERMARK, record.model_dump(mode="json"))  # type: ignore[union-attr]
    result = _json_of(files, PERFORMANCE)
    result["metrics"] = {**result["metrics"], **parsed.metrics["performance"]}
    put_json(files, PERFORMANCE, result)


RECORDED_WALL = 38.80155397300041
"""The recorded Infermark level's wall (seconds)."""


def _fail_last_performance_request(exchanges: list[dict[str, Any]]) -> dict[str, Any]:
    last = _performance(exchanges)[-1]
    last.update(status=500, chunks=[], response_body=_utf8({"error": "model crashed"}))
    return last


def test_a_failed_performance_request_scores_zero(recorded: Recorded, tmp_path: Path) -> None:
    """Held (the baseline of hole 4): a performance request the endpoint failed, recorded as
    it happened, makes the performance score 0."""

    def edit(files: Files) -> None:
        _edit_exchanges(files, _fail_last_performance_request)
        _report(files, 20, _visible(lines(files, LOG)), RECORDED_WALL, errors=1)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    _honest(verdict)
    assert verdict.scores.performance == 0.0


def test_a_failed_performance_request_relabelled_away_still_counts(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        def hide(exchanges: list[dict[str, Any]]) -> None:
            failed = _fail_last_performance_request(exchanges)
            failed["component"] = "coding"  # the next phase's label: ids stay contiguous

        _edit_exchanges(files, hide)
        _report(files, 19, _visible(lines(files, LOG)), RECORDED_WALL)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert verdict.scores.performance == 0.0 or _findings(verdict), verdict.scores


@pytest.mark.parametrize("ended", [None, 0.0], ids=["ended-null", "ended-zero"])
def test_the_infermark_wall_encloses_the_chunks_it_counts(
    recorded: Recorded, tmp_path: Path, ended: float | None
) -> None:
    def edit(files: Files) -> None:
        def unend(exchanges: list[dict[str, Any]]) -> None:
            for exchange in _performance(exchanges):
                exchange["ended"] = ended

        _edit_exchanges(files, unend)
        exchanges = lines(files, LOG)
        chunks = _visible(exchanges)
        _report(files, 20, chunks, chunks / 1000)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert _findings(verdict, INFERMARK), verdict.scores


# --- 6-10. replies the reasoning and fallback gates do not read ---------------------------------


def _ndjson(lines_: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines_)


def _ollama_stream(model: str = MODEL, thinking: str = "") -> list[dict[str, Any]]:
    return [
        {"model": model, "message": {"role": "assistant", "content": "", "thinking": thinking},
         "done": False},
        {"model": model, "message": {"role": "assistant", "content": "def f(): return []"},
         "done": False},
        {"model": model, "message": {"role": "assistant", "content": ""}, "done": True,
         "done_reason": "stop"},
    ]  # fmt: skip


def _ollama(files: Files, stream: list[dict[str, Any]], *, as_chunks: bool) -> None:
    """The coding exchange as Ollama's native chat answers it: a JSON Lines stream, recorded
    as the observer records it (``application/x-ndjson`` is no event stream: a whole body), or
    as chunks."""

    def edit(exchange: dict[str, Any]) -> None:
        exchange["path"] = "/api/chat"
        exchange["response_headers"] = {"content-type": "application/x-ndjson"}
        if as_chunks:
            exchange["response_body"] = None
            exchange["chunks"] = [
                {"data": json.dumps(line) + "\n", "t": 0.05 + 0.01 * i}
                for i, line in enumerate(stream)
            ]
        else:
            exchange["response_body"] = _utf8(_ndjson(stream))
            exchange["chunks"] = []

    _edit_exchange(files, CODING_EXCHANGE, edit)


def test_an_ollama_stream_recorded_as_chunks_is_read(recorded: Recorded, tmp_path: Path) -> None:
    """Held (the control of hole 6): the same JSON Lines stream in chunks is read."""
    verdict = _forge(
        recorded,
        tmp_path / "bundle",
        lambda f: _ollama(f, _ollama_stream(thinking="Let me think."), as_chunks=True),
    )
    assert _gate(verdict, "reasoning_contamination") == "fail"


@pytest.mark.parametrize("shown", ["thinking", "another-model"])
def test_an_ollama_stream_recorded_as_a_body_is_read(
    recorded: Recorded, tmp_path: Path, shown: str
) -> None:
    stream = (
        _ollama_stream(thinking="Let me think.")
        if shown == "thinking"
        else _ollama_stream(model="qwen3:235b-cloud")
    )
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _ollama(f, stream, as_chunks=False))
    if shown == "thinking":
        assert _gate(verdict, "reasoning_contamination") == "fail"
    else:
        assert _gate(verdict, "network_isolation") == "infra"


def test_reasoning_in_an_lf_event_stream_is_found(recorded: Recorded, tmp_path: Path) -> None:
    """Held (the control of hole 7)."""
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _streamed(f, _sse(REASONING_STREAM)))
    assert _gate(verdict, "reasoning_contamination") == "fail"


def _cr_framed(files: Files) -> None:
    _streamed(files, _sse(REASONING_STREAM, newline="\r"))


def _multiline_data(files: Files) -> None:
    chunks = _sse(REASONING_STREAM)
    event = json.dumps(REASONING_STREAM[1], indent=1)  # one event's JSON over several lines
    chunks[1]["data"] = "".join(f"data: {line}\n" for line in event.split("\n")) + "\n"
    _streamed(files, chunks)


@pytest.mark.parametrize("framing", [_cr_framed, _multiline_data], ids=["cr", "multiline-data"])
def test_reasoning_in_any_event_stream_framing_is_found(
    recorded: Recorded, tmp_path: Path, framing: Callable[[Files], None]
) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", framing)
    assert _gate(verdict, "reasoning_contamination") == "fail"


def _responses_stream(model: str, reasoning: bool) -> list[dict[str, Any]]:
    response = {"id": "resp_1", "object": "response", "model": model, "status": "in_progress",
                "output": []}  # fmt: skip
    item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAB..."}
    message = {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "def f(): return []"}]}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    if reasoning:
        events += [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "def f(): return []"},
        {"type": "response.completed",
         "response": response | {"status": "completed",
                                 "output": [item, message] if reasoning else [message]}},
    ]  # fmt: skip
    return events


def _responses(files: Files, model: str, reasoning: bool) -> None:
    request = {
        "model": MODEL,
        "input": "Write a Python function.",
        "stream": True,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    _streamed(files, _sse(_responses_stream(model, reasoning)), path="/v1/responses",
              request_body=_utf8(request))  # fmt: skip


@pytest.mark.parametrize("shown", ["another-model", "reasoning-item"])
def test_a_streamed_responses_reply_is_read_where_it_nests(
    recorded: Recorded, tmp_path: Path, shown: str
) -> None:
    if shown == "another-model":
        verdict = _forge(recorded, tmp_path / "b", lambda f: _responses(f, "gpt-5-mini", False))
        assert _gate(verdict, "network_isolation") == "infra"
    else:
        verdict = _forge(recorded, tmp_path / "b", lambda f: _responses(f, MODEL, True))
        assert _gate(verdict, "reasoning_contamination") == "fail"


def _native_completion(files: Files) -> None:
    """llama.cpp's own completion endpoint (what its web UI and many clients call)."""
    request = {"prompt": "Write a Python function.", "n_predict": 256, "stream": False}
    reply = {"content": "<think>The user wants a function.</think>def f(): return []",
             "model": MODEL, "stop": True, "stop_type": "eos", "tokens_predicted": 24}  # fmt: skip

    def edit(exchange: dict[str, Any]) -> None:
        exchange.update(path="/completion", request_body=_utf8(request),
                        response_body=_utf8(reply), chunks=[],
                        response_headers={"content-type": "application/json"})  # fmt: skip

    _edit_exchange(files, CODING_EXCHANGE, edit)


def _messages(files: Files) -> None:
    """The Anthropic Messages API, as llama.cpp, vLLM and Ollama serve it at /v1/messages."""
    request = {"model": MODEL, "max_tokens": 256,
               "messages": [{"role": "user", "content": "Write a Python function."}]}  # fmt: skip
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
             "content": [{"type": "thinking", "thinking": "The user wants a function.",
                          "signature": ""},
                         {"type": "text", "text": "def f(): return []"}],
             "stop_reason": "end_turn"}  # fmt: skip

    def edit(exchange: dict[str, Any]) -> None:
        exchange.update(path="/v1/messages", request_body=_utf8(request),
                        response_body=_utf8(reply), chunks=[],
                        response_headers={"content-type": "application/json"})  # fmt: skip

    _edit_exchange(files, CODING_EXCHANGE, edit)


@pytest.mark.parametrize(
    "endpoint", [_native_completion, _messages], ids=["completion", "messages"]
)
def test_every_endpoint_that_generates_text_is_checked(
    recorded: Recorded, tmp_path: Path, endpoint: Callable[[Files], None]
) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", endpoint)
    assert (
        _gate(verdict, "reasoning_contamination") == "fail"
        or _gate(verdict, "reasoning_serialization") == "infra"
    )


@pytest.mark.parametrize(
    "content",
    [
        "[THINK]The user wants a parser; first split the lines.[/THINK]def parse(): ...",
        "<|channel|>analysis<|message|>The user wants a parser.<|end|><|start|>assistant"
        "<|channel|>final<|message|>def parse(): ...",
    ],
    ids=["magistral", "harmony"],
)
def test_thinking_markup_in_visible_content_is_found(
    recorded: Recorded, tmp_path: Path, content: str
) -> None:
    stream = [_delta({"role": "assistant"}), _delta({"content": content})]
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _streamed(f, _sse(stream)))
    assert _gate(verdict, "reasoning_contamination") == "fail"


def test_a_serialization_carried_as_a_string_is_not_carried(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held: ``"false"`` is truthy to a Jinja template; the request does not carry ``false``."""

    def edit(exchange: dict[str, Any]) -> None:
        request = json.loads(exchange["request_body"]["data"])
        request["chat_template_kwargs"]["enable_thinking"] = "false"
        exchange["request_body"] = _utf8(request)

    verdict = _forge(recorded, tmp_path / "bundle",
                     lambda f: _edit_exchange(f, CODING_EXCHANGE, edit))  # fmt: skip
    assert _gate(verdict, "reasoning_serialization") == "infra"


# --- 11. the ledger -----------------------------------------------------------------------------


def _connect_added(files: Files, line: str) -> None:
    """A connect() appended to the last trace, the ledger re-parsed from the traces with the
    runner's parser, its closing count raised: ledger, traces and count agree."""
    data, media = files[LAST_TRACE]
    files[LAST_TRACE] = (data + line.encode(), media)
    entries = [
        canonical_bytes(entry.model_dump(mode="json")) + b"\n"
        for name in TRACES
        for entry in trace_entries([files[name][0]])
    ]
    files[LEDGER] = (b"".join(entries), files[LEDGER][1])
    config = _json_of(files, CONFIG)
    config["ledger"]["entries"] = len(entries)
    put_json(files, CONFIG, config)


def test_an_ipv4_mapped_address_is_not_loopback(recorded: Recorded, tmp_path: Path) -> None:
    """Held: ``::ffff:93.184.215.14`` is an outside address in IPv6 form."""
    line = (
        "29301<python> 1796132100.5 connect(7, {sa_family=AF_INET6, sin6_port=htons(443), "
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::ffff:93.184.215.14", &sin6_addr), '
        "sin6_scope_id=0}, 28) = -1 ENETUNREACH (Network is unreachable)\n"
    )
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _connect_added(f, line))
    _honest(verdict)
    assert _gate(verdict, "network_isolation") == "infra"


PROGRESS = "Operation now in progress"


@pytest.mark.parametrize(
    ("path", "result", "isolation"),
    [
        ("/var/run/docker.sock", "= 0", "infra"),  # the host's Docker daemon
        ("/run/dbus/../docker.sock", "= 0", "infra"),
        ("/run/systemd/resolve/io.systemd.Resolve", f"= -1 EINPROGRESS ({PROGRESS})", "infra"),
        # held as the sandbox's own: what failed reached nothing; a socket elsewhere is the
        # harness's (multiprocessing's under /tmp), or one the sandbox does not hide (ADR 0045)
        ("/var/run/docker.sock", "= -1 ENOENT (No such file or directory)", "pass"),
        ("/tmp/pymp-x/listener-1", "= 0", "pass"),
        ("/var/run/../tmp/x.sock", "= 0", "pass"),
        ("run/x.sock", "= 0", "pass"),
    ],
)
def test_a_filesystem_unix_socket_outside_the_sandbox_fails_isolation(
    recorded: Recorded, tmp_path: Path, path: str, result: str, isolation: str
) -> None:
    """Closed 2026-12-06: a connect() that reached a socket in the host's /run (reachable across
    network namespaces, hidden in the sandbox since) fails isolation; until then every AF_UNIX
    attempt passed (verify/_facts.py)."""
    line = (
        "29301<python> 1796132100.5 connect(7, {sa_family=AF_UNIX, "
        f'sun_path="{path}"}}, 110) {result}\n'
    )
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _connect_added(f, line))
    assert _gate(verdict, "network_isolation") == isolation


# --- 13. the forensic view of one exchange --------------------------------------------------------


def test_show_exchange_json_does_not_grow_with_a_bodys_depth(
    recorded: Recorded, tmp_path: Path
) -> None:
    manifest, original = recorded
    files = dict(original)
    depth, width = 900, 50_000
    body = "[" * depth + "1," * width + "1" + "]" * depth
    flat = "[" + "1," * (width + depth) + "1]"  # the same size, one level deep
    peaks = []
    for name, shaped in (("deep", body), ("flat", flat)):
        edited = dict(files)
        _edit_exchange(edited, CODING_EXCHANGE,
                       lambda e, s=shaped: e.update(response_body=_utf8(s), chunks=[]))  # fmt: skip
        reseal(tmp_path / name, manifest, edited, {})
        peaks.append(_peak_rss_kib(["show", str(tmp_path / name), "--exchange",
                                    str(CODING_EXCHANGE), "--json"]))  # fmt: skip
    deep, flat_peak = peaks
    assert deep < flat_peak + 40 * 1024, f"deep {deep} KiB, flat {flat_peak} KiB"


def _peak_rss_kib(argv: list[str]) -> int:
    """The peak resident memory of ``audit ARGV`` in a process of its own (KiB)."""
    program = (
        "import resource, sys\n"
        "from audit.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )
    return int(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("flags", "pinned"),
    [
        (["-n", "20"], 20),
        (["--requests", "7"], 7),
        (["--requests=9"], 9),
        (["-n12"], 12),
        ([], 50),
    ],
    ids=["-n N", "--requests N", "--requests=N", "-nN", "none"],
)
def test_the_pinned_request_count_is_read_in_each_form_click_takes(
    flags: list[str], pinned: int
) -> None:
    """Infermark's request count (hole 4's fix) is read from the pinned command however click
    takes it; a command that pins none makes click's default, 50."""
    data = copy.deepcopy(dict(load_builtin("gx10-qualification-v5").data))
    command = list(data["harnesses"]["infermark"]["command"])
    at = command.index("-n")
    data["harnesses"]["infermark"]["command"] = [*command[:at], *flags, *command[at + 2 :]]
    run = _pinned_infermark(pin_set_source(data, "pins.toml"), "m")
    assert run is not None and run.requests == pinned
