"""A streamed reply's chunks keep what the harness received: each chunk's text as a UTF-8 reader
of the stream gets it, and its bytes where they are not that text's encoding (``raw``); a record
whose texts are not the reading of its bytes is not a transport exchange."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from bundle_schema.models import Chunk, TransportExchange, stream_chunks


def _bytes(chunks: tuple[Chunk, ...]) -> bytes:
    return b"".join(chunk.received() for chunk in chunks)


def test_text_that_arrived_as_utf8_has_no_raw() -> None:
    chunks = stream_chunks([(0.1, b"data: caf\xc3\xa9\n\n"), (0.2, b"data: [DONE]\n\n")])
    assert [c.data for c in chunks] == ["data: caf\u00e9\n\n", "data: [DONE]\n\n"]
    assert all(c.raw is None for c in chunks)
    assert all("raw" not in c.model_dump(mode="json") for c in chunks)  # absent, not null


def test_a_character_split_across_pieces_is_read_in_the_piece_that_completes_it() -> None:
    chunks = stream_chunks([(0.1, b"caf\xc3"), (0.2, b"\xa9!")])
    assert [c.data for c in chunks] == ["caf", "\u00e9!"]
    assert [c.raw for c in chunks] == [base64.b64encode(b"caf\xc3").decode(), "qSE="]
    assert _bytes(chunks) == b"caf\xc3\xa9!"


def test_bytes_that_are_not_utf8_are_kept_and_read_as_a_reader_would() -> None:
    chunks = stream_chunks([(0.1, b"\xff ok"), (0.2, b"end \xe2\x82")])  # the last unfinished
    assert [c.data for c in chunks] == ["\ufffd ok", "end \ufffd"]
    assert _bytes(chunks) == b"\xff okend \xe2\x82"


@given(st.lists(st.binary(max_size=12), max_size=6))
def test_any_stream_is_kept_byte_for_byte_and_reads_back_as_recorded(
    pieces: list[bytes],
) -> None:
    chunks = stream_chunks([(float(i), piece) for i, piece in enumerate(pieces)])
    assert _bytes(chunks) == b"".join(pieces)
    assert "".join(c.data for c in chunks) == b"".join(pieces).decode("utf-8", "replace")
    exchange = _exchange([c.model_dump(mode="json") for c in chunks])
    assert exchange.chunks == chunks
    line = exchange.model_dump_json()
    assert TransportExchange.model_validate_json(line) == exchange


def _exchange(chunks: list[dict[str, Any]]) -> TransportExchange:
    return TransportExchange.model_validate({
        "schema_version": 1, "id": 0, "started": 0.0, "method": "POST",
        "path": "/v1/chat/completions", "chunks": chunks,
    })  # fmt: skip


@pytest.mark.parametrize(
    ("chunks", "says"),
    [
        # a text that is not what its bytes read as
        ([{"t": 0.1, "data": "caf\u00e9", "raw": base64.b64encode(b"cafe").decode()}], "reading"),
        # a raw that says nothing the text does not: one chunk, one way to record it
        ([{"t": 0.1, "data": "ok", "raw": base64.b64encode(b"ok").decode()}], "reading"),
        # a chunk after a split character that reads as if nothing were pending
        ([{"t": 0.1, "data": "", "raw": "ww=="}, {"t": 0.2, "data": "x"}], "reading"),
        ([{"t": 0.1, "data": "x", "raw": None}], "base64"),
        ([{"t": 0.1, "data": "x", "raw": ""}], "base64"),
        ([{"t": 0.1, "data": "x", "raw": "not base64!"}], "base64"),
        ([{"t": 0.1, "data": "x", "raw": "eA==\n"}], "base64"),
    ],
)
def test_a_chunk_whose_text_and_bytes_disagree_is_refused(
    chunks: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        _exchange(chunks)


def test_the_schema_says_raw_is_base64_text_when_given() -> None:
    schema = Chunk.model_json_schema()
    assert schema["properties"]["raw"]["type"] == "string"
    assert "anyOf" not in json.dumps(schema)  # a string, never null
    assert schema["required"] == ["t", "data"]
