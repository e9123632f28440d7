"""A private, offline Sigstore instance: the test fixture for signing and verification.

It is made of the same parts as the public-good instance, each small and real:

- a Fulcio-like root CA that issues ten-minute leaf certificates for an OIDC identity, with the
  issuer in the Fulcio extensions (OIDs 1.3.6.1.4.1.57264.1.1 and .1.8) and an embedded precert
  SCT signed by the instance's CT log key;
- a Rekor-like transparency log: an RFC 6962 Merkle tree over the canonicalized entry bodies,
  inclusion proofs, a signed checkpoint (a signed note) and a signed entry timestamp;
- an OIDC issuer that mints ES256 identity tokens, which the Fulcio service checks;
- the ``trusted_root.json`` and ClientTrustConfig that describe it all;
- :class:`Services`: the Fulcio (``/api/v2/signingCert``) and Rekor (``/api/v1/log/entries``) HTTP
  APIs on 127.0.0.1, so sigstore's unmodified ``Signer`` signs against it through real HTTP.

Nothing here touches the network beyond 127.0.0.1; the unmodified sigstore ``Verifier`` accepts
what it produces. Only ``cryptography``, ``pyjwt`` and ``rfc8785`` are used (sigstore's own
dependencies).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

__all__ = [
    "ISSUER",
    "PrivateSigstore",
    "Services",
    "inclusion_path",
    "merkle_root",
    "root_from_path",
]

UTC = dt.UTC
ISSUER = "https://oidc.test.local"
OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")  # the issuer as raw bytes
OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")  # the issuer as a DER UTF8String
OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
KEY_DETAILS = "PKIX_ECDSA_P256_SHA_256"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _spki(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _sign(key: ec.EllipticCurvePrivateKey, data: bytes) -> bytes:
    return key.sign(data, ec.ECDSA(hashes.SHA256()))


def _utf8_string(text: str) -> bytes:
    value = text.encode()
    assert len(value) < 128
    return bytes([0x0C, len(value)]) + value


def _rfc3339(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- RFC 6962 Merkle tree --------------------------------------------------------------------


def _leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def merkle_root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) of RFC 6962, section 2.1 (n >= 1)."""
    if len(leaves) == 1:
        return _leaf_hash(leaves[0])
    k = _split(len(leaves))
    return _node_hash(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


def inclusion_path(index: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]) of RFC 6962, section 2.1.1: the audit path of leaf ``index``."""
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_path(index, leaves[:k]), merkle_root(leaves[k:])]
    return [*inclusion_path(index - k, leaves[k:]), merkle_root(leaves[:k])]


def root_from_path(index: int, size: int, leaf: bytes, path: list[bytes]) -> bytes:
    """Recompute a root from an audit path (RFC 9162, section 2.1.3.2): an independent check."""
    fn, sn, result = index, size - 1, _leaf_hash(leaf)
    for sibling in path:
        if sn == 0:
            raise ValueError("path too long")
        if fn & 1 or fn == sn:
            result = _node_hash(sibling, result)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = _node_hash(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ValueError("path too short")
    return result


# --- the instance ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogEntry:
    """One integrated entry, as a Rekor v1 API response and as a Sigstore bundle entry."""

    response: dict[str, Any]
    bundle_entry: dict[str, Any]


class PrivateSigstore:
    """A CA, a CT log, a transparency log and an OIDC issuer, with fresh keys each."""

    def __init__(self, *, name: str = "test.local") -> None:
        self.name = name
        self.start = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(days=1)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ct_key = ec.generate_private_key(ec.SECP256R1())
        self.log_key = ec.generate_private_key(ec.SECP256R1())
        self.oidc_key = ec.generate_private_key(ec.SECP256R1())
        self.log_id = hashlib.sha256(_spki(self.log_key)).digest()
        self.ct_id = hashlib.sha256(_spki(self.ct_key)).digest()
        self.origin = f"rekor.{name} - 1"
        self.leaves: list[bytes] = []
        self._lock = threading.Lock()
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                x509.NameAttribute(NameOID.COMMON_NAME, f"{name}-fulcio-root"),
            ]
        )
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.start)
            .not_valid_after(self.start + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()),
                critical=False,
            )
            .sign(self.ca_key, hashes.SHA256())
        )

    # --- trust material ---

    def trusted_root(self, *, ca_end: dt.datetime | None = None) -> dict[str, Any]:
        """The ``trusted_root.json`` of this instance; ``ca_end`` ends the CA's validity."""
        start = _rfc3339(self.start)

        def log(url: str, key: ec.EllipticCurvePrivateKey, key_id: bytes) -> dict[str, Any]:
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": _b64(_spki(key)),
                    "keyDetails": KEY_DETAILS,
                    "validFor": {"start": start},
                },
                "logId": {"keyId": _b64(key_id)},
            }

        valid_for = {"start": start} | ({"end": _rfc3339(ca_end)} if ca_end else {})
        ca_der = self.ca_cert.public_bytes(serialization.Encoding.DER)
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(f"https://rekor.{self.name}", self.log_key, self.log_id)],
            "certificateAuthorities": [
                {
                    "subject": {"organization": self.name, "commonName": f"{self.name}-fulcio"},
                    "uri": f"https://fulcio.{self.name}",
                    "certChain": {"certificates": [{"rawBytes": _b64(ca_der)}]},
                    "validFor": valid_for,
                }
            ],
            "ctlogs": [log(f"https://ctfe.{self.name}", self.ct_key, self.ct_id)],
            "timestampAuthorities": [],
        }

    def trusted_root_bytes(self, **kwargs: Any) -> bytes:
        return json.dumps(self.trusted_root(**kwargs), indent=2).encode()

    def client_trust_config(self, fulcio_url: str, rekor_url: str) -> dict[str, Any]:
        """A ClientTrustConfig: this instance's root, and where its services listen."""
        start = _rfc3339(self.start)

        def service(url: str) -> dict[str, Any]:
            return {
                "url": url,
                "majorApiVersion": 1,
                "validFor": {"start": start},
                "operator": self.name,
            }

        return {
            "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
            "trustedRoot": self.trusted_root(),
            "signingConfig": {
                "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
                "caUrls": [service(fulcio_url)],
                "oidcUrls": [service(ISSUER)],
                "rekorTlogUrls": [service(rekor_url)],
                "tsaUrls": [],
                "rekorTlogConfig": {"selector": "ANY"},
                "tsaConfig": {"selector": "ANY"},
            },
        }

    # --- OIDC ---

    def mint_token(
        self, subject: str, *, issuer: str = ISSUER, lifetime: int = 600, audience: str = "sigstore"
    ) -> str:
        """An ES256 identity token for ``subject``, as a CI's OIDC provider would issue."""
        now = int(time.time())
        claims = {"iss": issuer, "sub": subject, "aud": audience, "iat": now, "nbf": now}
        claims["exp"] = now + lifetime
        return jwt.encode(claims, self.oidc_key, algorithm="ES256")

    def check_token(self, token: str) -> tuple[str, str]:
        """Fulcio's side: verify a token's signature and claims; return (identity, issuer).

        Raises:
            jwt.PyJWTError: a token this instance did not issue, or an expired one.
        """
        claims = jwt.decode(
            token, self.oidc_key.public_key(), algorithms=["ES256"], audience="sigstore"
        )
        return str(claims.get("email") or claims["sub"]), str(claims["iss"])

    # --- "Fulcio" ---

    def _sct_extension(self, tbs_precert: bytes, timestamp_ms: int) -> bytes:
        issuer_key_hash = hashlib.sha256(_spki(self.ca_key)).digest()
        signed = (
            struct.pack("!BBQH", 0, 0, timestamp_ms, 1)  # v1, certificate_timestamp, precert
            + issuer_key_hash
            + len(tbs_precert).to_bytes(3, "big")
            + tbs_precert
            + b"\x00\x00"  # no extensions
        )
        signature = _sign(self.ct_key, signed)
        sct = (
            b"\x00"
            + self.ct_id
            + struct.pack("!Q", timestamp_ms)
            + b"\x00\x00"
            + b"\x04\x03"  # sha256, ecdsa
            + struct.pack("!H", len(signature))
            + signature
        )
        sct_list = struct.pack("!H", len(sct)) + sct
        body = struct.pack("!H", len(sct_list)) + sct_list
        length = len(body)
        header = bytes([0x04, length]) if length < 128 else bytes([0x04, 0x81, length])
        return header + body  # extnValue: OCTET STRING of the TLS-encoded list

    def issue_certificate(
        self, public_key: ec.EllipticCurvePublicKey, identity: str, issuer: str
    ) -> x509.Certificate:
        """A ten-minute code-signing certificate for ``identity``, with an embedded SCT."""
        now = dt.datetime.now(UTC).replace(microsecond=0)
        if "://" in identity:
            san: x509.GeneralName = x509.UniformResourceIdentifier(identity)
        else:
            san = x509.RFC822Name(identity)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.ca_cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(minutes=10))
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName([san]), critical=True)
            .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), False)
            .add_extension(
                x509.UnrecognizedExtension(OID_ISSUER_V2, _utf8_string(issuer)), critical=False
            )
        )
        # The precertificate's TBS is the final TBS without the SCT list extension.
        tbs = builder.sign(self.ca_key, hashes.SHA256()).tbs_certificate_bytes
        sct = self._sct_extension(tbs, int(now.timestamp() * 1000))
        return builder.add_extension(
            x509.UnrecognizedExtension(OID_SCT_LIST, sct), critical=False
        ).sign(self.ca_key, hashes.SHA256())

    # --- "Rekor" ---

    def integrate(self, kind: str, spec: dict[str, Any], integrated_time: int) -> LogEntry:
        """Append an entry body to the log; return its proof, checkpoint and SET."""
        body = json.dumps(
            {"apiVersion": "0.0.1", "kind": kind, "spec": spec}, separators=(",", ":")
        ).encode()
        with self._lock:
            index = len(self.leaves)
            self.leaves.append(body)
            leaves = list(self.leaves)
        root, path = merkle_root(leaves), inclusion_path(index, leaves)
        note = f"{self.origin}\n{len(leaves)}\n{_b64(root)}\n"
        note_signature = _b64(self.log_id[:4] + _sign(self.log_key, note.encode()))
        checkpoint = f"{note}\n\u2014 {self.origin.split()[0]} {note_signature}\n"
        promise = rfc8785.dumps(
            {
                "body": _b64(body),
                "integratedTime": integrated_time,
                "logID": self.log_id.hex(),
                "logIndex": index,
            }
        )
        set_signature = _b64(_sign(self.log_key, promise))
        response = {
            hashlib.sha256(body).hexdigest(): {
                "body": _b64(body),
                "integratedTime": integrated_time,
                "logID": self.log_id.hex(),
                "logIndex": index,
                "verification": {
                    "inclusionProof": {
                        "checkpoint": checkpoint,
                        "hashes": [h.hex() for h in path],
                        "logIndex": index,
                        "rootHash": root.hex(),
                        "treeSize": len(leaves),
                    },
                    "signedEntryTimestamp": set_signature,
                },
            }
        }
        bundle_entry = {
            "logIndex": str(index),
            "logId": {"keyId": _b64(self.log_id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": set_signature},
            "inclusionProof": {
                "logIndex": str(index),
                "rootHash": _b64(root),
                "treeSize": str(len(leaves)),
                "hashes": [_b64(h) for h in path],
                "checkpoint": {"envelope": checkpoint},
            },
            "canonicalizedBody": _b64(body),
        }
        return LogEntry(response, bundle_entry)

    def integrate_request(self, request: dict[str, Any]) -> LogEntry:
        """Rekor's side of ``POST /api/v1/log/entries`` for dsse and hashedrekord proposals."""
        kind, spec = request["kind"], request["spec"]
        if kind == "dsse":
            proposed = spec["proposedContent"]
            envelope_json = proposed["envelope"]
            envelope = json.loads(envelope_json)
            payload = base64.b64decode(envelope["payload"])
            spec = {
                "envelopeHash": _sha256_field(envelope_json.encode()),
                "payloadHash": _sha256_field(payload),
                "signatures": [
                    {"signature": s["sig"], "verifier": proposed["verifiers"][0]}
                    for s in envelope["signatures"]
                ],
            }
        elif kind != "hashedrekord":
            raise ValueError(f"unsupported entry kind {kind!r}")
        return self.integrate(kind, spec, int(time.time()))

    # --- a client that signs directly (for Statements the real Signer would not make) ---

    def sign_dsse(
        self,
        payload: bytes,
        *,
        identity: str,
        issuer: str = ISSUER,
        payload_type: str = "application/vnd.in-toto+json",
    ) -> bytes:
        """A Sigstore bundle (v0.3) over ``payload`` in a DSSE envelope of ``payload_type``."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = self.issue_certificate(key.public_key(), identity, issuer)
        pae = b"DSSEv1 %d %s %d %s" % (
            len(payload_type),
            payload_type.encode(),
            len(payload),
            payload,
        )
        signature = _sign(key, pae)
        envelope = {
            "payload": _b64(payload),
            "payloadType": payload_type,
            "signatures": [{"sig": _b64(signature)}],
        }
        pem = _b64(certificate.public_bytes(serialization.Encoding.PEM))
        spec = {
            "envelopeHash": _sha256_field(json.dumps(envelope).encode()),
            "payloadHash": _sha256_field(payload),
            "signatures": [{"signature": _b64(signature), "verifier": pem}],
        }
        entry = self.integrate("dsse", spec, int(time.time()))
        der = certificate.public_bytes(serialization.Encoding.DER)
        return json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                "verificationMaterial": {
                    "certificate": {"rawBytes": _b64(der)},
                    "tlogEntries": [entry.bundle_entry],
                },
                "dsseEnvelope": envelope,
            }
        ).encode()


def _sha256_field(data: bytes) -> dict[str, str]:
    return {"algorithm": "sha256", "value": hashlib.sha256(data).hexdigest()}


# --- the services over HTTP on 127.0.0.1 -------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read the requests from :attr:`Services.requests`."""

    def _reply(self, status: int, document: object) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        self.server.requests.append(self.path)
        instance = self.server.instance
        if self.path == "/api/v2/signingCert":
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            try:
                identity, issuer = instance.check_token(token)
            except jwt.PyJWTError as exc:
                self._reply(401, {"code": 401, "message": f"invalid identity token: {exc}"})
                return
            pem = base64.b64decode(body["certificateSigningRequest"])
            request = x509.load_pem_x509_csr(pem)
            public_key = request.public_key()
            if not request.is_signature_valid or not isinstance(
                public_key, ec.EllipticCurvePublicKey
            ):
                self._reply(400, {"code": 400, "message": "bad certificate signing request"})
                return
            certificate = instance.issue_certificate(public_key, identity, issuer)
            chain = [
                c.public_bytes(serialization.Encoding.PEM).decode()
                for c in (certificate, instance.ca_cert)
            ]
            self._reply(201, {"signedCertificateEmbeddedSct": {"chain": {"certificates": chain}}})
        elif self.path == "/api/v1/log/entries":
            self._reply(201, instance.integrate_request(body).response)
        else:
            self._reply(404, {"code": 404, "message": "not found"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, instance: PrivateSigstore) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.instance = instance
        self.requests: list[str] = []


class Services:
    """Fulcio and Rekor of a :class:`PrivateSigstore`, served on 127.0.0.1 in a thread."""

    def __init__(self, instance: PrivateSigstore) -> None:
        self.instance = instance
        self._server = _Server(instance)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[str]:
        """The paths POSTed so far, in order."""
        return self._server.requests

    def trust_config(self) -> dict[str, Any]:
        """The ClientTrustConfig a signer uses to reach these services."""
        return self.instance.client_trust_config(self.url, self.url)

    def __enter__(self) -> Services:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
