"""Hostile tests of 2026-12-06 (bfcl entries, second review): the inference-error binding and
the asked set of commits 79074bb and e6ee9d8 (``verify/_consistency/bfcl.py``
``_bfcl_replies``, ``_asking``, ``_pinned_entries``, ``_phases``, ``_named_draw``), attacked as
a publisher and read from the honest side.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 single-turn
entries (examples/recorded/, ADR 0046), resealed with claims equal to its replay, bfcl-eval's
tallies re-derived as a careful forger would (``tests.bfcl_kit``).

Holes (each test failed before its fix, closed the same day: each error takes a request of
its own, as each answer takes its reply):

1. An inference error is bound by *any* POST that asked its question, not by one of its own:
   ``requested`` is a set, and the requests the answers took are in it. bfcl-eval's data holds
   38 single-turn groups of entries with the same first turn and function names (across
   subsets too: ``irrelevance_0`` and two ``live_irrelevance`` entries) and 200 multi-turn
   groups with the same first question (``multi_turn_base_N``, ``_long_context_N``,
   ``_miss_func_N``, ``_miss_param_N``), so an entry the model was never asked passes as an
   error on its sibling's request: here ``live_simple_33-10-0`` on the request whose reply
   ``live_simple_32-9-0``'s answer took.
2. The same for multi-turn: three entries' errors on one request asking their first question.

False finding (an honest run refused; the test failed before its fix: bound by the id now):

3. ``_asking`` chooses the binding by the number of turns in the data, bfcl-eval's handler by
   the id (``contain_multi_turn_interaction``): ``multi_turn_base_46``, ``_50``, ``_198`` (and
   their ``long_context`` twins) have one turn, are asked in turns with the tools of their
   classes, and their honest errors are held to a single-turn request offering no function.

The asked set (the pin set is the verifier's, so these need a pin set written that way; both
are refused as ambiguous now, a finding, rather than joined or chosen):

4. SHRUNK: a command of two ``generate`` phases, one ``--run-ids``, asks only the draw: the
   categories of the other phase (which bfcl-eval answers into the same result files) are
   dropped.
5. FALSE FINDING: a draw category named twice among the command's arguments is read as the
   union; the kept program (``dict(...)``) writes the last, so the honest draw file "is not the
   draw the pinned command names".

Held (tests below pass): a GET or another component's POST binds no error; an error whose
request was sent three times (the OpenAI client's retries) and one of the sibling's own failed
request read; hostile commands and draw files raise nothing in ``_pinned_entries``.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from pins import PinSetSource
from tests import bfcl_kit
from tests.bfcl_kit import (
    BFCL_EVAL_DATA,
    LOG,
    data_entry,
    drawn_too,
    failed_ids,
    forged_verdict,
    gate_findings,
    giving,
    log_written,
    only_on_the_gate,
    pins_asking,
    put_subset,
    rederived,
    rescored,
    result_file,
    unused_replies,
)
from tests.data.hostile.kit import Files, lines, put_lines
from tests.gate_kit import Recorded
from verify._consistency.bfcl import _Asks, _pinned_entries
from verify.harness_outputs import BFCL_DRAW

ERROR = "Error during inference: Error code: 500 - {'error': 'server busy'}"
TRACEBACK = (
    'Traceback (most recent call last):\n  File "base_handler.py", line 1, in inference\n'
    "openai.InternalServerError: Error code: 500 - {'error': 'server busy'}\n"
)
BUSY = {"data": '{"error":"server busy"}', "encoding": "utf-8"}
UNUSED = "not asked by the forger"

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


def _inference_error(sample: str) -> dict[str, Any]:
    return {"id": sample, "result": ERROR, "traceback": TRACEBACK}


def _failed_copies(files: Files, index: int, count: int, request: Any = None) -> None:
    """``count`` failed copies (500, server busy) of the exchange at ``index`` inserted after
    it, their request ``request`` where given (else the copied one's)."""
    exchanges = lines(files, LOG)
    failed = copy.deepcopy(exchanges[index])
    failed |= {"status": 500, "chunks": [], "response_body": BUSY}
    if request is not None:
        failed["request_body"] = {"encoding": "utf-8", "data": json.dumps(request)}
    copies = [copy.deepcopy(failed) for _ in range(count)]
    log_written(files, exchanges[: index + 1] + copies + exchanges[index + 1 :])


def _bfcl_request(files: Files, messages: list[Any], tools: list[str]) -> dict[str, Any]:
    """A request as bfcl-eval's function-calling handler sends it (``_query_FC``)."""
    exchanges = lines(files, LOG)
    first = lines(files, result_file(files, "simple_python"))[0]
    request = json.loads(exchanges[giving(files, first)]["request_body"]["data"])
    offered = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in tools]
    return request | {"messages": messages, "tools": offered}


def _class_functions(*docs: str) -> list[str]:
    """The names of the functions of bfcl-eval's multi-turn classes (``multi_turn_func_doc``)."""
    folder = BFCL_EVAL_DATA / "multi_turn_func_doc"
    return [
        json.loads(line)["name"]
        for doc in docs
        for line in (folder / f"{doc}.json").read_text().splitlines()
    ]


def _alone(files: Files, subset: str, entries: list[dict[str, Any]]) -> None:
    """A result file of ``subset`` (multi-turn) holding ``entries``, all failed, drawn too."""
    put_subset(files, subset, entries, {e["id"] for e in entries}, "multi_turn")
    drawn_too(files, subset, [e["id"] for e in entries])


# --- 1: an error on the request its sibling's answer took ----------------------------------------

_SIBLINGS = ["live_simple_130-84-0", "live_simple_32-9-0", "live_simple_68-32-0"]
_NEVER_ASKED = "live_simple_33-10-0"
"""Same first turn and function names as ``live_simple_32-9-0`` (bfcl-eval's data)."""


@pytest.fixture(scope="module")
def sibling_pins() -> PinSetSource:
    """The draw's pin set with ``live_simple_33-10-0`` drawn too."""
    return pins_asking({"live_simple": [*_SIBLINGS, _NEVER_ASKED]})


def _sibling_as_error(files: Files, own_requests: int) -> None:
    """``live_simple_33-10-0`` answered as an inference error (scored failed), with
    ``own_requests`` failed requests of its own in the log (copies of its sibling's, which ask
    the same: as bfcl-eval's client sends it, and retries)."""
    assert (
        data_entry(files, "live_simple", _NEVER_ASKED)["question"]
        == data_entry(files, "live_simple", "live_simple_32-9-0")["question"]
    )
    entries = lines(files, result_file(files, "live_simple"))
    sibling = next(e for e in entries if e["id"] == "live_simple_32-9-0")
    if own_requests:
        _failed_copies(files, giving(files, sibling), own_requests)
    entries.append(_inference_error(_NEVER_ASKED))
    rescored(files, "live_simple", entries, failed_ids(files, "live_simple") | {_NEVER_ASKED})
    drawn_too(files, "live_simple", [*_SIBLINGS, _NEVER_ASKED])
    rederived(files)


def test_an_error_on_the_request_an_answer_took_is_a_finding(
    drawn: Recorded, sibling_pins: PinSetSource, tmp_path: Path
) -> None:
    """HOLE 1: no request asked ``live_simple_33-10-0``; the one request that asked its
    question (first turn and functions) gave ``live_simple_32-9-0`` its answer."""
    verdict = forged_verdict(drawn, sibling_pins, tmp_path / "b", lambda f: _sibling_as_error(f, 0))
    only_on_the_gate(verdict)
    assert gate_findings(verdict), "an entry the model was never asked passed as an error"


@pytest.mark.parametrize("attempts", [1, 3])
def test_an_error_with_requests_of_its_own_reads(
    drawn: Recorded, sibling_pins: PinSetSource, tmp_path: Path, attempts: int
) -> None:
    """Held (the honest side of 1): the error's own failed request, or three (the OpenAI
    client's two retries of a 500), bind it."""
    edit = lambda f: _sibling_as_error(f, attempts)  # noqa: E731
    assert gate_findings(forged_verdict(drawn, sibling_pins, tmp_path / "b", edit)) == []


# --- 2, 3: multi-turn errors ---------------------------------------------------------------------

_FIRST = ["multi_turn_base_0", "multi_turn_long_context_0", "multi_turn_miss_func_0"]


@pytest.fixture(scope="module")
def first_pins() -> PinSetSource:
    return pins_asking({s.rsplit("_", 1)[0]: [s] for s in _FIRST})


def _three_errors(files: Files, requests: int) -> None:
    """The three entries as inference errors, with ``requests`` failed requests asking their
    (one) first question in the log, each as bfcl-eval sends one (the question, the tools)."""
    asked = {json.dumps(data_entry(files, s.rsplit("_", 1)[0], s)["question"][0]) for s in _FIRST}
    (question,) = asked  # the same first turn
    tools = _class_functions("gorilla_file_system")
    at = unused_replies(files)[0][0]
    _failed_copies(files, at, requests, _bfcl_request(files, json.loads(question), tools))
    for sample in _FIRST:
        _alone(files, sample.rsplit("_", 1)[0], [_inference_error(sample)])
    rederived(files)


def test_one_request_is_not_three_multi_turn_errors(
    drawn: Recorded, first_pins: PinSetSource, tmp_path: Path
) -> None:
    """HOLE 2: one request asking the first question stands for three entries' errors."""
    verdict = forged_verdict(drawn, first_pins, tmp_path / "b", lambda f: _three_errors(f, 1))
    only_on_the_gate(verdict)
    assert gate_findings(verdict), "two entries the model was never asked passed as errors"


def test_three_multi_turn_errors_of_three_requests_read(
    drawn: Recorded, first_pins: PinSetSource, tmp_path: Path
) -> None:
    """Held (the honest side of 2)."""
    edit = lambda f: _three_errors(f, 3)  # noqa: E731
    assert gate_findings(forged_verdict(drawn, first_pins, tmp_path / "b", edit)) == []


def _one_turn_error(files: Files) -> None:
    """``multi_turn_base_46`` (one turn, classes MessageAPI and GorillaFileSystem) an inference
    error of a request bfcl-eval sent: its first turn, the tools of its classes, a 500."""
    question = data_entry(files, "multi_turn_base", "multi_turn_base_46")["question"]
    assert len(question) == 1
    tools = _class_functions("message_api", "gorilla_file_system")
    at = unused_replies(files)[0][0]
    _failed_copies(files, at, 1, _bfcl_request(files, question[0], tools))
    _alone(files, "multi_turn_base", [_inference_error("multi_turn_base_46")])
    rederived(files)


def test_an_honest_error_of_a_one_turn_multi_turn_entry_reads(
    drawn: Recorded, tmp_path: Path
) -> None:
    """FALSE FINDING 3: bfcl-eval asks ``multi_turn_base_46`` in turns (its id), with its
    classes' tools; the verifier binds its error as a single-turn entry offering none."""
    pins = pins_asking({"multi_turn_base": ["multi_turn_base_46"]})
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _one_turn_error)
    assert gate_findings(verdict) == []


# --- held: what binds nothing --------------------------------------------------------------------


def _bound_by(files: Files, method: str, component: str) -> None:
    """The first simple_python entry an inference error, the one exchange that asked it made a
    ``method`` of ``component``."""
    name = result_file(files, "simple_python")
    entries = lines(files, name)
    exchanges = lines(files, LOG)
    exchange = exchanges[giving(files, entries[0])]
    exchange |= {"method": method, "component": component, "status": 500, "chunks": [],
                 "response_body": BUSY}  # fmt: skip
    put_lines(files, LOG, exchanges)
    sample = entries[0]["id"]
    entries[0] = _inference_error(sample)
    rescored(files, "simple_python", entries, failed_ids(files, "simple_python") | {sample})
    rederived(files)


@pytest.mark.parametrize(
    ("method", "component"),
    [("GET", "tool_instruction"), ("POST", "coding")],
    ids=["get", "coding"],
)
def test_a_get_or_another_component_binds_no_error(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path, method: str, component: str
) -> None:
    edit = lambda f: _bound_by(f, method, component)  # noqa: E731
    found = gate_findings(forged_verdict(drawn, pins, tmp_path / "b", edit))
    assert any("is no request of tool_instruction that asked its question" in m for m in found)


# --- 4, 5: the asked set -------------------------------------------------------------------------


def test_a_draw_beside_a_generate_of_categories_is_refused() -> None:
    """SHRUNK 4: two generate phases into one result folder: bfcl-eval answers every
    simple_python entry (the first) and the drawn irrelevance entry (the second, ``--run-ids``
    updating the files). The first draft asked the draw alone, so a run of one entry passed;
    the verifier now refuses to join them (a pin set written so is a finding, never a smaller
    asked set)."""
    command = ["generate", "--test-category", "simple_python",
               "--then", "generate", "--run-ids",
               "--then", "evaluate", "--test-category", "single_turn"]  # fmt: skip
    files = {BFCL_DRAW: json.dumps({"irrelevance": ["irrelevance_1"]}).encode()}
    asks = _pinned_entries(command, files)
    assert isinstance(asks, str)
    assert "a draw (--run-ids) and categories: this reader joins none" in asks


_PROGRAM = (
    "import json, pathlib, sys\n"
    'i = sys.argv.index("generate")\n'
    'draw = dict((k, v.split(",")) for k, v in (a.split("=") for a in sys.argv[4:i]))\n'
)


def test_a_category_named_twice_is_refused() -> None:
    """FALSE FINDING 5: the kept program writes ``dict(...)`` of its draw arguments: a category
    named twice is its last, and the first draft read the union ("not the draw the pinned
    command names"). Which the program keeps is its own: the verifier now says the command
    names it twice."""
    named = ["simple_python=simple_python_1", "simple_python=simple_python_2"]
    command = ["{python}", "-c", _PROGRAM, "{model}", "{out}", "{endpoint}/v1", *named,
               "generate", "--run-ids",
               "--then", "evaluate", "--test-category", "simple_python"]  # fmt: skip
    written = {k: v.split(",") for k, v in (a.split("=") for a in named)}  # the program's dict
    asks = _pinned_entries(command, {BFCL_DRAW: json.dumps(written).encode()})
    assert asks == "the pinned command names the draw of simple_python twice"


def test_hostile_commands_and_draws_raise_nothing() -> None:
    """Held: random commands of the words ``_pinned_entries`` reads, against draw files of
    every shape, give asks or a reason, never an exception."""
    words = ["generate", "evaluate", "--run-ids", "--then", "--test-category", "", ",",
             "--test-category=", "--test-category=simple_python", "simple_python", "all",
             "single_turn", "format_sensitivity", "memory", "bogus",
             "simple_python=simple_python_1", "irrelevance=x,y", "a=b"]  # fmt: skip
    draws = [None, b"", b"{}", b"[]", b"\xff", b'{"a":1,"a":2}', b'{"simple_python":"x"}',
             b'{"simple_python":[]}', b'{"bogus":["x"]}', b'{"simple_python":["simple_python_1"]}',
             b'{"simple_python":["simple_python_1"],"irrelevance":["x","y"]}']  # fmt: skip
    rng = random.Random(20261206)  # noqa: S311 (a fixed draw of test inputs)
    for _ in range(5000):
        command = [rng.choice(words) for _ in range(rng.randint(0, 8))]
        draw = rng.choice(draws)
        files = {} if draw is None else {BFCL_DRAW: draw}
        assert isinstance(_pinned_entries(command, files), _Asks | str)
