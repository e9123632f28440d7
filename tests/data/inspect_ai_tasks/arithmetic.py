"""A small exact-match task for Inspect AI, read from the JSON Lines file beside it (no hub).

Each sample's ``input`` is sent as one user message; ``match`` scores the reply correct when it
ends with the target (case-folded, whitespace and punctuation stripped), reported as
``accuracy`` (the mean of correct = 1, incorrect = 0) and its ``stderr``.
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def arithmetic() -> Task:
    here = Path(__file__).resolve().parent
    return Task(
        dataset=json_dataset(str(here / "arithmetic.jsonl")),
        solver=generate(),
        scorer=match(),
    )
