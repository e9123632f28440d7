"""The dependency rule: bundle_schema <- pins <- verify <- audit; verify never imports audit;
no package imports another's underscore modules."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from tests.paths import ROOT

LAYERS = ["bundle_schema", "pins", "verify", "audit"]


def _imports(package: str) -> Iterator[tuple[str, str]]:
    """Every module ``package`` imports (absolute imports, lazy ones too), with the file."""
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
                yield path.relative_to(ROOT).as_posix(), name


def imported_packages(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for where, name in _imports(package):
        found.setdefault(name.split(".")[0], set()).add(where)
    return found


def _private_imports(package: str) -> list[str]:
    """The imports in ``package`` of another package's underscore modules."""
    found = []
    for where, name in _imports(package):
        head, *rest = name.split(".")
        if head in LAYERS and head != package and any(p.startswith("_") for p in rest):
            found.append(f"{where}: {name}")
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


@pytest.mark.parametrize("package", LAYERS)
def test_a_layer_imports_only_what_another_exports(package: str) -> None:
    """Another package's underscore modules are its own: what a layer above uses is exported
    by the package (its ``__init__``) or a public module."""
    assert _private_imports(package) == []


def test_the_private_rule_is_seen_by_the_check() -> None:
    """The check sees the imports it looks for: verify's own underscore modules, from verify."""
    assert any(name.startswith("verify._") for _, name in _imports("verify"))
