"""Faults of the filesystem under the runner and the packer: a full disk (a small tmpfs) and a
read-only output directory, each in a mount namespace of its own. Each ends in one clear line,
exit 2, and nothing half-written that looks whole: a run keeps its evidence and the partial
bundle (no manifest) and says where; a packer leaves no tar and no temp file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit._archive import pack
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from pins import load_builtin
from tests.paths import ROOT

V5 = load_builtin("gx10-reference-v5")


def inside(tmp_path: Path, options: str, argv: list[str]) -> dict[str, Any]:
    """Run ``audit argv`` with a tmpfs (``options``) on tmp_path/mnt; report what it left."""
    target = tmp_path / "mnt"
    target.mkdir()
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-m",
         "tests.faults_inside", str(target), options, "--", *argv],
        capture_output=True, text=True, check=False, timeout=300,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["stderr"].count("\n") == 1, report["stderr"]
    assert "Traceback" not in report["stderr"]
    assert report["misnamed"] == []
    return report


def _run_argv(endpoint: str, out: Path, mirrors: dict[str, Path]) -> list[str]:
    return ["run", "--endpoint", endpoint, "--pins", V5.id, "--profile", "full",
            "--out", str(out), "--model-digest", DEMO_DIGEST, "--json",
            *(f"--mirror={name}={path}" for name, path in mirrors.items())]  # fmt: skip


def test_a_run_onto_a_full_disk_keeps_its_evidence(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    out = tmp_path / "mnt" / "bundle"
    with serve() as endpoint:
        report = inside(tmp_path, "size=256k", _run_argv(endpoint.url, out, mirrors))
    stderr = report["stderr"]
    kept = re.search(r"(/\S*/audit-run-[^/\s]+)", stderr)
    if kept is not None:  # the run's evidence, kept outside the full disk: this test's to remove
        shutil.rmtree(kept.group(1), ignore_errors=True)
    assert report["exit"] == 2
    assert f"--out {out}: cannot write the bundle: " in stderr
    assert (
        f"No space left on device; the partial bundle is left in {out} (no manifest: not a "
        "sealed bundle) and the run's evidence is kept in "
    ) in stderr
    assert kept is not None
    assert "bundle/blobs/sha256" in report["left"]  # never a deleted run
    assert "bundle/manifest.json" not in report["left"]


def test_a_run_into_a_read_only_directory_fails_before_it_starts(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    out = tmp_path / "mnt" / "bundle"
    with serve() as endpoint:
        report = inside(tmp_path, "ro", _run_argv(endpoint.url, out, mirrors))
        assert endpoint.requests == 0  # refused before the first request to the model
    assert report["exit"] == 2
    assert report["stderr"] == (
        f"audit run: --out {out}: cannot write there: Read-only file system\n"
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [("size=4k", "No space left on device"), ("ro", "Read-only file system")],
)
def test_packing_onto_a_full_or_read_only_disk_leaves_no_tar(
    tmp_path: Path, small_bundle: Path, options: str, fragment: str
) -> None:
    report = inside(tmp_path, options, ["pack", str(small_bundle), "-o",
                                        str(tmp_path / "mnt" / "bundle.tar")])  # fmt: skip
    assert report["exit"] == 2
    assert fragment in report["stderr"]
    assert report["left"] == []


@pytest.mark.parametrize(
    ("options", "fragment"),
    [("size=4k", "No space left on device"), ("ro", "Read-only file system")],
)
def test_unpacking_onto_a_full_or_read_only_disk_leaves_no_directory(
    tmp_path: Path, small_bundle: Path, options: str, fragment: str
) -> None:
    pack(small_bundle, tmp_path / "bundle.tar")
    report = inside(tmp_path, options, ["unpack", str(tmp_path / "bundle.tar"), "-o",
                                        str(tmp_path / "mnt" / "out")])  # fmt: skip
    assert report["exit"] == 2
    assert fragment in report["stderr"]
    assert report["left"] == []
