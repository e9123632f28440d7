"""Hostile review of 2026-12-07 (f677ee4, 567c9ec): the benchlocal-cli first-attempt walk with
its own kind for a request whose harness went before the answer (``_WENT``), its options taken
from the pin set alone (``_options``), the retry count read as ``int()`` reads it (``_count``)
and the pinned command read as benchlocal-cli 0.9.9's argparse reads it (``_given``,
``_option_name``, ``RUN_OPTIONS``). Attacked both ways, against benchlocal-cli's own ``run``
parser: ``cli._parser`` of the recorded checkout's ``cli.py`` (blob e84c7e6, the 47d1d66 of the
pin set), built here under this interpreter's argparse (Python 3.11).

Found (each closed the same day; the tests below pass):

1. Hole, ``verify/_consistency/benchlocal.py`` ``_first_answers``: an attempt is placed by its
   answer key (content or tool calls, with token counts), never by the exchange whose reply it
   copies. Two replies with one key are one to the walk, though benchlocal-cli's graders read
   more: with an empty ``content`` they grade ``reasoning_content`` (``common.content_with_
   source``; an answer that ran out of tokens while thinking: ``finish_reason`` ``length``, the
   same token counts each time). A first attempt that failed on such a reply and a retry that
   passed on another (``--retry-runaways``) are shown as a pass at the first attempt, given the
   retry's reply whole: the walk takes it at the first reply's place, ``_replies`` binds the
   retry's exchange, the replayed grader passes it. No finding, and no byte of the log edited.
   (Older than these commits: the walk has placed by answer key since it was made.)
2. Hole, ``_SELECTION_UNKNOWN`` (``_pinned_selection``, ``_repeats``): ``--previous-result``
   is read as taking the runs from a saved result, but benchlocal-cli 0.9.9 reads it only for
   the delta column (and as the source of ``--retry-failed``'s selection, which alone changes
   what runs and sets ``repeat``). Under a pinned ``--previous-result`` without
   ``--retry-failed`` (a baseline kept in a pinned data directory) a failed scenario left out
   of its pack, and a retry listed as a repeat the command never ran, are no finding.
3. Hole, ``_given`` (contrived pin): ``--resume=--`` (likewise ``--previous-result=--``,
   ``--scenarios-file=--``) is, to Python 3.11's argparse, the value ``[]`` (``_get_values``
   takes the ``--`` out of an explicit argument): no resume, a whole run. ``_given`` reads a
   resume, and the repeat is not held.
4. False finding in the hint, ``_options``/``_first_answers``: a variable of the harness's
   environment record that differs from the pin set's is named in any walk finding ("sets ...,
   which the pin set does not: not taken"), though ADR 0048 and ``_Options.unpinned`` name only
   one that would allow more, in a finding it would have excused: ``BENCHLOCAL_RETRY_ON_
   TIMEOUT=0`` (which allows nothing), or any variable beside a finding over an earlier answer
   (which no option excuses).

Closed: the walk places a first attempt at the exchange whose reply its copy is, whole
(``_Answered.wholes``), by its answer key only where no reply is its copy; ``--previous-result``
no longer counts as a saved selection (``--retry-failed`` does); ``--opt=--`` is no option
given, as argparse reads it; the hint names a variable only where it allows more than the pin
set and the record's options would have excused the finding; and a pinned ``--repeat`` is read
with ``int()`` (``+2``, `` 7``, ``1_0``), as argparse's ``type=int`` reads it.

Held (plain tests): the command as argparse reads it, wherever argparse takes it (a
differential over generated commands and variables: abbreviations, ``--opt=value``, repeated
options, ``--`` anywhere, options before ``run``, values starting with ``-``, words with
spaces, both mutually exclusive groups; ``--retry-on-timeout``, ``--max-transient-retries``,
``--repeat``, ``--scenario`` and the selection options); ``_count`` and ``_env_bool`` as
``cli._env_int``/argparse's ``type=int`` and ``cli._env_bool``; benchlocal-cli's own retry
sequences (``_post_chat`` under every combination of the options, inline retries, repeats:
time-outs with late answers, 429/5xx spent or not, 4xx, text that is no JSON) walk with no
finding, and each of their passes at a retry shown at the first attempt is found; the
environment record never loosens the walk, whatever its spelling, and leaving the variable out
of it takes the hint away and nothing else; a went-before mark forged on a failed first answer
without a pinned ``--retry-on-timeout`` is found; a publisher's model id (``{model}``) cannot
give the harness an option.

Not tested, noted: the count's cap of 1,000 is below what benchlocal-cli takes (no cap), but
over ~12 retries its backoff (``2 ** (attempt - 1)`` s, a 429's ``Retry-After`` aside) passes
the pinned wall; ``_repeats`` leaves a pinned ``--repeat`` that ``int()`` takes but that is not
ASCII digits (``+2``, `` 7``, ``1_0``) unheld, where argparse runs that many; a pinned command
that sets a variable itself (``env BENCHLOCAL_RETRY_ON_TIMEOUT=1 {python} ...``, or ``env -u``)
is read without it. A forged 5xx, or a forged went-before mark under a pinned
``--retry-on-timeout``, on a failed first answer still excuses it (ADR 0048 says so): that is
an edit of the transport log, which also could simply replace the reply.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import hashlib
import io
import json
import os
import random
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER, Body, TransportExchange
from pins import Harness
from tests.gate_kit import tar_evidence
from tests.hostile.test_attacks_2026_12_07_retries import _run as _walk_run
from tests.hostile.test_attacks_2026_12_07_retries import _walked
from tests.hostile.test_attacks_2026_12_07_review import (
    COMP,
    ERROR,
    PACK,
    PINNED,
    UP,
    _found,
    _reply,
    _run,
    _saved,
)
from tests.verify.test_benchlocal_grades_differential import RECORDED, _checkout
from verify._consistency.benchlocal import (
    RUN_OPTIONS,
    _option_values,
    _options,
    _pinned_selection,
    benchlocal_packs,
)
from verify._consistency.benchlocal_grades import grade_failure
from verify._consistency.checkouts import _Checkout
from verify.replies import answer_key, copy_digest, kept_digest

SAID = "to its question that no attempt lists"
ROT, TRANSIENT = "BENCHLOCAL_RETRY_ON_TIMEOUT", "BENCHLOCAL_MAX_TRANSIENT_RETRIES"


# --- benchlocal-cli's own run parser ----------------------------------------------------------

_FUNCTIONS = {"_parser", "_env_int", "_env_float", "_env_optional_float", "_env_bool",
              "_parse_reasoning_effort"}  # fmt: skip


@functools.cache
def _benchlocal() -> Callable[[], argparse.ArgumentParser]:
    """``cli._parser`` of the recorded checkout's ``benchlocal_cli/cli.py`` (the pinned
    47d1d66) and the helpers it calls, under this interpreter's argparse; the ``inspect``,
    ``history`` and ``rescore`` subcommands (imported from modules of their own) stubbed by a
    bare subparser of their name."""
    listing, read = _checkout(tar_evidence(RECORDED[0]))
    assert listing["benchlocal_cli/cli.py"] == "e84c7e6c9298f7c4194d2243b87390c24e52921a"
    tree = ast.parse(read("benchlocal_cli/cli.py").decode())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in _FUNCTIONS]
    for function in functions:
        function.body = [s for s in function.body if not isinstance(s, ast.ImportFrom)]
    space: dict[str, Any] = {"argparse": argparse, "os": os, "__name__": "benchlocal_cli.cli"}
    for name in ("inspect", "history", "rescore"):
        space[f"add_{name}_subparser"] = lambda sub, name=name: sub.add_parser(name)
    exec(compile(ast.Module(body=functions, type_ignores=[]), "cli.py", "exec"), space)  # noqa: S102
    return space["_parser"]  # type: ignore[no-any-return]


class _Refused(Exception):
    pass


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    with mock.patch.dict(os.environ, clear=False) as environ:
        for name in (ROT, TRANSIENT):
            environ.pop(name, None)
        environ.update(env)
        yield


def _parsed(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    """benchlocal-cli's reading of ``argv`` under ``env``, or :class:`_Refused` where it never
    runs (argparse exits, or a variable ``_env_int`` refuses)."""
    try:
        with _environ(env), contextlib.redirect_stderr(io.StringIO()), \
                contextlib.redirect_stdout(io.StringIO()):  # fmt: skip
            return _benchlocal()().parse_args(argv)
    except (SystemExit, ValueError) as exc:
        raise _Refused(str(exc)) from None


def test_the_built_parser_is_benchlocal_clis_run_parser() -> None:
    run = _benchlocal()()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    long = {s for a in run._actions for s in a.option_strings if s.startswith("--")}
    assert long == set(RUN_OPTIONS)


_FLAGS = ["--retry-on-timeout", "--retry-on", "--retry-o", "--no-retry", "--no-r",
          "--enable-thinking", "--no-thinking", "--retry-failed", "--progress"]  # fmt: skip
"""Options that take no value (``--no-retry`` and ``--enable-thinking`` in a mutually exclusive
group with ``--retry-failures`` and ``--no-thinking``; ``--retry-failed`` takes a value if
one follows)."""
_COUNTS = ["--max-transient-retries", "--max-trans", "--max-transient", "--repeat",
           "--retry-failures", "--top-k", "--retry-failed"]  # fmt: skip
_COUNT_VALUES = ["5", "0", "2", "-1", "+2", " 7", "1_0", "\u0663", "-0", "x"]
_TEXTS = ["--scenario", "--scenarios-file", "--scenarios", "--resume", "--res",
          "--previous-result", "--prev", "--model", "--negative-control-text",
          "--extra-body"]  # fmt: skip
_TEXT_VALUES = ["toolcall-15/TC-01", "instructfollow-15/IF-01", "x", "a b", "-1", "a=b",
                "--retry-on-timeout x", "--max-trans 5", "--retry-o=1 2"]  # fmt: skip
_STRAY = ["--", "-x", "-.5", "--retry-on-timeout ", "---retry-on-timeout", "run", "7", "-h",
          "--max-trans=", "--retry-on-timeout=1", "--retry", "--max-t", "--repe", "--scen",
          "--quick", "--output=xml"]  # fmt: skip
"""Words argparse refuses where they stand (``--retry``, ``--max-t``, ``--repe`` and ``--scen``
start several options; ``--quick`` beside ``--medium``; ``--opt=--`` is left to
test_an_option_given_dash_dash_is_no_option_to_argparse)."""
_ROT_ENV = ["", " ", "1", " yes ", "ON", "true", "0", "off", "y"]
_TRANSIENT_ENV = ["", "5", "0", "-2", "\u0663", "1_0", "\t3\n", "abc"]


def _given_as(options: list[str], values: list[str]) -> st.SearchStrategy[list[str]]:
    pairs = st.tuples(st.sampled_from(options), st.sampled_from(values))
    return st.one_of(pairs.map(list), pairs.map(lambda pair: ["=".join(pair)]))


_UNITS = st.one_of(
    st.sampled_from(_FLAGS).map(lambda flag: [flag]),
    _given_as(_COUNTS, _COUNT_VALUES),
    _given_as(_TEXTS, _TEXT_VALUES),
    st.sampled_from([*[None] * 9, *_STRAY]).map(lambda word: [word] if word else []),
)
_BEFORE_RUN = st.sampled_from([*[[]] * 12, ["--retry-on-timeout"], ["--max-trans=5"], ["--"]])
_COMMANDS = st.tuples(_BEFORE_RUN, st.lists(_UNITS, max_size=5)).map(
    lambda parts: ["{python}", "-m", "benchlocal_cli.cli", *parts[0], "run", "--medium",
                   *(word for unit in parts[1] for word in unit)]
)  # fmt: skip
_VARIABLES = st.fixed_dictionaries(
    {}, optional={ROT: st.sampled_from(_ROT_ENV), TRANSIENT: st.sampled_from(_TRANSIENT_ENV)}
)


@settings(max_examples=1500, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(_COMMANDS, _VARIABLES)
def test_a_pinned_command_is_read_as_benchlocal_clis_argparse_reads_it(
    command: list[str], env: dict[str, str]
) -> None:
    """Held: wherever benchlocal-cli's parser takes the command (the rest never runs), the walk's
    options, the scenarios selected and the repeat are what it read."""
    try:
        args = _parsed(command[3:], env)
    except _Refused:
        return
    options = _options(command, env, None)
    assert options.retry_on_timeout == args.retry_on_timeout
    assert options.transient_retries == min(1000, max(0, args.max_transient_retries))
    selection: Any = None
    if args.resume or args.scenarios_file or args.retry_failed is not None:
        selection = False  # --previous-result alone sets the delta column only
    elif args.scenario:
        selection = {}
        for value in args.scenario:
            pack, _, key = value.partition("/")
            selection.setdefault(pack, set()).add(key)
    assert _pinned_selection(command) == selection
    repeats = _option_values(command, "--repeat")
    assert (int(repeats[-1]) if repeats else 0) == args.repeat


@pytest.mark.parametrize("option", ["--resume", "--previous-result", "--prev", "--scenarios-file"])
def test_an_option_given_dash_dash_is_no_option_to_argparse(option: str) -> None:
    """The fact behind hole 3: argparse 3.11 takes the ``--`` out of an explicit argument, and
    the option's value is an empty list, which benchlocal-cli reads as not given."""
    args = _parsed(["run", "--medium", f"{option}=--"], {})
    assert [args.resume, args.previous_result, args.scenarios_file].count([]) == 1
    assert not (args.resume or args.previous_result or args.scenarios_file)
    assert _pinned_selection([*PINNED, f"{option}=--"]) is None  # as argparse: none given


def test_a_publishers_model_id_gives_the_harness_no_option() -> None:
    """Held: ``{model}`` is filled with the run's model id, which the publisher picks; as the
    value of ``--model`` no id makes argparse read an option that the pinned command reads
    otherwise (one that looks like an option is refused, or is a value)."""
    for model in ["--retry-on-timeout", "--retry-on-timeout x", "--retry-o=1 2", "--max-t=9",
                  "--", "-1", "--max-transient-retries=9"]:  # fmt: skip
        try:
            args = _parsed(["run", "--medium", "--model", model], {})
        except _Refused:
            continue
        assert (args.model, args.retry_on_timeout, args.max_transient_retries) == (model, False, 3)


# --- the walk under benchlocal-cli's own retry sequences -----------------------------------------

_OUTCOMES = ["timeout", "503", "429", "400", "text", "pass", "fail"]


def _benchlocal_run(
    rng: random.Random, *, on: bool, retries: int, inline: int, runaways: bool, repeat: int
) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]], list[list[Any]]]:
    """A log and RunResult as benchlocal-cli 0.9.9 makes them (``_post_chat``: a time-out ends
    the attempt unless ``on``, a 429/5xx is sent again up to ``retries`` times, the last one
    kept; ``_run_scenario_with_inline_retries`` at repeat 1: up to ``inline`` attempts, a
    time-out's only with ``runaways``), and each run's attempts as (passed, raw) pairs."""
    weights = [rng.random() for _ in _OUTCOMES]
    log: list[tuple[Any, ...]] = []

    def attempt() -> tuple[bool, Any, str]:
        for sent in range(1, retries + 2):
            outcome, n = rng.choices(_OUTCOMES, weights)[0], len(log)
            if outcome == "timeout":  # its late answer, recorded with the went-before mark
                log.append((200, _reply(f"late {n}", n), GONE_BEFORE_THE_ANSWER))
                if sent > retries or not on:
                    return False, None, "timeout"
            elif outcome in ("503", "429"):
                log.append((int(outcome), ERROR))
                if sent > retries:
                    return False, ERROR, "server_error" if outcome == "503" else "http_error"
            elif outcome == "400":
                log.append((400, ERROR))
                return False, ERROR, "http_error"
            elif outcome == "text":
                log.append((200, "upstream says: overloaded"))
                return False, _saved("upstream says: overloaded"), "invalid_json"
            else:
                reply = _reply(f"{outcome} {n}", n)
                log.append((200, reply))
                return outcome == "pass", reply, "passed" if outcome == "pass" else "wrong_answer"
        raise AssertionError("unreachable")

    def limit(mode: str) -> int:  # runner._inline_retry_limit
        if mode in ("wrong_answer", "invalid_json"):
            return max(1, inline)
        if mode in ("http_error", "server_error") or runaways:
            return max(3, inline)
        return 1  # a time-out, without --retry-runaways

    runs, attempts = [], []
    for turn in range(1, repeat + 1):
        passed, raw, mode = attempt()
        made = [(passed, raw)]
        while repeat == 1 and not passed and len(made) < limit(mode):
            passed, raw, mode = attempt()
            made.append((passed, raw))
        runs.append(_run(turn, made[0][0], made[0][1], *(r for _, r in made[1:])))
        attempts.append(made)
    return log, runs, attempts


def test_benchlocal_clis_own_retry_sequences_are_no_finding_and_a_promoted_pass_is() -> None:
    """Held: 1,200 runs made as benchlocal-cli makes them, under every combination of
    ``--retry-on-timeout``, ``--max-transient-retries`` 0 to 4, inline retries and repeats,
    walk with no finding; each pass at a retry shown at the first attempt (its reply first,
    the others after it) is the walk's finding."""
    rng = random.Random(20261207)  # noqa: S311 - a seeded sample of runs
    promoted = own_time_outs = 0
    for _ in range(1200):
        on, retries = rng.random() < 0.5, rng.randrange(5)
        repeat = rng.choice([1, 1, 1, 2, 3])
        log, runs, attempts = _benchlocal_run(
            rng, on=on, retries=retries, inline=rng.choice([1, 2, 3, 4]),
            runaways=rng.random() < 0.5, repeat=repeat,
        )  # fmt: skip
        command = ("--max-transient-retries", str(retries), "--repeat", str(repeat))
        command += ("--retry-on-timeout",) if on else ()
        assert _found(runs, log, repeat=repeat, command=command) == [], (on, retries, log, runs)
        made = attempts[0]
        if made[0][0]:  # a first attempt passed after time-outs it sent again
            at = next(i for i, entry in enumerate(log) if entry[1] is made[0][1])
            own_time_outs += any(len(entry) == 3 for entry in log[:at])
        if repeat == 1 and not made[0][0] and any(passed for passed, _ in made):
            at = next(i for i, (passed, _) in enumerate(made) if passed)
            others = [raw for i, (_, raw) in enumerate(made) if i != at]
            found = _found([_run(1, True, made[at][1], *others)], log, command=command)
            assert any(SAID in f for f in found), (on, retries, log, made)
            promoted += 1
    assert promoted > 100
    assert own_time_outs > 10


# --- the options: the pin set's, read as benchlocal-cli reads them ------------------------------

_LATE = (200, _reply("I cannot check the weather.", 0), GONE_BEFORE_THE_ANSWER)
_RIGHT = _reply("It is 23 C in Berlin.", 9)


@pytest.mark.parametrize(
    ("command", "env", "allowed"),
    [
        ((), {}, 0),
        (("--retry-on-timeout",), {}, 3),
        (("--retry-on-t",), {}, 3),  # the one option it starts
        (("--retry",), {}, 0),  # starts several: argparse refuses it
        (("--retry-on-timeout", "--max-trans", "1"), {}, 1),
        (("--retry-on-timeout", "--max-transient-retries=5", "--max-trans", "2"), {}, 2),
        (("--", "--retry-on-timeout"), {}, 0),  # an argument (argparse refuses the command)
        ((), {ROT: " On "}, 3),
        ((), {ROT: "0"}, 0),
        ((), {ROT: "yes", TRANSIENT: "\u0663"}, 3),  # an Arabic-Indic three
        ((), {ROT: "1", TRANSIENT: " +2 "}, 2),
        ((), {ROT: "1", TRANSIENT: "-4"}, 0),
        ((), {ROT: "1", TRANSIENT: "abc"}, 0),  # benchlocal-cli refuses it: none are its own
        (("--max-transient-retries", "1"), {ROT: "true", TRANSIENT: "4"}, 1),  # the option wins
    ],
)
def test_the_time_outs_a_first_attempt_may_follow_are_the_pin_sets(
    command: tuple[str, ...], env: dict[str, str], allowed: int
) -> None:
    """Held: a first attempt passed after as many time-outs (each logged with its late answer)
    as the pinned options send again is no finding; one more is."""
    for went in (allowed, allowed + 1):
        log = [_LATE] * went + [(200, _RIGHT)]
        found = _found([_run(1, True, _RIGHT)], log, command=command, pinned_env=env)
        assert (found == []) == (went == allowed), (went, found)


_SPENT = [(503, ERROR)] * 4


@pytest.mark.parametrize(
    ("record", "log"),
    [
        ({ROT: "1"}, [_LATE]),
        ({ROT: " YES "}, [_LATE]),
        ({TRANSIENT: "1000"}, _SPENT),
        ({TRANSIENT: " +9"}, _SPENT),
        ({ROT: "on", TRANSIENT: "9"}, [_LATE, *_SPENT]),
    ],
    ids=["on", "yes", "1000", "+9", "both"],
)
def test_the_environment_record_never_loosens_the_walk(
    record: dict[str, str], log: list[tuple[Any, ...]]
) -> None:
    """Held: a variable only the harness's environment record sets (the publisher writes it),
    which would excuse the failed requests before a first-attempt pass, is not taken and is
    named; a record without it gives the same finding without the name (hiding it from the
    hint takes away the explanation, nothing else)."""
    log = [*log, (200, _RIGHT)]
    assert _found([_run(1, True, _RIGHT)], log, pinned_env=record) == []  # the pin set's: taken
    (named,) = _found([_run(1, True, _RIGHT)], log, given_env=record)
    (plain,) = _found([_run(1, True, _RIGHT)], log)
    names = " and ".join(name for name in (ROT, TRANSIENT) if name in record)
    hint = (
        f" (the harness's environment record sets {names}, which the pin set does not: not taken)"
    )
    assert named == plain + hint


def test_a_went_before_mark_forged_on_a_failed_first_answer_is_found() -> None:
    """Held: without a pinned ``--retry-on-timeout`` a time-out ends its attempt, so a first
    attempt that passed after one passes over a failure; whatever the record says."""
    wrong = _reply("I cannot check the weather.", 0)
    log = [(200, wrong, GONE_BEFORE_THE_ANSWER), (200, _RIGHT)]
    for given_env in (None, {ROT: "1"}):
        (said,) = _found([_run(1, True, _RIGHT)], log, given_env=given_env)
        assert "1 failed request(s)" in said
    # and an attempt that timed out (no reply) accounts for it
    assert _found([_run(1, False, None, _RIGHT)], log) == []


def test_abbreviated_transient_options_are_the_walks() -> None:
    """Held (``_walked``): four 503s are a first attempt's own under ``--max-trans 4`` and
    ``--max-transient-retries=4``, not under ``--max-t 4`` (three options start so)."""
    spent = [(0, 503), (1, 503), (2, 503), (3, 503)]
    for command in (["run", "--max-trans", "4"], ["run", "--max-transient-retries=4"]):
        assert _walked({b"B": [4]}, _walk_run(1, True, b"B"), command=command, failed=spent) == []
    (said,) = _walked({b"B": [4]}, _walk_run(1, True, b"B"), command=["run", "--max-t", "4"],
                      failed=spent)  # fmt: skip
    assert "4 failed request(s)" in said


# --- hole 1: one answer key, two replies ------------------------------------------------------


def _thought(reasoning: str, n: int) -> dict[str, Any]:
    """A reply that ran out of tokens while thinking: no content, its reasoning only."""
    reply = _reply("", n)
    reply["choices"][0]["finish_reason"] = "length"
    reply["choices"][0]["message"]["reasoning_content"] = reasoning
    reply["usage"] = {"prompt_tokens": 12, "completion_tokens": 512, "total_tokens": 524}
    return reply


_WRONG_THOUGHT = _thought("The user asks about the weather. I cannot tell.", 0)
_RIGHT_THOUGHT = _thought("The user asks about the weather. It is 23 C in Berlin.", 1)
_BERLIN = {"verifier": {"asserts": [{"kind": "required_phrase", "value": "Berlin"}]}}


def test_two_replies_with_one_answer_key_grade_apart() -> None:
    """The fact behind hole 1: one answer key (content and token counts), two replies whole,
    and benchlocal-cli's grader (replayed) reads the reasoning where the content is empty."""
    assert answer_key(_WRONG_THOUGHT) == answer_key(_RIGHT_THOUGHT)
    assert kept_digest(_WRONG_THOUGHT) != kept_digest(_RIGHT_THOUGHT)
    assert copy_digest(_saved(json.dumps(_RIGHT_THOUGHT))) == kept_digest(_RIGHT_THOUGHT)
    assert grade_failure("instruct_follow", _BERLIN, _WRONG_THOUGHT) == "missing phrase 'Berlin'"
    assert grade_failure("instruct_follow", _BERLIN, _RIGHT_THOUGHT) is None
    # honest: failed on the first, passed on the retry (pass@2), no finding
    log = [(200, _WRONG_THOUGHT), (200, _RIGHT_THOUGHT)]
    assert _found([_run(1, False, _WRONG_THOUGHT, _RIGHT_THOUGHT)], log) == []


@pytest.mark.parametrize("listed", ["retry dropped", "first reply listed as the retry"])
def test_a_pass_on_the_retrys_reply_with_the_first_replys_answer_key_is_found(
    listed: str,
) -> None:
    log = [(200, _WRONG_THOUGHT), (200, _RIGHT_THOUGHT)]
    retries = [_WRONG_THOUGHT] if listed != "retry dropped" else []
    found = _found([_run(1, True, _RIGHT_THOUGHT, *retries)], log, command=("--retry-runaways",))
    assert any(SAID in f for f in found), found


# --- holes 2 and 3: a selection the command does not make --------------------------------------

_QUESTIONS = {"S1": "What is the weather in Berlin?", "S2": "What is the weather in Paris?"}
_TWO = "\n".join(json.dumps(line) for line in [
    {"__meta__": True, "verifier_module": "tool_call"},
    *({"id": key, "messages": [{"role": "user", "content": q}]} for key, q in _QUESTIONS.items()),
]).encode()  # fmt: skip
_TWO_BLOB = hashlib.sha1(b"blob %d\0" % len(_TWO) + _TWO, usedforsecurity=False).hexdigest()


def _two(
    runs: list[dict[str, Any]], log: list[tuple[str, Any]], command: tuple[str, ...]
) -> list[str]:
    """benchlocal_packs' findings for a pack of two pinned scenarios, S1 and S2 (the world of
    ``_found`` with a second question)."""
    report = json.dumps({"repeat": 1, "packs": [{"pack_id": PACK, "scenarios": runs}]})
    files = {
        f"components/{COMP}/raw/benchlocal.json": report.encode(),
        f"upstreams/{UP}/files/{_TWO_BLOB}": _TWO,
    }
    harness = Harness(command=PINNED + command, parser="benchlocal-cli", inactivity_s=900,
                      wall_s=7200)  # fmt: skip
    pinned = SimpleNamespace(component_upstreams={COMP: UP}, harnesses={UP: harness})
    checkouts = {UP: _Checkout(UP, [], {f"benchlocal_cli/packs/{PACK}.jsonl": _TWO_BLOB})}
    asked = [json.dumps({"model": "m", "messages": [{"role": "user", "content": _QUESTIONS[key]}]})
             for key, _ in log]  # fmt: skip
    evidence = SimpleNamespace(transport=[
        TransportExchange(
            schema_version=1, id=n, component=COMP, started=float(n), ended=n + 0.5,
            method="POST", path="/v1/chat/completions", status=200,
            request_body=Body(encoding="utf-8", data=asked[n]),
            response_body=Body(encoding="utf-8", data=json.dumps(reply)),
        )
        for n, (_, reply) in enumerate(log)
    ])  # fmt: skip
    found = benchlocal_packs(evidence, SimpleNamespace(pins=pinned), checkouts, files.get)  # type: ignore[arg-type]
    return [f.message for f in found]


_PREVIOUS = [("--previous-result", "/baseline/benchlocal.json"), ("--prev=/baseline/b.json",)]


@pytest.mark.parametrize("previous", _PREVIOUS, ids=" ".join)
def test_without_previous_result_the_forgeries_of_hole_2_are_found(previous: tuple[str]) -> None:
    """Held, and the baseline of hole 2: a failed scenario left out of its pack, and a retry
    listed as a repeat, are found under the pinned command as recorded."""
    s1 = {**_run(1, True, _RIGHT), "id": "S1"}
    paris = _reply("I cannot check the weather.", 1)
    found = _two([s1], [("S1", _RIGHT), ("S2", paris)], ())
    assert any("missing: 'S2'" in f for f in found), found
    first, second = _reply("I cannot check the weather.", 0), _reply("It is 23 C in Berlin.", 1)
    runs = [_run(1, False, first), _run(2, True, second)]
    assert any("repeat" in f for f in _found(runs, [(200, first), (200, second)], repeat=2))
    # under --retry-failed (which needs --previous-result) the runs are a saved result's
    assert _pinned_selection([*PINNED, *previous, "--retry-failed"]) is False


@pytest.mark.parametrize("previous", _PREVIOUS, ids=" ".join)
def test_previous_result_alone_leaves_a_dropped_scenario_found(previous: tuple[str]) -> None:
    s1 = {**_run(1, True, _RIGHT), "id": "S1"}
    paris = _reply("I cannot check the weather.", 1)
    found = _two([s1], [("S1", _RIGHT), ("S2", paris)], previous)
    assert any("missing: 'S2'" in f for f in found), found


@pytest.mark.parametrize(
    "command", [*_PREVIOUS, ("--resume=--",), ("--scenarios-file=--",)], ids=" ".join
)
def test_a_retry_listed_as_a_repeat_the_command_never_ran_is_found(command: tuple[str]) -> None:
    first, second = _reply("I cannot check the weather.", 0), _reply("It is 23 C in Berlin.", 1)
    runs = [_run(1, False, first), _run(2, True, second)]
    found = _found(runs, [(200, first), (200, second)], repeat=2, command=command)
    assert any("repeat" in f for f in found), found


# --- finding 4: the hint -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "log"),
    [
        ("0", [(400, ERROR), (200, _RIGHT)]),
        ("1", [(200, _reply("I cannot check the weather.", 0)), (200, _RIGHT)]),
    ],
    ids=["variable off", "earlier answer"],
)
def test_the_hint_names_only_a_variable_that_would_have_excused_the_finding(
    value: str, log: list[tuple[Any, ...]]
) -> None:
    (said,) = _found([_run(1, True, _RIGHT)], log, given_env={ROT: value})
    assert ROT not in said, said
