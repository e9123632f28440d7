"""The pinned scenario sets the cross-checks hold a run's outputs to, read from a recorded
checkout: Spark Bench's code scenarios and the tiers its pinned command selects
(``verify._consistency.spark``), and a benchlocal-cli pack's scenarios
(``verify._consistency.benchlocal``)."""

from __future__ import annotations

import json
import math

import pytest

from verify._consistency.benchlocal import (
    PACKS,
    _pinned_pack,
    _pinned_selection,
    _scenarios_problem,
)
from verify._consistency.checkouts import _Checkout
from verify._consistency.spark import _pinned_tiers, _suite_code
from verify.harness_outputs import BenchlocalRun, BenchlocalRuns
from verify.replies import question_digest

SUITE = b"""
SCENARIOS = [
    dict(id="CODE-01", domain="code", difficulty=1.5),
    dict(id="CODE-02", domain="code", tier="hard", difficulty=2),
    dict(id="CODE-03", domain="code", tier="hard", difficulty=weight()),
    dict(id="IF-01", domain="instruction", difficulty=1.0),
]
"""


@pytest.mark.parametrize(
    ("command", "tiers"),
    [
        (["spark_bench.py", "eval"], {"base", "hard"}),
        (["spark_bench.py", "eval", "--tier", "all"], {"base", "hard"}),
        (["spark_bench.py", "eval", "--tier", "base"], {"base"}),
        (["spark_bench.py", "eval", "--tier=hard"], {"hard"}),
        (["spark_bench.py", "eval", "--tier", "{tier}"], None),
        (["spark_bench.py", "eval", "--tier"], None),
    ],
)
def test_the_tiers_a_pinned_spark_command_selects(
    command: list[str], tiers: set[str] | None
) -> None:
    assert _pinned_tiers(command) == (None if tiers is None else frozenset(tiers))


def test_the_suites_code_scenarios_with_their_tier_and_difficulty() -> None:
    suite = _suite_code(SUITE)
    assert sorted(suite) == ["CODE-01", "CODE-02", "CODE-03"]
    assert suite["CODE-01"] == (1.5, "base")
    assert suite["CODE-02"] == (2.0, "hard")
    assert math.isnan(suite["CODE-03"][0])  # no literal difficulty: no weight, still a scenario
    twice = _suite_code(SUITE + b'\nMORE = [dict(id="CODE-01", domain="code", difficulty=1)]\n')
    assert math.isnan(twice["CODE-01"][0])
    assert _suite_code(b"def broken(:\n") == {}


def _pack(lines: list[bytes]) -> tuple[dict[str, _Checkout], dict[str, bytes]]:
    data = b"\n".join(lines) + b"\n"
    checkout = _Checkout("benchlocal", [], {f"{PACKS}/toolcall-15.jsonl": "a" * 40})
    return {"benchlocal": checkout}, {f"upstreams/benchlocal/files/{'a' * 40}": data}


def _read(pack: tuple[dict[str, _Checkout], dict[str, bytes]], name: str) -> bytes | None:
    return pack[1].get(name)


META = json.dumps({"__meta__": True, "pack_id": "toolcall-15"}).encode()


def test_a_pinned_pack_is_its_scenarios_with_their_questions() -> None:
    ask = {"role": "user", "content": "What's the weather like in Berlin?"}
    pack = _pack([
        META,
        json.dumps({"id": "TC-01", "messages": [{"role": "system", "content": "s"}, ask]}).encode(),
        b"",
        json.dumps({"id": "TC-02", "messages": []}).encode(),
    ])  # fmt: skip
    got = _pinned_pack(pack[0], "benchlocal", "toolcall-15", lambda n: _read(pack, n))
    assert not isinstance(got, str)
    assert {k: v.question for k, v in got.items()} == {
        "TC-01": question_digest(ask["content"]),
        "TC-02": None,
    }


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (
            [META, b'{"id": "TC-01"}', b'{"id": "TC-01"}'],
            ":3: id 'TC-01', not a scenario's id once",
        ),
        ([META, b"[1, 2]"], ":2: not an object"),
        ([META, b'{"id": "TC-01"'], ": not JSON Lines: "),
        ([META, b'{"id": 7}'], ":2: id '7', not a scenario's id once"),
    ],
)
def test_a_pinned_pack_that_does_not_read_says_why(lines: list[bytes], problem: str) -> None:
    pack = _pack(lines)
    got = _pinned_pack(pack[0], "benchlocal", "toolcall-15", lambda n: _read(pack, n))
    assert isinstance(got, str) and got.startswith(f"{PACKS}/toolcall-15.jsonl{problem}"), got


def test_a_pack_the_checkout_does_not_hold_says_so() -> None:
    pack = _pack([META])
    got = _pinned_pack(pack[0], "benchlocal", "../../etc/passwd", lambda n: _read(pack, n))
    assert got == f"{PACKS}/../../etc/passwd.jsonl is not in the benchlocal checkout's listing"


@pytest.mark.parametrize(
    ("command", "selection"),
    [
        (["run", "--medium"], None),
        (["run", "--scenario", "toolcall-15/TC-01", "--scenario=toolcall-15/TC-02"],
         {"toolcall-15": {"TC-01", "TC-02"}}),
        (["run", "--scenario", "toolcall-15/TC-01", "--scenarios-file", "f"], False),
        (["run", "--resume=old.json"], False),
        # argparse's reading: an empty value after "=" is that value, not the next word
        (["run", "--scenario=", "toolcall-15/TC-01"], {"": {""}}),
    ],
)  # fmt: skip
def test_the_scenarios_a_pinned_benchlocal_command_selects(
    command: list[str], selection: dict[str, set[str]] | bool | None
) -> None:
    assert _pinned_selection(command) == selection


def _runs(pack: str, *keys: str, repeat: int = 1) -> BenchlocalRuns:
    runs = [BenchlocalRun(f"$[{i}]", pack, k, 1, False, None) for i, k in enumerate(keys)]
    return BenchlocalRuns(repeat, {pack: runs})


PINNED = {"TC-01": None, "TC-02": None, "TC-03": None}


@pytest.mark.parametrize(
    ("keys", "chosen", "problem"),
    [
        (("TC-01", "TC-02", "TC-03"), None, None),
        (("TC-02",), {"TC-02"}, None),
        (("TC-02",), False, None),  # selected otherwise: only held to the pinned scenarios
        (("TC-01", "TC-02"), None, "missing: 'TC-03'"),
        (("TC-01", "TC-02", "TC-02"), None, "missing: 'TC-03'; more than once: 'TC-02'"),
        (("TC-02", "TC-09"), False, "not of the pinned scenarios: 'TC-09'"),
        (("TC-01",), {"TC-02"}, "(the pinned command selects 1)"),
    ],
)  # fmt: skip
def test_a_packs_runs_are_its_pinned_scenarios(
    keys: tuple[str, ...], chosen: set[str] | bool | None, problem: str | None
) -> None:
    got = _scenarios_problem(_runs("toolcall-15", *keys), "toolcall-15", PINNED, chosen)  # type: ignore[arg-type]
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got, got
