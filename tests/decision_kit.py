"""What the attacks on the decision layer share (tests/hostile/test_attacks_2026_12_05_h.py,
_i.py): the example runs built under the tests' deployment pin set (not demo only, so a
qualified run ranks), a record edited as JSON, and a copy forged from one: edited and resealed
with claims equal to its own replay, so that only the verifier's decisions can stop it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from audit.demo.examples import EXAMPLES_DIR, ExampleRun, build_example
from bundle_schema import canonical_bytes
from bundle_schema.models import ShowReport, Verdict
from pins import PinSetSource, parse_pin_set
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.gate_kit import resealed_as_replayed
from tests.paths import DATA
from verify import verify_bundle
from verify.forensics import show_report

__all__ = [
    "DEPLOYMENT_PINS",
    "FAILED_TASK",
    "HERMES_RAW_TASKS",
    "HERMES_TASKS",
    "QUALIFIED_EXAMPLE",
    "axes",
    "built_example",
    "built_examples",
    "deployment_pins",
    "disagreeing",
    "dropped",
    "edits",
    "forged",
    "json_edit",
    "report_of",
    "result_edit",
    "task_edit",
    "verdict_of",
]

DEPLOYMENT_PINS = DATA / "pins" / "gx10-deployment-v5.toml"
"""The demo's numbers and harnesses under a deployment's own id: not demo only."""
HERMES_TASKS, HERMES_RAW_TASKS = (
    "components/hermes/tasks.jsonl",
    "components/hermes/raw/tasks.jsonl",
)
FAILED_TASK = "add-retry-policy"
"""The Hermes task the evaluator failed in the NOT_QUALIFIED example."""


def deployment_pins() -> PinSetSource:
    return parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))


def built_example(name: str, root: Path, pins: PinSetSource, *, rankable: bool = False) -> Path:
    """The example run ``name`` recorded under ``pins`` at ``root / name`` (claiming rankable
    when asked)."""
    copy = root / "runs" / name
    shutil.copytree(EXAMPLES_DIR / "runs" / name, copy)
    if rankable:
        meta = copy / "run.toml"
        meta.write_text(meta.read_text("utf-8").replace("rankable = false", "rankable = true", 1))
    build_example(ExampleRun(name, copy), root / name, root / f"work-{name}", pins=pins)
    return root / name


QUALIFIED_EXAMPLE = "gx10-full-qualified"


def built_examples(root: Path, pins: PinSetSource, names: Iterable[str]) -> dict[str, Path]:
    """The example runs ``names`` recorded under ``pins`` at ``root``, the qualified one
    claiming rankable (the tests' deployment pin set ranks it)."""
    return {
        name: built_example(name, root, pins, rankable=name == QUALIFIED_EXAMPLE) for name in names
    }


def json_edit(files: Files, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    """The JSON record ``name`` changed in place by ``change``, written back canonical."""
    data, media = files[name]
    document = json.loads(data)
    change(document)
    files[name] = (canonical_bytes(document), media)


def forged(
    source: Path,
    target: Path,
    pins: PinSetSource,
    edit: Callable[[Files], None] = lambda _: None,
    fields: dict[str, Any] | None = None,
) -> Path:
    """``source`` edited by ``edit`` (its manifest's ``fields`` changed) and resealed at
    ``target`` with claims equal to its replay under ``pins`` (integrity holds)."""
    manifest, files = read_bundle(source)
    files = dict(files)
    edit(files)
    return resealed_as_replayed(target, manifest, files, pins, fields)


def axes(verdict: Verdict) -> tuple[str, str, str, bool]:
    """The verdict's outcome, validity, profile decision and rankability."""
    return (verdict.outcome, verdict.result_validity, verdict.profile_decision, verdict.rankable)


def verdict_of(bundle: Path, pins: PinSetSource) -> Verdict:
    """The verdict on a forged ``bundle``, whose claims (the forger's, honest-looking) match."""
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert verdict.claims.match, verdict.claims.differences
    return verdict


def report_of(bundle: Path, pins: PinSetSource) -> ShowReport:
    """What ``audit show`` presents of ``bundle``."""
    done = verify_bundle(bundle, pins=pins, keep_evidence=True)
    assert done.evidence is not None
    return show_report(done.verdict, done.evidence, done.manifest.model.evidence, done.pins)


def disagreeing(verdict: Verdict, entry: str) -> list[str]:
    """The messages of the verdict's ``record_disagrees`` findings at ``entry``."""
    return [
        f.message
        for f in verdict.integrity.findings
        if f.code == "record_disagrees" and f.entry == entry
    ]


def task_edit(**changes: Any) -> Callable[[Files], None]:
    """An edit that changes :data:`FAILED_TASK` alike in the harness's raw output (JSON Lines,
    as it writes them) and in the record."""

    def edit(files: Files) -> None:
        for name in (HERMES_RAW_TASKS, HERMES_TASKS):
            records = lines(files, name)
            for record in records:
                if record["task"] == FAILED_TASK:
                    record.update(changes)
            if name == HERMES_RAW_TASKS:
                data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
                files[name] = (data, files[name][1])
            else:
                put_lines(files, name, records)

    return edit


def edits(*each: Callable[[Files], None]) -> Callable[[Files], None]:
    """One edit made of ``each``, in order."""

    def edit(files: Files) -> None:
        for one in each:
            one(files)

    return edit


def result_edit(name: str, **changes: Any) -> Callable[[Files], None]:
    """An edit that sets ``changes`` in the JSON document ``name`` (a component's result)."""
    return lambda files: json_edit(files, name, lambda d: d.update(changes))


def dropped(*names: str) -> Callable[[Files], None]:
    """An edit that removes the entries ``names``."""

    def edit(files: Files) -> None:
        for name in names:
            del files[name]

    return edit
