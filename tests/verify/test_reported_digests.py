"""Which model an identity reply reports a digest for (``verify._facts.reported_digests``): a
digest whose source is ``endpoint`` passes ``model_identity`` only when a recorded reply reports
it for the runtime model (its own entry of a listing, or a reply about it), never because
another model's entry, or a reply about no model, carries it. The shapes are Ollama's
``/api/tags`` and ``/api/show`` replies and an OpenAI ``/v1/models`` listing; the full and the
slim (bounded) exchange must agree."""

from __future__ import annotations

from typing import Any

import pytest

from bundle_schema.canonical import MAX_DEPTH
from tests.identity_kit import identity_exchange as exchange
from tests.identity_kit import reported_both as both
from verify._facts import MAX_REPORTED

A, B, C = "a1" * 32, "b2" * 32, "c3" * 32


TAGS = {
    "models": [
        {"name": "qwen3:8b", "model": "qwen3:8b", "digest": A, "size": 5},
        {
            "name": "llama3:latest",
            "model": "llama3:latest",
            "digest": B,
            "details": {"parent_model": ""},
        },
    ]
}


@pytest.mark.parametrize("base64_body", [False, True])
def test_a_listing_reports_each_digest_for_its_own_entry(base64_body: bool) -> None:
    assert both(exchange(TAGS, base64_body=base64_body)) == {
        ("qwen3:8b", A),
        ("llama3:latest", B),
    }


def test_an_openai_listing_names_entries_by_id() -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model", "meta": {"sha": C}}]}
    assert both(exchange(listing, path="/v1/models")) == {("m", C)}


def test_a_reply_about_the_model_the_request_names_reports_for_it() -> None:
    show = {"modelfile": f"FROM /root/.ollama/models/blobs/sha256-{A}\n", "details": {}}
    asked = exchange(show, method="POST", path="/api/show", request={"name": "qwen3:8b"})
    assert both(asked) == {("qwen3:8b", A)}
    by_model = exchange(show, method="POST", path="/api/show", request={"model": "qwen3:8b"})
    assert both(by_model) == {("qwen3:8b", A)}


def test_a_reply_that_names_its_model_at_its_top_reports_for_it() -> None:
    assert both(exchange({"id": "m", "digest": f"sha256:{C}"}, path="/v1/models/m")) == {("m", C)}


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param({"modelfile": f"FROM sha256-{A}"}, id="names-no-model"),
        pytest.param({"models": [{"digest": A}]}, id="entry-without-name"),
        pytest.param({"models": [{"name": 7, "digest": A}]}, id="name-not-text"),
        pytest.param(f'{{"name": "m", "digest": "{A}"', id="not-json"),
        pytest.param({"name": "m", "digest": A.upper()}, id="upper-case"),
        pytest.param({"name": "m", "digest": A + "0"}, id="65-digits"),
    ],
)
def test_a_digest_reported_for_no_model_is_no_models(reply: Any) -> None:
    assert both(exchange(reply)) == frozenset()


def test_a_listed_reply_is_read_by_entry_whatever_the_request_names() -> None:
    listed = exchange(TAGS, method="POST", request={"name": "qwen3:8b"})
    assert ("qwen3:8b", B) not in both(listed)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"status": 404}, id="error"),
        pytest.param({"method": "POST", "path": "/v1/chat/completions"}, id="completion"),
    ],
)
def test_only_an_answered_identity_request_reports(changes: dict[str, Any]) -> None:
    assert both(exchange({"name": "m", "digest": A}, **changes)) == frozenset()


def test_a_reply_is_read_for_at_most_max_reported_digests() -> None:
    many = {"models": [{"name": f"m{i}", "digest": f"{i:064x}"} for i in range(MAX_REPORTED + 5)]}
    reported = both(exchange(many))
    assert len(reported) == MAX_REPORTED
    assert ("m0", f"{0:064x}") in reported


@pytest.mark.parametrize("depth", [60, 70, 900, 100_000])
def test_a_reply_nested_past_the_bound_reports_nothing(depth: int) -> None:
    """Up to MAX_DEPTH a reply is read (walked without recursing); past it never, whether or
    not the parser reached its end from where it was called (bounded and full paths agree)."""
    reply = '{"name": "m", "x": ' + "[" * depth + f'"{A}"' + "]" * depth + "}"
    assert both(exchange(reply)) == ({("m", A)} if depth < MAX_DEPTH else frozenset())
