"""LMSpeed catalogs and results for tests, built small."""

from __future__ import annotations

import json
from typing import Any

from bundle_schema.models import LmspeedScore
from verify.scorers import lmspeed


def metric(name: str, dimension: str = "generation", **fields: Any) -> dict[str, Any]:
    return {
        "metric": name,
        "category": "coding",
        "dimension": dimension,
        "family": name,
        "protocol": "p1",
        "direction": "higher",
        "transform": "bounded_logit",
        "status": "eligible",
    } | fields


def result(rid: str, model: str, name: str, value: float, **fields: Any) -> dict[str, Any]:
    return {
        "id": rid,
        "model": model,
        "metric": name,
        "value": value,
        "unit": "score",
        "source": "verified",
        "confidence": 1.0,
        "observed_at": "2026-11-01",
        "kind": "measured",
    } | fields


def catalog(*metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "methodology": "category-score-v3.0",
        "version": "test-1",
        "metrics": list(metrics),
    }


def results(models: dict[str, str], *rows: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "run_date": "2026-11-30",
        "models": [{"id": m, "developer": d} for m, d in models.items()],
        "results": list(rows),
    }


def score(catalog_doc: dict[str, Any], results_doc: dict[str, Any]) -> LmspeedScore:
    return lmspeed.score_run(
        lmspeed.load_catalog(json.dumps(catalog_doc).encode(), "catalog.json"),
        lmspeed.load_results(json.dumps(results_doc).encode(), "results.json"),
    )


def worked_example() -> tuple[dict[str, Any], dict[str, Any]]:
    """docs/scorers.md: three models of three developers on two benchmarks, one per dimension."""
    cat = catalog(metric("alpha", "generation"), metric("beta", "repository"))
    rows = [
        result(f"{name}-{model}", model, name, value)
        for name in ("alpha", "beta")
        for model, value in (("A", 75), ("B", 50), ("C", 25))
    ]
    return cat, results({"A": "x", "B": "y", "C": "z"}, *rows)


def rated_example() -> tuple[dict[str, Any], dict[str, Any]]:
    """Eight models of four developers, eight benchmarks in four families over three dimensions:
    every model is observed in three dimensions and four families, two dimensions hold two
    benchmarks that share every model (overlap-calibrated)."""
    layout = [
        ("g1", "generation", "gen-a"), ("g2", "generation", "gen-b"),
        ("r1", "repository", "repo-a"), ("r2", "repository", "repo-b"),
        ("d1", "debugging_testing", "dbg-a"),
    ]  # fmt: skip
    cat = catalog(*(metric(name, dim, family=family) for name, dim, family in layout))
    models = {f"m{i}": f"dev{i % 4}" for i in range(8)}
    rows = [
        result(f"{name}-{model}", model, name, 20 + 8 * i + 3 * j)
        for j, (name, _, _) in enumerate(layout)
        for i, model in enumerate(models)
    ]
    return cat, results(models, *rows)
