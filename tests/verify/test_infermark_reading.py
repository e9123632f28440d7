"""A performance exchange read as Infermark 0.3.0's client reads it (``verify/infermark.py``):
the lines as httpx's ``aiter_lines`` gives them, each at the time of the bytes that ended it,
and a token wherever Infermark's own expression finds one, an error wherever it raises."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle_schema.models import TransportExchange
from verify.infermark import DEFAULT_PROMPT, infermark_reading, infermark_run
from verify.infermark import _lines as lines_of
from verify.infermark import _token as token_of

_PIECES = st.lists(
    st.tuples(st.floats(0, 10), st.text(alphabet="ab\r\n\x0b\x85\u2028 ", max_size=8)),
    max_size=8,
).map(lambda pieces: sorted(pieces, key=lambda p: p[0]))


@settings(max_examples=500, deadline=None)
@given(_PIECES)
def test_the_lines_are_those_of_splitlines_on_the_whole_text(
    pieces: list[tuple[float, str]],
) -> None:
    """httpx's line reader has the behaviour of ``str.splitlines`` on the whole text, whatever
    the pieces it arrives in."""
    whole = "".join(text for _, text in pieces)
    assert [line for _, line in lines_of(pieces)] == whole.splitlines()


@settings(max_examples=500, deadline=None)
@given(_PIECES)
def test_each_line_is_read_when_the_bytes_that_end_it_arrived(
    pieces: list[tuple[float, str]],
) -> None:
    """A line is read at the piece that brought its end; a carriage return that ends a piece
    waits for the next piece (a line feed may follow); the last line with no end, at the end."""
    read = list(lines_of(pieces))
    ends: list[float] = []  # when each line of the whole text could be read, as said above
    text, at = "", []
    for t, piece in pieces:
        text += piece
        at += [t] * len(piece)
    position = 0
    for line in text.splitlines(keepends=True):
        end = position + len(line) - 1  # the index of its last character
        position += len(line)
        if line.endswith("\r") and end == len(text) - 1:
            ends.append(pieces[-1][0])  # the last character: read at the end
            continue
        if line.endswith("\r") and at[end + 1] != at[end]:
            ends.append(at[end + 1])  # a CR ending its piece: read with the next piece
            continue
        ends.append(at[end] if line.splitlines()[0] != line else pieces[-1][0])
    assert [t for t, _ in read] == ends


def _infermark(value: Any) -> Any:
    """Infermark 0.3.0's ``_extract_token_from_chunk`` expression, as Python runs it."""
    choices = value.get("choices", [])
    if not choices:
        return None
    delta = choices[0].get("delta", {})
    return delta.get("content")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "0"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["choices", "delta", "content", "0", "text"]), inner,
                      max_size=3),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(_JSON)
def test_a_token_is_what_infermarks_own_expression_finds(value: Any) -> None:
    line = "data: " + json.dumps(value)
    try:
        token = _infermark(value) if value is not None else None
    except (AttributeError, KeyError, TypeError, IndexError):
        with pytest.raises(Exception):  # noqa: B017 - any exception ends the request
            token_of(line)
        return
    assert token_of(line) is (token is not None and token != "")


@pytest.mark.parametrize(
    ("line", "counted"),
    [
        ('data: {"choices":[{"delta":{"content":"x"}}]}', True),
        ('  data:{"choices":[{"delta":{"content":"x"}}]}  ', True),  # stripped, no space needed
        ('data: {"choices":[{"delta":{"content":0}}]}', True),  # any value but null and ""
        ('data: {"choices":[{"delta":{"content":""}}]}', False),
        ('data: {"choices":[{"text":"x"}]}', False),  # the legacy completion: no delta
        ('data: {"choices":[{"delta":{"reasoning_content":"x"}}]}', False),
        ('{"choices":[{"delta":{"content":"x"}}]}', False),  # a JSON line: not data
        ("data: [DONE]", False),
        ("data: not json", False),
        ("data: null", False),
        ('event: {"choices":[{"delta":{"content":"x"}}]}', False),
    ],
)
def test_lines_infermark_counts(line: str, counted: bool) -> None:
    assert token_of(line) is counted


@pytest.mark.parametrize(
    "line",
    [
        'data: {"choices":[{"delta":null}]}',  # some servers' last event
        "data: [1]",
        'data: {"choices":{"0":{}}}',
        'data: {"choices":"abc"}',
        "data: " + "[" * 5000 + "]" * 5000,  # past the parser's stack
        "data: " + "1" * 5000,  # past int()'s digits
    ],
)
def test_lines_infermarks_client_fails_on(line: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 - any exception ends the request
        token_of(line)


def _exchange(chunks: list[dict[str, Any]], **fields: Any) -> TransportExchange:
    base: dict[str, Any] = {
        "schema_version": 1, "id": 1, "component": "performance", "started": 10.0,
        "ended": 12.0, "method": "POST", "path": "/v1/chat/completions", "status": 200,
        "response_headers": {"content-type": "text/event-stream; charset=utf-8"},
    }  # fmt: skip
    return TransportExchange.model_validate(base | {"chunks": chunks} | fields)


def _event(content: Any) -> str:
    return "data: " + json.dumps({"choices": [{"delta": {"content": content}}]}) + "\n\n"


def test_an_exchange_is_read_as_infermarks_client_reads_it() -> None:
    chunks = [{"t": 0.1, "data": _event(None)}, {"t": 0.2, "data": _event("a")},
              {"t": 0.3, "data": _event("b")[:20]}, {"t": 0.4, "data": _event("b")[20:]},
              {"t": 0.5, "data": "data: [DONE]\n\n"}]  # fmt: skip
    reading = infermark_reading(_exchange(chunks))
    assert (reading.failed, reading.tokens, reading.first) == (False, 2, 0.2)
    # the last line with no end is read when the stream ends: at its last chunk
    last = infermark_reading(_exchange([{"t": 1.5, "data": _event("a").rstrip()}]))
    assert (last.tokens, last.first) == (1, 1.5)
    # a delta of null ends the request: an error, its tokens counting for nothing
    broken = infermark_reading(
        _exchange([*chunks, {"t": 0.6, "data": 'data: {"choices":[{"delta":null}]}\n'}])
    )
    assert (broken.failed, broken.tokens) == (True, 0)
    assert infermark_reading(_exchange(chunks, status=500)).failed
    assert infermark_reading(_exchange(chunks, error="upstream broke off")).failed


def test_the_reply_is_decoded_in_its_charset() -> None:
    """``charset=utf-16``: the bytes are read as httpx reads them, not as UTF-8."""
    raw = _event("é").encode("utf-16")
    chunk = {"t": 0.1, "data": raw.decode("utf-8", "replace"), "raw": _b64(raw)}
    utf16 = {"content-type": "text/event-stream; charset=utf-16"}
    assert infermark_reading(_exchange([chunk], response_headers=utf16)).tokens == 1
    unknown = {"content-type": "text/event-stream; charset=no-such-codec"}
    assert infermark_reading(_exchange([chunk], response_headers=unknown)).tokens == 0  # UTF-8


def _b64(data: bytes) -> str:
    import base64  # noqa: PLC0415

    return base64.b64encode(data).decode()


V5 = ["{python}", "-m", "infermark.cli", "run", "{endpoint}/v1", "-m", "{model}", "-n", "20",
      "-c", "1", "--warmup", "0", "--max-tokens", "256", "--mode", "streaming", "-o",
      "{out}/infermark.json"]  # fmt: skip


def test_the_pinned_command_is_read_as_click_reads_it() -> None:
    run = infermark_run(V5, "m")
    assert run is not None
    assert (run.requests, run.max_tokens, run.timeout, run.path()) == (
        20,
        256,
        120.0,
        "/v1/chat/completions",
    )
    assert run.payload() == {
        "model": "m", "messages": [{"role": "user", "content": DEFAULT_PROMPT}],
        "max_tokens": 256, "stream": True,
    }  # fmt: skip
    words = ["infermark", "run", "{endpoint}", "-n7", "--max-tokens=9", "--prompt",
             "Hi {model} {{x}}", "-m{model}-q", "--timeout=5"]  # fmt: skip
    joined = infermark_run(words, "m")
    assert joined is not None
    assert (joined.requests, joined.max_tokens, joined.model, joined.timeout, joined.path()) == (
        7,
        9,
        "m-q",
        5.0,
        "/chat/completions",
    )
    # the words as the runner fills them: {model} the runtime id, {{ }} single braces
    assert joined.payload()["messages"] == [{"role": "user", "content": "Hi m {x}"}]
    defaults = infermark_run(["/venv/bin/infermark", "run", "http://h/v1"], "m")
    assert defaults is not None and (defaults.requests, defaults.max_tokens) == (50, 256)
    assert defaults.path() is None  # not the run's endpoint
    assert infermark_run(["{python}", "bench.py", "run", "{endpoint}"], "m") is None
    assert infermark_run([*V5, "--bogus"], "m") is None  # click refuses it
    assert infermark_run([*V5, "--max-tokens", "many"], "m") is None
    assert infermark_run([*V5, "extra"], "m") is None  # one URL argument
    assert infermark_run([*V5, "-n", "0"], "m") is None  # BenchmarkConfig refuses it
    assert infermark_run([*V5, "--timeout", "0"], "m") is None
    assert infermark_run([*V5, "--prompt", "a { b"], "m") is None  # no format string


def test_the_request_body_is_the_bytes_the_observer_forwards() -> None:
    """httpx's encoding (compact, UTF-8 as is) without a policy; the observer's re-encoding
    (ASCII escapes, the policy appended) with one."""
    from bundle_schema.models import ReasoningSerialization  # noqa: PLC0415

    run = infermark_run([*V5, "--prompt", "café"], "m")
    assert run is not None
    assert (
        run.body(None)
        == (
            '{"model":"m","messages":[{"role":"user","content":"café"}],"max_tokens":256,'
            '"stream":true}'
        ).encode()
    )
    policy = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
    assert run.body(policy) == (
        b'{"model":"m","messages":[{"role":"user","content":"caf\\u00e9"}],"max_tokens":256,'
        b'"stream":true,"chat_template_kwargs":{"enable_thinking":false}}'
    )


def test_deep_json_is_read_alike_from_any_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """An event nested as deep as Infermark's pinned CLI cannot parse is an error whatever the
    caller's stack; one nested less, parsed on a stack of its own; a flat one of many brackets,
    where it is (no thread for it)."""
    from verify import infermark  # noqa: PLC0415

    deep = "[" * infermark.INFERMARK_JSON_DEPTH + "]" * infermark.INFERMARK_JSON_DEPTH
    with pytest.raises(RecursionError):
        infermark._loads(deep)
    less = deep[1:-1]

    def nested(frames: int) -> str:
        return type(infermark._loads(less)).__name__ if frames == 0 else nested(frames - 1)

    assert nested(0) == nested(300) == "list"  # read alike from a shallow and a deep caller
    monkeypatch.setattr(infermark, "loads_on_a_fresh_stack", None)  # no thread for a flat event
    assert infermark._loads("[" + "[]," * 99 + "[]]") == [[]] * 100
