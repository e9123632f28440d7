"""The transport observer in front of the reference endpoint: real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from audit.observer import IDLE_KEEPALIVE_S, REDACTED, RETRY_HEADER, observe
from audit.reference_endpoint import MODEL_ID, Behaviour, serve
from bundle_schema.errors import InvalidInput
from bundle_schema.models import ReasoningSerialization, TransportExchange
from tests.engines import idle_closing
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
    assert exchange.error.startswith("upstream: ClientConnectorError")


def test_a_client_that_disconnects_mid_stream() -> None:
    payload = PROBE | {"stream": True, "messages": [{"role": "user", "content": "Tell me more."}]}
    body = json.dumps(payload).encode()
    slow = Behaviour(chunk_delay=0.02, verbose=True)
    with serve(slow) as endpoint, observe(endpoint.url) as observer:
        with socket.create_connection(("127.0.0.1", observer.port)) as client:
            client.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            assert client.recv(4096).startswith(b"HTTP/1.1 200")
        (exchange,) = observer.wait_for(1)
    assert exchange.error == "the client disconnected mid-stream"
    assert exchange.chunks


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
    assert exchange.error == "upstream broke off mid-stream: ClientPayloadError"
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


def test_the_default_keep_alive_is_shorter_than_the_servers() -> None:
    assert IDLE_KEEPALIVE_S < 5.0  # llama.cpp server and uvicorn close idle connections at 5 s


def test_a_request_that_fails_twice_is_one_error_exchange() -> None:
    # Every connection is dropped once idle: the retry's fresh connection is not idle, so make
    # the server drop everything instead (no listener that answers).
    def drop(listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.recv(65536)
            connection.close()

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    threading.Thread(target=drop, args=(listener,), daemon=True).start()
    try:
        with observe(f"http://127.0.0.1:{listener.getsockname()[1]}") as observer:
            status, _ = _raw(observer.url)
            (exchange,) = observer.wait_for(1)
    finally:
        listener.close()
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


class _Wire:
    """A raw HTTP/1.1 endpoint on 127.0.0.1 that keeps every request as it arrived: its head (by
    header name, lowercased), its body, and the bytes of the first ``recv`` of it. It answers
    ``100 Continue`` to an expectation, as uvicorn and http.server do, and sets a cookie."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.requests: list[tuple[dict[str, str], bytes, bytes]] = []
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(connection,), daemon=True).start()

    def _connection(self, connection: socket.socket) -> None:
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
                self.requests.append((headers, body, first))
                reply = b'{"model": "m"}'
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Set-Cookie: session=from-the-endpoint\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(reply), reply)
                )

    def close(self) -> None:
        self.listener.close()


@contextlib.contextmanager
def _wire() -> Any:
    wire = _Wire()
    try:
        yield wire
    finally:
        wire.close()


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
    ((headers, received, first),) = wire.requests
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
    ((headers, received, _),) = wire.requests
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
    assert [headers.get("cookie") for headers, _, _ in wire.requests] == [None, None]
