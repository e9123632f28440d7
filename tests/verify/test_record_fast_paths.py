"""The fast paths of JSON Lines records agree exactly with the checks they stand in for (ADR 0012).

Two shortcuts make a line cheap: a whole-document canonical test (one C parse, one C re-encoding,
two regular expressions) that either proves the bytes RFC 8785 canonical or hands them to the
member-by-member check; and, for the manifest and every evidence record kind (``MODEL_FIRST``),
the model alone for a document the model accepts. Each is sound only if:

- whatever the whole-document test accepts is the ``rfc8785`` package's encoding of its value,
  and ``loads_canonical`` answers every input exactly as ``parse_canonical`` does;
- the model accepts no document of those kinds that the committed JSON Schema refuses, so that
  ``validate_document`` answers every input exactly as the schema-then-model path did (the
  same model, or the same refusal message). Hand-made strategies for the transport log, the
  ledger and the manifest, and one strategy for every kind that bends real documents.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from bundle_schema import KINDS, RECORD_MEDIA_TYPES
from bundle_schema.canonical import (
    _UNDECIDED,
    _whole_canonical,
    loads_canonical,
    loads_canonical_without,
    parse_canonical,
)
from bundle_schema.documents import (
    MODEL_FIRST,
    _json_path,
    _validator,
    _without_bulk,
    validate_document,
)
from bundle_schema.errors import DocumentError, one_line
from tests.properties import examples

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
    _check_without(data)


def _check_without(data: bytes) -> None:
    """``loads_canonical_without`` answers as ``parse_canonical`` does, and gives an object less
    each of its members (or less a key it lacks) as the ``rfc8785`` package encodes it."""
    expected = _outcome(lambda d: parse_canonical(d, "doc").value, data)
    parsed = expected[0] == "value" and json.loads(expected[1])
    for key in [*parsed, "absent key"] if type(parsed) is dict else ["k"]:
        assert _outcome(lambda d, k=key: loads_canonical_without(d, "doc", k)[0], data) == expected
        if expected[0] == "value":
            rest = loads_canonical_without(data, "doc", key)[1]
            if type(parsed) is dict:
                assert rest == rfc8785.dumps({k: v for k, v in parsed.items() if k != key}), data
            else:
                assert rest is None


@examples(1000)
@given(json_values)
def test_what_the_whole_document_test_accepts_is_the_rfc8785_encoding(value: Any) -> None:
    for data in _encodings(value):
        _check_bytes(data)


@examples(700)
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
    """What ``validate_document`` did before the model went first: schema (but the entries of
    a bulk field, ``_BULK_FIELDS``), then model; a refusal as the message it gave."""
    kind = KINDS[kind_name]
    version = value.get("schema_version")
    if kind.versioned and (version != 1 or isinstance(version, bool)):
        return ("version",)
    error = best_match(_validator(kind_name).iter_errors(_without_bulk(kind, value)))
    if error is not None:
        return ("schema", f"{error.json_path}: {one_line(error.message, 200)}")
    try:
        return ("model", kind.model.model_validate(value))
    except ValidationError as exc:
        first = exc.errors()[0]
        return (
            "refused",
            f"{_json_path(first['loc'])}: {first['msg'].removeprefix('Value error, ')}",
        )


def _check_model_first(kind_name: str, value: dict[str, Any]) -> None:
    """Whatever the model accepts the whole committed schema accepts, and ``validate_document``
    answers as the old path did: the same model, or the same refusal."""
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
        if before[0] != "version":
            assert (before[1], exc.where) == (exc.detail, "doc"), value
        return
    assert before == ("model", after), value


RECORD_KINDS = frozenset(kind.name for kind in RECORD_MEDIA_TYPES.values())


def test_the_model_goes_first_for_the_manifest_and_every_record_kind() -> None:
    assert RECORD_KINDS | {"manifest"} == MODEL_FIRST
    assert len(RECORD_KINDS) == 14


@examples(1000)
@given(exchange)
def test_the_model_accepts_no_exchange_the_committed_schema_refuses(value: Any) -> None:
    _check_model_first("transport-exchange", value)


@examples(1000)
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
    "2026-12-01T00:00:0\U00010d40Z", "2026-12-01T00:00:0\u0660Z",
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


@examples(1000)
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


# --- the model alone for every record kind: one strategy over real documents -----------------

_SMALL_RECORDS: dict[str, list[dict[str, Any]]] = {
    "bfcl-plan": [{"shards": [_DIGEST, "sha256:" + "b" * 64]}, {"shards": []}],
    "bfcl-shard": [
        {"subset_totals": {"parallel": {"hits": 1, "n": 2}, "simple_python": {"hits": 2, "n": 2}},
         "shard_id": "s1", "sample_ids": ["parallel_0", "parallel_1", "simple_0", "simple_1"],
         "exchanges": [3, 4]},
        {"subset_totals": {}, "shard_id": None, "sample_ids": None, "exchanges": None},
    ],
    "task-tallies": [
        {"harness": "inspect-ai", "version": "0.3.90", "model": "openai/m",
         "tasks": {"inspect_evals/gsm8k": {"hits": 3, "n": 4}, "arith_local": {"hits": 0, "n": 1}}},
    ],
}  # fmt: skip
"""Valid documents of the record kinds no example bundle holds (a BFCL run's and a gate's)."""


@pytest.fixture(scope="session")
def real_documents(built_examples: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per model-first kind, the distinct documents the example bundles hold (at most 12 a
    kind: the first of each record, and its first lines), and :data:`_SMALL_RECORDS`."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for name in sorted(built_examples):
        root = built_examples[name]
        manifest = json.loads((root / "manifest.json").read_bytes())
        found.setdefault("manifest", {})[name] = manifest
        for entry in manifest["evidence"].values():
            kind = RECORD_MEDIA_TYPES.get(entry["media_type"])
            if kind is None:
                continue
            data = (root / "blobs" / "sha256" / entry["digest"][7:]).read_bytes()
            for line in data.splitlines()[:6] if kind.lines else [data]:
                found.setdefault(kind.name, {}).setdefault(line.decode(), json.loads(line))
    out = {kind: list(docs.values())[:12] for kind, docs in found.items()}
    return out | _SMALL_RECORDS


_NEW = object()
"""A place past the end of an object (a key it does not have) or an array (one more item)."""
_ODD_SCALARS: list[Any] = [
    None, True, False, 0, 1, -1, 100, 101, 65536, SAFE, SAFE + 1, 2**63, -(2**63), 10**30,
    0.0, -0.0, 0.5, 1.0, 100.0, 100.0001, -0.1, 1e300, -1e300, 5e-324,
    "", "a", "a\n", "\n", " ", "x" * 65, "x" * 129, "x" * 257, "x" * 1025, "x" * 4097,
    _DIGEST, "sha256:" + "A" * 64, "sha256:" + "a" * 63, _DIGEST + "\n", "a" * 40, "a" * 40 + "\n",
    "2026-11-02T10:41:17Z", "2026-11-02T10:41:17Z\n", "2026-11-02T10:41:1\U00010d40Z",
    "\u0662\u0660\u0662\u0666-11-02T10:41:17Z", "2026-11-02 10:41:17Z", "2026-11-02T10:41:17.Z",
    "\ud800", "é", "😀", "\x00", "A/b", "a//b", "./a", "a/..", "a/b", "COMPLETED", "COMPLETED\n",
    "PASS", "PASS\n", "response", "tool_call", "removed", "off", "inspect-ai", "AF_INET", "utf-8",
    "base64", "Zm9v", "Zm9v\n", "a.b", "a.", ".a", "/", "/\n",
]  # fmt: skip
"""Values of the wrong type, at a bound, just past one, a pattern's match plus a newline
(Python's ``$`` matches before a final newline), digits of a Unicode newer than Python's (the
Rust regex crate's ``\\d`` takes them) or of another script, a lone surrogate."""
_ODD_KEYS = [
    "", "a\n", "A B", "x" * 64, "x" * 65, "x" * 128, "x" * 129, "unexpected", "Upper", "9",
    "a.b", "a/b", "a:b", "_", "-a", "\U00010d40", "é", "schema_version", "before", "process",
]  # fmt: skip
_JUNK = st.recursive(
    st.sampled_from(_ODD_SCALARS),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(_ODD_KEYS), children, max_size=3)
    ),
    max_leaves=6,
)


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place of a document: each member and item, and past the end of each container."""
    if isinstance(value, dict):
        members = [(key, child) for key, child in value.items()]
    elif isinstance(value, list):
        members = list(enumerate(value))
    else:
        return []
    out = [(*path, _NEW)]
    for key, child in members:
        out += [(*path, key), *_places(child, (*path, key))]
    return out


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return [leaf for child in children for leaf in _leaves(child)]
    return [value]


_UNICODE_16_DIGITS = {ord("0") + i: 0x10D40 + i for i in range(10)}  # Garay, new in Unicode 16
_ARABIC_DIGITS = {ord("0") + i: 0x0660 + i for i in range(10)}
_ODD_CHARACTERS = ["\n", " ", "/", ".", "A", "a", "0", "é", "\U00010d40", "\u0662", "\x00"]
"""Characters to put in a valid text: a Unicode 16 digit (Rust's ``\\d`` takes it, Python 3.11's
does not), an Arabic-Indic digit (both take it), case, separators, a newline."""


def _bent(text: str) -> st.SearchStrategy[str | None]:
    """Texts next to a valid one: with a newline, longer, shorter, a character put in or
    replaced, its digits those of another script."""
    bent = [text + "\n", "\n" + text, text.upper(), text + "x" * 4097, text[:-1], text + " ",
            text + "/", None, text.translate(_UNICODE_16_DIGITS),
            text.translate(_ARABIC_DIGITS)]  # fmt: skip
    if not text:
        return st.sampled_from(bent)
    return st.sampled_from(bent) | st.builds(
        lambda i, c, keep: text[:i] + c + text[i + keep :],
        st.integers(0, len(text) - 1), st.sampled_from(_ODD_CHARACTERS), st.sampled_from([1, 1, 0]),
    )  # fmt: skip


def _near(original: Any) -> st.SearchStrategy[Any]:
    """Values next to a valid one: its type changed, past its bounds, its text bent."""
    if isinstance(original, str):
        return _bent(original)
    if isinstance(original, bool):
        values = [not original, int(original), float(original), str(original)]
    elif isinstance(original, int):
        values = [float(original), original + 1, -original - 1, original + SAFE, str(original)]
    elif isinstance(original, float):
        values = [int(original), -original, original * 1e6, original + 100]
    elif isinstance(original, list):
        values = [[], original + original, [*original, None], [original], {"0": original}]
    elif isinstance(original, dict):
        values = [{}, [original], list(original), {**original, "": None}]
    else:
        values = [None]
    return st.sampled_from(copy.deepcopy(values))


@st.composite
def near_valid(draw: st.DrawFn, documents: list[dict[str, Any]]) -> dict[str, Any]:
    """A valid document with none, one or two changes: a value replaced (by one next to it,
    an odd one, nested junk or another value of the document), a member or item removed or
    added, a key renamed. The place is drawn by its shape first (its path with every array
    index as one), so that the items of a long array do not crowd out the other fields."""
    value = copy.deepcopy(draw(st.sampled_from(documents)))
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        shapes: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for place in _places(value):  # one shape for all items of an array: chunks[*].t
            shapes.setdefault(tuple("*" if type(k) is int else k for k in place), []).append(place)
        *path, last = draw(st.sampled_from(shapes[draw(st.sampled_from(list(shapes)))]))
        parent = value
        for key in path:
            parent = parent[key]
        old = _NEW if last is _NEW else parent[last]
        action = draw(st.sampled_from(["set"] * 6 + ["remove", "rename"]))
        if action == "remove" and old is not _NEW:
            del parent[last]
            continue
        if action == "rename" and old is not _NEW and isinstance(parent, dict):
            new_key = draw(st.sampled_from([last + "\n", last.upper(), last[:-1], *_ODD_KEYS]))
            parent[new_key] = parent.pop(last)
            continue
        near = _near(None if old is _NEW else old)
        new = draw(
            near
            | near
            | st.sampled_from(_ODD_SCALARS)
            | _JUNK
            | st.sampled_from(_leaves(value) or [None])
        )
        if last is not _NEW:
            parent[last] = new
        elif isinstance(parent, list):
            parent.append(new)
        else:
            parent[draw(st.sampled_from(_ODD_KEYS))] = new
    return value


@pytest.mark.parametrize("kind_name", sorted(MODEL_FIRST))
@examples(500)
@given(data=st.data())
def test_the_model_accepts_no_document_the_committed_schema_refuses(
    kind_name: str, real_documents: dict[str, list[dict[str, Any]]], data: st.DataObject
) -> None:
    """Near-valid documents of every model-first kind, from real ones: the model takes none
    the committed schema refuses, and ``validate_document`` answers as the old path did."""
    _check_model_first(kind_name, data.draw(near_valid(real_documents[kind_name])))


_BREAKS: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "transport-exchange": [(("id",), 1.0), (("method",), "POST\n"), (("path",), "v1"),
                           (("response_body", "encoding"), "base64")],
    "socket-ledger-entry": [(("seq",), True), (("outcome",), "E\n"), (("port",), 65536)],
    "run-config": [(("observer", "exchanges"), 24.0), (("cleanup",), None),
                   (("reasoning_policy", "serialization", "path"), "chat.enable\n")],
    "direct-probe": [(("exchange",), True), (("finish_reason",), "x" * 65), (("contract",), "-a")],
    "component-result": [(("status",), "COMPLETED\n"), (("metrics", "a\n"), 1),
                         (("started_at",), "2026-11-02T10:00:0\U00010d42Z"),
                         (("schema_version",), 1.0)],
    "quarantine-marker": [(("upstream_reason",), "x" * 4097), (("source",), "./a"),
                          (("provisional_metrics", "tasks"), "125")],
    "spark-quality": [(("code_domain_quality",), 100.0001), (("run_valid",), 1),
                      (("tier2", "status"), "PARTIAL\n")],
    "spark-repeat": [(("agreement", 0), 1.5), (("repeats",), 3.0), (("unexpected",), 1)],
    "hermes-task": [(("evidence", "process", "present"), 1), (("task",), "a\n"),
                    (("protected_inputs", "before"), _DIGEST + "\n"), (("evidence", "x"), None)],
    "benchlocal-packs": [(("packs", "a\n"), 50), (("mean",), 101),
                         (("packs", "behavioral-core"), True)],
    "infermark-streaming": [(("concurrency",), True), (("wall_seconds",), -0.1),
                            (("requests",), SAFE + 1)],
    "bfcl-plan": [(("shards", 0), "sha256:" + "A" * 64), (("shards",), {}), (("shards", 1), None)],
    "bfcl-shard": [(("subset_totals", "Parallel"), {"hits": 0, "n": 0}), (("sample_ids", 0), ""),
                   (("exchanges", 0), -1), (("subset_totals", "parallel", "n"), 2.0)],
    "task-tallies": [(("tasks", "a\n"), {"hits": 0, "n": 1}), (("harness",), "lm-eval\n"),
                     (("version",), "")],
    "manifest": [(("created_at",), "2026-11-02T10:00:0\U00010d42Z"), (("profile",), "full\n")],
}  # fmt: skip
"""Per model-first kind, changes of its first real document that the model refuses: some the
committed schema refuses too, some only the model (a pattern's match plus a newline, a float
for an integer), and a timestamp of Unicode 16 digits that the Rust regex alone would take."""


def test_every_model_first_kind_has_breaks() -> None:
    assert set(_BREAKS) == MODEL_FIRST


@pytest.mark.parametrize("kind_name", sorted(MODEL_FIRST))
def test_the_differential_test_sees_both_sides_of_every_kind(
    kind_name: str, real_documents: dict[str, list[dict[str, Any]]]
) -> None:
    """A real document reads by the model alone; each break of it is refused by the model, then
    by ``validate_document`` as the schema-then-model path refused it."""
    kind = KINDS[kind_name]
    good = real_documents[kind_name][0]
    assert _validator(kind_name).is_valid(good)
    assert validate_document(kind, good, "doc") == kind.model.model_validate(good)
    _check_model_first(kind_name, good)
    for path, odd_value in _BREAKS[kind_name]:
        bad = copy.deepcopy(good)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = odd_value
        with pytest.raises(ValidationError):
            kind.model.model_validate(bad)
        with pytest.raises(DocumentError):
            validate_document(kind, bad, "doc")
        _check_model_first(kind_name, bad)
