"""BFCL shard aggregation as the seed's score.py does it (seed 003), and the official BFCL V4
overall as bfcl-eval 2026.3.23 computes it.

Shards report per-subset (hits, n) tallies. Tallies are summed across shards first and the
hierarchical weighting is applied once, to the union, so every partition of the same rows into
shards gives the same result:

    non_live      = mean[ mean(simple_python, simple_java, simple_javascript),
                          multiple, parallel, parallel_multiple ]
    live          = sample-weighted mean over the live subsets
    hallucination = mean(irrelevance, live_irrelevance)           (unweighted)
    normalized    = mean(the categories present)
    overall       = flat mean over every scored sample

Each category is built from the subsets present, exactly as score.py does: a missing subset
changes its category's divisor. A subset with ``n == 0`` scored no sample and counts as missing.

Because shards are content-addressed evidence, aggregation also refuses what would silently
score fewer (or more) samples than the run drew: a duplicated shard (same bytes, or overlapping
sample ids where recorded), a shard missing from or extra to a recorded plan, hits above n, and
subsets score.py does not know.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bundle_schema import digest_of, kind_of, loads_strict, validate_document
from bundle_schema.errors import InvalidInput
from bundle_schema.models import BfclPlan, BfclScore, BfclShard, Tally

__all__ = [
    "AGGREGATIONS",
    "BFCL_VERSION",
    "DEFAULT_AGGREGATION",
    "HALLUCINATION",
    "LIVE",
    "NON_LIVE",
    "SIMPLE_AST",
    "V4_CATEGORIES",
    "V4_COLLECTIONS",
    "LoadedShard",
    "ShardRefused",
    "aggregate",
    "aggregate_v4",
    "load_plan",
    "load_shard",
    "score_shards",
    "tallies_from_metrics",
    "union",
    "v4_categories",
]

BFCL_VERSION = "1"
"""The version of this scorer; it changes whenever a number it computes could change."""

SIMPLE_AST = ("simple_python", "simple_java", "simple_javascript")
"""The three ``simple_*`` subsets collapse to one term inside non_live."""
NON_LIVE = (*SIMPLE_AST, "multiple", "parallel", "parallel_multiple")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
HALLUCINATION = ("irrelevance", "live_irrelevance")
KNOWN = frozenset(NON_LIVE + LIVE + HALLUCINATION)

MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
MEMORY = ("memory_kv", "memory_vector", "memory_rec_sum")
V4_WEIGHTS = (
    ("non_live", 10),
    ("live", 10),
    ("irrelevance", 10),
    ("multi_turn", 30),
    ("agentic", 40),
)
"""bfcl-eval 2026.3.23's weights of the BFCL V4 overall (generate_leaderboard_csv)."""
V4_DATASET_SIZES = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200,
    "parallel": 200, "parallel_multiple": 200, "live_simple": 258, "live_multiple": 1053,
    "live_parallel": 16, "live_parallel_multiple": 24, "irrelevance": 240,
    "live_irrelevance": 884, "multi_turn_base": 200, "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200, "multi_turn_long_context": 200, "web_search_base": 100,
    "web_search_no_snippet": 100, "memory_kv": 155, "memory_vector": 155,
    "memory_rec_sum": 155,
}  # fmt: skip
"""Entries per subset in bfcl-eval 2026.3.23 (``load_dataset_entry`` without prerequisites or
hints): BFCL V4 counts a subset that was not run as accuracy 0 with this many samples."""
V4_SUBSET_SIZES = V4_DATASET_SIZES | {"live_relevance": 16}
"""Entries per subset of every subset bfcl-eval 2026.3.23 ships, ``live_relevance`` too (not in
the V4 overall): no score file of a subset may count more."""
KNOWN_V4 = frozenset(V4_SUBSET_SIZES)

_NON_LIVE_CATEGORY = (*NON_LIVE, "irrelevance")
_LIVE_CATEGORY = (*LIVE, "live_irrelevance", "live_relevance")
_SCORING = (*_NON_LIVE_CATEGORY, *_LIVE_CATEGORY, *MULTI_TURN, *MEMORY, *WEB_SEARCH)
V4_COLLECTIONS: Mapping[str, tuple[str, ...]] = {
    "all": (*_SCORING, "format_sensitivity"),
    "all_scoring": _SCORING,
    "multi_turn": MULTI_TURN,
    "single_turn": (*_NON_LIVE_CATEGORY, *_LIVE_CATEGORY),
    "live": _LIVE_CATEGORY,
    "non_live": _NON_LIVE_CATEGORY,
    "non_python": ("simple_java", "simple_javascript"),
    "python": (
        "simple_python", "irrelevance", "parallel", "multiple", "parallel_multiple",
        *_LIVE_CATEGORY,
    ),
    "memory": MEMORY,
    "web_search": WEB_SEARCH,
    "agentic": (*MEMORY, *WEB_SEARCH),
}  # fmt: skip
"""bfcl-eval 2026.3.23's test collections (``TEST_COLLECTION_MAPPING``): what a
``--test-category`` of one of these names runs; any other category name runs that category."""
V4_CATEGORIES = frozenset(V4_COLLECTIONS["all"])
"""Every test category bfcl-eval 2026.3.23 runs (``ALL_CATEGORIES``)."""


def v4_categories(names: Sequence[str]) -> frozenset[str]:
    """The test categories bfcl-eval 2026.3.23 runs for ``--test-category`` values ``names``
    (``parse_test_category_argument``: a collection's, or a category's own).

    Raises:
        ValueError: a name is neither (bfcl-eval raises too); the message names it.
    """
    found: set[str] = set()
    for name in names:
        if name in V4_COLLECTIONS:
            found.update(V4_COLLECTIONS[name])
        elif name in V4_CATEGORIES:
            found.add(name)
        else:
            raise ValueError(f"{name!r} is no test category of bfcl-eval 2026.3.23")
    return frozenset(found)


class ShardRefused(InvalidInput):
    """The shards cannot be aggregated as given (exit 2); the message names the shard."""


@dataclass(frozen=True)
class LoadedShard:
    """A shard report as received: where it came from, its bytes' digest, and its content."""

    where: str
    digest: str
    shard: BfclShard


def load_shard(data: bytes, where: str) -> LoadedShard:
    """Parse a shard report's bytes (strict JSON; the seed's shard report format).

    Raises:
        DocumentError: the bytes are not a valid shard report; the message says where.
    """
    shard = validate_document(kind_of(BfclShard), loads_strict(data, where), where)
    return LoadedShard(where, digest_of(data), shard)


def load_plan(data: bytes, where: str) -> BfclPlan:
    """Parse a shard plan's bytes.

    Raises:
        DocumentError: the bytes are not a valid shard plan.
    """
    return validate_document(kind_of(BfclPlan), loads_strict(data, where), where)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def union(shards: Sequence[Mapping[str, Tally]]) -> dict[str, Tally]:
    """Sum per-subset tallies across shards. Duplicates are not detected here (see
    :func:`score_shards`)."""
    totals: dict[str, tuple[int, int]] = {}
    for tallies in shards:
        for subset, tally in tallies.items():
            hits, n = totals.get(subset, (0, 0))
            totals[subset] = (hits + tally.hits, n + tally.n)
    return {subset: Tally(hits=h, n=n) for subset, (h, n) in sorted(totals.items())}


def aggregate(tallies: Mapping[str, Tally]) -> dict[str, float | None]:
    """The categories of score.py from per-subset tallies, unrounded, None where not computable.

    Given the union of every shard's tallies it scores the whole draw; given one run's tallies
    it scores that run.
    """
    scored = {s: t for s, t in tallies.items() if t.n > 0}
    accuracy = {s: t.hits / t.n for s, t in scored.items()}
    simple = _mean([accuracy[s] for s in SIMPLE_AST if s in accuracy])
    terms = [simple] if simple is not None else []
    terms += [accuracy[s] for s in NON_LIVE if s not in SIMPLE_AST and s in accuracy]
    live_tallies = [scored[s] for s in LIVE if s in scored]
    live = (
        sum(t.hits for t in live_tallies) / sum(t.n for t in live_tallies) if live_tallies else None
    )
    hallucination = _mean([accuracy[s] for s in HALLUCINATION if s in accuracy])
    non_live = _mean(terms)
    present = [c for c in (non_live, live, hallucination) if c is not None]
    total_n = sum(t.n for t in scored.values())
    return {
        "overall_accuracy": sum(t.hits for t in scored.values()) / total_n if total_n else None,
        "normalized_single_turn_score": _mean(present),
        "non_live": non_live,
        "live": live,
        "hallucination": hallucination,
    }


def aggregate_v4(tallies: Mapping[str, Tally]) -> dict[str, float | None]:
    """The BFCL V4 overall as bfcl-eval 2026.3.23 computes it, unrounded.

    overall = 0.10 non_live + 0.10 live + 0.10 irrelevance + 0.30 multi_turn + 0.40 agentic.
    Unlike score.py, a subset that was not run counts as accuracy 0 with its full dataset size
    (:data:`V4_DATASET_SIZES`), so every divisor is fixed. The arithmetic follows bfcl-eval's
    order of operations, so results agree with it to the last few bits.
    """

    def score(subset: str) -> tuple[float, int]:
        tally = tallies.get(subset)
        if tally is None or tally.n == 0:
            return 0.0, V4_DATASET_SIZES[subset]
        return tally.hits / tally.n, tally.n

    def unweighted(parts: Sequence[tuple[float, int]]) -> tuple[float, int]:
        total = 0.0
        for accuracy, _ in parts:
            total += accuracy
        return total / len(parts), sum(count for _, count in parts)

    def weighted(parts: Sequence[tuple[float, int]]) -> tuple[float, int]:
        total, count = 0.0, 0
        for accuracy, n in parts:
            total += accuracy * n
            count += n
        return total / count, count

    simple = unweighted([score(s) for s in SIMPLE_AST])
    non_live = unweighted([simple, *(score(s) for s in NON_LIVE if s not in SIMPLE_AST)])
    live = weighted([score(s) for s in LIVE])
    irrelevance = unweighted([score(s) for s in HALLUCINATION])
    multi_turn = unweighted([score(s) for s in MULTI_TURN])
    web_search = unweighted([score(s) for s in WEB_SEARCH])
    memory = unweighted([score(s) for s in MEMORY])
    agentic = unweighted([web_search, memory])
    parts = {"non_live": non_live, "live": live, "irrelevance": irrelevance,
             "multi_turn": multi_turn, "agentic": agentic}  # fmt: skip
    weight_sum = sum(weight for _, weight in V4_WEIGHTS)
    overall = 0.0
    for name, weight in V4_WEIGHTS:
        overall += parts[name][0] * (weight / weight_sum)
    return {
        "overall_accuracy": overall,
        **{name: value[0] for name, value in parts.items()},
        "web_search": web_search[0],
        "memory": memory[0],
    }


@dataclass(frozen=True)
class _Aggregation:
    known: frozenset[str]
    """Subsets a shard may report."""
    weighed: frozenset[str]
    """Subsets the aggregate weighs; those no shard scored are reported as missing."""
    compute: Callable[[Mapping[str, Tally]], dict[str, float | None]]


_AGGREGATIONS = {
    "score-py": _Aggregation(KNOWN, KNOWN, aggregate),
    "bfcl-v4": _Aggregation(KNOWN_V4, frozenset(V4_DATASET_SIZES), aggregate_v4),
}
AGGREGATIONS = tuple(_AGGREGATIONS)
DEFAULT_AGGREGATION = "score-py"


def tallies_from_metrics(metrics: Mapping[str, float | int | None]) -> dict[str, Tally] | None:
    """Recover per-subset tallies from a gate record's ``subset.<name>.hits``/``.n`` metrics.

    Returns None when the record has no tallies, or when a subset has hits but no n (or n but no
    hits, or a count that is not a whole non-negative number): the caller treats None as "cannot
    be aggregated", never as an empty contribution, which would score the group over fewer
    samples than the draw.
    """
    found: dict[str, dict[str, int]] = {}
    for key, value in metrics.items():
        parts = key.split(".")
        if len(parts) != 3 or parts[0] != "subset" or parts[2] not in ("hits", "n"):
            continue
        if value is None or isinstance(value, bool) or value < 0 or value != int(value):
            return None
        found.setdefault(parts[1], {})[parts[2]] = int(value)
    if not found or any(set(counts) != {"hits", "n"} for counts in found.values()):
        return None
    if any(c["hits"] > c["n"] for c in found.values()):
        return None
    return {s: Tally(hits=c["hits"], n=c["n"]) for s, c in sorted(found.items())}


def _check_shard(loaded: LoadedShard, aggregation: str) -> None:
    for subset, tally in sorted(loaded.shard.subset_totals.items()):
        if subset not in _AGGREGATIONS[aggregation].known:
            raise ShardRefused(
                f"{loaded.where}: subset_totals.{subset}: not a subset the {aggregation} "
                "aggregation knows"
            )
        if tally.hits > tally.n:
            raise ShardRefused(
                f"{loaded.where}: subset_totals.{subset}: hits {tally.hits} > n {tally.n}"
            )
    ids = loaded.shard.sample_ids
    if ids is not None:
        if len(set(ids)) != len(ids):
            raise ShardRefused(f"{loaded.where}: sample_ids repeats a sample")
        scored = sum(t.n for t in loaded.shard.subset_totals.values())
        if len(ids) != scored:
            raise ShardRefused(
                f"{loaded.where}: sample_ids lists {len(ids)} samples, subset_totals count {scored}"
            )


def score_shards(
    shards: Sequence[LoadedShard],
    plan: BfclPlan | None = None,
    aggregation: str = DEFAULT_AGGREGATION,
) -> BfclScore:
    """Check the shards against each other and the plan, then aggregate their union.

    Args:
        shards: the shard reports.
        plan: the run's shard plan, if recorded.
        aggregation: ``score-py`` (the seed's score.py) or ``bfcl-v4`` (the official overall).

    Raises:
        ShardRefused: no shard, a duplicated or overlapping shard, a shard missing from or extra
            to the plan, an unknown subset, or hits above n.
    """
    if aggregation not in AGGREGATIONS:
        raise ShardRefused(f"unknown aggregation {aggregation!r}; known: {', '.join(AGGREGATIONS)}")
    if not shards:
        raise ShardRefused("no shard to aggregate")
    seen: dict[str, str] = {}
    samples: set[str] = set()
    for index, loaded in enumerate(shards):
        _check_shard(loaded, aggregation)
        if loaded.digest in seen:
            raise ShardRefused(
                f"{loaded.where}: the same shard as {seen[loaded.digest]} ({loaded.digest})"
            )
        seen[loaded.digest] = loaded.where
        ids = set(loaded.shard.sample_ids or ())
        shared = samples & ids
        if shared:
            sample = min(shared)
            other = next(s for s in shards[:index] if sample in (s.shard.sample_ids or ()))
            raise ShardRefused(f"{loaded.where}: sample {sample!r} is also in {other.where}")
        samples |= ids
    if plan is not None:
        planned = set(plan.shards)
        missing = sorted(planned - set(seen))
        if missing:
            raise ShardRefused(f"{len(missing)} planned shard(s) missing, first: {missing[0]}")
        extra = sorted(set(seen) - planned)
        if extra:
            raise ShardRefused(f"{seen[extra[0]]}: not in the shard plan ({extra[0]})")
    tallies = union([loaded.shard.subset_totals for loaded in shards])
    chosen = _AGGREGATIONS[aggregation]
    scored = {subset for subset, tally in tallies.items() if tally.n > 0}
    return BfclScore(
        schema_version=1,
        scorer="bfcl",
        scorer_version=BFCL_VERSION,
        aggregation=aggregation,
        categories=chosen.compute(tallies),
        tallies=tallies,
        missing_subsets=tuple(sorted(chosen.weighed - scored)),
        shards=tuple(sorted(seen)),
    )
