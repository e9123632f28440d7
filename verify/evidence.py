"""The gx10 evidence of a run, assembled from its records by their roles, one code path for the
runner (as it records) and the verifier (as it reads a bundle).

Each role of the format (:data:`bundle_schema.roles.ROLES`) declares the field of the
gx10-evidence document its record fills (``Role.fills``); :class:`EvidenceRecords` takes the
records entry by entry and fills that field, and :meth:`EvidenceRecords.document` builds the
:class:`~bundle_schema.models.Gx10Evidence`. A record that says it is something its place is not
(a result of another component, a probe of the other kind) is not read: the verifier reports it
as a finding (``record_disagrees``), and the runner never writes one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from bundle_schema import KINDS
from bundle_schema.models import (
    BenchLocalPacks,
    BfclShard,
    Claims,
    ComponentName,
    ComponentResult,
    DirectProbe,
    Gx10Evidence,
    HermesTask,
    InfermarkStreaming,
    ModelIdentity,
    PinSetRef,
    QuarantineMarker,
    RunConfig,
    SocketLedgerEntry,
    SparkQuality,
    SparkRepeat,
    TaskTallies,
    TransportExchange,
    UpstreamCheckout,
)
from bundle_schema.roles import ROLES, Placement

__all__ = ["EvidenceRecords", "placement_problem"]

_PROBE_ROLES = tuple(role.id for role in ROLES if role.fills == "probes")


def placement_problem(placed: Placement, first: BaseModel) -> str | None:
    """Why a record is not what its place says (its component, or a probe's kind), or None."""
    role = placed.role
    component = getattr(first, "component", None)
    if isinstance(first, ComponentResult | QuarantineMarker) and component != placed.component:
        return f"the record is of component {component!r}, its place is {placed.component!r}'s"
    if (
        role is not None
        and role.variant is not None
        and getattr(first, "kind", None) != role.variant
    ):
        return f"a {getattr(first, 'kind', None)} probe at the place of the {role.id}"
    return None


@dataclass
class EvidenceRecords:
    """The records a gx10 replay reads, by the field of the gx10-evidence document each fills."""

    transport: tuple[TransportExchange, ...] | None = None
    socket_ledger: tuple[SocketLedgerEntry, ...] | None = None
    config: RunConfig | None = None
    spark_quality: SparkQuality | None = None
    spark_repeat: SparkRepeat | None = None
    hermes_tasks: tuple[HermesTask, ...] | None = None
    benchlocal: BenchLocalPacks | None = None
    infermark: InfermarkStreaming | None = None
    results: dict[ComponentName, ComponentResult] = field(default_factory=dict)
    quarantines: dict[ComponentName, QuarantineMarker] = field(default_factory=dict)
    probes: dict[str, DirectProbe] = field(default_factory=dict)
    """By role (``response probe``, ``tool-call probe``)."""
    supplementary: dict[ComponentName, dict[str, BfclShard | TaskTallies]] = field(
        default_factory=dict
    )

    def take(self, placed: Placement, documents: Sequence[BaseModel]) -> None:
        """Take one entry's documents at their place: the field its role fills gets them (all
        lines of a JSON Lines record, none of them for an empty one: a log of no entries,
        else the one document), under the place's component and upstream where it names them.
        An entry at no place, a misplaced one, a document record of no document, or a record
        that is not what its place says fills nothing."""
        role = placed.role
        if role is None or role.fills is None or placed.problem is not None:
            return
        assert role.kind is not None  # noqa: S101 - a place that fills a field holds a record
        lines = KINDS[role.kind].lines
        if not documents and not lines:
            return
        if documents and placement_problem(placed, documents[0]) is not None:
            return
        value: Any = tuple(documents) if lines else documents[0]
        current = getattr(self, role.fills)
        if not isinstance(current, dict):
            setattr(self, role.fills, value)
        elif placed.upstream is not None:
            current.setdefault(placed.component, {})[placed.upstream] = value
        else:
            current[placed.component if placed.component is not None else role.id] = value

    def document(
        self,
        *,
        run_id: str,
        created_at: str,
        profile: str,
        scoring_generation: str,
        pin_set: PinSetRef,
        model: ModelIdentity,
        upstreams: Sequence[UpstreamCheckout],
        claims: Claims,
    ) -> Gx10Evidence:
        """The gx10-evidence document of these records under a run's header."""
        return Gx10Evidence(
            schema_version=1,
            run_id=run_id,
            created_at=created_at,
            profile=profile,
            scoring_generation=scoring_generation,
            pin_set=pin_set,
            model=model,
            upstreams=tuple(upstreams),
            claims=claims,
            config=self.config,
            transport=self.transport,
            socket_ledger=self.socket_ledger,
            results=self.results,
            quarantines=self.quarantines,
            probes=tuple(self.probes[r] for r in _PROBE_ROLES if r in self.probes),
            spark_quality=self.spark_quality,
            spark_repeat=self.spark_repeat,
            hermes_tasks=self.hermes_tasks,
            benchlocal=self.benchlocal,
            infermark=self.infermark,
            supplementary=self.supplementary,
        )


def records_of(
    placements: Mapping[str, Placement], records: Mapping[str, Sequence[BaseModel]]
) -> EvidenceRecords:
    """Every record entry taken at its place, in the order of their logical names."""
    found = EvidenceRecords()
    for name in sorted(records):
        found.take(placements[name], records[name])
    return found
