"""The built-in components of a run: the direct probes of gx10-direct-probe-v1 and the
concurrency-1 streaming performance measurement with Infermark's legacy semantics.

Both talk to the model through the observer, so every request they make is a transport
exchange; each probe record names the exchange it used, and the verifier reads the answer from
that exchange, not from the record.
"""

from __future__ import annotations

import http.client
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from audit.observer import Observer
from bundle_schema.models import DirectProbe, InfermarkStreaming, ReasoningSerialization
from pins import PROBE_CONTRACTS, DirectProbeContract
from verify.infermark import infermark_reading
from verify.replies import first_tool_call, read_reply

__all__ = ["measure_streaming", "run_direct_probes"]


def _user(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def _with_policy(
    body: dict[str, Any], serialization: ReasoningSerialization | None
) -> dict[str, Any]:
    return body if serialization is None else serialization.write_into(body)


def _connection(observer: Observer) -> http.client.HTTPConnection:
    parts = urlsplit(observer.url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)


def _post(observer: Observer, body: dict[str, Any]) -> tuple[int, Any, int]:
    """POST a completion through the observer; (status, parsed reply, exchange id). A reply
    broken off (the engine closed its connection, the observer relaying that) is no reply:
    the observer recorded the exchange with its error, which the probe's gate judges."""
    before = len(observer.exchanges())
    connection = _connection(observer)
    status, data = 0, b""
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body),
                           {"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        status = response.status
        data = response.read()
    except (OSError, http.client.HTTPException):
        data = b""
    finally:
        connection.close()
    exchanges = observer.wait_for(before + 1)
    try:
        reply = json.loads(data)
    except ValueError:
        reply = None
    return status, reply, exchanges[-1].id


def _reading(reply: Any) -> tuple[str | None, int | None, Any]:
    finish, message, tokens = read_reply(reply)
    return finish, tokens if isinstance(tokens, int) else None, message


def run_direct_probes(
    observer: Observer,
    model: str,
    contract: DirectProbeContract,
    serialization: ReasoningSerialization | None,
) -> tuple[DirectProbe, DirectProbe]:
    """Run the exact-answer probe and the tool-call probe, each with the uniform ceiling and
    the sampling the contract pins (if it pins any)."""
    observer.component = "probes"
    ceiling = contract.total_completion_ceiling_tokens
    spec = PROBE_CONTRACTS[contract.contract]
    body = spec.request("response", model, ceiling)
    _, reply, exchange = _post(observer, _with_policy(body, serialization))
    finish, tokens, message = _reading(reply)
    response = DirectProbe(
        kind="response", contract=contract.contract, ceiling_tokens=ceiling, exchange=exchange,
        expected=spec.expected("response"), finish_reason=finish, completion_tokens=tokens,
        got=message.get("content") if isinstance(message, dict) else None,
    )  # fmt: skip
    body = spec.request("tool_call", model, ceiling)
    _, reply, exchange = _post(observer, _with_policy(body, serialization))
    finish, tokens, message = _reading(reply)
    tool = DirectProbe(
        kind="tool_call", contract=contract.contract, ceiling_tokens=ceiling, exchange=exchange,
        expected=spec.expected("tool_call"), finish_reason=finish, completion_tokens=tokens,
        got=first_tool_call(message),
    )  # fmt: skip
    return response, tool


def _visible(line: bytes) -> bool | None:
    """Whether an SSE line carries visible content (None: not a content event)."""
    if not line.startswith(b"data:"):
        return None
    payload = line[5:].strip()
    if payload == b"[DONE]":
        return None
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    choices = event.get("choices") if isinstance(event, dict) else None
    delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return bool(content)  # reasoning_content and empty deltas are not visible content


def measure_streaming(
    observer: Observer,
    model: str,
    prompts: Sequence[str],
    *,
    max_tokens: int = 256,
    serialization: ReasoningSerialization | None = None,
) -> InfermarkStreaming:
    """Infermark's legacy concurrency-1 streaming fields over ``prompts``, one after another.

    ``tokens_per_second`` counts non-empty visible ``delta.content`` chunks over the whole
    concurrency-level wall (reported as E2E visible chunk/s); TTFT is the time to the first
    visible content chunk; ITL the gaps between visible chunks; reasoning chunks are ignored.
    """
    observer.component = "performance"
    recorded = len(observer.exchanges())
    firsts: list[float | None] = []  # each request's first visible line, on this client's clock
    gaps: list[float] = []
    level_start = time.monotonic()
    for prompt in prompts:
        request = {
            "model": model,
            "max_tokens": max_tokens,
            "stream": True,
            "messages": _user(prompt),
        }
        body = _with_policy(request, serialization)
        connection = _connection(observer)
        started = time.monotonic()
        last: float | None = None
        firsts.append(None)
        try:
            connection.request("POST", "/v1/chat/completions", json.dumps(body),
                               {"Content-Type": "application/json"})  # fmt: skip
            response = connection.getresponse()
            if response.status != 200:  # an error of the evidence (counted below)
                response.read()
                continue
            while line := response.readline():
                if _visible(line.strip()):
                    now = time.monotonic()
                    if last is None:
                        firsts[-1] = now - started
                    else:
                        gaps.append(now - last)
                    last = now
        except (OSError, http.client.HTTPException):
            pass  # the exchange the observer recorded says what went wrong
        finally:
            connection.close()
    wall = time.monotonic() - level_start
    # every request is evidence before we go on; a stream the endpoint broke off can look
    # complete to this client, so the errors are counted as the verifier counts them: from
    # the recorded exchanges (not 200, or broken off)
    exchanges = observer.wait_for(recorded + len(prompts))[recorded:]
    # the errors and the chunks are counted as Infermark counts them, and as the verifier does:
    # from the recorded exchanges (a request not 200, broken off, or whose stream its client
    # fails on is an error; only the others' tokens count), so a stream the endpoint broke
    # off, which can look complete to this client, counts for nothing
    readings = [infermark_reading(e) for e in exchanges]
    errors = sum(r.failed for r in readings)
    visible = sum(r.tokens for r in readings)
    # a TTFT no earlier than the observer saw that first token's line
    ttfts = [
        max(mine if mine is not None else reading.first, reading.first)
        for mine, reading in zip(firsts, readings, strict=True)
        if reading.first is not None
    ]
    return InfermarkStreaming(
        concurrency=1,
        visible_chunks=visible,
        wall_seconds=wall,
        tokens_per_second=visible / wall if wall > 0 else 0.0,
        ttft_p50_seconds=statistics.median(ttfts) if ttfts else None,
        itl_mean_seconds=statistics.fmean(gaps) if gaps else None,
        requests=len(prompts),
        errors=errors,
    )
