"""Small real HTTP servers on 127.0.0.1 that behave as real engines do where the runner must
cope: a server that closes idle keep-alive connections, and OpenAI-compatible servers shaped
like llama.cpp's ``llama-server`` (the weights' path as the model id, ``/props``, a
``system_fingerprint``) and llama-cpp-python's server (no ``/props``, any requested ``model``
echoed back, no fingerprint), and a gateway that fails over from one engine to another. No
engine is needed: each is a few lines of ``http.server``.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Engine", "EngineServer", "FailingOver", "answering_after", "idle_closing", "serve_engine",
]  # fmt: skip


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    idle_close: float | None = None
    """Close a kept-alive connection whose next request comes after this many idle seconds,
    unanswered (the server's idle timer fired as the request crossed it)."""
    idle_timeout: float | None = None
    """Close a kept-alive connection idle this long (as a server's keep-alive timeout does)."""
    close_after_reply = False
    """Close every connection once its reply is written, without a ``Connection: close``
    (``llama-server`` after a streamed reply)."""
    dropped = 0
    requests = 0
    open = 0
    """Connections open now."""
    connections = 0
    """Connections accepted in all."""
    counting: threading.Lock
    seen: list[tuple[float, float]]
    """For each request, in order: when its connection was accepted, when it arrived
    (``time.monotonic``)."""
    app: Callable[[str, str, Any], tuple[int, Any, str]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        with self.server.counting:  # each connection has a thread of its own
            self.server.open += 1
            self.server.connections += 1
        try:
            self._serve()
        finally:
            with self.server.counting:
                self.server.open -= 1

    def _serve(self) -> None:
        self.accepted = time.monotonic()
        self.close_connection = True
        timeout = self.server.idle_timeout
        if timeout is not None and not select.select([self.connection], [], [], timeout)[0]:
            return  # no request within the keep-alive timeout: closed
        self.handle_one_request()
        last = time.monotonic()
        while not self.close_connection and not self.server.close_after_reply:
            wait = self.server.idle_timeout or 30.0
            ready, _, _ = select.select([self.connection], [], [], wait)
            if not ready:
                return  # idle past the keep-alive timeout: closed
            idle_close = self.server.idle_close
            if idle_close is not None and time.monotonic() - last > idle_close:
                self.server.dropped += 1
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.handle_one_request()
            last = time.monotonic()

    def _answer(self, method: str) -> None:
        self.server.seen.append((self.accepted, time.monotonic()))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.server.requests += 1
        status, reply, media = self.server.app(method, self.path, body)
        data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")


@dataclass
class EngineServer:
    """A running server: its URL and what it saw."""

    server: _Server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def dropped(self) -> int:
        return self.server.dropped

    @property
    def requests(self) -> int:
        return self.server.requests

    @property
    def open(self) -> int:
        return self.server.open

    @property
    def connections(self) -> int:
        return self.server.connections

    @property
    def seen(self) -> list[tuple[float, float]]:
        return self.server.seen


@contextmanager
def _serve(
    app: Callable[[str, str, Any], tuple[int, Any, str]],
    *,
    idle_close: float | None = None,
    idle_timeout: float | None = None,
    close_after_reply: bool = False,
) -> Iterator[EngineServer]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.app, server.seen, server.counting = app, [], threading.Lock()
    server.idle_close, server.idle_timeout = idle_close, idle_timeout
    server.close_after_reply = close_after_reply
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield EngineServer(server)
    finally:
        server.shutdown()
        server.server_close()


def _ok(method: str, path: str, body: Any) -> tuple[int, Any, str]:
    return 200, {"method": method, "path": path, "echo": body}, "application/json"


@contextmanager
def idle_closing(
    *,
    idle_close: float | None = None,
    idle_timeout: float | None = None,
    close_after_reply: bool = False,
) -> Iterator[EngineServer]:
    """A keep-alive server that answers every request with 200 and closes idle connections:
    after ``idle_timeout`` seconds, or (``idle_close``) when the next request comes after that
    many idle seconds, leaving it unanswered; with ``close_after_reply``, every connection once
    its reply is written, without saying so."""
    with _serve(
        _ok,
        idle_close=idle_close,
        idle_timeout=idle_timeout,
        close_after_reply=close_after_reply,
    ) as server:
        yield server


@contextmanager
def answering_after(delay: float) -> Iterator[EngineServer]:
    """A server that answers every request with 200, ``delay`` seconds after it came (a model
    slower than its client's time-out)."""

    def slow(method: str, path: str, body: Any) -> tuple[int, Any, str]:
        time.sleep(delay)
        return _ok(method, path, body)

    with _serve(slow) as server:
        yield server


@dataclass
class Engine:
    """An OpenAI-compatible engine's shape: what it lists, whether it has ``/props``, which
    model its replies name, and its fingerprint."""

    listed: str
    """The id ``/v1/models`` lists (llama.cpp: the path the weights were loaded from)."""
    props: dict[str, Any] | None = None
    """``/props``'s answer; None: the engine has none (404)."""
    echoes: bool = False
    """Replies name whatever ``model`` the request named (llama-cpp-python)."""
    answers_as: str | None = None
    """The model replies name when the engine does not echo (default: ``listed``)."""
    fingerprint: str | None = None
    """The ``system_fingerprint`` of every reply (llama.cpp: its build)."""
    content: str = "READY"
    reasoning_content: str | None = None
    seen: list[Any] = field(default_factory=list)
    """Every completion request body."""

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, Any, str]:
        if method == "GET" and path == "/v1/models":
            return (
                200,
                {"object": "list", "data": [{"id": self.listed, "object": "model"}]},
                ("application/json"),
            )
        if method == "GET" and path == "/props" and self.props is not None:
            return 200, self.props, "application/json"
        if method != "POST" or not path.endswith("/completions"):
            return 404, {"error": {"message": "not found"}}, "application/json"
        self.seen.append(body)
        requested = body.get("model") if isinstance(body, dict) else None
        model = requested if self.echoes else (self.answers_as or self.listed)
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning_content is not None:
            message["reasoning_content"] = self.reasoning_content
        if isinstance(body, dict) and body.get("tools"):
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_0", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }]}  # fmt: skip
        if isinstance(body, dict) and body.get("stream"):
            return 200, self._stream(model, message), "text/event-stream"
        reply: dict[str, Any] = {
            "id": "chatcmpl-0",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
        }
        if self.fingerprint is not None:
            reply["system_fingerprint"] = self.fingerprint
        return 200, reply, "application/json"

    def _stream(self, model: Any, message: dict[str, Any]) -> bytes:
        """The reply as llama.cpp streams it: a role delta, one delta per word (``null``
        fields kept as the engine sends them), a finish event and ``[DONE]``."""
        first = {"role": "assistant", "content": None}
        deltas = [first] + [
            {"content": word} for word in str(message.get("content") or "").split(" ")
        ]
        deltas = [d | {"content": d["content"] + " "} if d.get("content") and i < len(deltas) - 1
                  else d for i, d in enumerate(deltas)]  # fmt: skip
        if self.reasoning_content is not None:
            deltas.insert(1, {"reasoning_content": self.reasoning_content})
        events = []
        for delta in deltas:
            event: dict[str, Any] = {
                "id": "chatcmpl-0",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            if self.fingerprint is not None:
                event["system_fingerprint"] = self.fingerprint
            events.append(event)
        events.append(
            events[-1] | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        )
        lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
        return "".join(lines).encode()


@dataclass
class FailingOver:
    """A gateway in front of two engines (as a LiteLLM-style router falls back when its primary
    errs or is overloaded): completions are answered by ``primary`` until ``after`` of them have
    been, then by ``fallback``; everything else (the model list) by ``primary``. With engines
    that echo the requested ``model``, every reply names the model the harness asked for."""

    primary: Engine
    fallback: Engine
    after: int
    served: int = 0

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, Any, str]:
        if method == "POST" and path.endswith("/completions"):
            engine = self.primary if self.served < self.after else self.fallback
            self.served += 1
            return engine(method, path, body)
        return self.primary(method, path, body)


@contextmanager
def serve_engine(engine: Engine | FailingOver) -> Iterator[EngineServer]:
    """Serve ``engine`` on 127.0.0.1 (a free port) for the duration of a ``with`` block."""
    with _serve(engine) as server:
        yield server
