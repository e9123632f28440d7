"""Hostile review of 2026-12-07 (020ea96, 00d7d5c, 069a7ab): a benchlocal-cli run marked passed
must have been graded on its first attempt (``_first_answers``), a scored run's copy must be its
logged reply whole (``_replies``), a checkout listing is read as git writes it (``_listing``),
and ``without_think_tags`` is linear. Attacked both ways.

Found (each closed the same day: the tests below pass):

1. False finding, honest run: ``--retry-on-timeout`` is looked for in the pinned command only,
   but benchlocal-cli 0.9.9 also takes it from ``BENCHLOCAL_RETRY_ON_TIMEOUT`` (``cli._env_bool``:
   1/true/yes/on), which a pin set's ``env`` or ``audit run --env`` gives the harness (recorded in
   ``upstreams/<name>/environment.json``). A request that timed out and was sent again within the
   first attempt leaves its late answer first in the log: the pass is a finding.
2. False finding, honest run: ``_replies`` takes the earliest exchange with the run's answer key
   and then asks that exchange's whole reply to be the copy. An earlier exchange with the same
   answer and token counts that benchlocal-cli never received (a timed-out request answered late;
   at temperature 0 the request sent again gets the same answer, another ``id`` and
   ``created``) is taken instead of the run's own: "not that reply as benchlocal-cli keeps it",
   under ``--retry-on-timeout`` (where the walk is off) and under ``--repeat N``.
3. Bypass: the RunResult's ``repeat`` is not held to the pinned command (no ``--repeat``: one).
   A run whose first attempt failed and whose retry passed is listed as two repeats, the retry's
   reply as repeat 2's first attempt: every reply is bound, the walk and the grader hold, the
   pass counts (a pack's score becomes (first passes + retry passes) / 2N, not first passes / N).
4. Bypass: the walk counts answered exchanges only. A first attempt that got nothing but errors
   (four 5xx: its transient retries spent; a 4xx, never sent again) is a failed attempt
   benchlocal-cli retries, yet a retry's reply promoted to the first attempt passes over no
   answer: no finding.

Closed: the variable is read from the pin set's environment and the harness's environment
record (a run it said so of was not walked; later the same day no run is taken out of the walk:
the observer records an answer that came after its harness went with an error, which the walk
reads as a failed request); a copy is found by its
reply whole first, by its answer only to tell an altered copy from none; ``repeat`` is held to
the pinned command and a run under a repeat over one lists no retries; the walk places the
question's failed requests too, a first attempt allowed only the 429/5xx its own transient
retries explain.

Held (kept as guards): transient 429/5xx retried within one attempt; the copy of replies with
think tags at any depth, duplicate keys, a byte-order mark, unicode, lone surrogates and huge or
tiny numbers as benchlocal-cli saves them; a reply that is not JSON; many attempts and replies
nested near the stack's limit; every mode ``git ls-tree -r`` lists; ``without_think_tags`` equal
to benchlocal-cli's two ``re.sub`` on text of case-folding letters (Kelvin sign, dotted and
dotless i, long s) and Unicode spaces.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle_schema.canonical import loads_strict
from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER, Body, TransportExchange
from pins import Harness
from tests.data.hostile.kit import Files
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import (
    BENCHLOCAL_JSON,
    _findings,
    _rederived,
    _verdict,
)
from verify._consistency._common import _listing
from verify._consistency.benchlocal import benchlocal_packs
from verify._consistency.checkouts import _Checkout
from verify.replies import without_think_tags

UP, COMP, PACK = "benchlocal", "tool_instruction", "toolcall-15"
Q = "What is the weather in Berlin?"
PINNED = ("{python}", "-m", "benchlocal_cli.cli", "run", "--medium", "--endpoint", "{endpoint}",
          "--model", "{model}", "--no-thinking", "--output", "json",
          "--save-json", "{out}/benchlocal.json")  # fmt: skip
_PACK = "\n".join(json.dumps(line) for line in [
    {"__meta__": True, "verifier_module": "tool_call"},
    {"id": "S1", "messages": [{"role": "user", "content": Q}]},
]).encode()  # fmt: skip
_BLOB = hashlib.sha1(b"blob %d\0" % len(_PACK) + _PACK, usedforsecurity=False).hexdigest()
ERROR = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


# --- a small world: one pinned scenario, its runs and the transport log ----------------------


def _reply(text: str, n: int) -> dict[str, Any]:
    """A llama.cpp chat completion: ``n`` makes its ``id`` and ``created`` its own."""
    return {"id": f"chatcmpl-{n}", "created": 1796131688 + n, "model": "m",
            "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}  # fmt: skip


def _run(turn: int, passed: bool, raw: Any, *retries: Any) -> dict[str, Any]:
    return {"id": "S1", "repeat_index": turn, "passed": passed, "raw_response": raw,
            "retry_attempts": [{"raw_response": r} for r in retries]}  # fmt: skip


def _exchange(n: int, status: int, body: Any, error: str | None = None) -> TransportExchange:
    asked = json.dumps({"model": "m", "messages": [{"role": "user", "content": Q}]})
    text = body if isinstance(body, str) else json.dumps(body)
    return TransportExchange(
        schema_version=1, id=n, component=COMP, started=float(n), ended=n + 0.5, method="POST",
        path="/v1/chat/completions", status=status, request_body=Body(encoding="utf-8", data=asked),
        response_body=Body(encoding="utf-8", data=text), error=error,
    )  # fmt: skip


def _found(
    runs: list[dict[str, Any]],
    log: list[tuple[Any, ...]],
    *,
    repeat: int = 1,
    command: tuple[str, ...] = (),
    pinned_env: dict[str, str] | None = None,
    given_env: dict[str, str] | None = None,
) -> list[str]:
    """benchlocal_packs' findings for one pinned scenario of toolcall-15 (no grader replayed:
    the checkout holds the pack only)."""
    report = json.dumps({"repeat": repeat, "packs": [{"pack_id": PACK, "scenarios": runs}]})
    variables = {**(given_env or {}), **(pinned_env or {})}
    files = {
        f"components/{COMP}/raw/benchlocal.json": report.encode(),
        f"upstreams/{UP}/files/{_BLOB}": _PACK,
        f"upstreams/{UP}/environment.json": json.dumps(
            {"schema_version": 1, "upstream": UP, "variables": variables}
        ).encode(),
    }
    harness = Harness(command=PINNED + command, parser="benchlocal-cli", inactivity_s=900,
                      wall_s=7200, env=pinned_env or {})  # fmt: skip
    pinned = SimpleNamespace(component_upstreams={COMP: UP}, harnesses={UP: harness})
    checkouts = {UP: _Checkout(UP, [], {f"benchlocal_cli/packs/{PACK}.jsonl": _BLOB})}
    evidence = SimpleNamespace(transport=[_exchange(n, *entry) for n, entry in enumerate(log)])
    found = benchlocal_packs(evidence, SimpleNamespace(pins=pinned), checkouts, files.get)  # type: ignore[arg-type]
    return [f.message for f in found]


# --- A. honest runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["pinned", "given"])
def test_retry_on_timeout_from_the_environment_is_no_finding(where: str) -> None:
    """The first request timed out (its late answer is still logged, first, with the error the
    observer records for an answer that came after its client went), was sent again within the
    first attempt (``_post_chat`` with ``retry_on_timeout``) and passed: pass@1. Later the same
    day the variable is taken from the pin set's environment only: the environment record
    saying so alone is named in the finding."""
    late, right = _reply("I cannot check the weather.", 0), _reply("It is 23 C in Berlin.", 1)
    env = {"BENCHLOCAL_RETRY_ON_TIMEOUT": "1"}
    pinned, given = (env, None) if where == "pinned" else (None, env)
    log = [(200, late, GONE_BEFORE_THE_ANSWER), (200, right)]
    found = _found([_run(1, True, right)], log, pinned_env=pinned, given_env=given)
    if where == "pinned":
        assert found == []
    else:
        (said,) = found
        assert "sets BENCHLOCAL_RETRY_ON_TIMEOUT, which the pin set does not" in said


@pytest.mark.parametrize("where", ["pinned", "given", "command"])
def test_retry_on_timeout_no_longer_takes_a_run_out_of_the_walk(where: str) -> None:
    """Closed later (2026-12-07, ADR 0048): the walk was off for a run said to retry time-outs,
    and a publisher could say so of any run (``audit run --env``). An answer the harness had
    (no error: it came while its client was there) is an earlier answer the pass passes over,
    whatever the run says of time-outs."""
    first, right = _reply("I cannot check the weather.", 0), _reply("It is 23 C in Berlin.", 1)
    env = {"BENCHLOCAL_RETRY_ON_TIMEOUT": "1"}
    pinned, given = {"pinned": (env, None), "given": (None, env)}.get(where, (None, None))
    command = ("--retry-on-timeout",) if where == "command" else ()
    log = [(200, first), (200, right)]
    (said,) = _found(
        [_run(1, True, right)], log, command=command, pinned_env=pinned, given_env=given
    )
    assert "came after 1 earlier answer(s)" in said


@pytest.mark.parametrize("how", ["retry-on-timeout", "repeat"])
def test_a_request_answered_late_with_the_same_answer_is_no_finding(how: str) -> None:
    """Temperature 0: the late answer and the answer benchlocal-cli kept say the same, with the
    same token counts, under their own ``id`` and ``created``."""
    late, kept = _reply("It is 23 C in Berlin.", 0), _reply("It is 23 C in Berlin.", 1)
    log: list[tuple[Any, ...]] = [(200, late), (200, kept)]
    if how == "retry-on-timeout":  # sent again within the first attempt
        log[0] = (200, late, GONE_BEFORE_THE_ANSWER)
        found = _found([_run(1, True, kept)], log, command=("--retry-on-timeout",))
    else:  # repeat 1 timed out (no reply), repeat 2 asked again
        runs = [_run(1, False, None), _run(2, True, kept)]
        found = _found(runs, log, repeat=2, command=("--repeat", "2"))
    assert found == []


def test_transient_errors_within_one_attempt_are_no_finding() -> None:
    """Held: 429 and 5xx sent again within one attempt (``max_transient_retries`` 3), then a
    pass; and a time-out's late answer before a later repeat."""
    right = _reply("It is 23 C in Berlin.", 1)
    log = [(429, ERROR), (503, ERROR), (500, ERROR), (200, right)]
    assert _found([_run(1, True, right)], log) == []
    log = [(200, _reply("late", 0)), (200, right)]
    runs = [_run(1, False, None), _run(2, True, right)]
    assert _found(runs, log, repeat=2, command=("--repeat", "2")) == []


_BLOCK = re.compile(r"<think\b[^>]*>.*?</think\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?think\b[^>]*>", re.IGNORECASE)


def _sanitized(text: str) -> str:  # common.sanitize_reasoning_tags at 47d1d66
    cleaned = _TAG.sub("", _BLOCK.sub("", text))
    return text if cleaned == text else cleaned.strip()


def _kept(value: Any) -> Any:  # common.sanitize_response_text_fields at 47d1d66
    if isinstance(value, dict):
        return {k: _sanitized(v) if k in ("content", "reasoning_content", "reasoning")
                and isinstance(v, str) else _kept(v) for k, v in value.items()}  # fmt: skip
    return [_kept(v) for v in value] if isinstance(value, list) else value


def _saved(body: str) -> Any:
    """The reply as benchlocal-cli saves it: httpx 0.28.1's ``json.loads(content)`` (else
    ``{"text": ...}``), sanitized, ``json.dump(..., indent=2, sort_keys=True)``, read back."""
    try:
        raw = _kept(json.loads(body.encode("utf-8", "surrogatepass")))
    except ValueError:
        raw = {"text": body}
    data = json.dumps({"raw_response": raw}, indent=2, sort_keys=True).encode()
    return loads_strict(data, BENCHLOCAL_JSON)["raw_response"]


def _message(content: str) -> str:
    return '{"role":"assistant","content":"' + content + '","reasoning_content":"<think>r</think>"}'


_DEEP = [{"meta": {"content": "<think>d</think>k"}}]
_CALL = {"name": "get_weather", "arguments": '{"city": "<think>Berlin</think>"}'}
_BODIES = {
    "think tags at any depth": json.dumps({
        **_reply("", 1), "reasoning": " <THINK a=1>x</think > y", "extra": _DEEP,
        "choices": [{"index": 0, "logprobs": {"content": [{"token": "<think>"}]}, "message": {
            "role": "assistant", "content": "<thin\u212a>p</think>23 C",
            "reasoning_content": "<think>r</think>"}}]}),
    "tool call, tags in arguments": json.dumps({**_reply("", 1), "choices": [{"message": {
        "role": "assistant", "content": None, "reasoning_content": "<think>call it</think>",
        "tool_calls": [{"id": "c", "type": "function", "function": _CALL}]}}]}),
    "duplicate keys": '{"id":"x","choices":[{"index":0,"message":' + _message("a") + '}],'
                      '"choices":[{"index":0,"message":' + _message("<think>b</think>b") + '}],'
                      '"usage":{"prompt_tokens":12,"completion_tokens":3},'
                      '"usage":{"prompt_tokens":12,"completion_tokens":4}}',
    "byte-order mark, unicode": "\ufeff" + json.dumps(
        {**_reply("Gr\u00fc\u00dfe \U0001f600 \u2028 \u0130", 1), "note": "N"}, ensure_ascii=False
    ).replace('"N"', '"\\ud800 \\u00e9"'),  # escaped there: a lone surrogate
    "numbers": json.dumps(
        {**_reply("23", 1), "seed": 10**40, "t": [1e308, 5e-324, -0.0, 1.0, 2**53 + 1]}
    ),
}  # fmt: skip


@pytest.mark.parametrize("body", list(_BODIES.values()), ids=list(_BODIES))
def test_a_reply_as_benchlocal_saves_it_is_the_logged_reply(body: str) -> None:
    """Held: the copy benchlocal-cli saves is found and bound, for a pass and for a failure."""
    assert _found([_run(1, True, _saved(body))], [(200, body)]) == []
    assert _found([_run(1, False, _saved(body))], [(200, body)]) == []


def test_a_reply_that_is_not_json_is_no_finding() -> None:
    """Held: benchlocal-cli keeps ``{"text": ...}`` (no answer), fails it and tries again."""
    right = _reply("It is 23 C in Berlin.", 1)
    text = "upstream says: overloaded"
    assert _found([_run(1, False, _saved(text), right)], [(200, text), (200, right)]) == []


# --- B. bypasses ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _split_into_repeats(files: Files) -> None:
    """Each run of the RunResult made two repeats: repeat 1 its first attempt, repeat 2 its
    first retry (a failed run with no reply, a time-out, where it has none)."""
    report = json.loads(files[BENCHLOCAL_JSON][0])
    report["repeat"] = 2
    for pack in report["packs"]:
        if pack.get("skipped"):
            continue
        later = []
        for run in pack["scenarios"]:
            if run.get("retry_attempts"):
                second = copy.deepcopy(run["retry_attempts"][0])
            else:
                second = copy.deepcopy(run)
                second.update(raw_response=None, passed=False, failure_mode="timeout")
                second["result"].update(passed=False, failure_mode="timeout")
            second.update(repeat_index=2, retry_attempts=[], attempt_count=1)
            run.update(retry_attempts=[], attempt_count=1)
            later.append(second)
        pack["scenarios"] += later
        pack["total"] = len(pack["scenarios"])
        pack["passed"] = sum(s["passed"] for s in pack["scenarios"])
        pack["score"] = pack["passed"] / pack["total"]
    data = json.dumps(report).encode()
    files[BENCHLOCAL_JSON] = (data, files[BENCHLOCAL_JSON][1])
    files["logs/benchlocal.stdout.txt"] = (data + b"\n", files["logs/benchlocal.stdout.txt"][1])
    _rederived(files, "benchlocal-cli", ["tool_instruction"])


def test_retries_listed_as_repeats_the_pinned_command_never_ran_are_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The recorded run (pinned: no ``--repeat``, inline retries on) rewritten as ``repeat: 2``,
    its 81 retried runs' second attempts as repeat 2. SmolLM2's retries fail, so the score
    falls here (28.3 -> 14.2); a model whose retries pass more often than its first attempts
    gains: in the small world, a pass at the second attempt (0 of 1) becomes 1 of 2."""
    first, second = _reply("I cannot check the weather.", 0), _reply("It is 23 C in Berlin.", 1)
    runs = [_run(1, False, first), _run(2, True, second)]
    small = _found(runs, [(200, first), (200, second)], repeat=2)
    found = _findings(_verdict(recorded, tmp_path / "forged", _split_into_repeats))
    assert small and any("repeat" in f for f in found), (small, found)


@pytest.mark.parametrize("errors", [[(503, ERROR)] * 4, [(400, ERROR)]], ids=["5xx-spent", "4xx"])
def test_a_retrys_pass_after_a_first_attempt_of_errors_is_found(errors: list[Any]) -> None:
    """Honest: attempt 1 got only errors (``server_error`` / ``http_error``, retried), attempt
    2 passed (``pass@2``, not passed). Forged: attempt 2's reply as the first, marked passed."""
    right = _reply("It is 23 C in Berlin.", 9)
    assert _found([_run(1, True, right)], [*errors, (200, right)]) != []


# --- C. robustness -------------------------------------------------------------------------------


def test_many_attempts_and_deep_replies_neither_raise_nor_hang() -> None:
    """100,000 attempts with no reply and 50,000 with one, over 200 logged answers; then a
    logged reply nested just short of and past where the JSON reader gives up."""
    log = [(200, _reply("It is 23 C in Berlin.", n)) for n in range(200)]
    start = time.monotonic()
    run = _run(1, True, log[0][1], *([None] * 100_000), *([log[1][1]] * 50_000))
    assert _found([run], log) == []
    assert time.monotonic() - start < 20
    for depth in range(400, 1000, 7):
        nested = "[" * depth + "]" * depth
        body = '{"choices":[{"message":{"role":"assistant","content":' + nested + "}}]}"
        assert _found([_run(1, False, None)], [(200, body)]) == []


def test_every_mode_git_ls_tree_lists_is_read() -> None:
    """Held: a regular file, an executable, a symbolic link and a submodule (gitlink)."""
    oid = "0123456789abcdef0123456789abcdef01234567"
    lines = [f"100644 blob {oid}\ta", f"100755 blob {oid}\tb", f"120000 blob {oid}\tc",
             f"160000 commit {oid}\td", f'100644 blob {oid}\t"e\\tf"']  # fmt: skip
    listed = _listing(("\n".join(lines) + "\n").encode())
    assert not isinstance(listed, str), listed
    last = [(e.mode, e.kind, e.path) for e in listed][-2:]
    assert last == [("160000", "commit", "d"), ("100644", "blob", "e\tf")]
    for bad in [f"100644 blob {oid.upper()}\ta", f"040000 tree {oid}\ta",
                f"100644 commit {oid}\ta"]:  # fmt: skip
        assert isinstance(_listing(bad.encode()), str)


# --- D. without_think_tags -----------------------------------------------------------------------

_PIECES = st.sampled_from(
    ["<think", "</think", "<think>", "</think>", "<TH\u0130NK", "</th\u0131nk", "<thin\u212a",
     "</ThInK", "<think/>", ">", " >", "\t>", "<", "/", "</", "t", "k", "K", "\u212a", "\u0130",
     "\u0131", "\u017f", "x",
     "_", "1", "\u0301", "think", " ", "\n", "\xa0", "\x1c", "\x85", "\u2028", "\u3000",
     "\ud800"]
)  # fmt: skip


@settings(max_examples=4000, derandomize=True, deadline=None, database=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_without_think_tags_is_benchlocal_clis_two_substitutions(text: str) -> None:
    assert without_think_tags(text) == _sanitized(text)
