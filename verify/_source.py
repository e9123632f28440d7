"""Read-only access to a bundle's files, as a directory or as an uncompressed tar.

Opening a source lists its files and refuses hostile input before any byte of evidence is read:

- a directory: symbolic links, devices, FIFOs and sockets anywhere under it;
- a tar: absolute paths, ``..``/``.``/empty segments and control characters in names, links of
  any kind, devices, FIFOs, sparse members in every form (old GNU ``S`` and the GNU 0.0, 0.1 and
  1.0 pax forms) and other special members, duplicate members, members outside
  ``manifest.json``, ``blobs/sha256/<64 hex>`` and ``signatures/<name>``, truncated members,
  and members or archives past the size and count caps of :class:`Limits`;
- and in a tar, whatever readers could read two ways: headers that are not POSIX ustar or GNU,
  numeric fields that are not plain octal (or GNU base-256), text fields with bytes after a NUL,
  a ustar prefix field on a header that is not ustar or with a GNU long name, pax keys other
  than path, size, times and owners, global pax headers, two extended headers for one member,
  an invalid header anywhere, and anything but zero padding after the end-of-archive marker.

A tar is read by this module's own header parser, not by :mod:`tarfile` (see the tar section
below), and its members in place, at their data offsets, so verifying a tar extracts nothing.
Every refusal names the member and the offset of its header.

The parser reads through a :class:`RandomAccess` file: a local file's descriptor here, or a tar
at a URL (``http://``, ``https://``, ``s3://``: :mod:`verify._remote`, ADR 0024), read by byte
ranges. Both are screened by the one parser, with the same caps and the same messages; a
``file://`` URL is a local path. Nothing here imports the URL readers unless a URL is given.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, NamedTuple, Protocol
from urllib.parse import unquote, urlsplit

from bundle_schema.errors import DefectiveBundle, InvalidInput
from bundle_schema.layout import BLOB_DIR, MANIFEST, SIGNATURES_DIR, classify_path

__all__ = [
    "DEFAULT_LIMITS",
    "BundleSource",
    "ChangedWhileRead",
    "HostileArchive",
    "Limits",
    "Member",
    "RandomAccess",
    "file_url_path",
    "is_url",
    "open_source",
    "read_capped",
]

GiB = 1 << 30
MiB = 1 << 20
READ_CHUNK = 1 * MiB
ALLOWED_DIRS = frozenset({"blobs", BLOB_DIR, SIGNATURES_DIR})


class HostileArchive(DefectiveBundle):
    """The bundle (a tar or a directory) holds something a bundle never holds: a defect of the
    bundle (exit 1), not a refused request."""


class ChangedWhileRead(InvalidInput):
    """A blob read to be judged is not the bytes that were hashed: the bundle changed while it
    was verified (ADR 0053); nothing was judged."""


@dataclass(frozen=True)
class Limits:
    """Caps that bound the work and memory a bundle can ask for."""

    max_member_size: int = 64 * GiB
    max_total_size: int = 1024 * GiB
    max_members: int = 500_000
    max_manifest_size: int = 64 * MiB
    max_record_line: int = 16 * MiB


DEFAULT_LIMITS = Limits()

MAX_DIRECTORY_DEPTH = 4
"""A bundle's layout is at most ``blobs/sha256/<hex>`` deep; a directory bundle nested deeper
than this is refused before it is walked further (a deep tree costs time, and is never a bundle)."""


def open_input(path: str | os.PathLike[str], encoding: str | None = None) -> IO[Any]:
    """Open an input file to read it: binary, or text in ``encoding``. Opened without waiting,
    so that a FIFO no one writes to reads as empty rather than holding the command forever
    (``open`` waits for a writer); a pipe that has one reads as ever.

    Raises:
        OSError: it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)
        if encoding is None:
            return open(fd, "rb")
        return open(fd, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike[str], cap: int, what: str = "") -> bytes:
    """Read a whole input file of at most ``cap`` bytes.

    Raises:
        InvalidInput: it cannot be read, or it is larger (``what`` names what it should be).
    """
    try:
        with open_input(path) as file:
            data: bytes = file.read(cap + 1)
    except OSError as exc:
        raise InvalidInput(f"{os.fspath(path)}: cannot read: {exc.strerror}") from None
    if len(data) > cap:
        suffix = f"; not {what}" if what else ""
        raise InvalidInput(f"{os.fspath(path)}: over {cap >> 20} MiB{suffix}")
    return data


def read_all(fd: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """Yield what remains of an open file, in chunks."""
    while data := os.read(fd, chunk):
        yield data


def read_range(fd: int, offset: int, size: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """Yield ``size`` bytes of an open file from ``offset``; stops early at its end."""
    position, end = offset, offset + size
    while position < end:
        data = os.pread(fd, min(chunk, end - position), position)
        if not data:
            return
        position += len(data)
        yield data


class RandomAccess(Protocol):
    """A file read at offsets: what the tar parser and a tar member's reads need.

    A local file (its descriptor) or a tar at a URL (:mod:`verify._remote`), so that one parser
    screens both.
    """

    @property
    def size(self) -> int:
        """The file's size in bytes."""

    @property
    def block(self) -> int:
        """The most bytes worth asking for at once (a URL's read-ahead: one range request)."""

    def pread(self, offset: int, size: int) -> bytes:
        """Return ``size`` bytes from ``offset``, fewer only where the file ends.

        Raises:
            OSError: a local file cannot be read.
            InvalidInput: a URL cannot be read consistently (ADR 0024).
        """


class _LocalFile:
    """An open local file as a :class:`RandomAccess`: the parser reads it in windows of
    64 KiB (:data:`_WINDOW`), as it always has."""

    block = 64 * 1024

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.size = os.fstat(fd).st_size

    def pread(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)


def read_at(file: RandomAccess, offset: int, size: int, chunk: int) -> Iterator[bytes]:
    """Yield ``size`` bytes of a random-access file from ``offset`` in pieces of at most
    ``chunk`` (or the file's block, if larger: one request each); stops early at its end."""
    piece = max(chunk, file.block)
    position, end = offset, offset + size
    while position < end:
        data = file.pread(position, min(piece, end - position))
        if not data:
            return
        position += len(data)
        yield data


class Member(NamedTuple):
    """One file of a bundle: its bundle-relative path and where its bytes are.

    A named tuple rather than a dataclass: a bundle can list millions of these.
    """

    path: str
    file: str
    """The filesystem path to open: the file itself, or the tar holding it (for a tar at a URL,
    the URL as shown in messages; its bytes come from ``reader``)."""
    size: int | None = None
    """The member's size where the listing knows it (a tar header); None: read to the end."""
    offset: int = 0
    """Where the member's bytes start inside ``file``."""
    reader: RandomAccess | None = None
    """Where the bytes are read from when ``file`` is not a local file: a tar at a URL."""

    def chunks(self, chunk: int = READ_CHUNK) -> Iterator[bytes]:
        """Yield the member's bytes in chunks; a short tar member ends early (callers count).

        Raises:
            OSError: the file cannot be opened or read.
            InvalidInput: a tar at a URL cannot be read consistently (ADR 0024).
        """
        if self.reader is not None:
            yield from read_at(self.reader, self.offset, self.size or 0, chunk)
            return
        fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            if self.size is None:
                yield from read_all(fd, chunk)
            else:
                yield from read_range(fd, self.offset, self.size, chunk)
        finally:
            os.close(fd)

    def read(self, cap: int, *, proven: bool = False) -> bytes | None:
        """Return the member's bytes, or None when there are more than ``cap`` of them; with
        ``proven``, as :meth:`proven` reads them.

        Raises:
            OSError: the file cannot be opened or read.
            ChangedWhileRead: ``proven``, and they are not the bytes its name says.
        """
        if self.size is not None and self.size > cap:
            return None
        parts, total = [], 0
        chunk = min(READ_CHUNK, cap + 1)
        for data in self.proven(chunk) if proven else self.chunks(chunk):
            parts.append(data)
            total += len(data)
            if total > cap:
                return None
        return b"".join(parts)

    def proven(self, chunk: int = READ_CHUNK) -> Iterator[bytes]:
        """The member's bytes as :meth:`chunks` yields them, to be judged: a blob's
        (``blobs/sha256/<digest>``) are hashed as they come, and once all are read they must be
        the digest its name says. It was hashed before (the integrity check), but a file or a
        server can give other bytes on a second read; a reader that stops early has read bytes
        that prove nothing, and may only refuse them.

        Raises:
            OSError: the file cannot be opened or read.
            InvalidInput: a tar at a URL cannot be read consistently (ADR 0024).
            ChangedWhileRead: the bytes are not the digest its name says.
        """
        name = self.path.removeprefix(BLOB_DIR + "/")
        if name == self.path:
            yield from self.chunks(chunk)
            return
        digest = hashlib.sha256()
        for data in self.chunks(chunk):
            digest.update(data)
            yield data
        if digest.hexdigest() != name:
            file = self.file.rstrip("/")
            where = file if file.endswith("/" + self.path) else f"{file}: {self.path}"
            raise ChangedWhileRead(
                f"{where}: other bytes than when it was hashed: the bundle changed while it was "
                "verified; nothing was judged"
            )


@dataclass(frozen=True)
class BundleSource:
    """The files of one bundle, listed and screened, nothing read yet."""

    location: str
    kind: str
    """``directory`` or ``tar``."""
    members: dict[str, Member]

    def manifest_bytes(self, limits: Limits = DEFAULT_LIMITS) -> bytes:
        """Return manifest.json's bytes.

        Raises:
            InvalidInput: there is no manifest.json (not a bundle), or it cannot be read.
            HostileArchive: it is over its cap.
        """
        member = self.members.get(MANIFEST)
        if member is None:
            held = self._bundles_inside()
            if held:
                raise InvalidInput(
                    f"{self.location}: a folder holding {held} bundle directories or tars, not "
                    f"a bundle; verify each of them with: audit rank {self.location}"
                )
            raise InvalidInput(f"{self.location}: {_NO_MANIFEST}")
        try:
            data = member.read(limits.max_manifest_size)
        except OSError as exc:
            raise InvalidInput(f"{self.location}: cannot read {MANIFEST}: {exc.strerror}") from None
        if data is None:
            raise HostileArchive(
                f"{self.location}: {MANIFEST} is over the cap of {limits.max_manifest_size} bytes"
            )
        return data

    def _bundles_inside(self) -> int:
        """How many bundles a directory with no manifest holds at its top: sub-directories with
        a manifest.json, and .tar files (what ``audit rank`` takes from a folder)."""
        if self.kind != "directory":
            return 0
        return sum(
            1
            for name in self.members
            if (name.count("/") == 1 and name.endswith("/" + MANIFEST))
            or ("/" not in name and name.endswith(".tar"))
        )


_NO_MANIFEST = f"no {MANIFEST}; not a sealed bundle (a run that died before sealing leaves none)"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written as a URL (``scheme://...``) rather than a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def open_source(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> BundleSource:
    """List and screen a bundle directory or tar, or a tar at a URL.

    ``file://`` URLs are local paths; ``http://``, ``https://`` and ``s3://`` URLs name a tar,
    read by byte ranges (:mod:`verify._remote`, ADR 0024). Messages name the path or URL given.

    Raises:
        InvalidInput: the path does not exist or is neither a directory nor a tar; a URL that
            cannot be read (consistently, by ranges) or of another scheme.
        HostileArchive: it holds something a bundle never holds (see the module docstring).
    """
    location = os.fspath(path)
    local = location
    if is_url(location):
        try:  # a URL that does not split, or whose port is no port, names nothing to read
            _ = urlsplit(location).port
        except ValueError as exc:
            from verify._remote import shown_url  # noqa: PLC0415 - as open_url's messages

            raise InvalidInput(f"{shown_url(location)}: not a URL: {exc}") from None
        scheme = location.split(":", 1)[0].lower()
        if scheme != "file":
            from verify._remote import open_url  # noqa: PLC0415 - loads fsspec: URLs only

            return open_url(location, limits)
        local = file_url_path(location)
    try:
        mode = os.stat(local).st_mode
    except OSError as exc:
        raise InvalidInput(f"{location}: cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        try:
            members = _scan_directory(local, limits, location)
        except HostileArchive:
            if os.path.lexists(os.path.join(local, MANIFEST)):
                raise
            # no manifest: a directory, not a bundle, whatever else it holds (``/etc``)
            raise InvalidInput(f"{location}: {_NO_MANIFEST}") from None
        return BundleSource(location, "directory", members)
    if stat.S_ISREG(mode):
        return BundleSource(location, "tar", _scan_tar(local, limits, location))
    raise InvalidInput(f"{location}: neither a bundle directory nor a tar file")


def file_url_path(url: str) -> str:
    """The local path a ``file://`` URL names (RFC 8089: no host, or ``localhost``).

    Raises:
        InvalidInput: it names another host, or has a query or fragment.
    """
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        host = parts.netloc.rpartition("@")[2]  # never its user name or password
        raise InvalidInput(
            f"{url}: a file:// URL of another host ({host!r}); give a local path, or "
            "an http(s):// or s3:// URL"
        )
    if parts.query or parts.fragment or not parts.path:
        raise InvalidInput(f"{url}: a file:// URL is a path, with no query or fragment")
    return unquote(parts.path)


def _scan_directory(root: str, limits: Limits, location: str | None = None) -> dict[str, Member]:
    shown = root if location is None else location
    members: dict[str, Member] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        directory = os.path.join(root, relative) if relative else root
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            where = f"{shown}/{relative}" if relative else shown
            raise InvalidInput(f"{where}: cannot list: {exc.strerror}") from None
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            # the file type comes from the directory listing; no stat unless it is special
            if entry.is_file(follow_symlinks=False):
                members[name] = Member(name, entry.path)
            elif entry.is_dir(follow_symlinks=False):
                if name.count("/") >= MAX_DIRECTORY_DEPTH:
                    raise HostileArchive(
                        f"{shown}: {name!r} is nested deeper than a bundle's layout "
                        f"({MAX_DIRECTORY_DEPTH} levels)"
                    )
                pending.append(name)
            else:
                mode = entry.stat(follow_symlinks=False).st_mode
                raise HostileArchive(f"{shown}: {name!r} is a {_kind(mode)}, not a file")
        if len(members) > limits.max_members:
            raise HostileArchive(f"{shown}: more than {limits.max_members} files")
    return members


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


# --- tars ----------------------------------------------------------------------------------------
#
# A bundle tar is read by this module's own header parser, not by tarfile: a tar must mean one
# thing, and readers (GNU tar, Python's tarfile, libarchive) differ wherever the format is loose.
# What is accepted is the part of ustar, pax and GNU tar on which they agree: headers whose every
# field parses one way, member names from one source each, regular files and directories only,
# and nothing but zeros after the end-of-archive marker. Everything else is refused, naming the
# member and the offset of its header.

BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
MAX_EXTENDED_HEADER = 64 * 1024
"""The most data a pax or GNU long-name header may hold (a bundle path is under 120 bytes)."""
MAX_PADDING = 1 * MiB
"""The most zero bytes accepted after the end-of-archive marker (record padding)."""
_WINDOW = 64 * 1024
"""The first read-ahead of the parser: a local file's every read, a URL's first (then it grows
while headers follow each other closely, to the URL's block; see :class:`_Reader`)."""

_POSIX_MAGIC = b"ustar\x0000"
_GNU_MAGIC = b"ustar  \x00"
_OCTAL = re.compile(rb"\x00*| *[0-7]+[ \x00]*")
"""A numeric field read the same by GNU tar and tarfile: all NUL (zero), or octal digits after
optional spaces and before only spaces and NULs (tarfile also takes ``1_0``, ``+1`` and stops at
a leading NUL where GNU tar skips it)."""
_HIGH_BYTES = bytes(range(128, 256))
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_NUMERIC_FIELDS = (
    ("mode", 100, 108),
    ("uid", 108, 116),
    ("gid", 116, 124),
    ("size", 124, 136),
    ("mtime", 136, 148),
    ("devmajor", 329, 337),
    ("devminor", 337, 345),
)
_TEXT_FIELDS = (("name", 0, 100), ("linkname", 157, 257), ("uname", 265, 297), ("gname", 297, 329))

_REGULAR = frozenset({b"0", b"\x00"})
_DIRECTORY = b"5"
_PAX = b"x"
_LONGNAME = b"L"
_REFUSED_TYPES = {
    b"1": "hard link",
    b"2": "symbolic link",
    b"3": "device",
    b"4": "device",
    b"6": "FIFO",
    b"S": "sparse file",
}
_EXTENSION_TYPES = {
    b"g": "a global pax header",
    b"K": "a GNU long link name",
    b"N": "an old GNU long name",
    b"V": "a GNU volume label",
    b"M": "a GNU multi-volume continuation",
}

_PAX_NUMBER = re.compile(rb"0|[1-9][0-9]{0,19}")
_PAX_TIME = re.compile(rb"-?[0-9]{1,20}(?:\.[0-9]{1,20})?")
_PAX_VALUES = {
    "path": None,
    "size": _PAX_NUMBER,
    "uid": _PAX_NUMBER,
    "gid": _PAX_NUMBER,
    "uname": None,
    "gname": None,
    "mtime": _PAX_TIME,
    "atime": _PAX_TIME,
    "ctime": _PAX_TIME,
}
"""The pax keys a bundle tar may carry (what GNU tar and tarfile write for regular files), with
the form of their values; any other key (``GNU.sparse.*``, ``linkpath``, ``hdrcharset``,
``SCHILY.*``, ``LIBARCHIVE.*``, ``comment``, ...) is refused."""
_PAX_RECORD = re.compile(rb"[1-9][0-9]{0,6} ")


class _Header(NamedTuple):
    """One 512-byte header, its fields checked."""

    offset: int
    type: bytes
    name: bytes
    prefix: bytes
    size: int
    ustar: bool
    """POSIX ustar magic (``ustar\\0`` ``00``); otherwise GNU (``ustar  \\0``)."""


class _Extended(NamedTuple):
    """A pax or GNU long-name header waiting for the member it describes."""

    offset: int
    type: bytes
    data: bytes
    records: list[tuple[str, bytes]]


class _Reader:
    """Reads blocks of a tar through a read-ahead window (headers are read in order).

    The window starts at :data:`_WINDOW`. Over a URL (a file whose block is larger) it doubles,
    up to the block, each time the next read lies within one window of the last one's end (small
    members: their headers and data are read together, in few requests), and falls back to
    :data:`_WINDOW` after a jump over a large member's data, which is never fetched to learn the
    listing.
    """

    def __init__(self, file: RandomAccess) -> None:
        self.file, self.size = file, file.size
        self._start, self._data = 0, b""
        self._window = _WINDOW

    def read(self, offset: int, size: int) -> bytes:
        end = offset + size
        if not (self._start <= offset and end <= self._start + len(self._data)):
            if self.file.block > _WINDOW and self._data:
                close = offset <= self._start + len(self._data) + self._window
                self._window = min(2 * self._window, self.file.block) if close else _WINDOW
            self._start = offset
            self._data = self.file.pread(offset, max(size, self._window))
        return self._data[offset - self._start : end - self._start]


def _raw_name(block: bytes) -> bytes:
    return block[:100].split(b"\x00", 1)[0]


def _shown(name: bytes) -> str:
    return name.decode("utf-8", "surrogateescape")


def _text(field: bytes) -> bytes | None:
    """A NUL-padded text field's value, or None when bytes follow a NUL (readers differ there)."""
    value = field.rstrip(b"\x00")
    return None if b"\x00" in value else value


def _number(field: bytes) -> int | None:
    """A numeric field (octal, or GNU base-256), or None when it is not one readers agree on."""
    if field[:1] == b"\x80":
        value = int.from_bytes(field[1:], "big")
        return value if value < 1 << 63 else None
    if _OCTAL.fullmatch(field) is None:
        return None
    digits = field.strip(b" \x00")
    return int(digits, 8) if digits else 0


def _checksum_ok(block: bytes) -> bool:
    field = block[148:156]
    if _OCTAL.fullmatch(field) is None or not field.strip(b" \x00"):
        return False
    recorded = int(field.strip(b" \x00"), 8)
    unsigned = sum(block) - sum(field) + 8 * 32
    if recorded == unsigned:
        return True
    high = len(block) - len(block.translate(None, _HIGH_BYTES))
    high -= len(field) - len(field.translate(None, _HIGH_BYTES))
    return recorded == unsigned - 256 * high  # a signed sum: both readers accept it


_SHAPES = 16
"""How many header shapes one listing remembers (see :func:`_parse_header`)."""


def _shape(block: bytes) -> bytes:
    """A header's fields but its name, size and checksum: the members of a bundle's tar mostly
    share them all (a bundle's tar is written with one mtime)."""
    return block[100:124] + block[136:148] + block[156:]


def _known_shape(
    block: bytes, offset: int, shapes: dict[bytes, tuple[bytes, bytes, bool]]
) -> _Header | None:
    """The header, when ``block`` is of a shape already accepted and its own name, size and
    checksum are good; None otherwise (the whole check then names any defect)."""
    known = shapes.get(_shape(block))
    if known is None:
        return None
    size = _number(block[124:136])
    if size is None or _text(block[:100]) is None or not _checksum_ok(block):
        return None
    kind, prefix, ustar = known
    return _Header(offset, kind, _raw_name(block), prefix, size, ustar)


def _parse_header(
    block: bytes, offset: int, location: str, shapes: dict[bytes, tuple[bytes, bytes, bool]]
) -> _Header:
    """Check one header's fields; raise what is wrong with them (at offset 0: not a tar).

    ``shapes`` holds what the fields of headers already accepted in this listing gave, by
    :func:`_shape`: a header of a known shape has only its name, size and checksum checked
    again (:func:`_known_shape`).
    """
    header = _known_shape(block, offset, shapes)
    if header is None:
        header = _check_header(block, offset, location)
        if len(shapes) < _SHAPES:
            shapes[_shape(block)] = (header.type, header.prefix, header.ustar)
    return header


def _check_header(block: bytes, offset: int, location: str) -> _Header:
    """Check each of a header's fields; raise what is wrong with them (at offset 0: not a tar)."""
    raw_name = _raw_name(block)
    where = f"{location}: header at offset {offset}: member {_shown(raw_name)!r}"
    if not _checksum_ok(block):
        if offset == 0:
            raise InvalidInput(f"{location}: not a readable uncompressed tar: no tar header")
        raise HostileArchive(
            f"{location}: header at offset {offset} (name field {_shown(raw_name)!r}) is not a "
            "tar header (its checksum does not match)"
        )
    magic, kind = block[257:265], block[156:157]
    if magic not in (_POSIX_MAGIC, _GNU_MAGIC):
        if any(block[345:500]):
            raise HostileArchive(
                f"{where} has a ustar prefix field (bytes 345-500) in a header that is not "
                f"ustar (magic {magic!r}); readers disagree on its name"
            )
        raise HostileArchive(f"{where} is neither ustar nor GNU tar (magic {magic!r})")
    ustar = magic == _POSIX_MAGIC
    for field, start, end in _TEXT_FIELDS:
        if _text(block[start:end]) is None:
            raise HostileArchive(f"{where} has bytes after a NUL in its {field} field")
    prefix = b""
    if ustar:
        text = _text(block[345:500])
        if text is None:
            raise HostileArchive(f"{where} has bytes after a NUL in its ustar prefix field")
        prefix = text
        if any(block[500:]):
            raise HostileArchive(f"{where} has bytes after its ustar prefix field (500-512)")
    elif kind != b"S" and any(block[345:]):
        raise HostileArchive(
            f"{where} is a GNU header with bytes in the ustar prefix field (345-500): GNU tar "
            "reads them as times and sparse data, tarfile as a name prefix"
        )
    numbers = {}
    for field, start, end in _NUMERIC_FIELDS:
        value = _number(block[start:end])
        if value is None:
            raise HostileArchive(
                f"{where} has a {field} field that is not a number: {block[start:end]!r}"
            )
        numbers[field] = value
    return _Header(offset, kind, raw_name, prefix, numbers["size"], ustar)


def _pax_records(data: bytes, where: str) -> list[tuple[str, bytes]]:
    """Split a pax header's data into (key, value) records, exactly as long as they say."""
    records, position = [], 0
    while position < len(data):
        match = _PAX_RECORD.match(data, position)
        end = position + int(match.group()[:-1]) if match else 0
        if match is None or end > len(data) or data[end - 1 : end] != b"\n":
            raise HostileArchive(f"{where} has a malformed pax record at byte {position}")
        key, equals, value = data[match.end() : end - 1].partition(b"=")
        try:
            name = key.decode("utf-8")
        except UnicodeDecodeError:
            name = ""
        if not equals or not name:
            raise HostileArchive(f"{where} has a malformed pax record at byte {position}")
        records.append((name, value))
        position = end
    return records


def _apply_pax(records: list[tuple[str, bytes]], member: str) -> tuple[bytes | None, int | None]:
    """Check a member's pax records; return its path and size from them, where given."""
    keys = [key for key, _ in records]
    sparse = sorted(key for key in keys if key.startswith("GNU.sparse."))
    if sparse:
        raise HostileArchive(f"{member} is a sparse file ({sparse[0]} in its pax header)")
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise HostileArchive(f"{member} has the pax key {twice!r} twice")
    path: bytes | None = None
    size: int | None = None
    for key, value in records:
        if key not in _PAX_VALUES:
            raise HostileArchive(
                f"{member} has the pax key {key!r}, which this reader does not take"
            )
        form = _PAX_VALUES[key]
        if not value or (form is not None and form.fullmatch(value) is None):
            raise HostileArchive(f"{member} has an invalid pax {key}: {value[:80]!r}")
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise HostileArchive(f"{member} has a pax {key} that is not UTF-8") from None
        if key == "path":
            path = value
        elif key == "size":
            size = int(value)
    return path, size


def _check_name(name: str, where: str) -> None:
    if not name:
        raise HostileArchive(f"{where}: a member has an empty name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise HostileArchive(f"{where}: member {name!r} has an absolute path")
    if "\\" in name or "\x00" in name:
        raise HostileArchive(f"{where}: member {name!r} has a backslash or NUL in its name")
    if _CONTROL.search(name):
        raise HostileArchive(f"{where}: member {name!r} has a control character in its name")
    segments = name.split("/")
    if ".." in segments:
        raise HostileArchive(f"{where}: member {name!r} climbs out with '..'")
    if "." in segments or "" in segments:
        raise HostileArchive(f"{where}: member {name!r} has an empty or '.' path segment")


def _member_kind(kind: bytes) -> str | None:
    """What is wrong with a member's type, or None for a regular file or directory."""
    if kind in _REFUSED_TYPES:
        return _REFUSED_TYPES[kind]
    if kind in _REGULAR or kind == _DIRECTORY:
        return None
    return f"special member (type {kind!r})"


def _screen_member(
    header: _Header, extended: _Extended | None, location: str, limits: Limits
) -> tuple[str, int]:
    """Refuse a hostile member; return its name (a directory's without its slash) and size."""
    first = extended.offset if extended is not None else header.offset
    where = f"{location}: header at offset {first}"
    raw = header.prefix + b"/" + header.name if header.prefix else header.name
    size = header.size
    if extended is not None and extended.type == _LONGNAME:
        if header.prefix:
            raise HostileArchive(
                f"{where}: member {_shown(extended.data)!r} has both a GNU long name and a "
                f"ustar prefix (header at offset {header.offset})"
            )
        raw = extended.data
    if header.type == b"S":
        raise HostileArchive(f"{where}: member {_shown(raw)!r} is a sparse file")
    if extended is not None and extended.type == _PAX:
        path, pax_size = _apply_pax(extended.records, f"{where}: member {_shown(raw)!r}")
        raw = raw if path is None else path
        size = size if pax_size is None else pax_size
    name = _shown(raw)
    if header.type == _DIRECTORY and name.endswith("/"):
        name = name[:-1]
    _check_name(name, where)
    problem = _member_kind(header.type)
    if problem is not None:
        raise HostileArchive(f"{where}: member {name!r} is a {problem}")
    if header.type == _DIRECTORY:
        if name not in ALLOWED_DIRS:
            raise HostileArchive(
                f"{where}: member {name!r} is a directory outside the bundle layout"
            )
        if size:
            raise HostileArchive(
                f"{where}: member {name!r} is a directory with {size} bytes of data"
            )
        return name, 0
    if classify_path(name) == "other":
        raise HostileArchive(
            f"{where}: member {name!r} is outside the bundle layout "
            f"({MANIFEST}, {BLOB_DIR}/<64 lowercase hex>, {SIGNATURES_DIR}/<name>)"
        )
    if size > limits.max_member_size:
        raise HostileArchive(
            f"{where}: member {name!r} declares {size} bytes, over the "
            f"member cap of {limits.max_member_size}"
        )
    return name, size


def _extended(header: _Header, reader: _Reader, location: str) -> _Extended:
    """Read a pax or GNU long-name header's data (capped)."""
    what = "pax" if header.type == _PAX else "GNU long-name"
    where = f"{location}: header at offset {header.offset}: {what} header {_shown(header.name)!r}"
    if header.size > MAX_EXTENDED_HEADER:
        raise HostileArchive(
            f"{where} declares {header.size} bytes, over the cap of {MAX_EXTENDED_HEADER}"
        )
    if header.offset + BLOCK + header.size > reader.size:
        raise HostileArchive(f"{where} is truncated")
    data = reader.read(header.offset + BLOCK, header.size)
    if header.type == _PAX:
        return _Extended(header.offset, _PAX, data, _pax_records(data, where))
    name = _text(data)
    if name is None:
        head = _shown(data.split(b"\x00", 1)[0])
        raise HostileArchive(f"{where} has bytes after a NUL in the name it holds, {head!r}")
    return _Extended(header.offset, _LONGNAME, name, [])


def _check_end(reader: _Reader, offset: int, location: str) -> None:
    """After the first zero block: a second one, then nothing but zero padding."""
    if reader.size < offset + 2 * BLOCK:
        raise HostileArchive(
            f"{location}: the end-of-archive marker at offset {offset} is one zero block, not two"
        )
    if reader.size - offset - 2 * BLOCK > MAX_PADDING:
        raise HostileArchive(
            f"{location}: more than {MAX_PADDING} bytes after the end-of-archive marker at "
            f"offset {offset}"
        )
    position = offset + BLOCK
    while position < reader.size:
        data = reader.read(position, min(_WINDOW, reader.size - position))
        rest = data.lstrip(b"\x00")
        if rest:
            at = position + len(data) - len(rest)
            start = at - at % BLOCK
            block = reader.read(start, BLOCK)
            what = ""
            if len(block) == BLOCK and _checksum_ok(block):
                what = f" (a header for member {_shown(_raw_name(block))!r})"
            raise HostileArchive(
                f"{location}: non-zero bytes at offset {at}, after the end-of-archive marker "
                f"at offset {offset}{what}"
            )
        position += len(data)


def _scan_tar(path: str, limits: Limits, location: str | None = None) -> dict[str, Member]:
    shown = path if location is None else location
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise InvalidInput(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        return scan_tar(_LocalFile(fd), shown, limits, path)
    except OSError as exc:
        raise InvalidInput(f"{shown}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def scan_tar(
    file: RandomAccess, location: str, limits: Limits, path: str | None = None
) -> dict[str, Member]:
    """List and screen the members of a tar read through ``file`` (a local file or a URL).

    Args:
        file: the tar.
        location: what messages name (the path or URL given).
        limits: the caps.
        path: the local file the members are opened by; None: they are read through ``file``
            (a tar at a URL).

    Raises:
        InvalidInput: not a tar; ``file`` cannot be read (a URL).
        HostileArchive: see the module docstring.
        OSError: a local file cannot be read.
    """
    reader = _Reader(file)
    member_file, through = (location, file) if path is None else (path, None)
    if reader.size == 0:
        raise InvalidInput(f"{location}: not a readable uncompressed tar: empty file")
    members: dict[str, Member] = {}
    seen: set[str] = set()
    total = offset = 0
    extended: _Extended | None = None
    shapes: dict[bytes, tuple[bytes, bytes, bool]] = {}
    while True:
        block = _next_block(reader, offset, location)
        if block == ZERO_BLOCK:
            if extended is not None:
                raise HostileArchive(
                    f"{location}: header at offset {extended.offset}: an extended header "
                    "describes no member (the archive ends after it)"
                )
            _check_end(reader, offset, location)
            return members
        header = _parse_header(block, offset, location, shapes)
        if header.type in _EXTENSION_TYPES:
            raise HostileArchive(
                f"{location}: header at offset {offset}: member {_shown(header.name)!r} is "
                f"{_EXTENSION_TYPES[header.type]} (type {header.type!r}), which a bundle never has"
            )
        if header.type in (_PAX, _LONGNAME):
            if extended is not None:
                raise HostileArchive(
                    f"{location}: header at offset {offset}: a second extended header for one "
                    f"member (the first at offset {extended.offset}); readers disagree on which "
                    "one wins"
                )
            extended = _extended(header, reader, location)
            offset += BLOCK + _padded(header.size)
            continue
        name, size = _screen_member(header, extended, location, limits)
        first = extended.offset if extended is not None else offset
        extended = None
        where = f"{location}: header at offset {first}"
        if name in seen:
            raise HostileArchive(f"{where}: member {name!r} appears twice")
        seen.add(name)
        if len(seen) > limits.max_members:
            raise HostileArchive(f"{where}: more than {limits.max_members} members")
        data_offset = offset + BLOCK
        offset = data_offset + _padded(size)
        if header.type == _DIRECTORY:
            continue
        total += size
        if total > limits.max_total_size:
            raise HostileArchive(
                f"{where}: members total over the archive cap of "
                f"{limits.max_total_size} bytes at {name!r}"
            )
        if data_offset + size > reader.size:
            raise HostileArchive(f"{where}: member {name!r} is truncated")
        members[name] = Member(name, member_file, size, data_offset, through)


def _next_block(reader: _Reader, offset: int, location: str) -> bytes:
    block = reader.read(offset, BLOCK)
    if len(block) == BLOCK:
        return block
    if offset == 0:
        raise InvalidInput(f"{location}: not a readable uncompressed tar: truncated header")
    if block:
        raise HostileArchive(f"{location}: truncated header at offset {offset}")
    raise HostileArchive(f"{location}: ends at offset {offset} without the end-of-archive marker")


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK
