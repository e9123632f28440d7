"""What every gx10 gate and score reads: the run (its evidence, the trusted pins, the
selected components), and a gate: its id, the evidence it reads and the part of the run it
blames, declared once beside its check (:class:`Gate`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from bundle_schema.models import (
    HERMES_EVIDENCE_KINDS,
    ComponentName,
    GateResult,
    Gx10Evidence,
    TransportExchange,
)
from pins import PinSetSource
from verify._facts import (
    LedgerFacts,
    ReplyFacts,
    ledger_facts,
    reply_facts,
)

Status = Literal["pass", "fail", "infra", "not_selected"]
SPARK: tuple[ComponentName, ...] = ("coding", "reliability")
EVIDENCE_KINDS = HERMES_EVIDENCE_KINDS


def clip_text(text: str, limit: int = 4096) -> str:
    """Text from a bundle made fit for a verdict: lone surrogates escaped, cut to ``limit``."""
    clean = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


@dataclass(frozen=True)
class Check:
    """What a gate's check found: its status, why, and the evidence lines that show it."""

    status: Status
    reason: str
    evidence: tuple[str, ...] = ()


def found(status: Status, reason: str, *evidence: str) -> Check:
    return Check(status, reason, evidence)


Part = Literal[
    "identity", "endpoint", "runner", "setup", "harness", "observer", "isolation", "evaluator"
]
"""The part of a run an infrastructure failure of a gate blames (the forensic answer's
``failed_part``)."""


@dataclass(frozen=True)
class Gate:
    """One hard gate of seed 000, declared once: the forensic view, the HTML report and
    docs/verification.md read its id, its evidence and its part from here.

    Attributes:
        id: the gate's name in verdicts (the seed's wording).
        reads: the kinds of evidence it reads: evidence record kinds (their media types'
            names), and ``tree`` for the upstreams' checkout listings.
        part: the part of the run its ``infra`` result blames.
        check: the check itself, a pure function of the run.
    """

    id: str
    reads: tuple[str, ...]
    part: Part
    check: Callable[[Run], Check]

    def judge(self, run: Run) -> GateResult:
        """The gate's result for a run, its texts made fit for a verdict."""
        result = self.check(run)
        return GateResult(
            id=self.id,
            status=result.status,
            reason=clip_text(result.reason),
            evidence=tuple(clip_text(e, 512) for e in result.evidence),
        )


@dataclass(frozen=True)
class Run:
    """What the gates read: the evidence, the trusted pins and the selected components."""

    evidence: Gx10Evidence
    pins: PinSetSource
    selected: tuple[ComponentName, ...]
    given_ledger: LedgerFacts | None = field(default=None, compare=False, repr=False)
    _replies: dict[int, ReplyFacts] = field(default_factory=dict, compare=False, repr=False)

    @property
    def exchanges(self) -> dict[int, TransportExchange]:
        return {e.id: e for e in self.evidence.transport or ()}

    def reply(self, exchange: TransportExchange) -> ReplyFacts:
        """What an exchange's reply held (its body and stream read once per run)."""
        key = id(exchange)
        if key not in self._replies:
            self._replies[key] = reply_facts(exchange)
        return self._replies[key]

    def ledger(self) -> LedgerFacts | None:
        """The socket ledger's facts (given by a bounded reader, or read from the evidence)."""
        if self.evidence.socket_ledger is None:
            return None
        if self.given_ledger is not None:
            return self.given_ledger
        return ledger_facts(self.evidence.socket_ledger)

    def has(self, *components: ComponentName) -> bool:
        return any(c in self.selected for c in components)


# --- run-level gates --------------------------------------------------------------------------


def shown(value: float | None) -> str:
    return "not scored" if value is None else f"{value:g}"
