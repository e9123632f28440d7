"""Hostile tests of 2026-12-06 (bfcl questions): bfcl-eval's answers bound to their questions
and matched by their shape (commit 30f04ae, ADR 0022 amendment: ``verify/_consistency/outputs.py``
``_bfcl_replies``, ``_took``, ``_bfcl_data``; ``verify/harness_outputs.py`` ``bfcl_answers``,
``_bfcl_steps``, ``bfcl_questions``), attacked as a publisher and read from the honest side.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 single-turn
entries (examples/recorded/, ADR 0046) and judged under the pin set it ran with; each edit is
resealed with claims equal to its replay and, where it changes what bfcl-eval's files tally, with
the gate's tallies record, the component's gate metrics, its list of raw outputs and
``score/data_overall.csv`` re-derived as a careful forger would (:func:`_rederived`), so that a
finding on the gate's tallies is the only tell.

Holes, each closed the same day (the tests below now hold):

1. A step's answer was matched by answer alone, against any reply of the component: the main
   harness's (benchlocal-cli's) replies, to prompts of its own, answered the steps of a
   ``multi_turn_base`` subset the pinned command never runs, all scored correct: bfcl's V4
   overall rose without a finding. Now a step's reply must come from a request whose last user
   message is its turn's question (the latest turn up to it that asks one).
2. A single-turn entry's question was its last user message only, never the request's
   functions: ``simple_python_291``'s answer (asked with its one function) filed as
   ``multiple_167`` (the same words, asked with four functions), scored correct, passed; so did
   the answers of entries whose words are another's (125 such questions across bfcl-eval's
   single-turn data). Now the request must be the entry's first turn, message for message, and
   offer the entry's functions by name (``.`` as ``_``, the pinned ``underscore_to_dot``).
3. A request was bound by its last user message alone: an exchange of the main harness whose
   request was rewritten to ask an entry's question answered that entry. Now the whole request
   must be the entry's. Left (ADR 0022): a request rewritten whole, messages and functions, is
   the publisher's bytes as any record is; placing each reply in bfcl-eval's run (its process,
   its window) needs evidence the bundle does not hold.

Held: an entry id the subset's data does not hold; the subset's files renamed to a subset whose
data file holds other ids, or whose data file the checkout does not hold (a name the V4
aggregation does not know, ``format_sensitivity`` or ``web_search``, is refused by the reader);
the data file not kept in the bundle; the listing naming another blob for the data file (the
checkout's tree no longer hashes to the commit's); a step's answer that only a single-turn
entry's reply gives (the single-turn answers take their replies first).

From the honest side: bfcl-eval 2026.3.23's ``OpenAICompletionsHandler`` (the pinned program's,
function-calling) sends each single-turn entry's first turn unchanged (``add_first_turn_message_FC``
extends an empty message list with ``question[0]``); the Java, JavaScript and Python hints edit
the function docs only; prompt mode prepends its system prompt to a system message, never to the
user's. The control: every one of bfcl-eval's single-turn entries has a last user message in its
first turn, so no honest single-turn answer goes without a question."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bundle_schema.models import Body
from pins import PinSetSource
from tests import bfcl_kit
from tests.bfcl_kit import (
    ANSWER_KEYS,
    BFCL_EVAL_DATA,
    LOG,
    RESULT_JSON,
    answer_of,
    bfcl_entries,
    drawn_too,
    failed_ids,
    forged_verdict,
    gate_findings,
    gate_tallies,
    giving,
    only_on_the_gate,
    pins_asking,
    put_subset,
    rederived,
    rescored,
    result_file,
    score_file,
    unused_replies,
)
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.gate_kit import Recorded
from verify.harness_outputs import BFCL_DATA
from verify.replies import body_json

CHECKOUT = "upstreams/bfcl/"
WORKDIR = "berkeley-function-call-leaderboard"
SINGLE_TURN = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
    "parallel_multiple", "irrelevance", "live_simple", "live_multiple", "live_parallel",
    "live_parallel_multiple", "live_irrelevance", "live_relevance",
)  # fmt: skip

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


# --- a forger's tools ----------------------------------------------------------------------------


def _shown_overall(target: Path) -> float:
    _, files = read_bundle(target)
    return json.loads(files[RESULT_JSON][0])["metrics"]["bfcl_v4_overall"]


# --- 1: steps answered by the main harness's replies ----------------------------------------------


def _multi_turn_of_benchlocal(files: Files) -> None:
    """A ``multi_turn_base`` subset (the pinned command runs none) of three entries, each one
    turn of one step, each step a reply benchlocal-cli got to a prompt of its own, all correct."""
    steps = [answer_of(b) for _, b in unused_replies(files)[:3]]
    entries = [
        {"id": f"multi_turn_base_{i}", "result": [[a]], "input_token_count": [[p]],
         "output_token_count": [[c]], "latency": [[0.5]]}
        for i, (a, p, c) in enumerate(steps)
    ]  # fmt: skip
    put_subset(files, "multi_turn_base", entries, set(), "multi_turn")
    rederived(files)


def test_steps_answered_by_the_main_harness_replies_are_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    target = tmp_path / "b"
    verdict = forged_verdict(drawn, pins, target, _multi_turn_of_benchlocal)
    if gate_tallies(target).get("multi_turn_base") != {"hits": 3, "n": 3}:
        raise RuntimeError("the invented subset is not tallied")
    if _shown_overall(target) <= 10.0 + 1e-9:  # the recorded run's V4 overall is 10 %
        raise RuntimeError(f"the V4 overall did not rise: {_shown_overall(target)}")
    only_on_the_gate(verdict)
    assert gate_findings(verdict)


# --- 2: the question is words, not the request's functions ---------------------------------------


def _filed_as_multiple_167(files: Files) -> None:
    """``simple_python_291``'s entry (its answer to a request with simple_python_291's one
    function) moved to the ``multiple`` subset as ``multiple_167``, whose question has the same
    words (asked with four functions), and scored correct there."""
    simple = lines(files, result_file(files, "simple_python"))
    (moved,) = [e for e in simple if e["id"] == "simple_python_291"]
    failed = failed_ids(files, "simple_python") - {"simple_python_291"}
    rescored(files, "simple_python", [e for e in simple if e is not moved], failed)
    multiple = lines(files, result_file(files, "multiple"))
    rescored(files, "multiple", [*multiple, {**moved, "id": "multiple_167"}],
              failed_ids(files, "multiple"))  # fmt: skip
    rederived(files)


def test_an_answer_to_the_same_words_with_other_functions_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    target = tmp_path / "b"
    verdict = forged_verdict(drawn, pins, target, _filed_as_multiple_167)
    counted = gate_tallies(target)
    if counted["multiple"]["n"] != 4 or counted["simple_python"]["n"] != 2:
        raise RuntimeError(f"the entry was not moved: {counted}")
    only_on_the_gate(verdict)
    assert gate_findings(verdict)


def test_the_words_of_one_question_are_another_entrys() -> None:
    """Why 2 matters: in bfcl-eval's own single-turn data the last user message of one entry's
    first turn is another's 125 times across subsets (``multiple`` reuses ``simple_python``'s),
    and ``simple_python_291`` and ``multiple_167`` ask the same words with other functions."""
    data = BFCL_EVAL_DATA
    entries = {}
    for subset in ("simple_python", "multiple"):
        for line in (data / f"BFCL_v4_{subset}.json").read_text().splitlines():
            entry = json.loads(line)
            entries[entry["id"]] = entry
    one, other = entries["simple_python_291"], entries["multiple_167"]
    assert one["question"][0][-1]["content"] == other["question"][0][-1]["content"]
    assert len(one["function"]) == 1
    assert len(other["function"]) > 1


# --- 3: a main-harness exchange rewritten to ask the question ----------------------------------


def _asked_by_benchlocal(files: Files) -> None:
    """The first entry answered by an exchange of benchlocal-cli's whose request's last user
    message is rewritten to the entry's question (the entry's own exchange left unused)."""
    name, index, entry = next(bfcl_entries(files))
    exchanges = lines(files, LOG)
    own = body_json(Body.model_validate(exchanges[giving(files, entry)]["request_body"]))
    asked = [m for m in own["messages"] if m.get("role") == "user"][-1]["content"]
    at, body = unused_replies(files)[0]
    exchange = exchanges[at]
    request = body_json(Body.model_validate(exchange["request_body"]))
    users = [m for m in request["messages"] if m.get("role") == "user"]
    users[-1]["content"] = asked
    exchange["request_body"] = {"data": json.dumps(request), "encoding": "utf-8"}
    put_lines(files, LOG, exchanges)
    entries = lines(files, name)
    entries[index].update(dict(zip(ANSWER_KEYS, answer_of(body), strict=True)))
    put_lines(files, name, entries)


def test_a_main_harness_exchange_rewritten_to_ask_the_question_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _asked_by_benchlocal)
    only_on_the_gate(verdict)
    assert gate_findings(verdict)


# --- held: ids, subsets and the data file -------------------------------------------------------


def _id_not_in_the_data(files: Files) -> None:
    """``simple_python_291`` renamed ``simple_python_400`` (bfcl-eval's simple_python ends at
    399), failed or not as before."""
    entries = lines(files, result_file(files, "simple_python"))
    for entry in entries:
        if entry["id"] == "simple_python_291":
            entry["id"] = "simple_python_400"
    failed = {"simple_python_400" if i == "simple_python_291" else i
              for i in failed_ids(files, "simple_python")}  # fmt: skip
    rescored(files, "simple_python", entries, failed)
    rederived(files)


def test_an_entry_id_the_data_does_not_hold_has_no_question(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """No question to answer, and not an entry the pinned draw asks (each check says so)."""
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _id_not_in_the_data)
    only_on_the_gate(verdict)
    asked, answered = gate_findings(verdict)
    assert "answered 'simple_python_400', not an entry of simple_python the pinned" in asked
    assert "'simple_python_400'" in answered
    assert "to its question" in answered


def _renamed(subset: str) -> Callable[[Files], None]:
    """The ``simple_python`` result and score files renamed to ``subset``'s."""

    def edit(files: Files) -> None:
        for name in (result_file(files, "simple_python"), score_file(files, "simple_python")):
            files[name.replace("/bfcl_v4_simple_python_", f"/bfcl_v4_{subset}_")] = files.pop(name)
        rederived(files)

    return edit


@pytest.mark.parametrize(
    ("subset", "said"),
    [
        ("multi_turn_long_context", "to its question"),  # a data file of other ids
        ("web_search_base", "is not in the bfcl checkout's listing"),  # no such data file
    ],
)
def test_a_subset_renamed_to_another_data_file_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, subset: str, said: str
) -> None:
    target = tmp_path / "b"
    verdict = forged_verdict(drawn, pins, target, _renamed(subset))
    if subset not in gate_tallies(target):
        raise RuntimeError("the files were not renamed")
    only_on_the_gate(verdict)
    messages = gate_findings(verdict)
    assert said in messages[-1]
    if said == "to its question":  # the data reads: and the draw is not the pinned one
        assert f"answered subset {subset!r}, which the pinned command does not ask" in messages[0]
        assert len(messages) == 2
    else:
        assert len(messages) == 1


def _data_blob(files: Files, subset: str) -> str:
    """The blob id the listing names for ``subset``'s data file."""
    path = f"{WORKDIR}/{BFCL_DATA.format(subset=subset)}"
    listing = files[f"{CHECKOUT}tree.txt"][0].decode().splitlines()
    (line,) = [row for row in listing if row.endswith("\t" + path)]
    return line.split("\t")[0].split()[2]


def test_the_data_file_not_kept_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        files.pop(f"{CHECKOUT}files/{_data_blob(files, 'simple_python')}")

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is not kept in the bundle" in message


def test_another_blob_for_the_data_file_breaks_the_checkout(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """The listing names, for ``BFCL_v4_simple_python.json``, the blob of another data file
    (``multiple``'s, kept): the listing's tree is no longer the pinned commit's, and with no
    checkout no question is read."""

    def edit(files: Files) -> None:
        name = f"{CHECKOUT}tree.txt"
        mine, other = _data_blob(files, "simple_python"), _data_blob(files, "multiple")
        listing = files[name][0].decode()
        assert listing.count(mine) == 1
        files[name] = (listing.replace(mine, other).encode(), files[name][1])
        files.pop(f"{CHECKOUT}files/{mine}")

    verdict = forged_verdict(drawn, pins, tmp_path / "b", edit)
    assert any(f.code == "checkout_mismatch" for f in verdict.integrity.findings)
    assert any("cannot be held to bfcl-eval's data" in m for m in gate_findings(verdict))


def test_a_step_cannot_take_a_single_turn_entrys_reply(drawn: Recorded, tmp_path: Path) -> None:
    """A ``multi_turn_base`` entry whose one step is the first single-turn entry's answer: the
    single-turn answers take their replies first, so the step is no reply (under a pin set
    that asks the entry)."""
    pins = pins_asking({"multi_turn_base": ["multi_turn_base_0"]})

    def edit(files: Files) -> None:
        _, _, first = next(bfcl_entries(files))
        entry = {"id": "multi_turn_base_0", "latency": [[0.5]],
                 **{k: [[first[k]]] for k in ANSWER_KEYS}}  # fmt: skip
        put_subset(files, "multi_turn_base", [entry], set(), "multi_turn")
        drawn_too(files, "multi_turn_base", ["multi_turn_base_0"])
        rederived(files)

    verdict = forged_verdict(drawn, pins, tmp_path / "b", edit)
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert "'multi_turn_base_0 turn 0 step 0'" in message


# --- the honest side ----------------------------------------------------------------------------


def test_every_single_turn_entry_has_a_question() -> None:
    """bfcl-eval's function-calling handler sends ``question[0]`` as it is: every single-turn
    entry's first turn ends in a user message, so each honest answer has a question to match."""
    data = BFCL_EVAL_DATA
    for subset in SINGLE_TURN:
        for line in (data / f"BFCL_v4_{subset}.json").read_text().splitlines():
            turns = json.loads(line)["question"]
            assert len(turns) == 1
            assert turns[0][-1]["role"] == "user"
            assert isinstance(turns[0][-1]["content"], str)
