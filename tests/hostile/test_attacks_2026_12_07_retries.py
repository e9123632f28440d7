"""Hostile tests of 2026-12-07: a benchlocal-cli run shown as passed at its first attempt on the
reply of a later one.

benchlocal-cli grades a scenario by its first attempt; a failed one is tried again (up to three
attempts in the recorded runs) and only ``pass_at_k`` and the label credit a later pass. The
score counts the first attempt. A publisher holding a run that failed first and passed later
could give the run the later reply and mark it passed: each reply is still an answer of the
transport log to the scenario's question, and the grader, replayed, passes it. The run's own
first reply is then left out (its retries dropped) or listed as a retry.

The check (``verify/_consistency/benchlocal.py``, ``_first_answers``): the runs of a question
are walked as benchlocal-cli runs them, each attempt taking its answer's next place among the
answers to that question; a passed run whose reply passes over an earlier answer no attempt
took is a finding. An attempt with no reply (a time-out) may leave one answer behind. Under
``--retry-on-timeout`` (a request sent again within one attempt) the request that timed out is
a failed request of the attempt: the observer records the answer that came after its client
went with an error (until later on 2026-12-07 the check was not made for such a run, which a
publisher could say of any run).

The recorded runs never pass on a retry (SmolLM2-135M fails all three attempts where it fails
the first), so the end-to-end forgeries below also fail the replayed grader; the walk itself is
tested on its own beside them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import (
    BENCHLOCAL_JSON,
    _benchlocal_edit,
    _findings,
    _verdict,
)
from verify._consistency._common import Pool
from verify._consistency.benchlocal import (
    Pinned,
    _Answered,
    _first_answers,
    _options,
)
from verify.harness_outputs import BenchlocalRun, BenchlocalRuns

SAID = "to its question that no attempt lists"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _retried(pack: dict[str, Any]) -> dict[str, Any] | None:
    """toolcall-15's first run retried whose last retry's reply is not its first reply."""
    if pack["pack_id"] != "toolcall-15":
        return None
    for run in pack["scenarios"]:
        retries = run.get("retry_attempts") or []
        if retries and retries[-1]["raw_response"] != run["raw_response"]:
            return run
    raise AssertionError("no run retried with another reply")


def _passed(pack: dict[str, Any], run: dict[str, Any]) -> None:
    run.update(passed=True, label="pass@1", failure_mode="passed", pass_at_k=True)
    run["result"].update(passed=True, failure_mode="passed")
    pack["passed"] = sum(s["passed"] for s in pack["scenarios"])
    pack["score"] = pack["passed"] / pack["total"]


def _last_reply_promoted(pack: dict[str, Any]) -> None:
    """The run given its last retry's reply, its retries dropped, marked passed at once."""
    if (run := _retried(pack)) is not None:
        run["raw_response"] = run["retry_attempts"][-1]["raw_response"]
        run.update(retry_attempts=[], attempt_count=1)
        _passed(pack, run)


def _first_reply_listed_as_retry(pack: dict[str, Any]) -> None:
    """The run's reply and its last retry's swapped, the run marked passed: every attempt is
    still listed."""
    if (run := _retried(pack)) is not None:
        last = run["retry_attempts"][-1]
        run["raw_response"], last["raw_response"] = last["raw_response"], run["raw_response"]
        _passed(pack, run)


@pytest.mark.parametrize("forge", [_last_reply_promoted, _first_reply_listed_as_retry])
def test_a_run_marked_passed_on_a_later_attempts_reply_is_found(
    recorded: Recorded, tmp_path: Path, forge: Any
) -> None:
    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(forge))
    found = [f for f in _findings(verdict) if SAID in f]
    assert len(found) == 1, _findings(verdict)
    assert found[0].startswith(
        f"record_disagrees {BENCHLOCAL_JSON}: evidence {BENCHLOCAL_JSON!r}: benchlocal.json: "
        "$.packs[0].scenarios[0]: scenario 'TC-01' of pack 'toolcall-15' is marked passed on a "
        "reply that came after "
    ), found


def test_retries_dropped_from_a_failed_run_are_no_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """A failed run's retries left out (its grade unchanged): the score does not move, and the
    walk holds only what a passed run was graded on."""

    def dropped(pack: dict[str, Any]) -> None:
        if (run := _retried(pack)) is not None:
            run.update(retry_attempts=[], attempt_count=1)

    verdict = _verdict(recorded, tmp_path / "forged", _benchlocal_edit(dropped))
    assert not [f for f in _findings(verdict) if SAID in f], _findings(verdict)


# --- the walk on its own --------------------------------------------------------------------------

Q = b"question"


def _run(repeat: int, passed: bool, answer: bytes | None, *retries: bytes | None) -> BenchlocalRun:
    where = f"benchlocal.json: $.packs[0].scenarios[{repeat - 1}]"
    return BenchlocalRun(where, "toolcall-15", "TC-01", repeat, passed, answer, None, retries)


def _walked(
    places: dict[bytes, list[int]], *runs: BenchlocalRun, command: Any = (), failed: Any = ()
) -> list[str]:
    """The walk's findings over a log of the question's answers at ``places`` and of failed
    requests (status by place) at ``failed``."""
    size = 1 + max([p for ps in places.values() for p in ps] + [p for p, _ in failed])
    kinds = ["answer"] * size
    for at, status in failed:
        kinds[at] = "transient" if status == 429 or status >= 500 else "failed"
    answered = _Answered(Pool(), {Q: places}, {Q: kinds})
    questions = {"toolcall-15": {"TC-01": Pinned(Q, "tool_call", {})}}
    options = _options(list(command), {}, None)
    found = _first_answers(answered, "raw", BenchlocalRuns(len(runs), {"toolcall-15": list(runs)}),
                           questions, options)  # fmt: skip
    return [f.message for f in found]


def test_a_pass_at_the_first_answer_holds() -> None:
    assert _walked({b"A": [0]}, _run(1, True, b"A")) == []


def test_a_pass_on_the_second_answer_is_found() -> None:
    (said,) = _walked({b"A": [0], b"B": [1]}, _run(1, True, b"B"))
    assert "came after 1 earlier answer(s)" in said


def test_answers_of_attempts_in_order_hold_across_repeats() -> None:
    """Repeat 1 failed three times (A, A again, C: equal answers take their places in turn);
    repeat 2 passed on its first attempt (D)."""
    places = {b"A": [0, 1], b"C": [2], b"D": [3]}
    assert _walked(places, _run(1, False, b"A", b"A", b"C"), _run(2, True, b"D")) == []
    # listed out of the order benchlocal-cli ran them: the same
    assert _walked(places, _run(2, True, b"D"), _run(1, False, b"A", b"A", b"C")) == []


def test_an_attempt_that_timed_out_may_leave_an_answer_behind() -> None:
    """Repeat 1's last attempt timed out (no reply) though its request was answered (place 1);
    repeat 2's pass at place 2 passes over that answer, which the time-out accounts for."""
    places = {b"A": [0], b"late": [1], b"B": [2]}
    assert _walked(places, _run(1, False, b"A", None), _run(2, True, b"B")) == []
    # one time-out accounts for one answer, not two
    places = {b"A": [0], b"late": [1], b"later": [2], b"B": [3]}
    (said,) = _walked(places, _run(1, False, b"A", None), _run(2, True, b"B"))
    assert "came after 2 earlier answer(s)" in said


def test_held_where_a_request_may_be_sent_again_within_an_attempt() -> None:
    """Under ``--retry-on-timeout`` the request that timed out is one of the attempt's failed
    requests (an error in the log: 503 here stands for it), not an answer it may pass over."""
    command = ["benchlocal-cli", "--retry-on-timeout"]
    assert _walked({b"B": [1]}, _run(1, True, b"B"), command=command, failed=[(0, 503)]) == []
    (said,) = _walked({b"A": [0], b"B": [1]}, _run(1, True, b"B"), command=command)
    assert "came after 1 earlier answer(s)" in said


def test_a_first_attempt_may_follow_its_own_transient_failures_only() -> None:
    """Two 503s the attempt sent again (``_post_chat``: up to three) before its answer hold;
    four, or a 400 (which no attempt sends again), were an earlier attempt that failed."""
    assert _walked({b"B": [2]}, _run(1, True, b"B"), failed=[(0, 503), (1, 503)]) == []
    spent = [(0, 503), (1, 503), (2, 503), (3, 503)]
    (said,) = _walked({b"B": [4]}, _run(1, True, b"B"), failed=spent)
    assert "came after 0 earlier answer(s) and 4 failed request(s)" in said
    (said,) = _walked({b"B": [1]}, _run(1, True, b"B"), failed=[(0, 400)])
    assert "1 failed request(s)" in said
    # with --max-transient-retries 4, the four were the attempt's own
    command = ["benchlocal-cli", "--max-transient-retries", "4"]
    assert _walked({b"B": [4]}, _run(1, True, b"B"), failed=spent, command=command) == []
    # an attempt with no reply (its requests all failed) accounts for its own failures
    assert _walked({b"B": [1]}, _run(1, False, None), _run(2, True, b"B"), failed=[(0, 400)]) == []
