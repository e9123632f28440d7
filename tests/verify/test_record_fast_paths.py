"""The fast paths of JSON Lines records agree exactly with the checks they stand in for (ADR 0012).

Two shortcuts make a line cheap: a whole-document canonical test (one C parse, one C re-encoding,
two regular expressions) that either proves the bytes RFC 8785 canonical or hands them to the
member-by-member check; and, for the transport log and the socket ledger, the model alone for a
document the model accepts. Each is sound only if:

- whatever the whole-document test accepts is the ``rfc8785`` package's encoding of its value,
  and ``loads_canonical`` answers every input exactly as ``parse_canonical`` does;
- the model accepts no document of those kinds that the committed JSON Schema refuses, so that
  ``validate_document`` answers every input exactly as the schema-then-model path did.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from bundle_schema import KINDS
from bundle_schema.canonical import _UNDECIDED, _whole_canonical, loads_canonical, parse_canonical
from bundle_schema.documents import MODEL_FIRST, _validator, validate_document
from bundle_schema.errors import DocumentError

SAFE = 2**53 - 1

# --- canonical JSON ------------------------------------------------------------------------------

floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 1e16, 1e21, 1e22, 1e-7, 1e-6, 1e-5, 5e-324, 0.1, 2.001, 123456789.5]
)
tricky_text = st.text() | st.sampled_from(
    ["127.0.0.1", "v1.0", "a:1.0,", "1e+16", "\u2028", "\x7f", "\x00", "é", "😀", "\ue000"]
)
scalars = st.none() | st.booleans() | st.integers(-SAFE, SAFE) | floats | tricky_text
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(tricky_text, children, max_size=5)
    ),
    max_leaves=30,
)


def _encodings(value: Any) -> list[bytes]:
    """The canonical bytes of ``value`` (when it has them) and other JSON texts of it."""
    out = []
    with contextlib.suppress(rfc8785.CanonicalizationError):
        out.append(rfc8785.dumps(value))
    for keys in (True, False):
        for ascii_only in (True, False):
            for separators in ((",", ":"), (", ", ": ")):
                try:
                    text = json.dumps(
                        value, sort_keys=keys, ensure_ascii=ascii_only, separators=separators
                    )
                    out.append(text.encode("utf-8"))
                except (ValueError, UnicodeEncodeError):
                    pass
    return out


def _outcome(call: Any, data: bytes) -> Any:
    try:
        return ("value", json.dumps(call(data), sort_keys=True))
    except DocumentError as exc:
        return ("refused", type(exc).__name__, str(exc))


def _check_bytes(data: bytes) -> None:
    value = _whole_canonical(data)
    if value is not _UNDECIDED:
        assert rfc8785.dumps(value) == data, data
    assert _outcome(lambda d: loads_canonical(d, "doc"), data) == _outcome(
        lambda d: parse_canonical(d, "doc").value, data
    )


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(json_values)
def test_what_the_whole_document_test_accepts_is_the_rfc8785_encoding(value: Any) -> None:
    for data in _encodings(value):
        _check_bytes(data)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.binary(max_size=40) | st.text(max_size=40).map(str.encode))
def test_arbitrary_bytes_are_answered_as_the_member_check_answers_them(data: bytes) -> None:
    _check_bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"t":1.0}', b'{"t":-0.0}', b"[1e+16]", b"[1e-7]", b"[1e-07]", b"[0.00001]", b"1.5",
        b'{"a":"127.0.0.1","t":2.001}', b'{"\xef\x80\x80":1,"\xf0\x9f\x98\x80":2}',
        b'{"\xf0\x9f\x98\x80":2,"\xef\x80\x80":1}', b'"\\ud800"', b'"\\u007f"', b'"\x7f"',
        b'{"a":1,"a":1}', b"[NaN]", b"[9007199254740992]", b"\xef\xbb\xbf{}", b"[1.50]",
    ],
)  # fmt: skip
def test_the_edges_of_the_whole_document_test(data: bytes) -> None:
    _check_bytes(data)


def test_the_whole_document_test_decides_a_ledger_line_and_leaves_the_doubtful_ones() -> None:
    line = (
        b'{"address":"127.0.0.1","family":"AF_INET","outcome":"connected","pid":7,"port":80,'
        b'"process":"p","schema_version":1,"seq":0,"t":2.001}'
    )
    assert _whole_canonical(line) is not _UNDECIDED
    assert _whole_canonical(line.replace(b"2.001", b"2.0")) is _UNDECIDED  # RFC 8785: 2
    assert _whole_canonical(line.replace(b"2.001", b"2")) is not _UNDECIDED
    assert _whole_canonical('{"a":"😀"}'.encode()) is _UNDECIDED  # key order: UTF-16


# --- the model alone for the transport log and the socket ledger ---------------------------------

odd = (
    st.none()
    | st.booleans()
    | st.integers(-3, 2**54)
    | st.sampled_from([0.0, 1.0, 1.5, -1.0, 1e300])
    | st.text(max_size=6)
    | st.sampled_from(["GET\n", "/\n", "AF_INET\n", "connected\n", "E1\n", "utf-8\n", "a\n", ""])
    | st.lists(st.integers(0, 3), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)
"""Values of the wrong type, at the edge of a bound, or a pattern's match plus a newline
(Python's ``$`` matches before a final newline; the model's does not)."""


def _either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return valid | valid | odd


seconds = st.sampled_from([0, 0.0, 0.5, 2, 1e9]) | st.floats(min_value=-1, max_value=1e6)
body = st.fixed_dictionaries(
    {"encoding": _either(st.sampled_from(["utf-8", "base64"])), "data": _either(st.text())},
    optional={"extra": odd},
)
chunk = st.fixed_dictionaries(
    {"t": _either(seconds), "data": _either(st.text(max_size=20))}, optional={"x": odd}
)
headers = st.dictionaries(st.text(max_size=8), _either(st.text(max_size=5000)), max_size=3)
identifier = st.sampled_from(["coding", "a", "A9._:+-", "-a", "a" * 128, "a" * 129, "a\n"])
short = st.text(max_size=300) | st.sampled_from(["x" * 256, "x" * 257, "x" * 4096, "x" * 4097])

exchange = st.fixed_dictionaries(
    {
        "schema_version": _either(st.just(1)),
        "id": _either(st.integers(0, SAFE + 2)),
        "started": _either(seconds),
        "method": _either(st.sampled_from(["GET", "POST", "A" * 16, "A" * 17, "get"])),
        "path": _either(st.sampled_from(["/v1/models", "/", "x", "/" + "a" * 4096])),
    },
    optional={
        "component": _either(identifier),
        "ended": _either(seconds),
        "status": _either(st.integers(90, 610)),
        "request_headers": _either(headers),
        "response_headers": _either(headers),
        "request_body": _either(body),
        "response_body": _either(body),
        "chunks": _either(st.lists(chunk, max_size=3)),
        "error": _either(short),
        "redirect": _either(short),
        "response_model": _either(short),
        "unexpected": odd,
    },
)
ledger_entry = st.fixed_dictionaries(
    {
        "schema_version": _either(st.just(1)),
        "seq": _either(st.integers(-1, SAFE + 2)),
        "t": _either(seconds),
        "pid": _either(st.integers(-1, 2**40)),
        "process": _either(short),
        "family": _either(st.sampled_from(["AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"])),
        "address": _either(short),
        "outcome": _either(
            st.sampled_from(["connected", "in-progress", "ECONNREFUSED", "E", "Eaa", "x"])
        ),
    },
    optional={
        "port": _either(st.integers(-1, 65536)),
        "component": _either(identifier),
        "unexpected": odd,
    },
)


def _old_path(kind_name: str, value: dict[str, Any]) -> Any:
    """What ``validate_document`` did before the model went first: schema, then model."""
    kind = KINDS[kind_name]
    if value.get("schema_version") != 1 or isinstance(value.get("schema_version"), bool):
        return ("version",)
    error = best_match(_validator(kind_name).iter_errors(value))
    if error is not None:
        return ("schema", error.json_path, error.message)
    try:
        return ("model", kind.model.model_validate(value))
    except ValidationError as exc:
        return ("refused", exc.errors()[0]["loc"])


def _check_model_first(kind_name: str, value: dict[str, Any]) -> None:
    kind = KINDS[kind_name]
    try:
        model: BaseModel | None = kind.model.model_validate(value)
    except ValidationError:
        model = None
    if model is not None:
        assert _validator(kind_name).is_valid(value), value
    before = _old_path(kind_name, value)
    try:
        after: Any = validate_document(kind, value, "doc")
    except DocumentError as exc:
        assert before[0] != "model", (value, exc)
        return
    assert before == ("model", after), value


def test_the_model_goes_first_for_the_two_huge_records_and_the_manifest_only() -> None:
    assert {"transport-exchange", "socket-ledger-entry", "manifest"} == MODEL_FIRST


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(exchange)
def test_the_model_accepts_no_exchange_the_committed_schema_refuses(value: Any) -> None:
    _check_model_first("transport-exchange", value)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(ledger_entry)
def test_the_model_accepts_no_ledger_entry_the_committed_schema_refuses(value: Any) -> None:
    _check_model_first("socket-ledger-entry", value)


def test_the_differential_tests_see_both_sides() -> None:
    good = {"schema_version": 1, "seq": 0, "t": 2, "pid": 1, "process": "p", "port": 1,
            "family": "AF_INET", "address": "127.0.0.1", "outcome": "connected"}  # fmt: skip
    assert _validator("socket-ledger-entry").is_valid(good)
    _check_model_first("socket-ledger-entry", good)
    for bad in ({**good, "outcome": "E\n"}, {**good, "seq": 1.0}, {**good, "pid": True}):
        with pytest.raises(ValidationError):
            KINDS["socket-ledger-entry"].model.model_validate(bad)
        _check_model_first("socket-ledger-entry", bad)


# --- the model alone for the manifest --------------------------------------------------------

_RESULT, _TREE = "components/coding/result.json", "upstreams/s/tree.txt"
_DIGEST = "sha256:" + "a" * 64
_VALID_MANIFEST: dict[str, Any] = {
    "schema_version": 1, "run_id": "run-1", "created_at": "2026-12-01T00:00:00Z",
    "runner": {"name": "evidence-audit", "version": "1.0"}, "scoring_generation": "gx10-v5",
    "profile": "smoke", "pin_set": {"id": "p", "digest": _DIGEST},
    "model": {"runtime_model_id": "m", "digest": _DIGEST, "digest_source": "declared",
              "engine": None, "endpoint": "http://127.0.0.1:1"},
    "upstreams": [{"name": "s", "repository": "r", "commit": "a" * 40, "clean": True,
                   "tree": _TREE}],
    "components": [{"name": "coding", "result": _RESULT}],
    "claims": {"outcome": "QUALIFIED", "result_validity": "VALID",
               "profile_decision": "MEETS_PROFILE", "rankable": False, "aggregate_score": 50.5,
               "executed_weight": 40, "component_scores": {"coding": 50.5}, "reasons": ["r"]},
    "evidence": {_RESULT: {"digest": _DIGEST, "size": 1, "media_type": "application/json"},
                 _TREE: {"digest": _DIGEST, "size": 0, "media_type": "text/plain"}},
    "content_digest": _DIGEST,
}  # fmt: skip
"""A manifest both the model and the committed schema accept."""
_PLACES = [
    ("schema_version",),
    ("run_id",),
    ("created_at",),
    ("runner", "name"),
    ("runner", "version"),
    ("runner", "extra"),
    ("scoring_generation",),
    ("profile",),
    ("pin_set", "id"),
    ("pin_set", "digest"),
    ("model", "runtime_model_id"),
    ("model", "digest"),
    ("model", "digest_source"),
    ("model", "engine"),
    ("model", "endpoint"),
    ("model", "x"),
    ("upstreams", 0, "name"),
    ("upstreams", 0, "repository"),
    ("upstreams", 0, "commit"),
    ("upstreams", 0, "clean"),
    ("upstreams", 0, "tree"),
    ("components", 0, "name"),
    ("components", 0, "result"),
    ("claims", "outcome"),
    ("claims", "result_validity"),
    ("claims", "profile_decision"),
    ("claims", "rankable"),
    ("claims", "aggregate_score"),
    ("claims", "executed_weight"),
    ("claims", "component_scores"),
    ("claims", "reasons"),
    ("claims", "extra"),
    ("evidence", _RESULT, "digest"),
    ("evidence", _RESULT, "size"),
    ("evidence", _RESULT, "media_type"),
    ("evidence", _RESULT, "extra"),
    ("content_digest",),
    ("unexpected",),
]
"""Where one value of a manifest is replaced (or added: the ``extra`` places)."""
_VALUES = odd | st.sampled_from([
    "sha256:" + "A" * 64, "sha256:" + "a" * 63, "a" * 40 + "\n", "A" * 40, "2026-12-01 00:00:00Z",
    "2026-12-01T00:00:00.5Z", "a//b", "./a", "a/..", "a" * 257, "Application/json", 100.0001,
    -0.1, 100, 0, {"coding": None}, {"coding": 101}, {"a\n": 1}, ["x" * 4097], None,
])  # fmt: skip


@st.composite
def manifest(draw: st.DrawFn) -> dict[str, Any]:
    """The valid manifest with none, one or two of its values replaced."""
    value = copy.deepcopy(_VALID_MANIFEST)
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        *path, last = draw(st.sampled_from(_PLACES))
        node = value
        for key in path:
            node = node[key]
        node[last] = draw(_VALUES)
    return value


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(manifest())
def test_the_model_accepts_no_manifest_the_committed_schema_refuses(value: Any) -> None:
    _check_model_first("manifest", value)


def test_the_manifest_differential_test_sees_both_sides(built_examples: dict[str, Any]) -> None:
    """A real manifest reads by the model alone; one of its fields broken is refused as the
    schema-then-model path refuses it."""
    good = json.loads((built_examples["gx10-smoke"] / "manifest.json").read_bytes())
    assert _validator("manifest").is_valid({**good, "evidence": {}})
    _check_model_first("manifest", good)
    for bad in (
        {**good, "run_id": "a\n"},
        {**good, "claims": {**good["claims"], "rankable": 1}},
        {**good, "evidence": {"a": {**next(iter(good["evidence"].values())), "size": -1}}},
    ):
        with pytest.raises(ValidationError):
            KINDS["manifest"].model.model_validate(bad)
        _check_model_first("manifest", bad)  # fmt: skip
