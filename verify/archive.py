"""An archive is a list (ADR 0025): the bundles under folders, ``s3://`` prefixes and list files,
each verified once by bundle digest, every blob shared through a store hashed once, and one
report written incrementally.

- :func:`expand` and :func:`read_list` turn what a user gives into sources: a bundle directory,
  a tar, a folder holding them, a tar's URL, an ``s3://bucket/prefix/`` (every ``.tar`` object
  under it, listed through fsspec), or a list file of those, one a line; a
  :class:`SourceList` keeps them on disk and walks them in order (:func:`sort_key`).
- :func:`verify_archive` verifies them in this process (the default engine);
  :mod:`verify._dask` on a Dask cluster. Both feed an :class:`ArchiveReport` writer, whose
  output is the same bytes whichever engine fed it.
- :class:`ArchiveWriter` keeps in memory only each bundle's digest, sources and where its entry
  is in a spool file; the entries themselves (canonical JSON) are written to the spool as they
  come, then copied out in bundle-digest order as one canonical ``archive-report`` document
  (or Markdown, or CSV). 10,000 verdicts never sit in memory at once.

Nothing here imports fsspec unless a URL is given.
"""

from __future__ import annotations

import contextvars
import dataclasses
import errno
import io
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.canonical import write_array
from bundle_schema.errors import EvidenceAuditError, InvalidInput, clip, one_line, printable
from bundle_schema.layout import MANIFEST_SIGNATURE, classify_path
from bundle_schema.models import Finding, PinSetRef, Signer, Verdict
from verify._core import ordered_findings
from verify._hashing import BlobCache
from verify._remote import filesystem, masked_text, prefix_keys, s3_parts, shown_url
from verify._shell import check_integrity, verify_bundle
from verify._signature import MAX_SIGNATURE_SIZE, IdentityPolicy
from verify._source import BundleSource, file_url_path, is_url, open_input, open_source
from verify._spool import Spool, Spooled, sortable
from verify._spool import named as _named
from verify._spool import text as _text
from verify.policy import failed_check, signature_failure
from verify.render import cell, signer_line, write_csv

__all__ = [
    "MASKED_TWIN",
    "MAX_LINE",
    "SIGNED_OTHERWISE",
    "ArchiveStats",
    "ArchiveWriter",
    "Defect",
    "Judged",
    "Ordered",
    "SourceList",
    "changed",
    "check",
    "defect_of",
    "entry_of",
    "expand",
    "judge",
    "located",
    "open_in",
    "ordered",
    "read_list",
    "refusal_reason",
    "shown",
    "signatures_of",
    "sort_key",
    "text_out",
    "verify_archive",
]

Source = Path | str
"""A local path, or a URL as given."""

MAX_LIST_FILE = 256 << 20
"""A list file of sources is at most this large (about 2 million URLs)."""
MAX_LINE = 1 << 20
"""A line of a list file is at most this many characters: longer than any path or URL (an
archive's walk keys a source by 8 bytes a character, in SQLite, whose blobs are at most 10^9
bytes)."""


def shown(source: Source) -> str:
    """A source as reports name it: its path, or its URL without a password in it; a byte of
    it that is not UTF-8 written out (:func:`bundle_schema.errors.printable`: ``\\xff``; two
    sources then shown alike are refused as twins, :data:`MASKED_TWIN`)."""
    return printable(shown_url(source) if isinstance(source, str) else str(source))


def located(source: Source, cwd: str | None) -> Source:
    """Where a source is opened: a relative local path joined to ``cwd`` (the working directory
    of the command, for a Dask worker whose own is another, ADR 0026), else the source itself."""
    if cwd is None or (isinstance(source, str) and is_url(source)):
        return source
    text = os.fspath(source)
    return text if os.path.isabs(text) else os.path.join(cwd, text)


def open_in(source: Source, cwd: str | None = None) -> BundleSource:
    """:func:`open_source` at :func:`located`, the bundle's messages naming it as given (what
    the default engine names it). Raises what :func:`open_source` raises, naming the path
    opened: :func:`refusal_reason` with ``at`` names it as given."""
    at = located(source, cwd)
    bundle = open_source(at)
    name = shown(source)
    return bundle if bundle.location == name else dataclasses.replace(bundle, location=name)


def _as_given(text: str, at: Source | None, name: str) -> str:
    """A message of :func:`open_source` about the path ``at``: named as given (``name``). Its
    messages start with the path opened, or a path under it."""
    opened = None if at is None else shown(at)
    if opened is None or opened == name:
        return text
    if text == opened or text.startswith((f"{opened}:", f"{opened}/")):
        return name + text[len(opened) :]
    return text


def refusal_reason(
    source: Source, exc: EvidenceAuditError | OSError, at: Source | None = None
) -> str:
    """The one-line reason a source was refused, without its own name in front (``at``: where
    it was opened, if not as given; see :func:`located`)."""
    name = shown(source)
    if isinstance(exc, OSError):
        where = f"{_as_given(str(exc.filename), at, name)}: " if exc.filename else ""
        text = f"{where}{exc.strerror or exc}"
    else:
        text = _as_given(exc.message, at, name)
    text = text.removeprefix(f"{os.fspath(source)}: ")  # named as given: a raw path, a URL
    return one_line(masked_text(text)).removeprefix(f"{one_line(name)}: ")


def _folder(path: Path) -> Iterator[Source]:
    """The bundle directories and ``.tar`` files at a folder's top, as the folder lists them
    (an archive sorts its sources itself), one at a time: a folder of millions is never held."""
    empty = True
    with os.scandir(path) as entries:
        for entry in entries:
            child = path / entry.name
            if (_is(entry.is_dir) and (child / "manifest.json").is_file()) or (
                _is(entry.is_file) and child.suffix == ".tar"
            ):
                empty = False
                yield child
    if empty:
        raise InvalidInput(f"{path}: no bundle directory or .tar in it")


_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
"""What :meth:`pathlib.Path.is_file` takes for no: a symlink loop, a dangling link."""


def _is(test: Callable[[], bool]) -> bool:
    """A folder entry's ``is_dir`` or ``is_file``, no where ``Path``'s says no (an entry that
    is a symlink loop is skipped, as a dangling link is, not the whole folder refused)."""
    try:
        return test()
    except OSError as exc:
        if exc.errno in _NOT_THERE:
            return False
        raise


def _prefix(url: str) -> Iterator[Source]:
    """Every ``.tar`` object under an ``s3://bucket/prefix/``, by key, a page of the listing at
    a time (:func:`verify._remote.prefix_keys`).

    Raises:
        InvalidInput: an http(s) folder (a web server has no listing), or a prefix that cannot
            be listed, whose listing is refused (:func:`verify._remote.prefix_keys`), or that
            holds no tar.
    """
    scheme = url.split(":", 1)[0].lower()
    if scheme != "s3":
        raise InvalidInput(
            f"{shown(url)}: a web server has no listing; name each tar, or list their URLs in a "
            "file, one a line, and give it with --from FILE"
        )
    bucket, prefix = s3_parts(url, shown(url))
    fs: Any = filesystem("s3")
    found = False
    try:
        for key in prefix_keys(fs, bucket, prefix):
            if key.endswith(".tar"):
                found = True
                yield f"s3://{key}"
    except InvalidInput as exc:  # a listing refused
        raise InvalidInput(f"{shown(url)}: cannot list: {exc.message}") from None
    except Exception as exc:  # s3fs and botocore raise many types
        raise InvalidInput(f"{shown(url)}: cannot list: {type(exc).__name__}: {exc}") from None
    if not found:
        raise InvalidInput(f"{shown(url)}: no .tar object under this prefix")


def expand(text: str, base: Path | None = None) -> Iterator[Source]:
    """The sources one argument (or one line of a list file) names, one at a time.

    A bundle directory or tar is itself; a folder is the bundle directories and ``.tar`` files
    at its top, in the folder's order; a URL ending in ``/`` is a prefix (``s3://`` only: every
    ``.tar`` under it, sorted); another URL is one tar. A relative path of a list file is
    relative to ``base``. An archive orders its sources itself (:class:`SourceList`).

    Raises:
        InvalidInput: no such path; a ``file://`` folder that is none, of another host, or
            with a query or fragment; a folder or prefix with no bundle in it; an http(s)
            prefix.
    """
    if is_url(text):
        if text.lower().startswith("file://"):
            if not text.endswith("/"):
                return iter([text])
            folder = Path(file_url_path(text))  # as one bundle's: RFC 8089, decoded
            if not folder.is_dir():  # no such folder, a file, a NUL: said as for a path
                raise InvalidInput(f"{folder}: no such directory")
            return _folder(folder)
        return _prefix(text) if text.endswith("/") else iter([text])
    path = Path(text)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.is_file() or (path / "manifest.json").is_file():
        return iter([path])
    if path.is_dir():
        return _folder(path)
    if path.exists():  # a FIFO, a device, a socket
        raise InvalidInput(f"{path}: neither a bundle directory nor a tar file")
    raise InvalidInput(f"{path}: no such bundle, tar or directory")


def read_list(file: str) -> Iterator[Source]:
    """The sources of a list file: one path or URL a line (UTF-8), each expanded as on the
    command line; blank lines and lines starting with ``#`` are skipped; a relative path is
    relative to the list file's folder.

    Raises:
        InvalidInput: the file is named by a URL other than ``file://`` (a list is read from
            disk), cannot be read, names no bundle (only blank lines and
            comments: a list holds no bundle as an empty folder holds none), or a line names
            nothing or is longer than :data:`MAX_LINE` (with its line number).
    """
    local = file.lower().startswith("file://")
    if is_url(file) and not local:
        raise InvalidInput(
            f"{shown(file)}: a list of bundles is a local file: download it first, then give "
            "its path (its lines may be URLs)"
        )
    path = Path(file_url_path(file) if local else file)
    try:
        size = path.stat().st_size
        handle = open_input(path, encoding="utf-8-sig")  # a byte order mark (Notepad's) skipped
    except OSError as exc:
        raise InvalidInput(f"{file}: cannot read: {exc.strerror}") from None
    if size > MAX_LIST_FILE:
        handle.close()
        raise InvalidInput(f"{file}: {_TOO_LONG}")
    named = False
    with handle:
        try:
            for number, (line, length) in enumerate(_lines(handle, file), start=1):
                text = line.strip()
                if not text or text.startswith("#"):
                    continue
                if length > MAX_LINE + 1 or len(text) > MAX_LINE:
                    raise InvalidInput(
                        f"{file}:{number}: a line of {max(length - 1, len(text))} characters; a "
                        f"path or URL is at most {MAX_LINE}"
                    )
                named = True
                try:
                    yield from expand(text, path.parent)
                except InvalidInput as exc:
                    raise InvalidInput(f"{file}:{number}: {exc}") from None
        except UnicodeDecodeError:
            raise InvalidInput(f"{file}: not UTF-8 text; expected one path or URL a line") from None
    if not named:
        raise InvalidInput(f"{file}: no bundle listed (only blank lines and # comments)")


_TOO_LONG = f"over {MAX_LIST_FILE >> 20} MiB; not a list of bundles"


def _lines(handle: IO[str], file: str) -> Iterator[tuple[str, int]]:
    """The lines of an open list file, each with its length: a line is kept to at most
    :data:`MAX_LINE` characters and two more (the caller refuses a longer one), the rest of a
    longer one only counted, and the file read to at most :data:`MAX_LIST_FILE` characters in
    all (a device or a pipe has no size to check first: ``/dev/zero`` is one endless line); a
    read that fails names the file (``/proc/self/mem`` gives an I/O error with no file name of
    its own)."""
    total = 0
    try:
        while line := handle.readline(MAX_LINE + 2):
            length = len(line)
            if length == MAX_LINE + 2 and not line.endswith("\n"):  # cut: count what is left
                while more := handle.readline(1 << 20):
                    length += len(more)
                    if more.endswith("\n") or total + length > MAX_LIST_FILE:
                        break
            total += length
            if total > MAX_LIST_FILE:
                raise InvalidInput(f"{file}: {_TOO_LONG}")
            yield line, length
    except OSError as exc:
        raise InvalidInput(f"{file}: cannot read: {exc.strerror or exc}") from None


def entry_of(verdict: Verdict) -> bytes:
    """A bundle's ``archive-report`` entry, its ``sources`` left empty, as canonical JSON."""
    value = {
        "bundle_digest": verdict.bundle_digest,
        "sources": [],
        "run_id": verdict.run_id,
        "pin_set": verdict.pin_set.model_dump(mode="json"),
        "outcome": verdict.outcome,
        "result_validity": verdict.result_validity,
        "profile_decision": verdict.profile_decision,
        "rankable": verdict.rankable,
        "integrity": verdict.integrity.status,
        "signature": verdict.signature.status,
        "claims_match": verdict.claims.match,
        "failed_check": failed_check(verdict),
        "first_reason": verdict.reasons[0] if verdict.reasons else None,
    }
    return canonical_bytes(value)


class Defect(NamedTuple):
    """What a source's bytes lack of what its manifest names (the findings of the byte-level
    check, :func:`verify._shell.check_integrity`): two sources of one manifest hold the same
    bytes when they have the same defect, or none."""

    fingerprint: str
    """The digest of the findings (canonical JSON, in the verdict's order)."""
    reason: str
    """Why a source with this defect is not listed under a bundle whose sources differ."""


def defect_of(digest: str, findings: Sequence[Finding]) -> Defect | None:
    """The defect of a source of bundle ``digest`` with these byte-level findings; None when it
    holds every byte its manifest names, and no file more."""
    if not findings:
        return None
    ordered = ordered_findings(findings)
    fingerprint = digest_of(canonical_bytes([f.model_dump(mode="json") for f in ordered]))
    reason = (
        f"does not hold the bytes of bundle {digest}, whose manifest it holds: "
        f"{len(ordered)} finding(s); first: {ordered[0].message}"
    )
    return Defect(fingerprint, one_line(reason))


def signatures_of(bundle: BundleSource, read: str | None = None) -> str | None:
    """The fingerprint of a source's signature files (``signatures/``: outside the manifest's
    digest, so two sources of one bundle digest may differ there, one signed and one not, or
    signed by another): the digest of each one's name and bytes, in name order; None when it
    has none. A file over :data:`~verify.MAX_SIGNATURE_SIZE` or that cannot be read counts by
    its size alone, as the verification refuses it whatever its bytes. ``read``: the digest of
    the manifest's signature as its verification read it (:attr:`Verification.signature_digest`),
    which it counts by, not read again (a source that answers a second read with other bytes
    is fingerprinted by the bytes whose signature was checked).

    Raises:
        Nothing: a file that cannot be read is fingerprinted as unreadable.
    """
    names = sorted(n for n in bundle.members if classify_path(n) == "signature")
    if not names:
        return None
    parts: list[list[object]] = []
    for name in names:
        if name == MANIFEST_SIGNATURE and read is not None:
            parts.append([name, read])
            continue
        member = bundle.members[name]
        try:
            data = member.read(MAX_SIGNATURE_SIZE)
        except OSError as exc:
            parts.append([name, f"unreadable: {exc.strerror}"])
            continue
        parts.append([name, digest_of(data) if data is not None else f"over: {member.size}"])
    return digest_of(canonical_bytes(parts))


SIGNED_OTHERWISE = (
    "holds the bytes of bundle {digest} but other signature files than {first} (signatures/ is "
    "outside the manifest's digest; the entry's signature status is that source's)"
)
"""Why a further source is refused that holds a bundle's bytes with other signatures."""

MAX_REASON = 4096
"""A refusal's reason is at most this long (the archive-report and ranking schemas' bound)."""


def signed_otherwise(digest: str, first: str) -> str:
    """:data:`SIGNED_OTHERWISE`, naming the bundle's first source."""
    return clip(SIGNED_OTHERWISE.format(digest=digest, first=first), MAX_REASON)  # names unfolded


def unsigned_copy(digest: str, kept: str, failure: str, lacking: str | None = None) -> str:
    """Why a source of bundle ``digest`` is refused whose signature failed under the command's
    ``--identity`` where ``kept``'s verified (``failure``: why its signature failed;
    ``lacking``: what the source lacks of the bundle's bytes, when it lacks any)."""
    held = (
        f"holds the bytes of bundle {digest} but not"
        if lacking is None
        else f"does not hold the bytes of bundle {digest}, whose manifest it holds "
        f"({one_line(lacking)}), nor"
    )
    return clip(
        f"{held} the signature of {kept} that the command's --identity verified: "
        f"signature failed: {one_line(failure)}",
        MAX_REASON,
    )


def changed(listed: str, got: str) -> str:
    """The reason a source is refused whose manifest changed since it was listed."""
    return f"changed while the archive was verified: listed as {listed}, then {got}"


def as_listed(digest: str, judged: Judged) -> Judged:
    """``judged``, a source listed as bundle ``digest``: as it is when it verified as that
    bundle (or was refused); refused as :func:`changed` when its manifest was another by the
    time it was verified (a source that answers two reads with two manifests is judged as
    neither)."""
    if judged.digest is None or judged.digest == digest:
        return judged
    reason = changed(digest, judged.digest).encode()
    return Judged(judged.source, None, reason, judged.hashed, judged.reused)


@dataclass(frozen=True)
class Judged:
    """One source's result: a bundle's digest and its entry, or a refusal's reason, or (a
    further source of a bundle, :func:`check`) its digest and its bytes' defect only."""

    source: str
    digest: str | None
    data: bytes
    """The canonical entry (see :func:`entry_of`), or the refusal's reason (UTF-8); empty for
    a check of a source's bytes alone."""
    hashed: int = 0
    reused: int = 0
    defect: Defect | None = None
    """What the source's bytes lack (:func:`defect_of`); None: it holds them all."""
    signed: str | None = None
    """The source's :func:`signatures_of`."""
    unsigned: str | None = None
    """Why its signature failed under the command's identity policy (:func:`signature_failure`);
    None for a check of its bytes alone."""


def judge(  # noqa: PLR0917 - one source, and where it is
    source: Source,
    pins: Any,
    cache: BlobCache,
    workers: int | None = 1,
    opened: BundleSource | None = None,
    cwd: str | None = None,
    *,
    policy: IdentityPolicy | None = None,
) -> Judged:
    """Verify one source (``opened``: the bundle already listed, not listed again; ``cwd``: see
    :func:`located`; ``policy``: who must have signed it, see :func:`verify.verify_bundle`); a
    refusal (unreadable, hostile, no valid manifest, an unknown pin set) is a result, never
    raised."""
    hashed, reused = cache.hashed, cache.reused
    try:
        bundle = opened if opened is not None else open_in(source, cwd)
        done = verify_bundle(
            bundle, pins=pins, cache=cache, workers=workers, signature_policy=policy
        )
    except (EvidenceAuditError, OSError) as exc:
        reason = refusal_reason(source, exc, located(source, cwd)).encode()
        return Judged(shown(source), None, reason, cache.hashed - hashed, cache.reused - reused)
    verdict = done.verdict
    return Judged(
        shown(source),
        verdict.bundle_digest,
        entry_of(verdict),
        cache.hashed - hashed,
        cache.reused - reused,
        defect_of(verdict.bundle_digest, done.byte_findings),
        signatures_of(bundle, done.signature_digest),
        signature_failure(verdict),
    )


def check(  # noqa: PLR0917 - one source, and where it is
    source: Source,
    digest: str,
    cache: BlobCache,
    workers: int | None = 1,
    opened: BundleSource | None = None,
    cwd: str | None = None,
) -> Judged:
    """Check only the bytes of a further source of bundle ``digest`` (one already verified from
    another source): every blob its manifest names present with its digest, no file more
    (:func:`verify._shell.check_integrity`, the check :func:`judge` makes first; a file of
    ``cache`` is not hashed again). A source whose manifest is no longer ``digest``, or that
    cannot be read, is refused."""
    hashed, reused = cache.hashed, cache.reused
    try:
        bundle = opened if opened is not None else open_in(source, cwd)
        got, findings = check_integrity(bundle, cache=cache, workers=workers)
    except (EvidenceAuditError, OSError) as exc:
        reason = refusal_reason(source, exc, located(source, cwd)).encode()
        return Judged(shown(source), None, reason, cache.hashed - hashed, cache.reused - reused)
    if got != digest:
        reason = changed(digest, got).encode()
        return Judged(shown(source), None, reason, cache.hashed - hashed, cache.reused - reused)
    return Judged(
        shown(source),
        digest,
        b"",
        cache.hashed - hashed,
        cache.reused - reused,
        defect_of(digest, findings),
        signatures_of(bundle),
    )


@dataclass
class ArchiveStats:
    """What verifying an archive cost: files hashed and digests reused (not in the report)."""

    hashed: int = 0
    reused: int = 0


class _Kept(NamedTuple):
    offset: int
    length: int
    first: str
    """The bundle's first source (the one whose signature files the others must hold)."""
    failed: bool
    defect: Defect | None
    signed: str | None
    unsigned: str | None


_SCHEMA = """
CREATE TABLE bundles (digest TEXT PRIMARY KEY, offset INTEGER, length INTEGER, first BLOB,
                      failed INTEGER, fingerprint TEXT, reason TEXT, signed TEXT,
                      unsigned TEXT) WITHOUT ROWID;
CREATE TABLE sources (digest TEXT, source BLOB);
CREATE INDEX sources_of ON sources (digest, source);
CREATE TABLE refused (source BLOB, offset INTEGER, length INTEGER);
CREATE TABLE pending (digest TEXT, source BLOB, unsigned TEXT);
"""
"""The writer's index (a :class:`verify._spool.Spool`'s)."""


class ArchiveWriter:
    """Collects the results of an archive in a spool file and an index, and writes the report.

    Memory does not grow with the archive (ADR 0025 point 5): the entries (canonical JSON) and
    refusal reasons are written to the spool file as they come; the index (each bundle's digest,
    where its entry is, its sources; each refused source and where its reason is) is a private
    temporary SQLite database, on disk past a page cache of 2 MiB.
    """

    def __init__(self, pin_set: PinSetRef | None, signer: Signer | None = None) -> None:
        self._pin_set, self._signer = pin_set, signer
        self._spool = Spool(_SCHEMA)
        self._db = self._spool.db
        self._sources = 0
        self._bundles = 0
        self._failed = 0
        self._refused = 0
        self.stats = ArchiveStats()

    def _put(self, data: bytes) -> tuple[int, int]:
        return self._spool.put_bytes(data)

    def _get(self, offset: int, length: int) -> bytes:
        return self._spool.get_bytes(offset, length)

    def _refuse(self, source: str, reason: bytes) -> None:
        self._db.execute(
            "INSERT INTO refused VALUES (?, ?, ?)", (_text(source), *self._put(reason))
        )
        self._refused += 1

    def _kept(self, digest: str) -> _Kept | None:
        row = self._db.execute(
            "SELECT offset, length, first, failed, fingerprint, reason, signed, unsigned "
            "FROM bundles WHERE digest = ?",
            (digest,),
        ).fetchone()
        if row is None:
            return None
        offset, length, first, failed, fingerprint, reason, signed, unsigned = row
        defect = None if fingerprint is None else Defect(fingerprint, reason)
        return _Kept(offset, length, _named(first), bool(failed), defect, signed, unsigned)

    def seen(self, digest: str) -> bool:
        """Whether a bundle of this digest has been judged."""
        return self._kept(digest) is not None

    def signed(self, digest: str) -> str | None:
        """The :func:`signatures_of` of the first source of bundle ``digest`` judged (None:
        none judged, or it has no signature files)."""
        kept = self._kept(digest)
        return None if kept is None else kept.signed

    def intact(self, digest: str) -> bool:
        """Whether a bundle of this digest has been judged, and its sources hold every byte
        its manifest names."""
        kept = self._kept(digest)
        return kept is not None and kept.defect is None

    def add(self, judged: Judged) -> bool:
        """A source's result, in the order of the sources (ADR 0025): a refusal; the first
        verification of a bundle digest; or a further source of it, verified or only checked
        (:func:`check`), which is listed among the bundle's sources when it has the bytes they
        have (the same :class:`Defect`, or none, and the first source's signature files), and
        refused with its defect's reason when they differ (:data:`SIGNED_OTHERWISE` when only
        the signature files do). A further source that holds every byte where the bundle's
        sources so far do not takes their place (they are refused with their defect's reason):
        if it was only checked, this returns True, and the caller adds its verification next.

        Under an identity policy (the writer's ``signer``) a further source with other
        signature files is verified too (True, as above): it is listed when its entry is the
        bundle's (its signature verified, or failed, as theirs did), takes the sources' place
        when its signature verified where theirs failed (they are refused as
        :func:`unsigned_copy`), and is refused as that when its failed where theirs verified:
        whichever source of a signed bundle comes first, a copy without its signature neither
        sets it apart nor passes for it (ADR 0043).
        """
        self.stats.hashed += judged.hashed
        self.stats.reused += judged.reused
        if judged.digest is None:
            self._sources += 1
            self._refuse(judged.source, judged.data)
            return False
        digest = judged.digest
        kept = self._kept(digest)
        if kept is not None and judged.defect == kept.defect:
            added = self._add_copy(digest, judged, kept)
            if added is not None:
                return added
        elif kept is not None and judged.defect is not None:
            self._sources += 1
            self._refuse(judged.source, judged.defect.reason.encode())
            return False
        elif not judged.data:  # only checked: its verification comes next
            return True
        elif kept is not None:  # the sources so far lack bytes this one holds
            assert kept.defect is not None  # noqa: S101 - they differ, and this one has none
            self._displace(digest, kept)
        self._sources += 1
        failed = json.loads(judged.data)["failed_check"] is not None
        defect = judged.defect
        self._db.execute(
            "INSERT OR REPLACE INTO bundles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (digest, *self._put(judged.data), _text(judged.source), failed,
             defect and defect.fingerprint, defect and defect.reason, judged.signed,
             judged.unsigned),
        )  # fmt: skip
        self._db.execute("INSERT INTO sources VALUES (?, ?)", (digest, _text(judged.source)))
        self._bundles += 1
        self._failed += failed
        return False

    def _add_copy(self, digest: str, judged: Judged, kept: _Kept) -> bool | None:
        """:meth:`add` of a further source with the bytes of bundle ``digest``'s sources (or
        their defect); None when it takes their place (its signature verified under the policy
        where theirs failed: they are refused, and it is to be added as the bundle's first
        source)."""
        held = judged.signed == kept.signed
        if not held and self._signer is not None:
            if not judged.data:  # only checked: its signature is checked next
                return True
            entry = self._get(kept.offset, kept.length)
            held = judged.data == entry and judged.unsigned == kept.unsigned  # verified alike
            if not held and kept.unsigned is not None and judged.unsigned is None:
                self._displace(digest, kept, judged.source)
                return None
        self._sources += 1
        if held:
            self._db.execute("INSERT INTO sources VALUES (?, ?)", (digest, _text(judged.source)))
            return False
        if kept.defect is not None:  # none of them holds the bundle's bytes
            reason = kept.defect.reason
        elif self._signer is None:
            reason = signed_otherwise(digest, kept.first)
        elif judged.unsigned is not None and kept.unsigned is None:
            reason = unsigned_copy(digest, kept.first, judged.unsigned)
        else:  # both failed, otherwise: named when the bundle's first source is settled
            self._db.execute(
                "INSERT INTO pending VALUES (?, ?, ?)",
                (digest, _text(judged.source), judged.unsigned),
            )
            return False
        self._refuse(judged.source, reason.encode())
        return False

    def _displace(self, digest: str, kept: _Kept, by: str | None = None) -> None:
        """Refuse the sources so far of bundle ``digest``: the source being added (``by``, when
        it is for its signature) takes their place. Refused with their defect's reason when
        they lack bytes, else as :func:`unsigned_copy` of ``by``, each with its own failure."""
        listed = self._db.execute(
            "SELECT source, ? FROM sources WHERE digest = ? "
            "UNION ALL SELECT source, unsigned FROM pending WHERE digest = ?",
            (kept.unsigned, digest, digest),
        ).fetchall()
        for source, unsigned in listed:
            if kept.defect is not None:
                reason = kept.defect.reason
            else:  # a place taken for its signature: theirs failed
                assert by is not None and unsigned is not None  # noqa: S101
                reason = unsigned_copy(digest, by, unsigned)
            self._refuse(_named(source), reason.encode())
        self._db.execute("DELETE FROM sources WHERE digest = ?", (digest,))
        self._db.execute("DELETE FROM pending WHERE digest = ?", (digest,))
        self._bundles -= 1
        self._failed -= kept.failed

    def _settle(self) -> None:
        """Refuse the sources left pending (signed otherwise, each failing under the policy as
        the bundle's first source did, but for another reason) as :func:`signed_otherwise`,
        naming the bundle's first source: the one the report gives, whatever took which
        place before."""
        rows = self._db.execute(
            "SELECT p.digest, p.source, b.first FROM pending AS p JOIN bundles AS b "
            "ON b.digest = p.digest ORDER BY p.rowid"
        ).fetchall()
        for digest, source, first in rows:
            self._refuse(_named(source), signed_otherwise(digest, _named(first)).encode())
        self._db.execute("DELETE FROM pending")

    @property
    def failed(self) -> bool:
        """Any bundle failed a check, or any source was refused: exit 1. (A source pending, see
        :meth:`_settle`, is of a bundle that failed its signature check.)"""
        return bool(self._refused or self._failed)

    def _entries(self) -> Iterator[dict[str, Any]]:
        bundles = self._db.execute("SELECT digest, offset, length FROM bundles ORDER BY digest")
        for digest, offset, length in bundles:
            value = json.loads(self._get(offset, length))
            listed = self._db.execute(
                "SELECT source FROM sources WHERE digest = ? ORDER BY source", (digest,)
            )
            value["sources"] = [_named(source) for (source,) in listed]
            yield value

    def _refusals(self) -> Iterator[dict[str, str]]:
        self._settle()
        rows = self._db.execute("SELECT source, offset, length FROM refused ORDER BY 1, 2, 3")
        for source, offset, length in rows:
            yield {"source": _named(source), "reason": self._get(offset, length).decode()}

    def _counts(self) -> dict[str, int]:
        self._settle()
        return {
            "sources": self._sources,
            "bundles": self._bundles,
            "passed": self._bundles - self._failed,
            "failed": self._failed,
            "refused": self._refused,
        }

    def write_json(self, out: IO[bytes]) -> None:
        """The ``archive-report`` document, canonical (RFC 8785: members in key order), written
        entry by entry, then a newline."""
        out.write(b'{"bundles":')
        write_array(out, (canonical_bytes(entry) for entry in self._entries()))
        out.write(b',"counts":' + canonical_bytes(self._counts()))
        pins = None if self._pin_set is None else self._pin_set.model_dump(mode="json")
        out.write(b',"pin_set":' + canonical_bytes(pins) + b',"refused":')
        write_array(out, (canonical_bytes(refusal) for refusal in self._refusals()))
        signer = None if self._signer is None else self._signer.model_dump(mode="json")
        out.write(b',"schema_version":1,"signer":' + canonical_bytes(signer) + b"}\n")

    def write_markdown(self, out: IO[str]) -> None:
        """A ``## Bundles`` table by bundle digest, a ``## Refused`` table, and the counts."""
        out.write("## Bundles\n\n")
        out.write(
            "| bundle | run | outcome | validity | profile | rankable | integrity | check | "
            "first reason | sources |\n"
        )
        out.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for e in self._entries():
            cells = (f"`{e['bundle_digest']}`", *_cells(e), ", ".join(e["sources"]))
            out.write("| " + " | ".join(cell(c) for c in cells) + " |\n")
        if self._refused:
            out.write("\n## Refused\n\n| source | reason |\n| --- | --- |\n")
            for r in self._refusals():
                out.write(f"| {cell(r['source'])} | {cell(r['reason'])} |\n")
        counts = self._counts()
        out.write(
            f"\n{counts['bundles']} bundles from {counts['sources']} sources: "
            f"{counts['passed']} passed, {counts['failed']} failed a check, "
            f"{counts['refused']} refused\n\n{signer_line(self._signer)}\n"
        )

    def write_csv(self, out: IO[str]) -> None:
        """One row per bundle (by digest), then one per refused source (``status`` refused)."""

        def rows() -> Iterator[tuple[str, ...]]:
            for e in self._entries():
                status = "failed" if e["failed_check"] else "passed"
                yield (status, e["bundle_digest"], *_cells(e), " ".join(e["sources"]))
            for r in self._refusals():
                yield ("refused", "", "", "", "", "", "", "", "", r["reason"], r["source"])

        write_csv(out, _CSV, rows())

    def close(self) -> None:
        self._spool.close()


_CSV = (
    "status", "bundle_digest", "run_id", "outcome", "result_validity", "profile_decision",
    "rankable", "integrity", "failed_check", "first_reason", "sources",
)  # fmt: skip


def _cells(e: dict[str, Any]) -> tuple[str, ...]:
    return (
        e["run_id"],
        e["outcome"],
        e["result_validity"],
        e["profile_decision"],
        "yes" if e["rankable"] else "no",
        e["integrity"],
        e["failed_check"] or "",
        e["first_reason"] or "",
    )


def verify_archive(
    sources: Iterable[Source],
    writer: ArchiveWriter,
    pins: Any = None,
    *,
    policy: IdentityPolicy | None = None,
    cache: BlobCache | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Verify every source in this process, one after the other, each bundle digest once (its
    first source in the order given; callers sort), the bytes of each further source of it
    checked (:func:`check`; see :meth:`ArchiveWriter.add`), hashing every file of a shared
    store once (one :class:`BlobCache`), into ``writer``; ``policy``: who must have signed
    each bundle (None: signatures are not checked)."""
    cache = cache if cache is not None else BlobCache()
    for source, listed in listed_ahead(sources):
        try:
            bundle = listed.result()  # listed once: for its digest, then verified
            digest = digest_of(bundle.manifest_bytes())
        except (EvidenceAuditError, OSError) as exc:
            writer.add(Judged(shown(source), None, refusal_reason(source, exc).encode()))
            continue
        if writer.seen(digest) and not writer.add(check(source, digest, cache, opened=bundle)):
            continue
        writer.add(as_listed(digest, judge(source, pins, cache, opened=bundle, policy=policy)))
        if progress is not None:
            progress(shown(source))


def _listed(source: Source, cwd: str | None) -> BundleSource:
    bundle = open_source(source) if cwd is None else open_in(source, cwd)
    bundle.manifest_bytes()  # read with the listing: a small tar at a URL is one request
    return bundle


def listed_ahead(
    sources: Iterable[Source], cwd: str | None = None
) -> Iterator[tuple[Source, Future[BundleSource]]]:
    """Each source with its listing (:func:`verify._source.open_source`, or :func:`open_in`
    ``cwd`` when given, and its manifest's bytes), in order: a tar at a URL is listed by a
    thread of its own while the caller verifies the source before it, so that one process is
    not idle while each tar is fetched (from S3 a small tar's one request took as long as its
    verification). At most one listing runs ahead, so at most one more tar's received ranges
    are held (``CACHE_BYTES``). A local source is listed when the caller asks for it, as
    before. The listing thread reads the command's URL snapshots
    (:func:`verify._remote.url_snapshots`); it alone opens URLs meanwhile. It is a daemon: a
    caller that stops early (its reader gone, an interrupt) never waits for a listing it will
    not use."""
    ahead: tuple[Source, Future[BundleSource]] | None = None
    for source in sources:
        if not (is_url(source) and not str(source).lower().startswith("file:")):
            if ahead is not None:
                yield ahead
                ahead = None
            now: Future[BundleSource] = Future()
            try:
                now.set_result(_listed(source, cwd))
            except (EvidenceAuditError, OSError) as exc:
                now.set_exception(exc)
            yield source, now
            continue
        listing = _listing(source, cwd)
        if ahead is not None:
            yield ahead
        ahead = (source, listing)
    if ahead is not None:
        yield ahead


def _listing(source: Source, cwd: str | None) -> Future[BundleSource]:
    """:func:`_listed` on a daemon thread of its own, in the caller's context."""
    future: Future[BundleSource] = Future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            future.set_result(context.run(_listed, source, cwd))
        except BaseException as exc:  # carried to the caller, who reads it
            future.set_exception(exc)

    threading.Thread(target=run, name="listing", daemon=True).start()
    return future


MASKED_TWIN = (
    "another source is shown by this name: the two differ only where a credential is masked "
    "(ADR 0037); give each source once"
)
"""Why a source is refused whose name, as reports show it, is another source's."""


def sort_key(source: Source) -> tuple[str, str]:
    """The order an archive's sources are judged in: by how they are shown, then as given (two
    that are shown alike differ only where a credential is masked)."""
    return shown(source), os.fspath(source)


class Ordered(NamedTuple):
    """An archive's sources in the order they are judged in, and those refused before."""

    sources: list[Source]
    refused: list[Judged]


def ordered(sources: Iterable[Source]) -> Ordered:
    """Sources in the order an archive is judged in (:func:`sort_key`), each once: a source
    given twice is one; of two shown alike but given differently (two URLs that differ only in
    a masked credential: one object signed twice, or two objects a token tells apart), the
    first is judged and the others refused (:data:`MASKED_TWIN`), so that no report names two
    sources alike and none is left out unsaid. (:meth:`SourceList.judged` gives the same a
    source at a time.)"""
    with SourceList(sources) as listed:
        return Ordered(list(listed.kept()), list(listed.twins()))


_SOURCES = """
CREATE TABLE sources (place INTEGER PRIMARY KEY, key BLOB, shown BLOB, url INTEGER, given BLOB);
CREATE INDEX sources_in_order ON sources (key, place);
"""


class SourceList(Spooled, Sequence[Source]):
    """An archive's sources, kept on disk (a :class:`verify._spool.Spool`'s database) as they
    are given, so that a list of millions is never held in memory; read back by their place in
    the order given, or in the order an archive is walked (:func:`sort_key`, then as given).
    Close it (or use it as a context manager) when done."""

    def __init__(self, sources: Iterable[Source] = ()) -> None:
        self._spool = Spool(_SOURCES, prefix="audit-sources-")
        self._count = 0
        self.extend(sources)

    def append(self, source: Source) -> None:
        name, given = sort_key(source)
        self._spool.db.execute(
            "INSERT INTO sources VALUES (?, ?, ?, ?, ?)",
            (self._count, sortable((name, given)), _text(name), isinstance(source, str),
             _text(given)),
        )  # fmt: skip
        self._count += 1

    def extend(self, sources: Iterable[Source]) -> None:
        for source in sources:
            self.append(source)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Source]:
        """The sources in the order given."""
        rows = self._spool.db.execute("SELECT url, given FROM sources ORDER BY place")
        for url, given in rows:
            yield _source(url, given)

    def __getitem__(self, place: int) -> Source:  # type: ignore[override] # no slices
        if not 0 <= place < self._count:
            raise IndexError(place)
        url, given = self._spool.db.execute(
            "SELECT url, given FROM sources WHERE place = ?", (place,)
        ).fetchone()
        return _source(url, given)

    def walk(self) -> Iterator[tuple[int, Source, bool]]:
        """Every source in the order an archive is walked (:func:`sort_key`; one given twice,
        twice, in the order given), with its place and whether it is the masked twin of one
        before it (shown alike, given differently: :data:`MASKED_TWIN`)."""
        rows = self._spool.db.execute(
            "SELECT place, shown, url, given FROM sources ORDER BY key, place"
        )
        first: tuple[bytes, bytes] | None = None  # of this name: the one walked
        for place, name, url, given in rows:
            if first is None or first[0] != name:
                first = (name, given)
            yield place, _source(url, given), given != first[1]

    def judged(self) -> Iterator[tuple[Source, bool]]:
        """:meth:`walk` with each source given twice once: what :func:`ordered` keeps."""
        last: tuple[bytes, bool] | None = None
        for _, source, twin in self.walk():
            given = _text(os.fspath(source))
            if last != (given, twin):
                last = (given, twin)
                yield source, twin

    def kept(self) -> Iterator[Source]:
        """The sources :func:`ordered` keeps, a source at a time."""
        return (source for source, twin in self.judged() if not twin)

    def twins(self) -> Iterator[Judged]:
        """The refusals :func:`ordered` gives (:data:`MASKED_TWIN`), a source at a time."""
        for source, twin in self.judged():
            if twin:
                yield Judged(shown(source), None, MASKED_TWIN.encode())


def _source(url: int, given: bytes) -> Source:
    return _named(given) if url else Path(_named(given))


def text_out(out: IO[bytes]) -> io.TextIOWrapper:
    """A UTF-8 text view of a binary stream (for Markdown and CSV), not closing it."""
    return io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
