"""An archive's ranking kept on disk (:class:`verify.ranking.SpooledRanking`) is the ranking
:func:`verify.ranking.rank` builds in memory: the same rows in the same order, table by table,
and the same canonical JSON, byte for byte, whatever the scores, run ids, timestamps and
controlled-policy groups (non-ASCII and astral ones, whose order differs between Python's
``sorted`` and RFC 8785's member order, among them); and the byte keys it sorts by order as
the tuples :func:`rank` sorts by."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle_schema import canonical_bytes
from tests.verify.test_ranking import V5, V5_REF
from verify import verify_with_evidence
from verify._spool import sortable
from verify.ranking import Ranked, SpooledRanking, rank

SCORES = ("aggregate", "coding", "hermes", "tool_instruction", "reliability", "performance")

score = st.one_of(st.none(), st.sampled_from([0.0, 50.0, 100.0]), st.floats(0, 100))
names = st.text(alphabet=st.sampled_from("ab-\u00e9\uff61\U0001f600\U00010000"), max_size=4)
run = st.fixed_dictionaries(
    {
        "run_id": st.text(alphabet=st.sampled_from("aB0.:+-"), max_size=3).map(lambda s: f"r{s}"),
        "created_at": st.sampled_from(["2026-11-08T00:00:00Z", "2026-11-09T00:00:00Z"]),
        "group": st.one_of(
            st.sampled_from(["primary", None]), names.map(lambda s: f"controlled:{s}")
        ),
        "rankable": st.booleans(),
        "copy": st.booleans(),
        "scores": st.fixed_dictionaries(dict.fromkeys(SCORES, score)),
    }
)


def _item(example: Ranked, n: int, spec: dict[str, Any]) -> Ranked:
    verdict = example.verdict.model_copy(
        update={
            "run_id": spec["run_id"],
            "bundle_digest": f"sha256:{n:064x}",
            "rank_group": spec["group"],
            "rankable": spec["rankable"],
            "scores": example.verdict.scores.model_copy(update=spec["scores"]),
        }
    )
    evidence = example.evidence.model_copy(update={"created_at": spec["created_at"]})
    copy_of = f"a copy of {n}" if spec["copy"] else None
    return Ranked(f"source-{n}", verdict, evidence, copy_of)


class _Examples(list[Ranked]):
    def __repr__(self) -> str:  # a falsifying example names them, not their evidence
        return f"<{len(self)} verified examples>"


@pytest.fixture(scope="module")
def examples(ranked_examples: dict[str, Path]) -> list[Ranked]:
    found = _Examples()
    for name in ("gx10-full-qualified", "gx10-smoke"):
        verdict, evidence = verify_with_evidence(ranked_examples[name], pins=V5)
        found.append(Ranked(name, verdict, evidence))
    return found


@settings(max_examples=150, deadline=None, derandomize=True)
@given(specs=st.lists(st.tuples(st.integers(0, 1), run), max_size=12), demo=st.booleans())
def test_the_spooled_ranking_is_the_ranking_in_memory(
    examples: list[Ranked], specs: list[tuple[int, dict[str, Any]]], demo: bool
) -> None:
    items = [_item(examples[which], n, spec) for n, (which, spec) in enumerate(specs)]
    ranking = rank(items, V5_REF, demo_only=demo)
    with SpooledRanking(V5_REF, demo_only=demo) as spooled:
        for item in items:
            spooled.add(item)
        out = io.BytesIO()
        spooled.write_json(out)
        assert out.getvalue() == canonical_bytes(ranking.model_dump(mode="json")) + b"\n"
        assert tuple(spooled.ranked()) == ranking.ranked
        assert tuple(spooled.limitations()) == ranking.limitations
        assert spooled.groups() == list(ranking.controlled)
        for group, rows in ranking.controlled.items():
            assert tuple(spooled.controlled(group)) == rows
        assert tuple(spooled.apart()) == ranking.apart


def _keys(kinds: list[bool]) -> st.SearchStrategy[tuple[tuple[float | str, ...], ...]]:
    """Two keys of the same kinds (True: a float), from small alphabets, so they often tie."""
    one = st.tuples(
        *(
            st.sampled_from([-1.0, -0.0, 0.0, 1.0, 100.0]) | st.floats(allow_nan=False)
            if is_float
            else st.text(alphabet=st.sampled_from("\x00a\u00e9\U0001f600"), max_size=3) | st.text()
            for is_float in kinds
        )
    )
    return st.tuples(one, one)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(pair=st.lists(st.booleans(), min_size=1, max_size=4).flatmap(_keys))
def test_a_sortable_key_orders_as_its_tuple(pair: tuple[tuple[float | str, ...], ...]) -> None:
    x, y = pair
    assert (sortable(x) < sortable(y)) == (x < y)
    assert (sortable(x) == sortable(y)) == (x == y)
