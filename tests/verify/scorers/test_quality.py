"""Quality measurement replay (seed 001): worked examples, properties, refusals, the CLI."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.errors import CheckFailed
from verify.scorers import quality
from verify.scorers.quality import QualityRefused

from .quality_data import (
    Figure,
    PairsRun,
    conversation,
    example_pairs,
    example_tasks,
    graded_tasks,
    jsonl,
    pairs_score,
    quality_stream,
    tasks_score,
    winning_pairs,
    write_measurement,
)


def replay_pairs(files: dict[str, Path]) -> quality.QualityPairsScore:
    return quality.replay_pairs({k: (v.read_bytes(), v.name) for k, v in files.items()})


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pairs_argv(files: dict[str, Path]) -> list[str]:
    argv = ["score", "quality", "pairs"]
    for name, path in files.items():
        argv += [f"--{name.replace('_', '-')}", str(path)]
    return argv


# --- worked examples (docs/scorers.md) --------------------------------------------------------


def test_pairs_worked_example(tmp_path: Path) -> None:
    result = replay_pairs(example_pairs().write(tmp_path))
    lines = {line.pair: line for line in result.pair_lines}
    # By hand: side score = mean log-odds over the two items.
    assert (lines[1].a, lines[1].b, lines[1].delta, lines[1].result) == (0.5, 1.75, 1.25, "win")
    assert (lines[2].a, lines[2].b, lines[2].delta, lines[2].result) == (0.0, -0.125, -0.125, "tie")
    assert (lines[3].a, lines[3].b, lines[3].delta, lines[3].result) == (2.0, 0.5, -1.5, "loss")
    # Item "kind" of pair 2: -0.5 - (-1.0) = 0.5 is not above the margin: a tie.
    assert lines[2].items["kind"].result == "tie"
    assert lines[2].items["clear"].result == "loss"
    summary = result.summary
    assert (summary.overall.wins, summary.overall.losses, summary.overall.ties) == (1, 1, 1)
    assert summary.overall.win_rate == 0.5
    # Wilson at n = 3, p = 1/2 is symmetric about 1/2: half = z sqrt(1/12 + z^2/36) / (1 + z^2/3).
    z = 1.6448536269514722
    half = z * math.sqrt(1 / 12 + z * z / 36) / (1 + z * z / 3)
    assert summary.overall.wilson_low == pytest.approx(0.5 - half, abs=1e-15)
    assert summary.overall.wilson_high == pytest.approx(0.5 + half, abs=1e-15)
    assert summary.overall.wilson_low == pytest.approx(0.155691, abs=1e-6)
    assert summary.items["clear"].win_rate == pytest.approx(1 / 3)
    assert summary.items["kind"].win_rate == 0.5
    assert (summary.margin, summary.margin_unit, summary.confidence) == (0.5, "nats", 0.9)
    assert [c.status for c in result.checks] == ["pass", "pass"]


def test_z_is_the_nominal_90_percent_quantile() -> None:
    assert pytest.approx(1.6448536269514722, abs=1e-15) == quality.Z


def test_tasks_worked_example(tmp_path: Path) -> None:
    run = example_tasks()
    files = run.write(tmp_path)
    result = quality.replay_tasks(
        (files["tasks"].read_bytes(), "tasks"),
        (files["logits"].read_bytes(), "logits"),
        "valence",
        "0,0.5",
        (files["claimed"].read_bytes(), "capability.jsonl"),
    )
    plain, working = result.doses
    assert [i.largest for i in plain.items] == ["A", "B", "D"]  # q2's B-C tie keeps B
    assert plain.capability.model_dump() == {
        "axis": "valence", "dose": 0.0, "score": 2 / 3, "items": 3
    }  # fmt: skip
    assert working.capability.score == 2 / 3
    assert working.lost == ("q1",)
    assert plain.lost == ()
    assert result.checks[0].status == "pass"
    # The capability line has the seed's form.
    assert canonical_bytes(plain.capability.model_dump(mode="json")) == (
        b'{"axis":"valence","dose":0,"items":3,"score":0.6666666666666666}'
    )


# --- properties -------------------------------------------------------------------------------

logit = st.floats(min_value=-20, max_value=20, allow_nan=False).map(lambda x: round(x, 3))


@st.composite
def pair_runs(draw: st.DrawFn) -> PairsRun:
    n = draw(st.integers(1, 12))
    items = draw(st.sampled_from([("i1",), ("i1", "i2"), ("i1", "i2", "i3")]))
    logits = {
        (p, s, i): (draw(logit), draw(logit))
        for p in range(1, n + 1)
        for s in ("a", "b")
        for i in items
    }
    return PairsRun(
        [conversation(f"c{p}") for p in range(1, n + 1)], [(i, f"{i}?") for i in items], logits
    )


def _scored(run: PairsRun) -> quality.QualitySummaryLine:
    pairs = quality.parse_pairs(jsonl(run.conversations), "pairs")
    rubric = quality.parse_rubric("".join(f"{i}\t{q}\n" for i, q in run.rubric).encode(), "rubric")
    return quality.score_pairs(pairs, rubric, quality.parse_pair_logits(run.logit_lines(), "l"))[1]


@settings(max_examples=200, deadline=None)
@given(pair_runs())
def test_swapping_sides_mirrors_the_win_rate(run: PairsRun) -> None:
    swapped = PairsRun(
        run.conversations,
        run.rubric,
        {(p, "b" if s == "a" else "a", i): v for (p, s, i), v in run.logits.items()},
    )
    one, other = _scored(run), _scored(swapped)
    assert (one.overall.wins, one.overall.losses) == (other.overall.losses, other.overall.wins)
    assert one.overall.ties == other.overall.ties
    assert one.overall.win_rate == pytest.approx(1 - other.overall.win_rate, abs=1e-15)
    assert one.overall.wilson_low == pytest.approx(1 - other.overall.wilson_high, abs=1e-12)
    for item, tally in one.items.items():
        assert tally.win_rate + other.items[item].win_rate == pytest.approx(1, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(pair_runs(), st.randoms(use_true_random=False))
def test_the_order_of_recorded_logits_changes_nothing(run: PairsRun, random: object) -> None:
    shuffled = list(run.logits.items())
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert _scored(PairsRun(run.conversations, run.rubric, dict(shuffled))) == _scored(run)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300))
def test_wilson_bounds_hold_the_win_rate(wins: int, losses: int, ties: int) -> None:
    n = wins + losses + ties
    if n == 0:
        return
    low, high = quality.wilson(wins, ties, n)
    rate = (2 * wins + ties) / (2 * n)
    assert 0 <= low <= rate <= high <= 1


# --- the run's files --------------------------------------------------------------------------


def test_a_claimed_number_that_differs_fails(tmp_path: Path) -> None:
    files = example_pairs().write(tmp_path)
    lines = files["claimed"].read_bytes().splitlines()
    record = json.loads(lines[1])
    record["b"] += 0.001
    lines[1] = json.dumps(record).encode()
    files["claimed"].write_bytes(b"\n".join(lines) + b"\n")
    check = replay_pairs(files).checks[0]
    assert check.status == "fail"
    assert "pairs.jsonl:2: $.b: claimed" in check.message


def test_a_claimed_result_that_differs_fails_even_within_tolerance(tmp_path: Path) -> None:
    files = example_pairs().write(tmp_path)
    text = files["claimed"].read_text().replace('"result":"tie"', '"result":"win"', 1)
    files["claimed"].write_text(text)
    assert replay_pairs(files).checks[0].status == "fail"


def test_single_precision_claims_agree(tmp_path: Path) -> None:
    files = example_pairs().write(tmp_path)
    lines = files["claimed"].read_bytes().splitlines()
    record = json.loads(lines[0])
    record["b"] = 1.7500001  # what a float32 kernel might print
    lines[0] = json.dumps(record).encode()
    files["claimed"].write_bytes(b"\n".join(lines) + b"\n")
    assert replay_pairs(files).checks[0].status == "pass"


def test_blind_key_and_transcripts_checked_together(tmp_path: Path) -> None:
    files = example_pairs().write(tmp_path)
    ok = replay_pairs(files).checks[1]
    assert ok.status == "pass"
    assert "X is side b in 2" in ok.message
    key = files["blind_key"].read_text().splitlines()
    key[0] = (
        key[0].replace("\tb\ta", "\ta\tb")
        if "\tb\ta" in key[0]
        else key[0].replace("\ta\tb", "\tb\ta")
    )
    files["blind_key"].write_text("\n".join(key) + "\n")
    failed = replay_pairs(files).checks[1]
    assert failed.status == "fail"
    assert "pair 1 does not show" in failed.message


def test_a_missing_query_is_a_failed_run(tmp_path: Path) -> None:
    run = example_pairs()
    del run.logits[2, "b", "kind"]  # type: ignore[attr-defined]
    files = run.write(tmp_path / "x", claimed=False, blind=False)
    with pytest.raises(CheckFailed, match="pair 2 side b item kind: no recorded logits"):
        replay_pairs(files)


# --- refusals (exit 2, the limit named) --------------------------------------------------------


def _refused_pairs(tmp_path: Path, conversations: bytes, rubric: bytes, match: str) -> None:
    files = example_pairs().write(tmp_path, claimed=False, blind=False)
    files["pairs"].write_bytes(conversations)
    files["rubric"].write_bytes(rubric)
    with pytest.raises(QualityRefused, match=match):
        replay_pairs(files)


RUBRIC = b"clear\tIs the reply clear?\nkind\tIs the reply kind?\n"
PAIRS = jsonl([conversation(f"pair-{n}") for n in (1, 2, 3)])
TURN = {"user": "u", "a": "a", "b": "b"}


@pytest.mark.parametrize(
    ("conversations", "rubric", "match"),
    [
        (b"", RUBRIC, "holds no pair"),
        (jsonl([conversation(f"c{i}") for i in range(257)]), RUBRIC, "the limit is 256"),
        (jsonl([{"name": "x", "turns": []}]), RUBRIC, "1 to 16 turns"),
        (jsonl([{"name": "x", "turns": [TURN] * 17}]), RUBRIC, "1 to 16 turns"),
        (jsonl([{"turns": [TURN]}]), RUBRIC, "needs a name"),
        (jsonl([{"name": "x", "turns": [{"user": "u", "a": "a"}]}]), RUBRIC, "user, a and b"),
        (jsonl([{"name": "x", "turns": [TURN], "extra": 1}]), RUBRIC, "needs a name"),
        (jsonl([{"name": "x", "turns": [TURN | {"a": "é" * 40_000}]}]), RUBRIC, "65,536"),
        (jsonl([{"name": "x", "turns": [TURN | {"b": "w" * 8_192}]}]), RUBRIC, "8,192 bytes"),
        (b'{"name": "x", "name": "y", "turns": []}\n', RUBRIC, "duplicate key"),
        (PAIRS, b"", "holds no item"),
        (PAIRS, b"".join(b"i%d\tq?\n" % i for i in range(17)), "the limit is 16"),
        (PAIRS, b"bad id\tq?\n", "letters, digits, underscore and dash"),
        (PAIRS, b"i" * 32 + b"\tq?\n", "under 32 bytes"),
        (PAIRS, b"ok\t" + b"q" * 512 + b"\n", "1 to 511 bytes"),
        (PAIRS, b"ok\tq?\tmore\n", "a second tab"),
        (PAIRS, b"ok q?\n", "no tab"),
        (PAIRS, b"ok\tq?\nok\tq2?\n", "given twice"),
    ],
)
def test_pair_mode_refusals(
    tmp_path: Path, conversations: bytes, rubric: bytes, match: str
) -> None:
    _refused_pairs(tmp_path, conversations, rubric, match)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ({"query_bytes": 8_193}, "does not fit 8,192 bytes"),
        ({"pair": 4}, "holds 3 pairs"),
        ({"item": "other"}, "not an item of the rubric"),
        ({"logit_yes": "1"}, "logit_yes"),
    ],
)
def test_pair_logit_refusals(tmp_path: Path, edit: dict[str, object], match: str) -> None:
    files = example_pairs().write(tmp_path, claimed=False, blind=False)
    lines = [json.loads(line) for line in files["logits"].read_text().splitlines()]
    lines[0] |= edit
    files["logits"].write_bytes(jsonl(lines))
    with pytest.raises(Exception, match=match) as caught:
        replay_pairs(files)
    assert getattr(caught.value, "exit_code", None) == 2


def test_logits_recorded_twice_are_refused(tmp_path: Path) -> None:
    files = example_pairs().write(tmp_path, claimed=False, blind=False)
    data = files["logits"].read_bytes()
    files["logits"].write_bytes(data + data.splitlines(keepends=True)[0])
    with pytest.raises(QualityRefused, match="recorded twice"):
        replay_pairs(files)


@pytest.mark.parametrize(
    ("doses", "match"),
    [
        ("", "the dose list is empty"),
        ("0,1,2,3,4,5,6,7,8", "the limit is 8 values"),
        ("0,-0.5", "under zero"),
        ("0,abc", "not a figure"),
        ("0,nan", "not a figure"),
        ("0,0.0", "given twice"),
    ],
)
def test_dose_refusals(doses: str, match: str) -> None:
    with pytest.raises(QualityRefused, match=match):
        quality.parse_doses(doses)


TASK = ("t1", "Pick A.", "a", "b", "c", "d", "A")


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([], "holds no item"),
        ([TASK[:6]], "holds 6"),
        ([(*TASK[:6], "")], "with an empty one"),
        ([("t" * 32, *TASK[1:])], "32 bytes or more"),
        ([(*TASK[:6], "E")], "not one letter of A to D"),
        ([(*TASK[:2], "x" * 8_200, *TASK[3:])], "8,192"),
        ([(f"t{i}", *TASK[1:]) for i in range(257)], "the limit is 256"),
        ([TASK, TASK], "given twice"),
    ],
)
def test_task_file_refusals(lines: list[tuple[str, ...]], match: str) -> None:
    data = "".join("\t".join(line) + "\n" for line in lines).encode()
    with pytest.raises(QualityRefused, match=match):
        quality.parse_tasks(data, "tasks.tsv")


def test_a_task_query_over_8448_bytes_is_refused(tmp_path: Path) -> None:
    files = example_tasks().write(tmp_path, claimed=False)
    text = files["logits"].read_text().replace('"query_bytes": 300', '"query_bytes": 8449', 1)
    files["logits"].write_text(text)
    with pytest.raises(QualityRefused, match="does not fit 8,448 bytes"):
        quality.replay_tasks(
            (files["tasks"].read_bytes(), "t"), (files["logits"].read_bytes(), "l"),
            "valence", "0,0.5", None,
        )  # fmt: skip


# --- the protocol -----------------------------------------------------------------------------


def protocol(root: Path, **kwargs: object) -> quality.QualityProtocolReport:
    from audit.cli.score import _protocol  # noqa: PLC0415 - the CLI's own reader of measurement files

    pairs = kwargs.pop("pairs", winning_pairs(40, wins=36, ties=4))
    tasks = kwargs.pop("tasks", graded_tasks(20, plain=20, working=19))
    return _protocol(write_measurement(root, pairs, tasks, **kwargs))  # type: ignore[arg-type]


def test_a_gain(tmp_path: Path) -> None:
    report = protocol(tmp_path)
    assert report.verdict == "a gain"
    assert all(c.met for c in report.conditions)
    # 19/20 against 20/20 is exactly 0.05 apart: within, although 1 - 0.95 > 0.05 in floats.
    assert next(c for c in report.conditions if c.id == "task_cost").met


@pytest.mark.parametrize(
    ("kwargs", "verdict", "failed"),
    [
        ({"on": (0.77, 0.1)}, "a style gain at a cost", "coherence"),
        ({"on": (0.8, 0.13)}, "a style gain at a cost", "repetition"),
        ({"tasks": graded_tasks(20, plain=20, working=18)}, "a style gain at a cost", "task_cost"),
        ({"pairs": winning_pairs(40, wins=10, ties=20)}, "no measured gain", "win_rate"),
        ({"pairs": winning_pairs(31, wins=31)}, "no measured gain", "win_rate"),
        ({"pairs": winning_pairs(32, wins=19, ties=2)}, "no measured gain", "win_rate"),
        ({"blind_read": False}, "incomplete", "blind_read"),
    ],
)
def test_protocol_verdicts(
    tmp_path: Path, kwargs: dict[str, object], verdict: str, failed: str
) -> None:
    report = protocol(tmp_path, **kwargs)
    assert report.verdict == verdict
    assert [c.id for c in report.conditions if not c.met] == [failed]


def test_the_working_dose_must_have_been_measured(tmp_path: Path) -> None:
    with pytest.raises(QualityRefused, match="the working dose"):
        protocol(tmp_path, working_dose=0.5)


# --- decimals as recorded ---------------------------------------------------------------------
#
# The seed's thresholds are decimals and so are the numbers a run records; the comparisons are
# made on those decimals (quality.recorded), never on binary floats.


@cache
def _gain_scores() -> tuple[quality.QualityPairsScore, quality.QualityTasksScore]:
    """A pair mode and a task mode that meet their conditions (a gain apart from the means)."""
    return pairs_score(winning_pairs(40, wins=36, ties=4)), tasks_score(graded_tasks(20, 20, 19))


Lines = list[tuple[Figure, Figure]]


def judged(off: Lines, on: Lines) -> quality.QualityProtocolReport:
    pairs, tasks = _gain_scores()
    streams = (
        quality.parse_quality_stream(quality_stream(off), "off/quality.jsonl"),
        quality.parse_quality_stream(quality_stream(on), "on/quality.jsonl"),
    )
    return quality.judge_protocol(pairs, tasks, 0.25, streams, None)


def met(report: quality.QualityProtocolReport) -> dict[str, bool]:
    return {c.id: c.met for c in report.conditions}


def test_the_float_differences_these_edges_guard_against() -> None:
    # What binary floats say at the edges below; the decimals say exactly 0.02 each time.
    assert 0.80 - 0.78 > 0.02
    assert 0.07 - 0.05 > 0.02
    assert (1.3 - 0.2) - (0.6 - 0.0) > 0.5


@pytest.mark.parametrize(
    ("off", "on", "expected"),
    [
        ("0.80", "0.78", True),  # a drop of exactly 0.02
        ("0.8", "0.78", True),  # the same decimals, written shorter
        (0.8, 0.78, True),  # as a JSON writer prints the doubles
        ("0.80000000000000004", "0.78000000000000003", True),  # %.17g of the same doubles
        ("0.80", "0.7800001", True),  # a drop of 0.0199999
        ("0.80", "0.7799999", False),  # a drop of 0.0200001
        ("0.05", "0.03", True),
        ("0.05", "0.0299999", False),
        ("1", "0.98", True),  # an integer recorded
        ("1", "0.9799999", False),
        ("-0.01", "-0.03", True),
        ("-0.01", "-0.0300001", False),
        ("0.78", "0.80", True),  # a rise of 0.02 is no cost
        ("0.7799999", "0.80", True),  # nor is a rise of 0.0200001
        ("0.5", "0.9", True),
    ],
)
def test_coherence_edges(off: str | float, on: str | float, expected: bool) -> None:
    report = judged([(off, "0.1")], [(on, "0.1")])
    assert met(report)["coherence"] is expected
    assert met(report)["repetition"]
    assert report.verdict == ("incomplete" if expected else "a style gain at a cost")


@pytest.mark.parametrize(
    ("off", "on", "expected"),
    [
        ("0.78", "0.80", True),  # a rise of exactly 0.02
        (0.78, 0.8, True),
        ("0.78000000000000003", "0.80000000000000004", True),
        ("0.78", "0.7999999", True),  # a rise of 0.0199999
        ("0.78", "0.8000001", False),  # a rise of 0.0200001
        ("0.05", "0.07", True),
        ("0.05", "0.0700001", False),
        ("0", "0.02", True),
        ("0", "0.0200001", False),
        ("0.1", "0.12", True),
        ("0.1", "0.1200001", False),
        ("0.80", "0.78", True),  # a fall of 0.02 is no cost
        ("0.8000001", "0.78", True),  # nor is a fall of 0.0200001
    ],
)
def test_repetition_edges(off: str | float, on: str | float, expected: bool) -> None:
    report = judged([("0.8", off)], [("0.8", on)])
    assert met(report)["repetition"] is expected
    assert met(report)["coherence"]
    assert report.verdict == ("incomplete" if expected else "a style gain at a cost")


@pytest.mark.parametrize(
    ("off", "on", "expected"),
    [
        (["0.79", "0.81"], ["0.77", "0.79"], True),  # means 0.80 and 0.78
        (["0.8"] * 3, ["0.78"] * 3, True),  # fsum / 3 makes it 0.02000000000000024
        (["0.7", "0.8", "0.9"], ["0.68", "0.78", "0.88"], True),
        (["0.7", "0.8", "0.9"], ["0.68", "0.78", "0.8799997"], False),  # 0.0200001
        (["0.1", "0.1", "0.11"], ["0.08", "0.08", "0.09"], True),  # 0.31/3 - 0.25/3 = 0.02
        (["0.8"], ["0.77", "0.79"], True),  # a mean of one line against a mean of two
        (["0.8"], ["0.77", "0.7899998"], False),
    ],
)
def test_means_are_exact_over_the_recorded_lines(
    off: list[str], on: list[str], expected: bool
) -> None:
    coherence = judged([(c, "0.1") for c in off], [(c, "0.1") for c in on])
    assert met(coherence)["coherence"] is expected
    # The same numbers as repetition, the other way round: on above off.
    repetition = judged([("0.8", r) for r in on], [("0.8", r) for r in off])
    assert met(repetition)["repetition"] is expected


def test_the_observed_means_are_shown_exactly() -> None:
    report = judged([("0.80", "0.78")], [("0.7799999", "0.80")])
    shown = {c.id: c.observed for c in report.conditions}
    assert shown["coherence"] == "on 0.7799999, off 0.8, on - off -0.0200001"
    assert shown["repetition"] == "on 0.8, off 0.78, on - off 0.02"
    assert report.means == {
        "coherence_off": 0.8, "coherence_on": 0.7799999,
        "repetition_off": 0.78, "repetition_on": 0.8,
    }  # fmt: skip
    thirds = judged([("0.1", "0"), ("0.1", "0"), ("0.11", "0")], [("0.1", "0")])
    observed = next(c.observed for c in thirds.conditions if c.id == "coherence")
    assert observed.startswith("on 0.1, off 0.10333333333333333 (rounded), ")


def test_the_edge_through_the_measurement_files(tmp_path: Path) -> None:
    report = protocol(tmp_path / "met", off=("0.80", "0.78"), on=("0.78", "0.80"))
    assert report.verdict == "a gain"
    report = protocol(tmp_path / "coherence", off=("0.80", "0.1"), on=("0.7799999", "0.1"))
    assert report.verdict == "a style gain at a cost"
    assert [c.id for c in report.conditions if not c.met] == ["coherence"]
    report = protocol(tmp_path / "repetition", off=("0.8", "0.78"), on=("0.8", "0.8000001"))
    assert [c.id for c in report.conditions if not c.met] == ["repetition"]


def _figure(value: int, places: int, padded: bool) -> str:
    """``value`` / 10**places as JSON text: padded to ``places`` decimals, or as a writer
    prints the double (its shortest round-trip form)."""
    if not padded:
        return json.dumps(value / 10**places)
    whole, part = divmod(abs(value), 10**places)
    return f"{'-' if value < 0 else ''}{whole}.{part:0{places}d}"


@st.composite
def stream_values(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    """(places, off, on): lines as integers in units of 10**-places, often 0.02 apart."""
    places = draw(st.sampled_from([2, 3, 4, 7]))
    one = 10**places
    off = draw(st.lists(st.integers(-one, one), min_size=1, max_size=6))
    if draw(st.booleans()):
        slack, sign = 2 * one // 100, draw(st.sampled_from([-1, 1]))
        on = [v + sign * slack + draw(st.integers(-1, 1)) for v in off]
    else:
        on = draw(st.lists(st.integers(-one, one), min_size=1, max_size=6))
    return places, off, on


@settings(max_examples=300, deadline=None)
@given(stream_values(), stream_values(), st.booleans())
def test_the_mean_conditions_are_the_decimal_arithmetic(
    coherence: tuple[int, list[int], list[int]],
    repetition: tuple[int, list[int], list[int]],
    padded: bool,
) -> None:
    def sides(places: int, off: list[int], on: list[int]) -> tuple[list[str], list[str]]:
        return [_figure(v, places, padded) for v in off], [_figure(v, places, padded) for v in on]

    (c_off, c_on), (r_off, r_on) = sides(*coherence), sides(*repetition)
    # The two lists of one side may differ in length, so each condition gets streams of its own.
    c_report = judged([(c, "0") for c in c_off], [(c, "0") for c in c_on])
    r_report = judged([("0", r) for r in r_off], [("0", r) for r in r_on])

    def within(places: int, larger: list[int], smaller: list[int]) -> bool:
        # mean(larger) - mean(smaller) <= 0.02, in integers.
        slack = 2 * 10**places // 100
        left = sum(larger) * len(smaller) - sum(smaller) * len(larger)
        return left <= slack * len(larger) * len(smaller)

    places, off, on = coherence
    assert met(c_report)["coherence"] is within(places, off, on)
    places, off, on = repetition
    assert met(r_report)["repetition"] is within(places, on, off)
    # The mean itself is the exact mean of the decimals.
    places, off, _ = coherence
    mean = quality.parse_quality_stream(quality_stream([(c, "0") for c in c_off]), "q")[0]
    assert mean == Fraction(sum(off), 10**places * len(off))


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [
        # 1.1 - 0.6 = 0.5 exactly, a tie; 0.5000000000000001 in floats, a win.
        (((0.6, 0.0),), ((1.3, 0.2),), "tie"),
        (((1.3, 0.2),), ((0.6, 0.0),), "tie"),  # -0.5 exactly
        (((0.6, -0.0000001),), ((1.3, 0.2),), "tie"),  # 0.4999999
        (((0.6, 0.0000001),), ((1.3, 0.2),), "win"),  # 0.5000001
        (((1.3, 0.2),), ((0.6, 0.0000001),), "loss"),  # -0.5000001
        (((0.6, 0.0), (0.1, 0.0)), ((1.3, 0.2), (0.7, 0.1)), "tie"),  # both items 0.5: mean 0.5
        (((0.6, 0.0), (0.1, 0.0)), ((1.3, 0.2), (0.7, 0.0999998)), "win"),  # mean 0.5000001
    ],
)
def test_the_margin_is_compared_with_the_recorded_decimals(
    a: tuple[tuple[float, float], ...], b: tuple[tuple[float, float], ...], result: str
) -> None:
    items = [f"i{n}" for n in range(len(a))]
    logits = {(1, "a", i): v for i, v in zip(items, a, strict=True)}
    logits |= {(1, "b", i): v for i, v in zip(items, b, strict=True)}
    run = PairsRun([conversation("c1")], [(i, f"{i}?") for i in items], logits)
    line = pairs_score(run).pair_lines[0]
    assert line.result == result
    if len(items) == 1:
        assert line.items["i0"].result == result


@st.composite
def margin_runs(draw: st.DrawFn) -> tuple[PairsRun, dict[tuple[int, str], int]]:
    """Runs whose logits are thousandths, item deltas often within one of +-0.5 nats; with the
    exact item deltas in thousandths."""
    n = draw(st.integers(1, 6))
    items = [f"i{k}" for k in range(draw(st.integers(1, 3)))]
    value = st.integers(-20_000, 20_000)
    logits: dict[tuple[int, str, str], tuple[float, float]] = {}
    deltas: dict[tuple[int, str], int] = {}
    for p in range(1, n + 1):
        for item in items:
            ya, na, nb = draw(value), draw(value), draw(value)
            if draw(st.booleans()):
                yb = nb + (ya - na) + draw(st.sampled_from([-500, 500])) + draw(st.integers(-1, 1))
            else:
                yb = draw(value)
            logits[p, "a", item] = (ya / 1000, na / 1000)
            logits[p, "b", item] = (yb / 1000, nb / 1000)
            deltas[p, item] = (yb - nb) - (ya - na)
    run = PairsRun(
        [conversation(f"c{p}") for p in range(1, n + 1)], [(i, f"{i}?") for i in items], logits
    )
    return run, deltas


def _expected(delta: int, margin: int) -> str:
    return "win" if delta > margin else "loss" if delta < -margin else "tie"


@settings(max_examples=200, deadline=None)
@given(margin_runs())
def test_pair_results_are_the_decimal_arithmetic(
    case: tuple[PairsRun, dict[tuple[int, str], int]],
) -> None:
    run, deltas = case
    k = len(run.rubric)
    for line in pairs_score(run).pair_lines:
        mine = {item: d for (p, item), d in deltas.items() if p == line.pair}
        assert {i: o.result for i, o in line.items.items()} == {
            i: _expected(d, 500) for i, d in mine.items()
        }
        # The side scores are means over k items: b - a > 0.5 is sum(deltas) > 0.5 k.
        assert line.result == _expected(sum(mine.values()), 500 * k)


# --- the CLI ----------------------------------------------------------------------------------


def test_cli_pairs_json_is_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*pairs_argv(example_pairs().write(tmp_path)), "--json"]
    code, first, _ = cli(argv, capsys)
    assert code == 0
    assert cli(argv, capsys)[1] == first
    assert json.loads(first)["summary"]["overall"]["win_rate"] == 0.5


def test_cli_pairs_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(pairs_argv(example_pairs().write(tmp_path)), capsys)
    assert code == 0
    assert "margin 0.5 nats" in out
    assert "blind_files" in out


def test_cli_exit_1_when_the_claims_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = example_pairs().write(tmp_path)
    files["claimed"].write_text(files["claimed"].read_text().replace('"cut":0', '"cut":1', 1))
    code, _, err = cli(pairs_argv(files), capsys)
    assert code == 1
    assert err.startswith("audit score quality: claimed_pairs failed: ")
    assert "$.cut: claimed 1, replayed 0" in err


def test_cli_exit_2_names_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = example_pairs().write(tmp_path, claimed=False, blind=False)
    files["pairs"].write_bytes(jsonl([conversation(f"c{i}") for i in range(257)]))
    code, _, err = cli(pairs_argv(files), capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "the limit is 256" in err


def test_cli_tasks_print_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = example_tasks().write(tmp_path)
    argv = ["score", "quality", "tasks", "--tasks", str(files["tasks"]), "--logits",
            str(files["logits"]), "--axis", "valence", "--doses", "0,0.5", "--claimed",
            str(files["claimed"]), "--print-items"]  # fmt: skip
    code, out, _ = cli(argv, capsys)
    assert code == 0
    assert "dose 0 q2: answer C largest B result 0 logit 1" in out
    assert '{"axis":"valence","dose":0.5,"items":3,"score":0.6666666666666666}' in out
    code, _, err = cli([*argv[:-1], "--doses", "0,0.5,1"], capsys)
    assert code == 1
    assert "dose 1 item q1: no recorded logits" in err


def test_cli_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_measurement(tmp_path, winning_pairs(40, wins=36), graded_tasks(4, 4, 4))
    code, out, _ = cli(["score", "quality", "protocol", str(path), "--json"], capsys)
    assert code == 0
    assert json.loads(out)["verdict"] == "a gain"
    code, out, _ = cli(["score", "quality", "protocol", str(path)], capsys)
    assert code == 0
    assert "paired-substrate protocol: a gain" in out


def test_cli_protocol_refuses_paths_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_measurement(tmp_path, winning_pairs(4, wins=4), graded_tasks(4, 4, 4))
    measurement = json.loads(path.read_text())
    measurement["quality_on"] = "../elsewhere/quality.jsonl"
    path.write_text(json.dumps(measurement))
    code, _, err = cli(["score", "quality", "protocol", str(path)], capsys)
    assert code == 2
    assert "$.quality_on" in err


def test_cli_quality_without_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(["score", "quality"], capsys)
    assert code == 2
    assert "give a mode: pairs, tasks, protocol" in err
