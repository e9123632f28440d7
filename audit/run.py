"""``audit run``: record a qualification run against a local endpoint into a sealed bundle.

The pipeline, in order: observer in front of the endpoint; model identity; pinned checkouts;
the direct probes; each selected harness in the sandbox, its outputs parsed into records; the
streaming performance measurement; then the bundle: raw evidence first, the claims next (the
verifier's own replay of that evidence, so the two cannot drift), the manifest last. Run-owned
processes are gone before sealing (each sandbox's process group is killed when its command
ends); scratch files (checkouts, sockets, outputs) are removed after sealing.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import git
from pydantic import BaseModel

from audit._faults import point
from audit._store import BundleWriter, temporary_file
from audit.checkouts import Checkout, CheckoutFailed, checkout, checkout_evidence, describe
from audit.components import measure_streaming, run_direct_probes
from audit.environments import (
    ENVIRONMENT_MEDIA_TYPE,
    EnvironmentUnavailable,
    data_listing,
    describe_python,
    unmet_dependencies,
)
from audit.identity import resolve_identity
from audit.observer import REFERENCE_HEADER, Observer, checked_endpoint, observe
from audit.parsers import Parsed, ParseFailed, collect_outputs, parse_files, shown_output
from audit.sandbox import SandboxLimits, SandboxResult, SandboxUnavailable, run_sandboxed
from bundle_schema import KINDS, canonical_bytes
from bundle_schema.errors import InvalidInput
from bundle_schema.layout import MANIFEST
from bundle_schema.models import (
    IDENTIFIER_PATTERN,
    BfclShard,
    Claims,
    ComponentName,
    ComponentRef,
    ComponentResult,
    DirectProbe,
    Gx10Evidence,
    HermesTask,
    LedgerRecord,
    ModelIdentity,
    ObserverRecord,
    PinSetRef,
    QuarantineMarker,
    ReasoningPolicy,
    RunConfig,
    RunnerInfo,
    SocketLedgerEntry,
    UpstreamCheckout,
)
from bundle_schema.roles import DATA_LISTING_MEDIA_TYPE, place
from pins import (
    CURRENT,
    RUNNER_VARIABLES,
    Harness,
    PinSetSource,
    Placeholders,
    missing_requirements,
    other_files,
)
from verify import VERSION
from verify.evidence import EvidenceRecords
from verify.gx10 import replay
from verify.harness_outputs import (
    OutputsUnreadable,
    escaped_path,
    gate_place,
    read_gate_outputs,
    read_markers,
)

__all__ = ["RunRequest", "default_policy", "run_qualification"]

SANDBOX_PORT = 18080
"""The model's port on loopback inside the sandbox (forwarded to the observer)."""
STREAMING_PROMPTS = (
    "Describe streaming responses in one sentence.",
    "Explain what a token is.",
    "Name three uses of a local language model.",
    "Summarize the purpose of a benchmark.",
    "What does time to first token measure?",
)
_OWN = ("outputs", "home", "tmp")
"""A harness's own folders in the run's scratch directory, one per harness in each: its
outputs, its home and its ``/tmp`` (ADR 0047)."""
_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class RunRequest:
    """Everything ``audit run`` was asked to do."""

    endpoint: str
    pins: PinSetSource
    profile: str
    out: Path
    model: str | None = None
    model_digest: str | None = None
    weights: Path | None = None
    track: Literal["primary", "controlled"] = "primary"
    policy: ReasoningPolicy = field(default_factory=lambda: default_policy("off"))
    mirrors: Mapping[str, Path] = field(default_factory=dict)
    harness_env: Mapping[str, str] = field(default_factory=dict)
    """Variables every harness is given (``--env``), besides its pinned ``env``."""
    harness_python: Mapping[str, Path | str] = field(default_factory=dict)
    """The interpreter each harness runs with, by upstream (default: the runner's own)."""
    data: Mapping[str, Path] = field(default_factory=dict)
    """The data directories the harnesses read, by the name the pin set pins them under."""
    run_id: str | None = None
    store: Path | None = None
    """A blob store shared by runs: each blob written once, hard-linked into the bundle."""
    streaming_prompts: Sequence[str] = STREAMING_PROMPTS


@dataclass(frozen=True)
class _Clock:
    """A run's times: one reading of the wall clock when the run starts, then the monotonic
    clock's seconds since. A wall clock stepped back mid-run (NTP, a resumed VM) would give a
    later harness a window inside an earlier one's, which the verifier refuses."""

    wall: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    monotonic: float = field(default_factory=time.monotonic)

    def now(self) -> str:
        moment = self.wall + dt.timedelta(seconds=time.monotonic() - self.monotonic)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Recorder:
    """The evidence of a run as it is gathered, before it is written."""

    files: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    results: dict[ComponentName, ComponentResult] = field(default_factory=dict)
    ledger: list[SocketLedgerEntry] = field(default_factory=list)
    checkouts: dict[str, Checkout] = field(default_factory=dict)
    checkout_failures: dict[str, str] = field(default_factory=dict)
    probes: tuple[DirectProbe, ...] = ()
    read: EvidenceRecords = field(default_factory=EvidenceRecords)
    """The records the replay reads, taken at their places as the verifier takes them."""
    clock: _Clock = field(default_factory=_Clock)
    """The run's clock, started with the run."""

    def record(self, name: str, kind: str, value: BaseModel | tuple[BaseModel, ...]) -> None:
        lines = KINDS[kind].lines
        values = value if isinstance(value, tuple) else (value,)
        data = b"".join(canonical_bytes(v.model_dump(mode="json")) + (b"\n" if lines else b"")
                        for v in values)  # fmt: skip
        media = KINDS[kind].media_type
        assert media is not None  # noqa: S101 - every kind recorded here is an evidence record
        self.files[name] = (data, media)
        self.read.take(place(name, media), values)

    def result(self, component: ComponentName, status: str, **fields: Any) -> None:
        self.results[component] = ComponentResult.model_validate(
            {"schema_version": 1, "component": component, "status": status, **fields}
        )


def _environment(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """A harness's environment; ``home`` its home directory (its own: no harness sees
    another's, :meth:`_Harnesses._own`)."""
    return {
        "LANG": "C.UTF-8",
        **extra,
        # the sandbox's own, whatever else is given (pins and --env refuse them)
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",  # a harness must not dirty its checkout
    }


@dataclass(frozen=True)
class _Failed:
    """Why a harness did not complete, and the result fields it has (times, raw outputs)."""

    reason: str
    common: dict[str, Any] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    """The outputs it wrote before it failed (a non-zero exit, a limit): a quarantine marker
    among them still counts."""


@dataclass(frozen=True)
class _Harnesses:
    """Runs the pin set's harnesses of one run, each in a sandbox of its own."""

    request: RunRequest
    recorder: _Recorder
    observer: Observer
    model: str
    scratch: Path
    refused: list[str] = field(default_factory=list)
    """Why raw output files of the harness being recorded could not be kept."""

    def fail(self, components: Sequence[ComponentName], reason: str, **fields: Any) -> None:
        for component in components:
            self.recorder.result(component, "FAILED", reason=reason[:4096], **fields)

    def run(self, upstream: str, components: Sequence[ComponentName]) -> None:
        """Run one upstream harness in the sandbox and record what it produced."""
        executed = self._execute(upstream, components, f"components/{components[0]}/raw/")
        harness = self.request.pins.pins.harnesses[upstream]
        if isinstance(executed, _Failed):
            self._marked(harness, components, executed)
            return
        files, common = executed
        try:
            parsed = parse_files(harness.parser, files, components)
        except ParseFailed as exc:  # a quarantine marker that reads alone still counts
            self._marked(harness, components, _Failed(f"{upstream}: {exc}", common, files))
            return
        self._record(components, parsed, common)

    def _marked(
        self, harness: Harness, components: Sequence[ComponentName], failed: _Failed
    ) -> None:
        """A harness that failed (a non-zero exit, a limit, outputs that do not read) after
        its outputs were written: a quarantine marker among them that reads is the upstream's
        word and authoritative (seed 000), so each component it marks is QUARANTINED with the
        marker recorded, as when the harness completes; the others are FAILED with the reason,
        and no other record is kept."""
        quarantines = read_markers(harness.parser, failed.files, components)
        for component in components:
            marker = quarantines.get(component)
            if marker is None:
                self.fail([component], failed.reason, **failed.common)
            else:
                self._quarantine(component, marker, failed.common, failed.reason)

    def _quarantine(
        self,
        component: ComponentName,
        marker: QuarantineMarker,
        common: dict[str, Any],
        unfinished: str | None = None,
    ) -> None:
        """``component`` QUARANTINED by its upstream's ``marker``, the marker recorded (and
        why its harness did not complete, ``unfinished``, in the reason)."""
        name = f"components/{component}/quarantine.json"
        self.recorder.record(name, "quarantine-marker", marker)
        reason = "upstream quarantine marker"
        if unfinished:
            reason = f"{reason}; the harness did not complete: {unfinished}"[:4096]
        self.recorder.result(
            component, "QUARANTINED", quarantine=name, reason=reason, **common
        )  # fmt: skip

    def run_gate(self, upstream: str, component: ComponentName) -> None:
        """Run a supplementary harness beside ``component``'s upstream, as its gate (ADR 0022):
        its raw outputs kept at the gate's place, its reader's tallies recorded there, its
        figures added to the component's metrics. Whatever keeps its outputs from reading (it
        did not run, failed, or wrote what does not aggregate) fails the component, with the
        reason: infrastructure, never a score."""
        before = self.recorder.results[component]
        place = gate_place(component, upstream)
        executed = self._execute(upstream, [component], place + "raw/")
        kept = executed.common.get("raw_outputs", []) if isinstance(executed, _Failed) else []
        if not isinstance(executed, _Failed):
            files, common = executed
            kept = common["raw_outputs"]
            parser = self.request.pins.pins.harnesses[upstream].parser
            try:
                parsed = read_gate_outputs(parser, files, component, upstream)
            except OutputsUnreadable as exc:
                executed = _Failed(f"{upstream}: {exc}", common)
        metrics: dict[str, float | int | None] = dict(before.metrics)
        fields = {
            "started_at": before.started_at, "ended_at": self.recorder.clock.now(),
            "raw_outputs": [*before.raw_outputs, *kept], "metrics": metrics,
        }  # fmt: skip
        if isinstance(executed, _Failed):
            reason = f"its gate {upstream} failed: {executed.reason}"
            self.recorder.result(component, "FAILED", reason=reason[:4096], **fields)
            return
        for name, (kind, value) in parsed.records.items():
            self.recorder.record(name, kind, value)
        metrics |= parsed.metrics.get(component, {})
        self.recorder.result(component, "COMPLETED", **fields)

    def _execute(
        self, upstream: str, components: Sequence[ComponentName], prefix: str
    ) -> tuple[dict[str, bytes], dict[str, Any]] | _Failed:
        """Run one harness in the sandbox, its logs and raw outputs kept (under ``prefix``):
        its outputs as kept (:func:`audit.parsers.collect_outputs`) and the result fields, or
        why it did not complete."""
        recorder = self.recorder
        work = recorder.checkouts.get(upstream)
        if work is None:
            return _Failed(
                f"{upstream}: {recorder.checkout_failures.get(upstream, 'not checked out')}"
            )
        out, home, tmp, others = self._own(upstream)
        made = out.stat()
        harness = self.request.pins.pins.harnesses[upstream]
        prepared = self._prepared(upstream, harness)
        if isinstance(prepared, _Failed):
            return prepared
        python, data, read = prepared
        hermes = self.request.pins.pins.hermes
        selected = hermes.tasks if hermes is not None and hermes.tasks is not None else ()
        filled = Placeholders(python=python, endpoint=f"http://127.0.0.1:{SANDBOX_PORT}",
                              model=self.model, out=str(out), tasks=",".join(selected))  # fmt: skip
        values = {**filled._asdict(), "data": data}
        self.observer.component = components[0]
        checkout_dir = self.scratch / "checkouts" / upstream
        # its own run: the interpreter is asked before, the outputs read after
        started = recorder.clock.now()
        try:
            result = run_sandboxed(
                [part.format(**values) for part in harness.command],
                serve=self.observer.serving,
                port=SANDBOX_PORT,
                cwd=checkout_dir / harness.workdir,
                limits=SandboxLimits(float(harness.inactivity_s), float(harness.wall_s)),
                env=_environment(home, self._variables(harness)),
                component=components[0],
                first_seq=len(recorder.ledger),
                active=lambda: self.observer.last_activity,
                hidden=others,
                writable=[checkout_dir, out, home],
                read_only=self._fixed(checkout_dir),
                shown=[*map(Path, read), *map(Path, data.values())],
                tmp=tmp,
            )
        except SandboxUnavailable as exc:
            return _Failed(f"sandbox unavailable: {exc}")
        ended = recorder.clock.now()
        recorder.ledger += result.ledger
        recorder.files.update(result.evidence())  # the raw trace it came from (ADR 0017)
        with git.Repo(checkout_dir) as repo:  # closes git's persistent helper processes
            recorder.checkouts[upstream] = describe(upstream, work.repository, work.source, repo)
        self.refused.clear()
        files, refusals = collect_outputs(out, (made.st_dev, made.st_ino))
        self.refused.extend(f"{upstream} wrote {refusal}" for refusal in refusals)
        kept = self._keep_outputs(upstream, prefix, result, files)
        # read as kept, under the names the verifier reads them by (escaped_path)
        files = {n.removeprefix(prefix): recorder.files[n][0] for n in kept if n.startswith(prefix)}
        common = {"started_at": started, "ended_at": ended, "raw_outputs": kept}
        if self.refused:  # raw evidence that cannot be kept: the harness's outputs are not whole
            return _Failed("; ".join(self.refused), common, files)
        missing = [name for name in harness.outputs if escaped_path(name) not in files]
        if result.timeout is not None or result.returncode != 0 or missing:
            tail = result.stderr.decode("utf-8", "replace")[-300:]
            why = f"{result.timeout} limit exceeded" if result.timeout else (
                f"exited {result.returncode}: {tail}" if result.returncode else
                f"did not write {', '.join(missing)}")  # fmt: skip
            return _Failed(f"{upstream} {why}", common, files)
        return files, common

    def _own(self, upstream: str) -> tuple[Path, Path, Path, list[Path]]:
        """The harness's output, home and temporary directories, and what it must not see:
        every other upstream's checkout and every other harness's outputs, home and temporary
        directory, each harness's made (empty) before the first runs, so that none can be
        written before its harness runs (ADR 0047)."""
        for name in self.request.pins.pins.harnesses:
            for kind in _OWN:
                (self.scratch / kind / name).mkdir(parents=True, exist_ok=True)
        others = [
            place
            for kind in ("checkouts", *_OWN)
            if (self.scratch / kind).is_dir()
            for place in sorted((self.scratch / kind).iterdir())
            if place.name != upstream and place.is_dir() and not place.is_symlink()
        ]
        out, home, tmp = (self.scratch / kind / upstream for kind in _OWN)
        return out, home, tmp, others

    def _fixed(self, checkout: Path) -> list[Path]:
        """What a harness may not write among its places: the run's scratch directory and the
        folders of its checkouts, outputs and homes (no renaming them to put others in their
        place for a later harness or the runner), and its checkout's ``.git``, where the
        runner runs git after it (a ``core.fsmonitor`` of its own would run as the runner).
        Its own directories in them stay writable (ADR 0047)."""
        places = [self.scratch, *(self.scratch / k for k in (*_OWN, "checkouts"))]
        return [place for place in (*places, checkout / ".git") if place.exists()]

    def _variables(self, harness: Harness) -> dict[str, str]:
        """The variables a harness is given beyond the sandbox's own: ``--env`` and its pinned
        ``env`` (a given value that differs from a pinned one is refused before the run)."""
        return {**self.request.harness_env, **harness.env}

    def _interpreter(
        self, upstream: str, harness: Harness
    ) -> tuple[str, tuple[str, ...]] | _Failed:
        """The harness's interpreter and where it reads from (its prefixes and import paths;
        the sandbox adds its ``PYTHONPATH``'s), its environment kept as evidence; or why it
        cannot be asked, lacks a pinned requirement, or lacks what a pinned distribution
        requires."""
        # absolute (the harness runs in its checkout), its symlinks kept (a venv's python is one)
        python = os.path.abspath(self.request.harness_python.get(upstream, sys.executable))
        try:
            environment = describe_python(
                upstream, python, self._variables(harness),
                read_back=[pin.partition("==")[0] for pin in harness.installed],
            )  # fmt: skip
        except EnvironmentUnavailable as exc:
            return _Failed(f"{upstream}: its interpreter: {exc}")
        self.recorder.files[f"upstreams/{upstream}/environment.json"] = (
            environment.evidence(), ENVIRONMENT_MEDIA_TYPE
        )  # fmt: skip
        lacking = missing_requirements(harness.requirements, environment.distributions)
        if lacking:
            return _Failed(
                f"{upstream}: its interpreter {environment.executable} lacks the pinned "
                f"{', '.join(lacking)} (give one that has them: --harness-python {upstream}=PATH)"
            )
        unmet = unmet_dependencies(harness.requirements, environment, harness.omitted_dependencies)
        if unmet is not None:
            return _Failed(f"{upstream}: {unmet}")
        if other := other_files(harness.installed, environment.installed, "no RECORD"):
            return _Failed(f"{upstream}: its interpreter {environment.executable} {other[0]}")
        return python, environment.paths

    def _prepared(
        self, upstream: str, harness: Harness
    ) -> tuple[str, dict[str, str], tuple[str, ...]] | _Failed:
        """The harness's interpreter and data directories, each kept as evidence, and where
        its interpreter reads from."""
        asked = self._interpreter(upstream, harness)
        if isinstance(asked, _Failed):
            return asked
        data = self._data(upstream, harness)
        return data if isinstance(data, _Failed) else (asked[0], data, asked[1])

    def _data(self, upstream: str, harness: Harness) -> dict[str, str] | _Failed:
        """The harness's data directories by name, each listing kept as evidence; or why one
        was not given, cannot be listed, or is not the one the pin set pins."""
        paths: dict[str, str] = {}
        for name, pinned in sorted(harness.data.items()):
            given = self.request.data.get(name)
            if given is None:
                return _Failed(
                    f"{upstream}: its data directory {name!r} was not given "
                    f"(audit run --data {name}=PATH)"
                )
            where = Path(os.path.abspath(given))
            try:
                listing, digest = data_listing(where)
            except EnvironmentUnavailable as exc:
                return _Failed(f"{upstream}: its data directory {name}: {exc}")
            self.recorder.files[f"upstreams/{upstream}/data/{name}.jsonl"] = (
                listing, DATA_LISTING_MEDIA_TYPE
            )  # fmt: skip
            if digest != pinned:
                return _Failed(
                    f"{upstream}: its data directory {name} ({where}) lists as {digest}, not "
                    f"the pinned {pinned}"
                )
            paths[name] = str(where)
        return paths

    def _keep_outputs(
        self, upstream: str, prefix: str, result: SandboxResult, outputs: Mapping[str, bytes]
    ) -> list[str]:
        """Keep the harness's logs and raw output files (under ``prefix``) as evidence; return
        their names."""
        files = self.recorder.files
        logs = f"logs/{upstream}"
        files[f"{logs}.stdout.txt"] = (result.stdout, _TEXT)
        files[f"{logs}.stderr.txt"] = (result.stderr, _TEXT)
        kept = [f"{logs}.stdout.txt", f"{logs}.stderr.txt"]
        sources: dict[str, str] = {}
        for relative, data in outputs.items():
            name = prefix + escaped_path(relative)
            if len(name) > 256:
                self.refused.append(
                    f"{upstream} wrote {shown_output(relative)}: a name too long to keep as "
                    f"evidence ({len(name)} > 256 characters as {name!r})"
                )
                continue
            if name in sources:
                self.refused.append(
                    f"{upstream} wrote {shown_output(sources[name])} and "
                    f"{shown_output(relative)}, which the bundle names alike ({name!r}); kept "
                    "the first"
                )
                continue
            sources[name] = relative
            files[name] = (data, _JSON if relative.endswith(".json") else _TEXT)
            kept.append(name)
        return kept

    def _record(
        self, components: Sequence[ComponentName], parsed: Parsed, common: dict[str, Any]
    ) -> None:
        recorder = self.recorder
        references = _references(self.observer.exchanges())
        for name, (kind, value) in parsed.records.items():
            recorder.record(name, kind, _with_references(kind, value, references))
        for component in components:
            marker = parsed.quarantines.get(component)
            if marker is None:
                metrics = parsed.metrics.get(component, {})
                recorder.result(component, "COMPLETED", metrics=metrics, **common)
            else:
                self._quarantine(component, marker, common)


def _with_references(
    kind: str, value: BaseModel | tuple[BaseModel, ...], references: Mapping[str, tuple[int, ...]]
) -> BaseModel | tuple[BaseModel, ...]:
    """Hermes task and BFCL shard records with the exchanges they were made from, by the
    reference header (``hermes/<task>``, ``bfcl/<shard_id>``)."""
    if kind == "bfcl-shard" and isinstance(value, BfclShard) and value.shard_id:
        found = references.get(f"bfcl/{value.shard_id}")
        return value.model_copy(update={"exchanges": found}) if found else value
    if kind != "hermes-task" or not isinstance(value, tuple):
        return value
    return tuple(
        task.model_copy(update={"exchanges": references.get(f"hermes/{task.task}", ())})
        for task in value
        if isinstance(task, HermesTask)
    )


def _references(exchanges: Sequence[Any]) -> dict[str, tuple[int, ...]]:
    """Exchange ids by the record a harness named in each request's reference header."""
    found: dict[str, list[int]] = {}
    for exchange in exchanges:
        ref = exchange.request_headers.get(REFERENCE_HEADER)
        if ref:
            found.setdefault(ref, []).append(exchange.id)
    return {ref: tuple(ids) for ref, ids in found.items()}


def _checkouts(
    request: RunRequest, recorder: _Recorder, needed: Sequence[str], scratch: Path
) -> None:
    pins = request.pins.pins
    for name in needed:
        try:
            recorder.checkouts[name] = checkout(
                name, pins.upstreams[name], scratch / "checkouts" / name, request.mirrors.get(name)
            )
        except CheckoutFailed as exc:
            recorder.checkout_failures[name] = str(exc)


def run_qualification(
    request: RunRequest,
    progress: Callable[[str], None] | None = None,
    watch: Callable[[Observer], None] | None = None,
) -> str:
    """Run a qualification and write its sealed bundle to ``request.out``; return its digest.

    Raises:
        InvalidInput: an unknown profile, an output directory in use, a refused endpoint or
            identity. Failures during the run are evidence, not exceptions.
    """
    say = progress or (lambda _message: None)
    pins = request.pins.pins
    profile = pins.profiles.get(request.profile)
    if profile is None:
        raise InvalidInput(f"--profile {request.profile}: not a profile of {request.pins.id} "
                           f"({', '.join(pins.profiles)})")  # fmt: skip
    _check_names(request)
    checked_endpoint(request.endpoint)
    if request.out.exists() and (not request.out.is_dir() or any(request.out.iterdir())):
        raise InvalidInput(f"--out {request.out}: not empty; a bundle needs a new directory")
    _check_store(request.out, request.store)
    made = [p for p in (request.out, *request.out.parents) if not p.exists()]  # deepest first
    try:
        _check_writable(request.out)
        return _run(request, say, watch, profile.components)
    except _Unwritten as failed:
        # A run is never deleted: what was written stays (no manifest: not a sealed bundle),
        # and the evidence gathered stays in the scratch directory, each file by its name.
        cause = failed.cause
        if isinstance(cause, OSError):
            where = f"{cause.filename}: " if cause.filename else ""
            what = f"{where}{cause.strerror or cause}"
        else:
            what = f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"
        kept = (f"the run's evidence is kept in {failed.evidence}" if failed.evidence
                else f"the run's scratch directory {failed.scratch} is kept")  # fmt: skip
        if not failed.written:
            raise InvalidInput(
                f"--out {request.out}: the run failed before its bundle was written: "
                f"{what[:1000]}; nothing is deleted: {kept}"
            ) from None
        raise InvalidInput(
            f"--out {request.out}: cannot write the bundle: {what[:1000]}; the partial bundle "
            f"is left in {request.out} (no manifest: not a sealed bundle) and {kept}"
        ) from None
    except BaseException:
        # Before anything of the bundle was written: the empty directories made for it go.
        for directory in made:
            if not directory.is_dir() or any(directory.iterdir()):
                break
            directory.rmdir()
        raise


def _check_names(request: RunRequest) -> None:
    """The run id and the harness variables asked for, before the run.

    Raises:
        InvalidInput: a run id the manifest cannot hold, a variable the runner sets, or one
            the pin set pins to another value.
    """
    if request.run_id is not None and not _RUN_ID.fullmatch(request.run_id):
        raise InvalidInput(
            f"--run-id {request.run_id!r}: not an identifier (a letter or digit, then up to "
            "127 of letters, digits and . _ : + -)"
        )
    own = sorted(set(request.harness_env) & RUNNER_VARIABLES)
    if own:
        raise InvalidInput(f"--env {own[0]}: the runner sets it for every harness")
    for upstream, harness in sorted(request.pins.pins.harnesses.items()):
        for name, value in sorted(harness.env.items()):
            given = request.harness_env.get(name, value)
            if given != value:
                raise InvalidInput(f"--env {name}: the pin set pins it to {value!r} for {upstream}")


_RUN_ID = re.compile(IDENTIFIER_PATTERN)
"""A run id as the manifest holds it, checked before the run rather than when it is sealed."""


def _check_writable(out: Path) -> None:
    """Fail before the run, not after it, when the bundle cannot be written where asked.

    Raises:
        InvalidInput: the directory cannot be created or written.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe, fd = temporary_file(out, "probe")
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise InvalidInput(f"--out {out}: cannot write there: {exc.strerror}") from None


def _run(
    request: RunRequest,
    say: Callable[[str], None],
    watch: Callable[[Observer], None] | None,
    selected: Sequence[ComponentName],
) -> str:
    recorder = _Recorder()
    started = recorder.clock.now()
    run_id = request.run_id or f"{request.pins.id}-{request.profile}-{started.replace(':', '')}"
    scratch = Path(tempfile.mkdtemp(prefix="audit-run-"))
    try:
        digest = _gather_and_write(
            request, say=say, watch=watch, selected=selected, recorder=recorder,
            scratch=scratch, run_id=run_id,
        )  # fmt: skip
    except _Unwritten:
        raise  # the scratch directory holds the run's evidence: kept
    except BaseException:
        _remove(scratch)
        raise
    _remove(scratch)
    return digest


def _check_store(out: Path, store: Path | None) -> None:
    """A blob store is a directory of blobs shared by runs, apart from every bundle: never a
    sealed bundle (it has the same ``blobs/sha256`` layout, and the new run's blobs would be
    files its manifest does not name), never inside the bundle being written (its blobs would
    be files there too), and the bundle never inside it."""
    if store is None:
        return
    where, bundle = store.resolve(), out.resolve()
    if store.exists() and not store.is_dir():
        raise InvalidInput(f"--store {store}: not a directory; a blob store is a directory")
    if (store / MANIFEST).exists():
        raise InvalidInput(
            f"--store {store}: a sealed bundle (it holds {MANIFEST}), not a blob store"
        )
    if where == bundle or where.is_relative_to(bundle) or bundle.is_relative_to(where):
        raise InvalidInput(
            f"--store {store}: inside --out {out}, or holding it; a blob store is kept apart "
            "from the bundles it serves"
        )


def _remove(scratch: Path) -> None:
    """Remove the run's scratch directory, however deep a harness made its outputs:
    ``shutil.rmtree`` recurses, and a tree a thousand directories deep ends it in a
    ``RecursionError`` with the scratch left behind; ``rm -r`` walks any depth."""
    try:
        subprocess.run(["rm", "-rf", "--", str(scratch)], check=False, capture_output=True)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)


class _Unwritten(InvalidInput):
    """The bundle could not be written; the evidence was kept in the scratch directory."""

    def __init__(
        self, cause: BaseException, scratch: Path, evidence: Path | None, *, written: bool = True
    ) -> None:
        super().__init__(str(cause))
        self.cause, self.scratch, self.evidence = cause, scratch, evidence
        self.written = written
        """Whether writing the bundle had begun (else the run failed before it)."""


def _keep_evidence(scratch: Path, recorder: _Recorder, exchanges: tuple[Any, ...]) -> Path | None:
    """Write every evidence file gathered so far under ``scratch/evidence`` by its name (the
    transport log too, if writing failed before it was recorded); None if even that failed."""
    kept = scratch / "evidence"
    files = dict(recorder.files)
    if "transport/exchanges.jsonl" not in files:
        data = b"".join(e.model_dump_json().encode() + b"\n" for e in exchanges)
        files["transport/exchanges.jsonl"] = (data, _JSON)
    try:
        for name, (data, _media) in sorted(files.items()):
            parts = [p for p in name.split("/") if p not in ("", ".", "..")]
            target = kept.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except OSError:
        return None
    return kept


def _gather_and_write(
    request: RunRequest,
    *,
    say: Callable[[str], None],
    watch: Callable[[Observer], None] | None,
    selected: Sequence[ComponentName],
    recorder: _Recorder,
    scratch: Path,
    run_id: str,
) -> str:
    with observe(request.endpoint, policy=request.policy.serialization) as observer:
        if watch is not None:
            watch(observer)
        observer.component = "identity"
        say("identity")
        point("identity")
        identity = resolve_identity(
            observer.url, model=request.model, model_digest=request.model_digest,
            weights=request.weights, endpoint=request.endpoint,
        )  # fmt: skip
        if not request.pins.pins.judges(identity.runtime_model_id, identity.digest):
            raise InvalidInput(  # refused before any harness runs: nothing to lose
                f"--pins {request.pins.id}: a demo-only pin set (the reference harnesses, which "
                f"score synthetic answers) cannot judge {identity.runtime_model_id}; qualify it "
                f"under {CURRENT} (the real upstream harnesses) or a pin set of your own"
            )
        try:
            _components(request, say, selected, recorder, scratch, observer, identity)
        except Exception as exc:  # a defect mid-run: the evidence so far is kept, not lost
            kept = _keep_evidence(scratch, recorder, tuple(observer.exchanges()))
            raise _Unwritten(exc, scratch, kept, written=False) from exc
    exchanges = tuple(observer.exchanges())
    say("writing the bundle")
    point("write")
    try:
        return _write(
            request, recorder, identity=identity, exchanges=exchanges, selected=selected,
            run_id=run_id,
        )  # fmt: skip
    except Exception as exc:
        raise _Unwritten(exc, scratch, _keep_evidence(scratch, recorder, exchanges)) from exc


def _components(  # noqa: PLR0917 - the run's parts, passed on
    request: RunRequest,
    say: Callable[[str], None],
    selected: Sequence[ComponentName],
    recorder: _Recorder,
    scratch: Path,
    observer: Observer,
    identity: ModelIdentity,
) -> None:
    """Checkouts, probes, harnesses and the streaming measurement, into ``recorder``."""
    pins = request.pins.pins
    unpinned = [c for c in selected if c not in pins.component_upstreams]
    if unpinned:
        say(f"no upstream harness pinned for {', '.join(unpinned)}: the run cannot qualify")
    needed = sorted(
        {pins.component_upstreams[c] for c in selected if c not in unpinned}
        | {g for c in selected if c not in unpinned for g in pins.gates_of(c)}
    )
    say(f"checkouts: {', '.join(needed)}")
    _checkouts(request, recorder, needed, scratch)
    say("direct probes")
    point("probes")
    recorder.probes = run_direct_probes(
        observer, identity.runtime_model_id, pins.direct_probe,
        request.policy.serialization,
    )  # fmt: skip
    harnesses = _Harnesses(request, recorder, observer, identity.runtime_model_id, scratch)
    for upstream in needed:
        served = [c for c in selected if pins.component_upstreams.get(c) == upstream]
        if upstream in pins.harnesses and served:
            limits = pins.harnesses[upstream]
            say(f"harness {upstream}: {', '.join(served)} (limits: silence "
                f"{limits.inactivity_s:g} s, wall {limits.wall_s:g} s)")  # fmt: skip
            point(f"harness:{upstream}")
            harnesses.run(upstream, served)
            point(f"harness-done:{upstream}")
            # each gate right after the harness it gates (ADR 0022): a component's window is
            # its harness's run and its gates', no other harness's
            for component in served:
                _gate(harnesses, component, say)
    if "performance" in selected and pins.component_upstreams.get("performance") not in (
        None,
        *pins.harnesses,
    ):  # no performance harness (the demo's Infermark): the observer measures it itself
        say("streaming performance")
        point("streaming")
        started = recorder.clock.now()
        streaming = measure_streaming(
            observer, identity.runtime_model_id, request.streaming_prompts,
            serialization=request.policy.serialization,
        )  # fmt: skip
        recorder.record("components/performance/infermark-c1.json",
                        "infermark-streaming", streaming)  # fmt: skip
        metrics = {
            "concurrency_1_tokens_per_second": streaming.tokens_per_second,
            "ttft_p50_seconds": streaming.ttft_p50_seconds,
            "errors": streaming.errors,
        }
        ended = recorder.clock.now()
        recorder.result("performance", "COMPLETED", started_at=started, ended_at=ended,
                        metrics=metrics)  # fmt: skip


def _gate(harnesses: _Harnesses, component: ComponentName, say: Callable[[str], None]) -> None:
    """Run the pinned gates of ``component`` (ADR 0022), while it is still COMPLETED."""
    for upstream in harnesses.request.pins.pins.gates_of(component):
        result = harnesses.recorder.results.get(component)
        if result is None or result.status != "COMPLETED":
            return  # nothing to gate: the component already says why
        say(f"gate {upstream}: {component}")
        point(f"harness:{upstream}")
        harnesses.run_gate(upstream, component)
        point(f"harness-done:{upstream}")


def _write(
    request: RunRequest,
    recorder: _Recorder,
    *,
    identity: ModelIdentity,
    exchanges: tuple[Any, ...],
    selected: Sequence[ComponentName],
    run_id: str,
) -> str:
    """Write the bundle; its ``created_at`` is now, after every component ended."""
    created = recorder.clock.now()
    pins = request.pins
    config = RunConfig(
        schema_version=1,
        track=request.track,
        reasoning_policy=request.policy,
        observer=ObserverRecord(status="complete", exchanges=len(exchanges)),
        ledger=LedgerRecord(entries=len(recorder.ledger)),  # every traced process has exited
        cleanup="removed",
    )
    for component in selected:
        if component not in recorder.results:
            upstream = pins.pins.component_upstreams.get(component)
            if upstream is None:
                reason = f"pin set {pins.id} pins no upstream harness for {component}"
            else:
                reason = f"{upstream}: {recorder.checkout_failures.get(upstream, 'not run')}"
            recorder.result(component, "FAILED", reason=reason[:4096])
    recorder.record("transport/exchanges.jsonl", "transport-exchange", exchanges)
    recorder.record("network/socket-ledger.jsonl", "socket-ledger-entry", tuple(recorder.ledger))
    recorder.record("run/config.json", "run-config", config)
    recorder.record("probes/direct-response.json", "direct-probe", recorder.probes[0])
    recorder.record("probes/tool-call.json", "direct-probe", recorder.probes[1])
    upstreams = []
    for name, done in sorted(recorder.checkouts.items()):
        recorder.files.update(checkout_evidence(done))
        tree = f"upstreams/{name}/tree.txt"
        upstreams.append(UpstreamCheckout(name=name, repository=done.repository, commit=done.commit,
                                          clean=done.clean, tree=tree))  # fmt: skip
    for component, result in recorder.results.items():
        recorder.record(f"components/{component}/result.json", "component-result", result)
    ref = PinSetRef(id=pins.id, digest=pins.digest)
    evidence = recorder.read.document(
        run_id=run_id, created_at=created, profile=request.profile,
        scoring_generation=pins.pins.scoring_generation, pin_set=ref, model=identity,
        upstreams=upstreams, claims=_placeholder_claims(),
    )  # fmt: skip
    claims = _claims(evidence, pins, selected)
    point("claims")
    writer = BundleWriter(request.out, store=request.store)
    for name, (data, media) in sorted(recorder.files.items()):
        writer.add_bytes(name, data, media)
    point("before-manifest")
    order = {c: i for i, c in enumerate(selected)}
    return writer.seal(
        run_id=run_id, created_at=created,
        runner=RunnerInfo(name="evidence-audit", version=VERSION),
        scoring_generation=pins.pins.scoring_generation, profile=request.profile, pin_set=ref,
        model=identity, upstreams=upstreams,
        components=[ComponentRef(name=c, result=f"components/{c}/result.json")
                    for c in sorted(recorder.results, key=lambda c: order.get(c, 99))],
        claims=claims,
    )  # fmt: skip


def _claims(
    evidence: Gx10Evidence, pins: PinSetSource, selected: Sequence[ComponentName]
) -> Claims:
    """The runner's claims: what the verifier's replay of this evidence decides.

    Rankability depends on the claims matching, so the claims that replay as matching are
    chosen: the decision with ``rankable`` as the replay then confirms it.
    """
    decided = replay(evidence, pins)
    for rankable in (True, False):
        claims = Claims(
            outcome=decided.outcome,
            result_validity=decided.result_validity,
            profile_decision=decided.profile_decision,
            rankable=rankable,
            aggregate_score=decided.scores.aggregate,
            executed_weight=decided.scores.executed_weight,
            component_scores={c: getattr(decided.scores, c) for c in selected},
            reasons=tuple(r[:4096] for r in decided.reasons if not _about_claims(r)),
        )
        if replay(evidence.model_copy(update={"claims": claims}), pins).claims.match:
            return claims
    return claims  # pragma: no cover - one of the two always matches


def _about_claims(reason: str) -> bool:
    return reason.startswith("claims: ") or reason == "the runner's claims differ from the replay"


def _placeholder_claims() -> Claims:
    """Claims are what the replay says; the replay does not read them to decide."""
    return Claims(outcome="INFRA_ERROR", result_validity="INCOMPLETE",
                  profile_decision="NOT_ASSESSED", rankable=False, aggregate_score=None,
                  executed_weight=0, component_scores={})  # fmt: skip


def default_policy(effective: str) -> ReasoningPolicy:
    """The reasoning policy and its serialization for an effective setting: ``off``/``on`` as
    the chat template's ``enable_thinking``, levels as ``reasoning_effort``."""
    if effective in ("off", "on"):
        serialization = {"path": "chat_template_kwargs.enable_thinking", "value": effective == "on"}
    else:
        serialization = {"path": "reasoning_effort", "value": effective}
    return ReasoningPolicy.model_validate({"effective": effective, "serialization": serialization})
