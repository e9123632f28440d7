"""What the sandbox's attack tests share: a harness script run for real in ``run_sandboxed``, and
what its ledger says of the address it tries outside."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from audit.sandbox import SandboxLimits, SandboxResult, run_sandboxed
from verify._facts import off_sandbox

__all__ = ["CONNECT", "LIMITS", "OUTSIDE", "PORT", "cc", "compiled", "harness", "outside",
           "recorded", "said", "sandboxed"]  # fmt: skip

PORT = 18123
LIMITS = SandboxLimits(inactivity_s=15, wall_s=30)
OUTSIDE = ("93.184.216.34", 443)
"""Only ever tried from inside the sandbox's network namespace (no route: ENETUNREACH)."""

CONNECT = "s = socket.socket(); print('connect', s.connect_ex(('93.184.216.34', 443)), flush=True)"


def sandboxed(command: list[str], tmp_path: Path, **kwargs: Any) -> SandboxResult:
    """``command`` in the sandbox, ``tmp_path`` its working directory, nothing serving."""
    options: dict[str, Any] = {"serve": None, "port": PORT, "limits": LIMITS, "cwd": tmp_path,
                               "component": "coding", **kwargs}  # fmt: skip
    return run_sandboxed(command, **options)


def harness(tmp_path: Path, body: str, *args: str, **kwargs: Any) -> SandboxResult:
    """A Python harness of ``body`` (ctypes, os, signal, socket, subprocess, sys and time
    imported) in the sandbox."""
    script = tmp_path / "harness.py"
    script.write_text("import ctypes, os, signal, socket, subprocess, sys, time\n"
                      + textwrap.dedent(body))  # fmt: skip
    return sandboxed([sys.executable, str(script), *args], tmp_path, **kwargs)


def said(result: SandboxResult) -> list[str]:
    """The lines the command printed, once it exited 0 (else the test fails on its stderr)."""
    assert result.returncode == 0, result.stderr.decode()[-800:]
    return result.stdout.decode().splitlines()


def outside(result: SandboxResult) -> list[tuple[str, str, int | None, str]]:
    """The ledger's attempts outside the sandbox (the verifier's ``off_sandbox``)."""
    return [(e.family, e.address, e.port, e.outcome) for e in result.ledger if off_sandbox(e)]


def recorded(result: SandboxResult) -> bool:
    """Whether the ledger holds an attempt to :data:`OUTSIDE`."""
    return any(e.address == OUTSIDE[0] and e.port == OUTSIDE[1] for e in result.ledger)


def cc() -> str:
    """A C compiler (the test skips without one)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    return compiler


def compiled(where: Path, name: str, source: str, *flags: str) -> Path:
    """C ``source`` compiled into ``where/name`` with ``flags`` (the test skips without a
    compiler); the program's path."""
    (where / f"{name}.c").write_text(source)
    subprocess.run([cc(), *flags, "-o", str(where / name), str(where / f"{name}.c")],
                   check=True, capture_output=True)  # fmt: skip
    return where / name
