"""The forensic answer names the right part, and the terminal view leads with it (issue 14
points 6 and 7; docs/review.md, "Where the issue is silent"; the demo's summary is in
tests/audit/test_demo_summary.py).

A fallback is a model substitution with its exchanges and the model that answered, not an
isolation failure (unless a socket really left the sandbox); a bundle that fails integrity leads
with that, gets no aggregate, and ``audit show`` exits 1 as ``audit verify`` does; a task that
ran out of time lists its exchanges and says whether the model or the agent was the slow one.
The terminal views read at 80 columns: no word split, no Python repr, every digest whole, the
answer before the scores and the scores before the gates.

Real bundles: the example bundles, their evidence edited and resealed by the hostile corpus's
kit, and the demo's fallback and hang scenarios recorded by the real runner (reference
endpoint, observer and sandbox)."""

from __future__ import annotations

import io
import json
import re
import shutil
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST, SCENARIOS, run_pipeline
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, run_qualification
from bundle_schema.layout import blob_path
from bundle_schema.models import Claims, ShowReport
from pins import DEMO, PinSetSource, load_builtin, pin_set_source
from tests.data.hostile.kit import (
    Files,
    lines,
    put_json,
    put_lines,
    read_bundle,
    rederive_metrics,
    reseal,
)
from tests.paths import DOCS, PINS
from verify import open_source, parse_manifest, verify_bundle, verify_with_evidence
from verify.forensics import show_report
from verify.render import render_show, render_verdict

TRANSPORT = "transport/exchanges.jsonl"
TASKS = "components/hermes/tasks.jsonl"
RAW_TASKS = "components/hermes/raw/tasks.jsonl"
CONFIG = "run/config.json"
REFERENCE_MODEL = "reference-model-q8_0"
OTHER_MODEL = "other-model-7b"
DIGEST = re.compile(r"sha256:[0-9a-f]+")


# --- building bundles ---------------------------------------------------------------------------


def resealed(source: Path, target: Path, edit: Callable[[Files], None]) -> Path:
    """``source`` with its evidence edited and resealed, claiming what its replay finds (an
    honest runner's claims): only the evidence differs, never the claims."""
    manifest, files = read_bundle(source)
    edit(files)
    draft = target.with_name(target.name + "-draft")
    reseal(draft, manifest, files, {})
    replay = verify_bundle(draft).verdict
    scores = replay.scores
    claims = Claims(
        outcome=replay.outcome,
        result_validity=replay.result_validity,
        profile_decision=replay.profile_decision,
        rankable=replay.rankable,
        aggregate_score=scores.aggregate,
        executed_weight=scores.executed_weight,
        component_scores={c: getattr(scores, c) for c in manifest.claims.component_scores},
    )
    reseal(target, manifest, files, {"claims": claims.model_dump()})
    shutil.rmtree(draft)
    return target


def _answered_by(model: str, index: int) -> Callable[[Files], None]:
    """The completion reply of the transport log's ``index``-th streamed exchange names
    ``model`` (its body, or every streamed event)."""

    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        streamed = [e for e in exchanges if e["chunks"]]
        exchange = streamed[index]
        for chunk in exchange["chunks"]:
            chunk["data"] = chunk["data"].replace(
                f'"model":"{REFERENCE_MODEL}"', f'"model":"{model}"'
            )
        assert any(model in c["data"] for c in exchange["chunks"])
        put_lines(files, TRANSPORT, exchanges)

    return edit


def report_of(path: Path, pins: PinSetSource | None = None) -> ShowReport:
    verdict, evidence = verify_with_evidence(path, pins=pins)
    manifest = parse_manifest(open_source(path).manifest_bytes())
    judged = pins or load_builtin(verdict.pin_set.id)
    return show_report(verdict, evidence, manifest.model.evidence, judged)


def show_json(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["show", str(path), "--json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


def terminal(render: Callable[[Console], None], width: int = 80) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), highlight=False)
    render(console)
    return console.export_text()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's fallback and hang scenarios, recorded once by the real runner."""
    out = tmp_path_factory.mktemp("scenarios")
    for scenario in ("fallback", "hang"):
        assert run_pipeline(out, Console(file=io.StringIO()), scenario)
    return {scenario: out / f"run-{scenario}" for scenario in ("fallback", "hang")}


# --- 1. a substitution is its own part -----------------------------------------------------------


def test_a_recorded_fallback_is_a_substitution_naming_its_exchanges_and_the_model(
    recorded: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = recorded["fallback"]
    code, report = show_json(path, capsys)
    assert code == 0
    forensic = report["forensic"]
    assert forensic["failed_part"] == "substitution"
    evidence = verify_with_evidence(path)[1]
    answered = [e.id for e in evidence.transport or () if e.response_model == OTHER_MODEL]
    assert len(answered) > 5
    assert forensic["substitution"] == {
        "by": "model",
        "exchanges": {"count": len(answered), "first": answered[:5]},
        "answered_by": OTHER_MODEL,
        "expected": REFERENCE_MODEL,
    }
    assert forensic["summary"].startswith(
        "INFRA_FAILURE: model substitution (fallback activity: a reply names another model), "
        f"not a socket outside the sandbox: {len(answered)} exchanges answered by "
        f"'{OTHER_MODEL}', not '{REFERENCE_MODEL}'"
    )
    assert "isolation" not in forensic["summary"]
    started = {e.id: e.started for e in evidence.transport or ()}
    assert forensic["first_evidence"].startswith(
        f"model substitution at {started[answered[0]]:.3f} s: exchange {answered[0]} was "
        f"answered by '{OTHER_MODEL}'"
    )
    assert main(["show", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "failed: substitution" in out
    shown = ", ".join(str(i) for i in answered[:5])
    assert (
        f"answered by: '{OTHER_MODEL}' (the model its replies name), not '{REFERENCE_MODEL}'; "
        f"exchanges {len(answered)} (ids {shown} and {len(answered) - 5} more)"
    ) in out


def test_a_substitution_in_a_resealed_example_names_the_one_exchange(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(
        built_examples["gx10-full-qualified"], tmp_path / "b", _answered_by(OTHER_MODEL, 1)
    )
    report = report_of(path)
    forensic = report.forensic
    assert forensic is not None
    streamed = [e.id for e in verify_with_evidence(path)[1].transport or () if e.chunks]
    assert forensic.failed_part == "substitution"
    assert forensic.substitution is not None
    assert forensic.substitution.exchanges.model_dump() == {"count": 1, "first": (streamed[1],)}
    assert forensic.substitution.answered_by == OTHER_MODEL
    assert report.transport is not None
    assert report.transport.suspected_fallbacks == (streamed[1],)
    assert forensic.best_aggregate is not None  # the evidence is intact: bounds are computed
    html = tmp_path / "report.html"
    assert main(["show", str(path), "--html", str(html)]) == 0
    page = html.read_text()
    row = page[page.index('<tr id="substitution">') :]
    quoted = f"&#x27;{OTHER_MODEL}&#x27;"  # as ascii() writes it, escaped: a look-alike shows
    assert row.startswith(f'<tr id="substitution"><th>answered by</th><td>{quoted} (expected')
    assert f'<a href="#exchange-{streamed[1]}">exchange {streamed[1]}</a>' in row


def test_a_socket_outside_the_sandbox_is_isolation_even_beside_a_fallback(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(
        built_examples["gx10-full-infra-error"], tmp_path / "b", _answered_by(OTHER_MODEL, 0)
    )
    forensic = report_of(path).forensic
    assert forensic is not None
    assert forensic.failed_part == "isolation"
    assert forensic.substitution is None
    assert forensic.first_evidence is not None
    assert forensic.first_evidence.startswith("socket ledger seq 2: node (pid 4391) tried")


# --- 2. a bundle that fails integrity leads with that --------------------------------------------


def _flip(bundle: Path, name: str) -> None:
    """Flip one bit of the blob of evidence entry ``name``."""
    manifest = parse_manifest(open_source(bundle).manifest_bytes())
    blob = bundle / blob_path(manifest.model.evidence[name].digest)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))


def _tampered(built_examples: dict[str, Path], tmp_path: Path, entry: str) -> Path:
    bundle = tmp_path / "b"
    shutil.copytree(built_examples["gx10-full-qualified"], bundle)
    _flip(bundle, entry)
    return bundle


@pytest.mark.parametrize("entry", [TRANSPORT, "logs/runner.log"])
def test_an_integrity_failure_leads_and_gets_no_aggregate(
    built_examples: dict[str, Path], tmp_path: Path, entry: str
) -> None:
    bundle = _tampered(built_examples, tmp_path, entry)
    report = report_of(bundle)
    forensic = report.forensic
    assert forensic is not None
    finding = report.verdict.integrity.findings[0]
    assert finding.entry == entry
    assert forensic.failed_part == "integrity"
    assert forensic.first_evidence == f"{finding.code}: {finding.message}"
    assert (forensic.best_aggregate, forensic.worst_aggregate) == (None, None)
    assert forensic.summary.startswith("INFRA_FAILURE: integrity failed (1 finding)")
    out = terminal(lambda c: render_show(report, c, str(bundle)))
    assert out.index("failed: integrity") < out.index("scores (replayed")
    assert "aggregate had it held: not computed (integrity failed)" in out


@pytest.mark.parametrize("entry", [TRANSPORT, "logs/runner.log"])
def test_show_exits_1_on_an_integrity_failure_as_verify_does(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    entry: str,
) -> None:
    bundle = _tampered(built_examples, tmp_path, entry)
    code, report = show_json(bundle, capsys)  # the report is printed, then the check fails
    assert code == 1
    assert report["forensic"]["failed_part"] == "integrity"
    message = report["verdict"]["integrity"]["findings"][0]["message"]
    # Named from its folder: the first line holds the name whole at 80 columns, however long
    # the temp folder's path is (a pytest-xdist worker's is longer; an absolute path wraps).
    monkeypatch.chdir(bundle.parent)
    assert main(["show", bundle.name]) == 1
    shown = capsys.readouterr()
    assert shown.err == f"audit show: integrity failed: 1 finding(s); first: {message}\n"
    assert shown.out.startswith(f"evidence bundle {bundle.name}\n")
    assert main(["verify", bundle.name]) == 1  # the two commands agree
    assert capsys.readouterr().err == shown.err.replace("audit show:", "audit verify:")


def test_show_exits_0_on_an_intact_bundle_whatever_its_verdict(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("gx10-full-infra-error", "gx10-spark-quarantined", "gx10-full-not-qualified"):
        assert main(["show", str(built_examples[name])]) == 0, name
        assert capsys.readouterr().err == ""


# --- 3. a task that ran out of time: slow model or hung agent ------------------------------------


def _timed_out_task(cut: bool, attributed: bool = True) -> Callable[[Files], None]:
    """Task add-retry-policy stopped at its silence limit (301 s of 300 s), having made three
    exchanges (copies of the log's first streamed one, numbered after the rest); with
    ``cut``, the harness went away while the third was still streaming. Not ``attributed``:
    the Hermes component's three exchanges are model listings that no task record claims (a
    runner that could not tell whose they were)."""

    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        template = next(e for e in exchanges if e["chunks"])
        # inside Hermes's window (11:02:40 to 11:28:57; the observer's clock read 0 at 10:00:00)
        began = 3800.0
        for n in range(3):
            made = json.loads(json.dumps(template))
            span = template["ended"] - template["started"]
            made |= {"id": len(exchanges), "component": "hermes", "started": began}
            made["ended"] = began + span
            made["request_headers"]["X-Evidence-Ref"] = "hermes/add-retry-policy"
            if not attributed:
                del made["request_headers"]["X-Evidence-Ref"]
                made |= {"method": "GET", "path": "/v1/models", "chunks": []}
            if cut and n == 2:
                made["chunks"] = made["chunks"][: len(made["chunks"]) // 2]
                made["error"] = "the client disconnected mid-stream"
                made["ended"] = began + 0.5 + made["chunks"][-1]["t"]
            exchanges.append(made)
            began = made["ended"] + 0.25
        put_lines(files, TRANSPORT, exchanges)
        config = json.loads(files[CONFIG][0])
        config["observer"]["exchanges"] = len(exchanges)
        put_json(files, CONFIG, config)
        ids = [e["id"] for e in exchanges[-3:]]
        for name in (TASKS, RAW_TASKS):
            tasks = lines(files, name)
            task = tasks[1]
            assert task["task"] == "add-retry-policy"
            task |= {
                "outcome": "TIMEOUT", "max_inactivity_s": 301.0, "wall_s": 311.5,
                "cases": [], "completion_claim": None, "changed_paths": [],
                "protected_inputs": {"before": None, "after": None},
                "trajectory": "missing", "final_response": None,
            }  # fmt: skip
            for kind in ("checkpoint", "model_response", "task_state", "evaluator"):
                task["evidence"][kind] = {"present": False, "trusted": False}
            if name == TASKS and attributed:
                task["exchanges"] = ids
            put_lines(files, name, tasks)
        rederive_metrics(files, "hermes", ["hermes"])  # the result's metrics as its runner's

    return edit


@pytest.mark.parametrize(
    ("cut", "cause"), [(True, "slow model"), (False, "hung agent")], ids=["cut", "idle"]
)
def test_a_timed_out_task_lists_its_exchanges_and_when_the_last_ended(
    built_examples: dict[str, Path],
    tmp_path: Path,
    cut: bool,
    cause: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = resealed(built_examples["gx10-full-qualified"], tmp_path / "b", _timed_out_task(cut))
    verdict, evidence = verify_with_evidence(path)
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert next(g for g in verdict.gates if g.id == "hermes_time_limits").status == "fail"
    made = (evidence.transport or ())[-3:]
    report = report_of(path)
    item = next(t for t in report.timeline if t.name == "add-retry-policy")
    assert item.timed_out is not None
    timed = item.timed_out
    assert timed.exchanges.model_dump() == {"count": 3, "first": tuple(e.id for e in made)}
    assert timed.last_exchange == made[-1].id
    assert timed.last_ended == made[-1].ended
    assert timed.still_open is cut
    assert timed.cause == cause
    assert timed.wall_s == 311.5
    spans = sum(e.ended - e.started for e in made if e.ended is not None)
    assert timed.model_s == pytest.approx(spans, abs=0.01)  # they do not overlap
    assert timed.explanation.endswith("; it was silent 301 s (limit 300 s)")
    if cut:
        last = made[-1]
        assert timed.explanation.startswith(
            f"slow model: exchange {last.id} was still streaming when the task stopped (the "
            f"client disconnected mid-stream); it began at {round(last.started, 3):g} s, its "
            f"last bytes at {round(last.started + last.chunks[-1].t, 3):g} s on the observer's "
            "clock"
        )
    else:
        idle = round(311.5 - timed.model_s, 3)
        assert timed.explanation.startswith(
            "hung agent: no exchange was open when the task stopped; its 3 exchanges "
            f"(ids {', '.join(str(e.id) for e in made)}) were open {timed.model_s:g} s of its "
            f"311.5 s wall; no exchange was open for {idle:g} s of it; the last (exchange "
            f"{made[-1].id}) ended at {round(made[-1].ended or 0, 3):g} s on the observer's clock"
        )
    other = next(t for t in report.timeline if t.name == "fix-date-parser")
    assert other.timed_out is None  # within its limits
    assert report.transport is not None  # the exchange the harness left is one it never had
    assert report.transport.abandoned == ((made[-1].id,) if cut else ())
    assert set(report.transport.abandoned) <= set(report.transport.errors)
    main(["show", str(path)])
    shown = " ".join(capsys.readouterr().out.split())  # the report wraps its lines
    gone = f"1 (id {made[-1].id})" if cut else "none"
    assert f"(the harness gone before the answer: {gone})" in shown, shown
    out = terminal(lambda c: render_show(report, c, str(path)))
    flat = " ".join(out.split())
    assert f"task add-retry-policy TIMEOUT: {cause}: " in flat
    assert flat.index("task add-retry-policy TIMEOUT") < flat.index("scores (replayed")
    html = tmp_path / "report.html"
    main(["show", str(path), "--html", str(html)])
    page = html.read_text()
    table = page[page.index('<table id="timed-out">') :]
    assert f"<tr><td>task add-retry-policy</td><td>{cause}</td><td>3: " in table
    assert f'<a href="#exchange-{made[-1].id}">exchange {made[-1].id}</a>' in table


def test_a_timed_out_task_of_a_run_that_ties_no_exchange_to_a_task_is_not_guessed(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    edit = _timed_out_task(cut=False, attributed=False)
    path = resealed(built_examples["gx10-full-qualified"], tmp_path / "b", edit)
    item = next(t for t in report_of(path).timeline if t.name == "add-retry-policy")
    assert item.timed_out is not None
    assert (item.timed_out.cause, item.timed_out.exchanges.count) == ("unknown", 0)
    assert item.timed_out.explanation == (
        "unknown: the run ties none of its Hermes component's 3 exchanges to a task, so what "
        "this task waited on cannot be told; it was silent 301 s (limit 300 s)"
    )


def test_a_hung_agent_recorded_by_the_runner_made_no_exchange(
    recorded: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = SCENARIOS["hang"].pins()  # the demo's pin set with a 1 s silence limit, as a file
    source = PINS / f"{pins.id}.toml"
    toml = re.sub(
        r"(\[hermes\][^\[]*?)inactivity_s = 300\n",
        r"\1inactivity_s = 1.0\n",
        source.read_text("utf-8"),
        count=1,
    )
    file = tmp_path / "hang.toml"
    file.write_text(toml, "utf-8")
    code, report = show_json(recorded["hang"], capsys, "--pins", str(file))
    assert code == 0
    assert report["verdict"]["pin_set"]["digest"] == pins.digest
    assert report["forensic"] is None  # VALID: a model failure, not a broken run
    tasks = [t for t in report["timeline"] if t["kind"] == "task"]
    assert [t["status"] for t in tasks] == ["TIMEOUT", "TIMEOUT"]
    for task in tasks:
        timed = task["timed_out"]
        assert timed["cause"] == "hung agent"
        assert timed["exchanges"] == {"count": 0, "first": []}
        assert (timed["last_exchange"], timed["last_ended"], timed["still_open"]) == (
            None, None, False
        )  # fmt: skip
        assert timed["explanation"] == (
            f"hung agent: no exchange at all in its {task['wall_s']:g} s wall; it was silent "
            f"{task['inactivity_s']:g} s (limit 1 s)"
        )
    assert main(["show", str(recorded["hang"]), "--pins", str(file)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "what broke, and was it the model? task fix-date-parser TIMEOUT: hung agent" in out


def test_a_harness_the_sandbox_stopped_for_silence_is_a_hung_agent(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    data = json.loads(json.dumps(dict(load_builtin(DEMO).data)))
    data["harnesses"]["hermesbench"]["inactivity_s"] = 1  # its agent is silent 3 s at once
    pins = pin_set_source(data, "hermesbench stopped after 1 s of silence")
    with serve() as endpoint:
        request = RunRequest(
            endpoint=endpoint.url, pins=pins, profile="full", out=tmp_path / "b",
            model_digest=DEMO_DIGEST, mirrors=mirrors, harness_env={"HERMES_HANG": "3"},
        )  # fmt: skip
        run_qualification(request)
    report = report_of(tmp_path / "b", pins)
    item = next(t for t in report.timeline if t.name == "hermes")
    assert (item.status, item.reason) == ("FAILED", "hermesbench inactivity limit exceeded")
    timed = item.timed_out
    assert timed is not None
    assert (timed.cause, timed.exchanges.count, timed.still_open) == ("hung agent", 0, False)
    assert timed.explanation.startswith("hung agent: no exchange at all in its ")
    assert timed.explanation.endswith("; the sandbox stopped it at its inactivity limit")
    assert [t.name for t in report.timeline if t.timed_out is not None] == ["hermes"]
    forensic = report.forensic
    assert forensic is not None
    assert forensic.failed_part == "harness"
    out = " ".join(terminal(lambda c: render_show(report, c, "b")).split())
    assert "component hermes FAILED: hung agent: no exchange at all" in out


# --- 4. the terminal views at 80 columns ---------------------------------------------------------


def _digests(report: ShowReport) -> set[str]:
    verdict = report.verdict
    found = {verdict.bundle_digest, verdict.pin_set.digest, report.model.digest}
    found |= {ref.digest for gate in report.gates for ref in gate.evidence}
    found |= {u.commit for u in report.upstreams}
    for finding in verdict.integrity.findings:
        found |= set(DIGEST.findall(finding.message))
    return found


def _check_80_columns(out: str, wide: str, digests: set[str]) -> None:
    """No word split (the words at 80 columns are those at 400), no line past 80 columns but a
    single word, no Python repr, every digest whole, on a line of its own or in a sentence."""
    assert Counter(out.split()) == Counter(wide.split())
    for line in out.splitlines():
        assert len(line) <= 80 or len(line.split()) == 1, line
    for digest in digests:
        assert digest in out, digest
    for found in DIGEST.findall(out):
        assert len(found) == len("sha256:") + 64, found
    assert "[]" not in out and "{}" not in out
    assert not re.search(r"\bNone\b|\(\d+,|\[\d|\[\"|\['|(?<!connect)\(\)", out)


@pytest.fixture(scope="module")
def odd_bundles(
    built_examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("odd")
    tampered = root / "tampered"
    shutil.copytree(built_examples["gx10-full-qualified"], tampered)
    _flip(tampered, TRANSPORT)
    qualified = built_examples["gx10-full-qualified"]
    return {
        "tampered": tampered,
        "substituted": resealed(qualified, root / "sub", _answered_by(OTHER_MODEL, 1)),
        "timed-out": resealed(qualified, root / "timed", _timed_out_task(cut=True)),
    }


@pytest.mark.parametrize(
    "name",
    [
        "gx10-full-infra-error",
        "gx10-spark-quarantined",
        "gx10-full-qualified",
        "gx10-smoke",
        "tampered",
        "substituted",
        "timed-out",
    ],
)
def test_both_views_read_at_80_columns_answer_first(
    built_examples: dict[str, Path], odd_bundles: dict[str, Path], name: str
) -> None:
    path = built_examples.get(name) or odd_bundles[name]
    report = report_of(path)
    # The bundle as named from its folder: the layout at 80 columns is the same however long
    # the temp folder's path is (a pytest-xdist worker's is longer; an absolute path wraps).
    shown = path.name

    def show(width: int) -> str:
        return terminal(lambda c: render_show(report, c, shown), width)

    out = show(80)
    _check_80_columns(out, show(400), _digests(report))
    head = out.splitlines()
    assert head[0] == f"evidence bundle {shown}"
    assert head[1].startswith(report.verdict.outcome)
    flat = " ".join(out.split())
    order = ["scores (replayed", "hard gates", "timeline", "socket ledger: ", "the bundle run: "]
    if report.forensic is not None:
        order.insert(0, f"failed: {report.forensic.failed_part}")
        first = report.forensic.first_evidence
        assert first is not None
        order.insert(1, "first evidence: " + " ".join(first.split()[:4]))
    places = [flat.index(mark) for mark in order]
    assert places == sorted(places)
    for reason in report.verdict.reasons:  # the reasons lead
        assert flat.index(" ".join(f"- {reason}".split()[:4])) < places[0], reason

    def verdict_view(width: int) -> str:
        return terminal(lambda c: render_verdict(report.verdict, c, shown), width)

    out = verdict_view(80)
    _check_80_columns(out, verdict_view(400), _digests(report) - _show_only(report))
    flat = " ".join(out.split())
    marks = ["integrity ", "scores (replayed", "hard gates", "the bundle run: ", "bundle digest"]
    assert [flat.index(m) for m in marks] == sorted(flat.index(m) for m in marks)


def _show_only(report: ShowReport) -> set[str]:
    """What only the reviewer's view prints: the evidence digests, commits, the model's."""
    verdict = report.verdict
    kept = {verdict.bundle_digest, verdict.pin_set.digest}
    for finding in verdict.integrity.findings:
        kept |= set(DIGEST.findall(finding.message))
    return _digests(report) - kept


# --- the docs show what the commands print --------------------------------------------------------

REVIEW = DOCS / "review.md"


def _blocks() -> list[str]:
    """The ``text`` blocks of docs/review.md, dedented (one is inside a list item)."""
    found = re.findall(r"^( *)```text\n(.*?)^\1```", REVIEW.read_text("utf-8"), re.S | re.M)
    return [textwrap.dedent(body) for _, body in found]


def test_the_review_page_shows_what_audit_show_prints(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    blocks = _blocks()
    head = next(b for b in blocks if b.startswith("evidence bundle "))
    report = report_of(built_examples["gx10-full-infra-error"])
    out = terminal(lambda c: render_show(report, c, "build/demo/gx10-full-infra-error"))
    assert out.startswith(head)
    assert out[len(head) :].startswith("scores (replayed)\n")  # the answer, then the scores

    timed = next(b for b in blocks if b.startswith("task add-retry-policy TIMEOUT"))
    path = resealed(
        built_examples["gx10-full-qualified"], tmp_path / "b", _timed_out_task(cut=False)
    )
    out = terminal(lambda c: render_show(report_of(path), c, str(path)))
    shown = out[out.index("  task add-retry-policy TIMEOUT") : out.index("scores (replayed")]
    assert textwrap.dedent(shown) == timed
