"""`audit run` and what it cannot keep as it is: raw output files whose names are no evidence
names, and a bundle that cannot be written. Every name is kept (escaped) or refused with a
message that names the file; a run that cannot write its bundle keeps its evidence."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, escaped_path, run_qualification
from pins import PinSetSource, load_builtin, pin_set_source
from verify import parse_manifest, verify_bundle
from verify._source import open_source

REFERENCE = load_builtin("gx10-reference-v5")
DIGEST = DEMO_DIGEST  # the reference model's: the demo pins judge no other

_WRAP = "; ".join([
    "import os, runpy, sys",
    "out = sys.argv[sys.argv.index('--out') + 1]",
    "names = os.environ['EXTRA_OUTPUTS'].split(':')",
    "[os.makedirs(os.path.dirname(os.path.join(out, n)), exist_ok=True) for n in names]",
    "[open(os.path.join(out, n), 'w').write('extra') for n in names]",
    "sys.argv = ['spark.run'] + sys.argv[1:]",
    "runpy.run_module('spark.run', run_name='__main__')",
])  # fmt: skip
"""SparkBench, writing extra files (named in EXTRA_OUTPUTS) beside its outputs."""


def _pins() -> PinSetSource:
    data = json.loads(json.dumps(dict(REFERENCE.data)))
    command = data["harnesses"]["sparkbench"]["command"]
    data["harnesses"]["sparkbench"]["command"] = ["{python}", "-c", _WRAP, *command[3:]]
    return pin_set_source(data, "custom")


def _argv(endpoint: str, out: Path, mirrors: dict[str, Path]) -> list[str]:
    return ["run", "--endpoint", endpoint, "--pins", REFERENCE.id, "--profile", "smoke",
            "--out", str(out), "--model-digest", DIGEST, "--json",
            *(f"--mirror={name}={path}" for name, path in mirrors.items())]  # fmt: skip


def _smoke(tmp_path: Path, mirrors: dict[str, Path], extra: list[str]) -> PinSetSource:
    pins = _pins()
    with serve() as endpoint:
        run_qualification(
            RunRequest(
                endpoint=endpoint.url,
                pins=pins,
                profile="smoke",
                out=tmp_path / "bundle",
                model_digest=DIGEST,
                mirrors=mirrors,
                harness_env={"EXTRA_OUTPUTS": ":".join(extra)},
            )
        )
    return pins


@pytest.mark.parametrize(
    ("relative", "name"),
    [
        ("quality.json", "quality.json"),
        ("Quality.JSON", "quality.json"),
        (".file_locks/model.lock", "x_2efile_5flocks/model.lock"),
        ("shards/_tmp", "shards/x_5ftmp"),
        ("a b/ü.json", "xa_20b/x_c3_bc.json"),
        ("-x/.", "x_2dx/x_2e"),
    ],
)
def test_every_raw_output_name_becomes_an_evidence_name(relative: str, name: str) -> None:
    assert escaped_path(relative) == name


def test_a_harness_output_whose_name_starts_with_a_dot_is_kept(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    # bfcl-eval leaves .file_locks/ beside its results: this used to end in a traceback and
    # delete the whole run
    pins = _smoke(tmp_path, mirrors, [".file_locks/model.lock", "Notes Ü.txt"])
    manifest = parse_manifest(open_source(tmp_path / "bundle").manifest_bytes()).model
    assert "components/coding/raw/x_2efile_5flocks/model.lock" in manifest.evidence
    assert "components/coding/raw/xnotes_20_c3_bc.txt" in manifest.evidence
    verdict = verify_bundle(tmp_path / "bundle", pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok")


def test_two_outputs_the_bundle_names_alike_fail_the_component_with_both_names(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _smoke(tmp_path, mirrors, ["Extra.txt", "extra.txt"])  # a bundle: judged
    verdict = verify_bundle(tmp_path / "bundle", pins=pins).verdict
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    assert (
        "coding failed: sparkbench wrote 'Extra.txt' and 'extra.txt', which the bundle names "
        "alike ('components/coding/raw/extra.txt'); kept the first"
    ) in verdict.reasons


def test_a_run_that_cannot_write_its_bundle_keeps_its_evidence(
    tmp_path: Path,
    mirrors: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import audit.run  # noqa: PLC0415

    def full(*_args: object, **_kwargs: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "bundle"))

    monkeypatch.setattr(audit.run.BundleWriter, "seal", full)
    with serve() as endpoint:
        code = main(_argv(endpoint.url, tmp_path / "bundle", mirrors))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "Traceback" not in err
    prefix = (
        f"audit run: --out {tmp_path / 'bundle'}: cannot write the bundle: {tmp_path / 'bundle'}:"
        f" No space left on device; the partial bundle is left in {tmp_path / 'bundle'} (no "
        "manifest: not a sealed bundle) and the run's evidence is kept in "
    )
    assert err.startswith(prefix)
    kept = Path(err[len(prefix) :].strip())
    try:
        assert (tmp_path / "bundle" / "blobs" / "sha256").is_dir()
        assert not (tmp_path / "bundle" / "manifest.json").exists()
        assert kept.name == "evidence"
        exchanges = (kept / "transport" / "exchanges.jsonl").read_text().splitlines()
        assert json.loads(exchanges[0])["path"] == "/v1/models"
        assert (kept / "components" / "coding" / "raw" / "quality.json").is_file()
        assert (kept / "run" / "config.json").is_file()
    finally:
        shutil.rmtree(kept.parent, ignore_errors=True)
