"""The tool installs like any Python tool: the wheel alone, in a fresh venv, outside the tree.

One test, because each step needs the one before: the source tree (its tracked and untracked,
not ignored files) is copied away, an sdist is built from the copy and a wheel from the sdist
(the pinned setuptools of this venv, no build isolation, no network), the wheel's file list is
held to the source tree's, and the wheel is installed with ``--no-deps`` into a fresh venv that
got ``requirements.lock`` by hash. From an empty directory, with no ``PYTHONPATH``, that venv's
``audit`` then prints its help, runs the demo and verifies what the demo wrote (ADR 0018).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGES = ("bundle_schema", "pins", "verify", "audit")
EXAMPLES_IN_WHEEL = "audit/demo/_examples"
"""Where the wheel keeps the source tree's ``examples/`` (less ``recorded/``)."""
TIMEOUT = 600


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; fail the test with its output unless it exits 0."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"{' '.join(map(str, args))} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _source_files() -> list[str]:
    """The source tree's files as a fresh clone with the local changes has them."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT)
    return sorted(name for name in listed.split("\0") if name and (ROOT / name).is_file())


def _expected_wheel_files(sources: list[str]) -> set[str]:
    """Every file of the packages, and examples/ but recorded/ under audit/demo/_examples."""
    expected = set()
    for name in sources:
        top, _, rest = name.partition("/")
        if top in PACKAGES and "__pycache__" not in name:
            expected.add(name)
        elif top == "examples" and not rest.startswith("recorded/"):
            expected.add(f"{EXAMPLES_IN_WHEEL}/{rest}")
    return expected


@pytest.mark.slow
def test_the_wheel_installs_alone_and_runs_the_demo_outside_the_tree(tmp_path: Path) -> None:
    sources = _source_files()
    src = tmp_path / "src"
    for name in sources:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)

    dist = tmp_path / "dist"
    build = "from setuptools import build_meta as b; import sys; b.build_sdist(sys.argv[1])"
    _run([sys.executable, "-c", build, dist], cwd=src)
    (sdist,) = dist.glob("*.tar.gz")
    pip = ["-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([sys.executable, *pip, "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--wheel-dir", dist, sdist], cwd=tmp_path)  # fmt: skip
    (wheel,) = dist.glob("*.whl")

    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if ".dist-info/" not in n}
    expected = _expected_wheel_files(sources)
    assert sorted(expected - shipped) == [], "left out of the wheel"
    assert sorted(shipped - expected) == [], "in the wheel, but no file of the packages"
    assert {n for n in shipped if n.startswith(("tests/", "examples/")) or "recorded" in n} == set()
    assert {"pins/gx10-reference-v5.toml", "verify/trust/production.trusted_root.json",
            "verify/trust/SHA256SUMS", "bundle_schema/json/manifest.schema.json",
            f"{EXAMPLES_IN_WHEEL}/expected-digests.json"} <= shipped  # fmt: skip

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    _run([python, *pip, "install", "-q", "--require-hashes", "-r", ROOT / "requirements.lock"],
         cwd=tmp_path)  # fmt: skip
    _run([python, *pip, "install", "-q", "--no-deps", wheel], cwd=tmp_path)
    _run([python, *pip, "check"], cwd=tmp_path)  # the lock meets the wheel's dependency ranges

    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "200"}
    where = _run(
        [python, "-c", "import audit.demo.examples as e; print(e.EXAMPLES_DIR)"], empty, env
    )
    assert Path(where.strip()).is_relative_to(venv), f"not the installed examples: {where}"
    assert where.strip().endswith(EXAMPLES_IN_WHEEL), f"not beside the demo's code: {where}"
    audit = venv / "bin" / "audit"

    assert "demo" in _run([audit, "--help"], empty, env)
    shown = _run([audit, "demo", "--out", "out"], empty, env)
    for verdict in ("QUALIFIED", "NOT_QUALIFIED", "INFRA_ERROR", "QUARANTINED"):
        assert verdict in shown, f"the demo's output does not name {verdict}:\n{shown}"
    digests = json.loads((ROOT / "examples" / "expected-digests.json").read_text("utf-8"))
    for name, digest in digests.items():
        assert f"{name}\n  {digest}\n" in shown, f"{name} not built as committed:\n{shown}"

    def verify(bundle: str) -> dict[str, str]:
        verdict: dict[str, str] = json.loads(_run([audit, "verify", bundle, "--json"], empty, env))
        return verdict

    example = verify("out/gx10-full-qualified.tar")
    assert (example["outcome"], example["bundle_digest"]) == (
        "QUALIFIED",
        digests["gx10-full-qualified"],
    )
    run = verify("out/run-well-behaved")  # the bundle of the demo's own audit run
    assert (run["outcome"], run["result_validity"]) == ("QUALIFIED", "VALID")
    assert sorted(p.name for p in empty.iterdir()) == ["out"]
