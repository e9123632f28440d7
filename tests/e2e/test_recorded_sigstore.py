"""Recorded real Sigstore bundles (tests/data/sigstore, from sigstore-python's test assets) verify
offline against the trust roots this project ships, through the same Verifier construction and
validity-window checks ``audit verify`` uses; the CVE-2022-36056 bundle is refused."""

from __future__ import annotations

import pytest
from sigstore.errors import VerificationError
from sigstore.models import Bundle
from sigstore.verify.policy import Identity

from tests.paths import DATA
from verify._signature import IdentityPolicy, SignatureFailed, _check_windows, _verified_payload
from verify._trust import SHIPPED_ROOTS, shipped_root

DATA = DATA / "sigstore"
GITHUB = "https://token.actions.githubusercontent.com"
GITHUB_OAUTH = "https://github.com/login/oauth"
RELEASE = "https://github.com/trailofbits/rfc8785.py/.github/workflows/release.yml@refs/tags/v0.1.2"
BEACON = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
    "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)


pytestmark = pytest.mark.usefixtures("private_home")


def _verify_artifact(root: str, artifact: str, identity: str, issuer: str) -> None:
    from verify._signature import build_verifier  # noqa: PLC0415

    trust = shipped_root(root)
    bundle = Bundle.from_json((DATA / f"{artifact}.sigstore").read_bytes())
    build_verifier(trust).verify_artifact(
        (DATA / artifact).read_bytes(), bundle, Identity(identity=identity, issuer=issuer)
    )
    _check_windows(trust, bundle, artifact)


def test_the_shipped_roots_load_and_match_their_pins() -> None:
    for name in SHIPPED_ROOTS:
        root = shipped_root(name)
        assert root.name == name
        assert root.digest.startswith("sha256:")


def test_a_github_actions_release_verifies_against_production() -> None:
    _verify_artifact("production", "bundle_v3_github.whl", RELEASE, GITHUB)


def test_a_release_does_not_verify_against_staging() -> None:
    with pytest.raises(VerificationError, match="failed to build timestamp certificate chain"):
        _verify_artifact("staging", "bundle_v3_github.whl", RELEASE, GITHUB)


def test_a_staging_bundle_verifies_against_staging() -> None:
    _verify_artifact("staging", "bundle.txt", "a@tny.town", GITHUB_OAUTH)


def test_a_rekor_v2_dsse_bundle_verifies_against_staging() -> None:
    policy = IdentityPolicy(BEACON, GITHUB, shipped_root("staging"))
    signature = (DATA / "a.dsse.staging-rekor-v2.txt.sigstore.json").read_bytes()
    payload, integrated_time = _verified_payload(signature, policy, "a.dsse")
    assert payload
    assert integrated_time is None  # Rekor v2 entries carry no integrated time


def test_a_rekor_v2_dsse_bundle_for_another_identity_fails() -> None:
    policy = IdentityPolicy("someone@example.com", GITHUB, shipped_root("staging"))
    signature = (DATA / "a.dsse.staging-rekor-v2.txt.sigstore.json").read_bytes()
    with pytest.raises(SignatureFailed, match="SANs do not match"):
        _verified_payload(signature, policy, "a.dsse")


def test_the_cve_2022_36056_bundle_is_refused() -> None:
    with pytest.raises(VerificationError, match="log entry is inconsistent with other materials"):
        _verify_artifact(
            "staging", "bundle_cve_2022_36056.txt", "william@yossarian.net", GITHUB_OAUTH
        )
