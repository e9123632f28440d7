"""Every gate is declared once (``GATES``): the forensic view, the docs and the replay read the
same list, and a replay without the whole list decides no result."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from bundle_schema import RECORD_MEDIA_TYPES
from bundle_schema.models import ForensicAnswer, Gx10Evidence
from pins import parse_pin_set
from tests.conftest import DEPLOYMENT_PINS
from tests.paths import ROOT
from verify import verify_with_evidence
from verify.forensics import _gate
from verify.gx10 import GATES, Check, Gate, replay
from verify.gx10._context import Part

DEPLOYMENT = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
_KIND_NAMES = {
    kind.removeprefix("application/vnd.evidence-audit.").split("+")[0]
    for kind in RECORD_MEDIA_TYPES
}


@pytest.fixture(scope="module")
def qualified(ranked_examples: dict[str, Path]) -> Gx10Evidence:
    return verify_with_evidence(ranked_examples["gx10-full-qualified"], pins=DEPLOYMENT)[1]


def _docs_table() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "verification.md").read_text()
    section = text.split("### Hard gates", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [(re.match(r"\| `(\w+)`", row)[1], row.rstrip(" |").rsplit("|", 1)[1].strip())  # type: ignore[index]
            for row in rows]  # fmt: skip


def test_each_gate_is_declared_once_with_what_it_reads_and_blames() -> None:
    ids = [gate.id for gate in GATES]
    assert len(set(ids)) == len(ids)
    for gate in GATES:
        assert gate.reads, gate.id
        assert set(gate.reads) <= _KIND_NAMES | {"tree"}, gate.id
    assert set(get_args(Part)) <= set(
        get_args(ForensicAnswer.model_fields["failed_part"].annotation)
    )


def test_the_docs_table_is_the_gate_list() -> None:
    assert _docs_table() == [(gate.id, gate.part) for gate in GATES]


def test_the_forensic_view_reads_the_gate_list_and_refuses_a_gate_it_does_not_have() -> None:
    assert all(_gate(gate.id) is gate for gate in GATES)
    with pytest.raises(ValueError, match="'made_up'"):
        _gate("made_up")


def _passes(_run: object) -> Check:
    return Check("pass", "always")


@pytest.mark.parametrize(
    ("name", "gates"),
    [
        ("empty", ()),
        ("one missing", GATES[:-1]),
        ("one unknown", (*GATES, Gate("made_up", ("run-config",), "setup", _passes))),
        ("one twice", (*GATES, GATES[0])),
        ("one replaced", (Gate("model_identity", ("run-config",), "setup", _passes), *GATES[1:])),
    ],
)
def test_a_gate_list_that_is_not_the_seeds_fails_closed(
    qualified: Gx10Evidence, name: str, gates: tuple[Gate, ...]
) -> None:
    assert replay(qualified, DEPLOYMENT).outcome == "QUALIFIED"
    result = replay(qualified, DEPLOYMENT, gates=gates)
    assert (result.outcome, result.result_validity, result.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    ), name  # fmt: skip
    assert any("the gate list is not seed 000's" in r for r in result.reasons), result.reasons
