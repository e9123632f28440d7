"""Hostile review of 2026-12-08: parsing differentials and smuggling between the observer
(``audit/_http_server.py``, the harness's side; ``audit/observer.py`` ``_Connection`` and
``_Reply``, the engine's side) and the parsers of real engines (h11, which uvicorn serves
vLLM and llama-cpp-python with; cpp-httplib, llama.cpp's ``llama-server``). Every test talks
to 127.0.0.1 only: raw requests from a socket, through a real observer, to a raw endpoint that
keeps the bytes it received (``tests.audit.test_observer._Scripted``), which are then read
with h11 as an engine reads them and compared with the transport log.

Found (strict xfails against 8e982c8, each failed on the code as found; all five holes and the
decision closed in the commit that added this file, each test now asserting the fixed
behaviour: a status outside 100..599 is no status line; a ``Content-Length`` is read from its
digits without leading zeros, more than 20 of them refused, on both sides; a reply body past
``observer.MAX_REPLY`` (64 MiB, the request's bound) is cut, an error of the exchange; a
request target whose path holds a ``%`` that is no escape is refused, 400; the observer and the
verifier decide a completion by one function on the recorded target, its path decoded once,
``verify.replies.is_completion_path``):

1. An engine's status code outside 100..599 (``HTTP/1.1 999 X``, ``000``, ``099``, ``600``)
   was taken as a final reply (``_Reply.__init__`` checked three digits only), relayed to the
   harness as ``HTTP/1.1 0 `` / ``HTTP/1.1 999 `` and recorded with that status, which
   ``TransportExchange.status`` (``ge=100, le=599``) refuses: ``Observer.exchanges()`` (and
   ``wait_for``) raised ``ValidationError`` from then on, so ``audit/run.py`` lost the whole
   transport log of the run, not one exchange.
2. An engine's ``Content-Length`` of more than 4,300 digits raised ``ValueError`` (Python's
   integer-string limit) in ``_Reply.__init__``, which ``Observer._forward`` re-raised: a
   logged traceback, a bare 500 to the harness, and an exchange recorded with neither a
   status nor an error although the engine had the request.
3. The same on the harness's side: ``Content-Length: 000...0001`` (5,000 digits; h11 and
   llhttp take it as 1) raised ``ValueError`` in ``_http_server._framing``, out of
   ``HarnessConnection.data_received``: asyncio logged "Fatal error" and dropped the
   connection with no answer.
4. ``llama-server`` (cpp-httplib's ``detail::decode_url``) decodes ``%uXXXX`` in a path; the
   observer did not: ``POST /v1/chat/%u0063ompletions`` was routed by llama.cpp to its chat
   completion while ``observer._with_policy`` took it for another path and forwarded it
   WITHOUT the reasoning policy. Such a target is refused now (400, sent nowhere).
5. A reply body was unbounded: a ``Content-Length`` of 1 TiB, or a close-framed body, was read
   into memory whole for as long as the engine sent (the request side stops at 64 MiB).

Decision, taken the same day:

6. The observer decided a completion on the DECODED path, the verifier on the RECORDED one:
   ``POST /v1/chat/%63ompletions`` had the policy written, and was read by the gates as no
   completion (an honest engine's reply then failed ``reasoning_serialization`` as "generated
   text under another name"). Both now ask ``is_completion_path`` of the recorded target.

Held (pass plainly): no malformed or ambiguous request head reaches the engine or the log
(obsolete folding, whitespace before the colon, a bare LF in a head sent whole, a repeated
``Content-Length`` with the same or another value, ``+2``, ``0x2``, ``-1``, an empty one, both
``Content-Length`` and chunked, ``Transfer-Encoding`` twice or ``chunked, chunked``, a chunk size
of 17 hex digits, a chunk extension with a bare CR, an over-long ``Content-Length``, ``CONNECT``
in authority form, no ``Host``, a space in the target): each gets a 4xx/501 and a close, the
engine gets nothing, nothing is recorded. What is taken reaches the engine as exactly one
request h11 reads with the recorded method, path, body and recorded header values (chunk sizes
with leading zeros, quoted extensions holding ``;``, trailers holding ``Content-Length``,
``Content-Length: 0003``, HTTP/1.0 kept alive, ``Expect: 100-continue``, ``Upgrade``/``h2c``
not forwarded, an absolute-form target naming 10.0.0.1 forwarded to the engine alone with the
engine's ``Host`` and recorded as its path, empty lines before a request). Pipelined requests
in one write are forwarded and recorded one each, and none after ``Connection: close``. On the
engine's side: a reply with both ``Content-Length`` and chunked is read chunked, relayed and
recorded alike; a second reply smuggled behind the first in the same write is never the next
request's answer (its connection is dropped); interim ``100``/``102`` replies are passed over.
A completion path routed alike by h11/uvicorn, cpp-httplib and the observer (``%63``, ``%2F``,
a fragment, a query, a trailing slash) is sent with the policy.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import h11
import pytest

from audit.observer import Observer, observe
from bundle_schema.models import ReasoningSerialization, TransportExchange
from tests.audit.test_observer import CLOSE, _Arrived, _scripted
from verify.replies import is_completion

OFF = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
_OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
_CHAT = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


def _port(observer: Observer) -> int:
    return int(observer.url.rsplit(":", 1)[1])


def _read_all(client: socket.socket, quiet: float = 0.3) -> bytes:
    """What the observer wrote back until it closed or was quiet for ``quiet`` seconds."""
    client.settimeout(quiet)
    data = b""
    while True:
        try:
            more = client.recv(1 << 16)
        except TimeoutError:
            return data
        if not more:
            return data
        data += more


@contextmanager
def _observed(
    *replies: list[Any], then: list[Any] | None = None, policy: ReasoningSerialization | None = None
) -> Iterator[tuple[Any, Observer]]:
    with (
        _scripted(*replies, then=then if then or replies else [_OK]) as endpoint,
        observe(endpoint.url, policy=policy) as observer,
    ):
        yield endpoint, observer


def _through(
    request: bytes, count: int, *, policy: ReasoningSerialization | None = None
) -> tuple[list[_Arrived], bytes, list[TransportExchange]]:
    """Raw bytes through an observer to an endpoint answering ``_OK``: what the endpoint
    received, what the harness got back, and the log (``count`` exchanges expected)."""
    with _observed(policy=policy) as (endpoint, observer):
        with socket.create_connection(("127.0.0.1", _port(observer)), timeout=10) as client:
            client.sendall(request)
            answer = _read_all(client)
        if count:
            exchanges = observer.wait_for(count)
        else:
            time.sleep(0.1)
            exchanges = observer.exchanges()
        arrived = list(endpoint.requests)
    return arrived, answer, exchanges


def _engine_reads(raw: bytes) -> tuple[bytes, bytes, dict[bytes, bytes], bytes]:
    """One request as h11 (uvicorn's parser) reads it: method, target, headers, body; and
    nothing left over."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(raw)
    request = connection.next_event()
    assert isinstance(request, h11.Request), request
    body = b""
    while True:
        event = connection.next_event()
        if isinstance(event, h11.Data):
            body += bytes(event.data)
        else:
            assert isinstance(event, h11.EndOfMessage), event
            break
    assert connection.trailing_data == (b"", False)
    return request.method, request.target, dict(request.headers), body


def _cpp_httplib_path(target: str) -> str:
    """The path llama.cpp's server routes on (cpp-httplib ``parse_request_line``: the
    fragment dropped, the part before ``?``, ``detail::decode_url`` with ``%uXXXX``)."""
    path = target.partition("#")[0].partition("?")[0]

    def one(match: re.Match[str]) -> str:
        escape = match.group()
        return chr(int(escape[2:], 16)) if escape[1] == "u" else chr(int(escape[1:], 16))

    return re.sub(r"%u[0-9A-Fa-f]{4}|%[0-9A-Fa-f]{2}", one, path)


# --- the harness's side: what is refused never reaches the engine ------------------------------

_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
REFUSED = {
    "obsolete folding": _HEAD + b"X-A: a\r\n b\r\nContent-Length: 2\r\n\r\n{}",
    "whitespace before the colon": _HEAD + b"Content-Length : 2\r\n\r\n{}",
    "a bare LF in a head sent whole": _HEAD + b"X-A: a\nContent-Length: 2\r\n\r\n{}",
    "Content-Length twice, the same": _HEAD + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    "Content-Length twice, not the same": (
        _HEAD + b"Content-Length: 2\r\nContent-Length: 0\r\n\r\n{}"),
    "Content-Length +2": _HEAD + b"Content-Length: +2\r\n\r\n{}",
    "Content-Length 0x2": _HEAD + b"Content-Length: 0x2\r\n\r\n{}",
    "Content-Length -1": _HEAD + b"Content-Length: -1\r\n\r\n{}",
    "Content-Length empty": _HEAD + b"Content-Length:\r\n\r\n{}",
    "Content-Length 2, 2": _HEAD + b"Content-Length: 2, 2\r\n\r\n{}",
    "Content-Length over 20 digits": _HEAD + b"Content-Length: " + b"9" * 25 + b"\r\n\r\n{}",
    "both framings": (
        _HEAD + b"Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
    "Transfer-Encoding twice": (
        _HEAD + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"),
    "chunked, chunked": _HEAD + b"Transfer-Encoding: chunked, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "a chunk size of 17 hex digits": (
        _HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"0" * 16 + b"2\r\n{}\r\n0\r\n\r\n"),
    "a bare CR in a chunk extension": (
        _HEAD + b"Transfer-Encoding: chunked\r\n\r\n2;a=\rb\r\n{}\r\n0\r\n\r\n"),
    "a chunk size with a space": _HEAD + b"Transfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0\r\n\r\n",
    "CONNECT in authority form": b"CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 10.0.0.1:443\r\n\r\n",
    "no Host": b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    "a space in the target": b"POST /v1/chat/completions /x HTTP/1.1\r\nHost: x\r\n\r\n",
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_an_ambiguous_request_is_refused_and_never_reaches_the_engine(case: str) -> None:
    arrived, answer, exchanges = _through(REFUSED[case], 0, policy=OFF)
    assert (arrived, exchanges) == ([], [])
    assert re.match(rb"HTTP/1\.1 (4\d\d|501) ", answer), answer[:80]
    assert b"\r\nConnection: close\r\n" in answer.partition(b"\r\n\r\n")[0] + b"\r\n"


# --- the harness's side: what is taken reaches the engine as recorded --------------------------

ACCEPTED = {
    "chunk sizes with leading zeros, quoted extensions, a trailer": (
        b"POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'0003;a="b;c";d\r\n{"a\r\n000000000000001;e=f\r\n}\r\n0000\r\n'
        b"Content-Length: 99\r\nTransfer-Encoding: gzip\r\n\r\n",
        "/v1/x", b'{"a}'),
    "Content-Length with leading zeros": (
        b"POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 0003\r\n\r\nabc", "/v1/x", b"abc"),
    "HTTP/1.0 kept alive": (
        b"POST /v1/x HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nz",
        "/v1/x", b"z"),
    "Expect: 100-continue": (
        b"POST /v1/x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
        "/v1/x", b"z"),
    "Upgrade to h2c": (
        b"GET /v1/models HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", "/v1/models", b""),
    "absolute form naming another host": (
        b"POST http://10.0.0.1:9/v1/x?q=1 HTTP/1.1\r\nHost: 10.0.0.1:9\r\n"
        b"Content-Length: 1\r\n\r\nz", "/v1/x?q=1", b"z"),
    "empty lines first, tabs and padding in values": (
        b"\r\n\r\nPOST /v1/x HTTP/1.1\r\nHost: h\r\nAccept: \t a/b \t\r\n"
        b"User-Agent:u\r\nContent-Length: 1\r\n\r\nz", "/v1/x", b"z"),
}  # fmt: skip


@pytest.mark.parametrize("case", ACCEPTED)
def test_what_is_taken_reaches_the_engine_as_one_request_as_recorded(case: str) -> None:
    request, path, body = ACCEPTED[case]
    with _observed() as (endpoint, observer):
        with socket.create_connection(("127.0.0.1", _port(observer)), timeout=10) as client:
            client.sendall(request)
            answer = _read_all(client)
        (exchange,) = observer.wait_for(1)
        (arrived,) = endpoint.requests
        engine_host = endpoint.url.removeprefix("http://").encode()
    method, target, headers, received = _engine_reads(arrived.raw)
    assert (method.decode(), target.decode(), received) == (exchange.method, exchange.path, body)
    assert exchange.path == path
    assert (exchange.request_body.data.encode() if exchange.request_body else b"") == body
    assert headers[b"host"] == engine_host  # never the harness's, never 10.0.0.1
    for name, value in exchange.request_headers.items():
        assert headers[name.encode()] == value.encode()
    for hop in (b"upgrade", b"connection", b"expect", b"transfer-encoding", b"keep-alive"):
        assert hop not in headers
    assert answer.count(b"HTTP/1.") - answer.count(b"HTTP/1.1 100 Continue") == 1
    assert b" 200 OK\r\n" in answer


def test_pipelined_requests_are_forwarded_one_each_and_none_after_a_close() -> None:
    body = b'{"n": %d}'
    requests = b"".join(
        b"POST /v1/x HTTP/1.1\r\nHost: h\r\n%sContent-Length: 8\r\n\r\n%s"
        % (b"Connection: close\r\n" if n == 1 else b"", body % n)
        for n in range(3)
    )
    arrived, answer, exchanges = _through(requests, 2)
    assert [a.body for a in arrived] == [body % 0, body % 1]
    assert [e.request_body.data.encode() for e in exchanges if e.request_body] == [
        body % 0,
        body % 1,
    ]
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    for one in arrived:
        assert _engine_reads(one.raw)[3] == one.body


# --- completion paths: the engine's routing and the observer's decision ------------------------

ROUTED = {
    "%63": "/v1/chat/%63ompletions",
    "%2F": "/v1/chat%2Fcompletions",
    "a fragment": "/v1/chat/completions#x",
    "a query": "/v1/chat/completions?x=1",
    "%u0063 (cpp-httplib's decode_url)": "/v1/chat/%u0063ompletions",
}


@pytest.mark.parametrize("case", list(ROUTED))
def test_a_path_llama_cpp_routes_to_a_completion_is_sent_with_the_policy(case: str) -> None:
    """Sent with the policy, or refused and sent nowhere (a ``%`` that is no escape)."""
    target = ROUTED[case]
    routed = _cpp_httplib_path(target)
    assert routed == "/v1/chat/completions"  # the premise: llama.cpp routes it to its chat
    request = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" % target.encode()
    if "%u" in case:
        arrived, answer, exchanges = _through(request, 0, policy=OFF)
        assert (arrived, exchanges) == ([], [])
        assert answer.startswith(b"HTTP/1.1 400 ") and b"percent-escape" in answer, answer
        return
    arrived, _, (exchange,) = _through(request, 1, policy=OFF)
    (sent,) = arrived
    assert exchange.request_body is not None
    assert exchange.request_body.data.encode() == sent.body  # the record is what was sent
    assert json.loads(sent.body) == {"chat_template_kwargs": {"enable_thinking": False}}


def test_the_verifier_and_the_observer_agree_on_what_is_a_completion() -> None:
    request = b"POST /v1/chat/%63ompletions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    arrived, _, (exchange,) = _through(request, 1, policy=OFF)
    assert json.loads(arrived[0].body) == {"chat_template_kwargs": {"enable_thinking": False}}
    assert is_completion(exchange)


# --- the harness's side: totality --------------------------------------------------------------


def test_a_content_length_of_5000_digits_is_answered() -> None:
    """Read as h11 and llhttp read it (leading zeros are no digits more): a length of 1."""
    request = _HEAD + b"Content-Length: " + b"0" * 4999 + b"1\r\n\r\nx"
    arrived, answer, (exchange,) = _through(request, 1)
    assert [a.body for a in arrived] == [b"x"]
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
    assert exchange.request_body is not None and exchange.request_body.data == "x"
    too_long = _HEAD + b"Content-Length: 1" + b"0" * 21 + b"\r\n\r\nx"
    arrived, answer, exchanges = _through(too_long, 0)
    assert (arrived, exchanges) == ([], [])
    assert re.match(rb"HTTP/1\.1 413 ", answer), answer[:80]


# --- the engine's side ------------------------------------------------------------------------


def _ask_raw(
    replies: list[list[Any]], requests: int = 1
) -> tuple[list[bytes], list[_Arrived], list[TransportExchange]]:
    """``requests`` chat requests, each on a connection of its own, through an observer to an
    endpoint answering with ``replies``: the harness's answers, the endpoint's requests, the
    log (read as ``audit run`` reads it)."""
    with _observed(*replies) as (endpoint, observer):
        answers = []
        for _ in range(requests):
            with socket.create_connection(("127.0.0.1", _port(observer)), timeout=10) as client:
                client.sendall(_CHAT)
                answers.append(_read_all(client))
        exchanges = observer.wait_for(requests)
        arrived = list(endpoint.requests)
    return answers, arrived, exchanges


def test_a_reply_with_both_framings_is_read_chunked_and_recorded_as_relayed() -> None:
    body = b'{"model": "m"}'
    reply = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    (answer,), _, (exchange,) = _ask_raw([[reply]])
    assert answer.endswith(b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert exchange.response_body is not None
    assert exchange.response_body.data.encode() == body


def test_a_second_reply_smuggled_behind_the_first_answers_no_later_request() -> None:
    smuggled = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n"
    first = _OK + smuggled + b'"forged"'
    second = b'{"model": "honest"}'
    honest = _OK.replace(b"Length: 2\r\n\r\n{}", b"Length: %d\r\n\r\n%s" % (len(second), second))
    answers, arrived, exchanges = _ask_raw([[first], [honest]], requests=2)
    assert answers[1].endswith(second)
    assert [e.response_body.data.encode() for e in exchanges if e.response_body] == [b"{}", second]
    assert [a.connection for a in arrived] == [0, 1]


def test_interim_replies_are_passed_over() -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n" * 3
    (answer,), _, (exchange,) = _ask_raw([[interim + _OK]])
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.count(b"HTTP/1.1") == 1
    assert exchange.status == 200


@pytest.mark.parametrize("status", [b"000", b"099", b"600", b"999"])
def test_a_status_outside_100_to_599_is_an_error_and_the_log_survives(status: bytes) -> None:
    reply = _OK.replace(b"200 OK", status + b" X")
    with _observed([reply], [_OK]) as (_, observer):
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", _port(observer)), timeout=10) as client:
                client.sendall(_CHAT)
                answer = _read_all(client)
        time.sleep(0.1)
        try:
            exchanges = observer.exchanges()
        except ValueError as invalid:  # pydantic's ValidationError
            pytest.fail(f"the transport log cannot be read: {str(invalid)[:200]}")
    first, second = exchanges
    assert first.status is None
    assert first.error is not None
    assert "status" in first.error
    assert second.status == 200
    assert answer.startswith(b"HTTP/1.1 200 OK")


def test_an_engine_content_length_of_5000_digits_is_an_error_exchange() -> None:
    """Leading zeros are no digits more (a length of 2, as h11 reads it); more than 20 digits
    is a bad length: an error of the exchange, a 502, never a traceback."""
    reply = _OK.replace(b"Length: 2", b"Length: " + b"0" * 4999 + b"2")
    (answer,), arrived, (exchange,) = _ask_raw([[reply]])
    assert len(arrived) == 1
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"{}")
    assert (exchange.status, exchange.error) == (200, None)
    reply = _OK.replace(b"Length: 2", b"Length: 2" + b"0" * 4999)
    (answer,), arrived, (exchange,) = _ask_raw([[reply]])
    assert answer.startswith(b"HTTP/1.1 502 ")
    assert exchange.error is not None
    assert exchange.error.startswith("upstream: ConnectionError")


def test_a_reply_body_over_the_bound_is_cut_and_the_harness_answered() -> None:
    release = threading.Event()
    piece = b"x" * (1 << 20)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    script = [head % (1 << 40), piece * 65, release, CLOSE]
    try:
        with _observed(script) as (_, observer):
            with socket.create_connection(("127.0.0.1", _port(observer)), timeout=10) as client:
                client.sendall(_CHAT)
                client.settimeout(3)
                try:
                    answer = client.recv(1 << 16)
                except TimeoutError:
                    answer = b""
                release.set()
            assert answer.startswith(b"HTTP/1.1 502 ")
            (exchange,) = observer.wait_for(1)
            assert exchange.error is not None
    finally:
        release.set()
