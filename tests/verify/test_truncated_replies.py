"""A reply that stopped at its length limit, read as JSON with the rest of the reply
(``verify.replies.read_exchange``, ``Reply.truncated``, kept in the exchange's facts): the
review's transport summary and its HTML page list it however its JSON is spelled (a tab, an
escaped key, a streamed event, Ollama's ``done_reason`` in a body or a stream kept whole, the
responses and messages APIs' own words for it), and list no other reply. The page's filter takes
the text's list, never a search of its own (``tests/hostile/test_attacks_2026_12_07_show_diff.py``
holds both views end to end)."""

from __future__ import annotations

import pytest

from bundle_schema.models import Body, Chunk, TransportExchange
from verify._facts import reply_facts
from verify.replies import read_exchange


def truncated(exchange: TransportExchange) -> bool:
    """As the reply reads, and as the facts kept of the exchange say (the same reading)."""
    said = read_exchange(exchange).truncated
    assert reply_facts(exchange).truncated == said
    return said


def _exchange(
    body: str | None = None, chunks: tuple[str, ...] = (), path: str = "/v1/chat/completions"
) -> TransportExchange:
    return TransportExchange(
        schema_version=1, id=1, started=0.0, ended=0.1, method="POST", path=path, status=200,
        response_body=None if body is None else Body(encoding="utf-8", data=body),
        chunks=tuple(Chunk(t=0.01 * i, data=c) for i, c in enumerate(chunks)),
    )  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        '{"choices":[{"finish_reason":"length"}]}',
        '{"choices": [ {"finish_reason":\t"length"} ]}',
        '{"choices":[{"\\u0066inish_reason":"\\u006cength"}]}',
        '{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"}]}',
        '{"model":"m","done":true,"done_reason":"length"}',
        '{"choices":{"text":"a lone choice","finish_reason":"length"}}',
        '{"object":"response","status":"incomplete",'
        '"incomplete_details":{"reason":"max_output_tokens"},"output":[]}',
        '{"type":"message","role":"assistant","content":[],"stop_reason":"max_tokens"}',
    ],
)
def test_a_reply_that_stopped_at_its_limit_is_truncated(body: str) -> None:
    assert truncated(_exchange(body))


def test_an_ollama_stream_kept_whole_that_stopped_at_its_limit_is_truncated() -> None:
    """Ollama streams application/x-ndjson, which the observer keeps as a body: the last line
    says why it stopped."""
    lines = (
        '{"model":"m","message":{"role":"assistant","content":"hi"},"done":false}\n'
        '{"model":"m","message":{"role":"assistant","content":""},"done":true,'
        '"done_reason":"length"}\n'
    )
    assert truncated(_exchange(lines, path="/api/chat"))
    assert not truncated(_exchange(lines.replace('"length"', '"stop"'), path="/api/chat"))


@pytest.mark.parametrize(
    "event",
    [
        '{"type":"response.incomplete","response":{"status":"incomplete",'
        '"incomplete_details":{"reason":"max_output_tokens"}}}',
        '{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{}}',
    ],
)
def test_the_responses_and_messages_apis_streamed_stop_at_their_limit(event: str) -> None:
    assert truncated(_exchange(chunks=(f"data: {event}\n\n",)))


def test_a_streamed_reply_that_stopped_at_its_limit_is_truncated() -> None:
    events = (
        'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n',
        'data: {"choices":[{"delta":{},"finish_reason" :\t"length"}]}\n\n',
        "data: [DONE]\n\n",
    )
    assert truncated(_exchange(chunks=events))


@pytest.mark.parametrize(
    "body",
    [
        None,
        "",
        "not json",
        '{"choices":[{"finish_reason":"stop"}]}',
        '{"choices":"finish_reason:length"}',
        '{"content":"the word \\"finish_reason\\":\\"length\\" in the text"}',
        '[{"finish_reason":"length"}]',
        '{"object":"response","status":"incomplete",'
        '"incomplete_details":{"reason":"content_filter"}}',
        '{"type":"message","stop_reason":"end_turn","content":[{"type":"text",'
        '"text":"stop_reason max_tokens"}]}',
    ],
)
def test_no_other_reply_is_truncated(body: str | None) -> None:
    assert not truncated(_exchange(body))
