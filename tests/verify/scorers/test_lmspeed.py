"""LMSpeed Category Score V3 (seed 002): worked example, the exact posterior, properties,
eligibility, refusals, the CLI."""

from __future__ import annotations

import copy
import json
import math
import random
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.errors import DocumentError
from tests.paths import DOCS
from verify.scorers import lmspeed
from verify.scorers.lmspeed import LmspeedRefused

from .lmspeed_data import catalog, metric, rated_example, result, results, score, worked_example


def coding(doc: Any) -> dict[str, Any]:
    return {m.model: m for m in doc.categories["coding"].models}


# --- the worked example (docs/scorers.md) -----------------------------------------------------


def test_worked_example_by_hand() -> None:
    out = score(*worked_example())
    models = coding(out)
    # Fractions 0.75, 0.5, 0.25 -> logits ln 3, 0, -ln 3; median 0; MAD ln 3;
    # scale 1.482602218505602 ln 3, so z = +-Phi^-1(3/4) = +-0.674490.
    z = 1 / lmspeed.MAD_SCALE
    # q = min(1, 3/8) x min(1, 3/3) = 0.375; variance 0.25^2 / 0.375 -> precision 6, capped to 1.
    bench = out.categories["coding"].benchmarks[0]
    assert (bench.q, bench.median, bench.models, bench.developers) == (0.375, 0.0, 3, 3)
    assert bench.scale == pytest.approx(lmspeed.MAD_SCALE * math.log(3), abs=1e-15)
    assert z == pytest.approx(0.674490, abs=5e-7)
    # One benchmark, w = 1: D_t = 2, S = 0.1 + 3 - 3/2 = 1.6, beta = 0 (the z sum to 0),
    # theta = z / 2, Var(theta) = 1/2 + (1/2)^2 / 1.6 = 0.65625.
    a = models["A"]
    assert a.dimensions["generation"].mean == pytest.approx(z / 2, abs=1e-15)
    assert a.dimensions["generation"].variance == pytest.approx(0.65625, abs=1e-15)
    # k = 2: sigma_c^2 = 2 x 0.65625 / 4 + (4 - 2) / 16 = 0.453125.
    assert a.mean == pytest.approx(z / 2, abs=1e-15)
    assert a.sd == pytest.approx(math.sqrt(0.453125), abs=1e-15)
    assert a.score == pytest.approx(50 + 15 * z / 2, abs=1e-12)
    assert a.score == pytest.approx(55.0587, abs=1e-4)
    assert a.central80 == pytest.approx(
        (z / 2 - 1.281552 * math.sqrt(0.453125), z / 2 + 1.281552 * math.sqrt(0.453125))
    )
    assert a.effective_coverage == pytest.approx(2 * (1 - 0.65625) / 4)
    assert (a.status, a.rank, a.observed_dimensions, a.families) == ("Estimated", None, 2, 2)
    assert models["B"].score == 50.0
    assert models["C"].score == pytest.approx(100 - a.score, abs=1e-12)  # type: ignore[operator]


def test_rated_models_are_ranked_and_estimated_are_not() -> None:
    out = score(*rated_example())
    models = out.categories["coding"].models
    assert [m.status for m in models] == ["Rated"] * 8
    assert [m.model for m in models] == [f"m{i}" for i in range(7, -1, -1)]
    assert [m.rank for m in models] == list(range(1, 9))
    assert all(m.overlap_calibrated_dimensions == 2 for m in models)
    assert {b.benchmark: b.overlap_calibrated for b in out.categories["coding"].benchmarks} == {
        "dbg-a:p1": False, "gen-a:p1": True, "gen-b:p1": True, "repo-a:p1": True,
        "repo-b:p1": True,
    }  # fmt: skip
    # No average across categories: the other seven are empty, every model Unrated there.
    assert all(
        m.status == "Unrated" and m.score is None
        for name, category in out.categories.items()
        if name != "coding"
        for m in category.models
    )


def _inverse_normal_three_quarters(digits: int = 40) -> Decimal:
    """Phi^-1(3/4) to ``digits`` digits: Newton on erf(y) = 1/2, x = sqrt(2) y (erf by series)."""
    with localcontext() as context:
        context.prec = digits + 10
        pi, term, k = Decimal(3), Decimal(3), 0  # pi by the series of the decimal module's recipe
        while True:
            k += 1
            term = term * (2 * k - 1) ** 2 / (8 * k * (2 * k + 1))
            if pi + term == pi:
                break
            pi += term

        def erf(y: Decimal) -> Decimal:
            total, power, n = Decimal(0), y, 0
            while True:
                step = power / (math.factorial(n) * (2 * n + 1))
                if total + step == total:
                    return 2 / pi.sqrt() * total
                total += step
                power *= -y * y
                n += 1

        y = Decimal("0.5")
        for _ in range(60):
            y -= (erf(y) - Decimal("0.5")) / (2 / pi.sqrt() * (-y * y).exp())
        return +(Decimal(2).sqrt() * y)


def test_mad_scale_is_one_over_the_normal_quartile() -> None:
    quartile = _inverse_normal_three_quarters()
    assert str(quartile).startswith("0.67448975019608174320")
    # The constant is 1 / Phi^-1(3/4) computed in doubles: the quartile rounded to its nearest
    # double first, then the quotient rounded.
    assert float(quartile) == 0.6744897501960817
    assert 1 / float(quartile) == lmspeed.MAD_SCALE
    # That is one unit in the last place above the double nearest the exact 1 / Phi^-1(3/4).
    exact = 1 / Fraction(quartile)
    assert float(exact) == 1.4826022185056018
    assert math.nextafter(float(exact), 2) == lmspeed.MAD_SCALE
    assert lmspeed.MAD_SCALE != 1.4826  # the rounded constant is not the one used


TIMES = "\N{MULTIPLICATION SIGN}"


def test_the_docs_state_the_constants_the_code_uses() -> None:
    docs = (DOCS / "scorers.md").read_text()
    stated = repr(lmspeed.MAD_SCALE)
    assert f"`MAD_SCALE` = {stated} {TIMES}" in docs
    assert f"scale {stated} {TIMES} ln 3" in docs
    assert f"MAD_SCALE = {stated} = 1 / Phi^-1(3/4)" in (lmspeed.__doc__ or "")
    assert f"1.4826 {TIMES}" not in docs
    assert "1 / 1.4826 " not in docs
    assert f"\N{MINUS-OR-PLUS SIGN} {lmspeed.Z80} \N{GREEK SMALL LETTER SIGMA}_c" in docs


# --- the exact posterior ----------------------------------------------------------------------


def dense_posterior(
    observations: list[tuple[str, str, float, float]],
) -> dict[str, tuple[float, float]]:
    """The joint posterior by inverting the whole (theta, beta) precision matrix."""
    models = sorted({o[0] for o in observations})
    benchmarks = sorted({o[1] for o in observations})
    index = {m: i for i, m in enumerate(models)}
    index |= {b: len(models) + j for j, b in enumerate(benchmarks)}
    size = len(index)
    a = [[0.0] * size for _ in range(size)]
    r = [0.0] * size
    for m in models:
        a[index[m]][index[m]] = 1.0
    for b in benchmarks:
        a[index[b]][index[b]] = 0.1
    for m, b, z, w in observations:
        for i in (index[m], index[b]):
            r[i] += w * z
            for j in (index[m], index[b]):
                a[i][j] += w
    # Gauss-Jordan inversion.
    inv = [[float(i == j) for j in range(size)] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda row: abs(a[row][col]))
        a[col], a[pivot] = a[pivot], a[col]
        inv[col], inv[pivot] = inv[pivot], inv[col]
        factor = a[col][col]
        a[col] = [v / factor for v in a[col]]
        inv[col] = [v / factor for v in inv[col]]
        for row in range(size):
            if row != col and a[row][col]:
                f = a[row][col]
                a[row] = [x - f * y for x, y in zip(a[row], a[col], strict=True)]
                inv[row] = [x - f * y for x, y in zip(inv[row], inv[col], strict=True)]
    mean = [sum(inv[i][j] * r[j] for j in range(size)) for i in range(size)]
    return {m: (mean[index[m]], inv[index[m]][index[m]]) for m in models}


@st.composite
def dimension_observations(draw: st.DrawFn) -> list[tuple[str, str, float, float]]:
    models = [f"m{i}" for i in range(draw(st.integers(1, 8)))]
    benchmarks = [f"b{j}" for j in range(draw(st.integers(1, 5)))]
    observations = []
    for m in models:
        chosen = draw(st.lists(st.sampled_from(benchmarks), min_size=1, unique=True))
        for b in chosen:
            z = draw(st.floats(-3, 3, allow_nan=False))
            w = draw(st.floats(0.05, 1.0, allow_nan=False))
            observations.append((m, b, z, w))
    return observations


@settings(max_examples=200, deadline=None)
@given(dimension_observations())
def test_posterior_is_the_joint_linear_gaussian_posterior(
    observations: list[tuple[str, str, float, float]],
) -> None:
    got = lmspeed.posterior(observations)
    want = dense_posterior(observations)
    assert got.keys() == want.keys()
    for model, (mean, variance) in want.items():
        assert got[model][0] == pytest.approx(mean, abs=1e-9)
        assert got[model][1] == pytest.approx(variance, abs=1e-9)
        assert 0 < got[model][1] <= 1


# --- properties -------------------------------------------------------------------------------


@st.composite
def runs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    dims = ["generation", "repository", "debugging_testing", "tools_quality"]
    names = [f"bm{j}" for j in range(draw(st.integers(2, 6)))]
    metrics = [
        metric(n, draw(st.sampled_from(dims)), family=f"fam{draw(st.integers(0, 3))}",
               protocol=f"p{j}", direction=draw(st.sampled_from(["higher", "lower"])))
        for j, n in enumerate(names)
    ]  # fmt: skip
    models = {f"m{i}": f"d{draw(st.integers(0, 3))}" for i in range(draw(st.integers(3, 9)))}
    rows = []
    for n in names:
        for m in models:
            if draw(st.booleans()) or len(rows) < 3:
                value = draw(st.integers(0, 100))
                source = draw(
                    st.sampled_from(["verified", "official", "reported", "self_reported"])
                )
                rows.append(result(f"{n}-{m}", m, n, value, source=source))
    return catalog(*metrics), results(models, *rows)


def model_scores(doc: Any) -> Any:
    return {name: category.models for name, category in doc.categories.items()}


@settings(max_examples=60, deadline=None)
@given(runs(), st.integers(1, 2))
def test_a_benchmark_covering_fewer_than_three_models_changes_nothing(
    run: tuple[dict[str, Any], dict[str, Any]], covered: int
) -> None:
    cat, res = copy.deepcopy(run)
    before = score(cat, res)
    cat["metrics"].append(metric("narrow", "generation", family="narrow-family"))
    for model in [m["id"] for m in res["models"]][:covered]:
        res["results"].append(result(f"narrow-{model}", model, "narrow", 99))
    after = score(cat, res)
    assert model_scores(after) == model_scores(before)
    assert {e.reason for e in after.excluded} - {e.reason for e in before.excluded} == {
        f"benchmark narrow-family:p1 covers {covered} model(s); at least 3 needed"
    }


@settings(max_examples=60, deadline=None)
@given(runs())
def test_adding_an_uninformative_model_leaves_the_others(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    cat, res = copy.deepcopy(run)
    before = score(cat, res)
    res["models"].append({"id": "newcomer", "developer": "d9"})
    name = cat["metrics"][0]["metric"]
    # Its only results are not eligible evidence: aggregated, and of an unregistered metric.
    res["results"].append(result("new-agg", "newcomer", name, 90, kind="aggregated"))
    res["results"].append(result("new-unreg", "newcomer", "unregistered", 90))
    after = score(cat, res)
    for category, models in model_scores(after).items():
        others = [m for m in models if m.model != "newcomer"]
        assert others == list(model_scores(before)[category])


@settings(max_examples=40, deadline=None)
@given(runs(), st.randoms(use_true_random=False))
def test_the_order_of_results_changes_no_byte(
    run: tuple[dict[str, Any], dict[str, Any]], rng: random.Random
) -> None:
    cat, res = copy.deepcopy(run)
    first = canonical_bytes(score(cat, res).model_dump(mode="json"))
    rng.shuffle(res["results"])
    rng.shuffle(res["models"])
    rng.shuffle(cat["metrics"])
    assert canonical_bytes(score(cat, res).model_dump(mode="json")) == first


# --- eligibility, dedupe, normalization -------------------------------------------------------


def three(name: str = "alpha", **fields: Any) -> list[dict[str, Any]]:
    return [
        result(f"{name}-{m}", m, name, v, **fields) for m, v in (("A", 70), ("B", 50), ("C", 30))
    ]


MODELS = {"A": "x", "B": "y", "C": "z"}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"kind": "aggregated"}, "the result is aggregated"),
        ({"kind": "estimated"}, "the result is estimated"),
        ({"kind": "inferred"}, "the result is inferred"),
        ({"metric": "unknown"}, "metric unknown is not in the catalog: display only"),
        ({"unit": "percent"}, "unit percent is not a fraction unit"),
        ({"value": 120}, "value 120 score is not a fraction in [0, 1]"),
    ],
)
def test_ineligible_results_are_excluded_with_a_reason(row: dict[str, Any], reason: str) -> None:
    rows = three()
    extra = result("extra", "A", "beta", 40) | row
    out = score(catalog(metric("alpha"), metric("beta")), results(MODELS, *rows, extra))
    assert any(e.result == "extra" and e.reason.startswith(reason) for e in out.excluded)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"direction": None}, "has no known direction"),
        ({"protocol": None}, "has no known protocol"),
        ({"status": "display_only"}, "is display only in the catalog"),
    ],
)
def test_catalog_entries_that_are_not_eligible(fields: dict[str, Any], reason: str) -> None:
    out = score(catalog(metric("alpha", **fields)), results(MODELS, *three()))
    assert len(out.excluded) == 3
    assert all(reason in e.reason for e in out.excluded)


def test_a_true_raw_zero_stays_eligible() -> None:
    rows = [result(f"a-{m}", m, "alpha", v) for m, v in (("A", 0), ("B", 50), ("C", 90))]
    out = score(catalog(metric("alpha")), results(MODELS, *rows))
    assert out.excluded == ()
    assert coding(out)["A"].dimensions["generation"].mean < 0


def test_lower_is_better_is_inverted_and_ratings_keep_identity() -> None:
    cat = catalog(
        metric("latency", direction="lower", transform="identity"),
        metric("elo", "repository", transform="identity"),
    )
    rows = [
        result(f"l-{m}", m, "latency", v, unit="rating") for m, v in (("A", 1), ("B", 5), ("C", 9))
    ]
    rows += [
        result(f"e-{m}", m, "elo", v, unit="rating")
        for m, v in (("A", 1300), ("B", 1200), ("C", 1000))
    ]
    models = coding(score(cat, results(MODELS, *rows)))
    assert models["A"].dimensions["generation"].mean > models["C"].dimensions["generation"].mean
    assert models["A"].dimensions["repository"].mean > models["C"].dimensions["repository"].mean


def test_score_fraction_and_score_units_agree() -> None:
    as_score = score(catalog(metric("alpha")), results(MODELS, *three()))
    fractions = [row | {"value": row["value"] / 100, "unit": "score_fraction"} for row in three()]
    as_fraction = score(catalog(metric("alpha")), results(MODELS, *fractions))
    assert model_scores(as_fraction) == model_scores(as_score)


def test_z_is_clamped_at_three() -> None:
    values = {"A": 48, "B": 49, "C": 50, "D": 51, "E": 52, "F": 95.0, "G": 99.9}
    rows = [result(f"a-{m}", m, "alpha", v) for m, v in values.items()]
    models = {m: f"dev{i}" for i, m in enumerate(values)}
    out = coding(score(catalog(metric("alpha")), results(models, *rows)))
    # F and G both lie beyond 3 robust deviations: clamped to the same z, the same ability.
    assert out["F"].dimensions["generation"].mean == out["G"].dimensions["generation"].mean
    assert out["E"].dimensions["generation"].mean < out["F"].dimensions["generation"].mean


@pytest.mark.parametrize(
    ("one", "other", "winner"),
    [
        ({"source": "verified", "confidence": 0.1}, {"source": "official"}, "one"),
        ({"confidence": 0.9}, {"confidence": 0.8}, "one"),
        ({"observed_at": "2026-10-02"}, {"observed_at": "2026-10-01"}, "one"),
        ({}, {}, "one"),  # the stable id decides: "dup-1" before "dup-2"
        ({"source": "self_reported"}, {"source": "reported"}, "other"),
    ],
)
def test_dedupe_within_family_and_protocol(
    one: dict[str, Any], other: dict[str, Any], winner: str
) -> None:
    # Two metrics that are aliases: the same family and protocol.
    cat = catalog(metric("alpha"), metric("alpha-alias", family="alpha"))
    rows = [*three()[1:], result("dup-1", "A", "alpha", 80, **one)]
    rows.append(result("dup-2", "A", "alpha-alias", 20, **other))
    out = score(cat, results(MODELS, *rows))
    loser = "dup-2" if winner == "one" else "dup-1"
    assert [e.result for e in out.excluded] == [loser]
    assert "takes priority" in out.excluded[0].reason


def test_family_precision_is_capped_at_one() -> None:
    observations = [
        lmspeed._Observation("A", ("f", "p1"), "generation", "f", 0.5, 4.0),
        lmspeed._Observation("A", ("f", "p2"), "generation", "f", 0.5, 12.0),
        lmspeed._Observation("A", ("g", "p1"), "generation", "g", 0.5, 0.4),
    ]
    assert lmspeed._capped(observations) == [0.25, 0.75, 0.4]


def test_a_large_stderr_weighs_less() -> None:
    base = score(catalog(metric("alpha")), results(MODELS, *three()))
    noisy_rows = [*three()[1:], three()[0] | {"stderr": 30}]
    noisy = score(catalog(metric("alpha")), results(MODELS, *noisy_rows))
    assert (
        coding(noisy)["A"].dimensions["generation"].variance
        > coding(base)["A"].dimensions["generation"].variance
    )


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cat", "res", "message"),
    [
        (catalog(metric("a", "planning")), results(MODELS), "'planning' is not a dimension"),
        (catalog(metric("a"), metric("a")), results(MODELS), "catalogued twice"),
        (catalog(metric("a"), metric("b", family="a", direction="lower")), results(MODELS),
         "a p1 is catalogued as coding/generation/higher"),
        (catalog(metric("a")), results(MODELS) | {"models": [{"id": "A", "developer": "x"}] * 2},
         "model A is given twice"),
        (catalog(metric("a")), results(MODELS, result("r", "A", "a", 1), result("r", "B", "a", 1)),
         "result r is given twice"),
        (catalog(metric("a")), results(MODELS, result("r", "Q", "a", 1)), "model Q, which is not"),
        (catalog(metric("a")), results(MODELS, result("r", "A", "a", 1, observed_at="2026-02-30")),
         "2026-02-30 is not a date"),
    ],
)  # fmt: skip
def test_refusals(cat: dict[str, Any], res: dict[str, Any], message: str) -> None:
    with pytest.raises(LmspeedRefused, match=message):
        score(cat, res)


def test_schema_refusals() -> None:
    with pytest.raises(DocumentError, match=r"\$\.results\[0\]\.source"):
        score(catalog(metric("a")), results(MODELS, result("r", "A", "a", 1, source="rumour")))


# --- the CLI ----------------------------------------------------------------------------------


def write(tmp_path: Path, cat: dict[str, Any], res: dict[str, Any]) -> list[str]:
    (tmp_path / "catalog.json").write_text(json.dumps(cat))
    (tmp_path / "results.json").write_text(json.dumps(res))
    return ["score", "lmspeed", "--catalog", str(tmp_path / "catalog.json"),
            "--results", str(tmp_path / "results.json")]  # fmt: skip


def test_cli_json_table_and_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = write(tmp_path, *rated_example())
    assert main([*argv, "--json"]) == 0
    published = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    assert capsys.readouterr().out == published
    assert main([*argv, "--category", "coding"]) == 0
    out = capsys.readouterr().out
    assert "coding (Category Score V3.0, catalog test-1)" in out
    assert "Rated" in out
    (tmp_path / "claimed.json").write_text(published)
    assert main([*argv, "--claimed", str(tmp_path / "claimed.json"), "--json"]) == 0
    capsys.readouterr()
    document = json.loads(published)
    document["categories"]["coding"]["models"][0]["score"] += 0.01
    (tmp_path / "claimed.json").write_text(json.dumps(document))
    assert main([*argv, "--claimed", str(tmp_path / "claimed.json")]) == 1
    err = capsys.readouterr().err
    assert "$.categories.coding.models[0].score: claimed" in err
    assert err.count("\n") == 1


def test_cli_refusal_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = write(tmp_path, catalog(metric("a", "planning")), results(MODELS))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "catalog.json: $.metrics[0] (a): 'planning' is not a dimension of coding" in err
