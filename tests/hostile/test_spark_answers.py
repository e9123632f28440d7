"""Spark Bench's code scenario scores held to the transport log (``verify/sparkbench.py``,
``verify/_consistency/spark.py`` ``_spark_answers``; ADR 0050).

Every attack starts from the recorded real bundle (examples/recorded/llamacpp-smollm2-135m.tar:
Spark Bench 196e60d, ten code scenarios asked twice each, every score 0), edits Spark's CSV as a
publisher who controls every byte (scores, the domain's quality as Spark would write it for
them, the records re-derived), and reseals it with claims equal to its replay: integrity and
the claims hold, so only the cross-check with the transport log can tell.

The recorded answers, as the verifier reads them: CODE-01's and CODE-04's two answers do not
compile; one of CODE-03's, CODE-06's and CODE-09's does not; CODE-02's and CODE-08's (SQL)
each hold a query; the rest compile. An answer that earns 0 whatever its code does bounds the
scenario's mean score; the verifier runs no code, so an answer that compiles may score anything.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import verify._parallel
import verify._shell
from tests.data.hostile.kit import Files, lines, put_json, put_lines
from tests.gate_kit import Recorded, forged, spark_changes, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import (
    SPARK_CSV,
    _findings,
    _set,
    _spark_rows,
    _verdict,
)
from verify import verdict_json, verify_bundle, verify_with_evidence
from verify._consistency.spark import (
    READ_AS_OF,
    SPARK_SUITE,
    _concurrency_problems,
    _digests,
    _most_consistent,
    _pinned_counts,
    _pinned_domains,
    _pinned_repeats,
    _same_python,
    _suite_asks,
    _suite_code,
)
from verify.sparkbench import SparkReply, SparkTiming

LOG = "transport/exchanges.jsonl"
ENVIRONMENT = "upstreams/sparkbench/environment.json"
PREFIX = (
    f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: "
    "code scenarios against the transport log: "
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _suite(recorded: Recorded) -> bytes:
    return _suite_of(recorded[1])


def _passed(*passed: tuple[str, str], reliability: str | None = None) -> Callable[[Files], None]:
    """Spark's CSV with the given scenarios' scores set, and the code domain's quality what Spark
    writes for them (100 x the difficulty-weighted mean, rounded to 0.1), and the repeat
    reliability where given, the records re-derived: what a careful forger writes."""

    def edit(files: Files) -> None:
        weights = {i: d for i, (d, _) in _suite_code(_suite_of(files)).items()}
        scores = dict.fromkeys(weights, 0.0) | {i: float(s) for i, s in passed}
        quality = round(
            100 * math.fsum(scores[i] * weights[i] for i in weights) / math.fsum(weights.values()),
            1,
        )
        change = [_set(i, "score", s) for i, s in passed] + [
            _set("code", "domain_quality", str(quality))
        ]
        if reliability is not None:
            change += [_set("overall", "reliability", reliability),
                       _set("code", "domain_reliability", reliability)]  # fmt: skip

        def each(fields: list[str]) -> list[str]:
            for step in change:
                fields = step(fields)
            return fields

        _spark_rows(each)(files)

    return edit


def _suite_of(files: Files) -> bytes:
    listing = files["upstreams/sparkbench/tree.txt"][0].decode()
    (blob,) = [line.split()[2] for line in listing.splitlines() if line.endswith("\teval_suite.py")]
    return files[f"upstreams/sparkbench/files/{blob}"][0]


def test_the_recorded_answers_bound_the_scores_and_the_recorded_run_holds(
    recorded: Recorded,
) -> None:
    """The recorded checkout is the code the reading follows, and each scenario was asked
    twice: the honest recorded scores (all 0) hold."""
    suite = _suite(recorded)
    assert _digests(suite, READ_AS_OF[SPARK_SUITE]) == READ_AS_OF[SPARK_SUITE]
    asks = _suite_asks(suite)
    assert sorted(asks) == [f"CODE-{n:02}" for n in range(1, 11)]
    assert all(a.ask is not None and a.repeats is None for a in asks.values())
    assert {i: a.grader for i, a in asks.items() if a.grader != "python"} == {
        "CODE-02": "sql",
        "CODE-08": "sql",
    }


def test_a_pass_whose_answers_do_not_compile_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """CODE-01 scored 1.0 (and the quality Spark would write for it): both its recorded answers
    fail to compile, so Spark gave each 0."""
    verdict = _verdict(recorded, tmp_path / "forged", _passed(("CODE-01", "1.0")))
    assert _findings(verdict) == [
        PREFIX + "CODE-01 scores 1; its answers earn at most 0 (exchange 213: the answer's code "
        "does not compile, exchange 214: the answer's code does not compile)"
    ]
    assert verdict.integrity.status != "ok"


def test_a_mean_past_what_one_failed_answer_allows_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """CODE-03: one answer compiles, the other does not. 0.5 is a mean its answers may give,
    its repeats then as inconsistent as can be (scores 0 and 1: the repeat reliability 90, as
    Spark writes it; held); 0.625 is not."""
    held = _verdict(recorded, tmp_path / "held", _passed(("CODE-03", "0.5"), reliability="90.0"))
    assert held.integrity.status == "ok", _findings(held)
    forged = _passed(("CODE-03", "0.625"), reliability="90.0")
    verdict = _verdict(recorded, tmp_path / "forged", forged)
    assert _findings(verdict) == [
        PREFIX + "CODE-03 scores 0.625; its answers earn at most 0.5 (exchange 217: the answer's "
        "code does not compile)"
    ]


def test_a_reliability_the_answers_do_not_allow_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """CODE-03 at 0.5 with the repeat reliability left at 100: its answer that does not compile
    scored 0, so the other scored 1, and the two repeats are as far apart as can be (Spark's
    consistency 0): the ten scenarios allow at most 90."""
    verdict = _verdict(recorded, tmp_path / "forged", _passed(("CODE-03", "0.5")))
    assert _findings(verdict) == [
        PREFIX + "the repeat reliability is 100; the scores and answers of its 10 scenarios allow "
        "at most 90.01"
    ]


def test_a_pass_whose_answers_compile_holds(recorded: Recorded, tmp_path: Path) -> None:
    """CODE-05's two answers compile: whatever their code did is not re-run, so a pass holds
    (the limit ADR 0050 names)."""
    verdict = _verdict(
        recorded, tmp_path / "held", _passed(("CODE-05", "1.0"), ("CODE-02", "0.75"))
    )
    assert verdict.integrity.status == "ok", _findings(verdict)


def test_a_scenario_asked_once_is_a_finding(recorded: Recorded, tmp_path: Path) -> None:
    """One of CODE-05's two requests recorded with another ``max_tokens`` (or left out): the
    scenario scored over two repeats was asked once."""

    def edit(files: Files) -> None:
        exchanges = lines(files, LOG)
        (exchange,) = [e for e in exchanges if e["id"] == 222]
        request = json.loads(exchange["request_body"]["data"])
        request["max_tokens"] = 4096
        exchange["request_body"]["data"] = json.dumps(request)
        put_lines(files, LOG, exchanges)

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert PREFIX + (
        "CODE-05 is scored over 2 repeats; the transport log holds 1 requests of its messages "
        "and max_tokens"
    ) in _findings(verdict)


def _other_python(files: Files) -> None:
    environment = json.loads(files[ENVIRONMENT][0])
    environment["python_version"] = "3.99.0 (main) [GCC 12.2.0]"
    put_json(files, ENVIRONMENT, environment)


HINGED = (
    f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: code scenarios against the "
    f"transport log hold only if code that does not compile on Python "
    f"{sys.version_info.major}.{sys.version_info.minor} (this verifier's) compiles on the "
    "harness's Python 3.99.0, which only its environment record says: "
)


def test_a_score_only_another_python_explains_is_found_naming_both(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Whether code compiles depends on the Python that compiles it, and the harness's is its
    environment record's word. A harness recorded under another Python than the verifier's has
    its scores held without the compile verdicts, and then with them: CODE-01 passed, which
    its answers (code that does not compile here) earn only if that code compiles there, is a
    finding that names both versions and how to hold it."""

    def edit(files: Files) -> None:
        _other_python(files)
        _passed(("CODE-01", "1.0"))(files)

    verdict = _verdict(recorded, tmp_path / "other", edit)
    found = [f for f in _findings(verdict) if f.startswith(HINGED)]
    assert len(found) == 1, _findings(verdict)
    assert "CODE-01 scores 1" in found[0] and "verify with Python 3.99.0" in found[0], found
    assert not [f for f in _findings(verdict) if f.startswith(PREFIX)], _findings(verdict)


def test_honest_scores_under_another_python_are_no_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The recorded run's own scores, its harness's Python said to be another: they hold with
    the compile verdicts as without them, so which Python compiled the code does not matter."""
    verdict = _verdict(recorded, tmp_path / "honest-other", _other_python)
    assert not [f for f in _findings(verdict) if "code scenarios" in f], _findings(verdict)


@pytest.mark.parametrize(
    ("command", "repeats"),
    [
        ([], 2),
        (["--repeats", "3"], 3),
        (["--repeats=1"], 1),
        (["--repeats", " 4"], 4),  # argparse's int() takes it
        (["--repeats", "0"], None),
        (["--repeats", "two"], None),
        (["--repeats"], None),
    ],
)
def test_the_pinned_repeats(command: list[str], repeats: int | None) -> None:
    assert _pinned_repeats(["{python}", "spark_bench.py", "eval", *command]) == repeats


def test_only_the_code_the_reading_follows_is_read(recorded: Recorded) -> None:
    """A suite whose grader reads answers otherwise (one character of ``_strip_fences``
    changed) is not the code :mod:`verify.sparkbench` follows; nor is one that defines it
    twice."""
    suite = _suite(recorded)
    wanted = READ_AS_OF[SPARK_SUITE]
    changed = suite.replace(
        b'r"```[A-Za-z0-9_+-]*[ \\t]*\\n?(.*?)```"', b'r"```[A-Za-z0-9_+-]*[ \\t]*\\n?(.*)```"', 1
    )
    assert changed != suite
    assert _digests(changed, wanted) != wanted
    twice = suite + b"\n\ndef _msg(prompt):\n    return [{'role': 'user', 'content': prompt}]\n"
    assert _digests(twice, wanted) != wanted


@pytest.mark.parametrize(
    ("recorded_version", "same"),
    [
        ("%d.%d.7 (main) [GCC]", True),
        ("%d.%d0.1", False),
        ("3.99.0", False),
    ],
)
def test_the_recorded_python(recorded_version: str, same: bool) -> None:
    version = recorded_version.replace("%d.%d", "{}.{}".format(*sys.version_info[:2]))
    assert _same_python(version) is same


@pytest.mark.parametrize(
    ("score", "repeats", "zeros", "most"),
    [
        (0.0, 2, 2, 1.0),  # all 0: alike
        (0.5, 2, 0, 1.0),  # no answer known: all may be alike
        (0.5, 2, 1, 0.001),  # 0 and 1 (the score's rounding allowed for)
        (0.25, 2, 1, 0.501),
        (1 / 3, 3, 1, 1 - 2 * (1 / 3 - 0.0005) * math.sqrt(0.5)),
        (0.9, 2, 1, 0.0),  # past what the answers allow: no consistency either
        (0.7, 1, 0, 1.0),  # one repeat: Spark's consistency is 1
    ],
)
def test_the_most_consistent_repeats(score: float, repeats: int, zeros: int, most: float) -> None:
    assert _most_consistent(score, repeats, zeros) == pytest.approx(most)


@pytest.mark.parametrize(
    ("command", "domains"),
    [
        ([], None),
        (["--domains", "code"], {"code"}),
        (["--domains=code,tool_use"], {"code", "tool_use"}),
        (["--domains", ""], None),
        (["--domains"], None),
    ],
)
def test_the_pinned_domains(command: list[str], domains: set[str] | None) -> None:
    assert _pinned_domains(["{python}", "spark_bench.py", "eval", *command]) == domains


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (None, f"{ENVIRONMENT} is not in the bundle)"),
        (b'{"python_version": "3.11.7"}', f"{ENVIRONMENT}"),  # not a record its model reads
    ],
    ids=["left-out", "not-a-record"],
)
def test_the_harness_environment_record_left_out_is_a_finding(
    recorded: Recorded, tmp_path: Path, record: bytes | None, why: str
) -> None:
    """Whether the answers compile depends on the harness's Python, which only its environment
    record names, read strictly by its model: left out or unreadable, the scores cannot be held
    to their answers, and that is a finding (the runner records one for every harness), not a
    check left out."""

    def edit(files: Files) -> None:
        if record is None:
            del files[ENVIRONMENT]
        else:
            files[ENVIRONMENT] = (record, files[ENVIRONMENT][1])
        _passed(("CODE-01", "1.0"))(files)

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    said = (
        f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: its code scenarios cannot be "
        "held to their answers: the sparkbench harness's interpreter has no readable "
        f"environment record (whether their code compiles depends on its Python; {why}"
    )
    assert [f for f in _findings(verdict) if f.startswith(said)], _findings(verdict)


def test_the_bound_is_the_same_read_whole_by_helpers_or_in_full(
    recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answers are read into each exchange's facts where a huge log is reduced in helper
    processes (ADR 0012) and from the whole exchanges otherwise: the forged pass gives the same
    verdict bytes both ways, and through helpers that get every line alone."""
    bundle = forged(recorded, tmp_path / "forged", _passed(("CODE-01", "1.0")))
    bounded = verdict_json(verify_bundle(bundle).verdict)
    full = verdict_json(verify_with_evidence(bundle)[0])
    monkeypatch.setattr(verify._shell, "PARALLEL_FROM", 0)
    monkeypatch.setattr(verify._parallel, "BATCH_LINES", 1)
    helped = verdict_json(verify_bundle(bundle, workers=2).verdict)
    assert bounded == full == helped
    assert b"CODE-01 scores 1; its answers earn at most 0" in bounded


# --- tier2 single-stream figures (shown, never scored) ------------------------------------------

SINGLE_STREAM = (
    f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: tier2 single-stream figures against "
    "the transport log: context 1024 (exchange 233): "
)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        # faster than the observer saw: each is a finding
        ([("ttft_ms", "2000.0"), ("prefill_tps", "512.0")],
         "a TTFT of 2000 ms, the observer saw its first token at 5549.2 ms"),
        ([("prefill_tps", "400.0")],
         "a prefill of 400 tok/s, its 1024 prompt tokens by the first token the observer saw "
         "allow 184.5"),
        ([("decode_tps", "240.0")],
         "a decode of 240 tok/s, 758 tokens from its TTFT to the end the observer saw at "
         "11881.0 ms allow 119.76"),
        ([("output_tokens", "1516")], "1516 output tokens, its reply's count is 758"),
    ],
    ids=["ttft", "prefill", "decode", "output-tokens"],
)  # fmt: skip
def test_tier2_figures_faster_than_the_observer_saw_are_found(
    recorded: Recorded, tmp_path: Path, changes: list[tuple[str, str]], said: str
) -> None:
    """The recorded run's tier2 single-stream figures at context 1024 (TTFT 5550.5 ms, decode
    119.71 tok/s, prefill 184.5 tok/s, 758 output tokens) are shown in the verdict, never
    scored; a publisher who makes them faster than the observer's clock allows is found."""

    verdict = _verdict(recorded, tmp_path / "forged", spark_changes("single_stream", *changes))
    (finding,) = _findings(verdict)  # a TTFT moved earlier leaves the other two short too
    assert finding.startswith(SINGLE_STREAM + said), finding


def test_tier2_problems_past_three_are_counted(recorded: Recorded, tmp_path: Path) -> None:
    """All four figures made faster: the finding says the first three and how many more."""
    changes = [("ttft_ms", "2000.0"), ("prefill_tps", "400.0"), ("decode_tps", "240.0"),
               ("output_tokens", "1516")]  # fmt: skip

    verdict = _verdict(recorded, tmp_path / "forged", spark_changes("single_stream", *changes))
    (finding,) = _findings(verdict)
    assert finding.startswith(SINGLE_STREAM + "a TTFT of 2000 ms"), finding
    assert finding.endswith("; and 1 more"), finding
    assert "1516 output tokens" not in finding


def test_tier2_figures_made_slower_hold(recorded: Recorded, tmp_path: Path) -> None:
    """Slower than the observer saw is no finding (a slower client is possible): a TTFT of
    6 s with its prefill, and a lower decode rate."""
    changes = [("ttft_ms", "6000.0"), ("prefill_tps", "170.7"), ("decode_tps", "100.0")]

    verdict = _verdict(recorded, tmp_path / "held", spark_changes("single_stream", *changes))
    assert verdict.integrity.status == "ok", _findings(verdict)


@pytest.mark.parametrize(
    ("command", "contexts"),
    [
        ([], [1024, 8192, 32768]),
        (["--throughput-contexts", "1024"], [1024]),
        (["--throughput-contexts=512, 2048,"], [512, 2048]),
        (["--throughput-contexts", "1024", "--skip-throughput"], []),
        (["--throughput-contexts", "1k"], None),
    ],
)
def test_the_pinned_contexts(command: list[str], contexts: list[int] | None) -> None:
    option = ("--throughput-contexts", "1024,8192,32768")
    assert _pinned_counts(["{python}", "spark_bench.py", "eval", *command], *option) == contexts


@pytest.mark.parametrize(
    ("command", "levels"),
    [
        ([], [1, 2, 4, 8]),
        (["--throughput-concurrency", "1"], [1]),
        (["--throughput-concurrency", "1", "--skip-throughput"], []),
        (["--throughput-concurrency", "x"], None),
        (["--throughput-concurrency", "8", "--throughput-concurrency=1,2"], [1, 2]),  # the last
    ],
)
def test_the_pinned_concurrency_levels(command: list[str], levels: list[int] | None) -> None:
    option = ("--throughput-concurrency", "1,2,4,8")
    assert _pinned_counts(["{python}", "spark_bench.py", "eval", *command], *option) == levels


# --- tier2 concurrency figures (shown, never scored) ----------------------------------------------

CONCURRENCY = (
    f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: tier2 concurrency figures against "
    "the transport log: batch 1 (exchange 234): "
)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ([("ttft_p50_ms", "200.0")],
         "a TTFT p50 of 200 ms, the observer's p50 of its replies' first tokens is 297.8 ms"),
        ([("ttft_p99_ms", "250.0")],
         "a TTFT p99 of 250 ms, the observer's p99 of its replies' first tokens is 297.8 ms"),
        ([("ttft_p99_ms", "298.0")], "a TTFT p50 of 299.3 ms above its p99 of 298 ms"),
        ([("agg_decode_tps", "120.0")],
         "an aggregate decode of 120 tok/s, 143 tokens in the 1505.9 ms the observer saw them "
         "in allow 95.0"),
        ([("per_stream_tps", "150.0")],
         "a per-stream decode of 150 tok/s, its replies' tokens from the latest TTFT to the "
         "ends the observer saw allow 118.61"),
    ],
    ids=["p50", "p99", "order", "aggregate", "per-stream"],
)  # fmt: skip
def test_tier2_concurrency_figures_faster_than_the_observer_saw_are_found(
    recorded: Recorded, tmp_path: Path, changes: list[tuple[str, str]], said: str
) -> None:
    """The recorded run's one concurrency level (batch 1, exchange 234: first token at 297.8
    ms, 143 tokens by 1505.9 ms) shows an aggregate of 94.7 tok/s, a per-stream rate of 118.33
    and a TTFT p50 and p99 of 299.3 ms, shown, never scored; made faster than the observer's
    clock allows, each is found."""

    verdict = _verdict(recorded, tmp_path / "forged", spark_changes("concurrency", *changes))
    (finding,) = _findings(verdict)
    assert finding.startswith(CONCURRENCY + said), finding


def test_tier2_concurrency_figures_made_slower_hold(recorded: Recorded, tmp_path: Path) -> None:
    """Slower than the observer saw is no finding: a later TTFT p50 and p99, lower rates."""
    changes = [("ttft_p50_ms", "400.0"), ("ttft_p99_ms", "900.0"), ("agg_decode_tps", "50.0"),
               ("per_stream_tps", "60.0")]  # fmt: skip

    verdict = _verdict(recorded, tmp_path / "held", spark_changes("concurrency", *changes))
    assert verdict.integrity.status == "ok", _findings(verdict)


def _replies(*timings: tuple[float, float, float] | None) -> list[tuple[float, SparkReply]]:
    """A level's exchanges, all started at 10 s: each (first, done, completion) as the
    observer saw it, or None for a reply Spark's client raises on."""
    return [
        (10.0, SparkReply(b"", None, None, SparkTiming(*t, None), concurrency=True))
        if t is not None
        else (10.0, SparkReply(b"", "raises", "raises", None, concurrency=True))
        for t in timings
    ]


def test_a_level_s_percentiles_are_spark_s_order_statistics() -> None:
    """Four replies read, first tokens at 0.1, 0.2, 0.3 and 0.4 s: Spark's ``_pct`` takes the
    p50 at index round(1.5) = 2 (0.3 s) and the p99 at index 3 (0.4 s); a reply the client
    raises on is not among them."""
    batch = _replies((0.1, 1, 10), (0.4, 1, 10), (0.2, 1, 10), None, (0.3, 1, 10))
    row = {"ttft_p50_ms": 299.0, "ttft_p99_ms": 399.0}
    assert _concurrency_problems("b", batch, row) == []
    row = {"ttft_p50_ms": 297.0, "ttft_p99_ms": 397.0}
    assert _concurrency_problems("b", batch, row) == [
        "b: a TTFT p50 of 297 ms, the observer's p50 of its replies' first tokens is 300.0 ms",
        "b: a TTFT p99 of 397 ms, the observer's p99 of its replies' first tokens is 400.0 ms",
    ]


def test_a_level_whose_replies_the_client_reads_none_of_has_no_figures() -> None:
    batch = _replies(None, None)
    assert _concurrency_problems("b", batch, {"agg_decode_tps": 1.0}) == [
        "b: figures, but Spark's client reads none of its replies (no figures: an error row)"
    ]


def test_a_level_with_a_reply_this_reading_cannot_tell_is_left_alone() -> None:
    unsure = (10.0, SparkReply(b"", None, None, None, concurrency=True))
    batch = [*_replies((0.3, 1, 10)), unsure]
    assert _concurrency_problems("b", batch, {"ttft_p50_ms": 1.0, "agg_decode_tps": 1e6}) == []


def test_the_per_stream_rate_is_bounded_only_while_the_p99_is_the_latest_ttft() -> None:
    """With up to 51 replies read, Spark's p99 is the latest TTFT (index round(0.99 x 50) = 50,
    Python rounding half to even), so each reply's decode time is at least its end less the
    p99; with 52 or more it need not be, and no bound is drawn."""
    for count, found in ((50, True), (51, True), (52, False)):
        batch = _replies(*[(0.1, 1.1, 100)] * count)
        row = {"ttft_p99_ms": 100.0, "per_stream_tps": 500.0}
        assert bool(_concurrency_problems("b", batch, row)) is found, count
