"""A helper's share is hashed from the front by the helper and from the back by the caller: under
any interleaving every member is hashed, and at most the one where they meet is hashed twice."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from verify._hashing import HashJob, _from_the_back, _from_the_front
from verify._source import Member


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=40), st.lists(st.booleans(), max_size=120))
def test_front_and_back_cover_every_index(count: int, turns: list[bool]) -> None:
    bounds = [0, count - 1]
    front, back = _from_the_front(bounds, count), _from_the_back(bounds, count)
    taken: list[int] = []
    live = {True: front, False: back}
    for turn in [*turns, *([True] * (count + 1)), *([False] * (count + 1))]:
        side = live.get(turn)
        if side is None:
            continue
        index = next(side, None)
        if index is None:
            del live[turn]
        else:
            taken.append(index)
    assert sorted(set(taken)) == list(range(count))
    assert len(taken) - len(set(taken)) <= 1


def test_helpers_and_the_caller_agree_with_one_process(tmp_path: Path) -> None:
    files = []
    for number in range(300):
        path = tmp_path / f"f{number:03d}"
        path.write_bytes(number.to_bytes(2, "big") * 100)
        files.append(Member(path.name, str(path)))
    with HashJob(files, 1) as alone:
        expected = alone.results()
    for workers in (2, 3, 4):
        with HashJob(files, workers) as shared:
            assert shared.results() == expected
