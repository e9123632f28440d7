"""Byte-reproducible packing of a bundle into a tar, and safe unpacking of one.

A packed tar holds regular-file members only, in sorted order, in the ustar format with mtime 0,
uid/gid 0, empty owner names and mode 0644: the same content gives the same bytes on any
machine, whatever the umask, mtimes or creation order of the files packed.

Packing reports its progress in bytes read (every few MiB), as hashing does
(:data:`verify._hashing.PROGRESS_STEP`); an error while writing names the tar or the file the user
gave, never the temp file written first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from audit._store import errors_naming, output_target, temporary_file, write_atomically
from bundle_schema.errors import CheckFailed, InvalidInput
from bundle_schema.layout import MANIFEST, classify_path
from bundle_schema.models import Finding
from verify import (
    PROGRESS_STEP,
    READ_CHUNK,
    Hashed,
    Member,
    integrity_findings,
    open_source,
    parse_manifest,
)

__all__ = ["PackResult", "Progress", "pack", "unpack"]

Progress = Callable[[int, int], Callable[[int], None] | None]
"""Given (file count, total bytes), return a callback that advances by bytes, or None (the
shape of ``verify_bundle``'s ``progress``)."""


@dataclass(frozen=True)
class PackResult:
    """What pack or unpack did."""

    bundle_digest: str
    members: int
    bytes: int


class _HashingReader:
    """A file object over a member that hashes what tarfile reads from it and reports the bytes
    read to ``advance`` every :data:`PROGRESS_STEP` bytes (and at :meth:`flush`)."""

    def __init__(self, member: Member, advance: Callable[[int], None] | None) -> None:
        self._chunks = member.chunks()
        self._chunk = b""
        self._at = 0
        self._advance = advance
        self._unreported = 0
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        parts: list[bytes] = []
        wanted = size
        while size < 0 or wanted > 0:
            if self._at == len(self._chunk):
                self._chunk, self._at = next(self._chunks, b""), 0
                if not self._chunk:
                    break
            end = len(self._chunk) if size < 0 else min(len(self._chunk), self._at + wanted)
            parts.append(self._chunk[self._at : end])
            wanted -= end - self._at
            self._at = end
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        self.digest.update(data)
        self.size += len(data)
        self._unreported += len(data)
        if self._unreported >= PROGRESS_STEP:
            self.flush()
        return data

    def flush(self) -> None:
        """Report what was read since the last report."""
        if self._advance is not None and self._unreported:
            self._advance(self._unreported)
        self._unreported = 0


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


def pack(
    bundle: str | os.PathLike[str],
    out: str | os.PathLike[str],
    progress: Progress | None = None,
) -> PackResult:
    """Pack a bundle directory into a reproducible tar, refusing a bundle that fails integrity.

    Args:
        bundle: the bundle directory.
        out: the tar to write.
        progress: makes a callback that is given the bytes read as packing goes (see
            :data:`Progress`).

    Raises:
        InvalidInput: not a bundle directory, a file outside the layout, or a bad output path.
        CheckFailed: a blob is missing, extra or does not hash to its name; no tar is written.
        OSError: reading or writing failed, naming the file read or ``out``; no tar is left
            under ``out``.
    """
    source = open_source(bundle)
    if source.kind != "directory":
        raise InvalidInput(f"{bundle}: pack takes a bundle directory")
    for path in sorted(source.members):
        if classify_path(path) == "other":
            raise InvalidInput(f"{bundle}: {path!r} is outside the bundle layout; refusing to pack")
    manifest = parse_manifest(source.manifest_bytes(), source.location)
    target = output_target(str(out), str(bundle), doing="packs")
    hashed: dict[str, Hashed] = {}
    written = 0
    paths = sorted(source.members)
    sizes = {p: os.stat(source.members[p].file, follow_symlinks=False).st_size for p in paths}
    advance = progress(len(paths), sum(sizes.values())) if progress is not None else None
    with errors_naming(target):
        temp, fd = temporary_file(target.parent, target.name)  # O_EXCL, O_NOFOLLOW: no link
        try:
            with (
                os.fdopen(fd, "wb") as raw,
                tarfile.TarFile(  # copied in whole chunks, not tarfile's 16 KiB
                    fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT, copybufsize=READ_CHUNK
                ) as archive,
            ):
                for path in paths:
                    reader = _HashingReader(source.members[path], advance)
                    archive.addfile(_tar_info(path, sizes[path]), reader)
                    reader.flush()
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
    if not os.fspath(out):  # Path("") is the working directory
        raise InvalidInput("-o: an empty path; name the directory to unpack into")
    source = open_source(archive)
    if source.kind != "tar":
        raise InvalidInput(f"{archive}: unpack takes a tar file")
    manifest = parse_manifest(source.manifest_bytes(), source.location)
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
