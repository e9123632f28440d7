"""Canonical JSON (RFC 8785) and strict JSON parsing: the only place either is done.

Canonical bytes are what the bundle hashes and signs. Parsing is strict: a document is refused when
its bytes are not UTF-8, it repeats a key, it holds NaN or an infinity, it has trailing data or it
nests deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

import rfc8785

from bundle_schema.errors import MalformedJSON, NotCanonical

__all__ = ["MAX_DEPTH", "canonical_bytes", "digest_of", "loads_canonical", "loads_strict"]

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in any document."""


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value.

    Raises:
        ValueError: the value is not representable (NaN, an integer beyond 2**53, a non-str key).
    """
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"value has no canonical JSON form: {exc}") from exc


def digest_of(data: bytes) -> str:
    """Return ``sha256:<hex>`` of some bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _pairs(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RefusedError(f"duplicate key {key!r}")
        out[key] = value
    return out


class _RefusedError(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _RefusedError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _RefusedError(f"number {text[:40]} is out of range")
    return value


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _nesting_prescan(text: str) -> int:
    """Upper bound of the nesting depth, counted over brackets outside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads_strict(data: bytes, where: str) -> Any:
    """Parse JSON bytes strictly.

    Args:
        data: the document's bytes.
        where: the document's location, used in error messages.

    Raises:
        MalformedJSON: the bytes are not strict JSON (see the module docstring).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJSON(where, f"invalid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise MalformedJSON(where, "starts with a byte-order mark")
    if ("[" in text or "{" in text) and _nesting_prescan(text) > MAX_DEPTH:
        raise MalformedJSON(where, f"nested deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float
        )
    except _RefusedError as exc:
        raise MalformedJSON(where, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise MalformedJSON(where, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (RecursionError, ValueError) as exc:
        raise MalformedJSON(where, str(exc)) from None
    if _depth(value) > MAX_DEPTH:  # pragma: no cover - the prescan bounds this already
        raise MalformedJSON(where, f"nested deeper than {MAX_DEPTH} levels")
    return value


def loads_canonical(data: bytes, where: str) -> Any:
    """Parse JSON bytes strictly and require them to be their own canonical form.

    Raises:
        MalformedJSON: see :func:`loads_strict`.
        NotCanonical: the bytes parse, but are not the RFC 8785 encoding of the value.
    """
    value = loads_strict(data, where)
    try:
        expected = canonical_bytes(value)
    except ValueError as exc:
        raise NotCanonical(where, str(exc)) from None
    if expected != data:
        offset = next(
            (i for i, (a, b) in enumerate(zip(expected, data, strict=False)) if a != b),
            min(len(expected), len(data)),
        )
        raise NotCanonical(
            where, f"bytes are not RFC 8785 canonical JSON (first difference at byte {offset})"
        )
    return value
