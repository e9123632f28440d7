"""The evidence bundle format: models, canonical JSON, document loading and JSON Schemas."""

from bundle_schema.canonical import canonical_bytes, digest_of, loads_canonical, loads_strict
from bundle_schema.documents import (
    KINDS,
    RECORD_MEDIA_TYPES,
    DocumentKind,
    generate_schemas,
    kind_of,
    parse_document,
    schema_drift,
    validate_document,
)
from bundle_schema.models import SCHEMA_VERSION

__all__ = [
    "KINDS",
    "RECORD_MEDIA_TYPES",
    "SCHEMA_VERSION",
    "DocumentKind",
    "canonical_bytes",
    "digest_of",
    "generate_schemas",
    "kind_of",
    "loads_canonical",
    "loads_strict",
    "parse_document",
    "schema_drift",
    "validate_document",
]
