"""bfcl-eval's gate held to the run: its outputs are the run's model's, its samples within the
requests the transport log holds, its entries exactly those the pinned command asks, each answer
it recorded a reply the observer saw to the entry's question as bfcl-eval's own data in the
recorded checkout asks it, and each inference error a request of its own that asked it
(ADR 0022 and its amendments)."""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bundle_schema.models import BfclShard, Finding, Gx10Evidence
from pins import PinSetSource
from verify._consistency._common import Pool, Reader, _disagrees
from verify._consistency.checkouts import _Checkout, checkout_file
from verify._facts import asked_digests, reply_facts
from verify.harness_outputs import (
    BFCL_DATA,
    BFCL_DRAW,
    BfclAnswer,
    BfclQuestion,
    BfclResults,
    OutputsUnreadable,
    bfcl_answers,
    bfcl_drawn,
    bfcl_model_folder,
    bfcl_questions,
)
from verify.replies import answer_digest_of, exchange_failed, question_digest, request_digest
from verify.scorers.bfcl import V4_CATEGORIES, v4_categories


def bfcl_gate(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    files: Mapping[str, bytes],
    tallies: object,
    *,
    where: tuple[str, str, str],
    checkouts: tuple[Mapping[str, _Checkout], Reader],
) -> list[Finding]:
    """The findings of one bfcl-eval gate's raw outputs (``files``, their re-read ``tallies``)
    against the run. ``where``: (the gate's tallies entry, component, upstream);
    ``checkouts``: the recorded checkouts and the bundle's reader."""
    entry, component, upstream = where
    findings = _bfcl_model(files, evidence.model.runtime_model_id, entry, upstream)
    findings += _bfcl_requests(evidence, tallies, component, entry, upstream)
    try:
        results = bfcl_answers(files)
    except OutputsUnreadable:
        return findings  # the reader's refusal is the finding
    if results.others:
        at, sample = results.others[0]
        more = f" ({len(results.others)} such entries)" if len(results.others) > 1 else ""
        why = (
            f"{at}: {upstream}'s entry {sample!r} is neither an answer (its token counts, or a "
            f"turn's steps') nor an inference error (its traceback){more}"
        )
        return [*findings, _disagrees(entry, why)]
    asks = _pinned_entries(pins.pins.harnesses[upstream].command, files)
    subsets = set(results.entries) | set(asks.subsets if isinstance(asks, _Asks) else ())
    data = _bfcl_data(pins, upstream, *checkouts, results, subsets=subsets)
    if isinstance(data, str):
        why = f"{upstream}'s entries cannot be held to bfcl-eval's data: {data}"
        return [*findings, _disagrees(entry, why)]
    if isinstance(asks, str):
        why = f"{upstream}'s entries cannot be held to the pin set: {asks}"
        findings.append(_disagrees(entry, why))
    else:
        findings += _bfcl_asked(asks, results, data, where)
    findings += _bfcl_replies(evidence, results, where, data.questions)
    return findings


def _bfcl_model(files: Mapping[str, bytes], model: str, entry: str, upstream: str) -> list[Finding]:
    """bfcl-eval's score and result files are under the model's name as the pinned command
    registers it, the run's runtime model id (``{model}``, in the folder bfcl-eval names after it
    as the bundle keeps it: :func:`bfcl_model_folder`): outputs of another model are not this
    run's."""
    expected = bfcl_model_folder(model)
    named = sorted(
        {n.split("/")[1] for n in files if n.startswith(("score/", "result/")) and n.count("/") > 1}
    )
    if not named or named == [expected]:
        return []
    return [
        _disagrees(
            entry,
            f"{upstream}'s score files are of model {named[0]!r}; the run's model is {model!r}",
        )
    ]


def _bfcl_requests(
    evidence: Gx10Evidence, shard: object, component: str, entry: str, upstream: str
) -> list[Finding]:
    """Each sample bfcl-eval scored asked the model at least once (its handler sends one
    request an entry, a multi-turn entry more), so a gate's samples cannot outnumber the
    requests the transport log holds of the component it gates (the main harness's among
    them: a bound, not a match)."""
    if not isinstance(shard, BfclShard) or evidence.transport is None:
        return []
    samples = sum(tally.n for tally in shard.subset_totals.values())
    requests = sum(1 for e in evidence.transport if e.component == component and e.method == "POST")
    if samples <= requests:
        return []
    return [
        _disagrees(
            entry,
            f"{upstream} scored {samples} samples; the transport log holds {requests} requests "
            f"of {component}, and each sample asks the model at least once",
        )
    ]


def _bfcl_replies(
    evidence: Gx10Evidence,
    results: BfclResults,
    where: tuple[str, str, str],
    asked: Mapping[str, BfclQuestion],
) -> list[Finding]:
    """Each answer bfcl-eval recorded is a reply the observer saw: among the component's
    answered POST requests, one whose answer and token counts are the answer's
    (:func:`verify.replies.answer_digest`), each reply taken once
    (:func:`verify.harness_outputs.bfcl_answers`), and whose request asked the entry's question
    as bfcl-eval's own data in the recorded checkout says it (``asked``; :class:`_Replies`).
    And each inference error bfcl-eval recorded was a request that asked its entry's question
    (any POST of the component, whatever came back: bfcl-eval records an error for a failed
    request and for a reply it cannot read, and retries; an error raised before any request was
    sent is no entry the model was asked). The first answer no reply gave to its question, and
    the first error no request asked, are named, with how many there are. ``where``: (the
    gate's tallies entry, component, upstream)."""
    entry, component, upstream = where
    if evidence.transport is None:
        return []
    replies, requests = Pool(), Pool()
    for exchange in evidence.transport:
        if exchange.component != component or exchange.method != "POST":
            continue
        request, last = asked_digests(exchange)
        requests.add((request, last), _lookups(request, last))
        answer = reply_facts(exchange).answer
        if answer is not None and not exchange_failed(exchange):
            replies.add((answer, request, last), _lookups(request, last, answer))
    answers = results.answers
    # single-turn answers take their replies first: a step's may be any reply to its turn's
    # question, a single-turn entry's only the one to its whole request
    missed = []
    for i in sorted(range(len(answers)), key=lambda i: answers[i].turn is not None):
        taken = replies.take(_reply_to(answers[i], asked.get(answers[i].entry)))
        if taken is None:
            missed.append(i)
        else:
            requests.drop(taken[1:])  # its request is the answer's: no error's
    unmatched = [answers[i] for i in sorted(missed)]
    findings = []
    if unmatched:
        first = unmatched[0]
        more = f" ({len(unmatched)} of {len(answers)} answers)" if len(unmatched) > 1 else ""
        findings.append(
            _disagrees(
                entry,
                f"{first.where}: {upstream}'s answer to {first.sample!r} ({first.prompt_tokens} "
                f"+ {first.completion_tokens} tokens) is no reply of {component} to its question "
                f"in the transport log{more}",
            )
        )
    # each error takes a request of its own (others of the same question are retries), those
    # a whole request binds first
    errors = results.errors
    wanted = [_asking(sample, asked.get(sample)) for _, _, sample in errors]
    ordered = sorted(range(len(errors)), key=lambda i: (wanted[i] or (3,))[0])
    unasked = [errors[i] for i in sorted(i for i in ordered if requests.take(wanted[i]) is None)]
    if unasked:
        at, _subset, sample = unasked[0]
        more = f" ({len(unasked)} of {len(errors)} errors)" if len(unasked) > 1 else ""
        findings.append(
            _disagrees(
                entry,
                f"{at}: {upstream}'s inference error of {sample!r} is no request of {component} "
                f"that asked its question in the transport log{more}",
            )
        )
    return findings


_MULTI_TURN = ("multi_turn", "memory", "web_search")
"""What an entry id bfcl-eval 2026.3.23 asks in turns holds (``contain_multi_turn_interaction``:
its category's name is the id's stem)."""


def _asking(sample: str, question: BfclQuestion | None) -> tuple[int, bytes] | None:
    """What a request that asked entry ``sample``'s ``question`` holds, as bfcl-eval asks it:
    an entry it asks in one request (by its id, :data:`_MULTI_TURN`) whole, an entry it asks in
    turns its first turn's question last (:func:`_asked`)."""
    if question is None:
        return None
    return _asked(question, 0 if any(word in sample for word in _MULTI_TURN) else None)


def _reply_to(answer: BfclAnswer, question: BfclQuestion | None) -> tuple[Any, ...] | None:
    """What a reply that gave ``answer`` to ``question`` is found by: the answer, and what its
    request asked (:func:`_asked`, of the answer's turn)."""
    if question is None:
        return None
    said = answer_digest_of(answer.answer, answer.prompt_tokens, answer.completion_tokens)
    return *_asked(question, answer.turn), said


def _asked(question: BfclQuestion, turn: int | None) -> tuple[int, bytes]:
    """What a request bfcl-eval sent for ``question`` holds: for a single-turn entry (``turn``
    None), the entry's first turn and functions, whole (1); for a step of ``turn``, that turn's
    question as its last user message (2)."""
    if turn is None:
        functions = [f.replace(".", "_") for f in question.functions]  # underscore_to_dot
        return 1, request_digest(question.turns[0], functions)
    return 2, question_digest(question.last_user(turn))


def _lookups(request: bytes | None, last: bytes | None, *more: bytes) -> list[tuple[Any, ...]]:
    """How an exchange is found (:class:`Pool`): by its whole request (1) and by its last
    question (2), each with ``more`` (its reply's answer)."""
    return [(i, digest, *more) for i, digest in ((1, request), (2, last)) if digest is not None]


@dataclass(frozen=True)
class _Data:
    """bfcl-eval's own data of the subsets asked or answered: each subset's entry ids, and the
    questions of the entries the result files hold (answered or errored) by id."""

    ids: dict[str, frozenset[str]]
    questions: dict[str, BfclQuestion]


def _bfcl_data(
    pins: PinSetSource,
    upstream: str,
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    results: BfclResults,
    *,
    subsets: Collection[str],
) -> _Data | str:
    """bfcl-eval's own data (:data:`verify.harness_outputs.BFCL_DATA` under the harness's
    directory) in the recorded checkout of ``upstream``, of each of ``subsets`` (those the
    result files hold and those the pinned command asks), with the questions of the answered
    and errored entries, or why it cannot be read (not recorded, not in the listing, not kept,
    not readable: a file the entries need is never optional)."""
    wanted: dict[str, set[str]] = {subset: set() for subset in subsets}
    for answer in results.answers:
        wanted[answer.subset].add(answer.entry)
    for _where, subset, sample in results.errors:
        wanted[subset].add(sample)
    workdir = pins.pins.harnesses[upstream].workdir
    found = _Data({}, {})
    for subset, entries in sorted(wanted.items()):
        path = posixpath.normpath(posixpath.join(workdir, BFCL_DATA.format(subset=subset)))
        data = checkout_file(checkouts, upstream, path, read)
        if isinstance(data, str):
            return data
        try:
            found.ids[subset], questions = bfcl_questions(data, path, entries)
        except OutputsUnreadable as exc:
            return str(exc)
        found.questions.update(questions)
    return found


@dataclass(frozen=True)
class _Asks:
    """The entries the pinned command has bfcl-eval answer: by subset, the ids, or None for
    every entry of the subset's data; and how the command says so."""

    subsets: Mapping[str, frozenset[str] | None]
    how: str


def _pinned_entries(command: Sequence[str], files: Mapping[str, bytes]) -> _Asks | str:
    """What the pinned command has bfcl-eval 2026.3.23's ``generate`` answer (``evaluate``
    scores the result files there are, so its own categories ask nothing): the test categories
    of generate's ``--test-category`` values (bfcl-eval's own collections expanded; commas
    separate values; none given: bfcl-eval's default, ``all``), every entry of each; with
    ``--run-ids``, the entries :data:`verify.harness_outputs.BFCL_DRAW` names (among the
    outputs), whatever the categories. A command without a ``generate`` argument (a harness of
    its own that writes bfcl-eval's files) is read whole. ``format_sensitivity`` asks nothing:
    bfcl-eval skips its entries for a function-calling model, which the pinned handler
    registers. Or why it cannot be said."""
    phases = _phases(command)
    generating = [p for p in phases if p[:1] == ["generate"]] or [list(command)]
    draws = sum("--run-ids" in phase for phase in generating)
    if 0 < draws < len(generating):
        return "its generate phases are a draw (--run-ids) and categories: this reader joins none"
    values = [v for phase in generating for f, v in itertools.pairwise(phase) if f == _CATEGORY]
    values += [p.partition("=")[2] for g in generating for p in g if p.startswith(_CATEGORY + "=")]
    names = list(dict.fromkeys(n.strip() for n in ",".join(values).split(",") if n.strip()))
    names = names or ["all"]
    try:  # a name bfcl-eval does not have is refused, a draw's too
        categories = v4_categories(names) - {"format_sensitivity"}
    except ValueError as exc:
        return f"the pinned command's --test-category: {exc}"
    if draws:
        return _drawn_entries(phases[0], files)
    how = f"--test-category {','.join(names)}: every entry of bfcl-eval's data"
    return _Asks(dict.fromkeys(categories), how)


def _drawn_entries(arguments: Sequence[str], files: Mapping[str, bytes]) -> _Asks | str:
    """The entries of a draw (``--run-ids``): those :data:`verify.harness_outputs.BFCL_DRAW`
    names, which must be the draw the command's own ``arguments`` before its first phase name
    where they name one (:func:`_named_draw`)."""
    data = files.get(BFCL_DRAW)
    if data is None:
        return (
            f"the pinned command answers the entries {BFCL_DRAW} names (--run-ids), which the "
            "outputs do not keep"
        )
    try:
        drawn = bfcl_drawn(data, BFCL_DRAW)
    except OutputsUnreadable as exc:
        return str(exc)
    named = _named_draw(arguments)
    if isinstance(named, str):
        return named
    read = {s: frozenset(ids) for s, ids in drawn.items() if ids}
    if named and read != named:
        differs = sorted(set(read) ^ set(named)) or sorted(s for s in read if read[s] != named[s])
        return (
            f"{BFCL_DRAW} is not the draw the pinned command names (category=id,...): "
            f"{differs[0]}'s entries differ"
        )
    unknown = sorted(set(read) - V4_CATEGORIES)
    if unknown:
        return f"{BFCL_DRAW}: {unknown[0]!r} is no test category of bfcl-eval 2026.3.23"
    subsets = {s: ids for s, ids in read.items() if s != "format_sensitivity"}
    return _Asks(subsets, f"--run-ids: the entries of {BFCL_DRAW}")


_CATEGORY = "--test-category"


def _phases(command: Sequence[str]) -> list[list[str]]:
    """The pinned command cut before each ``generate`` and ``evaluate`` argument (bfcl-eval's
    commands): each phase its command's name and the arguments up to the next."""
    phases: list[list[str]] = [[]]
    for part in command:
        if part in ("generate", "evaluate"):
            phases.append([])
        phases[-1].append(part)
    return phases


_DRAWN = re.compile(r"([a-z][a-z0-9_]*)=([^\s=,]+(?:,[^\s=,]+)*)")
"""A pinned command's argument naming a draw's entries of one category: ``category=id,id``."""


def _named_draw(arguments: Sequence[str]) -> dict[str, frozenset[str]] | str:
    """The draw the pinned command's own arguments before its first ``generate`` or
    ``evaluate`` name, where they name one (a program the pin set keeps writes it to
    :data:`verify.harness_outputs.BFCL_DRAW`, as the recorded bundle's pin set does): each
    ``category=id,id`` argument of a bfcl-eval category; one category named twice is refused
    (which the program keeps is its own)."""
    named: dict[str, frozenset[str]] = {}
    for part in arguments:
        match = _DRAWN.fullmatch(part)
        if match is not None and match[1] in V4_CATEGORIES:
            if match[1] in named:
                return f"the pinned command names the draw of {match[1]} twice"
            named[match[1]] = frozenset(match[2].split(","))
    return named


def _bfcl_asked(
    asks: _Asks, results: BfclResults, data: _Data, where: tuple[str, str, str]
) -> list[Finding]:
    """bfcl-eval answered the entries the pinned command asks (:func:`_pinned_entries`), each
    subset's exactly: none missing (a run of fewer is not the pinned gate), none beside them.
    An entry bfcl-eval would not run (an id of the draw its data does not hold) is not asked.
    ``data``: bfcl-eval's data of every subset asked or answered. The first difference is
    named, with how many subsets differ."""
    entry, _component, upstream = where
    problems = []
    for subset in sorted(set(results.entries) | set(asks.subsets)):
        got = results.entries.get(subset, {})
        if subset not in asks.subsets:
            at = next(iter(got.values()))
            problems.append(
                f"{at}: {upstream} answered subset {subset!r}, which the pinned command does not "
                f"ask ({asks.how})"
            )
            continue
        named = asks.subsets[subset]
        wanted = data.ids[subset] if named is None else named & data.ids[subset]
        beside = [sample for sample in got if sample not in wanted]
        missing = sorted(wanted - got.keys())
        if beside:
            problems.append(
                f"{got[beside[0]]}: {upstream} answered {beside[0]!r}, not an entry of {subset} "
                f"the pinned command asks ({asks.how})"
            )
        elif missing:
            problems.append(
                f"{upstream} answered {len(wanted) - len(missing)} of the {len(wanted)} entries "
                f"of {subset} the pinned command asks ({asks.how}): {missing[0]!r} has no result"
            )
    if not problems:
        return []
    more = f" ({len(problems)} subsets differ)" if len(problems) > 1 else ""
    return [_disagrees(entry, problems[0] + more)]
