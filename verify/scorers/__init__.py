"""Replay scorers: pure, versioned functions from recorded evidence to published numbers."""

from verify.scorers import lmspeed, quality
from verify.scorers.bfcl import (
    BFCL_VERSION,
    aggregate,
    aggregate_v4,
    load_plan,
    load_shard,
    score_shards,
    tallies_from_metrics,
    union,
)

__all__ = [
    "BFCL_VERSION",
    "aggregate",
    "aggregate_v4",
    "lmspeed",
    "load_plan",
    "load_shard",
    "quality",
    "score_shards",
    "tallies_from_metrics",
    "union",
]
