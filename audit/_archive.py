"""Byte-reproducible packing of a bundle into a tar, and safe unpacking of one.

A packed tar holds regular-file members only, in sorted order, in the ustar format with mtime 0,
uid/gid 0, empty owner names and mode 0644: the same content gives the same bytes on any
machine, whatever the umask, mtimes or creation order of the files packed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from audit._store import temporary_file, write_atomically
from bundle_schema.errors import CheckFailed, InvalidInput
from bundle_schema.layout import MANIFEST, classify_path
from bundle_schema.models import Finding
from verify import Member, open_source, parse_manifest
from verify._core import integrity_findings
from verify._hashing import Hashed

__all__ = ["PackResult", "pack", "unpack"]


@dataclass(frozen=True)
class PackResult:
    """What pack or unpack did."""

    bundle_digest: str
    members: int
    bytes: int


class _HashingReader:
    """A file object over a member that hashes what tarfile reads from it."""

    def __init__(self, member: Member) -> None:
        self._chunks = member.chunks()
        self._pending = b""
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._pending) < size:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            self._pending += chunk
        cut = len(self._pending) if size < 0 else size
        data, self._pending = self._pending[:cut], self._pending[cut:]
        self.digest.update(data)
        self.size += len(data)
        return data


def _tar_info(path: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def _refuse_findings(bundle: object, findings: list[Finding]) -> None:
    if findings:
        raise CheckFailed(
            f"{bundle}: refusing to pack a bundle that fails integrity "
            f"({len(findings)} findings; first: {findings[0].message}); run: audit verify"
        )


def pack(bundle: str | os.PathLike[str], out: str | os.PathLike[str]) -> PackResult:
    """Pack a bundle directory into a reproducible tar, refusing a bundle that fails integrity.

    Raises:
        InvalidInput: not a bundle directory, a file outside the layout, or a bad output path.
        CheckFailed: a blob is missing, extra or does not hash to its name; no tar is written.
        OSError: writing failed; no tar is left under ``out``.
    """
    source = open_source(bundle)
    if source.kind != "directory":
        raise InvalidInput(f"{bundle}: pack takes a bundle directory")
    for path in sorted(source.members):
        if classify_path(path) == "other":
            raise InvalidInput(f"{bundle}: {path!r} is outside the bundle layout; refusing to pack")
    manifest = parse_manifest(source.manifest_bytes())
    target = Path(out)
    root = Path(bundle).resolve()
    if target.resolve().is_relative_to(root):
        raise InvalidInput(f"{target}: the tar cannot be written inside the bundle it packs")
    if target.is_dir():
        raise InvalidInput(f"{target}: is a directory")
    hashed: dict[str, Hashed] = {}
    written = 0
    temp, fd = temporary_file(target.parent, target.name)  # O_EXCL, O_NOFOLLOW: no planted link
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as archive,
        ):
            for path in sorted(source.members):
                member = source.members[path]
                reader = _HashingReader(member)
                size = os.stat(member.file, follow_symlinks=False).st_size
                archive.addfile(_tar_info(path, size), reader)
                hashed[path] = Hashed("sha256:" + reader.digest.hexdigest(), reader.size)
                written += reader.size
            archive.close()
            raw.flush()
            os.fsync(raw.fileno())
        _refuse_findings(bundle, integrity_findings(manifest, source.members.keys(), hashed))
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return PackResult(manifest.bundle_digest, len(source.members), written)


def unpack(archive: str | os.PathLike[str], out: str | os.PathLike[str]) -> PackResult:
    """Unpack a bundle tar into a new or empty directory, manifest.json last.

    Every member is screened before anything is written (see :func:`verify.open_source`), so
    nothing is ever written outside ``out``. If writing fails, a directory this call created is
    removed again.

    Raises:
        InvalidInput: not a tar, a hostile member, or ``out`` exists and is not empty.
        OSError: writing failed.
    """
    source = open_source(archive)
    if source.kind != "tar":
        raise InvalidInput(f"{archive}: unpack takes a tar file")
    manifest = parse_manifest(source.manifest_bytes())
    target = Path(out)
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise InvalidInput(f"{target}: exists and is not a directory")
    created = not target.exists()
    if not created and any(target.iterdir()):
        raise InvalidInput(f"{target}: exists and is not empty")
    order = sorted(source.members, key=lambda p: (p == MANIFEST, p))
    written = 0
    try:
        target.mkdir(exist_ok=True)
        for path in order:
            destination = target / path
            destination.parent.mkdir(parents=True, exist_ok=True)
            written += write_atomically(destination, source.members[path].chunks())[1]
    except BaseException:
        if created:
            shutil.rmtree(target, ignore_errors=True)
        raise
    return PackResult(manifest.bundle_digest, len(order), written)
