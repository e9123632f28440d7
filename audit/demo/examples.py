"""Build example bundles from the example evidence committed under ``examples/``.

Each run directory holds a ``run.toml`` (run metadata and the runner's claims) and an
``evidence/`` tree whose relative paths become the logical evidence names. Each upstream harness
named by a run is made into a real git repository from ``examples/upstreams/<name>`` with a fixed
author, committer and date, so its commit id is the same on every machine and equals the commit
in the pin set; ``git ls-tree -r`` of that commit is recorded as evidence.

The same evidence always gives the same bundle bytes; ``examples/expected-digests.json`` holds
the bundle digests, and a test fails when the builder or the evidence drifts from them.
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from audit._store import BundleWriter
from audit.checkouts import checkout_evidence, describe
from bundle_schema import RECORD_MEDIA_TYPES, canonical_bytes, loads_strict
from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    Claims,
    ComponentRef,
    ModelIdentity,
    PinSetRef,
    RunnerInfo,
    UpstreamCheckout,
)
from bundle_schema.roles import TRACE_MEDIA_TYPE
from pins import PinSetSource, load_builtin
from verify import VERSION

__all__ = [
    "EXAMPLES_DIR",
    "ExampleRun",
    "build_example",
    "build_upstream",
    "example_runs",
    "expected_digests",
]

_PACKAGED = Path(__file__).resolve().parent / "_examples"
EXAMPLES_DIR = _PACKAGED if _PACKAGED.is_dir() else _PACKAGED.parents[2] / "examples"
"""The example evidence: ``audit/demo/_examples`` in an installed wheel, else the source tree's
``examples/`` (the wheel maps one to the other; ADR 0018)."""

_AUTHOR = git.Actor("evidence-audit examples", "examples@evidence-audit.invalid")
_DATE = "2026-01-01T00:00:00+0000"
_MEDIA_BY_NAME = {
    "transport/exchanges.jsonl": "application/vnd.evidence-audit.transport-exchange+jsonl",
    "network/socket-ledger.jsonl": "application/vnd.evidence-audit.socket-ledger+jsonl",
    "run/config.json": "application/vnd.evidence-audit.run-config+json",
    "probes/direct-response.json": "application/vnd.evidence-audit.direct-probe+json",
    "probes/tool-call.json": "application/vnd.evidence-audit.direct-probe+json",
}
_MEDIA_BY_LEAF = {
    "result.json": "application/vnd.evidence-audit.component-result+json",
    "quarantine.json": "application/vnd.evidence-audit.quarantine-marker+json",
    "spark-quality.json": "application/vnd.evidence-audit.spark-quality+json",
    "spark-repeat.json": "application/vnd.evidence-audit.spark-repeat+json",
    "tasks.jsonl": "application/vnd.evidence-audit.hermes-task+jsonl",
    "benchlocal-packs.json": "application/vnd.evidence-audit.benchlocal-packs+json",
    "infermark-c1.json": "application/vnd.evidence-audit.infermark-streaming+json",
}
_MEDIA_BY_SUFFIX = {
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".log": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class ExampleRun:
    """One example run: its name and directory."""

    name: str
    path: Path


def example_runs(examples: Path = EXAMPLES_DIR) -> list[ExampleRun]:
    """The example runs, sorted by name.

    Raises:
        InvalidInput: there is no ``runs/`` directory under ``examples``.
    """
    runs = examples / "runs"
    if not runs.is_dir():
        raise InvalidInput(f"{runs}: no example runs here (run from a source checkout)")
    return [ExampleRun(p.name, p) for p in sorted(runs.iterdir()) if (p / "run.toml").is_file()]


def expected_digests(examples: Path = EXAMPLES_DIR) -> dict[str, str]:
    """The committed bundle digest of every example run, by name."""
    data = loads_strict((examples / "expected-digests.json").read_bytes(), "expected-digests.json")
    return {str(k): str(v) for k, v in data.items()}


def media_type(logical: str) -> str:
    """The media type the examples give an evidence file, from its logical name."""
    if logical in _MEDIA_BY_NAME:
        return _MEDIA_BY_NAME[logical]
    if logical.startswith("network/strace/"):  # the raw traces the ledger came from (ADR 0017)
        return TRACE_MEDIA_TYPE
    leaf = logical.rsplit("/", 1)[-1]
    raw = logical.split("/")[2:3] == ["raw"]  # a harness's own files: opaque evidence
    if logical.startswith("components/") and leaf in _MEDIA_BY_LEAF and not raw:
        return _MEDIA_BY_LEAF[leaf]
    return _MEDIA_BY_SUFFIX.get(Path(leaf).suffix, "application/octet-stream")


def _canonical_record(data: bytes, media: str, where: str) -> bytes:
    kind = RECORD_MEDIA_TYPES.get(media)
    if kind is None:
        return data
    if kind.lines:
        lines = [line for line in data.split(b"\n") if line.strip()]
        return b"".join(canonical_bytes(loads_strict(line, where)) + b"\n" for line in lines)
    return canonical_bytes(loads_strict(data, where))


def build_upstream(source: Path, work: Path) -> tuple[str, bytes]:
    """Make a git repository of ``source`` with one deterministic commit.

    Returns:
        The commit id and the ``git ls-tree -r --full-tree`` listing of it (the checkout's
        whole evidence is :func:`audit.checkouts.describe` of the repository at ``work``).
    """
    with git.Repo.init(work, initial_branch="main") as repo:  # closes git's helper processes
        # pip compiles an installed wheel's .py files: __pycache__ is no file of the harness
        files = (p.relative_to(source) for p in source.rglob("*") if p.is_file())
        paths = sorted(f.as_posix() for f in files if "__pycache__" not in f.parts)
        for relative in paths:
            target = work / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((source / relative).read_bytes())
            target.chmod(0o644)
        repo.index.add(paths)
        commit = repo.index.commit(
            "reference harness",
            author=_AUTHOR,
            committer=_AUTHOR,
            author_date=_DATE,
            commit_date=_DATE,
        )
        if repo.is_dirty(untracked_files=True):  # pragma: no cover - every file was committed
            raise InvalidInput(f"{work}: checkout is not clean after commit")
        listing = repo.git.ls_tree("-r", "--full-tree", commit.hexsha) + "\n"
    return commit.hexsha, listing.encode()


def _str(meta: Mapping[str, Any], key: str, where: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: {key!r} must be a string")
    return value


def build_example(
    run: ExampleRun,
    out: Path,
    work: Path,
    examples: Path = EXAMPLES_DIR,
    pins: PinSetSource | None = None,
) -> str:
    """Build one example bundle into ``out`` (new or empty) and return its digest.

    Args:
        run: the example run.
        out: the bundle directory to write.
        work: a scratch directory for the upstream git repositories.
        examples: the examples tree (for ``upstreams/``).
        pins: the pin set the run is recorded under (default: the shipped one its ``run.toml``
            names); its upstreams' repositories are the ones recorded.

    Raises:
        InvalidInput: the run's metadata is malformed or its upstreams drift from the pin set.
    """
    where = f"{run.path}/run.toml"
    try:
        meta = tomllib.loads((run.path / "run.toml").read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    pin_set = pins if pins is not None else load_builtin(_str(meta, "pin_set", where))
    writer = BundleWriter(out)
    upstreams = []
    for name in meta.get("upstreams", []):
        commit, _listing = build_upstream(examples / "upstreams" / name, work / name)
        pinned = pin_set.data["upstreams"][name]
        if commit != pinned["commit"]:
            raise InvalidInput(
                f"{examples}/upstreams/{name}: builds commit {commit}, but pin set "
                f"{pin_set.id} pins {pinned['commit']}; update the pin set"
            )
        tree = f"upstreams/{name}/tree.txt"
        with git.Repo(work / name) as repo:  # closes git's persistent helper processes
            done = describe(name, pinned["repository"], pinned["repository"], repo)
        for logical, (data, media) in sorted(checkout_evidence(done).items()):
            writer.add_bytes(logical, data, media)
        upstreams.append(
            UpstreamCheckout(
                name=name, repository=pinned["repository"], commit=commit, clean=True, tree=tree
            )
        )
    evidence = run.path / "evidence"
    components = {}
    for path in sorted(p for p in evidence.rglob("*") if p.is_file()):
        logical = path.relative_to(evidence).as_posix()
        media = media_type(logical)
        writer.add_bytes(logical, _canonical_record(path.read_bytes(), media, logical), media)
        parts = logical.split("/")
        if len(parts) == 3 and parts[0] == "components" and parts[2] == "result.json":
            components[parts[1]] = logical
    profile = _str(meta, "profile", where)
    order = list(pin_set.data["profiles"][profile]["components"])
    claims = dict(meta["claims"])
    claims.setdefault("aggregate_score", None)
    return writer.seal(
        run_id=_str(meta, "run_id", where),
        created_at=_str(meta, "created_at", where),
        runner=RunnerInfo(name="evidence-audit", version=VERSION),
        scoring_generation=pin_set.data["scoring_generation"],
        profile=profile,
        pin_set=PinSetRef(id=pin_set.id, digest=pin_set.digest),
        model=ModelIdentity.model_validate(meta["model"]),
        upstreams=upstreams,
        components=[
            ComponentRef(name=name, result=components[name])
            for name in sorted(components, key=lambda n: (order.index(n) if n in order else 99, n))
        ],
        claims=Claims.model_validate(claims),
    )


def remove_bundle_dir(path: Path) -> None:
    """Remove a directory only if it looks like a bundle this tool wrote.

    Raises:
        InvalidInput: the path holds something else; it is left alone.
    """
    if not path.exists():
        return
    entries = {p.name for p in path.iterdir()} if path.is_dir() and not path.is_symlink() else None
    if entries is None or not entries <= {"manifest.json", "blobs", "signatures"}:
        raise InvalidInput(f"{path}: exists and is not a bundle directory; not replacing it")
    shutil.rmtree(path)
