"""Properties: any single-byte change to any file of a bundle is detected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.cli import main

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)


@pytest.fixture(scope="module")
def bundle(built_examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("property") / "bundle"
    shutil.copytree(built_examples["gx10-spark-quarantined"], target)
    return target


def _files(bundle: Path) -> list[Path]:
    return sorted(p for p in bundle.rglob("*") if p.is_file())


@SETTINGS
@given(data=st.data())
def test_any_single_byte_change_is_detected(
    bundle: Path, data: st.DataObject, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files(bundle)
    target = data.draw(st.sampled_from(files), label="file")
    original = target.read_bytes()
    offset = data.draw(st.integers(0, len(original) - 1), label="offset")
    flip = data.draw(st.integers(1, 255), label="xor")
    changed = bytearray(original)
    changed[offset] ^= flip
    target.write_bytes(bytes(changed))
    try:
        code = main(["verify", str(bundle), "--json"])
        captured = capsys.readouterr()
    finally:
        target.write_bytes(original)
    assert code in (1, 2), (target.name, offset, flip)
    assert "Traceback" not in captured.err
    assert captured.err.count("\n") == 1


@SETTINGS
@given(data=st.data())
def test_any_truncation_or_extension_is_detected(
    bundle: Path, data: st.DataObject, capsys: pytest.CaptureFixture[str]
) -> None:
    target = data.draw(st.sampled_from(_files(bundle)), label="file")
    original = target.read_bytes()
    cut = data.draw(st.integers(0, len(original) - 1), label="cut")
    tail = data.draw(st.binary(min_size=0, max_size=4), label="tail")
    target.write_bytes(original[:cut] + tail)
    try:
        code = main(["verify", str(bundle)])
        capsys.readouterr()
    finally:
        target.write_bytes(original)
    assert code in (1, 2)


def test_the_property_bundle_is_intact(bundle: Path) -> None:
    assert main(["verify", str(bundle)]) == 0
