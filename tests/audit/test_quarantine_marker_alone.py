"""The upstream's quarantine marker is authoritative (seed 000) whatever else its run lacks: a
SparkBench that writes its marker and leaves another output out quarantines its component, in
the runner and in the verifier alike (``verify.harness_outputs.read_markers``). Real ``audit
run``s of the smoke profile against the reference endpoint; the reference SparkBench removes
its ``repeat.json`` as it exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundle_schema.models import Verdict
from tests.data.hostile.kit import read_bundle
from tests.factories import smoke_run, sparkbench_pins
from verify import verify_bundle

_DROPS_REPEAT = (
    "import atexit, os, runpy, sys; "
    "atexit.register(lambda: os.remove(os.path.join(sys.argv[-1], 'repeat.json'))); "
    "sys.argv = ['spark', '--endpoint', '{endpoint}', '--model', '{model}', '--out', '{out}']; "
    "runpy.run_module('spark.run', run_name='__main__')"
)
"""The reference SparkBench as pinned, its ``repeat.json`` removed once it has written all."""

PINS = sparkbench_pins(command=["{python}", "-c", _DROPS_REPEAT])


def _run(root: Path, mirrors: dict[str, Path], quarantine: str | None) -> tuple[Path, Verdict]:
    env = {"SPARK_QUARANTINE": quarantine} if quarantine else {}
    bundle = smoke_run(root / "bundle", mirrors, PINS, harness_env=env)
    return bundle, verify_bundle(bundle, pins=PINS).verdict


@pytest.fixture(scope="module")
def quarantined(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, Verdict]:
    return _run(tmp_path_factory.mktemp("marked"), mirrors, "golden replay drifted")


@pytest.fixture(scope="module")
def unmarked(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, Verdict]:
    return _run(tmp_path_factory.mktemp("unmarked"), mirrors, None)


def test_a_marker_beside_a_missing_output_quarantines(quarantined: tuple[Path, Verdict]) -> None:
    bundle, verdict = quarantined
    _, files = read_bundle(bundle)
    result = json.loads(files["components/coding/result.json"][0])
    assert result["status"] == "QUARANTINED", result
    assert "components/coding/raw/repeat.json" not in files
    marker = json.loads(files["components/coding/quarantine.json"][0])
    assert marker["upstream_reason"] == "golden replay drifted"
    assert "components/coding/spark-quality.json" not in files  # no record of what did not read
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert verdict.claims.match, verdict.claims
    assert (verdict.result_validity, verdict.rankable) == ("QUARANTINED", False), verdict.reasons


def test_without_a_marker_the_missing_output_fails(unmarked: tuple[Path, Verdict]) -> None:
    bundle, verdict = unmarked
    _, files = read_bundle(bundle)
    result = json.loads(files["components/coding/result.json"][0])
    assert result["status"] == "FAILED", result
    assert "repeat.json" in result["reason"], result["reason"]
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert verdict.result_validity == "INFRA_FAILURE", verdict.reasons
