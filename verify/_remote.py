"""Bundles by URL (ADR 0024): a tar on a web server or in an S3-compatible store, read in place
by byte ranges, through fsspec (its HTTP file system's session for ``http://`` and ``https://``,
s3fs for ``s3://``).

This is the only place the verifier opens a socket, and only when it is given a URL. A tar at a
URL is a :class:`verify._source.RandomAccess`: the one tar parser screens it as it screens a
local file, reading headers by ranges and never a large member's data to learn the listing; its
members are then hashed and read through the same ranges. Nothing is written, cached on disk or
downloaded whole.

Every response is checked, and anything else fails closed with one line naming the URL given
and the bytes asked for (:class:`InvalidInput`, exit 2: nothing was judged):

- a range is answered with exactly the bytes asked for (status 206, its ``Content-Range`` and
  ``Content-Length`` saying so; no ``Content-Encoding``), never more: a body is read in pieces
  and abandoned one byte past what was asked;
- the object is the one first read: the size, ``ETag`` and ``Last-Modified`` of every response
  equal the first one's, and a strong ETag is sent back as ``If-Match`` (S3: ``IfMatch``, and
  the ``VersionId`` first read), so that a server that honours it refuses a changed object;
- a server that does not serve ranges is refused, unless the whole object came in the first
  response (a tar of at most :data:`FIRST_READ` bytes);
- what a range received again holds is not compared here: a blob read to be judged is hashed
  again as it is read (:meth:`verify._source.Member.proven`, ADR 0053), so a server that
  answers every check alike and serves other bytes the second time is refused there;
- redirects are followed (at most :data:`MAX_REDIRECTS`) only to the same scheme, host and port.

Connection errors, time-outs and server errors (5xx) are retried :data:`ATTEMPTS` times in all;
a lie (a wrong range, length or object) is not.

Within :func:`url_snapshots` (every ``audit`` command runs in one), a URL opened twice is the
same snapshot: its screened listing is reused, and its reads keep meeting the first response.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any, NamedTuple
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from bundle_schema.errors import InvalidInput
from pins import SECRET_NAME, URL_CREDENTIALS
from verify._source import BundleSource, Limits, scan_tar

__all__ = [
    "ATTEMPTS",
    "BLOCK",
    "FIRST_READ",
    "GAP",
    "MAX_REDIRECTS",
    "SMALL_TAR",
    "URL_CREDENTIAL_PARAMETERS",
    "RemoteTar",
    "filesystem",
    "masked_text",
    "open_url",
    "shown_url",
    "url_snapshots",
]

KiB = 1 << 10
MiB = 1 << 20
FIRST_READ = 1 * MiB
"""The first request asks for this much: a tar's first headers, or all of a small tar (one
request, as a plain GET of it; asking for 64 KiB first, then the rest, made it two)."""
BLOCK = 8 * MiB
"""The most one request asks for: a read-ahead while headers are dense, a piece of a member."""
MAX_REDIRECTS = 5
ATTEMPTS = 3
"""Tries of one request that met a connection error, a time-out or a server error (5xx)."""
_BACKOFF_S = (0.2, 0.8)
CONNECT_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 60.0
"""The longest wait for a connection, and for the next bytes of a response."""
RESPONSE_TIMEOUT_S = 60.0
"""The longest a request may take whole, beyond :data:`CONNECT_TIMEOUT_S`, for each MiB it
asks for (at least this long): at least about 17 KiB a second, so that a server sending a byte
now and then, each within :data:`READ_TIMEOUT_S`, cannot hold a read for days."""


def _deadline(start: int, end: int) -> float:
    """How long the request for bytes ``[start, end)`` may take, redirects included."""
    return CONNECT_TIMEOUT_S + RESPONSE_TIMEOUT_S * max(1.0, (end - start) / MiB)


CACHE_BYTES = 64 * MiB
"""What a tar at a URL keeps of the ranges it received, the latest first: a tar of up to this
size is read once (listing, hashing), then its records are read from memory."""
SMALL_TAR = BLOCK
"""A tar of at most this size is read in at most two requests: its first :data:`FIRST_READ`
bytes, then all the rest, each byte once (listing it by windows, then hashing it, took more, and
received the bytes between the windows twice)."""
GAP = 64 * KiB
"""A read that starts at most this far past the end of a range received asks from that end, so
that what was received stays one run: a small member's data the listing stepped over is not a
request of its own when it is hashed. (Listing never reads a large member's data: a jump over
one is larger than this.)"""
_PIECE = 1 * MiB
_SNAPSHOTS_KEPT = 2
"""Listings kept per command: a bundle's opens follow each other (rank: two, rejudge: three)."""
SCHEMES = ("http", "https", "s3")

_CONTENT_RANGE = re.compile(r"bytes (\d{1,20})-(\d{1,20})/(\d{1,20})")
_UNSATISFIED_RANGE = re.compile(r"bytes \*/(\d{1,20})")


URL_CREDENTIAL_PARAMETERS = frozenset(
    {
        # S3 Signature Version 4 (AWS and the S3-compatible stores: MinIO, R2, Ceph, B2)
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        # S3 Signature Version 2; CloudFront signed URLs
        "signature",
        "awsaccesskeyid",
        # Google Cloud Storage signed URLs, V4 and V2
        "x-goog-signature",
        "x-goog-credential",
        "googleaccessid",
        # Azure Storage shared access signature (SAS)
        "sig",
    }
)
"""Query parameters of the signed URL schemes whose value is a credential (lower case; a name
is compared percent-decoded, whitespace dropped, in any case). A parameter is masked when its
name is one of these or :data:`pins.SECRET_NAME` matches it (``token``, ``access_token``,
``api_key``, ``client_secret``, ...: the names environment records are redacted by); every
other parameter (``versionId``, ``X-Amz-Date``, ``X-Amz-Expires``, ...) is shown as given
(ADR 0037)."""

_QUERY_SEPARATOR = re.compile(r"([&;])")
_NOT_IN_A_NAME = re.compile(r"[\x00-\x20\x7f]")
_MASK = "***"


def _is_credential(name: str) -> bool:
    """Whether a query parameter of this name (as written: percent-encoded, any case) carries
    a credential."""
    plain = _NOT_IN_A_NAME.sub("", unquote_plus(name))
    return plain.lower() in URL_CREDENTIAL_PARAMETERS or SECRET_NAME.search(plain) is not None


def _masked_parameters(text: str) -> str:
    """A query (or a fragment) with the value of each credential parameter replaced by
    ``***``; everything else, separators and order included, as given. ``&`` and ``;`` both
    separate parameters (servers split on either; ``&amp;sig=`` pasted from HTML is masked)."""
    pieces = _QUERY_SEPARATOR.split(text)
    for index in range(0, len(pieces), 2):
        name, _, value = pieces[index].partition("=")
        if value and _is_credential(name):
            pieces[index] = f"{name}={_MASK}"
    return "".join(pieces)


def _masked_query(url: str) -> str:
    """The URL with its query's and fragment's credential parameters masked, split as
    :func:`urllib.parse.urlsplit` splits them (the fragment after the first ``#``, the query
    after the first ``?`` before it), so that a URL that does not split is masked too."""
    head, hash_mark, fragment = url.partition("#")
    base, question_mark, query = head.partition("?")
    return (
        base + question_mark + _masked_parameters(query) + hash_mark + _masked_parameters(fragment)
    )


def shown_url(url: str) -> str:
    """The URL as messages and reports show it (ADR 0037): as given, but a password in it
    replaced by ``***``, and a user name that stands alone too (``https://TOKEN@host``: a token
    given as the user name, as git hosts take one, is the credential; pip redacts it the same
    way), and the value of every query parameter that carries a credential too
    (``X-Amz-Signature=***``, :data:`URL_CREDENTIAL_PARAMETERS`; other parameters as given, in
    order); a URL that does not split (an unclosed IPv6 bracket) with all it holds before an
    ``@`` of its authority replaced (total: a hostile list line is named, never a
    traceback)."""
    return _masked_query(_masked_userinfo(url))


_URL_IN_TEXT = re.compile(
    r"(?i)\b(?:https?|s3|file):/+(?:[^ \t\n\r\v\f'\"<>]|[\t\r\n]+(?=[^ \t\n\r\v\f'\"<>]))+"
)
"""A URL of a scheme bundles are read from, within a message (one slash or more after the
scheme: a path that held a URL is normalised to one), through a tab or line break inside it:
URL parsers drop those (:data:`_DROPPED`), so ``https://u:se<TAB>cret@h`` holds the password
``secret``. It ends at ASCII whitespace only: ``urlsplit`` keeps any other character (``\x1f``,
a no-break space, U+3000) inside a password."""
_DROPPED = frozenset("\t\r\n")
"""What :func:`urllib.parse.urlsplit` removes from a URL before splitting it."""


def masked_text(text: str) -> str:
    """A message with every URL in it (:data:`_URL_IN_TEXT`) as :func:`shown_url` shows it: the
    text of an exception raised by a library (aiohttp puts the request's URL, query and all,
    in its errors) or a path that held a URL never prints a credential."""
    return _URL_IN_TEXT.sub(_masked_match, text)


def _masked_match(found: re.Match[str]) -> str:
    url = found.group()
    core = url.rstrip(":,;.)]")  # the message's punctuation after the URL, as given
    return shown_url(core) + url[len(core) :]


def _masked_userinfo(url: str) -> str:
    if _DROPPED.intersection(url):  # the user information as urlsplit reads it, the text kept
        return URL_CREDENTIALS.sub(r"\1***@", url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return URL_CREDENTIALS.sub(r"\1***@", url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    userinfo = "***" if password is None else f"{parts.username}:***"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))


class _Version(NamedTuple):
    """What every response must agree on: the object's size and its validators."""

    size: int
    etag: str | None
    last_modified: str | None
    version_id: str | None = None


class _Changed(InvalidInput):
    """A response that is not the range asked for, or not of the object first read (the
    message says how); never retried. Re-raised by :class:`RemoteTar` as a plain refusal."""


class _Retry(InvalidInput):
    """A request that failed in a way worth another try (the message says what failed)."""


def _range_text(start: int, end: int) -> str:
    return f"bytes {start}-{end - 1}"


def _agrees(first: _Version, got: _Version) -> str | None:
    """How a response's version differs from the first's, or None."""
    if got.size != first.size:
        return f"its size is now {got.size} bytes, was {first.size}"
    for field, label in (
        ("etag", "ETag"),
        ("last_modified", "Last-Modified"),
        ("version_id", "VersionId"),
    ):
        was, now = getattr(first, field), getattr(got, field)
        if was != now:
            return f"its {label} is now {now!r}, was {was!r}"
    return None


class _Backend:
    """One object's requests: ``fetch(start, end, first)`` returns (bytes, version)."""

    loop: asyncio.AbstractEventLoop

    async def fetch(self, start: int, end: int, first: _Version | None) -> tuple[bytes, _Version]:
        raise NotImplementedError


async def _read_body(read: Callable[[int], Awaitable[bytes]], want: int) -> bytes:
    """Read exactly ``want`` bytes of a body in pieces, one byte past it at most.

    Raises:
        _Changed: the body is shorter or longer than ``want``.
    """
    parts: list[bytes] = []
    got = 0
    while True:
        piece = await read(min(_PIECE, want + 1 - got))
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
        if got > want:
            raise _Changed(f"the server sent more than the {want} bytes asked for")
    if got < want:
        raise _Changed(f"the server sent {got} of the {want} bytes asked for (a short read)")
    return b"".join(parts)


class _Http(_Backend):
    """An object on a web server, through fsspec's HTTP file system (its aiohttp session and
    its configured request options)."""

    def __init__(self, url: str) -> None:
        import aiohttp  # noqa: PLC0415 - only for URLs

        self._aiohttp = aiohttp
        self.fs: Any = filesystem(urlsplit(url).scheme.lower())
        self.loop = self.fs.loop
        self.url = url
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
        )

    async def fetch(self, start: int, end: int, first: _Version | None) -> tuple[bytes, _Version]:
        session = await self.fs.set_session()
        options = dict(self.fs.kwargs)
        headers = dict(options.pop("headers", None) or {})
        options.pop("allow_redirects", None)
        headers["Range"] = f"bytes={start}-{end - 1}"
        headers["Accept-Encoding"] = "identity"
        if first is not None and first.etag is not None and not first.etag.startswith("W/"):
            headers["If-Match"] = first.etag
        elif first is not None and first.last_modified is not None:
            headers["If-Unmodified-Since"] = first.last_modified
        url = self.url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with session.get(
                    self.fs.encode_url(url),
                    headers=headers,
                    allow_redirects=False,
                    auto_decompress=False,
                    timeout=self._timeout,
                    **options,
                ) as response:
                    if response.status in (301, 302, 303, 307, 308):
                        url = self._redirect(url, response, first)
                        continue
                    data, version = await self._answer(response, start, end, first)
            except (TimeoutError, self._aiohttp.ClientConnectionError) as exc:
                raise _Retry(_connection_error(exc)) from None
            except self._aiohttp.ClientPayloadError as exc:
                raise _Retry(f"the response broke off: {exc}") from None
            except self._aiohttp.ClientError as exc:
                raise _Changed(f"an invalid response: {type(exc).__name__}: {exc}") from None
            self.url = url  # a redirect is followed once: later requests go where it led
            return data, version
        raise _Changed(f"more than {MAX_REDIRECTS} redirects")

    def _redirect(self, url: str, response: Any, first: _Version | None) -> str:
        location = response.headers.get("Location")
        if not location:
            raise _Changed(f"a redirect (HTTP {response.status}) without a Location")
        from yarl import URL  # noqa: PLC0415 - only for URLs

        try:
            target = str(response.url.join(URL(location)))
            was, now = urlsplit(url), urlsplit(target)
            same = (was.scheme, was.hostname, was.port) == (now.scheme, now.hostname, now.port)
        except ValueError:  # yarl and urlsplit refuse it; what it says is not repeated
            raise _Changed(
                f"a redirect (HTTP {response.status}) whose Location is not a URL"
            ) from None
        if not same:
            raise InvalidInput(
                f"redirected (HTTP {response.status}) to another origin, {shown_url(target)}; "
                "redirects are followed only to the same scheme, host and port: give that URL "
                "if it is to be read"
            )
        if first is not None:
            raise _Changed(f"redirected (HTTP {response.status}) after the first request")
        return target

    async def _answer(
        self, response: Any, start: int, end: int, first: _Version | None
    ) -> tuple[bytes, _Version]:
        status = response.status
        if status >= 500:
            raise _Retry(f"HTTP {status} {response.reason or ''}".rstrip())
        if status == 412:
            raise _Changed("the object changed since it was first read (If-Match failed)")
        if status == 404:
            raise InvalidInput("cannot open: not found (HTTP 404)")
        if status in (401, 403):
            raise InvalidInput(f"cannot open: HTTP {status} {response.reason or ''}".rstrip())
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise _Changed(
                f"the server encoded the bytes (Content-Encoding: {encoding}); the tar's own "
                "bytes are read, never a transformation of them"
            )
        etag = response.headers.get("ETag")
        modified = response.headers.get("Last-Modified")
        if status == 416 and first is None:
            unsatisfied = _UNSATISFIED_RANGE.fullmatch(response.headers.get("Content-Range", ""))
            if unsatisfied is None or int(unsatisfied.group(1)) != 0:
                raise _Changed("HTTP 416 (range not satisfiable) to the first range of the tar")
            return b"", _Version(0, etag, modified)
        if status == 200:
            return await self._whole(response, end - start, first, etag, modified)
        if status != 206:
            raise InvalidInput(f"cannot read: HTTP {status} {response.reason or ''}".rstrip())
        version = self._content_range(response, start, end, first, etag, modified)
        stop = min(end, version.size)
        length = response.headers.get("Content-Length")
        if length is not None and length.strip() != str(stop - start):
            raise _Changed(
                f"Content-Length {length.strip()!r} for the {stop - start} bytes of its "
                "Content-Range"
            )
        return await _read_body(response.content.read, stop - start), version

    def _content_range(  # noqa: PLR0917 - one response's facts
        self,
        response: Any,
        start: int,
        end: int,
        first: _Version | None,
        etag: str | None,
        modified: str | None,
    ) -> _Version:
        text = response.headers.get("Content-Range", "")
        match = _CONTENT_RANGE.fullmatch(text.strip())
        if match is None:
            raise _Changed(f"a partial response (206) whose Content-Range is {text!r}")
        low, high, total = (int(g) for g in match.groups())
        version = _Version(total, etag, modified)
        if first is not None and (problem := _agrees(first, version)) is not None:
            raise _Changed(f"the object changed since it was first read: {problem}")
        if low != start or high != min(end, total) - 1 or high < low:
            raise _Changed(f"Content-Range {text!r} answers {_range_text(start, end)}")
        return version

    async def _whole(
        self,
        response: Any,
        asked: int,
        first: _Version | None,
        etag: str | None,
        modified: str | None,
    ) -> tuple[bytes, _Version]:
        """A 200: the whole object. Taken only as the first answer, and only if it fits in
        what was asked for (a small tar); otherwise the server does not serve ranges."""
        length = response.headers.get("Content-Length")
        fits = first is None and (length is None or (length.isdigit() and int(length) <= asked))
        if not fits:
            raise InvalidInput(
                "the server does not serve byte ranges (it answered a range request with the "
                "whole object, HTTP 200); a tar at a URL is read by ranges, never downloaded "
                "whole: download it and verify the file"
            )
        parts: list[bytes] = []
        got = 0
        while piece := await response.content.read(min(_PIECE, asked + 1 - got)):
            parts.append(piece)
            got += len(piece)
            if got > asked:
                raise InvalidInput(
                    "the server does not serve byte ranges (it sent more than the range asked "
                    "for, HTTP 200): download the tar and verify the file"
                )
        data = b"".join(parts)
        if length is not None and int(length) != len(data):
            raise _Changed(f"Content-Length {length} but {len(data)} bytes")
        return data, _Version(len(data), etag, modified)


def _connection_error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return (
            f"no answer in time ({CONNECT_TIMEOUT_S:g} s to connect, {READ_TIMEOUT_S:g} s to read)"
        )
    return str(exc) or type(exc).__name__


class _S3(_Backend):
    """An object in an S3-compatible store, through s3fs: its credentials, endpoint and
    options come from the environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...,
    ``AWS_PROFILE``) and fsspec's configuration (``FSSPEC_S3_*``)."""

    def __init__(self, bucket: str, key: str) -> None:
        self.fs: Any = filesystem("s3")
        self.loop = self.fs.loop
        self.bucket, self.key = bucket, key

    async def fetch(self, start: int, end: int, first: _Version | None) -> tuple[bytes, _Version]:
        request: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self.key,
            "Range": f"bytes={start}-{end - 1}",
        }
        if first is not None and first.etag is not None:
            request["IfMatch"] = first.etag
        if first is not None and first.version_id is not None:
            request["VersionId"] = first.version_id
        try:
            response = await self.fs._call_s3("get_object", **request)
        except Exception as exc:  # s3fs and botocore raise many types
            return await self._failed(exc, first)
        body = response["Body"]
        try:
            version = self._version(response, start, end, first)
            data = await _read_body(body.read, min(end, version.size) - start)
        except (_Changed, _Retry, InvalidInput):
            raise
        except Exception as exc:  # a body that breaks off, whatever raises it
            raise _Retry(f"the response broke off: {type(exc).__name__}: {exc}") from None
        finally:
            body.close()
        return data, version

    async def _failed(self, exc: BaseException, first: _Version | None) -> tuple[bytes, _Version]:
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        code = str(getattr(cause, "response", {}).get("Error", {}).get("Code", ""))
        if code == "InvalidRange" and first is None:
            return b"", await self._empty()
        if code == "PreconditionFailed":
            raise _Changed("the object changed since it was first read (IfMatch failed)")
        if isinstance(exc, FileNotFoundError) or code in ("NoSuchKey", "NoSuchBucket", "404"):
            raise InvalidInput(f"cannot open: not found ({code or 'NoSuchKey'})")
        if isinstance(exc, PermissionError) or code in ("AccessDenied", "403"):
            raise InvalidInput(f"cannot open: access denied: {exc}")
        if "Credentials" in type(cause).__name__:
            raise InvalidInput(
                f"cannot open: {cause} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE, or FSSPEC_S3_ANON=true for a public bucket)"
            )
        raise _Retry(f"{type(cause).__name__}: {cause}")

    async def _empty(self) -> _Version:
        """An object that has no first byte: its size must be 0."""
        try:
            head = await self.fs._call_s3("head_object", Bucket=self.bucket, Key=self.key)
        except Exception as exc:  # s3fs and botocore raise many types
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        if int(head.get("ContentLength", -1)) != 0:
            raise _Changed("InvalidRange for the first range of a tar that is not empty")
        return _Version(0, head.get("ETag"), _text(head.get("LastModified")), head.get("VersionId"))

    def _version(
        self, response: dict[str, Any], start: int, end: int, first: _Version | None
    ) -> _Version:
        text = str(response.get("ContentRange", ""))
        match = _CONTENT_RANGE.fullmatch(text)
        if match is None:
            raise _Changed(
                f"no ContentRange {text!r} for {_range_text(start, end)}: the store does not "
                "serve byte ranges"
            )
        low, high, total = (int(g) for g in match.groups())
        version = _Version(
            total,
            response.get("ETag"),
            _text(response.get("LastModified")),
            response.get("VersionId"),
        )
        if first is not None and (problem := _agrees(first, version)) is not None:
            raise _Changed(f"the object changed since it was first read: {problem}")
        if low != start or high != min(end, total) - 1 or high < low:
            raise _Changed(f"ContentRange {text!r} answers {_range_text(start, end)}")
        length = response.get("ContentLength")
        if length is None or int(length) != high + 1 - low:
            raise _Changed(
                f"ContentLength {length!r} for the {high + 1 - low} bytes of its ContentRange"
            )
        return version


def _text(value: object) -> str | None:
    return None if value is None else str(value)


class RemoteTar:
    """A tar at a URL as a :class:`verify._source.RandomAccess`: reads by byte ranges, each
    checked against the first response (see the module docstring).

    Thread-safe: hashing reads from a worker thread while the caller may read too.

    Raises (from construction and :meth:`pread`):
        InvalidInput: the URL cannot be read, consistently, by ranges; the message names it.
    """

    block = BLOCK

    def __init__(self, url: str, expected: _Version | None = None) -> None:
        """Make the first request; with ``expected`` (the URL's first response earlier in the
        same command), the object must still be that one."""
        self.url = url
        self.location = shown_url(url)
        self.requests = 0
        """Requests made (redirects and retries included in the tries, not counted twice)."""
        self.received = 0
        """Bytes of evidence received."""
        self._lock = threading.Lock()
        self._backend = _backend(url, self.location)
        self._first: _Version | None = None
        data, version = self._fetch(0, FIRST_READ)
        if expected is not None and (problem := _agrees(expected, version)) is not None:
            raise InvalidInput(
                f"{self.location}: the object changed since this command first read it: "
                f"{problem}; nothing was judged"
            )
        self._first = version
        self.version = version
        self.size = version.size
        self._starts: list[int] = []
        self._kept: dict[int, bytes] = {}
        self._kept_bytes = 0
        self._keep(0, data)

    def pread(self, offset: int, size: int) -> bytes:
        end = min(offset + size, self.size)
        if offset >= end:
            return b""
        with self._lock:
            parts, position = self._received(offset, end)
            if position < end:
                start, stop = self._span(position, end)
        if position < end:
            data = self._fetch(start, stop)[0]
            self._keep(start, data)
            parts.append(data[position - start : end - start])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _received(self, offset: int, end: int) -> tuple[list[bytes], int]:
        """What was received of ``[offset, end)`` from ``offset`` on, in the ranges kept: the
        pieces, and the offset they reach (``end`` when all of it was)."""
        parts: list[bytes] = []
        position = offset
        while position < end:
            index = bisect.bisect_right(self._starts, position) - 1
            if index < 0:
                break
            start = self._starts[index]
            data = self._kept[start]
            if position >= start + len(data):
                break
            reach = min(end, start + len(data))
            parts.append(data[position - start : reach - start])
            position = reach
        return parts, position

    def _span(self, position: int, end: int) -> tuple[int, int]:
        """The range to ask for to get ``[position, end)``: all the rest of a tar of at most
        :data:`SMALL_TAR`; from the end of a range received at most :data:`GAP` before it."""
        stop = self.size if self.size <= SMALL_TAR else end
        index = bisect.bisect_right(self._starts, position) - 1
        if index >= 0:
            before = self._starts[index] + len(self._kept[self._starts[index]])
            if position - GAP <= before < position:
                return before, stop
        return position, stop

    def _keep(self, offset: int, data: bytes) -> None:
        """Keep a range received (the oldest go first past :data:`CACHE_BYTES`)."""
        if not data or len(data) > CACHE_BYTES:
            return
        with self._lock:
            if offset in self._kept:
                return
            bisect.insort(self._starts, offset)
            self._kept[offset] = data
            self._kept_bytes += len(data)
            while self._kept_bytes > CACHE_BYTES:
                oldest = next(iter(self._kept))
                self._kept_bytes -= len(self._kept.pop(oldest))
                self._starts.remove(oldest)

    def _fetch(self, start: int, end: int) -> tuple[bytes, _Version]:
        from fsspec.asyn import sync  # noqa: PLC0415 - only for URLs
        from fsspec.exceptions import FSTimeoutError  # noqa: PLC0415 - only for URLs

        where = f"{self.location}: {_range_text(start, end)}"
        deadline = _deadline(start, end)
        for attempt in range(ATTEMPTS):
            with self._lock:
                self.requests += 1
            try:
                fetch = self._backend.fetch
                data, version = sync(
                    self._backend.loop, fetch, start, end, self._first, timeout=deadline
                )
            except (_Retry, FSTimeoutError) as exc:
                if attempt + 1 == ATTEMPTS:
                    problem = (
                        masked_text(exc.message)
                        if isinstance(exc, _Retry)
                        else f"not answered whole in {deadline:g} s"
                    )
                    raise InvalidInput(
                        f"{where}: cannot read: {problem} ({ATTEMPTS} tries)"
                    ) from None
                time.sleep(_BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)])
                continue
            except _Changed as exc:
                raise InvalidInput(
                    f"{where}: {masked_text(exc.message)}; nothing was judged"
                ) from None
            except InvalidInput as exc:
                raise InvalidInput(f"{self.location}: {masked_text(exc.message)}") from None
            except ValueError as exc:  # a library's answer to a response it cannot take
                problem = f"an invalid response: {type(exc).__name__}"
                raise InvalidInput(f"{where}: {problem}; nothing was judged") from None
            with self._lock:
                self.received += len(data)
            return data, version
        raise AssertionError("unreachable")  # pragma: no cover


def s3_parts(url: str, location: str) -> tuple[str, str]:
    """The bucket and the key (or prefix) of an ``s3://`` URL, each exactly as written, so that
    the object read is the one the URL names (and a listed key's URL names that key).

    Raises:
        InvalidInput: a user name or password in it (credentials come from the environment; it
            is never echoed); a query or fragment; a key that the URL would not name as
            written: one that starts with ``/`` (read as the key without it), or holds a tab or
            line break (which URL parsing drops).
    """
    bucket, _, key = url.split("://", 1)[1].partition("/")
    if "@" in bucket:
        raise InvalidInput(
            f"{location}: an s3:// URL carries no user name or password; give credentials "
            "through the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, a profile)"
        )
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise InvalidInput(f"{location}: an s3:// URL has no query or fragment")
    if key.startswith("/") or parts.netloc != bucket or parts.path not in ("/" + key, key):
        raise InvalidInput(
            f"{location}: an s3:// URL whose key would not be read as written (a key that starts "
            "with '/' or holds a tab or line break); it is not read"
        )
    return bucket, key


def _backend(url: str, location: str) -> _Backend:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if not parts.hostname:
            raise InvalidInput(f"{location}: a URL with no host")
        return _Http(url)
    if scheme == "s3":
        bucket, key = s3_parts(url, location)
        if not bucket or not key:
            raise InvalidInput(
                f"{location}: an s3:// URL names a bucket and a key: s3://BUCKET/KEY"
            )
        return _S3(bucket, key)
    raise InvalidInput(
        f"{location}: bundles are read from a local path, file://, http://, https:// or s3://, "
        f"not {scheme}://"
    )


class _Snapshots:
    """The URLs one command has opened: each screened listing (the last few) and the first
    response of every one, so that a URL opened again is the same object."""

    def __init__(self) -> None:
        self.sources: OrderedDict[tuple[str, Limits], BundleSource] = OrderedDict()
        self.versions: dict[str, _Version] = {}
        self.filesystems: dict[str, Any] = {}


_SCOPE: ContextVar[_Snapshots | None] = ContextVar("evidence_audit_url_snapshots", default=None)


@contextmanager
def url_snapshots() -> Iterator[None]:
    """Within this block, a URL opened again is the snapshot first opened: its listing is
    reused and its reads still must meet its first response (every ``audit`` command runs in
    one, so that e.g. ``audit show`` reports on the very object it verified)."""
    token = _SCOPE.set(_Snapshots())
    try:
        yield
    finally:
        _SCOPE.reset(token)


def filesystem(protocol: str) -> Any:
    """An fsspec file system for ``protocol`` (``s3``, ``http``, ``https``), made from the
    environment and fsspec's configuration as they are now: one per :func:`url_snapshots` block
    (a command, or a Dask task's chunk of sources), shared by every URL it opens, so that they
    share one client, its parsed service model and its connections; outside a block, a new one.

    Never fsspec's instance cache: a cached file system keeps the endpoint and credentials of
    the environment it was first made in, and a later command in the same process (a Dask
    worker, the test suite) would read from a store that is gone. Making one per URL instead
    cost about a quarter of a second and tens of MiB each for ``s3://`` (botocore parses its
    service model for every new client).
    """
    scope = _SCOPE.get()
    if scope is not None and protocol in scope.filesystems:
        return scope.filesystems[protocol]
    import fsspec  # noqa: PLC0415 - only for URLs

    made: Any = fsspec.filesystem(protocol, skip_instance_cache=True)
    if scope is not None:
        scope.filesystems[protocol] = made
    return made


LIST_PAGE = 1000
"""How many keys of an ``s3://`` prefix are asked for a page at a time (S3's page)."""
MAX_LISTED_KEYS = 10_000_000
"""The most keys one ``s3://`` prefix is listed to (ten million: a thousand times the archives
docs/scale.md measures); a listing past it is refused, not read for ever."""
MAX_LIST_PAGES = 100_000
"""The most pages of a listing (S3 gives 1,000 keys a page: a hundred million keys); a store
answering with pages of a key or none, each naming a page more, ends here."""


def prefix_keys(fs: Any, bucket: str, prefix: str) -> Iterator[str]:
    """Every object under ``prefix`` in ``bucket`` of an s3fs file system, as ``bucket/key``, a
    page of the listing at a time in the store's order (S3's: by key, as UTF-8 bytes, which is
    Python's order of the keys): never the whole listing in memory, as ``fs.find`` holds it and
    keeps it in its directory cache.

    A store is held to the listing it was asked for: a key outside ``prefix``, a page that says
    more follow without saying where, a continuation token it gave before (a listing that comes
    back to a page: it would never end), more than :data:`MAX_LIST_PAGES` pages or
    :data:`MAX_LISTED_KEYS` keys, and a page not answered whole in the time a range request of
    1 MiB has (each of its requests retried by s3fs as any other), are refused.

    Raises:
        InvalidInput: the listing is refused (the message names no URL: the caller's does).
        Exception: what s3fs and botocore raise.
    """
    from fsspec.asyn import sync  # noqa: PLC0415 - only for URLs
    from fsspec.exceptions import FSTimeoutError  # noqa: PLC0415 - only for URLs

    pages = fs._list_pages(  # s3fs: a page at a time, each request retried as any other
        "list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=LIST_PAGE, **fs.req_kw
    )

    async def following() -> Any:
        try:
            return await anext(pages)
        except StopAsyncIteration:
            return None

    seen: set[bytes] = set()  # the continuation tokens given, by digest
    listed = 0
    deadline = _deadline(0, MiB)  # a page of 1,000 keys is a few hundred KB of XML
    try:
        for number in range(1, MAX_LIST_PAGES + 2):
            try:
                page = sync(fs.loop, following, timeout=deadline)
            except FSTimeoutError:
                raise InvalidInput(
                    f"page {number} of the listing was not answered whole in {deadline:g} s"
                ) from None
            if page is None:
                return
            if number > MAX_LIST_PAGES:
                raise InvalidInput(f"the listing goes on past {MAX_LIST_PAGES:,} pages")
            contents = page.get("Contents") or []
            listed += len(contents)
            if listed > MAX_LISTED_KEYS:
                raise InvalidInput(f"the listing goes on past {MAX_LISTED_KEYS:,} keys")
            names = []
            for item in contents:
                key = item.get("Key") if isinstance(item, dict) else None
                if not isinstance(key, str) or not key.startswith(prefix):
                    shown = ascii(key)[:200]
                    raise InvalidInput(
                        f"the store listed {shown}, which is not under the prefix; nothing "
                        "was judged"
                    )
                names.append(f"{bucket}/{key}")
            yield from names
            if page.get("IsTruncated"):
                token = page.get("NextContinuationToken")
                if not isinstance(token, str) or not token:
                    raise InvalidInput("a page of the listing says more follow, and not where")
                marked = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
                if marked in seen:
                    raise InvalidInput(
                        f"page {number} of the listing leads back to a page given before (a "
                        "continuation token given twice): a listing that would never end"
                    )
                seen.add(marked)
    finally:
        # an interrupt leaves the page running on fsspec's loop: then it is not closed here
        with suppress(RuntimeError):
            sync(fs.loop, pages.aclose)


def _is_prefix(url: str) -> bool:
    return urlsplit(url).path.endswith("/")


def open_url(url: str, limits: Limits) -> BundleSource:
    """List and screen the tar at ``url`` (``http://``, ``https://``, ``s3://``).

    Raises:
        InvalidInput: the URL cannot be read consistently by ranges, names a directory or
            prefix, or is not a tar; the message names the URL given.
        HostileArchive: the tar holds something a bundle never holds.
    """
    location = shown_url(url)
    scope = _SCOPE.get()
    key = (url, limits)
    if scope is not None and key in scope.sources:
        scope.sources.move_to_end(key)
        return scope.sources[key]
    if _is_prefix(url):
        raise InvalidInput(
            f"{location}: names a directory or prefix, not a tar: a bundle at a URL is one tar "
            "(audit pack DIR -o FILE.tar, then publish the tar)"
        )
    tar = RemoteTar(url, scope.versions.get(url) if scope is not None else None)
    source = BundleSource(location, "tar", scan_tar(tar, location, limits))
    if scope is not None:
        scope.versions[url] = tar.version
        scope.sources[key] = source
        while len(scope.sources) > _SNAPSHOTS_KEPT:
            scope.sources.popitem(last=False)
    return source
