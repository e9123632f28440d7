"""The environment a harness runs in: its interpreter and the distributions installed in it.

A real upstream harness (Spark Bench, benchlocal-cli, Infermark) needs its own dependencies, so
it may run with an interpreter of its own (``audit run --harness-python NAME=PATH``). Before the
harness starts, the runner asks that interpreter for its version and every installed
distribution (``name==version``: the lock actually in effect) and keeps the answer as evidence
beside the checkout, with the environment variables the harness is given (secrets redacted).
The pin set's ``requirements`` for the harness must all be among the distributions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bundle_schema import canonical_bytes
from bundle_schema.errors import InvalidInput, one_line
from bundle_schema.models import HarnessEnvironment
from pins import SECRET_NAME, URL_CREDENTIALS

__all__ = [
    "ENVIRONMENT_MEDIA_TYPE",
    "Environment",
    "EnvironmentUnavailable",
    "data_listing",
    "describe_python",
]

ENVIRONMENT_MEDIA_TYPE = "application/json"


# Run by the harness's interpreter: its version, its installed distributions and the SHA-256
# of each one's RECORD (the list of its installed files with their hashes), as JSON. Of a
# distribution found twice on the path (by its PEP 503 name, in two versions or one), the
# first (the one imports find) is recorded.
_PROBE = (
    "import hashlib, importlib.metadata as m, json, re, sys\n"
    "installed, seen = {}, set()\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    canonical = re.sub(r'[-_.]+', '-', name or '').lower()\n"
    "    if not name or canonical in seen:\n"
    "        continue\n"
    "    seen.add(canonical)\n"
    '    key = f"{name}=={d.version}"\n'
    "    record = d.read_text('RECORD')\n"
    "    digest = None if record is None else hashlib.sha256(record.encode()).hexdigest()\n"
    "    installed[key] = digest\n"
    "print(json.dumps({'executable': sys.executable, 'python_version': sys.version,\n"
    "                  'distributions': sorted(installed), 'installed': installed}))\n"
)


class EnvironmentUnavailable(InvalidInput):
    """The harness's interpreter could not be asked what it holds; the message says why."""


@dataclass(frozen=True)
class Environment:
    """A harness's interpreter as it answered, and the environment it is given."""

    upstream: str
    executable: str
    python_version: str
    distributions: tuple[str, ...]
    variables: Mapping[str, str]
    installed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """``name==version`` -> ``sha256:`` of the distribution's installed RECORD file (one
    without a RECORD is not named)."""

    def evidence(self) -> bytes:
        """The canonical JSON kept at ``upstreams/<upstream>/environment.json``."""
        record = HarnessEnvironment(
            schema_version=1,
            upstream=self.upstream,
            executable=self.executable,
            python_version=self.python_version,
            distributions=self.distributions,
            variables=dict(sorted(self.variables.items())),
            installed=dict(sorted(self.installed.items())),
        )
        return canonical_bytes(record.model_dump(mode="json"))


def _redacted(variables: Mapping[str, str]) -> dict[str, str]:
    """Secrets out of the record: the value of a secret's name, and a URL's credentials in
    any value (``HTTPS_PROXY=http://user:password@host``)."""
    return {
        k: "[redacted]" if SECRET_NAME.search(k) else URL_CREDENTIALS.sub(r"\1[redacted]@", v)
        for k, v in variables.items()
    }


def describe_python(
    upstream: str, python: str, variables: Mapping[str, str], timeout: float = 60.0
) -> Environment:
    """Ask ``python`` what it is and holds.

    Raises:
        EnvironmentUnavailable: it does not run, fails, or answers something else.
    """
    try:
        done = subprocess.run(  # the interpreter the operator named
            [python, "-I", "-c", _PROBE],
            capture_output=True,
            timeout=timeout,
            check=False,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnavailable(f"{python}: does not run: {exc}") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace")[-200:]
        raise EnvironmentUnavailable(f"{python}: exited {done.returncode}: {tail}")
    try:
        answer: Any = json.loads(done.stdout)
        distributions: Sequence[str] = answer["distributions"]
        executable, version = str(answer["executable"]), str(answer["python_version"])
        installed = {
            str(name): f"sha256:{digest}"
            for name, digest in answer["installed"].items()
            if digest is not None
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        raise EnvironmentUnavailable(f"{python}: not a Python interpreter's answer") from None
    environment = Environment(
        upstream=upstream,
        executable=executable,
        python_version=version,
        distributions=tuple(str(d) for d in distributions),
        variables=_redacted(variables),
        installed=installed,
    )
    try:  # what cannot be kept as the verifier reads the record is refused here, not later
        environment.evidence()
    except ValidationError as exc:
        problem = one_line(str(exc.errors()[0]["msg"]), 200)
        raise EnvironmentUnavailable(
            f"{python}: its answer cannot be recorded: {problem}"
        ) from None
    return environment


MAX_DATA_FILES = 1_000_000
"""A harness data directory of more files than this is refused (its listing would be huge)."""


def data_listing(path: Path) -> tuple[bytes, str]:
    """The listing of a harness data directory and its digest: one canonical JSON line per
    regular file, by relative path (``path``, ``size``, ``sha256``). The same files give the
    same bytes, wherever the directory is.

    Raises:
        EnvironmentUnavailable: it is not a directory, or holds a link or a special file (a
            listing must say what the harness read), or too many files.
    """
    if not path.is_dir():
        raise EnvironmentUnavailable(f"{path}: not a directory")
    found: list[tuple[str, Path]] = []
    for directory, dirs, names in os.walk(path):
        here = Path(directory)
        for name in sorted(dirs + names):
            entry = here / name
            if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
                kind = "symbolic link" if entry.is_symlink() else "special file"
                raise EnvironmentUnavailable(f"{entry}: a {kind} in a data directory")
            if entry.is_file():
                found.append((entry.relative_to(path).as_posix(), entry))
        if len(found) > MAX_DATA_FILES:
            raise EnvironmentUnavailable(f"{path}: over {MAX_DATA_FILES} files")
    lines = []
    for relative, entry in sorted(found):
        digest = hashlib.sha256()
        with entry.open("rb") as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
        size = entry.stat().st_size
        lines.append(
            canonical_bytes({"path": relative, "sha256": digest.hexdigest(), "size": size}) + b"\n"
        )
    data = b"".join(lines)
    return data, "sha256:" + hashlib.sha256(data).hexdigest()
