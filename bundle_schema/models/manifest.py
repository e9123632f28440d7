"""The manifest (``manifest.json``) and the objects embedded in it: evidence entries, the pin set,
the runner, the model identity, the upstream checkouts, the components and the runner's claims.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StrictBool, StringConstraints, model_validator

from bundle_schema.models._common import (
    Digest,
    GitCommit,
    Identifier,
    LogicalName,
    MediaType,
    SchemaVersion,
    Score,
    Size,
    Text,
    Timestamp,
    _Model,
)

__all__ = [
    "Claims",
    "ComponentRef",
    "EvidenceEntry",
    "Manifest",
    "ModelIdentity",
    "PinSetRef",
    "ProfileDecision",
    "QualificationOutcome",
    "RankGroup",
    "ResultValidity",
    "RunnerInfo",
    "UpstreamCheckout",
]

# --- embedded objects -------------------------------------------------------------------------


class EvidenceEntry(_Model):
    """One evidence file: the blob that holds its bytes."""

    digest: Digest
    size: Size
    media_type: MediaType


class PinSetRef(_Model):
    """The pin set the run was made under, by id and by digest of its canonical JSON."""

    id: Identifier
    digest: Digest


class RunnerInfo(_Model):
    """The program that recorded the run."""

    name: Identifier
    version: Identifier


class ModelIdentity(_Model):
    """The model the endpoint served: its runtime id and an immutable digest."""

    runtime_model_id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    digest: Digest
    digest_source: Literal["declared", "weights", "endpoint"]
    engine: Identifier | None = None
    engine_version: Identifier | None = None
    endpoint: Annotated[str, StringConstraints(max_length=512)] | None = None


class UpstreamCheckout(_Model):
    """One upstream harness checked out at an exact commit."""

    name: Identifier
    repository: Annotated[str, StringConstraints(min_length=1, max_length=512)]
    commit: GitCommit
    clean: StrictBool
    tree: LogicalName | None = None
    """Evidence entry holding ``git ls-tree -r`` of the commit, where recorded."""


class ComponentRef(_Model):
    """A component the run executed, and the evidence entry of its result record."""

    name: Identifier
    result: LogicalName


QualificationOutcome = Literal["QUALIFIED", "NOT_QUALIFIED", "INFRA_ERROR"]
ResultValidity = Literal["VALID", "QUARANTINED", "INFRA_FAILURE", "INCOMPLETE"]
ProfileDecision = Literal["MEETS_PROFILE", "DOES_NOT_MEET_PROFILE", "NOT_ASSESSED"]
RankGroup = Annotated[str, StringConstraints(max_length=256)]


class Claims(_Model):
    """What the runner claims the run achieved; the verifier compares its replay with these."""

    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rankable: StrictBool
    aggregate_score: Score | None
    executed_weight: Score
    component_scores: dict[Identifier, Score | None]
    reasons: tuple[Text, ...] = ()


# --- the manifest ---------------------------------------------------------------------------------


class Manifest(_Model):
    """``manifest.json``: the bundle's table of contents and the runner's claims.

    ``content_digest`` seals the manifest: it is ``sha256:`` of the canonical JSON of the manifest
    with ``content_digest`` itself left out. It detects corruption, not forgery (see
    docs/bundle-format.md); the bundle digest is the digest of the whole file.
    """

    schema_version: SchemaVersion
    run_id: Identifier
    created_at: Timestamp
    runner: RunnerInfo
    scoring_generation: Identifier
    profile: Identifier
    pin_set: PinSetRef
    model: ModelIdentity
    upstreams: tuple[UpstreamCheckout, ...]
    components: tuple[ComponentRef, ...]
    claims: Claims
    evidence: dict[LogicalName, EvidenceEntry]
    content_digest: Digest

    @model_validator(mode="after")
    def _references_resolve(self) -> Manifest:
        names: list[tuple[str, str]] = [
            (f"components[{i}].result", c.result) for i, c in enumerate(self.components)
        ]
        names += [(f"upstreams[{i}].tree", u.tree) for i, u in enumerate(self.upstreams) if u.tree]
        for where, name in names:
            if name not in self.evidence:
                raise ValueError(f"{where} names {name!r}, which is not an evidence entry")
        for label, items in (("components", self.components), ("upstreams", self.upstreams)):
            seen: set[str] = set()
            for item in items:
                if item.name in seen:
                    raise ValueError(f"{label} lists {item.name!r} twice")
                seen.add(item.name)
        return self
