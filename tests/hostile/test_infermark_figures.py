"""Infermark's latency, TTFT and ITL figures held to the exchanges (``verify/_consistency/
latencies.py``, ADR 0052), and its reader's order of a distribution's figures.

The figures are those seed 000 always shows, 1 / mean ITL as the estimated visible generation
chunk/s among them. The bundle attacks start from the recorded real bundle (20 streamed
requests to llama.cpp's server, 4,680 visible chunks) and reseal it with claims that repeat its
own replay, as the other hostile tests do; the bounds themselves are tested on the same
bundle's observer times, and their arithmetic on any values against Infermark's own
``compute_stats``, imported from the recorded checkout.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle_schema.models import TransportExchange
from tests.data.hostile.kit import Files
from tests.gate_kit import RECORDED_TAR, Recorded, tar_evidence
from tests.hostile.test_attacks_2026_12_05_transport import (
    INFERMARK_RAW,
    LOG,
    _findings,
    _forge,
    _honest,
    _json_of,
    put_report,
    recorded,
)
from verify._consistency.exchanges import _end
from verify._consistency.latencies import FIGURES, figures, latency_problems, most_total
from verify._facts import reply_facts
from verify.harness_outputs import OutputsUnreadable, read_outputs
from verify.infermark import infermark_reading

__all__ = ["recorded"]  # the fixture, shared

_VALUES = st.lists(st.floats(0, 100, allow_subnormal=False), min_size=1, max_size=40)


@pytest.fixture(scope="module")
def infermark_types(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """Infermark's ``_types`` module, imported from the recorded bundle's checkout of it."""
    files = tar_evidence(RECORDED_TAR)
    tree = files["upstreams/infermark/tree.txt"].decode().splitlines()
    listing = {path: meta.split()[2] for meta, path in (line.split("\t", 1) for line in tree)}
    source = tmp_path_factory.mktemp("infermark") / "infermark_types.py"
    source.write_bytes(files[f"upstreams/infermark/files/{listing['src/infermark/_types.py']}"])
    spec = importlib.util.spec_from_file_location("infermark_types", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["infermark_types"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["infermark_types"]


def _theirs(module: ModuleType, values: list[float]) -> dict[str, float]:
    stats = module.compute_stats(values)
    return {key: getattr(stats, key) for key in (*FIGURES, "std")}


@settings(max_examples=300, deadline=None)
@given(values=_VALUES)
def test_the_figures_are_infermarks_own(infermark_types: ModuleType, values: list[float]) -> None:
    theirs = _theirs(infermark_types, values)
    assert figures(values) == {key: theirs[key] for key in FIGURES}
    # and its reader reads every distribution Infermark computes
    report = _report_of(latency=theirs, ttft=theirs, itl=theirs)
    read_outputs("infermark", {"infermark.json": report}, ["performance"])


@settings(max_examples=300, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.floats(0, 100, allow_subnormal=False), st.floats(0, 5, allow_subnormal=False)),
        min_size=1,
        max_size=40,
    )
)
def test_a_bound_on_each_value_bounds_each_figure(pairs: list[tuple[float, float]]) -> None:
    """The soundness of holding a figure to the observer's: values each no lower than the
    observer's have each figure no lower than the observer's same figure."""
    seen = [s for s, _ in pairs]
    theirs, observed = figures([s + extra for s, extra in pairs]), figures(seen)
    for key in FIGURES:
        assert theirs[key] >= observed[key] - 1e-9 * max(1.0, observed[key]), key


@settings(max_examples=300, deadline=None)
@given(values=_VALUES)
def test_the_most_a_mean_is_allowed_is_never_less_than_it(
    infermark_types: ModuleType, values: list[float]
) -> None:
    stats = _theirs(infermark_types, values)
    assert math.fsum(values) <= most_total(stats, len(values)) * (1 + 1e-9) + 1e-9


def test_the_most_a_mean_is_allowed_is_tight_where_every_rank_is_reported() -> None:
    """With 101 values each percentile falls on a value: every value up to its rank is no more
    than it, the rest no more than the most."""
    stats = figures([float(v) for v in range(101)])
    expected = 0 + 50 * 50 + 25 * 75 + 15 * 90 + 5 * 95 + 4 * 99 + 1 * 100
    assert most_total(stats, 101) == expected


def _report_of(**stats: dict[str, float] | None) -> bytes:
    level = {"concurrency": 1, "n_requests": 1, "n_success": 1, "n_error": 0,
             "total_duration": 1.0, "requests_per_second": 1.0, "tokens_per_second": 2.0,
             "errors": {}, **stats}  # fmt: skip
    config = {"prompt_length": 1, "max_tokens": 2, "n_requests": 1, "mode": "streaming",
              "warmup": 0}  # fmt: skip
    return json.dumps({"config": config, "results": [level]}).encode()


_ONE = dict.fromkeys((*FIGURES, "std"), 1.0) | {"std": 0.0}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"p50": 2.0}, "p50 2.0 is more than p75 1.0"),
        ({"min": 1.5}, "min 1.5 is more than p50 1.0"),
        ({"p99": 3.0}, "p99 3.0 is more than max 1.0"),
        ({"min": 0.0, "mean": 0.5, "max": 1.0, "std": 0.6}, "std: 0.6 is more than half"),
    ],
)
def test_a_distribution_out_of_order_is_refused(change: dict[str, float], said: str) -> None:
    report = _report_of(latency=_ONE, ttft=_ONE | change, itl=_ONE)
    with pytest.raises(OutputsUnreadable, match=said.replace(".", r"\.")):
        read_outputs("infermark", {"infermark.json": report}, ["performance"])


def test_figures_of_no_successful_request_are_refused() -> None:
    level = json.loads(_report_of(latency=_ONE, ttft=None, itl=None))
    level["results"][0] |= {"n_success": 0, "n_error": 1, "errors": {"timeout": 1},
                            "tokens_per_second": 0.0, "requests_per_second": 0.0}  # fmt: skip
    with pytest.raises(OutputsUnreadable, match="figures of no successful request"):
        read_outputs("infermark", {"infermark.json": json.dumps(level).encode()}, ["performance"])


def test_a_request_rate_that_is_not_the_successes_over_the_wall_is_refused() -> None:
    """Seed 000 shows requests/second too: Infermark's is the successes over the level's wall."""
    level = json.loads(_report_of(latency=_ONE, ttft=_ONE, itl=None))
    level["results"][0]["requests_per_second"] = 2.0
    with pytest.raises(
        OutputsUnreadable, match=r"requests_per_second: 2\.0 is not its 1 successful"
    ):
        read_outputs("infermark", {"infermark.json": json.dumps(level).encode()}, ["performance"])


# --- the bounds on the recorded run -------------------------------------------------------------


@pytest.fixture(scope="module")
def observed() -> dict[str, Any]:
    """The recorded run's report figures, and what the observer saw of its 20 requests."""
    files = tar_evidence(RECORDED_TAR)
    exchanges = [TransportExchange.model_validate_json(line) for line in files[LOG].splitlines()]
    performance = [e for e in exchanges if e.component == "performance"]
    readings = [infermark_reading(e) for e in performance]
    assert not any(r.failed for r in readings) and all(r.tokens > 1 for r in readings)
    level = json.loads(files[INFERMARK_RAW])["results"][0]
    return {
        "stats": {key: level[key] for key in ("latency", "ttft", "itl")},
        "wall": level["total_duration"],
        "spans": [_end(e, reply_facts(e)) - e.started for e in performance],
        "firsts": [r.first for r in readings],
        "lasts": [r.last for r in readings],
        "gaps": sum(r.tokens - 1 for r in readings),
    }


def _problems(observed: dict[str, Any], **changes: dict[str, float] | None) -> list[str]:
    stats = copy.deepcopy(observed["stats"])
    for name, change in changes.items():
        stats[name] = None if change is None else stats[name] | change
    inputs = {k: v for k, v in observed.items() if k != "stats"}
    return latency_problems(stats, **inputs)


def test_the_recorded_figures_are_within_every_bound(observed: dict[str, Any]) -> None:
    assert observed["gaps"] == 4660
    assert _problems(observed) == []


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"latency": {"p50": 1.0}}, "a latency p50 of 1 s; the observer saw the requests end at"),
        ({"latency": {"min": 0.1}}, "a latency min of 0.1 s;"),
        ({"ttft": {"p90": 0.0194}}, "a TTFT p90 of 0.0194 s; the observer saw the first tokens'"),
        ({"ttft": {"mean": 0.015}}, "a TTFT mean of 0.015 s;"),
        ({"ttft": {"max": 2.5}}, "a TTFT max of 2.5 s, past the latency max"),
        ({"itl": {"max": 2.5}}, "an ITL max of 2.5 s, past the latency max"),
        ({"latency": {"mean": 2.0}},
         "20 latencies of 2 s on average, one after another at concurrency 1, in a wall of"),
        ({"latency": {"max": 2.5}},
         "20 latencies, one after another at concurrency 1, that add up to at least 38.88"),
        ({"latency": {"mean": 1.9}},
         "a latency mean of 1.9 s over 20 values; its percentiles, least and most and the "
         "observer's times need at least"),
        ({"itl": {"mean": 0.004}},
         "an ITL mean of 0.004 s over 4660 values; its percentiles, least and most need at least"),
        ({"ttft": {"p75": 2.2}}, "a TTFT p75 of 2.2 s, past the latency p75 of"),
        ({"latency": {"mean": 2.1}}, "a latency mean of 2.1 s over 20 values; its percentiles"),
        ({"itl": None}, "no ITL, and the requests read 4660 gaps between two tokens"),
        ({"itl": {"mean": 0.0041}}, "TTFTs and ITLs that reach the requests' last tokens in"),
        ({"itl": {"mean": 0.0089}}, "TTFTs and ITLs adding up to"),
        ({"itl": {"mean": 0.0095}}, "an ITL mean of 0.0095 s over 4660 values; its percentiles"),
    ],
)  # fmt: skip
def test_a_figure_the_observer_rules_out_is_said(
    observed: dict[str, Any], changes: dict[str, Any], said: str
) -> None:
    problems = _problems(observed, **changes)
    assert any(p.startswith(said) for p in problems), problems


def test_a_halved_itl_paid_for_with_a_ttft_mean_its_percentiles_allow_is_not_enough(
    observed: dict[str, Any],
) -> None:
    """Halving the mean ITL (twice the estimated generation chunk/s) must lift the TTFTs by
    about 19 s in all: a TTFT mean of about 1 s, which the reported percentiles (a median of
    18 ms) do not allow."""
    itl = observed["stats"]["itl"]["mean"] / 2
    need = (math.fsum(observed["lasts"]) - itl * observed["gaps"]) / 20
    assert need > 0.9
    problems = _problems(observed, itl={"mean": itl}, ttft={"mean": need})
    assert [p for p in problems if p.startswith("a TTFT mean of")], problems


def test_no_itl_figures_without_two_tokens_in_a_request(observed: dict[str, Any]) -> None:
    inputs = {k: v for k, v in observed.items() if k != "stats"} | {"gaps": 0}
    problems = latency_problems(observed["stats"], **inputs)
    assert "ITL figures, and no request read two tokens" in problems


# --- the same, on a resealed bundle -------------------------------------------------------------


def _itl_halved(files: Files) -> None:
    report = _json_of(files, INFERMARK_RAW)
    report["results"][0]["itl"]["mean"] /= 2
    put_report(files, report)


def test_a_forged_itl_is_a_finding_of_the_report(recorded: Recorded, tmp_path: Path) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", _itl_halved)
    found = _findings(verdict, INFERMARK_RAW)
    assert any("TTFTs and ITLs that reach the requests' last tokens" in f for f in found), found
    assert verdict.integrity.status == "failed"


def test_the_recorded_report_resealed_is_no_finding(recorded: Recorded, tmp_path: Path) -> None:
    """The control: the same resealing with the report as recorded."""
    verdict = _forge(
        recorded, tmp_path / "bundle", lambda f: put_report(f, _json_of(f, INFERMARK_RAW))
    )
    _honest(verdict)
