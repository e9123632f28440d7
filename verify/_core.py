"""The integrity core: pure functions from bytes and observations to findings and a verdict.

Nothing here opens a file: the shell (:mod:`verify._shell`) lists the bundle, hashes blobs and
reads records, then hands what it saw to these functions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from bundle_schema import (
    RECORD_MEDIA_TYPES,
    digest_of,
    kind_of,
    loads_canonical,
    validate_document,
)
from bundle_schema.canonical import loads_canonical_without
from bundle_schema.documents import DocumentKind
from bundle_schema.errors import DefectiveBundle, DocumentError, UnknownSchemaVersion
from bundle_schema.layout import (
    BLOB_DIR,
    MANIFEST,
    SEAL_FIELD,
    classify_path,
)
from bundle_schema.models import (
    ComponentResult,
    EvidenceEntry,
    Finding,
    Gx10Evidence,
    Integrity,
    Manifest,
    QuarantineMarker,
    SignatureCheck,
    Verdict,
    VerifierInfo,
)
from bundle_schema.roles import COMPONENT_NAMES, Placement, place
from pins import PinSetSource
from verify._facts import LedgerFacts
from verify._hashing import Hashed
from verify.evidence import placement_problem, records_of
from verify.gx10 import replay

__all__ = [
    "VERIFIER_NAME",
    "ParsedManifest",
    "assemble_evidence",
    "intact_entries",
    "integrity_findings",
    "make_verdict",
    "ordered_findings",
    "parse_manifest",
    "placed_record_findings",
    "placement_findings",
    "record_findings",
    "role_entry",
    "unread_entries",
    "validate_documents",
]

VERIFIER_NAME = "evidence-audit"


@dataclass(frozen=True)
class ParsedManifest:
    """A manifest as received: its bytes, digest, parsed value and model."""

    data: bytes
    bundle_digest: str
    value: Mapping[str, Any]
    model: Manifest
    sealed_digest: str
    """What the manifest's content hashes to (its ``content_digest`` should say the same)."""
    blob_paths: dict[str, str]
    """The bundle-relative blob path of every evidence entry, by logical name."""


def parse_manifest(data: bytes, location: str | None = None) -> ParsedManifest:
    """Parse manifest.json's bytes strictly: canonical JSON, known version, schema, model;
    ``location``: the bundle's, which a refusal names first (as every refusal of a source does).

    Raises:
        DefectiveBundle: the manifest is not strict canonical JSON or not a valid version-1
            manifest (a defect of the bundle, exit 1); the message says where.
        UnknownSchemaVersion: a manifest version this verifier does not read (a refusal).
    """
    at = "" if location is None else f"{location}: "
    try:
        value, unsealed = loads_canonical_without(data, MANIFEST, SEAL_FIELD)
        model = validate_document(kind_of(Manifest), value, MANIFEST)
    except UnknownSchemaVersion as exc:
        raise UnknownSchemaVersion(f"{at}{exc.where}", exc.detail) from None
    except DocumentError as exc:
        raise DefectiveBundle(f"{at}{exc}") from None
    assert unsealed is not None  # noqa: S101 - a valid manifest is an object
    prefix = BLOB_DIR + "/"  # the model has checked every digest against DIGEST_PATTERN
    paths = {name: prefix + entry.digest[7:] for name, entry in model.evidence.items()}
    return ParsedManifest(data, digest_of(data), value, model, digest_of(unsealed), paths)


def _finding(code: Any, message: str, **where: str | None) -> Finding:
    return Finding(code=code, message=message, **where)


def integrity_findings(
    manifest: ParsedManifest,
    files: Collection[str],
    hashed: Mapping[str, Hashed],
    expect_digest: str | None = None,
) -> list[Finding]:
    """Compare the manifest with the bundle's files and the blobs' hashes.

    Args:
        manifest: the parsed manifest.
        files: the bundle-relative path of every file of the bundle.
        hashed: the hash of every referenced blob that is present, by path.
        expect_digest: a bundle digest the caller expects (published out of band), if any.

    Returns:
        The findings, unsorted; empty when the bundle is intact.
    """
    findings: list[Finding] = []
    if expect_digest is not None and expect_digest != manifest.bundle_digest:
        findings.append(
            _finding(
                "bundle_digest_mismatch",
                f"not the published bundle: its digest is {manifest.bundle_digest}, expected "
                f"{expect_digest}",
                path=MANIFEST,
                expected=expect_digest,
                got=manifest.bundle_digest,
            )
        )
    sealed = manifest.sealed_digest
    if sealed != manifest.model.content_digest:
        findings.append(
            _finding(
                "content_digest_mismatch",
                f"{MANIFEST}: {SEAL_FIELD} is {manifest.model.content_digest}, but the manifest's "
                f"content hashes to {sealed}",
                path=MANIFEST,
                expected=manifest.model.content_digest,
                got=sealed,
            )
        )
    paths = manifest.blob_paths
    for name, entry in sorted(manifest.model.evidence.items()):
        seen = hashed.get(paths[name])
        intact = (
            seen is not None
            and seen.error is None
            and seen.size == entry.size
            and seen.digest == entry.digest
        )
        if not intact:
            findings.append(_entry_finding(name, entry, paths[name], files, seen))
    for path in sorted(set(files) - set(paths.values())):
        kind = classify_path(path)
        if kind == "blob":
            findings.append(
                _finding(
                    "extra_blob",
                    f"blob {path} is not referenced by any evidence entry",
                    path=path,
                )
            )
        elif kind == "other" and path.startswith("blobs/"):
            findings.append(
                _finding(
                    "misnamed_blob",
                    f"file {path} is not named blobs/sha256/<64 lowercase hex>",
                    path=path,
                )
            )
        elif kind == "other":
            findings.append(
                _finding("unexpected_file", f"file {path} is outside the bundle layout", path=path)
            )
    return findings


def _entry_finding(
    name: str, entry: EvidenceEntry, path: str, files: Collection[str], seen: Hashed | None
) -> Finding:
    """The finding for an evidence entry whose blob is not intact."""
    if path not in files:
        return _finding(
            "missing_blob",
            f"evidence {name!r}: blob {path} is missing",
            entry=name,
            path=path,
            expected=entry.digest,
        )
    if seen is None or seen.error is not None:
        reason = seen.error if seen else "not hashed"
        return _finding(
            "unreadable_blob",
            f"evidence {name!r}: blob {path} cannot be read: {reason}",
            entry=name,
            path=path,
        )
    if seen.size != entry.size:
        return _finding(
            "size_mismatch",
            f"evidence {name!r}: blob {path} has {seen.size} bytes, the manifest says {entry.size}",
            entry=name,
            path=path,
            expected=str(entry.size),
            got=str(seen.size),
        )
    return _finding(
        "digest_mismatch",
        f"evidence {name!r}: blob {path} hashes to {seen.digest}, not to its name",
        entry=name,
        path=path,
        expected=entry.digest,
        got=seen.digest,
    )


def intact_entries(manifest: ParsedManifest, findings: Iterable[Finding]) -> list[str]:
    """Logical names of the evidence entries that no integrity finding names."""
    broken = {f.entry for f in findings if f.entry}
    return [name for name in sorted(manifest.model.evidence) if name not in broken]


class Sink(Protocol):
    """Takes a record's valid documents one by one (a list, or a reader that keeps less)."""

    def append(self, model: Any, /) -> None: ...


def record_findings(
    manifest: ParsedManifest,
    name: str,
    documents: Iterable[bytes],
    where: str,
    into: Sink | None = None,
    *,
    validated: Iterable[BaseModel | str] | None = None,
) -> list[Finding]:
    """Validate the documents of one evidence record blob and the names they reference.

    Args:
        manifest: the parsed manifest.
        name: the logical name of the record's evidence entry.
        documents: the record's documents (one for JSON, one per line for JSON Lines).
        where: the record's location for messages.
        into: when given, receives every valid document's model, in order (as it is read, so
            that a bounded reader can keep less than every document).
        validated: the documents already validated, as :func:`validate_documents` yields them
            (helper processes validate a huge record's lines; ``documents`` is then not read).
    """
    entry = manifest.model.evidence[name]
    kind = RECORD_MEDIA_TYPES[entry.media_type]
    findings: list[Finding] = []
    models = validated if validated is not None else validate_documents(kind, documents, where)
    for model in models:
        if isinstance(model, str):
            findings.append(
                _finding("record_invalid", f"evidence {name!r}: {model}", entry=name, path=where)
            )
            break
        if into is not None:
            into.append(model)
        for field, ref in _references(model):
            if ref not in manifest.model.evidence:
                findings.append(
                    _finding(
                        "dangling_reference",
                        f"evidence {name!r}: {field} names {ref!r}, which is not an evidence entry",
                        entry=name,
                        path=where,
                        got=ref,
                    )
                )
    return findings


def validate_documents(
    kind: DocumentKind[Any], documents: Iterable[bytes], where: str, start: int = 1
) -> Iterator[BaseModel | str]:
    """Each document's model, in order, up to the first invalid one, which is given as the
    reason it is refused (and ends the record: nothing after it is read). ``start``: the line
    number of the first document."""
    for number, document in enumerate(documents, start=start):
        location = f"{where}:{number}" if kind.lines else where
        try:
            yield validate_document(kind, loads_canonical(document, location), location)
        except DocumentError as exc:
            yield str(exc)
            return


def _references(model: object) -> list[tuple[str, str]]:
    if isinstance(model, ComponentResult):
        refs = [(f"raw_outputs[{i}]", r) for i, r in enumerate(model.raw_outputs)]
        return refs + ([("quarantine", model.quarantine)] if model.quarantine else [])
    if isinstance(model, QuarantineMarker) and model.source:
        return [("source", model.source)]
    return []


def placement_findings(manifest: ParsedManifest) -> tuple[list[Finding], dict[str, Placement]]:
    """Place every evidence entry in its role of the format (:mod:`bundle_schema.roles`).

    Returns:
        The findings (a record off its place, a place under another media type, a component or
        checkout the manifest names at another place) and every entry's placement, by name.
    """
    model = manifest.model
    findings: list[Finding] = []
    placements: dict[str, Placement] = {}
    for name, entry in sorted(model.evidence.items()):
        placed = placements[name] = place(name, entry.media_type)
        if placed.problem is not None:
            findings.append(
                _finding(
                    "misplaced_evidence",
                    f"evidence {name!r}: {placed.problem}",
                    entry=name,
                    got=entry.media_type,
                )
            )
    named = set()
    for index, ref in enumerate(model.components):
        expected = f"components/{ref.name}/result.json"
        named.add(ref.result)
        if ref.name not in COMPONENT_NAMES:
            findings.append(
                _finding(
                    "misplaced_evidence",
                    f"{MANIFEST}: components[{index}] names {ref.name!r}, not a component of "
                    f"the format ({', '.join(COMPONENT_NAMES)})",
                    path=MANIFEST,
                    got=ref.name,
                )
            )
        elif ref.result != expected:
            findings.append(
                _finding(
                    "misplaced_evidence",
                    f"{MANIFEST}: components[{index}] ({ref.name}) names its result "
                    f"{ref.result!r}; the format gives it {expected!r}",
                    entry=ref.result,
                    expected=expected,
                    got=ref.result,
                )
            )
    for name, placed in sorted(placements.items()):
        if placed.role is not None and placed.role.id == "component result" and name not in named:
            findings.append(
                _finding(
                    "misplaced_evidence",
                    f"evidence {name!r}: a component result that no manifest component names",
                    entry=name,
                )
            )
    for index, upstream in enumerate(model.upstreams):
        expected = f"upstreams/{upstream.name}/tree.txt"
        if upstream.tree is not None and upstream.tree != expected:
            findings.append(
                _finding(
                    "misplaced_evidence",
                    f"{MANIFEST}: upstreams[{index}] ({upstream.name}) names its listing "
                    f"{upstream.tree!r}; the format gives it {expected!r}",
                    entry=upstream.tree,
                    expected=expected,
                    got=upstream.tree,
                )
            )
    return findings, placements


def _disagrees(name: str, message: str, **where: str | None) -> Finding:
    return _finding("record_disagrees", f"evidence {name!r}: {message}", entry=name, **where)


def placed_record_findings(
    placements: Mapping[str, Placement], records: Mapping[str, Sequence[BaseModel]]
) -> list[Finding]:
    """A record that says it is something its place is not: a result or marker of another
    component, a probe of the other kind (:func:`verify.evidence.placement_problem`)."""
    findings = []
    for name, documents in sorted(records.items()):
        placed = placements[name]
        if placed.role is None or not documents:
            continue
        first = documents[0]
        problem = placement_problem(placed, first)
        if problem is None:
            continue
        variant = placed.role.variant
        expected = variant or placed.component
        got = getattr(first, "kind" if variant else "component", None)
        findings.append(_disagrees(name, problem, expected=expected, got=got))
    return findings


def assemble_evidence(
    manifest: ParsedManifest,
    records: Mapping[str, Sequence[BaseModel]],
    placements: Mapping[str, Placement] | None = None,
) -> Gx10Evidence:
    """The gx10 evidence of a bundle: each fact from the one entry its role allows.

    Args:
        manifest: the parsed manifest.
        records: the valid documents of each record entry, by logical name.
        placements: every entry's role (default: placed from the manifest).
    """
    model = manifest.model
    if placements is None:
        placements = {n: place(n, e.media_type) for n, e in model.evidence.items()}
    return records_of(placements, records).document(
        run_id=model.run_id,
        created_at=model.created_at,
        profile=model.profile,
        scoring_generation=model.scoring_generation,
        pin_set=model.pin_set,
        model=model.model,
        upstreams=model.upstreams,
        claims=model.claims,
    )


def role_entry(
    records: Mapping[str, Sequence[BaseModel]], placements: Mapping[str, Placement], role_id: str
) -> str | None:
    """The entry :func:`assemble_evidence` reads for a role of one entry, or None."""
    found = None
    for name in sorted(records):
        placed = placements[name]
        role = placed.role
        if role is not None and placed.problem is None and records[name] and role.id == role_id:
            found = name
    return found


def unread_entries(placements: Mapping[str, Placement]) -> tuple[str, ...]:
    """The entries no gate reads: kept as evidence, listed in the verdict as unread."""
    return tuple(
        sorted(
            name
            for name, placed in placements.items()
            if placed.problem is None and (placed.role is None or not placed.role.read)
        )
    )


def ordered_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Findings in the order a verdict lists them: by entry, path, code and message."""
    return tuple(sorted(findings, key=lambda f: (f.entry or "", f.path or "", f.code, f.message)))


def make_verdict(
    manifest: ParsedManifest,
    findings: Iterable[Finding],
    blobs_checked: int,
    bytes_checked: int,
    version: str,
    *,
    evidence: Gx10Evidence,
    pins: PinSetSource,
    signature: SignatureCheck,
    unread: Sequence[str] = (),
    ledger: LedgerFacts | None = None,
) -> Verdict:
    """Assemble the verdict: findings in a stable order, then the replay under ``pins``
    (``ledger``: the socket ledger's facts, when a bounded reader kept them instead of its
    entries)."""
    ordered = ordered_findings(findings)
    failure = f"{len(ordered)} finding(s); first: {ordered[0].message}" if ordered else None
    replayed = replay(evidence, pins, failure, ledger=ledger)
    return Verdict(
        schema_version=1,
        bundle_digest=manifest.bundle_digest,
        run_id=manifest.model.run_id,
        integrity=Integrity(
            status="failed" if ordered else "ok",
            findings=ordered,
            blobs_checked=blobs_checked,
            bytes_checked=bytes_checked,
        ),
        signature=signature,
        verifier=VerifierInfo(name=VERIFIER_NAME, version=version),
        unread=tuple(unread),
        **replayed.model_dump(
            exclude={"schema_version", "scorer", "scorer_version", "run_id"}, round_trip=True
        ),
    )
