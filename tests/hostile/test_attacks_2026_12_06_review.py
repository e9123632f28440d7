"""Review of 2026-12-06: the checks of ADR 0048 (benchlocal-cli's packs and replies, Spark
Bench's code scenarios and gate rows) and the CLI changes of the day, attacked both ways. Each
hole and false finding below is closed (ADR 0048, "after review"); the tests hold them.

A. As the publisher (every byte of the bundle, resealed with claims equal to the replay,
   ``tests.gate_kit.forged``) of the recorded real bundle
   (examples/recorded/llamacpp-smollm2-135m.tar: tool/instruction 28.3 honest):

   - hole: ``benchlocal_packs`` reads the RunResult with ``benchlocal_runs``, which refuses
     more than the scoring reader (``_benchlocal_cli``) does, and a refusal there is silently
     ``continue``: one field the scoring reader never reads (``repeat`` 0 or ``"1"``, a
     ``repeat_index`` that is no int, a scenario of the unscored reasonmath-15 with no id) turns
     every new benchlocal check off, and flip hole 1 (every failed scenario passed, replies no
     exchange holds) is back: tool/instruction 100, integrity ok, no finding;
   - hole: ``repeat`` is an unbounded count and ``_scenarios_problem`` builds a Counter of
     ``scenarios x repeat`` entries: ``"repeat": 10**12`` makes ``audit verify`` grow until
     memory runs out (a MemoryError traceback under a limit, an endless run without one);
   - refused (kept as guards): a passed scenario with no ``raw_response``, a ``repeat`` of 2
     claimed with every run listed twice, a failed scenario's id written with a look-alike
     digit, Spark gate rows whose metric differs in case or whitespace (the reader does not
     honour them either).

B. As an honest user: three shapes benchlocal-cli 0.9.9 (47d1d66) writes for a scenario it
   graded on a real reply are findings (``record_disagrees``: integrity fails, "a forged file"):
   a reply with no ``usage`` (``answer_digest`` is None, so a passed run has "no reply"), a
   reply whose content held ``<think>`` tags (``runner.run_scenario`` keeps
   ``sanitize_response_text_fields(raw_response)``, not the body the observer saw), and a
   passed multi-turn scenario of a sandboxed pack (``--full``: its ``raw_response`` is
   ``{"multi_turn": true, "responses": [...]}``, no chat completion).

C. ``listed_ahead`` (verify/archive.py): a consumer that stops early (a lost stdout reader, an
   interrupt, an exception) closes the generator, and the ``ThreadPoolExecutor`` block waits
   for the listing it runs ahead, which for a URL that does not answer is up to ATTEMPTS x
   (30 s + 60 s).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from audit._archive import pack
from bundle_schema.models import Verdict
from tests.data.hostile.kit import Files, resealer
from tests.factories import write_small_bundle
from tests.gate_kit import Recorded, forged, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import _all_passed, _findings, _rederived
from tests.http_range import serve, url_of
from verify import url_snapshots, verify_bundle
from verify.archive import listed_ahead

BENCHLOCAL_JSON = "components/tool_instruction/raw/benchlocal.json"
STDOUT = "logs/benchlocal.stdout.txt"
SPARK_CSV = "components/coding/raw/spark_bench.csv"
EXCHANGES = "transport/exchanges.jsonl"
SCORED_PACKS = ("toolcall-15", "instructfollow-15", "structoutput-15", "dataextract-15")
HONEST_TOOL_INSTRUCTION = 28.333333333333332
AUDIT = str(Path(sys.executable).with_name("audit"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _verdict(recorded: Recorded, target: Path, edit: Callable[[Files], None]) -> Verdict:
    verdict = verify_bundle(forged(recorded, target, edit)).verdict
    assert verdict.claims.match, verdict.claims.differences
    return verdict


def _report_edit(change: Callable[[dict], None]) -> Callable[[Files], None]:
    """An edit of the whole RunResult (its stdout copy kept alike), re-derived."""

    def edit(files: Files) -> None:
        report = json.loads(files[BENCHLOCAL_JSON][0])
        change(report)
        _written(files, report)

    return edit


def _written(files: Files, report: dict) -> None:
    """The RunResult written back (its stdout copy alike) and its records re-derived."""
    data = json.dumps(report).encode()
    files[BENCHLOCAL_JSON] = (data, files[BENCHLOCAL_JSON][1])
    files[STDOUT] = (data + b"\n", files[STDOUT][1])
    _rederived(files, "benchlocal-cli", ["tool_instruction"])


def _pack(report: dict, pack_id: str) -> dict:
    return next(p for p in report["packs"] if p["pack_id"] == pack_id)


def _benchlocal_findings(verdict: Verdict) -> list[str]:
    return [
        f"{f.code} {f.entry}: {f.message}"
        for f in verdict.integrity.findings
        if f.entry == BENCHLOCAL_JSON
    ]


# --- A. the publisher: benchlocal-cli ------------------------------------------------------------


def _scored_all_passed(report: dict) -> None:
    for pack_id in SCORED_PACKS:
        _all_passed(_pack(report, pack_id))


def _repeat_zero(report: dict) -> None:
    report["repeat"] = 0


def _repeat_text(report: dict) -> None:
    report["repeat"] = "1"


def _repeat_index_text(report: dict) -> None:
    _pack(report, "toolcall-15")["scenarios"][0]["repeat_index"] = "1"


def _unscored_scenario_without_id(report: dict) -> None:
    _pack(report, "reasonmath-15")["scenarios"][0]["id"] = None


@pytest.mark.parametrize(
    "unread",
    [_repeat_zero, _repeat_text, _repeat_index_text, _unscored_scenario_without_id],
    ids=["repeat-0", "repeat-text", "repeat-index-text", "unscored-scenario-no-id"],
)
def test_every_failed_scenario_passed_is_found_whatever_the_fields_the_score_never_reads(
    recorded: Recorded, tmp_path: Path, unread: Callable[[dict], None]
) -> None:
    """Flip hole 1 again (every failed scenario of the four scored packs marked passed, its
    ``raw_response`` a reply no exchange holds), plus ONE field the scoring reader
    (``verify.harness_outputs._benchlocal_cli``) never looks at but ``benchlocal_runs`` refuses:
    ``repeat`` 0 or ``"1"``, a scored scenario's ``repeat_index`` ``"1"``, or the first
    scenario of the unscored reasonmath-15 with ``id: null``. ``benchlocal_packs`` catches the
    refusal and ``continue``s ("a RunResult its reader refuses is that refusal's finding"),
    but its reader did not refuse it: tool/instruction 100 (28.3 honest), integrity ok, no
    finding. Fix: a refusal of ``benchlocal_runs`` is itself a ``record_disagrees`` finding
    (or the scoring reader refuses the same file), never a check left out."""
    verdict = _verdict(
        recorded, tmp_path / "forged", _report_edit(lambda r: (unread(r), _scored_all_passed(r)))
    )
    assert verdict.integrity.status == "failed", verdict.scores
    assert _benchlocal_findings(verdict), _findings(verdict)


def test_the_same_forgery_with_the_fields_as_written_is_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held (the control of the test above): the same forgery, every field as benchlocal-cli
    wrote it, is found."""
    verdict = _verdict(recorded, tmp_path / "forged", _report_edit(_scored_all_passed))
    assert verdict.integrity.status == "failed"
    assert _benchlocal_findings(verdict), _findings(verdict)


def test_a_huge_repeat_is_a_finding_not_a_memory_exhaustion(
    recorded: Recorded, tmp_path: Path
) -> None:
    """``"repeat": 1000000000000`` in benchlocal.json (no other change: the scores and claims
    are the honest ones). ``benchlocal_runs`` takes any non-negative int (``_count``), and
    ``_scenarios_problem`` builds ``Counter((key, turn) for key in keys for turn in range(1,
    repeat + 1))``: ``audit verify`` grows until memory runs out (here, limited to 1 GiB of
    address space, a MemoryError traceback after a few seconds; unlimited, it takes the
    machine's memory). A hostile bundle is exit 1 with a finding, never a traceback or a
    hang. Fix: bound ``repeat`` by what the file can hold (its runs are at most
    ``BENCHLOCAL_SCENARIOS`` a pack: a larger repeat is a finding), and compare counts
    without expanding them."""
    manifest, original = recorded
    files = dict(original)
    _report_edit(lambda r: r.update(repeat=10**12))(files)
    target = tmp_path / "forged"
    resealer(target, manifest, files)({})  # sealed without a replay: the replay is the attack

    def limit() -> None:  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [AUDIT, "verify", str(target)],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "200"},
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
        preexec_fn=limit,
    )
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr, err[-2000:]
    assert done.returncode == 1, (done.returncode, err[-2000:])
    assert b"benchlocal.json" in done.stdout + done.stderr


def _marked_passed(pack_: dict, scenario: dict) -> None:
    """A failed scenario marked passed (its result alike), its pack's counts made to agree."""
    scenario.update(passed=True, failure_mode="passed")
    if isinstance(scenario.get("result"), dict):
        scenario["result"].update(passed=True, failure_mode="passed")
    pack_["passed"] += 1
    pack_["score"] = pack_["passed"] / pack_["total"]


def test_a_passed_scenario_with_no_reply_is_found(recorded: Recorded, tmp_path: Path) -> None:
    """Refused: a failed toolcall-15 scenario marked passed with ``raw_response: null`` (a
    failed run needs no reply; a passed one does)."""

    def change(report: dict) -> None:
        pack_ = _pack(report, "toolcall-15")
        bad = next(s for s in pack_["scenarios"] if not s["passed"])
        bad["raw_response"] = None
        _marked_passed(pack_, bad)

    verdict = _verdict(recorded, tmp_path / "forged", _report_edit(change))
    found = _benchlocal_findings(verdict)
    assert len(found) == 1 and "(passed) was graded on a reply that is no reply" in found[0], found


def test_a_claimed_repeat_of_two_is_held_to_the_replies(recorded: Recorded, tmp_path: Path) -> None:
    """Refused: ``repeat`` 2 claimed and every scenario run listed twice (the copy
    ``repeat_index`` 2): each pack's counts agree and the scores are unchanged, but a passed
    copy needs an exchange of its own and the log holds one reply per passed scenario (its
    retries are replies to failed ones)."""

    def change(report: dict) -> None:
        report["repeat"] = 2
        for pack_ in report["packs"]:
            copies = [json.loads(json.dumps(s)) for s in pack_["scenarios"]]
            for copy in copies:
                copy["repeat_index"] = 2
            pack_["scenarios"] += copies
            pack_["passed"] *= 2
            pack_["total"] *= 2

    verdict = _verdict(recorded, tmp_path / "forged", _report_edit(change))
    found = _benchlocal_findings(verdict)
    assert any("was graded on a reply that is no reply" in f for f in found), found


def test_a_failed_scenario_renamed_with_a_look_alike_digit_is_found(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Refused: toolcall-15's first failed scenario written ``TC-0\\uff11`` (a full-width 1)
    and marked passed on its own reply, as if another scenario: it is no pinned scenario, and
    the pinned one is missing."""

    def change(report: dict) -> None:
        pack_ = _pack(report, "toolcall-15")
        bad = next(s for s in pack_["scenarios"] if not s["passed"])
        bad["id"] = bad["id"][:-1] + chr(0xFF10 + int(bad["id"][-1]))
        _marked_passed(pack_, bad)

    verdict = _verdict(recorded, tmp_path / "forged", _report_edit(change))
    found = _benchlocal_findings(verdict)
    assert any("not of the pinned scenarios" in f and "missing" in f for f in found), found


# --- A. the publisher: Spark Bench ---------------------------------------------------------------


@pytest.mark.parametrize(
    "metrics",
    [("Golden_Gate", "Run_Valid"), (" golden_gate", " run_valid"), ("golden_gate ", "run_valid ")],
    ids=["case", "leading-space", "trailing-space"],
)
def test_a_spark_gate_row_spelled_otherwise_passes_no_gate(
    recorded: Recorded, tmp_path: Path, metrics: tuple[str, str]
) -> None:
    """Refused: ``golden_gate`` and ``run_valid`` rows appended in another case or with a
    space (past ``spark_flag_rows``' exact match): the reader honours only the exact metric, so
    ``upstream_integrity`` still does not pass."""

    def edit(files: Files) -> None:
        text = files[SPARK_CSV][0].decode("utf-8")
        first = text.splitlines()[1].split(",")
        for name in metrics:
            text += ",".join([*first[:11], "overall", name, "pass", "", ""]) + "\n"
        files[SPARK_CSV] = (text.encode(), files[SPARK_CSV][1])
        _rederived(files, "spark-bench", ["coding", "reliability"])

    verdict = _verdict(recorded, tmp_path / "forged", edit)
    gate = next(g for g in verdict.gates if g.id == "upstream_integrity")
    assert gate.status != "pass", gate


# --- B. the honest user: benchlocal-cli replies as it saves them ---------------------------------


def _reply_edit(
    pack_id: str,
    scenario_id: str,
    observed: Callable[[dict], None],
    saved: Callable[[dict], None],
) -> Callable[[Files], None]:
    """One scenario's reply changed as the engine sent it (its exchange in the transport log,
    ``observed``) and as benchlocal-cli saved it (its ``raw_response``, ``saved``): what an
    honest run of another engine or model records."""

    def edit(files: Files) -> None:
        report = json.loads(files[BENCHLOCAL_JSON][0])
        scenario = next(s for s in _pack(report, pack_id)["scenarios"] if s["id"] == scenario_id)
        reply_id = scenario["raw_response"]["id"]
        lines, changed = [], 0
        for line in files[EXCHANGES][0].decode("utf-8").splitlines():
            exchange = json.loads(line)
            body = exchange.get("response_body")
            if body and body["encoding"] == "utf-8" and f'"{reply_id}"' in body["data"]:
                value = json.loads(body["data"])
                observed(value)
                body["data"] = json.dumps(value)
                lines.append(json.dumps(exchange, separators=(",", ":"), sort_keys=True))
                changed += 1
            else:
                lines.append(line)
        assert changed == 1, changed
        files[EXCHANGES] = (("\n".join(lines) + "\n").encode(), files[EXCHANGES][1])
        saved(scenario["raw_response"])
        _written(files, report)

    return edit


def test_the_reply_edit_alone_verifies_clean(recorded: Recorded, tmp_path: Path) -> None:
    """Held (the control of the two tests below): the exchange re-serialized, nothing else
    changed, verifies clean."""
    nothing: Callable[[dict], None] = lambda _: None  # noqa: E731
    verdict = _verdict(
        recorded, tmp_path / "honest", _reply_edit("instructfollow-15", "IF-01", nothing, nothing)
    )
    assert verdict.integrity.status == "ok", _findings(verdict)


def test_an_honest_reply_without_usage_is_no_finding(recorded: Recorded, tmp_path: Path) -> None:
    """An engine that sends no ``usage`` (several OpenAI-compatible servers and gateways omit
    it; benchlocal-cli reads it only when present: ``tokens_completion`` None). IF-01 passed on
    the very reply the log holds, yet ``answer_digest`` needs integer token counts, so the run
    has no answer and a passed run with none is a ``record_disagrees`` finding: an honest
    bundle fails integrity. Fix: bind a reply without token counts by its answer alone (both
    sides without ``usage``), or the exchange by its response body."""

    def drop(value: dict) -> None:
        value.pop("usage")

    verdict = _verdict(
        recorded, tmp_path / "honest", _reply_edit("instructfollow-15", "IF-01", drop, drop)
    )
    assert not _benchlocal_findings(verdict), _benchlocal_findings(verdict)


def test_an_honest_reply_with_think_tags_is_no_finding(recorded: Recorded, tmp_path: Path) -> None:
    """The model's content began ``<think>\\n\\n</think>\\n\\n`` (Qwen3-style templates with
    thinking off, or a reasoning model served without a reasoning parser). benchlocal-cli
    keeps ``sanitize_response_text_fields(raw_response)`` (``runner.run_scenario`` at 47d1d66:
    the tags cut, the text stripped), graded and saved; the observer saw the body as sent. The
    answer digests differ, and the passed scenario is "graded on a reply that is no reply" of
    the log: integrity fails (a forgery), where the reasoning gates are the place that judges
    the tags. Fix: compare the answer after the same sanitizing (``_REASONING_TEXT_FIELDS``
    content, ``<think>`` blocks and tags removed, stripped when changed)."""

    def tagged(value: dict) -> None:
        message = value["choices"][0]["message"]
        message["content"] = "<think>\n\n</think>\n\n" + message["content"]

    verdict = _verdict(
        recorded,
        tmp_path / "honest",
        _reply_edit("instructfollow-15", "IF-01", tagged, lambda _: None),
    )
    assert not _benchlocal_findings(verdict), _benchlocal_findings(verdict)


def _pinned_pack_ids(files: Files, pack_id: str) -> list[str]:
    """The scenario ids of a pack of the recorded benchlocal-cli checkout."""
    path = f"benchlocal_cli/packs/{pack_id}.jsonl"
    for line in files["upstreams/benchlocal/tree.txt"][0].decode("utf-8").splitlines():
        meta, name = line.split("\t", 1)
        if name == path:
            data = files[f"upstreams/benchlocal/files/{meta.split()[2]}"][0]
            return [
                json.loads(row)["id"]
                for row in data.decode("utf-8").splitlines()[1:]
                if row.strip()
            ]
    raise AssertionError(path)


def test_an_honest_passed_multi_turn_scenario_is_no_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """``benchlocal-cli run --full`` with Docker runs the sandboxed packs; hermesagent-20 (and
    aider-polyglot-30, and cli-40's multiround scenarios) go through
    ``_run_multiturn_scenario``, whose ``raw_response`` is ``{"multi_turn": true,
    "responses": [each turn's reply], "final_verifier_payload": ...}``, its first prompt the
    sandbox's, not the pack's. ``benchlocal_packs`` holds every pack that ran, scored or not:
    HA-01 passed (its one turn a real reply of the log), HA-02..20 timed out with no reply,
    and the passed one is "graded on a reply that is no reply" of the log, so an honest
    ``--full`` bundle fails integrity. Fix: hold a multi-turn run's ``responses`` each to an
    exchange (no pinned question: the sandbox writes the prompts), or leave the unscored
    packs' replies unchecked."""

    def add_pack(files: Files) -> None:
        report = json.loads(files[BENCHLOCAL_JSON][0])
        tried = next(s for s in _pack(report, "toolcall-15")["scenarios"] if s["retry_attempts"])
        turn = tried["retry_attempts"][0]["raw_response"]  # a reply of the log no run claims
        runs = []
        for number, key in enumerate(_pinned_pack_ids(files, "hermesagent-20")):
            passed = number == 0
            runs.append({
                "id": key, "repeat_index": 1, "passed": passed,
                "failure_mode": "passed" if passed else "timeout", "detail": "",
                "raw_response": {"multi_turn": True, "responses": [turn] if passed else [],
                                 "final_verifier_payload": {"passed": passed}},
                "attempt_count": 1, "retry_attempts": [], "label": "pass@1" if passed else "fail",
            })  # fmt: skip
        report["packs"].append({
            "pack_id": "hermesagent-20", "skipped": False, "status": "ok", "passed": 1,
            "total": len(runs), "score": 1 / len(runs), "scenarios": runs,
        })  # fmt: skip
        data = json.dumps(report).encode()
        files[BENCHLOCAL_JSON] = (data, files[BENCHLOCAL_JSON][1])
        files[STDOUT] = (data + b"\n", files[STDOUT][1])
        _rederived(files, "benchlocal-cli", ["tool_instruction"])

    verdict = _verdict(recorded, tmp_path / "honest", add_pack)
    assert verdict.scores.tool_instruction == pytest.approx(HONEST_TOOL_INSTRUCTION)
    assert not _benchlocal_findings(verdict), _benchlocal_findings(verdict)


# --- C. listed_ahead ----------------------------------------------------------------------------


def test_stopping_early_does_not_wait_for_the_listing_ahead(tmp_path: Path) -> None:
    """Two tars at URLs, the second on a server that takes the connection and never answers.
    The caller takes the first (verify-archive verifies it) and then stops: its stdout reader
    went away (exit 141), an interrupt, an exception. Closing the generator leaves the
    ``with ThreadPoolExecutor`` block, whose shutdown waits for the listing of the second
    tar: the command does not end until that URL times out (60 s a read, three attempts), and
    Ctrl-C waits as long. Fix: on leaving early, ``shutdown(wait=False,
    cancel_futures=True)`` and a listing thread that does not hold the interpreter's exit
    (a daemon thread of its own)."""
    site = tmp_path / "site"
    site.mkdir()
    write_small_bundle(tmp_path / "a", run_id="run-a", durable=False)
    pack(tmp_path / "a", site / "a.tar")
    stall = socket.socket()
    stall.bind(("127.0.0.1", 0))
    stall.listen(8)
    stall.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(stall.accept()[0])
            except OSError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    stalled = f"http://127.0.0.1:{stall.getsockname()[1]}/b.tar"
    try:
        with serve(site) as server, url_snapshots():
            listing = listed_ahead([url_of(server, site / "a.tar"), stalled])
            _, first = next(listing)
            assert first.result().kind == "tar"
            deadline = time.monotonic() + 10
            while not held:  # the second listing has asked
                assert time.monotonic() < deadline
                time.sleep(0.01)
            closer = threading.Thread(target=listing.close, daemon=True)
            closer.start()
            closer.join(5)
            assert not closer.is_alive(), "the caller stopped; the listing ahead held it"
    finally:
        stop.set()
        acceptor.join()
        for conn in held:
            conn.close()
        stall.close()
