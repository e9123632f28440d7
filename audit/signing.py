"""Keyless Sigstore signing of bundles and verification attestations.

What is signed is always an in-toto Statement v1 (canonical bytes, see
:mod:`bundle_schema.attestation`) in a DSSE envelope: sigstore's own ``Signer`` gets a short-lived
certificate from Fulcio for the OIDC identity, signs the envelope and logs it in Rekor; the result
is a Sigstore bundle (JSON). A bundle's signature is stored as
``signatures/manifest.sigstore.json``, outside the manifest's digest.

The identity comes from an explicit token (``--identity-token`` or ``SIGSTORE_ID_TOKEN``) or from
ambient CI credentials (GitHub Actions with ``id-token: write``, and the others sigstore's ``id``
package detects). The instance is Sigstore's production or staging one, found through their TUF
repositories, or a custom one described by a ClientTrustConfig JSON file (``--trust-config``).

sigstore is imported inside the functions: ``audit --help`` does not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from audit._store import write_atomically
from bundle_schema.attestation import bundle_statement
from bundle_schema.errors import CheckFailed, InvalidInput, one_line
from bundle_schema.layout import MANIFEST_SIGNATURE, SIGNATURES_DIR
from verify import hash_members, integrity_findings, open_source, parse_manifest, read_capped

if TYPE_CHECKING:
    from sigstore.oidc import IdentityToken
    from sigstore.sign import SigningContext

__all__ = [
    "DEFAULT_INSTANCE",
    "INSTANCES",
    "TOKEN_VARIABLE",
    "SignedBundle",
    "SigningFailed",
    "identity_token",
    "sign_bundle",
    "sign_statement",
    "signing_context",
]

DEFAULT_INSTANCE = "production"
INSTANCES = (DEFAULT_INSTANCE, "staging")
TOKEN_VARIABLE = "SIGSTORE_ID_TOKEN"  # noqa: S105 - the variable's name, not a secret
MAX_TRUST_CONFIG_SIZE = 4 << 20


class SigningFailed(CheckFailed):
    """The signing services refused or could not be reached; nothing was written."""


@dataclass(frozen=True)
class SignedBundle:
    """What :func:`sign_bundle` did."""

    bundle_digest: str
    signature: Path
    identity: str
    issuer: str


def signing_context(
    instance: str = DEFAULT_INSTANCE, trust_config: str | None = None
) -> SigningContext:
    """The Sigstore instance to sign with.

    Args:
        instance: ``production`` or ``staging`` (their TUF repositories are consulted: network).
        trust_config: a ClientTrustConfig JSON file for a custom instance; overrides ``instance``.

    Raises:
        InvalidInput: an unknown instance or an unreadable or invalid trust configuration.
        SigningFailed: the TUF repository of the instance could not be read.
    """
    from sigstore.models import ClientTrustConfig  # noqa: PLC0415 - costly import, see above
    from sigstore.sign import SigningContext  # noqa: PLC0415

    if trust_config is not None:
        raw = read_capped(trust_config, MAX_TRUST_CONFIG_SIZE, "a trust configuration")
        try:
            config = ClientTrustConfig.from_json(raw.decode("utf-8"))
            return SigningContext.from_trust_config(config)
        except Exception as exc:  # sigstore raises several types for a bad file
            raise InvalidInput(
                f"{trust_config}: not a usable Sigstore ClientTrustConfig: {one_line(str(exc))}"
            ) from None
    if instance not in INSTANCES:
        raise InvalidInput(f"unknown Sigstore instance {instance!r}; use {' or '.join(INSTANCES)}")
    try:
        config = getattr(ClientTrustConfig, instance)()
        return SigningContext.from_trust_config(config)
    except Exception as exc:  # TUF refresh over the network
        raise SigningFailed(
            f"cannot read the {instance} Sigstore trust configuration: {one_line(str(exc))}"
        ) from None


def identity_token(explicit: str | None = None) -> IdentityToken:
    """The OIDC identity token to sign with: explicit, from the environment, or ambient.

    Raises:
        InvalidInput: no token can be found, or the token is malformed or expired.
    """
    from sigstore.oidc import IdentityToken, detect_credential  # noqa: PLC0415

    raw = explicit or os.environ.get(TOKEN_VARIABLE)
    if not raw:
        try:
            raw = detect_credential()
        except Exception as exc:  # the id package's errors: ambient credentials misconfigured
            raise InvalidInput(f"ambient OIDC credentials unusable: {one_line(str(exc))}") from None
    if not raw:
        raise InvalidInput(
            f"no identity token: pass --identity-token, set {TOKEN_VARIABLE}, or run where "
            "ambient OIDC credentials exist (e.g. GitHub Actions with id-token: write)"
        )
    try:
        return IdentityToken(raw.strip())
    except Exception as exc:  # IdentityError: malformed, wrong audience or expired
        raise InvalidInput(f"identity token refused: {one_line(str(exc))}") from None


def sign_statement(statement: bytes, context: SigningContext, token: IdentityToken) -> bytes:
    """Sign a Statement's bytes as they are (DSSE) and return the Sigstore bundle's JSON.

    Raises:
        SigningFailed: Fulcio or Rekor refused, or could not be reached.
    """
    from sigstore.dsse import Statement  # noqa: PLC0415

    try:
        with context.signer(token, cache=True) as signer:
            bundle = signer.sign_dsse(Statement(statement))
    except Exception as exc:  # network and service errors of every kind
        raise SigningFailed(f"signing failed: {type(exc).__name__}: {one_line(str(exc))}") from None
    return bundle.to_json().encode("utf-8")


def sign_bundle(
    path: str | os.PathLike[str],
    signer: Callable[[], tuple[SigningContext, IdentityToken]],
    *,
    replace: bool = False,
) -> SignedBundle:
    """Sign a bundle directory: check its integrity, sign its Statement, store the signature.

    Args:
        path: the bundle directory.
        signer: gives the signing context and identity token; called only once the bundle has
            been checked (a production context reads Sigstore's TUF repository: the network).
        replace: replace an existing signature.

    Raises:
        InvalidInput: not a bundle directory, or already signed and ``replace`` is false.
        CheckFailed: the bundle fails integrity (nothing is signed).
        SigningFailed: the signing services failed; the bundle is unchanged.
        OSError: the signature could not be written; the bundle is unchanged.
    """
    source = open_source(path)
    if source.kind != "directory":
        raise InvalidInput(f"{path}: sign a bundle directory (then pack it)")
    if MANIFEST_SIGNATURE in source.members and not replace:
        raise InvalidInput(f"{path}: already signed ({MANIFEST_SIGNATURE}); pass --replace")
    manifest = parse_manifest(source.manifest_bytes(), source.location)
    named = set(manifest.blob_paths.values())
    blobs = [m for p, m in source.members.items() if p in named]
    findings = integrity_findings(manifest, source.members.keys(), hash_members(blobs))
    if findings:
        raise CheckFailed(
            f"{path}: refusing to sign a bundle that fails integrity ({len(findings)} "
            f"finding(s); first: {findings[0].message})"
        )
    context, token = signer()
    statement = bundle_statement(manifest.model, manifest.bundle_digest)
    signature = sign_statement(statement, context, token)
    target = Path(path) / MANIFEST_SIGNATURE
    (Path(path) / SIGNATURES_DIR).mkdir(exist_ok=True)
    write_atomically(target, [signature])
    return SignedBundle(manifest.bundle_digest, target, token.identity, token.issuer)
