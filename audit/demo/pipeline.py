"""The embedded default: build the example bundles, verify them, and show a tampered copy fail."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from audit._archive import pack
from audit.demo.examples import (
    EXAMPLES_DIR,
    build_example,
    build_upstream,
    example_runs,
    expected_digests,
    remove_bundle_dir,
)
from audit.demo.reference_endpoint import Behaviour, serve
from audit.run import RunRequest, run_qualification
from bundle_schema.layout import blob_path
from pins import DEMO, PinSetSource, load_builtin, pin_set_source
from verify import open_source, parse_manifest, render_verdict, verify_bundle

__all__ = ["SCENARIOS", "DemoRow", "run_demo", "run_pipeline", "summary_table"]

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


def summary_table(rows: list[DemoRow]) -> Table:
    """The demo's summary, one row a bundle, that reads at 80 columns: the run's name whole
    (never cut, so that every row stays distinguishable), its verdict's axes and its checks
    one a line."""
    table = Table(
        title="example bundles, verified and replayed from their raw evidence",
        title_justify="left",
    )
    longest = max((len(row.name) for row in rows), default=3)
    table.add_column("run", no_wrap=True, min_width=longest)
    table.add_column("verdict", no_wrap=True)
    table.add_column("checks", no_wrap=True)

    def ok(held: bool, good: str = "ok", bad: str = "FAILED") -> str:
        return f"[green]{good}[/]" if held else f"[red]{bad}[/]"

    for row in rows:
        table.add_row(
            row.name,
            f"{row.outcome}\n{row.validity}\n{row.decision}\n"
            + ("rankable" if row.rankable else "not rankable"),
            f"claims {ok(row.claims_match, 'match', 'DIFFER')}\n"
            f"directory {ok(row.directory_ok)}\ntar {ok(row.tar_ok)}",
        )
    return table


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
        verdict = verify_bundle(target).verdict
        tar = out / f"{run.name}.tar"
        pack(target, tar)
        tar_verdict = verify_bundle(tar).verdict
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
    console.print(summary_table(rows))
    for row in rows:
        drift = "" if row.expected in (None, row.digest) else " [red](differs from expected)[/]"
        console.print(f"{row.name}{drift}", soft_wrap=True)
        console.print(f"  {row.digest}", soft_wrap=True)  # whole, on a line of its own
        console.print(f"  bundle {out / row.name}  tar {out / row.name}.tar", soft_wrap=True)

    tampered = out / "tampered-copy"
    source = next((r for r in rows if r.name == TAMPERED), rows[0])
    entry = _tamper_copy(out / source.name, tampered)
    caught = verify_bundle(tampered).verdict
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


@dataclass(frozen=True)
class Scenario:
    """A way the reference deployment or a reference harness misbehaves, and the verdict seed 000
    prescribes for it."""

    behaviour: Behaviour
    env: Mapping[str, str]
    expected: tuple[str, str]
    """(outcome, result_validity)."""
    hermes_inactivity_s: float | None = None
    """A shorter per-task inactivity limit than the pin set's, for a demo that cannot wait
    300 s: the run is made and judged under the demo's pin set with only that number changed
    (so it names a pin set of its own digest and is never ranked)."""

    def pins(self) -> PinSetSource:
        """The pin set this scenario runs and is judged under."""
        pins = load_builtin(DEMO)
        if self.hermes_inactivity_s is None:
            return pins
        data = dict(pins.data)
        data["hermes"] = dict(data["hermes"]) | {"inactivity_s": self.hermes_inactivity_s}
        return pin_set_source(data, f"{pins.id} (demo)")


SCENARIOS: Mapping[str, Scenario] = {
    "well-behaved": Scenario(Behaviour(), {}, ("QUALIFIED", "VALID")),
    "truncation": Scenario(Behaviour(verbose=True), {}, ("NOT_QUALIFIED", "VALID")),
    "non-local": Scenario(
        Behaviour(), {"BENCHLOCAL_PHONE_HOME": "93.184.216.34:443"},
        ("INFRA_ERROR", "INFRA_FAILURE"),
    ),
    "redirect": Scenario(
        Behaviour(redirect="http://10.20.30.40/v1/chat/completions"), {},
        ("INFRA_ERROR", "INFRA_FAILURE"),
    ),
    "reasoning": Scenario(Behaviour(reasoning=True), {}, ("NOT_QUALIFIED", "VALID")),
    "quarantine": Scenario(
        Behaviour(), {"SPARK_QUARANTINE": "golden replay drifted between repeats"},
        ("INFRA_ERROR", "QUARANTINED"),
    ),
    "hang": Scenario(
        Behaviour(), {"HERMES_HANG": "1.5", "HERMES_INACTIVITY_LIMIT": "1"},
        ("NOT_QUALIFIED", "VALID"), hermes_inactivity_s=1.0,
    ),
    "stray-change": Scenario(Behaviour(), {"HERMES_STRAY": "setup.py"}, ("NOT_QUALIFIED", "VALID")),
    "fallback": Scenario(
        Behaviour(served_as="other-model-7b"), {}, ("INFRA_ERROR", "INFRA_FAILURE")
    ),
}  # fmt: skip
"""The demo's scenarios by name: the well-behaved run and each misbehaviour."""

DEMO_DIGEST = "sha256:" + hashlib.sha256(b"evidence-audit reference model").hexdigest()
"""The reference model's declared digest (it has no weights file)."""


def run_pipeline(out: Path, console: Console, scenario: str = "well-behaved",
                 examples: Path = EXAMPLES_DIR) -> bool:  # fmt: skip
    """Run the whole recording pipeline against the reference endpoint and verify the bundle.

    Writes ``out/run-<scenario>/`` (replacing earlier demo output there). Returns True when the
    verdict is the one seed 000 prescribes for the scenario and the claims match.
    """
    chosen = SCENARIOS[scenario]
    pins = chosen.pins()
    target = out / f"run-{scenario}"
    remove_bundle_dir(target)
    with tempfile.TemporaryDirectory(prefix="audit-demo-") as work:
        mirrors = {}
        for name in pins.pins.upstreams:
            build_upstream(examples / "upstreams" / name, Path(work) / name)
            mirrors[name] = Path(work) / name
        with serve(chosen.behaviour) as endpoint:
            console.print(f"[bold]audit run[/] against the reference endpoint ({scenario})")
            request = RunRequest(
                endpoint=endpoint.url, pins=pins, profile="full", out=target,
                model_digest=DEMO_DIGEST, mirrors=mirrors, harness_env=dict(chosen.env),
                run_id=f"demo-{scenario}",
            )  # fmt: skip
            digest = run_qualification(request, lambda step: console.print(f"  [dim]{step}[/]"))
    verdict = verify_bundle(target, pins=pins).verdict
    render_verdict(verdict, console, str(target))
    got = (verdict.outcome, verdict.result_validity)
    held = got == chosen.expected and verdict.claims.match and verdict.bundle_digest == digest
    rule = pins.pins.scoring_generation
    mark = f"[green]as {rule} prescribes[/]" if held else f"[red]expected {chosen.expected}[/]"
    console.print(f"scenario {scenario}: {got[0]} / {got[1]}: {mark}", soft_wrap=True)
    return held
