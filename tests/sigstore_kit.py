"""What the tests that sign and verify against the private Sigstore instance share: a home
directory of the test's own (sigstore must never find or write a cache in the user's), the
instance and its services (one a module), and the trust files a signer and a verifier use.

tests/conftest.py makes the fixtures every test's; a module that signs marks its tests with
``pytestmark = pytest.mark.usefixtures("private_home")``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.private_sigstore import PrivateSigstore, Services


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sigstore must never find (or write) a cache in the user's home directory, nor take an
    identity token or a reproducible time from the environment the suite runs in."""
    for variable in ("HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(variable, str(tmp_path / "home" / variable.lower()))
    monkeypatch.delenv("SIGSTORE_ID_TOKEN", raising=False)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for variable in [v for v in os.environ if v.startswith(("ACTIONS_ID_TOKEN", "GITHUB_"))]:
        monkeypatch.delenv(variable)


@pytest.fixture(scope="module")
def instance() -> PrivateSigstore:
    return PrivateSigstore()


@pytest.fixture(scope="module")
def services(instance: PrivateSigstore) -> Iterator[Services]:
    with Services(instance) as running:
        yield running


def trust_files(folder: Path, instance: PrivateSigstore, services: Services) -> dict[str, str]:
    """The instance's trusted root and trust configuration, written to ``folder``: the files a
    verifier (``root``) and a signer (``config``) of the private instance use."""
    root, config = folder / "trusted_root.json", folder / "trust_config.json"
    root.write_bytes(instance.trusted_root_bytes())
    config.write_text(json.dumps(services.trust_config()))
    return {"root": str(root), "config": str(config)}


@pytest.fixture
def trust(tmp_path: Path, instance: PrivateSigstore, services: Services) -> dict[str, str]:
    """The files a signer and a verifier of the private instance use (in the test's folder)."""
    return trust_files(tmp_path, instance, services)
