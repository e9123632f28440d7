"""Pausing the cyclic garbage collector around work that builds many acyclic objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a bundle is verified or a run is scored.

    Both build only acyclic objects (parsed JSON, models, results), but on a large manifest
    or results file their number makes each automatic collection walk a growing heap; reference
    counting still frees them. Collection resumes as it was afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
