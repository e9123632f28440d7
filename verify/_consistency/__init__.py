"""Cross-checks: every derived record against what it was derived from.

Pure: the checks take the assembled evidence, the trusted pin set and a reader of evidence
entries' bytes (bounded by the caller), and return findings (:func:`consistency_findings`, all
of them, in one order). What they establish, a module each:

- the socket ledger is coherent (each entry's family agrees with its address) and ends where
  the supervisor's closing count says (:mod:`.ledger`);
- component records are what the verifier's own readers (:mod:`verify.harness_outputs`) make of
  the raw harness outputs kept beside them, quarantine markers included (:mod:`.outputs`);
- the Hermes task set, each task's limits and its frozen allowed-change patterns are those of the
  pin set and of the task manifest inside the recorded checkout, each task once; a PASS has
  evaluator cases and every one of them passed; changed paths are paths inside the workspace
  (:mod:`.hermes`); so are Spark Bench's code scenarios and its gate rows, each code scenario
  scored no higher than its answers in the transport log can earn (:mod:`.spark`), and
  benchlocal-cli's packs and the reply each scenario was graded on (:mod:`.benchlocal`);
- upstream files hash to their git blob ids, the listing to the recorded tree, the commit object
  to the pinned commit, and the checkout state agrees with the manifest (:mod:`.checkouts`);
- probe and Infermark figures agree with the exchanges they were measured on (:mod:`.exchanges`;
  Infermark's latency, TTFT and ITL distributions, :mod:`.latencies`);
- the run's times agree with each other and with the pinned harness limits (:mod:`.times`).

What a check holds against a harness's outputs (its reader, environment, data, wall, task set)
is the pin set's; it applies to the harness the pin set pins. A harness the bundle holds no
checkout of as pinned (:func:`foreign_harnesses`, :mod:`.harnesses`) is another harness, whose
outputs are not evidence under this pin set: the ``upstream_checkout`` gate fails on it as
infrastructure, and no integrity finding is made of what the pins' readers cannot read (ADR 0036).

What the checks share (the readers' types, the slack of recorded times, how a finding is made,
git object ids, paths and times) is in :mod:`._common`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from bundle_schema.models import ComponentName, Finding, Gx10Evidence
from pins import PinSetSource
from verify._consistency._common import BlobIds, Reader, git_blob_id, git_tree_id, normal_path
from verify._consistency.benchlocal import benchlocal_packs
from verify._consistency.checkouts import _checkouts
from verify._consistency.exchanges import (
    _data_listings,
    _environments,
    _exchange_ids,
    _infermark,
    _probe_contracts,
    _probes,
    _unknown_upstreams,
    pinned_listings,
    unread_raw_outputs,
)
from verify._consistency.harnesses import (
    checkout_problem,
    foreign_harnesses,
    needed_upstreams,
    profile_components,
)
from verify._consistency.hermes import _hermes
from verify._consistency.ledger import _ledger
from verify._consistency.outputs import (
    _derived,
    _gate_outputs,
    _quarantine_statuses,
    _raw_outputs,
    _statuses,
)
from verify._consistency.outputs import pinned_environments as pinned_environments
from verify._consistency.outputs import read_gate_records as read_gate_records
from verify._consistency.spark import spark_checks
from verify._consistency.times import LIMIT_STOP as LIMIT_STOP
from verify._consistency.times import _times
from verify._facts import LedgerFacts

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
    if blob_id is None:
        blob_id = lambda name: None if (data := read(name)) is None else git_blob_id(data)  # noqa: E731
    checked: list[Finding] = []  # the checkouts' findings, said after the gates' as before
    checkouts = _checkouts(evidence, read, blob_id, checked, names)
    findings += _gate_outputs(evidence, pins, read, names, foreign, checkouts=checkouts)
    findings += checked
    findings += _hermes(evidence, pins, selected, checkouts, read, foreign=foreign)
    findings += spark_checks(evidence, pins, checkouts, read, foreign)
    findings += benchlocal_packs(evidence, pins, checkouts, read, foreign)
    findings += _probes(evidence)
    findings += _probe_contracts(evidence)
    findings += _exchange_ids(evidence)
    findings += _unknown_upstreams(evidence, names)
    findings += _infermark(evidence, pins, read, foreign)
    findings += _times(evidence, pins, foreign)
    findings += _environments(evidence, pins, read, foreign)
    findings += _data_listings(evidence, pins, read, foreign)
    return findings
