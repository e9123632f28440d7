"""Cross-checks: every derived record against what it was derived from.

Pure: the checks take the assembled evidence, the trusted pin set and a reader of evidence
entries' bytes (bounded by the caller), and return findings. What they establish:

- the socket ledger is coherent (each entry's family agrees with its address) and ends where
  the supervisor's closing count says;
- component records are what the verifier's own readers (:mod:`verify.harness_outputs`) make of
  the raw harness outputs kept beside them, quarantine markers included;
- the Hermes task set, each task's limits and its frozen allowed-change patterns are those of the
  pin set and of the task manifest inside the recorded checkout, each task once; a PASS has
  evaluator cases and every one of them passed; changed paths are paths inside the workspace;
- upstream files hash to their git blob ids, the listing to the recorded tree, the commit object
  to the pinned commit, and the checkout state agrees with the manifest;
- probe and Infermark figures agree with the exchanges they were measured on;
- the run's times agree with each other and with the pinned harness limits.

What a check holds against a harness's outputs (its reader, environment, data, wall, task set)
is the pin set's; it applies to the harness the pin set pins. A harness the bundle holds no
checkout of as pinned (:func:`foreign_harnesses`) is another harness, whose outputs are not
evidence under this pin set: the ``upstream_checkout`` gate fails on it as infrastructure,
and no integrity finding is made of what the pins' readers cannot read (ADR 0036).
"""

from __future__ import annotations

import ast
import copy
import datetime as dt
import hashlib
import itertools
import json
import math
import re
import statistics
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import BaseModel

from bundle_schema.documents import KINDS, parse_document
from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    BfclShard,
    CheckoutState,
    ComponentName,
    ComponentResult,
    Finding,
    Gx10Evidence,
    HarnessEnvironment,
    HermesTask,
    QuarantineMarker,
    TaskTallies,
    TransportExchange,
    UpstreamCheckout,
    canonical_distribution,
    canonical_name,
)
from pins import PROBE_CONTRACTS, PinSetSource, missing_requirements
from verify._facts import (
    LedgerFacts,
    ReplyFacts,
    closing_problem,
    ledger_facts,
    ledger_problem,
    reply_facts,
)
from verify.harness_outputs import (
    READS,
    SPARK_BENCH_CODE_DOMAIN,
    SPARK_BENCH_CSV,
    SPARK_BENCH_SLACK,
    OutputsUnreadable,
    bfcl_model_folder,
    gate_place,
    gate_record,
    markers_alone,
    raw_name,
    read_gate_outputs,
    read_outputs,
    spark_code_scores,
)
from verify.replies import body_json, exchange_failed, read_reply

__all__ = [
    "BlobIds",
    "Reader",
    "checkout_problem",
    "consistency_findings",
    "foreign_harnesses",
    "git_blob_id",
    "git_tree_id",
    "needed_upstreams",
    "normal_path",
    "pinned_listings",
    "profile_components",
    "unread_raw_outputs",
]

Reader = Callable[[str], bytes | None]
"""Reads an evidence entry's bytes by logical name. None: absent or not intact, which integrity
already reports, so the cross-check that needs it is left out rather than repeated; the shell
reports an entry too large to read as a finding of its own."""

BlobIds = Callable[[str], str | None]
"""The git blob id of an evidence entry's bytes, streamed (None: absent or not intact)."""

TIME_SLACK_S = 2.0
"""Record times are whole seconds: a component may seem to run up to this much longer."""
TTFT_SLACK_S = 0.001
"""The client's TTFT includes the hop to the observer (which times each chunk from when it saw
the request), so the observer's median first-chunk time is never later; this is for rounding."""
SPAN_SLACK_S = 0.001
"""The client's wall encloses the observer's span of the same requests (one monotonic clock:
the observer sees each request after it is sent, and records a stream before its last bytes go
out); this much is allowed for rounding."""


def _finding(code: Any, entry: str | None, message: str, **where: str | None) -> Finding:
    return Finding(code=code, entry=entry, message=message, **where)


def _disagrees(entry: str | None, message: str, **where: str | None) -> Finding:
    return _finding("record_disagrees", entry, f"evidence {entry!r}: {message}", **where)


def git_blob_id(data: bytes) -> str:
    """The git (SHA-1) blob id of some bytes, as ``git hash-object`` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_object(kind: bytes, data: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class _Listed:
    mode: str
    kind: str
    object_id: str
    path: str


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
MAX_PATH_SEGMENTS = 256
"""A listed path deeper than this is no checkout's (git itself refuses far less in practice)."""


def _unquote(path: str) -> str | None:
    """A path as ``git ls-tree`` printed it, C-quoted when unusual (backslash escapes, octal
    bytes); None when it is not such a quoting or not UTF-8. Linear, never recursive."""
    if not path.startswith('"'):
        return path
    if len(path) < 2 or not path.endswith('"'):
        return None
    out = bytearray()
    inner, index = path[1:-1], 0
    while index < len(inner):
        char = inner[index]
        if char == '"':
            return None
        if char != "\\":
            out += char.encode("utf-8")
            index += 1
            continue
        escape = inner[index + 1 : index + 2]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        elif len(octal := inner[index + 1 : index + 4]) == 3 and all(
            c in "01234567" for c in octal
        ):
            out.append(int(octal, 8) & 0xFF)
            index += 4
        else:
            return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _listing(data: bytes) -> list[_Listed] | str:
    """The entries of a ``git ls-tree -r`` listing, or why it is not one."""
    entries = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        head, tab, path = line.partition("\t")
        parts = head.split(" ")
        unquoted = _unquote(path)
        if not tab or len(parts) != 3 or unquoted is None or len(parts[2]) != 40:
            return f"line {number} is not a git ls-tree entry"
        entries.append(_Listed(parts[0], parts[1], parts[2], unquoted))
    return entries


def git_tree_id(entries: Sequence[_Listed]) -> str | None:
    """The id of the root tree a recursive listing describes (None: the listing is not one)."""
    root: dict[str, Any] = {}
    for entry in entries:
        *dirs, leaf = entry.path.split("/")
        if len(dirs) >= MAX_PATH_SEGMENTS:
            return None
        node = root
        for part in dirs:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                return None
            node = child
        if leaf in node:
            return None
        node[leaf] = entry

    def tree(node: dict[str, Any]) -> str | None:
        items = []
        for name, value in node.items():
            if isinstance(value, dict):
                sub = tree(value)
                if sub is None:
                    return None
                items.append((name + "/", b"40000 " + name.encode() + b"\0" + bytes.fromhex(sub)))
            else:
                try:
                    raw = bytes.fromhex(value.object_id)
                except ValueError:
                    return None
                items.append((name, value.mode.encode() + b" " + name.encode() + b"\0" + raw))
        items.sort(key=lambda item: item[0].encode())
        return _git_object(b"tree", b"".join(data for _, data in items))

    return tree(root)


def normal_path(path: str) -> str | None:
    """A changed path or pattern as a normal relative path (``./`` and empty segments dropped);
    None for an absolute path, a ``..`` segment, a backslash or a NUL."""
    if path.startswith("/") or "\\" in path or "\0" in path:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _stamp(value: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 UTC time (sub-second digits past six dropped)."""
    if value is None:
        return None
    head, _, fraction = value.rstrip("Z").partition(".")
    try:
        moment = dt.datetime.fromisoformat(head).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)


# --- the socket ledger --------------------------------------------------------------------------


def _ledger(evidence: Gx10Evidence, facts: LedgerFacts | None) -> list[Finding]:
    name = "network/socket-ledger.jsonl"
    if evidence.socket_ledger is None:
        return []
    ledger = facts if facts is not None else ledger_facts(evidence.socket_ledger)
    findings = []
    for number, entry in ledger.incoherent:
        problem = ledger_problem(entry)
        if problem is not None:
            findings.append(
                _finding(
                    "ledger_incoherent",
                    name,
                    f"evidence {name!r}: line {number} (seq {entry.seq}): {problem} (got "
                    f"{entry.address!r} port {entry.port})",
                    path=f"{name}:{number}",
                )
            )
    problem = closing_problem(evidence.config, ledger.count)
    if problem is not None:
        closing = evidence.config.ledger if evidence.config is not None else None
        counts = {"expected": str(closing.entries), "got": str(ledger.count)} if closing else {}
        findings.append(
            _finding("ledger_incoherent", name, f"evidence {name!r}: {problem}", **counts)
        )
    return findings


# --- the harnesses the pin set judges ------------------------------------------------------------


def checkout_problem(
    pins: PinSetSource, upstreams: Iterable[UpstreamCheckout], name: str
) -> str | None:
    """Why the bundle holds no checkout of the upstream ``name`` as ``pins`` pin it: none of
    that name, or one at another repository or commit. None: it holds one (clean or not).
    The ``upstream_checkout`` gate's comparison, and the one that decides whose outputs the
    pin set's readers re-read (ADR 0036)."""
    pinned = pins.pins.upstreams[name]
    checkout = next((u for u in upstreams if u.name == name), None)
    if checkout is None:
        return f"{name} was not checked out"
    if checkout.commit != pinned.commit or checkout.repository != pinned.repository:
        return (
            f"{name} is at {checkout.repository}@{checkout.commit[:12]}, pinned "
            f"{pinned.repository}@{pinned.commit[:12]}"
        )
    return None


def needed_upstreams(pins: PinSetSource, selected: Iterable[ComponentName]) -> list[str]:
    """The upstreams a profile's components need under ``pins``, sorted: each selected
    component's harness and its gates (a component the pins give none is not here)."""
    table = pins.pins
    chosen = list(selected)
    return sorted(
        {table.component_upstreams[c] for c in chosen if c in table.component_upstreams}
        | {g for c in chosen for g in table.gates_of(c)}
    )


def profile_components(pins: PinSetSource, evidence: Gx10Evidence) -> tuple[ComponentName, ...]:
    """The components of the run's profile under ``pins`` (none: a profile it does not define)."""
    profile = pins.pins.profiles.get(evidence.profile)
    return tuple(profile.components) if profile else ()


def foreign_harnesses(
    evidence: Gx10Evidence, pins: PinSetSource, selected: Iterable[ComponentName]
) -> dict[str, str]:
    """The harnesses whose outputs are not evidence under ``pins`` (ADR 0036): each harness
    (or needed upstream) of the pin set the bundle holds no checkout of as pinned, and why
    (:func:`checkout_problem`). Their records are another harness's: the pin set's readers
    do not re-read them, its settings (environment, data, walls, task set) are not held
    against them, and no score is replayed from them.

    Empty unless a harness the profile needs is among them, which fails ``upstream_checkout``
    as infrastructure: a run whose needed harnesses are all as pinned keeps every cross-check
    (a record of an unselected component at a missing checkout is still read and held), so
    leaving a check out never lets a run be QUALIFIED or ranked that a finding stopped. Every
    such harness where the pin set does not define the run's profile: a run it cannot judge
    (INFRA_ERROR), whose harnesses it does not know it needs."""
    needed = needed_upstreams(pins, selected)
    problems = {
        name: problem
        for name in sorted(set(pins.pins.harnesses) | set(needed))
        if (problem := checkout_problem(pins, evidence.upstreams, name)) is not None
    }
    if evidence.profile not in pins.pins.profiles:  # a run it cannot judge: INFRA_ERROR anyway
        return problems
    return problems if any(name in problems for name in needed) else {}


# --- raw outputs ----------------------------------------------------------------------------------


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
                findings += _bfcl_model(files, evidence.model.runtime_model_id, entry, upstream)
                findings += _bfcl_requests(evidence, tallies, component, entry, upstream)
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
    requirements or variables, but a ``foreign`` one's (ADR 0036; any other is unread)."""
    return {
        f"upstreams/{upstream}/environment.json"
        for upstream, harness in pins.pins.harnesses.items()
        if (harness.requirements or harness.env) and upstream not in foreign
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


def _bfcl_model(files: Mapping[str, bytes], model: str, entry: str, upstream: str) -> list[Finding]:
    """bfcl-eval's score and result files are under the model's name as the pinned command
    registers it, the run's runtime model id (``{model}``, in the folder bfcl-eval names after it
    as the bundle keeps it: :func:`bfcl_model_folder`): outputs of another model are not this
    run's."""
    expected = bfcl_model_folder(model)
    named = sorted(
        {n.split("/")[1] for n in files if n.startswith(("score/", "result/")) and n.count("/") > 1}
    )
    if not named or named == [expected]:
        return []
    return [
        _disagrees(
            entry,
            f"{upstream}'s score files are of model {named[0]!r}; the run's model is {model!r}",
        )
    ]


def _bfcl_requests(
    evidence: Gx10Evidence, shard: object, component: str, entry: str, upstream: str
) -> list[Finding]:
    """Each sample bfcl-eval scored asked the model at least once (its handler sends one
    request an entry, a multi-turn entry more), so a gate's samples cannot outnumber the
    requests the transport log holds of the component it gates (the main harness's among
    them: a bound, not a match)."""
    if not isinstance(shard, BfclShard) or evidence.transport is None:
        return []
    samples = sum(tally.n for tally in shard.subset_totals.values())
    requests = sum(1 for e in evidence.transport if e.component == component and e.method == "POST")
    if samples <= requests:
        return []
    return [
        _disagrees(
            entry,
            f"{upstream} scored {samples} samples; the transport log holds {requests} requests "
            f"of {component}, and each sample asks the model at least once",
        )
    ]


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


# --- upstream checkouts -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Checkout:
    name: str
    entries: list[_Listed]
    files: dict[str, str]
    """Path -> blob id."""


def _checkouts(  # noqa: PLR0912 - one branch per piece of a checkout's evidence
    evidence: Gx10Evidence,
    read: Reader,
    blob_id: BlobIds,
    findings: list[Finding],
    names: Collection[str],
) -> dict[str, _Checkout]:
    """Each recorded checkout whose evidence holds together; findings for those that do not.

    A checkout is its listing, its state record and its commit object, all three: the commit
    object is what ties the listing (and every file read through it) to the pinned commit, so
    a checkout without one of them proves nothing and is a finding, not a check left out."""
    found = {}
    for upstream in evidence.upstreams:
        base = f"upstreams/{upstream.name}"
        listing = upstream.tree or f"{base}/tree.txt"  # the runner's place, where none is named
        needed = [listing, f"{base}/checkout.json", f"{base}/commit.txt"]
        missing = [n for n in needed if n not in names]
        if names and missing:
            findings.append(
                _finding(
                    "checkout_mismatch",
                    missing[0],
                    f"the {upstream.name} checkout is not recorded whole: no {missing[0]}",
                )
            )
            continue
        data = read(listing)
        if data is None:
            continue
        entries = _listing(data)
        if isinstance(entries, str):
            findings.append(_finding("checkout_mismatch", listing, f"{listing}: {entries}"))
            continue
        tree = git_tree_id(entries)
        state_data = read(f"{base}/checkout.json")
        if state_data is not None:
            problem = _state_problem(state_data, upstream, tree)
            if problem is not None:
                findings.append(_finding("checkout_mismatch", f"{base}/checkout.json", problem))
                continue
        commit = read(f"{base}/commit.txt")
        if commit is not None:
            problem = _commit_problem(commit, upstream.commit, tree)
            if problem is not None:
                findings.append(_finding("checkout_mismatch", f"{base}/commit.txt", problem))
                continue
        files = {e.path: e.object_id for e in entries if e.kind == "blob"}
        bad = False
        listed = set(files.values())
        for name in sorted(n for n in names if n.startswith(f"{base}/files/")):
            if name.rsplit("/", 1)[1] not in listed:
                findings.append(
                    _finding(
                        "checkout_mismatch",
                        name,
                        f"{name}: a file the {upstream.name} listing does not name",
                    )
                )
                bad = True
        for object_id in sorted(set(files.values())):
            seen = blob_id(f"{base}/files/{object_id}")
            if seen is not None and seen != object_id:
                findings.append(
                    _finding(
                        "checkout_mismatch",
                        f"{base}/files/{object_id}",
                        f"{base}/files/{object_id}: the file's git blob id is {seen}, not its name",
                        expected=object_id,
                        got=seen,
                    )
                )
                bad = True
        if not bad:
            found[upstream.name] = _Checkout(upstream.name, entries, files)
    return found


def _state_problem(data: bytes, upstream: Any, tree: str | None) -> str | None:
    where = f"upstreams/{upstream.name}/checkout.json"
    try:  # strict: a repeated key, NaN or a member of no meaning is not a checkout record
        state: CheckoutState = parse_document(KINDS["checkout-state"], data, where)
    except InvalidInput as exc:
        return f"{where}: not a checkout record ({exc})"
    if state.commit != upstream.commit:
        return f"{where}: commit {state.commit!r}, the manifest says {upstream.commit}"
    if state.repository != upstream.repository:
        said = state.repository
        return f"{where}: repository {said!r}, the manifest says {upstream.repository}"
    if (state.porcelain == "") != upstream.clean:
        return (
            f"{where}: git status {state.porcelain[:200]!r} disagrees with clean={upstream.clean}"
        )
    if tree is None or state.tree != tree:
        return f"{where}: tree {state.tree!r}; the listing hashes to {tree}"
    return None


def _commit_problem(data: bytes, commit: str, tree: str | None) -> str | None:
    if _git_object(b"commit", data) != commit:
        return f"the commit object hashes to {_git_object(b'commit', data)}, not {commit}"
    first = data.split(b"\n", 1)[0]
    if tree is None or first != b"tree " + tree.encode():
        return (
            f"the commit's tree is {first[5:].decode('ascii', 'replace')!r}, the listing's {tree}"
        )
    return None


# --- Hermes -----------------------------------------------------------------------------------


SPARK_SUITE = "eval_suite.py"
"""Where Spark Bench's checkout defines its scenarios, each a ``dict(id=..., domain=...,
difficulty=...)``: the weights of a domain's quality."""
MAX_SPARK_SUITE = 16 << 20


def _spark_weights(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    foreign: Collection[str] = (),
) -> list[Finding]:
    """Spark Bench's code domain quality recomputed from its scenarios' scores in the raw CSV
    and their difficulties in the recorded checkout (``eval_suite.run_suite``: 100 x the
    difficulty-weighted mean): a quality its scores cannot give is a record that disagrees with
    them. Checked where both are at hand: a checkout whose suite defines no difficulty for
    every scored code scenario is not read this way (the reader's own bound still holds)."""
    upstream = pins.pins.component_upstreams.get("coding")
    harness = pins.pins.harnesses.get(upstream or "")
    quality = evidence.spark_quality
    if harness is None or harness.parser != "spark-bench" or upstream in foreign:
        return []
    checkout = checkouts.get(upstream or "")
    object_id = checkout.files.get(SPARK_SUITE) if checkout is not None else None
    data = read(f"upstreams/{upstream}/files/{object_id}") if object_id is not None else None
    place, csv_data = "", None
    for served in (c for c, u in pins.pins.component_upstreams.items() if u == upstream):
        place = raw_name(served, SPARK_BENCH_CSV)  # kept at any place the harness serves, as
        if (csv_data := read(place)) is not None:  # its records are re-read from (_raw_files)
            break
    if quality is None or data is None or csv_data is None or len(data) > MAX_SPARK_SUITE:
        return []
    try:
        scores = spark_code_scores(csv_data)
    except OutputsUnreadable:  # the raw outputs' own check says so
        return []
    weights = _suite_difficulties(data)
    if not scores or not all(weights.get(i, 0) > 0 for i in scores):
        return []
    total = math.fsum(weights[i] for i in scores)
    expected = 100 * math.fsum(scores[i] * weights[i] for i in scores) / total
    if abs(expected - quality.code_domain_quality) <= SPARK_BENCH_SLACK:
        return []
    return [
        _disagrees(
            place,
            f"the code domain's quality is {quality.code_domain_quality:g}; its {len(scores)} "
            f"scenarios' scores, weighted by their difficulties in the {upstream} checkout's "
            f"{SPARK_SUITE}, give {expected:.2f}",
            expected=f"{expected:.1f}",
            got=f"{quality.code_domain_quality:g}",
        )
    ]


def _suite_difficulties(data: bytes) -> dict[str, float]:
    """Each code scenario's difficulty as ``eval_suite.py`` defines it (literal ``dict(id=...,
    domain="code", difficulty=...)`` calls; parsed, never run); none when it does not parse."""
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, float] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "dict":
            continue
        given = {
            k.arg: k.value.value
            for k in node.keywords
            if k.arg in ("id", "domain", "difficulty") and isinstance(k.value, ast.Constant)
        }
        key, difficulty = given.get("id"), given.get("difficulty")
        if (
            given.get("domain") == SPARK_BENCH_CODE_DOMAIN
            and isinstance(key, str)
            and isinstance(difficulty, int | float)
            and not isinstance(difficulty, bool)
        ):
            found[key] = math.nan if key in found else float(difficulty)  # twice: no weight
    return {k: v for k, v in found.items() if math.isfinite(v)}


def _task_manifest(  # noqa: PLR0911 - one return per reason the task set cannot be read
    pins: PinSetSource, checkouts: Mapping[str, _Checkout], read: Reader
) -> dict[str, dict[str, Any]] | str:
    """The pinned Hermes tasks by id (limits filled in from the pins), or why they cannot be
    read from the recorded checkout."""
    hermes = pins.pins.hermes
    assert hermes is not None  # noqa: S101 - the caller checks
    checkout = checkouts.get(hermes.upstream)
    if checkout is None:
        return f"the {hermes.upstream} checkout is not recorded whole"
    object_id = checkout.files.get(hermes.tasks_manifest)
    if object_id is None:
        return f"{hermes.tasks_manifest} is not in the {hermes.upstream} checkout's listing"
    data = read(f"upstreams/{hermes.upstream}/files/{object_id}")
    if data is None:
        return f"{hermes.tasks_manifest} ({object_id}) is not kept in the bundle"
    try:
        manifest = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        return f"{hermes.tasks_manifest}: not TOML: {str(exc)[:200]}"
    tasks: dict[str, dict[str, Any]] = {}
    for task in manifest.get("task", []) if isinstance(manifest.get("task"), list) else []:
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            return f"{hermes.tasks_manifest}: a task without an id"
        patterns = task.get("allowed_changes", [])
        limits = [task.get("inactivity_s", hermes.inactivity_s), task.get("wall_s", hermes.wall_s)]
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            return (
                f"{hermes.tasks_manifest}: task {task['id']}: allowed_changes is no list of paths"
            )
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in limits):
            return f"{hermes.tasks_manifest}: task {task['id']}: a limit is not a number"
        tasks[task["id"]] = {
            "allowed_changes": tuple(patterns),
            "inactivity_s": limits[0],
            "wall_s": limits[1],
        }
    if hermes.tasks is not None:
        missing = [t for t in hermes.tasks if t not in tasks]
        if missing:
            return f"{hermes.tasks_manifest} has no task {missing[0]!r} the pin set selects"
        tasks = {t: tasks[t] for t in hermes.tasks}
    return tasks


def _hermes(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    selected: Sequence[ComponentName],
    checkouts: Mapping[str, _Checkout],
    read: Reader,
    *,
    foreign: Collection[str] = (),
) -> list[Finding]:
    tasks = evidence.hermes_tasks
    name = "components/hermes/tasks.jsonl"
    if tasks is None or "hermes" not in selected:
        return []
    findings = []
    for number, task in enumerate(tasks, start=1):
        findings += _task_self(task, name, number)
    if pins.pins.hermes is None or pins.pins.hermes.upstream in foreign:
        return findings  # no pinned task set, or another harness's tasks (ADR 0036)
    pinned = _task_manifest(pins, checkouts, read)
    if isinstance(pinned, str):
        return [*findings, _disagrees(name, f"the pinned task set cannot be read: {pinned}")]
    seen: set[str] = set()
    for number, task in enumerate(tasks, start=1):
        where = f"{name}:{number}"
        if task.task in seen:
            findings.append(_disagrees(name, f"task {task.task} is recorded twice", path=where))
            continue
        seen.add(task.task)
        frozen = pinned.get(task.task)
        if frozen is None:
            findings.append(_disagrees(name, f"task {task.task} is not a pinned task", path=where))
            continue
        for field, got, expected in (
            ("allowed_changes", task.allowed_changes, frozen["allowed_changes"]),
            ("inactivity_limit_s", task.inactivity_limit_s, frozen["inactivity_s"]),
            ("wall_limit_s", task.wall_limit_s, frozen["wall_s"]),
        ):
            if got != expected:
                findings.append(
                    _disagrees(
                        name,
                        f"task {task.task}: {field} is {json.dumps(got)}; the pinned task "
                        f"manifest and pin set give {json.dumps(expected)}",
                        path=where,
                        expected=json.dumps(expected)[:4096],
                        got=json.dumps(got)[:4096],
                    )
                )
    for missing in sorted(set(pinned) - seen):
        findings.append(_disagrees(name, f"pinned task {missing} has no record"))
    return findings


def _task_self(task: HermesTask, name: str, number: int) -> list[Finding]:
    where = f"{name}:{number}"
    findings = []
    if task.outcome == "PASS" and (not task.cases or not all(c.passed for c in task.cases)):
        findings.append(
            _disagrees(
                name,
                f"task {task.task} is PASS, but "
                f"{'has no evaluator case' if not task.cases else 'an evaluator case failed'}",
                path=where,
            )
        )
    problem = _outcome_problem(task)
    if problem is not None:
        findings.append(_disagrees(name, f"task {task.task} is {task.outcome}, but {problem}",
                                   path=where))  # fmt: skip
    for path in (*task.changed_paths, *task.allowed_changes):
        if normal_path(path) is None:
            findings.append(
                _disagrees(
                    name,
                    f"task {task.task}: {path!r} is not a path inside the workspace",
                    path=where,
                )
            )
    return findings


def _outcome_problem(task: HermesTask) -> str | None:
    """Why a task's TIMEOUT or HARNESS_ERROR is not what its own record shows (either would
    make a model's failed task the clock's or the harness's): a task stopped at a limit has
    reached it (its wall or its silence), and never reached its evaluation; a harness that
    failed did not leave a whole, trusted evaluation behind."""
    if task.outcome == "TIMEOUT":
        if task.cases:
            return "it has evaluator cases: a task stopped at a limit never reached them"
        if task.wall_s is None or task.max_inactivity_s is None:
            return "its times are not recorded: a task is stopped at a limit it was seen to reach"
        if task.wall_s < task.wall_limit_s and task.max_inactivity_s < task.inactivity_limit_s:
            return (
                f"its wall {task.wall_s:g} s and longest silence {task.max_inactivity_s:g} s "
                f"are within both limits ({task.wall_limit_s:g} s, {task.inactivity_limit_s:g} s)"
            )
    if task.outcome == "HARNESS_ERROR" and task.trusts():
        return "its evaluation is whole: every kind of evidence present and trusted"
    return None


# --- figures measured on exchanges --------------------------------------------------------------


PROBE_PLACES = {"response": "probes/direct-response.json", "tool_call": "probes/tool-call.json"}
"""The logical name of each probe's record (bundle_schema/roles.py)."""


def _probes(evidence: Gx10Evidence) -> list[Finding]:
    exchanges = {e.id: e for e in evidence.transport or ()}
    findings = []
    for probe in evidence.probes:
        name = PROBE_PLACES[probe.kind]
        exchange = exchanges.get(probe.exchange)
        if exchange is None:
            continue  # the transport gate says so
        finish, _message, tokens = read_reply(body_json(exchange.response_body))
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        if probe.completion_tokens != tokens or probe.finish_reason != finish:
            findings.append(
                _disagrees(
                    name,
                    f"the probe records {probe.completion_tokens} tokens and finish "
                    f"{probe.finish_reason!r}; exchange {probe.exchange} says {tokens} and "
                    f"{finish!r}",
                )
            )
    return findings


def _pinned_requests(pins: PinSetSource) -> int | None:
    """How many requests the pinned Infermark command makes (its ``-n``), where the pin set
    runs Infermark for performance and its command says."""
    upstream = pins.pins.component_upstreams.get("performance")
    harness = pins.pins.harnesses.get(upstream) if upstream is not None else None
    if harness is None or harness.parser != "infermark":
        return None
    command = list(harness.command)
    for flag, value in itertools.pairwise(command):
        if flag in ("-n", "--requests") and value.isascii() and value.isdigit():
            return int(value)
    for part in command:  # click's joined forms: --requests=20, -n20
        for prefix in ("--requests=", "-n"):
            value = part.removeprefix(prefix)
            if value != part and value.isascii() and value.isdigit():
                return int(value)
    return None


def _infermark(evidence: Gx10Evidence, pins: PinSetSource) -> list[Finding]:
    record = evidence.infermark
    name = "components/performance/infermark-c1.json"
    if record is None or evidence.transport is None:
        return []
    measured = [e for e in evidence.transport or () if e.component == "performance"]
    problems = []
    pinned = _pinned_requests(pins)
    if pinned is not None and record.requests != pinned:
        problems.append(f"{record.requests} requests; the pinned command makes {pinned} (-n)")
    errors = sum(1 for e in measured if exchange_failed(e))
    replies = [(e, reply_facts(e)) for e in measured]
    visible = sum(r.visible for _, r in replies)
    if record.requests != len(measured):
        problems.append(f"{record.requests} requests, the log holds {len(measured)}")
    if record.errors != errors:
        problems.append(f"{record.errors} errors, the exchanges show {errors}")
    if record.visible_chunks != visible:
        problems.append(f"{record.visible_chunks} visible chunks, the streams hold {visible}")
    rate = record.visible_chunks / record.wall_seconds if record.wall_seconds > 0 else 0.0
    if not math.isclose(float(record.tokens_per_second), rate, rel_tol=1e-6, abs_tol=1e-9):
        problems.append(
            f"{record.tokens_per_second} chunk/s is not {record.visible_chunks} chunks over "
            f"{record.wall_seconds} s"
        )
    ends = [_end(e, r) for e, r in replies]
    span = max(ends) - min(e.started for e in measured) if measured else None
    busy = sum(end - e.started for e, end in zip(measured, ends, strict=True))  # one after another
    if span is not None and record.wall_seconds + SPAN_SLACK_S < span:
        problems.append(f"a wall of {record.wall_seconds} s, the exchanges span {span:.3f} s")
    elif record.wall_seconds + SPAN_SLACK_S < busy:  # at concurrency 1
        problems.append(
            f"a wall of {record.wall_seconds} s at concurrency 1; its {len(measured)} "
            f"exchanges took {busy:.3f} s one after another"
        )
    firsts = [
        r.first_visible for _, r in replies if r.first_visible is not None and r.first_visible >= 0
    ]
    if firsts and record.ttft_p50_seconds + TTFT_SLACK_S < statistics.median(firsts):
        problems.append(
            f"a TTFT p50 of {record.ttft_p50_seconds} s, the observer saw the first visible "
            f"chunks at a median {statistics.median(firsts):.3f} s"
        )
    return [_disagrees(name, f"the record says {p}", path=name) for p in problems]


def _end(exchange: TransportExchange, facts: ReplyFacts) -> float:
    """The last thing the observer saw of an exchange (``facts``: its reply's): its end, or its
    last chunk where that came later or no end is recorded (an end left out, or set before the
    chunks, never makes an exchange shorter)."""
    last = exchange.started + facts.last_chunk
    return max(last, exchange.ended if exchange.ended is not None else last)


def _probe_contracts(evidence: Gx10Evidence) -> list[Finding]:
    """Each probe asked and expected what its contract fixes (``pins/_probes.py``), never what
    its record says: the prompt of its exchange's request, the tools offered, the answer that
    passes, and the exchange is one the probes made."""
    exchanges = {e.id: e for e in evidence.transport or ()}
    findings = []
    for probe in evidence.probes:
        name = PROBE_PLACES[probe.kind]
        contract = PROBE_CONTRACTS.get(probe.contract)
        if contract is None:
            continue  # the probe gate says the contract is not the pinned one
        problems = []
        wanted = contract.expected(probe.kind)
        if probe.expected != wanted:
            problems.append(f"it expects {json.dumps(probe.expected)[:120]}; its contract "
                            f"{probe.contract} expects {json.dumps(wanted)}")  # fmt: skip
        exchange = exchanges.get(probe.exchange)
        if exchange is not None:
            request = body_json(exchange.request_body)
            messages = request.get("messages") if isinstance(request, dict) else None
            last = messages[-1] if isinstance(messages, list) and messages else None
            asked = last.get("content") if isinstance(last, dict) else None
            prompt = contract.prompt(probe.kind)
            if asked != prompt:
                problems.append(f"exchange {probe.exchange} asked {json.dumps(asked)[:120]}, "
                                f"not the contract's {json.dumps(prompt)}")  # fmt: skip
            tools = request.get("tools") if isinstance(request, dict) else None
            if probe.kind == "tool_call" and tools != [dict(contract.tool)]:
                problems.append(
                    f"exchange {probe.exchange} offered other tools than the contract's"
                )
            for key, pinned in contract.sampling.items():  # the sampling the contract pins
                given = isinstance(request, dict) and key in request
                value = request[key] if given else None
                if not given or type(value) not in (int, float) or value != pinned:
                    shown = f"{key} {json.dumps(value)[:60]}" if given else f"no {key}"
                    problems.append(f"exchange {probe.exchange} asked with {shown}, not the "
                                    f"contract's pinned {key} {json.dumps(pinned)}")  # fmt: skip
            if exchange.component != "probes":
                problems.append(
                    f"exchange {probe.exchange} is {exchange.component!r}'s, not a probe's"
                )
            sent = _without_policy(request, evidence)
            wanted_request = contract.request(
                probe.kind, evidence.model.runtime_model_id, probe.ceiling_tokens
            )
            if not problems and sent != wanted_request:
                keys = sorted(
                    k for k in {*sent, *wanted_request} if sent.get(k) != wanted_request.get(k)
                )
                problems.append(
                    f"exchange {probe.exchange} asked otherwise than the contract's request "
                    f"({', '.join(keys)[:200]} differ): a probe asks the contract's question alone"
                )
        findings += [_disagrees(name, p) for p in problems]
    return findings


def _without_policy(request: object, evidence: Gx10Evidence) -> dict[str, Any]:
    """A recorded request body without the run's reasoning policy where its serialization
    writes it (and the objects it made on the way, left empty): what the runner sent before the
    observer wrote the policy in. The policy itself is the reasoning gates' to check."""
    config = evidence.config
    serialization = config.reasoning_policy.serialization if config is not None else None
    if serialization is None:
        return copy.deepcopy(request) if isinstance(request, dict) else {}
    return serialization.removed_from(request)


def _exchange_ids(evidence: Gx10Evidence) -> list[Finding]:
    """The observer numbers exchanges 0, 1, 2, ... as it receives them and writes them in that
    order: a log whose ids skip lost an exchange, whatever count the run config states."""
    for expected, exchange in enumerate(evidence.transport or ()):
        if exchange.id != expected:
            return [
                _disagrees(
                    "transport/exchanges.jsonl",
                    f"exchange ids go from {expected - 1} to {exchange.id}: an exchange is "
                    "missing from the log",
                    expected=str(expected),
                    got=str(exchange.id),
                )
            ]
    return []


def _unknown_upstreams(evidence: Gx10Evidence, names: Collection[str]) -> list[Finding]:
    """Checkout evidence of an upstream the manifest does not name: evidence of nothing."""
    known = {u.name for u in evidence.upstreams}
    return [
        _finding(
            "checkout_mismatch",
            name,
            f"{name}: checkout evidence of {name.split('/')[1]!r}, an upstream the manifest "
            "does not name",
        )
        for name in sorted(names)
        if name.startswith("upstreams/") and name.split("/")[1] not in known
    ]


def _completed_by(upstream: str, evidence: Gx10Evidence, pins: PinSetSource) -> list[str]:
    """The components a harness completed, or partly completed (a partial one is scored too,
    so it is held to the same pins): the ones it is the upstream of, and those it gates where
    its gate passed (a gate that did not run is upstream_checkout's). A partial one is named
    ``<component> (partial)``."""
    return [
        c if result.status == "COMPLETED" else f"{c} (partial)"
        for c, u in pins.pins.component_upstreams.items()
        if (
            u == upstream
            or (upstream in pins.pins.gates_of(c) and upstream in evidence.supplementary.get(c, {}))
        )
        and (result := evidence.results.get(c)) is not None
        and result.status in ("COMPLETED", "PARTIAL")
    ]


def pinned_listings(pins: PinSetSource, foreign: Collection[str] = ()) -> set[str]:
    """The data listings the pin set pins, which the verifier reads, but a ``foreign``
    harness's (ADR 0036; any other is unread)."""
    return {
        f"upstreams/{upstream}/data/{name}.jsonl"
        for upstream, harness in pins.pins.harnesses.items()
        if upstream not in foreign
        for name in harness.data
    }


def _data_listings(
    evidence: Gx10Evidence, pins: PinSetSource, read: Reader, foreign: Collection[str] = ()
) -> list[Finding]:
    """A component completed by a harness the pins give data directories holds only when the
    listing kept of each is the one the pin set pins (its SHA-256 is the pin); not held against
    a ``foreign`` harness (ADR 0036)."""
    findings = []
    for upstream, harness in sorted(pins.pins.harnesses.items()):
        pinned_data = bool(harness.data) and upstream not in foreign
        completed = _completed_by(upstream, evidence, pins) if pinned_data else []
        for name, pinned in sorted(harness.data.items()) if completed else ():
            entry = f"upstreams/{upstream}/data/{name}.jsonl"
            data = read(entry)
            digest = None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()
            if digest != pinned:
                shown = "no listing shows" if digest is None else f"lists as {digest}, not"
                findings.append(
                    _disagrees(
                        entry,
                        f"{', '.join(completed)} completed by {upstream}, whose pinned data "
                        f"directory {name} {shown} the pinned {pinned}",
                        expected=pinned,
                        got=digest or "none",
                    )
                )
    return findings


def _environments(
    evidence: Gx10Evidence, pins: PinSetSource, read: Reader, foreign: Collection[str] = ()
) -> list[Finding]:
    """A component completed by a harness the pins give requirements or variables holds only
    when the recorded environment of that harness shows every requirement among its
    interpreter's distributions and every pinned variable with its pinned value. A ``foreign``
    harness's environment is not held to the pins (ADR 0036)."""
    findings = []
    for upstream, harness in sorted(pins.pins.harnesses.items()):
        if upstream in foreign or not (harness.requirements or harness.env):
            continue
        completed = _completed_by(upstream, evidence, pins)
        if not completed:
            continue
        entry = f"upstreams/{upstream}/environment.json"
        who = f"{', '.join(completed)} completed by {upstream}"
        record, problem = _environment_record(read(entry), entry, upstream)
        if record is None:
            findings.append(
                _disagrees(
                    entry,
                    f"{who}, whose pinned environment no readable environment record shows "
                    f"({problem})",
                )
            )
            continue
        variables = record.variables
        lacking = missing_requirements(harness.requirements, record.distributions)
        if lacking:
            findings.append(
                _disagrees(entry, f"{who}, whose interpreter lacks the pinned {', '.join(lacking)}")
            )
        other = [n for n, v in sorted(harness.env.items()) if variables.get(n) != v]
        if other:
            name = other[0]
            shown = json.dumps(variables.get(name))[:80] if name in variables else "not set"
            findings.append(
                _disagrees(
                    entry,
                    f"{who}, which ran with {name} {shown}, not the pinned "
                    f"{json.dumps(harness.env[name])[:80]}",
                    expected=harness.env[name][:200],
                    got=None if name not in variables else str(variables[name])[:200],
                )
            )
    return findings


def _environment_record(
    data: bytes | None, entry: str, upstream: str
) -> tuple[HarnessEnvironment | None, str]:
    """The environment record at ``entry`` if it reads as one of ``upstream``'s harness, else
    None and why not. Strict: a repeated key, NaN, a member of no meaning or a version this
    verifier does not read is no record; nor is one that names another harness (a record
    copied from another harness's place is not this one's)."""
    if data is None:
        return None, f"{entry} is not in the bundle"
    try:
        record: HarnessEnvironment = parse_document(KINDS["harness-environment"], data, entry)
    except InvalidInput as exc:
        return None, str(exc)
    if record.upstream != upstream:
        return None, f"{entry}: the environment of {record.upstream!r}, not of {upstream!r}"
    return record, ""


def unread_raw_outputs(
    pins: PinSetSource, names: Collection[str], foreign: Collection[str] = ()
) -> list[str]:
    """Raw outputs no reader reads: at the raw place of a component whose harness has no
    reader or is ``foreign`` (another harness's outputs, ADR 0036), or files its reader does
    not open. Kept as evidence; listed as unread."""
    upstreams = pins.pins.component_upstreams
    unread = []
    for name in sorted(names):
        gate = name.split("/", 5)
        if len(gate) == 6 and gate[0] == "components" and gate[2] == "gates" and gate[4] == "raw":
            # a gate's raw output: read when the pins run that upstream as that component's gate
            gated = gate[3] in pins.pins.gates_of(gate[1]) and gate[3] not in foreign
            if not gated or not READS[pins.pins.harnesses[gate[3]].parser](gate[5]):
                unread.append(name)
            continue
        parts = name.split("/", 3)
        if len(parts) < 4 or parts[0] != "components" or parts[2] != "raw":
            continue
        upstream = upstreams.get(parts[1], "")  # type: ignore[call-overload]
        harness = None if upstream in foreign else pins.pins.harnesses.get(upstream)
        if harness is None or not READS[harness.parser](parts[3]):
            unread.append(name)
    return unread


# --- times ------------------------------------------------------------------------------------


def _times(
    evidence: Gx10Evidence, pins: PinSetSource, foreign: Collection[str] = ()
) -> list[Finding]:
    """Each component's times read (a component that ran has both), it starts before it ends
    and ends before the bundle was made, and its harness ran within its pinned wall (not a
    ``foreign`` harness's: ADR 0036); no two harnesses' windows overlap."""
    created = _stamp(evidence.created_at)
    findings = []
    for component, result in sorted(evidence.results.items()):
        name = f"components/{component}/result.json"
        started, ended = _stamp(result.started_at), _stamp(result.ended_at)
        upstream = pins.pins.component_upstreams.get(component)
        for field, value, read in (("started_at", result.started_at, started),
                                   ("ended_at", result.ended_at, ended)):  # fmt: skip
            if value is not None and read is None:
                findings.append(_disagrees(name, f"{field} {value} is no time"))
            elif value is None and result.status in RAN and upstream not in foreign:
                findings.append(_disagrees(name, f"{result.status}, and no {field}: it ran"))
        if started is not None and ended is not None and ended < started:
            findings.append(_disagrees(name, f"ends at {result.ended_at}, before it starts"))
        if ended is not None and created is not None and ended > created + TIME_SLACK_S:
            findings.append(
                _disagrees(
                    name,
                    f"ends at {result.ended_at}, after the bundle was made ({evidence.created_at})",
                )
            )
        harness = (
            pins.pins.harnesses.get(upstream) if upstream and upstream not in foreign else None
        )
        took = ended - started if started is not None and ended is not None else None
        # a component's gates run after its harness, each within its own wall (ADR 0022)
        gates = [pins.pins.harnesses[g].wall_s for g in pins.pins.gates_of(component)]
        wall = harness.wall_s + sum(gates) if harness is not None else 0
        if harness is not None and took is not None and took > wall + TIME_SLACK_S:
            whose = "its harness's pinned wall" + (" and its gates'" if gates else "")
            findings.append(
                _disagrees(name, f"ran {took:g} s, over {whose} of {wall:g} s, yet was not stopped")
            )
        if result.status == "FAILED" and upstream not in foreign:
            stopped = _stopped_early(result.reason or "", upstream or "", pins, took)
            if stopped is not None:
                findings.append(_disagrees(name, stopped))
    windows = _windows(evidence)
    return findings + _overlaps(windows, pins, foreign) + _on_the_log_clock(evidence, windows)


class _Window(NamedTuple):
    """A component's window in seconds since the epoch, and its result."""

    component: ComponentName
    started: float
    ended: float
    result: ComponentResult


def _windows(evidence: Gx10Evidence) -> dict[str, _Window]:
    """Each component's window, where both its times read and it ends no earlier than it
    starts, by component (in the order of the results)."""
    windows = {}
    for component, result in evidence.results.items():
        started, ended = _stamp(result.started_at), _stamp(result.ended_at)
        if started is not None and ended is not None and started <= ended:
            windows[str(component)] = _Window(component, started, ended, result)
    return windows


PREAMBLE = ("identity", "probes")
"""The observer's labels of the exchanges a run makes before any harness: the identity's
questions and the direct probes."""


def _on_the_log_clock(evidence: Gx10Evidence, windows: Mapping[str, _Window]) -> list[Finding]:
    """The windows agree with the transport log's clock: the observer times each exchange on
    one monotonic clock, so there is one offset from it to the runner's times at which every
    exchange a component's harness made starts inside that component's window, and the run's
    identity and probe exchanges start before every window. A window moved alone (the first
    harness's start moved back before the probes, to make a stop at its wall plausible) leaves
    no such offset; every time moved alike does."""
    if not windows:
        return []
    first = min(windows, key=lambda c: windows[c].started)
    low: tuple[float, str, str] = (-math.inf, "", "")
    high: tuple[float, str, str] = (math.inf, "", "")
    for exchange in evidence.transport or ():
        at = f"exchange {exchange.id} ({exchange.component}, at {exchange.started:g} s)"
        label = exchange.component or ""
        window = windows.get(label)
        if window is not None:
            if window.started - exchange.started - TIME_SLACK_S > low[0]:
                low = (window.started - exchange.started - TIME_SLACK_S, at, label)
            if window.ended - exchange.started + TIME_SLACK_S < high[0]:
                high = (window.ended - exchange.started + TIME_SLACK_S, at, label)
        elif label in PREAMBLE:
            bound = windows[first].started - exchange.started + TIME_SLACK_S
            if bound < high[0]:
                high = (bound, f"{at}, before {first}'s start", first)
    if low[0] <= high[0]:
        return []
    # a window moved earlier is what lowers the bound its own exchanges (or the preamble) set
    moved = windows[high[2]].result
    return [
        _disagrees(
            f"components/{high[2]}/result.json",
            f"ran from {moved.started_at} to {moved.ended_at}, which the observer's clock "
            f"cannot hold with the other windows: {low[1]} and {high[1]} cannot both start "
            "inside their components' windows on one clock",
        )
    ]


def _overlaps(
    windows: Mapping[str, _Window], pins: PinSetSource, foreign: Collection[str]
) -> list[Finding]:
    """No two harnesses ran at once: the runner runs one at a time, and the transport log
    names the component of each exchange by the harness running then. Components of one
    harness's run share its start (a component's gates extend its end only: its other
    components, whose exchanges the log names by the first, have no window of their own to
    move); so two windows overlap only from one start, of one upstream (of a ``foreign``
    harness, ADR 0036, the pin set cannot tell the runs apart: any). An overlap up to
    :data:`TIME_SLACK_S` is whole-second stamps."""
    upstreams = pins.pins.component_upstreams
    spans = [
        (c, w.started, w.ended, upstreams.get(w.component)) for c, w in sorted(windows.items())
    ]
    findings = []
    for number, (component, started, ended, upstream) in enumerate(spans):
        pinned = upstream is not None and upstream not in foreign
        for other, other_started, other_ended, other_upstream in spans[number + 1 :]:
            first, second = sorted([(started, component), (other_started, other)])
            early, later = windows[first[1]].result, windows[second[1]].result
            if pinned and upstream == other_upstream and started != other_started:
                findings.append(
                    _disagrees(
                        f"components/{second[1]}/result.json",
                        f"starts at {later.started_at}, and {first[1]} at {early.started_at}: "
                        f"one run of {upstream} gives the components it serves its one start",
                    )
                )
                continue
            if min(ended, other_ended) - max(started, other_started) <= TIME_SLACK_S:
                continue
            one_run = upstream == other_upstream or upstream in foreign or other_upstream in foreign
            if one_run and started == other_started:
                continue
            findings.append(
                _disagrees(
                    f"components/{second[1]}/result.json",
                    f"ran from {later.started_at} to {later.ended_at}, while {first[1]} ran (from "
                    f"{early.started_at} to {early.ended_at}), of another harness: the runner "
                    "runs one harness at a time",
                )
            )
    return findings


RAN = ("COMPLETED", "PARTIAL", "QUARANTINED")
"""The statuses of a component whose harness ran: each has the window the runner stamped."""

LIMIT_STOP = re.compile(r"\b(inactivity|wall) limit exceeded\b")
"""A component's reason when the sandbox stopped a harness of it at a limit (the runner's
words: "<upstream> wall limit exceeded", "its gate <gate> failed: <gate> wall limit
exceeded"), wherever in the reason they are."""
_GATE_FAILED = re.compile(r"^its gate (\S+) failed: ")


def _stopped_early(
    reason: str, upstream: str, pins: PinSetSource, took: float | None
) -> str | None:
    """Why a FAILED result's stop at a limit cannot be: the sandbox stops a harness only once
    the limit has passed, and the result's times (which must read) enclose its run, and its
    gates' after it. The limit is the gate's when the reason names a failed gate."""
    stop = LIMIT_STOP.search(reason)
    if stop is None:
        return None
    gate = _GATE_FAILED.match(reason)
    stopped = gate.group(1) if gate is not None else upstream
    harness = pins.pins.harnesses.get(stopped)
    if harness is None:
        return f"says a harness was stopped at a limit, and {stopped!r} is no pinned harness"
    kind = stop.group(1)
    limit = harness.wall_s if kind == "wall" else harness.inactivity_s
    if took is None:
        return f"says {stopped} was stopped at its {kind} limit, and its times do not read"
    if took < limit - TIME_SLACK_S:
        return (
            f"says {stopped} was stopped at its {kind} limit of {limit:g} s, yet the component "
            f"ran {took:g} s"
        )
    return None


# --- all --------------------------------------------------------------------------------------


def consistency_findings(
    evidence: Gx10Evidence,
    pins: PinSetSource,
    read: Reader,
    blob_id: BlobIds | None = None,
    *,
    selected: Sequence[ComponentName] | None = None,
    names: Collection[str] = (),
    ledger: LedgerFacts | None = None,
) -> list[Finding]:
    """Every cross-check of a run's records against what they were derived from.

    Args:
        evidence: the assembled evidence.
        pins: the trusted pin set it is judged by.
        read: reads an evidence entry's bytes (bounded by the caller).
        blob_id: the git blob id of an entry's bytes (default: of what ``read`` returns).
        selected: the profile's components (default: those of the run's profile).
        names: every evidence entry's logical name (raw outputs are found by their place).
        ledger: the socket ledger's facts, when a bounded reader kept them instead of its
            entries (default: read from ``evidence.socket_ledger``).
    """
    if selected is None:
        selected = profile_components(pins, evidence)
    foreign = foreign_harnesses(evidence, pins, selected)
    findings: list[Finding] = []
    findings += _ledger(evidence, ledger)
    derived = _derived(evidence)
    findings += _raw_outputs(evidence, pins, read, names, foreign, derived=derived,
                             selected=selected)  # fmt: skip
    upstreams = pins.pins.component_upstreams
    own = [c for c in evidence.results if upstreams.get(c) not in foreign]
    recorded = {n.split("/")[1] for n, v in derived.items() if v is not None}
    findings += _quarantine_statuses(evidence, own)
    findings += _statuses(evidence, pins, selected=selected, own=own, recorded=recorded)
    findings += _gate_outputs(evidence, pins, read, names, foreign)
    if blob_id is None:
        blob_id = lambda name: None if (data := read(name)) is None else git_blob_id(data)  # noqa: E731
    checkouts = _checkouts(evidence, read, blob_id, findings, names)
    findings += _hermes(evidence, pins, selected, checkouts, read, foreign=foreign)
    findings += _spark_weights(evidence, pins, checkouts, read, foreign)
    findings += _probes(evidence)
    findings += _probe_contracts(evidence)
    findings += _exchange_ids(evidence)
    findings += _unknown_upstreams(evidence, names)
    findings += _infermark(evidence, pins)
    findings += _times(evidence, pins, foreign)
    findings += _environments(evidence, pins, read, foreign)
    findings += _data_listings(evidence, pins, read, foreign)
    return findings
