"""benchlocal-cli's packs held to the run: each pack that ran holds the pinned pack's scenarios
(its ``benchlocal_cli/packs/<pack>.jsonl`` in the recorded checkout), each once a repeat, and
each scenario's reply is one the observer saw to that scenario's question.

The pack's counts and score are checked against its listed scenarios by the reader
(:func:`verify.harness_outputs._benchlocal_pack`); without these checks the scenarios a pack
lists, and the reply each was graded on, were the publisher's word: a failed scenario left out
of its pack, or given a reply no exchange holds, raised the score with no finding.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from bundle_schema.models import Finding, Gx10Evidence
from pins import PinSetSource
from verify._consistency._common import Pool, Reader, _disagrees, first_few
from verify._consistency.benchlocal_grades import grade_failure, replayed_modules
from verify._consistency.checkouts import _Checkout, checkout_file
from verify._consistency.env_prefix import under_env
from verify._consistency.options import given_options, option_named
from verify._facts import asked_digests, reply_facts
from verify.harness_outputs import (
    BENCHLOCAL_JSON,
    BENCHLOCAL_TOOL_INSTRUCTION_PACKS,
    BenchlocalRun,
    BenchlocalRuns,
    OutputsUnreadable,
    benchlocal_runs,
    raw_name,
)
from verify.replies import exchange_failed, harness_went, last_user_message, question_digest

PACKS = "benchlocal_cli/packs"
"""Where benchlocal-cli 0.9.9 keeps its packs (``runner.load_pack``): ``<pack>.jsonl``, a
``__meta__`` line first, then one scenario a line."""
MAX_PACK = 16 << 20


def benchlocal_packs(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    foreign: Collection[str] = (),
) -> list[Finding]:
    """The findings of benchlocal-cli's RunResult against the pinned packs and the transport
    log, for each component a benchlocal-cli harness of the pin set serves (a harness the
    bundle holds no checkout of as pinned is ``foreign``: not read). A RunResult whose scenario
    runs do not read (:func:`verify.harness_outputs.benchlocal_runs`) is a finding, whether or
    not the scoring reader reads what is wrong in it."""
    findings: list[Finding] = []
    for component, upstream in sorted(pins.pins.component_upstreams.items()):
        harness = pins.pins.harnesses.get(upstream)
        if harness is None or harness.parser != "benchlocal-cli" or upstream in foreign:
            continue
        place = raw_name(component, BENCHLOCAL_JSON)
        data = read(place)
        if data is None:
            continue
        try:
            runs = benchlocal_runs(data)
        except OutputsUnreadable as exc:  # what the score does not read is held all the same
            findings.append(_disagrees(place, f"its scenario runs cannot be held to the "
                                              f"pinned packs: {exc.message}"))  # fmt: skip
            continue
        questions: dict[str, dict[str, Pinned]] = {}
        selection = _pinned_selection(harness.command)
        for pack in runs.packs:
            pinned = _pinned_pack(checkouts, upstream, pack, read)
            if isinstance(pinned, str):
                findings.append(_disagrees(place, f"pack {pack!r} cannot be held to the "
                                                  f"{upstream} checkout: {pinned}"))  # fmt: skip
                continue
            questions[pack] = pinned
            chosen = selection.get(pack, set()) if isinstance(selection, dict) else selection
            if (problem := _scenarios_problem(runs, pack, pinned, chosen)) is not None:
                findings.append(_disagrees(place, problem))
        answered = _answered(evidence, component)
        log = answered.pool if evidence.transport is not None else None
        found, bound = _replies(component, place, runs, questions, log)
        findings += found
        recorded = read(f"upstreams/{upstream}/environment.json")
        options = _options(harness.command, harness.env, recorded)
        findings += _first_answers(answered, place, runs, questions, options)
        findings += _repeats(place, runs, harness.command)
        checkout = checkouts.get(upstream)
        graded = replayed_modules(checkout.files) if checkout is not None else frozenset()
        findings += _grades(place, runs, questions, graded, bound)
    return findings


def _grades(
    place: str,
    runs: BenchlocalRuns,
    questions: Mapping[str, Mapping[str, Pinned]],
    graded: Collection[str],
    bound: Collection[str],
) -> list[Finding]:
    """Each scenario marked passed is one its pinned grader passes, where this verifier
    replays that grader (``graded``: :func:`verify._consistency.benchlocal_grades.
    replayed_modules` of the checkout): the first that it fails is named, with how many there
    are. Only runs whose copy is the log's reply (``bound``) are graded: another copy is a
    finding already, and its text is the publisher's alone."""
    failed: list[tuple[BenchlocalRun, str]] = []
    for pack, pack_runs in runs.packs.items():
        for run in pack_runs:
            pinned = questions.get(pack, {}).get(run.scenario)
            if not run.passed or run.reply is None or pinned is None or run.where not in bound:
                continue
            if pinned.module is None or pinned.module not in graded:
                continue
            if (why := grade_failure(pinned.module, pinned.scenario, run.reply)) is not None:
                failed.append((run, f"; the pinned pack's {pinned.module} grader fails its "
                                    f"reply: {why}"))  # fmt: skip
    return _passed_but(place, failed)


def _first_of(
    place: str, found: Sequence[BenchlocalRun], of: int, said: Callable[[BenchlocalRun], str]
) -> list[Finding]:
    """One finding: the first run of ``found`` and what is ``said`` of it, and how many of the
    ``of`` scenario runs there are such."""
    if not found:
        return []
    first = found[0]
    more = f" ({len(found)} of {of} scenario runs)" if len(found) > 1 else ""
    return [
        _disagrees(
            place,
            f"{first.where}: scenario {first.scenario!r} of pack {first.pack!r}{said(first)}{more}",
        )
    ]


def _passed_but(place: str, found: Sequence[tuple[BenchlocalRun, str]]) -> list[Finding]:
    """One finding: the first run of ``found`` is marked passed, but (what follows), and how
    many more such runs there are."""
    if not found:
        return []
    (first, but), more = found[0], len(found) - 1
    also = f" ({more} more such scenario runs)" if more else ""
    return [
        _disagrees(
            place,
            f"{first.where}: scenario {first.scenario!r} of pack {first.pack!r} is marked "
            f"passed{but}{also}",
        )
    ]


class Pinned(NamedTuple):
    """A pinned scenario as the checks read it: its question (the digest of its last user
    message's content; None when it has none), the scoring module that grades it (its
    ``verifier.type``, else the pack's ``verifier_module``) and its record in the pack, which
    that module reads."""

    question: bytes | None
    module: str | None
    scenario: dict[str, Any]


def _pinned_pack(
    checkouts: Mapping[str, _Checkout], upstream: str, pack: str, read: Reader
) -> dict[str, Pinned] | str:
    """The pinned pack's scenarios by id (:class:`Pinned`), or why they cannot be read."""
    path = f"{PACKS}/{pack}.jsonl"
    data = checkout_file(checkouts, upstream, path, read)
    if isinstance(data, str):
        return data
    if len(data) > MAX_PACK:
        return f"{path}: over {MAX_PACK} bytes"
    scenarios: dict[str, Pinned] = {}
    module = None
    try:
        lines = data.decode("utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict):
                return f"{path}:{number}: not an object"
            if number == 1 and record.get("__meta__") is True:
                module = record.get("verifier_module")
                continue
            key = record.get("id")
            if not isinstance(key, str) or key in scenarios:
                return f"{path}:{number}: id {str(key)[:60]!r}, not a scenario's id once"
            user = last_user_message(record.get("messages"))
            verifier = record.get("verifier")
            verifier = verifier if isinstance(verifier, dict) else {}
            scenarios[key] = Pinned(
                None if user is None else question_digest(user["content"]),
                str(verifier.get("type") or module or "") or None,
                record,
            )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path}: not JSON Lines: {str(exc)[:200]}"
    return scenarios


_SELECTION_UNKNOWN = ("--scenarios-file", "--resume", "--retry-failed")
"""Options of ``benchlocal-cli run`` whose scenarios this check cannot know from the command
(a file's, or a saved run's: ``--retry-failed`` selects the failed scenarios of the
``--previous-result`` it needs, and repeats them; ``--previous-result`` alone only sets the
report's delta column): then a pack's runs are only held to be its pinned scenarios."""


def _from_saved(command: Sequence[str]) -> bool:
    """Whether the pinned command takes its scenarios from a file or a saved run
    (:data:`_SELECTION_UNKNOWN`)."""
    return any(option in _SELECTION_UNKNOWN for option, _ in _given(command))


def _pinned_selection(command: Sequence[str]) -> dict[str, set[str]] | Literal[False] | None:
    """The scenarios a pinned ``benchlocal-cli run`` selects by pack (``--scenario PACK/ID``,
    repeatable: only those run); None when it selects none (every scenario of each pack);
    False when it selects them otherwise (:data:`_SELECTION_UNKNOWN`)."""
    if _from_saved(command):
        return False
    values = _option_values(command, "--scenario")
    selected: dict[str, set[str]] = {}
    for value in values:
        pack, _, key = value.partition("/")
        selected.setdefault(pack, set()).add(key)
    return selected if values else None


def _repeats(place: str, runs: BenchlocalRuns, command: Sequence[str]) -> list[Finding]:
    """The RunResult's ``repeat`` is the pinned command's (``--repeat N``, the last given; 0 or
    none is 1: ``cli.main``'s ``max(1, args.repeat)``), unless the command takes its runs from
    a saved one (:data:`_SELECTION_UNKNOWN`); and under a repeat over 1 no run lists retries
    (``run_pack`` retries inline only at repeat 1). Else retries could be listed as repeats the
    command never ran, a pass at a retry counted as a repeat's first attempt."""
    if _from_saved(command):
        return []
    pinned: int | None = 1
    if given := _option_values(command, "--repeat"):
        try:  # argparse's type=int: signs, spaces, underscores, any script's digits
            pinned = max(1, int(given[-1]))
        except ValueError:  # argparse refuses it: the harness never ran
            pinned = None
    findings = []
    if pinned is not None and runs.repeat != pinned:
        findings.append(_disagrees(place, f"$.repeat: {runs.repeat}, not the pinned command's "
                                          f"{pinned}"))  # fmt: skip
    if runs.repeat > 1:
        retried = [run for pack in runs.packs.values() for run in pack if run.retries]
        if retried:
            more = f" ({len(retried) - 1} more such runs)" if len(retried) > 1 else ""
            findings.append(_disagrees(
                place,
                f"{retried[0].where}: lists retry attempts under repeat {runs.repeat}, where "
                f"benchlocal-cli retries no run{more}",
            ))  # fmt: skip
    return findings


def _scenarios_problem(
    runs: BenchlocalRuns,
    pack: str,
    pinned: Collection[str],
    chosen: set[str] | Literal[False] | None,
) -> str | None:
    """Why a pack's scenario runs are not the pinned pack's scenarios the pinned command
    selects (``chosen``: see :func:`_pinned_selection`; False: unknown, so only that each run
    is of a pinned scenario), each once a repeat (``runner.run_pack``: every scenario selected
    for each repeat index), or None."""
    keys = [key for key in pinned if not isinstance(chosen, set) or key in chosen]
    expected = Counter((key, turn) for key in keys for turn in range(1, runs.repeat + 1))
    got = Counter((run.scenario, run.repeat) for run in runs.packs[pack])
    missing = [] if chosen is False else sorted(key for key in expected if key not in got)
    said = [
        f"{what}: {_named(found, runs.repeat)}"
        for what, found in (
            ("missing", missing),
            ("not of the pinned scenarios", sorted(key for key in got if key not in expected)),
            ("more than once", sorted(key for key in expected if got[key] > 1)),
        )
        if found
    ]
    if not said:
        return None
    scope = f" (the pinned command selects {len(keys)})" if isinstance(chosen, set) else ""
    return (
        f"pack {pack!r} lists {sum(got.values())} scenario runs; the pinned pack has "
        f"{len(pinned)} scenarios{scope}, {runs.repeat} time(s) each ({'; '.join(said)})"
    )


def _named(keys: list[tuple[str, int]], repeat: int) -> str:
    return first_few([repr(k if repeat == 1 else f"{k} (repeat {turn})") for k, turn in keys])


_WHOLE = "whole"
"""A lookup of an exchange by its reply whole, as benchlocal-cli keeps it
(:func:`verify.replies.kept_digest`), beside its lookups by answer."""


class _Answered(NamedTuple):
    """The component's requests (POSTs), as the checks find them."""

    pool: Pool
    """The answered ones, each found by each of its reply's answer keys and by its reply whole
    (:data:`_WHOLE`), with its last question, the earliest first."""
    places: dict[bytes | None, dict[bytes, list[int]]]
    """By last question, each answer key's places (0, 1, ...) among the requests of that
    question, in the log's order."""
    kinds: dict[bytes | None, list[str]]
    """By last question, what each of its requests got, in the log's order: an answer
    (:data:`_ANSWER`), a failure benchlocal-cli sends again within an attempt
    (:data:`_TRANSIENT`: a 429 or 5xx, or a request the observer saw break), a request whose
    harness went before its answer (:data:`_WENT`: a time-out), or another failure
    (:data:`_FAILED`: a 4xx, which ends the attempt)."""
    wholes: Mapping[bytes | None, Mapping[bytes, list[int]]] = {}
    """By last question, each answered reply's places by the reply whole as benchlocal-cli
    keeps it (:func:`verify.replies.kept_digest`): where a run's copy is, exactly."""


_ANSWER, _TRANSIENT, _FAILED, _WENT = "answer", "transient", "failed", "went"


def _answered(evidence: Gx10Evidence, component: str) -> _Answered:
    pool = Pool()
    places: dict[bytes | None, dict[bytes, list[int]]] = {}
    wholes: dict[bytes | None, dict[bytes, list[int]]] = {}
    kinds: dict[bytes | None, list[str]] = {}
    asked: Counter[bytes | None] = Counter()
    for index, exchange in enumerate(evidence.transport or ()):
        if exchange.component != component or exchange.method != "POST":
            continue
        question = asked_digests(exchange)[1]
        if exchange_failed(exchange):
            status = exchange.status or 0
            if harness_went(exchange):
                kind = _WENT
            elif exchange.error is not None or status in (0, 429) or status >= 500:
                kind = _TRANSIENT
            else:
                kind = _FAILED
            kinds.setdefault(question, []).append(kind)
            asked[question] += 1
            continue
        kinds.setdefault(question, []).append(_ANSWER)
        facts = reply_facts(exchange)
        answers = facts.answers
        lookups: list[tuple[Any, ...]] = [(key, question) for key in answers]
        if facts.kept is not None:
            lookups.append((_WHOLE, facts.kept, question))
            wholes.setdefault(question, {}).setdefault(facts.kept, []).append(asked[question])
        pool.add((index,), lookups)
        found = places.setdefault(question, {})
        for key in dict.fromkeys(answers):
            found.setdefault(key, []).append(asked[question])
        asked[question] += 1
    return _Answered(pool, places, kinds, wholes)


RETRY_ON_TIMEOUT = "--retry-on-timeout"
"""The option of ``benchlocal-cli run`` that sends a timed-out request again within one
attempt, as after a 5xx (without it a time-out ends the attempt)."""
RETRY_ON_TIMEOUT_ENV = "BENCHLOCAL_RETRY_ON_TIMEOUT"
"""The environment variable that is that option's default (``cli._env_bool``: ``1``, ``true``,
``yes`` or ``on``, any case, spaces around)."""
TRANSIENT_RETRIES = "--max-transient-retries"
"""The option of ``benchlocal-cli run`` that says how many times one attempt sends its request
again after a 429 or 5xx (default 3, or its variable :data:`TRANSIENT_RETRIES_ENV`)."""
TRANSIENT_RETRIES_ENV = "BENCHLOCAL_MAX_TRANSIENT_RETRIES"


class _Options(NamedTuple):
    """What the pin set runs the harness with, of the options the first-attempt walk reads."""

    retry_on_timeout: bool
    transient_retries: int
    unpinned: tuple[str, ...] = ()
    """The variables of the harness's environment record that allow more than the pin set does
    (each not taken), to name in a finding they would have excused."""
    record_on: bool = False
    record_retries: int = 0
    """The two options as the record's variables would have them (for that finding)."""


def _options(
    command: Sequence[str], pinned_env: Mapping[str, str], recorded: bytes | None
) -> _Options:
    """The pinned command's options, else their variables in the pin set's environment. Both
    allow a first attempt more failed requests, so neither is taken from the harness's
    environment record (``audit run --env``), which the publisher writes: a variable there
    that allows more than the pin set is named in a finding it would have excused."""
    try:
        variables = json.loads(recorded).get("variables") if recorded else None
    except (ValueError, AttributeError, RecursionError):
        variables = None
    said = {}
    if isinstance(variables, dict):
        said = {k: v for k, v in variables.items() if isinstance(v, str)}
    on, retries = _read(command, pinned_env)
    record_on, record_retries = _read(command, {**pinned_env, **said})
    looser = {
        RETRY_ON_TIMEOUT_ENV: record_on and not on,
        TRANSIENT_RETRIES_ENV: record_retries > retries,
    }
    unpinned = tuple(name for name, allows in looser.items() if allows)
    return _Options(on, retries, unpinned, record_on, record_retries)


def _read(command: Sequence[str], env: Mapping[str, str]) -> tuple[bool, int]:
    """Whether benchlocal-cli run by ``command`` in ``env`` sends a timed-out request again,
    and how many times an attempt sends one again. The variables are those the command's
    program is given (an ``env`` prefix of the command sets, unsets or clears them); where
    that prefix is one the reader does not follow (``env -S``), none: the command's own
    options alone count, the strictest reading."""
    env = under_env(command, env).variables or {}
    on = any(option == RETRY_ON_TIMEOUT for option, _ in _given(command))
    on = on or _env_bool(env.get(RETRY_ON_TIMEOUT_ENV))
    given = env.get(TRANSIENT_RETRIES_ENV)
    retries = _count(given) if given else 3
    if values := _option_values(command, TRANSIENT_RETRIES):
        retries = _count(values[-1])
    return on, retries


def _env_bool(value: str | None) -> bool:
    """``cli._env_bool`` of benchlocal-cli 0.9.9 (unset or empty: off)."""
    return value is not None and value.strip().lower() in {"1", "true", "yes", "on"}


RUN_OPTIONS = frozenset({
    "--allow-partial", "--api-key", "--enable-sandboxed-packs", "--enable-thinking",
    "--endpoint", "--exit-on-regression", "--extra-body", "--full", "--help", "--history-file",
    "--incremental", "--max-tokens", "--max-total-tokens", "--max-transient-retries",
    "--measured-tps", "--medium", "--min-p", "--mock-responses-from-json", "--model",
    "--model-turn-timeout", "--negative-control", "--negative-control-text", "--no-retry",
    "--no-sandboxed-packs", "--no-thinking", "--output", "--pack", "--preserve-reasoning-history",
    "--previous-result", "--probe-thinking-control", "--progress", "--quick", "--reasoning",
    "--reasoning-effort", "--reasoning-packs", "--reference-tps", "--repeat", "--repeat-penalty",
    "--report", "--report-out", "--request-delay", "--resume", "--retry-failed",
    "--retry-failures", "--retry-on-timeout", "--retry-runaways", "--sandbox-image-tag",
    "--sandbox-log-dir", "--sandboxed-only", "--sampling-from-server", "--save-json",
    "--scenario", "--scenarios-file", "--strict-thinking", "--temperature", "--thinking-max-tokens",
    "--thinking-sampler", "--timeout-ceiling-s", "--timeout-per-case", "--timeout-scale-down",
    "--top-k", "--top-p",
})  # fmt: skip
"""The long options of ``benchlocal-cli run`` at 47d1d66 (``cli._parser``; held to the recorded
checkout's ``cli.py`` by a test), by which a pinned command's abbreviations are read."""


def _option_name(word: str) -> str | None:
    """The option of ``benchlocal-cli run`` that ``word`` (before any ``=``) names as argparse
    reads it (:func:`verify._consistency.options.option_named`)."""
    return option_named(word, RUN_OPTIONS)


def _given(command: Sequence[str]) -> list[tuple[str, str]]:
    """The options of ``benchlocal-cli run`` the pinned command gives, in order, each with the
    word it may take as its value (:func:`verify._consistency.options.given_options`)."""
    return given_options(command, RUN_OPTIONS)


def _option_values(command: Sequence[str], name: str) -> list[str]:
    """The values the pinned command gives option ``name``, in order (the last is the one
    argparse keeps)."""
    return [value for option, value in _given(command) if option == name]


def _count(text: str) -> int:
    """The count benchlocal-cli takes: ``max(0, int(text))`` (``_post_chat``; signs, spaces,
    underscores and any script's digits as ``int()`` reads them), at most 1,000. Text that
    ``int()`` refuses is 0: benchlocal-cli would not have run (``cli._env_int`` and argparse's
    ``type=int`` raise), so no failed request is its own."""
    try:
        return min(max(0, int(text)), 1000)
    except ValueError:
        return 0


def _first_answers(
    answered: _Answered,
    place: str,
    runs: BenchlocalRuns,
    questions: Mapping[str, Mapping[str, Pinned]],
    options: _Options,
) -> list[Finding]:
    """Each passed run of a scored pack was graded on the first answer to its question that no
    earlier attempt took: benchlocal-cli grades a scenario by its first attempt and only then
    retries a failed one (``_run_scenario_with_inline_retries``), each request in turn, so a
    run given the reply of one of its retries (a pass at the second or third try shown as a
    pass at the first), its own first reply left out or listed as a retry, passed over an
    earlier answer. The runs of a question are walked as benchlocal-cli runs them (pack by
    pack, repeat by repeat, in the listed order), each attempt with a reply taking its answer's
    next place. The failed requests of a question are placed too: an attempt may follow up to
    ``transient_retries`` of its own (``_post_chat`` sends a request again on a 429 or 5xx, at
    most ``--max-transient-retries`` times); an attempt with no reply (a time-out, an error)
    may have left one answer behind and its own failed requests. A request whose harness went
    before its answer (the observer records the answer that came after with an error:
    :func:`verify.replies.harness_went`) is a failed request, never an answer: one that ends
    its attempt (``_post_chat`` raises on a time-out), or, under ``--retry-on-timeout``, one the
    attempt sends again as after a 5xx. The options are the pin set's (:func:`_options`)."""
    transient_retries = options.transient_retries
    at: Counter[bytes | None] = Counter()  # the next place of each question not yet taken
    excused: Counter[tuple[bytes | None, str]] = Counter()  # what attempts with no reply left
    passed_over: list[tuple[BenchlocalRun, str]] = []
    order = {pack: number for number, pack in enumerate(runs.packs)}
    scored = [
        (order[run.pack], run.repeat, index, run)
        for pack in BENCHLOCAL_TOOL_INSTRUCTION_PACKS
        for index, run in enumerate(runs.packs.get(pack, ()))
        if run.scenario in questions.get(pack, {})
    ]
    for *_, run in sorted(scored, key=lambda item: item[:3]):
        question = questions[run.pack][run.scenario].question
        found = answered.places.get(question, {})
        whole = answered.wholes.get(question, {})
        kinds = answered.kinds.get(question, [])
        attempts = [(run.answer, run.copy), *((answer, None) for answer in run.retries)]
        for attempt, (answer, copy) in enumerate(attempts):
            if answer is None:  # a time-out's late answer, or its requests' failures
                excused[question, _ANSWER] += 1
                excused[question, _FAILED] += 1 + transient_retries
                continue
            # the run's own reply where it is found whole: two replies may share an answer
            # and grade apart (a grader reads the reasoning where the content is empty)
            places = whole[copy] if copy is not None and copy in whole else found.get(answer, [])
            next_place = bisect_left(places, at[question])
            if next_place == len(places):
                continue  # no such answer left: the reply check's finding, where it is graded
            skipped = Counter(kinds[at[question] : places[next_place]])
            answers = skipped[_ANSWER] - excused[question, _ANSWER]
            failed = sum(skipped[kind] for kind in (_TRANSIENT, _WENT, _FAILED))
            unexcused = _unexcused(skipped, options.retry_on_timeout, transient_retries)
            failures = unexcused - excused[question, _FAILED]
            if attempt == 0 and run.passed and (answers > 0 or failures > 0):
                but = (
                    f" on a reply that came after {skipped[_ANSWER]} earlier answer(s) and "
                    f"{failed} failed request(s) to its question that no attempt lists: "
                    "benchlocal-cli grades a run by its first attempt"
                )
                recorded = _unexcused(skipped, options.record_on, options.record_retries)
                if options.unpinned and answers <= 0 and recorded <= excused[question, _FAILED]:
                    but += (
                        f" (the harness's environment record sets "
                        f"{' and '.join(options.unpinned)}, which the pin set does not: "
                        "not taken)"
                    )
                passed_over.append((run, but))
            excused[question, _ANSWER] = max(0, -answers)
            excused[question, _FAILED] = max(0, -failures)
            at[question] = places[next_place] + 1
    return _passed_but(place, passed_over)


def _unexcused(skipped: Counter[str], retry_on_timeout: bool, transient_retries: int) -> int:
    """Of the failed requests before an attempt's reply, those its own transient retries do not
    explain: 429/5xx (and, under ``--retry-on-timeout``, time-outs) past ``transient_retries``,
    and every failure that ends an attempt."""
    retried = skipped[_TRANSIENT] + (skipped[_WENT] if retry_on_timeout else 0)
    ended = skipped[_FAILED] + (0 if retry_on_timeout else skipped[_WENT])
    return retried - min(retried, transient_retries) + ended


def _replies(
    component: str,
    place: str,
    runs: BenchlocalRuns,
    questions: Mapping[str, Mapping[str, Pinned]],
    found: Pool | None,
) -> tuple[list[Finding], set[str]]:
    """Each scored scenario run's reply (its ``raw_response``) is one the observer saw: among
    the component's answered requests, one whose answer (with its token counts, where the copy
    has them; think tags taken out as benchlocal-cli keeps a reply:
    :func:`verify.replies.answer_keys`) is the reply's and whose last user message is the pinned
    scenario's question, each exchange taken once, the earliest first. A run that passed must
    have such a reply; a failed run with no reply (a time-out, an error) needs none. Only the
    scored packs' (:data:`BENCHLOCAL_TOOL_INSTRUCTION_PACKS`: one reply a scenario); scenarios
    of a pack not held to the checkout are left to that finding.

    The copy must be the exchange's reply whole, as benchlocal-cli keeps it (think tags taken
    out of its texts: :func:`verify.replies.kept_digest`), and is found by that first: the
    graders read members the answer leaves out (a top-level ``content`` or ``tool_calls``, a
    call's own ``name``), so a copy that holds a logged answer with a member of its own is a
    finding too; and an exchange with the same answer that the harness never received (a
    time-out's late answer, at temperature 0 the same text) is not taken for it. Returns the
    findings and the runs (by ``where``) whose copy is the log's, which alone are graded
    again."""
    if found is None:  # no transport log: its own finding
        return [], set()
    unmatched: list[BenchlocalRun] = []
    altered: list[BenchlocalRun] = []
    bound: set[str] = set()
    every = [
        run
        for pack, pack_runs in runs.packs.items()
        if pack in BENCHLOCAL_TOOL_INSTRUCTION_PACKS
        for run in pack_runs
    ]
    for run in every:
        pinned = questions.get(run.pack)
        if pinned is None or run.scenario not in pinned:
            continue
        if run.answer is None:
            if run.passed:
                unmatched.append(run)
            continue
        question = pinned[run.scenario].question
        if found.take((_WHOLE, run.copy, question)) is not None:
            bound.add(run.where)  # the reply, whole, as benchlocal-cli keeps it
        elif found.take((run.answer, question)) is not None:
            altered.append(run)  # its answer, with members of the publisher's
        else:
            unmatched.append(run)
    findings = _first_of(
        place, unmatched, len(every),
        lambda run: f" ({'passed' if run.passed else 'failed'}) was graded on a reply that is no "
        f"reply of {component} to its question in the transport log",
    ) + _first_of(
        place, altered, len(every),
        lambda _: f": its raw_response holds the answer of a reply of {component} in the "
        "transport log, but is not that reply as benchlocal-cli keeps it",
    )  # fmt: skip
    return findings, bound
