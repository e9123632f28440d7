"""The one reading of a reasoning serialization's dotted path: written into a request by the
observer, found in it and taken out of it again by the verifier."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundle_schema.models import ReasoningSerialization

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_PATHS = st.lists(st.sampled_from(["a", "b", "think"]), min_size=1, max_size=3).map(".".join)
_VALUES = st.booleans() | st.integers(-2, 2) | st.sampled_from(["low", "high"])


@given(body=st.dictionaries(st.text(max_size=3), _JSON, max_size=4), path=_PATHS, value=_VALUES)
def test_written_it_is_carried_and_taken_out_it_is_the_body_before(
    body: dict[str, Any], path: str, value: bool | int | str
) -> None:
    serialization = ReasoningSerialization(path=path, value=value)
    before = copy.deepcopy(body)
    written = serialization.write_into(copy.deepcopy(body))
    assert serialization.carried_by(written)
    if path.split(".", maxsplit=1)[0] not in body:  # every object on the way made by write_into
        assert serialization.removed_from(written) == before
    assert not serialization.carried_by(serialization.removed_from(written))


@pytest.mark.parametrize(
    ("body", "carried"),
    [
        ({"a": {"b": True}}, True),
        ({"a": {"b": 1}}, False),  # 1 is not true
        ({"a": {"b": 1.0}}, False),
        ({"a": {"b": "true"}}, False),
        ({"a": [{"b": True}]}, False),
        ({"a": {}}, False),
        ([], False),
        (None, False),
    ],
)
def test_carried_is_the_value_of_its_json_type(body: object, carried: bool) -> None:
    assert ReasoningSerialization(path="a.b", value=True).carried_by(body) is carried


def test_taken_out_keeps_objects_that_hold_more_and_refuses_no_body() -> None:
    serialization = ReasoningSerialization(path="a.b.c", value="low")
    body = {"a": {"b": {"c": "low", "d": 1}, "e": 2}, "f": 3}
    assert serialization.removed_from(body) == {"a": {"b": {"d": 1}, "e": 2}, "f": 3}
    assert body["a"]["b"]["c"] == "low"  # a copy: the body is unchanged
    assert serialization.removed_from({"a": "text"}) == {"a": "text"}
    assert serialization.removed_from(["not", "an", "object"]) == {}
