"""The observer's harness side, its own HTTP/1.1 server (ADR 0030): real sockets on 127.0.0.1.

What a harness sends is parsed strictly and boundedly, and what is recorded of a request is what
aiohttp's parser made of it before (the record's method, path and header fields, and the path
the reasoning policy is decided by).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp.http_parser import HttpRequestParser

from audit._http_server import MAX_BODY, MAX_FIELDS, MAX_LINE, BadRequest, _parse_head
from audit.observer import Observer, observe
from bundle_schema.models import ReasoningSerialization
from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER
from tests.engines import idle_closing

# --- what is recorded of a request is what aiohttp's parser made of it --------------------------

TARGETS = [
    b"/v1/chat/completions", b"/v1/models?x=%7E", b"/a/./b", b"/a/../b?q=1&r=2", b"/a?",
    b"/a#", b"/a?#x", b"/a?b?c#d#e", b"/a#b?c", b"/a%2Fb%7e%ff%c3%a9", b"/a+b",
    b"/x\"<>{}|\\^`", b"/v1/chat%2Fcompletions", b"/%e2%82(/%ed%a0%80/%f4%90%80%80/%c3",
    b"/caf%C3%A9/%E2%82%AC%f0%9f%98%80", b"/%00%1f%7f", b"/?", b"/",
]  # fmt: skip
FIELDS = [
    b"Host: x", b"Content-Type: application/json", b"Accept:  first/1 \t ", b"accept:second/2",
    b"X-Empty:", b"User-Agent: h\xe9/1", b"X-Utf8: caf\xc3\xa9", b"Authorization: Bearer k",
    b"X-Tab: a\tb", b"x-evidence-reference: hermes/task-1", b"Cookie: k=v",
]  # fmt: skip


def _aiohttp(head: bytes) -> Any:
    loop = asyncio.new_event_loop()
    try:
        parser = HttpRequestParser(None, loop, 2**16, max_line_size=8190, max_field_size=8190)
        messages, *_ = parser.feed_data(head + b"\r\n\r\n")
        return messages[0][0]
    finally:
        loop.close()


@pytest.mark.parametrize("target", [b"/%zz", b"/v1/chat/%u0063ompletions", b"/a%", b"/a%4"])
def test_a_percent_that_is_no_escape_is_refused(target: bytes) -> None:
    """aiohttp keeps ``/%zz`` as it is; cpp-httplib (llama.cpp's server) decodes ``%u0063`` as
    ``c``: a target a server may route otherwise than the observer reads it is refused."""
    head = b"POST " + target + b" HTTP/1.1\r\nHost: x"
    with pytest.raises(BadRequest, match="a malformed percent-escape") as refused:
        _parse_head(head, 0.0)
    assert refused.value.status == 400
    assert _parse_head(b"POST /a?q=%zz HTTP/1.1\r\nHost: x", 0.0)[0].target == "/a?q=%zz"


@pytest.mark.parametrize("target", TARGETS)
def test_the_recorded_target_and_its_path_are_aiohttp_s(target: bytes) -> None:
    head = b"POST " + target + b" HTTP/1.1\r\n" + b"\r\n".join(FIELDS)
    message = _aiohttp(head)
    request, *_ = _parse_head(head, 0.0)
    assert (request.method, request.version) == (message.method, tuple(message.version))
    assert request.target == str(message.url)  # aiohttp's path_qs
    assert request.path == message.url.path
    assert request.raw_headers == list(message.raw_headers)
    assert [(k.lower(), v) for k, v in request.headers] == [
        (k.lower(), v) for k, v in message.headers.items()
    ]


def test_an_absolute_form_target_is_recorded_as_its_path() -> None:
    for target, recorded in [
        (b"http://h:1/a/./b?x=1#f", "/a/./b?x=1#f"),
        (b"http://h/v1/models", "/v1/models"),
        (b"http://h", "/"),  # aiohttp recorded "" and forwarded a request line without a path
    ]:
        request, *_ = _parse_head(b"GET " + target + b" HTTP/1.1\r\nHost: h", 0.0)
        assert request.target == recorded
    request, *_ = _parse_head(b"OPTIONS * HTTP/1.1\r\nHost: h", 0.0)
    assert (request.target, request.path) == ("*", "*")


def test_a_request_s_framing_is_read_from_its_head() -> None:
    def framing(fields: bytes, version: bytes = b"1.1") -> tuple[int | None, bool, bool]:
        _, length, keep_alive, expect = _parse_head(
            b"POST / HTTP/" + version + b"\r\nHost: h\r\n" + fields, 0.0
        )
        return length, keep_alive, expect

    assert framing(b"Content-Length: 007") == (7, True, False)
    assert framing(b"Transfer-Encoding: Chunked") == (None, True, False)
    assert framing(b"Connection: Keep-Alive, Close") == (0, False, False)
    assert framing(b"Expect: 100-Continue") == (0, True, True)
    assert framing(b"X: y", b"1.0") == (0, False, False)
    assert framing(b"Connection: keep-alive", b"1.0") == (0, True, False)
    assert framing(b"Expect: 100-continue", b"1.0") == (0, False, False)


BAD_HEADS = {
    b"GET /x HTTP/1.1\r\nX: y": (400, "no Host header field"),
    b"GET  /x HTTP/1.1\r\nHost: h": (400, "a malformed request line"),
    b"GET /x HTTP/1.1 \r\nHost: h": (400, "a malformed request line"),
    b"GET /a\xc3\xa9 HTTP/1.1\r\nHost: h": (400, "a malformed request line"),
    b"GET /x?a b HTTP/1.1\r\nHost: h": (400, "a malformed request line"),
    b"G(T /x HTTP/1.1\r\nHost: h": (400, "a malformed request line"),
    b"GET x HTTP/1.1\r\nHost: h": (400, "the request target is not a path"),
    b"GET /x HTTP/2.0\r\nHost: h": (505, "HTTP/2.0 is not served"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nC : x": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\n: x": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nA: v\r\n x": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nA: v\x01w": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nA: v\x7fw": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nA: v\rw": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nA: v\nB: w": (400, "a malformed header field line"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nHost: i": (400, "Host came twice"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Type: a\r\ncontent-type: b": (
        400, "content-type came twice"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: +1": (400, "a bad Content-Length"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1": (400, "a bad Content-Length"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked": (
        501, "Transfer-Encoding b'gzip, chunked' is not served"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nTransfer-Encoding: chunked": (
        400, "both Content-Length and Transfer-Encoding"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: %d" % (MAX_BODY + 1): (
        413, f"a body over {MAX_BODY} bytes"),
    b"GET /" + b"x" * MAX_LINE + b" HTTP/1.1\r\nHost: h": (414, "the request line is over"),
    b"GET /x HTTP/1.1\r\nHost: h\r\nX: " + b"y" * MAX_LINE: (431, "a header field line over"),
    b"GET /x HTTP/1.1\r\nHost: h" + b"\r\nX: y" * MAX_FIELDS: (431, f"over {MAX_FIELDS} header"),
}  # fmt: skip


@pytest.mark.parametrize("head", BAD_HEADS)
def test_a_head_the_server_does_not_take_is_refused_with_its_reason(head: bytes) -> None:
    status, reason = BAD_HEADS[head]
    with pytest.raises(BadRequest) as refused:
        _parse_head(head, 0.0)
    assert (refused.value.status, refused.value.reason[: len(reason)]) == (status, reason)


# --- over sockets ------------------------------------------------------------------------------


@contextlib.contextmanager
def _observed() -> Iterator[tuple[Any, Observer]]:
    with idle_closing() as server, observe(server.url) as observer:
        yield server, observer


def _connect(observer: Observer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", observer.port), timeout=10)


def _replies(client: socket.socket, count: int = 1) -> list[tuple[bytes, bytes]]:
    """``count`` replies (head, body) read off a connection, each framed by its
    Content-Length."""
    data = b""
    replies = []
    while len(replies) < count:
        while b"\r\n\r\n" not in data:
            more = client.recv(65536)
            assert more, f"the connection closed after {data!r}"
            data += more
        head, _, data = data.partition(b"\r\n\r\n")
        length = int(head.lower().partition(b"content-length: ")[2].partition(b"\r\n")[0])
        while len(data) < length:
            more = client.recv(65536)
            assert more, "the connection closed within a body"
            data += more
        replies.append((head, data[:length]))
        data = data[length:]
    return replies


def _closed(client: socket.socket) -> bool:
    try:
        return client.recv(65536) == b""
    except ConnectionResetError:
        return True


def _request(path: str = "/v1/models", body: bytes | None = None, extra: bytes = b"") -> bytes:
    method = b"GET" if body is None else b"POST"
    framing = b"" if body is None else b"Content-Length: %d\r\n" % len(body)
    return b"%s %s HTTP/1.1\r\nHost: h\r\n%s%s\r\n%s" % (
        method,
        path.encode(),
        framing,
        extra,
        body or b"",
    )


@pytest.mark.parametrize(
    ("sent", "status"),
    [
        (b"GET /x HTTP/1.1\r\n\r\n", b"400 Bad Request"),
        (b"GET /x HTTP/1.1\nHost: h\n\n", b"400 Bad Request"),
        (b"GET /" + b"x" * MAX_LINE, b"414 Request-URI Too Long"),
        (b"GET /x HTTP/1.1\r\nHost: h\r\nX: " + b"y" * MAX_LINE + b"\r\n\r\n",
         b"431 Request Header Fields Too Large"),
        (b"GET /x HTTP/1.1\r\nHost: h\r\nX: " + b"y" * MAX_LINE,
         b"431 Request Header Fields Too Large"),
        (b"GET /x HTTP/1.1\r\nHost: h" + b"\r\nX: y" * (MAX_FIELDS + 1) + b"\r\n\r\n",
         b"431 Request Header Fields Too Large"),
        (b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1),
         b"413 Request Entity Too Large"),
        (b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n"
         % (MAX_BODY + 1), b"413 Request Entity Too Large"),
        (b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n",
         b"400 Bad Request"),
        (b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
         b"400 Bad Request"),
        (b"GET /x HTTP/3.0\r\nHost: h\r\n\r\n", b"505 HTTP Version Not Supported"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", b"400 Bad Request"),
    ],
)  # fmt: skip
def test_a_malformed_or_oversized_request_gets_a_4xx_and_nothing_is_recorded(
    sent: bytes, status: bytes
) -> None:
    with _observed() as (server, observer), _connect(observer) as client:
        client.sendall(sent)
        ((head, body),) = _replies(client)
        assert head.startswith(b"HTTP/1.1 " + status + b"\r\n")
        assert b"\r\nConnection: close" in head
        assert body.endswith(b"\n")
        assert _closed(client)
        assert observer.exchanges() == []
        assert server.requests == 0


def test_a_chunked_body_in_pieces_is_forwarded_whole_and_recorded() -> None:
    body = json.dumps({"model": "m", "text": "é" * 300}, ensure_ascii=False).encode()
    framed = b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (
        100,
        body[:100],
        len(body) - 100,
        body[100:],
    )
    head = b"POST /tokenize HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    with _observed() as (_, observer), _connect(observer) as client:
        client.sendall(head)
        for i in range(0, len(framed), 7):  # seven bytes a segment
            client.sendall(framed[i : i + 7])
            time.sleep(0.0005)
        ((reply_head, reply),) = _replies(client)
        (exchange,) = observer.wait_for(1)
    assert reply_head.startswith(b"HTTP/1.1 200 OK")
    assert json.loads(reply)["echo"] == json.loads(body)
    assert exchange.request_body is not None
    assert exchange.request_body.data == body.decode()
    assert "transfer-encoding" not in exchange.request_headers


def test_requests_on_a_kept_alive_connection_and_pipelined_ones_are_answered_in_order() -> None:
    with _observed() as (_, observer), _connect(observer) as client:
        client.sendall(_request("/one"))
        first = _replies(client)
        # three at once, the next sent before the previous is answered (pipelining)
        client.sendall(_request("/two") + _request("/three", b'{"n": 3}') + _request("/four"))
        rest = _replies(client, 3)
        exchanges = observer.wait_for(4)
    assert [json.loads(body)["path"] for _, body in first + rest] == [
        "/one", "/two", "/three", "/four"
    ]  # fmt: skip
    assert [e.path for e in exchanges] == ["/one", "/two", "/three", "/four"]
    assert exchanges[2].request_body is not None
    assert exchanges[2].request_body.data == '{"n": 3}'


def test_empty_lines_before_a_request_are_passed_over() -> None:
    with _observed() as (_, observer), _connect(observer) as client:
        client.sendall(b"\r\n\r\n" + _request())
        ((head, _),) = _replies(client)
    assert head.startswith(b"HTTP/1.1 200 OK")


def test_connection_close_and_http_1_0_close_after_the_reply() -> None:
    with _observed() as (_, observer):
        with _connect(observer) as client:
            client.sendall(_request(extra=b"Connection: close\r\n"))
            ((head, _),) = _replies(client)
            assert b"\r\nConnection: close" in head
            assert _closed(client)
        with _connect(observer) as client:
            client.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
            ((head, _),) = _replies(client)
            assert head.startswith(b"HTTP/1.0 200 OK")
            assert _closed(client)
        with _connect(observer) as client:  # an HTTP/1.0 harness that asks to keep it
            for _ in range(2):
                client.sendall(b"GET /v1/models HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                ((head, _),) = _replies(client)
                assert b"\r\nConnection: keep-alive" in head
        assert len(observer.wait_for(4)) == 4


def test_the_reply_carries_the_endpoint_s_fields_and_its_own_framing_only() -> None:
    with _observed() as (_, observer), _connect(observer) as client:
        client.sendall(_request())
        ((head, body),) = _replies(client)
    fields = [line.partition(b":")[0].lower() for line in head.split(b"\r\n")[1:]]
    assert fields.count(b"content-length") == 1
    assert b"transfer-encoding" not in fields
    assert b"connection" not in fields
    assert int(head.lower().partition(b"content-length: ")[2].partition(b"\r\n")[0]) == len(body)


def test_a_harness_that_goes_before_its_reply_still_leaves_the_exchange() -> None:
    # The request is whole: the endpoint answers it and it is recorded, with why the harness
    # never had the answer (ADR 0048, 2026-12-07); the next harness is served as before.
    with _observed() as (_, observer):
        with _connect(observer) as client:
            client.sendall(_request("/gone", b'{"n": 1}'))
        (exchange,) = observer.wait_for(1)
        assert (exchange.path, exchange.status) == ("/gone", 200)
        assert exchange.error == GONE_BEFORE_THE_ANSWER
        with _connect(observer) as client:
            client.sendall(_request())
            ((head, _),) = _replies(client)
        assert head.startswith(b"HTTP/1.1 200 OK")


def test_a_harness_that_goes_within_its_request_leaves_nothing() -> None:
    with _observed() as (server, observer):
        with _connect(observer) as client:
            client.sendall(b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345")
        with _connect(observer) as client:
            client.sendall(b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Le")
        time.sleep(0.1)
        assert observer.exchanges() == []
        assert server.requests == 0
        with _connect(observer) as client:
            client.sendall(_request())
            assert _replies(client)[0][0].startswith(b"HTTP/1.1 200 OK")


def test_a_refused_completion_request_is_answered_on_the_kept_alive_connection() -> None:
    policy = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
    with idle_closing() as server, observe(server.url, policy=policy) as observer:
        with _connect(observer) as client:
            client.sendall(_request("/v1/chat/completions", b"[1]") + _request())
            (refused, answered) = _replies(client, 2)
        exchanges = observer.wait_for(2)
    assert refused[0].startswith(b"HTTP/1.1 400 Bad Request")
    assert b"\r\nContent-Type: application/json; charset=utf-8" in refused[0]
    assert json.loads(refused[1])["error"]["message"].startswith("refused by the observer")
    assert answered[0].startswith(b"HTTP/1.1 200 OK")
    assert [e.status for e in exchanges] == [None, 200]
    assert server.requests == 1


def test_a_stream_to_an_http_1_0_harness_ends_with_the_connection() -> None:
    body = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
    from audit.demo.reference_endpoint import serve  # noqa: PLC0415 - a streaming endpoint

    with serve() as endpoint, observe(endpoint.url) as observer, _connect(observer) as client:
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        data = b""
        while more := client.recv(65536):
            data += more
        (exchange,) = observer.wait_for(1)
    head, _, streamed = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK")
    assert b"transfer-encoding" not in head.lower()
    assert streamed.endswith(b"data: [DONE]\n\n")
    assert "".join(c.data for c in exchange.chunks) == streamed.decode()


def test_the_observer_stops_with_harness_connections_still_open() -> None:
    with idle_closing() as server:
        observer = Observer(server.url).start()
        idle = _connect(observer)
        idle.sendall(_request())
        _replies(idle)  # kept alive, idle
        partial = _connect(observer)
        partial.sendall(b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n")
        time.sleep(0.05)
        begun = time.monotonic()
        observer.stop()
        assert time.monotonic() - begun < 5
        assert _closed(idle)
        assert _closed(partial)
        idle.close()
        partial.close()


def test_a_head_request_to_a_stream_gets_its_head_and_keeps_the_connection() -> None:
    from tests.audit.test_observer import _OK, JSON, _scripted  # noqa: PLC0415 - its endpoint

    stream = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    ok = _OK + b"Content-Length: %d\r\n\r\n" % len(JSON) + JSON
    with _scripted([stream + b"\r\n"], [ok]) as endpoint, observe(endpoint.url) as observer:
        with _connect(observer) as client:
            client.sendall(b"HEAD /v1/chat/completions HTTP/1.1\r\nHost: h\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                data += client.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream")
            assert b"transfer-encoding" not in head.lower()
            assert rest == b""
            client.sendall(_request())
            ((second, body),) = _replies(client)
        exchanges = observer.wait_for(2)
    assert (second.startswith(b"HTTP/1.1 200 OK"), body) == (True, JSON)
    assert [e.method for e in exchanges] == ["HEAD", "GET"]
    assert [arrived.connection for arrived in endpoint.requests] == [0, 0]
