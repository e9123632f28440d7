"""SIGKILL of `audit run` at 23 named points (tests set EVIDENCE_AUDIT_TEST_KILL_AT; see
audit/_faults.py): during checkouts, mid-stream, around each harness, between the claims and the
manifest, mid-blob-write. What is left is nothing a verifier accepts as a bundle, or a whole
bundle that verifies; never a half-written blob under its final name."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from audit._faults import VARIABLE
from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import Behaviour, serve
from pins import load_builtin

V5 = load_builtin("gx10-reference-v5")
POINTS = (
    "identity",
    "cloned:sparkbench", "cloned:hermesbench", "cloned:benchlocal", "cloned:infermark",
    "probes", "stream-chunk@1", "stream-chunk@3", "stream-chunk@5",
    "harness:sparkbench", "harness-done:sparkbench", "harness:hermesbench",
    "harness-done:hermesbench", "harness:benchlocal", "harness-done:benchlocal",
    "streaming", "write", "claims", "temp-chunk@1", "temp-chunk@20", "before-manifest",
    "manifest", "sealed",
)  # fmt: skip
"""Where the runner is killed (a point, and which arrival at it); the last kills it after its
manifest is in place, so the bundle must be whole. Every arrival named is one every run reaches:
a streamed reply can come in one read when the machine is loaded (the reads coalesce), so the
stream points count the streamed exchanges' reads up to the fifth, the performance phase's five
streams giving at least one each."""


def _run(out: Path, mirrors: dict[str, Path], endpoint: str, point: str | None) -> int:
    scratch = out.parent / "tmp"  # a killed run cannot remove its scratch directory: here, not /tmp
    scratch.mkdir(exist_ok=True)
    environment = dict(os.environ, TMPDIR=str(scratch))
    if point is not None:
        environment[VARIABLE] = point
    process = subprocess.Popen(
        [sys.executable, "-c", "from audit.cli import main; raise SystemExit(main())",
         "run", "--endpoint", endpoint, "--pins", V5.id, "--profile", "full",
         "--out", str(out), "--model-digest", DEMO_DIGEST, "--json",
         *(f"--mirror={name}={path}" for name, path in mirrors.items())],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env=environment,
    )  # fmt: skip
    try:
        return process.wait(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the harnesses it left, if any


@pytest.mark.parametrize("point", [*POINTS, None])
def test_a_killed_run_leaves_nothing_or_a_whole_bundle(
    tmp_path: Path,
    mirrors: dict[str, Path],
    point: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "bundle"
    with serve(Behaviour(chunk_delay=0.0005)) as endpoint:
        code = _run(out, mirrors, endpoint.url, point)
    assert code == (0 if point is None else -signal.SIGKILL), f"{point}: exit {code}"
    blobs = out / "blobs" / "sha256"
    for blob in blobs.iterdir() if blobs.is_dir() else ():
        if not blob.name.startswith("."):  # a temp file, never under a final name
            assert "sha256:" + hashlib.sha256(blob.read_bytes()).hexdigest() == (
                "sha256:" + blob.name
            )
    if point in {None, "sealed"}:
        assert main(["verify", str(out)]) == 0  # sealed: whole, and its claims hold
        return
    assert not (out / "manifest.json").exists()  # the manifest comes last
    assert main(["verify", str(out)]) == 2  # nothing, or no manifest: not a bundle
    err = capsys.readouterr().err
    assert "manifest.json" in err if out.exists() else "cannot open" in err
    if point in {"temp-chunk@1", "temp-chunk@20", "before-manifest", "manifest"}:
        assert blobs.is_dir()  # killed while writing the bundle: blobs, but no manifest
