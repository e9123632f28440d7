"""Harness environments: each harness's interpreter and its distributions recorded as evidence,
the pin set's requirements checked by the runner before the harness runs and by the verifier
against what was recorded."""

from __future__ import annotations

import base64
import copy
import csv
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from audit.environments import EnvironmentUnavailable, describe_python
from bundle_schema import canonical_bytes
from bundle_schema.errors import InvalidInput
from pins import (
    DEMO,
    PinSetSource,
    load_builtin,
    missing_requirements,
    pin_set_model,
)
from tests.data.hostile.kit import read_bundle, reseal
from tests.factories import bare_venv, smoke_run, sparkbench_pins
from verify import verify_bundle

PYDANTIC = f"pydantic=={importlib.metadata.version('pydantic')}"
"""A requirement the runner's own interpreter holds."""


def _pins(requirements: list[str]) -> PinSetSource:
    return sparkbench_pins(requirements=requirements)


def _run(tmp_path: Path, mirrors: dict[str, Path], pins: PinSetSource, **changes: Any) -> Path:
    return smoke_run(tmp_path / "bundle", mirrors, pins, **changes)


def test_requirements_are_exact_pins() -> None:
    data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["harnesses"]["sparkbench"]["requirements"] = ["httpx>=0.27"]
    with pytest.raises(InvalidInput, match=r"^x\.toml: harnesses\.sparkbench\.requirements\.0: "):
        pin_set_model(data, "x.toml")


def test_requirement_names_compare_as_pep_503_does() -> None:
    held = ["Jsonschema_Specifications==2025.9.1", "httpx==0.28.1"]
    assert missing_requirements(["jsonschema-specifications==2025.9.1"], held) == []
    assert missing_requirements(["httpx==0.28.0", "rich==15.0.0"], held) == [
        "httpx==0.28.0", "rich==15.0.0"
    ]  # fmt: skip


def _files_digest(record: str) -> str:
    """ADR 0042's files digest, from its text: the RECORD's rows inside the install directory
    (no ``..``, not absolute), less what is under ``__pycache__`` and the dist-info's
    install-time files, sorted, as compact JSON."""
    rows = []
    for path, digest, size in csv.reader(record.splitlines()):
        parts = path.split("/")
        if path.startswith("/") or ".." in parts or "__pycache__" in parts:
            continue
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in (
            "RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json"
        ):  # fmt: skip
            continue
        rows.append([path, digest, size])
    data = json.dumps(sorted(rows), separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_each_distribution_is_recorded_with_the_digest_of_its_installed_files() -> None:
    """The record names what was installed, file for file: each distribution's files digest
    (its RECORD's rows inside its install directory), as this interpreter's metadata reads it."""
    env = describe_python("x", sys.executable, {})
    distribution = importlib.metadata.distribution("pydantic")
    record = distribution.read_text("RECORD")
    assert record is not None
    digest = _files_digest(record)
    assert digest != "sha256:" + hashlib.sha256(record.encode()).hexdigest()
    assert env.installed[PYDANTIC] == digest
    assert set(env.installed) <= set(env.distributions)
    assert json.loads(env.evidence())["installed"][PYDANTIC] == digest


def _wheel(folder: Path, module: bytes) -> Path:
    """A wheel of ``toy`` 1.0 with ``module`` as its code and a console script."""
    wheel = folder / "toy-1.0-py3-none-any.whl"
    info = "toy-1.0.dist-info"
    files = {
        "toy/__init__.py": module,
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: toy\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": b"[console_scripts]\ntoy = toy:main\n",
    }  # fmt: skip
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]  # fmt: skip
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel


def _installed(venv: Path, wheel: Path) -> Path:
    """A real venv at ``venv`` with ``wheel`` installed in it by pip (offline); its python."""
    python, _ = bare_venv(venv)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-index", "--disable-pip-version-check", str(wheel)],
        check=True,
    )  # fmt: skip
    return python


def test_one_wheel_installed_in_two_places_has_one_files_digest(tmp_path: Path) -> None:
    """A console script's first line names its venv's interpreter, so the RECORD files of one
    wheel installed in two venvs differ; the files digest does not. Another build of the same
    version, one byte of its module changed, has another."""
    wheel = _wheel(tmp_path, b"def main():\n    return 0\n")
    pythons = [_installed(tmp_path / name, wheel) for name in ("a", "deeper/b")]
    records = [
        subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; "
             "print(m.distribution('toy').read_text('RECORD'), end='')"],
            capture_output=True, text=True, check=True,
        ).stdout
        for python in pythons
    ]  # fmt: skip
    assert records[0] != records[1] and "bin/toy" in records[0]
    digests = [describe_python("x", str(python), {}).installed["toy==1.0"] for python in pythons]
    assert digests[0] == digests[1] == _files_digest(records[0])
    patched = _wheel(tmp_path / "deeper", b"def main():\n    return 1\n")
    other = _installed(tmp_path / "c", patched)
    assert describe_python("x", str(other), {}).installed["toy==1.0"] != digests[0]


def test_the_interpreter_is_asked_and_secrets_are_redacted() -> None:
    given = {"HF_TOKEN": "hf_123", "LANG": "C.UTF-8", "HTTPS_PROXY": "http://u:pw@proxy:3128",
             "NOTE": "a@b http://host/a@b", "HTTP_PROXY": "http://u:p\tw@a@proxy"}  # fmt: skip
    env = describe_python("x", sys.executable, given)
    assert PYDANTIC in env.distributions
    recorded = json.loads(env.evidence())
    assert recorded["variables"] == {
        "HF_TOKEN": "[redacted]", "LANG": "C.UTF-8", "HTTPS_PROXY": "http://[redacted]@proxy:3128",
        "NOTE": "a@b http://host/a@b", "HTTP_PROXY": "http://[redacted]@proxy",
    }  # fmt: skip
    assert recorded["upstream"] == "x" and recorded["python_version"] == sys.version
    with pytest.raises(EnvironmentUnavailable, match="does not run"):
        describe_python("x", "/nonexistent/python", {})


def test_a_harness_whose_interpreter_lacks_a_pinned_requirement_does_not_run(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _pins(["no-such-distribution==1.0"])
    bundle = _run(tmp_path, mirrors, pins)
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR"
    assert any(
        r.startswith("coding failed: sparkbench: its interpreter ")
        and r.endswith(
            "lacks the pinned no-such-distribution==1.0 (give one that has them: "
            "--harness-python sparkbench=PATH)"
        )
        for r in verdict.reasons
    ), verdict.reasons
    _, files = read_bundle(bundle)
    assert json.loads(files["upstreams/sparkbench/environment.json"][0])["executable"]


def _qualified_run(
    tmp_path: Path, mirrors: dict[str, Path], pins: PinSetSource
) -> tuple[Any, Any, dict[str, Any]]:
    """A smoke run under ``pins`` that qualifies: its manifest, its files and SparkBench's
    environment record."""
    bundle = _run(tmp_path, mirrors, pins)
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok"), verdict.reasons
    manifest, files = read_bundle(bundle)
    return manifest, files, json.loads(files["upstreams/sparkbench/environment.json"][0])


def _judged_record(
    out: Path, manifest: Any, files: Any, recorded: dict[str, Any], pins: PinSetSource
) -> Any:
    """The bundle resealed at ``out`` (replaced) with ``recorded`` as SparkBench's environment
    record: it must fail integrity with one finding on that record, which is returned."""
    entry = "upstreams/sparkbench/environment.json"
    files[entry] = (canonical_bytes(recorded), files[entry][1])
    shutil.rmtree(out, ignore_errors=True)
    reseal(out, manifest, files, {})
    forged = verify_bundle(out, pins=pins).verdict
    assert forged.outcome == "INFRA_ERROR" and forged.integrity.status == "failed"
    (finding,) = (f for f in forged.integrity.findings if f.entry == entry)
    return finding


def test_a_completed_component_needs_its_requirements_in_the_recorded_environment(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _pins([PYDANTIC])
    # named relative to where audit run was started; the harness runs in its checkout
    relative = os.path.relpath(sys.executable)
    bundle = _run(tmp_path, mirrors, pins, harness_python={"sparkbench": relative})
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok"), verdict.reasons
    assert "upstreams/sparkbench/environment.json" not in verdict.unread
    manifest, files = read_bundle(bundle)
    entry = "upstreams/sparkbench/environment.json"
    recorded = json.loads(files[entry][0])
    recorded["distributions"] = [d for d in recorded["distributions"] if d != PYDANTIC]
    recorded["installed"].pop(PYDANTIC)  # a record that means one thing: without it
    finding = _judged_record(tmp_path / "forged", manifest, files, recorded, pins)
    assert finding.message == (
        f"evidence '{entry}': coding completed by sparkbench, whose interpreter lacks the pinned "
        f"{PYDANTIC}"
    )
    del files[entry]
    reseal(tmp_path / "dropped", manifest, files, {})
    dropped = verify_bundle(tmp_path / "dropped", pins=pins).verdict
    assert any("no readable environment record" in f.message for f in dropped.integrity.findings)


def _pinned_env(env: dict[str, str]) -> PinSetSource:
    return sparkbench_pins(env=env)


@pytest.mark.parametrize(
    ("name", "why"),
    [("HF_TOKEN", "names a secret"), ("api_key", "names a secret"), ("PATH", "set by the runner"),
     ("PROXY=http://u:p@host", "a URL with credentials"),
     ("PROXY=http://u:p\tw@host", "a URL with credentials")],
)  # fmt: skip
def test_a_secret_or_a_runner_variable_is_never_pinned(name: str, why: str) -> None:
    name, _, value = name.partition("=")
    with pytest.raises(InvalidInput, match=rf"^x\.toml: harnesses\.sparkbench\.env: .*{why}"):
        pin_set_model(
            {**copy.deepcopy(dict(load_builtin(DEMO).data)),
             "harnesses": {**load_builtin(DEMO).data["harnesses"],
                           "sparkbench": {**load_builtin(DEMO).data["harnesses"]["sparkbench"],
                                          "env": {name: value or "x"}}}},
            "x.toml",
        )  # fmt: skip


def test_a_pinned_variable_reaches_the_harness(tmp_path: Path, mirrors: dict[str, Path]) -> None:
    # the reference SparkBench quarantines its run with the reason SPARK_QUARANTINE holds
    pins = _pinned_env({"SPARK_QUARANTINE": "pinned: the golden tasks are being re-audited"})
    with pytest.raises(InvalidInput, match=r"^--env SPARK_QUARANTINE: the pin set pins it to "):
        _run(tmp_path / "refused", mirrors, pins, harness_env={"SPARK_QUARANTINE": "other"})
    bundle = _run(tmp_path, mirrors, pins, harness_env={"EXTRA_SETTING": "1"})
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.result_validity, verdict.integrity.status) == ("QUARANTINED", "ok")
    assert any("re-audited" in r for r in verdict.reasons), verdict.reasons
    _, files = read_bundle(bundle)
    recorded = json.loads(files["upstreams/sparkbench/environment.json"][0])
    assert recorded["variables"] == {
        "EXTRA_SETTING": "1", "SPARK_QUARANTINE": "pinned: the golden tasks are being re-audited"
    }  # fmt: skip


def test_a_completed_component_needs_its_pinned_variables_in_the_recorded_environment(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    pins = _pinned_env({"SPARK_NOTE": "as pinned"})
    manifest, files, recorded = _qualified_run(tmp_path, mirrors, pins)
    entry = "upstreams/sparkbench/environment.json"
    assert recorded["variables"] == {"SPARK_NOTE": "as pinned"}
    recorded["variables"]["SPARK_NOTE"] = "something else"
    files[entry] = (canonical_bytes(recorded), files[entry][1])
    reseal(tmp_path / "forged", manifest, files, {})
    forged = verify_bundle(tmp_path / "forged", pins=pins).verdict
    assert forged.outcome == "INFRA_ERROR" and forged.integrity.status == "failed"
    (finding,) = (f for f in forged.integrity.findings if f.entry == entry)
    assert finding.code == "record_disagrees"
    assert finding.message == (
        f"evidence '{entry}': coding completed by sparkbench, which ran with SPARK_NOTE "
        '"something else", not the pinned "as pinned"'
    )


def test_files_are_pinned_only_of_a_required_distribution() -> None:
    digest = "sha256:" + "0" * 64
    sparkbench_pins(requirements=[PYDANTIC], installed={PYDANTIC: digest})
    with pytest.raises(InvalidInput, match=r"installed pins httpx==0\.28\.1, which is not among "):
        sparkbench_pins(requirements=[PYDANTIC], installed={"httpx==0.28.1": digest})
    with pytest.raises(InvalidInput, match=r"harnesses\.sparkbench\.installed"):
        sparkbench_pins(requirements=[PYDANTIC], installed={PYDANTIC: "sha256:0"})


def test_a_harness_whose_files_are_not_the_pinned_ones_does_not_run(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    """The refusal names the digest found: the one to pin, as with a hash-checked install."""
    found = describe_python("x", sys.executable, {}).installed[PYDANTIC]
    pinned = "sha256:" + "0" * 64
    pins = sparkbench_pins(requirements=[PYDANTIC], installed={PYDANTIC: pinned})
    verdict = verify_bundle(_run(tmp_path, mirrors, pins), pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR"
    assert any(
        r.startswith("coding failed: sparkbench: its interpreter ")
        and r.endswith(f"installed {PYDANTIC} as {found}, not the pinned {pinned}")
        for r in verdict.reasons
    ), verdict.reasons


def test_a_completed_component_needs_its_pinned_files_in_the_recorded_environment(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    found = describe_python("x", sys.executable, {}).installed[PYDANTIC]
    pins = sparkbench_pins(requirements=[PYDANTIC], installed={PYDANTIC: found})
    manifest, files, recorded = _qualified_run(tmp_path, mirrors, pins)
    entry = "upstreams/sparkbench/environment.json"
    other = "sha256:" + "1" * 64
    for installed, got in (({PYDANTIC: other}, other), ({}, None)):
        recorded["installed"] = installed
        finding = _judged_record(tmp_path / "forged", manifest, files, recorded, pins)
        assert finding.message == (
            f"evidence '{entry}': coding completed by sparkbench, whose interpreter installed "
            f"{PYDANTIC} as {got or 'nothing recorded'}, not the pinned {found}"
        )
        assert (finding.expected, finding.got) == (found, got)


def test_a_record_with_blank_or_broken_rows_is_read_or_left_unnamed(tmp_path: Path) -> None:
    """A RECORD is the installer's text: a blank line is no row, and one the csv module cannot
    read leaves the distribution without a files digest (as one without a RECORD); neither
    stops the interpreter's answer."""
    python, site = bare_venv(tmp_path / "venv")
    records = {  # a field over the csv module's limit (131,072 characters) does not read
        "blank": "blank/__init__.py,sha256=x,1\n\n\nblank-1.0.dist-info/RECORD,,\n",
        "broken": f"broken/{'a' * 140_000}.py,sha256=x,1\n",
    }
    for name, record in records.items():
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "RECORD").write_text(record)
    env = describe_python("x", str(python), {})
    assert {"blank==1.0", "broken==1.0"} <= set(env.distributions)
    assert env.installed["blank==1.0"] == _files_digest(records["blank"].replace("\n\n\n", "\n"))
    assert "broken==1.0" not in env.installed


def test_a_distribution_is_required_once() -> None:
    with pytest.raises(InvalidInput, match=r"requirements name one distribution twice: "
                       r"httpx==0\.28\.1 and HTTPX==0\.27\.0"):  # fmt: skip
        sparkbench_pins(requirements=["httpx==0.28.1", "HTTPX==0.27.0"])


def test_what_an_installer_writes_for_one_install_is_not_in_the_digest(tmp_path: Path) -> None:
    """The same files installed by pip and by uv (which adds ``uv_cache.json`` with the wheel
    file's modification time, and ``direct_url.json`` with its path) have one digest."""
    python, site = bare_venv(tmp_path / "venv")
    shared = "same/__init__.py,sha256=x,1\n"
    by = {
        "bypip": ("INSTALLER,sha256=p,4\nREQUESTED,sha256=q,0\n", ""),
        "byuv": ("INSTALLER,sha256=u,3\ndirect_url.json,sha256=d,68\n",
                 "uv_cache.json,sha256=t,127\n"),
    }  # fmt: skip
    for name, (installer, cache) in by.items():
        info = f"{name}-1.0.dist-info"
        (site / info).mkdir()
        (site / info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        )
        rows = [shared.replace("same", name)] + [f"{info}/{row}\n" for row in
                (installer + cache + "RECORD,,").splitlines()]  # fmt: skip
        (site / info / "RECORD").write_text("".join(rows))
    env = describe_python("x", str(python), {})
    digests = {name: env.installed[f"{name}==1.0"] for name in by}
    assert digests["bypip"] != digests["byuv"]  # the package's own path differs by its name
    for name in by:  # each is its one file's row alone
        assert digests[name] == _files_digest(f"{name}/__init__.py,sha256=x,1\n")
