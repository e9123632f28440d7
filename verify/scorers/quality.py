"""Quality measurement replay (seed 001): the pair mode, the task mode and the paired-substrate
protocol, recomputed from the answer logits the score tool recorded.

The score tool runs a language model; this replay does not. It takes what the tool saw at the
last row of every query (the logits of the answer tokens) and recomputes every number the tool
printed and wrote, then compares them with the files the run left:

- **pair mode**: the log-odds of yes (``logit_yes - logit_no``, in nats, no sigmoid) per pair,
  side and rubric item; the side score as the mean over the items; side b wins a pair when its
  score is above side a's by more than :data:`MARGIN`, loses when it is under by more than it,
  and ties otherwise (counted one half); the win rate and its Wilson bounds at a nominal 90%;
  the same per item; the cut pairs; the blind transcripts and their key checked together.
- **task mode**: per item the largest of the four letter logits (a tie keeps the earlier letter),
  1 when it is the answer; per dose the mean over the items in double; ``capability.jsonl``.
- **protocol**: the five conditions of the paired-substrate protocol, each reported on its own,
  and the seed's verdict words.

Every threshold of the seed (the 0.5-nat margin, the 0.02 of mean coherence and of mean
repetition, the 0.05 of the task score) is a decimal, and so is every number a run recorded in
JSON. They are compared as decimals, never as binary floats: 0.80 -> 0.78 is a drop of exactly
0.02, although ``0.80 - 0.78`` is 0.020000000000000018 in floating point. The decimal a recorded
number stands for is :func:`recorded`: the shortest decimal that reads back as the same double,
which is what a JSON writer (RFC 8785, JavaScript, Python) prints, and equal to the text itself
whenever the text has at most 15 significant digits. Sums, means and differences over those
decimals are exact (:class:`fractions.Fraction`); only the numbers written out are doubles.

Inputs the seed refuses are refused here with the same limits (:class:`QualityRefused`, exit 2);
a recorded run that did not complete fails (:class:`bundle_schema.errors.CheckFailed`, exit 1).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Literal, TypeVar

from pydantic import BaseModel

from bundle_schema import KINDS, kind_of, loads_strict, validate_document
from bundle_schema.errors import CheckFailed, DocumentError, InvalidInput
from bundle_schema.models import (
    CapabilityLine,
    Outcome,
    QualityCheck,
    QualityCondition,
    QualityDose,
    QualityItemOutcome,
    QualityMeasurement,
    QualityPairLine,
    QualityPairLogit,
    QualityPairsScore,
    QualityProtocolReport,
    QualitySummaryLine,
    QualityTaskItem,
    QualityTaskLogit,
    QualityTasksScore,
    QualityWinTally,
)
from verify.scorers._compare import differences

__all__ = [
    "CONFIDENCE",
    "MARGIN",
    "QUALITY_VERSION",
    "Pair",
    "QualityRefused",
    "RubricItem",
    "TaskItem",
    "Z",
    "blind_key",
    "blind_transcripts",
    "judge_protocol",
    "load_measurement",
    "outcome",
    "parse_doses",
    "parse_pair_logits",
    "parse_pairs",
    "parse_quality_stream",
    "parse_rubric",
    "parse_task_logits",
    "parse_tasks",
    "recorded",
    "score_pairs",
    "score_tasks",
    "wilson",
]

QUALITY_VERSION = "2"
"""The version of this scorer; it changes whenever a number it computes could change."""

MARGIN = 0.5
"""Nats by which one side score must exceed the other to win a pair (a constant of the tool)."""
_MARGIN = Fraction("0.5")
CONFIDENCE = 0.9
Z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)
"""The normal quantile of a nominal 90% two-sided interval, 1.6448536269514722."""
TOLERANCE = 1e-5
"""Claimed numbers agree with the replay within this, absolute or relative: the tool's kernels
may compute in single precision. Counts, results and names must agree exactly."""

MAX_PAIRS = 256
MAX_TURNS = 16
MAX_PAIR_LINE = 65_536
MAX_ITEMS = 16
MAX_ID_BYTES = 32
"""Identities must be under this many bytes."""
MAX_QUESTION_BYTES = 512
"""Questions must be under this many bytes."""
BLOCK_BYTES = 8_192
"""A turn must fit one block, and a pair-mode query must fit this many bytes."""
MAX_DOSES = 8
MAX_TASKS = 256
TASK_FIELDS = 7
MAX_TASK_LINE = 8_192
MAX_TASK_QUERY = 8_448
Letter = Literal["A", "B", "C", "D"]
LETTERS: tuple[Letter, Letter, Letter, Letter] = ("A", "B", "C", "D")
Verdict = Literal["a gain", "a style gain at a cost", "no measured gain", "incomplete"]

_ITEM_ID = re.compile(r"[A-Za-z0-9_-]+")
_FIGURE = re.compile(r"-?[0-9]+(\.[0-9]+)?")

# The protocol's thresholds, as exact decimals (compared with recorded decimals, see recorded()).
_COHERENCE_SLACK = Fraction("0.02")
_REPETITION_SLACK = Fraction("0.02")
_TASK_SLACK = Fraction("0.05")
MIN_PROTOCOL_PAIRS = 32


_M = TypeVar("_M", bound=BaseModel)


class QualityRefused(InvalidInput):
    """An input the seed's score tool refuses (exit 2); the message names the limit."""


def recorded(value: float | Fraction) -> Fraction:
    """The decimal a recorded number stands for, exactly.

    A float is taken as ``Fraction(repr(value))``: the shortest decimal that reads back as the
    same double. That is the text a JSON writer prints (RFC 8785, JavaScript, Python), and it is
    the decimal of the JSON text itself whenever that text has at most 15 significant digits
    (``0.78`` and ``0.780`` both give 78/100); a longer text, such as ``%.17g`` prints
    (``0.78000000000000003``), gives the shortest decimal of the same double, so how many digits
    a writer printed never changes a verdict. An int, or a Fraction already exact, is itself.
    """
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


@dataclass(frozen=True)
class Turn:
    user: str
    a: str
    b: str


@dataclass(frozen=True)
class Pair:
    """One conversation of the pairs file, numbered from 1 in file order."""

    number: int
    name: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class RubricItem:
    id: str
    question: str


@dataclass(frozen=True)
class TaskItem:
    id: str
    question: str
    choices: tuple[str, str, str, str]
    answer: str


def _n(value: int) -> str:
    return f"{value:,}"


def _lines(data: bytes, where: str, limit: int, what: str) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, bytes) of every non-empty line; refuse a line over ``limit`` bytes."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.removesuffix(b"\r")
        if len(line) > limit:
            raise QualityRefused(
                f"{where}:{number}: {what} of {_n(len(line))} bytes; the limit is {_n(limit)}"
            )
        if line.strip():
            yield number, line


def _text(line: bytes, where: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QualityRefused(f"{where}: invalid UTF-8 at byte {exc.start}") from None


# --- inputs -----------------------------------------------------------------------------------


def parse_pairs(data: bytes, where: str) -> tuple[Pair, ...]:
    """Parse a pairs file: one ``{"name": ..., "turns": [{"user", "a", "b"}, ...]}`` per line.

    Raises:
        QualityRefused: no pair, more than 256, a line over 65,536 bytes, a line without a name
            and 1 to 16 turns each with exactly the keys user, a and b, or a turn (the user line
            with either reply) over one block of 8,192 bytes.
    """
    pairs: list[Pair] = []
    for number, line in _lines(data, where, MAX_PAIR_LINE, "a pairs line"):
        at = f"{where}:{number}"
        if len(pairs) == MAX_PAIRS:
            raise QualityRefused(f"{at}: more than {MAX_PAIRS} pairs; the limit is {MAX_PAIRS}")
        try:
            value = loads_strict(line, at)
        except DocumentError as exc:
            raise QualityRefused(str(exc)) from None
        pairs.append(_pair(value, len(pairs) + 1, at))
    if not pairs:
        raise QualityRefused(f"{where}: holds no pair")
    return tuple(pairs)


def _pair(value: object, number: int, at: str) -> Pair:
    shape = "a pair line needs a name and 1 to 16 turns, each with the keys user, a and b"
    if not isinstance(value, dict) or set(value) != {"name", "turns"}:
        raise QualityRefused(f"{at}: {shape}")
    name, turns = value["name"], value["turns"]
    if not isinstance(name, str) or not name or re.search(r"[\t\r\n]", name):
        raise QualityRefused(f"{at}: name: {shape} (a name is not empty, and has no tab)")
    if not isinstance(turns, list) or not 1 <= len(turns) <= MAX_TURNS:
        raise QualityRefused(f"{at}: turns: {shape}")
    parsed: list[Turn] = []
    for index, turn in enumerate(turns, start=1):
        if (
            not isinstance(turn, dict)
            or set(turn) != {"user", "a", "b"}
            or not all(isinstance(v, str) for v in turn.values())
        ):
            raise QualityRefused(f"{at}: turn {index}: {shape}")
        user = len(turn["user"].encode())
        for side in ("a", "b"):
            size = user + len(turn[side].encode())
            if size > BLOCK_BYTES:
                raise QualityRefused(
                    f"{at}: turn {index}: the user line and reply {side} are {_n(size)} bytes; "
                    f"a turn must fit one block of {_n(BLOCK_BYTES)} bytes"
                )
        parsed.append(Turn(turn["user"], turn["a"], turn["b"]))
    return Pair(number, name, tuple(parsed))


def parse_rubric(data: bytes, where: str) -> tuple[RubricItem, ...]:
    """Parse a rubric: one ``<item id> TAB <question>`` per line.

    Raises:
        QualityRefused: no item, more than 16, an identity that is not letters, digits,
            underscore and dash under 32 bytes, a question of 512 bytes or more, a line without
            a tab or with a second one, or an identity given twice.
    """
    items: list[RubricItem] = []
    for number, line in _lines(data, where, MAX_ID_BYTES + MAX_QUESTION_BYTES, "a rubric line"):
        at = f"{where}:{number}"
        fields = _text(line, at).split("\t")
        if len(fields) != 2:
            problem = "no tab" if len(fields) < 2 else "a second tab"
            raise QualityRefused(
                f"{at}: an item line is <id> TAB <question>; this one has {problem}"
            )
        item, question = fields
        if not _ITEM_ID.fullmatch(item) or len(item) >= MAX_ID_BYTES:
            raise QualityRefused(
                f"{at}: item identity {item[:40]!r}: letters, digits, underscore and dash, "
                f"under {MAX_ID_BYTES} bytes"
            )
        size = len(question.encode())
        if not question or size >= MAX_QUESTION_BYTES:
            raise QualityRefused(
                f"{at}: item {item}: the question is {_n(size)} bytes; it must be 1 to "
                f"{MAX_QUESTION_BYTES - 1} bytes"
            )
        if any(existing.id == item for existing in items):
            raise QualityRefused(f"{at}: item {item} is given twice")
        if len(items) == MAX_ITEMS:
            raise QualityRefused(f"{at}: more than {MAX_ITEMS} items; the limit is {MAX_ITEMS}")
        items.append(RubricItem(item, question))
    if not items:
        raise QualityRefused(f"{where}: holds no item")
    return tuple(items)


def parse_tasks(data: bytes, where: str) -> tuple[TaskItem, ...]:
    """Parse a task file: ``id TAB question TAB A TAB B TAB C TAB D TAB answer`` per line.

    Raises:
        QualityRefused: no item, more than 256, a line over 8,192 bytes, a line without seven
            fields or with an empty one, an identity of 32 bytes or more, an answer that is not
            one letter of A to D, or an identity given twice.
    """
    items: list[TaskItem] = []
    seen: set[str] = set()
    for number, line in _lines(data, where, MAX_TASK_LINE, "a task line"):
        at = f"{where}:{number}"
        fields = _text(line, at).split("\t")
        if len(fields) != TASK_FIELDS or not all(fields):
            raise QualityRefused(
                f"{at}: a task line holds {TASK_FIELDS} non-empty fields (id, question, four "
                f"choices, answer); this one holds {len(fields)}"
                + ("" if len(fields) != TASK_FIELDS else " with an empty one")
            )
        item, question, a, b, c, d, answer = fields
        if len(item.encode()) >= MAX_ID_BYTES:
            raise QualityRefused(f"{at}: identity {item[:40]!r} is {MAX_ID_BYTES} bytes or more")
        if answer not in LETTERS:
            raise QualityRefused(f"{at}: answer {answer[:8]!r} is not one letter of A to D")
        if item in seen:
            raise QualityRefused(f"{at}: item {item} is given twice")
        if len(items) == MAX_TASKS:
            raise QualityRefused(f"{at}: more than {MAX_TASKS} items; the limit is {MAX_TASKS}")
        seen.add(item)
        items.append(TaskItem(item, question, (a, b, c, d), answer))
    if not items:
        raise QualityRefused(f"{where}: holds no item")
    return tuple(items)


def parse_doses(text: str, where: str = "--doses") -> tuple[float, ...]:
    """Parse a dose list such as ``0,0.25,0.5``.

    Raises:
        QualityRefused: an empty list, more than eight values, a value that is not a figure or is
            under zero, or a dose given twice.
    """
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if not parts:
        raise QualityRefused(f"{where}: the dose list is empty")
    if len(parts) > MAX_DOSES:
        raise QualityRefused(f"{where}: {len(parts)} doses; the limit is {MAX_DOSES} values")
    doses: list[float] = []
    for part in parts:
        if not _FIGURE.fullmatch(part):
            raise QualityRefused(f"{where}: dose {part[:20]!r} is not a figure")
        dose = float(part)
        if dose < 0:
            raise QualityRefused(f"{where}: dose {part} is under zero")
        if dose in doses:
            raise QualityRefused(f"{where}: dose {part} is given twice")
        doses.append(dose + 0.0)  # -0 is 0
    return tuple(doses)


def parse_pair_logits(data: bytes, where: str) -> tuple[QualityPairLogit, ...]:
    """Parse recorded pair-mode logits, one JSON object per line (``quality-pair-logit``)."""
    return tuple(
        _record(QualityPairLogit, line, f"{where}:{number}")
        for number, line in _lines(data, where, 4096, "a logits line")
    )


def parse_task_logits(data: bytes, where: str) -> tuple[QualityTaskLogit, ...]:
    """Parse recorded task-mode logits, one JSON object per line (``quality-task-logit``)."""
    return tuple(
        _record(QualityTaskLogit, line, f"{where}:{number}")
        for number, line in _lines(data, where, 4096, "a logits line")
    )


def _record(model: type[_M], line: bytes, at: str) -> _M:
    return validate_document(kind_of(model), loads_strict(line, at), at)


_STREAM_FIELDS = ("coherence_prompt", "repetition")


def parse_quality_stream(data: bytes, where: str) -> tuple[Fraction, Fraction]:
    """The mean ``coherence_prompt`` and mean ``repetition`` of a ``quality.jsonl``, exactly.

    Only those two fields are read; the stream's other fields are the runtime's. Each value is
    the decimal its line recorded (:func:`recorded`) and the means are exact rationals, so the
    protocol's 0.02 conditions are judged on the decimals, not on binary sums.

    Raises:
        QualityRefused: no line, or a line without both as numbers.
    """
    coherence: list[Fraction] = []
    repetition: list[Fraction] = []
    for number, line in _lines(data, where, 1 << 20, "a quality line"):
        at = f"{where}:{number}"
        try:
            value = loads_strict(line, at)
        except DocumentError as exc:
            raise QualityRefused(str(exc)) from None
        pair = [value.get(k) for k in _STREAM_FIELDS] if isinstance(value, dict) else []
        numbers = [f for f in pair if isinstance(f, int | float) and not isinstance(f, bool)]
        if len(numbers) != len(_STREAM_FIELDS):
            raise QualityRefused(
                f"{at}: a quality line needs numbers coherence_prompt and repetition"
            )
        coherence.append(recorded(numbers[0]))
        repetition.append(recorded(numbers[1]))
    if not coherence:
        raise QualityRefused(f"{where}: holds no quality line")
    return _mean(coherence), _mean(repetition)


def _mean(values: Sequence[Fraction]) -> Fraction:
    return sum(values, Fraction(0)) / len(values)


# --- the pair mode ----------------------------------------------------------------------------


def outcome(delta: Fraction | float) -> Outcome:
    """Side b's result from ``delta`` = b - a: win above the margin, loss under minus it.

    The comparison is exact on the number given; the replay passes the exact difference of the
    recorded decimals, so a delta of exactly 0.5 nats is a tie even where floats make it
    0.5000000000000001.
    """
    if delta > _MARGIN:
        return "win"
    if delta < -_MARGIN:
        return "loss"
    return "tie"


def wilson(wins: int, ties: int, n: int) -> tuple[float, float]:
    """Wilson bounds of the win rate (wins + ties / 2) / n at the nominal 90% quantile."""
    p = (2 * wins + ties) / (2 * n)
    z2 = Z * Z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # The interval holds p; the clamps keep rounding from saying otherwise at p = 0 or 1.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def _tally(results: Sequence[Outcome]) -> QualityWinTally:
    wins, losses = results.count("win"), results.count("loss")
    ties = len(results) - wins - losses
    low, high = wilson(wins, ties, len(results))
    return QualityWinTally(
        wins=wins,
        losses=losses,
        ties=ties,
        win_rate=(2 * wins + ties) / (2 * len(results)),
        wilson_low=low,
        wilson_high=high,
    )


def _index_pair_logits(
    pairs: Sequence[Pair],
    rubric: Sequence[RubricItem],
    logits: Sequence[QualityPairLogit],
    where: str,
) -> dict[tuple[int, str, str], QualityPairLogit]:
    items = {item.id for item in rubric}
    found: dict[tuple[int, str, str], QualityPairLogit] = {}
    for record in logits:
        key = (record.pair, record.side, record.item)
        at = f"{where}: pair {record.pair} side {record.side} item {record.item}"
        if record.pair > len(pairs):
            raise QualityRefused(f"{at}: the pairs file holds {len(pairs)} pairs")
        if record.item not in items:
            raise QualityRefused(f"{at}: not an item of the rubric")
        if key in found:
            raise QualityRefused(f"{at}: recorded twice")
        if record.query_bytes > BLOCK_BYTES:
            raise QualityRefused(
                f"{at}: a query of {_n(record.query_bytes)} bytes does not fit "
                f"{_n(BLOCK_BYTES)} bytes"
            )
        found[key] = record
    for pair in pairs:
        for side in ("a", "b"):
            for item in rubric:
                if (pair.number, side, item.id) not in found:
                    raise CheckFailed(
                        f"{where}: pair {pair.number} side {side} item {item.id}: no recorded "
                        "logits; the measurement did not complete"
                    )
            cuts = {found[pair.number, side, item.id].cut for item in rubric}
            if len(cuts) > 1:
                raise QualityRefused(
                    f"{where}: pair {pair.number} side {side}: cut differs between items"
                )
    return found


def score_pairs(
    pairs: Sequence[Pair],
    rubric: Sequence[RubricItem],
    logits: Sequence[QualityPairLogit],
    where: str = "logits",
) -> tuple[tuple[QualityPairLine, ...], QualitySummaryLine]:
    """Replay the pair mode: every pair line and the summary line of ``pairs.jsonl``.

    Raises:
        QualityRefused: logits for a pair or item the inputs do not hold, recorded twice, a query
            over 8,192 bytes, or cut flags that differ within one side.
        CheckFailed: a query has no recorded logits (the measurement did not complete).
    """
    found = _index_pair_logits(pairs, rubric, logits, where)
    lines: list[QualityPairLine] = []
    per_item: dict[str, list[Outcome]] = {item.id: [] for item in rubric}
    for pair in pairs:
        # Exact over the recorded decimals: the margin is compared with the exact delta.
        odds = {
            side: [
                recorded(found[pair.number, side, item.id].logit_yes)
                - recorded(found[pair.number, side, item.id].logit_no)
                for item in rubric
            ]
            for side in ("a", "b")
        }
        a, b = _mean(odds["a"]), _mean(odds["b"])
        items: dict[str, QualityItemOutcome] = {}
        for index, item in enumerate(rubric):
            result = outcome(odds["b"][index] - odds["a"][index])
            per_item[item.id].append(result)
            items[item.id] = QualityItemOutcome(
                a=float(odds["a"][index]), b=float(odds["b"][index]), result=result
            )
        cut = any(found[pair.number, side, rubric[0].id].cut for side in ("a", "b"))
        lines.append(
            QualityPairLine(
                line="pair",
                pair=pair.number,
                name=pair.name,
                cut=int(cut),
                a=float(a),
                b=float(b),
                delta=float(b - a),
                result=outcome(b - a),
                items=items,
            )
        )
    summary = QualitySummaryLine(
        line="summary",
        pairs=len(lines),
        cut=sum(line.cut for line in lines),
        margin=MARGIN,
        margin_unit="nats",
        confidence=CONFIDENCE,
        overall=_tally([line.result for line in lines]),
        items={item: _tally(results) for item, results in per_item.items()},
    )
    return tuple(lines), summary


def _close(claimed: float, replayed: float) -> bool:
    return math.isclose(claimed, replayed, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def check_claimed_pairs(
    data: bytes,
    where: str,
    lines: Sequence[QualityPairLine],
    summary: QualitySummaryLine,
) -> QualityCheck:
    """Compare the run's ``pairs.jsonl`` with the replay (its pair lines, then its summary).

    Raises:
        DocumentError: a line that is not a pair line or a summary line (exit 2).
    """
    records = list(_lines(data, where, MAX_PAIR_LINE, "a pairs.jsonl line"))
    expected = [*lines, summary]
    if len(records) != len(expected):
        return QualityCheck(
            check="claimed_pairs",
            status="fail",
            message=f"{where}: {len(records)} lines; the replay has {len(lines)} pair lines and "
            "a summary line",
        )
    for (number, raw), replayed in zip(records, expected, strict=True):
        at = f"{where}:{number}"
        kind = "quality-summary-line" if replayed is summary else "quality-pair-line"
        claimed = validate_document(KINDS[kind], loads_strict(raw, at), at)
        for difference in differences(
            claimed.model_dump(mode="python"), replayed.model_dump(mode="python"), "$", TOLERANCE
        ):
            return QualityCheck(check="claimed_pairs", status="fail", message=f"{at}: {difference}")
    return QualityCheck(
        check="claimed_pairs",
        status="pass",
        message=f"{where}: {len(lines)} pair lines and the summary agree with the replay",
    )


# --- blind transcripts ------------------------------------------------------------------------


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def _blind_section(pair: Pair, x_side: str) -> str:
    y_side = "b" if x_side == "a" else "a"
    parts = [f"## Pair {pair.number}: {pair.name}\n"]
    for index, turn in enumerate(pair.turns, start=1):
        x = turn.a if x_side == "a" else turn.b
        y = turn.a if y_side == "a" else turn.b
        parts.append(
            f"### Turn {index}\n\nUser:\n\n{_quoted(turn.user)}\n\nX:\n\n{_quoted(x)}\n\n"
            f"Y:\n\n{_quoted(y)}\n"
        )
    return "\n".join(parts)


def blind_transcripts(pairs: Sequence[Pair], x_sides: Sequence[str]) -> bytes:
    """The blind transcript file for these pairs with side ``x_sides[i]`` shown as X."""
    sections = [_blind_section(p, x) for p, x in zip(pairs, x_sides, strict=True)]
    return ("# Blind transcripts\n\n" + "\n".join(sections)).encode()


def blind_key(pairs: Sequence[Pair], x_sides: Sequence[str]) -> bytes:
    """The key file: pair number, name, the side of X and the side of Y, one pair per line."""
    return "".join(
        f"{p.number}\t{p.name}\t{x}\t{'b' if x == 'a' else 'a'}\n"
        for p, x in zip(pairs, x_sides, strict=True)
    ).encode()


def check_blind(
    pairs: Sequence[Pair], transcripts: bytes, key: bytes, where: tuple[str, str]
) -> QualityCheck:
    """Check the blind transcripts and their key against each other and the pairs file."""
    transcripts_at, key_at = where

    def fail(message: str) -> QualityCheck:
        return QualityCheck(check="blind_files", status="fail", message=message)

    rows = [line.split(b"\t") for _, line in _lines(key, key_at, 4096, "a key line")]
    if len(rows) != len(pairs):
        return fail(f"{key_at}: {len(rows)} lines for {len(pairs)} pairs")
    x_sides: list[str] = []
    for pair, row in zip(pairs, rows, strict=True):
        expected = blind_key([pair], ["a"]).rstrip(b"\n").split(b"\t")[:2]
        if len(row) != 4 or row[:2] != expected or {row[2], row[3]} != {b"a", b"b"}:
            return fail(
                f"{key_at}:{pair.number}: expected '{pair.number} TAB {pair.name} TAB <a|b> "
                "TAB <b|a>'"
            )
        x_sides.append(row[2].decode())
    expected_bytes = blind_transcripts(pairs, x_sides)
    if transcripts != expected_bytes:
        got = transcripts.split(b"\n## Pair ")
        want = expected_bytes.split(b"\n## Pair ")
        first = next(
            (i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w),
            min(len(got), len(want)),
        )
        shown = "the heading" if first == 0 else f"pair {first}"
        return fail(
            f"{transcripts_at}: {shown} does not show the pairs file's turns in the key's order"
        )
    shown_b = x_sides.count("b")
    return QualityCheck(
        check="blind_files",
        status="pass",
        message=f"{transcripts_at} and {key_at} agree for {len(pairs)} pairs "
        f"(X is side b in {shown_b})",
    )


# --- the task mode ----------------------------------------------------------------------------


def _largest(logits: Sequence[float]) -> int:
    best = 0
    for index in range(1, len(logits)):
        if logits[index] > logits[best]:
            best = index
    return best


def score_tasks(
    tasks: Sequence[TaskItem],
    doses: Sequence[float],
    axis: str,
    logits: Sequence[QualityTaskLogit],
    where: str = "logits",
) -> tuple[QualityDose, ...]:
    """Replay the task mode: per dose its capability line, items and lost answers.

    Raises:
        QualityRefused: logits for a dose or item the inputs do not hold, recorded twice, or a
            query over 8,448 bytes.
        CheckFailed: a query has no recorded logits (the measurement did not complete).
    """
    known = {task.id for task in tasks}
    found: dict[tuple[float, str], QualityTaskLogit] = {}
    for record in logits:
        at = f"{where}: dose {record.dose} item {record.item}"
        dose = float(record.dose)
        if dose not in doses:
            raise QualityRefused(f"{at}: not a dose of the dose list")
        if record.item not in known:
            raise QualityRefused(f"{at}: not an item of the task file")
        if (dose, record.item) in found:
            raise QualityRefused(f"{at}: recorded twice")
        if record.query_bytes > MAX_TASK_QUERY:
            raise QualityRefused(
                f"{at}: a query of {_n(record.query_bytes)} bytes does not fit "
                f"{_n(MAX_TASK_QUERY)} bytes"
            )
        found[dose, record.item] = record
    results: dict[float, list[QualityTaskItem]] = {}
    for dose in doses:
        items = results[dose] = []
        for task in tasks:
            recorded = found.get((dose, task.id))
            if recorded is None:
                raise CheckFailed(
                    f"{where}: dose {dose:g} item {task.id}: no recorded logits; the measurement "
                    "did not complete"
                )
            values = [float(v) for v in recorded.logits]
            best = _largest(values)
            letter = LETTERS[best]
            items.append(
                QualityTaskItem(
                    item=task.id,
                    answer=task.answer,
                    largest=letter,
                    result=int(letter == task.answer),
                    logit=values[best],
                )
            )
    plain = {i.item for i in results[0.0] if i.result} if 0.0 in results else None
    replayed: list[QualityDose] = []
    for dose, items in results.items():
        correct = {item.item for item in items if item.result}
        lost = () if plain is None else tuple(t.id for t in tasks if t.id in plain - correct)
        replayed.append(
            QualityDose(
                capability=CapabilityLine(
                    axis=axis, dose=dose, score=len(correct) / len(tasks), items=len(tasks)
                ),
                correct=len(correct),
                lost=lost,
                items=tuple(items),
            )
        )
    return tuple(replayed)


def check_claimed_capability(
    data: bytes, where: str, replayed: Sequence[QualityDose]
) -> QualityCheck:
    """Compare the last lines of the run's ``capability.jsonl`` with the replay, in dose order.

    The file keeps the lines of every run, so only its last ``len(doses)`` lines are this run's.
    """
    records = list(_lines(data, where, 4096, "a capability line"))
    if len(records) < len(replayed):
        return QualityCheck(
            check="claimed_capability",
            status="fail",
            message=f"{where}: {len(records)} lines; this run wrote {len(replayed)}",
        )
    for (number, raw), dose in zip(records[-len(replayed) :], replayed, strict=True):
        at = f"{where}:{number}"
        claimed = validate_document(kind_of(CapabilityLine), loads_strict(raw, at), at)
        expected = dose.capability
        if (
            claimed.axis != expected.axis
            or float(claimed.dose) != float(expected.dose)
            or claimed.items != expected.items
            or not _close(claimed.score, expected.score)
        ):
            return QualityCheck(
                check="claimed_capability",
                status="fail",
                message=f"{at}: claimed {claimed.axis} dose {claimed.dose:g} score "
                f"{claimed.score!r} over {claimed.items} items; replayed {expected.axis} dose "
                f"{expected.dose:g} score {expected.score!r} over {expected.items} items",
            )
    return QualityCheck(
        check="claimed_capability",
        status="pass",
        message=f"{where}: the last {len(replayed)} lines agree with the replay",
    )


# --- whole measurements -----------------------------------------------------------------------


def replay_pairs(
    files: Mapping[str, tuple[bytes, str] | None],
) -> QualityPairsScore:
    """The pair mode from its files: ``pairs``, ``rubric``, ``logits`` and the optional
    ``claimed``, ``blind_transcripts`` and ``blind_key``, each as (bytes, where) or None."""

    def need(name: str) -> tuple[bytes, str]:
        value = files.get(name)
        if value is None:
            raise QualityRefused(f"the pair mode needs its {name} file")
        return value

    pairs = parse_pairs(*need("pairs"))
    rubric = parse_rubric(*need("rubric"))
    data, where = need("logits")
    lines, summary = score_pairs(pairs, rubric, parse_pair_logits(data, where), where)
    checks: list[QualityCheck] = []
    claimed = files.get("claimed")
    if claimed is None:
        checks.append(_not_recorded("claimed_pairs", "no pairs.jsonl of the run was given"))
    else:
        checks.append(check_claimed_pairs(claimed[0], claimed[1], lines, summary))
    transcripts, key = files.get("blind_transcripts"), files.get("blind_key")
    if transcripts is None and key is None:
        checks.append(_not_recorded("blind_files", "the run wrote no blind transcripts"))
    elif transcripts is None or key is None:
        raise QualityRefused("give both the blind transcripts and the blind key, or neither")
    else:
        checks.append(check_blind(pairs, transcripts[0], key[0], (transcripts[1], key[1])))
    return QualityPairsScore(
        schema_version=1,
        scorer="quality-pairs",
        scorer_version=QUALITY_VERSION,
        pair_lines=lines,
        summary=summary,
        checks=tuple(checks),
    )


def replay_tasks(
    tasks_file: tuple[bytes, str],
    logits_file: tuple[bytes, str],
    axis: str,
    doses_text: str,
    claimed: tuple[bytes, str] | None,
) -> QualityTasksScore:
    """The task mode from its files and arguments."""
    tasks = parse_tasks(*tasks_file)
    doses = parse_doses(doses_text)
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", axis):
        raise QualityRefused(f"--axis {axis[:70]!r}: letters, digits, underscore and dash")
    replayed = score_tasks(tasks, doses, axis, parse_task_logits(*logits_file), logits_file[1])
    check = (
        _not_recorded("claimed_capability", "no capability.jsonl of the run was given")
        if claimed is None
        else check_claimed_capability(claimed[0], claimed[1], replayed)
    )
    return QualityTasksScore(
        schema_version=1,
        scorer="quality-tasks",
        scorer_version=QUALITY_VERSION,
        axis=axis,
        doses=replayed,
        checks=(check,),
    )


def _not_recorded(check: str, message: str) -> QualityCheck:
    return QualityCheck(check=check, status="not_recorded", message=message)


def load_measurement(data: bytes, where: str) -> QualityMeasurement:
    """Parse a measurement file (``quality-measurement``)."""
    return _record(QualityMeasurement, data, where)


def judge_protocol(
    pairs: QualityPairsScore,
    tasks: QualityTasksScore,
    working_dose: float,
    streams: tuple[
        tuple[Fraction | float, Fraction | float], tuple[Fraction | float, Fraction | float]
    ],
    blind_read: tuple[bytes, str] | None,
) -> QualityProtocolReport:
    """Judge the paired-substrate protocol's conditions, each on its own, and the verdict.

    Every condition is exact: the win rate and the task scores from their counts, the means as
    the decimals they stand for (a float is read by :func:`recorded`; the exact means of
    :func:`parse_quality_stream` are used as they are), each against its decimal threshold.

    Args:
        pairs: the replayed pair mode (side a: substrate off; side b: on).
        tasks: the replayed task mode; it must hold dose 0 and the working dose.
        working_dose: the dose the substrate runs at.
        streams: (mean coherence_prompt, mean repetition) of the off run and of the on run.
        blind_read: the recorded read of the blind transcripts, if any.

    Raises:
        QualityRefused: the task mode lacks dose 0 or the working dose.
    """
    by_dose = {float(d.capability.dose): d for d in tasks.doses}
    for needed, label in ((0.0, "dose 0"), (float(working_dose), "the working dose")):
        if needed not in by_dose:
            raise QualityRefused(f"the task mode's doses do not include {label} ({needed:g})")
    summary = pairs.summary
    overall = summary.overall
    (coherence_off, repetition_off), (coherence_on, repetition_on) = (
        (recorded(coherence), recorded(repetition)) for coherence, repetition in streams
    )
    plain, working = by_dose[0.0], by_dose[float(working_dose)]
    task_delta = Fraction(working.correct, working.capability.items) - Fraction(
        plain.correct, plain.capability.items
    )
    win_rate = Fraction(2 * overall.wins + overall.ties, 2 * summary.pairs)
    # The Wilson low end is irrational; it is compared as the double the replay computed.
    win = (
        win_rate > Fraction(1, 2)
        and overall.wilson_low > 0.5
        and summary.pairs >= MIN_PROTOCOL_PAIRS
    )
    read = _blind_read(blind_read, summary.pairs)
    conditions = (
        QualityCondition(
            id="win_rate",
            met=win,
            rule="win rate above 0.5 with the low end of the Wilson interval above 0.5, at "
            f"{MIN_PROTOCOL_PAIRS} pairs or more",
            observed=f"win rate {overall.win_rate:.6f}, Wilson low {overall.wilson_low:.6f}, "
            f"{summary.pairs} pairs",
        ),
        QualityCondition(
            id="coherence",
            met=coherence_off - coherence_on <= _COHERENCE_SLACK,
            rule="mean coherence_prompt with the substrate on not under the other run by more "
            "than 0.02",
            observed=f"on {_shown(coherence_on)}, off {_shown(coherence_off)}, "
            f"on - off {_shown(coherence_on - coherence_off)}",
        ),
        QualityCondition(
            id="repetition",
            met=repetition_on - repetition_off <= _REPETITION_SLACK,
            rule="mean repetition with the substrate on not above the other run by more than 0.02",
            observed=f"on {_shown(repetition_on)}, off {_shown(repetition_off)}, "
            f"on - off {_shown(repetition_on - repetition_off)}",
        ),
        QualityCondition(
            id="task_cost",
            met=abs(task_delta) <= _TASK_SLACK,
            rule="task set score at the working dose within 0.05 of the score at dose 0",
            observed=f"dose {float(working_dose):g}: {working.capability.score:.6f}; dose 0: "
            f"{plain.capability.score:.6f}",
        ),
        QualityCondition(
            id="blind_read",
            met=read is not None,
            rule="the read of the blind transcripts recorded, whatever it shows",
            observed=read or "not recorded",
        ),
    )
    met = {c.id: c.met for c in conditions}
    verdict: Verdict
    if win_rate <= Fraction(1, 2) or not met["win_rate"]:
        verdict = "no measured gain"
    elif not (met["coherence"] and met["repetition"] and met["task_cost"]):
        verdict = "a style gain at a cost"
    elif not met["blind_read"]:
        verdict = "incomplete"
    else:
        verdict = "a gain"
    return QualityProtocolReport(
        schema_version=1,
        scorer="quality-protocol",
        scorer_version=QUALITY_VERSION,
        verdict=verdict,
        conditions=conditions,
        summary=summary,
        capability=tuple(d.capability for d in tasks.doses),
        means={
            "coherence_off": float(coherence_off),
            "coherence_on": float(coherence_on),
            "repetition_off": float(repetition_off),
            "repetition_on": float(repetition_on),
        },
        checks=pairs.checks + tasks.checks,
    )


def _shown(value: Fraction) -> str:
    """An exact decimal as written when it has at most 12 places, else its nearest double."""
    text = _decimal(value)
    return text if text is not None else f"{float(value)!r} (rounded)"


def _decimal(value: Fraction, places: int = 12) -> str | None:
    scaled = value * 10**places
    if scaled.denominator != 1:
        return None
    sign, digits = ("-" if scaled < 0 else ""), str(abs(scaled.numerator)).rjust(places + 1, "0")
    whole, fraction = digits[:-places], digits[-places:].rstrip("0")
    return f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}"


def _blind_read(record: tuple[bytes, str] | None, pairs: int) -> str | None:
    """What a recorded blind read shows, or None when there is none.

    A read is one ``<pair number> TAB <X | Y | tie>`` line per pair; any note after a further
    tab is kept by the reader, not here.
    """
    if record is None:
        return None
    data, where = record
    marks: dict[int, str] = {}
    for number, line in _lines(data, where, 4096, "a blind read line"):
        fields = _text(line, f"{where}:{number}").split("\t")
        if (
            len(fields) < 2
            or not fields[0].isdigit()
            or not 1 <= int(fields[0]) <= pairs
            or fields[1] not in ("X", "Y", "tie")
            or int(fields[0]) in marks
        ):
            raise QualityRefused(
                f"{where}:{number}: a blind read line is <pair 1..{pairs}> TAB <X|Y|tie>, "
                "one per pair"
            )
        marks[int(fields[0])] = fields[1]
    if len(marks) != pairs:
        raise QualityRefused(f"{where}: marks {len(marks)} of {pairs} pairs")
    counts = {mark: list(marks.values()).count(mark) for mark in ("X", "Y", "tie")}
    return f"{where}: X {counts['X']}, Y {counts['Y']}, tie {counts['tie']} over {pairs} pairs"
