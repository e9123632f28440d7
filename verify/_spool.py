"""Where an archive command keeps what it found of each bundle until it writes its report
(ADR 0025 point 5): a private temporary spool file for the values, and a private temporary
SQLite database for the index over them, so that memory does not grow with the archive.

Both are this process's own, unnamed on disk (the spool is an unlinked temporary file; SQLite's
``""`` database is deleted when closed), written and read by this process alone: a value
pickled here is one this code made, never bytes a bundle gave.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import struct
import tempfile
from typing import IO, Any, Self

__all__ = ["Spool", "Spooled", "named", "sortable", "text"]

_PRAGMAS = """
PRAGMA cache_size = -2048;
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA temp_store = FILE;
"""
"""On disk past a page cache of 2 MiB, nothing journaled or synced: it holds nothing to keep."""


def text(value: str) -> bytes:
    """A name as an index keeps it: UTF-8 (a path's undecodable bytes too), whose byte order is
    the code point order Python sorts ``str`` by."""
    return value.encode("utf-8", "surrogatepass")


def named(data: bytes) -> str:
    """The name :func:`text` kept."""
    return data.decode("utf-8", "surrogatepass")


def sortable(key: tuple[float | str, ...]) -> bytes:
    """A sort key of floats and strings as bytes whose order (``memcmp``, SQLite's for a BLOB)
    is Python's order of the tuples: a float as its IEEE 754 bits made order-preserving (-0.0
    as 0.0); a string as its code points in four bytes each (UTF-32, a path's surrogates too),
    a NUL as two units ``0, 1`` and its end as ``0, 0`` (so that a string sorts before any it
    begins, and before any that has a NUL where it ends)."""
    out = bytearray()
    for value in key:
        if isinstance(value, float):
            (bits,) = struct.unpack(">Q", struct.pack(">d", value + 0.0))
            out += struct.pack(">Q", bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 1 << 63)
        else:
            parts = value.split("\0") if "\0" in value else (value,)
            out += _NUL.join(part.encode("utf-32-be", "surrogatepass") for part in parts)
            out += _END
    return bytes(out)


_NUL = bytes(7) + b"\1"
_END = bytes(8)


class Spool:
    """A spool file (made when first written) and an index of ``schema`` (SQL, run once, in
    one open transaction). The database may be used from another thread than the one that
    made it, one thread at a time."""

    def __init__(self, schema: str, prefix: str = "audit-archive-") -> None:
        self._prefix = prefix
        self._file: IO[bytes] | None = None
        self.db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        self.db.executescript(_PRAGMAS + schema + "\nBEGIN;\n")  # "": temporary, on disk

    def put_bytes(self, data: bytes) -> tuple[int, int]:
        """Spool ``data``; where it is (offset, length)."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix=self._prefix)  # noqa: SIM115
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(data)
        return offset, len(data)

    def get_bytes(self, offset: int, length: int) -> bytes:
        """The bytes :meth:`put_bytes` spooled there."""
        assert self._file is not None  # noqa: S101 - spooled before
        self._file.seek(offset)
        return self._file.read(length)

    def put(self, value: object) -> tuple[int, int]:
        """Spool a value this code made (pickled); where it is."""
        return self.put_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def get(self, offset: int, length: int) -> Any:
        """The value :meth:`put` spooled there."""
        return pickle.loads(self.get_bytes(offset, length))  # noqa: S301 - this process's own

    def close(self) -> None:
        self.db.close()
        if self._file is not None:
            self._file.close()


class Spooled:
    """What keeps its state in a :class:`Spool` (``self._spool``): closed when done, or used
    as a context manager."""

    _spool: Spool

    def close(self) -> None:
        self._spool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
