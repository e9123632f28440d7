"""The host's processes that carry a marker: how a test finds what a harness left running.

A harness in the sandbox sees pids of its own PID namespace, which name other processes (or
none) on the host, so a test never takes a pid from a harness: it marks the harness's processes
(an argument or an environment variable holding a path of the test's own) and looks for the
mark in every process's ``/proc/<pid>/cmdline`` and ``environ``.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

__all__ = ["kill_marked", "marked"]


def marked(mark: str) -> list[int]:
    """The pids of live processes (not zombies) whose arguments or environment hold ``mark``."""
    needle, found = mark.encode(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            held = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue  # gone, or not ours to read
        if state != b"Z" and needle in held:
            found.append(int(entry.name))
    return found


def kill_marked(mark: str) -> None:
    """Kill every process :func:`marked` finds (a test's clean-up)."""
    for pid in marked(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
