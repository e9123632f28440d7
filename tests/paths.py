"""Where the tests find the project's files, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA", "DOCS", "EXAMPLES", "PINS", "ROOT", "SCHEMAS", "TESTS"]

TESTS = Path(__file__).resolve().parent
"""The tests folder (this module's)."""
ROOT = TESTS.parent
"""The project's root: the source tree the tests run from."""
DATA = TESTS / "data"
DOCS = ROOT / "docs"
PINS = ROOT / "pins"
SCHEMAS = ROOT / "bundle_schema" / "json"
EXAMPLES = ROOT / "examples"
