"""The harness's side of the observer: a small HTTP/1.1 server on an asyncio protocol (ADR 0030).

It takes what a harness sends and no more: one request at a time per connection (a request
sent before the previous one was answered waits in the buffer and is answered after it, in
order), its head parsed strictly (a request line of a token, a target and ``HTTP/1.0`` or
``HTTP/1.1``; header fields ``name: value`` with CRLF line ends, no obsolete line folding, no
control characters but tab in a value), its body framed by ``Content-Length`` or chunked, and
bounded: :data:`MAX_LINE` bytes a line, :data:`MAX_FIELDS` header fields, :data:`MAX_BODY` bytes of
body. A request it cannot take is answered with a 4xx (or 501, 505) that says why, and the
connection closed; the observer's handler never sees it (as with aiohttp's server before, no
exchange is recorded for it).

What it gives the handler is what aiohttp's parser gave the observer's record: the header
fields as they came (the value's surrounding spaces and tabs taken off, decoded as UTF-8 with
a byte that is not kept as a surrogate), the target in aiohttp's ``path_qs`` form (an empty
query or fragment left out) and its path decoded as yarl decodes it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from bundle_schema.errors import InvalidInput
from verify.replies import decoded_path

__all__ = [
    "MAX_BODY",
    "MAX_FIELDS",
    "MAX_LINE",
    "HarnessConnection",
    "Harnesses",
    "Request",
    "content_length",
]

MAX_LINE = 8190
"""The longest request line, header field line or chunk size line taken, in bytes (aiohttp's
limits before)."""
MAX_FIELDS = 128
"""The most header fields (or trailer fields) a request may have."""
MAX_BODY = 64 << 20
"""The largest request body taken, in bytes."""
_log = logging.getLogger(__name__)
_MAX_HEAD = (MAX_FIELDS + 1) * (MAX_LINE + 2) + 2
_HIGH_WATER = 1 << 20
"""Bytes buffered from a harness that sent more while its request is answered before it is
read no more until the answer is done."""

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e]+) HTTP/([0-9])\.([0-9])")
FIELD_TEXT = rb"[\t\x20-\x7e\x80-\xff]*"
"""Text of a header field's value, a reason phrase or a chunk extension as HTTP/1.1 (and h11,
httpx's parser) takes it: visible bytes, spaces and tabs (no control byte: no NUL, no bare CR
or LF)."""
FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + FIELD_TEXT + rb")")
"""A header field line: a token, a colon, and its value (:data:`FIELD_TEXT`)."""
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(?:;" + FIELD_TEXT + rb")?")
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_SINGLETONS = frozenset(
    {
        b"content-length",
        b"content-location",
        b"content-range",
        b"content-type",
        b"etag",
        b"host",
        b"max-forwards",
        b"server",
        b"transfer-encoding",
        b"user-agent",
    }
)
"""Fields a request may hold once (aiohttp's parser refused a second)."""
_REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}
_BODYLESS_STATUS = frozenset({204, 304})
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_BARE_LF = re.compile(rb"(?:^|[^\r])\n")


class BadRequest(InvalidInput):
    """A request the server does not take: the status it answers and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Request:
    """A harness's request, whole."""

    __slots__ = ("body", "headers", "method", "path", "raw_headers", "started", "target", "version")

    def __init__(
        self,
        method: str,
        target: str,
        path: str,
        version: tuple[int, int],
        *,
        headers: list[tuple[str, str]],
        raw_headers: list[tuple[bytes, bytes]],
        started: float,
    ) -> None:
        self.method = method
        self.target = target
        """What is recorded and forwarded as the path: the target as it came, an empty query
        or fragment left out (aiohttp's ``path_qs``); an absolute-form target's path and query."""
        self.path = path
        """The target's path, percent-escapes decoded where they are UTF-8 (yarl's ``path``)."""
        self.version = version
        self.headers = headers
        """Every field as text (its bytes decoded as UTF-8, a byte that is not as a surrogate),
        in order."""
        self.raw_headers = raw_headers
        """Every field as its bytes came, the value's surrounding spaces and tabs taken off."""
        self.started = started
        """``time.monotonic()`` when the request's head was read."""
        self.body = b""


Handler = Callable[[Request, "HarnessConnection"], Awaitable[None]]


class Harnesses(set["HarnessConnection"]):
    """A server's open connections."""

    closed = False
    """The server has closed: a connection it still accepts is closed at once."""


def _target(method: str, raw: bytes) -> tuple[str, str]:
    """The recorded target and its decoded path.

    Raises:
        BadRequest: a target in no form a server takes.
    """
    text = raw.decode("ascii")
    if text[0] != "/":
        if text == "*" and method == "OPTIONS":
            return text, text
        authority = _ABSOLUTE.match(text)
        if authority is None:
            raise BadRequest(400, f"the request target is not a path: {text[:200]!r}")
        text = text[authority.end() :]
        if not text.startswith("/"):
            text = "/" + text
    # as aiohttp's parser split it: the path up to the first "?" (or "#" when there is none)
    path, question, query = text.partition("?")
    if question:
        query, _, fragment = query.partition("#")
    else:
        path, _, fragment = path.partition("#")
    if (bad := _MALFORMED_ESCAPE.search(path)) is not None:
        # a "%" that is no escape (IIS's "%u0063" among them, which cpp-httplib decodes): a
        # server may route it as another path than the one the observer would check
        shown = path[bad.start() : bad.start() + 6]
        raise BadRequest(400, f"a malformed percent-escape in the request target: {shown!r}")
    recorded = path + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")
    return recorded, decoded_path(path)


def _parse_head(head: bytes, started: float) -> tuple[Request, int | None, bool, bool]:
    """The request of a head (without its blank line): the request, its body's length (None:
    chunked), whether the connection stays open after it, whether the harness waits for a
    ``100 Continue``.

    Raises:
        BadRequest: a head the server does not take.
    """
    request_line, *lines = head.split(b"\r\n")
    method, target, path, version = _request_line(request_line)
    headers, raw_headers, framing = _fields(lines)
    if version == (1, 1) and b"host" not in framing:
        raise BadRequest(400, "no Host header field")
    length, keep_alive, expect = _framing(version, framing)
    request = Request(
        method, target, path, version, headers=headers, raw_headers=raw_headers, started=started
    )
    return request, length, keep_alive, expect


def _request_line(line: bytes) -> tuple[str, str, str, tuple[int, int]]:
    """The method, the recorded target, its decoded path and the HTTP version.

    Raises:
        BadRequest: a request line the server does not take.
    """
    if len(line) > MAX_LINE:
        raise BadRequest(414, f"the request line is over {MAX_LINE} bytes")
    parts = _REQUEST_LINE.fullmatch(line)
    if parts is None:
        raise BadRequest(400, f"a malformed request line: {line[:200]!r}")
    method_bytes, raw_target, major, minor = parts.groups()
    if (major, minor) not in ((b"1", b"1"), (b"1", b"0")):
        raise BadRequest(505, f"HTTP/{major.decode()}.{minor.decode()} is not served")
    method = method_bytes.decode("ascii")
    return method, *_target(method, raw_target), (1, int(minor))


_FRAMING = frozenset({b"content-length", b"transfer-encoding", b"connection", b"expect", b"host"})


def _fields(
    lines: list[bytes],
) -> tuple[list[tuple[str, str]], list[tuple[bytes, bytes]], dict[bytes, bytes]]:
    """The header fields as text and as bytes, and the values of those that frame the
    request (by lowercased name; of a repeated ``Connection`` all, comma-separated).

    Raises:
        BadRequest: a field line the server does not take, too many, or a repeated singleton.
    """
    if len(lines) > MAX_FIELDS:
        raise BadRequest(431, f"over {MAX_FIELDS} header fields")
    headers: list[tuple[str, str]] = []
    raw_headers: list[tuple[bytes, bytes]] = []
    framing: dict[bytes, bytes] = {}
    seen: set[bytes] = set()
    for line in lines:
        if len(line) > MAX_LINE:
            raise BadRequest(431, f"a header field line over {MAX_LINE} bytes")
        field = FIELD_LINE.fullmatch(line)
        if field is None:
            raise BadRequest(400, f"a malformed header field line: {line[:200]!r}")
        name, value = field.groups()
        value = value.rstrip(b" \t")
        raw_headers.append((name, value))
        headers.append((name.decode("ascii"), value.decode("utf-8", "surrogateescape")))
        key = name.lower()
        if key in _SINGLETONS:
            if key in seen:
                raise BadRequest(400, f"{name.decode()} came twice")
            seen.add(key)
        if key in _FRAMING:
            framing[key] = framing[key] + b"," + value if key in framing else value
    return headers, raw_headers, framing


def _framing(
    version: tuple[int, int], framing: dict[bytes, bytes]
) -> tuple[int | None, bool, bool]:
    """The body's length (None: chunked), whether the connection stays open after the
    request, whether the harness waits for a ``100 Continue``.

    Raises:
        BadRequest: a framing the server does not take, or a body over :data:`MAX_BODY`.
    """
    tokens = {token.strip().lower() for token in framing.get(b"connection", b"").split(b",")}
    keep_alive = b"close" not in tokens and (version == (1, 1) or b"keep-alive" in tokens)
    expect = version == (1, 1) and framing.get(b"expect", b"").lower() == b"100-continue"
    coding = framing.get(b"transfer-encoding")
    if coding is not None:
        if b"content-length" in framing:
            raise BadRequest(400, "both Content-Length and Transfer-Encoding")
        if coding.lower() != b"chunked":
            raise BadRequest(501, f"Transfer-Encoding {coding[:200]!r} is not served")
        return None, keep_alive, expect
    value = framing.get(b"content-length", b"0")
    if not value.isdigit():
        raise BadRequest(400, f"a bad Content-Length: {value[:200]!r}")
    length = content_length(value)
    if length is None or length > MAX_BODY:  # None: digits, but more than any body
        raise BadRequest(413, f"a body over {MAX_BODY} bytes")
    return length, keep_alive, expect


def content_length(value: bytes) -> int | None:
    """A ``Content-Length`` value's number as h11 and llhttp read it (ASCII digits, leading
    zeros no digits more), on either side of the observer; None for anything else, or for more
    than 20 digits past the zeros (``int()`` takes no more than 4,300)."""
    if not value.isdigit():  # bytes: ASCII digits only
        return None
    digits = value.lstrip(b"0") or b"0"
    return int(digits) if len(digits) <= 20 else None


_PEER_CLOSED = frozenset({6, 7, 8, 9, 11})
"""The TCP states (``tcp_info.tcpi_state``, Linux) of a connection whose peer has closed it:
TIME_WAIT, CLOSE (after a reset), CLOSE_WAIT, LAST_ACK, CLOSING."""


def _peer_closed(connection: Any) -> bool:
    """Whether the kernel holds a TCP connection's peer (``connection``: a transport's socket,
    or None) as having closed it (its FIN or reset received); False where it cannot say (not
    TCP, no ``TCP_INFO``)."""
    option = getattr(socket, "TCP_INFO", None)
    family = getattr(connection, "family", None)
    if option is None or family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        info = connection.getsockopt(socket.IPPROTO_TCP, option, 1)
    except OSError:
        return False
    return bool(info) and info[0] in _PEER_CLOSED


class HarnessConnection(asyncio.Protocol):
    """One harness connection: its requests read, each handed to the handler whole, and the
    handler's answer written (:meth:`respond`, or :meth:`start`, :meth:`send` and
    :meth:`finish` for a stream)."""

    def __init__(self, handler: Handler, connections: Harnesses) -> None:
        self._handler = handler
        self._connections = connections
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._request: Request | None = None
        """The request whose body is being read."""
        self._length: int | None = None
        """Bytes of its body still to come (``Content-Length``), None when chunked."""
        self._parts: list[bytes] = []
        self._taken = 0
        self._chunk = -1
        """Bytes of the current chunk still to come; -1 at a size line, -2 in the trailer."""
        self._trailers = 0
        self._keep_alive = False
        self._version = 1
        self._head_only = False
        self.task: asyncio.Task[None] | None = None
        """The handler's task of the request being answered."""
        self._paused = False
        self._writable: asyncio.Future[None] | None = None
        self._chunked_reply = False
        self._answered = False
        self.closed = False

    # --- asyncio's protocol ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # noqa: S101 - a stream connection
        self.transport = transport
        if self._connections.closed:
            transport.close()
            return
        self._connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self.task is None:
            self._advance()
        elif len(self._buffer) > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._connections.discard(self)
        waiter = self._writable
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        waiter = self._writable
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- reading requests ---

    def _advance(self) -> None:
        """Read what the buffer holds of the next request; once it is whole, answer it."""
        try:
            request = self._read()
        except BadRequest as bad:
            self._refuse(bad)
            return
        if request is None:
            return
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        self.task = asyncio.get_running_loop().create_task(self._answer(request))

    def _read(self) -> Request | None:
        buffer = self._buffer
        if self._request is None:
            start = 0
            while buffer.startswith(b"\r\n", start):  # empty lines before a request line
                start += 2
            end = buffer.find(b"\r\n\r\n", start)
            if end < 0:
                if start:
                    del buffer[:start]
                self._check_partial_head()
                return None
            head = bytes(buffer[start:end])
            del buffer[: end + 4]
            started = time.monotonic()
            request, self._length, self._keep_alive, expect = _parse_head(head, started)
            self._request = request
            self._version = request.version[1]
            self._head_only = request.method == "HEAD"
            self._parts = []
            self._taken = 0
            self._chunk = -1
            if expect and (self._length is None or self._length > len(buffer)):
                self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request = self._request
        if self._length is not None:
            if len(buffer) < self._length:
                return None
            request.body = bytes(buffer[: self._length])
            del buffer[: self._length]
        elif not self._read_chunked():
            return None
        else:
            request.body = b"".join(self._parts)
            self._parts = []
        self._request = None
        return request

    def _check_partial_head(self) -> None:
        """Refuse a head that cannot become one the server takes, before it is whole.

        Raises:
            BadRequest: a line over :data:`MAX_LINE` bytes, or one that ends without CR.
        """
        buffer = self._buffer
        if _BARE_LF.search(buffer) is not None:
            raise BadRequest(400, "a line of the request head ended without CR")
        last = buffer.rfind(b"\r\n")
        if len(buffer) - (last + 2) > MAX_LINE:
            if last < 0:
                raise BadRequest(414, f"the request line is over {MAX_LINE} bytes")
            raise BadRequest(431, f"a header field line over {MAX_LINE} bytes")
        if len(buffer) > _MAX_HEAD:
            raise BadRequest(431, f"a request head over {_MAX_HEAD} bytes")

    def _read_chunked(self) -> bool:
        """Take the chunked body's framing off what has arrived; whether it has ended.

        Raises:
            BadRequest: framing that is not chunked, or a body over :data:`MAX_BODY`.
        """
        buffer = self._buffer
        position = 0
        try:
            while True:
                if self._chunk > 0:
                    data = bytes(buffer[position : position + self._chunk])
                    if not data:
                        return False
                    self._parts.append(data)
                    position += len(data)
                    self._chunk -= len(data)
                    if self._chunk:
                        return False
                    self._chunk = 0
                    continue
                end = buffer.find(b"\r\n", position)
                if end < 0:
                    if len(buffer) - position > MAX_LINE:
                        raise BadRequest(400, "an over-long line in the chunked body")
                    return False
                line = bytes(buffer[position:end])
                position = end + 2
                if self._chunk_line(line):
                    return True
        finally:
            del buffer[:position]

    def _chunk_line(self, line: bytes) -> bool:
        """A line of the chunked framing: the end of a chunk's data, a chunk's size, a trailer
        field (the transport's, not the request's), or the end of the body (True).

        Raises:
            BadRequest: a line that is none of these, or a body over :data:`MAX_BODY`.
        """
        if self._chunk == 0:  # the end of a chunk's data
            if line:
                raise BadRequest(400, "a chunk longer than its size")
            self._chunk = -1
        elif self._chunk == -1:  # a size line
            size = _CHUNK_SIZE.fullmatch(line)
            if size is None:
                raise BadRequest(400, f"a bad chunk size: {line[:200]!r}")
            self._chunk = int(size.group(1), 16)
            self._taken += self._chunk
            if self._taken > MAX_BODY:
                raise BadRequest(413, f"a body over {MAX_BODY} bytes")
            if not self._chunk:
                self._chunk = -2
                self._trailers = 0
        elif not line:  # the end of the trailer: the body is whole
            return True
        else:
            self._trailers += 1
            if self._trailers > MAX_FIELDS or FIELD_LINE.fullmatch(line) is None:
                raise BadRequest(400, f"a bad trailer field: {line[:200]!r}")
        return False

    def _refuse(self, bad: BadRequest) -> None:
        """Answer a request that is not taken, and close the connection."""
        body = f"{bad.reason}\n".encode("utf-8", "backslashreplace")
        self._write(
            b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (bad.status, _REASONS.get(bad.status, b""), len(body), body)
        )
        self.close()

    async def _answer(self, request: Request) -> None:
        self._answered = False
        try:
            await self._handler(request, self)
        except Exception:
            _log.exception("the observer failed on %s %s", request.method, request.target[:200])
            if not self._answered:
                self._keep_alive = False
                self.respond(500, [], b"")
        finally:
            self.task = None
            if not self._keep_alive:
                self.close()
            elif not self.closed:
                self._advance()

    # --- writing the answer ---

    def _write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def _head(self, status: int, fields: list[tuple[str, str]], framing: bytes) -> bytes:
        parts = [b"HTTP/1.%d %d %s\r\n" % (self._version, status, _REASONS.get(status, b""))]
        parts += [
            b"%s: %s\r\n"
            % (name.encode("utf-8", "surrogateescape"), value.encode("utf-8", "surrogateescape"))
            for name, value in fields
        ]
        parts.append(framing)
        if not self._keep_alive:
            if self._version == 1:
                parts.append(b"Connection: close\r\n")
        elif self._version == 0:
            parts.append(b"Connection: keep-alive\r\n")
        parts.append(b"\r\n")
        return b"".join(parts)

    def respond(self, status: int, fields: list[tuple[str, str]], body: bytes) -> None:
        """The whole answer, in one write (none if the harness has gone)."""
        self._answered = True
        if self._head_only or status in _BODYLESS_STATUS or 100 <= status < 200:
            self._write(self._head(status, fields, b""))
        else:
            self._write(self._head(status, fields, b"Content-Length: %d\r\n" % len(body)) + body)

    def start(self, status: int, fields: list[tuple[str, str]]) -> None:
        """The head of an answer whose body follows piece by piece (:meth:`send`): chunked
        to an HTTP/1.1 harness, until the connection closes to an HTTP/1.0 one.

        Raises:
            ConnectionResetError: the harness has gone.
        """
        self._ensure_open()
        self._answered = True
        self._chunked_reply = self._version == 1 and not self._head_only
        if not self._chunked_reply and not self._head_only:
            self._keep_alive = False  # the body ends with the connection
        framing = b"Transfer-Encoding: chunked\r\n" if self._chunked_reply else b""
        self._write(self._head(status, fields, framing))

    async def send(self, data: bytes) -> None:
        """A piece of a streamed answer, written at once.

        Raises:
            ConnectionResetError: the harness has gone.
        """
        self._ensure_open()
        if self._head_only:
            return
        self._write(b"%x\r\n%s\r\n" % (len(data), data) if self._chunked_reply else data)
        waiter = self._writable
        if waiter is not None and not waiter.done():
            await waiter
            self._ensure_open()

    def finish(self) -> None:
        """The end of a streamed answer.

        Raises:
            ConnectionResetError: the harness has gone.
        """
        self._ensure_open()
        if self._chunked_reply:
            self._write(b"0\r\n\r\n")

    @property
    def _closing(self) -> bool:
        """Whether the event loop holds the connection closed, or closing."""
        return self.closed or self.transport is None or self.transport.is_closing()

    @property
    def gone(self) -> bool:
        """Whether a whole answer written now would not reach the harness: it closed the
        connection (or the server is closing it). The kernel's state of the connection is asked
        too, so that a close the event loop has not read yet counts: one that arrived behind
        data not yet read (reading paused) or in the same pass of the loop as the answer. Asked
        once an answer, not on each write of a stream (a system call)."""
        transport = self.transport
        if transport is None or self._closing:
            return True
        return _peer_closed(transport.get_extra_info("socket"))

    def _ensure_open(self) -> None:
        if self._closing:
            raise ConnectionResetError("the harness closed the connection")

    def close(self) -> None:
        """Close the connection once what was written has gone out."""
        self._keep_alive = False
        if self.transport is not None:
            self.transport.close()
