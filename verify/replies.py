"""Readers of what a model endpoint was asked and answered, shared by the runner and the verifier.

Every reader here is total: it takes any recorded value (a body that is base64, not JSON, nested
100,000 deep; choices that are an object or a number; a tool call whose function is a string)
and returns what it holds or None, never raises. A streamed reply is reassembled from its chunks
before it is read, so that a key or a tag split across chunks is found where a model put it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import Body, Chunk, TransportExchange
from bundle_schema.models.records import (
    GONE_BEFORE_THE_ANSWER,
    GONE_BEFORE_THE_STREAM,
    GONE_MID_STREAM,
    RUN_ENDED_FIRST,
)

__all__ = [
    "COMPLETION_SUFFIXES",
    "FINGERPRINTS_KEPT",
    "REASONING_KEYS",
    "Reply",
    "asks_for_reasoning",
    "body_bytes",
    "body_json",
    "exchange_failed",
    "first_tool_call",
    "harness_went",
    "is_completion",
    "is_completion_path",
    "loads_on_a_fresh_stack",
    "read_exchange",
    "read_reply",
    "reasoning_level",
    "reply_pieces",
    "request_reasoning",
    "runtime_name",
    "same_model",
    "sse_events",
]

_NOT_JSON = object()

COMPLETION_SUFFIXES = (
    "/chat/completions",
    "/completions",
    "/responses",
    "/api/chat",
    "/api/generate",
    "/v1/messages",
    "/completion",
    "/infill",
)
"""The endpoints that generate text: chat and legacy completions, the responses API, Ollama's
native chat and generate, the messages API (llama.cpp, vLLM and Ollama serve it), and
llama.cpp's own completion and infill."""

REASONING_KEYS = (
    "reasoning_content",
    "reasoning",
    "thinking",
    "reasoning_text",
    "reasoning_details",
)
"""Fields of a reply message or a streamed delta that carry reasoning, as engines name them."""

REQUEST_REASONING_PATHS = (
    "chat_template_kwargs.enable_thinking",
    "chat_template_kwargs.thinking",
    "enable_thinking",
    "reasoning_effort",
    "reasoning",
    "thinking",
    "think",
)
"""Where engines read a request's reasoning switch (llama.cpp and vLLM chat templates, the
OpenAI reasoning effort and responses API, Ollama's ``think``)."""

_OFF = (False, None, 0, "none", "off", "disabled", "false", "minimal")

FINGERPRINTS_KEPT = 3
"""How many distinct ``system_fingerprint`` values of one reply are kept (the rest counted):
two are enough to show a reply of two engines."""

THINK_TAGS = (
    "<think>", "</think>", "<thinking>", "</thinking>",  # DeepSeek-R1, Qwen3, ...
    "[think]", "[/think]",  # Magistral
    "<|channel|>analysis",  # gpt-oss (the harmony format's reasoning channel)
)  # fmt: skip
"""Markup that carries reasoning in visible text, matched ignoring case."""


def runtime_name(served: str) -> str:
    """The runtime name of a model an endpoint lists: llama.cpp servers (llama-server without
    ``--alias``, llama-cpp-python without ``model_alias``) list the path the weights were
    loaded from, and that path's file name is the model's name; any other id is its own."""
    if served.startswith("/") or (len(served) > 2 and served[1] == ":" and served[2] in "/\\"):
        name = served.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return name or served
    return served


def same_model(named: str, runtime: str) -> bool:
    """Whether a model a reply or listing names is the runtime model: the same id, or the path
    of weights whose file name is the runtime name."""
    return named == runtime or runtime_name(named) == runtime


def asks_for_reasoning(value: Any) -> bool:
    """Whether a request's reasoning value asks for reasoning (``false``, ``"none"``, ``"off"``,
    ``0``, ... do not)."""
    return _enabled(value)


def _enabled(value: Any) -> bool:
    """Whether a request's reasoning value asks for reasoning."""
    if isinstance(value, dict):
        inner = value.get("effort", value.get("type", value.get("enabled", True)))
        return _enabled(inner)
    if isinstance(value, str):
        return value.strip().lower() not in _OFF
    return value not in _OFF


def request_reasoning(request: Any) -> list[tuple[str, bool, str | None]]:
    """Each reasoning switch a request body sets, with whether it asks for reasoning and the
    level it names (:func:`reasoning_level`)."""
    found = []
    for path in REQUEST_REASONING_PATHS:
        node = request
        for part in path.split("."):
            node = node.get(part, _NOT_JSON) if isinstance(node, dict) else _NOT_JSON
        if node is not _NOT_JSON:
            found.append((path, _enabled(node), reasoning_level(node)))
    return found


def reasoning_level(value: Any) -> str | None:
    """The level of reasoning a request's value names (``"high"``, the responses API's
    ``{"effort": "high"}``), lowercased; None for a switch (``true``), a number or nothing."""
    if isinstance(value, dict):
        value = value.get("effort")
    return value.strip().lower() if isinstance(value, str) else None


_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def decoded_path(path: str) -> str:
    """A request target's path with its percent-escapes decoded where their bytes are UTF-8
    (an escape that is not kept as it was), as the servers an engine runs on route it (yarl,
    cpp-httplib, h11's users: ``%2F`` is ``/``, ``+`` stays ``+``). The observer and the
    verifier both read a path so (:func:`is_completion_path`)."""
    if "%" not in path:
        return path

    def decode(match: re.Match[str]) -> str:
        escapes = match.group()
        text = bytes.fromhex(escapes.replace("%", "")).decode("utf-8", "surrogateescape")
        if not any("\udc80" <= c <= "\udcff" for c in text):
            return text
        parts, position = [], 0
        for character in text:
            if "\udc80" <= character <= "\udcff":  # a byte that was not UTF-8: as it came
                parts.append(escapes[position : position + 3])
                position += 3
            else:
                parts.append(character)
                position += 3 * len(character.encode("utf-8"))
        return "".join(parts)

    return _PERCENT.sub(decode, path)


def is_completion_path(path: str) -> bool:
    """Whether a request target as it came and was recorded (with or without a query string)
    is a completion endpoint: its path, percent-escapes decoded once (:func:`decoded_path`),
    ends as one does."""
    return decoded_path(target_path(path)).rstrip("/").endswith(COMPLETION_SUFFIXES)


def target_path(target: str) -> str:
    """A request target's path as the observer's server (and aiohttp's parser) splits it: up to
    the first ``?``, or the first ``#`` when there is none."""
    path, question, _ = target.partition("?")
    return path if question else path.partition("#")[0]


def is_completion(exchange: TransportExchange) -> bool:
    """Whether an exchange is a completion request (POST to a completion endpoint)."""
    return exchange.method == "POST" and is_completion_path(exchange.path)


def exchange_failed(exchange: TransportExchange) -> bool:
    """Whether an exchange is an error: not a 200, or broken off (the observer says why)."""
    return exchange.status != 200 or exchange.error is not None


def harness_went(exchange: TransportExchange) -> bool:
    """Whether the observer records that the harness went before it had the whole answer (its
    client timed out, or the run stopped it): the answer, if any, never reached it."""
    error = exchange.error
    return error is not None and (
        error in (GONE_BEFORE_THE_ANSWER, GONE_BEFORE_THE_STREAM, GONE_MID_STREAM)
        or error.startswith(RUN_ENDED_FIRST)
    )


def body_bytes(body: Body | None) -> bytes | None:
    """A body's bytes as they were sent, or None when absent or not decodable base64."""
    if body is None:
        return None
    if body.encoding == "utf-8":
        return body.data.encode("utf-8")
    try:
        return base64.b64decode(body.data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        return None


def reply_pieces(
    exchange: TransportExchange, received: Callable[[Chunk], bytes] = Chunk.received
) -> list[tuple[float, bytes]] | None:
    """A reply's bytes as its reader got them, each piece with the observer's time of it (from
    the exchange's start): each chunk's bytes (``received``), or a reply not streamed whole at
    its end; none without a body; None where its body is not the base64 it says.

    Raises:
        ValueError: ``received`` does not know a chunk's bytes.
    """
    if exchange.chunks:
        return [(chunk.t, received(chunk)) for chunk in exchange.chunks]
    if exchange.response_body is None:
        return []
    data = body_bytes(exchange.response_body)
    end = exchange.ended - exchange.started if exchange.ended is not None else 0.0
    return None if data is None else [(max(end, 0.0), data)]


def loads_on_a_fresh_stack(data: str, **options: Any) -> object:
    """``json.loads(data, **options)`` in a thread of its own: a fresh, shallow stack, so that
    how deep a value may nest does not depend on how deep the caller's own stack is.

    Raises:
        json.JSONDecodeError: not JSON.
        RecursionError: nested past what a fresh stack parses.
        ValueError: a number past ``int()``'s digits.
    """
    done: list[object] = []
    failed: list[BaseException] = []

    def parse() -> None:
        try:
            done.append(json.loads(data, **options))
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=parse, name="json-on-a-fresh-stack")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def body_json(body: Body | None) -> Any:
    """A body's JSON value (base64 bodies decoded first, bytes that are not UTF-8 read as
    U+FFFD), or None when it holds none."""
    data = body_bytes(body)
    return None if data is None else _loads(data.decode("utf-8", "replace").removeprefix("\ufeff"))


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def sse_events(chunks: Iterable[Chunk]) -> Iterator[tuple[float, Any]]:
    """The JSON events of a stream, reassembled across chunk boundaries, each with the time of
    the chunk its event ended in: server-sent events as the specification frames them (lines
    end at CR, LF or CRLF; an event's ``data:`` lines are joined until a blank line; ``[DONE]``
    skipped) and JSON Lines streams (Ollama's native API: a line that is a JSON object). Linear
    in the stream's size: a chunk's text is split once, and only the unfinished line and the
    unfinished event's data are carried."""
    return _stream_events((chunk.t, chunk.data) for chunk in chunks)


def _stream_events(pieces: Iterable[tuple[float, str]]) -> Iterator[tuple[float, Any]]:
    pending: list[str] = []
    data: list[tuple[float, str]] = []  # the unfinished event's data lines, each with its time
    after_cr = False  # the last piece ended at a CR: an LF starting the next one ends no line
    first = True  # no text yet: a chunk of half a character (or none) has none
    for t, piece in pieces:
        # a byte order mark at the start of the stream is no data, in whichever chunk its
        # character was completed
        text = piece.removeprefix("\ufeff") if first else piece
        first = first and not piece
        if after_cr and text.startswith("\n"):
            text = text[1:]
        if not text:
            continue
        after_cr = text.endswith("\r")
        lines = _LINE_BREAK.split(text)
        if len(lines) == 1:
            pending.append(text)
            continue
        lines[0] = "".join(pending) + lines[0]
        pending = [lines.pop()]
        for line in lines:
            yield from _line(t, line, data)
    if pending and (last := "".join(pending)):
        yield from _line(-1.0, last, data)
    yield from _dispatch(data)


def _line(t: float, line: str, data: list[tuple[float, str]]) -> list[tuple[float, Any]]:
    """The events one line completes (each with its time): a JSON Lines object; an event's
    data at a blank line. A ``data:`` line is kept with the time it came (one space after the
    colon dropped, as the specification says)."""
    if line.startswith("data:"):
        data.append((t, line[6:] if line.startswith("data: ") else line[5:]))
        return []
    if not line.strip():
        return _dispatch(data)
    if line.lstrip().startswith("{"):  # a JSON Lines stream
        value = _loads(line)
        return [(t, value)] if isinstance(value, dict) else []
    return []  # event:, id:, retry: and comments carry no reply


def _dispatch(data: list[tuple[float, str]]) -> list[tuple[float, Any]]:
    """The JSON value of an event's joined ``data:`` lines, at the time its last line came;
    where they do not join into one (a server that leaves out the blank line between events),
    each line's own, at its own time."""
    if not data:
        return []
    lines = data[:]
    data.clear()
    payload = "\n".join(text for _, text in lines).strip()
    if payload == "[DONE]" or not payload:
        return []
    value = _loads(payload)
    if value is not None:
        return [(lines[-1][0], value)]
    return [(t, v) for t, text in lines if (v := _loads(text.strip())) is not None]


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (a lone object counts as one; anything else holds none)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


_REASONING_PARTS = ("thinking", "reasoning", "redacted_thinking", "reasoning_text")


def _reasoning_part(part: dict[str, Any]) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and (kind in _REASONING_PARTS or kind.startswith("reasoning"))


def _text(value: Any) -> str:
    """The visible text of a content value (a string, or content parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(
            str(p.get("text", "")) for p in value if isinstance(p, dict) and not _reasoning_part(p)
        )
    return ""


def _part_reasoning(value: Any) -> str:
    """The reasoning a content value's parts carry (``{"type": "thinking", ...}`` parts)."""
    if not isinstance(value, list):
        return ""
    return "".join(
        str(p.get("thinking") or p.get("text") or p.get("type"))
        for p in value
        if isinstance(p, dict) and _reasoning_part(p)
    )


@dataclass(frozen=True)
class Reply:
    """What one reply held, streamed or not: its visible text, its reasoning text, the models
    it named, for a stream the time of each visible chunk, and the distinct
    ``system_fingerprint`` values its body and events carry (the first
    :data:`FINGERPRINTS_KEPT`, in order, and how many more distinct ones there were)."""

    content: str
    reasoning: str
    models: tuple[str, ...]
    visible_times: tuple[float, ...] = ()
    fingerprints: tuple[str, ...] = ()
    more_fingerprints: int = 0
    answer: bytes | None = None
    """:func:`answer_digest` of its body (a reply not streamed)."""
    answers: tuple[bytes, ...] = ()
    """:func:`answer_keys` of its body (a reply not streamed)."""
    kept: bytes | None = None
    """:func:`kept_digest` of its body (a reply not streamed)."""
    truncated: bool = False
    """Whether it says it stopped at its length limit (:func:`_cut_short`)."""

    @property
    def contaminated(self) -> bool:
        """Reasoning text, or a thinking tag in the visible text."""
        visible = self.content.lower()
        return bool(self.reasoning.strip()) or any(t in visible for t in THINK_TAGS)


def _present(value: Any) -> str:
    """A reasoning field's value as text for the search: any non-empty value counts (a string,
    a list of strings or parts of any type, an object, ``true``), whatever shape an engine or
    a gateway gives it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | dict) and value:
        return _text(value) if isinstance(value, list) and _text(value).strip() else "[reasoning]"
    return "[reasoning]" if value is True or (isinstance(value, int | float) and value) else ""


def _read_message(message: dict[str, Any], content: list[str], reasoning: list[str]) -> None:
    content.append(_text(message.get("content")))
    reasoning.append(_part_reasoning(message.get("content")))
    for key in REASONING_KEYS:
        reasoning.append(_present(message.get(key)))


def _named(value: Any) -> str:
    """A model or fingerprint value as a name of at most 256 characters: a string as it is (a
    longer one cut, with the SHA-256 of the whole so that two long values stay two), any other
    value by its type and text (a value in another shape is never a string's equal)."""
    if not isinstance(value, str):
        return f"{type(value).__name__} {str(value)[:200]}"
    if len(value) <= 256:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{value[:230]}… sha256:{digest}"


def _model_name(model: Any) -> str:
    """A model a reply names, as the fallback check compares it: a string cut at 256
    characters; a model named in another shape is not the runtime model's name."""
    return model[:256] if isinstance(model, str) else f"{type(model).__name__} {str(model)[:200]}"


def _read_item(item: dict[str, Any], content: list[str], reasoning: list[str]) -> None:
    """One output item of the responses API (a reasoning item, or a message's parts)."""
    if item.get("type") == "reasoning":
        reasoning.append("reasoning item")
    for part in _dicts(item.get("content")):
        content.append(_text(part.get("text")))


def _read_value(  # noqa: PLR0912 - one branch per reply shape an engine uses
    value: Any,
    content: list[str],
    reasoning: list[str],
    models: list[str],
    fingerprints: dict[str, None] | None = None,
    *,
    nested: bool = False,
) -> bool:
    """Read one reply document or stream event; whether it carried visible text. A responses
    API event's ``response`` object is read as a document of its own (one level)."""
    if not isinstance(value, dict):
        return False
    if value.get("model") is not None:
        models.append(_model_name(value["model"]))
    fingerprint = value.get("system_fingerprint")
    if fingerprints is not None and fingerprint is not None:  # null: the engine names none
        fingerprints.setdefault(_named(fingerprint), None)
    before = len(content)
    for choice in _dicts(value.get("choices")):
        content.append(_text(choice.get("text")))  # legacy completions
        for key in ("message", "delta"):
            for message in _dicts(choice.get(key)):
                _read_message(message, content, reasoning)
    for message in _dicts(value.get("message")):  # Ollama's /api/chat; message_start
        _read_message(message, content, reasoning)
        if message.get("model") is not None:  # the messages API's message_start names it here
            models.append(_model_name(message["model"]))
    if isinstance(value.get("response"), str):  # Ollama's /api/generate
        content.append(value["response"])
        reasoning.append(_present(value.get("thinking")))
    elif isinstance(value.get("response"), dict) and not nested:  # a responses API event
        _read_value(value["response"], content, reasoning, models, fingerprints, nested=True)
    for item in [*_dicts(value.get("output")), *_dicts(value.get("item"))]:  # responses API
        _read_item(item, content, reasoning)
    if "choices" not in value and "content" in value:
        # llama.cpp's /completion (a string) and the messages API (text and thinking parts)
        content.append(_text(value["content"]))
        reasoning.append(_part_reasoning(value["content"]))
    kind = value.get("type")
    delta = value.get("delta")
    if isinstance(kind, str) and kind.startswith("response.reasoning"):
        reasoning.append(_text(delta) or "reasoning event")
    elif kind == "response.output_text.delta":
        content.append(_text(delta))
    elif kind == "content_block_delta" and isinstance(delta, dict):  # the messages API
        if _reasoning_part(delta) or delta.get("type") == "thinking_delta":
            reasoning.append(_present(delta.get("thinking")) or "thinking delta")
        else:
            content.append(_text(delta.get("text")))
    block = value.get("content_block")
    if isinstance(block, dict):  # the messages API's content_block_start
        if _reasoning_part(block):
            reasoning.append(_part_reasoning([block]) or "thinking block")
        else:
            content.append(_text(block.get("text")))
    return any(content[before:])  # visible text appended (no join: streams are long)


def _cut_short(value: Any) -> bool:
    """Whether one reply document or stream event says the reply stopped at its length limit:
    a choice whose ``finish_reason`` is ``length`` (chat and legacy completions), Ollama's
    ``done_reason`` ``length``, llama.cpp's own ``stop_type`` ``limit`` (``/completion``), the
    responses API's ``incomplete_details.reason`` ``max_output_tokens`` (of a ``response`` an
    event carries too), the messages API's ``stop_reason`` ``max_tokens`` (of a
    ``message_delta`` event's delta too). Read as JSON, so that no spelling of it (a tab, an
    escaped key) hides it."""
    if not isinstance(value, dict):
        return False
    if (
        value.get("done_reason") == "length"
        or value.get("stop_type") == "limit"
        or any(c.get("finish_reason") == "length" for c in _dicts(value.get("choices")))
    ):
        return True
    incomplete = [
        _dicts(r.get("incomplete_details")) for r in [value, *_dicts(value.get("response"))]
    ]
    if any(d.get("reason") == "max_output_tokens" for details in incomplete for d in details):
        return True
    return any(d.get("stop_reason") == "max_tokens" for d in [value, *_dicts(value.get("delta"))])


def read_exchange(exchange: TransportExchange) -> Reply:
    """Everything a recorded reply holds: its body and its stream, both read."""
    content: list[str] = []
    reasoning: list[str] = []
    models: list[str] = []
    fingerprints: dict[str, None] = {}  # distinct, in the order first seen
    body = body_json(exchange.response_body)
    cut = _cut_short(body)
    if body is None and (data := body_bytes(exchange.response_body)):
        # a stream kept whole (Ollama's application/x-ndjson is no event stream to the
        # observer): its events read as a stream's, none of them a timed chunk
        for _, event in _stream_events([(-1.0, data.decode("utf-8", "replace"))]):
            _read_value(event, content, reasoning, models, fingerprints)
            cut = cut or _cut_short(event)
    _read_value(body, content, reasoning, models, fingerprints)
    times = []
    for t, event in sse_events(exchange.chunks):
        if _read_value(event, content, reasoning, models, fingerprints):
            times.append(t)
        cut = cut or _cut_short(event)
    kept = tuple(fingerprints)
    answer = _answer(body)  # read once for both digests
    return Reply(
        "".join(content),
        "".join(reasoning),
        tuple(models),
        tuple(times),
        kept[:FINGERPRINTS_KEPT],
        max(0, len(kept) - FINGERPRINTS_KEPT),
        _with_counts(answer),
        _keys(answer),
        kept_digest(body) if answer is not None else None,
        cut,
    )


def answer_digest(reply: Any) -> bytes | None:
    """What an OpenAI-compatible client takes from a chat-completion reply as its answer and
    cost, as one SHA-256 (:func:`answer_digest_of`): the first choice's tool calls as
    ``[{name: arguments}, ...]`` where its message has a ``tool_calls`` list, else the message's
    content, and ``usage``'s prompt and completion tokens (bfcl-eval's handler records exactly
    these of each answer); None for a reply that holds no message or no integer token counts."""
    return _with_counts(_answer(reply))


def _with_counts(read: tuple[Any, tuple[int, int] | None] | None) -> bytes | None:
    """:func:`answer_digest` of a reply's :func:`_answer`."""
    return None if read is None or read[1] is None else answer_digest_of(read[0], *read[1])


_THINK_START = re.compile(r"</?think\b", re.IGNORECASE)
"""Where a ``<think ...>`` or ``</think ...>`` tag may start (benchlocal-cli's patterns, up to
their ``[^>]*>`` or ``\\s*>``, which :func:`_think_tags` reads without backtracking)."""
_SPACES_TO_CLOSE = re.compile(r"\s*>")


def without_think_tags(text: str) -> str:
    """Text with ``<think>`` blocks and stray ``<think>`` tags taken out, as benchlocal-cli
    keeps a reply it graded (``scoring.common.sanitize_reasoning_tags`` at 47d1d66: text with
    none is the same text, other text is stripped of its outer spaces). The same text as its
    ``re.sub`` of ``<think\\b[^>]*>.*?</think\\s*>`` (any case, ``.`` any character) and
    then of ``</?think\\b[^>]*>``, in time linear in the text: those take time quadratic in
    the ``<think`` a text holds with no ``>`` or no closing tag after them."""
    cleaned = _think_tags(_think_blocks(text))
    return text if cleaned == text else cleaned.strip()


def _think_blocks(text: str) -> str:
    """``text`` with each ``<think ...>...</think>`` block taken out, leftmost first: an
    opening tag (``<think`` and all to the next ``>``), then the nearest closing tag
    (``</think``, spaces, ``>``) after it. Where an opening tag has none after it, no later one
    has either."""
    starts = list(_THINK_START.finditer(text))
    closes = [
        (m.start(), end.end())
        for m in starts
        if m.group().startswith("</") and (end := _SPACES_TO_CLOSE.match(text, m.end()))
    ]
    kept, at, close, gt = [], 0, 0, _NextGt(text)
    for start in starts:
        if start.start() < at or start.group().startswith("</"):
            continue
        tag_end = gt.after(start.end())
        if tag_end < 0:
            break
        while close < len(closes) and closes[close][0] <= tag_end:
            close += 1
        if close == len(closes):
            break
        kept.append(text[at : start.start()])
        at = closes[close][1]
    kept.append(text[at:])
    return "".join(kept)


def _think_tags(text: str) -> str:
    """``text`` with each ``<think ...>`` or ``</think ...>`` tag (to the next ``>``) taken out,
    leftmost first."""
    kept, at, gt = [], 0, _NextGt(text)
    for start in _THINK_START.finditer(text):
        if start.start() < at:
            continue
        tag_end = gt.after(start.end())
        if tag_end < 0:
            break
        kept.append(text[at : start.start()])
        at = tag_end + 1
    kept.append(text[at:])
    return "".join(kept)


class _NextGt:
    """The first ``>`` at or after a position, for positions asked in increasing order: each
    part of the text is searched once."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._found = -1  # the last one found; -1: none yet, or none left

    def after(self, position: int) -> int:
        if self._found < position:
            self._found = self._text.find(">", position)
        return self._found


BENCHLOCAL_TEXT_FIELDS = ("content", "reasoning_content", "reasoning")
"""The members of a reply benchlocal-cli reads text from and takes think tags out of
(``scoring.common._REASONING_TEXT_FIELDS``), in the order it reads them."""


def as_benchlocal_keeps(value: Any) -> Any:
    """A reply as benchlocal-cli keeps it (``raw_response``, ``scoring.common.
    sanitize_response_text_fields``): each ``content``, ``reasoning_content`` and ``reasoning``
    text, at any depth, :func:`without_think_tags`. Raises :class:`RecursionError` for a value
    nested past the stack."""
    if isinstance(value, dict):
        return {
            key: without_think_tags(item)
            if key in BENCHLOCAL_TEXT_FIELDS and isinstance(item, str)
            else as_benchlocal_keeps(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [as_benchlocal_keeps(item) for item in value]
    return value


def copy_digest(value: Any) -> bytes:
    """The digest of a harness's whole copy of a reply, as it is: compared with
    :func:`kept_digest` of the transport log's reply."""
    return _json_digest(["copy", value])


def kept_digest(reply: Any) -> bytes | None:
    """:func:`copy_digest` of a reply of the transport log (one that holds a message) as
    benchlocal-cli keeps it (:func:`as_benchlocal_keeps`); None for one nested too deep to
    read."""
    try:
        return copy_digest(as_benchlocal_keeps(reply))
    except RecursionError:
        return None


def answer_key(reply: Any) -> bytes | None:
    """The digest a harness's copy of a reply is found by among the transport log's replies
    (:func:`answer_keys`): its answer and token counts, or its answer alone when it has no
    integer token counts; None when it holds no message."""
    read = _answer(reply)
    if read is None:
        return None
    return answer_digest_of(read[0], *read[1]) if read[1] is not None else _alone(read[0])


def answer_keys(reply: Any) -> tuple[bytes, ...]:
    """Every digest a reply of the transport log is found by (:func:`answer_key` of a copy of
    it): its answer with its token counts and alone, each as it came and with think tags taken
    out (a harness that keeps its replies so). Empty for a reply that holds no message."""
    return _keys(_answer(reply))


def _keys(read: tuple[Any, tuple[int, int] | None] | None) -> tuple[bytes, ...]:
    """:func:`answer_keys` of a reply's :func:`_answer`."""
    if read is None:
        return ()
    answers = [read[0]]
    if isinstance(read[0], str) and (clean := without_think_tags(read[0])) != read[0]:
        answers.append(clean)
    keys = [_alone(a) for a in answers]
    if read[1] is not None:
        keys += [answer_digest_of(a, *read[1]) for a in answers]
    return tuple(keys)


def _alone(answer: Any) -> bytes:
    return _json_digest(["answer", answer])


def _answer(reply: Any) -> tuple[Any, tuple[int, int] | None] | None:
    """A chat-completion reply's answer (its first choice's tool calls as ``[{name:
    arguments}, ...]``, else its message's content) and its integer prompt and completion token
    counts (None when it has none); None for a reply that holds no message, or a tool call
    with no name."""
    _finish, message, completion = read_reply(reply)
    if not isinstance(message, dict):
        return None
    usage = reply.get("usage") if isinstance(reply, dict) else None
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    counts = (prompt, completion) if type(prompt) is int and type(completion) is int else None
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message.get("content"), counts
    answer = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return None
        answer.append({function["name"]: function.get("arguments")})
    return answer, counts


def last_user_message(messages: Any) -> dict[str, Any] | None:
    """The last user message with a content among ``messages`` (a request's, or a test entry's
    turn); None when there is none."""
    users = [
        m for m in (messages if isinstance(messages, list) else ())
        if isinstance(m, dict) and m.get("role") == "user" and "content" in m
    ]  # fmt: skip
    return users[-1] if users else None


def question_digest(content: Any) -> bytes:
    """The SHA-256 of a user message's content (a JSON value: text, or a list of parts), keys
    sorted: what a request asked, as a test entry's question says it."""
    return _json_digest(["question", content])


def request_digest(messages: Any, functions: Sequence[Any]) -> bytes:
    """The SHA-256 of a request's messages (each message's role and content) and the names of
    the functions it offers, sorted: a test entry's question and functions as a request that
    asked it carries them."""
    said = [
        [m.get("role"), m.get("content")] if isinstance(m, dict) else m
        for m in (messages if isinstance(messages, list) else [messages])
    ]
    return _json_digest(["request", said, sorted(str(f) for f in functions)])


def _json_digest(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def answer_digest_of(answer: Any, prompt_tokens: int, completion_tokens: int) -> bytes:
    """The SHA-256 of an answer (a JSON value) and its token counts, keys sorted: the same for
    the same answer however its JSON was spelled."""
    return _json_digest([answer, prompt_tokens, completion_tokens])


def read_reply(reply: Any) -> tuple[str | None, Any, Any]:
    """(finish_reason, message, completion_tokens) of a chat-completion reply's first choice;
    None for what it does not hold."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    message = choice.get("message") if isinstance(choice, dict) else None
    usage = reply.get("usage") if isinstance(reply, dict) else None
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return (finish if isinstance(finish, str) else None), message, tokens


def first_tool_call(message: Any) -> dict[str, Any] | None:
    """A reply message's first tool call as ``{"name", "arguments"}`` (arguments parsed when
    they are a JSON string); None when the message holds no readable tool call."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    function = calls[0].get("function")
    if not isinstance(function, dict):
        return None
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        # a string that is not JSON stays the string it was: it cannot equal an expected object
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments or "{}")
    return {"name": function.get("name"), "arguments": arguments}
