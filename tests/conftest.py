"""Fixtures: real bundles, built by the project's own writer and example builder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audit.demo.examples import (
    EXAMPLES_DIR,
    ExampleRun,
    build_example,
    build_upstream,
    example_runs,
)
from pins import DEMO, PinSetSource, load_builtin, parse_pin_set
from tests.factories import write_small_bundle
from tests.paths import DATA
from tests.sigstore_kit import instance, private_home, services, trust  # noqa: F401 - fixtures


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every example bundle, built once per session; copy before changing."""
    root = tmp_path_factory.mktemp("examples")
    built = {}
    for run in example_runs():
        build_example(run, root / run.name, tmp_path_factory.mktemp(f"work-{run.name}"))
        built[run.name] = root / run.name
    return built


DEPLOYMENT_PINS = DATA / "pins" / "gx10-deployment-v5.toml"
"""A deployment's own pin set: the demo's, less its demo-only reference table."""
RANKED_CLAIMS = {"gx10-full-qualified"}
"""The examples an honest runner claims rankable when recorded under a deployment's pin set."""


@pytest.fixture(scope="session")
def deployment_pins() -> PinSetSource:
    """The pin set of :data:`DEPLOYMENT_PINS`."""
    return parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))


@pytest.fixture(scope="session")
def ranked_examples(
    tmp_path_factory: pytest.TempPathFactory, deployment_pins: PinSetSource
) -> dict[str, Path]:
    """Every example bundle as recorded under a deployment's pin set (not demo-only), with the
    claims its runner makes there: what a real deployment's runs look like to the ranking."""
    root = tmp_path_factory.mktemp("ranked-examples")
    runs = tmp_path_factory.mktemp("ranked-runs")
    built = {}
    for run in example_runs():
        copy = runs / run.name
        shutil.copytree(run.path, copy)
        if run.name in RANKED_CLAIMS:
            meta = copy / "run.toml"
            text = meta.read_text("utf-8")
            meta.write_text(text.replace("rankable = false", "rankable = true", 1), "utf-8")
        work = tmp_path_factory.mktemp(f"ranked-work-{run.name}")
        build_example(ExampleRun(run.name, copy), root / run.name, work, pins=deployment_pins)
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
    upstreams = load_builtin(DEMO).pins.upstreams
    for name in upstreams:
        build_upstream(EXAMPLES_DIR / "upstreams" / name, root / name)
    return {name: root / name for name in upstreams}
