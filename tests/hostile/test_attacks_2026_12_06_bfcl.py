"""Hostile tests of 2026-12-06 (bfcl): bfcl-eval's answers held to the transport log (commit
0309a94, ADR 0022 amendment: ``verify/_consistency/bfcl.py`` ``_bfcl_replies``,
``verify/harness_outputs.py`` ``bfcl_answers``, ``verify/replies.py`` ``answer_digest``),
attacked both ways.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 single-turn
entries (examples/recorded/, ADR 0046), judged under the pin set it ran with; each edit is
resealed with claims equal to its replay (``tests.gate_kit.resealed_as_replayed``) and, where
the edit changes what bfcl-eval's files tally, with the gate's tallies record, the component's
gate metrics, its list of raw outputs and ``score/data_overall.csv`` re-derived as a careful
forger would (:func:`_rederived`), so that a finding on the gate's tallies is the only tell.

Findings, and what became of them:

1. HOLE, closed the same day: a multi-turn subset was skipped by its name alone
   (``subset.startswith("multi_turn")``): a ``multi_turn_base`` result and score file of three
   invented entries, all correct, no request behind them, raised bfcl's V4 overall from 10 % to
   17.5 % without a finding. Now an entry's shape says how it was answered, whatever its
   subset's name: turns of steps are matched step by step, each step one reply.
2. HOLE, closed with 1: the ``simple_python`` files renamed to ``multi_turn_base`` kept their
   single-turn entries out of the match.
3. HOLE, closed the same day: an answer was matched by its text and token counts only, never by
   the request it answered: two entries' answers swapped, or one answered with a reply
   benchlocal-cli (the component's main harness) got to a prompt of its own, passed. Now a
   single-turn entry's answer must come from a request whose last user message is the entry's
   question, read from bfcl-eval's own data in the recorded checkout.
4. FALSE FINDING, closed with 1: bfcl-eval answers the agentic subsets (``web_search_*``,
   ``memory_*``) in turns and steps, as it does ``multi_turn_*``; their entries were read as
   single-turn entries that are neither answer nor error. Now their steps are matched, each to
   a reply whose request asks its turn's question last (tests/hostile/
   test_attacks_2026_12_06_bfcl_questions.py closed the rest the same day).

Held: token counts spelled as JSON floats (``49.0``), an entry spelled as an inference error
without its traceback, an answer only a reply of another component gave (and the answering
exchange relabelled a GET: tests/verify/test_bfcl_answers.py); from the honest side, a reply
whose ``tool_calls`` is an empty list (bfcl-eval's handler records ``[]``) and a reply body kept
as base64 bytes behind a byte order mark (the openai client reads both) still match."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pins import PinSetSource
from tests import bfcl_kit
from tests.bfcl_kit import (
    ANSWER_KEYS,
    LOG,
    MODEL,
    RAW,
    RESULT_JSON,
    RESULTS,
    answer_of,
    answered,
    bfcl_entries,
    data_entry,
    drawn_too,
    edit_entry,
    exchange_edited,
    forged_verdict,
    gate_findings,
    gate_tallies,
    giving,
    only_on_the_gate,
    pins_asking,
    put_subset,
    rederived,
    unused_replies,
)
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.gate_kit import Recorded
from verify.replies import answer_digest, answer_digest_of

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


@pytest.fixture(scope="module")
def multi_turn_pins() -> PinSetSource:
    """A run of ``multi_turn_base_0`` drawn beside the single-turn entries is the pinned gate
    under this pin set: the findings are the answers', not the draw's."""
    return pins_asking({"multi_turn_base": ["multi_turn_base_0"]})


# --- a forger's tools ----------------------------------------------------------------------------


# --- 1, 2: multi-turn by name ---------------------------------------------------------------------


def _invented_multi_turn(files: Files) -> None:
    """A ``multi_turn_base`` subset the pinned command never runs: three entries written as
    bfcl-eval writes a multi-turn answer (turns of steps), all scored correct."""
    entries = [
        {"id": f"multi_turn_base_{i}", "result": [[["cd(folder='document')"]]],
         "input_token_count": [[900]], "output_token_count": [[20]], "latency": [[1.0]]}
        for i in range(3)
    ]  # fmt: skip
    put_subset(files, "multi_turn_base", entries, set(), "multi_turn")
    drawn_too(files, "multi_turn_base", [e["id"] for e in entries])
    rederived(files)


@pytest.mark.parametrize("drawn_as", ["the-draw's", "multi-turn-too"])
def test_an_invented_multi_turn_subset_is_answers_without_requests(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, drawn_as: str
) -> None:
    """Three multi-turn answers no request asked for, all correct: bfcl's V4 overall (shown
    beside the scores) goes from 10 % to 17.5 % (multi_turn weighs 30 %). A draw the pinned
    command does not name is a finding, and where it does, answers no reply gave are."""
    target = tmp_path / "b"
    invented = {"multi_turn_base": [f"multi_turn_base_{i}" for i in range(3)]}
    judge = pins if drawn_as == "the-draw's" else pins_asking(invented)
    verdict = forged_verdict(drawn, judge, target, _invented_multi_turn)
    _, files = read_bundle(target)
    shown = json.loads(files[RESULT_JSON][0])["metrics"]["bfcl_v4_overall"]
    if gate_tallies(target)["multi_turn_base"] != {"hits": 3, "n": 3} or shown != pytest.approx(
        17.5
    ):
        raise RuntimeError(f"the invented subset is not tallied (V4 overall {shown})")
    only_on_the_gate(verdict)
    said = " ".join(gate_findings(verdict))
    if judge is pins:  # the draw bfcl-eval read names them, the pinned command does not
        assert "test_case_ids_to_generate.json is not the draw the pinned command names" in said
    else:
        assert "bfcl's answer to 'multi_turn_base_0 turn 0 step 0'" in said
        assert "does not ask" not in said


def _filed_as_multi_turn(files: Files) -> None:
    """The ``simple_python`` files renamed ``multi_turn_base`` (their entries, single-turn ids,
    unchanged), then the first of their answers replaced by one the model never gave."""
    for kind, folder in (("result", RESULTS), ("score", f"{RAW}score/{MODEL}/")):
        old = f"{folder}non_live/bfcl_v4_simple_python_{kind}.json"
        files[f"{folder}multi_turn/bfcl_v4_multi_turn_base_{kind}.json"] = files.pop(old)
    name = f"{RESULTS}multi_turn/bfcl_v4_multi_turn_base_result.json"
    edit_entry(files, name, 0, lambda e: e.update(result="an answer the model never gave"))
    rederived(files)


def test_single_turn_answers_filed_as_multi_turn_escape_the_match(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    target = tmp_path / "b"
    verdict = forged_verdict(drawn, pins, target, _filed_as_multi_turn)
    if "simple_python" in gate_tallies(target):
        raise RuntimeError("the files were not renamed")
    only_on_the_gate(verdict)
    assert gate_findings(verdict)


# --- 3: an answer not bound to its question ------------------------------------------------------


def _swapped(files: Files) -> None:
    (one, at, first), (other, to, second) = list(bfcl_entries(files))[:2]
    edit_entry(files, one, at, lambda e: e.update({k: second[k] for k in ANSWER_KEYS}))
    edit_entry(files, other, to, lambda e: e.update({k: first[k] for k in ANSWER_KEYS}))


def _answered_by_benchlocal(files: Files) -> None:
    """The first entry's answer replaced by the first reply of the component that no bfcl
    answer came from (benchlocal-cli's, to a prompt of its own)."""
    used = {answer_digest_of(*(e[k] for k in ANSWER_KEYS)) for _, _, e in bfcl_entries(files)}
    body = next(b for _, b in answered(files) if answer_digest(b) not in used)
    answer = dict(zip(ANSWER_KEYS, answer_of(body), strict=True))
    name, index, _ = next(bfcl_entries(files))
    edit_entry(files, name, index, lambda e: e.update(answer))


@pytest.mark.parametrize("edit", [_swapped, _answered_by_benchlocal], ids=["swapped", "benchlocal"])
def test_an_answer_to_another_question_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, edit: Callable[[Files], None]
) -> None:
    verdict = forged_verdict(drawn, pins, tmp_path / "b", edit)
    only_on_the_gate(verdict)
    (message,) = gate_findings(verdict)
    assert "is no reply of tool_instruction to its question in the transport log" in message


# --- 4: agentic subsets are multi-turn to bfcl-eval -----------------------------------------------


def _in_turns(files: Files, honest: bool) -> None:
    """``multi_turn_base_0`` as bfcl-eval writes an entry answered in turns
    (``inference_multi_turn_FC``: a result, token counts and latency per turn and step), scored
    failed: one turn of two steps, each a reply of the component no other answer came from, its
    request asking the turn's question last (``honest``: as bfcl-eval's requests do), or
    answers no reply gave."""
    asked = data_entry(files, "multi_turn_base", "multi_turn_base_0")["question"][0][-1]["content"]
    replies = unused_replies(files)[:2]
    steps = [answer_of(body) for _, body in replies]
    if honest:
        for index, _ in replies:
            exchange_edited(index, lambda e: _asking(e, asked))(files)
    else:
        steps = [("I could not find it.", 812, 7), ("Nor there.", 830, 3)]
    drawn_too(files, "multi_turn_base", ["multi_turn_base_0"])
    entry = {
        "id": "multi_turn_base_0", "result": [[a for a, _, _ in steps]],
        "input_token_count": [[p for _, p, _ in steps]],
        "output_token_count": [[c for _, _, c in steps]], "latency": [[0.4, 0.5]],
    }  # fmt: skip
    put_subset(files, "multi_turn_base", [entry], {"multi_turn_base_0"}, "multi_turn")
    rederived(files)


def _asking(exchange: dict[str, Any], question: Any) -> None:
    """An exchange's request made to end with a user message asking ``question``."""
    request = json.loads(exchange["request_body"]["data"])
    request["messages"].append({"role": "user", "content": question})
    exchange["request_body"] = {"encoding": "utf-8", "data": json.dumps(request)}


@pytest.mark.parametrize("honest", [True, False], ids=["its-replies", "invented"])
def test_an_entry_answered_in_turns_is_matched_step_by_step(
    drawn: Recorded, multi_turn_pins: PinSetSource, tmp_path: Path, honest: bool
) -> None:
    """Each step of an entry answered in turns is one reply to its turn's question: an honest
    one reads, invented steps are no reply (the first named by its turn and step)."""
    found = gate_findings(
        forged_verdict(drawn, multi_turn_pins, tmp_path / "b", lambda f: _in_turns(f, honest))
    )
    if honest:
        assert found == []
    else:
        (message,) = found
        assert "bfcl's answer to 'multi_turn_base_0 turn 0 step 0'" in message
        assert "(2 of 41 answers)" in message


# --- held ---------------------------------------------------------------------------------------


def test_token_counts_spelled_as_floats_are_refused(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """``49.0`` for ``49``: no integer count, so no answer; refused as neither."""
    name, index, entry = next(bfcl_entries(drawn[1]))

    def edit(files: Files) -> None:
        data = files[name][0].split(b"\n")
        count = str(entry["input_token_count"]).encode()
        data[index], found = re.subn(
            rb'("input_token_count": ?)' + count + rb"\b", rb"\g<1>" + count + b".0", data[index]
        )
        assert found == 1
        files[name] = (b"\n".join(data), files[name][1])

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is neither an answer" in message


def test_an_inference_error_without_its_traceback_is_refused(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    name, index, _ = next(bfcl_entries(drawn[1]))

    def change(e: dict[str, Any]) -> None:
        for key in ("input_token_count", "output_token_count", "latency"):
            e.pop(key)
        e["result"] = "Error during inference: Connection error."

    def edit(files: Files) -> None:
        edit_entry(files, name, index, change)

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is neither an answer" in message


def test_a_reply_of_another_component_answers_nothing(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """The first entry answered with the reply to a direct probe (the verifier's own requests,
    component ``probes``; coding's and performance's are streamed): no reply of
    tool_instruction."""

    def edit(files: Files) -> None:
        _, body = next(answered(files, "probes"))
        answer = dict(zip(ANSWER_KEYS, answer_of(body), strict=True))
        name, index, _ = next(bfcl_entries(files))
        edit_entry(files, name, index, lambda e: e.update(answer))

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is no reply of tool_instruction" in message


def _reply_edited(
    files: Files, change: Callable[[dict[str, Any], dict[str, Any]], Any]
) -> tuple[str, int, dict[str, Any]]:
    """The first answer's exchange edited by ``change(exchange, body)`` (which may return the
    entry's new result, as bfcl-eval's handler would record the edited reply)."""
    name, index, entry = next(bfcl_entries(files))
    given = giving(files, entry)
    exchanges = lines(files, LOG)
    body = json.loads(exchanges[given]["response_body"]["data"])
    result = change(exchanges[given], body)
    put_lines(files, LOG, exchanges)
    if result is not None:
        edit_entry(files, name, index, lambda e: e.update(result=result))
    return name, index, entry


def test_an_empty_tool_call_list_is_the_empty_answer(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """A server that sends ``"tool_calls": []`` beside its text: bfcl-eval's handler records
    ``[]`` (its list of calls, none), and so does the match."""

    def change(exchange: dict[str, Any], body: dict[str, Any]) -> list[Any]:
        body["choices"][0]["message"]["tool_calls"] = []
        exchange["response_body"]["data"] = json.dumps(body)
        return []

    def edit(files: Files) -> None:
        _reply_edited(files, change)

    assert gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit)) == []


def test_a_reply_kept_as_base64_behind_a_byte_order_mark_matches(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """A reply body that starts with a UTF-8 byte order mark (the openai client's JSON reader
    skips it), kept by the observer as base64: the same answer."""

    def change(exchange: dict[str, Any], body: dict[str, Any]) -> None:
        data = b"\xef\xbb\xbf" + json.dumps(body).encode()
        exchange["response_body"] = {"data": base64.b64encode(data).decode(), "encoding": "base64"}

    def edit(files: Files) -> None:
        _reply_edited(files, change)

    assert gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit)) == []
