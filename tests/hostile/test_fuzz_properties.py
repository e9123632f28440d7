"""Property fuzzing of the manifest and evidence-record readers with hypothesis.

Generated manifests round-trip; mutated manifests and records are either accepted, exactly as
given, or refused with the project's own error; arbitrary bytes never crash the reader.

``make test`` runs 600 examples of each property (a few thousand in all); ``make fuzz`` runs
each property with EVIDENCE_AUDIT_FUZZ_EXAMPLES=100000.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundle_schema import KINDS, RECORD_MEDIA_TYPES, canonical_bytes, validate_document
from bundle_schema.errors import DefectiveBundle, DocumentError
from bundle_schema.layout import content_digest
from tests.data.hostile.generate import read_bundle
from tests.factories import seal_arguments
from verify import parse_manifest

EXAMPLES = int(os.environ.get("EVIDENCE_AUDIT_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 600,
    deadline=None,
    derandomize=not EXAMPLES,  # make test: the same examples every time; make fuzz: new ones
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SAFE = 2**53 - 1
HEX = st.text("0123456789abcdef", min_size=64, max_size=64)
SEGMENT = st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,11}\Z")
LOGICAL = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)
IDENTIFIER = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:+-]{0,20}\Z")
MEDIA = st.sampled_from(
    ["text/plain; charset=utf-8", "application/json", "application/octet-stream",
     *sorted(RECORD_MEDIA_TYPES)]
)  # fmt: skip
TIME = st.datetimes(min_value=dt.datetime(1970, 1, 1)).map(
    lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.floats(-1e300, 1e300, allow_nan=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    """A valid manifest value: evidence entries, components naming them, sealed."""
    names = draw(st.lists(LOGICAL, min_size=1, max_size=8, unique=True))
    evidence = {
        name: {"digest": "sha256:" + draw(HEX), "size": draw(st.integers(0, SAFE)),
               "media_type": draw(MEDIA)}
        for name in names
    }  # fmt: skip
    components = [
        {"name": draw(IDENTIFIER), "result": name}
        for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True))
    ]
    components = list({c["name"]: c for c in components}.values())
    value: dict[str, Any] = {
        "schema_version": 1,
        "run_id": draw(IDENTIFIER),
        "created_at": draw(TIME),
        "runner": {"name": draw(IDENTIFIER), "version": draw(IDENTIFIER)},
        "scoring_generation": draw(IDENTIFIER),
        "profile": draw(IDENTIFIER),
        "pin_set": {"id": draw(IDENTIFIER), "digest": "sha256:" + draw(HEX)},
        "model": {"runtime_model_id": "m", "digest": "sha256:" + draw(HEX),
                  "digest_source": "declared"},
        "upstreams": [],
        "components": components,
        "claims": _CLAIMS,
        "evidence": evidence,
    }  # fmt: skip
    value["content_digest"] = content_digest(value)
    return value


_CLAIMS = seal_arguments()["claims"].model_dump(mode="json")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one node replaced, removed, or given a new member."""
    value = json.loads(json.dumps(base))
    path = draw(st.sampled_from(_paths(value)))
    if not path:
        return draw(json_values)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    operation = draw(st.sampled_from(["replace", "remove", "add"]))
    if operation == "replace":
        parent[path[-1]] = draw(json_values)
    elif operation == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=10))] = draw(json_values)
    else:
        parent.append(draw(json_values))
    return value


def _encode(value: Any) -> bytes:
    try:
        return canonical_bytes(value)
    except ValueError:
        return json.dumps(value).encode()


@FUZZ
@given(manifests())
def test_a_generated_manifest_round_trips(value: dict[str, Any]) -> None:
    data = canonical_bytes(value)
    parsed = parse_manifest(data)
    assert parsed.bundle_digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert parsed.model.model_dump(mode="json", exclude_unset=True) == value
    assert parsed.sealed_digest == value["content_digest"]


@FUZZ
@given(st.data())
def test_a_mutated_manifest_is_accepted_as_given_or_refused(data: st.DataObject) -> None:
    value = data.draw(mutated(data.draw(manifests())))
    if isinstance(value, dict) and data.draw(st.booleans()):
        value.pop("content_digest", None)
        with contextlib.suppress(ValueError):
            value["content_digest"] = content_digest(value)
    try:
        parsed = parse_manifest(_encode(value))
    except (DocumentError, DefectiveBundle):  # refused: a newer version, or a defective manifest
        return
    # accepted: exactly as given, nothing coerced or dropped
    assert parsed.model.model_dump(mode="json", exclude_unset=True) == value


@FUZZ
@given(st.binary(max_size=512) | st.text(max_size=256).map(str.encode))
def test_arbitrary_bytes_never_crash_the_manifest_reader(data: bytes) -> None:
    with contextlib.suppress(DocumentError, DefectiveBundle):
        parse_manifest(data)


@pytest.fixture(scope="module")
def records(built_examples: dict[str, Path]) -> list[tuple[str, Any]]:
    """One real document of every record kind the example bundles hold."""
    seen: dict[str, Any] = {}
    for bundle in built_examples.values():
        manifest, files = read_bundle(bundle)
        for name, entry in manifest.evidence.items():
            kind = RECORD_MEDIA_TYPES.get(entry.media_type)
            if kind is None or kind.name in seen:
                continue
            data = files[name][0]
            seen[kind.name] = json.loads(data.splitlines()[0] if kind.lines else data)
    return sorted(seen.items())


def test_the_record_seeds_cover_the_record_kinds(records: list[tuple[str, Any]]) -> None:
    assert len(records) >= 10


@FUZZ
@given(st.data())
def test_a_mutated_record_is_accepted_or_refused(
    records: list[tuple[str, Any]], data: st.DataObject
) -> None:
    name, seed = data.draw(st.sampled_from(records))
    value = data.draw(mutated(seed))
    try:
        model = validate_document(KINDS[name], value, "fuzzed")
    except DocumentError:
        return
    again = validate_document(KINDS[name], model.model_dump(mode="json"), "dumped")
    assert again == model
