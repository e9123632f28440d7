"""Raw outputs and gates: each harness's records re-read with the verifier's own readers.

Component records, metrics and quarantine markers are what the readers
(:mod:`verify.harness_outputs`) make of the raw harness outputs kept beside them; a gate's
tallies are what its reader makes of its raw outputs; a component's status is what the runner
writes beside them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from bundle_schema.models import (
    ComponentName,
    Finding,
    Gx10Evidence,
    QuarantineMarker,
    TaskTallies,
    canonical_distribution,
    canonical_name,
)
from pins import PinSetSource
from verify._consistency._common import Reader, _disagrees
from verify._consistency.bfcl import bfcl_gate
from verify._consistency.checkouts import _Checkout
from verify._consistency.harnesses import profile_components
from verify.harness_outputs import (
    OutputsUnreadable,
    gate_place,
    gate_record,
    markers_alone,
    read_gate_outputs,
    read_outputs,
)


def _raw_files(
    evidence: Gx10Evidence,
    components: Sequence[str],
    read: Reader,
    names: Collection[str],
    findings: list[Finding],
) -> dict[str, bytes] | None:
    """A harness's raw outputs as kept, by their path relative to its output directory: every
    entry at the raw place of any component it serves, whether or not a result lists it (a
    quarantine marker the upstream wrote counts wherever it was moved or left off a list).
    None when no component has a valid result, or a raw output is not intact (integrity says
    so); one relative path kept at two places is a finding (the verifier does not choose)."""
    results = [evidence.results.get(c) for c in components]  # type: ignore[call-overload]
    if all(r is None for r in results):
        return None
    listed = {n for r in results if r is not None for n in r.raw_outputs}
    files: dict[str, bytes] = {}
    for component in components:
        prefix = f"components/{component}/raw/"
        for name in sorted({*listed, *names}):
            if not name.startswith(prefix):
                continue
            data = read(name)
            if data is None:
                return None
            relative = name[len(prefix) :]
            if relative in files:
                findings.append(
                    _disagrees(name, f"a second raw output {relative!r} of the same harness")
                )
                continue
            files[relative] = data
    return files


def _derived(evidence: Gx10Evidence) -> Mapping[str, BaseModel | tuple[BaseModel, ...] | None]:
    return {
        "components/coding/spark-quality.json": evidence.spark_quality,
        "components/reliability/spark-repeat.json": evidence.spark_repeat,
        "components/hermes/tasks.jsonl": (
            tuple(t.model_copy(update={"exchanges": ()}) for t in evidence.hermes_tasks)
            if evidence.hermes_tasks is not None
            else None
        ),
        "components/tool_instruction/benchlocal-packs.json": evidence.benchlocal,
        # read from its raw report where a harness writes it (the infermark reader); the runner's
        # own measurement has no harness, and the exchanges alone bound it (_infermark)
        "components/performance/infermark-c1.json": evidence.infermark,
    }


def _raw_outputs(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    read: Reader,
    names: Collection[str],
    foreign: Collection[str] = (),
    *,
    derived: Mapping[str, BaseModel | tuple[BaseModel, ...] | None] | None = None,
    selected: Sequence[ComponentName] | None = None,
) -> list[Finding]:
    """Each harness's records (``derived``: :func:`_derived`, when already made) re-read from
    its raw outputs with the runner's own readers, given the components the runner gave them
    (those of the profile, ``selected``, it serves, in the profile's order); not those of a
    ``foreign`` harness (another harness's outputs: ADR 0036)."""
    findings: list[Finding] = []
    derived = _derived(evidence) if derived is None else derived
    selected = profile_components(pins, evidence) if selected is None else selected
    upstreams = pins.pins.component_upstreams
    served: dict[str, list[ComponentName]] = {}
    for component in upstreams:
        served.setdefault(upstreams[component], []).append(component)
    for upstream, components in sorted(served.items()):
        harness = pins.pins.harnesses.get(upstream)
        if harness is None or upstream in foreign:
            continue
        records = {
            n: v for n, v in derived.items() if v is not None and n.split("/")[1] in components
        }
        files = _raw_files(evidence, components, read, names, findings)
        if files is None:  # no valid result, or a raw output not intact: integrity says so
            continue
        ran = [c for c in selected if c in components] or components
        findings += _reread(evidence, upstream, harness.parser, components=components, ran=ran,
                            files=files, records=records)  # fmt: skip
    return findings


def _reread(
    evidence: Gx10Evidence,
    upstream: str,
    parser: str,
    *,
    components: Sequence[ComponentName],
    ran: Sequence[ComponentName],
    files: dict[str, bytes],
    records: Mapping[str, object],
) -> list[Finding]:
    """One harness's records, metrics and quarantine markers (of ``components``, all it
    serves) against its raw ``files``, read for the components it ``ran`` for. With no record
    and no marker to check, the raw outputs are still read for a marker the upstream wrote:
    one a publisher left out is a finding; nothing else is claimed."""
    markers = {c: evidence.quarantines[c] for c in components if c in evidence.quarantines}
    where = f"components/{components[0]}/result.json"
    if not files:
        if records or markers:
            message = f"the {upstream} records have no raw output they were read from"
            return [_disagrees(where, message)]
        return []
    findings: list[Finding] = []
    try:
        parsed = read_outputs(parser, files, ran)
    except OutputsUnreadable as exc:
        if records:
            findings.append(_disagrees(where, f"the {upstream} raw outputs do not read: {exc}"))
        # a marker that reads alone is the upstream's word still (seed 000), as the runner
        # records it: one left out, or one not what the raw output says, is found
        alone = markers_alone(parser, files, ran)
        for component in components:
            findings += _marker(component, markers.get(component), alone, upstream)
        return findings
    for name, value in sorted(records.items()):
        kind_value = parsed.records.get(name)
        reread = kind_value[1] if kind_value is not None else None
        if reread != value:
            findings.append(
                _disagrees(name, f"the record is not what the raw outputs of {upstream} say")
            )
    for component in components:
        result = evidence.results.get(component)
        if result is not None and result.status == "COMPLETED":
            findings += _metrics(result.metrics, parsed.metrics.get(component, {}),
                                 component, upstream)  # fmt: skip
        findings += _marker(component, markers.get(component), parsed.quarantines, upstream)
    return findings


def _marker(
    component: ComponentName,
    marker: QuarantineMarker | None,
    written: Mapping[ComponentName, QuarantineMarker],
    upstream: str,
) -> list[Finding]:
    """A component's quarantine marker record against the one its upstream wrote, if any."""
    reread = written.get(component)
    if marker is None and reread is not None:
        return [
            _disagrees(
                f"components/{component}/raw/quarantine.json",
                f"{upstream} wrote a quarantine marker ({reread.upstream_reason}) that no "
                "quarantine record carries",
            )
        ]
    if marker is not None and marker != reread:
        return [
            _disagrees(
                f"components/{component}/quarantine.json",
                f"the marker is not what the raw outputs of {upstream} say",
            )
        ]
    return []


def _quarantine_statuses(
    evidence: Gx10Evidence, components: Collection[ComponentName]
) -> list[Finding]:
    """A result QUARANTINED with no quarantine marker: only the upstream's marker quarantines
    (seed 000: it is authoritative), and the runner writes the status beside one alone."""
    return [
        _disagrees(
            f"components/{c}/result.json",
            "the result is QUARANTINED, and no quarantine marker carries it",
        )
        for c in sorted(components)
        if (result := evidence.results.get(c)) is not None
        and result.status == "QUARANTINED"
        and c not in evidence.quarantines
    ]


def _statuses(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    *,
    selected: Collection[ComponentName],
    own: Collection[ComponentName],
    recorded: Collection[str],
) -> list[Finding]:
    """A component's status against what the runner writes beside it (ADR 0007): a result
    only for a component the profile selects, where the pin set defines the profile (a record
    of another may be there: a harness's reader gives the records of every component it
    serves); COMPLETED (or QUARANTINED) beside the records its reader read from the harness's
    outputs (``recorded``: the components with records), and FAILED beside them only when a
    pinned gate of the component failed; never PARTIAL or NOT_RUN. A status that says the
    harness did not complete where its records say it did is a finding: it would turn a
    model's failure into the infrastructure's."""
    findings = []
    for component in sorted(evidence.results):
        result = evidence.results[component]
        where = f"components/{component}/result.json"
        if component not in selected and evidence.profile in pins.pins.profiles:
            findings.append(
                _disagrees(
                    where,
                    f"a result of {component}, which profile {evidence.profile} does not select",
                )
            )
            continue
        if component not in own or component not in recorded:
            continue
        if result.status in ("PARTIAL", "NOT_RUN"):
            findings.append(
                _disagrees(
                    where,
                    f"the result is {result.status} beside the records read "
                    "from the harness's complete outputs",
                )
            )
        elif result.status == "FAILED" and not _a_gate_failed(evidence, pins, component):
            findings.append(
                _disagrees(
                    where,
                    "the result is FAILED beside the records read from the harness's outputs, "
                    "and no gate of the component failed",
                )
            )
    return findings


def _a_gate_failed(evidence: Gx10Evidence, pins: PinSetSource, component: ComponentName) -> bool:
    """Whether a pinned gate of ``component`` failed (what makes the runner record the
    component FAILED beside its records): its tallies were not recorded. The runner records
    them only for a gate that completed and whose outputs read (a gate's exit is the runner's
    word, as a harness's is: ADR 0007); tallies recorded beside outputs that do not read, or
    are not what they say, are ``_gate_outputs``'s finding."""
    gated = evidence.supplementary.get(component, {})
    return any(gated.get(u) is None for u in pins.pins.gate_upstreams.get(component, ()))


def _gate_outputs(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    read: Reader,
    names: Collection[str],
    foreign: Collection[str] = (),
    *,
    checkouts: Mapping[str, _Checkout] | None = None,
) -> list[Finding]:
    """Each supplementary harness's tallies and metrics re-read from its raw outputs (kept at
    its gate's place) with the runner's own reader; a component completed while its gate's raw
    outputs do not read is a record that disagrees with them. A ``foreign`` gate's outputs are
    another harness's and are not re-read (ADR 0036)."""
    findings = _gate_records_unpinned(pins, names)
    for component, gates in sorted(pins.pins.gate_upstreams.items()):
        result = evidence.results.get(component)
        completed = result is not None and result.status == "COMPLETED"
        for upstream in gates:
            harness = pins.pins.harnesses[upstream]  # the pin set's rule: a gate has a harness
            place = gate_place(component, upstream)
            record = evidence.supplementary.get(component, {}).get(upstream)
            entry = gate_record(component, upstream, harness.parser)
            if (result is None and record is None) or upstream in foreign:
                continue
            kept = {
                n.removeprefix(place + "raw/"): read(n)
                for n in sorted(names)
                if n.startswith(place + "raw/")
            }
            files = {k: v for k, v in kept.items() if v is not None}
            if len(files) != len(kept):  # a raw output not intact: integrity says so
                continue
            if not files:
                if record is not None:
                    findings.append(_disagrees(entry, f"the {upstream} tallies have no raw output"))
                continue
            try:
                parsed = read_gate_outputs(harness.parser, files, component, upstream)
            except OutputsUnreadable as exc:
                if record is not None or completed:
                    where = entry if record is not None else f"components/{component}/result.json"
                    findings.append(
                        _disagrees(where, f"the {upstream} raw outputs do not read: {exc}")
                    )
                continue
            reread = parsed.records.get(entry)
            if record is not None and (reread is None or reread[1] != record):
                findings.append(
                    _disagrees(entry, f"the tallies are not what the raw outputs of {upstream} say")
                )
            tallies = reread[1] if reread is not None else None
            findings += _reported_version(tallies, harness.requirements, entry, upstream)
            findings += _tallies_model(tallies, evidence.model.runtime_model_id, entry, upstream)
            if harness.parser == "bfcl-eval":
                findings += bfcl_gate(evidence, pins, files, tallies,
                                      where=(entry, component, upstream),
                                      checkouts=(checkouts or {}, read))  # fmt: skip
            if completed and result is not None:
                findings += _metrics(result.metrics, parsed.metrics.get(component, {}),
                                     component, upstream)  # fmt: skip
    return findings


_GATE_RECORD = re.compile(r"^components/([^/]+)/gates/([^/]+)/([^/]+\.json)$")
"""A gate's tallies record: at ``components/<component>/gates/<upstream>/<reader's file>``."""


def pinned_gate_records(pins: PinSetSource) -> set[str]:
    """The gate tallies the pin set's gates write (their readers' records): the only ones read."""
    return {
        gate_record(component, upstream, pins.pins.harnesses[upstream].parser)
        for component, gates in pins.pins.gate_upstreams.items()
        for upstream in gates
    }


def read_gate_records(
    pins: PinSetSource, records: Mapping[str, Sequence[BaseModel]]
) -> dict[str, Sequence[BaseModel]]:
    """``records`` without the gate tallies the pin set runs no gate for (each a finding of
    :func:`_gate_records_unpinned`, never read into the replay or its diagnostics)."""
    expected = pinned_gate_records(pins)
    return {n: r for n, r in records.items() if not _GATE_RECORD.match(n) or n in expected}


def pinned_environments(pins: PinSetSource, foreign: Collection[str] = ()) -> set[str]:
    """The environment records the verifier reads: of the harnesses the pin set gives
    requirements or variables, and of a Spark Bench harness that scores coding (its Python,
    ADR 0050), but a ``foreign`` one's (ADR 0036; any other is unread)."""
    coding = pins.pins.component_upstreams.get("coding")
    return {
        f"upstreams/{upstream}/environment.json"
        for upstream, harness in pins.pins.harnesses.items()
        if (
            harness.requirements
            or harness.env
            or (upstream == coding and harness.parser == "spark-bench")
        )
        and upstream not in foreign
    }


def _gate_records_unpinned(pins: PinSetSource, names: Collection[str]) -> list[Finding]:
    """A gate's tallies where the pin set runs no such gate, or the file of another reader than
    the gate's: never read into the diagnostics, a record that disagrees with the pin set (a
    publisher could otherwise add the figures of a gate that never ran)."""
    expected = pinned_gate_records(pins)
    findings = []
    for name in sorted(names):
        match = _GATE_RECORD.match(name)
        if match is None or name in expected:
            continue
        component, upstream, _ = match.groups()
        findings.append(
            _disagrees(
                name,
                f"gate tallies of {upstream!r} beside {component}, a gate the pin set "
                f"{pins.id} does not run there (or another reader's file)",
            )
        )
    return findings


def _reported_version(
    tallies: object, requirements: Sequence[str], entry: str, upstream: str
) -> list[Finding]:
    """The harness's version as its own outputs report it (Inspect AI's log, lm-eval's results)
    against the pin set's ``name==version`` of that distribution, where it pins one: the
    environment record says what was installed, the outputs what ran."""
    if not isinstance(tallies, TaskTallies):
        return []
    name = canonical_name(tallies.harness)
    pinned = [r for r in requirements if canonical_distribution(r).partition("==")[0] == name]
    ran = canonical_distribution(f"{tallies.harness}=={tallies.version}")
    if not pinned or ran in {canonical_distribution(r) for r in pinned}:
        return []
    return [
        _disagrees(
            entry,
            f"{upstream}'s outputs report {tallies.harness} {tallies.version}; the pin set "
            f"requires {', '.join(pinned)}",
        )
    ]


def _tallies_model(tallies: object, model: str, entry: str, upstream: str) -> list[Finding]:
    """The model a task harness's outputs name (lm-evaluation-harness's ``model_name``, the
    ``model`` of its ``--model_args``; Inspect AI's ``eval.model``, its provider path such as
    ``openai-api/local/{model}``) is the run's runtime model id, or ends with it after a ``/``:
    outputs of another model are not this run's."""
    if not isinstance(tallies, TaskTallies):
        return []
    if tallies.model == model or tallies.model.endswith("/" + model):
        return []
    return [
        _disagrees(
            entry,
            f"{upstream}'s outputs are of model {tallies.model!r}; the run's model is {model!r}",
        )
    ]


def _metrics(
    recorded: Mapping[str, Any], reread: Mapping[str, Any], component: str, upstream: str
) -> list[Finding]:
    """A completed component's metrics against those its harness's (or gate's) reader gives
    from the raw outputs: each metric the reader gives must be recorded as it gives it."""
    name = f"components/{component}/result.json"
    return [
        _disagrees(
            name,
            f"metric {key} is {recorded.get(key)!r}; the raw outputs of {upstream} say {value!r}",
            expected=repr(value),
            got=repr(recorded.get(key)),
        )
        for key, value in sorted(reread.items())
        if recorded.get(key) != value
    ]
