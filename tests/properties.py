"""How deep a property test goes: its own number of examples in ``make test``, the same every
run (derandomized), and ``EVIDENCE_AUDIT_FUZZ_EXAMPLES`` new ones each in ``make fuzz``."""

from __future__ import annotations

import os

from hypothesis import settings

__all__ = ["DEEP", "examples"]

DEEP = int(os.environ.get("EVIDENCE_AUDIT_FUZZ_EXAMPLES", "0"))
"""The examples per property of ``make fuzz`` (0: a ``make test`` run)."""


def examples(count: int) -> settings:
    """Settings of a property: ``count`` fixed examples, or :data:`DEEP` new ones."""
    return settings(max_examples=DEEP or count, deadline=None, derandomize=not DEEP)
