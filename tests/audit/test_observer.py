"""The transport observer in front of the reference endpoint: real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import contextlib
import http.client
import itertools
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from audit.demo.reference_endpoint import MODEL_ID, Behaviour, serve
from audit.observer import IDLE_KEEPALIVE_S, REDACTED, RETRY_HEADER, observe
from bundle_schema.errors import InvalidInput
from bundle_schema.models import ReasoningSerialization, TransportExchange
from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER, GONE_MID_STREAM
from tests.engines import answering_after, idle_closing
from verify._facts import request_facts


def post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(  # noqa: S310 - loopback test server
        url + "/v1/chat/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return response.status, response.read()


PROBE = {"model": MODEL_ID, "max_tokens": 1024,
         "messages": [{"role": "user", "content": "Reply with exactly: READY"}]}  # fmt: skip


def test_a_non_streaming_exchange_is_recorded_whole() -> None:
    with serve() as endpoint, observe(endpoint.url) as observer:
        observer.component = "probes"
        status, data = post(observer.url, PROBE, {"Authorization": "Bearer secret-key"})
        exchanges = observer.exchanges()
    assert status == 200
    assert json.loads(data)["choices"][0]["message"]["content"] == "READY"
    (exchange,) = exchanges
    assert (exchange.id, exchange.method, exchange.path, exchange.status) == (
        0, "POST", "/v1/chat/completions", 200
    )  # fmt: skip
    assert exchange.component == "probes"
    assert exchange.request_headers["authorization"] == REDACTED
    assert "secret-key" not in exchange.model_dump_json()
    assert exchange.request_body is not None
    assert json.loads(exchange.request_body.data) == PROBE
    assert exchange.response_body is not None
    assert json.loads(exchange.response_body.data) == json.loads(data)
    assert exchange.response_model == MODEL_ID
    assert exchange.ended is not None
    assert exchange.ended >= exchange.started
    # The record is a valid evidence document.
    TransportExchange.model_validate(exchange.model_dump(mode="json"))


def test_every_streamed_chunk_is_recorded_with_its_time() -> None:
    payload = PROBE | {"stream": True, "messages": [{"role": "user", "content": "Describe it."}]}
    with serve(Behaviour(chunk_delay=0.002)) as endpoint, observe(endpoint.url) as observer:
        _, data = post(observer.url, payload)
        (exchange,) = observer.exchanges()
    assert exchange.response_body is None
    assert "".join(chunk.data for chunk in exchange.chunks) == data.decode()
    times = [chunk.t for chunk in exchange.chunks]
    assert times == sorted(times)
    assert len(exchange.chunks) >= 3
    assert times[-1] - times[0] >= 0.002
    assert exchange.response_model == MODEL_ID


def test_a_redirect_is_recorded_and_never_followed() -> None:
    redirect = Behaviour(redirect="http://10.9.8.7/v1/chat/completions")
    with serve(redirect) as endpoint, observe(endpoint.url) as observer:
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(observer.url, PROBE)
        (exchange,) = observer.exchanges()
    refused.value.close()
    assert refused.value.code == 502
    assert (exchange.status, exchange.redirect) == (307, "http://10.9.8.7/v1/chat/completions")


def test_a_reply_from_another_model_is_recorded_as_such() -> None:
    with serve(Behaviour(served_as="other-model-7b")) as endpoint, observe(endpoint.url) as obs:
        post(obs.url, PROBE)
        (exchange,) = obs.exchanges()
    assert exchange.response_model == "other-model-7b"


@pytest.mark.parametrize(
    "endpoint", ["http://10.0.0.5:8080", "https://127.0.0.1:8443", "http://example.com"]
)
def test_an_endpoint_off_loopback_is_refused(endpoint: str) -> None:
    with pytest.raises(InvalidInput, match="not an http:// endpoint on loopback"):
        observe(endpoint).__enter__()


def test_a_dead_endpoint_is_an_error_exchange() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with observe(f"http://127.0.0.1:{port}") as observer:
        with pytest.raises(urllib.error.HTTPError) as failed:
            post(observer.url, PROBE)
        (exchange,) = observer.exchanges()
    failed.value.close()
    assert failed.value.code == 502
    assert exchange.status is None
    assert exchange.error is not None
    assert exchange.error.startswith("upstream: ConnectionRefusedError")


@contextlib.contextmanager
def _chat_sent(port: int, body: bytes) -> Iterator[socket.socket]:
    """A raw connection to the observer on ``port`` that has sent one chat request."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        yield client


def test_a_client_that_disconnects_mid_stream() -> None:
    payload = PROBE | {"stream": True, "messages": [{"role": "user", "content": "Tell me more."}]}
    body = json.dumps(payload).encode()
    slow = Behaviour(chunk_delay=0.02, verbose=True)
    with serve(slow) as endpoint, observe(endpoint.url) as observer:
        with _chat_sent(observer.port, body) as client:
            assert client.recv(4096).startswith(b"HTTP/1.1 200")
        (exchange,) = observer.wait_for(1)
    assert exchange.error == GONE_MID_STREAM
    assert exchange.chunks


@pytest.mark.parametrize("waits", [False, True], ids=["times-out", "waits"])
def test_an_answer_that_comes_after_its_client_went_says_so(waits: bool) -> None:
    """A client that times out and closes before the model answers (benchlocal-cli's httpx
    client, which may send the request again) never has the answer: the exchange is recorded
    whole, with why it never reached the harness. A client that waits has it, with no error."""
    body = json.dumps(PROBE).encode()
    with answering_after(0.4) as endpoint, observe(endpoint.url) as observer:
        with _chat_sent(observer.port, body) as client:
            if waits:
                assert client.recv(4096).startswith(b"HTTP/1.1 200")
        (exchange,) = observer.wait_for(1)
    assert exchange.status == 200
    assert exchange.response_body is not None and b'"echo"' in exchange.response_body.data.encode()
    assert exchange.error == (None if waits else GONE_BEFORE_THE_ANSWER)


def test_concurrent_requests_get_distinct_ordered_ids() -> None:
    with serve(Behaviour(chunk_delay=0.001)) as endpoint, observe(endpoint.url) as observer:
        payloads = [PROBE | {"stream": i % 2 == 0, "messages": [{"role": "user",
                    "content": f"question {i}"}]} for i in range(16)]  # fmt: skip
        threads = [threading.Thread(target=post, args=(observer.url, p)) for p in payloads]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        exchanges = observer.exchanges()
    assert [e.id for e in exchanges] == list(range(16))
    assert all(e.status == 200 for e in exchanges)
    asked = sorted(json.loads(e.request_body.data)["messages"][0]["content"]
                   for e in exchanges if e.request_body)  # fmt: skip
    assert asked == sorted(f"question {i}" for i in range(16))


def test_binary_bodies_are_kept_as_base64() -> None:
    with serve() as endpoint, observe(endpoint.url) as observer:
        request = urllib.request.Request(  # noqa: S310
            observer.url + "/v1/chat/completions", data=b"\xff\xfe\x00", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        bad.value.close()
        (exchange,) = observer.exchanges()
    assert exchange.request_body is not None
    assert exchange.request_body.encoding == "base64"
    assert base64.b64decode(exchange.request_body.data) == b"\xff\xfe\x00"
    assert exchange.status == 400


def test_an_endpoint_that_breaks_off_mid_stream() -> None:
    payload = PROBE | {"stream": True}
    with serve(Behaviour(dies_after=0)) as endpoint, observe(endpoint.url) as observer:
        with pytest.raises(http.client.IncompleteRead):
            post(observer.url, payload)
        (exchange,) = observer.wait_for(1)
    assert exchange.error == (
        "upstream broke off mid-stream: ConnectionError: the endpoint closed the connection "
        "within the chunked body"
    )
    assert len(exchange.chunks) == 1


# --- upstream connections the server closed while idle ------------------------------------------


def _raw(url: str, method: str = "POST") -> tuple[int, bytes]:
    parts = url.split(":")
    connection = http.client.HTTPConnection("127.0.0.1", int(parts[-1]), timeout=10)
    try:
        body = json.dumps({"n": 1}) if method == "POST" else None
        connection.request(method, "/v1/chat/completions" if method == "POST" else "/v1/models",
                           body, {"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_request_the_server_dropped_on_an_idle_connection_is_sent_once_more(
    method: str,
) -> None:
    # The server's idle timer fires as the next request crosses it on the kept-alive connection
    # (llama-server's 5 s keep-alive against requests 5 s apart): the request gets no answer.
    with idle_closing(idle_close=0.1) as server, observe(server.url, idle_keepalive=30) as obs:
        first = _raw(obs.url, method)
        time.sleep(0.3)
        second = _raw(obs.url, method)
        exchanges = obs.wait_for(2)
    assert (first[0], second[0]) == (200, 200)
    assert server.dropped == 1
    assert RETRY_HEADER not in exchanges[0].request_headers
    note = exchanges[1].request_headers[RETRY_HEADER]
    assert note.startswith("2; the first attempt failed before any response: ")
    assert exchanges[1].status == 200
    assert exchanges[1].error is None
    assert json.loads(second[1])["method"] == method  # what the harness got is the answer


def test_idle_connections_are_let_go_before_the_server_closes_them() -> None:
    with (
        idle_closing(idle_close=0.5) as server,
        observe(server.url, idle_keepalive=0.1) as observer,
    ):
        statuses = []
        for _ in range(3):
            statuses.append(_raw(observer.url)[0])
            time.sleep(0.25)  # idle past the observer's keep-alive, within the server's
        exchanges = observer.wait_for(3)
    assert statuses == [200, 200, 200]
    assert server.dropped == 0
    assert all(RETRY_HEADER not in e.request_headers for e in exchanges)


def test_a_server_that_closes_idle_connections_costs_no_request() -> None:
    # A server with a short keep-alive timeout, requests spaced past it: never a 502.
    with (
        idle_closing(idle_timeout=0.05) as server,
        observe(server.url, idle_keepalive=30) as observer,
    ):
        statuses = []
        for _ in range(6):
            statuses.append(_raw(observer.url)[0])
            time.sleep(0.08)
        exchanges = observer.wait_for(6)
    assert statuses == [200] * 6
    assert all(e.status == 200 and e.error is None for e in exchanges)


def test_a_connection_the_server_closed_after_its_reply_is_replaced_before_the_next_request() -> (
    None
):
    # llama-server closes its connection after every streamed reply: the next request finds a
    # connection the observer opened once the reply ended, not one opened on its own time.
    with idle_closing(close_after_reply=True) as server, observe(server.url) as observer:
        _raw(observer.url)
        time.sleep(0.2)
        sent = time.monotonic()
        _raw(observer.url)
        exchanges = observer.wait_for(2)
    (_, first), (opened, arrived) = server.seen
    assert first < opened < sent < arrived
    assert [e.status for e in exchanges] == [200, 200]
    assert all(RETRY_HEADER not in e.request_headers for e in exchanges)


def test_a_spare_connection_the_server_closed_is_not_used() -> None:
    with (
        idle_closing(close_after_reply=True, idle_timeout=0.05) as server,
        observe(server.url, idle_keepalive=30) as observer,
    ):
        _raw(observer.url)
        time.sleep(0.3)  # the spare idle past the server's keep-alive: closed
        sent = time.monotonic()
        _raw(observer.url)
        exchanges = observer.wait_for(2)
    assert sent < server.seen[1][0]  # the second request opened a connection of its own
    assert server.dropped == 0
    assert all(e.status == 200 and RETRY_HEADER not in e.request_headers for e in exchanges)


def test_no_connection_to_the_endpoint_outlives_the_observer() -> None:
    with idle_closing(close_after_reply=True) as server:
        with observe(server.url) as observer:
            _raw(observer.url)
            observer.wait_for(1)
            deadline = time.monotonic() + 5
            while server.connections < 2:  # the request's, then the spare
                assert time.monotonic() < deadline
                time.sleep(0.01)
        deadline = time.monotonic() + 5
        while server.open:
            assert time.monotonic() < deadline, "a connection to the endpoint is still open"
            time.sleep(0.01)


@contextlib.contextmanager
def _answering(answer: bytes) -> Iterator[tuple[str, list[float]]]:
    """An endpoint on loopback that reads each connection's request, sends ``answer`` and
    closes it; yields its URL and when it accepted each connection."""
    accepted: list[float] = []

    def serve(listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(time.monotonic())
            connection.recv(65536)
            connection.sendall(answer)
            connection.close()

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def test_no_spare_connection_follows_a_reply_that_broke_off() -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"
    with _answering(cut) as (url, accepted), observe(url) as observer:
        status, _ = _raw(observer.url)
        (exchange,) = observer.wait_for(1)
        time.sleep(0.3)
    assert status == 502
    assert exchange.error is not None
    assert len(accepted) == 1  # the request's own connection, and no spare after it


def test_the_default_keep_alive_is_shorter_than_the_servers() -> None:
    assert IDLE_KEEPALIVE_S < 5.0  # llama.cpp server and uvicorn close idle connections at 5 s


def test_a_request_that_fails_twice_is_one_error_exchange() -> None:
    # Every connection is dropped once idle: the retry's fresh connection is not idle, so make
    # the server drop everything instead (no listener that answers).
    with _answering(b"") as (url, _), observe(url) as observer:
        status, _ = _raw(observer.url)
        (exchange,) = observer.wait_for(1)
    assert status == 502
    assert exchange.status is None
    assert exchange.error is not None
    assert exchange.error.startswith("upstream: ")
    assert "(the second attempt, after: " in exchange.error
    assert exchange.request_headers[RETRY_HEADER].startswith("2; ")


def test_a_stream_broken_off_after_its_first_bytes_is_not_resent() -> None:
    payload = PROBE | {"stream": True}
    with serve(Behaviour(dies_after=0)) as endpoint, observe(endpoint.url) as observer:
        with contextlib.suppress(http.client.HTTPException, OSError):
            post(observer.url, payload)
        (exchange,) = observer.wait_for(1)
        assert endpoint.requests == 1
    assert RETRY_HEADER not in exchange.request_headers
    assert exchange.error is not None


# --- every completion endpoint carries the reasoning policy, or is refused ----------------------

OFF = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
COMPLETION_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/api/chat",
                    "/api/generate", "/v1/chat/completions?x=1"]  # fmt: skip


def _send(url: str, path: str, data: bytes, media: str = "application/json") -> int:
    port = int(url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, data, {"Content-Type": media})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.parametrize("path", COMPLETION_PATHS)
def test_every_completion_endpoint_is_sent_with_the_policy(path: str) -> None:
    with idle_closing() as server, observe(server.url, policy=OFF) as observer:
        status = _send(observer.url, path, b'{"model": "m", "input": "hi"}')
        (exchange,) = observer.wait_for(1)
    assert status == 200
    body = json.loads(exchange.request_body.data if exchange.request_body else "null")
    assert body == {"model": "m", "input": "hi", "chat_template_kwargs": {"enable_thinking": False}}
    facts = request_facts(exchange, OFF, wanted=False)
    assert (facts.carries, facts.conflict) == (True, None)


@pytest.mark.parametrize(
    ("data", "media"),
    [(b'["a list"]', "application/json"), (b"prompt=hi", "application/x-www-form-urlencoded"),
     (b"\xff\xfe", "application/json"), (b"", "application/json")],
)  # fmt: skip
def test_a_completion_request_that_cannot_carry_the_policy_is_refused(
    data: bytes, media: str
) -> None:
    with idle_closing() as server, observe(server.url, policy=OFF) as observer:
        status = _send(observer.url, "/v1/completions", data, media)
        (exchange,) = observer.wait_for(1)
        assert server.requests == 0  # never sent to the model
    assert status == 400
    assert exchange.status is None
    assert exchange.error is not None
    assert exchange.error.startswith(
        "refused by the observer: a completion request (/v1/completions) whose body is not a "
        "JSON object"
    )
    assert not request_facts(exchange, OFF, wanted=False).carries


def test_a_request_to_another_path_is_forwarded_as_it_came() -> None:
    with idle_closing() as server, observe(server.url, policy=OFF) as observer:
        status = _send(observer.url, "/tokenize", b'{"content": "hi"}')
        (exchange,) = observer.wait_for(1)
    assert status == 200
    assert exchange.request_body is not None
    assert json.loads(exchange.request_body.data) == {"content": "hi"}


# --- how a forwarded request reaches the endpoint ------------------------------------------------


CLOSE = "close"
"""In a scripted reply: the endpoint closes the connection here."""


class _Arrived(NamedTuple):
    """A request as it reached a raw endpoint."""

    headers: dict[str, str]
    """By name, lowercased."""
    body: bytes
    first: bytes
    """The bytes of the first ``recv`` of it."""
    raw: bytes
    """Head and body, as they came."""
    connection: int
    """The number of the connection it came on, from 0."""


class _Scripted:
    """A raw HTTP/1.1 endpoint on 127.0.0.1 that keeps every request as it arrived
    (:class:`_Arrived`) and answers the n-th with the n-th reply of its script, then with
    ``then``: piece by piece as written (bytes; :data:`CLOSE`; a ``threading.Event`` to wait
    for before the next piece). It answers ``100 Continue`` to an expectation, as uvicorn and
    http.server do."""

    def __init__(self, *replies: list[Any], then: list[Any] | None = None) -> None:
        self.replies = list(replies)
        self.then = then
        self.requests: list[_Arrived] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        for number in itertools.count():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(
                target=self._connection, args=(connection, number), daemon=True
            ).start()

    def _connection(self, connection: socket.socket, number: int) -> None:
        with connection:
            pending = b""
            while True:
                first = pending or connection.recv(1 << 20)
                data = first
                while b"\r\n\r\n" not in data:
                    more = connection.recv(1 << 20)
                    if not more:
                        return
                    data += more
                head, _, rest = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")[1:]
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)
                }
                if headers.get("expect", "").lower() == "100-continue":
                    connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                length = int(headers.get("content-length", 0))
                while len(rest) < length:
                    more = connection.recv(1 << 20)
                    if not more:
                        return
                    rest += more
                body, pending = rest[:length], rest[length:]
                arrived = _Arrived(headers, body, first, head + b"\r\n\r\n" + body, number)
                with self._lock:
                    self.requests.append(arrived)
                    n = len(self.requests) - 1
                    reply = self.replies[n] if n < len(self.replies) else self.then
                assert reply is not None, f"request {n} is past the script"
                for piece in reply:
                    if piece == CLOSE:
                        connection.shutdown(socket.SHUT_RDWR)
                        return
                    if isinstance(piece, threading.Event):
                        assert piece.wait(10)
                        continue
                    try:
                        connection.sendall(piece)
                    except (BrokenPipeError, ConnectionResetError):
                        return  # the observer closed it (a reply it cut): the script ends
                    time.sleep(0.005)  # each piece a segment of its own

    def close(self) -> None:
        self.listener.close()


@contextlib.contextmanager
def _scripted(*replies: list[Any], then: list[Any] | None = None) -> Any:
    endpoint = _Scripted(*replies, then=then)
    try:
        yield endpoint
    finally:
        endpoint.close()


def _wire() -> Any:
    """An endpoint that answers every request with a JSON reply and sets a cookie."""
    reply = b'{"model": "m"}'
    return _scripted(
        then=[
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Set-Cookie: session=from-the-endpoint\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(reply), reply)
        ]
    )


def _upstream_writes(monkeypatch: pytest.MonkeyPatch, port: int) -> list[int]:
    """The size of every write the observer hands its transport to the endpoint at ``port``."""
    import asyncio.selector_events as events  # noqa: PLC0415 - the transport the loop uses

    sizes: list[int] = []
    transport = events._SelectorSocketTransport
    write, writelines = transport.write, transport.writelines

    def to_port(self: Any) -> bool:
        peer = self.get_extra_info("peername")
        return bool(peer) and peer[1] == port

    def counted_write(self: Any, data: Any) -> None:
        if to_port(self):
            sizes.append(len(data))
        write(self, data)

    def counted_writelines(self: Any, chunks: Any) -> None:
        chunks = list(chunks)
        if to_port(self):
            sizes.append(sum(len(c) for c in chunks))
        writelines(self, chunks)

    monkeypatch.setattr(transport, "write", counted_write)
    monkeypatch.setattr(transport, "writelines", counted_writelines)
    return sizes


@pytest.mark.parametrize("expect", [False, True])
def test_a_forwarded_body_goes_in_one_write_with_its_length(
    monkeypatch: pytest.MonkeyPatch, expect: bool
) -> None:
    # The head and the body in one write, with a Content-Length: never a body sent after the
    # head (a second segment the endpoint must wait for), chunked, or held back for the
    # endpoint's 100 Continue (an extra round trip per request). A harness that asked for a
    # 100-continue got it from the observer, which has the whole body before it forwards.
    body = json.dumps(PROBE).encode()
    with _wire() as wire, observe(wire.url) as observer:
        writes = _upstream_writes(monkeypatch, int(wire.url.rsplit(":", 1)[1]))
        port = int(observer.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            head = (
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                + ("Expect: 100-continue\r\n" if expect else "")
                + "\r\n"
            ).encode()
            client.sendall(head)
            if expect:
                assert client.recv(1024).startswith(b"HTTP/1.1 100 Continue")
            client.sendall(body)
            reply = client.recv(65536)
        (exchange,) = observer.wait_for(1)
    assert reply.startswith(b"HTTP/1.1 200")
    ((headers, received, first, _, _),) = wire.requests
    assert received == body
    assert headers["content-length"] == str(len(body))
    assert "transfer-encoding" not in headers
    assert "expect" not in headers
    assert first.endswith(body)  # the whole request was there at the endpoint's first read
    assert len(writes) == 1
    assert exchange.request_body is not None
    assert exchange.request_body.data == body.decode()


def test_a_chunked_request_is_forwarded_with_its_length() -> None:
    body = json.dumps(PROBE).encode()
    with _wire() as wire, observe(wire.url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/v1/chat/completions", iter([body[:10], body[10:]]),
                           {"Content-Type": "application/json"}, encode_chunked=True)  # fmt: skip
        assert connection.getresponse().status == 200
        connection.close()
        observer.wait_for(1)
    ((headers, received, *_),) = wire.requests
    assert received == body
    assert headers["content-length"] == str(len(body))
    assert "transfer-encoding" not in headers


def test_a_cookie_the_endpoint_set_is_not_sent_on_later_requests() -> None:
    # What is forwarded is what the harness sent: the observer keeps no cookies of its own (a
    # cookie jar keeps none from an IP address, so the endpoint is named by its host name).
    with _wire() as wire, observe(wire.url.replace("127.0.0.1", "localhost")) as observer:
        for _ in range(2):
            assert post(observer.url, PROBE)[0] == 200
        observer.wait_for(2)
    assert [arrived.headers.get("cookie") for arrived in wire.requests] == [None, None]


# --- the endpoint's side, byte for byte (the observer's own HTTP/1.1 client, ADR 0028) ----------


def _ask(observer_url: str, method: str = "POST", body: bytes | None = b'{"n": 1}') -> Any:
    """One request through the observer: (status, header fields, body or how it was cut)."""
    port = int(observer_url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, "/v1/chat/completions", body,
                           {"Content-Type": "application/json"} if body else {})  # fmt: skip
        response = connection.getresponse()
        try:
            data: bytes | str = response.read()
        except http.client.IncompleteRead as cut:
            data = f"cut after {cut.partial!r}"
        fields = [(k, v) for k, v in response.getheaders() if k.lower() not in ("date", "server")]
        return response.status, fields, data
    finally:
        connection.close()


def _chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


JSON = b'{"model": "m", "choices": []}'
_OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
REPLIES: dict[str, list[Any]] = {
    "content-length": [_OK + b"Content-Length: %d\r\n\r\n" % len(JSON) + JSON],
    "content-length, in pieces": [_OK[:9], _OK[9:] + b"Content-Length: %d\r\n" % len(JSON),
                                  b"\r\n" + JSON[:5], JSON[5:]],
    "chunked": [_OK + b"Transfer-Encoding: chunked\r\n\r\n", _chunked(JSON[:7], JSON[7:])],
    "chunked, an extension and a trailer": [
        _OK + b"Transfer-Encoding: chunked\r\n\r\n"
        + b"%x;name=value\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(JSON), JSON)],
    "until the connection closes": [_OK + b"Connection: close\r\n\r\n" + JSON[:9], JSON[9:],
                                    CLOSE],
    "HTTP/1.0": [b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + JSON, CLOSE],
    "an interim 103 first": [b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
                             _OK + b"Content-Length: %d\r\n\r\n" % len(JSON) + JSON],
}  # fmt: skip


@pytest.mark.parametrize("framing", REPLIES)
def test_a_reply_is_recorded_and_passed_on_as_it_came(framing: str) -> None:
    with _scripted(REPLIES[framing]) as endpoint, observe(endpoint.url) as observer:
        status, fields, data = _ask(observer.url)
        (exchange,) = observer.wait_for(1)
    assert (status, data) == (200, JSON)
    assert ("Content-Type", "application/json") in fields
    assert exchange.status == 200
    assert exchange.response_headers == {"content-type": "application/json"}
    assert exchange.response_body is not None
    assert exchange.response_body.data == JSON.decode()
    assert exchange.response_model == "m"
    assert exchange.error is None


def test_a_streamed_reply_is_relayed_chunk_by_chunk_as_it_arrives() -> None:
    # The endpoint sends the second event only once the harness has read the first through
    # the observer: a relay that held a chunk back would never see the second.
    events = [b'data: {"model": "m"}\n\ndata: {"content": "caf\xc3', b'\xa9"}\n\n',
              b"data: [DONE]\n\n"]  # fmt: skip
    read = [threading.Event(), threading.Event()]
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    frames = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    script = [head, frames[0], read[0], frames[1], read[1], frames[2], b"0\r\n\r\n"]
    with _scripted(script) as endpoint, observe(endpoint.url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/v1/chat/completions", b"{}")
        response = connection.getresponse()
        received = b""
        for i in range(len(events)):
            while len(received) < sum(map(len, events[: i + 1])):
                received += response.read1(65536)
            if i < 2:
                read[i].set()
        assert response.read() == b""
        connection.close()
        (exchange,) = observer.wait_for(1)
    assert received == b"".join(events)
    # one chunk per piece that arrived, the UTF-8 character split across two kept whole
    assert [c.data for c in exchange.chunks] == [
        'data: {"model": "m"}\n\ndata: {"content": "caf',
        'é"}\n\n',
        "data: [DONE]\n\n",
    ]
    times = [c.t for c in exchange.chunks]
    assert times == sorted(times)
    assert exchange.error is None
    assert exchange.response_model == "m"


PARTIAL: dict[str, tuple[list[Any], int | None, str]] = {
    "a status line cut short": (
        [b"HTTP/1.1 200 OK\r\nContent-Ty", CLOSE], None,
        "upstream: ConnectionError: the endpoint closed the connection after 27 bytes of a "
        "response head"),
    "a body cut short of its length": (
        [_OK + b"Content-Length: 100\r\n\r\n" + JSON, CLOSE], 200,
        "upstream: ConnectionError: the endpoint closed the connection with 71 bytes of the body "
        "still to come"),
    "a chunked body cut within a chunk": (
        [_OK + b"Transfer-Encoding: chunked\r\n\r\n", b"40\r\n" + JSON, CLOSE], 200,
        "upstream: ConnectionError: the endpoint closed the connection within the chunked body"),
    "no HTTP status line": (
        [b"SSH-2.0-OpenSSH_9.2\r\n\r\n", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent no HTTP/1.x status line: "
        "'SSH-2.0-OpenSSH_9.2'"),
    "a bad Content-Length": (
        [_OK + b"Content-Length: 1x\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent a bad Content-Length: '1x'"),
    "a bad chunk size": (
        [_OK + b"Transfer-Encoding: chunked\r\n\r\n", b"zz\r\n{}\r\n0\r\n\r\n", CLOSE], 200,
        "upstream: ConnectionError: the endpoint sent a bad chunk size: b'zz'"),
    # a head the harness's own parser refuses (h11, httpx's) is not passed on as a reply
    "a NUL in a header value": (
        [_OK + b"X-Request-Id: a\x00b\r\nContent-Length: 2\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent a malformed header line: "
        "'X-Request-Id: a\\x00b'"),
    "a header hidden behind a bare LF": (
        [_OK + b"X-Junk: a\nContent-Type: text/plain; charset=utf-16\r\nContent-Length: 2"
               b"\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent a malformed header line: "
        "'X-Junk: a\\nContent-Type: text/plain; charset=utf-16'"),
    "a space in a header name": (
        [_OK + b"X Id: 1\r\nContent-Length: 2\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent a malformed header line: 'X Id: 1'"),
    "a control byte in the reason phrase": (
        [b"HTTP/1.1 200 O\x0bK\r\nContent-Length: 2\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent no HTTP/1.x status line: "
        "'HTTP/1.1 200 O\\x0bK'"),
    "a Content-Type that is not ASCII": (
        [_OK + b"Content-Type: text/event-stream; charset=\xc2\xa0utf-16\r\n"
               b"Content-Length: 2\r\n\r\n{}", CLOSE], None,
        "upstream: ConnectionError: the endpoint sent a Content-Type that is not ASCII: "
        "'text/event-stream; charset=\\xa0utf-16'"),
}  # fmt: skip


@pytest.mark.parametrize("case", PARTIAL)
def test_a_reply_cut_short_or_not_http_is_an_error_never_resent(case: str) -> None:
    # Some bytes of a reply came: the endpoint saw the request, so it is not sent again.
    script, status, error = PARTIAL[case]
    with _scripted(script, script) as endpoint, observe(endpoint.url) as observer:
        answer = _ask(observer.url)
        (exchange,) = observer.wait_for(1)
        assert len(endpoint.requests) == 1
    assert answer[0] == 502
    assert (exchange.status, exchange.error) == (status, error)
    assert RETRY_HEADER not in exchange.request_headers
    assert exchange.response_body is None


def test_a_stream_cut_within_a_chunk_is_cut_for_the_harness_too() -> None:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    event = b'data: {"model": "m"}\n\n'
    script = [head, b"%x\r\n%s\r\n" % (len(event), event), b"40\r\ndata: {", CLOSE]
    with _scripted(script) as endpoint, observe(endpoint.url) as observer:
        status, _, data = _ask(observer.url)
        (exchange,) = observer.wait_for(1)
    assert status == 200
    assert data == f"cut after {event + b'data: {'!r}"
    assert "".join(c.data for c in exchange.chunks) == (event + b"data: {").decode()
    assert exchange.error == (
        "upstream broke off mid-stream: ConnectionError: the endpoint closed the connection "
        "within the chunked body"
    )


def test_a_large_body_goes_each_way_whole() -> None:
    # 12 MiB of UTF-8: many times what the observer buffers before it pauses reading
    big = json.dumps({"model": "m", "text": "é" * (6 << 20)}, ensure_ascii=False).encode()
    replies = [
        [_OK + b"Content-Length: %d\r\n\r\n" % len(big) + big],
        [_OK + b"Transfer-Encoding: chunked\r\n\r\n", _chunked(big[: 5 << 20], big[5 << 20 :])],
    ]
    with _scripted(*replies) as endpoint, observe(endpoint.url) as observer:
        answers = [_ask(observer.url, body=big) for _ in replies]
        exchanges = observer.wait_for(2)
    assert [a[2] == big for a in answers] == [True, True]
    for arrived, exchange in zip(endpoint.requests, exchanges, strict=True):
        assert arrived.raw.endswith(b"\r\nContent-Length: %d\r\n\r\n" % len(big) + big)
        assert exchange.request_body is not None
        assert exchange.request_body.data == big.decode()
        assert exchange.response_body is not None
        assert exchange.response_body.data == big.decode()


def _raw_exchange(request: bytes, reply: bytes) -> tuple[bytes, bytes, TransportExchange]:
    """A raw request through the observer to an endpoint that answers with a raw reply: what
    the endpoint received, what the harness received, and the record."""
    with _scripted([reply]) as endpoint, observe(endpoint.url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(request)
            answer = client.recv(65536)
        (exchange,) = observer.wait_for(1)
    (arrived,) = endpoint.requests
    return arrived.raw, answer, exchange


def test_repeated_header_names_keep_the_last_as_the_record_does() -> None:
    sent, answer, exchange = _raw_exchange(
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAccept: first/1\r\nX-Tag: a\r\n"
        b"accept: second/2\r\nx-tag: b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-type: application/json\r\n"
        b"X-Request-Id: one\r\nx-request-id: two\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
        b"Content-Length: 2\r\n\r\n{}",
    )
    assert b"\r\naccept: second/2\r\nx-tag: b\r\n" in sent
    assert b"first/1" not in sent
    assert b"X-Tag: a" not in sent
    assert exchange.request_headers["accept"] == "second/2"
    assert exchange.response_headers == {"content-type": "application/json", "x-request-id": "two"}
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"content-type:") == head.count(b"x-request-id:") == 1
    assert b"content-type: application/json" in head
    assert b"x-request-id: two" in head
    assert b"set-cookie: b=2" in head
    assert b"a=1" not in head


def test_header_bytes_that_are_not_ascii_are_recorded_and_passed_on() -> None:
    # UTF-8 is recorded as the text it is; a byte that is not UTF-8 as \xhh, since no JSON
    # string holds the byte itself (aiohttp's parser had kept it as a lone surrogate, and the
    # record could not be made).
    sent, answer, exchange = _raw_exchange(
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\nUser-Agent: h\xe9/1\r\nAccept: caf\xc3\xa9\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: caf\xc3\xa9\r\n"
        b"OpenAI-Model: \xff\xferaw\r\nContent-Length: 2\r\n\r\n{}",
    )
    TransportExchange.model_validate_json(exchange.model_dump_json())  # a valid document
    assert b"\r\nUser-Agent: h\xe9/1\r\nAccept: caf\xc3\xa9\r\n" in sent  # forwarded as it came
    assert exchange.request_headers["user-agent"] == "h\\xe9/1"
    assert exchange.request_headers["accept"] == "café"
    assert exchange.response_headers["x-request-id"] == "café"
    assert exchange.response_headers["openai-model"] == "\\xff\\xferaw"
    assert b"\r\nX-Request-Id: caf\xc3\xa9\r\n" in answer


def test_the_endpoint_receives_the_request_as_recorded_and_nothing_else() -> None:
    # No header the harness did not send (aiohttp's client added Accept, User-Agent and a
    # Content-Type), and the path as recorded (it had normalised %7E and dot segments).
    ok = [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]
    with _scripted(ok, ok, ok) as endpoint, observe(endpoint.url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        host = endpoint.url.removeprefix("http://").encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            for request in (
                b"GET /v1/models?x=%7E HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n"
                b"Accept-Encoding: gzip\r\nTE: trailers\r\n\r\n",
                b"PUT /a/./b HTTP/1.1\r\nHost: h\r\nCookie: k=v\r\nContent-Length: 1\r\n\r\nx",
                b"POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
            ):
                client.sendall(request)
                assert client.recv(65536).startswith(b"HTTP/1.1 200 OK")
        exchanges = observer.wait_for(3)
    assert [arrived.raw for arrived in endpoint.requests] == [
        b"GET /v1/models?x=%7E HTTP/1.1\r\nHost: " + host + b"\r\n"
        b"Accept-Encoding: identity\r\n\r\n",
        b"PUT /a/./b HTTP/1.1\r\nHost: " + host + b"\r\nCookie: k=v\r\n"
        b"Accept-Encoding: identity\r\nContent-Length: 1\r\n\r\nx",
        b"POST /v1/completions HTTP/1.1\r\nHost: " + host + b"\r\n"
        b"Accept-Encoding: identity\r\nContent-Length: 0\r\n\r\n",
    ]
    assert [e.path for e in exchanges] == ["/v1/models?x=%7E", "/a/./b", "/v1/completions"]
    assert {arrived.connection for arrived in endpoint.requests} == {0}  # one kept alive


def test_a_head_request_reads_no_body_and_keeps_the_connection() -> None:
    head = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n"]
    ok = [_OK + b"Content-Length: %d\r\n\r\n" % len(JSON) + JSON]
    with _scripted(head, ok) as endpoint, observe(endpoint.url) as observer:
        first = _ask(observer.url, "HEAD", None)
        second = _ask(observer.url, "GET", None)
        observer.wait_for(2)
    assert (first[0], first[2], second[2]) == (200, b"", JSON)
    assert [arrived.connection for arrived in endpoint.requests] == [0, 0]


def test_a_connection_that_sent_more_than_its_reply_is_not_used_again() -> None:
    # Bytes after a reply (here a server's 408 before it closes an idle connection) are no
    # answer to the next request: that goes on a new connection.
    ok = _OK + b"Content-Length: %d\r\n\r\n" % len(JSON) + JSON
    late = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"
    with _scripted([ok, late], [ok]) as endpoint, observe(endpoint.url) as observer:
        answers = [_ask(observer.url)[:3:2]]
        time.sleep(0.1)  # the 408 arrives while the connection is idle
        answers.append(_ask(observer.url)[:3:2])
        exchanges = observer.wait_for(2)
    assert answers == [(200, JSON), (200, JSON)]
    assert [arrived.connection for arrived in endpoint.requests] == [0, 1]
    assert [e.status for e in exchanges] == [200, 200]


def test_a_harness_that_closes_once_it_has_the_last_event_is_no_error() -> None:
    # SSE clients (Spark Bench's among them) close the connection once they have read
    # "data: [DONE]", before the chunked stream's terminating chunk: the harness has every
    # chunk of the reply, so the record shows no error. The endpoint holds its own terminator
    # back until the harness has gone, so the harness is always gone first.
    gone = threading.Event()
    event = b"data: [DONE]\n\n"
    reply = [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(event), event),
        gone,
        b"0\r\n\r\n",
    ]
    request = json.dumps({**PROBE, "stream": True}).encode()
    with _scripted(reply) as endpoint, observe(endpoint.url) as observer:
        port = int(observer.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(request), request)
            )
            received = b""
            while b"[DONE]" not in received:
                more = client.recv(65536)
                assert more, received
                received += more
        gone.set()
        (exchange,) = observer.wait_for(1)
    assert endpoint.requests
    assert (exchange.status, exchange.error) == (200, None)
    assert "".join(c.data for c in exchange.chunks) == event.decode()
