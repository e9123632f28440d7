"""Fixtures: real bundles, built by the project's own writer and example builder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audit.examples import EXAMPLES_DIR, build_example, build_upstream, example_runs
from pins import CURRENT, load_builtin
from tests.factories import write_small_bundle


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every example bundle, built once per session; copy before changing."""
    root = tmp_path_factory.mktemp("examples")
    built = {}
    for run in example_runs():
        build_example(run, root / run.name, tmp_path_factory.mktemp(f"work-{run.name}"))
        built[run.name] = root / run.name
    return built


@pytest.fixture
def full_bundle(built_examples: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the complete full-profile example bundle."""
    target = tmp_path / "bundle"
    shutil.copytree(built_examples["gx10-full-qualified"], target)
    return target


@pytest.fixture
def small_bundle(tmp_path: Path) -> Path:
    """A small valid bundle written by the BundleWriter."""
    root = tmp_path / "small"
    write_small_bundle(root)
    return root


@pytest.fixture(scope="session")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every upstream the current pin set pins, as a real git repository at its pinned commit."""
    root = tmp_path_factory.mktemp("mirrors")
    upstreams = load_builtin(CURRENT).pins.upstreams
    for name in upstreams:
        build_upstream(EXAMPLES_DIR / "upstreams" / name, root / name)
    return {name: root / name for name in upstreams}
