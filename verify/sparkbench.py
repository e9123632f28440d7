"""A Spark Bench code scenario's reply as Spark Bench reads and grades it, as far as that is
known without running anything the reply holds.

Spark Bench (Weschera/spark-bench 196e60d) asks each code scenario of its suite ``repeats``
times, each a streamed chat completion of the scenario's messages and ``max_tokens``
(``spark_bench.chat_stream``), and grades each answer by running it: Python code against the
scenario's tests (``eval_suite.expect_executable_code``), or SQL against an in-memory database
(``expect_sql_code``). The verifier runs nothing from a bundle, so it cannot give the score an
answer earns. It can tell an answer that earns 0 whatever its code would do:

- no reply, or one whose status is not 2xx (``urllib`` raises: the observer follows no
  redirect, and answers the harness 502 where the endpoint failed);
- a stream ``chat_stream`` surely raises on (an event that is not an object, choices or a
  delta it cannot read, text that is not a string, a ``usage`` or ``completion_tokens`` its
  arithmetic refuses);
- an answer in which the grader finds no code: no Python by ``_extract_python_code`` (its
  fences and its keywords), no ``SELECT`` or ``WITH`` query by ``expect_sql_code``;
- Python code that does not compile (``_run_python_safely`` compiles it after a blank line, as
  read back from a text file: line ends translated, ``compile`` raising ``SyntaxError``, or
  ``ValueError`` for a NUL), or that holds a lone surrogate (its file cannot be written); a
  query SQLite cannot be given (a NUL, a lone surrogate).

Anything else the answer may score: what this reading cannot know (a chunk whose bytes the
record does not know, code nested past the compiler's stack) is never counted as 0. Where the
client's own reading depends on its process (how deep its stack goes, how many digits its
``int()`` takes), the stream is read each way the client may have read it, and a 0 is taken only
where every way gives one (:func:`_event`).

Whether code compiles depends on the Python that compiles it: the caller takes that verdict
only where the harness's recorded interpreter is of the verifier's own version.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import TransportExchange
from verify.replies import body_json, harness_went, loads_on_a_fresh_stack, reply_pieces

__all__ = [
    "CLIENT_RAISES",
    "CONCURRENCY_ASK",
    "NO_CODE",
    "NO_COMPILE",
    "REPLY_ERROR",
    "SINGLE_STREAM_ASK",
    "UNSENDABLE",
    "SparkReply",
    "SparkTiming",
    "scenario_ask",
    "spark_reply",
]

REPLY_ERROR = "the reply is an error"
CLIENT_RAISES = "Spark Bench's client raises on the reply"
NO_CODE = "the grader finds no code in the answer"
NO_COMPILE = "the answer's code does not compile"
UNSENDABLE = "the answer's query cannot be given to SQLite"

SINGLE_STREAM_ASK = (
    "\n\nNow write a detailed ~400 word essay on how speculative decoding accelerates LLM "
    "inference."
)
"""How ``run_tier2`` ends the prompt of each single-stream request (one a pinned context)."""
CONCURRENCY_ASK = "\n\nExplain in ~300 words how tensor parallelism shards a transformer."
"""How ``run_tier2`` ends the prompt of each request of its concurrency levels (a level of N
sends N at once)."""

_DEEP = 64
"""Events with more brackets than this are parsed on a fresh stack (:func:`_event`): the
verdict never depends on how deep the verifier's own stack is."""


@dataclass(frozen=True, slots=True)
class SparkReply:
    """What the grader of a Spark code scenario gives a reply, as far as it is known: why the
    reply earns 0 when graded as Python (``python``) and as SQL (``sql``), None where it may
    score."""

    ask: bytes
    """The request's messages and ``max_tokens`` (:func:`scenario_ask`): the scenario asked."""
    python: str | None
    sql: str | None
    timing: SparkTiming | None = None
    """What ``chat_stream`` measures of the reply, as far as the observer's clock bounds it
    (None where the client raised on it or this reading cannot tell)."""
    single_stream: bool = False
    """Whether the request is one of ``run_tier2``'s single-stream requests (its prompt ends
    with :data:`SINGLE_STREAM_ASK`)."""
    concurrency: bool = False
    """Whether the request is one of ``run_tier2``'s concurrency requests (its prompt ends with
    :data:`CONCURRENCY_ASK`)."""


@dataclass(frozen=True, slots=True)
class SparkTiming:
    """A streamed reply as ``chat_stream`` times and counts it: ``first`` and ``done`` are the
    observer's times (from the exchange's start) of the chunks that completed the first line
    with a token (reasoning, content or a tool call; None: no such line) and the ``[DONE]``
    line (or the stream's end); the client's own times are no earlier, its clock having
    started before it sent the request. ``completion`` is its token count (the reply's
    ``usage.completion_tokens``, else a quarter of the text's length, at least 1), ``prompt``
    the reply's ``usage.prompt_tokens`` (None when absent or not a count)."""

    first: float | None
    done: float
    completion: float
    prompt: int | None


def scenario_ask(messages: Any, max_tokens: Any) -> bytes | None:
    """A digest of a request's ``messages`` and ``max_tokens`` as parsed JSON values (None when
    they cannot be written out again)."""
    try:
        text = json.dumps([messages, max_tokens], sort_keys=True, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.sha256(text.encode("ascii")).digest()


def spark_reply(exchange: TransportExchange) -> SparkReply | None:
    """``exchange`` read as Spark Bench reads and grades a code scenario's answer; None when its
    request is no chat completion of messages and ``max_tokens``."""
    request = body_json(exchange.request_body) if exchange.request_body else None
    if not isinstance(request, dict) or exchange.method != "POST":
        return None
    ask = scenario_ask(request.get("messages"), request.get("max_tokens"))
    if ask is None:
        return None
    messages = request.get("messages")
    content = (
        messages[0].get("content")
        if isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict)
        else None
    )
    single = isinstance(content, str) and content.endswith(SINGLE_STREAM_ASK)
    batch = isinstance(content, str) and content.endswith(CONCURRENCY_ASK)
    read = _read(exchange)
    if isinstance(read, _Answer):
        return SparkReply(ask, _python(read.text), _sql(read.text), read.timing, single, batch)
    why = REPLY_ERROR if read is _FAILED else CLIENT_RAISES if read is _RAISES else None
    return SparkReply(ask, why, why, None, single, batch)


@dataclass(frozen=True, slots=True)
class _Answer:
    text: str
    timing: SparkTiming
    ended: bool
    """Whether its ``[DONE]`` line came (else the stream's end ended it)."""


def _read(exchange: TransportExchange) -> object:
    """The answer text (:func:`_answer`), or why there is none: :data:`_FAILED` (an error
    reply), :data:`_RAISES`, :data:`_UNSURE`."""
    status = exchange.status
    # No status: no reply came (the harness got the observer's 502, or went first). Another
    # status than 2xx: ``urllib`` raises (the observer follows no redirect, answering it 502).
    if status is None or not 200 <= status < 300:
        return _FAILED
    try:
        pieces = reply_pieces(exchange)
    except ValueError:  # a chunk's lone surrogate no raw bytes explain: not known what came
        return _UNSURE
    if pieces is None:  # a body not base64
        return _UNSURE
    end = None if exchange.ended is None else max(exchange.ended - exchange.started, 0.0)
    answer = _answer(pieces, end)
    if harness_went(exchange):
        # The harness went before the whole answer: ``chat_stream`` raised (its time-out), unless
        # it had read the [DONE] line (a server that sends on after it), which is not known.
        return _UNSURE if isinstance(answer, _Answer) and answer.ended else _RAISES
    return answer


def _lines(pieces: list[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
    """The body's lines as ``urllib`` iterates them (split at LF), each with the time of the
    piece that completed it; the last, unended one at the last piece's time."""
    lines: list[tuple[float, bytes]] = []
    pending = b""
    for t, data in pieces:
        *done, pending = (pending + data).split(b"\n")
        lines += [(t, line) for line in done]
    if pieces:
        lines.append((pieces[-1][0], pending))
    return lines


_FAILED = object()
"""An error reply: ``urllib`` raises (the repeat scores 0)."""
_RAISES = object()
"""Spark's client surely raises on the stream (the repeat scores 0)."""
_UNSURE = object()
"""This reading cannot tell what the client makes of the stream."""


def _answer(pieces: list[tuple[float, bytes]], end: float | None) -> object:
    """The answer ``chat_stream`` returns (:class:`_Answer`: its text and timing) from the
    reply's timed ``pieces``: each line of the body (split at LF, as ``urllib`` iterates it)
    decoded as UTF-8 with U+FFFD, stripped; ``data:`` lines up to ``[DONE]`` parsed, those that
    are not JSON skipped; the ``content`` of each choice's ``delta`` joined. :data:`_RAISES`
    where the client surely raises, :data:`_UNSURE` where this reading cannot tell. ``end``:
    when the exchange ended (from its start; None: it did not), the time of a reply of no
    line, which the client read no earlier."""
    parts: list[str] = []
    usage: object = {}
    first = None
    ended = False
    lines = _lines(pieces)
    if not lines and end is None:
        return _UNSURE
    done = lines[-1][0] if lines else end
    assert done is not None  # noqa: S101 - a line, or the end
    for t, raw in lines:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done, ended = t, True
            break
        event = _event(data)
        if event is _SKIPPED:
            continue
        if event is _UNSURE or event is _RAISES:
            return event
        if not isinstance(event, dict):  # an event's .get: AttributeError
            return _RAISES
        if event.get("usage"):
            usage = event["usage"]
        choices = _read_choices(event.get("choices", []), parts)
        if choices is _RAISES:
            return _RAISES
        if first is None and choices is _TOKEN:
            first = t
    if _usage_raises(usage):
        return _RAISES
    text = "".join(parts)
    return _Answer(text, _timing(usage, text, first, done), ended)


def _timing(usage: object, text: str, first: float | None, done: float) -> SparkTiming:
    """What ``chat_stream`` counts of a reply it read (its ``usage`` the last it kept)."""
    counts = usage if isinstance(usage, dict) else {}
    completion = counts.get("completion_tokens")
    prompt = counts.get("prompt_tokens")
    return SparkTiming(
        first=first,
        done=done,
        completion=max(1, len(text) // 4) if completion is None else float(completion),
        prompt=prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None,
    )


_SKIPPED = object()

SPARK_RECURSION_LIMIT = 1000
"""Python's own limit, which Spark Bench's process keeps: a verifier whose limit is at least
this parses on a fresh stack whatever the client's ``json.loads`` parsed below its own calls."""


def _event(data: str) -> object:
    """A ``data:`` line's JSON value as the client parses it: :data:`_SKIPPED` for a line that
    is not JSON (skipped), :data:`_RAISES` where it surely raises, :data:`_UNSURE` where it may
    raise or not.

    Where the client's reading depends on its process, both of its readings are allowed for,
    and a 0 is taken only where both give it: a line nested past :data:`_DEEP` is parsed on a
    fresh stack (the client parsed it too, or ran out of stack and raised: 0); an integer past
    ``int()``'s digits (a limit of the process, which raises ``ValueError``: 0) is read as one
    past any float (:data:`_HUGE`)."""
    deep = data.count("[") + data.count("{") > _DEEP
    try:
        return loads_on_a_fresh_stack(data) if deep else json.loads(data)
    except json.JSONDecodeError:
        return _SKIPPED
    except RecursionError:  # past even a fresh stack of the verifier's, so past the client's
        return _RAISES if sys.getrecursionlimit() >= SPARK_RECURSION_LIMIT else _UNSURE
    except ValueError:  # past int()'s digits
        pass
    try:
        return loads_on_a_fresh_stack(data, parse_int=_lifted)
    except (ValueError, RecursionError):
        return _UNSURE


_HUGE = object()
"""An integer past ``int()``'s digits: past any float, so the client's arithmetic and its
joining of text both raise on it."""


def _lifted(digits: str) -> object:
    return _HUGE if len(digits.lstrip("-")) > sys.get_int_max_str_digits() else int(digits)


_TOKEN = object()
"""Choices of which a delta holds a token: reasoning, content or a tool call (where
``chat_stream`` takes its TTFT)."""


def _read_choices(choices: object, parts: list[str]) -> object:
    """An event's ``choices`` read as ``chat_stream`` reads them, each delta's ``content`` into
    ``parts``: :data:`_RAISES` where it raises on them (or on the text it collects from them,
    when it joins it), :data:`_TOKEN` where a delta holds a token, None otherwise."""
    if isinstance(choices, dict | str):  # iterated: its keys or characters have no .get
        return _RAISES if choices else None
    if not isinstance(choices, list):  # not iterable: TypeError
        return _RAISES
    token = False
    for choice in choices:
        delta = choice.get("delta", {}) if isinstance(choice, dict) else None
        if not isinstance(delta, dict):  # .get of what is not an object: AttributeError
            return _RAISES
        reasoning = delta.get("reasoning") or delta.get("reasoning_content")
        content = delta.get("content")
        tools = delta.get("tool_calls")
        if (reasoning and not isinstance(reasoning, str)) or (
            content and not isinstance(content, str)
        ):
            return _RAISES  # joined with the text: TypeError
        if tools and not isinstance(tools, list | str | dict):  # extended with it: TypeError
            return _RAISES
        if content:
            parts.append(content)
        token = token or bool(reasoning or content or tools)
    return _TOKEN if token else None


def _usage_raises(usage: object) -> bool:
    """Whether the client raises on the last ``usage`` it kept: not an object, or a
    ``completion_tokens`` its arithmetic refuses (not a number; an integer no float holds)."""
    if not isinstance(usage, dict):
        return True
    count = usage.get("completion_tokens")
    if count is None or isinstance(count, float):
        return False
    if not isinstance(count, int):
        return True
    try:
        float(count)  # as the client's division by a float converts it
    except OverflowError:
        return True
    return False


_QUIET = threading.Lock()
"""Held while the warning filters are changed (they are the process's, not the thread's)."""

_FENCED = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPENED = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*)$", re.DOTALL)
_SELECT = re.compile(r"(SELECT\b.*?)(?:;|\Z)", re.IGNORECASE | re.DOTALL)
_CODE_WORDS = ("def ", "import ", "class ", "print(", "return ")
_TEXT_WORDS = ("def ", "import ", "class ", "print(")


def _strip_fences(text: str) -> str:
    """``eval_suite._strip_fences``: the first whole fenced block, else what follows an
    unclosed fence, else the text, stripped."""
    found = _FENCED.search(text) or _OPENED.search(text)
    return (found.group(1) if found else text).strip()


def _python(text: str) -> str | None:
    """Why ``expect_executable_code`` (no setup, no extractor of its own) gives ``text`` 0
    whatever its code does, or None."""
    code = _strip_fences(text)
    if not any(word in code for word in _CODE_WORDS):
        if not any(word in text for word in _TEXT_WORDS):
            return NO_CODE
        code = text
    source = "\n" + code + "\n"  # setup "" + "\n" + code + "\n" + tests ""
    if not _encodes(source):  # a lone surrogate: no codec writes its file
        return NO_COMPILE
    source = source.replace("\r\n", "\n").replace("\r", "\n")  # read back in text mode
    try:
        with _QUIET, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a warning made an error is not the harness's
            compile(source, "<answer>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        # an integer literal past the digits limit: a limit the harness's process may set
        return None if "digits" in str(exc) else NO_COMPILE
    except Exception:  # deep code: depends on the stack it is compiled on
        return None
    return None


def _sql(text: str) -> str | None:
    """Why ``expect_sql_code`` gives ``text`` 0 whatever its query does (no query found, or one
    SQLite cannot be given: a NUL, a lone surrogate), or None."""
    query = _strip_fences(text)
    if not query.upper().strip().startswith(("SELECT", "WITH")):
        found = _SELECT.search(text)
        if found is None:
            return NO_CODE
        query = found.group(1).strip()
    if "\x00" in query or not _encodes(query):
        return UNSENDABLE
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
