"""The offline verifier: reads a bundle, never writes, never runs its code, never opens a socket
unless it is given a URL to read the bundle from (``_remote``, ADR 0024).

Public API: :func:`verify_bundle` and the values it works with. The core (``_core``) is pure;
``_shell`` does the reading.
"""

from verify._consistency import git_blob_id
from verify._core import ParsedManifest, integrity_findings, parse_manifest
from verify._hashing import PROGRESS_STEP, BlobCache, Hashed, default_workers, hash_members
from verify._remote import masked_text, shown_url, url_snapshots
from verify._shell import Verification, verify_bundle, verify_with_evidence
from verify._signature import (
    MAX_SIGNATURE_SIZE,
    IdentityPolicy,
    SignatureFailed,
    build_verifier,
    check_attestation,
)
from verify._source import (
    DEFAULT_LIMITS,
    READ_CHUNK,
    BundleSource,
    HostileArchive,
    Limits,
    Member,
    file_url_path,
    is_url,
    open_source,
    read_capped,
)
from verify._trust import (
    DEFAULT_ROOT,
    PINS_FILE,
    SHIPPED_ROOTS,
    TrustRoot,
    shipped_root,
    trust_root_from_file,
)
from verify._version import VERSION
from verify.render import render_verdict, verdict_json

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_ROOT",
    "MAX_SIGNATURE_SIZE",
    "PINS_FILE",
    "PROGRESS_STEP",
    "READ_CHUNK",
    "SHIPPED_ROOTS",
    "VERSION",
    "BlobCache",
    "BundleSource",
    "Hashed",
    "HostileArchive",
    "IdentityPolicy",
    "Limits",
    "Member",
    "ParsedManifest",
    "SignatureFailed",
    "TrustRoot",
    "Verification",
    "build_verifier",
    "check_attestation",
    "default_workers",
    "file_url_path",
    "git_blob_id",
    "hash_members",
    "integrity_findings",
    "is_url",
    "masked_text",
    "open_source",
    "parse_manifest",
    "read_capped",
    "render_verdict",
    "shipped_root",
    "shown_url",
    "trust_root_from_file",
    "url_snapshots",
    "verdict_json",
    "verify_bundle",
    "verify_with_evidence",
]
