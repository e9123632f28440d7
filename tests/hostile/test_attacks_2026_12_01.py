"""Hostile tests of the changes of 2026-12-01: the evidence taken at its places by role
(verify/evidence.py, verify/_core.py), the gate list (verify/gx10, verify/forensics.py), the
pinned harness variables (ADR 0033) and ``audit rejudge --before``.

Each attack is made the way a publisher who controls every byte of a bundle would make it: an
honest ``audit run`` against the reference endpoint, its evidence edited and the bundle resealed
with claims that repeat its own replay (``tests.gate_kit.resealed``), so that only the evidence
differs. Each asserts the safe behaviour. Six showed holes when written, each fixed beside it:
an environment or checkout record that means two things (a repeated key, NaN: read strictly
now), gate tallies of a gate the pin set does not run read into the replay and its diagnostics
(no longer read), an environment record no check reads not listed as unread, the forensic view
listing misplaced entries as a gate's evidence, and runner variables given by a library caller.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.cli.recording import _variables
from bundle_schema import KINDS, canonical_bytes
from bundle_schema.errors import InvalidInput
from bundle_schema.models import BfclShard, Gx10Evidence, TaskTallies, Verdict
from bundle_schema.roles import place
from pins import DEMO, PinSetSource, load_builtin, pin_set_model
from tests.data.hostile.kit import Files, read_bundle, reseal
from tests.factories import smoke_run, sparkbench_pins
from tests.gate_kit import bfcl_gated_pins, gate_mirror, gated_run, resealed
from tests.paths import DATA
from verify import verify_bundle
from verify.evidence import EvidenceRecords
from verify.forensics import show_report
from verify.gx10 import GATES, Check, replay

ENV = "upstreams/sparkbench/environment.json"
PINNED = {"SPARK_NOTE": "as pinned"}
RESPONSE = "probes/direct-response.json"
TOOL_CALL = "probes/tool-call.json"
TALLIES = "components/tool_instruction/gates/bfcl/bfcl-eval.json"


def _media(kind: str) -> str:
    media = KINDS[kind].media_type
    assert media is not None
    return media


# --- the runs the attacks start from ---------------------------------------------------------


def _env_pins(env: dict[str, str]) -> PinSetSource:
    return sparkbench_pins(env=env)


@pytest.fixture(scope="module")
def smoke(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource]:
    """An honest smoke run whose SparkBench harness has a pinned variable: QUALIFIED."""
    pins = _env_pins(PINNED)
    bundle = smoke_run(tmp_path_factory.mktemp("smoke") / "bundle", mirrors, pins)
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok"), verdict.reasons
    return bundle, pins


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource, Verdict]:
    """An honest full run with bfcl-eval as tool/instruction's gate: QUALIFIED."""
    root = tmp_path_factory.mktemp("gated")
    mirror = gate_mirror(root / "mirror", mirrors, DATA / "bfcl_eval_harness", "bfcl")
    run = gated_run(root / "bundle", mirror, bfcl_gated_pins)
    assert run[2].outcome == "QUALIFIED", run[2].reasons
    return run


def _forged(
    run: tuple[Path, PinSetSource] | tuple[Path, PinSetSource, Verdict],
    tmp_path: Path,
    edit: Callable[[Files], None],
    *,
    keep_evidence: bool = False,
) -> Verdict:
    """The run edited by ``edit``, resealed with claims that repeat its replay, verified under
    the run's pin set (bounded, as ``audit verify`` does, unless ``keep_evidence``)."""
    bundle, pins = run[0], run[1]
    forged = resealed(bundle, tmp_path / "forged", edit, pins)
    return verify_bundle(forged, pins=pins, keep_evidence=keep_evidence).verdict


def _findings(verdict: Verdict, code: str) -> list[tuple[str | None, str]]:
    return [(f.entry, f.message) for f in verdict.integrity.findings if f.code == code]


def _refused(verdict: Verdict) -> None:
    assert verdict.outcome == "INFRA_ERROR", verdict.outcome
    assert verdict.integrity.status == "failed"
    assert not verdict.rankable


# --- 1. two entries for one field, and records that are not what their place says ----------


def test_unit_two_gate_records_fill_one_slot_the_later_by_name_wins() -> None:
    """EvidenceRecords itself takes a bfcl-eval.json and a tasks.json of one gate into one slot,
    the later by logical name silently replacing the earlier: the defence is the verifier's
    _gate_records_unpinned (the next test), not the assembly."""
    shard = BfclShard.model_construct()
    tallies = TaskTallies.model_construct()
    records = EvidenceRecords()
    records.take(place(TALLIES, _media("bfcl-shard")), [shard])
    tasks = TALLIES.replace("bfcl-eval.json", "tasks.json")
    records.take(place(tasks, _media("task-tallies")), [tallies])
    assert records.supplementary == {"tool_instruction": {"bfcl": tallies}}


def _task_tallies() -> bytes:
    return canonical_bytes(
        {"harness": "inspect-ai", "version": "1", "model": "m", "tasks": {"t": {"hits": 1, "n": 1}}}
    )


@pytest.mark.parametrize(
    "name",
    [
        # the other reader's file at the gate's place: sorted after bfcl-eval.json, it would
        # replace the gate's tallies in the evidence
        "components/tool_instruction/gates/bfcl/tasks.json",
        # a gate the pin set does not run there
        "components/coding/gates/bfcl/tasks.json",
        "components/tool_instruction/gates/inspect/tasks.json",
    ],
)
def test_a_second_gate_record_beside_the_gates_tallies_is_refused(
    gated: tuple[Path, PinSetSource, Verdict], tmp_path: Path, name: str
) -> None:
    def add(files: Files) -> None:
        files[name] = (_task_tallies(), _media("task-tallies"))

    for keep in (False, True):
        verdict = _forged(gated, tmp_path / str(keep), add, keep_evidence=keep)
        _refused(verdict)
        assert any(e == name for e, _ in _findings(verdict, "record_disagrees")), name


def test_the_gates_tallies_copied_beside_another_component_are_refused(
    gated: tuple[Path, PinSetSource, Verdict], tmp_path: Path
) -> None:
    other = "components/coding/gates/bfcl/bfcl-eval.json"

    def copy_tallies(files: Files) -> None:
        files[other] = files[TALLIES]

    verdict = _forged(gated, tmp_path, copy_tallies)
    _refused(verdict)
    assert any(e == other for e, _ in _findings(verdict, "record_disagrees"))


def _tasks_at_the_gates_place(files: Files) -> None:
    files[TALLIES.replace("bfcl-eval.json", "tasks.json")] = (
        _task_tallies(),
        _media("task-tallies"),
    )


def _tallies_beside_coding(files: Files) -> None:
    files["components/coding/gates/bfcl/bfcl-eval.json"] = files[TALLIES]


@pytest.mark.parametrize(
    "edit", [_tasks_at_the_gates_place, _tallies_beside_coding], ids=["tasks.json", "coding"]
)
def test_a_gate_record_the_pin_set_does_not_run_is_never_read(
    gated: tuple[Path, PinSetSource, Verdict], tmp_path: Path, edit: Callable[[Files], None]
) -> None:
    verdict = _forged(gated, tmp_path, edit)
    _refused(verdict)
    shown = {(s.component, s.upstream, s.samples) for s in verdict.diagnostics.supplementary}
    assert shown <= {("tool_instruction", "bfcl", 6)}, shown
    assert not any(e == TALLIES for e, _ in _findings(verdict, "record_disagrees"))


def test_probes_swapped_between_their_places_are_both_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    def swap(files: Files) -> None:
        files[RESPONSE], files[TOOL_CALL] = files[TOOL_CALL], files[RESPONSE]

    verdict = _forged(smoke, tmp_path, swap)
    _refused(verdict)
    assert {e for e, _ in _findings(verdict, "record_disagrees")} >= {RESPONSE, TOOL_CALL}
    gates = {g.id: g.status for g in verdict.gates}
    assert gates["direct_response"] == gates["tool_call_protocol"] == "infra"


def test_one_probe_at_both_probe_places_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    def twice(files: Files) -> None:
        files[TOOL_CALL] = files[RESPONSE]

    verdict = _forged(smoke, tmp_path, twice)
    _refused(verdict)
    assert any(e == TOOL_CALL for e, _ in _findings(verdict, "record_disagrees"))


def test_a_result_naming_another_component_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    name = "components/performance/result.json"

    def other(files: Files) -> None:
        files[name] = files["components/coding/result.json"]

    verdict = _forged(smoke, tmp_path, other)
    _refused(verdict)
    (finding,) = [f for f in verdict.integrity.findings if f.entry == name]
    assert (finding.code, finding.expected, finding.got) == (
        "record_disagrees", "performance", "coding"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("media_kind", "code"),
    [("spark-repeat", "misplaced_evidence"), ("spark-quality", "record_invalid")],
    ids=["its own media type", "the place's media type"],
)
def test_a_record_of_another_kind_at_a_place_that_fills_a_field_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, media_kind: str, code: str
) -> None:
    name = "components/coding/spark-quality.json"

    def other_kind(files: Files) -> None:
        data, _ = files["components/reliability/spark-repeat.json"]
        files[name] = (data, _media(media_kind))

    verdict = _forged(smoke, tmp_path, other_kind)
    _refused(verdict)
    assert any(e == name for e, _ in _findings(verdict, code)), verdict.integrity.findings


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        # a single-document record given as two JSON lines
        ("run/config.json", lambda data: data + b"\n" + data + b"\n"),
        # a single-document record with a newline after it
        ("run/config.json", lambda data: data + b"\n"),
        # a JSON Lines record whose last line has no newline
        ("network/socket-ledger.jsonl", lambda data: data.rstrip(b"\n")),
        # a JSON Lines record with an empty line in it
        ("transport/exchanges.jsonl", lambda data: b"\n" + data),
        # a JSON Lines record that is one JSON array of its lines
        (
            "network/socket-ledger.jsonl",
            lambda data: b"[" + b",".join(data.splitlines()) + b"]\n",
        ),
    ],
    ids=["two documents", "trailing newline", "no last newline", "empty line", "array"],
)
def test_json_lines_and_single_documents_are_not_confused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, name: str, edit: Callable[[bytes], bytes]
) -> None:
    def change(files: Files) -> None:
        files[name] = (edit(files[name][0]), files[name][1])

    for keep in (False, True):
        verdict = _forged(smoke, tmp_path / str(keep), change, keep_evidence=keep)
        _refused(verdict)
        assert any(e == name for e, _ in _findings(verdict, "record_invalid")), name


@pytest.mark.parametrize(
    ("name", "gate"),
    [
        ("network/socket-ledger.jsonl", "network_isolation"),
        ("transport/exchanges.jsonl", "transport_evidence"),
    ],
)
def test_an_empty_json_lines_record_fills_nothing_and_is_never_qualified(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, name: str, gate: str
) -> None:
    def empty(files: Files) -> None:
        files[name] = (b"", files[name][1])

    for keep in (False, True):
        verdict = _forged(smoke, tmp_path / str(keep), empty, keep_evidence=keep)
        assert verdict.outcome == "INFRA_ERROR" and not verdict.rankable
        assert {g.id: g.status for g in verdict.gates}[gate] == "infra"


# --- 2. the gate list ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke_evidence(smoke: tuple[Path, PinSetSource]) -> tuple[Gx10Evidence, PinSetSource]:
    bundle, pins = smoke
    return verify_bundle(bundle, pins=pins, keep_evidence=True).evidence, pins


def test_a_look_alike_gate_equal_in_every_field_but_its_check_fails_closed(
    smoke_evidence: tuple[Gx10Evidence, PinSetSource],
) -> None:
    evidence, pins = smoke_evidence
    assert replay(evidence, pins).outcome == "QUALIFIED"
    # a copy of a gate whose check lets everything pass: same id, reads and part
    lenient = dataclasses.replace(GATES[0], check=lambda _run: Check("pass", "forged"))
    result = replay(evidence, pins, gates=(lenient, *GATES[1:]))
    assert (result.outcome, result.result_validity, result.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    # an exact copy is not the gate either: identity, not equality
    copied = (dataclasses.replace(GATES[0]), *GATES[1:])
    assert replay(evidence, pins, gates=copied).outcome == "INFRA_ERROR"


def test_the_gate_list_in_another_order_decides_as_seed_000s(
    smoke_evidence: tuple[Gx10Evidence, PinSetSource],
) -> None:
    evidence, pins = smoke_evidence
    ordered = replay(evidence, pins)
    reordered = replay(evidence, pins, gates=tuple(reversed(GATES)))
    assert (reordered.outcome, reordered.result_validity, reordered.rankable) == (
        ordered.outcome, ordered.result_validity, ordered.rankable
    )  # fmt: skip
    assert {g.id: g.status for g in reordered.gates} == {g.id: g.status for g in ordered.gates}


def test_the_forensic_gate_view_lists_only_the_entries_the_gates_read(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    bundle, pins = smoke
    manifest, files = read_bundle(bundle)
    files["extra/exchanges.jsonl"] = files["transport/exchanges.jsonl"]
    reseal(tmp_path / "forged", manifest, files, {})
    done = verify_bundle(tmp_path / "forged", pins=pins, keep_evidence=True)
    assert any(f.code == "misplaced_evidence" for f in done.verdict.integrity.findings)
    report = show_report(done.verdict, done.evidence, done.manifest.model.evidence, pins)
    view = {g.id: [e.name for e in g.evidence] for g in report.gates}
    assert view["model_identity"] == ["transport/exchanges.jsonl"], view["model_identity"]


# --- 3. pinned harness variables (ADR 0033) ---------------------------------------------------


def _env_edit(change: Callable[[bytes], bytes]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        files[ENV] = (change(files[ENV][0]), files[ENV][1])

    return edit


def _with_variables(text: str) -> Callable[[bytes], bytes]:
    """The environment record with its ``variables`` member's bytes replaced by ``text``."""

    def change(data: bytes) -> bytes:
        recorded = data.decode()
        start = recorded.index('"variables":')
        end = recorded.index("}", start) + 1
        return (recorded[:start] + '"variables":' + text + recorded[end:]).encode()

    return change


@pytest.mark.parametrize(
    "variables",
    [
        "[]",
        '[["SPARK_NOTE","as pinned"]]',
        "null",
        "{}",
        '{"SPARK_NOTE":["as pinned"]}',
        '{"SPARK_NOTE":null}',
        '{"SPARK_NOTE":"as pinned "}',
        '{"spark_note":"as pinned"}',
        '{"SPARK_NOTE":"[redacted]"}',
    ],
)
def test_a_record_that_does_not_show_the_pinned_variable_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, variables: str
) -> None:
    verdict = _forged(smoke, tmp_path, _env_edit(_with_variables(variables)))
    _refused(verdict)
    assert any(e == ENV for e, _ in _findings(verdict, "record_disagrees")), variables


@pytest.mark.parametrize(
    "change",
    [
        lambda data: b"[" + data + b"]",
        lambda data: b"",
        lambda data: data[:-1],
        lambda data: b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["an array", "empty", "cut", "deep"],
)
def test_an_environment_record_that_does_not_read_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, change: Callable[[bytes], bytes]
) -> None:
    verdict = _forged(smoke, tmp_path, _env_edit(change))
    _refused(verdict)
    assert any(
        e == ENV and "no readable environment record" in m
        for e, m in _findings(verdict, "record_disagrees")
    )


def test_an_environment_record_under_a_record_media_type_is_misplaced(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    def as_record(files: Files) -> None:
        files[ENV] = (files[ENV][0], _media("run-config"))

    verdict = _forged(smoke, tmp_path, as_record)
    _refused(verdict)
    assert any(e == ENV for e, _ in _findings(verdict, "misplaced_evidence"))


@pytest.mark.parametrize(
    "change",
    [
        _with_variables('{"SPARK_NOTE":"something else","SPARK_NOTE":"as pinned"}'),
        lambda data: (
            _with_variables('{"SPARK_NOTE":"something else"}')(data)[:-1]
            + b',"variables":{"SPARK_NOTE":"as pinned"}}'
        ),
        lambda data: data[:-1] + b',"python_version":NaN}',
    ],
    ids=["repeated variable", "repeated member", "NaN"],
)
def test_an_environment_record_that_means_two_things_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, change: Callable[[bytes], bytes]
) -> None:
    forged: dict[str, bytes] = {}

    def edit(files: Files) -> None:
        files[ENV] = (change(files[ENV][0]), files[ENV][1])
        forged["data"] = files[ENV][0]

    verdict = _forged(smoke, tmp_path, edit)
    assert b"as pinned" in forged["data"]
    assert verdict.outcome != "QUALIFIED", "a record that means two things qualified"
    assert any(e == ENV for e, _ in _findings(verdict, "record_disagrees"))


def _member(name: str, value: object) -> Callable[[bytes], bytes]:
    """The record with one member set (added, or replaced), written canonically as the runner
    writes it: what is refused is the content, not the bytes' form."""

    def change(data: bytes) -> bytes:
        return canonical_bytes({**json.loads(data), name: value})

    return change


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_member("note", "a member no reader knows"), "note"),
        (_member("upstream", "hermesbench"), "the environment of 'hermesbench'"),
        (_member("schema_version", 99), "schema_version 99"),
        (_member("distributions", ["pydantic==2", 7]), "distributions"),
        (_member("executable", ""), "executable"),
        (_member("variables", {"SPARK_NOTE": "as pinned", "bad name": "x"}), "variables"),
        (_member("installed", {"nothing==1": "sha256:" + "0" * 64}), "installed"),
        (lambda data: _member("distributions", [*json.loads(data)["distributions"],
                                                "PyDantic==0.0.1"])(data), "listed twice"),
    ],
    ids=["unknown member", "another harness's", "a newer version", "not a name", "no path",
         "a variable of no name", "installed, not a distribution", "two versions of one"],
)  # fmt: skip
def test_an_environment_record_is_read_strictly(
    smoke: tuple[Path, PinSetSource],
    tmp_path: Path,
    change: Callable[[bytes], bytes],
    why: str,
) -> None:
    """A record with a member of no meaning, of another harness or another version is not this
    harness's environment: the pinned requirements and variables it shows do not count."""
    verdict = _forged(smoke, tmp_path, _env_edit(change))
    _refused(verdict)
    ((_, message),) = [(e, m) for e, m in _findings(verdict, "record_disagrees") if e == ENV]
    assert "no readable environment record" in message and why in message, message


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_member("note", "a member no reader knows"), "note"),
        (_member("tree", "not a tree id"), "tree"),
        (_member("porcelain", None), "porcelain"),
        (lambda data: data.replace(b'{"commit"', b'{ "commit"'), "canonical"),
    ],
    ids=["unknown member", "not a tree id", "no status", "not canonical"],
)
def test_a_checkout_record_is_read_strictly(
    smoke: tuple[Path, PinSetSource],
    tmp_path: Path,
    change: Callable[[bytes], bytes],
    why: str,
) -> None:
    name = "upstreams/sparkbench/checkout.json"

    def edit(files: Files) -> None:
        files[name] = (change(files[name][0]), files[name][1])

    verdict = _forged(smoke, tmp_path, edit)
    assert verdict.outcome != "QUALIFIED" and not verdict.rankable
    messages = [f.message for f in verdict.integrity.findings if f.entry == name]
    assert any("not a checkout record" in m and why in m for m in messages), messages


def test_a_checkout_record_that_means_two_things_is_refused(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    name = "upstreams/sparkbench/checkout.json"

    def dirty_then_clean(files: Files) -> None:
        data = files[name][0]
        files[name] = (b'{"porcelain":" M sparkbench.py",' + data[1:], files[name][1])

    verdict = _forged(smoke, tmp_path, dirty_then_clean)
    assert verdict.outcome != "QUALIFIED"
    assert any(f.entry == name for f in verdict.integrity.findings)


@pytest.mark.parametrize("pinned", [True, False], ids=["infermark's, added", "under the demo"])
def test_an_environment_record_no_check_reads_is_listed_as_unread(
    smoke: tuple[Path, PinSetSource], tmp_path: Path, pinned: bool
) -> None:
    if pinned:  # an upstream that runs no harness: nothing would ever read its record
        name = "upstreams/infermark/environment.json"

        def add(files: Files) -> None:
            files[name] = files[ENV]

        verdict = _forged(smoke, tmp_path, add)
    else:  # the honest run, judged by a pin set that pins nothing of SparkBench's environment
        name = ENV
        verdict = verify_bundle(smoke[0], pins=load_builtin(DEMO)).verdict
    assert verdict.outcome == "QUALIFIED"
    assert name in verdict.unread, verdict.unread


def test_a_partial_component_is_held_to_its_pinned_variables_too(
    smoke: tuple[Path, PinSetSource], tmp_path: Path
) -> None:
    """A PARTIAL component is scored (its score stays visible), so it is held to its harness's
    pinned environment as a completed one is; and it is never QUALIFIED or rankable."""

    def partial(files: Files) -> None:
        name = "components/coding/result.json"
        result = json.loads(files[name][0])
        result["status"] = "PARTIAL"
        files[name] = (canonical_bytes(result), files[name][1])
        _env_edit(_with_variables('{"SPARK_NOTE":"something else"}'))(files)

    verdict = _forged(smoke, tmp_path, partial)
    assert verdict.outcome == "INFRA_ERROR" and not verdict.rankable
    (finding,) = (f for f in verdict.integrity.findings if f.entry == ENV)
    assert finding.code == "record_disagrees"
    assert "coding (partial) completed by sparkbench, which ran with SPARK_NOTE" in finding.message


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["PATH=/tmp/bin"], "the runner sets it"),
        (["HOME=/root"], "the runner sets it"),
        (["PYTHONDONTWRITEBYTECODE="], "the runner sets it"),
        (["A=1", "A=2"], "given twice"),
        (["=1"], "expected NAME=VALUE"),
        (["A"], "expected NAME=VALUE"),
        (["1A=x"], "expected NAME=VALUE"),
        (["A-B=x"], "expected NAME=VALUE"),
        (["A=x\0y"], "expected NAME=VALUE"),
        (["A" * 129 + "=x"], "expected NAME=VALUE"),
        (["A=" + "x" * 4097], "a value of over 4096 characters"),
    ],
)
def test_the_run_commands_env_refuses_runner_variables_and_malformed_ones(
    items: list[str], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        _variables(items)


@pytest.mark.parametrize(
    "name", ["hf_token", "OPENAI_API_KEY", "My_Secret", "GH_AUTH", "DB_PASSWD", "HOME", "PATH"]
)
def test_a_pin_set_never_pins_a_secret_or_a_runner_variable(name: str) -> None:
    data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["harnesses"]["sparkbench"]["env"] = {name: "x"}
    with pytest.raises(InvalidInput, match=r"harnesses\.sparkbench\.env"):
        pin_set_model(data, "x.toml")


def test_the_runner_refuses_a_runner_variable_whoever_gives_it(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _env_pins(PINNED)
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    with pytest.raises(InvalidInput, match="HOME"):
        smoke_run(tmp_path / "bundle", mirrors, pins, harness_env={"HOME": str(elsewhere)})


def test_a_pinned_variable_given_another_value_is_refused_before_the_run(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _env_pins(PINNED)
    with pytest.raises(InvalidInput, match="--env SPARK_NOTE: the pin set pins it"):
        smoke_run(tmp_path / "bundle", mirrors, pins, harness_env={"SPARK_NOTE": "other"})
    assert not (tmp_path / "bundle").exists()


# --- 4. audit rejudge --before ------------------------------------------------------------------


def test_rejudge_before_an_unknown_pin_set_is_refused_not_defaulted(
    smoke: tuple[Path, PinSetSource], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, _ = smoke
    code = main(["rejudge", str(bundle), "--pins", DEMO, "--before", "no-such-pins", "--json"])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == ""


def test_rejudge_before_the_same_pin_set_changes_nothing(
    smoke: tuple[Path, PinSetSource], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, _ = smoke
    code = main(["rejudge", str(bundle), "--pins", DEMO, "--before", DEMO, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (report["bundles"], report["changed"], report["refused"]) == (1, [], [])
