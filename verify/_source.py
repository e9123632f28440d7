"""Read-only access to a bundle's files, as a directory or as an uncompressed tar.

Opening a source lists its files and refuses hostile input before any byte of evidence is read:

- a directory: symbolic links, devices, FIFOs and sockets anywhere under it;
- a tar: absolute paths, ``..``/``.``/empty segments, links of any kind, devices, FIFOs, sparse
  and other special members, duplicate members, members outside ``manifest.json``,
  ``blobs/sha256/<64 hex>`` and ``signatures/<name>``, truncated members, and members or
  archives past the size and count caps of :class:`Limits`.

A tar's members are read in place, at their data offset, so verifying a tar extracts nothing.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from bundle_schema.errors import InvalidInput
from bundle_schema.layout import BLOB_DIR, MANIFEST, SIGNATURES_DIR, classify_path

__all__ = [
    "DEFAULT_LIMITS",
    "BundleSource",
    "HostileArchive",
    "Limits",
    "Member",
    "open_source",
    "read_capped",
]

GiB = 1 << 30
MiB = 1 << 20
READ_CHUNK = 1 * MiB
ALLOWED_DIRS = frozenset({"blobs", BLOB_DIR, SIGNATURES_DIR})


class HostileArchive(InvalidInput):
    """The bundle (a tar or a directory) holds something a bundle never holds."""


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


def read_capped(path: str | os.PathLike[str], cap: int, what: str = "") -> bytes:
    """Read a whole input file of at most ``cap`` bytes.

    Raises:
        InvalidInput: it cannot be read, or it is larger (``what`` names what it should be).
    """
    try:
        with open(path, "rb") as file:
            data = file.read(cap + 1)
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


class Member(NamedTuple):
    """One file of a bundle: its bundle-relative path and where its bytes are.

    A named tuple rather than a dataclass: a bundle can list millions of these.
    """

    path: str
    file: str
    """The filesystem path to open: the file itself, or the tar holding it."""
    size: int | None = None
    """The member's size where the listing knows it (a tar header); None: read to the end."""
    offset: int = 0
    """Where the member's bytes start inside ``file``."""

    def chunks(self, chunk: int = READ_CHUNK) -> Iterator[bytes]:
        """Yield the member's bytes in chunks; a short tar member ends early (callers count).

        Raises:
            OSError: the file cannot be opened or read.
        """
        fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            if self.size is None:
                yield from read_all(fd, chunk)
            else:
                yield from read_range(fd, self.offset, self.size, chunk)
        finally:
            os.close(fd)

    def read(self, cap: int) -> bytes | None:
        """Return the member's bytes, or None when there are more than ``cap`` of them.

        Raises:
            OSError: the file cannot be opened or read.
        """
        if self.size is not None and self.size > cap:
            return None
        parts, total = [], 0
        for data in self.chunks(min(READ_CHUNK, cap + 1)):
            parts.append(data)
            total += len(data)
            if total > cap:
                return None
        return b"".join(parts)


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
            InvalidInput: there is no manifest.json, it is too large, or it cannot be read.
        """
        member = self.members.get(MANIFEST)
        if member is None:
            raise InvalidInput(
                f"{self.location}: no {MANIFEST}; not a sealed bundle (a run that died before "
                "sealing leaves none)"
            )
        try:
            data = member.read(limits.max_manifest_size)
        except OSError as exc:
            raise InvalidInput(f"{self.location}: cannot read {MANIFEST}: {exc.strerror}") from None
        if data is None:
            raise InvalidInput(
                f"{self.location}: {MANIFEST} is over the cap of {limits.max_manifest_size} bytes"
            )
        return data


def open_source(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> BundleSource:
    """List and screen a bundle directory or tar.

    Raises:
        InvalidInput: the path does not exist or is neither a directory nor a tar.
        HostileArchive: it holds something a bundle never holds (see the module docstring).
    """
    location = os.fspath(path)
    try:
        mode = os.stat(location).st_mode
    except OSError as exc:
        raise InvalidInput(f"{location}: cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        return BundleSource(location, "directory", _scan_directory(location, limits))
    if stat.S_ISREG(mode):
        return BundleSource(location, "tar", _scan_tar(location, limits))
    raise InvalidInput(f"{location}: neither a bundle directory nor a tar file")


def _scan_directory(root: str, limits: Limits) -> dict[str, Member]:
    members: dict[str, Member] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        directory = os.path.join(root, relative) if relative else root
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise InvalidInput(f"{directory}: cannot list: {exc.strerror}") from None
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            # the file type comes from the directory listing; no stat unless it is special
            if entry.is_file(follow_symlinks=False):
                members[name] = Member(name, entry.path)
            elif entry.is_dir(follow_symlinks=False):
                if name.count("/") >= MAX_DIRECTORY_DEPTH:
                    raise HostileArchive(
                        f"{root}: {name!r} is nested deeper than a bundle's layout "
                        f"({MAX_DIRECTORY_DEPTH} levels)"
                    )
                pending.append(name)
            else:
                mode = entry.stat(follow_symlinks=False).st_mode
                raise HostileArchive(f"{root}: {name!r} is a {_kind(mode)}, not a file")
        if len(members) > limits.max_members:
            raise HostileArchive(f"{root}: more than {limits.max_members} files")
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


_REFUSED_TYPES = {
    tarfile.SYMTYPE: "symbolic link",
    tarfile.LNKTYPE: "hard link",
    tarfile.CHRTYPE: "device",
    tarfile.BLKTYPE: "device",
    tarfile.FIFOTYPE: "FIFO",
    tarfile.GNUTYPE_SPARSE: "sparse file",
}


def _member_kind(info: tarfile.TarInfo) -> str | None:
    """What is wrong with a member's type, or None for a regular file or directory."""
    if info.type in _REFUSED_TYPES:
        return _REFUSED_TYPES[info.type]
    if info.isreg() or info.isdir():
        return None
    return f"special member (type {info.type!r})"


def _check_name(name: str, where: str) -> None:
    if not name:
        raise HostileArchive(f"{where}: a member has an empty name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise HostileArchive(f"{where}: member {name!r} has an absolute path")
    if "\\" in name or "\x00" in name:
        raise HostileArchive(f"{where}: member {name!r} has a backslash or NUL in its name")
    segments = name.split("/")
    if ".." in segments:
        raise HostileArchive(f"{where}: member {name!r} climbs out with '..'")
    if "." in segments or "" in segments:
        raise HostileArchive(f"{where}: member {name!r} has an empty or '.' path segment")


def _screen_member(info: tarfile.TarInfo, location: str, limits: Limits) -> str | None:
    """Refuse a hostile member; return its bundle path if it is a file, None for a directory."""
    name = info.name[:-1] if info.isdir() and info.name.endswith("/") else info.name
    _check_name(name, location)
    problem = _member_kind(info)
    if problem is not None:
        raise HostileArchive(f"{location}: member {name!r} is a {problem}")
    if info.isdir():
        if name not in ALLOWED_DIRS:
            raise HostileArchive(
                f"{location}: member {name!r} is a directory outside the bundle layout"
            )
        return None
    if classify_path(name) == "other":
        raise HostileArchive(
            f"{location}: member {name!r} is outside the bundle layout "
            f"({MANIFEST}, {BLOB_DIR}/<64 lowercase hex>, {SIGNATURES_DIR}/<name>)"
        )
    if info.size > limits.max_member_size:
        raise HostileArchive(
            f"{location}: member {name!r} declares {info.size} bytes, over the "
            f"member cap of {limits.max_member_size}"
        )
    return name


def _scan_tar(location: str, limits: Limits) -> dict[str, Member]:
    members: dict[str, Member] = {}
    seen: set[str] = set()
    total = 0
    file_size = os.stat(location).st_size
    try:
        with tarfile.open(location, mode="r:") as archive:
            while (info := archive.next()) is not None:
                archive.members = []  # type: ignore[attr-defined]  # keep memory flat on archives with many members
                name = _screen_member(info, location, limits)
                key = name or info.name.rstrip("/")
                if key in seen:
                    raise HostileArchive(f"{location}: member {key!r} appears twice")
                seen.add(key)
                if len(seen) > limits.max_members:
                    raise HostileArchive(f"{location}: more than {limits.max_members} members")
                if name is None:
                    continue
                total += info.size
                if total > limits.max_total_size:
                    raise HostileArchive(
                        f"{location}: members total over the archive cap of "
                        f"{limits.max_total_size} bytes at {name!r}"
                    )
                if info.offset_data + info.size > file_size:
                    raise HostileArchive(f"{location}: member {name!r} is truncated")
                members[name] = Member(name, location, info.size, info.offset_data)
    except (tarfile.TarError, EOFError) as exc:
        raise InvalidInput(f"{location}: not a readable uncompressed tar: {exc}") from None
    except OSError as exc:
        raise InvalidInput(f"{location}: cannot read: {exc.strerror}") from None
    return members
