"""Named fault points, for tests that kill the runner at an exact step.

``EVIDENCE_AUDIT_TEST_KILL_AT=<point>[@<n>]`` makes the process SIGKILL itself the n-th time
(default: the first) it reaches the named point; unset, a point costs one lookup. This is how
tests/audit/test_run_killed.py kills ``audit run`` during a checkout, mid-stream, mid-blob-write or
between the claims and the manifest, without guessing at timings. (Git's ``GIT_TEST_*``
variables are the same idea.) Points: docs/running.md#fault-points.
"""

from __future__ import annotations

import os
import signal

__all__ = ["VARIABLE", "point"]

VARIABLE = "EVIDENCE_AUDIT_TEST_KILL_AT"

_target, _, _nth = os.environ.get(VARIABLE, "").partition("@")
_remaining = int(_nth or "1") if _target else 0


def point(name: str) -> None:
    """Mark a fault point; SIGKILL this process if it is the one named in the environment."""
    global _remaining  # noqa: PLW0603 - one counter per process, by design
    if _remaining and name == _target:
        _remaining -= 1
        if not _remaining:
            os.kill(os.getpid(), signal.SIGKILL)
