"""The example bundles are reproducible, match their committed digests, and the demo holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.console import Console

from audit.demo.examples import (
    EXAMPLES_DIR,
    build_example,
    build_upstream,
    example_runs,
    expected_digests,
)
from audit.demo.pipeline import DEMO_DIGEST, run_demo
from audit.demo.reference_endpoint import MODEL_ID
from bundle_schema.errors import InvalidInput
from pins import CURRENT, DEMO, load_builtin, parse_pin_set
from tests.conftest import DEPLOYMENT_PINS
from verify import parse_manifest, verify_bundle


def test_examples_match_their_committed_digests(built_examples: dict[str, Path]) -> None:
    built = {
        name: verify_bundle(path).verdict.bundle_digest for name, path in built_examples.items()
    }
    assert built == expected_digests(), (
        "example bundles drifted; if intended, rewrite examples/expected-digests.json from "
        "`audit demo` output"
    )


def test_rebuilding_gives_identical_bytes(built_examples: dict[str, Path], tmp_path: Path) -> None:
    run = example_runs()[0]
    build_example(run, tmp_path / "again", tmp_path / "work")
    for path in built_examples[run.name].rglob("*"):
        if path.is_file():
            relative = path.relative_to(built_examples[run.name])
            assert (tmp_path / "again" / relative).read_bytes() == path.read_bytes()


def test_full_example_is_complete(built_examples: dict[str, Path]) -> None:
    manifest = parse_manifest(
        (built_examples["gx10-full-qualified"] / "manifest.json").read_bytes()
    ).model
    assert manifest.profile == "full"
    assert [c.name for c in manifest.components] == [
        "coding",
        "hermes",
        "tool_instruction",
        "reliability",
        "performance",
    ]
    assert {"transport/exchanges.jsonl", "network/socket-ledger.jsonl"} <= set(manifest.evidence)
    assert len(manifest.upstreams) == 4 and all(u.clean for u in manifest.upstreams)
    pins = load_builtin("gx10-reference-v5")
    assert manifest.pin_set.digest == pins.digest
    assert verify_bundle(built_examples["gx10-full-qualified"]).verdict.integrity.status == "ok"


def test_upstream_commits_are_deterministic_and_pinned(tmp_path: Path) -> None:
    pins = load_builtin("gx10-reference-v5")
    for name, pinned in pins.data["upstreams"].items():
        commit, listing = build_upstream(EXAMPLES_DIR / "upstreams" / name, tmp_path / name)
        assert commit == pinned["commit"]
        assert listing.startswith(b"100644 blob ")


def test_the_demo_pins_are_demo_only_and_name_the_reference_endpoints_model() -> None:
    demo = load_builtin(DEMO)
    assert demo.pins.demo_only and demo.pins.reference is not None
    assert (demo.pins.reference.runtime_model_id, demo.pins.reference.model_digest) == (
        MODEL_ID, DEMO_DIGEST
    )  # fmt: skip
    assert all(u.repository.startswith("reference://") for u in demo.pins.upstreams.values())
    real = load_builtin(CURRENT)
    assert not real.pins.demo_only
    assert not any(u.repository.startswith("reference://") for u in real.pins.upstreams.values())
    assert real.pins.scoring_generation == demo.pins.scoring_generation


def test_the_tests_deployment_pins_are_the_demo_pins_less_the_reference() -> None:
    """The pin set the ranking tests record the examples under differs from the demo's only in
    its id, its [reference] table and its upstreams' repository URLs (the same commits)."""
    demo = dict(load_builtin(DEMO).data)
    deployment = dict(parse_pin_set(DEPLOYMENT_PINS.read_bytes(), "x").data)
    assert deployment.pop("id") == "gx10-deployment-v5"
    demo.pop("id"), demo.pop("reference")
    for name, upstream in deployment["upstreams"].items():
        assert upstream["commit"] == demo["upstreams"][name]["commit"]
        assert upstream["repository"] == f"https://example.invalid/evidence-audit/{name}"
    demo.pop("upstreams"), deployment.pop("upstreams")
    assert deployment == demo


def test_drifted_upstream_is_refused(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES_DIR, examples)
    (examples / "upstreams" / "sparkbench" / "README.md").write_text("changed\n")
    run = next(r for r in example_runs(examples) if r.name == "gx10-spark-quarantined")
    with pytest.raises(
        InvalidInput, match=r"builds commit [0-9a-f]{40}, but pin set gx10-reference-v5 pins"
    ):
        build_example(run, tmp_path / "out", tmp_path / "work", examples)


def test_demo_builds_verifies_and_catches_the_tampered_copy(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    assert run_demo(tmp_path / "demo", console) is True
    text = console.export_text()
    assert "tampered copy of gx10-full-qualified" in text and "caught" in text
    for digest in expected_digests().values():
        assert digest in text
    assert run_demo(tmp_path / "demo", console) is True  # re-running replaces its own output


def test_demo_refuses_to_replace_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "demo" / "gx10-full-qualified").mkdir(parents=True)
    (tmp_path / "demo" / "gx10-full-qualified" / "thesis.tex").write_text("precious")
    with pytest.raises(InvalidInput, match="not a bundle directory; not replacing it"):
        run_demo(tmp_path / "demo", Console(record=True))
    assert (tmp_path / "demo" / "gx10-full-qualified" / "thesis.tex").read_text() == "precious"
