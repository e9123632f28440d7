"""The transport observer: a recording reverse proxy on loopback in front of the model endpoint.

Every exchange between a harness and the model passes through it and becomes a
:class:`~bundle_schema.models.TransportExchange`: id (in order of arrival), method, path,
status, selected headers with credentials redacted, request and response bodies (UTF-8 text as
it was, base64 otherwise) and, for a streamed response, every chunk with the monotonic time
since the request started, taken as the bytes arrive. Both sides are HTTP/1.1 of the
observer's own on asyncio protocols: the harness's a small server
(:class:`~audit._http_server.HarnessConnection`, ADR 0030), the endpoint's a small client
(:class:`_Connection`, ADR 0028). After an engine's idle gap the observer's own work, with its
code and data out of the CPU's caches, is most of what it adds to a completion's latency;
aiohttp's ``ClientSession`` was half of that work and its server most of the rest. Each
request is recorded before its answer is written, so a harness that has the answer finds it
recorded.

It refuses an endpoint that is not on loopback, never follows a redirect (the harness gets a 502
and the redirect is recorded), and records the ``model`` each reply names, so a reply from
another model is visible as a suspected fallback.

Upstream connections are kept idle for at most :data:`IDLE_KEEPALIVE_S`, under the keep-alive
of the servers it fronts; one the endpoint closes after its reply (llama.cpp's server does after
every stream) is replaced by a spare opened off the request path; and a request that fails
before any byte of a response arrived (the server had closed the idle connection as the request
crossed it) is sent once more on a fresh connection, with :data:`RETRY_HEADER` saying why;
that header is forwarded and recorded (ADR 0014). What the endpoint receives is the request as
recorded: the harness's headers (the hop's own left out, the last of a repeated name kept, as
the record keeps it), the recorded path, ``Host``, ``Accept-Encoding: identity`` and the body's
``Content-Length``; nothing else.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import SplitResult, urlsplit

from audit._faults import point
from audit._http_server import (
    FIELD_LINE,
    FIELD_TEXT,
    MAX_BODY,
    HarnessConnection,
    Harnesses,
    Request,
    content_length,
)
from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    Body,
    ReasoningSerialization,
    TransportExchange,
    stream_chunks,
)
from bundle_schema.models.records import (
    GONE_BEFORE_THE_ANSWER,
    GONE_BEFORE_THE_STREAM,
    GONE_MID_STREAM,
    RUN_ENDED_FIRST,
)
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
]

MAX_REPLY = MAX_BODY
"""The most of an endpoint's reply body the observer takes, in bytes (as of a request's): past
it the reply is cut, an error of the exchange (a 502 for a whole reply; a stream broken off)."""
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


def _headers(fields: Iterable[tuple[str, str]], recorded: frozenset[str]) -> dict[str, str]:
    """The recorded header fields, by lowercased name (of a repeated name, the last)."""
    kept: dict[str, str] = {}
    for name, value in fields:
        key = name.lower()
        if key in recorded:
            kept[key] = REDACTED if key in _CREDENTIALS else _field_text(value)[:4096]
    return kept


def _field_text(value: str) -> str:
    """A header value as recorded text: as it came when its bytes were UTF-8; otherwise each
    byte that was not UTF-8 written as ``\\xhh`` (the parsers keep such a byte as a lone
    surrogate, which no JSON document can hold)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


_REASON = re.compile(FIELD_TEXT)
"""A status line's reason phrase (after the code and its space, or nothing)."""


def _shown_bytes(data: bytes) -> str:
    return repr(data[:200].decode("utf-8", "backslashreplace"))


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
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
            continue
        if isinstance(value, dict) and isinstance(value.get("model"), str):
            return str(value["model"])[:256]
    return None


def checked_endpoint(upstream: str) -> SplitResult:
    """The parts of an endpoint URL the observer may stand in front of: ``http://`` on loopback,
    with a port that is one (or none).

    Raises:
        InvalidInput: any other, or a URL that does not parse; the message names it.
    """
    try:
        parts = urlsplit(upstream)
        _ = parts.port  # a port out of range or not a number raises here
    except ValueError as exc:
        raise InvalidInput(f"--endpoint {upstream!r}: not a URL: {exc}") from None
    if parts.scheme != "http" or not is_loopback(parts.hostname or ""):
        raise InvalidInput(f"--endpoint {upstream}: not an http:// endpoint on loopback")
    return parts


class Observer:
    """The recording reverse proxy, served on 127.0.0.1 (and on the listening sockets handed to
    :meth:`serving`) from a thread with its own event loop."""

    def __init__(
        self,
        upstream: str,
        *,
        policy: ReasoningSerialization | None = None,
        idle_keepalive: float = IDLE_KEEPALIVE_S,
    ) -> None:
        parts = checked_endpoint(upstream)
        self.upstream = f"http://{parts.netloc}"
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
        self._servers: list[asyncio.Server] = []
        self._harnesses = Harnesses()
        """The harnesses' open connections."""
        self._under_way: set[asyncio.Task[Any]] = set()
        """The exchanges being answered, whether their harness is still connected or not."""
        self.last_activity = time.monotonic()
        """When a harness last talked to the model through the observer (a request, a chunk
        relayed, an exchange's end): activity for the sandbox's inactivity limit."""
        host = parts.hostname or ""
        self._address = (host, parts.port or 80)
        named = f"[{host}]" if ":" in host else host
        self._host = (named if parts.port is None else f"{named}:{parts.port}").encode("ascii")
        self._idle: list[_Connection] = []
        """Kept-alive connections to the endpoint, the most recently used last."""
        self._opening: asyncio.Task[None] | None = None
        """A spare connection being opened (:meth:`_spare`); none once the observer stops."""
        self._stopping = False
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

    def _harness_connection(self) -> HarnessConnection:
        return HarnessConnection(self._handle, self._harnesses)

    async def _start(self) -> None:
        server = await self._loop.create_server(self._harness_connection, "127.0.0.1", 0)
        self._servers.append(server)
        self.port = int(server.sockets[0].getsockname()[1])

    @contextmanager
    def serving(self, listener: socket.socket) -> Iterator[None]:
        """Accept harnesses' connections on ``listener`` too, until the block ends; then close
        it (connections accepted stay until they end). The sandbox's listening socket, made in
        its network namespace: the observer accepts there itself, nothing relays (ADR 0034).
        """

        async def start() -> asyncio.Server:
            return await self._loop.create_server(self._harness_connection, sock=listener)

        server = asyncio.run_coroutine_threadsafe(start(), self._loop).result()
        self._servers.append(server)
        try:
            yield
        finally:

            async def close() -> None:
                server.close()
                if server in self._servers:
                    self._servers.remove(server)

            asyncio.run_coroutine_threadsafe(close(), self._loop).result()

    def stop(self) -> None:
        async def close() -> None:
            self._stopping = True  # no spare connection is opened from now on
            for server in self._servers:
                server.close()
            self._harnesses.closed = True  # a connection accepted from now on is closed
            for _ in range(4):  # connections accepted, their protocols not yet made
                await asyncio.sleep(0)
            # an exchange whose harness has gone (stopped at a limit while the endpoint had
            # yet to answer) has no one to answer: it ends now, recorded with why
            answering = [h.task for h in self._harnesses if h.task is not None]
            gone = [t for t in self._under_way if t not in answering]
            for task in gone:
                task.cancel()
            await asyncio.gather(*gone, return_exceptions=True)
            # an exchange under way ends first (for up to a minute), as with aiohttp's server
            if answering:
                _, late = await asyncio.wait(answering, timeout=60)
                for task in late:
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)
            for harness in list(self._harnesses):
                harness.close()
            if self._opening is not None:
                self._opening.cancel()
                await asyncio.gather(self._opening, return_exceptions=True)
            while self._idle:
                self._idle.pop().close()
            await asyncio.sleep(0)  # the transports' closing callbacks

        asyncio.run_coroutine_threadsafe(close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _handle(self, request: Request, harness: HarnessConnection) -> None:
        number = next(self._ids)
        begun = request.started
        self.last_activity = time.monotonic()
        record: dict[str, Any] = {
            "schema_version": 1,
            "id": number,
            "component": self.component,
            "started": begun - self._origin,
            "method": request.method,
            "path": request.target,
            "request_headers": request.headers,  # selected and redacted when read (_finish)
        }
        payload, refusal = _with_policy(request.body, request, self.policy)
        record["request_body"] = payload  # bytes: encoded when read (_finish)
        answer: _Answer | None = None
        task = asyncio.current_task()
        if task is not None:
            self._under_way.add(task)
        try:
            if refusal is not None:  # never sent: the model is not asked without the policy
                record["error"] = refusal
                answer = _json_error(400, refusal)
            else:
                answer = await self._forward(request, harness, payload, begun, record)
            if answer is not None and harness.gone:
                # never written: a harness that timed out and went (benchlocal-cli sends the
                # request again) never had this answer, which the log must say (ADR 0030)
                record.setdefault("error", GONE_BEFORE_THE_ANSWER)
        except asyncio.CancelledError:
            record.setdefault(
                "error",
                RUN_ENDED_FIRST + (" (the client had disconnected)" if harness.closed else ""),
            )
            raise
        finally:
            self._under_way.discard(task)
            self._keep(record)
        if answer is not None:  # written once recorded, so that a harness that has it finds it
            harness.respond(*answer)

    def _keep(self, record: dict[str, Any]) -> None:
        """Record an exchange once, when it ends (a stream ends before its last bytes go out,
        so that a client that has read the whole stream finds it recorded)."""
        self.last_activity = time.monotonic()
        with self._lock:
            if "ended" not in record:
                record["ended"] = time.monotonic() - self._origin
                self._records.append(record)

    async def _forward(
        self,
        request: Request,
        harness: HarnessConnection,
        payload: bytes,
        begun: float,
        record: dict[str, Any],
    ) -> _Answer | None:
        """The endpoint's answer to the request (None: streamed to the harness already)."""
        fields = _forwarded(request.raw_headers)
        first_failure: str | None = None
        while True:
            message = _request_message(
                record["method"], record["path"], self._host, fields, payload
            )
            connection: _Connection | None = None
            try:
                connection = await self._connection(fresh=first_failure is not None)
                reply = await connection.send(message, head=request.method == "HEAD")
            except BaseException as exc:
                if connection is not None:
                    connection.close()
                if not isinstance(exc, OSError):
                    raise
                failure = f"{type(exc).__name__}: {exc}"
                answered = connection is not None and connection.received > 0
                if answered or first_failure is not None:
                    if first_failure is not None:
                        failure += f" (the second attempt, after: {first_failure})"
                    return _upstream_failed(record, failure)
                # no byte of a response arrived: the server closed the connection as the request
                # went out (an idle keep-alive closed under it); once more, on a new connection
                first_failure = failure[:1024]
                note = _header_text(f"2; the first attempt failed before any response: {failure}")
                record["retry"] = note
                fields[_RETRY_KEY] = (_RETRY_KEY, note.encode("ascii"))
                continue
            try:
                return await self._relay(harness, reply, begun, record)
            finally:
                if reply.reusable:
                    connection.idle_since = time.monotonic()
                    connection.on_close = self._closed_after_reply
                    self._idle.append(connection)
                else:
                    connection.close()
                    if reply.done:  # a whole reply, on a connection that carries no other
                        self._spare()

    def _kept(self) -> bool:
        """Whether an idle connection the endpoint has not closed is kept."""
        return any(not c.closed for c in self._idle)

    def _closed_after_reply(self, connection: _Connection) -> None:
        if time.monotonic() - connection.idle_since < self.idle_keepalive:
            self._spare()

    def _spare(self) -> None:
        """Open a connection to the endpoint for the next request, off its path, when none is
        kept: llama.cpp's server closes its connection after every streamed reply (without a
        ``Connection: close``), and a harness's next request would otherwise wait for a new
        one (ADR 0028). Done when a whole reply's connection cannot carry another request, or is
        closed by the endpoint within :attr:`idle_keepalive` of its reply (never after a reply
        that broke off, never for a spare left unused, nor for one closed by an idle timeout
        longer than that). Kept as an idle connection; if it cannot be opened, the next request
        opens its own and its error is that request's."""
        if self._stopping or self._opening is not None or self._kept():
            return

        async def open_spare() -> None:
            try:
                _, connection = await self._loop.create_connection(_Connection, *self._address)
            except OSError:
                return
            finally:
                self._opening = None
            connection.idle_since = time.monotonic()
            self._idle.insert(0, connection)  # used after any kept since (pop takes the last)

        self._opening = self._loop.create_task(open_spare())

    async def _connection(self, *, fresh: bool) -> _Connection:
        """A kept-alive connection idle for less than :attr:`idle_keepalive` (the spare being
        opened, when there is none), or a new one."""
        if not fresh:
            if self._opening is not None and not self._kept():
                await asyncio.shield(self._opening)
            stale = time.monotonic() - self.idle_keepalive
            while self._idle:
                connection = self._idle.pop()
                connection.on_close = None
                if not (connection.closed or connection.buffer) and connection.idle_since > stale:
                    return connection
                connection.close()
        _, connection = await self._loop.create_connection(_Connection, *self._address)
        return connection

    async def _relay(
        self, harness: HarnessConnection, reply: _Reply, begun: float, record: dict[str, Any]
    ) -> _Answer | None:
        """Record the endpoint's answer: the harness's answer, or None when it was streamed to
        the harness as it came."""
        record["status"] = reply.status
        record["response_headers"] = reply.headers
        if 300 <= reply.status < 400:
            record["redirect"] = reply.first.get("location", "")[:4096]
            return _json_error(502, "the observer does not follow redirects")
        if _media_type(reply.first.get("content-type", "")) == "text/event-stream":
            await self._stream(harness, reply, begun, record)
            return None
        try:
            data = await reply.read()
        except OSError as exc:  # the body broke off, or is not HTTP's
            return _upstream_failed(record, f"{type(exc).__name__}: {exc}")
        record["response_body"] = data
        return reply.status, _passed(reply), data

    async def _stream(
        self, harness: HarnessConnection, reply: _Reply, begun: float, record: dict[str, Any]
    ) -> None:
        try:
            harness.start(reply.status, _passed(reply))
        except ConnectionResetError:
            record["error"] = GONE_BEFORE_THE_STREAM
            return
        chunks: list[tuple[float, bytes]] = []  # as they arrived; read as text when recorded
        record["chunks"] = chunks
        while True:
            try:
                data = await reply.next()
            except OSError as exc:
                # The endpoint broke off mid-stream: so does the harness's stream, never
                # "complete".
                failure = f"upstream broke off mid-stream: {type(exc).__name__}: {exc}"
                record["error"] = failure[:4096]
                self._keep(record)
                harness.close()
                return
            if not data:
                break
            now = time.monotonic()
            self.last_activity, arrived = now, now - begun
            point("stream-chunk")  # mid-stream
            try:
                await harness.send(data)
            except ConnectionResetError:
                record["error"] = GONE_MID_STREAM
                return
            finally:  # recorded once on its way to the harness, with the time it arrived
                chunks.append((arrived, data))
        self._keep(record)
        with contextlib.suppress(ConnectionResetError):
            # Every chunk went out. A harness that closed once it had read the last event, as
            # SSE clients do, before the chunked stream's terminating chunk, has the whole
            # reply: no error of the exchange (ADR 0034).
            harness.finish()


_Answer = tuple[int, list[tuple[str, str]], bytes]
"""A whole answer to the harness: status, header fields, body."""
_JSON = [("Content-Type", "application/json; charset=utf-8")]


def _json_error(status: int, message: str) -> _Answer:
    """The observer's own answer to the harness: ``{"error": {"message": ...}}``."""
    return status, _JSON, json.dumps({"error": {"message": message}}).encode()


def _upstream_failed(record: dict[str, Any], failure: str) -> _Answer:
    """The harness's answer when the endpoint could not be reached or broke off: a 502, with
    the error recorded (a status the endpoint never sent is not recorded as its status)."""
    record["error"] = f"upstream: {failure}"[:4096]
    return _json_error(502, "upstream failed")


def _header_text(text: str) -> str:
    """Text fit for an HTTP header value: printable ASCII, one line, at most 1,024 characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)[:1024]


def _finish(record: dict[str, Any]) -> TransportExchange:
    """The evidence record of a raw exchange: headers selected and redacted, bodies encoded,
    chunks made, the reply's model read."""
    raw = record.get("response_body")
    streamed = stream_chunks(record.get("chunks", ()))
    texts = [raw.decode("utf-8", "replace")] if isinstance(raw, bytes) else []
    texts += [chunk.data for chunk in streamed]
    model = next((m for m in map(_model_named, texts) if m is not None), None)
    body = _body(raw) if isinstance(raw, bytes) else raw
    sent = record.get("request_body", b"")
    asked = _headers(record["request_headers"], _RECORDED_REQUEST)
    retry = record.get("retry")
    if retry is not None:
        asked[RETRY_HEADER] = retry
    fields = {k: v for k, v in record.items() if k != "retry"}
    return TransportExchange.model_validate(
        fields
        | {
            "request_headers": asked,
            "response_headers": _headers(record.get("response_headers", ()), _RECORDED_RESPONSE),
            "chunks": streamed,
            "request_body": _body(sent),
            "response_body": body,
            "response_model": model,
        }
    )


def _with_policy(
    payload: bytes, request: Request, policy: ReasoningSerialization | None
) -> tuple[bytes, str | None]:
    """A completion request with the run's reasoning policy written where its serialization
    says (harnesses cannot be relied on to send it); what is forwarded is what is recorded.
    Every completion endpoint gets it (chat and legacy completions, the responses API, Ollama's
    chat and generate). A completion request whose body is not a JSON object cannot carry it:
    the second value is why it is refused (never forwarded), else None."""
    if policy is None or not is_completion_path(request.target):
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
    return json.dumps(policy.write_into(body), separators=(",", ":")).encode(), None


def _passed(reply: _Reply) -> list[tuple[str, str]]:
    """The reply's header fields the harness gets (:attr:`_Reply.passed`)."""
    return list(reply.passed.values())


# --- the endpoint's side: HTTP/1.1 on an asyncio protocol ---------------------------------------

_RETRY_KEY = RETRY_HEADER.encode("ascii")
_HOP_BY_HOP_BYTES = frozenset(name.encode("ascii") for name in _HOP_BY_HOP)
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""Methods that are sent without a ``Content-Length`` when they carry no body."""
_MAX_HEAD = 64 << 10
"""The largest response head (status line and headers) taken, in bytes."""
_HIGH_WATER = 1 << 20
"""Bytes buffered from the endpoint before it is read no more until the relay catches up."""


def _forwarded(raw: Iterable[tuple[bytes, bytes]]) -> dict[bytes, tuple[bytes, bytes]]:
    """The harness's header fields to forward, by lowercased name, as the bytes arrived: the
    hop's own left out, and of a repeated name the last, where the first was (what the
    record keeps of it)."""
    fields: dict[bytes, tuple[bytes, bytes]] = {}
    for name, value in raw:
        key = name.lower()
        if key not in _HOP_BY_HOP_BYTES:
            fields[key] = (name, value)
    return fields


def _request_message(
    method: str, target: str, host: bytes, fields: dict[bytes, tuple[bytes, bytes]], body: bytes
) -> bytes:
    """The request as the endpoint gets it, in one piece: the request line with the recorded
    path, ``Host``, the harness's fields, ``Accept-Encoding: identity`` (the bytes recorded are
    the bytes the model sent), the body's length, the body."""
    parts = [
        b"%s %s HTTP/1.1\r\nHost: %s\r\n"
        % (method.encode("ascii"), target.encode("utf-8", "surrogateescape"), host)
    ]
    parts += [b"%s: %s\r\n" % field for field in fields.values()]
    parts.append(b"Accept-Encoding: identity\r\n")
    if body or method not in _BODYLESS_METHODS:
        parts.append(b"Content-Length: %d\r\n" % len(body))
    parts += [b"\r\n", body]
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One kept-alive connection to the endpoint, one exchange at a time: the bytes it sent
    are buffered as they arrive, and the exchange's coroutine woken to read them."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.received = 0
        """Bytes that arrived since the request was sent."""
        self.closed = False
        self.idle_since = 0.0
        self.on_close: Callable[[_Connection], None] | None = None
        """Called when the endpoint closes the connection while it is kept idle."""
        self._lost: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # noqa: S101 - a TCP connection
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.received += len(data)
        if len(self.buffer) > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> None:
        self._closed_by_peer()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed_by_peer()
        self._lost = exc
        self._wake()

    def _closed_by_peer(self) -> None:
        if not self.closed:
            self.closed = True
            if self.on_close is not None:
                self.on_close(self)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def readable(self) -> None:
        """Until more bytes arrive or the connection closes."""
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        await waiter

    def broken(self, what: str) -> OSError:
        """The error of a connection that closed before ``what`` was whole."""
        if isinstance(self._lost, OSError):
            return self._lost
        return ConnectionError(f"the endpoint closed the connection {what}")

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def send(self, message: bytes, *, head: bool) -> _Reply:
        """Send a request; its reply once the reply's head is read (an interim ``1xx`` passed
        over). ``head``: a ``HEAD`` request, whose reply has no body.

        Raises:
            OSError: the connection failed, or what came is no HTTP/1.x reply
                (:attr:`received` says whether any byte of one came).
        """
        self.received = 0
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionError("the kept-alive connection had closed")
        self.transport.write(message)
        while True:
            reply = _Reply(self, await self._head(), head)
            if not 100 <= reply.status < 200 or reply.status == 101:
                return reply

    async def _head(self) -> bytes:
        start = 0
        while True:
            end = self.buffer.find(b"\r\n\r\n", start)
            if end >= 0:
                data = bytes(self.buffer[:end])
                del self.buffer[: end + 4]
                return data
            if len(self.buffer) > _MAX_HEAD:
                raise ConnectionError(f"the endpoint sent a response head over {_MAX_HEAD} bytes")
            if self.closed:
                raise self.broken(
                    "before any response"
                    if not self.received
                    else f"after {len(self.buffer)} bytes of a response head"
                )
            start = max(0, len(self.buffer) - 3)
            await self.readable()


class _Reply:
    """The endpoint's reply: status, header fields as they came (decoded as aiohttp's parser
    decodes them: UTF-8, undecodable bytes kept as surrogates), and its body as it arrives,
    its framing (``Content-Length``, chunked, or until the connection closes) taken off."""

    def __init__(self, connection: _Connection, head: bytes, head_request: bool) -> None:
        self._connection = connection
        status_bytes, *field_lines = head.split(b"\r\n")
        status_line = status_bytes.decode("utf-8", "surrogateescape")
        version, _, rest = status_line.partition(" ")
        code = rest.partition(" ")[0]
        if (
            version not in ("HTTP/1.1", "HTTP/1.0")
            or len(code) != 3
            or not code.isascii()
            or not code.isdecimal()
            or not 100 <= int(code) <= 599
            or _REASON.fullmatch(status_bytes.partition(b" ")[2][4:]) is None
        ):
            raise ConnectionError(
                f"the endpoint sent no HTTP/1.x status line: {status_line[:200]!r}"
            )
        self.status = int(code)
        self.headers: list[tuple[str, str]] = []
        """Every field, in order."""
        self.passed: dict[str, tuple[str, str]] = {}
        """The fields for the harness: the hop's own left out, and of a repeated name the last,
        where the first was (what the record keeps of it)."""
        self.first: dict[str, str] = {}
        """The first value of each field, by lowercased name."""
        keep_alive = version == "HTTP/1.1"
        length: int | None = None
        coding: str | None = None
        for field in field_lines:
            match = FIELD_LINE.fullmatch(field)
            if match is None:  # what the harness's own parser refuses is not passed on
                raise ConnectionError(
                    f"the endpoint sent a malformed header line: {_shown_bytes(field)}"
                )
            name = match.group(1).decode("ascii")
            value = match.group(2).decode("utf-8", "surrogateescape").strip(" \t")
            self.headers.append((name, value))
            key = name.lower()
            if key == "content-type" and not value.isascii():
                # a harness reads the charset in whichever encoding its client decodes the
                # whole head in (httpx: ASCII, else UTF-8, else Latin-1): ASCII is read alike
                raise ConnectionError(
                    f"the endpoint sent a Content-Type that is not ASCII: {value[:200]!r}"
                )
            self.first.setdefault(key, value)
            if key not in _HOP_BY_HOP:
                self.passed[key] = (name, value)
            elif key == "content-length":
                number = content_length(value.encode("utf-8", "surrogateescape"))
                if number is None or length not in (None, number):
                    raise ConnectionError(
                        f"the endpoint sent a bad Content-Length: {value[:200]!r}"
                    )
                length = number
                if length > MAX_REPLY:
                    raise ConnectionError(f"the endpoint's reply is over {MAX_REPLY} bytes")
            elif key == "transfer-encoding":
                coding = value.rsplit(",", 1)[-1].strip().lower()
            elif key == "connection":
                tokens = {token.strip().lower() for token in value.split(",")}
                keep_alive = "close" not in tokens and (keep_alive or "keep-alive" in tokens)
        self._keep_alive = keep_alive and self.status != 101
        self._framing = (
            "none"
            if head_request or self.status in (204, 304) or 100 <= self.status < 200
            else ("chunked" if coding == "chunked" else "close")
            if coding is not None
            else "close"
            if length is None
            else "length"
        )
        self._remaining = 0 if length is None else length
        """Bytes of the body (``length``) or of the current chunk (``chunked``) still to come."""
        self._chunk_state = "size"
        self._taken = 0
        """Bytes of the body taken so far: at most :data:`MAX_REPLY`."""
        self.done = self._framing == "none" or (self._framing == "length" and not length)

    @property
    def reusable(self) -> bool:
        """Whether the connection can carry the next request: the body read to its end,
        nothing after it, and neither side asked to close."""
        connection = self._connection
        return self.done and self._keep_alive and not connection.closed and not connection.buffer

    async def read(self) -> bytes:
        """The whole body.

        Raises:
            OSError: the connection closed or broke before the body was whole.
        """
        parts = []
        while data := await self.next():
            parts.append(data)
        return b"".join(parts)

    async def next(self) -> bytes:
        """The body's bytes that have arrived (waiting for some), ``b""`` once it has ended.

        Raises:
            OSError: the connection closed or broke before the body was whole.
        """
        connection = self._connection
        while not self.done:
            data = self._take(connection.buffer)
            if data:
                self._taken += len(data)
                if self._taken > MAX_REPLY:
                    raise ConnectionError(f"the endpoint's reply is over {MAX_REPLY} bytes")
                return data
            if self.done:
                break
            if connection.closed:
                if self._framing == "close":
                    self.done = True
                    break
                raise connection.broken(
                    f"with {self._remaining} bytes of the body still to come"
                    if self._framing == "length"
                    else "within the chunked body"
                )
            await connection.readable()
        return b""

    def _take(self, buffer: bytearray) -> bytes:
        if self._framing == "length":
            data = bytes(buffer[: self._remaining])
            del buffer[: len(data)]
            self._remaining -= len(data)
            self.done = not self._remaining
            return data
        if self._framing == "close":
            data = bytes(buffer)
            buffer.clear()
            return data
        return self._take_chunked(buffer)

    def _take_chunked(self, buffer: bytearray) -> bytes:
        parts = []
        position = 0
        while not self.done:
            if self._chunk_state == "data":
                data = bytes(buffer[position : position + self._remaining])
                if not data:
                    break
                parts.append(data)
                position += len(data)
                self._remaining -= len(data)
                if self._remaining:
                    break
                self._chunk_state = "data-end"
                continue
            end = buffer.find(b"\r\n", position)
            if end < 0:
                if len(buffer) - position > _MAX_HEAD:
                    raise ConnectionError("the endpoint sent an over-long line in a chunked body")
                break
            self._chunk_line(bytes(buffer[position:end]))
            position = end + 2
        del buffer[:position]
        return b"".join(parts)

    def _chunk_line(self, line: bytes) -> None:
        """A line of the chunked framing: the end of a chunk's data, a chunk's size, a trailer
        field (the transport's, not forwarded), or the end of the body."""
        if self._chunk_state == "data-end":
            if line:
                raise ConnectionError("the endpoint sent a chunk longer than its size")
            self._chunk_state = "size"
        elif self._chunk_state == "trailer":
            self.done = not line
        else:
            size = line.partition(b";")[0].strip()
            if not size or size.strip(b"0123456789abcdefABCDEF") or len(size.lstrip(b"0")) > 16:
                raise ConnectionError(f"the endpoint sent a bad chunk size: {line[:200]!r}")
            self._remaining = int(size, 16)
            self._chunk_state = "data" if self._remaining else "trailer"


def _media_type(value: str) -> str:
    """The media type of a ``Content-Type`` value, lowercased, without its parameters."""
    return value.partition(";")[0].strip().lower()


@contextmanager
def observe(
    upstream: str,
    *,
    policy: ReasoningSerialization | None = None,
    idle_keepalive: float = IDLE_KEEPALIVE_S,
) -> Iterator[Observer]:
    """Run an observer in front of ``upstream`` for the duration of a ``with`` block."""
    observer = Observer(upstream, policy=policy, idle_keepalive=idle_keepalive).start()
    try:
        yield observer
    finally:
        observer.stop()
