"""A performance exchange read as Infermark 0.3.0 reads it, and the request its pinned command
sends (``src/infermark/client.py`` and ``cli.py`` at a5e252b, the seed's pin).

Infermark's client (``send_streaming_request``) counts a request a success when its reply is a
200 read to its end without an exception. It reads the stream with httpx 0.28's
``aiter_lines``: the bytes decoded in the charset of the reply's ``Content-Type`` (UTF-8 when it
names none Python knows; undecodable bytes replaced), split into lines where ``str.splitlines``
splits them (a carriage return at the end of what has arrived is held until the next bytes
show whether a line feed follows; a last line with no end is read when the stream ends). A
line, stripped, that starts with ``data:`` holds the JSON after it (``[DONE]``, text that is
not JSON and JSON ``null`` skipped); of that value, ``value.get("choices", [])``, its first
item's ``.get("delta", {})``, and that delta's ``.get("content")`` is a token when it is
neither null nor the empty string. Anything those steps raise on (a value that is not an
object, a delta of ``null``, JSON nested past the parser's stack, ...) ends the request as an
error. The time to the first token is taken when its line is read.

The verifier reads the transport log's record of the same bytes the same way, so that the
report's counts are held to what Infermark itself would have counted, not to another reader's
idea of a visible chunk (a legacy ``text``, a second choice, ``data:`` lines joined, which
Infermark never reads, are no token; a ``delta`` of ``null`` is an error).
"""

from __future__ import annotations

import codecs
import email.message
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import ReasoningSerialization, TransportExchange
from verify.replies import body_bytes, exchange_failed

__all__ = [
    "DEFAULT_PROMPT",
    "InfermarkReading",
    "InfermarkRun",
    "infermark_reading",
    "infermark_run",
    "payload_asked",
    "payload_digest",
]

DEFAULT_PROMPT = "Explain the theory of relativity in simple terms."
"""``BenchmarkConfig.prompt``, which ``infermark run`` sends when ``--prompt`` is not given
(or is empty: ``prompt or DEFAULT_PROMPT``)."""
DEFAULT_MAX_TOKENS = 256
DEFAULT_REQUESTS = 50


@dataclass(frozen=True, slots=True)
class InfermarkReading:
    """One request as Infermark's client counts it."""

    failed: bool
    """An error: not a 200, broken off, or a reply its reading raised on."""
    tokens: int
    """The tokens it counted (those of a failed request count for nothing)."""
    first: float | None
    """When the line of its first token was read at the earliest, seconds after the request
    started (None: no token)."""


_NO_TOKEN = InfermarkReading(failed=False, tokens=0, first=None)
_FAILED = InfermarkReading(failed=True, tokens=0, first=None)


def infermark_reading(exchange: TransportExchange) -> InfermarkReading:
    """``exchange`` read as Infermark's streaming client reads it."""
    if exchange_failed(exchange):
        return _FAILED
    if exchange.chunks:
        pieces: Sequence[tuple[float, bytes]] = [(c.t, _received(c)) for c in exchange.chunks]
    else:  # a reply not streamed: read when it came whole
        data = body_bytes(exchange.response_body) or b""
        end = exchange.ended - exchange.started if exchange.ended is not None else 0.0
        pieces = [(max(end, 0.0), data)] if data else []
    try:
        lines = list(_lines(_texts(pieces, _charset(exchange))))
        tokens = [t for t, line in lines if _token(line)]
    except Exception:  # Infermark's client ends the request on any exception
        return _FAILED
    return InfermarkReading(failed=False, tokens=len(tokens), first=tokens[0] if tokens else None)


def _received(chunk: Any) -> bytes:
    try:
        return bytes(chunk.received())
    except ValueError:  # a lone surrogate no raw bytes explain: its text as the reader got it
        return str(chunk.data).encode("utf-8", "surrogatepass")


def _charset(exchange: TransportExchange) -> str:
    """The codec httpx decodes the reply with: its ``Content-Type``'s charset where Python
    knows it, else UTF-8.

    Raises:
        Exception: where httpx's own reading of the header raises.
    """
    content_type = next(
        (v for k, v in exchange.response_headers.items() if k.lower() == "content-type"), None
    )
    if content_type is None:
        return "utf-8"
    message = email.message.Message()
    message["content-type"] = content_type
    charset = message.get_content_charset(failobj=None)
    if charset is None:
        return "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    return charset


def _texts(pieces: Iterable[tuple[float, bytes]], charset: str) -> Iterator[tuple[float, str]]:
    """The text of each piece as an incremental decoder gives it (its time kept), then what
    the decoder still holds at the end (at the last piece's time)."""
    decoder = codecs.getincrementaldecoder(charset)(errors="replace")
    last = 0.0
    for t, data in pieces:
        last = t
        yield t, _text(decoder.decode(data))
    yield last, _text(decoder.decode(b"", True))


def _text(value: object) -> str:
    if not isinstance(value, str):  # a codec of bytes to bytes: httpx's line reader fails
        raise TypeError("not text")
    return value


def _lines(texts: Iterable[tuple[float, str]]) -> Iterator[tuple[float, str]]:
    """The lines of the text, each at the time of the piece whose text ended it; a carriage
    return at the end of a piece waits for the next; the last line with no end, at the end."""
    held = ""
    last = 0.0
    for t, piece in texts:
        last = t
        text = held + piece
        if not text:
            continue
        cr = text.endswith("\r")
        parts = (text[:-1] if cr else text).splitlines(keepends=True)
        held = parts.pop() if parts and parts[-1].splitlines()[0] == parts[-1] else ""
        held += "\r" if cr else ""
        for part in parts:
            yield t, part.splitlines()[0]
    if held:
        yield last, held.removesuffix("\r")


def _token(line: str) -> bool:
    """Whether Infermark counts a token on ``line``.

    Raises:
        Exception: where its reading raises (the request is then an error).
    """
    line = line.strip()
    if not line.startswith("data:"):
        return False
    data = line[5:].strip()
    if data == "[DONE]":
        return False
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        return False
    if chunk is None:
        return False
    token = _get(chunk, "choices", [])
    if not token:
        return False
    token = _get(_get(_item(token), "delta", {}), "content", None)
    return token is not None and token != ""


def _get(value: object, key: str, default: object) -> object:
    """``value.get(key, default)`` as Python runs it on a JSON value.

    Raises:
        TypeError: ``value`` is not an object.
    """
    if not isinstance(value, dict):
        raise TypeError(f"{type(value).__name__} has no get")
    return value.get(key, default)


def _item(value: object) -> object:
    """``value[0]`` as Python runs it on a JSON value that is not empty.

    Raises:
        TypeError: an object (its keys are text), a number or ``true``.
    """
    if isinstance(value, list | str):
        return value[0]
    raise TypeError(f"{type(value).__name__}[0]")


# --- the request the pinned command sends ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InfermarkRun:
    """What a pinned ``infermark run`` command says of its requests."""

    url: str
    """The URL argument as pinned (``{endpoint}/v1``)."""
    model: str
    prompt: str
    max_tokens: int
    requests: int

    def path(self) -> str | None:
        """The path its requests go to (``<url's path>/chat/completions``), where the URL is
        the run's endpoint and a path (None otherwise)."""
        if not self.url.startswith("{endpoint}"):
            return None
        rest = self.url.removeprefix("{endpoint}").rstrip("/")
        return f"{rest}/chat/completions" if "{" not in rest else None

    def payload(self, model: str) -> dict[str, Any]:
        """The body of each request, the run's runtime model id for ``{model}``."""
        return {
            "model": model if self.model == "{model}" else self.model,
            "messages": [{"role": "user", "content": self.prompt or DEFAULT_PROMPT}],
            "max_tokens": self.max_tokens,
            "stream": True,
        }


_VALUED = {
    "-m": "model", "--model": "model", "-n": "requests", "--requests": "requests",
    "-c": "concurrency", "--concurrency": "concurrency", "--max-tokens": "max_tokens",
    "--prompt": "prompt", "--mode": "mode", "--warmup": "warmup", "--timeout": "timeout",
    "--api-key": "api_key", "-o": "output", "--output": "output", "--markdown": "markdown",
}  # fmt: skip
"""The options of ``infermark run`` (click), each with the parameter it sets; every one takes
a value."""


def infermark_run(command: Sequence[str]) -> InfermarkRun | None:
    """The pinned command as ``infermark run`` reads it (click: an option's value in the next
    word, after ``=`` for a long one, joined to a short one; the last given counts; ``--``
    ends the options), where it runs Infermark's CLI (``-m infermark.cli run`` or an
    ``infermark run`` program) with options this reader knows; else None."""
    words = list(command)
    start = next(
        (i + 1 for i in range(1, len(words))
         if words[i] == "run" and (words[i - 1] == "infermark.cli"
                                   or words[i - 1].rpartition("/")[2] == "infermark")),
        None,
    )  # fmt: skip
    if start is None:
        return None
    given: dict[str, str] = {}
    arguments: list[str] = []
    index = start
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            arguments += words[index:]
            break
        if not word.startswith("-") or word == "-":
            arguments.append(word)
            continue
        name, equals, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("--") and len(word) > 2:
            name, equals, value = word[:2], "=", word[2:]
        if name not in _VALUED:
            return None  # --help, or an option click refuses
        if not equals:
            if index >= len(words):
                return None
            value, index = words[index], index + 1
        given[_VALUED[name]] = value
    if len(arguments) != 1:
        return None
    try:
        max_tokens = int(given.get("max_tokens", DEFAULT_MAX_TOKENS))
        requests = int(given.get("requests", DEFAULT_REQUESTS))
    except ValueError:
        return None
    return InfermarkRun(
        arguments[0], given.get("model", ""), given.get("prompt", ""), max_tokens, requests
    )


def payload_asked(request: object, serialization: ReasoningSerialization | None) -> bytes | None:
    """A digest of a request body's JSON as its harness sent it (the reasoning policy the
    observer wrote in taken out), to compare with :func:`payload_digest`; None for a body
    that is not a JSON object, or cannot be one of Infermark's payloads."""
    if not isinstance(request, dict) or not _could_be_a_payload(request):
        return None
    plain = serialization.removed_from(request) if serialization is not None else request
    return payload_digest(plain)


def _could_be_a_payload(request: dict[str, Any]) -> bool:
    """Whether ``request`` may be one of Infermark's payloads once the policy is out: four
    members, one more where the policy wrote its own, and ``stream`` true (the other requests
    of a run are not copied and digested)."""
    return len(request) in (4, 5) and request.get("stream") is True


def payload_digest(payload: dict[str, Any]) -> bytes | None:
    """A digest of a JSON object that tells ``true`` from ``1`` and ``256`` from ``256.0``."""
    try:
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (ValueError, RecursionError, TypeError):
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
