"""Differential properties: the fast paths agree with the references they stand in for."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from bundle_schema import canonical_bytes, loads_canonical
from bundle_schema.documents import _validator
from bundle_schema.models import BfclShard, Manifest
from tests.properties import examples

SAFE = 2**53 - 1

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(["sha256:12e4", "a:1.5,", "[1e5]", "\u2028", "\x7f", "é", "😀", "\ud7ff"])
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@examples(1000)
@given(json_values)
def test_canonical_bytes_equal_the_rfc8785_package(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


parsable_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.floats(-float(SAFE), float(SAFE), allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)
"""Values whose canonical text parses back into a value with a canonical form. A float of 2**53
or more is written as integer text, which parses as an integer beyond the domain RFC 8785
allows."""


@examples(400)
@given(parsable_values)
def test_canonical_bytes_parse_back_as_canonical(value: Any) -> None:
    data = canonical_bytes(value)
    assert canonical_bytes(loads_canonical(data, "doc")) == data


@pytest.mark.parametrize("value", [2**53, -(2**53), {"a": [2**60]}, float("nan"), {1: "x"}])
def test_values_without_a_canonical_form_are_refused_like_the_reference(value: Any) -> None:
    with pytest.raises((ValueError, rfc8785.CanonicalizationError)):
        rfc8785.dumps(value)
    with pytest.raises(ValueError, match="no canonical JSON form"):
        canonical_bytes(value)


# --- the model is at least as strict as the committed schema on evidence entries --------------

entry_like = st.fixed_dictionaries(
    {
        "digest": st.one_of(
            st.from_regex(r"\Asha256:[0-9a-f]{64}\Z"),
            st.text(max_size=80),
            st.from_regex(r"\Asha256:[0-9a-f]{64}\n\Z"),
        ),
        "size": st.one_of(st.integers(-5, 2**54), st.floats(), st.booleans(), st.text(max_size=3)),
        "media_type": st.one_of(
            st.sampled_from(["text/plain", "application/json", "text/plain; charset=utf-8"]),
            st.text(max_size=300),
        ),
    },
    optional={"extra": st.integers()},
)
names = st.one_of(st.from_regex(r"\A[a-z0-9][a-z0-9._/-]{0,40}\Z"), st.text(max_size=20))


D = "sha256:" + "ab" * 32
MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "run_id": "r",
    "created_at": "2026-01-01T00:00:00Z",
    "runner": {"name": "t", "version": "1"},
    "scoring_generation": "g",
    "profile": "smoke",
    "pin_set": {"id": "p", "digest": D},
    "model": {"runtime_model_id": "m", "digest": D, "digest_source": "declared"},
    "upstreams": [],
    "components": [],
    "claims": {
        "outcome": "INFRA_ERROR",
        "result_validity": "INCOMPLETE",
        "profile_decision": "NOT_ASSESSED",
        "rankable": False,
        "aggregate_score": None,
        "executed_weight": 0,
        "component_scores": {},
    },
    "content_digest": D,
}


@examples(1000)
@given(names, entry_like)
def test_the_model_accepts_no_evidence_map_the_committed_schema_refuses(
    name: str, entry: Any
) -> None:
    value = {**MANIFEST, "evidence": {name: entry}}
    try:
        Manifest.model_validate(value)
    except ValidationError:
        return
    assert _validator("manifest").is_valid(value), (name, entry)


def test_the_differential_test_sees_both_sides() -> None:
    good = {**MANIFEST, "evidence": {"a.txt": {"digest": D, "size": 1, "media_type": "text/plain"}}}
    bad = {**MANIFEST, "evidence": {"A": {"digest": D, "size": 1, "media_type": "text/plain"}}}
    assert _validator("manifest").is_valid(good)
    assert Manifest.model_validate(good)
    assert not _validator("manifest").is_valid(bad)
    with pytest.raises(ValidationError):
        Manifest.model_validate(bad)


@examples(400)
@given(
    st.one_of(
        st.none(),
        st.lists(st.one_of(st.text(max_size=300), st.integers(), st.none(), st.booleans())),
    )
)
def test_the_model_accepts_no_sample_ids_the_committed_shard_schema_refuses(ids: Any) -> None:
    value = {"subset_totals": {"parallel": {"hits": 0, "n": 0}}, "sample_ids": ids}
    try:
        BfclShard.model_validate(value)
    except ValidationError:
        return
    assert _validator("bfcl-shard").is_valid(value), ids
