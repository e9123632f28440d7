"""Fixtures: real bundles, built by the project's own writer and example builder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit import BundleWriter
from audit.examples import build_example, example_runs
from bundle_schema.models import (
    Claims,
    ComponentRef,
    ComponentResult,
    ModelIdentity,
    PinSetRef,
    RunnerInfo,
)

COMPONENT_RESULT = "application/vnd.evidence-audit.component-result+json"
DIGEST = "sha256:" + "ab" * 32


def write_small_bundle(root: Path, extra: dict[str, bytes] | None = None) -> str:
    """A small valid bundle: one component result, its raw output, and ``extra`` text blobs."""
    writer = BundleWriter(root)
    writer.add_bytes("raw/output.json", b'{"score":1}', "application/json")
    writer.add_record(
        "components/coding/result.json",
        ComponentResult(
            schema_version=1,
            component="coding",
            status="COMPLETED",
            raw_outputs=("raw/output.json",),
            metrics={"score": 1},
        ),
        COMPONENT_RESULT,
    )
    for name, data in (extra or {}).items():
        writer.add_bytes(name, data, "text/plain; charset=utf-8")
    return writer.seal(**seal_arguments())


def seal_arguments(**changes: Any) -> dict[str, Any]:
    """Keyword arguments for BundleWriter.seal of a small smoke run, with ``changes`` applied."""
    arguments: dict[str, Any] = {
        "run_id": "run-1",
        "created_at": "2026-11-01T00:00:00Z",
        "runner": RunnerInfo(name="tests", version="1"),
        "scoring_generation": "gx10-qualification-v5",
        "profile": "smoke",
        "pin_set": PinSetRef(id="gx10-qualification-v5", digest=DIGEST),
        "model": ModelIdentity(runtime_model_id="m", digest=DIGEST, digest_source="declared"),
        "upstreams": (),
        "components": (ComponentRef(name="coding", result="components/coding/result.json"),),
        "claims": Claims(
            outcome="INFRA_ERROR",
            result_validity="INCOMPLETE",
            profile_decision="NOT_ASSESSED",
            rankable=False,
            aggregate_score=None,
            executed_weight=0,
            component_scores={},
        ),
    }
    return arguments | changes


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


Mutator = Callable[[Path], None]
