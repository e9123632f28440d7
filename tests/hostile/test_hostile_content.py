"""A substituted model: internally consistent and its replay holds, so only the published digest
can tell (threat-model material). Every other content attack is a case of the hostile corpus
(tests/data/hostile/generate.py, run by tests/hostile/test_hostile_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.cli import main
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.generate import read_bundle, reseal
from verify import parse_manifest
from verify._source import open_source


def test_a_substituted_model_is_caught_by_the_published_digest(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a deployment's run (under the demo pins another digest is a setup failure of its own)
    original = ranked_examples["gx10-full-qualified"]
    published = parse_manifest(open_source(original).manifest_bytes()).bundle_digest
    manifest, files = read_bundle(original)
    model = manifest.model.model_dump(mode="json") | {"digest": "sha256:" + "5" * 64}
    reseal(tmp_path / "swapped", manifest, files, {"model": model})
    # Internally consistent, and its replay holds: only the published digest can tell.
    pins = ["--pins", str(DEPLOYMENT_PINS)]
    assert main(["verify", str(tmp_path / "swapped"), *pins]) == 0
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "swapped"), *pins, "--expect-digest", published]) == 1
    assert f"expected {published}" in capsys.readouterr().err
