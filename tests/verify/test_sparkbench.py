"""A Spark Bench code scenario's answer as Spark Bench reads and grades it
(``verify/sparkbench.py``): which answers earn 0 whatever their code does, and which may score.
The reading is held to the real ``chat_stream`` and graders of the pinned checkout by
``tests/hostile/test_attacks_2026_12_07_spark_answers.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bundle_schema.models import TransportExchange
from verify.sparkbench import (
    CLIENT_RAISES,
    NO_CODE,
    NO_COMPILE,
    REPLY_ERROR,
    UNSENDABLE,
    scenario_ask,
    spark_reply,
)

MESSAGES = [{"role": "user", "content": "Write a Python function `f`."}]
REQUEST = {"model": "m", "messages": MESSAGES, "temperature": 0.3, "max_tokens": 800,
           "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip


def _exchange(body: str | list[str], request: Any = REQUEST, **fields: Any) -> TransportExchange:
    pieces = [body] if isinstance(body, str) else body
    base: dict[str, Any] = {
        "schema_version": 1, "id": 1, "component": "coding", "started": 10.0, "ended": 12.0,
        "method": "POST", "path": "/v1/chat/completions", "status": 200,
        "response_headers": {"content-type": "text/event-stream; charset=utf-8"},
        "request_body": {"encoding": "utf-8", "data": json.dumps(request)},
        "chunks": [{"t": 0.1 * (n + 1), "data": piece} for n, piece in enumerate(pieces)],
    }  # fmt: skip
    return TransportExchange.model_validate(base | fields)


def _stream(*contents: Any, usage: Any = None, end: str = "data: [DONE]\n\n") -> str:
    events = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in contents]
    if usage is not None:
        events.append({"choices": [], "usage": usage})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + end


def _verdicts(exchange: TransportExchange) -> tuple[str | None, str | None]:
    reply = spark_reply(exchange)
    assert reply is not None
    assert reply.ask == scenario_ask(MESSAGES, 800)
    return reply.python, reply.sql


@pytest.mark.parametrize(
    ("contents", "python", "sql"),
    [
        (["```python\ndef f(x):\n", "    return x\n```"], None, NO_CODE),
        (["def f(x):\n    return x"], None, NO_CODE),  # no fence: the text itself
        (["```python\ndef f(x) return x\n```"], NO_COMPILE, NO_CODE),
        (["I cannot write that."], NO_CODE, NO_CODE),
        (["```sql\nSELECT name FROM customers;\n```"], NO_CODE, None),
        (["Here it is: select 1; and more"], NO_CODE, None),
        (["```sql\nSELECT name FROM customers -- \x00\n```"], NO_CODE, UNSENDABLE),
        (["SELECT name FROM customers -- \ud800"], NO_CODE, UNSENDABLE),
        (["```\nWITH t AS (SELECT 1) SELECT * FROM t\n```"], NO_CODE, None),
        # the keywords are looked for in the fenced code first, then in the whole text, which
        # is then the code (fences and prose too)
        (["```\nx = 1\n```\nthen def f(): pass"], NO_COMPILE, NO_CODE),
        (["```\nx = 1\n```\n"], NO_CODE, NO_CODE),
        # line ends as the harness reads its file back: a lone CR ends a line
        (["def f(x):\r    return x\r"], None, NO_CODE),
        (["def f(x):\r\n\treturn x\r\n"], None, NO_CODE),
        # a NUL (ValueError in 3.11) or a lone surrogate (its file cannot be written)
        (["def f(x):\n    return '\x00'"], NO_COMPILE, NO_CODE),
        (["def f(x):\n    return '\ud800'"], NO_COMPILE, NO_CODE),
        # a warning is no error
        (["def f(x):\n    return x is 1"], None, NO_CODE),
        # an integer past the digits limit: a limit the harness's process may set
        (["def f():\n    return " + "9" * 5000], None, NO_CODE),
        # nested past the compiler's stack: depends on the stack, never counted
        (["def f():\n    return " + "-" * 200_000 + "1"], None, NO_CODE),
        (["```python\nprint(1)\n```", " and ```\nbroken(\n```"], None, NO_CODE),
        ([], NO_CODE, NO_CODE),
    ],
)
def test_an_answer_earns_0_when_its_grader_finds_no_code_or_it_does_not_compile(
    contents: list[str], python: str | None, sql: str | None
) -> None:
    assert _verdicts(_exchange(_stream(*contents))) == (python, sql)


def test_the_stream_is_read_as_chat_stream_reads_it() -> None:
    """Lines split at LF and stripped, ``data:`` with or without a space, lines that are not
    JSON skipped, nothing after ``[DONE]``, pieces joined whatever their cut."""
    body = (
        'data:{"choices":[{"delta":{"content":"def f(x):\\n"}}]}\r\n'
        ": a comment\n"
        "data: not json\n"
        '   data: {"choices":[{"delta":{"content":"    return x\\n"}}]}   \n'
        "data: [DONE]\n"
        'data: {"choices":[{"delta":{"content":")))"}}]}\n'
    )
    assert _verdicts(_exchange([body[:17], body[17:50], body[50:]])) == (None, NO_CODE)


@pytest.mark.parametrize(
    "event",
    [
        "[1, 2]",  # not an object: .get raises
        "null",
        '{"choices": {"0": {}}}',  # iterated: its keys have no .get
        '{"choices": "ab"}',
        '{"choices": 3}',  # not iterable
        '{"choices": [null]}',
        '{"choices": [{"delta": null}]}',
        '{"choices": [{"delta": "text"}]}',
        '{"choices": [{"delta": {"content": 5}}]}',  # joined with the text
        '{"choices": [{"delta": {"reasoning": ["x"]}}]}',
        '{"choices": [{"delta": {"tool_calls": 3}}]}',  # extended with it
        '{"choices": [], "usage": {"completion_tokens": "12"}}',
        '{"choices": [], "usage": {"completion_tokens": ""}}',  # "" > 1
        '{"choices": [], "usage": {"completion_tokens": 2' + "0" * 400 + "}}",  # past a float
        '{"choices": [], "usage": [1]}',
        "[" * 70 + "1" + "]" * 70,  # nested: parsed on a fresh stack, or raised in the client
    ],
)
def test_a_stream_the_client_surely_raises_on_scores_0(event: str) -> None:
    body = f"data: {event}\n\n" + _stream("```python\ndef f(x):\n    return x\n```")
    assert _verdicts(_exchange(body)) == (CLIENT_RAISES, CLIENT_RAISES)


@pytest.mark.parametrize(
    "event",
    [
        '{"choices": {}}',  # an empty object or string iterates to nothing
        '{"choices": ""}',
        '{"choices": [{"delta": {"tool_calls": "ab"}}]}',  # extended with its characters
        '{"choices": [], "usage": {"completion_tokens": 1.5e300}}',
        '{"choices": [], "usage": {"completion_tokens": true}}',
        "not json",  # skipped
        "[" * 70 + " not json",
        '{"note": ' + "[" * 70 + "]" * 70 + "}",  # deep, parsed and read
    ],
)
def test_a_stream_the_client_reads(event: str) -> None:
    body = f"data: {event}\n\n" + _stream("```python\ndef f(x):\n    return x\n```")
    assert _verdicts(_exchange(body)) == (None, NO_CODE)
    no_code = f"data: {event}\n\n" + _stream("I will not write code.")
    assert _verdicts(_exchange(no_code)) == (NO_CODE, NO_CODE)


@pytest.mark.parametrize(
    ("event", "verdict"),
    [
        # past int()'s digits: the client raises (a limit of its process), or, the limit
        # lifted, reads an integer past any float: either way what the answer says decides
        ('{"n": 1' + "0" * 5000 + "}", NO_CODE),
        ('{"choices": [], "usage": {"completion_tokens": 1' + "0" * 5000 + "}}", CLIENT_RAISES),
        ('{"choices": [{"delta": {"content": 1' + "0" * 5000 + "}}]}", CLIENT_RAISES),
        # a count a float holds, however large; one it does not
        ('{"choices": [], "usage": {"completion_tokens": ' + str(2**1023 + 1) + "}}", NO_CODE),
        ('{"choices": [], "usage": {"completion_tokens": ' + str(2**1024) + "}}", CLIENT_RAISES),
        # past even a fresh stack, so past the client's: it raised
        ("[" * 5000 + "]" * 5000, CLIENT_RAISES),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", CLIENT_RAISES),
    ],
)
def test_a_stream_read_either_way_the_client_may_read_it(event: str, verdict: str) -> None:
    body = f"data: {event}\n\n" + _stream("I will not write code.")
    assert _verdicts(_exchange(body)) == (verdict, verdict)


@pytest.mark.parametrize(
    ("status", "headers", "verdict"),
    [
        (500, {}, REPLY_ERROR),
        (404, {}, REPLY_ERROR),
        (204, {}, NO_CODE),
        # the observer follows no redirect: the harness got its 502
        (302, {}, REPLY_ERROR),
        (302, {"location": "/v1/x"}, REPLY_ERROR),
        (307, {"location": "/v1/x"}, REPLY_ERROR),
    ],
)
def test_a_reply_status(status: int, headers: dict[str, str], verdict: str | None) -> None:
    exchange = _exchange(
        "" if status == 204 else _stream("x"), status=status, response_headers=headers
    )
    assert _verdicts(exchange) == (verdict, verdict)


def test_a_chunk_whose_bytes_are_unknown_leaves_the_answer_unknown() -> None:
    exchange = _exchange(["data: \ud800\n\n"])
    assert _verdicts(exchange) == (None, None)


def test_what_is_no_scenario_request() -> None:
    assert spark_reply(_exchange(_stream("x"), request=[1])) is None
    assert spark_reply(_exchange(_stream("x"), method="GET")) is None
    unwritable = _exchange(_stream("x"), request={"messages": [[[]]], "max_tokens": 1})
    assert spark_reply(unwritable) is not None
    assert scenario_ask(MESSAGES, 800) != scenario_ask(MESSAGES, 801)
    assert scenario_ask(float("nan"), 1) is not None  # written as JSON's NaN, as Python does


@pytest.mark.parametrize("error", ["ConnectionRefusedError: the endpoint", None])
@pytest.mark.parametrize("status", [None, 101, 199])
def test_no_2xx_reply_is_an_error(status: int | None, error: str | None) -> None:
    """No reply (the observer answered the harness 502, or it went first), or a status urllib
    does not take as a reply: ``urllib`` raises."""
    exchange = _exchange(_stream("def f(x):\n    return x"), status=status, error=error)
    assert _verdicts(exchange) == (REPLY_ERROR, REPLY_ERROR)
