"""Hostile tests of 2026-12-05 (n): the component windows against each other and against the
observer's clock, attacked both ways.

Attacked: commits d6246f5 (``verify/_consistency/times.py`` ``_overlaps``), e2f2096
(``audit/run.py`` ``_Clock``: one wall reading plus the monotonic clock), 5aed64e (windows of
one upstream overlap only from one start; unreadable or missing times) and ae87d95
(``verify/_consistency/times.py`` ``_on_the_log_clock``: one offset from the observer's monotonic
clock to the windows puts every exchange labelled with a component inside its window, 2 s
either side, and every ``identity``/``probes`` exchange before the earliest window). Honest
runs are ``audit.run.run_qualification`` against the reference endpoint, recorded once for the
module in threads; forgeries are the example run gx10-full-not-qualified under the tests'
deployment pin set, edited and resealed with claims equal to the replay
(``tests.decision_kit.forged``).

Findings (strict expected failures unless HELD):

1. DECISION (ADR 0041; verify/_consistency/times.py ``_on_the_log_clock``): the observer's clock is
   anchored to the windows only by the preamble's bound, and nothing holds the time between
   the last probe and the first harness's exchanges. The m 1 forgery (SparkBench, coding and
   reliability, FAILED "sparkbench wall limit exceeded", its start moved back to 3600 s before
   its end, before the probes) is a finding now, but with every exchange after the probes
   moved later on the observer's clock (``started`` and ``ended`` alike, the identity and
   probe exchanges left) one offset fits again: no finding, and ``audit show`` says the
   sandbox stopped a hung agent at its wall. The exchanges' spans, the performance measurement
   and the ids are all unchanged by the shift. A second anchor was weighed (the sandbox's start
   in its strace trace header, the ledger's connects before the exchanges they carried) and
   not taken: the trace's origin, its ``-ttt`` times and the ledger are the publisher's bytes
   as much as the exchanges are, and moving them with the rest is two more edits of the same
   kind, not a different story the bundle must tell. Every time in a bundle is the runner's
   word; the checks hold the times to each other, so that one cannot move alone.
2. HOLE (verify/_consistency/times.py ``_on_the_log_clock``, ``windows.get(label)``; ``_overlaps``):
   the observer labels every exchange of a harness's run with the first component it serves
   (audit/run.py ``_Harnesses._execute``: ``observer.component = components[0]``), so the other
   components of that run have no exchange on the log clock, and ``_overlaps`` lets windows of
   one upstream differ where they do not overlap. Reliability FAILED "sparkbench wall limit
   exceeded", its window moved to 3600 s after every other window (after the observer's own
   performance measurement, which the runner makes after every harness), coding still
   COMPLETED from the same run: no finding, and ``audit show`` says the sandbox stopped a hung
   agent. The runner gives every component of one harness's run that run's start (gates extend
   only the end); a fix holds the components of one upstream to one start, or puts a harness's
   exchanges on the clock of each component it served. Fixed: ``_overlaps`` holds the
   components of one pinned upstream to one start (the example runs' coding and reliability,
   which had two, now share SparkBench's window).
3. HELD (no false finding): honest runs recorded by the runner with the observer's labels and
   the windows in the configurations where they might disagree verify with no finding: a
   harness stopped at its wall mid-stream with another harness after it, one stopped at its
   inactivity limit mid-stream with SparkBench after it, one that fails fast (exit 3) before
   Hermes and the observer-measured performance, a bfcl-eval gate right after
   tool/instruction's harness with SparkBench after it, SparkBench serving reliability first
   and coding, performance alone, SparkBench quarantining its run beside the measured
   performance, the deployment pin set's full run, and the demo pin set's well-behaved and hang
   scenarios (``audit.demo.pipeline.SCENARIOS``).
4. HELD: an exchange's ``started`` that breaks the arithmetic is refused by the schema (NaN,
   infinity, negative, past ``MAX_SECONDS``: integrity fails on the transport log), and the
   largest it allows (1e10 s) on coding's exchange leaves no offset: a finding.
5. HELD: the m 1 forgery with the transport log left alone is a finding on coding's window
   (the probes start after the moved start on every offset the other windows allow).
"""

from __future__ import annotations

import copy
import json
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from audit.demo.pipeline import DEMO_DIGEST, SCENARIOS
from audit.demo.reference_endpoint import Behaviour, ReferenceEndpoint
from audit.run import RunRequest, run_qualification
from bundle_schema.models import Verdict
from pins import PinSetSource, pin_set_source
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle
from tests.decision_kit import (
    DEPLOYMENT_PINS,
    axes,
    built_examples,
    deployment_pins,
    dropped,
    edits,
    forged,
    report_of,
    result_edit,
)
from tests.gate_kit import bfcl_gate_harness, gate_mirror
from tests.paths import DATA
from verify import verify_bundle

NOT_QUALIFIED = "gx10-full-not-qualified"
CODING, RELIABILITY = "components/coding/result.json", "components/reliability/result.json"
SPARK_RECORDS = ("components/coding/spark-quality.json", "components/reliability/spark-repeat.json")
SPARK_STOP = "sparkbench wall limit exceeded"
TRANSPORT = "transport/exchanges.jsonl"
CLOCK = "observer's clock"
INFRA_FAILURE = ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
QUALIFIED = ("QUALIFIED", "VALID", "MEETS_PROFILE")
NOT_QUALIFIED_AXES = ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE")
QUARANTINED = ("INFRA_ERROR", "QUARANTINED", "NOT_ASSESSED")
_STREAM = (
    "import json, urllib.request; body = json.dumps({{'model': '{model}', 'stream': True, "
    "'max_tokens': 1, 'messages': [{{'role': 'user', 'content': 'stream slowly'}}]}}).encode(); "
    "r = urllib.request.urlopen(urllib.request.Request('{endpoint}/v1/chat/completions', body, "
    "{{'Content-Type': 'application/json'}})); [print(line, flush=True) for line in r]"
)
"""A harness that streams one reply and prints it as it comes (a pinned command)."""


# --- forgeries of the example run ------------------------------------------------------------


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> Path:
    return built_examples(tmp_path_factory.mktemp("examples"), deployment, (NOT_QUALIFIED,))[
        NOT_QUALIFIED
    ]


def _exchanges(change: Callable[[dict[str, Any]], None]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        for exchange in exchanges:
            change(exchange)
        put_lines(files, TRANSPORT, exchanges)

    return edit


def _later(seconds: float, first_id: int) -> Callable[[Files], None]:
    """Every exchange from ``first_id`` on, ``seconds`` later on the observer's clock."""

    def change(exchange: dict[str, Any]) -> None:
        if exchange["id"] >= first_id:
            exchange["started"] = round(exchange["started"] + seconds, 3)
            if exchange.get("ended") is not None:
                exchange["ended"] = round(exchange["ended"] + seconds, 3)

    return _exchanges(change)


def _judged(bundle: Path, pins: PinSetSource, component: str) -> tuple[list[str], str | None]:
    """Every integrity finding, and what ``audit show`` says stopped ``component``."""
    report = report_of(bundle, pins)
    item = next(i for i in report.timeline if i.kind == "component" and i.name == component)
    findings = [f.message for f in report.verdict.integrity.findings]
    return findings, item.timed_out.explanation if item.timed_out else None


def _windows(bundle: Path) -> dict[str, tuple[str | None, str | None]]:
    _, files = read_bundle(bundle)
    return {
        name.split("/")[1]: (result["started_at"], result["ended_at"])
        for name, (data, _) in files.items()
        if name.endswith("/result.json") and name.count("/") == 2 and (result := json.loads(data))
    }


_MOVED = {"started_at": "2026-11-02T09:59:40Z", "ended_at": "2026-11-02T10:59:40Z"}  # 3600 s
_SPARK_STOPPED_EARLY = (
    dropped(*SPARK_RECORDS),
    result_edit(CODING, status="FAILED", reason=SPARK_STOP, metrics={}, **_MOVED),
    result_edit(RELIABILITY, status="FAILED", reason=SPARK_STOP, metrics={}, **_MOVED),
)
"""SparkBench FAILED at its wall, its start moved back 3600 s before its end (m 1)."""


def _example_premises(example: Path) -> None:
    windows = _windows(example)
    assert windows["coding"] == ("2026-11-02T10:00:02Z", "2026-11-02T10:59:40Z")
    assert max(w[1] or "" for w in windows.values()) == "2026-11-02T11:41:48Z"  # performance
    _, files = read_bundle(example)
    labels = [(e["id"], e["component"]) for e in lines(files, TRANSPORT)][:4]
    assert labels == [(0, "identity"), (1, "probes"), (2, "probes"), (3, "coding")], labels
    assert not [e for e in lines(files, TRANSPORT) if e["component"] == "reliability"]


def test_the_first_harness_moved_back_alone_is_a_finding(
    example: Path, deployment: PinSetSource, tmp_path: Path
) -> None:
    _example_premises(example)
    bundle = forged(example, tmp_path / "b", deployment, edits(*_SPARK_STOPPED_EARLY))
    findings, _ = _judged(bundle, deployment, "coding")
    assert any(CLOCK in f for f in findings), findings


@pytest.mark.xfail(
    strict=True,
    reason="DECISION (ADR 0041): every exchange after the probes moved later on the observer's "
    "clock gives the first harness's start moved back before the probes an offset again; every "
    "time in a bundle is the runner's word, held only to the others (verify/_consistency/times.py "
    "_on_the_log_clock)",
)
def test_the_first_harness_moved_back_with_the_log_clock_after_the_probes_is_a_finding(
    example: Path, deployment: PinSetSource, tmp_path: Path
) -> None:
    _example_premises(example)
    edit = edits(*_SPARK_STOPPED_EARLY, _later(20.0, first_id=3))
    bundle = forged(example, tmp_path / "b", deployment, edit)
    findings, stopped = _judged(bundle, deployment, "coding")
    assert verify_bundle(bundle, pins=deployment).verdict.claims.match
    assert findings or stopped is None, stopped


def test_the_second_component_of_a_harness_moved_after_every_window_is_a_finding(
    example: Path, deployment: PinSetSource, tmp_path: Path
) -> None:
    _example_premises(example)
    edit = edits(
        dropped(SPARK_RECORDS[1]),
        result_edit(RELIABILITY, status="FAILED", reason=SPARK_STOP, metrics={},
                started_at="2026-11-02T11:41:48Z", ended_at="2026-11-02T12:41:48Z"),
    )  # fmt: skip
    bundle = forged(example, tmp_path / "b", deployment, edit)
    findings, stopped = _judged(bundle, deployment, "reliability")
    assert verify_bundle(bundle, pins=deployment).verdict.claims.match
    assert findings or stopped is None, stopped


@pytest.mark.parametrize("started", [float("nan"), float("inf"), -1.0, 1e10 + 1])
def test_a_start_the_schema_refuses_fails_integrity(
    example: Path, deployment: PinSetSource, tmp_path: Path, started: float
) -> None:
    def change(exchange: dict[str, Any]) -> None:
        if exchange["id"] == 3:
            exchange["started"] = started

    def edit(files: Files) -> None:  # written as Python's json writes them (NaN, Infinity)
        exchanges = lines(files, TRANSPORT)
        for exchange in exchanges:
            change(exchange)
        data = b"".join(json.dumps(e).encode() + b"\n" for e in exchanges)
        files[TRANSPORT] = (data, files[TRANSPORT][1])

    bundle = forged(example, tmp_path / "b", deployment, edit)
    verdict = verify_bundle(bundle, pins=deployment).verdict
    assert verdict.integrity.status == "failed"
    assert axes(verdict)[0] == "INFRA_ERROR"


def test_the_largest_start_the_schema_allows_leaves_no_offset(
    example: Path, deployment: PinSetSource, tmp_path: Path
) -> None:
    def change(exchange: dict[str, Any]) -> None:
        if exchange["id"] == 3:  # coding's, its stream's chunks timed from its start
            exchange["started"] = 1e10
            exchange["ended"] = 1e10

    bundle = forged(example, tmp_path / "b", deployment, _exchanges(change))
    findings, _ = _judged(bundle, deployment, "coding")
    assert any(CLOCK in f for f in findings), findings


# --- honest runs --------------------------------------------------------------------------


def _pins(name: str, components: list[str], edit: Callable[[dict[str, Any]], None]) -> Any:
    data = copy.deepcopy(tomllib.loads(DEPLOYMENT_PINS.read_text("utf-8")))
    data["id"] = f"honest-n-{name}"
    data["profiles"]["run"] = {"components": components}
    edit(data)
    return pin_set_source(data, f"honest run {name}")


def _plain(_: dict[str, Any]) -> None:
    pass


def _stream_stopped_at(limit: str, seconds: float) -> Callable[[dict[str, Any]], None]:
    """BenchLocal streaming a reply slower than its ``limit`` (room to start under load)."""

    def edit(data: dict[str, Any]) -> None:
        data["harnesses"]["benchlocal"] |= {"command": ["{python}", "-c", _STREAM], limit: seconds}

    return edit


def _fails_fast(data: dict[str, Any]) -> None:
    data["harnesses"]["benchlocal"]["command"] = ["{python}", "-c", "import sys; sys.exit(3)"]


def _gated_by(commit: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["harnesses"]["bfcl"] = bfcl_gate_harness()
        data["upstreams"]["bfcl"] = {
            "repository": "https://example.invalid/evidence-audit/bfcl",
            "commit": commit,
        }
        data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}

    return edit


Recorded = tuple[Path, PinSetSource, Verdict | BaseException]


def _record(
    out: Path,
    pins: PinSetSource,
    mirrors: Mapping[str, Path],
    *,
    profile: str = "run",
    behaviour: Behaviour | None = None,
    harness_env: Mapping[str, str] | None = None,
) -> Recorded:
    """One honest run, then its verdict (or why it could not be recorded)."""
    endpoint = ReferenceEndpoint(behaviour).start()
    try:
        run_qualification(
            RunRequest(endpoint=endpoint.url, pins=pins, profile=profile, out=out,
                       model_digest=DEMO_DIGEST, mirrors=mirrors,
                       harness_env=dict(harness_env or {}), run_id=f"honest-{out.name}")
        )  # fmt: skip
        return out, pins, verify_bundle(out, pins=pins).verdict
    except Exception as exc:  # raised by the test that reads it
        return out, pins, exc
    finally:  # an endpoint still streaming a chunk a minute stops in the background
        threading.Thread(target=endpoint.stop, daemon=True).start()


HONEST: Mapping[str, tuple[str, str, str]] = {
    "stopped-at-wall-mid-stream": INFRA_FAILURE,
    "stopped-at-inactivity-mid-stream": INFRA_FAILURE,
    "fails-fast": INFRA_FAILURE,
    "gate-after-its-harness": QUALIFIED,
    "spark-reliability-first": QUALIFIED,
    "performance-alone": QUALIFIED,
    "spark-quarantined": QUARANTINED,
    "deployment-full": QUALIFIED,
    "demo-well-behaved": QUALIFIED,
    "demo-hang": NOT_QUALIFIED_AXES,
}
"""The honest runs and the axes each deserves."""


@pytest.fixture(scope="module")
def honest(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> Iterator[dict[str, Recorded]]:
    root = tmp_path_factory.mktemp("honest-n")
    gates, commit = gate_mirror(root / "gates", mirrors, DATA / "bfcl_eval_harness", "bfcl")
    slow = Behaviour(chunk_delay=60.0)  # a chunk a minute: stopped between two
    pair = ["tool_instruction", "hermes"]
    runs: dict[str, Callable[[], Recorded]] = {
        "stopped-at-wall-mid-stream": lambda: _record(
            root / "wall", _pins("wall", pair, _stream_stopped_at("wall_s", 8)), mirrors,
            behaviour=slow),
        "stopped-at-inactivity-mid-stream": lambda: _record(
            root / "silence",
            _pins("silence", ["tool_instruction", "coding"], _stream_stopped_at("inactivity_s", 6)),
            mirrors, behaviour=slow),
        "fails-fast": lambda: _record(
            root / "fast", _pins("fast", [*pair, "performance"], _fails_fast), mirrors),
        "gate-after-its-harness": lambda: _record(
            root / "gate", _pins("gate", ["tool_instruction", "coding", "reliability"],
                                 _gated_by(commit)), gates),
        "spark-reliability-first": lambda: _record(
            root / "spark", _pins("spark", ["reliability", "coding"], _plain), mirrors),
        "performance-alone": lambda: _record(
            root / "perf", _pins("perf", ["performance"], _plain), mirrors),
        "spark-quarantined": lambda: _record(
            root / "quarantined", _pins("quarantined", ["coding", "reliability", "performance"],
                                        _plain), mirrors,
            harness_env={"SPARK_QUARANTINE": "golden replay drifted"}),
        "deployment-full": lambda: _record(
            root / "full", deployment_pins(), mirrors, profile="full"),
        "demo-well-behaved": lambda: _record(
            root / "demo", SCENARIOS["well-behaved"].pins(), mirrors, profile="full"),
        "demo-hang": lambda: _record(
            root / "hang", SCENARIOS["hang"].pins(), mirrors, profile="full",
            harness_env=SCENARIOS["hang"].env),
    }  # fmt: skip
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = {name: pool.submit(run) for name, run in runs.items()}
        yield {name: future.result() for name, future in futures.items()}


def _verdict(recorded: Recorded) -> Verdict:
    outcome = recorded[2]
    if isinstance(outcome, Verdict):
        return outcome
    raise RuntimeError(f"the run was not recorded: {outcome!r}") from outcome


@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_run_has_its_windows_on_the_log_clock(
    honest: dict[str, Recorded], name: str
) -> None:
    verdict = _verdict(honest[name])
    assert verdict.integrity.status == "ok", [f.message for f in verdict.integrity.findings]
    assert verdict.claims.match, verdict.claims.differences
    assert axes(verdict)[:3] == HONEST[name], verdict.reasons


def _results(bundle: Path) -> dict[str, dict[str, Any]]:
    _, files = read_bundle(bundle)
    return {
        name.split("/")[1]: json.loads(data)
        for name, (data, _) in files.items()
        if name.endswith("/result.json") and name.count("/") == 2
    }


def _labels(bundle: Path) -> list[str | None]:
    _, files = read_bundle(bundle)
    return [e["component"] for e in lines(files, TRANSPORT)]


@pytest.mark.parametrize(
    ("name", "component", "reason", "labelled"),
    [
        ("stopped-at-wall-mid-stream", "tool_instruction", "benchlocal wall limit exceeded",
         "tool_instruction"),
        ("stopped-at-inactivity-mid-stream", "tool_instruction",
         "benchlocal inactivity limit exceeded", "tool_instruction"),
        ("fails-fast", "tool_instruction", "benchlocal exited 3", None),
    ],
)  # fmt: skip
def test_the_honest_runs_are_the_configurations_named(
    honest: dict[str, Recorded], name: str, component: str, reason: str, labelled: str | None
) -> None:
    """The premises of the runs that fail: stopped or failed as named, their exchanges (if
    any) labelled with their component, a later harness's after them."""
    bundle = honest[name][0]
    _verdict(honest[name])
    result = _results(bundle)[component]
    assert result["status"] == "FAILED" and result["reason"].startswith(reason), result
    assert result["started_at"] and result["ended_at"]
    labels = _labels(bundle)
    assert labelled is None or labelled in labels, labels
    assert labels[-1] not in (component, "identity", "probes"), labels  # another ran after


def test_the_gate_runs_inside_its_components_window_before_the_next_harness(
    honest: dict[str, Recorded],
) -> None:
    bundle = honest["gate-after-its-harness"][0]
    _verdict(honest["gate-after-its-harness"])
    results = _results(bundle)
    tool = results["tool_instruction"]
    assert any("/gates/bfcl/" in name for name in tool["raw_outputs"]), tool["raw_outputs"]
    assert tool["ended_at"] <= results["coding"]["started_at"], results
    assert results["coding"]["started_at"] == results["reliability"]["started_at"]
