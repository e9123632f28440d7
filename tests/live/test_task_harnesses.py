"""The real task harnesses (ADR 0027): Inspect AI 0.3.285 and lm-evaluation-harness 0.4.13, each
run by the pin-set block docs/upstreams.md documents, on the task the project ships, against
llama-cpp-python's server with SmolLM2; what they wrote read by their readers exactly as the
harness itself counted it. Network: 127.0.0.1 only; the data sets are local files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import REPO, built
from tests.live.engine import free_port, smollm2_gguf
from tests.live.test_llamacpp import _server

# a real engine's run takes minutes to hours on two cores (the bfcl-eval gate): no per-test limit
pytestmark = [pytest.mark.live, pytest.mark.timeout(0)]

UPSTREAMS = REPO / "docs" / "upstreams.md"
ALIAS = "smollm2-135m-instruct"


def _block(upstream: str) -> dict[str, Any]:
    """The TOML block of docs/upstreams.md that holds ``[harnesses.<upstream>]``, parsed."""
    for block in re.findall(r"```toml\n(.*?)```", UPSTREAMS.read_text("utf-8"), re.S):
        if f"[harnesses.{upstream}]" in block:
            harness: dict[str, Any] = tomllib.loads(block)["harnesses"][upstream]
            return harness
    raise AssertionError(f"docs/upstreams.md has no [harnesses.{upstream}] block")


def _tasks_python() -> Path:
    return built("EVIDENCE_AUDIT_TASKS_PYTHON", ".venv-tasks/bin/python",
                 "no task-harness venv; make test-live builds it (make tasks-venv)")  # fmt: skip


def _run(upstream: str, tasks: str, live_python: Path, tmp_path: Path) -> dict[str, bytes]:
    """The documented command of ``upstream``, in a copy of ``tests/data/<tasks>`` (its
    checkout), against the real server; the files it wrote, by their relative path."""
    harness, python = _block(upstream), _tasks_python()
    for requirement in harness["requirements"]:
        name, version = requirement.split("==")
        found = subprocess.run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert found == version, f"{python} holds {name} {found}, the block pins {version}"
    checkout, out = tmp_path / "checkout", tmp_path / "out"
    shutil.copytree(REPO / "tests" / "data" / tasks, checkout)
    out.mkdir()
    (tmp_path / "home").mkdir()
    port, gguf = free_port(), smollm2_gguf(live_python)
    values = {"python": str(python), "endpoint": f"http://127.0.0.1:{port}", "model": ALIAS,
              "out": str(out)}  # fmt: skip
    command = [part.format(**values) for part in harness["command"]]
    server = (
        f"exec {shlex.quote(str(live_python))} -m llama_cpp.server --model "
        f"{shlex.quote(str(gguf))} --model_alias {ALIAS} --host 127.0.0.1 --port {port}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVIDENCE_AUDIT_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path / "home"), "PYTHONDONTWRITEBYTECODE": "1"}
    env |= harness.get("env", {})  # the block's pinned variables, as the runner gives them
    with _server(server, tmp_path, env, port, tmp_path / "server.log"):
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=1800, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_the_real_inspect_ai_reads_as_it_counted(live_python: Path, tmp_path: Path) -> None:
    from verify.harness_outputs import read_outputs  # noqa: PLC0415 - the live test's own imports

    files = _run("inspect", "inspect_ai_tasks", live_python, tmp_path)
    outputs = read_outputs(_block("inspect")["parser"], files, ["tool_instruction"])
    ((_, (_, tallies)),) = outputs.records.items()
    ((name, data),) = [(n, d) for n, d in files.items() if n.startswith("logs/")]
    log = json.loads(data)
    (score,) = log["results"]["scores"]
    n = log["results"]["total_samples"]
    assert n == 8 and tallies.tasks["arithmetic"].n == n, name
    assert tallies.tasks["arithmetic"].hits == round(score["metrics"]["accuracy"]["value"] * n)
    assert (tallies.version, tallies.model) == ("0.3.285", f"openai-api/local/{ALIAS}")


def test_the_real_lm_eval_reads_as_it_counted(live_python: Path, tmp_path: Path) -> None:
    from verify.harness_outputs import read_outputs  # noqa: PLC0415 - the live test's own imports

    files = _run("lmeval", "lm_eval_tasks", live_python, tmp_path)
    outputs = read_outputs(_block("lmeval")["parser"], files, ["tool_instruction"])
    ((_, (_, tallies)),) = outputs.records.items()
    (results,) = [json.loads(d) for n, d in files.items() if "/results_" in n]
    row = results["results"]["arithmetic_local"]
    n = results["n-samples"]["arithmetic_local"]["effective"]
    assert n == 8 and tallies.tasks["arithmetic_local"].n == n
    assert tallies.tasks["arithmetic_local"].hits == round(row["exact_match,last-word"] * n)
    assert (tallies.version, tallies.model) == ("0.4.13", ALIAS)
