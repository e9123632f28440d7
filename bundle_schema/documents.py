"""Document kinds, the one load path for every document, and JSON Schema generation.

A document is loaded in four steps, each failing with a located message:

1. strict, canonical JSON (:mod:`bundle_schema.canonical`);
2. ``schema_version`` present and known (:class:`UnknownSchemaVersion` otherwise);
3. the committed JSON Schema (2020-12) in ``bundle_schema/json/``, with ``jsonschema``;
4. the frozen pydantic model.

For the kinds of :data:`MODEL_FIRST` a document the model accepts skips step 3 (the model is
at least as strict as the schema there); one it refuses takes steps 3 and 4 as above.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Generic, TypeVar, cast

import jsonschema
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from bundle_schema import models
from bundle_schema.canonical import loads_canonical
from bundle_schema.errors import InvalidInput, SchemaViolation, UnknownSchemaVersion, one_line

__all__ = [
    "KINDS",
    "MODEL_FIRST",
    "RECORD_MEDIA_TYPES",
    "DocumentKind",
    "generate_schemas",
    "kind_of",
    "parse_document",
    "schema_drift",
    "validate_document",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class DocumentKind(Generic[M]):
    """A kind of document, declared once: its model, whether it is versioned, and, for an
    evidence record, its media type and whether its blob is JSON Lines (how it is parsed).
    Where a record sits in a bundle and which field of the gx10 evidence it fills is its
    role's (:data:`bundle_schema.roles.ROLES`). Loading a document of a kind returns the kind's
    model (:func:`validate_document`, :func:`parse_document`; :func:`kind_of` for the kind of
    a model)."""

    name: str
    model: type[M]
    versioned: bool
    media_type: str | None = None
    lines: bool = False
    """The evidence blob is JSON Lines, one document per line."""

    @property
    def schema_file(self) -> str:
        return f"{self.name}.schema.json"


_VENDOR = "application/vnd.evidence-audit"

_ALL_KINDS: tuple[DocumentKind[Any], ...] = (
    DocumentKind("manifest", models.Manifest, versioned=True),
    DocumentKind("evidence-entry", models.EvidenceEntry, versioned=False),
    DocumentKind("upstream-checkout", models.UpstreamCheckout, versioned=False),
    DocumentKind("checkout-state", models.CheckoutState, versioned=False),
    DocumentKind("harness-environment", models.HarnessEnvironment, versioned=True),
    DocumentKind("model-identity", models.ModelIdentity, versioned=False),
    DocumentKind("claims", models.Claims, versioned=False),
    DocumentKind(
        "transport-exchange",
        models.TransportExchange,
        versioned=True,
        media_type="application/vnd.evidence-audit.transport-exchange+jsonl",
        lines=True,
    ),
    DocumentKind(
        "socket-ledger-entry",
        models.SocketLedgerEntry,
        versioned=True,
        media_type="application/vnd.evidence-audit.socket-ledger+jsonl",
        lines=True,
    ),
    DocumentKind(
        "component-result",
        models.ComponentResult,
        versioned=True,
        media_type="application/vnd.evidence-audit.component-result+json",
    ),
    DocumentKind(
        "quarantine-marker",
        models.QuarantineMarker,
        versioned=True,
        media_type="application/vnd.evidence-audit.quarantine-marker+json",
    ),
    DocumentKind(
        "run-config",
        models.RunConfig,
        versioned=True,
        media_type="application/vnd.evidence-audit.run-config+json",
    ),
    *(
        DocumentKind(
            name,
            model,
            versioned=False,
            media_type=f"{_VENDOR}.{name}+{suffix}",
            lines=suffix == "jsonl",
        )
        for name, model, suffix in (
            ("spark-quality", models.SparkQuality, "json"),
            ("spark-repeat", models.SparkRepeat, "json"),
            ("hermes-task", models.HermesTask, "jsonl"),
            ("benchlocal-packs", models.BenchLocalPacks, "json"),
            ("infermark-streaming", models.InfermarkStreaming, "json"),
            ("direct-probe", models.DirectProbe, "json"),
        )
    ),
    DocumentKind("gx10-evidence", models.Gx10Evidence, versioned=True),
    DocumentKind("gx10-replay", models.Gx10Replay, versioned=True),
    DocumentKind("ranking", models.Ranking, versioned=True),
    DocumentKind("run-diff", models.RunDiff, versioned=True),
    DocumentKind("run-result", models.RunResult, versioned=True),
    DocumentKind("rejudge-report", models.RejudgeReport, versioned=True),
    DocumentKind("archive-report", models.ArchiveReport, versioned=True),
    DocumentKind("show-report", models.ShowReport, versioned=True),
    DocumentKind("exchange-view", models.ExchangeView, versioned=True),
    DocumentKind("verdict", models.Verdict, versioned=True),
    DocumentKind("attestation-report", models.AttestationReport, versioned=True),
    DocumentKind("bundle-statement", models.BundleStatement, versioned=False),
    DocumentKind("verification-statement", models.VerificationStatement, versioned=False),
    DocumentKind("vsa-statement", models.VsaStatement, versioned=False),
    DocumentKind(
        "bfcl-shard", models.BfclShard, versioned=False, media_type=f"{_VENDOR}.bfcl-shard+json"
    ),
    DocumentKind(
        "task-tallies",
        models.TaskTallies,
        versioned=False,
        media_type=f"{_VENDOR}.task-tallies+json",
    ),
    DocumentKind(
        "bfcl-plan", models.BfclPlan, versioned=False, media_type=f"{_VENDOR}.bfcl-plan+json"
    ),
    DocumentKind("bfcl-score", models.BfclScore, versioned=True),
    DocumentKind("quality-pair-logit", models.QualityPairLogit, versioned=False),
    DocumentKind("quality-task-logit", models.QualityTaskLogit, versioned=False),
    DocumentKind("quality-pair-line", models.QualityPairLine, versioned=False),
    DocumentKind("quality-summary-line", models.QualitySummaryLine, versioned=False),
    DocumentKind("capability-line", models.CapabilityLine, versioned=False),
    DocumentKind("quality-pairs-score", models.QualityPairsScore, versioned=True),
    DocumentKind("quality-tasks-score", models.QualityTasksScore, versioned=True),
    DocumentKind("quality-measurement", models.QualityMeasurement, versioned=True),
    DocumentKind("quality-protocol-report", models.QualityProtocolReport, versioned=True),
    DocumentKind("lmspeed-catalog", models.LmspeedCatalog, versioned=True),
    DocumentKind("lmspeed-results", models.LmspeedResults, versioned=True),
    DocumentKind("lmspeed-score", models.LmspeedScore, versioned=True),
)
KINDS: Mapping[str, DocumentKind[Any]] = {kind.name: kind for kind in _ALL_KINDS}
"""Every document kind, by name."""

RECORD_MEDIA_TYPES: Mapping[str, DocumentKind[Any]] = {
    kind.media_type: kind for kind in KINDS.values() if kind.media_type
}
"""Evidence media types whose blobs the verifier parses and validates."""

_BY_MODEL: Mapping[type[BaseModel], DocumentKind[Any]] = {k.model: k for k in KINDS.values()}


def kind_of(model: type[M]) -> DocumentKind[M]:
    """The document kind whose model is ``model`` (each model is one kind's)."""
    return cast("DocumentKind[M]", _BY_MODEL[model])


# --- generation -------------------------------------------------------------------------------


def _close_pattern_objects(node: Any) -> None:
    """Maps with constrained keys refuse other keys, as the models do."""
    if isinstance(node, dict):
        if "patternProperties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for child in node.values():
            _close_pattern_objects(child)
    elif isinstance(node, list):
        for child in node:
            _close_pattern_objects(child)


def _schema_for(kind: DocumentKind[Any]) -> dict[str, Any]:
    schema = kind.model.model_json_schema(mode="validation")
    _close_pattern_objects(schema)
    return {"$schema": SCHEMA_DIALECT, "$id": f"urn:evidence-audit:schema:{kind.name}:v1", **schema}


def generate_schemas() -> dict[str, bytes]:
    """Return the JSON Schema file of every kind, by file name, as committed bytes."""
    return {
        kind.schema_file: (json.dumps(_schema_for(kind), indent=2, sort_keys=True) + "\n").encode()
        for kind in KINDS.values()
    }


def schema_drift(committed: Mapping[str, bytes | None]) -> list[str]:
    """Name the schema files whose committed bytes differ from the models (``None``: missing)."""
    expected = generate_schemas()
    drift = {name for name, data in expected.items() if committed.get(name) != data}
    return sorted(drift | {name for name in committed if name not in expected})


# --- loading ----------------------------------------------------------------------------------


@functools.cache
def _validator(kind_name: str) -> jsonschema.protocols.Validator:
    kind = KINDS[kind_name]
    files = resources.files("bundle_schema") / "json" / kind.schema_file
    try:
        schema = json.loads(files.read_bytes())
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            f"bundle_schema/json/{kind.schema_file}: cannot load the committed schema ({exc}); "
            "regenerate with: audit schema --out bundle_schema/json"
        ) from None
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema)


_BULK_FIELDS: Mapping[str, str] = {
    "manifest": "evidence",
    "bfcl-shard": "sample_ids",
    "lmspeed-results": "results",
    "lmspeed-score": "categories",
}
"""Per kind, a map or array field whose entries the model validates in bulk, not jsonschema.

The manifest's evidence map can hold 100,000 entries and a BFCL shard's sample ids as many;
jsonschema spends about 10 to 100 us on each. Their entries are checked by the model
(pydantic-core), whose JSON Schema is the committed one (``audit schema --check``); property
tests show the model accepts no entry the committed schema refuses. jsonschema checks every
other field.
"""


MODEL_FIRST: frozenset[str] = frozenset(
    {
        "manifest",
        # every evidence record kind a bundle holds (RECORD_MEDIA_TYPES)
        "transport-exchange",
        "socket-ledger-entry",
        "run-config",
        "direct-probe",
        "component-result",
        "quarantine-marker",
        "spark-quality",
        "spark-repeat",
        "hermes-task",
        "benchlocal-packs",
        "infermark-streaming",
        "bfcl-plan",
        "bfcl-shard",
        "task-tallies",
    }
)
"""Kinds whose valid documents the model alone accepts (ADR 0012): the manifest and every
evidence record kind the verifier reads from a bundle (as a record at its role's place, or again
from a raw harness output). jsonschema costs about 50 us a JSON Lines line (far more on a
streamed exchange), about 0.25 ms a small manifest and 0.09 ms a small component result, where
the model takes 2 to 10 us: in an archive of small bundles, a third of the verifier's time.

The model is at least as strict as the committed schema on these kinds: strict scalars (no
``true`` or ``1.0`` for an integer), ``extra="forbid"``, the Rust regex's ``$`` (Python's also
matches before a final newline), and a pattern with a digit class also matched as Python's
``re`` matches it (:func:`bundle_schema.models._common.python_pattern`). Hypothesis tests over
near-valid documents of each kind check it (tests/verify/test_record_fast_paths.py), so a
document the model accepts is one both accept; a document it refuses goes through the schema
and then the model, as every other kind does, so that the finding names the same fault as
before. A kind joins only with such a test. The other kinds keep the schema first: the
verifier's own reports, and the scorer inputs ``audit score`` reads from a harness's output
(lmspeed, quality, capability lines), none of them read from a bundle.
"""


def _without_bulk(kind: DocumentKind[Any], value: dict[str, Any]) -> dict[str, Any]:
    field = _BULK_FIELDS.get(kind.name)
    if field is None or not isinstance(value.get(field), dict | list):
        return value
    return {**value, field: type(value[field])()}


def _json_path(loc: tuple[int | str, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def validate_document(kind: DocumentKind[M], value: Any, where: str) -> M:
    """Validate a parsed JSON value as a document of ``kind`` and return its model.

    Raises:
        UnknownSchemaVersion: a versioned document whose ``schema_version`` is a version number
            this code does not read (a newer format).
        SchemaViolation: the value fails the committed JSON Schema or the model, or its
            ``schema_version`` is missing or not a version number.
    """
    if not isinstance(value, dict):
        raise SchemaViolation(where, f"expected a JSON object, got {type(value).__name__}")
    if kind.versioned:
        version = value.get("schema_version")
        if version != models.SCHEMA_VERSION or isinstance(version, bool):
            shown = "missing" if "schema_version" not in value else json.dumps(version)[:40]
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                # no version at all is a broken document, not one from a newer format
                raise SchemaViolation(
                    where, f"schema_version {shown} is not a version number (this verifier "
                    f"reads {models.SCHEMA_VERSION})"
                )  # fmt: skip
            raise UnknownSchemaVersion(
                where,
                f"schema_version {shown} is not one this verifier reads "
                f"(it reads {models.SCHEMA_VERSION}); a newer evidence-audit may read it",
            )
    if kind.name in MODEL_FIRST:
        try:
            return kind.model.model_validate(value)
        except ValidationError:
            pass  # the schema first, for the message every other kind gives
    error = best_match(_validator(kind.name).iter_errors(_without_bulk(kind, value)))
    if error is not None:
        raise SchemaViolation(where, f"{error.json_path}: {one_line(error.message, 200)}")
    try:
        return kind.model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        raise SchemaViolation(where, f"{_json_path(first['loc'])}: {message}") from None


def parse_document(kind: DocumentKind[M], data: bytes, where: str) -> M:
    """Parse canonical JSON bytes as one document of ``kind``.

    Raises:
        DocumentError: any of the four load steps failed (see the module docstring).
    """
    return validate_document(kind, loads_canonical(data, where), where)
