"""The public ranking (seed 000): who enters it, the order and its tie-breaks, what is apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import PinSetRef
from pins import load_builtin, parse_pin_set, pin_set_source
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.kit import read_bundle, reseal
from tests.paths import EXAMPLES
from verify import verify_with_evidence
from verify.ranking import Ranked, rank

V5 = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
"""A deployment's own pin set: the examples recorded under it (``ranked_examples``) rank."""
V5_REF = PinSetRef(id=V5.id, digest=V5.digest)
PINS = ["--pins", str(DEPLOYMENT_PINS)]


@pytest.fixture(scope="module")
def base(ranked_examples: dict[str, Path]) -> dict[str, Ranked]:
    items = {}
    for name, path in ranked_examples.items():
        verdict, evidence = verify_with_evidence(path, pins=V5)
        items[name] = Ranked(name, verdict, evidence)
    return items


def variant(item: Ranked, run_id: str, created_at: str | None = None, **scores: Any) -> Ranked:
    verdict = item.verdict.model_copy(
        update={"run_id": run_id, "scores": item.verdict.scores.model_copy(update=scores)}
    )
    evidence = item.evidence.model_copy(
        update={"created_at": created_at or item.evidence.created_at}
    )
    return Ranked(run_id, verdict, evidence)


def test_order_and_every_tie_break(base: dict[str, Ranked]) -> None:
    q = base["gx10-full-qualified"]
    items = [
        variant(q, "r-low", aggregate=80.0),
        variant(q, "r-high", aggregate=90.0),
        variant(q, "r-coding", aggregate=85.0, coding=70.0),
        variant(q, "r-coding-hi", aggregate=85.0, coding=71.0),
        variant(q, "r-hermes", aggregate=84.0, hermes=90.0),
        variant(q, "r-hermes-hi", aggregate=84.0, hermes=95.0),
        variant(q, "r-tool", aggregate=83.0, tool_instruction=70.0),
        variant(q, "r-tool-hi", aggregate=83.0, tool_instruction=75.0),
        variant(q, "r-rel", aggregate=82.0, reliability=80.0),
        variant(q, "r-rel-hi", aggregate=82.0, reliability=85.0),
        variant(q, "r-perf", aggregate=81.0, performance=50.0),
        variant(q, "r-perf-hi", aggregate=81.0, performance=60.0),
        variant(q, "r-late", "2026-11-09T00:00:00Z", aggregate=79.0),
        variant(q, "r-early", "2026-11-08T00:00:00Z", aggregate=79.0),
        variant(q, "r-b", "2026-11-08T00:00:00Z", aggregate=78.0),
        variant(q, "r-a", "2026-11-08T00:00:00Z", aggregate=78.0),
    ]
    ranking = rank(items, V5_REF)
    assert [r.run_id for r in ranking.ranked] == [
        "r-high", "r-coding-hi", "r-coding", "r-hermes-hi", "r-hermes", "r-tool-hi", "r-tool",
        "r-rel-hi", "r-rel", "r-perf-hi", "r-perf", "r-low", "r-early", "r-late", "r-a", "r-b",
    ]  # fmt: skip
    assert [r.position for r in ranking.ranked] == list(range(1, 17))
    # The tie-break alters no score.
    assert ranking.ranked[0].scores.aggregate == 90.0


def test_repeated_trials_are_separate_rows(base: dict[str, Ranked]) -> None:
    q = base["gx10-full-qualified"]
    ranking = rank([q, variant(q, "trial-2", aggregate=86.0)], V5_REF)
    assert [r.scores.aggregate for r in ranking.ranked] == [pytest.approx(87.835), 86.0]


def test_who_is_ranked_limited_or_apart(base: dict[str, Ranked]) -> None:
    ranking = rank(base.values(), V5_REF)
    assert [r.source for r in ranking.ranked] == ["gx10-full-qualified"]
    assert [r.source for r in ranking.limitations] == ["gx10-full-not-qualified"]
    assert ranking.limitations[0].position is None
    assert {r.source for r in ranking.apart} == {
        "gx10-full-infra-error", "gx10-spark-quarantined", "gx10-smoke"
    }  # fmt: skip
    assert all(r.reasons for r in ranking.apart)


def test_controlled_policy_runs_form_their_own_groups(base: dict[str, Ranked]) -> None:
    q = base["gx10-full-qualified"]
    verdict = q.verdict.model_copy(
        update={"rankable": False, "rank_group": 'controlled:on:reasoning_effort="high"'}
    )
    ranking = rank([q, Ranked("controlled", verdict, q.evidence)], V5_REF)
    assert [r.source for r in ranking.ranked] == ["gx10-full-qualified"]
    assert list(ranking.controlled) == ['controlled:on:reasoning_effort="high"']


def test_v4_results_are_listed_apart_even_when_all_else_matches(
    ranked_examples: dict[str, Path],
) -> None:
    path = ranked_examples["gx10-full-qualified"]
    verdict, evidence = verify_with_evidence(path, pins=load_builtin("gx10-qualification-v4"))
    ranking = rank([Ranked("v4", verdict, evidence)], V5_REF)
    assert ranking.ranked == ()
    assert ranking.apart[0].reasons[0] == "judged under gx10-qualification-v4, not " + V5.id


def test_nothing_ranks_under_a_pin_set_that_takes_a_shipped_id_with_other_content(
    base: dict[str, Ranked],
) -> None:
    """The deployment's pin set under gx10-qualification-v5's id: a ranking made under it would
    be read as the shipped pin set's; every run is apart, that its first reason."""
    shipped = load_builtin("gx10-qualification-v5")
    counterfeit = pin_set_source(dict(V5.data) | {"id": shipped.id}, "counterfeit.toml")
    ref = PinSetRef(id=counterfeit.id, digest=counterfeit.digest)
    ranking = rank(base.values(), ref)
    assert (ranking.ranked, ranking.limitations, ranking.controlled) == ((), (), {})
    assert {r.reasons[0] for r in ranking.apart} == {
        f"pin set {shipped.id} {counterfeit.digest} takes the id of a shipped pin set with other "
        f"content (shipped: {shipped.id} {shipped.digest}): nothing ranks"
    }
    assert len(ranking.apart) == len(base)


def test_a_run_recorded_under_another_digest_of_the_pin_set_says_both() -> None:
    """The recorded real bundle names an older digest of gx10-qualification-v5 than the shipped
    one that judges it: its row says which digests, not "judged under X, not X"."""
    shipped = load_builtin("gx10-qualification-v5")
    verdict, evidence = verify_with_evidence(EXAMPLES / "recorded" / "llamacpp-smollm2-135m.tar")
    assert evidence.pin_set.digest != shipped.digest
    ranking = rank(
        [Ranked("real", verdict, evidence)], PinSetRef(id=shipped.id, digest=shipped.digest)
    )
    assert ranking.apart[0].reasons[0] == (
        f"recorded under {shipped.id} {evidence.pin_set.digest}, judged under {shipped.id} "
        f"{shipped.digest}"
    )


def test_rank_cli(ranked_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root = str(next(iter(ranked_examples.values())).parent)
    assert main(["rank", root, *PINS, "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in ranking["ranked"]] == ["gx10-v5-full-20261102T100000Z-01"]
    assert main(["rank", root, *PINS, "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "## Completed with profile limitations" in text
    assert "| 1 | gx10-v5-full-20261102T100000Z-01 |" in text
    digest = ranking["ranked"][0]["bundle_digest"]
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert row.endswith(f"| `{digest}` |")  # the bundle digest column, whole
    assert all(line.endswith("` |") for line in text.splitlines() if "| gx10-" in line)


def test_the_demo_bundles_never_rank(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(next(iter(built_examples.values())).parent)
    for pins in ([], ["--pins", "pins/gx10-reference-v5.toml"]):
        assert main(["rank", root, *pins, "--json"]) == 0
        ranking = json.loads(capsys.readouterr().out)
        assert (ranking["ranked"], ranking["limitations"]) == ([], [])
        assert len(ranking["apart"]) == len(built_examples)


def test_rank_refuses_a_path_without_bundles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rank", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"audit rank: {tmp_path}: no bundle directory or .tar in it\n"


def test_diff_names_what_differs(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a = str(built_examples["gx10-full-qualified"])
    b = str(built_examples["gx10-full-not-qualified"])
    assert main(["diff", a, a, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differences"] == []
    assert main(["diff", a, b, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["same_verdict"] is False
    items = {d["field"]: d for d in result["differences"]}
    assert items["outcome"]["a"] == "QUALIFIED"
    assert items["outcome"]["b"] == "NOT_QUALIFIED"
    assert items["scores.hermes"]["delta"] == -50.0
    assert items["scores.aggregate"]["delta"] == pytest.approx(-15.0)
    assert items["gates.hermes_evaluator"] == {
        "field": "gates.hermes_evaluator", "a": "pass", "b": "fail", "delta": None
    }  # fmt: skip
    assert "model.digest" not in items
    assert (result["same_deployment"], result["a"]["integrity"], result["a"]["signature"]) == (
        True, "ok", "unsigned"
    )  # fmt: skip
    # JSON values keep their types: numbers stay numbers
    assert (items["scores.hermes"]["a"], items["scores.hermes"]["b"]) == (100, 50)


def test_diff_says_whether_it_is_the_same_deployment(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another model digest is another deployment: exit 1 even when the verdicts agree."""
    original = ranked_examples["gx10-full-qualified"]
    manifest, files = read_bundle(original)
    model = manifest.model.model_dump(mode="json") | {"digest": "sha256:" + "5" * 64}
    reseal(tmp_path / "other", manifest, files, {"model": model})
    argv = ["diff", str(original), str(tmp_path / "other"), *PINS]
    assert main([*argv, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["same_deployment"], result["same_verdict"]) == (False, True)
    (item,) = (d for d in result["differences"] if d["field"] == "model.digest")
    assert item["b"] == "sha256:" + "5" * 64
    assert main(argv) == 1
    assert "deployment DIFFERS, verdict the same" in " ".join(capsys.readouterr().out.split())


def test_rejudge_lists_the_verdicts_that_change(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = str(next(iter(built_examples.values())).parent)
    assert main(["rejudge", root, "--pins", "gx10-reference-v5", "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert (same["bundles"], same["changed"]) == (5, [])
    stricter = tmp_path / "stricter.toml"
    text = (Path("pins") / "gx10-reference-v5.toml").read_text("utf-8")
    text = text.replace('id = "gx10-reference-v5"', 'id = "stricter"')
    stricter.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    assert main(["rejudge", root, "--pins", str(stricter), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["pin_set"]["id"] == "stricter"
    (changed,) = report["changed"]
    assert changed["run_id"] == "gx10-v5-full-20261102T100000Z-01"
    assert {"field": "outcome", "a": "QUALIFIED", "b": "NOT_QUALIFIED", "delta": None} in (
        changed["diff"]["differences"]
    )
    assert any("aggregate" in r and "90" in r for r in changed["reasons"])
