"""What the cross-checks share: the readers they are given, the slack of recorded times, how a
finding is made, git object ids (a blob's, and the root tree's of a ``git ls-tree -r``
listing), and the paths and times records give."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import Finding

Reader = Callable[[str], bytes | None]
"""Reads an evidence entry's bytes by logical name. None: absent or not intact, which integrity
already reports, so the cross-check that needs it is left out rather than repeated; the shell
reports an entry too large to read as a finding of its own."""

BlobIds = Callable[[str], str | None]
"""The git blob id of an evidence entry's bytes, streamed (None: absent or not intact)."""

TIME_SLACK_S = 2.0
"""Record times are whole seconds: a component may seem to run up to this much longer."""
TTFT_SLACK_S = 0.001
"""The client's TTFT includes the hop to the observer (which times each chunk from when it saw
the request), so the observer's median first-chunk time is never later; this is for rounding."""
SPAN_SLACK_S = 0.001
"""The client's wall encloses the observer's span of the same requests (one monotonic clock:
the observer sees each request after it is sent, and records a stream before its last bytes go
out); this much is allowed for rounding."""


def _finding(code: Any, entry: str | None, message: str, **where: str | None) -> Finding:
    return Finding(code=code, entry=entry, message=message, **where)


def _disagrees(entry: str | None, message: str, **where: str | None) -> Finding:
    return _finding("record_disagrees", entry, f"evidence {entry!r}: {message}", **where)


class Pool:
    """Exchanges each taken once, found by any of their lookups: an exchange is added under a
    key (the same key again: one more exchange of it) with the lookups it is found by, and a
    take returns the earliest key a lookup finds that has an exchange left. Every exchange is
    added before the first take or drop."""

    def __init__(self) -> None:
        self._left: Counter[tuple[Any, ...]] = Counter()
        self._by: dict[tuple[Any, ...], deque[tuple[Any, ...]]] = {}

    def add(self, key: tuple[Any, ...], lookups: Sequence[tuple[Any, ...]]) -> None:
        if key not in self._left:  # indexed once, however many it stands for
            for lookup in lookups:
                self._by.setdefault(lookup, deque()).append(key)
        self._left[key] += 1

    def take(self, lookup: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        """One exchange ``lookup`` finds, taken; None when none is left. A key with none left
        is dropped from the lookup's front (it never has one again): linear in all."""
        keys = self._by.get(lookup) if lookup is not None else None
        while keys:
            if self._left[keys[0]]:
                self._left[keys[0]] -= 1
                return keys[0]
            keys.popleft()
        return None

    def drop(self, key: tuple[Any, ...]) -> None:
        """One exchange of ``key`` taken otherwise."""
        if self._left[key]:
            self._left[key] -= 1


def first_few(shown: Sequence[str], limit: int = 3, *, separator: str = ", ") -> str:
    """The first ``limit`` of ``shown``, joined by ``separator``, and how many more there are
    (" and N more" after a comma's list; after another's, that separator and "and N more")."""
    rest = len(shown) - limit
    if rest <= 0:
        return separator.join(shown)
    more = f" and {rest} more" if separator == ", " else f"{separator}and {rest} more"
    return separator.join(shown[:limit]) + more


def git_blob_id(data: bytes) -> str:
    """The git (SHA-1) blob id of some bytes, as ``git hash-object`` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_object(kind: bytes, data: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class _Listed:
    mode: str
    kind: str
    object_id: str
    path: str


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
MAX_PATH_SEGMENTS = 256
"""A listed path deeper than this is no checkout's (git itself refuses far less in practice)."""


def _unquote(path: str) -> str | None:
    """A path as ``git ls-tree`` printed it, C-quoted when unusual (backslash escapes, octal
    bytes); None when it is not such a quoting or not UTF-8. Linear, never recursive."""
    if not path.startswith('"'):
        return path
    if len(path) < 2 or not path.endswith('"'):
        return None
    out = bytearray()
    inner, index = path[1:-1], 0
    while index < len(inner):
        char = inner[index]
        if char == '"':
            return None
        if char != "\\":
            out += char.encode("utf-8")
            index += 1
            continue
        escape = inner[index + 1 : index + 2]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        elif len(octal := inner[index + 1 : index + 4]) == 3 and all(
            c in "01234567" for c in octal
        ):
            out.append(int(octal, 8) & 0xFF)
            index += 4
        else:
            return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


_KIND_OF_MODE = {"100644": "blob", "100755": "blob", "120000": "blob", "160000": "commit"}
"""The modes of the entries ``git ls-tree -r`` lists, each with the kind of object it names."""
_OBJECT_ID = re.compile(r"[0-9a-f]{40}")


def _listing(data: bytes) -> list[_Listed] | str:
    """The entries of a ``git ls-tree -r`` listing, or why it is not one: each line as git
    writes it, a mode it lists, that mode's kind of object and a lower-case id (the tree id
    hashes the mode, name and id only, so any other spelling of a line would still hash to
    the commit's tree while naming its file otherwise)."""
    entries = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        head, tab, path = line.partition("\t")
        parts = head.split(" ")
        unquoted = _unquote(path)
        if (
            not tab
            or len(parts) != 3
            or unquoted is None
            or _KIND_OF_MODE.get(parts[0]) != parts[1]
            or not _OBJECT_ID.fullmatch(parts[2])
        ):
            return f"line {number} is not a git ls-tree entry"
        entries.append(_Listed(parts[0], parts[1], parts[2], unquoted))
    return entries


def git_tree_id(entries: Sequence[_Listed]) -> str | None:
    """The id of the root tree a recursive listing describes (None: the listing is not one)."""
    root: dict[str, Any] = {}
    for entry in entries:
        *dirs, leaf = entry.path.split("/")
        if len(dirs) >= MAX_PATH_SEGMENTS:
            return None
        node = root
        for part in dirs:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                return None
            node = child
        if leaf in node:
            return None
        node[leaf] = entry

    def tree(node: dict[str, Any]) -> str | None:
        items = []
        for name, value in node.items():
            if isinstance(value, dict):
                sub = tree(value)
                if sub is None:
                    return None
                items.append((name + "/", b"40000 " + name.encode() + b"\0" + bytes.fromhex(sub)))
            else:
                try:
                    raw = bytes.fromhex(value.object_id)
                except ValueError:
                    return None
                items.append((name, value.mode.encode() + b" " + name.encode() + b"\0" + raw))
        items.sort(key=lambda item: item[0].encode())
        return _git_object(b"tree", b"".join(data for _, data in items))

    return tree(root)


def normal_path(path: str) -> str | None:
    """A changed path or pattern as a normal relative path (``./`` and empty segments dropped);
    None for an absolute path, a ``..`` segment, a backslash or a NUL."""
    if path.startswith("/") or "\\" in path or "\0" in path:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _stamp(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 UTC time (sub-second digits past six dropped)."""
    if value is None:
        return None
    head, _, fraction = value.rstrip("Z").partition(".")
    try:
        moment = dt.datetime.fromisoformat(head).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)
