"""Small bundles made by the project's own writer, for tests and benchmarks."""

from __future__ import annotations

import copy
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from audit import BundleWriter
from bundle_schema.models import (
    Claims,
    ComponentRef,
    ComponentResult,
    ModelIdentity,
    PinSetRef,
    RunnerInfo,
)
from pins import DEMO, PinSetSource, load_builtin, pin_set_source

COMPONENT_RESULT = "application/vnd.evidence-audit.component-result+json"
DIGEST = "sha256:" + "ab" * 32


def write_small_bundle(
    root: Path,
    extra: Mapping[str, bytes] | Iterable[tuple[str, bytes]] = (),
    *,
    media_type: str = "text/plain; charset=utf-8",
    durable: bool = True,
    store: Path | None = None,
    **changes: Any,
) -> str:
    """A small valid bundle: one component result, its raw output, and ``extra`` blobs.

    ``extra`` maps logical names to bytes, or yields (name, bytes) pairs so that a benchmark can
    stream a large bundle without holding it in memory; ``store`` shares blobs by hard links
    (see ``audit run --store``); ``changes`` override seal arguments.
    """
    writer = BundleWriter(root, durable=durable, store=store)
    writer.add_bytes("raw/output.json", b'{"score":1}', "application/json")
    writer.add_record(
        "components/coding/result.json",
        ComponentResult(
            schema_version=1,
            component="coding",
            status="COMPLETED",
            raw_outputs=("raw/output.json",),
            metrics={"score": 1},
        ),
        COMPONENT_RESULT,
    )
    for name, data in extra.items() if isinstance(extra, Mapping) else extra:
        writer.add_bytes(name, data, media_type)
    return writer.seal(**seal_arguments(**changes))


def bundles_sharing_a_blob(
    folder: Path, count: int = 2, size: int = 1 << 16, *, durable: bool = True
) -> tuple[list[Path], Path]:
    """``count`` small bundles ``folder/run-N`` linking one random blob of ``size`` bytes
    from the store ``folder/store``; returns them and the store's file of that blob."""
    store = folder / "store"
    shared = os.urandom(size)
    paths = []
    for number in range(count):
        path = folder / f"run-{number}"
        write_small_bundle(
            path, {"data/shared.bin": shared}, store=store, durable=durable, run_id=f"run-{number}"
        )
        paths.append(path)
    digest = hashlib.sha256(shared).hexdigest()
    return paths, store / "blobs" / "sha256" / digest


def seal_arguments(**changes: Any) -> dict[str, Any]:
    """Keyword arguments for BundleWriter.seal of a small smoke run, with ``changes`` applied."""
    arguments: dict[str, Any] = {
        "run_id": "run-1",
        "created_at": "2026-11-01T00:00:00Z",
        "runner": RunnerInfo(name="tests", version="1"),
        "scoring_generation": "gx10-qualification-v5",
        "profile": "smoke",
        "pin_set": PinSetRef(id="gx10-reference-v5", digest=DIGEST),
        "model": ModelIdentity(runtime_model_id="m", digest=DIGEST, digest_source="declared"),
        "upstreams": (),
        "components": (ComponentRef(name="coding", result="components/coding/result.json"),),
        "claims": Claims(
            outcome="INFRA_ERROR",
            result_validity="INFRA_FAILURE",
            profile_decision="NOT_ASSESSED",
            rankable=False,
            aggregate_score=None,
            executed_weight=0,
            component_scores={},
        ),
    }
    return arguments | changes


def sparkbench_pins(**fields: Any) -> PinSetSource:
    """The demo's pin set with fields of its SparkBench harness block set (``requirements``,
    ``env``, ``data``, ``command``): a deployment's harness settings on the reference run."""
    data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    data["harnesses"]["sparkbench"].update(fields)
    return pin_set_source(data, "test pins")


def smoke_run(out: Path, mirrors: Mapping[str, Path], pins: PinSetSource, **changes: Any) -> Path:
    """`audit run` of the smoke profile under ``pins`` against the reference endpoint, into
    ``out`` (``changes``: more fields of the request); the bundle's path."""
    from audit.demo.pipeline import DEMO_DIGEST  # noqa: PLC0415 - loads the runner
    from audit.demo.reference_endpoint import serve  # noqa: PLC0415
    from audit.run import RunRequest, run_qualification  # noqa: PLC0415

    with serve() as endpoint:
        run_qualification(
            RunRequest(
                endpoint=endpoint.url, pins=pins, profile="smoke", out=out,
                model_digest=DEMO_DIGEST, mirrors=mirrors, **changes,
            )
        )  # fmt: skip
    return out


def bare_venv(venv: Path) -> tuple[Path, Path]:
    """A real venv at ``venv`` without pip (nothing installed in it): its python and the
    directory its pure-Python distributions go to."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return python, Path(site)
