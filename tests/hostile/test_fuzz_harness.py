"""The atheris harnesses (tests/fuzz): every committed corpus input is accepted or refused with
the project's own error, and a short atheris run of each harness finds no crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fuzz.harness import CORPUS, HARNESSES
from tests.paths import TESTS

FUZZ = TESTS / "fuzz"


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_the_committed_corpus_replays_cleanly(name: str) -> None:
    inputs = sorted((CORPUS / name).iterdir())
    assert len(inputs) >= 20  # the seeds, and what fuzzing kept
    for path in inputs:
        HARNESSES[name](path.read_bytes())  # raises on a crash


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_a_short_atheris_run_finds_no_crash(name: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(FUZZ / f"fuzz_{name}"), str(tmp_path), str(CORPUS / name), "-runs=3000",
         "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done 3000 runs" in result.stderr
    assert not list(tmp_path.glob("crash-*"))
