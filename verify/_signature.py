"""Offline checks of Sigstore signatures over this project's in-toto Statements.

The steps, each failing closed (any error is a ``failed`` status with a one-line reason):

1. parse the Sigstore bundle (JSON, at most :data:`MAX_SIGNATURE_SIZE` bytes);
2. build a sigstore ``Verifier`` from the trust root's bytes (no network, no home-directory cache)
   and call ``verify_dsse`` with an ``Identity`` policy (certificate SAN and OIDC issuer): the
   certificate chain, SCT, transparency-log inclusion proof, checkpoint and signed entry
   timestamp, and the DSSE signature over the envelope;
3. the DSSE payload type must be :data:`~bundle_schema.attestation.PAYLOAD_TYPE`;
4. the payload must be a canonical Statement of the expected predicate type, with one subject,
   ``manifest.json``, whose SHA-256 equals the bundle digest (a Statement of another type or
   about another bundle is a failure: cf. GHSA-w6c6-c85g-mmv6);
5. for a bundle signature, the predicate must agree with the manifest it names.

sigstore is imported here, inside the functions, and only when a signature is to be checked: it
costs about half a second, which ``audit --help`` and unsigned verification do not pay.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from bundle_schema.attestation import (
    PAYLOAD_TYPE,
    read_bundle_statement,
    read_verification_statement,
    statement_difference,
    subject_digest,
    verification_statement,
)
from bundle_schema.errors import CheckFailed, one_line
from bundle_schema.models import Manifest, SignatureCheck, Signer, VerificationStatement
from verify._trust import TrustRoot

if TYPE_CHECKING:
    from sigstore.models import Bundle
    from sigstore.verify import Verifier

__all__ = [
    "MAX_SIGNATURE_SIZE",
    "IdentityPolicy",
    "SignatureFailed",
    "build_verifier",
    "check_attestation",
    "check_bundle_signature",
    "signature_failed",
]

T = TypeVar("T")

MAX_SIGNATURE_SIZE = 4 << 20
"""A Sigstore bundle larger than this is refused unread (real ones are a few kilobytes)."""


@dataclass(frozen=True)
class IdentityPolicy:
    """Who must have signed (certificate identity and OIDC issuer), under which trust root."""

    identity: str
    issuer: str
    trust: TrustRoot

    @property
    def signer(self) -> Signer:
        """The policy as a report records it: identity, issuer and the trust root's digest
        (not its name: a file's path is this machine's)."""
        return Signer(identity=self.identity, issuer=self.issuer, trusted_root=self.trust.digest)


class SignatureFailed(CheckFailed):
    """A signature did not verify; the message says which step failed."""


def build_verifier(trust: TrustRoot) -> Verifier:
    """A sigstore Verifier that trusts exactly these trust-root bytes.

    Raises:
        SignatureFailed: sigstore cannot use the root.
    """
    from sigstore.models import TrustedRoot  # noqa: PLC0415
    from sigstore.verify import Verifier  # noqa: PLC0415
    from sigstore_models.trustroot.v1 import TrustedRoot as TrustedRootMessage  # noqa: PLC0415

    try:
        return Verifier(trusted_root=TrustedRoot(TrustedRootMessage.from_json(trust.data)))
    except Exception as exc:  # any parse error of the root refuses it
        raise SignatureFailed(
            f"trust root {trust.name} cannot be used: {type(exc).__name__}: {one_line(str(exc))}"
        ) from None


def _integrated_time(bundle: Bundle) -> str | None:
    seconds = bundle.log_entry._inner.integrated_time
    if seconds is None:
        return None
    return _rfc3339(dt.datetime.fromtimestamp(int(seconds), dt.UTC))


def _verified_payload(
    signature: bytes, policy: IdentityPolicy, where: str
) -> tuple[bytes, str | None]:
    """Steps 1 to 3: the DSSE payload of a verified signature, and its integrated time.

    Raises:
        SignatureFailed: the signature does not verify under the policy.
    """
    if len(signature) > MAX_SIGNATURE_SIZE:
        raise SignatureFailed(f"{where}: over {MAX_SIGNATURE_SIZE >> 20} MiB")
    # Imported here on purpose (see the module docstring).
    from sigstore.models import Bundle  # noqa: PLC0415
    from sigstore.verify.policy import Identity  # noqa: PLC0415

    verifier = build_verifier(policy.trust)
    try:
        bundle = Bundle.from_json(signature)
    except Exception as exc:  # a malformed bundle is a failed signature
        raise SignatureFailed(
            f"{where}: not a Sigstore bundle: {type(exc).__name__}: {exc}"
        ) from None
    try:
        payload_type, payload = verifier.verify_dsse(
            bundle, Identity(identity=policy.identity, issuer=policy.issuer)
        )
    except Exception as exc:  # fail closed on whatever sigstore raises
        raise SignatureFailed(f"{where}: {type(exc).__name__}: {exc}") from None
    try:
        _check_windows(policy.trust, bundle, where)
    except SignatureFailed:
        raise
    except Exception as exc:  # an entry of the root sigstore accepted but this check cannot read
        raise SignatureFailed(f"{where}: trust root {policy.trust.name}: {exc!r}") from None
    if payload_type != PAYLOAD_TYPE:
        raise SignatureFailed(
            f"{where}: DSSE payload type is {payload_type!r}, expected {PAYLOAD_TYPE!r}"
        )
    return payload, _integrated_time(bundle)


def _instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _within(valid_for: dict[str, str], moment: dt.datetime) -> bool:
    start, end = valid_for.get("start"), valid_for.get("end")
    return (start is None or _instant(start) <= moment) and (end is None or moment <= _instant(end))


def _check_windows(trust: TrustRoot, bundle: Bundle, where: str) -> None:
    """Step 2b: the trust root's entries were valid when they were used.

    sigstore accepts a CA or log key of the trust root outside its ``validFor`` window (to verify
    old signatures it allows expired ones); the Sigstore client specification asks that the CA
    which issued the signing certificate was valid when it issued it, that the CT log key was
    valid when it signed the certificate's timestamp (its SCT), and that the log key was valid
    at the entry's integrated time. All three are checked here.
    """
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    from cryptography import x509  # noqa: PLC0415
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415

    root = json.loads(trust.data)
    leaf = bundle.signing_certificate
    issued = leaf.not_valid_before_utc
    for authority in root.get("certificateAuthorities", []):
        chain = authority.get("certChain", {}).get("certificates", [])
        if not chain:
            continue
        issuer = x509.load_der_x509_certificate(base64.b64decode(chain[0]["rawBytes"]))
        try:
            leaf.verify_directly_issued_by(issuer)
        except (ValueError, TypeError, InvalidSignature):
            continue
        if not _within(authority.get("validFor", {}), issued):
            raise SignatureFailed(
                f"{where}: the trust root's certificate authority {authority.get('uri')!r} was "
                f"not valid when it issued the signing certificate ({_rfc3339(issued)})"
            )
        break
    else:
        raise SignatureFailed(f"{where}: no certificate authority of the trust root issued it")
    _check_sct_window(root, leaf, where)
    entry = bundle.log_entry._inner
    if entry.integrated_time is None:
        return
    integrated = dt.datetime.fromtimestamp(int(entry.integrated_time), dt.UTC)
    key_id = base64.b64encode(entry.log_id.key_id).decode()
    for log in root.get("tlogs", []):
        if log.get("logId", {}).get("keyId") == key_id:
            if not _within(log.get("publicKey", {}).get("validFor", {}), integrated):
                raise SignatureFailed(
                    f"{where}: the trust root's log key {log.get('baseUrl')!r} was not valid at "
                    f"the entry's integrated time ({_rfc3339(integrated)})"
                )
            return


def _check_sct_window(root: dict[str, Any], leaf: Any, where: str) -> None:
    """The CT log key of the trust root that signed the certificate's one embedded timestamp
    (sigstore verified that signature, and refuses a certificate of other than one) was valid
    at that timestamp."""
    import base64  # noqa: PLC0415

    from cryptography import x509  # noqa: PLC0415

    (sct,) = leaf.extensions.get_extension_for_class(
        x509.PrecertificateSignedCertificateTimestamps
    ).value
    stamped = (
        sct.timestamp.replace(tzinfo=dt.UTC) if sct.timestamp.tzinfo is None else sct.timestamp
    )
    key_id = base64.b64encode(sct.log_id).decode()
    for log in root.get("ctlogs", []):
        if log.get("logId", {}).get("keyId") == key_id:
            if not _within(log.get("publicKey", {}).get("validFor", {}), stamped):
                raise SignatureFailed(
                    f"{where}: the trust root's CT log key {log.get('baseUrl')!r} was not valid "
                    f"when it signed the certificate's timestamp ({_rfc3339(stamped)})"
                )
            return
    raise SignatureFailed(
        f"{where}: no CT log of the trust root signed the certificate's timestamp"
    )


def _rfc3339(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_subject(digest: str, bundle_digest: str, where: str) -> None:
    if digest != bundle_digest:
        raise SignatureFailed(
            f"{where}: the Statement's subject is {digest}, not this bundle ({bundle_digest})"
        )


def _verified(policy: IdentityPolicy, integrated_time: str | None) -> SignatureCheck:
    return SignatureCheck(
        status="verified",
        identity=policy.identity,
        issuer=policy.issuer,
        integrated_time=integrated_time,
        trusted_root=policy.trust.digest,
    )


def signature_failed(policy: IdentityPolicy, reason: object) -> SignatureCheck:
    """A ``failed`` signature check, with its reason on one line."""
    return SignatureCheck(
        status="failed", trusted_root=policy.trust.digest, reason=one_line(str(reason))[:4096]
    )


def _statement(read: Callable[[bytes, str], T], payload: bytes, where: str) -> T:
    try:
        return read(payload, f"{where}: DSSE payload")
    except Exception as exc:  # a wrong Statement is a failed signature
        raise SignatureFailed(one_line(str(exc))) from None


def _bundle_signature(
    signature: bytes, manifest: Manifest, bundle_digest: str, policy: IdentityPolicy, where: str
) -> SignatureCheck:
    payload, integrated_time = _verified_payload(signature, policy, where)
    statement = _statement(read_bundle_statement, payload, where)
    _check_subject(subject_digest(statement), bundle_digest, where)
    predicate = statement.predicate
    fields = ("run_id", "created_at", "scoring_generation", "profile", "pin_set", "runner")
    differ = [f for f in fields if getattr(predicate, f) != getattr(manifest, f)]
    if differ:
        raise SignatureFailed(
            f"{where}: the signed predicate disagrees with the manifest on {', '.join(differ)}"
        )
    return _verified(policy, integrated_time)


def check_bundle_signature(
    signature: bytes | None,
    manifest: Manifest,
    bundle_digest: str,
    policy: IdentityPolicy | None,
    where: str,
) -> SignatureCheck:
    """Check a publisher's signature over a bundle (steps 1 to 5); never raises.

    Args:
        signature: the bytes of ``signatures/manifest.sigstore.json``, or None when absent.
        manifest: the bundle's manifest, whose fields the predicate must repeat.
        bundle_digest: the digest of the manifest's bytes as received.
        policy: who must have signed; None when no identity was given (status ``unchecked``,
            or ``unsigned``). With a policy, an unsigned bundle is ``failed``.
        where: the signature's location, for messages.
    """
    if signature is None:
        if policy is not None:  # a named signer needs a signature (as cosign verify does)
            return signature_failed(
                policy,
                "the bundle is unsigned, but --identity and --issuer name who must have signed it",
            )
        return SignatureCheck(status="unsigned")
    if policy is None:
        return SignatureCheck(
            status="unchecked",
            reason="the bundle is signed; give --identity and --issuer to check the signature",
        )
    try:
        return _bundle_signature(signature, manifest, bundle_digest, policy, where)
    except SignatureFailed as exc:
        return signature_failed(policy, exc)


def _attestation(
    signature: bytes, policy: IdentityPolicy, where: str, bundle_digest: str | None
) -> tuple[SignatureCheck, VerificationStatement]:
    payload, integrated_time = _verified_payload(signature, policy, where)
    statement = _statement(read_verification_statement, payload, where)
    digest = subject_digest(statement)
    if digest != statement.predicate.verdict.bundle_digest:
        raise SignatureFailed(f"{where}: the subject and the attested verdict differ")
    difference = statement_difference(
        statement, verification_statement(statement.predicate.verdict)
    )
    if difference is not None:
        raise SignatureFailed(
            f"{where}: {difference} is not what audit verify writes for the attested verdict"
        )
    if bundle_digest is not None:
        _check_subject(digest, bundle_digest, where)
    return _verified(policy, integrated_time), statement


def check_attestation(
    signature: bytes, policy: IdentityPolicy, where: str, *, bundle_digest: str | None = None
) -> tuple[SignatureCheck, VerificationStatement | None]:
    """Check a signed verification attestation; never raises.

    Args:
        signature: a Sigstore bundle whose DSSE payload is a verification Statement.
        policy: who must have signed it.
        where: its location, for messages.
        bundle_digest: when given, the Statement's subject must be this bundle.

    Returns:
        The signature status, and the Statement when the signature verified.
    """
    try:
        return _attestation(signature, policy, where, bundle_digest)
    except SignatureFailed as exc:
        return signature_failed(policy, exc), None
