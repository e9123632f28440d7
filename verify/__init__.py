"""The offline verifier: reads a bundle, never writes, never runs its code, never opens a socket
unless it is given a URL to read the bundle from (``_remote``, ADR 0024).

Public API: :func:`verify_bundle` and the values it works with. The core (``_core``) is pure;
``_shell`` does the reading.
"""

from verify._consistency import git_blob_id
from verify._core import ParsedManifest, parse_manifest
from verify._hashing import BlobCache, default_workers, hash_members
from verify._remote import url_snapshots
from verify._shell import Verification, verify_bundle, verify_with_evidence
from verify._source import DEFAULT_LIMITS, BundleSource, HostileArchive, Limits, Member, open_source
from verify._version import VERSION
from verify.render import render_verdict, verdict_json

__all__ = [
    "DEFAULT_LIMITS",
    "VERSION",
    "BlobCache",
    "BundleSource",
    "HostileArchive",
    "Limits",
    "Member",
    "ParsedManifest",
    "Verification",
    "default_workers",
    "git_blob_id",
    "hash_members",
    "open_source",
    "parse_manifest",
    "render_verdict",
    "url_snapshots",
    "verdict_json",
    "verify_bundle",
    "verify_with_evidence",
]
