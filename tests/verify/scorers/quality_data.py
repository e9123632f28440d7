"""Recorded quality measurements for tests: the files a score tool run leaves, built small."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from bundle_schema import canonical_bytes
from verify.scorers import quality

# The worked example of docs/scorers.md: three pairs, two rubric items.
EXAMPLE_RUBRIC = (("clear", "Is the reply clear?"), ("kind", "Is the reply kind?"))
EXAMPLE_PAIR_LOGITS = {
    # (pair, side, item): (logit_yes, logit_no)
    (1, "a", "clear"): (2.0, 1.0), (1, "a", "kind"): (0.5, 0.5),
    (1, "b", "clear"): (3.0, 0.5), (1, "b", "kind"): (1.0, 0.0),
    (2, "a", "clear"): (1.0, 0.0), (2, "a", "kind"): (0.0, 1.0),
    (2, "b", "clear"): (0.25, 0.0), (2, "b", "kind"): (0.0, 0.5),
    (3, "a", "clear"): (2.0, 0.0), (3, "a", "kind"): (2.0, 0.0),
    (3, "b", "clear"): (0.0, 0.0), (3, "b", "kind"): (1.0, 0.0),
}  # fmt: skip
EXAMPLE_TASKS = (
    ("q1", "Which is a fruit?", "apple", "brick", "cloud", "door", "A"),
    ("q2", "Which is a colour?", "stone", "table", "green", "rain", "C"),
    ("q3", "Which is a number?", "cat", "tree", "lamp", "seven", "D"),
)
EXAMPLE_TASK_LOGITS = {
    (0.0, "q1"): (2.0, 1.0, 0.0, 0.0),
    (0.0, "q2"): (0.0, 1.0, 1.0, 0.5),  # B and C tie: the earlier letter, B, is kept
    (0.0, "q3"): (0.0, 0.0, 0.0, 3.0),
    (0.5, "q1"): (1.0, 2.0, 0.0, 0.0),  # lost: correct at dose 0
    (0.5, "q2"): (0.0, 0.0, 2.0, 0.0),
    (0.5, "q3"): (0.0, 0.0, 0.0, 1.0),
}


def conversation(name: str, turns: int = 1) -> dict[str, object]:
    return {
        "name": name,
        "turns": [
            {"user": f"{name}: question {t}", "a": f"reply a {t}\nsecond line", "b": f"reply b {t}"}
            for t in range(1, turns + 1)
        ],
    }


def jsonl(values: Sequence[object]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in values)


@dataclass
class PairsRun:
    """The pair mode's recorded files, before they are written."""

    conversations: list[dict[str, object]]
    rubric: Sequence[tuple[str, str]]
    logits: Mapping[tuple[int, str, str], tuple[float, float]]
    cut: Mapping[tuple[int, str], bool] = field(default_factory=dict)
    x_sides: Sequence[str] | None = None

    def logit_lines(self) -> bytes:
        return jsonl(
            [
                {"pair": p, "side": s, "item": i, "logit_yes": yes, "logit_no": no,
                 "query_bytes": 900, "cut": self.cut.get((p, s), False)}
                for (p, s, i), (yes, no) in self.logits.items()
            ]
        )  # fmt: skip

    def write(
        self, directory: Path, *, claimed: bool = True, blind: bool = True
    ) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "pairs": directory / "pairs.jsonl",
            "rubric": directory / "rubric.tsv",
            "logits": directory / "logits.jsonl",
        }
        files["pairs"].write_bytes(jsonl(self.conversations))
        files["rubric"].write_text("".join(f"{i}\t{q}\n" for i, q in self.rubric))
        files["logits"].write_bytes(self.logit_lines())
        pairs = quality.parse_pairs(files["pairs"].read_bytes(), "pairs")
        if claimed:
            rubric = quality.parse_rubric(files["rubric"].read_bytes(), "rubric")
            logits = quality.parse_pair_logits(self.logit_lines(), "logits")
            lines, summary = quality.score_pairs(pairs, rubric, logits)
            files["claimed"] = directory / "score" / "pairs.jsonl"
            files["claimed"].parent.mkdir(exist_ok=True)
            files["claimed"].write_bytes(
                b"".join(canonical_bytes(x.model_dump(mode="json")) + b"\n"
                         for x in (*lines, summary))
            )  # fmt: skip
        if blind:
            x_sides = self.x_sides or ["ab"[p.number % 2] for p in pairs]
            files["blind_transcripts"] = directory / "score" / "pairs-blind.md"
            files["blind_key"] = directory / "score" / "pairs-key.tsv"
            files["blind_transcripts"].parent.mkdir(exist_ok=True)
            files["blind_transcripts"].write_bytes(quality.blind_transcripts(pairs, x_sides))
            files["blind_key"].write_bytes(quality.blind_key(pairs, x_sides))
        return files


def example_pairs() -> PairsRun:
    return PairsRun(
        [conversation(f"pair-{n}") for n in (1, 2, 3)], EXAMPLE_RUBRIC, dict(EXAMPLE_PAIR_LOGITS)
    )


def winning_pairs(n: int, wins: int, ties: int = 0) -> PairsRun:
    """``n`` pairs on one item: side b wins ``wins``, ties ``ties``, loses the rest."""
    logits: dict[tuple[int, str, str], tuple[float, float]] = {}
    for p in range(1, n + 1):
        b = 2.0 if p <= wins else (0.25 if p <= wins + ties else -2.0)
        logits[p, "a", "good"] = (0.0, 0.0)
        logits[p, "b", "good"] = (b, 0.0)
    return PairsRun(
        [conversation(f"c{p}") for p in range(1, n + 1)], (("good", "Is it good?"),), logits
    )


@dataclass
class TasksRun:
    tasks: Sequence[Sequence[str]]
    logits: Mapping[tuple[float, str], Sequence[float]]
    doses: str = "0,0.5"
    axis: str = "valence"

    def task_lines(self) -> bytes:
        return "".join("\t".join(t) + "\n" for t in self.tasks).encode()

    def logit_lines(self) -> bytes:
        return jsonl(
            [{"dose": d, "item": i, "logits": list(v), "query_bytes": 300}
             for (d, i), v in self.logits.items()]
        )  # fmt: skip

    def write(self, directory: Path, *, claimed: bool = True) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        files = {"tasks": directory / "tasks.tsv", "logits": directory / "task-logits.jsonl"}
        files["tasks"].write_bytes(self.task_lines())
        files["logits"].write_bytes(self.logit_lines())
        if claimed:
            result = quality.replay_tasks(
                (files["tasks"].read_bytes(), "tasks"),
                (files["logits"].read_bytes(), "logits"),
                self.axis,
                self.doses,
                None,
            )
            files["claimed"] = directory / "capability.jsonl"
            files["claimed"].write_bytes(
                # an earlier run's line first: the file keeps the lines of every run
                b'{"axis":"valence","dose":0,"score":0.1,"items":3}\n'
                + b"".join(
                    canonical_bytes(d.capability.model_dump(mode="json")) + b"\n"
                    for d in result.doses
                )
            )
        return files


def example_tasks() -> TasksRun:
    return TasksRun(EXAMPLE_TASKS, dict(EXAMPLE_TASK_LOGITS))


def graded_tasks(n: int, plain: int, working: int) -> TasksRun:
    """``n`` tasks: ``plain`` answered right at dose 0, ``working`` right at dose 0.25."""
    tasks = [(f"t{i}", "Pick A.", "a", "b", "c", "d", "A") for i in range(n)]
    right, wrong = (1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0)
    logits = {(0.0, f"t{i}"): right if i < plain else wrong for i in range(n)}
    logits |= {(0.25, f"t{i}"): right if i < working else wrong for i in range(n)}
    return TasksRun(tasks, logits, doses="0,0.25")


def pairs_score(run: PairsRun) -> quality.QualityPairsScore:
    """The replayed pair mode of a run, from its files' bytes (nothing written)."""
    rubric = "".join(f"{i}\t{q}\n" for i, q in run.rubric).encode()
    return quality.replay_pairs(
        {
            "pairs": (jsonl(run.conversations), "pairs"),
            "rubric": (rubric, "rubric"),
            "logits": (run.logit_lines(), "logits"),
        }
    )


def tasks_score(run: TasksRun) -> quality.QualityTasksScore:
    """The replayed task mode of a run, from its files' bytes (nothing written)."""
    return quality.replay_tasks(
        (run.task_lines(), "tasks"), (run.logit_lines(), "logits"), run.axis, run.doses, None
    )


Figure = float | str
"""A recorded number: a float is written as JSON writes it (its repr), a str as it stands."""


def quality_stream(values: Sequence[tuple[Figure, Figure]]) -> bytes:
    """A ``quality.jsonl`` with one line per (coherence_prompt, repetition), numbers written as
    given, so a test controls the exact decimal text a run recorded."""
    return b"".join(
        f'{{"turn":{t},"coherence_prompt":{_text(c)},"repetition":{_text(r)},"refusal":0}}\n'
        .encode()
        for t, (c, r) in enumerate(values, start=1)
    )  # fmt: skip


def _text(value: Figure) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _spread(mean: Figure, by: str) -> str:
    """``mean`` + ``by`` as an exact decimal text."""
    return str(Decimal(_text(mean)) + Decimal(by))


def _around(coherence: Figure, repetition: Figure) -> list[tuple[Figure, Figure]]:
    """Two lines whose means are exactly ``coherence`` and ``repetition``."""
    return [
        (_spread(coherence, "0.05"), _spread(repetition, "-0.05")),
        (_spread(coherence, "-0.05"), _spread(repetition, "0.05")),
    ]


def write_measurement(
    root: Path,
    pairs: PairsRun,
    tasks: TasksRun,
    *,
    working_dose: float = 0.25,
    off: tuple[Figure, Figure] = (0.8, 0.1),
    on: tuple[Figure, Figure] = (0.8, 0.1),
    streams: tuple[Sequence[tuple[Figure, Figure]], Sequence[tuple[Figure, Figure]]] | None = None,
    blind_read: bool = True,
) -> Path:
    """Write a whole paired-substrate measurement under ``root``; return its measurement file.

    Each run's ``quality.jsonl`` holds two lines 0.05 either side of the means ``off`` and ``on``
    (exact decimals, so the means recorded are exactly those), or the lines of ``streams``.
    """
    pair_files = pairs.write(root / "pairs")
    task_files = tasks.write(root / "tasks")
    if streams is None:
        streams = (_around(*off), _around(*on))
    for name, values in zip(("off", "on"), streams, strict=True):
        (root / name).mkdir()
        (root / name / "quality.jsonl").write_bytes(quality_stream(values))
    measurement: dict[str, object] = {
        "schema_version": 1,
        "pairs": {k: str(v.relative_to(root)) for k, v in pair_files.items()},
        "tasks": {
            **{k: str(v.relative_to(root)) for k, v in task_files.items()},
            "axis": tasks.axis,
            "doses": tasks.doses,
        },
        "working_dose": working_dose,
        "quality_off": "off/quality.jsonl",
        "quality_on": "on/quality.jsonl",
    }
    if blind_read:
        count = len(pairs.conversations)
        (root / "blind-read.tsv").write_text(
            "".join(f"{p}\t{'XY'[p % 2]}\n" for p in range(1, count + 1))
        )
        measurement["blind_read"] = "blind-read.tsv"
    path = root / "measurement.json"
    path.write_text(json.dumps(measurement))
    return path
