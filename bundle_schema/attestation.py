"""The in-toto Statements this project signs: over a bundle, and over a verification of one.

Both are in-toto Statement v1 documents carried in a DSSE envelope (payload type
:data:`PAYLOAD_TYPE`) inside a Sigstore bundle. Their bytes are canonical JSON (RFC 8785), so the
same bundle or verdict always gives the same Statement.

- :data:`BUNDLE_PREDICATE_TYPE`: a publisher's signature over a bundle. Subject ``manifest.json``
  with the SHA-256 of the manifest's bytes (the bundle digest); the predicate repeats the run id,
  creation time, scoring generation, profile, pin set and runner from the manifest.
- :data:`VERIFICATION_PREDICATE_TYPE`: a verifier's verdict on a bundle. Same subject; the
  predicate is the canonical verdict, the pin set it was judged by and the verifier.

Reading a Statement is strict: canonical JSON, the committed schema, the frozen model, exactly one
subject. The digest binding (subject digest = bundle digest) is checked by the verifier.
"""

from __future__ import annotations

from bundle_schema.canonical import canonical_bytes
from bundle_schema.documents import KINDS, parse_document
from bundle_schema.layout import MANIFEST
from bundle_schema.models import (
    BUNDLE_PREDICATE_TYPE,
    STATEMENT_TYPE,
    VERIFICATION_PREDICATE_TYPE,
    BundleStatement,
    Manifest,
    Verdict,
    VerificationStatement,
)

__all__ = [
    "BUNDLE_PREDICATE_TYPE",
    "PAYLOAD_TYPE",
    "STATEMENT_TYPE",
    "VERIFICATION_PREDICATE_TYPE",
    "bundle_statement",
    "read_bundle_statement",
    "read_verification_statement",
    "subject_digest",
    "verification_statement",
]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
"""The DSSE payload type of an in-toto Statement."""


def _subject(bundle_digest: str) -> list[dict[str, object]]:
    return [{"name": MANIFEST, "digest": {"sha256": bundle_digest.removeprefix("sha256:")}}]


def bundle_statement(manifest: Manifest, bundle_digest: str) -> bytes:
    """The canonical bytes of the Statement a publisher signs over a bundle."""
    statement = BundleStatement.model_validate(
        {
            "_type": STATEMENT_TYPE,
            "subject": _subject(bundle_digest),
            "predicateType": BUNDLE_PREDICATE_TYPE,
            "predicate": {
                "run_id": manifest.run_id,
                "created_at": manifest.created_at,
                "scoring_generation": manifest.scoring_generation,
                "profile": manifest.profile,
                "pin_set": manifest.pin_set.model_dump(mode="json"),
                "runner": manifest.runner.model_dump(mode="json"),
            },
        }
    )
    return canonical_bytes(statement.model_dump(mode="json", by_alias=True))


def verification_statement(verdict: Verdict) -> bytes:
    """The canonical bytes of the Statement that attests a verdict on a bundle."""
    statement = VerificationStatement.model_validate(
        {
            "_type": STATEMENT_TYPE,
            "subject": _subject(verdict.bundle_digest),
            "predicateType": VERIFICATION_PREDICATE_TYPE,
            "predicate": {
                "verdict": verdict.model_dump(mode="json"),
                "pin_set": verdict.pin_set.model_dump(mode="json"),
                "verifier": verdict.verifier.model_dump(mode="json"),
            },
        }
    )
    return canonical_bytes(statement.model_dump(mode="json", by_alias=True))


def read_bundle_statement(data: bytes, where: str) -> BundleStatement:
    """Parse a bundle Statement strictly.

    Raises:
        DocumentError: not canonical JSON, or not a Statement of :data:`BUNDLE_PREDICATE_TYPE`.
    """
    model = parse_document(KINDS["bundle-statement"], data, where)
    assert isinstance(model, BundleStatement)  # noqa: S101 - the kind's model
    return model


def read_verification_statement(data: bytes, where: str) -> VerificationStatement:
    """Parse a verification Statement strictly.

    Raises:
        DocumentError: not canonical JSON, or not a Statement of
            :data:`VERIFICATION_PREDICATE_TYPE`.
    """
    model = parse_document(KINDS["verification-statement"], data, where)
    assert isinstance(model, VerificationStatement)  # noqa: S101 - the kind's model
    return model


def subject_digest(statement: BundleStatement | VerificationStatement) -> str:
    """The ``sha256:`` digest a Statement's one subject names."""
    return "sha256:" + statement.subject[0].digest.sha256
