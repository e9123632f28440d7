"""A Spark Bench code scenario's reply as Spark Bench reads and grades it, as far as that is
known without running anything the reply holds.

Spark Bench (Weschera/spark-bench 196e60d) asks each code scenario of its suite ``repeats``
times, each a streamed chat completion of the scenario's messages and ``max_tokens``
(``spark_bench.chat_stream``), and grades each answer by running it: Python code against the
scenario's tests (``eval_suite.expect_executable_code``), or SQL against an in-memory database
(``expect_sql_code``). The verifier runs nothing from a bundle, so it cannot give the score an
answer earns. It can tell an answer that earns 0 whatever its code would do:

- a reply whose status is 300 or more (``urllib`` raises; the repeat scores 0), but for a
  redirect it follows (301, 302 or 303 with a ``Location``: the answer is another request's);
- an answer in which the grader finds no code: no Python by ``_extract_python_code`` (its
  fences and its keywords), no ``SELECT`` or ``WITH`` query by ``expect_sql_code``;
- Python code that does not compile (``_run_python_safely`` compiles it after a blank line, as
  read back from a text file: line ends translated, ``compile`` raising ``SyntaxError``, or
  ``ValueError`` for a NUL), or that holds a lone surrogate (its file cannot be written).

Anything else the answer may score: a stream this reading is not sure of (a status it does not
take, a chunk whose bytes are unknown, an event whose shape Spark's client would raise on or
nested past :data:`_DEEP`) is left unknown, never counted as 0.

Whether code compiles depends on the Python that compiles it: the caller takes that verdict
only where the harness's recorded interpreter is of the verifier's own version.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import TransportExchange
from verify.replies import body_bytes, body_json

__all__ = [
    "NO_CODE",
    "NO_COMPILE",
    "REPLY_ERROR",
    "SparkReply",
    "scenario_ask",
    "spark_reply",
]

REPLY_ERROR = "the reply is an error"
NO_CODE = "the grader finds no code in the answer"
NO_COMPILE = "the answer's code does not compile"

_DEEP = 64
"""Events nested deeper than this are not parsed (Spark's ``json.loads`` raises past its own
stack, which the verifier does not know): the reply is left unknown."""


@dataclass(frozen=True, slots=True)
class SparkReply:
    """What the grader of a Spark code scenario gives a reply, as far as it is known: why the
    reply earns 0 when graded as Python (``python``) and as SQL (``sql``), None where it may
    score."""

    ask: bytes
    """The request's messages and ``max_tokens`` (:func:`scenario_ask`): the scenario asked."""
    python: str | None
    sql: str | None


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
    status = exchange.status
    if status is not None and status >= 300 and not _followed(status, exchange.response_headers):
        return SparkReply(ask, REPLY_ERROR, REPLY_ERROR)
    # no status, or a redirect urllib follows (the answer is another request's): not known
    text = _answer(exchange) if status is not None and 200 <= status < 300 else None
    if text is None:
        return SparkReply(ask, None, None)
    return SparkReply(ask, _python(text), _sql(text))


_FOLLOWED = frozenset({301, 302, 303})
"""The redirects ``urllib`` follows for a POST (as a GET); any other status of 300 or more
raises ``HTTPError``."""


def _followed(status: int, headers: Mapping[str, str]) -> bool:
    """Whether ``urllib`` follows a POST's reply of ``status``: one of :data:`_FOLLOWED` that
    names where to (``Location`` or ``URI``)."""
    named = {name.lower() for name in headers}
    return status in _FOLLOWED and bool(named & {"location", "uri"})


def _body(exchange: TransportExchange) -> bytes | None:
    if not exchange.chunks:
        return body_bytes(exchange.response_body) or b""
    pieces = []
    for chunk in exchange.chunks:
        try:
            pieces.append(chunk.received())
        except ValueError:  # a lone surrogate no raw bytes explain: not known what came
            return None
    return b"".join(pieces)


def _answer(exchange: TransportExchange) -> str | None:  # noqa: PLR0911 - one per way it raises
    """The answer text ``chat_stream`` returns: each line of the body (split at LF, as
    ``urllib`` iterates it) decoded as UTF-8 with U+FFFD, stripped; ``data:`` lines up to
    ``[DONE]`` parsed, those that are not JSON skipped; the ``content`` of each choice's
    ``delta`` joined. None where the client would raise or this reading is not sure."""
    body = _body(exchange)
    if body is None:
        return None
    parts: list[str] = []
    usage: object = {}
    for raw in body.split(b"\n"):
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        if data.count("[") + data.count("{") > _DEEP:
            return None
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            continue
        except (ValueError, RecursionError):  # raised in the client: not a skipped line
            return None
        if not isinstance(event, dict):
            return None
        if event.get("usage"):
            usage = event["usage"]
        if not _read_choices(event.get("choices", []), parts):
            return None
    if not isinstance(usage, dict) or not _number(usage.get("completion_tokens")):
        return None
    return "".join(parts)


def _read_choices(choices: object, parts: list[str]) -> bool:
    """Each choice's ``delta`` read into ``parts`` as ``chat_stream`` reads it; False where it
    would raise (or joins what is not text)."""
    if not isinstance(choices, list):
        return False
    for choice in choices:
        delta = choice.get("delta", {}) if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            return False
        reasoning = delta.get("reasoning") or delta.get("reasoning_content")
        content = delta.get("content")
        tools = delta.get("tool_calls")
        if reasoning and not isinstance(reasoning, str):
            return False
        if tools and not isinstance(tools, list):
            return False
        if content:
            if not isinstance(content, str):
                return False
            parts.append(content)
    return True


_LARGEST = 10**300
"""Past this, an integer count overflows the client's division by a float."""


def _number(value: object) -> bool:
    """A ``completion_tokens`` the client's arithmetic takes (absent, or a JSON number it can
    divide by a float)."""
    if isinstance(value, int):
        return abs(value) < _LARGEST
    return value is None or isinstance(value, float)


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
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no codec writes its file
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
    """Why ``expect_sql_code`` gives ``text`` 0 whatever its query does (no query found), or
    None."""
    query = _strip_fences(text).upper().strip()
    if query.startswith(("SELECT", "WITH")) or _SELECT.search(text):
        return None
    return NO_CODE
