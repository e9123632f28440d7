"""Fixtures of the hostile tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.sandbox import SandboxUnavailable, check_sandbox
from tests.host_kit import NAME
from tests.sandbox_kit import LISTENING


@pytest.fixture(scope="module")
def sandbox() -> None:
    """Skips a test where the sandbox cannot be made here (it says why)."""
    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def _listening_closed() -> Iterator[None]:
    """Every host socket a test made (``tests.sandbox_kit.listening``) is closed after it."""
    yield
    while LISTENING:
        LISTENING.pop().close()


@pytest.fixture
def root() -> None:
    """Skips a test that plants what only the host's root may (a mount, a device node)."""
    if os.geteuid() != 0:
        pytest.skip("planting a mount, a device node or a name in / needs the host's root")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A harness's working directory (writable), beside what the host keeps in ``tmp_path``."""
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory of the host's outside ``/tmp`` (in the runner's home), gone after."""
    where = Path.home().resolve()
    if where.is_relative_to("/tmp") or not os.access(where, os.W_OK):
        pytest.skip("needs a writable home outside /tmp to plant the host's places in")
    place = where / f".evidence-audit-test-{os.getpid()}-{os.urandom(4).hex()}"
    place.mkdir()
    yield place
    shutil.rmtree(place)


@pytest.fixture
def srv(root: None) -> Iterator[Path]:
    """A directory of the test's own in ``/srv`` (uid 65534 reads it), gone after."""
    if not os.path.isdir("/srv"):
        pytest.skip("no /srv to plant the host's places in")
    place = Path("/srv") / f".{NAME}-{os.getpid()}-{os.urandom(4).hex()}"
    place.mkdir(mode=0o755)
    place.chmod(0o755)
    yield place
    shutil.rmtree(place)


@pytest.fixture
def open_work() -> Iterator[Path]:
    """A harness's working directory under ``/tmp`` that uid 65534 writes, gone after."""
    work = Path(tempfile.mkdtemp(prefix="ea-hostile-", dir="/tmp"))
    work.chmod(0o777)
    yield work
    shutil.rmtree(work, ignore_errors=True)
