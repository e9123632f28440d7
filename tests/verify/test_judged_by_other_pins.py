"""A bundle judged by a pin set that pins other harnesses than the ones that recorded it (ADR
0036): the outputs are another harness's, not tampered evidence. Integrity holds, the run is an
infrastructure failure of ``upstream_checkout``, and no score is replayed from records no
reader of the judging pin set re-read. The publisher controls every byte, so each case also
checks that leaving a cross-check out never makes a run QUALIFIED or rankable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundle_schema.models import Verdict
from pins import load_builtin
from tests.data.hostile.kit import Files, put_json, read_bundle, reseal
from verify import verify_bundle

REAL = load_builtin("gx10-qualification-v5")
SPARK_QUALITY = "components/coding/spark-quality.json"
RESULT = "components/tool_instruction/result.json"


def _judged(bundle: Path, pin_id: str | None = None) -> Verdict:
    return verify_bundle(bundle, pins=load_builtin(pin_id) if pin_id else None).verdict


def _codes(verdict: Verdict) -> list[str]:
    return [f.code for f in verdict.integrity.findings]


def _gate(verdict: Verdict, gate: str) -> tuple[str, str]:
    result = next(g for g in verdict.gates if g.id == gate)
    return result.status, result.reason


def _forged(source: Path, target: Path, *edits: Any) -> Path:
    """``source`` resealed with each edit applied (``edit(files, fields)``): internally
    consistent bytes, as a publisher writes them."""
    manifest, files = read_bundle(source)
    fields: dict[str, Any] = {}
    for edit in edits:
        edit(files, fields, manifest)
    reseal(target, manifest, files, fields)
    return target


def _quality(score: float) -> Any:
    def edit(files: Files, _fields: dict[str, Any], _manifest: Any) -> None:
        put_json(
            files,
            SPARK_QUALITY,
            json.loads(files[SPARK_QUALITY][0]) | {"code_domain_quality": score},
        )

    return edit


def _sparkbench_forked(files: Files, fields: dict[str, Any], manifest: Any) -> None:
    """The sparkbench checkout recorded as a fork's: the manifest's entry and the checkout
    record agree on another repository (the commit object names no repository)."""
    state = json.loads(files["upstreams/sparkbench/checkout.json"][0])
    put_json(
        files, "upstreams/sparkbench/checkout.json", state | {"repository": "reference://fork"}
    )
    fields["upstreams"] = tuple(
        u.model_copy(update={"repository": "reference://fork"}) if u.name == "sparkbench" else u
        for u in manifest.upstreams
    )


@pytest.mark.parametrize("example", ["gx10-smoke", "gx10-full-qualified"])
def test_a_reference_run_judged_by_the_real_pins_is_intact_and_an_infrastructure_failure(
    built_examples: dict[str, Path], example: str
) -> None:
    verdict = _judged(built_examples[example], REAL.id)
    assert verdict.integrity.status == "ok" and _codes(verdict) == []
    assert (verdict.outcome, verdict.result_validity, verdict.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    status, reason = _gate(verdict, "upstream_checkout")
    assert status == "infra"
    if example == "gx10-smoke":  # the full profile fails first on the Hermes harness it lacks
        assert reason == (  # each harness that differs, not the first alone
            "infermark is at reference://infermark@5dc3161deea6, pinned "
            "https://github.com/stef41/infermark@a5e252bd543d; "
            "sparkbench is at reference://sparkbench@53da0fcee8b3, pinned "
            "https://github.com/Weschera/spark-bench@196e60da3d75"
        )
    # the reasons name every harness that differs, and no score is replayed from its records
    assert any(
        r.startswith(
            "coding not scored: sparkbench is at reference://sparkbench@53da0fcee8b3, pinned "
            "https://github.com/Weschera/spark-bench@196e60da3d75"
        )
        for r in verdict.reasons
    ), verdict.reasons
    assert any(r.startswith("performance not scored: infermark is at ") for r in verdict.reasons)
    scores = verdict.scores
    assert (scores.coding, scores.performance, scores.aggregate) == (None, None, None)
    assert scores.executed_weight == 0
    assert verdict.diagnostics.tier2 is None and verdict.diagnostics.requests is None
    assert not verdict.claims.match  # the runner claimed the scores of its own pin set
    # what no check read is said: the other harness's raw outputs are listed as unread
    own = _judged(built_examples[example])
    assert "components/coding/raw/quality.json" in verdict.unread
    assert "components/coding/raw/quality.json" not in own.unread


def test_a_quarantine_marker_of_another_harness_does_not_decide_the_verdict(
    built_examples: dict[str, Path],
) -> None:
    own = _judged(built_examples["gx10-spark-quarantined"])
    assert (own.outcome, own.result_validity) == ("INFRA_ERROR", "QUARANTINED")
    other = _judged(built_examples["gx10-spark-quarantined"], REAL.id)
    assert other.integrity.status == "ok" and _codes(other) == []
    assert (other.outcome, other.result_validity, other.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    assert other.diagnostics.quarantine is None
    assert not any("quarantined by its upstream" in r for r in other.reasons)


@pytest.mark.parametrize(
    ("example", "axes", "coding"),
    [
        ("gx10-smoke", ("QUALIFIED", "VALID", "MEETS_PROFILE"), 78.4),
        ("gx10-full-qualified", ("QUALIFIED", "VALID", "MEETS_PROFILE"), 78.4),
        ("gx10-full-not-qualified", ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE"), 78.4),
    ],
)
def test_under_its_own_pins_the_verdict_is_the_recorded_one(
    built_examples: dict[str, Path], example: str, axes: tuple[str, str, str], coding: float
) -> None:
    verdict = _judged(built_examples[example])
    assert verdict.pin_set.id == "gx10-reference-v5"
    assert verdict.integrity.status == "ok"
    assert (verdict.outcome, verdict.result_validity, verdict.profile_decision) == axes
    assert verdict.claims.match
    assert verdict.scores.coding == coding and verdict.scores.performance == 100
    assert _gate(verdict, "upstream_checkout")[0] == "pass"
    assert not any("not scored" in r for r in verdict.reasons)


def test_a_record_that_disagrees_with_its_raw_outputs_is_still_a_finding_under_its_own_pins(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    forged = _forged(built_examples["gx10-smoke"], tmp_path / "forged", _quality(99.0))
    verdict = _judged(forged)
    assert verdict.integrity.status == "failed"
    assert [(f.code, f.entry) for f in verdict.integrity.findings] == [
        ("record_disagrees", SPARK_QUALITY)
    ]
    assert "the record is not what the raw outputs of sparkbench say" in (
        verdict.integrity.findings[0].message
    )
    assert (verdict.outcome, verdict.rankable) == ("INFRA_ERROR", False)


def test_a_forged_record_judged_by_another_pin_set_gains_nothing(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    """The same forgery judged by the real pins: not a finding there (those readers cannot
    read another harness's outputs), but the forged score is not replayed either."""
    forged = _forged(built_examples["gx10-smoke"], tmp_path / "forged", _quality(99.0))
    verdict = _judged(forged, REAL.id)
    assert _codes(verdict) == []
    assert (verdict.outcome, verdict.rankable) == ("INFRA_ERROR", False)
    assert verdict.scores.coding is None
    assert "claimed 78.4, replayed not scored" in " ".join(verdict.claims.differences)


def test_a_forged_record_beside_a_checkout_of_another_repository_is_not_rankable(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    """Under the pin set the bundle names, a publisher records sparkbench as a fork's checkout
    to have a forged score left unchecked: the checkout gate fails, and the score is not
    replayed."""
    forged = _forged(
        built_examples["gx10-full-qualified"],
        tmp_path / "forked",
        _quality(99.0),
        _sparkbench_forked,
    )
    verdict = _judged(forged)
    assert verdict.pin_set.id == "gx10-reference-v5"
    assert _codes(verdict) == []
    assert (verdict.outcome, verdict.result_validity, verdict.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    assert _gate(verdict, "upstream_checkout") == (
        "infra",
        "sparkbench is at reference://fork@53da0fcee8b3, pinned reference://sparkbench@53da0fcee8b3",
    )
    assert (verdict.scores.coding, verdict.scores.reliability) == (None, None)
    assert verdict.scores.hermes == 100  # its harness is the pinned one: still replayed
    assert any(
        r.startswith("coding not scored: sparkbench is at reference://fork@")
        for r in verdict.reasons
    )


def test_a_harness_the_profile_does_not_need_keeps_its_cross_checks(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    """A smoke run whose needed harnesses are all as pinned, with a tool_instruction record of
    a harness never checked out and no raw output: nothing else would stop this run, so the
    record is still re-read, and its disagreement is still a finding."""
    _, full = read_bundle(built_examples["gx10-full-qualified"])

    def extra(files: Files, fields: dict[str, Any], manifest: Any) -> None:
        packs, result = "components/tool_instruction/benchlocal-packs.json", RESULT
        files[packs] = full[packs]
        files[result] = full[result]
        put_json(files, result, json.loads(full[result][0]) | {"raw_outputs": []})
        ref = manifest.components[0].model_copy(
            update={"name": "tool_instruction", "result": "components/tool_instruction/result.json"}
        )
        fields["components"] = (*manifest.components, ref)

    forged = _forged(built_examples["gx10-smoke"], tmp_path / "extra", extra)
    verdict = _judged(forged)
    assert {(f.code, f.entry) for f in verdict.integrity.findings} == {
        ("record_disagrees", "components/tool_instruction/result.json")
    }
    messages = [f.message for f in verdict.integrity.findings]
    assert any("which profile smoke does not select" in m for m in messages), messages
    assert any("the benchlocal records have no raw output" in m for m in messages), messages
    assert verdict.outcome == "INFRA_ERROR"
