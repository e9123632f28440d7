"""Spark Bench's raw CSV held to its recorded checkout: the code domain's scenarios and weights,
and the gate and quarantine rows its code writes.

The code scenarios scored are the suite's in the pinned tiers, each once, and the domain's
quality is what their scores and their difficulties in the recorded checkout give; a gate or
quarantine row is one whose metric the recorded checkout's code (or the pinned command) names.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import math
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from bundle_schema.models import Finding, Gx10Evidence, TransportExchange
from pins import Harness, PinSetSource
from verify._consistency._common import (
    SPAN_SLACK_S,
    TTFT_SLACK_S,
    Reader,
    _disagrees,
    first_few,
)
from verify._consistency.checkouts import _Checkout
from verify._consistency.exchanges import _environment_record
from verify._consistency.options import given_options
from verify._facts import spark_facts
from verify.harness_outputs import (
    SPARK_BENCH_CODE_DOMAIN,
    SPARK_BENCH_CSV,
    SPARK_BENCH_SLACK,
    SPARK_CONCURRENCY,
    OutputsUnreadable,
    SparkLevel,
    raw_name,
    spark_code_scores,
    spark_concurrency,
    spark_flag_rows,
    spark_single_stream,
)
from verify.sparkbench import NO_COMPILE, SparkReply, SparkTiming, scenario_ask

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
    suite = _read_as_of(checkouts.get(spark.upstream), spark.upstream, read)
    replies = spark_replies(evidence)
    return (
        _spark_weights(evidence, spark, checkouts, read)
        + _spark_flags(spark, checkouts, read)
        + _spark_answers(evidence, replies, spark, suite, read)
        + _spark_single_stream(replies, spark, suite)
        + _spark_concurrency(replies, spark, suite)
    )


SparkReplies = list[tuple[TransportExchange, SparkReply]]
"""The exchanges of the transport log Spark's reading takes, each with its reply."""


def spark_replies(evidence: Gx10Evidence) -> SparkReplies | None:
    """The exchanges of the transport log that Spark's reading takes, each with its reply
    (:func:`verify._facts.spark_facts`: a full exchange's stream is parsed, so this is read once
    for every check of the run); None without a transport log."""
    if evidence.transport is None:
        return None
    return [(e, r) for e in evidence.transport if (r := spark_facts(e)) is not None]


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
    value = _option(command, "--tier")
    return _TIERS["all"] if value is None else _TIERS.get(value)


EVAL_OPTIONS = frozenset({
    "--domains", "--endpoint", "--gen-tokens", "--help", "--label", "--model", "--notes",
    "--out-dir", "--parallelism", "--repeats", "--run-kind", "--skip-throughput",
    "--spec-decode", "--temperature", "--thinking", "--throughput-conc-context",
    "--throughput-concurrency", "--throughput-contexts", "--throughput-gen-tokens", "--tier",
    "--timeout", "--topology", "--weights",
})  # fmt: skip
"""The long options of ``spark_bench.py eval`` at 196e60d (``main``: ``common`` and the
``eval`` subparser, with argparse's ``--help``; held to the recorded checkout by a test), by
which a pinned command's abbreviations are read."""


def _option(command: Sequence[str], name: str) -> str | None:
    """The value the pinned command gives option ``name`` (``name VALUE`` or ``name=VALUE``, or
    an abbreviation of ``name`` as argparse takes it; the last, the one argparse keeps; "" when
    none follows), None when it gives none (the option's default)."""
    values = [value for option, value in given_options(command, EVAL_OPTIONS) if option == name]
    return values[-1] if values else None


def _flag(command: Sequence[str], name: str) -> bool:
    """Whether the pinned command gives the ``store_true`` option ``name`` (or its abbreviation
    as argparse takes it)."""
    return any(option == name for option, _ in given_options(command, EVAL_OPTIONS))


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
    return {i: (s.difficulty, s.tier) for i, s in _suite_asks(data).items()}


SPARK_HARNESS = "spark_bench.py"
"""Where Spark Bench's checkout has its streaming client (``chat_stream``) and ``run_eval``."""

READ_AS_OF = {
    SPARK_SUITE: {
        "_msg": "59d169951e338166",
        "_strip_fences": "11018629c20e6e20",
        "_extract_python_code": "dd59e40265b08ed3",
        "_run_python_safely": "fe78ce87f7619e39",
        "expect_executable_code": "ba471bcb153da542",
        "expect_sql_code": "d2a7271bc9a3f7b7",
        "run_suite": "7498a460807db406",
    },
    SPARK_HARNESS: {
        "chat_stream": "3fb1f95585a552ce",
        "run_eval": "10c1070f1ccb8f17",
        "run_tier2": "7d2e634cffdd1dea",
        "main": "7ed2cfa8ef4a4101",  # the options' defaults: --repeats, --throughput-contexts
    },
}
"""The code :mod:`verify.sparkbench` reads replies as, at Spark Bench 196e60d: each function's
source (:func:`_digests`). A checkout whose functions differ is not read this way."""

_GRADERS = {"expect_executable_code": "python", "expect_sql_code": "sql"}
_OWN_PARTS = ("setup", "extract_fn")
"""A Python grader given setup code or an extractor of its own reads the answer otherwise."""


class _Scenario(NamedTuple):
    """A code scenario as the suite defines it: its difficulty (its weight in the domain's
    quality) and tier, the request's messages and ``max_tokens`` it is asked with
    (:func:`verify.sparkbench.scenario_ask`), its grader (``python``, ``sql``, None for another),
    and its own repeat count (None: the run's)."""

    difficulty: float
    tier: str
    ask: bytes | None
    grader: str | None
    repeats: int | None


def _spark_answers(
    evidence: Gx10Evidence,
    replies: SparkReplies | None,
    spark: _Spark,
    suite: bytes | str | None,
    read: Reader,
) -> list[Finding]:
    """Spark Bench's code scenario scores held to the transport log: each scenario scored was
    asked as often as the run repeats it (the pinned ``--repeats``, 2 by default), each time
    with its messages and ``max_tokens``, and its score is no more than its repeats' answers can
    earn: an answer that earns 0 whatever its code does (:mod:`verify.sparkbench`) lowers the
    most its mean can be. Read only where the recorded checkout's client and graders are the
    code that reading follows (:data:`READ_AS_OF`) and the transport log is at hand; the
    verdict that code does not compile is taken only where the harness's recorded Python is of
    the verifier's own version; where it is not, a score that holds only without those
    verdicts is a finding (the record's word alone would lift it). ``suite``: the checkout's
    suite as :func:`_read_as_of` reads it."""
    upstream, harness, place, _ = spark
    entry = f"upstreams/{upstream}/environment.json"
    environment, problem = _environment_record(read(entry), entry, upstream)
    if environment is None:
        why = (
            f"its code scenarios cannot be held to their answers: the {upstream} harness's "
            "interpreter has no readable environment record (whether their code compiles "
            f"depends on its Python; {problem})"
        )
        return [_disagrees(place, why)]
    compiled = _same_python(environment.python_version)
    if isinstance(suite, str):
        why = f"its code scenarios cannot be held to the {upstream} checkout: {suite}"
        return [_disagrees(place, why)]
    if replies is None or suite is None:
        return []
    try:
        scores = spark_code_scores(spark.csv)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    run_repeats = _pinned_repeats(harness.command)
    scenarios = _suite_asks(suite)
    log = replies  # not None here (for the closure below)

    def held(compile_verdicts: bool) -> list[str]:
        """Why the scores are not what the answers allow, with or without the verdicts that an
        answer's code does not compile."""
        answers: dict[tuple[bytes, str], list[tuple[int, str | None]]] = {}
        for exchange, reply in log:
            for grader, zero in (("python", reply.python), ("sql", reply.sql)):
                taken = zero if zero != NO_COMPILE or compile_verdicts else None
                answers.setdefault((reply.ask, grader), []).append((exchange.id, taken))
        problems = []
        consistent = []
        for scenario_id, score in sorted(scores.items()):
            scenario = scenarios.get(scenario_id)
            repeats = run_repeats if scenario is None else scenario.repeats or run_repeats
            if scenario is None or scenario.ask is None or repeats is None:
                consistent.append(1.0)
                continue
            asked = answers.get((scenario.ask, scenario.grader or "python"), [])
            zeros = [(i, why) for i, why in asked if why is not None and scenario.grader]
            problems += _answers_problem(scenario_id, score, repeats, asked, zeros)
            counted = len(zeros) if len(asked) == repeats else 0
            consistent.append(_most_consistent(score, repeats, counted))
        problems += _reliability_problem(evidence, harness.command, consistent)
        problems += _order_problem(_pool_order(suite), scenarios, answers)
        return problems

    problems = held(compiled)
    hinged = [] if problems or compiled else held(compile_verdicts=True)
    if not (problems or hinged):
        return []
    said = first_few(problems or hinged, separator="; ")
    why = f"code scenarios against the transport log: {said}"
    if hinged:
        ours = f"{sys.version_info.major}.{sys.version_info.minor}"
        theirs = environment.python_version.split(" ", 1)[0][:40]
        why = (
            f"code scenarios against the transport log hold only if code that does not compile "
            f"on Python {ours} (this verifier's) compiles on the harness's Python {theirs}, "
            f"which only its environment record says: {said} (verify with Python {theirs} to "
            "hold them to their answers)"
        )
    return [_disagrees(place, why)]


_F = TypeVar("_F", dict[str, dict[str, float]], list[SparkLevel])

THROUGHPUT_DEFAULTS = {"--throughput-contexts": "1024,8192,32768",
                       "--throughput-concurrency": "1,2,4,8"}  # fmt: skip
"""``spark_bench.py eval``'s defaults of the tier2 sweep's options."""


class _Tier2(NamedTuple, Generic[_F]):
    """What a check of Spark's tier2 figures reads (:func:`_tier2`)."""

    place: str
    counts: list[int]
    """The pinned contexts, or concurrency levels."""
    figures: _F
    exchanges: SparkReplies


def _tier2(
    replies: SparkReplies | None,
    spark: _Spark,
    suite: bytes | str | None,
    option: str,
    figures_of: Callable[[bytes], _F],
) -> _Tier2[_F] | None:
    """What a check of Spark's tier2 figures reads: the counts the pinned command gives
    ``option``, the CSV's figures (``figures_of``), the exchanges (``replies``); None where it
    is left out: no transport log, a checkout that cannot be read (``_spark_answers``' finding),
    a CSV that does not read (the raw outputs' own check's), no figures, or a count that is no
    integer."""
    _, harness, place, _ = spark
    if not isinstance(suite, bytes) or replies is None:
        return None
    counts = _pinned_counts(harness.command, option, THROUGHPUT_DEFAULTS[option])
    try:
        figures = figures_of(spark.csv)
    except OutputsUnreadable:
        return None
    if counts is None or not figures:
        return None
    return _Tier2(place, counts, figures, replies)


def _spark_single_stream(
    replies: SparkReplies | None, spark: _Spark, suite: bytes | str | None
) -> list[Finding]:
    """Spark's tier2 single-stream figures (shown, never scored) held to their requests: one
    request a pinned context, in order (``--throughput-contexts``), and each context's TTFT no
    earlier than the observer saw its first token, its prefill rate (prompt tokens over TTFT)
    no higher than that allows, its decode rate no higher than its tokens over the time from
    that TTFT to the end the observer saw, and its output tokens the count the client reads.
    The client's clock starts before it sends the request and reads each line after the
    observer forwards it, so a forger can make these figures slower, never faster. Read where
    the code is the one :mod:`verify.sparkbench` follows, and the pinned command runs the
    sweep."""
    read = _tier2(replies, spark, suite, "--throughput-contexts", spark_single_stream)
    if read is None:
        return []
    place, contexts, figures, exchanges = read
    asked = [(e.id, r) for e, r in exchanges if r.single_stream]
    if len(asked) != len(contexts):
        return [_disagrees(place, f"tier2 single-stream figures of {len(figures)} contexts; the "
                                  f"pinned command asks {len(contexts)} single-stream requests, "
                                  f"the transport log holds {len(asked)}")]  # fmt: skip
    problems = []
    for context, (exchange, reply) in zip(contexts, asked, strict=True):
        timing = reply.timing
        tokens = timing.prompt if timing is not None and timing.prompt else context
        row = figures.get(str(tokens))
        if row is None:
            continue  # a context that failed: no figures
        if timing is None:
            problems.append(f"context {tokens}: figures of exchange {exchange}, a reply Spark's "
                            "client fails on")  # fmt: skip
            continue
        problems += _single_stream_problems(tokens, exchange, row, timing)
    if not problems:
        return []
    return [_disagrees(place, f"tier2 single-stream figures against the transport log: "
                              f"{first_few(problems, separator='; ')}")]  # fmt: skip


def _single_stream_problems(
    tokens: int, exchange: int, row: Mapping[str, float], timing: SparkTiming
) -> list[str]:
    """Why one context's figures (``row``) are not what its exchange's reply (``timing``)
    allows, give or take Spark's rounding and :data:`TTFT_SLACK_S`."""
    problems = []
    first = timing.first if timing.first is not None else timing.done  # no token: TTFT = total
    said = f"context {tokens} (exchange {exchange})"
    ttft = row.get("ttft_ms")
    latest = None if ttft is None else ttft / 1000 + 0.00005 + TTFT_SLACK_S
    if latest is not None and latest < first:
        problems.append(f"{said}: a TTFT of {ttft:g} ms, the observer saw its first token at "
                        f"{first * 1000:.1f} ms")  # fmt: skip
    prefill = row.get("prefill_tps")
    if (
        prefill is not None
        and first > TTFT_SLACK_S
        and prefill - 0.05 > tokens / (first - TTFT_SLACK_S)
    ):
        most = tokens / first
        problems.append(f"{said}: a prefill of {prefill:g} tok/s, its {tokens} prompt tokens "
                        f"by the first token the observer saw allow {most:.1f}")  # fmt: skip
    decode = row.get("decode_tps")
    if decode is not None and latest is not None and decode > 0.005 and timing.completion > 0:
        total = latest + timing.completion / (decode - 0.005)
        if total < timing.done:
            most = timing.completion / max(timing.done - latest, 1e-6)
            problems.append(f"{said}: a decode of {decode:g} tok/s, {timing.completion:g} tokens "
                            f"from its TTFT to the end the observer saw at "
                            f"{timing.done * 1000:.1f} ms allow {most:.2f}")  # fmt: skip
    output = row.get("output_tokens")
    if output is not None and output != timing.completion:
        problems.append(f"{said}: {output:g} output tokens, its reply's count is "
                        f"{timing.completion:g}")  # fmt: skip
    return problems


def _pinned_counts(command: Sequence[str], option: str, default: str) -> list[int] | None:
    """The counts the pinned command gives ``option`` (comma separated, as ``run_tier2`` reads
    ``--throughput-contexts`` and ``--throughput-concurrency``; ``default`` when it gives none);
    none under ``--skip-throughput``; None when one is not an integer ``int`` takes."""
    if _flag(command, "--skip-throughput"):
        return []
    value = _option(command, option)
    try:
        return [int(c) for c in (default if value is None else value).split(",") if c.strip()]
    except ValueError:
        return None


def _spark_concurrency(
    replies: SparkReplies | None, spark: _Spark, suite: bytes | str | None
) -> list[Finding]:
    """Spark's tier2 concurrency figures (shown, never scored) held to their requests: each
    pinned level (``--throughput-concurrency``) N requests sent at once, the levels one after
    another, each written as an ``error`` row or its four figures (:func:`spark_concurrency`
    reads the rows as levels, in order: the k-th is the k-th pinned level, its batch that
    level's N). Of the replies the client reads at a level: its aggregate decode rate no higher
    than their tokens over the span the observer saw them in; its TTFT p50 and p99 no earlier
    than the same order statistic (Spark's ``_pct``) of the first tokens the observer saw, and
    the p50 no later than the p99; and, while the p99 is the latest TTFT (51 replies or
    fewer), its per-stream rate no higher than the mean of what each reply allows from that
    TTFT to the end the observer saw. As for the single-stream figures, a forger can make
    these slower, never faster (:func:`_spark_single_stream`)."""
    read = _tier2(replies, spark, suite, "--throughput-concurrency", spark_concurrency)
    if read is None:
        return []
    place, pinned, levels, exchanges = read
    asked = [(e, r) for e, r in exchanges if r.concurrency]
    if len(asked) != sum(pinned) or len(levels) != len(pinned):
        return [_disagrees(place, f"tier2 concurrency rows of {len(levels)} levels; the pinned "
                                  f"command asks {len(pinned)} (levels "
                                  f"{','.join(map(str, pinned))}: {sum(pinned)} requests), the "
                                  f"transport log holds {len(asked)} requests")]  # fmt: skip
    problems = []
    for start, n, level in zip(itertools.accumulate([0, *pinned]), pinned, levels, strict=False):
        ids = [e.id for e, _ in asked[start : start + n]]
        said = f"batch {n} (exchange{'s' if len(ids) > 1 else ''} {_ids(ids)})"
        if level.batch != str(n):
            problems.append(f"{said}: rows of batch {level.batch!r} at line {level.line}")
        elif level.error:
            continue  # no figures: a level made to fail is a slower one
        elif level.given != SPARK_CONCURRENCY or len(level.figures) != len(SPARK_CONCURRENCY):
            problems.append(f"{said}: figures {', '.join(level.given)} at line {level.line}; "
                            f"Spark writes {', '.join(SPARK_CONCURRENCY)}, each a number, or "
                            f"an error row")  # fmt: skip
        else:
            batch = [(e.started, r) for e, r in asked[start : start + n]]
            problems += _concurrency_problems(said, batch, level.figures)
    if not problems:
        return []
    return [_disagrees(place, f"tier2 concurrency figures against the transport log: "
                              f"{first_few(problems, separator='; ')}")]  # fmt: skip


def _ids(ids: Sequence[int]) -> str:
    """Exchange ids, as a range when they run on."""
    if len(ids) > 2 and list(ids) == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return ", ".join(map(str, ids))


def _pct(ordered: Sequence[float], p: int) -> float:
    """Spark Bench's ``_pct``: the value at the rounded index (Python's ``round``)."""
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))]


def _concurrency_problems(
    said: str, batch: Sequence[tuple[float, SparkReply]], row: Mapping[str, float]
) -> list[str]:
    """Why one level's figures (``row``) are not what its exchanges (each its start on the log
    clock and its reply as Spark reads it) allow, give or take Spark's rounding and the slack
    of :data:`TTFT_SLACK_S` and :data:`SPAN_SLACK_S`. Left out where a reply is one this
    reading cannot tell the client's fate of (which replies the figures are of is not known)."""
    read = [(started, r.timing) for started, r in batch if r.timing is not None]
    if any(r.timing is None and r.python is None for _, r in batch):
        return []  # a reply this reading cannot tell: the set the client read is not known
    if not read:
        return [f"{said}: figures, but Spark's client reads none of its replies (no figures: "
                f"an error row)"]  # fmt: skip
    firsts = sorted(t.first if t.first is not None else t.done for _, t in read)
    problems = []
    p50, p99 = row.get("ttft_p50_ms"), row.get("ttft_p99_ms")
    for p, shown in ((50, p50), (99, p99)):
        seen = _pct(firsts, p)
        if shown is not None and shown / 1000 + 0.00005 + TTFT_SLACK_S < seen:
            problems.append(f"{said}: a TTFT p{p} of {shown:g} ms, the observer's p{p} of "
                            f"its replies' first tokens is {seen * 1000:.1f} ms")  # fmt: skip
    if p50 is not None and p99 is not None and p50 > p99:
        problems.append(f"{said}: a TTFT p50 of {p50:g} ms above its p99 of {p99:g} ms")
    tokens = sum(t.completion for _, t in read)
    span = max(started + t.done for started, t in read) - min(started for started, _ in read)
    agg = row.get("agg_decode_tps")
    if agg is not None and span > SPAN_SLACK_S and agg - 0.05 > tokens / (span - SPAN_SLACK_S):
        problems.append(f"{said}: an aggregate decode of {agg:g} tok/s, {tokens:g} tokens in "
                        f"the {span * 1000:.1f} ms the observer saw them in allow "
                        f"{tokens / span:.1f}")  # fmt: skip
    per = row.get("per_stream_tps")
    last = len(read) - 1
    if per is not None and p99 is not None and round(0.99 * last) == last:  # 51 or fewer
        latest = p99 / 1000 + 0.00005 + TTFT_SLACK_S  # the p99 is the latest TTFT
        rates = [t.completion / (t.done - latest) if t.completion else 0.0 for _, t in read
                 if t.done > latest or not t.completion]  # fmt: skip
        if len(rates) == len(read) and per - 0.005 > sum(rates) / len(rates):
            problems.append(f"{said}: a per-stream decode of {per:g} tok/s, its replies' "
                            f"tokens from the latest TTFT to the ends the observer saw allow "
                            f"{sum(rates) / len(rates):.2f}")  # fmt: skip
    return problems


def _most_consistent(score: float, repeats: int, zeros: int) -> float:
    """The most consistent a scenario's repeats can be (Spark's ``1 - 2 x pstdev`` of their
    scores, at least 0; 1 for a single repeat), given its mean ``score`` (to Spark's rounding)
    and ``zeros`` of its ``repeats`` answers that earn 0: the others all alike."""
    scoring = repeats - zeros
    if repeats < 2 or zeros == 0 or scoring <= 0:
        return 1.0
    lowest = max(0.0, score - SPARK_SCORE_SLACK)
    return max(0.0, 1 - 2 * lowest * math.sqrt(zeros / scoring))


def _reliability_problem(
    evidence: Gx10Evidence, command: Sequence[str], consistent: Sequence[float]
) -> list[str]:
    """Why Spark's repeat reliability (100 x the mean consistency of the run's scenarios) is
    more than the code scenarios' answers allow (:func:`_most_consistent`), where the pinned
    command runs the code domain alone (``--domains code``: its scenarios are the run's)."""
    repeat = evidence.spark_repeat
    if repeat is None or not consistent or _pinned_domains(command) != {SPARK_BENCH_CODE_DOMAIN}:
        return []
    most = 100 * math.fsum(consistent) / len(consistent)
    if repeat.repeat_reliability <= most + SPARK_RELIABILITY_SLACK:
        return []
    return [
        f"the repeat reliability is {repeat.repeat_reliability:g}; the scores and answers of "
        f"its {len(consistent)} scenarios allow at most {most:.2f}"
    ]


SPARK_RELIABILITY_SLACK = 0.05 + 1e-9
"""Spark writes the repeat reliability rounded to 0.1."""


def _pinned_domains(command: Sequence[str]) -> set[str] | None:
    """The domains the pinned command runs (``--domains``, comma-separated), None for all."""
    value = _option(command, "--domains")
    return set(value.split(",")) if value else None


def _answers_problem(
    scenario_id: str,
    score: float,
    repeats: int,
    asked: Sequence[tuple[int, str | None]],
    zeros: Sequence[tuple[int, str | None]],
) -> list[str]:
    """Why a code scenario's ``score`` is not one of the answers ``asked`` (their exchange ids)
    over ``repeats``, of which ``zeros`` earn 0 (each its exchange id and why)."""
    if len(asked) != repeats:
        return [
            f"{scenario_id} is scored over {repeats} repeats; the transport log holds "
            f"{len(asked)} requests of its messages and max_tokens"
        ]
    most = (repeats - len(zeros)) / repeats
    if score <= most + SPARK_SCORE_SLACK:
        return []
    shown = [f"exchange {i}: {why}" for i, why in zeros]
    return [f"{scenario_id} scores {score:g}; its answers earn at most {most:g} "
            f"({first_few(shown)})"]  # fmt: skip


def _read_as_of(checkout: _Checkout | None, upstream: str, read: Reader) -> bytes | str | None:
    """The recorded checkout's suite, where its client and graders are the code
    :mod:`verify.sparkbench` follows (:data:`READ_AS_OF`); None where they are another's (a
    file not in its listing, or other code); why they cannot be read where its listing names a
    file the bundle does not keep (a file a check reads is never optional)."""
    if checkout is None:
        return None
    suite = None
    for path, functions in READ_AS_OF.items():
        object_id = checkout.files.get(path)
        if object_id is None:
            return None
        data = read(f"upstreams/{upstream}/files/{object_id}")
        if data is None:
            return f"{path} ({object_id}) is not kept in the bundle"
        if len(data) > MAX_SPARK_SUITE or _digests(data, functions) != functions:
            return None
        suite = data if path == SPARK_SUITE else suite
    return suite


SPARK_SCORE_SLACK = 0.0005
"""Spark writes each scenario's score rounded to 0.001."""


def _digests(data: bytes, functions: Mapping[str, str]) -> dict[str, str]:
    """The source digests (:data:`READ_AS_OF`: of the lines from its ``def`` to its end, joined
    by LF) of the top-level functions of ``data`` named in ``functions`` (none when it does not
    parse)."""
    parsed = _parsed(data)
    if parsed is None:
        return {}
    lines = parsed[0].split("\n")
    found: dict[str, str] = {}
    for node in parsed[1].body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            source = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            found[node.name] = "" if node.name in found else digest  # twice: not the code read
    return found


@functools.lru_cache(maxsize=2)
def _parsed(data: bytes) -> tuple[str, ast.Module] | None:
    """A checkout's Python file, its text and its syntax tree (parsed, never run; kept for the
    checks that read it again), or None when it does not parse."""
    try:
        text = data.decode("utf-8")
        return text, ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _pinned_repeats(command: Sequence[str]) -> int | None:
    """How many times the pinned command asks each scenario (``--repeats``, 2 when not given,
    read as argparse's ``int`` reads it); None when it names a count this check does not take."""
    value = _option(command, "--repeats")
    if value is None:
        return 2
    try:
        count = int(value)
    except ValueError:
        return None
    return count if 1 <= count <= MAX_REPEATS else None


MAX_REPEATS = 1000


def _same_python(version: str) -> bool:
    """Whether the harness's recorded interpreter (its environment record's ``python_version``)
    is of the verifier's own Python version (major and minor): where code compiles is the same."""
    return version.startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")


def _order_problem(
    order: Sequence[str] | None,
    scenarios: Mapping[str, _Scenario],
    answers: Mapping[tuple[bytes, str], Sequence[tuple[int, str | None]]],
) -> list[str]:
    """Why the code scenarios' requests are not in the order Spark asks them (``run_suite``:
    the suite's scenarios in ``order``, each one's repeats together), or nothing: a scenario's
    requests moved onto another's answers are out of it."""
    if order is None:
        return []
    asked = []
    for place, scenario_id in enumerate(order):
        scenario = scenarios.get(scenario_id)
        if scenario is not None and scenario.ask is not None:
            key = (scenario.ask, scenario.grader or "python")
            asked += [(exchange, place, scenario_id) for exchange, _ in answers.get(key, ())]
    asked.sort()
    for (first, before, one), (then, after, other) in itertools.pairwise(asked):
        if after < before:
            return [
                f"{other}'s request (exchange {then}) comes after {one}'s (exchange {first}), "
                f"though Spark asks {other} first, each scenario's repeats together"
            ]
    return []


def _pool_order(data: bytes) -> list[str] | None:
    """The code scenarios in the order ``run_suite`` asks them: as the suite's ``SCENARIOS``
    lists them, read from its top-level assignments (lists of literal scenarios, and sums of
    lists named before); None where another statement changes a list it reads."""
    parsed = _parsed(data)
    if parsed is None:
        return None
    lists: dict[str, list[str] | None] = {}
    for statement in parsed[1].body:
        if isinstance(statement, _DEFINED) or _main_only(statement):
            continue  # run when called, or as a script: not on import
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                lists[target.id] = _listed(statement.value, lists)
                continue
        for node in ast.walk(statement):  # any other use that may change a list read
            if isinstance(node, ast.Name) and node.id in lists:
                lists[node.id] = None
    order = lists.get("SCENARIOS")
    return order if order is not None and len(set(order)) == len(order) else None


_DEFINED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _main_only(statement: ast.stmt) -> bool:
    """An ``if __name__ == "__main__":`` block."""
    test = statement.test if isinstance(statement, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and _constant(test.comparators[0]) == "__main__"
    )


def _listed(value: ast.expr, lists: Mapping[str, list[str] | None]) -> list[str] | None:
    """The code scenario ids a list expression holds, in order: a list of scenarios, or a sum
    of lists named before."""
    if isinstance(value, ast.List):
        ids = []
        for item in value.elts:
            if not (isinstance(item, ast.Call) and isinstance(item.func, ast.Name)):
                return None
            given = {k.arg: k.value for k in item.keywords if k.arg is not None}
            key, domain = _constant(given.get("id")), _constant(given.get("domain"))
            if item.func.id != "dict" or not isinstance(key, str):
                return None
            if domain == SPARK_BENCH_CODE_DOMAIN:
                ids.append(key)
        return ids
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left, right = _listed(value.left, lists), _listed(value.right, lists)
        return left + right if left is not None and right is not None else None
    if isinstance(value, ast.Name):
        return lists.get(value.id)
    return None


@functools.lru_cache(maxsize=2)
def _suite_asks(data: bytes) -> dict[str, _Scenario]:
    """Each code scenario the suite defines (:class:`_Scenario`), from its literal
    ``dict(id=..., domain="code", difficulty=..., max_tokens=..., messages=_msg(...),
    grade=...)`` calls (parsed, never run); a scenario defined twice has no weight and no ask,
    nor does one asked with values that are not literals; none when the suite does not
    parse."""
    parsed = _parsed(data)
    if parsed is None:
        return {}
    found: dict[str, _Scenario] = {}
    for node in ast.walk(parsed[1]):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        given = {k.arg: k.value for k in node.keywords if k.arg is not None}
        key, domain = _constant(given.get("id")), _constant(given.get("domain"))
        if node.func.id != "dict" or domain != SPARK_BENCH_CODE_DOMAIN or not isinstance(key, str):
            continue
        difficulty, tier = _constant(given.get("difficulty")), given.get("tier")
        weight = (
            float(difficulty)
            if isinstance(difficulty, int | float) and not isinstance(difficulty, bool)
            else math.nan
        )
        prompt = _prompt(given.get("messages"))
        tokens = _constant(given.get("max_tokens"))
        ask = (
            scenario_ask([{"role": "user", "content": prompt}], int(tokens * 1.0))
            if prompt is not None and isinstance(tokens, int) and not isinstance(tokens, bool)
            else None
        )
        count = _constant(given.get("repeats"))
        own = count if isinstance(count, int) and 1 <= count <= MAX_REPEATS else None
        if "repeats" in given and own is None:
            ask = None
        twice = key in found  # no weight, no ask
        found[key] = _Scenario(
            math.nan if twice else weight,
            str(tier.value) if isinstance(tier, ast.Constant) else "base",
            None if twice else ask,
            _grader(given.get("grade")),
            own,
        )
    return found


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _prompt(node: ast.expr | None) -> str | None:
    """The prompt of ``messages=_msg(<prompt>)``, a string literal (or literals joined by
    ``+``); None for any other messages."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id != "_msg" or len(node.args) != 1 or node.keywords:
        return None
    return _text(node.args[0])


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _grader(node: ast.expr | None) -> str | None:
    """``python`` or ``sql`` for a scenario graded by ``expect_executable_code`` (with no setup
    or extractor of its own) or ``expect_sql_code``; None for any other grader."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    kind: str | None = _GRADERS.get(node.func.id)
    if kind is None or node.args:
        return None
    if any(k.arg in _OWN_PARTS or k.arg is None for k in node.keywords):
        return None
    return kind
