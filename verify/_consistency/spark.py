"""Spark Bench's raw CSV held to its recorded checkout: the code domain's scenarios and weights,
and the gate and quarantine rows its code writes.

The code scenarios scored are the suite's in the pinned tiers, each once, and the domain's
quality is what their scores and their difficulties in the recorded checkout give; a gate or
quarantine row is one whose metric the recorded checkout's code (or the pinned command) names.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from bundle_schema.models import Finding, Gx10Evidence
from pins import Harness, PinSetSource
from verify._consistency._common import Reader, _disagrees, first_few
from verify._consistency.checkouts import _Checkout
from verify.harness_outputs import (
    SPARK_BENCH_CODE_DOMAIN,
    SPARK_BENCH_CSV,
    SPARK_BENCH_SLACK,
    OutputsUnreadable,
    raw_name,
    spark_code_scores,
    spark_flag_rows,
)

SPARK_SUITE = "eval_suite.py"
"""Where Spark Bench's checkout defines its scenarios, each a ``dict(id=..., domain=...,
difficulty=...)``: the weights of a domain's quality."""
MAX_SPARK_SUITE = 16 << 20


class _Spark(NamedTuple):
    """The Spark Bench run the checks read: the upstream and harness that score coding, and
    its raw CSV with the place it is kept at."""

    upstream: str
    harness: Harness
    place: str
    csv: bytes


def spark_checks(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    foreign: Collection[str] = (),
) -> list[Finding]:
    """Spark Bench's raw CSV held to its recorded checkout (:func:`_spark_weights`,
    :func:`_spark_flags`), where coding is scored by a Spark Bench harness of the pin set that
    is not foreign and its CSV is kept."""
    spark = _spark_run(pins, foreign, read)
    if spark is None:
        return []
    return _spark_weights(evidence, spark, checkouts, read) + _spark_flags(spark, checkouts, read)


def _spark_weights(  # noqa: PLR0911 - one return per reason the check is left out
    evidence: Gx10Evidence, spark: _Spark, checkouts: Mapping[str, _Checkout], read: Reader
) -> list[Finding]:
    """Spark Bench's code domain held to its recorded checkout's suite (``eval_suite.py``): the
    scenarios scored are the code scenarios the suite defines in the tiers the pinned command
    selects (``--tier``; all when it names none), each once, and the domain's quality is what
    their scores give weighted by their difficulties (``eval_suite.run_suite``: 100 x the
    difficulty-weighted mean). A scenario left out, one the suite does not define, or a quality
    its scores cannot give, is a record that disagrees with them. A checkout whose suite
    defines no code scenario (another layout) is not read this way (the reader's own bound
    still holds); where a scenario's difficulty is not a literal, the mean is not recomputed."""
    upstream, harness, place, _ = spark
    quality = evidence.spark_quality
    checkout = checkouts.get(upstream)
    object_id = checkout.files.get(SPARK_SUITE) if checkout is not None else None
    data = read(f"upstreams/{upstream}/files/{object_id}") if object_id is not None else None
    if quality is None or data is None or len(data) > MAX_SPARK_SUITE:
        return []
    try:
        scores = spark_code_scores(spark.csv)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    suite = _suite_code(data)
    if not suite:
        return []
    tiers = _pinned_tiers(harness.command)
    selected = {i for i, (_, tier) in suite.items() if tiers is None or tier in tiers}
    unknown = sorted(set(scores) - set(suite))
    missing = sorted(selected - set(scores)) if tiers is not None else []
    if unknown or missing:
        said = "; ".join(
            f"{what}: {first_few([repr(i) for i in ids])}"
            for what, ids in (("not scored", missing), ("no scenario of its suite", unknown))
            if ids
        )
        return [
            _disagrees(
                place,
                f"the code domain scored {len(scores)} scenarios; the {upstream} checkout's "
                f"{SPARK_SUITE} defines {len(selected)} code scenarios in the pinned tiers "
                f"({said})",
            )
        ]
    weights = {i: difficulty for i, (difficulty, _) in suite.items()}
    if not scores or not all(weights[i] > 0 for i in scores):
        return []
    total = math.fsum(weights[i] for i in scores)
    expected = 100 * math.fsum(scores[i] * weights[i] for i in scores) / total
    if abs(expected - quality.code_domain_quality) <= SPARK_BENCH_SLACK:
        return []
    return [
        _disagrees(
            place,
            f"the code domain's quality is {quality.code_domain_quality:g}; its {len(scores)} "
            f"scenarios' scores, weighted by their difficulties in the {upstream} checkout's "
            f"{SPARK_SUITE}, give {expected:.2f}",
            expected=f"{expected:.1f}",
            got=f"{quality.code_domain_quality:g}",
        )
    ]


def _spark_run(pins: PinSetSource, foreign: Collection[str], read: Reader) -> _Spark | None:
    """The Spark Bench run that scores coding (:class:`_Spark`): None when coding is not scored
    by a Spark Bench harness (read by its reader), the harness is foreign, or its CSV is not
    kept at any raw place of a component it serves (as its records are re-read from,
    ``_raw_files``)."""
    upstream = pins.pins.component_upstreams.get("coding")
    harness = pins.pins.harnesses.get(upstream or "")
    if upstream is None or harness is None or harness.parser != "spark-bench":
        return None
    if upstream in foreign:
        return None
    for served in (c for c, u in pins.pins.component_upstreams.items() if u == upstream):
        place = raw_name(served, SPARK_BENCH_CSV)
        if (data := read(place)) is not None:
            return _Spark(upstream, harness, place, data)
    return None


_TIERS = {"all": frozenset({"base", "hard"}), "base": frozenset({"base"}),
          "hard": frozenset({"hard"})}  # fmt: skip
"""What ``spark_bench.py eval --tier`` selects (its default is ``all``; a scenario with no
``tier`` is ``base``, ``run_suite``)."""


def _pinned_tiers(command: Sequence[str]) -> frozenset[str] | None:
    """The scenario tiers a pinned Spark Bench command runs; None when it names a tier this
    check does not know (then the scenarios scored are only held to the suite's)."""
    for index, word in enumerate(command):
        if word == "--tier":
            value = command[index + 1] if index + 1 < len(command) else ""
            return _TIERS.get(value)
        if word.startswith("--tier="):
            return _TIERS.get(word.removeprefix("--tier="))
    return _TIERS["all"]


def _spark_flags(spark: _Spark, checkouts: Mapping[str, _Checkout], read: Reader) -> list[Finding]:
    """Spark Bench's gate and quarantine rows (:data:`SPARK_BENCH_FLAGS`), which its reader
    honours wherever they are, are rows the pinned code writes: each one's metric is a string
    the recorded checkout's Python files hold (parsed, never run), or in the pinned command
    (code it gives inline). The public Spark Bench writes none of them: a ``golden_gate`` row
    added to its CSV made a failing gate pass."""
    upstream, harness, place, data = spark
    try:
        rows = spark_flag_rows(data)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    if not rows:
        return []
    written = _checkout_strings(checkouts.get(upstream), upstream, read)
    if isinstance(written, str):
        why = f"its gate rows cannot be held to the {upstream} checkout's code: {written}"
        return [_disagrees(place, why)]
    for line, metric in rows:
        if metric not in written and not any(metric in word for word in harness.command):
            return [
                _disagrees(
                    place,
                    f"line {line}: a {metric} row, which the {upstream} checkout's code never "
                    f"writes (no {metric!r} in its Python files or the pinned command)",
                )
            ]
    return []


MAX_CODE = 64 << 20
"""The most Python source a check of written names reads of one checkout."""


def _checkout_strings(checkout: _Checkout | None, upstream: str, read: Reader) -> set[str] | str:
    """Every string constant of the Python files a recorded checkout keeps (a file its listing
    names and the bundle does not keep is left out: a sparse checkout keeps the harness's code),
    or why they cannot be read (the checkout not recorded whole, too much code, no Python file
    that parses)."""
    if checkout is None:
        return f"the {upstream} checkout is not recorded whole"
    found: set[str] = set()
    size = 0
    kept = [i for p, i in sorted(checkout.files.items()) if p.endswith(".py")]
    for object_id in kept:
        data = read(f"upstreams/{upstream}/files/{object_id}")
        if data is None:
            continue  # a sparse checkout keeps the harness's code, not every file listed
        size += len(data)
        if size > MAX_CODE:
            return f"over {MAX_CODE} bytes of Python"
        try:
            tree = ast.parse(data.decode("utf-8"))
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        found.update(
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )
    if not found:
        return "it keeps no Python file that parses"
    return found


def _suite_code(data: bytes) -> dict[str, tuple[float, str]]:
    """Each code scenario ``eval_suite.py`` defines, with its difficulty (NaN when not a literal
    number, or the id defined twice) and its tier (``base`` when none is given): its literal
    ``dict(id=..., domain="code", ...)`` calls, parsed, never run; none when it does not
    parse."""
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, tuple[float, str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "dict":
            continue
        given = {
            k.arg: k.value.value
            for k in node.keywords
            if k.arg in ("id", "domain", "difficulty", "tier") and isinstance(k.value, ast.Constant)
        }
        key, difficulty, tier = given.get("id"), given.get("difficulty"), given.get("tier", "base")
        if given.get("domain") != SPARK_BENCH_CODE_DOMAIN or not isinstance(key, str):
            continue
        weight = (
            float(difficulty)
            if isinstance(difficulty, int | float) and not isinstance(difficulty, bool)
            else math.nan
        )
        found[key] = (math.nan if key in found else weight, str(tier))  # twice: no weight
    return found
