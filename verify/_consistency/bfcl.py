"""bfcl-eval's gate held to the run: its outputs are the run's model's, its samples within the
requests the transport log holds, and each answer it recorded a reply the observer saw to the
entry's question as bfcl-eval's own data in the recorded checkout asks it (ADR 0022)."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from bundle_schema.models import BfclShard, Finding, Gx10Evidence
from pins import PinSetSource
from verify._consistency._common import Reader, _disagrees
from verify._consistency.checkouts import _Checkout, checkout_file
from verify._facts import asked_digests, reply_facts
from verify.harness_outputs import (
    BFCL_DATA,
    BfclAnswer,
    BfclQuestion,
    OutputsUnreadable,
    bfcl_answers,
    bfcl_model_folder,
    bfcl_questions,
)
from verify.replies import answer_digest_of, exchange_failed, question_digest, request_digest


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
    questions = _bfcl_data(pins, upstream, *checkouts)
    findings += _bfcl_replies(evidence, files, where, questions)
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
    files: Mapping[str, bytes],
    where: tuple[str, str, str],
    questions: Callable[[Sequence[BfclAnswer]], dict[str, BfclQuestion] | str],
) -> list[Finding]:
    """Each answer bfcl-eval recorded is a reply the observer saw: among the component's
    answered POST requests, one whose answer and token counts are the answer's
    (:func:`verify.replies.answer_digest`), each reply taken once
    (:func:`verify.harness_outputs.bfcl_answers`), and whose request asked the entry's question
    as bfcl-eval's own data in the recorded checkout says it (``questions``; :class:`_Replies`).
    An answer no reply gave to its question was not the model's; the first such is named, with
    how many there are. An entry that is neither an answer nor an inference error bfcl-eval
    recorded, or answers whose questions cannot be read, are refused the same way (they would
    otherwise escape the match). ``where``: (the gate's tallies entry, component, upstream)."""
    entry, component, upstream = where
    if evidence.transport is None:
        return []
    try:
        answers, others = bfcl_answers(files)
    except OutputsUnreadable:
        return []  # the reader's refusal is the finding
    if others:
        at, sample = others[0]
        more = f" ({len(others)} such entries)" if len(others) > 1 else ""
        return [
            _disagrees(
                entry,
                f"{at}: {upstream}'s entry {sample!r} is neither an answer (its token counts, "
                f"or a turn's steps') nor an inference error (its traceback){more}",
            )
        ]
    asked = questions(answers)
    if isinstance(asked, str):
        why = f"{upstream}'s answers cannot be held to their questions: {asked}"
        return [_disagrees(entry, why)]
    replies = _Replies()
    for exchange in evidence.transport:
        if exchange.component != component or exchange.method != "POST":
            continue
        answer = reply_facts(exchange).answer
        if answer is not None and not exchange_failed(exchange):
            replies.add(answer, *asked_digests(exchange))
    # single-turn answers take their replies first: a step's may be any reply to its turn's
    # question, a single-turn entry's only the one to its whole request
    ordered = sorted(range(len(answers)), key=lambda i: answers[i].turn is not None)
    missed = {i for i in ordered if not replies.take(answers[i], asked.get(answers[i].entry))}
    unmatched = [answers[i] for i in sorted(missed)]
    if not unmatched:
        return []
    first = unmatched[0]
    more = f" ({len(unmatched)} of {len(answers)} answers)" if len(unmatched) > 1 else ""
    return [
        _disagrees(
            entry,
            f"{first.where}: {upstream}'s answer to {first.sample!r} ({first.prompt_tokens} + "
            f"{first.completion_tokens} tokens) is no reply of {component} to its question in "
            f"the transport log{more}",
        )
    ]


_Asked = tuple[bytes, bytes | None, bytes | None]
"""A reply's answer, and what its request asked: the whole request, and its last question."""


class _Replies:
    """The replies an answer may be taken from, each once: by its answer and what its request
    asked (the whole request, for a single-turn entry's answer; its last question, for a
    step's)."""

    def __init__(self) -> None:
        self._left: Counter[_Asked] = Counter()
        self._by: dict[tuple[int, bytes, bytes], list[_Asked]] = {}

    def add(self, answer: bytes, request: bytes | None, last: bytes | None) -> None:
        key = (answer, request, last)
        self._left[key] += 1
        for index, asked in ((1, request), (2, last)):
            if asked is not None:
                self._by.setdefault((index, answer, asked), []).append(key)

    def take(self, answer: BfclAnswer, question: BfclQuestion | None) -> bool:
        """Whether a reply gave ``answer`` to ``question`` (taking it): a single-turn entry's
        to a request of exactly the entry's first turn and functions, a step's to a request
        whose last user message is its turn's question."""
        if question is None:
            return False
        said = answer_digest_of(answer.answer, answer.prompt_tokens, answer.completion_tokens)
        if answer.turn is None:
            functions = [f.replace(".", "_") for f in question.functions]  # underscore_to_dot
            wanted = (1, said, request_digest(question.turns[0], functions))
        else:
            wanted = (2, said, question_digest(question.last_user(answer.turn)))
        for key in self._by.get(wanted, ()):
            if self._left[key]:
                self._left[key] -= 1
                return True
        return False


def _bfcl_data(
    pins: PinSetSource, upstream: str, checkouts: Mapping[str, _Checkout], read: Reader
) -> Callable[[Sequence[BfclAnswer]], dict[str, BfclQuestion] | str]:
    """What reads the questions of the answers' entries from bfcl-eval's own data
    (:data:`verify.harness_outputs.BFCL_DATA` under the harness's directory) in the recorded
    checkout of ``upstream``: by entry id, or why they cannot be read (not recorded, not in the
    listing, not kept, not readable: a file the answers need is never optional)."""

    def questions(answers: Sequence[BfclAnswer]) -> dict[str, BfclQuestion] | str:
        wanted: dict[str, set[str]] = {}
        for answer in answers:
            wanted.setdefault(answer.subset, set()).add(answer.entry)
        if not wanted:
            return {}
        workdir = pins.pins.harnesses[upstream].workdir
        found: dict[str, BfclQuestion] = {}
        for subset, ids in sorted(wanted.items()):
            path = posixpath.normpath(posixpath.join(workdir, BFCL_DATA.format(subset=subset)))
            data = checkout_file(checkouts, upstream, path, read)
            if isinstance(data, str):
                return data
            try:
                found |= bfcl_questions(data, path, ids)
            except OutputsUnreadable as exc:
                return str(exc)
        return found

    return questions
