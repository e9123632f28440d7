"""The private Sigstore instance (tests/private_sigstore.py) is itself correct: its Merkle proofs
check out independently, its certificates carry what Fulcio's do, its services refuse what Fulcio
and Rekor refuse, and the unmodified sigstore Verifier accepts what it signs."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509
from hypothesis import given
from hypothesis import strategies as st
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier
from sigstore.verify.policy import Identity

from tests.private_sigstore import (
    ISSUER,
    OID_ISSUER_V1,
    OID_ISSUER_V2,
    OID_SCT_LIST,
    PrivateSigstore,
    Services,
    inclusion_path,
    merkle_root,
    root_from_path,
)

pytestmark = pytest.mark.usefixtures("private_home")


@given(st.integers(min_value=1, max_value=70), st.data())
def test_every_inclusion_path_recomputes_the_root(size: int, data: st.DataObject) -> None:
    leaves = [f"entry {i}".encode() for i in range(size)]
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    path = inclusion_path(index, leaves)
    assert root_from_path(index, size, leaves[index], path) == merkle_root(leaves)
    assert len(path) <= max(1, (size - 1).bit_length())


def test_a_wrong_leaf_or_path_does_not_recompute_the_root() -> None:
    leaves = [bytes([i]) for i in range(11)]
    path = inclusion_path(6, leaves)
    assert root_from_path(6, 11, b"other", path) != merkle_root(leaves)
    assert root_from_path(6, 11, leaves[6], path[::-1]) != merkle_root(leaves)
    with pytest.raises(ValueError, match="too short"):
        root_from_path(6, 11, leaves[6], path[:-1])


def test_a_leaf_certificate_carries_fulcio_extensions(instance: PrivateSigstore) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    cert = instance.issue_certificate(key.public_key(), "ci@test.local", ISSUER)
    extensions = {e.oid: e for e in cert.extensions}
    assert extensions[OID_ISSUER_V1].value.value == ISSUER.encode()
    assert extensions[OID_ISSUER_V2].value.value[2:] == ISSUER.encode()
    assert OID_SCT_LIST in extensions
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.RFC822Name) == ["ci@test.local"]
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime.total_seconds() == 600
    assert cert.issuer == instance.ca_cert.subject


def test_the_real_verifier_accepts_what_the_instance_signs(
    instance: PrivateSigstore, tmp_path: Path
) -> None:
    (tmp_path / "root.json").write_bytes(instance.trusted_root_bytes())
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(tmp_path / "root.json")))
    for n in range(5):  # several entries: the later proofs are not empty
        payload = json.dumps({"n": n}).encode()
        signed = Bundle.from_json(instance.sign_dsse(payload, identity="ci@test.local"))
        kind, got = verifier.verify_dsse(signed, Identity(identity="ci@test.local", issuer=ISSUER))
        assert (kind, got) == ("application/vnd.in-toto+json", payload)
    proof = json.loads(signed.to_json())["verificationMaterial"]["tlogEntries"][0]
    assert len(proof["inclusionProof"]["hashes"]) > 0


def test_fulcio_refuses_a_token_it_did_not_issue(instance: PrivateSigstore) -> None:
    other = PrivateSigstore(name="other.local")
    with Services(instance) as services:
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1 only
            services.url + "/api/v2/signingCert",
            data=json.dumps(
                {"certificateSigningRequest": base64.b64encode(b"x").decode()}
            ).encode(),
            headers={"Authorization": "Bearer " + other.mint_token("ci@test.local")},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        caught.value.close()
        assert caught.value.code == 401
        assert services.requests == ["/api/v2/signingCert"]


def test_the_services_listen_on_loopback_only(instance: PrivateSigstore) -> None:
    with Services(instance) as services:
        assert services.url.startswith("http://127.0.0.1:")
        config = services.trust_config()
    assert config["signingConfig"]["caUrls"][0]["url"] == services.url
    assert config["trustedRoot"]["tlogs"][0]["logId"]["keyId"]
