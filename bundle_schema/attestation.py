"""The in-toto Statements this project signs: over a bundle, and over a verification of one.

Both are in-toto Statement v1 documents carried in a DSSE envelope (payload type
:data:`PAYLOAD_TYPE`) inside a Sigstore bundle. Their bytes are canonical JSON (RFC 8785), so the
same bundle or verdict always gives the same Statement.

- :data:`BUNDLE_PREDICATE_TYPE`: a publisher's signature over a bundle. Subject ``manifest.json``
  with the SHA-256 of the manifest's bytes (the bundle digest); the predicate repeats the run id,
  creation time, scoring generation, profile, pin set and runner from the manifest.
- :data:`VERIFICATION_PREDICATE_TYPE`: a verifier's verdict on a bundle. Same subject; the
  predicate is the canonical verdict, the pin set it was judged by and the verifier.
- :data:`VSA_PREDICATE_TYPE`: the same verification as a SLSA Verification Summary v1, for tools
  that know SLSA and not this project: PASSED only for a rankable result whose checks all passed,
  the pin set as the policy, the bundle's own signature as the input attestation, and the whole
  verdict in the extension field ``evidenceAuditVerdict`` (docs/signing.md). Its ``resourceUri``
  carries no credentials: no userinfo, no query, no fragment (:func:`bare_uri`, ADR 0023).

Reading a Statement is strict: canonical JSON, the committed schema, the frozen model, exactly one
subject. The digest binding (subject digest = bundle digest) is checked by the verifier.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit, urlunsplit

from bundle_schema.canonical import canonical_bytes
from bundle_schema.documents import kind_of, parse_document
from bundle_schema.layout import MANIFEST
from bundle_schema.models import (
    BUNDLE_PREDICATE_TYPE,
    STATEMENT_TYPE,
    VERIFICATION_PREDICATE_TYPE,
    VERIFIER_ID,
    VSA_PREDICATE_TYPE,
    VSA_RANKABLE_LEVEL,
    BundleStatement,
    Manifest,
    Verdict,
    VerificationStatement,
    VsaStatement,
)
from bundle_schema.models.statements import BARE_URI_PATTERN

__all__ = [
    "BUNDLE_PREDICATE_TYPE",
    "PAYLOAD_TYPE",
    "STATEMENT_TYPE",
    "VERIFICATION_PREDICATE_TYPE",
    "VSA_PREDICATE_TYPE",
    "bare_uri",
    "bundle_statement",
    "flat_fields",
    "is_bare_uri",
    "pin_set_uri",
    "read_bundle_statement",
    "read_verification_statement",
    "read_verification_summary",
    "statement_difference",
    "subject_digest",
    "verification_statement",
    "verification_summary",
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


def pin_set_uri(pin_set_id: str) -> str:
    """The URI a verification summary names its policy (a pin set) by."""
    return f"urn:evidence-audit:pin-set:{pin_set_id}"


def bare_uri(url: str) -> str:
    """``url`` without the parts that can hold a credential: its userinfo (a user name, a
    password), its query (a presigned URL's signature, credential or token) and its fragment.

    ``http://user:secret@host/x.tar?X-Amz-Signature=...`` is ``http://host/x.tar``. Scheme, host,
    port and path stay as given (an ``@`` in the path percent-encoded, ``%40``).

    Raises:
        ValueError: ``url`` cannot be split as a URL (an unclosed IPv6 bracket, a bad port).
    """
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    path = parts.path.replace("@", "%40")  # a path's @ is data; left as it is, a reader may
    return urlunsplit(parts._replace(netloc=host, path=path, query="", fragment=""))


_BARE_URI = re.compile(BARE_URI_PATTERN)


def is_bare_uri(uri: str) -> bool:
    """Whether ``uri`` is a URI (a scheme, then its part) with no userinfo, query or fragment:
    what a verification summary's ``resourceUri`` may be."""
    return _BARE_URI.match(uri) is not None


def verification_summary(
    verdict: Verdict,
    *,
    passed: bool,
    time_verified: str,
    resource_uri: str,
    signature: tuple[str, str] | None,
) -> bytes:
    """The canonical bytes of a SLSA Verification Summary (v1) Statement of ``verdict``.

    Args:
        verdict: the verdict reached.
        passed: whether the result is accepted: every check passed and it is rankable (the caller
            decides, with :func:`verify.policy.failed_check`).
        time_verified: when, RFC 3339 (UTC, seconds).
        resource_uri: where the verified bundle is (its URL, or a ``file:`` URI); recorded as
            :func:`bare_uri` of it, with no userinfo, query or fragment.
        signature: the bundle's own signature as (URI, ``sha256:`` digest), when it is signed.

    Raises:
        pydantic.ValidationError: ``resource_uri`` is not a URI (it has no scheme).
    """
    statement = VsaStatement.model_validate(
        {
            "_type": STATEMENT_TYPE,
            "subject": _subject(verdict.bundle_digest),
            "predicateType": VSA_PREDICATE_TYPE,
            "predicate": {
                "verifier": {
                    "id": VERIFIER_ID,
                    "version": {"evidence-audit": verdict.verifier.version},
                },
                "timeVerified": time_verified,
                "resourceUri": bare_uri(resource_uri),
                "policy": {
                    "uri": pin_set_uri(verdict.pin_set.id),
                    "digest": {"sha256": verdict.pin_set.digest.removeprefix("sha256:")},
                },
                "inputAttestations": (
                    []
                    if signature is None
                    else [{"uri": signature[0], "digest": {"sha256": signature[1][7:]}}]
                ),
                "verificationResult": "PASSED" if passed else "FAILED",
                "verifiedLevels": [VSA_RANKABLE_LEVEL] if passed else ["FAILED"],
                "evidenceAuditVerdict": verdict.model_dump(mode="json"),
            },
        }
    )
    return canonical_bytes(statement.model_dump(mode="json", by_alias=True))


def read_verification_summary(data: bytes, where: str) -> VsaStatement:
    """Parse a SLSA Verification Summary Statement strictly.

    Raises:
        DocumentError: not canonical JSON, or not a Statement of :data:`VSA_PREDICATE_TYPE`.
    """
    return parse_document(kind_of(VsaStatement), data, where)


def read_bundle_statement(data: bytes, where: str) -> BundleStatement:
    """Parse a bundle Statement strictly.

    Raises:
        DocumentError: not canonical JSON, or not a Statement of :data:`BUNDLE_PREDICATE_TYPE`.
    """
    return parse_document(kind_of(BundleStatement), data, where)


def read_verification_statement(data: bytes, where: str) -> VerificationStatement:
    """Parse a verification Statement strictly.

    Raises:
        DocumentError: not canonical JSON, or not a Statement of
            :data:`VERIFICATION_PREDICATE_TYPE`.
    """
    return parse_document(kind_of(VerificationStatement), data, where)


def subject_digest(statement: BundleStatement | VerificationStatement | VsaStatement) -> str:
    """The ``sha256:`` digest a Statement's one subject names."""
    return "sha256:" + statement.subject[0].digest.sha256


def flat_fields(value: object, prefix: str = "") -> dict[str, object]:
    """A JSON value as its leaves by dotted path (``a.b[0].c``; a list's ``.length`` too)."""
    if isinstance(value, dict):
        items: dict[str, object] = {}
        for key in sorted(value):
            items |= flat_fields(value[key], f"{prefix}.{key}" if prefix else str(key))
        return items or {prefix: {}}
    if isinstance(value, list):
        items = {}
        for i, item in enumerate(value):
            items |= flat_fields(item, f"{prefix}[{i}]")
        items[f"{prefix}.length"] = len(value)
        return items
    return {prefix: value}


def statement_difference(
    statement: VerificationStatement | VsaStatement, written: bytes
) -> str | None:
    """Where ``statement`` is not ``written``, the Statement ``audit verify`` writes for the
    verdict it carries: the first field (dotted path) that differs, or None when none does. A
    Statement signed as a verification must say what its verdict says, nothing else (another
    subject, another result, another policy)."""
    given = flat_fields(statement.model_dump(mode="json", by_alias=True))
    wanted = flat_fields(json.loads(written))
    absent = object()
    fields = [
        f for f in given.keys() | wanted.keys() if given.get(f, absent) != wanted.get(f, absent)
    ]
    return min(fields) if fields else None
