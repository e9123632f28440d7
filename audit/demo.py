"""The embedded default: build the example bundles, verify them, and show a tampered copy fail."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from audit._archive import pack
from audit.examples import (
    EXAMPLES_DIR,
    build_example,
    example_runs,
    expected_digests,
    remove_bundle_dir,
)
from bundle_schema.layout import blob_path
from verify import parse_manifest, verify_bundle
from verify._source import open_source

__all__ = ["DemoRow", "run_demo"]

TAMPERED = "gx10-full-qualified"
"""The example whose copy gets one bit flipped."""


@dataclass(frozen=True)
class DemoRow:
    """One example bundle as the demo built and verified it."""

    name: str
    outcome: str
    validity: str
    decision: str
    rankable: bool
    claims_match: bool
    digest: str
    expected: str | None
    directory_ok: bool
    tar_ok: bool


def _tamper_copy(bundle: Path, target: Path) -> str:
    """Copy a bundle and flip one byte of its transport log; return the entry's name."""
    remove_bundle_dir(target)
    shutil.copytree(bundle, target)
    manifest = parse_manifest(open_source(target).manifest_bytes())
    name = "transport/exchanges.jsonl"
    blob = target / blob_path(manifest.model.evidence[name].digest)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    return name


def run_demo(out: Path, console: Console, examples: Path = EXAMPLES_DIR) -> bool:
    """Build, pack and verify every example bundle under ``out``; return True when all hold.

    Side effects: writes ``out/<run>/`` and ``out/<run>.tar`` for each example run and
    ``out/tampered-copy/``, replacing earlier demo output there (and nothing else).
    """
    out.mkdir(parents=True, exist_ok=True)
    expected = expected_digests(examples)
    rows = []
    for run in example_runs(examples):
        target = out / run.name
        remove_bundle_dir(target)
        with tempfile.TemporaryDirectory(prefix="audit-demo-") as work:
            digest = build_example(run, target, Path(work), examples)
        verdict = verify_bundle(target)
        tar = out / f"{run.name}.tar"
        pack(target, tar)
        tar_verdict = verify_bundle(tar)
        rows.append(
            DemoRow(
                name=run.name,
                outcome=verdict.outcome,
                validity=verdict.result_validity,
                decision=verdict.profile_decision,
                rankable=verdict.rankable,
                claims_match=verdict.claims.match,
                digest=digest,
                expected=expected.get(run.name),
                directory_ok=verdict.integrity.status == "ok",
                tar_ok=tar_verdict.integrity.status == "ok" and tar_verdict.bundle_digest == digest,
            )
        )
    table = Table(title="example bundles, verified and replayed from their raw evidence")
    for column in (
        "run",
        "outcome",
        "validity",
        "profile",
        "rankable",
        "claims",
        "integrity",
        "tar",
    ):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row.name,
            row.outcome,
            row.validity,
            row.decision,
            "yes" if row.rankable else "no",
            "match" if row.claims_match else "[red]DIFFER[/]",
            "[green]ok[/]" if row.directory_ok else "[red]FAILED[/]",
            "[green]ok[/]" if row.tar_ok else "[red]FAILED[/]",
        )
    console.print(table)
    for row in rows:
        drift = "" if row.expected in (None, row.digest) else " [red](differs from expected)[/]"
        console.print(f"{row.name}: {row.digest}{drift}", soft_wrap=True)
        console.print(f"  bundle {out / row.name}  tar {out / row.name}.tar", soft_wrap=True)

    tampered = out / "tampered-copy"
    source = next((r for r in rows if r.name == TAMPERED), rows[0])
    entry = _tamper_copy(out / source.name, tampered)
    caught = verify_bundle(tampered)
    detected = caught.integrity.status == "failed" and any(
        f.entry == entry for f in caught.integrity.findings
    )
    first = caught.integrity.findings[0].message if caught.integrity.findings else "nothing found"
    console.print(
        f"tampered copy of {source.name} (one bit flipped in {entry!r}): "
        + ("[green]caught[/]: " if detected else "[red]NOT caught[/]: ")
        + first,
        soft_wrap=True,
    )
    return detected and all(
        r.directory_ok and r.tar_ok and r.claims_match and r.expected in (None, r.digest)
        for r in rows
    )
