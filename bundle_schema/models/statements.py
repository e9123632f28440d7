"""The in-toto statements signed over a bundle and over a verification, and the SLSA Verification
Summary.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from bundle_schema.models._common import Identifier, Timestamp, _Model
from bundle_schema.models.manifest import PinSetRef, RunnerInfo
from bundle_schema.models.verdict import Verdict, VerifierInfo

__all__ = [
    "BARE_URI_PATTERN",
    "BUNDLE_PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "VERIFICATION_PREDICATE_TYPE",
    "VERIFIER_ID",
    "VSA_PREDICATE_TYPE",
    "VSA_RANKABLE_LEVEL",
    "BundlePredicate",
    "BundleStatement",
    "StatementSubject",
    "SubjectDigest",
    "VerificationPredicate",
    "VerificationStatement",
    "VsaPredicate",
    "VsaResource",
    "VsaStatement",
    "VsaVerifier",
]

# --- in-toto statements ------------------------------------------------------------------------

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
BUNDLE_PREDICATE_TYPE = "https://evidence-audit.dev/predicates/bundle/v1"
VERIFICATION_PREDICATE_TYPE = "https://evidence-audit.dev/predicates/verification/v1"


class SubjectDigest(_Model):
    """A subject's digest set: this project names its subjects by SHA-256 only."""

    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class StatementSubject(_Model):
    """One subject of an in-toto Statement v1."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    digest: SubjectDigest


class _Statement(_Model):
    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: Annotated[tuple[StatementSubject, ...], Field(min_length=1, max_length=1)]


class BundlePredicate(_Model):
    """What a publisher's signature over a bundle says about the run it seals."""

    run_id: Identifier
    created_at: Timestamp
    scoring_generation: Identifier
    profile: Identifier
    pin_set: PinSetRef
    runner: RunnerInfo


class BundleStatement(_Statement):
    """The in-toto Statement signed over a bundle: subject ``manifest.json`` by its digest."""

    predicate_type: Literal["https://evidence-audit.dev/predicates/bundle/v1"] = Field(
        alias="predicateType"
    )
    predicate: BundlePredicate


class VerificationPredicate(_Model):
    """A verifier's verdict on a bundle, as an attestation's predicate."""

    verdict: Verdict
    pin_set: PinSetRef
    verifier: VerifierInfo


class VerificationStatement(_Statement):
    """The in-toto Statement of a verification: subject the bundle by its digest."""

    predicate_type: Literal["https://evidence-audit.dev/predicates/verification/v1"] = Field(
        alias="predicateType"
    )
    predicate: VerificationPredicate


VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://evidence-audit.dev/verifier/audit-verify"
"""The SLSA Verification Summary ``verifier.id`` of ``audit verify``."""
VSA_RANKABLE_LEVEL = "EVIDENCE_AUDIT_RANKABLE"
"""The ``verifiedLevels`` value of a PASSED summary (SLSA reserves the ``SLSA_`` prefix)."""
BARE_URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/?#@]*(/[^?#@]*)?|/?([^/?#@][^?#@]*)?)$"
"""A URI with no credentials in it: a scheme, then no ``@`` anywhere (no userinfo, nor text a
reader could take for it: ``https:user:secret@host`` is a URL with userinfo to a browser),
no query and no fragment (ADR 0023: a presigned URL's query holds its signature)."""


class VsaVerifier(_Model):
    """SLSA VSA ``verifier``: who verified, and the versions of its parts."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    version: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=128)],
        Annotated[str, StringConstraints(min_length=1, max_length=128)],
    ]


class VsaResource(_Model):
    """A resource by URI and digest (SLSA VSA ``policy`` and ``inputAttestations`` items)."""

    uri: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    digest: SubjectDigest


MAX_RESOURCE_URI = 4096
"""The longest ``resourceUri`` a summary records (the commands refuse a longer one first)."""


class VsaPredicate(_Model):
    """A SLSA Verification Summary (v1) of one verification by ``audit verify``: PASSED only for a
    rankable result whose checks all passed; the whole verdict in the documented extension field
    ``evidenceAuditVerdict`` (SLSA consumers ignore fields they do not know)."""

    verifier: VsaVerifier
    time_verified: Timestamp = Field(alias="timeVerified")
    resource_uri: Annotated[
        str,
        StringConstraints(min_length=1, max_length=MAX_RESOURCE_URI, pattern=BARE_URI_PATTERN),
    ] = Field(alias="resourceUri")
    """Where the bundle is, with no userinfo, query or fragment (:data:`BARE_URI_PATTERN`)."""
    policy: VsaResource
    """The pin set the run was judged by: ``urn:evidence-audit:pin-set:<id>`` and its digest."""
    input_attestations: tuple[VsaResource, ...] = Field(alias="inputAttestations")
    """The bundle's own signature (its Sigstore bundle file), when it carries one."""
    verification_result: Literal["PASSED", "FAILED"] = Field(alias="verificationResult")
    verified_levels: tuple[Annotated[str, StringConstraints(min_length=1, max_length=128)], ...] = (
        Field(alias="verifiedLevels")
    )
    evidence_audit_verdict: Verdict = Field(alias="evidenceAuditVerdict")


class VsaStatement(_Statement):
    """The in-toto Statement of a SLSA Verification Summary: subject the bundle by its digest."""

    predicate_type: Literal["https://slsa.dev/verification_summary/v1"] = Field(
        alias="predicateType"
    )
    predicate: VsaPredicate
