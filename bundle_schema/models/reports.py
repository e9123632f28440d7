"""The documents the CLI prints with ``--json`` beside the verdict: a ranking, a run diff, an
attestation's report, a run's result, a rejudge report and an archive report.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StringConstraints

from bundle_schema.models._common import (
    Count,
    Digest,
    Identifier,
    SchemaVersion,
    Text,
    Timestamp,
    _Model,
)
from bundle_schema.models.manifest import (
    PinSetRef,
    ProfileDecision,
    QualificationOutcome,
    RankGroup,
    ResultValidity,
)
from bundle_schema.models.verdict import Gx10Scores, SignatureCheck, SignatureStatus, Verdict

__all__ = [
    "ArchiveBundle",
    "ArchiveCounts",
    "ArchiveRefusal",
    "ArchiveReport",
    "AttestationReport",
    "CommandPath",
    "DiffItem",
    "DiffSide",
    "RankRow",
    "Ranking",
    "RefusedBundle",
    "RejudgeReport",
    "RejudgedCopy",
    "RejudgedRun",
    "RunDiff",
    "RunResult",
    "Signer",
    "Sources",
]


class Signer(_Model):
    """Who every bundle of an archive command had to have been signed by (``--identity``,
    ``--issuer``) and the digest of the Sigstore trust root the signatures were checked under."""

    identity: Text
    issuer: Text
    trusted_root: Digest


# --- what `audit rank --json` and `audit diff --json` print ---------------------------------------


class RankRow(_Model):
    """One run in a ranking listing; repeated trials are separate rows, never averaged."""

    position: Annotated[int, Field(strict=True, ge=1)] | None
    run_id: Identifier
    source: Annotated[str, StringConstraints(max_length=4096)]
    bundle_digest: Digest
    created_at: Timestamp
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    model_digest: Digest
    reasoning_policy: Annotated[str, StringConstraints(max_length=256)] | None
    pin_set: PinSetRef
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rank_group: RankGroup | None
    scores: Gx10Scores
    reasons: tuple[Text, ...]


class Ranking(_Model):
    """The public ranking under one pin set (seed 000), with everything else listed apart."""

    schema_version: SchemaVersion
    pin_set: PinSetRef
    ranked: tuple[RankRow, ...]
    """Complete VALID / MEETS_PROFILE primary-track results of this exact pin set, in order."""
    limitations: tuple[RankRow, ...]
    """"Completed with profile limitations": complete NOT_QUALIFIED results, same order."""
    controlled: dict[Annotated[str, StringConstraints(max_length=256)], tuple[RankRow, ...]]
    """Controlled-policy runs, grouped by their exact effective policy, same order."""
    apart: tuple[RankRow, ...]
    """Everything else, with its reasons: other generations, smoke, quarantined, incomplete,
    infrastructure, integrity, signature or claims failures."""
    signer: Signer | None = None
    """Who every ranked run had to have been signed by (``--identity``, ``--issuer``); null:
    no signature was checked, so a run ranks whoever published it."""


class DiffItem(_Model):
    """One thing that differs between two runs, each side as the JSON value it is (a number,
    a boolean, text, or null); ``delta`` is b - a for scores."""

    field: Annotated[str, StringConstraints(max_length=256)]
    a: StrictBool | StrictInt | StrictFloat | Text | None
    b: StrictBool | StrictInt | StrictFloat | Text | None
    delta: float | None = None


class DiffSide(_Model):
    """One bundle of a diff: its digest, whether it is intact, and its signature's status."""

    bundle_digest: Digest
    integrity: Literal["ok", "failed"]
    signature: Literal["verified", "unsigned", "unchecked", "failed"]


class RunDiff(_Model):
    """What differs between two verified runs (``audit diff``): the same deployment when the
    pin set, the model (runtime id and digest), the engine and its version, the reasoning
    policy and every upstream commit are; the same verdict when the integrity status,
    outcome, validity, profile decision and rankability are."""

    schema_version: SchemaVersion
    a: DiffSide
    b: DiffSide
    same_deployment: StrictBool
    same_verdict: StrictBool
    differences: tuple[DiffItem, ...]


# --- what `audit verify-attestation --json` prints ------------------------------------------------


class AttestationReport(_Model):
    """``audit verify-attestation``: the signature over an attestation, and what it attests."""

    schema_version: SchemaVersion
    signature: SignatureCheck
    bundle_digest: Digest | None
    verdict: Verdict | None


# --- what `audit run --json` and `audit rejudge --json` print -----------------------------------

CommandPath = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
"""A path as the user gave it on the command line."""
Sources = Annotated[str, StringConstraints(min_length=1, max_length=1 << 20)]
"""Every source of one bundle, as given, joined with ", " (a directory and its tar are one)."""


class RunResult(_Model):
    """What ``audit run --json`` prints once the bundle is sealed (and, with ``--sign``, signed)."""

    schema_version: SchemaVersion
    bundle: CommandPath
    """The bundle directory, as given with ``--out``."""
    bundle_digest: Digest
    """The sealed bundle's digest: ``sha256:`` of its manifest.json."""
    signature: CommandPath | None
    """With ``--sign``: the Sigstore bundle written (signatures/manifest.sigstore.json in the
    bundle); null without it."""


class RejudgedRun(_Model):
    """A run whose verdict changes under the new pin set."""

    bundle: Sources
    run_id: Identifier
    diff: RunDiff
    """What differs: A judged under the pin set the bundle names, B under the new one."""
    reasons: tuple[Text, ...]
    """The reasons of the verdict under the new pin set."""


class RejudgedCopy(_Model):
    """A bundle that copies another one (the same evidence and model, another run id or
    creation time)."""

    bundle: Sources
    run_id: Identifier
    copy_of: Text
    """Which bundle it copies, and why it is taken for a copy."""


class RefusedBundle(_Model):
    """A bundle that could not be read, and why (it has no verdict)."""

    bundle: CommandPath
    reason: Text


class RejudgeReport(_Model):
    """What ``audit rejudge --json`` prints: the runs of an archive whose verdict changes under
    another pin set. Each bundle counts once, by bundle digest."""

    schema_version: SchemaVersion
    pin_set: PinSetRef
    """The pin set the archive was judged under again."""
    before: PinSetRef | None = None
    """The pin set the runs were judged by before (``--before``); null: the one each bundle
    names."""
    bundles: Count
    """Distinct bundles judged (a directory and its tar are one)."""
    changed: tuple[RejudgedRun, ...]
    copies: tuple[RejudgedCopy, ...]
    notes: tuple[Sources, ...]
    """Sources that were one bundle, and sources of one bundle that verified differently."""
    refused: tuple[RefusedBundle, ...]


# --- what `audit verify-archive` prints ---------------------------------------------------------


class ArchiveBundle(_Model):
    """One bundle of an archive as ``audit verify-archive`` judged it (verified once, from the
    first of its sources in sorted order)."""

    bundle_digest: Digest
    sources: Annotated[tuple[CommandPath, ...], Field(min_length=1)]
    """Every source that holds this bundle's bytes (its manifest and every blob it names),
    sorted; the first is the one verified, the others had their bytes checked. A source that
    holds the manifest but not the bytes is among the refused."""
    run_id: Identifier
    pin_set: PinSetRef
    """The pin set it was judged under."""
    outcome: QualificationOutcome
    result_validity: ResultValidity
    profile_decision: ProfileDecision
    rankable: StrictBool
    integrity: Literal["ok", "failed"]
    signature: SignatureStatus
    claims_match: StrictBool
    failed_check: Text | None
    """Why the bundle failed a check (integrity, signature, claims), as ``audit verify`` says
    it; null when it passed."""
    first_reason: Text | None
    """The verdict's first reason; null when it has none."""


class ArchiveRefusal(_Model):
    """A source of an archive that could not be read or judged, and why (it has no verdict)."""

    source: CommandPath
    reason: Text


class ArchiveCounts(_Model):
    """How many sources, distinct bundles, passed and failed bundles, and refusals."""

    sources: Count
    bundles: Count
    passed: Count
    failed: Count
    refused: Count


class ArchiveReport(_Model):
    """What ``audit verify-archive`` prints: every bundle of an archive, by bundle digest, and
    every refused source, by source. Written incrementally in canonical form (ADR 0025)."""

    schema_version: SchemaVersion
    pin_set: PinSetRef | None
    """The pin set given with ``--pins``; null: each bundle judged by the pin set it names."""
    bundles: tuple[ArchiveBundle, ...]
    counts: ArchiveCounts
    refused: tuple[ArchiveRefusal, ...]
    signer: Signer | None = None
    """Who every bundle had to have been signed by (``--identity``, ``--issuer``): a bundle
    signed by no one else passes; null: signatures were not checked (a signed bundle's
    ``signature`` is ``unchecked``)."""
