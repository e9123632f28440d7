"""The I/O shell of verification: open, list, hash and read, then ask the core.

Verification reads the bundle and nothing else: it never writes, never runs code from the bundle
and never opens a socket, unless the bundle is given as a URL (then ``verify._remote`` reads it
by byte ranges, ADR 0024).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from bundle_schema import KINDS, RECORD_MEDIA_TYPES, digest_of
from bundle_schema.errors import CheckFailed, DefectiveBundle, InvalidInput, UnknownSchemaVersion
from bundle_schema.layout import BLOB_DIR, MANIFEST_SIGNATURE
from bundle_schema.models import (
    Finding,
    Gx10Evidence,
    Integrity,
    RunConfig,
    SignatureCheck,
    SocketLedgerEntry,
    TransportExchange,
    Verdict,
)
from bundle_schema.roles import Placement
from pins import PinSetSource, load_builtin
from verify._consistency import (
    BlobIds,
    Reader,
    consistency_findings,
    foreign_harnesses,
    pinned_environments,
    pinned_listings,
    profile_components,
    read_gate_records,
    unread_raw_outputs,
)
from verify._core import (
    ParsedManifest,
    assemble_evidence,
    intact_entries,
    integrity_findings,
    make_verdict,
    parse_manifest,
    placed_record_findings,
    placement_findings,
    record_findings,
    role_entry,
    unread_entries,
    validate_documents,
)
from verify._facts import LedgerFacts, LedgerTally, slim_exchange
from verify._gc import collector_paused
from verify._hashing import BlobCache, Hashed, HashJob, default_workers
from verify._ledger_trace import trace_findings
from verify._parallel import PARALLEL_FROM, slim_in_helpers
from verify._signature import (
    MAX_SIGNATURE_SIZE,
    IdentityPolicy,
    check_bundle_signature,
    signature_failed,
)
from verify._source import DEFAULT_LIMITS, BundleSource, Limits, Member, open_source
from verify._version import VERSION
from verify.policy import failed_check

__all__ = [
    "ProgressFactory",
    "Verification",
    "check_integrity",
    "verify_bundle",
    "verify_with_evidence",
]

ProgressFactory = Callable[[int, int], Callable[[int], None] | None]
"""Given (blob count, total bytes), return a callback that advances by bytes, or None."""


_BLOB_PREFIX = BLOB_DIR + "/"


class _RecordShapeError(DefectiveBundle):
    """A record blob cannot be split into documents; the message says why."""


def _lines(member: Member, cap: int) -> Iterator[bytes]:
    """A record's lines, each checked against the cap as it comes: what is refused, and where,
    is the same however the blob's bytes are cut into pieces (a URL's are larger)."""
    pending = b""
    for data in member.proven():
        pending += data
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if len(line) > cap:
                raise _RecordShapeError(f"a line is over the cap of {cap} bytes")
            yield line
        if len(pending) > cap:
            raise _RecordShapeError(f"a line is over the cap of {cap} bytes")
    if pending:
        raise _RecordShapeError("the last line does not end with a newline")


def _documents(member: Member, lines: bool, cap: int) -> Iterator[bytes]:
    if lines:
        yield from _lines(member, cap)
        return
    data = member.read(cap, proven=True)
    if data is None:
        raise _RecordShapeError(f"the document is over the cap of {cap} bytes")
    yield data


Reading = Callable[[Iterator[bytes], str], Iterator[BaseModel | str]]
"""Reads a record's documents (the lines of a transport log) at a place, into its valid models
(each reduced to what the gates read) up to the first refused one, given as why."""

_READ_LOGS: OrderedDict[tuple[object, ...], tuple[BaseModel | str, ...]] = OrderedDict()
"""The transport logs this process read last (:data:`_READ_LOGS_KEPT`), reduced to their
facts, by all the reading depends on: the log's bytes (its digest: a record is read only once
its blob's bytes are proven to be its digest's), its place in the bundle (messages name it), the
line cap, and what is kept of it (the run config, the probes' exchanges kept whole). Bundles
that share a transport log (an archive's copies of a run, a bundle judged again under another
pin set or with its claims changed) have it read once while they are verified one after
another."""
_READ_LOGS_KEPT = 2
_READ_LOGS_LOCK = threading.Lock()


def _slim_reading(
    config: RunConfig | None, whole: set[int], digest: str, limit: int, *, keep: bool
) -> Reading:
    """Reads a transport log's lines into exchanges reduced to their facts (a probe's exchange
    whole), or gives what it gave last time it read the same log so (:data:`_READ_LOGS`);
    ``keep``: keep what it reads for next time (a log too large to keep is read as it comes)."""
    kind = KINDS["transport-exchange"]
    held = (digest, limit, None if config is None else config.model_dump_json(), frozenset(whole))

    def reduced(documents: Iterator[bytes], where: str) -> Iterator[BaseModel | str]:
        for model in validate_documents(kind, documents, where):
            if isinstance(model, TransportExchange) and model.id not in whole:
                yield slim_exchange(model, config)
            else:
                yield model

    def read(documents: Iterator[bytes], where: str) -> Iterator[BaseModel | str]:
        if not keep:
            return reduced(documents, where)
        key = (*held, where)
        with _READ_LOGS_LOCK:
            kept = _READ_LOGS.get(key)
            if kept is not None:
                _READ_LOGS.move_to_end(key)
        if kept is None:
            kept = tuple(reduced(documents, where))
            if any(isinstance(model, str) for model in kept):
                return iter(kept)  # refused before its end: bytes not proven, not kept (ADR 0053)
            with _READ_LOGS_LOCK:
                _READ_LOGS[key] = kept
                while len(_READ_LOGS) > _READ_LOGS_KEPT:
                    _READ_LOGS.popitem(last=False)
        return iter(kept)

    return read


class _Tally(list[BaseModel]):
    """Keeps a socket ledger's facts and its first entry, not every entry."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = LedgerTally()

    def append(self, model: BaseModel, /) -> None:
        if not isinstance(model, SocketLedgerEntry):
            super().append(model)
            return
        self.tally.append(model)
        if not self:
            super().append(model)


def _kind_of(manifest: ParsedManifest, name: str) -> type[BaseModel] | None:
    kind = RECORD_MEDIA_TYPES.get(manifest.model.evidence[name].media_type)
    return None if kind is None else kind.model


def _record_findings(
    manifest: ParsedManifest,
    source: BundleSource,
    names: list[str],
    limits: Limits,
    records: dict[str, list[BaseModel]],
    *,
    sink: Callable[[], list[BaseModel]] = list,
    reading: Reading | None = None,
) -> list[Finding]:
    findings: list[Finding] = []
    for name in names:
        entry = manifest.model.evidence[name]
        kind = RECORD_MEDIA_TYPES.get(entry.media_type)
        if kind is None:
            continue
        path = manifest.blob_paths[name]
        member = source.members[path]
        try:
            documents = _documents(member, kind.lines, limits.max_record_line)
            valid = sink()
            checked = reading(documents, path) if reading is not None else None
            found = record_findings(manifest, name, documents, path, valid, validated=checked)
            findings += found
            if not found:
                records[name] = valid
            else:
                _prove(member)
        except _RecordShapeError as exc:
            _prove(member)
            findings.append(
                Finding(
                    code="record_invalid",
                    entry=name,
                    path=path,
                    message=f"evidence {name!r}: {path}: {exc}",
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


def _prove(member: Member) -> None:
    """A record refused before its end read to its end, so that what was refused is proven to
    be the bytes hashed (:meth:`Member.proven`): other bytes are a refusal of the whole
    bundle, not a finding of its record (ADR 0053).

    Raises:
        ChangedWhileRead: the blob's bytes are not those its name says.
    """
    with contextlib.suppress(OSError):  # the finding already says it cannot be read
        for _ in member.proven():
            pass


def _helpers(workers: int | None, config: RunConfig | None, whole: set[int]) -> Reading | None:
    """Validate and reduce a huge transport log in helper processes (ADR 0012), or None."""
    count = default_workers() if workers is None else workers
    if count < 2:
        return None
    kind = KINDS["transport-exchange"]

    def run(lines: Iterator[bytes], where: str) -> Iterator[BaseModel | str]:
        return slim_in_helpers(kind, lines, where, config=config, whole=whole, helpers=count)

    return run


def _big_record(  # noqa: PLR0917 - the state of one reading
    manifest: ParsedManifest,
    source: BundleSource,
    name: str,
    limits: Limits,
    records: dict[str, list[BaseModel]],
    config: RunConfig | None,
    whole: set[int],
    helpers: Reading | None,
) -> list[Finding]:
    """Read a socket ledger into its facts, a transport log into reduced exchanges (by helper
    processes when it is large; one read lately is not read again, :data:`_READ_LOGS`)."""
    if _kind_of(manifest, name) is SocketLedgerEntry:
        return _record_findings(manifest, source, [name], limits, records, sink=_Tally)
    entry = manifest.model.evidence[name]
    large = entry.size >= PARALLEL_FROM
    if large and helpers is not None:
        reading = helpers
    else:
        reading = _slim_reading(config, whole, entry.digest, limits.max_record_line, keep=not large)
    return _record_findings(manifest, source, [name], limits, records, reading=reading)


def _trace_findings(
    manifest: ParsedManifest,
    source: BundleSource,
    placements: dict[str, Placement],
    intact: list[str],
) -> list[Finding]:
    blobs = {n: source.members[manifest.blob_paths[n]] for n in intact}
    digests = {n: e.digest for n, e in manifest.model.evidence.items()}
    return trace_findings(digests, blobs, placements, intact)


@functools.lru_cache(maxsize=16)
def _shipped(pin_id: str) -> PinSetSource:
    """A shipped pin set, parsed once per process: an archive's bundles name a few pin sets,
    thousands of times (parsing one costs more than verifying a small bundle). A frozen value;
    an unknown id is not cached, it raises each time."""
    return load_builtin(pin_id)


def _named_pins(manifest: ParsedManifest, source: BundleSource) -> PinSetSource:
    """The shipped pin set the bundle names.

    Raises:
        InvalidInput: none is shipped by that id; the refusal names the bundle first.
    """
    try:
        return _shipped(manifest.model.pin_set.id)
    except InvalidInput as exc:
        raise InvalidInput(f"{source.location}: {exc.message}") from None


def _blob_files(source: BundleSource) -> list[Member]:
    """Every file under blobs/sha256/: hashing starts on them before the manifest is parsed."""
    return [m for p, m in source.members.items() if p.startswith(_BLOB_PREFIX)]


@dataclass(frozen=True)
class Verification:
    """What verifying one bundle decided, and what it was decided from: one object for every
    command and library caller, so that none reads the manifest or loads the pins again."""

    verdict: Verdict
    evidence: Gx10Evidence
    """The evidence the replay read (reduced to the gates' facts unless ``keep_evidence``)."""
    manifest: ParsedManifest
    pins: PinSetSource
    """The pin set the run was judged by: the one given, else the shipped one it names."""
    byte_findings: tuple[Finding, ...] = ()
    """The findings of the byte-level check alone (:func:`check_integrity`), also among the
    verdict's: a blob missing, unreadable, or not of its size and digest, a file more than the
    manifest names, the manifest's seal. What two copies of one manifest must agree on to hold
    the same bytes."""
    signature_digest: str | None = None
    """The ``sha256:`` digest of the signature file's bytes the signature check read (None when
    none was read): what a Verification Summary names as its input attestation, never a second
    read of a file its publisher could have changed since."""

    @property
    def integrity(self) -> Integrity:
        return self.verdict.integrity

    @property
    def signature(self) -> SignatureCheck:
        return self.verdict.signature

    def failed_check(self, require: Iterable[str] = ()) -> str | None:
        """Why the check failed, as ``audit verify`` says it on one line, or None when it passed
        (the one exit policy, :func:`verify.policy.failed_check`)."""
        return failed_check(self.verdict, require)


def verify_bundle(
    path: str | os.PathLike[str] | BundleSource,
    *,
    expect_digest: str | None = None,
    workers: int | None = None,
    progress: ProgressFactory | None = None,
    limits: Limits = DEFAULT_LIMITS,
    pins: PinSetSource | None = None,
    signature_policy: IdentityPolicy | None = None,
    cache: BlobCache | None = None,
    keep_evidence: bool = False,
) -> Verification:
    """Verify a bundle: manifest, every blob, every evidence record, then replay the run.

    Args:
        path: a bundle directory, an uncompressed tar of one, or a tar's URL; or a bundle
            already opened (:func:`open_source`: listed and screened under the limits it was
            opened with), which is then not listed again.
        expect_digest: the bundle digest published for it, if known.
        workers: hashing processes or threads; default: the cores this process may run on.
        progress: makes a progress callback for long work (see :data:`ProgressFactory`).
        limits: caps on sizes and counts.
        pins: the pin set to judge the run by; default: the shipped pin set the bundle names.
        signature_policy: who must have signed the bundle; without one a signature present is
            reported ``unchecked``.
        cache: digests of files already hashed (several bundles sharing a store's blobs).
        keep_evidence: keep every record whole in :attr:`Verification.evidence` (what
            ``audit show`` and ``--evidence-out`` need); by default the transport log and the
            socket ledger are kept reduced to the facts the gates read, so that memory does not
            grow with them (ADR 0012). The verdict is the same either way.

    Returns:
        The :class:`Verification`: the verdict (its ``integrity.status`` is ``failed`` when any
        finding was made, its ``signature.status`` ``failed`` when a signature did not verify
        under the policy), the evidence the replay read, the manifest and the pin set judged by.

    Raises:
        InvalidInput: the request was refused (no bundle at the path, a newer format version, a
            pin set that is not shipped and none given); see ADR 0019.
        DefectiveBundle: the bundle's own bytes are unsound before a verdict can be formed (a
            hostile archive, a manifest that is not one).
    """
    with collector_paused():
        return _verify(
            path,
            expect_digest,
            workers,
            progress,
            limits,
            pins=pins,
            signature_policy=signature_policy,
            cache=cache,
            bounded=not keep_evidence,
        )


def verify_with_evidence(
    path: str | os.PathLike[str],
    *,
    expect_digest: str | None = None,
    workers: int | None = None,
    progress: ProgressFactory | None = None,
    limits: Limits = DEFAULT_LIMITS,
    pins: PinSetSource | None = None,
    signature_policy: IdentityPolicy | None = None,
    cache: BlobCache | None = None,
) -> tuple[Verdict, Gx10Evidence]:
    """:func:`verify_bundle` with ``keep_evidence``, as (verdict, evidence): the pair the
    replay tooling (``audit score gx10``, the ranking) works with."""
    done = verify_bundle(
        path,
        expect_digest=expect_digest,
        workers=workers,
        progress=progress,
        limits=limits,
        pins=pins,
        signature_policy=signature_policy,
        cache=cache,
        keep_evidence=True,
    )
    return done.verdict, done.evidence


def _published_manifest(data: bytes, expect_digest: str | None, location: str) -> ParsedManifest:
    """The manifest of the bundle at ``location`` (which its refusal names first, as every
    refusal of a source does); with a published digest, a manifest that does not parse and is
    not the published one is that, not the runner's fault: "not the published bundle".

    Raises:
        CheckFailed: not the published bundle, and its manifest does not parse.
        DefectiveBundle: the manifest does not parse (and no digest, or the published one, given).
        UnknownSchemaVersion: the published manifest has a version this verifier does not read.
    """
    try:
        return parse_manifest(data, location)
    except (DefectiveBundle, UnknownSchemaVersion) as exc:
        if expect_digest is None or digest_of(data) == expect_digest:
            raise
        unparsed = exc.message.removeprefix(f"{location}: ")
    raise CheckFailed(
        f"{location}: not the published bundle: its manifest digests to {digest_of(data)}, "
        f"expected {expect_digest} (and it is not a manifest: {unparsed})"
    )


def _integrity(  # noqa: PLR0917 - the state of one reading
    source: BundleSource,
    expect_digest: str | None,
    workers: int | None,
    progress: ProgressFactory | None,
    limits: Limits,
    cache: BlobCache | None,
) -> tuple[ParsedManifest, list[Finding], dict[str, Hashed], set[str]]:
    """The byte-level check: the manifest, every blob file hashed (those of ``cache`` not
    again), then :func:`~verify._core.integrity_findings`; with what was hashed and the blob
    paths present."""
    data = source.manifest_bytes(limits)
    files = _blob_files(source)
    known, todo, keys = cache.split(files) if cache is not None else ({}, files, {})
    with HashJob(todo, workers) as job:
        manifest = _published_manifest(data, expect_digest, source.location)
        present = {p for p in manifest.blob_paths.values() if p in source.members}
        advance = None
        if progress is not None:
            sizes = {manifest.blob_paths[n]: e.size for n, e in manifest.model.evidence.items()}
            advance = progress(len(present), sum(sizes[p] for p in present))
        hashed = job.results(advance)
    if cache is not None:
        cache.remember(hashed, keys)
        hashed |= known
    findings = integrity_findings(manifest, source.members.keys(), hashed, expect_digest)
    return manifest, findings, hashed, present


def check_integrity(
    source: BundleSource,
    *,
    workers: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    cache: BlobCache | None = None,
) -> tuple[str, tuple[Finding, ...]]:
    """Only the byte-level check of :func:`verify_bundle` (the same code): whether a bundle
    holds every byte its manifest names, and nothing else, without reading a record or
    replaying the run. What ``audit verify-archive`` asks of a further copy of a bundle it
    has verified (ADR 0025).

    Returns:
        The bundle digest (its manifest's), and the findings of
        :attr:`Verification.byte_findings` (empty: every blob present with its digest, no file
        more).

    Raises:
        InvalidInput: no manifest, or one that cannot be read.
        DefectiveBundle: the manifest is over its cap or does not parse.
    """
    with collector_paused():
        manifest, findings, _, _ = _integrity(source, None, workers, None, limits, cache)
    return manifest.bundle_digest, tuple(findings)


def _verify(
    path: str | os.PathLike[str] | BundleSource,
    expect_digest: str | None,
    workers: int | None,
    progress: ProgressFactory | None,
    limits: Limits,
    *,
    pins: PinSetSource | None,
    signature_policy: IdentityPolicy | None,
    cache: BlobCache | None,
    bounded: bool,
) -> Verification:
    """Verify; ``bounded``: keep each transport exchange reduced to its facts and only the
    socket ledger's facts (ADR 0012), so that memory does not grow with those records; the
    evidence returned is then not the whole evidence (the verdict is the same)."""
    source = path if isinstance(path, BundleSource) else open_source(path, limits)
    manifest, integrity, hashed, present = _integrity(
        source, expect_digest, workers, progress, limits, cache
    )
    findings = list(integrity)
    placed, placements = placement_findings(manifest)
    findings += placed
    records: dict[str, list[BaseModel]] = {}
    intact = intact_entries(manifest, findings)
    ledger: LedgerFacts | None = None
    if bounded:
        # everything else first: the run config and the probes say what to keep of the log
        big = {n for n in intact if _kind_of(manifest, n) in (TransportExchange, SocketLedgerEntry)}
        findings += _record_findings(
            manifest, source, [n for n in intact if n not in big], limits, records
        )
        first = assemble_evidence(manifest, records, placements)
        whole = {p.exchange for p in first.probes}
        helpers = _helpers(workers, first.config, whole)
        for name in sorted(big):
            findings += _big_record(
                manifest, source, name, limits, records, first.config, whole, helpers
            )
        ledger_name = role_entry(records, placements, "socket ledger")
        ledger_record = records.get(ledger_name) if ledger_name is not None else None
        if isinstance(ledger_record, _Tally):
            ledger = ledger_record.tally.facts()
    else:
        findings += _record_findings(manifest, source, intact, limits, records)
    findings += placed_record_findings(placements, records)
    findings += _trace_findings(manifest, source, placements, intact)
    judge = pins if pins is not None else _named_pins(manifest, source)
    evidence = assemble_evidence(manifest, read_gate_records(judge, records), placements)
    oversize: list[str] = []
    read = _reader(manifest, source, intact, limits, oversize)
    findings += consistency_findings(
        evidence,
        judge,
        read,
        _blob_ids(manifest, source, intact),
        names=manifest.model.evidence.keys(),
        ledger=ledger,
    )
    findings += [
        Finding(
            code="record_disagrees",
            entry=name,
            message=f"evidence {name!r}: over {limits.max_record_line} bytes, too large to be "
            "checked against the records derived from it",
        )
        for name in sorted(set(oversize))
    ]
    signature, signature_digest = _signature(source, manifest, signature_policy)
    verdict = make_verdict(
        manifest,
        findings,
        blobs_checked=len(present),
        bytes_checked=sum(hashed[p].size for p in present if p in hashed),
        version=VERSION,
        evidence=evidence,
        pins=judge,
        signature=signature,
        unread=_unread(manifest, placements, evidence, judge),
        ledger=ledger,
    )
    return Verification(verdict, evidence, manifest, judge, tuple(integrity), signature_digest)


def _reader(
    manifest: ParsedManifest,
    source: BundleSource,
    intact: list[str],
    limits: Limits,
    oversize: list[str],
) -> Reader:
    """Reads an intact entry's bytes, up to the record-line cap; an entry past the cap is
    noted in ``oversize`` (a finding: nothing escapes a cross-check by being large)."""
    readable = set(intact)

    def read(name: str) -> bytes | None:
        if name not in readable:
            return None
        try:
            data = source.members[manifest.blob_paths[name]].read(
                limits.max_record_line, proven=True
            )
        except OSError:
            return None
        if data is None:
            oversize.append(name)
        return data

    return read


def _blob_ids(manifest: ParsedManifest, source: BundleSource, intact: list[str]) -> BlobIds:
    """The git blob id of an intact entry's bytes, streamed whatever its size."""
    readable = set(intact)

    def blob_id(name: str) -> str | None:
        if name not in readable:
            return None
        member = source.members[manifest.blob_paths[name]]
        size = manifest.model.evidence[name].size  # intact: the blob has this many bytes
        digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
        try:
            for data in member.proven():
                digest.update(data)
        except OSError:
            return None
        return digest.hexdigest()

    return blob_id


def _unread(
    manifest: ParsedManifest,
    placements: Mapping[str, Placement],
    evidence: Gx10Evidence,
    judge: PinSetSource,
) -> list[str]:
    """The entries no check reads: no gate's, raw outputs no reader opens, and the records of
    a harness that is not the pinned one (ADR 0036: its environment record and data listings
    too)."""
    foreign = foreign_harnesses(evidence, judge, profile_components(judge, evidence))
    names = manifest.model.evidence
    return sorted(
        {*unread_entries(placements), *unread_raw_outputs(judge, names, foreign)}
        - pinned_listings(judge, foreign)
        - pinned_environments(judge, foreign)
    )


def _signature(
    source: BundleSource, manifest: ParsedManifest, policy: IdentityPolicy | None
) -> tuple[SignatureCheck, str | None]:
    """The signature check, and the digest of the signature bytes it read (None: none read)."""
    member = source.members.get(MANIFEST_SIGNATURE)
    if member is None or policy is None:
        data = None if member is None else b""
        check = check_bundle_signature(data, manifest.model, manifest.bundle_digest, policy, "")
        return check, None
    try:
        data = member.read(MAX_SIGNATURE_SIZE)
        problem = f"over {MAX_SIGNATURE_SIZE >> 20} MiB" if data is None else None
    except OSError as exc:
        data, problem = None, f"cannot be read: {exc.strerror}"
    if data is None:
        return signature_failed(policy, f"{MANIFEST_SIGNATURE}: {problem}"), None
    check = check_bundle_signature(
        data, manifest.model, manifest.bundle_digest, policy, MANIFEST_SIGNATURE
    )
    return check, digest_of(data)
