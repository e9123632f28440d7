"""What the hostile corpus's cases are made of: a case, the context its builder draws on, and
the reading and resealing of a bundle's evidence (shared by generate.py and forgeries.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit import BundleWriter
from bundle_schema import canonical_bytes
from bundle_schema.layout import content_digest
from bundle_schema.models import Manifest
from tests.factories import write_small_bundle
from tests.paths import ROOT
from verify import parse_manifest
from verify._source import open_source
from verify.harness_outputs import read_outputs

__all__ = [
    "Builder",
    "Case",
    "Context",
    "Files",
    "lines",
    "put_json",
    "put_lines",
    "read_bundle",
    "reseal",
]

# --- how a case is made --------------------------------------------------------------------------


@dataclass
class Context:
    """What builders draw on: a work directory, the example bundles, a private Sigstore."""

    work: Path
    examples: dict[str, Path]
    sigstore: dict[str, Any] = field(default_factory=dict)
    """``instance``, ``trust`` {root, config}: set by the generator when signature cases run."""

    def small(self, name: str, **changes: Any) -> Path:
        """A fresh copy of the small valid bundle (deterministic bytes)."""
        target = self.work / "small" / name
        shutil.rmtree(target, ignore_errors=True)
        write_small_bundle(target, **changes)
        return target


Builder = Callable[[Context, Path], list[str] | None]
"""Writes a case at the path given (a file or a directory); may return extra CLI arguments."""


@dataclass(frozen=True)
class Case:
    """One hostile input and what the CLI must answer."""

    name: str
    category: str
    build: Builder
    exit: int
    fragment: str
    command: str = "verify"
    deterministic: bool = True
    screened: bool = False
    """Refused when the tar or directory is listed (HostileArchive), before anything is read:
    a defect of the bundle (exit 1), like a finding, but found by the screening."""

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


Files = dict[str, tuple[bytes, str]]


def read_bundle(path: Path) -> tuple[Manifest, Files]:
    """A bundle's manifest and every evidence file by logical name (bytes, media type)."""
    manifest = parse_manifest(open_source(path).manifest_bytes()).model
    files = {
        name: ((path / "blobs" / "sha256" / entry.digest[7:]).read_bytes(), entry.media_type)
        for name, entry in manifest.evidence.items()
    }
    return manifest, files


def reseal(target: Path, manifest: Manifest, files: Files, fields: dict[str, Any]) -> str:
    """Write the (attacked) evidence and manifest fields as a new, internally consistent bundle."""
    return resealer(target, manifest, files)(fields)


def resealer(target: Path, manifest: Manifest, files: Files) -> Callable[[dict[str, Any]], str]:
    """Write the (attacked) evidence at ``target`` once; return what seals it with
    ``manifest``'s fields (some changed), as often as asked (each seal replaces the last
    manifest: the evidence is the same)."""
    writer = BundleWriter(target, durable=False)
    for name, (data, media) in sorted(files.items()):
        writer.add_bytes(name, data, media)

    def seal(fields: dict[str, Any]) -> str:
        values = {
            key: getattr(manifest, key)
            for key in ("run_id", "created_at", "runner", "scoring_generation", "profile",
                        "pin_set", "model", "upstreams", "components", "claims")
        }  # fmt: skip
        for key, value in fields.items():
            values[key] = (
                type(values[key]).model_validate(value)
                if hasattr(values[key], "model_validate")
                else value
            )
        return writer.seal(**values)

    return seal


def lines(files: Files, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in files[name][0].splitlines()]


def put_lines(files: Files, name: str, values: list[dict[str, Any]]) -> None:
    """Write JSON Lines back as the format's canonical bytes (a forger writes valid records)."""
    files[name] = (b"".join(canonical_bytes(v) + b"\n" for v in values), files[name][1])


def put_json(files: Files, name: str, value: dict[str, Any]) -> None:
    """Write a JSON document back as the format's canonical bytes."""
    files[name] = (canonical_bytes(value), files[name][1])


def rederive_metrics(files: Files, parser: str, components: Sequence[str]) -> None:
    """What a careful forger keeps consistent: each completed component's result metrics as
    its harness's reader gives them from the (edited) raw outputs at the components' raw
    places, merged over what the result holds (a gate's metrics stay)."""
    raw = {
        name.split("/raw/", 1)[1]: data
        for name, (data, _) in files.items()
        if any(name.startswith(f"components/{c}/raw/") for c in components)
    }
    parsed = read_outputs(parser, raw, list(components))  # type: ignore[arg-type]
    for component in components:
        name = f"components/{component}/result.json"
        result = json.loads(files[name][0])
        if result.get("status") == "COMPLETED":
            result["metrics"] = {**result.get("metrics", {}), **parsed.metrics.get(component, {})}
            put_json(files, name, result)


def manifest_changed(bundle: Path, **changes: object) -> Path:
    """``bundle``'s manifest with members replaced (a dict merged into the member it changes)
    and its content digest sealed again, in place: a forger's quick reseal."""
    value = json.loads((bundle / "manifest.json").read_bytes())
    for key, change in changes.items():
        value[key] = value[key] | change if isinstance(change, dict) else change
    value["content_digest"] = content_digest(value)
    (bundle / "manifest.json").write_bytes(canonical_bytes(value))
    return bundle


def audit_process(
    argv: Sequence[str | bytes], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, from the project's tree: what a user sees, a
    traceback included."""
    return subprocess.run(
        [sys.executable, "-m", "audit", *argv],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
        check=False,
    )
