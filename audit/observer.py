"""The transport observer: a recording reverse proxy on loopback in front of the model endpoint.

Every exchange between a harness and the model passes through it and becomes a
:class:`~bundle_schema.models.TransportExchange`: id (in order of arrival), method, path,
status, selected headers with credentials redacted, request and response bodies (UTF-8 text as
it was, base64 otherwise) and, for a streamed response, every chunk with the monotonic time
since the request started, taken as the bytes arrive. Built on aiohttp: no HTTP parsing here.

It refuses an endpoint that is not on loopback, never follows a redirect (the harness gets a 502
and the redirect is recorded), and records the ``model`` each reply names, so a reply from
another model is visible as a suspected fallback.

Upstream connections are kept idle for at most :data:`IDLE_KEEPALIVE_S`, under the keep-alive
of the servers it fronts, and a request that fails before any response arrived (the server had
closed the idle connection as the request crossed it) is sent once more on a fresh connection,
with :data:`RETRY_HEADER` saying why; that header is forwarded and recorded (ADR 0014).
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from audit._faults import point
from bundle_schema.errors import InvalidInput
from bundle_schema.models import Body, Chunk, ReasoningSerialization, TransportExchange
from bundle_schema.roles import REFERENCE_HEADER
from verify.gx10 import is_loopback
from verify.replies import is_completion_path

__all__ = [
    "IDLE_KEEPALIVE_S",
    "REDACTED",
    "REFERENCE_HEADER",
    "RETRY_HEADER",
    "Observer",
    "observe",
    "write_policy",
]

IDLE_KEEPALIVE_S = 2.0
"""Seconds an idle upstream connection is kept for reuse: under the keep-alive of the servers
the observer fronts (llama.cpp server and uvicorn, which serves vLLM and llama-cpp-python, close
an idle connection after 5 s), so it rarely reuses one the server is closing."""
RETRY_HEADER = "x-evidence-retry"
"""Sent (and recorded) with the second attempt of a request whose first failed before any
response arrived: which attempt it is, and the first attempt's error."""

REDACTED = "[redacted]"
_CREDENTIALS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "set-cookie"}
)
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
        "expect",
    }
)
"""Not forwarded: the transport of one hop. The observer has the whole request body before it
forwards anything (and answered a ``100-continue`` itself), so the body goes with a
Content-Length in the same write as the headers, never chunked and never after waiting for the
endpoint's ``100 Continue``."""
"""A harness names the record a request belongs to (e.g. ``hermes/<task>``) in this header."""
_RECORDED_REQUEST = (
    frozenset({"content-type", "accept", "user-agent", REFERENCE_HEADER, RETRY_HEADER})
    | _CREDENTIALS
)
_RECORDED_RESPONSE = frozenset({"content-type", "location", "x-request-id", "openai-model"})


def _body(data: bytes) -> Body | None:
    if not data:
        return None
    try:
        return Body(encoding="utf-8", data=data.decode("utf-8"))
    except UnicodeDecodeError:
        return Body(encoding="base64", data=base64.b64encode(data).decode("ascii"))


def _headers(headers: Any, recorded: frozenset[str]) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in recorded:
            kept[key] = REDACTED if key in _CREDENTIALS else value[:4096]
    return kept


def _model_named(text: str) -> str | None:
    """The ``model`` a JSON reply or the first SSE event that has one names."""
    candidates = (
        [text]
        if not text.lstrip().startswith("data:")
        else [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    )
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("model"), str):
            return str(value["model"])[:256]
    return None


class Observer:
    """The recording reverse proxy, served on 127.0.0.1 (and a Unix socket if asked) from a
    thread with its own event loop."""

    def __init__(
        self,
        upstream: str,
        *,
        unix_path: str | None = None,
        policy: ReasoningSerialization | None = None,
        idle_keepalive: float = IDLE_KEEPALIVE_S,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not is_loopback(parts.hostname or ""):
            raise InvalidInput(f"--endpoint {upstream}: not an http:// endpoint on loopback")
        self.upstream = f"http://{parts.netloc}"
        self.unix_path = unix_path
        self.policy = policy
        self.idle_keepalive = idle_keepalive
        self.component: str | None = None
        self._ids = itertools.count()
        self._records: list[dict[str, Any]] = []
        """Raw records: turned into models (and their reply's model read) when asked for, so
        that no request waits for it."""
        self._lock = threading.Lock()
        self._origin = time.monotonic()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None
        """For a second attempt: a new connection for every request, never a reused one."""
        self.port = 0

    @property
    def url(self) -> str:
        """Where harnesses send their requests, e.g. ``http://127.0.0.1:40111``."""
        return f"http://127.0.0.1:{self.port}"

    def exchanges(self) -> list[TransportExchange]:
        """Every exchange recorded so far, in order of id."""
        with self._lock:
            records = list(self._records)
        return sorted((_finish(r) for r in records), key=lambda e: e.id)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[TransportExchange]:
        """The exchanges once at least ``count`` are recorded (a record lands as its handler
        ends, which can be just after the client has read the whole reply).

        Raises:
            TimeoutError: fewer were recorded within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                ready = len(self._records) >= count
            if ready:
                return self.exchanges()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the observer recorded fewer than {count} exchanges")
            time.sleep(0.001)

    def counts(self) -> tuple[int, int]:
        """(exchanges recorded, streamed chunks recorded) so far: cheap, for a live display."""
        with self._lock:
            return len(self._records), sum(len(r.get("chunks", ())) for r in self._records)

    def start(self) -> Observer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        return self

    async def _start(self) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        # no cookie jar: a cookie the endpoint set is never added to later requests (what is
        # forwarded is what the harness sent), and no jar is consulted on the request path
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(keepalive_timeout=self.idle_keepalive),
            auto_decompress=False,
            timeout=timeout,
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        # aiohttp resends an idempotent request silently when a reused connection fails; the
        # observer does it itself, for every method, and records it
        self._session._retry_connection = False
        self._fresh = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(force_close=True),
            auto_decompress=False,
            timeout=timeout,
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        self._fresh._retry_connection = False
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        if self.unix_path is not None:
            await web.UnixSite(self._runner, self.unix_path).start()

    def stop(self) -> None:
        async def close() -> None:
            if self._runner is not None:
                await self._runner.cleanup()
            for session in (self._session, self._fresh):
                if session is not None:
                    await session.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        number = next(self._ids)
        begun = time.monotonic()
        record: dict[str, Any] = {
            "schema_version": 1,
            "id": number,
            "component": self.component,
            "started": begun - self._origin,
            "method": request.method,
            "path": request.path_qs,
            "request_headers": _headers(request.headers, _RECORDED_REQUEST),
        }
        payload, refusal = _with_policy(await request.read(), request, self.policy)
        record["request_body"] = payload  # bytes: encoded when read (_finish)
        try:
            if refusal is not None:  # never sent: the model is not asked without the policy
                record["error"] = refusal
                return web.json_response({"error": {"message": refusal}}, status=400)
            return await self._forward(request, payload, begun, record)
        finally:
            self._keep(record)

    def _keep(self, record: dict[str, Any]) -> None:
        """Record an exchange once, when it ends (a stream ends before its last bytes go out,
        so that a client that has read the whole stream finds it recorded)."""
        with self._lock:
            if "ended" not in record:
                record["ended"] = time.monotonic() - self._origin
                self._records.append(record)

    async def _forward(
        self, request: web.Request, payload: bytes, begun: float, record: dict[str, Any]
    ) -> web.StreamResponse:
        assert self._session is not None  # noqa: S101 - started
        assert self._fresh is not None  # noqa: S101 - started
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"
        first_failure: str | None = None
        for session in (self._session, self._fresh):
            answered = False
            try:
                async with session.request(
                    request.method,
                    self.upstream + request.path_qs,
                    data=payload or None,
                    headers=headers,
                    allow_redirects=False,
                ) as upstream:
                    answered = True
                    return await self._relay(request, upstream, begun, record)
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                failure = f"{type(exc).__name__}: {exc}"
                if answered or first_failure is not None:
                    if first_failure is not None:
                        failure += f" (the second attempt, after: {first_failure})"
                    return _upstream_failed(record, failure)
                # no response arrived: the server closed the connection as the request went
                # out (an idle keep-alive closed under it); once more, on a new connection
                first_failure = failure[:1024]
                note = _header_text(f"2; the first attempt failed before any response: {failure}")
                headers[RETRY_HEADER] = record["request_headers"][RETRY_HEADER] = note
            except aiohttp.ClientError as exc:
                return _upstream_failed(record, f"{type(exc).__name__}: {exc}")
        raise AssertionError("unreachable: the second attempt returns")  # pragma: no cover

    async def _relay(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        begun: float,
        record: dict[str, Any],
    ) -> web.StreamResponse:
        """Record the endpoint's answer and pass it on to the harness."""
        record["status"] = upstream.status
        record["response_headers"] = _headers(upstream.headers, _RECORDED_RESPONSE)
        if 300 <= upstream.status < 400:
            record["redirect"] = upstream.headers.get("Location", "")[:4096]
            return web.json_response(
                {"error": {"message": "the observer does not follow redirects"}}, status=502
            )
        if upstream.content_type == "text/event-stream":
            return await self._stream(request, upstream, begun, record)
        data = await upstream.read()
        record["response_body"] = data
        return web.Response(body=data, status=upstream.status, headers=_passed(upstream))

    async def _stream(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        begun: float,
        record: dict[str, Any],
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, headers=_passed(upstream))
        await response.prepare(request)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        chunks: list[Chunk] = []
        record["chunks"] = chunks
        try:
            async for data in upstream.content.iter_any():
                text = decoder.decode(data)
                if text:
                    chunks.append(Chunk(t=time.monotonic() - begun, data=text))
                point("stream-chunk")  # mid-stream
                try:
                    await response.write(data)
                except ConnectionResetError:
                    record["error"] = "the client disconnected mid-stream"
                    return response
        except aiohttp.ClientError as exc:
            # The endpoint broke off mid-stream: so does the harness's stream, never "complete".
            record["error"] = f"upstream broke off mid-stream: {type(exc).__name__}"
            self._keep(record)
            if request.transport is not None:
                request.transport.close()
            return response
        self._keep(record)
        await response.write_eof()
        return response


def _upstream_failed(record: dict[str, Any], failure: str) -> web.Response:
    """The harness's answer when the endpoint could not be reached or broke off: a 502, with
    the error recorded (a status the endpoint never sent is not recorded as its status)."""
    record["error"] = f"upstream: {failure}"[:4096]
    return web.json_response({"error": {"message": "upstream failed"}}, status=502)


def _header_text(text: str) -> str:
    """Text fit for an HTTP header value: printable ASCII, one line, at most 1,024 characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)[:1024]


def _finish(record: dict[str, Any]) -> TransportExchange:
    """The evidence record of a raw exchange: bodies encoded, the reply's model read."""
    raw = record.get("response_body")
    texts = [raw.decode("utf-8", "replace")] if isinstance(raw, bytes) else []
    texts += [chunk.data for chunk in record.get("chunks", ())]
    model = next((m for m in map(_model_named, texts) if m is not None), None)
    body = _body(raw) if isinstance(raw, bytes) else raw
    sent = record.get("request_body", b"")
    return TransportExchange.model_validate(
        record | {"request_body": _body(sent), "response_body": body, "response_model": model}
    )


def write_policy(body: dict[str, Any], policy: ReasoningSerialization) -> dict[str, Any]:
    """Write the effective reasoning policy into a request body where its serialization says
    (``a.b.c``), making the objects on the way; returns the same body."""
    node = body
    *parents, leaf = policy.path.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = policy.value
    return body


def _with_policy(
    payload: bytes, request: web.Request, policy: ReasoningSerialization | None
) -> tuple[bytes, str | None]:
    """A completion request with the run's reasoning policy written where its serialization
    says (harnesses cannot be relied on to send it); what is forwarded is what is recorded.
    Every completion endpoint gets it (chat and legacy completions, the responses API, Ollama's
    chat and generate). A completion request whose body is not a JSON object cannot carry it:
    the second value is why it is refused (never forwarded), else None."""
    if policy is None or not is_completion_path(request.path):
        return payload, None
    if request.method != "POST":
        return payload, None  # a GET of a completion path generates nothing (the gate checks)
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        return payload, (
            f"refused by the observer: a completion request ({request.path[:200]}) whose body is "
            f"not a JSON object cannot carry the reasoning policy {policy.path} = "
            f"{json.dumps(policy.value)}; it was not sent to the model"
        )
    return json.dumps(write_policy(body, policy), separators=(",", ":")).encode(), None


def _passed(upstream: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}


@contextmanager
def observe(
    upstream: str,
    *,
    unix_path: str | None = None,
    policy: ReasoningSerialization | None = None,
    idle_keepalive: float = IDLE_KEEPALIVE_S,
) -> Iterator[Observer]:
    """Run an observer in front of ``upstream`` for the duration of a ``with`` block."""
    observer = Observer(
        upstream, unix_path=unix_path, policy=policy, idle_keepalive=idle_keepalive
    ).start()
    try:
        yield observer
    finally:
        observer.stop()
