"""An evidence kind is declared once: its role names the gx10-evidence field it fills, and the
runner and the verifier assemble the evidence through the same code (verify.evidence)."""

from __future__ import annotations

import dataclasses

from bundle_schema import KINDS, kind_of
from bundle_schema.models import ComponentResult, DirectProbe, Gx10Evidence
from bundle_schema.roles import ROLES, place
from verify.evidence import EvidenceRecords


def _result(component: str) -> ComponentResult:
    return ComponentResult.model_validate(
        {"schema_version": 1, "component": component, "status": "COMPLETED"}
    )


def test_every_field_a_role_fills_is_a_field_of_the_evidence_and_every_field_is_filled() -> None:
    record_fields = {f.name for f in dataclasses.fields(EvidenceRecords)}
    filled = {role.fills for role in ROLES if role.fills is not None}
    assert filled == record_fields
    assert filled <= set(Gx10Evidence.model_fields)
    for role in ROLES:
        if role.fills is not None:
            assert role.kind is not None, role.id
            assert KINDS[role.kind].media_type is not None, role.id


def test_a_kind_is_found_by_its_model() -> None:
    assert all(kind_of(kind.model) is kind for kind in KINDS.values())


def test_a_record_is_taken_at_its_place_and_not_where_it_says_otherwise() -> None:
    records = EvidenceRecords()
    records.take(place("components/coding/result.json", KINDS["component-result"].media_type or ""),
                 [_result("coding")])  # fmt: skip
    records.take(place("components/hermes/result.json", KINDS["component-result"].media_type or ""),
                 [_result("coding")])  # fmt: skip
    assert set(records.results) == {"coding"}
    probe = DirectProbe.model_construct(kind="tool_call")
    media = KINDS["direct-probe"].media_type or ""
    records.take(place("probes/direct-response.json", media), [probe])
    assert records.probes == {}
    records.take(place("probes/tool-call.json", media), [probe])
    assert records.probes == {"tool-call probe": probe}
