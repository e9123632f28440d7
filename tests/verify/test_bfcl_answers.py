"""bfcl-eval's answers held to the transport log (verify/_consistency/bfcl.py
``_bfcl_replies``): each answer its result files record is a reply the observer saw, its answer
and token counts as bfcl-eval's handler takes them, each reply once; a single-turn entry's, to a
request that asked the entry's question (bfcl-eval's data, in the recorded checkout).

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 entries
(examples/recorded/, ADR 0046): every answer there is a reply, and each edit below is resealed
with claims equal to its replay (a careful forger's), so the finding is the only tell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pins import PinSetSource
from tests import bfcl_kit
from tests.bfcl_kit import (
    DRAW_TAR,
    GATE,
    LOG,
    bfcl_entries,
    edit_entry,
    exchange_edited,
    forged_verdict,
    gate_findings,
    giving,
    result_files,
)
from tests.data.hostile.kit import Files, lines, put_lines
from tests.gate_kit import Recorded
from verify import verify_bundle

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


def _first(files: Files, called: bool) -> tuple[str, int, dict[str, Any]]:
    """The first answer that called functions (``called``) or that is text."""
    return next(e for e in bfcl_entries(files) if isinstance(e[2]["result"], list) is called)


def test_the_recorded_answers_are_all_replies(drawn: Recorded, pins: PinSetSource) -> None:
    """The control: 39 answers (SmolLM2 called no function in any), each a reply, no finding."""
    _, files = drawn
    answers = list(bfcl_entries(files))
    assert len(answers) == 39
    assert all(isinstance(e["result"], str) for _, _, e in answers)
    verdict = verify_bundle(DRAW_TAR, pins=pins).verdict
    assert verdict.integrity.findings == ()


def test_an_answer_the_model_did_not_give_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    name, index, entry = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        edit_entry(files, name, index, lambda e: e.update(result=e["result"] + " Paris."))

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    where = f"{name.removeprefix('components/tool_instruction/gates/bfcl/raw/')}:{index + 1}"
    assert message.startswith(f"evidence {GATE!r}: {where}: bfcl's answer to {entry['id']!r} (")
    assert message.endswith("is no reply of tool_instruction to its question in the transport log")


@pytest.mark.parametrize("field", ["input_token_count", "output_token_count"])
def test_token_counts_the_engine_did_not_give_are_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, field: str
) -> None:
    name, index, _ = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        edit_entry(files, name, index, lambda e: e.update({field: e[field] + 1}))

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is no reply of tool_instruction" in message


CALL = {"id": "call-1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip


def _called(files: Files, arguments: str) -> None:
    """The first text answer and the reply it came from made a function call: the reply's
    message calls :data:`CALL`, the entry records ``[{name: arguments}]``."""
    name, index, entry = _first(files, called=False)
    given = giving(files, entry)
    exchanges = lines(files, LOG)
    body = json.loads(exchanges[given]["response_body"]["data"])
    body["choices"][0]["message"] |= {"content": None, "tool_calls": [CALL]}
    exchanges[given]["response_body"]["data"] = json.dumps(body)
    put_lines(files, LOG, exchanges)
    edit_entry(files, name, index, lambda e: e.update(result=[{"get_weather": arguments}]))


@pytest.mark.parametrize(
    ("arguments", "found"), [('{"city": "Oslo"}', False), ('{"city": "Paris"}', True)]
)
def test_a_call_is_matched_by_its_name_and_arguments(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, arguments: str, found: bool
) -> None:
    """An answer that called a function is ``[{name: arguments}]`` of the reply's tool calls
    (bfcl-eval's handler): the same call matches; other arguments are no reply."""
    messages = gate_findings(
        forged_verdict(drawn, pins, tmp_path / "b", lambda files: _called(files, arguments))
    )
    assert bool(messages) is found, messages
    if found:
        assert "is no reply of tool_instruction to its question in the transport log" in messages[0]


def test_one_reply_is_one_answer(drawn: Recorded, pins: PinSetSource, tmp_path: Path) -> None:
    """A reply copied into a second entry (its answer and counts) answers only one of them."""
    texts = [e for e in bfcl_entries(drawn[1]) if isinstance(e[2]["result"], str)]
    (_, _, source), (other, at, _) = texts[0], texts[1]
    copied = {k: source[k] for k in ("result", "input_token_count", "output_token_count")}

    def edit(files: Files) -> None:
        edit_entry(files, other, at, lambda e: e.update(copied))

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert "is no reply of tool_instruction to its question in the transport log" in message


@pytest.mark.parametrize(
    "change",
    [{"error": "connection reset after the reply"}, {"status": 500}, {"method": "GET"}],
    ids=["broken-off", "not-200", "a-get"],
)
def test_an_exchange_that_is_no_answered_post_answers_nothing(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, change: dict[str, Any]
) -> None:
    """The exchange that gave an answer, recorded as broken off, as not a 200 or as a GET: its
    reply is no answer."""
    _, _, entry = _first(drawn[1], called=False)
    edit = exchange_edited(giving(drawn[1], entry), lambda e: e.update(change))
    messages = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert any(f"bfcl's answer to {entry['id']!r}" in m for m in messages), messages


def test_an_answer_spelled_otherwise_is_the_same_answer(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """Key order and spacing are JSON's, not the answer's: rewritten so, every answer matches."""

    def edit(files: Files) -> None:
        for name in result_files(files):
            respelled = [
                json.dumps(dict(reversed(e.items())), indent=None, separators=(" , ", " : "))
                for e in lines(files, name)
            ]
            files[name] = ("\n".join(respelled).encode() + b"\n", files[name][1])

    assert gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit)) == []


def test_an_entry_that_is_neither_answer_nor_error_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """An answer stripped of its token counts would escape the match: refused by name."""
    name, index, entry = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        edit_entry(files, name, index, lambda e: e.pop("input_token_count"))

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert f"entry {entry['id']!r} is neither an answer" in message


def test_an_inference_error_is_not_matched(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """DECISION (ADR 0046 amendment): an entry bfcl-eval recorded as an inference error (its
    message, a traceback, no token counts) holds no answer to match; it is held only by the
    bound that each sample asked at least once. (bfcl-eval counts it failed, an irrelevance
    entry's as passed: no reply could say which.)"""
    name, index, _ = _first(drawn[1], called=False)

    def change(e: dict[str, Any]) -> None:
        for key in ("input_token_count", "output_token_count", "latency"):
            e.pop(key, None)
        e["result"] = "Error during inference: Connection error."
        e["traceback"] = "Traceback (most recent call last):\n  ...\nAPIConnectionError\n"

    def edit(files: Files) -> None:
        edit_entry(files, name, index, change)

    assert gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit)) == []


def test_the_questions_are_bfcl_eval_s_own_data_kept_in_the_checkout(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """A single-turn answer is held to its entry's question, read from bfcl-eval's data in the
    recorded checkout: a data file the answers need, left out of the bundle (which a sparse
    checkout may do with a file nothing reads), is a finding, never a match skipped."""
    _, files = drawn
    path = "berkeley-function-call-leaderboard/bfcl_eval/data/BFCL_v4_simple_python.json"
    listing = files["upstreams/bfcl/tree.txt"][0].decode()
    (line,) = [x for x in listing.splitlines() if x.endswith(f"\t{path}")]
    object_id = line.split("\t")[0].split()[2]

    def edit(files: Files) -> None:
        del files[f"upstreams/bfcl/files/{object_id}"]

    (message,) = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert message.endswith(
        f"bfcl's entries cannot be held to bfcl-eval's data: {path} ({object_id}) is not kept "
        "in the bundle"
    )


def test_an_answer_to_an_entry_bfcl_eval_does_not_have_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """An entry id not in bfcl-eval's data has no question, so no reply answers it."""
    name, index, _ = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        edit_entry(files, name, index, lambda e: e.update(id=e["id"] + "0000"))

    verdict = forged_verdict(drawn, pins, tmp_path / "b", edit)
    assert any("to its question in the transport log" in m for m in gate_findings(verdict))
