"""Fixtures of the hostile tests."""

from __future__ import annotations

import pytest

from audit.sandbox import SandboxUnavailable, check_sandbox


@pytest.fixture(scope="module")
def sandbox() -> None:
    """Skips a test where the sandbox cannot be made here (it says why)."""
    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
