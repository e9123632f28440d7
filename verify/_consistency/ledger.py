"""The socket ledger: coherent (each entry's family agrees with its address), and it ends where the
supervisor's closing count says."""

from __future__ import annotations

from bundle_schema.models import Finding, Gx10Evidence
from verify._consistency._common import _finding
from verify._facts import LedgerFacts, closing_problem, ledger_facts, ledger_problem


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
    problem, closed = closing_problem(evidence.config, ledger.count)
    if problem is not None:
        counts = {"expected": str(closed), "got": str(ledger.count)} if closed is not None else {}
        findings.append(
            _finding("ledger_incoherent", name, f"evidence {name!r}: {problem}", **counts)
        )
    return findings
