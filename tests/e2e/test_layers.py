"""The dependency rule: bundle_schema <- pins <- verify <- audit; verify never imports audit."""

from __future__ import annotations

import ast

import pytest

from tests.paths import ROOT

LAYERS = ["bundle_schema", "pins", "verify", "audit"]


def imported_packages(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_a_layer_imports_only_layers_below_it(package: str) -> None:
    above = set(LAYERS[LAYERS.index(package) + 1 :])
    offending = {name: files for name, files in imported_packages(package).items() if name in above}
    assert offending == {}, f"{package} imports layers above it: {offending}"


def test_the_rule_is_seen_by_the_check() -> None:
    """The check finds the imports it should: audit does import verify."""
    assert "verify" in imported_packages("audit")
    assert "bundle_schema" in imported_packages("verify")
