"""SIGKILL of `audit run` at several points: what is left is nothing a verifier accepts as a
bundle, or a whole bundle that verifies; never a half-written blob under its final name."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.cli import main
from audit.reference_endpoint import Behaviour, serve
from pins import load_builtin

V5 = load_builtin("gx10-qualification-v5")
DELAYS = (0.4, 0.9, 1.4, 1.9, 2.4, 2.9, 3.4, "writing", None)
"""Seconds after the start at which the runner is killed; "writing": as soon as its bundle
directory appears (while blobs are being written); None: it is left to finish."""


@pytest.mark.parametrize("delay", DELAYS)
def test_a_killed_run_leaves_nothing_or_a_whole_bundle(
    tmp_path: Path,
    mirrors: dict[str, Path],
    delay: float | str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "bundle"
    with serve(Behaviour(chunk_delay=0.002)) as endpoint:
        process = subprocess.Popen(
            [sys.executable, "-c", "from audit.cli import main; raise SystemExit(main())",
             "run", "--endpoint", endpoint.url, "--pins", V5.id, "--profile", "full",
             "--out", str(out), "--model-digest", "sha256:" + "cd" * 32, "--json",
             *(f"--mirror={name}={path}" for name, path in mirrors.items())],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            if delay is None:
                assert process.wait(timeout=120) == 0
            else:
                if delay == "writing":
                    while not (out / "blobs").exists() and process.poll() is None:
                        time.sleep(0.0005)
                else:
                    time.sleep(float(delay))
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the harnesses it left, if any
    blobs = out / "blobs" / "sha256"
    for blob in blobs.iterdir() if blobs.is_dir() else ():
        if not blob.name.startswith("."):  # a temp file, never under a final name
            assert (
                "sha256:" + hashlib.sha256(blob.read_bytes()).hexdigest() == "sha256:" + blob.name
            )
    if (out / "manifest.json").exists():
        assert main(["verify", str(out)]) == 0  # sealed: whole, and its claims hold
    else:
        assert delay is not None
        assert main(["verify", str(out)]) == 2  # nothing, or no manifest: not a bundle
        err = capsys.readouterr().err
        assert "manifest.json" in err if out.exists() else "cannot open" in err
    if delay == "writing":
        assert out.exists()
        assert not (out / "manifest.json").exists()  # killed mid-write: the manifest comes last
