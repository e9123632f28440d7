"""Run one `audit` command against a small or read-only filesystem, inside a mount namespace.

``unshare --mount --propagation private python -m tests.faults_inside DIR OPTIONS -- ARGV...``
mounts a tmpfs with OPTIONS (e.g. ``size=64k`` or ``ro``) on DIR, runs ``audit ARGV`` in this
process, then prints one JSON document: the exit code, stderr, every path left under DIR, and
which files under a ``blobs/sha256`` directory do not hash to their name. The tmpfs goes when the
namespace does, so what was left is reported from inside.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from audit.cli import main


def report(directory: Path, argv: list[str]) -> dict[str, object]:
    err = io.StringIO()
    with (
        open(os.devnull, "w") as sink,
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(err),
    ):
        code = main(argv)
    left = sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))
    misnamed = [
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.parent.name == "sha256" and p.is_file() and not p.name.startswith(".")
        and hashlib.sha256(p.read_bytes()).hexdigest() != p.name
    ]  # fmt: skip
    return {"exit": code, "stderr": err.getvalue(), "left": left, "misnamed": misnamed}


if __name__ == "__main__":
    target, options, separator, *command = sys.argv[1:]
    assert separator == "--"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", target], check=True)
    sys.stdout.write(json.dumps(report(Path(target), command)) + "\n")
