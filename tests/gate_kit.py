"""What the gate tests share (tests/e2e/test_bfcl_eval.py, test_inspect_ai.py, test_lm_eval.py): a
pin set with a gate fragment merged in, an `audit run` of it against the reference endpoint,
a bundle's evidence by name, and a forged copy resealed with honest-looking claims."""

from __future__ import annotations

import copy
import json
import tarfile
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.cli import main
from audit.demo.examples import build_upstream
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, run_qualification
from bundle_schema import canonical_bytes
from bundle_schema.models import Claims, Manifest, Verdict
from pins import DEMO, PinSetSource, load_builtin, pin_set_source
from tests.data.hostile.kit import Files, read_bundle, rederive_metrics, resealer
from tests.paths import EXAMPLES
from verify import parse_manifest, verify_bundle
from verify._source import open_source
from verify.harness_outputs import BENCHLOCAL_JSON as BENCHLOCAL_FILE
from verify.harness_outputs import INFERMARK_JSON as INFERMARK_FILE
from verify.harness_outputs import SPARK_BENCH_CSV, raw_name, read_outputs

__all__ = [
    "BENCHLOCAL_JSON",
    "HOSTILE_VALUES",
    "INFERMARK_JSON",
    "SPARK_CSV",
    "asks_a_sample",
    "assert_forgery_caught",
    "assert_held_without_tallies",
    "bfcl_gated_pins",
    "blob",
    "every_field_replaced",
    "gate_mirror",
    "gated_run",
    "merged_pins",
    "rederived",
    "resealed",
    "resealed_as_replayed",
    "run_gated",
    "spark_changes",
    "spark_rows",
    "spark_set",
]


def merged_pins(fragment: Path, upstream: str, commit: str, name: str, *extra: str) -> PinSetSource:
    """The demo's pin set with ``fragment`` (a TOML file of ``[gate_upstreams]``,
    ``[upstreams.<upstream>]`` and ``[harnesses.<upstream>]``) merged in, the upstream at
    ``commit`` and ``extra`` arguments added to its command."""
    data = copy.deepcopy(dict(load_builtin(DEMO).data))
    merged = tomllib.loads(fragment.read_text("utf-8"))
    data["id"] = name + ("-broken" if extra else "")
    data["gate_upstreams"] = merged["gate_upstreams"]
    data["upstreams"][upstream] = {**merged["upstreams"][upstream], "commit": commit}
    harness = merged["harnesses"][upstream]
    data["harnesses"][upstream] = {**harness, "command": [*harness["command"], *extra]}
    return pin_set_source(data, "gated pins")


def run_gated(out: Path, mirrors: Mapping[str, Path], pins: PinSetSource) -> Verdict:
    """`audit run` of ``pins`` against the reference endpoint, into ``out``; its verdict."""
    from audit.demo.pipeline import DEMO_DIGEST  # noqa: PLC0415 - the reference model's digest

    with serve() as endpoint:
        run_qualification(RunRequest(endpoint=endpoint.url, pins=pins, profile="full", out=out,
                                     model_digest=DEMO_DIGEST, mirrors=mirrors))  # fmt: skip
    return verify_bundle(out, pins=pins).verdict


def gate_mirror(
    root: Path, mirrors: Mapping[str, Path], harness: Path, upstream: str
) -> tuple[dict[str, Path], str]:
    """The run's mirrors with ``upstream`` added: a git repository of ``harness``, under
    ``root``; and its commit, for the pin set."""
    commit, _ = build_upstream(harness, root / upstream)
    return {**mirrors, upstream: root / upstream}, commit


def gated_run(
    out: Path, gated: tuple[dict[str, Path], str], pins_of: Callable[[str], PinSetSource]
) -> tuple[Path, PinSetSource, Verdict]:
    """An honest run with the gate: its bundle at ``out``, the pin set and the verdict."""
    mirrors, commit = gated
    pins = pins_of(commit)
    return out, pins, run_gated(out, mirrors, pins)


def blob(bundle: Path, name: str) -> bytes:
    """The bytes of the bundle's evidence entry ``name``."""
    manifest = parse_manifest(open_source(bundle).manifest_bytes())
    return (bundle / "blobs" / "sha256" / manifest.model.evidence[name].digest[7:]).read_bytes()


def resealed(source: Path, target: Path, edit: Callable[[Files], None], pins: PinSetSource) -> Path:
    """``source`` with its evidence edited and resealed, claiming what its replay under
    ``pins`` finds (a forger's honest-looking claims): only the evidence differs."""
    manifest, files = read_bundle(source)
    edit(files)
    return resealed_as_replayed(target, manifest, files, pins)


RECORDED_TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m.tar"
"""The recorded real bundle (llama.cpp, SmolLM2, the real upstreams)."""
SPARK_CSV = raw_name("coding", SPARK_BENCH_CSV)
BENCHLOCAL_JSON = raw_name("tool_instruction", BENCHLOCAL_FILE)
INFERMARK_JSON = raw_name("performance", INFERMARK_FILE)
"""Where the recorded real bundle keeps each real upstream's raw output."""
Recorded = tuple[Manifest, Files]
"""A bundle's manifest and evidence, as :func:`tests.data.hostile.kit.read_bundle` gives them."""


def tar_evidence(tar: Path) -> dict[str, bytes]:
    """The evidence of a bundle tar by logical name, read straight from its members."""
    with tarfile.open(tar) as archive:
        blobs: dict[str, bytes] = {}
        manifest = None
        for member in archive.getmembers():
            handle = archive.extractfile(member)
            if handle is None:
                continue
            if member.name.endswith("manifest.json"):
                manifest = json.loads(handle.read())
            elif "/blobs/sha256/" in f"/{member.name}":
                blobs[f"sha256:{member.name.rsplit('/', 1)[1]}"] = handle.read()
    assert manifest is not None
    return {name: blobs[entry["digest"]] for name, entry in manifest["evidence"].items()}


def unpacked_recorded(folder: Path) -> Recorded:
    """The recorded real bundle, unpacked under ``folder`` and read."""
    root = folder / "bundle"
    assert main(["unpack", str(RECORDED_TAR), "-o", str(root)]) == 0
    return read_bundle(root)


def forged(recorded: Recorded, target: Path, edit: Callable[[Files], None]) -> Path:
    """A read bundle edited by ``edit`` and resealed at ``target`` with claims equal to its
    replay (a forger's honest-looking claims)."""
    manifest, original = recorded
    files = dict(original)
    edit(files)
    return resealed_as_replayed(target, manifest, files)


def resealed_as_replayed(
    target: Path,
    manifest: Manifest,
    files: Files,
    pins: PinSetSource | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Path:
    """``files`` sealed at ``target`` with ``manifest``'s other fields (``fields`` changed),
    claiming what their replay under ``pins`` (default: the pin set it names) finds."""
    fields = dict(fields or {})
    seal = resealer(target, manifest, files)  # the evidence written once, sealed twice
    seal(fields)
    replay = verify_bundle(target, pins=pins).verdict
    claims = Claims(
        outcome=replay.outcome, result_validity=replay.result_validity,
        profile_decision=replay.profile_decision, rankable=replay.rankable,
        aggregate_score=replay.scores.aggregate, executed_weight=replay.scores.executed_weight,
        component_scores={c: getattr(replay.scores, c) for c in manifest.claims.component_scores},
    )  # fmt: skip
    seal({**fields, "claims": claims.model_dump()})
    return target


def bfcl_gated_pins(commit: str) -> PinSetSource:
    """The demo's pin set with the bfcl-eval-format reference harness (at ``commit`` of its
    mirror) as tool/instruction's gate."""
    data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["id"] = "gx10-reference-v5-bfcl"
    data["upstreams"]["bfcl"] = {"repository": "reference://bfcl", "commit": commit}
    data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}
    data["harnesses"]["bfcl"] = bfcl_gate_harness()
    return pin_set_source(data, "gated pins")


BFCL_REF_CATEGORIES = ("--test-category", "simple_python,irrelevance,live_simple")
"""The subsets the bfcl-eval-format reference harness answers, every entry of its data: what
its pinned command must say, as bfcl-eval's does, for the verifier to hold its outputs to."""


def bfcl_gate_harness(**limits: float) -> dict[str, Any]:
    """The harness block of the bfcl-eval-format reference harness (``bfcl_ref.py`` of its
    mirror), its limits 120 s of silence and 600 s of wall unless ``limits`` say otherwise."""
    return {
        "command": ["{python}", "bfcl_ref.py", "--endpoint", "{endpoint}", "--model", "{model}",
                    "--out", "{out}", *BFCL_REF_CATEGORIES],
        "outputs": ["score/data_overall.csv"], "parser": "bfcl-eval",
        "inactivity_s": 120, "wall_s": 600, **limits,
    }  # fmt: skip


def assert_forgery_caught(
    good_run: tuple[Path, PinSetSource, Verdict],
    target: Path,
    edit: Callable[[Files], None],
    entry: str,
    message: str,
) -> None:
    """The honest gated run, edited by ``edit`` and resealed: a ``record_disagrees`` finding on
    ``entry`` whose message holds ``message``, and no QUALIFIED verdict."""
    bundle, pins, _ = good_run
    verdict = verify_bundle(resealed(bundle, target, edit, pins), pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR" and verdict.integrity.status == "failed"
    found = [f for f in verdict.integrity.findings if f.code == "record_disagrees"]
    assert any(f.entry == entry and message in f.message for f in found), found


def assert_held_without_tallies(
    good_run: tuple[Path, PinSetSource, Verdict], target: Path, tallies: str, upstream: str
) -> Verdict:
    """The honest gated run without its gate's tallies record: the component is held as
    infrastructure by upstream_checkout, which names the missing record."""
    bundle, pins, _ = good_run

    def drop(files: Files) -> None:
        del files[tallies]

    verdict = verify_bundle(resealed(bundle, target, drop, pins), pins=pins).verdict
    gate = next(g for g in verdict.gates if g.id == "upstream_checkout")
    assert gate.status == "infra"
    assert f"tool_instruction completed without its {upstream} gate" in gate.reason
    assert tallies in gate.reason
    return verdict


def asks_a_sample(body: Any, endings: tuple[str, ...]) -> bool:
    """Whether an exchange's request (its recorded body) sends an input ending with one of
    ``endings`` (the end of a JSON string: the quote follows)."""
    text = (body or {}).get("data", "")  # the request's bytes, as text
    return any(f'{words}"' in text for words in endings)


HOSTILE_VALUES: tuple[Any, ...] = (None, True, -1, 2, 1e308, "", "x" * 300, [], {}, [1], {"a": 1})
"""What a hostile harness output may hold where a reader expects something else."""


def every_field_replaced(
    document: Any, skip: frozenset[str] = frozenset(), depth: int = 5
) -> Iterator[tuple[str, Any]]:
    """Copies of a JSON ``document`` with one value (down to ``depth``, not under a key in
    ``skip``, the first entry of each array) replaced by each of :data:`HOSTILE_VALUES`, or its
    key removed: (where, copy)."""

    def places(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        if len(path) >= depth:
            return
        children = (
            [(k, v) for k, v in node.items() if k not in skip] if isinstance(node, dict)
            else [(0, node[0])] if isinstance(node, list) and node else []
        )  # fmt: skip
        for key, child in children:
            yield (*path, key)
            yield from places(child, (*path, key))

    for path in places(document, ()):
        for value in (*HOSTILE_VALUES, _REMOVED):
            changed = copy.deepcopy(document)
            parent = changed
            for key in path[:-1]:
                parent = parent[key]
            if value is _REMOVED:
                if not isinstance(parent, dict):
                    continue
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
            yield ".".join(map(str, path)) + f" = {value!r:.20}", changed


_REMOVED = object()


def rederived(files: Files, parser: str, components: Sequence[str]) -> None:
    """The records and result metrics of ``components`` as the verifier's own reader makes
    them of the (edited) raw outputs: what a careful forger's runner writes."""
    raw = {
        name.split("/raw/", 1)[1]: data
        for name, (data, _) in files.items()
        if any(name.startswith(f"components/{c}/raw/") for c in components)
    }
    parsed = read_outputs(parser, raw, list(components))  # type: ignore[arg-type]
    for name, (_, record) in parsed.records.items():
        if name in files:
            files[name] = (canonical_bytes(record.model_dump(mode="json")), files[name][1])
    rederive_metrics(files, parser, components)


def spark_rows(change: Callable[[list[str]], list[str] | None]) -> Callable[[Files], None]:
    """An edit of spark_bench.csv row by row (a row returned None is dropped), re-derived."""

    def edit(files: Files) -> None:
        header, *rows = files[SPARK_CSV][0].decode("utf-8").splitlines()
        kept = [header]
        for row in rows:
            fields = change(row.split(","))
            if fields is not None:
                kept.append(",".join(fields))
        files[SPARK_CSV] = (("\n".join(kept) + "\n").encode(), files[SPARK_CSV][1])
        rederived(files, "spark-bench", ["coding", "reliability"])

    return edit


def spark_set(
    workload: str, metric: str, value: str, notes: str | None = None
) -> Callable[[list[str]], list[str]]:
    """A change of spark_bench.csv's rows (for :func:`spark_rows`): the value (and notes) of
    every row of ``workload`` and ``metric``."""

    def change(fields: list[str]) -> list[str]:
        if fields[11] == workload and fields[12] == metric:
            fields[13] = value
            if notes is not None:
                fields[15] = notes
        return fields

    return change


def spark_changes(workload: str, *changes: tuple[str, str]) -> Callable[[Files], None]:
    """An edit of spark_bench.csv (:func:`spark_rows`): each (metric, value) of ``workload``'s
    rows set, the records re-derived."""
    steps = [spark_set(workload, metric, value) for metric, value in changes]

    def each(fields: list[str]) -> list[str]:
        for step in steps:
            fields = step(fields)
        return fields

    return spark_rows(each)
