"""Canonical JSON and strict parsing: the one place both are done."""

from __future__ import annotations

import pytest

from bundle_schema import canonical_bytes, loads_canonical, loads_strict
from bundle_schema.canonical import MAX_DEPTH
from bundle_schema.errors import MalformedJSON, NotCanonical

REFUSED = [
    ("duplicate key", b'{"a":1,"a":2}', "duplicate key 'a'"),
    ("NaN", b'{"a":NaN}', "NaN is not a JSON number"),
    ("Infinity", b'{"a":Infinity}', "Infinity is not a JSON number"),
    ("minus Infinity", b"[-Infinity]", "-Infinity is not a JSON number"),
    ("overflowing float", b"[1e400]", "out of range"),
    ("trailing data", b'{"a":1} {}', "Extra data"),
    ("invalid UTF-8", b'{"a":"\xff"}', "invalid UTF-8 at byte 6"),
    ("byte-order mark", b'\xef\xbb\xbf{"a":1}', "byte-order mark"),
    ("deep nesting", b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested deeper"),
    ("a million levels", b"[" * 1_000_000, "nested deeper"),
    ("empty", b"", "Expecting value"),
    ("truncated", b'{"a":', "Expecting value"),
]


@pytest.mark.parametrize(
    ("data", "fragment"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_strict_parse_refuses(data: bytes, fragment: str) -> None:
    with pytest.raises(MalformedJSON) as caught:
        loads_strict(data, "doc.json")
    assert str(caught.value).startswith("doc.json: ")
    assert fragment in str(caught.value)


def test_nesting_at_the_limit_is_accepted() -> None:
    data = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert loads_strict(data, "doc.json") is not None


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '{"a":"' + "[" * (MAX_DEPTH + 10) + '\\"{"}'
    assert loads_strict(text.encode(), "doc.json") == {"a": "[" * (MAX_DEPTH + 10) + '"{'}


NOT_CANONICAL = [
    ("whitespace", b'{"a": 1}'),
    ("key order", b'{"b":1,"a":2}'),
    ("float spelling", b'{"a":1.0}'),
    ("exponent spelling", b'{"a":1E2}'),
    ("escaped ascii", b'{"a":"\\u0041"}'),
    ("trailing newline", b'{"a":1}\n'),
    ("huge integer", b'{"a":18446744073709551616}'),
]


@pytest.mark.parametrize("data", [c[1] for c in NOT_CANONICAL], ids=[c[0] for c in NOT_CANONICAL])
def test_non_canonical_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(NotCanonical, match=r"^doc\.json: "):
        loads_canonical(data, "doc.json")


def test_canonical_round_trip() -> None:
    value = {"b": [1, 2.5, None, True], "a": {"é": "x", "z": -0.0}, "c": 1e21}
    data = canonical_bytes(value)
    assert data == b'{"a":{"z":0,"\xc3\xa9":"x"},"b":[1,2.5,null,true],"c":1e+21}'
    assert loads_canonical(data, "doc.json") == {
        "a": {"z": 0, "é": "x"},
        "b": [1, 2.5, None, True],
        "c": 1e21,
    }


def test_canonical_bytes_refuses_nan() -> None:
    with pytest.raises(ValueError, match="no canonical JSON form"):
        canonical_bytes({"a": float("nan")})
