"""bfcl-eval's gate held to the entries the pinned command asks (verify/_consistency/bfcl.py
``_bfcl_asked``, ADR 0022 amendment of 2026-12-06): every entry of each test category its
``--test-category`` values name (bfcl-eval's collections expanded, from bfcl-eval's own data in
the recorded checkout), or with ``--run-ids`` the entries of the draw it read; none missing, none
beside them.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 entries
(examples/recorded/, ADR 0046), each edit resealed with claims equal to its replay (a careful
forger's), so the finding is the only tell."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

import pytest

from pins import CURRENT, PinSetSource, load_builtin
from tests import bfcl_kit
from tests.bfcl_kit import (
    BFCL_EVAL_DATA,
    GATE,
    RAW,
    drawn_too,
    failed_ids,
    forged_verdict,
    gate_findings,
    only_on_the_gate,
    rederived,
    rescored,
    result_file,
)
from tests.data.hostile.kit import Files, lines
from tests.gate_kit import Recorded, resealed_as_replayed
from tests.paths import DATA
from verify import verify_bundle
from verify._consistency.bfcl import _bfcl_asked, _Data, _pinned_entries
from verify.harness_outputs import BFCL_DRAW, BfclResults, bfcl_answers, bfcl_questions
from verify.scorers.bfcl import V4_CATEGORIES, V4_COLLECTIONS

SINGLE_TURN = frozenset(V4_COLLECTIONS["single_turn"])
WHERE = (GATE, "tool_instruction", "bfcl")
_GENERATE = ("generate", "--test-category", "simple_python")
_EVALUATE = ("evaluate", "--test-category", "single_turn")

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


# --- what a pinned command asks ------------------------------------------------------------------


def test_the_collections_are_bfcl_eval_s_own() -> None:
    """The verifier's table of bfcl-eval 2026.3.23's test collections and categories is the
    installed package's (``bfcl_eval.constants.category_mapping``)."""
    from bfcl_eval.constants import category_mapping  # noqa: PLC0415 - the peer, read here only

    mapping = category_mapping.TEST_COLLECTION_MAPPING
    assert {k: sorted(v) for k, v in V4_COLLECTIONS.items()} == {
        k: sorted(v) for k, v in mapping.items()
    }
    assert sorted(V4_CATEGORIES) == sorted(category_mapping.ALL_CATEGORIES)


@pytest.mark.parametrize(
    ("command", "asked"),
    [
        (["generate", "--test-category", "single_turn"], SINGLE_TURN),
        (  # bfcl-eval's forms: repeated, joined with =, commas with spaces
            ["--test-category=live", "--test-category", "irrelevance, simple_java"],
            {*V4_COLLECTIONS["live"], "irrelevance", "simple_java"},
        ),
        # none named: bfcl-eval's default, all (format_sensitivity asks nothing of the pinned
        # function-calling handler: bfcl-eval skips its entries)
        (["generate", "--model", "m"], V4_CATEGORIES - {"format_sensitivity"}),
        (  # generate's categories: evaluate scores the result files there are
            [*_GENERATE, "--then", *_EVALUATE],
            {"simple_python"},
        ),
    ],
)
def test_the_categories_are_the_pinned_command_s(command: list[str], asked: set[str]) -> None:
    asks = _pinned_entries(command, {})
    assert not isinstance(asks, str)
    assert set(asks.subsets) == set(asked)
    assert all(ids is None for ids in asks.subsets.values())  # each, every entry of its data
    assert "every entry of bfcl-eval's data" in asks.how


def test_a_draw_is_the_id_file() -> None:
    """With ``--run-ids``, the entries of the draw bfcl-eval read, whatever the categories
    (bfcl-eval's generate ignores them then; an empty list, as bfcl-eval does, asks none)."""
    drawn = {"simple_python": ["simple_python_1"], "multi_turn_base": ["multi_turn_base_0"],
             "live_simple": []}  # fmt: skip
    command = ["generate", "--run-ids", "--then", "evaluate", "--test-category", "single_turn"]
    asks = _pinned_entries(command, {BFCL_DRAW: json.dumps(drawn).encode()})
    assert not isinstance(asks, str)
    assert asks.subsets == {
        "simple_python": frozenset({"simple_python_1"}),
        "multi_turn_base": frozenset({"multi_turn_base_0"}),
    }
    assert asks.how.startswith(f"--run-ids: the entries of {BFCL_DRAW}")


@pytest.mark.parametrize(
    ("command", "files", "said"),
    [
        (["--test-category", "single_turn,bogus"], {}, "'bogus' is no test category of bfcl-eval"),
        (["--run-ids"], {}, f"{BFCL_DRAW} names (--run-ids), which the outputs do not keep"),
        (["--run-ids"], {BFCL_DRAW: b'{"simple_python": ["a", "a"]}'}, "test entry 'a' twice"),
        (["--run-ids"], {BFCL_DRAW: b'{"simple_python": "a"}'}, "is not a list of test entry"),
        (["--run-ids"], {BFCL_DRAW: b"[1]"}, BFCL_DRAW),
        (
            ["simple_python=a,b", "--run-ids"],
            {BFCL_DRAW: b'{"simple_python": ["a"]}'},
            "simple_python's entries differ",
        ),
        (
            ["simple_python=a", "--run-ids"],
            {BFCL_DRAW: b'{"simple_python": ["a"], "multiple": ["b"]}'},
            "multiple's entries differ",
        ),
    ],
)
def test_what_cannot_be_said_is_said(command: list[str], files: Files, said: str) -> None:
    found = _pinned_entries(command, files)
    assert isinstance(found, str)
    assert said in found


# --- a run held to it ----------------------------------------------------------------------------


def test_a_draw_named_as_the_shipped_pin_set_is_not_its_gate(
    drawn: Recorded, tmp_path: Path
) -> None:
    """The attack: bfcl-eval run on 39 entries and the bundle named for the shipped pin set,
    whose command asks all 3,641 single-turn entries. Each answer is a reply to its question,
    and still the gate is not the pinned one: never rankable."""
    shipped = load_builtin(CURRENT)
    manifest, files = drawn
    target = tmp_path / "b"
    resealed_as_replayed(
        target, manifest, dict(files), shipped,
        {"pin_set": {"id": shipped.id, "digest": shipped.digest}},
    )  # fmt: skip
    verdict = verify_bundle(target, pins=shipped).verdict
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert (
        "bfcl answered 3 of the 240 entries of irrelevance the pinned command asks "
        "(--test-category single_turn: every entry of bfcl-eval's data): 'irrelevance_0' has "
        "no result (13 subsets differ)"
    ) in message
    assert not verdict.rankable and verdict.integrity.status == "failed"


def _dropped(files: Files) -> None:
    """The first simple_python entry the draw names left out of the result and score files."""
    name = result_file(files, "simple_python")
    entries = lines(files, name)
    rescored(files, "simple_python", entries[1:], failed_ids(files, "simple_python"))
    rederived(files)


def _dropped_from_the_draw_too(files: Files) -> None:
    _dropped(files)
    first = lines(files, result_file(files, "simple_python"))[0]["id"]
    kept = json.loads(files[f"{RAW}{BFCL_DRAW}"][0])["simple_python"]
    drawn_too(files, "simple_python", [i for i in kept if i != first] or kept)


def test_an_entry_of_the_draw_left_out_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """One entry of the draw with no result (a run of 38, its scores re-derived): named."""
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _dropped)
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert "bfcl answered 2 of the 3 entries of simple_python the pinned command asks" in message
    assert "has no result" in message


def test_an_id_bfcl_eval_would_not_run_is_not_asked() -> None:
    """The honest side: an id of the draw that bfcl-eval's data does not hold (bfcl-eval runs
    only the data's entries the draw names) asks nothing; one it holds does."""
    draw = {"simple_python": ["simple_python_1", "simple_python_400"]}  # the data ends at 399
    files = {BFCL_DRAW: json.dumps(draw).encode()}
    data = _Data({"simple_python": frozenset(f"simple_python_{i}" for i in range(400))}, {})
    where = WHERE
    asks = _pinned_entries(["--run-ids"], files)
    assert not isinstance(asks, str)
    answered = BfclResults([], [], {"simple_python": {"simple_python_1": "result.json:1"}})
    assert _bfcl_asked(asks, answered, data, where) == []
    none = BfclResults([], [], {"simple_python": {}})
    (finding,) = _bfcl_asked(asks, none, data, where)
    assert "answered 0 of the 1 entries of simple_python" in finding.message


def test_a_draw_left_out_of_the_id_file_too_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """The entry left out of the draw bfcl-eval read as well: that file is not the draw the
    pinned command's own arguments name (``simple_python=...``)."""
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _dropped_from_the_draw_too)
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert f"{BFCL_DRAW} is not the draw the pinned command names" in message
    assert "simple_python's entries differ" in message


# --- a real run of whole categories --------------------------------------------------------------

WHOLE = DATA / "upstream_outputs" / "bfcl-eval-whole"
"""bfcl-eval's files of a real run of every entry of live_parallel and live_relevance (README
there)."""


def _whole() -> dict[str, bytes]:
    return {p.relative_to(WHOLE).as_posix(): p.read_bytes() for p in WHOLE.rglob("*.*")}


def _whole_data(subsets: Collection[str]) -> _Data:
    ids = {}
    for subset in subsets:
        name = f"BFCL_v4_{subset}.json"
        ids[subset], _ = bfcl_questions((BFCL_EVAL_DATA / name).read_bytes(), name, ())
    return _Data(ids, {})


def _whole_command() -> list[str]:
    """The shipped pin set's bfcl-eval command with the run's categories."""
    command = list(load_builtin(CURRENT).pins.harnesses["bfcl"].command)
    asked = "live_parallel,live_relevance"
    return [asked if part == "single_turn" else part for part in command]


def test_a_real_run_of_whole_categories_answered_what_its_command_asks() -> None:
    files = _whole()
    results = bfcl_answers(files)
    assert {s: len(e) for s, e in results.entries.items()} == {
        "live_parallel": 16, "live_relevance": 16
    }  # fmt: skip
    asks = _pinned_entries(_whole_command(), files)
    assert not isinstance(asks, str)
    assert asks.subsets == {"live_parallel": None, "live_relevance": None}
    assert _bfcl_asked(asks, results, _whole_data(asks.subsets), WHERE) == []
    # one entry fewer (the run cut short, or left out) is not what the command asks
    name = "result/smollm2-135m-instruct/live/BFCL_v4_live_parallel_result.json"
    files[name] = b"\n".join(files[name].splitlines()[:-1]) + b"\n"
    (finding,) = _bfcl_asked(asks, bfcl_answers(files), _whole_data(asks.subsets), WHERE)
    assert "bfcl answered 15 of the 16 entries of live_parallel" in finding.message
