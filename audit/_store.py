"""The bundle writer: content-addressed, deduplicating, crash-safe, sealed by the manifest.

Each blob streams through SHA-256 into a temporary file in ``blobs/sha256/``, is fsynced, and is
renamed to its digest with ``os.replace``; a blob already present is kept and the copy dropped.
The manifest is written last, the same way, so a writer that dies leaves no manifest.json and a
bundle that verifies as unsealed, never one that looks complete.

An error while writing names the path the user gave (the file, or the bundle's blob directory),
never the temp file that stood in for it (see :func:`errors_naming`).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from audit._faults import point
from bundle_schema import KINDS, canonical_bytes, digest_of, validate_document
from bundle_schema.errors import InvalidInput
from bundle_schema.layout import BLOB_DIR, MANIFEST, SEAL_FIELD, blob_path, content_digest
from bundle_schema.models import (
    LOGICAL_NAME_PATTERN,
    SCHEMA_VERSION,
    Claims,
    ComponentRef,
    EvidenceEntry,
    ModelIdentity,
    PinSetRef,
    RunnerInfo,
    UpstreamCheckout,
)
from verify import file_url_path, is_url

__all__ = [
    "BundleWriter",
    "errors_naming",
    "output_target",
    "temporary_file",
    "write_atomically",
]

_LOGICAL_NAME = re.compile(LOGICAL_NAME_PATTERN)
_TEMPORARY = re.compile(r"^\..+\.(?:tmp|link)-[0-9a-f]{16}$")
"""The names of this module's temp files (:func:`temporary_file`, the links of a store)."""


@contextmanager
def errors_naming(shown: Path) -> Iterator[None]:
    """Make an ``OSError`` raised inside name ``shown``, the path the user gave, when it names
    no file or one of this module's temp files (which the user never named); an error about
    another file (a source being read) keeps its name.

    Raises:
        OSError: of the same errno, naming ``shown``.
    """
    try:
        yield
    except OSError as exc:
        named = exc.filename
        if isinstance(named, str | bytes) and not _TEMPORARY.match(Path(os.fsdecode(named)).name):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(shown)) from exc


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_file(directory: Path, name: str) -> tuple[Path, int]:
    """Create a new temp file beside ``name`` in ``directory`` (O_EXCL, O_NOFOLLOW): path, fd."""
    temp = directory / f".{name}.tmp-{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return temp, os.open(temp, flags, 0o644)


def _stream_to_temporary(
    directory: Path, name: str, chunks: Iterable[bytes], durable: bool
) -> tuple[Path, str, int]:
    """Stream chunks through SHA-256 into a new temp file in ``directory``, fsynced if durable.

    Returns:
        The temp file, the ``sha256:`` digest and the size of what was written.

    Raises:
        OSError: writing failed; the temp file is removed (callers name the path it stood for).
    """
    temp, fd = temporary_file(directory, name)
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
                point("temp-chunk")  # mid-blob-write: a temp file, never a final name
            out.flush()
            if durable:
                os.fsync(out.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp, "sha256:" + digest.hexdigest(), size


def output_target(out: str, bundle: str | None = None, *, doing: str = "reads") -> Path:
    """The file a command was asked to write, checked before any work is done (a file is
    written by a rename over the target, which replaces whatever is there).

    Raises:
        InvalidInput: ``out`` is empty (an unset variable), a directory, in a directory that
            does not exist, or something other than a regular file (a FIFO, a socket or, for
            root, a device node such as ``/dev/null``, which the rename would replace), or it
            is the local ``bundle`` the command ``doing`` (its tar, or a file inside its
            directory: the bundle would be lost or gain a file outside its layout).
    """
    if not out:
        raise InvalidInput("an empty output path: name the file to write")
    target = Path(out)
    local = _local_path(bundle) if bundle is not None else None
    if local is not None:
        root = Path(local).resolve()
        if (root.is_dir() and target.resolve().is_relative_to(root)) or (
            root.is_file() and target.exists() and os.path.samefile(target, root)
        ):
            raise InvalidInput(f"{target}: cannot be written inside the bundle it {doing}")
    if target.is_dir():
        raise InvalidInput(f"{target}: Is a directory")  # as the system says it
    if not target.parent.is_dir():  # refused now, not after other outputs are written
        raise InvalidInput(f"{target}: No such file or directory")  # as the system says it
    if target.exists() and not target.is_file():
        raise InvalidInput(f"{target}: not a regular file; the output is written as a file")
    return target


def _local_path(bundle: str) -> str | None:
    """Where a bundle given as a path or a ``file://`` URL is on this machine; None for a
    remote URL (or a ``file://`` URL the command itself refuses)."""
    if not is_url(bundle):
        return bundle
    if not bundle.lower().startswith("file:"):
        return None
    try:
        return file_url_path(bundle)
    except InvalidInput:
        return None


def write_atomically(path: Path, chunks: Iterable[bytes]) -> tuple[str, int]:
    """Write chunks to a temp file beside ``path``, fsync it, and rename it to ``path``.

    Returns:
        The ``sha256:`` digest and size of what was written.

    Raises:
        OSError: writing failed, naming ``path``; the temp file is removed and ``path`` is
            untouched.
    """
    with errors_naming(path):
        temp, digest, size = _stream_to_temporary(path.parent, path.name, chunks, durable=True)
        try:
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    return digest, size


class BundleWriter:
    """Writes one bundle into a new or empty directory.

    With ``durable=False`` blobs are not fsynced one by one (the manifest still is): only for
    data that can be generated again, such as benchmark bundles.

    With a ``store`` (a directory shared by many runs), every blob is written there once, by its
    digest, and hard-linked into the bundle (copied where a link cannot be made), so runs that
    share evidence (the same upstream checkout, say) keep one copy of it on disk. Stored blobs
    are made read-only: every bundle that links one shares its bytes.

    Raises (constructor):
        InvalidInput: the directory exists and is not empty, or is not a directory.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durable: bool = True,
        store: str | os.PathLike[str] | None = None,
    ) -> None:
        self.root = Path(root)
        self._durable = durable
        self._store = Path(store) if store is not None else None
        if self.root.exists() and (not self.root.is_dir() or any(self.root.iterdir())):
            raise InvalidInput(f"{self.root}: exists and is not an empty directory")
        self._blobs = self.root / BLOB_DIR
        self._blobs.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, EvidenceEntry] = {}
        self.digest: str | None = None

    @property
    def entries(self) -> dict[str, EvidenceEntry]:
        """The evidence written so far, by logical name."""
        return dict(self._entries)

    def add_stream(self, name: str, chunks: Iterable[bytes], media_type: str) -> EvidenceEntry:
        """Store one evidence file from a stream of bytes under a logical name.

        Raises:
            ValueError: the name is not a logical name, is already used, or the bundle is sealed.
            OSError: writing failed, naming the blob directory (of the bundle, or of the store);
                no blob is left under a final name.
        """
        if self.digest is not None:
            raise ValueError("the bundle is sealed")
        if not _LOGICAL_NAME.match(name) or len(name) > 256:
            raise ValueError(f"{name!r} is not a logical evidence name")
        if name in self._entries:
            raise ValueError(f"evidence {name!r} is already written")
        if self._store is not None:
            entry = self._add_stored(chunks, media_type)
            self._entries[name] = entry
            return entry
        with errors_naming(self._blobs):
            temp, digest, size = _stream_to_temporary(self._blobs, "blob", chunks, self._durable)
            try:
                entry = EvidenceEntry(digest=digest, size=size, media_type=media_type)
                final = self.root / blob_path(entry.digest)
                if final.is_file() and final.stat().st_size == size:
                    temp.unlink()
                else:
                    os.replace(temp, final)
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
        self._entries[name] = entry
        return entry

    def _add_stored(self, chunks: Iterable[bytes], media_type: str) -> EvidenceEntry:
        """Write a blob into the shared store once, then link it into the bundle."""
        assert self._store is not None  # noqa: S101 - only called with a store
        shelf = self._store / BLOB_DIR
        with errors_naming(shelf):
            shelf.mkdir(parents=True, exist_ok=True)
            temp, digest, size = _stream_to_temporary(shelf, "blob", chunks, self._durable)
            entry = EvidenceEntry(digest=digest, size=size, media_type=media_type)
            stored = self._store / blob_path(digest)
            try:
                if stored.is_file() and stored.stat().st_size == size:
                    temp.unlink()
                else:
                    temp.chmod(0o444)
                    os.replace(temp, stored)
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
        final = self.root / blob_path(digest)
        if final.is_file() and final.stat().st_size == size:
            return entry
        link = self._blobs / f".blob.link-{secrets.token_hex(8)}"
        with errors_naming(self._blobs):
            try:
                try:
                    os.link(stored, link)
                except OSError:  # another filesystem, or links not allowed: a copy instead
                    with stored.open("rb") as source:
                        link, _, _ = _stream_to_temporary(
                            self._blobs,
                            "blob",
                            iter(lambda: source.read(1 << 20), b""),
                            self._durable,
                        )
                os.replace(link, final)
            except BaseException:
                link.unlink(missing_ok=True)
                raise
        return entry

    def add_bytes(self, name: str, data: bytes, media_type: str) -> EvidenceEntry:
        """Store bytes as one evidence file (see :meth:`add_stream`)."""
        return self.add_stream(name, [data], media_type)

    def add_record(self, name: str, record: BaseModel, media_type: str) -> EvidenceEntry:
        """Store one record as canonical JSON."""
        return self.add_bytes(name, canonical_bytes(record.model_dump(mode="json")), media_type)

    def seal(
        self,
        *,
        run_id: str,
        created_at: str,
        runner: RunnerInfo,
        scoring_generation: str,
        profile: str,
        pin_set: PinSetRef,
        model: ModelIdentity,
        upstreams: Sequence[UpstreamCheckout],
        components: Sequence[ComponentRef],
        claims: Claims,
    ) -> str:
        """Write manifest.json last and return the bundle digest.

        Raises:
            SchemaViolation: the manifest would not be valid (e.g. a dangling reference).
            OSError: writing failed; no manifest.json is left.
        """

        def dump(value: BaseModel) -> object:
            return value.model_dump(mode="json")

        value: dict[str, object] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "created_at": created_at,
            "runner": dump(runner),
            "scoring_generation": scoring_generation,
            "profile": profile,
            "pin_set": dump(pin_set),
            "model": dump(model),
            "upstreams": [dump(u) for u in upstreams],
            "components": [dump(c) for c in components],
            "claims": dump(claims),
            "evidence": {name: dump(entry) for name, entry in self._entries.items()},
        }
        value[SEAL_FIELD] = content_digest(value)
        validate_document(KINDS["manifest"], value, MANIFEST)
        data = canonical_bytes(value)
        _fsync_directory(self._blobs)
        point("manifest")
        write_atomically(self.root / MANIFEST, [data])
        point("sealed")
        _fsync_directory(self.root)
        self.digest = digest_of(data)
        return self.digest
