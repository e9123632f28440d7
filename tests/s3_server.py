"""moto's S3 server as its own process on 127.0.0.1, for the tests of ``s3://`` sources: an
S3-compatible store as an operator's MinIO or R2 would be, with the AWS SDK's environment
pointed at it while it runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "evidence-audit-test",
    "AWS_SECRET_ACCESS_KEY": "evidence-audit-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask an instance metadata service for more
}
"""The test credentials moto takes, nothing real."""
LISTENING = re.compile(r"Running on (http://127\.0\.0\.1:\d+)")
"""The line moto's server (werkzeug) logs once it listens, with the port it was given."""


@contextmanager
def moto_s3(folder: Path) -> Iterator[dict[str, str]]:
    """Start moto's server (its log in ``folder``) and yield the environment that points the
    AWS SDK at it (``AWS_ENDPOINT_URL`` and :data:`ENVIRONMENT`), set in ``os.environ`` until
    the server stops and restored then. The server binds a port the system chooses (port 0)
    and names it in its log: no other process (another pytest-xdist worker) can take it in
    between."""
    path = folder / "moto.log"
    saved = {name: os.environ.get(name) for name in [*ENVIRONMENT, "AWS_ENDPOINT_URL"]}
    with path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while not (listening := LISTENING.search(path.read_text("utf-8", "replace"))):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's server exited {process.poll()}: {path.read_text()}")
                time.sleep(0.1)
            environment = ENVIRONMENT | {"AWS_ENDPOINT_URL": listening[1]}
            os.environ.update(environment)
            yield environment
        finally:
            process.terminate()
            process.wait(timeout=30)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
