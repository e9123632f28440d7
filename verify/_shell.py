"""The I/O shell of verification: open, list, hash and read, then ask the core.

Verification reads the bundle and nothing else: it never writes, never runs code from the bundle
and never opens a socket.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from bundle_schema import RECORD_MEDIA_TYPES
from bundle_schema.layout import blob_path
from bundle_schema.models import Finding, Verdict
from verify._core import (
    ParsedManifest,
    intact_entries,
    integrity_findings,
    make_verdict,
    parse_manifest,
    record_findings,
)
from verify._hashing import hash_members
from verify._source import DEFAULT_LIMITS, BundleSource, Limits, Member, open_source
from verify._version import VERSION

__all__ = ["ProgressFactory", "verify_bundle"]

ProgressFactory = Callable[[int, int], Callable[[int], None] | None]
"""Given (blob count, total bytes), return a callback that advances by bytes, or None."""


class _RecordTooLargeError(Exception):
    pass


def _lines(member: Member, cap: int) -> Iterator[bytes]:
    pending = b""
    for data in member.chunks():
        pending += data
        *complete, pending = pending.split(b"\n")
        yield from complete
        if len(pending) > cap:
            raise _RecordTooLargeError
    if pending:
        yield pending  # the core refuses the unterminated last line as a document


def _documents(member: Member, lines: bool, cap: int) -> Iterator[bytes]:
    if lines:
        yield from _lines(member, cap)
        return
    if member.size > cap:
        raise _RecordTooLargeError
    yield member.read()


def _record_findings(
    manifest: ParsedManifest, source: BundleSource, names: list[str], limits: Limits
) -> list[Finding]:
    findings: list[Finding] = []
    for name in names:
        entry = manifest.model.evidence[name]
        kind = RECORD_MEDIA_TYPES.get(entry.media_type)
        if kind is None:
            continue
        path = blob_path(entry.digest)
        member = source.members[path]
        try:
            findings += record_findings(
                manifest, name, _documents(member, kind.lines, limits.max_record_line), path
            )
        except _RecordTooLargeError:
            findings.append(
                Finding(
                    code="record_invalid",
                    entry=name,
                    path=path,
                    message=f"evidence {name!r}: a document is over the cap of "
                    f"{limits.max_record_line} bytes",
                )
            )
        except OSError as exc:
            findings.append(
                Finding(
                    code="unreadable_blob",
                    entry=name,
                    path=path,
                    message=f"evidence {name!r}: blob {path} cannot be read: {exc.strerror}",
                )
            )
    return findings


def verify_bundle(
    path: str | os.PathLike[str],
    *,
    expect_digest: str | None = None,
    workers: int | None = None,
    progress: ProgressFactory | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Verdict:
    """Verify a bundle's integrity: manifest, every blob, every evidence record.

    Args:
        path: a bundle directory or an uncompressed tar of one.
        expect_digest: the bundle digest published for it, if known.
        workers: hashing threads; default: the cores this process may run on.
        progress: makes a progress callback for long work (see :data:`ProgressFactory`).
        limits: caps on sizes and counts.

    Returns:
        The verdict; its ``integrity.status`` is ``failed`` when any finding was made.

    Raises:
        InvalidInput: the bundle was refused (unreadable, hostile, no valid manifest).
    """
    source = open_source(path, limits)
    manifest = parse_manifest(source.manifest_bytes(limits))
    wanted = {blob_path(entry.digest) for entry in manifest.model.evidence.values()}
    blobs = [source.members[p] for p in sorted(wanted) if p in source.members]
    advance = progress(len(blobs), sum(m.size for m in blobs)) if progress else None
    hashed = hash_members(blobs, workers=workers, advance=advance)
    files = {p: m.size for p, m in source.members.items()}
    findings = integrity_findings(manifest, files, hashed, expect_digest)
    findings += _record_findings(manifest, source, intact_entries(manifest, findings), limits)
    return make_verdict(
        manifest,
        findings,
        blobs_checked=len(blobs),
        bytes_checked=sum(h.size for h in hashed.values()),
        version=VERSION,
    )
