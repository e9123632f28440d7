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
Infermark never reads, are no token; a ``delta`` of ``null`` is an error). Where the record
cannot say what the client read, it claims no count (an error): a recorded header field the
client's parser refuses, a ``Content-Type`` that is not ASCII, a charset whose decoding depends
on how the bytes were cut into reads. JSON nested :data:`INFERMARK_JSON_DEPTH` deep is an error
whatever the verifier's own stack, and a wait between two chunks longer than the pinned
``--timeout`` ends a request (:meth:`InfermarkReading.under`). ADR 0049.
"""

from __future__ import annotations

import codecs
import email.message
import hashlib
import itertools
import json
import re
import string
import sys
from _multibytecodec import MultibyteIncrementalDecoder
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import ReasoningSerialization, TransportExchange
from verify.replies import exchange_failed, loads_on_a_fresh_stack, reply_pieces

__all__ = [
    "DEFAULT_PROMPT",
    "DEFAULT_TIMEOUT",
    "InfermarkReading",
    "InfermarkRun",
    "body_digest",
    "infermark_reading",
    "infermark_run",
]

DEFAULT_PROMPT = "Explain the theory of relativity in simple terms."
"""``BenchmarkConfig.prompt``, which ``infermark run`` sends when ``--prompt`` is not given
(or is empty: ``prompt or DEFAULT_PROMPT``)."""
DEFAULT_MAX_TOKENS = 256
DEFAULT_REQUESTS = 50
DEFAULT_TIMEOUT = 120.0


INFERMARK_JSON_DEPTH = 966
"""The shallowest nesting of arrays and objects Infermark's pinned CLI cannot parse (its
``json.loads`` runs out of Python's 1,000 frames at that depth below its own call stack:
measured with the real CLI, ``tests/hostile/test_attacks_2026_12_07_infermark.py``)."""
_DEEP = 64
"""Events with more brackets than this are measured for their nesting, and those nested deeper
are parsed on a stack of their own: the reading never depends on how deep the verifier's own
stack is (a flat event of many brackets is parsed where it is)."""


def _loads(data: str) -> object:
    """``json.loads(data)`` as Infermark's client runs it: JSON nested
    :data:`INFERMARK_JSON_DEPTH` deep or more raises (``RecursionError``), as it does there;
    anything shallower is parsed whatever the caller's stack.

    Raises:
        json.JSONDecodeError: not JSON.
        RecursionError: nested past Infermark's stack.
        ValueError: a number past ``int()``'s digits.
    """
    if data.count("[") + data.count("{") <= _DEEP:
        return json.loads(data)
    nesting = _nesting(data)
    if nesting >= INFERMARK_JSON_DEPTH:
        raise RecursionError("nested past Infermark's stack")
    return json.loads(data) if nesting <= _DEEP else loads_on_a_fresh_stack(data)


def _nesting(data: str) -> int:
    """The deepest nesting of arrays and objects in ``data``, brackets in strings aside."""
    depth = deepest = 0
    for token in _BRACKETS.finditer(data):
        text = token.group()
        if text in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif text in "]}":
            depth -= 1
    return deepest


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
"""A JSON string (its brackets no nesting), or a bracket."""


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
    last: float | None = None
    """When the line of its last token was read at the earliest, as :attr:`first`."""
    longest_gap: float = 0.0
    """The longest wait between two of its streamed chunks, in seconds: one longer than the
    client's read time-out (``--timeout``) ended it as an error."""

    def under(self, timeout: float) -> InfermarkReading:
        """The reading under a client time-out of ``timeout`` seconds (httpx's read time-out:
        a wait longer than that between two pieces of the body ends the request)."""
        return _FAILED if self.longest_gap > timeout and not self.failed else self


_FAILED = InfermarkReading(failed=True, tokens=0, first=None)


def infermark_reading(exchange: TransportExchange) -> InfermarkReading:
    """``exchange`` read as Infermark's streaming client reads it."""
    if exchange_failed(exchange) or not _head_read(exchange):
        return _FAILED
    pieces = reply_pieces(exchange, _received) or []  # a reply not streamed: read whole
    try:
        charset = _charset(exchange)
        if charset is None:
            return _FAILED
        lines = list(_lines(_texts(pieces, charset)))
        tokens = [t for t, line in lines if _token(line)]
    except Exception:  # Infermark's client ends the request on any exception
        return _FAILED
    times = [t for t, _ in pieces]
    gap = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    first, last = (tokens[0], tokens[-1]) if tokens else (None, None)
    return InfermarkReading(
        failed=False, tokens=len(tokens), first=first, last=last, longest_gap=gap
    )


_FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\U0010ffff]*")
"""A header field as HTTP/1.1 (h11, httpx's parser) takes it: no control character but a tab
(the observer passes on no other: ``audit.observer``)."""


def _head_read(exchange: TransportExchange) -> bool:
    """Whether the reply's recorded header fields are ones the client's parser takes (a field
    with a NUL, a CR or an LF in it is a head httpx refuses: the request an error)."""
    return all(
        _FIELD_NAME.fullmatch(name) and _FIELD_VALUE.fullmatch(value)
        for name, value in exchange.response_headers.items()
    )


def _received(chunk: Any) -> bytes:
    try:
        return bytes(chunk.received())
    except ValueError:  # a lone surrogate no raw bytes explain: its text as the reader got it
        return str(chunk.data).encode("utf-8", "surrogatepass")


def _charset(exchange: TransportExchange) -> str | None:
    """The codec httpx decodes the reply with: its ``Content-Type``'s charset where Python
    knows it, else UTF-8. None where the reading cannot be known from the record: a
    ``Content-Type`` that is not ASCII (httpx reads it in the encoding of the whole head,
    which the record does not keep; the observer refuses such a reply), or a codec whose
    reading depends on how the bytes were cut into reads (:func:`_cut_free`).

    Raises:
        Exception: where httpx's own reading of the header raises.
    """
    content_type = next(
        (v for k, v in exchange.response_headers.items() if k.lower() == "content-type"), None
    )
    if content_type is None:
        return "utf-8"
    if not content_type.isascii():
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    charset = message.get_content_charset(failobj=None)
    if charset is None:
        return "utf-8"
    try:
        info = codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    return charset if _cut_free(info) else None


_UNICODE = frozenset({
    "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le",
    "utf-32-be", "ascii", "iso8859-1",
})  # fmt: skip


def _cut_free(info: codecs.CodecInfo) -> bool:
    """Whether a codec's incremental decoder gives the same text however the bytes are cut
    into pieces: the Unicode encodings, ASCII and Latin-1, the single-byte tables
    (``encodings`` modules with a ``decoding_table``) and the multi-byte CJK codecs (whose
    decoders keep a partial character); not one that decodes each piece on its own
    (``punycode``, ``unicode_escape``, ...) or turns bytes into bytes."""
    if info.name in _UNICODE:
        return True
    decoder = info.incrementaldecoder
    if decoder is None:
        return False
    module = sys.modules.get(decoder.__module__)
    return hasattr(module, "decoding_table") or (
        isinstance(decoder, type) and issubclass(decoder, MultibyteIncrementalDecoder)
    )


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
        chunk = _loads(data)
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
    """What a pinned ``infermark run`` command says of its requests (its words as the runner
    fills them: ``{model}`` the run's runtime model id, ``{{``/``}}`` single braces; the URL's
    ``{endpoint}`` kept)."""

    url: str
    """The URL argument (``{endpoint}/v1``)."""
    model: str
    prompt: str
    max_tokens: int
    requests: int
    timeout: float
    """The client's time-out in seconds (``--timeout``, 120 by default): httpx's read time-out."""

    def path(self) -> str | None:
        """The path its requests go to (``<url's path>/chat/completions``), where the URL is
        the run's endpoint and a path (None otherwise)."""
        if not self.url.startswith("{endpoint}"):
            return None
        rest = self.url.removeprefix("{endpoint}").rstrip("/")
        return f"{rest}/chat/completions" if "{" not in rest else None

    def payload(self) -> dict[str, Any]:
        """The body of each request (``client._build_payload``)."""
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": self.prompt or DEFAULT_PROMPT}],
            "max_tokens": self.max_tokens,
            "stream": True,
        }

    def body(self, serialization: ReasoningSerialization | None) -> bytes:
        """The bytes of each request's body as the observer forwards and records them: httpx's
        ``json=`` encoding (compact, not ASCII-escaped), or, under a reasoning policy, the
        observer's re-encoding with the policy written in (``audit.observer._with_policy``)."""
        payload = self.payload()
        if serialization is None:
            return json.dumps(
                payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
        return json.dumps(serialization.write_into(payload), separators=(",", ":")).encode()


_VALUED = {
    "-m": "model", "--model": "model", "-n": "requests", "--requests": "requests",
    "-c": "concurrency", "--concurrency": "concurrency", "--max-tokens": "max_tokens",
    "--prompt": "prompt", "--mode": "mode", "--warmup": "warmup", "--timeout": "timeout",
    "--api-key": "api_key", "-o": "output", "--output": "output", "--markdown": "markdown",
}  # fmt: skip
"""The options of ``infermark run`` (click), each with the parameter it sets; every one takes
a value."""


def infermark_run(command: Sequence[str], model: str) -> InfermarkRun | None:
    """The pinned command as ``infermark run`` reads it (click: an option's value in the next
    word, after ``=`` for a long one, joined to a short one; the last given counts; ``--``
    ends the options), its words filled as the runner fills them (``model``: the run's
    runtime model id), where it runs Infermark's CLI (``-m infermark.cli run`` or an
    ``infermark run`` program) with options this reader knows and values its configuration
    takes; else None."""
    words = [w for w in (_filled(word, model) for word in command) if w is not None]
    if len(words) != len(command):
        return None
    start = next(
        (i + 1 for i in range(1, len(words))
         if words[i] == "run" and (words[i - 1] == "infermark.cli"
                                   or words[i - 1].rpartition("/")[2] == "infermark")),
        None,
    )  # fmt: skip
    given = _given(words[start:]) if start is not None else None
    if given is None or len(given[1]) != 1:
        return None
    options, arguments = given
    try:
        max_tokens = int(options.get("max_tokens", DEFAULT_MAX_TOKENS))
        requests = int(options.get("requests", DEFAULT_REQUESTS))
        timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
    except ValueError:
        return None
    if requests < 1 or not timeout > 0:  # BenchmarkConfig refuses them
        return None
    return InfermarkRun(
        arguments[0], options.get("model", ""), options.get("prompt", ""), max_tokens, requests,
        timeout,
    )  # fmt: skip


def _given(words: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """The options ``run``'s words give (the last of each) and its arguments; None where click
    refuses them."""
    given: dict[str, str] = {}
    arguments: list[str] = []
    index = 0
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
    return given, arguments


def _filled(word: str, model: str) -> str | None:
    """``word`` as the runner's ``str.format`` fills it, ``{model}`` alone known here (the
    other fields kept as written); None where it is no format string."""
    try:
        parts = list(string.Formatter().parse(word))
    except ValueError:
        return None
    filled = []
    for literal, field, spec, conversion in parts:
        filled.append(literal)
        if field is None:
            continue
        if field == "model" and not spec and not conversion:
            filled.append(model)
        else:
            kept = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            filled.append("{" + kept + "}")
    return "".join(filled)


def body_digest(body: bytes | None) -> bytes | None:
    """The digest a request's body bytes are compared by (None: no body)."""
    return hashlib.sha256(body).digest() if body is not None else None
