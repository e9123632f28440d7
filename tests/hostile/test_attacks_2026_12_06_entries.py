"""Hostile tests of 2026-12-06 (bfcl entries): the gate held to the entries the pinned command
asks (commit 79074bb, ADR 0022 second amendment: ``verify/_consistency/bfcl.py``
``_pinned_entries``, ``_named_draw``, ``_bfcl_asked``, ``_bfcl_data``;
``verify/harness_outputs.py`` ``bfcl_drawn``, ``bfcl_answers``; ``verify/scorers/bfcl.py``
``v4_categories``), attacked as a publisher and read from the honest side.

Forged from the recorded real bundle whose bfcl-eval gate ran on a draw of 39 single-turn
entries (examples/recorded/, ADR 0046), resealed with claims equal to its replay, bfcl-eval's
tallies re-derived as a careful forger would (``tests.bfcl_kit``).

Holes (each test failed before its fix, closed the same day: inference errors are bound to a
request that asked their question, ``_bfcl_replies``):

1. An entry the model was never asked stands in the result file as an inference error
   (``Error during inference: ...`` with a traceback, no token counts): it counts as an answered
   entry of the asked set, and no exchange has to ask its question. Held only by the request
   bound (samples <= the component's POSTs, whatever they asked), which a forger meets with
   failed exchanges of one request: the ADR's own attack, the 39-entry draw named for
   ``gx10-qualification-v5`` (3,641 entries), verifies with no finding once 3,602 entries are
   inference errors and 3,602 copies of one failed POST are in the log.
2. The same on the draw's own pin set: one drawn entry whose exchange is gone from the log
   (ids renumbered, the observer's count with them) passes as an inference error.

False findings (honest runs the first draft refused; each test failed before its fix: the
asked set is generate's, format_sensitivity asks nothing, the data of every asked subset is
read):

3. ``format_sensitivity``: bfcl-eval 2026.3.23 skips its entries for a function-calling model
   (``collect_test_cases``), and the pinned handler registers one (``is_fc_model=True``), so a
   command that asks it answers none of it; the verifier asks every entry.
4. An id of the draw bfcl-eval's data does not hold "is not asked", but only where the subset
   has a result file: a drawn category whose ids the data all lacks (bfcl-eval answers none and
   writes no file) is asked in full.
5. The ``--test-category`` values of every phase of the pinned program are joined: a
   ``generate`` of one category evaluated with a wider ``--test-category`` (bfcl-eval's
   evaluate scores the result files there are) is asked the wider set.

Held: an entry left out (results and score re-derived); left out of the draw file too (the
file is not the named draw); a whole subset left out; the draw file gone; the draw file with a
duplicate key, a duplicate id, an empty id, an over-long id, nested past the bound, invalid
UTF-8 (each refused, no traceback; 2,000,000 ids read in under two seconds); a subset bfcl-eval
does not have; extra empty lists (bfcl-eval skips them too); the transport log dropped
(transport_evidence is infra).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pins import CURRENT, PinSetSource, load_builtin
from tests import bfcl_kit
from tests.bfcl_kit import (
    BFCL_EVAL_DATA,
    LOG,
    failed_ids,
    forged_verdict,
    gate_findings,
    giving,
    log_written,
    only_on_the_gate,
    rederived,
    rescored,
    result_file,
)
from tests.data.hostile.kit import Files, lines
from tests.gate_kit import Recorded, resealed_as_replayed
from verify import verify_bundle
from verify._consistency.bfcl import _bfcl_asked, _Data, _pinned_entries
from verify.harness_outputs import BFCL_DRAW, BfclResults
from verify.scorers.bfcl import V4_COLLECTIONS

ERROR = "Error during inference: Error code: 500 - {'error': 'server busy'}"
TRACEBACK = (
    'Traceback (most recent call last):\n  File "base_handler.py", line 1, in inference\n'
    "openai.InternalServerError: Error code: 500 - {'error': 'server busy'}\n"
)
WHERE = ("components/tool_instruction/gates/bfcl/bfcl-eval.json", "tool_instruction", "bfcl")

drawn_fixture = bfcl_kit.drawn_fixture  # the kit's fixtures drawn and pins, used here
pins_fixture = bfcl_kit.pins_fixture


def _inference_error(sample: str) -> dict[str, Any]:
    """An entry as bfcl-eval records one whose inference raised."""
    return {"id": sample, "result": ERROR, "traceback": TRACEBACK}


def _data_ids(subset: str) -> list[str]:
    path = BFCL_EVAL_DATA / f"BFCL_v4_{subset}.json"
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


# --- 1: a whole gate of entries the model was never asked ---------------------------------------


def _padded_to_every_entry(files: Files) -> None:
    """Every single-turn entry of bfcl-eval's data in the result files: the 39 answered, the
    other 3,602 inference errors; one failed copy of an answered POST in the log for each."""
    padded = 0
    for subset in V4_COLLECTIONS["single_turn"]:
        answered = {e["id"]: e for e in lines(files, result_file(files, subset))}
        ids = _data_ids(subset)
        missing = {i for i in ids if i not in answered}
        padded += len(missing)
        entries = [answered.get(i) or _inference_error(i) for i in ids]
        rescored(files, subset, entries, failed_ids(files, subset) | missing)
    rederived(files)
    exchanges = lines(files, LOG)
    answered = lines(files, result_file(files, "simple_python"))
    some = next(e for e in answered if "input_token_count" in e)
    failed = copy.deepcopy(exchanges[giving(files, some)])
    busy = {"data": '{"error":"server busy"}', "encoding": "utf-8"}
    failed |= {"status": 500, "chunks": [], "response_body": busy}
    at = giving(files, some) + 1
    copies = [copy.deepcopy(failed) for _ in range(padded)]
    log_written(files, exchanges[:at] + copies + exchanges[at:])


def test_a_draw_padded_with_inference_errors_is_not_the_shipped_gate(
    drawn: Recorded, tmp_path: Path
) -> None:
    """HOLE 1: the ADR's attack (the 39-entry draw named for the shipped pin set) with the
    3,602 entries it did not run written as inference errors, the request bound met by copies
    of one failed request. No exchange asked any of them: the gate is not the pinned one."""
    shipped = load_builtin(CURRENT)
    manifest, original = drawn
    files = dict(original)
    _padded_to_every_entry(files)
    target = tmp_path / "b"
    resealed_as_replayed(
        target, manifest, files, shipped,
        {"pin_set": {"id": shipped.id, "digest": shipped.digest}},
    )  # fmt: skip
    verdict = verify_bundle(target, pins=shipped).verdict
    transport = next(g for g in verdict.gates if g.id == "transport_evidence")
    assert transport.status == "pass"  # the forgery's precondition: the log reads as complete
    only_on_the_gate(verdict)
    assert gate_findings(verdict), "3,602 entries no exchange asked passed as the pinned gate"
    assert verdict.integrity.status == "failed"


def _one_entry_never_asked(files: Files) -> None:
    """The first simple_python entry's exchange gone from the log, the entry an inference
    error (the score file failing it, as bfcl-eval would)."""
    name = result_file(files, "simple_python")
    entries = lines(files, name)
    exchanges = lines(files, LOG)
    del exchanges[giving(files, entries[0])]
    log_written(files, exchanges)
    sample = entries[0]["id"]
    entries[0] = _inference_error(sample)
    rescored(files, "simple_python", entries, failed_ids(files, "simple_python") | {sample})
    rederived(files)


def test_a_drawn_entry_never_asked_is_a_finding(
    drawn: Recorded, pins: PinSetSource, tmp_path: Path
) -> None:
    """HOLE 2: under the draw's own pin set, a drawn entry the model was never asked (no
    exchange in the log asks its question) passes as an inference error."""
    verdict = forged_verdict(drawn, pins, tmp_path / "b", _one_entry_never_asked)
    transport = next(g for g in verdict.gates if g.id == "transport_evidence")
    assert transport.status == "pass"
    only_on_the_gate(verdict)
    assert gate_findings(verdict), "an entry no exchange asked passed as answered"


# --- the honest side -----------------------------------------------------------------------------


def _every(subset: str) -> tuple[BfclResults, _Data]:
    ids = _data_ids(subset)
    results = BfclResults([], [], {subset: {i: f"r.json:{n}" for n, i in enumerate(ids, 1)}})
    return results, _Data({subset: frozenset(ids)}, {})


def test_format_sensitivity_asks_nothing_of_a_function_calling_model() -> None:
    """FALSE FINDING 3: bfcl-eval 2026.3.23's ``collect_test_cases`` drops every
    format-sensitivity entry for a model registered ``is_fc_model`` (the pinned handler's), so
    the honest run of this command answers simple_python and no format_sensitivity entry."""
    command = ["generate", "--test-category", "simple_python,format_sensitivity"]
    results, data = _every("simple_python")
    asks = _pinned_entries(command, {})
    assert not isinstance(asks, str)
    assert _bfcl_asked(asks, results, data, WHERE) == []


def test_a_drawn_category_the_data_holds_none_of_asks_nothing() -> None:
    """FALSE FINDING 4: bfcl-eval answers the draw's ids its data holds; a category whose drawn
    ids it holds none of gets no result file, and is no entry the command asks."""
    command = ["simple_python=simple_python_1", "irrelevance=irrelevance_9999", "generate",
               "--run-ids", "--then", "evaluate", "--test-category", "single_turn"]  # fmt: skip
    draw = {"simple_python": ["simple_python_1"], "irrelevance": ["irrelevance_9999"]}
    files = {BFCL_DRAW: json.dumps(draw).encode()}
    data = _Data({s: frozenset(_data_ids(s)) for s in ("simple_python", "irrelevance")}, {})
    results = BfclResults([], [], {"simple_python": {"simple_python_1": "r.json:1"}})
    asks = _pinned_entries(command, files)
    assert not isinstance(asks, str)
    assert _bfcl_asked(asks, results, data, WHERE) == []


def test_generate_s_categories_are_what_it_answers() -> None:
    """FALSE FINDING 5: the pinned program runs ``bfcl generate`` with the arguments before
    ``--then`` and ``bfcl evaluate`` with those after; evaluate scores the result files there
    are, so generate's ``--test-category`` alone is what bfcl-eval answers."""
    command = ["generate", "--test-category", "simple_python",
               "--then", "evaluate", "--test-category", "single_turn"]  # fmt: skip
    asks = _pinned_entries(command, {})
    assert not isinstance(asks, str)
    assert set(asks.subsets) == {"simple_python"}
