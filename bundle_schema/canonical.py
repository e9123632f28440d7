"""Canonical JSON (RFC 8785) and strict JSON parsing: the only place either is done.

Canonical bytes are what the bundle hashes and signs. Parsing is strict: a document is refused when
its bytes are not UTF-8, it repeats a key, it holds NaN or an infinity, it has trailing data or it
nests deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import rfc8785

from bundle_schema.errors import InvalidInput, MalformedJSON, NotCanonical

__all__ = [
    "MAX_DEPTH",
    "CanonicalDocument",
    "canonical_bytes",
    "canonical_members",
    "depth_of",
    "digest_of",
    "join_members",
    "loads_canonical",
    "loads_canonical_without",
    "loads_strict",
    "member_key",
    "parse_canonical",
    "write_array",
]

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in any document."""


_FLOAT_POINT = re.compile(r"\.\d(?<=\d\.\d)")
_FLOAT_EXPONENT = re.compile(r"e[+-]\d(?<=\de[+-]\d)")
"""Between them present in every finite float's repr ("1.0", "1e+16", "1.5e-07"). Strings can
match too ("0.1.0"); that only sends their member to the reference encoder. Hex digests never do.
Each pattern starts with a literal and checks the digit before it last, so the engine scans for
the literal instead of trying every digit."""
_LONG_INTEGER = re.compile(r"(?:^|[:,\[])-?\d{16,}(?:[,\]}]|$)")
"""An integer token of 16 or more digits (possibly beyond 2**53)."""
_SAFE_INTEGER = 2**53 - 1


def _string_keys(value: Any) -> bool:
    """Whether every object key is a str (``json.dumps`` would turn others into strings)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if not all(type(key) is str for key in item):
                return False
            stack.extend(child for child in item.values() if type(child) in (dict, list))
        elif type(item) is list:
            stack.extend(child for child in item if type(child) in (dict, list))
    return True


def _plain(text: str, *, from_json: bool) -> bool:
    """Whether ``json.dumps`` text (sorted keys, compact) is already the RFC 8785 encoding."""
    return bool(
        text
        and text.isascii()
        and not _FLOAT_POINT.search(text)
        and not _FLOAT_EXPONENT.search(text)
        and (from_json or not _LONG_INTEGER.search(text))
    )


def _encode(value: Any, *, from_json: bool = False) -> bytes:
    """RFC 8785 encoding: the standard library's where it provably agrees, rfc8785 elsewhere.

    ``json.dumps(sort_keys=True)`` encodes exactly as RFC 8785 when every key is a str, every
    string is ASCII (the same escapes; code point order equals UTF-16 order), and there are no
    floats (whose shortest forms differ) and no integers beyond 2**53. Its output shows the last
    three at C speed: non-ASCII text survives as non-ASCII, a float matches :data:`_FLOAT_POINT`
    or :data:`_FLOAT_EXPONENT`, and a long integer :data:`_LONG_INTEGER`. Everything else goes
    to the ``rfc8785`` package.

    Args:
        value: JSON data.
        from_json: ``value`` was just parsed by :func:`parse_canonical`, whose parser already
            refused long integers and can only have made str keys.
    """
    try:
        text = (
            json.dumps(
                value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
            )
            if from_json or _string_keys(value)
            else ""
        )
    except (TypeError, ValueError):
        text = ""
    if _plain(text, from_json=from_json):
        return text.encode()
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"value has no canonical JSON form: {exc}") from exc


def canonical_members(value: dict[str, Any], *, from_json: bool = False) -> dict[str, bytes]:
    """The canonical encoding of each member (``"key":value``) of a JSON object, by key.

    ``b"{" + b",".join(members in key order) + b"}"`` is the object's canonical encoding; see
    :func:`join_members`. Encoding members once lets a caller derive the encoding of the object
    without one of its members at no extra cost.

    Raises:
        ValueError: a member has no canonical JSON form.
    """
    return {key: _encode({key: child}, from_json=from_json)[1:-1] for key, child in value.items()}


def member_key(key: str) -> bytes:
    """The order of an object's members in RFC 8785 (section 3.2.3): by their keys' UTF-16 code
    units (``sorted(keys, key=member_key)``)."""
    return key.encode("utf-16-be")


def join_members(members: dict[str, bytes]) -> bytes:
    """Join member encodings from :func:`canonical_members` into a canonical object."""
    order = sorted(members, key=member_key)
    return b"{" + b",".join(members[key] for key in order) + b"}"


def write_array(out: IO[bytes], encoded: Iterable[bytes]) -> None:
    """Write a JSON array of values already encoded (canonically, each by
    :func:`canonical_bytes`) to ``out`` as they come: ``[``, the values joined by ``,``, ``]``,
    the array's canonical encoding, without holding it whole."""
    out.write(b"[")
    for index, value in enumerate(encoded):
        out.write(b"," + value if index else value)
    out.write(b"]")


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value (str keys only).

    Objects are encoded member by member, so one float or non-ASCII string sends only its own
    member to the slower reference encoder (see :func:`_encode`); a property test checks the
    result against the ``rfc8785`` package.

    Raises:
        ValueError: the value is not representable (NaN, an integer beyond 2**53, a non-str key).
    """
    if type(value) is dict:
        whole = _whole_plain(value)
        return whole if whole is not None else join_members(canonical_members(value))
    return _encode(value)


def _whole_plain(value: dict[str, Any]) -> bytes | None:
    """The whole object's encoding by one ``json.dumps``, when that provably is RFC 8785: ASCII
    text, str keys, no integer beyond 2**53, and no float but those ``json.dumps`` writes as
    the ``rfc8785`` package does (``str(f)``: no exponent, no zero fraction; see
    :func:`_whole_canonical`). Otherwise None, and members are encoded one by one."""
    if not _string_keys(value):
        return None
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError):
        return None
    if (
        text.isascii()
        and not _FLOAT_EXPONENT.search(text)
        and not _INTEGRAL_FLOAT.search(text)
        and not _LONG_INTEGER.search(text)
    ):
        return text.encode()
    return None


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


class _RefusedError(InvalidInput, ValueError):  # a ValueError too: the parser hooks raise it
    pass


def _constant(name: str) -> Any:
    raise _RefusedError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _RefusedError(f"number {text[:40]} is out of range")
    return value


def _int(text: str) -> int:
    # Past 16 digits it is beyond 2**53 anyway; never convert a huge one (Python refuses
    # integers of more than 4300 digits with a message about its own settings).
    value = int(text) if len(text) <= 17 else _SAFE_INTEGER + 1
    if not -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        raise _RefusedError(f"integer {text[:40]} is beyond 2**53")
    return value


MAX_INTEGER_DIGITS = 4300
"""Python's own cap on converting digits to an integer; past it, a clear refusal of ours."""


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INTEGER_DIGITS:
        raise _RefusedError(f"an integer of {len(text)} digits (over {MAX_INTEGER_DIGITS})")
    return int(text)


def depth_of(value: Any) -> int:
    """The nesting depth of parsed JSON (0 for a scalar), or the first depth past MAX_DEPTH."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        deeper: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            deeper += [child for child in children if type(child) in _CONTAINERS]
        level = deeper
    return depth


_CONTAINERS = (dict, list)


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
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_bounded_int,
        )
    except _RefusedError as exc:
        raise MalformedJSON(where, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise MalformedJSON(where, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # the C parser's own guard, far below any memory limit
        raise MalformedJSON(where, f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise MalformedJSON(where, str(exc)) from None
    if depth_of(value) > MAX_DEPTH:
        raise MalformedJSON(where, f"nested deeper than {MAX_DEPTH} levels")
    return value


@dataclass(frozen=True)
class CanonicalDocument:
    """A document parsed from bytes that are their own canonical form."""

    value: Any
    members: dict[str, bytes] | None
    """For an object: the canonical encoding of each member (see :func:`canonical_members`)."""


def _first_difference(one: bytes, two: bytes) -> int:
    return next(
        (i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b),
        min(len(one), len(two)),
    )


def parse_canonical(data: bytes, where: str) -> CanonicalDocument:
    """Parse JSON bytes and require them to be their own RFC 8785 canonical form.

    Canonical bytes hold no duplicate key, no NaN and no whitespace, so the bytes are parsed
    with the plain parser and compared with their re-encoding; only bytes that differ are parsed
    again strictly, to say exactly what is wrong with them. Nesting is bounded by the parser's
    own recursion guard here, not by :data:`MAX_DEPTH`: every document kind has a closed schema
    that refuses unexpected nesting without descending into it.

    Raises:
        MalformedJSON: see :func:`loads_strict`.
        NotCanonical: the bytes parse strictly, but are not the encoding of their value.
    """
    try:
        value = json.loads(data, parse_constant=_constant, parse_float=_float, parse_int=_int)
        from_json = True
    except (ValueError, RecursionError):
        value = loads_strict(data, where)  # raises with the precise reason, if there is one
        from_json = False  # it may hold integers beyond 2**53: the encoder must look for them
    try:
        members = canonical_members(value, from_json=from_json) if type(value) is dict else None
        expected = join_members(members) if members is not None else canonical_bytes(value)
    except ValueError as exc:
        raise NotCanonical(where, str(exc)) from None
    except RecursionError:
        raise MalformedJSON(where, f"nested deeper than {MAX_DEPTH} levels") from None
    if expected != data:
        loads_strict(data, where)  # duplicate keys, NaN, bad UTF-8: the precise reason
        raise NotCanonical(
            where,
            "bytes are not RFC 8785 canonical JSON "
            f"(first difference at byte {_first_difference(expected, data)})",
        )
    return CanonicalDocument(value, members)


_INTEGRAL_FLOAT = re.compile(r"\.0(?=[,\]}]|\Z)(?<=\d\.0)")
"""A float token whose fraction is ``0`` ("1.0", "-0.0"), which RFC 8785 writes without it. In
compact JSON a number token ends at a comma, a closing bracket or brace, or the end; text in a
string can match too ("v1.0,"), which only sends the document to the slower check, but an
address ("127.0.0.1") does not."""
_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")
"""A character beyond the BMP: where code point order and UTF-16 order of keys can differ."""
_UNDECIDED = object()


def _whole_canonical(data: bytes) -> Any:
    """The value of ``data`` when a cheap test proves the bytes canonical, else ``_UNDECIDED``.

    One C parse and one C re-encoding of the whole document. When the re-encoding is the text
    itself, it is also the RFC 8785 encoding of the value (the ``rfc8785`` package's) provided:
    no float token has an exponent or a zero fraction (every other float the package writes as
    ``str(f)``, as ``json.dumps`` does), and no character lies beyond the BMP (so that sorting
    keys by code point is sorting them by UTF-16 code units). Strings are escaped alike (the
    package's table is the standard library's: quote, backslash, the five short escapes, other
    controls as lowercase u00xx); integers are within 2**53 (the parser refuses the rest); the
    strict UTF-8 decode admits no surrogate. Anything else, and any doubt, is left to
    :func:`parse_canonical`. A hypothesis test compares this with the ``rfc8785`` package.
    """
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
        again = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (ValueError, RecursionError):
        return _UNDECIDED
    if (
        again != text
        or _FLOAT_EXPONENT.search(text)
        or _INTEGRAL_FLOAT.search(text)
        or (not text.isascii() and _SUPPLEMENTARY.search(text))
    ):
        return _UNDECIDED
    return value


def loads_canonical(data: bytes, where: str) -> Any:
    """Parse JSON bytes that must be their own canonical form; return the value.

    Bytes a cheap whole-document test proves canonical are parsed once (most records); the rest
    go through :func:`parse_canonical`, which decides and names the fault.

    Raises:
        MalformedJSON: see :func:`loads_strict`.
        NotCanonical: see :func:`parse_canonical`.
    """
    value = _whole_canonical(data)
    if value is not _UNDECIDED:
        return value
    return parse_canonical(data, where).value


def loads_canonical_without(data: bytes, where: str, key: str) -> tuple[Any, bytes | None]:
    """Parse JSON bytes that must be their own canonical form, as :func:`loads_canonical`; return
    the value and, for an object, the canonical encoding of the object less its member ``key``
    (what a seal over the rest of the document hashes; None for any other value).

    Bytes the whole-document test proves canonical (:func:`_whole_canonical`) are the standard
    library's encoding of their value and hold no token it writes otherwise than RFC 8785; the
    object less one member is encoded by the same encoder as the same members, in the same
    (sorted) order, each followed by what followed it (a comma or the closing brace), so the
    same holds of it. Other bytes go through :func:`parse_canonical`, whose member encodings
    give it. A hypothesis test compares both with the ``rfc8785`` package.

    Raises:
        MalformedJSON: see :func:`loads_strict`.
        NotCanonical: see :func:`parse_canonical`.
    """
    value = _whole_canonical(data)
    if value is not _UNDECIDED:
        if type(value) is not dict:
            return value, None
        rest = {k: child for k, child in value.items() if k != key}
        return value, json.dumps(
            rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    document = parse_canonical(data, where)
    if document.members is None:
        return document.value, None
    return document.value, join_members({k: m for k, m in document.members.items() if k != key})
