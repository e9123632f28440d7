"""A deterministic OpenAI-compatible model endpoint: the embedded default's model.

It answers ``GET /v1/models``, llama.cpp's ``GET /props`` and ``POST /v1/chat/completions``
(non-streaming and Server-Sent Events streaming, with tool calls), the same way every time:
the direct probes of gx10-direct-probe-v1 get their exact answers, other prompts get a reply
derived from the prompt's hash, one "token" per word. A ``Behaviour`` makes it misbehave the
ways the demo scenarios need: answer past the completion ceiling, add reasoning text, redirect,
or answer as another model.

It runs on 127.0.0.1 in a thread of its own (:class:`ReferenceEndpoint`), and is test and demo
equipment: it is not a model and scores nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = ["MODEL_ID", "Behaviour", "ReferenceEndpoint", "reply_words", "serve"]

MODEL_ID = "reference-model-q8_0"
"""The runtime model id the reference endpoint serves."""

_TEXT = (
    "the model answers each request from the prompt alone so every run of the reference "
    "endpoint gives the same bytes and the same timing shape across machines"
)
_WORDS = tuple(_TEXT.split())


@dataclass(frozen=True)
class Behaviour:
    """How the reference endpoint behaves; the default is a well-behaved deployment."""

    chunk_delay: float = 0.0
    """Seconds between streamed chunks."""
    verbose: bool = False
    """Answer with far more words than any ceiling: output-limit truncation."""
    reasoning: bool = False
    """Add reasoning text to every reply, whatever the request asks."""
    redirect: str | None = None
    """Answer completions with a 307 to this URL."""
    served_as: str | None = None
    """Report this model in replies instead of :data:`MODEL_ID`: a fallback."""
    dies_after: int | None = None
    """Answer this many completions, then die: every later one is cut off mid-answer."""


def reply_words(messages: list[Any]) -> list[str]:
    """The words of the deterministic reply to a conversation."""
    last = next(
        (
            m.get("content")
            for m in reversed(messages)
            if isinstance(m, dict) and m.get("role") == "user"
        ),
        "",
    )
    text = last if isinstance(last, str) else json.dumps(last)
    exact = re.search(r"Reply with exactly: (\S+)", text)
    if exact:
        return [exact.group(1)]
    seed = hashlib.sha256(text.encode()).digest()
    return [_WORDS[b % len(_WORDS)] for b in seed[: 8 + seed[0] % 16]]


def _tool_call(messages: list[Any], tools: list[Any]) -> dict[str, Any]:
    name = tools[0].get("function", {}).get("name", "tool") if tools else "tool"
    last = next((m.get("content") for m in reversed(messages) if isinstance(m, dict)), "")
    city = re.search(r"in ([A-Z][a-z]+)", last if isinstance(last, str) else "")
    arguments = {"city": city.group(1)} if city else {}
    return {
        "id": "call_0",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, separators=(",", ":"))},
    }


class _App:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.model = behaviour.served_as or MODEL_ID
        self.answered = 0

    async def models(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": MODEL_ID, "object": "model", "owned_by": "reference"}],
            }
        )

    async def props(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {
                "model_path": f"/models/{MODEL_ID}.gguf",
                "build_info": "reference-1",
                "default_generation_settings": {"n_ctx": 8192},
            }
        )

    async def completions(self, request: web.Request) -> web.StreamResponse:
        if self.behaviour.redirect is not None:
            raise web.HTTPTemporaryRedirect(self.behaviour.redirect)
        self.answered += 1
        dies = self.behaviour.dies_after
        if dies is not None and self.answered > dies:
            return await self._die(request)
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "not JSON"}}, status=400)
        messages = body.get("messages") or []
        limit = body.get("max_completion_tokens", body.get("max_tokens")) or 4096
        tools = body.get("tools") or []
        if tools and body.get("tool_choice") in ("required", "auto"):
            words: list[str] = []
            call: dict[str, Any] | None = _tool_call(messages, tools)
        else:
            words = reply_words(messages) * (2000 if self.behaviour.verbose else 1)
            call = None
        finish = "tool_calls" if call else "stop"
        if len(words) > limit:
            words, finish = words[:limit], "length"
        reasoning = "Thinking about the request first." if self.behaviour.reasoning else None
        if body.get("stream"):
            return await self._stream(request, words, call, finish, reasoning)
        message: dict[str, Any] = {"role": "assistant", "content": " ".join(words) or None}
        if call:
            message["tool_calls"] = [call]
        if reasoning:
            message["reasoning_content"] = reasoning
        return web.json_response(
            {
                "id": "chatcmpl-ref",
                "object": "chat.completion",
                "model": self.model,
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": _usage(messages, len(words) + (12 if call else 0)),
            }
        )

    async def _die(self, request: web.Request) -> web.StreamResponse:
        """Start an answer and drop the connection in the middle of it."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n')
        if request.transport is not None:
            request.transport.close()
        return response

    async def _stream(
        self,
        request: web.Request,
        words: list[str],
        call: dict[str, Any] | None,
        finish: str,
        reasoning: str | None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            async for event in self._events(words, call, finish, reasoning):
                line = f"data: {json.dumps(event, separators=(',', ':'))}\n\n"
                await response.write(line.encode())
                if self.behaviour.chunk_delay:
                    await asyncio.sleep(self.behaviour.chunk_delay)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:  # the client went away: nothing left to answer
            pass
        return response

    async def _events(
        self, words: list[str], call: dict[str, Any] | None, finish: str, reasoning: str | None
    ) -> AsyncIterator[dict[str, Any]]:
        def event(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-ref",
                "object": "chat.completion.chunk",
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            }

        yield event({"role": "assistant"})
        if reasoning:
            yield event({"reasoning_content": reasoning})
        for index, word in enumerate(words):
            yield event({"content": word if index == 0 else f" {word}"})
        if call:
            yield event({"tool_calls": [{"index": 0, **call}]})
        yield event({}, finish)


def _application(behaviour: Behaviour, seen: Callable[[], None]) -> web.Application:
    handlers = _App(behaviour)

    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        seen()
        return await handler(request)

    app = web.Application(middlewares=[count])
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/props", handlers.props)
    app.router.add_post("/v1/chat/completions", handlers.completions)
    return app


class ReferenceEndpoint:
    """The reference endpoint on 127.0.0.1, served from a thread with its own event loop."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.requests = 0
        """How many requests it has received."""

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:43121``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ReferenceEndpoint:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(_application(self.behaviour, self._seen), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    def _seen(self) -> None:
        self.requests += 1

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


@contextmanager
def serve(behaviour: Behaviour | None = None) -> Iterator[ReferenceEndpoint]:
    """Run a reference endpoint for the duration of a ``with`` block."""
    endpoint = ReferenceEndpoint(behaviour).start()
    try:
        yield endpoint
    finally:
        endpoint.stop()


def _usage(messages: Any, completion: int) -> dict[str, int]:
    """A reply's token counts as an OpenAI-compatible server gives them: the prompt counted as
    the words of its messages' text (a stand-in for a tokenizer, the same for the same request)."""
    texts = (
        [m.get("content") for m in messages if isinstance(m, dict)]
        if isinstance(messages, list)
        else []
    )
    prompt = sum(len(t.split()) for t in texts if isinstance(t, str))
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip
