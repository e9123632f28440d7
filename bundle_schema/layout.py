"""Where things live inside a bundle, and how the manifest seals itself.

    manifest.json            canonical JSON (RFC 8785) of the Manifest
    blobs/sha256/<64 hex>    every evidence file, named by the SHA-256 of its bytes
    signatures/<name>        optional, outside the manifest's digest

The bundle digest is ``sha256:`` + SHA-256 of manifest.json's bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bundle_schema.canonical import canonical_bytes, digest_of

__all__ = [
    "BLOB_DIR",
    "BLOB_NAME",
    "MANIFEST",
    "MANIFEST_SIGNATURE",
    "SEAL_FIELD",
    "SIGNATURES_DIR",
    "blob_path",
    "classify_path",
    "content_digest",
]

MANIFEST = "manifest.json"
BLOB_DIR = "blobs/sha256"
SIGNATURES_DIR = "signatures"
MANIFEST_SIGNATURE = SIGNATURES_DIR + "/manifest.sigstore.json"
"""The Sigstore bundle over the manifest's in-toto Statement (outside the manifest's digest)."""
SEAL_FIELD = "content_digest"
BLOB_NAME = re.compile(r"^[0-9a-f]{64}$")
SIGNATURE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def blob_path(digest: str) -> str:
    """The bundle-relative path of a blob, from its ``sha256:<hex>`` digest."""
    algorithm, _, hexdigest = digest.partition(":")
    if algorithm != "sha256" or not BLOB_NAME.fullmatch(hexdigest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return f"{BLOB_DIR}/{hexdigest}"


def classify_path(path: str) -> str:
    """Say what a bundle-relative file path is: ``manifest``, ``blob``, ``signature`` or ``other``.

    ``other`` covers both files outside the layout and misnamed blobs (see :data:`BLOB_NAME`).
    """
    if path == MANIFEST:
        return "manifest"
    head, _, name = path.rpartition("/")
    if head == BLOB_DIR and BLOB_NAME.fullmatch(name):
        return "blob"
    if head == SIGNATURES_DIR and SIGNATURE_NAME.fullmatch(name):
        return "signature"
    return "other"


def content_digest(manifest: Mapping[str, Any]) -> str:
    """The seal of a manifest: the digest of its canonical JSON without the seal field (the
    verifier takes those bytes from the manifest's own:
    :func:`~bundle_schema.canonical.loads_canonical_without`)."""
    return digest_of(canonical_bytes({k: v for k, v in manifest.items() if k != SEAL_FIELD}))
