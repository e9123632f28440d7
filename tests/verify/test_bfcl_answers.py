"""bfcl-eval's answers held to the transport log (verify/_consistency/outputs.py
``_bfcl_replies``): each single-turn answer its result files record is a reply the observer saw,
its answer and token counts as bfcl-eval's handler takes them, each reply once.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 entries
(examples/recorded/, ADR 0046): every answer there is a reply, and each edit below is resealed
with claims equal to its replay (a careful forger's), so the finding is the only tell."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Body, Verdict
from pins import PinSetSource
from pins._loader import parse_pin_set
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.gate_kit import Recorded, resealed_as_replayed
from tests.paths import EXAMPLES
from tests.real_runs import RECORDING_PINS
from verify import verify_bundle
from verify.replies import answer_digest, answer_digest_of, body_json

DRAW_TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m-bfcl-draw.tar"
DRAW_PINS = EXAMPLES / "recorded" / f"{RECORDING_PINS}.toml"
GATE = "components/tool_instruction/gates/bfcl/bfcl-eval.json"
RESULTS = "components/tool_instruction/gates/bfcl/raw/result/smollm2-135m-instruct/"
LOG = "transport/exchanges.jsonl"


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("drawn") / "bundle"
    assert main(["unpack", str(DRAW_TAR), "-o", str(root)]) == 0
    return read_bundle(root)


@pytest.fixture(scope="module")
def pins() -> PinSetSource:
    return parse_pin_set(DRAW_PINS.read_bytes(), str(DRAW_PINS))


def _result_files(files: Files) -> list[str]:
    return sorted(n for n in files if n.startswith(RESULTS) and n.endswith("_result.json"))


def _entries(files: Files) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Each answer of the result files: (file, index, entry)."""
    for name in _result_files(files):
        for index, entry in enumerate(lines(files, name)):
            yield name, index, entry


def _first(files: Files, called: bool) -> tuple[str, int, dict[str, Any]]:
    """The first answer that called functions (``called``) or that is text."""
    return next(e for e in _entries(files) if isinstance(e[2]["result"], list) is called)


def _edit_entry(
    files: Files, where: tuple[str, int], change: Callable[[dict[str, Any]], None]
) -> None:
    name, index = where
    entries = lines(files, name)
    change(entries[index])
    put_lines(files, name, entries)


def _verify(
    drawn: Recorded, pins: PinSetSource, target: Path, edit: Callable[[Files], None]
) -> Verdict:
    manifest, original = drawn
    files = dict(original)
    edit(files)
    resealed_as_replayed(target, manifest, files, pins)
    return verify_bundle(target, pins=pins).verdict


def _answer_findings(verdict: Verdict) -> list[str]:
    return [
        f.message for f in verdict.integrity.findings
        if f.code == "record_disagrees" and f.entry == GATE
    ]  # fmt: skip


def test_the_recorded_answers_are_all_replies(drawn: Recorded, pins: PinSetSource) -> None:
    """The control: 39 answers (SmolLM2 called no function in any), each a reply, no finding."""
    _, files = drawn
    answers = list(_entries(files))
    assert len(answers) == 39
    assert all(isinstance(e["result"], str) for _, _, e in answers)
    verdict = verify_bundle(DRAW_TAR, pins=pins).verdict
    assert verdict.integrity.findings == ()


def test_an_answer_the_model_did_not_give_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    name, index, entry = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        _edit_entry(files, (name, index), lambda e: e.update(result=e["result"] + " Paris."))

    (message,) = _answer_findings(_verify(drawn, pins, tmp_path / "b", edit))
    where = f"{name.removeprefix('components/tool_instruction/gates/bfcl/raw/')}:{index + 1}"
    assert message.startswith(f"evidence {GATE!r}: {where}: bfcl's answer to {entry['id']!r} (")
    assert message.endswith("is no reply of tool_instruction in the transport log")


@pytest.mark.parametrize("field", ["input_token_count", "output_token_count"])
def test_token_counts_the_engine_did_not_give_are_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, field: str
) -> None:
    name, index, _ = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        _edit_entry(files, (name, index), lambda e: e.update({field: e[field] + 1}))

    (message,) = _answer_findings(_verify(drawn, pins, tmp_path / "b", edit))
    assert "is no reply of tool_instruction" in message


CALL = {"id": "call-1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip


def _called(files: Files, arguments: str) -> None:
    """The first text answer and the reply it came from made a function call: the reply's
    message calls :data:`CALL`, the entry records ``[{name: arguments}]``."""
    name, index, entry = _first(files, called=False)
    given = _giving(files, entry)
    exchanges = lines(files, LOG)
    body = json.loads(exchanges[given]["response_body"]["data"])
    body["choices"][0]["message"] |= {"content": None, "tool_calls": [CALL]}
    exchanges[given]["response_body"]["data"] = json.dumps(body)
    put_lines(files, LOG, exchanges)
    _edit_entry(files, (name, index), lambda e: e.update(result=[{"get_weather": arguments}]))


@pytest.mark.parametrize(
    ("arguments", "found"), [('{"city": "Oslo"}', False), ('{"city": "Paris"}', True)]
)
def test_a_call_is_matched_by_its_name_and_arguments(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, arguments: str, found: bool
) -> None:
    """An answer that called a function is ``[{name: arguments}]`` of the reply's tool calls
    (bfcl-eval's handler): the same call matches; other arguments are no reply."""
    messages = _answer_findings(
        _verify(drawn, pins, tmp_path / "b", lambda files: _called(files, arguments))
    )
    assert bool(messages) is found, messages
    if found:
        assert "is no reply of tool_instruction in the transport log" in messages[0]


def test_one_reply_is_one_answer(drawn: Recorded, pins: PinSetSource, tmp_path: Path) -> None:
    """A reply copied into a second entry (its answer and counts) answers only one of them."""
    texts = [e for e in _entries(drawn[1]) if isinstance(e[2]["result"], str)]
    (_, _, source), (other, at, _) = texts[0], texts[1]
    copied = {k: source[k] for k in ("result", "input_token_count", "output_token_count")}

    def edit(files: Files) -> None:
        _edit_entry(files, (other, at), lambda e: e.update(copied))

    (message,) = _answer_findings(_verify(drawn, pins, tmp_path / "b", edit))
    assert "is no reply of tool_instruction in the transport log" in message


def test_a_failed_exchange_answers_nothing(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """The exchange that gave an answer, recorded as broken off: its reply is no answer."""
    _, files = drawn
    _, _, entry = _first(files, called=False)
    given = _giving(files, entry)

    def edit(files: Files) -> None:
        changed = lines(files, LOG)
        changed[given]["error"] = "connection reset after the reply"
        put_lines(files, LOG, changed)

    (message,) = _answer_findings(_verify(drawn, pins, tmp_path / "b", edit))
    assert f"bfcl's answer to {entry['id']!r}" in message


def _giving(files: Files, entry: dict[str, Any]) -> int:
    """The index in the transport log of the one answered exchange whose reply gave ``entry``."""
    wanted = answer_digest_of(
        entry["result"], entry["input_token_count"], entry["output_token_count"]
    )
    (given,) = [
        i for i, e in enumerate(lines(files, LOG))
        if e["status"] == 200 and e.get("response_body")
        and answer_digest(body_json(Body.model_validate(e["response_body"]))) == wanted
    ]  # fmt: skip
    return given


def test_an_answer_spelled_otherwise_is_the_same_answer(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """Key order and spacing are JSON's, not the answer's: rewritten so, every answer matches."""

    def edit(files: Files) -> None:
        for name in _result_files(files):
            respelled = [
                json.dumps(dict(reversed(e.items())), indent=None, separators=(" , ", " : "))
                for e in lines(files, name)
            ]
            files[name] = ("\n".join(respelled).encode() + b"\n", files[name][1])

    assert _answer_findings(_verify(drawn, pins, tmp_path / "b", edit)) == []


def test_an_entry_that_is_neither_answer_nor_error_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """An answer stripped of its token counts would escape the match: refused by name."""
    name, index, entry = _first(drawn[1], called=False)

    def edit(files: Files) -> None:
        _edit_entry(files, (name, index), lambda e: e.pop("input_token_count"))

    (message,) = _answer_findings(_verify(drawn, pins, tmp_path / "b", edit))
    assert f"entry {entry['id']!r} of a single-turn subset is neither an answer" in message


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
        _edit_entry(files, (name, index), change)

    assert _answer_findings(_verify(drawn, pins, tmp_path / "b", edit)) == []
