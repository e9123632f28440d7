"""A real HTTP server on 127.0.0.1 that serves a directory's files with byte ranges (RFC 9110:
``Range: bytes=A-B`` answered 206 with ``Content-Range``, 416 past the end, ``ETag`` and
``Last-Modified`` from the file's state, ``If-Match`` honoured), for the tests of bundles by URL.

It counts every request and the bytes of every body it sends, and can be told to lie
(:attr:`RangeServer.lie`, one of :data:`LIES`): a wrong total size or start, a short body, a
Content-Length longer than its body, a changed ETag from the second request on (with ``If-Match``
honoured or ignored), no range support, a redirect elsewhere or on the same origin, a
``Content-Encoding``, or, answering every check as for the same object, other bytes for a range
it sent before (a byte flipped when it is sent again, or only from its third sending on).
Threaded (one thread per connection), stopped by its context manager.
"""

from __future__ import annotations

import email.utils
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
LIES = (
    "none",
    "no-ranges",
    "bigger-total",
    "short-body",
    "long-length",
    "etag-changes",
    "etag-changes-ignoring-if-match",
    "redirect-elsewhere",
    "redirect-here",
    "wrong-start",
    "gzip-encoded",
    "other-bytes-again",
)


@dataclass
class Request:
    """One request the server answered: its path, Range header, status and body bytes sent."""

    path: str
    range: str | None
    status: int
    sent: int


@dataclass
class RangeServer:
    """The running server: its root URL, what it was asked, and how it lies."""

    root: Path
    url: str = ""
    lie: str = "none"
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    served: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """The byte ranges sent of each path since the last :meth:`reset`."""
    resent: int = 0
    """Requests since the last :meth:`reset` answered with bytes sent before."""
    flip_at: int | None = None
    """The offset whose byte ``other-bytes-again`` flips when it is sent again (None: the
    first byte sent again)."""
    flip_after: int = 1
    """How many times ``other-bytes-again`` sends that byte as it is before it flips it."""
    flip_to: int = 0xFF
    """What the flipped byte is XORed with (0x01 keeps a digit a digit)."""

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.served.clear()
            self.resent = 0

    @property
    def sent(self) -> int:
        """Bytes of response bodies sent since the last :meth:`reset`."""
        with self.lock:
            return sum(r.sent for r in self.requests)


def _handler(server: RangeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()  # no Nagle: headers and body written apart would wait 40 ms
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: requests are recorded in :attr:`RangeServer.requests`."""

        def _record(self, status: int, sent: int) -> None:
            with server.lock:
                server.requests.append(Request(self.path, self.headers.get("Range"), status, sent))
                count = len(server.requests)
            self._count = count

        def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self._record(status, len(body) if self.command != "HEAD" else 0)

        def _send_short(self, headers: dict[str, str], body: bytes, *, half: bool) -> None:
            """A 206 whose body is shorter than its Content-Length (half of it, or all of it
            under a length 10 bytes longer); then the connection is closed."""
            sent = body[: len(body) // 2] if half else body
            declared = len(body) if half else len(body) + 10
            self.send_response(206)
            for name, value in (headers | {"Content-Length": str(declared)}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(sent)
            self._record(206, len(sent))
            self.close_connection = True

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:  # noqa: PLR0911 - one answer per lie
            lie = server.lie
            relative = unquote(urlsplit(self.path).path).lstrip("/")
            if lie == "redirect-here":
                if not relative.startswith("moved/"):
                    self._send(307, {"Location": "/moved/" + relative})
                    return
                relative = relative.removeprefix("moved/")
            target = (server.root / relative).resolve()
            if not target.is_relative_to(server.root.resolve()) or not target.is_file():
                self._send(404, {}, b"not found")
                return
            with server.lock:
                number = len(server.requests) + 1
            if lie == "redirect-elsewhere":
                self._send(302, {"Location": "http://127.0.0.2:9/elsewhere.tar"})
                return
            status = target.stat()
            etag = f'"{status.st_ino:x}-{status.st_size:x}-{status.st_mtime_ns:x}"'
            if lie.startswith("etag-changes") and number > 1:
                etag = f'"changed-{number}"'
            modified = email.utils.formatdate(status.st_mtime, usegmt=True)
            headers = {"ETag": etag, "Last-Modified": modified, "Accept-Ranges": "bytes"}
            wanted = self.headers.get("If-Match")
            if wanted is not None and wanted != etag and lie != "etag-changes-ignoring-if-match":
                self._send(412, headers, b"precondition failed")
                return
            size = status.st_size
            match = _RANGE.fullmatch(self.headers.get("Range", ""))
            if match is None or lie == "no-ranges":
                self._send(200, headers, target.read_bytes())
                return
            start = int(match.group(1))
            end = min(int(match.group(2)) + 1 if match.group(2) else size, size)
            if start >= size:
                self._send(416, headers | {"Content-Range": f"bytes */{size}"})
                return
            with target.open("rb") as file:
                file.seek(start)
                body = file.read(end - start)
            with server.lock:
                before = server.served.setdefault(relative, [])
                again = [(max(a, start), min(b, end)) for a, b in before if a < end and start < b]
                before.append((start, end))
                server.resent += bool(again)
            flip = server.flip_at if server.flip_at is not None else min(again, default=(0, 0))[0]
            sent = sum(a <= flip < b for a, b in before[:-1])
            if lie == "other-bytes-again" and start <= flip < end and sent >= server.flip_after:
                at = flip - start
                body = body[:at] + bytes([body[at] ^ server.flip_to]) + body[at + 1 :]
            total = size + 4096 if lie == "bigger-total" else size
            low = start + 1 if lie == "wrong-start" and start > 0 else start
            headers["Content-Range"] = f"bytes {low}-{end - 1}/{total}"
            if lie == "gzip-encoded" and number > 1:
                headers["Content-Encoding"] = "gzip"
            if lie in ("short-body", "long-length") and number > 1:
                self._send_short(headers, body, half=lie == "short-body")
                return
            self._send(206, headers, body)

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stops reading (as the reader does on a response it refuses) is not an
        error of the server; anything else is printed, as the base class does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def listening(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[str]:
    """``handler`` serving on a free port of 127.0.0.1, one thread a connection, until the
    block ends; yields the server's root URL."""
    httpd = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@contextmanager
def serve(root: Path) -> Iterator[RangeServer]:
    """Serve ``root`` on a free port of 127.0.0.1 until the block ends."""
    state = RangeServer(root)
    with listening(_handler(state), "range-server") as state.url:
        yield state


def url_of(server: RangeServer, path: Path) -> str:
    """The URL at which ``server`` serves ``path`` (a file under its root)."""
    return f"{server.url}/{os.path.relpath(path, server.root)}"
