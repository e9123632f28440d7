"""Hostile tests of 2026-12-04 (f): an adversarial publisher (every byte, resealed) against the
verifier's supplementary GATE readers and their cross-checks (bfcl-eval, lm-evaluation-harness,
Inspect AI: ``verify/harness_outputs.py``, ``verify/_consistency/outputs.py`` ``_gate_outputs``),
the harness ENVIRONMENT record checks (``_environments``, ADR 0033) and the harness DATA listings
(``_data_listings``, ADR 0029).

Bundles come from two real ``audit run``s against the reference endpoint (module fixtures, as
tests/e2e do): one with the bfcl-eval-format stand-in as tool/instruction's gate, one with the
lm-evaluation-harness stand-in (its offline switches pinned as ``env``). Each attack edits the
gate's raw outputs and re-derives, with the verifier's own reader, the tallies record and the
component's gate metrics (what a forger's runner would write), then reseals with claims equal to
the replay. Reader-only attacks use tests/data/upstream_outputs.

Holes (each test asserts the safe behaviour and failed on the code of 2026-12-04). Fixed the
same day: 1 (``live_relevance`` bounded by its 16 entries, ``V4_SUBSET_SIZES``), 4
(``data_overall.csv``'s Model held to the score files' model), 5 (tasks that differ only in
case refused) and 6 (a gate's reported version held to the pinned ``name==version``,
``_consistency._reported_version``) and 3 (the score files' model held to the run's runtime
model id, ``_consistency._bfcl_model``) and 2 (bfcl-eval's samples bounded by the requests of
the component it gates, ``_consistency._bfcl_requests``: each entry asks at least once).

1. bfcl-eval ``live_relevance`` has no dataset-size bound: ``V4_DATASET_SIZES``
   (verify/scorers/bfcl.py) lacks it while ``KNOWN_V4`` admits it, so ``_bfcl_subset``
   (``size is None``) takes a ``total_count`` of 1,000 (bfcl-eval 2026.3.23 ships 16 entries).
   Not in BFCL V4's overall, so ``data_overall.csv`` still agrees: the gate's flat accuracy
   (``bfcl_overall_accuracy``, ``diagnostics.supplementary.overall_accuracy``) goes from 33.3 %
   to 99.6 %, 1,006 samples, integrity ok, QUALIFIED. docs/upstreams.md: "a ``total_count`` above
   bfcl-eval's dataset size for the subset" is refused.
2. A gate's samples are never bounded by the requests the gated component made: bfcl-eval's
   ``simple_python`` grown from 3 to 390 answered entries, all correct (under its 400), with
   ``data_overall.csv`` recomputed: 393 samples beside a transport log holding 18
   tool_instruction exchanges in all (BenchLocal's included); integrity ok, v4_overall 5.0 % ->
   5.8 %. Every sample of every gate
   reader (bfcl-eval, Inspect, lm-eval) is at least one completion request of its component
   (ADR 0022 §4: "its requests are the component's exchanges"), so the evidence to refuse it is
   in the bundle (``_gate_outputs`` never looks at ``evidence.transport``).
3. bfcl-eval outputs of another model: ``score/<model>/``, ``result/<model>/`` and
   ``data_overall.csv``'s Model column all renamed to ``gpt-4o-2024-11-20`` (not the run's
   runtime model id, whose name the pinned command registers as both directory and display
   name) verify with no finding. Nothing compares the outputs' model with the manifest's
   (``_bfcl_files`` / ``_bfcl_overall``; the model is not even in the ``bfcl-shard`` record, so
   ``diagnostics`` cannot show it either).
4. bfcl-eval ``data_overall.csv``'s Model column is not checked against the score files'
   model directory: a row of ``gpt-4o`` beside ``score/smollm2-135m-instruct/`` reads
   (``_bfcl_overall`` returns only ``Overall Acc``).
5. lm-evaluation-harness: one samples file counted for two tasks. Task names are matched to
   samples files case-folded (``samples.get(task.lower())`` in ``_lm_eval``), but kept as
   given in the tallies: ``results``/``n-samples`` naming ``arithmetic_local`` and
   ``ARITHMETIC_LOCAL`` read the one ``samples_arithmetic_local_*.jsonl`` twice: 16 samples
   from 8 per-item records, 2 tasks; integrity ok. Copies of a good task dilute a bad one.
6. The harness version the raw outputs report is not held to the pinned requirement: the
   lm-eval results say ``lm_eval_version`` 0.4.2 (so do the tallies), the pin set requires
   ``lm-eval==0.4.13`` and the environment record lists ``lm-eval==0.4.13``: no finding
   (``_environments`` reads only the record; ``TaskTallies.version`` is shown, never
   compared). Inspect AI's ``eval.packages.inspect_ai`` alike (by reading the code).

Held: bfcl-eval a result file's entries repeated as another subset's (sample ids twice across
subsets), two lm-eval results files in two model directories, a pinned variable recorded with
another value, the environment record removed, another harness's record copied in, a record
listing a distribution twice, a record without the pinned requirement; a pinned data listing
removed, of other bytes, or kept with the right bytes under another media type; a tallies
record at a gate place of another reader.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundle_schema import canonical_bytes
from bundle_schema.models import PinSetRef, Verdict
from pins import PinSetSource, pin_set_source
from tests.data.hostile.kit import Files, read_bundle
from tests.gate_kit import (
    bfcl_gated_pins,
    gate_mirror,
    gated_run,
    merged_pins,
    resealed_as_replayed,
)
from tests.paths import DATA
from verify import verify_bundle
from verify.harness_outputs import OutputsUnreadable, read_gate_outputs, read_outputs

OUTPUTS = DATA / "upstream_outputs"
BFCL_HARNESS = DATA / "bfcl_eval_harness"
LM_TASKS = DATA / "lm_eval_tasks"
LM_FRAGMENT = DATA / "pins" / "lm-eval-gate.toml"
TOOL = "components/tool_instruction/result.json"
BFCL_PLACE = "components/tool_instruction/gates/bfcl/"
LM_PLACE = "components/tool_instruction/gates/lmeval/"
LM_ENV = "upstreams/lmeval/environment.json"
LM_DATA = "upstreams/lmeval/data/tasks.jsonl"
DATA_LISTING = "application/vnd.evidence-audit.data-listing+jsonl"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

Run = tuple[Path, PinSetSource, Verdict]


# --- the runs ---------------------------------------------------------------------------------


def _lm_pins(commit: str, **harness: Any) -> PinSetSource:
    """lm-eval as tool/instruction's gate, its offline switches pinned (ADR 0033), and
    ``harness`` fields (requirements, data) set."""
    data = copy.deepcopy(dict(merged_pins(LM_FRAGMENT, "lmeval", commit, "lm-f").data))
    data["harnesses"]["lmeval"].update({"env": dict(OFFLINE), **harness})
    if harness:
        data["id"] = "lm-f-" + "-".join(sorted(harness))
    return pin_set_source(data, "gated pins")


def _qualified_run(
    factory: pytest.TempPathFactory,
    mirrors: dict[str, Path],
    harness: Path,
    upstream: str,
    pins: Callable[[str], PinSetSource],
) -> Run:
    """A gated run of ``harness`` (mirrored as ``upstream``) under ``pins``, QUALIFIED clean."""
    gated = gate_mirror(factory.mktemp(f"{upstream}-mirror"), mirrors, harness, upstream)
    run = gated_run(factory.mktemp(f"{upstream}-run") / "bundle", gated, pins)
    assert run[2].integrity.findings == () and run[2].outcome == "QUALIFIED"
    return run


@pytest.fixture(scope="module")
def bfcl_run(tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]) -> Run:
    return _qualified_run(tmp_path_factory, mirrors, BFCL_HARNESS, "bfcl", bfcl_gated_pins)


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]) -> Run:
    return _qualified_run(tmp_path_factory, mirrors, LM_TASKS, "lmeval", _lm_pins)


# --- forging ----------------------------------------------------------------------------------


def _forge(run: Run, target: Path, edit: Callable[[Files], None], pins: PinSetSource | None = None
           ) -> Verdict:  # fmt: skip
    """``run``'s bundle edited, resealed under ``pins`` (default the run's), with claims equal
    to its replay; its verdict under ``pins``."""
    bundle, run_pins, _ = run
    pins = pins or run_pins
    manifest, files = read_bundle(bundle)
    edit(files)
    fields = {"pin_set": PinSetRef(id=pins.id, digest=pins.digest).model_dump()}
    resealed_as_replayed(target, manifest, files, pins, fields)
    return verify_bundle(target, pins=pins).verdict


def _put(files: Files, name: str, data: bytes, like: str | None = None) -> None:
    media = files[name][1] if name in files else files[like or name][1]
    files[name] = (data, media)


def _rederive_gate(files: Files, place: str, parser: str, upstream: str) -> None:
    """What a forger's runner writes from the (edited) gate raw outputs: the tallies record and
    the gated component's gate metrics, by the verifier's own reader; the result lists every
    gate raw output."""
    raw = {n.removeprefix(place + "raw/"): d for n, (d, _) in files.items()
           if n.startswith(place + "raw/")}  # fmt: skip
    try:
        parsed = read_gate_outputs(parser, raw, "tool_instruction", upstream)
    except OutputsUnreadable:  # refused by the reader: the records stay as they were
        result = json.loads(files[TOOL][0])
        others = [n for n in result["raw_outputs"] if not n.startswith(place + "raw/")]
        result["raw_outputs"] = sorted([*others, *(place + "raw/" + n for n in raw)])
        _put(files, TOOL, canonical_bytes(result))
        return
    for name, (_, record) in parsed.records.items():
        _put(files, name, canonical_bytes(record.model_dump(mode="json")))  # type: ignore[union-attr]
    result = json.loads(files[TOOL][0])
    result["metrics"] = {**result["metrics"], **parsed.metrics["tool_instruction"]}
    others = [n for n in result["raw_outputs"] if not n.startswith(place + "raw/")]
    result["raw_outputs"] = sorted([*others, *(place + "raw/" + n for n in raw)])
    _put(files, TOOL, canonical_bytes(result))


def _outputs(harness: str) -> dict[str, bytes]:
    """A harness's recorded real outputs (tests/data/upstream_outputs), by relative path."""
    root = OUTPUTS / harness
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def _jsonl(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def _disagreeing(verdict: Verdict) -> list[str]:
    return [f"{f.entry}: {f.message}" for f in verdict.integrity.findings
            if f.code in ("record_disagrees", "misplaced_evidence")]  # fmt: skip


def _exchanges_of(bundle_files: Files, component: str) -> int:
    return sum(
        1 for e in _lines(bundle_files["transport/exchanges.jsonl"][0])
        if e.get("component") == component
    )  # fmt: skip


# --- bfcl-eval helpers ------------------------------------------------------------------------


def _bfcl_model(files: Files) -> str:
    prefix = BFCL_PLACE + "raw/score/"
    scores = [n for n in files if n.startswith(prefix) and n.endswith("_score.json")]
    (model,) = {n[len(prefix) :].split("/")[0] for n in scores}
    return model


def _bfcl_overall_row(files: Files, overall: float, model: str | None = None) -> None:
    name = BFCL_PLACE + "raw/score/data_overall.csv"
    header, row = files[name][0].decode().split("\n", 1)
    fields = row.strip("\n").split(",")
    fields[1] = f"{overall * 100:.2f}%"
    if model is not None:
        fields[2] = model
    _put(files, name, (header + "\n" + ",".join(fields)).encode())


def _bfcl_v4(files: Files) -> float:
    from verify.scorers.bfcl import aggregate_v4  # noqa: PLC0415

    raw = {n.removeprefix(BFCL_PLACE + "raw/"): d for n, (d, _) in files.items()
           if n.startswith(BFCL_PLACE + "raw/")}  # fmt: skip
    tallies = {}
    from bundle_schema.models import Tally  # noqa: PLC0415

    for name, data in raw.items():
        if name.endswith("_score.json"):
            header = json.loads(data.split(b"\n", 1)[0])
            subset = name.rsplit("bfcl_v4_", 1)[1].removesuffix("_score.json")
            tallies[subset] = Tally(hits=header["correct_count"], n=header["total_count"])
    overall = aggregate_v4(tallies)["overall_accuracy"]
    assert overall is not None
    return overall


def _bfcl_subset(files: Files, group: str, subset: str, ids: list[str], correct: int) -> None:
    model = _bfcl_model(files)
    like = next(n for n in files if n.startswith(BFCL_PLACE + "raw/result/"))
    result = f"{BFCL_PLACE}raw/result/{model}/{group}/bfcl_v4_{subset}_result.json"
    score = f"{BFCL_PLACE}raw/score/{model}/{group}/bfcl_v4_{subset}_score.json"
    _put(files, result, _jsonl([{"id": i, "result": "[]"} for i in ids]), like)
    failed = [{"id": i, "valid": False, "error": ["x"]} for i in ids[correct:]]
    header = {"accuracy": correct / len(ids), "correct_count": correct, "total_count": len(ids)}
    _put(files, score, _jsonl([header, *failed]), like)
    _bfcl_overall_row(files, _bfcl_v4(files))


# --- hole 1: live_relevance has no size -------------------------------------------------------


def test_bfcl_live_relevance_beyond_its_dataset_is_refused(bfcl_run: Run, tmp_path: Path) -> None:
    honest = bfcl_run[2].diagnostics.supplementary[0]

    def edit(files: Files) -> None:
        ids = [f"live_relevance_{i}-{i}-0" for i in range(1000)]
        _bfcl_subset(files, "live", "live_relevance", ids, 1000)
        _rederive_gate(files, BFCL_PLACE, "bfcl-eval", "bfcl")

    verdict = _forge(bfcl_run, tmp_path / "b", edit)
    shown = verdict.diagnostics.supplementary
    assert verdict.integrity.status == "failed" or not shown or shown[0].samples <= 16 + 6, (
        f"live_relevance of 1000 entries (bfcl-eval has 16) read: samples {shown[0].samples}, "
        f"flat accuracy {honest.overall_accuracy:.1f} -> {shown[0].overall_accuracy:.1f}, "
        f"integrity {verdict.integrity.status}"
    )


def test_bfcl_live_relevance_size_is_bounded_by_the_reader() -> None:
    """Hole 1 at the reader: bfcl-eval 2026.3.23's BFCL_v4_live_relevance.json has 16 entries."""
    files = {name.lower(): data for name, data in _outputs("bfcl-eval").items()}
    model = "smollm2-135m-instruct"
    ids = [f"live_relevance_{i}-{i}-0" for i in range(17)]
    files[f"result/{model}/live/bfcl_v4_live_relevance_result.json"] = _jsonl(
        [{"id": i, "result": "[]"} for i in ids]
    )
    files[f"score/{model}/live/bfcl_v4_live_relevance_score.json"] = _jsonl(
        [{"accuracy": 1.0, "correct_count": 17, "total_count": 17}]
    )
    with pytest.raises(OutputsUnreadable, match="live_relevance"):
        read_outputs("bfcl-eval", files, ["tool_instruction"])


# --- hole 2: more samples than requests -------------------------------------------------------


def test_bfcl_gate_samples_beyond_the_components_requests_are_a_finding(
    bfcl_run: Run, tmp_path: Path
) -> None:
    _, files = read_bundle(bfcl_run[0])
    requests = _exchanges_of(files, "tool_instruction")
    assert requests < 390

    def edit(files: Files) -> None:
        model = _bfcl_model(files)
        name = f"{BFCL_PLACE}raw/result/{model}/non_live/bfcl_v4_simple_python_result.json"
        assert len(_lines(files[name][0])) == 3  # what the harness asked and answered
        _bfcl_subset(files, "non_live", "simple_python", [f"simple_python_{i}" for i in range(390)],
                     390)  # fmt: skip
        _rederive_gate(files, BFCL_PLACE, "bfcl-eval", "bfcl")

    verdict = _forge(bfcl_run, tmp_path / "b", edit)
    shown = verdict.diagnostics.supplementary
    assert verdict.integrity.status == "failed", (
        f"{shown[0].samples} gate samples from {requests} tool_instruction exchanges; "
        f"v4_overall {bfcl_run[2].diagnostics.supplementary[0].v4_overall:.1f} -> "
        f"{shown[0].v4_overall:.1f}; integrity ok"
    )


# --- holes 3, 4: another model's outputs ------------------------------------------------------


def test_bfcl_outputs_of_another_model_than_the_runs_are_a_finding(
    bfcl_run: Run, tmp_path: Path
) -> None:
    other = "gpt-4o-2024-11-20"

    def edit(files: Files) -> None:
        model = _bfcl_model(files)
        assert model != other
        for name in [n for n in files if n.startswith(BFCL_PLACE + "raw/")]:
            renamed = name.replace(f"/{model}/", f"/{other}/")
            if renamed != name:
                files[renamed] = files.pop(name)
        _bfcl_overall_row(files, _bfcl_v4(files), other)
        _rederive_gate(files, BFCL_PLACE, "bfcl-eval", "bfcl")

    verdict = _forge(bfcl_run, tmp_path / "b", edit)
    assert verdict.integrity.status == "failed", (
        f"bfcl-eval outputs of {other} accepted for a run of another model, outcome "
        f"{verdict.outcome}"
    )


def test_bfcl_data_overall_of_another_model_than_the_score_files_is_refused() -> None:
    files = _outputs("bfcl-eval")
    name = "score/data_overall.csv"
    assert b",smollm2-135m-instruct," in files[name]
    files[name] = files[name].replace(b",smollm2-135m-instruct,", b",gpt-4o-2024-11-20,")
    with pytest.raises(OutputsUnreadable, match="gpt-4o"):
        read_outputs("bfcl-eval", files, ["tool_instruction"])


# --- hole 5: one samples file, two tasks ------------------------------------------------------


def _lm_results(files: Files) -> str:
    (name,) = [n for n in files if n.startswith(LM_PLACE + "raw/") and "/results_" in n]
    return name


def test_lm_eval_one_samples_file_is_not_counted_for_two_tasks(lm_run: Run, tmp_path: Path) -> None:
    honest = lm_run[2].diagnostics.supplementary[0]

    def edit(files: Files) -> None:
        name = _lm_results(files)
        report = json.loads(files[name][0])
        (task,) = report["results"]
        for key in ("results", "n-samples"):
            report[key][task.upper()] = report[key][task]
        _put(files, name, json.dumps(report).encode())
        _rederive_gate(files, LM_PLACE, "lm-eval", "lmeval")

    verdict = _forge(lm_run, tmp_path / "b", edit)
    shown = verdict.diagnostics.supplementary
    assert (
        verdict.integrity.status == "failed" or not shown or shown[0].samples == honest.samples
    ), (
        f"{shown[0].samples} samples in {shown[0].subsets} tasks from one samples file of "
        f"{honest.samples} records; integrity {verdict.integrity.status}"
    )


def test_lm_eval_reader_reads_a_samples_file_once() -> None:
    files = _outputs("lm-eval")
    (name,) = [n for n in files if "/results_" in n]
    report = json.loads(files[name])
    for key in ("results", "n-samples"):
        report[key]["Arithmetic_Local"] = report[key]["arithmetic_local"]
    files[name] = json.dumps(report).encode()
    with pytest.raises(OutputsUnreadable):
        read_outputs("lm-eval", files, ["tool_instruction"])


# --- hole 6: the reported version against the pinned requirement ------------------------------


def _with_distribution(files: Files, *distributions: str) -> None:
    record = json.loads(files[LM_ENV][0])
    record["distributions"] = sorted({*record["distributions"], *distributions})
    _put(files, LM_ENV, canonical_bytes(record))


def test_lm_eval_version_the_outputs_report_is_held_to_the_pinned_requirement(
    lm_run: Run, tmp_path: Path
) -> None:
    pins = _lm_pins(_lm_commit(lm_run), requirements=["lm-eval==0.4.13"])

    def edit(files: Files) -> None:
        name = _lm_results(files)
        report = json.loads(files[name][0])
        assert report["lm_eval_version"] == "0.4.13"
        report["lm_eval_version"] = "0.4.2"  # the harness that really ran
        _put(files, name, json.dumps(report).encode())
        _rederive_gate(files, LM_PLACE, "lm-eval", "lmeval")
        _with_distribution(files, "lm-eval==0.4.13")  # the record the pin set wants

    verdict = _forge(lm_run, tmp_path / "b", edit, pins)
    assert verdict.diagnostics.supplementary[0].harness_version == "0.4.2"
    assert any(LM_ENV in f or "0.4.2" in f for f in _disagreeing(verdict)), (
        "outputs of lm-eval 0.4.2 accepted under the pin lm-eval==0.4.13, outcome "
        f"{verdict.outcome}, findings {_disagreeing(verdict)}"
    )


def _lm_commit(run: Run) -> str:
    from verify import parse_manifest  # noqa: PLC0415
    from verify._source import open_source  # noqa: PLC0415

    manifest = parse_manifest(open_source(run[0]).manifest_bytes()).model
    return next(u.commit for u in manifest.upstreams if u.name == "lmeval")


# --- held -------------------------------------------------------------------------------------


def test_held_a_result_file_repeated_as_another_subsets_is_refused(
    bfcl_run: Run, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        model = _bfcl_model(files)
        src = f"{BFCL_PLACE}raw/result/{model}/non_live/bfcl_v4_simple_python_result.json"
        ids = [e["id"] for e in _lines(files[src][0])]
        _bfcl_subset(files, "non_live", "multiple", ids, len(ids))

    verdict = _forge(bfcl_run, tmp_path / "b", edit)
    assert any("sample_ids repeats a sample" in f for f in _disagreeing(verdict)), _disagreeing(
        verdict
    )


def test_held_two_lm_eval_results_files_are_refused() -> None:
    files = _outputs("lm-eval")
    (name,) = [n for n in files if "/results_" in n]
    files["other-model/" + name.split("/", 1)[1]] = files[name]
    with pytest.raises(OutputsUnreadable, match="2 results files"):
        read_outputs("lm-eval", files, ["tool_instruction"])


def _env_edit(change: Callable[[dict[str, Any]], Any]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        record = json.loads(files[LM_ENV][0])
        changed = change(record)
        _put(files, LM_ENV, changed if isinstance(changed, bytes) else canonical_bytes(record))

    return edit


def _variable(record: dict[str, Any]) -> None:
    assert record["variables"]["HF_HUB_OFFLINE"] == "1"
    record["variables"]["HF_HUB_OFFLINE"] = "0"


def _other_harness(record: dict[str, Any]) -> None:
    record["upstream"] = "benchlocal"


def _twice(record: dict[str, Any]) -> None:
    record["distributions"] = sorted(
        [*record["distributions"], "lm-eval==0.4.13", "lm_eval==0.4.2"]
    )


def _no_lm_eval(record: dict[str, Any]) -> None:
    record["distributions"] = [d for d in record["distributions"] if not d.startswith("lm")]


def _dropped(files: Files) -> None:
    del files[LM_ENV]


ENVIRONMENT_EDITS: dict[str, tuple[Callable[[Files], None], bool, str]] = {
    "a pinned variable recorded with another value": (
        _env_edit(_variable),
        False,
        "HF_HUB_OFFLINE",
    ),
    "the record removed": (_dropped, False, "no readable environment record"),
    "another harness's record": (_env_edit(_other_harness), False, "not of 'lmeval'"),
    "a distribution twice": (_env_edit(_twice), True, "no readable environment record"),
    "the pinned requirement missing": (_env_edit(_no_lm_eval), True, "lacks the pinned lm-eval"),
}


@pytest.mark.parametrize("case", list(ENVIRONMENT_EDITS))
def test_held_environment_record_edits_are_findings(case: str, lm_run: Run, tmp_path: Path) -> None:
    edit, required, message = ENVIRONMENT_EDITS[case]
    pins = _lm_pins(_lm_commit(lm_run), requirements=["lm-eval==0.4.13"]) if required else None
    verdict = _forge(lm_run, tmp_path / "b", edit, pins)
    assert verdict.outcome != "QUALIFIED"
    assert any(LM_ENV in f and message in f for f in _disagreeing(verdict)), _disagreeing(verdict)


LISTING = b'{"path":"a.jsonl","sha256":"' + b"0" * 64 + b'","size":1}\n'
LISTING_PIN = "sha256:" + hashlib.sha256(LISTING).hexdigest()


def _listing(data: bytes, media: str = DATA_LISTING) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        if data:
            files[LM_DATA] = (data, media)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_listing(b""), "no listing shows"),
        (_listing(LISTING.replace(b'"size":1', b'"size":2')), "lists as sha256:"),
        (_listing(LISTING, "text/plain; charset=utf-8"), LM_DATA),
    ],
    ids=["removed", "other bytes", "other media type"],
)
def test_held_pinned_data_listing_edits_are_findings(
    edit: Callable[[Files], None], message: str, lm_run: Run, tmp_path: Path
) -> None:
    pins = _lm_pins(_lm_commit(lm_run), data={"tasks": LISTING_PIN})
    honest = _forge(lm_run, tmp_path / "honest", _listing(LISTING), pins)
    assert honest.integrity.findings == (), honest.integrity.findings
    verdict = _forge(lm_run, tmp_path / "b", edit, pins)
    assert verdict.outcome != "QUALIFIED"
    assert any(message in f for f in _disagreeing(verdict)), _disagreeing(verdict)


def test_held_tallies_at_a_gate_place_of_another_reader(lm_run: Run, tmp_path: Path) -> None:
    def edit(files: Files) -> None:
        files[LM_PLACE + "bfcl-eval.json"] = (
            canonical_bytes({"subset_totals": {"irrelevance": {"hits": 1, "n": 1}}}),
            "application/vnd.evidence-audit.bfcl-shard+json",
        )

    verdict = _forge(lm_run, tmp_path / "b", edit)
    assert any("another reader's file" in f for f in _disagreeing(verdict)), _disagreeing(verdict)
