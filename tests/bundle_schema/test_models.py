"""Models, the one load path, and the committed JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from audit.cli import main
from bundle_schema import KINDS, canonical_bytes, generate_schemas, parse_document
from bundle_schema.documents import _validator
from bundle_schema.errors import SchemaViolation, UnknownSchemaVersion
from bundle_schema.models import (
    Body,
    Chunk,
    Claims,
    ComponentResult,
    EvidenceEntry,
    ModelIdentity,
    QuarantineMarker,
    SocketLedgerEntry,
    TransportExchange,
    UpstreamCheckout,
)
from tests.paths import SCHEMAS
from verify import parse_manifest

SCHEMA_DIR = SCHEMAS
D = "sha256:" + "0f" * 32

SAMPLES: dict[str, BaseModel] = {
    "evidence-entry": EvidenceEntry(digest=D, size=3, media_type="text/plain; charset=utf-8"),
    "upstream-checkout": UpstreamCheckout(
        name="sparkbench", repository="https://example.org/s.git", commit="a" * 40, clean=True
    ),
    "model-identity": ModelIdentity(
        runtime_model_id="qwen3", digest=D, digest_source="weights", engine="vllm"
    ),
    "claims": Claims(
        outcome="QUALIFIED",
        result_validity="VALID",
        profile_decision="MEETS_PROFILE",
        rankable=True,
        aggregate_score=87.835,
        executed_weight=100,
        component_scores={"coding": 78.4, "hermes": None},
        reasons=("ok",),
    ),
    "transport-exchange": TransportExchange(
        schema_version=1,
        id=4,
        started=1.5,
        ended=2.25,
        method="POST",
        path="/v1/chat/completions",
        status=200,
        request_headers={"content-type": "application/json"},
        request_body=Body(encoding="utf-8", data="{}"),
        chunks=(Chunk(t=0.1, data="data: {}\n\n"),),
        response_model="qwen3",
    ),
    "socket-ledger-entry": SocketLedgerEntry(
        schema_version=1,
        seq=0,
        t=0.5,
        pid=42,
        process="python3",
        family="AF_INET6",
        address="2001:db8::1",
        port=443,
        outcome="ENETUNREACH",
    ),
    "component-result": ComponentResult(
        schema_version=1, component="coding", status="PARTIAL", metrics={"a": 1, "b": None}
    ),
    "quarantine-marker": QuarantineMarker(
        schema_version=1,
        component="coding",
        upstream_reason="drift",
        provisional_metrics={"q": 7.5},
    ),
}


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json")


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_round_trip_through_canonical_json(kind: str) -> None:
    model = SAMPLES[kind]
    data = canonical_bytes(_dump(model))
    assert parse_document(KINDS[kind], data, "doc") == model
    assert canonical_bytes(_dump(parse_document(KINDS[kind], data, "doc"))) == data


def test_manifest_round_trip(small_bundle: Path) -> None:
    data = (small_bundle / "manifest.json").read_bytes()
    parsed = parse_manifest(data)
    assert canonical_bytes(_dump(parsed.model)) == data


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        SAMPLES["claims"].rankable = False  # type: ignore[misc]


def _broken(kind: str, change: dict[str, Any]) -> bytes:
    value = _dump(SAMPLES[kind])
    value.update(change)
    return canonical_bytes({k: v for k, v in value.items() if v is not ...})


VERSIONS = [
    ("missing", {"schema_version": ...}, "schema_version missing is not a version number"),
    ("string", {"schema_version": "1"}, 'schema_version "1" is not a version number'),
    ("boolean", {"schema_version": True}, "schema_version true is not a version number"),
    ("zero", {"schema_version": 0}, "schema_version 0 is not a version number"),
]


def test_a_newer_schema_version_is_refused_as_unknown() -> None:
    """A version number this code does not read is a newer format: a refusal (exit 2)."""
    with pytest.raises(UnknownSchemaVersion, match="schema_version 2 is not one this verifier"):
        parse_document(
            KINDS["component-result"], _broken("component-result", {"schema_version": 2}), "r.json"
        )


@pytest.mark.parametrize(
    ("change", "fragment"), [v[1:] for v in VERSIONS], ids=[v[0] for v in VERSIONS]
)
def test_a_schema_version_that_is_no_version_is_a_violation(
    change: dict[str, Any], fragment: str
) -> None:
    """No version at all is a broken document, not one from a newer format."""
    with pytest.raises(SchemaViolation, match=fragment):
        parse_document(KINDS["component-result"], _broken("component-result", change), "r.json")


VIOLATIONS = [
    ("extra field", "component-result", {"surprise": 1}, "$: Additional properties"),
    ("wrong type", "component-result", {"component": 5}, "$.component: 5 is not of type 'string'"),
    ("bad enum", "component-result", {"status": "DONE"}, "$.status: 'DONE' is not one of"),
    ("number as string", "transport-exchange", {"status": "200"}, "$.status"),
    ("negative size", "evidence-entry", {"size": -1}, "$.size: -1 is less than the minimum"),
    ("bad digest", "evidence-entry", {"digest": "md5:00"}, "$.digest: 'md5:00' does not match"),
    ("bad commit", "upstream-checkout", {"commit": "HEAD"}, "$.commit: 'HEAD' does not match"),
    ("score over 100", "claims", {"aggregate_score": 100.5}, "$.aggregate_score"),
    ("bool for float", "claims", {"executed_weight": True}, "$.executed_weight"),
    ("bad metric key", "component-result", {"metrics": {"no spaces": 1}}, "$.metrics"),
    ("bad ledger outcome", "socket-ledger-entry", {"outcome": "oops"}, "$.outcome"),
    ("bad family", "socket-ledger-entry", {"family": "af_packet"}, "$.family"),  # no AF_ name
]


@pytest.mark.parametrize(
    ("kind", "change", "fragment"), [v[1:] for v in VIOLATIONS], ids=[v[0] for v in VIOLATIONS]
)
def test_schema_violations_are_located(kind: str, change: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        parse_document(KINDS[kind], _broken(kind, change), "doc.json")
    assert str(caught.value).startswith("doc.json: ")
    assert fragment in str(caught.value)


def test_not_an_object_refused() -> None:
    with pytest.raises(SchemaViolation, match="expected a JSON object, got list"):
        parse_document(KINDS["claims"], b"[]", "doc.json")


def test_model_rules_beyond_the_schema_are_located(small_bundle: Path) -> None:
    value = json.loads((small_bundle / "manifest.json").read_bytes())
    value["components"][0]["result"] = "components/nope/result.json"
    with pytest.raises(
        SchemaViolation, match=r"\$: components\[0\]\.result names 'components/nope"
    ):
        parse_document(KINDS["manifest"], canonical_bytes(value), "manifest.json")
    value["components"] = [{"name": "coding", "result": "components/coding/result.json"}] * 2
    with pytest.raises(SchemaViolation, match="lists 'coding' twice"):
        parse_document(KINDS["manifest"], canonical_bytes(value), "manifest.json")


# --- the committed schema files -----------------------------------------------------------


def test_committed_schemas_match_the_models() -> None:
    committed = {p.name: p.read_bytes() for p in SCHEMA_DIR.glob("*.json")}
    assert committed == generate_schemas()


def test_schemas_are_2020_12_and_closed() -> None:
    for name, data in generate_schemas().items():
        schema = json.loads(data)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        assert schema["additionalProperties"] is False, name


def test_schema_check_passes_on_the_committed_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--check"]) == 0
    assert main(["schema", "--check", str(SCHEMA_DIR)]) == 0
    assert f"{len(generate_schemas())} schema files match" in capsys.readouterr().out


def test_schema_check_fails_on_drift_and_says_how_to_regenerate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "--out", str(tmp_path)]) == 0
    edited = tmp_path / "claims.schema.json"
    edited.write_bytes(edited.read_bytes().replace(b'"maximum": 100', b'"maximum": 101'))
    (tmp_path / "manifest.schema.json").unlink()
    (tmp_path / "stale.schema.json").write_text("{}")
    assert main(["schema", "--check", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "claims.schema.json, manifest.schema.json, stale.schema.json" in err
    assert f"regenerate with: audit schema --out {tmp_path}" in err


def test_schema_lists_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out.split() == sorted(generate_schemas())


@pytest.mark.parametrize("version", [True, 1.0], ids=["true", "1.0"])
def test_the_models_take_schema_version_1_as_strictly_as_the_schema(version: object) -> None:
    """pydantic's Literal[1] takes true and 1.0 for 1; the committed schema's const does not. The
    record kinds the model alone validates (ADR 0012) must refuse what the schema refuses."""
    exchange = {"schema_version": version, "id": 0, "started": 0, "method": "GET", "path": "/"}
    with pytest.raises(ValidationError, match="expected the integer"):
        TransportExchange.model_validate(exchange)
    assert TransportExchange.model_validate({**exchange, "schema_version": 1}).schema_version == 1


@pytest.mark.parametrize(
    ("digit", "valid"), [("\U00010d40", False), ("\u0660", True)], ids=["garay", "arabic-indic"]
)
def test_a_timestamp_takes_the_digits_the_committed_schema_takes(digit: str, valid: bool) -> None:
    """pydantic matches a pattern with the Rust regex crate, whose digit class holds the digits
    of a newer Unicode than Python's ``re`` (Garay, Unicode 16); the committed schema's
    jsonschema matches with Python's. The kinds the model alone validates (ADR 0012) must take
    no timestamp the schema refuses: both take the same digits."""
    stamp = f"2026-11-01T00:00:0{digit}Z"
    result = {"schema_version": 1, "component": "coding", "status": "COMPLETED", "ended_at": stamp}
    assert _validator("component-result").is_valid(result) is valid
    if valid:
        assert ComponentResult.model_validate(result).ended_at == stamp
    else:
        with pytest.raises(ValidationError, match="should match pattern"):
            ComponentResult.model_validate(result)
