"""A reply that stopped at its length limit, read as JSON (``verify.replies.truncated``): the
review's transport summary and its HTML page list it however its JSON is spelled (a tab, an
escaped key, a streamed event, Ollama's ``done_reason``), and list no other reply. The page's
filter takes the text's list, never a search of its own
(``tests/hostile/test_attacks_2026_12_07_show_diff.py`` holds both views end to end)."""

from __future__ import annotations

import pytest

from bundle_schema.models import Body, Chunk, TransportExchange
from verify.replies import truncated


def _exchange(body: str | None = None, chunks: tuple[str, ...] = ()) -> TransportExchange:
    return TransportExchange(
        schema_version=1, id=1, started=0.0, ended=0.1, method="POST",
        path="/v1/chat/completions", status=200,
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
    ],
)
def test_a_reply_that_stopped_at_its_limit_is_truncated(body: str) -> None:
    assert truncated(_exchange(body))


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
    ],
)
def test_no_other_reply_is_truncated(body: str | None) -> None:
    assert not truncated(_exchange(body))
