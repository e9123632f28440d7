"""Whether one replayed run may enter a ranking group, and which (seed 000, "Ranking")."""

from __future__ import annotations

import json

from pins import takes_a_shipped_id
from verify.gx10._context import Run


def rank_blockers(run: Run, validity: str, decision: str, executed_weight: float) -> list[str]:
    """Why the result cannot enter a ranking group, if it cannot."""
    evidence, pins = run.evidence, run.pins
    named = evidence.pin_set
    other = (named.id, named.digest) != (pins.id, pins.digest)
    # said of every run judged by another pin set than it names (an older digest of the same id
    # included), ranked or not: a reviewer reads the verdict as of the pins that judged it
    judged = [f"the run names pin set {named.id} {named.digest}; judged by {pins.id} {pins.digest}"]
    if validity != "VALID" or decision != "MEETS_PROFILE":
        return [f"not ranked: {validity} / {decision}", *(judged if other else [])]
    blockers = []
    if pins.pins.historical:
        blockers.append(f"{pins.id} is a historical generation: diagnostics only, never ranked")
    if pins.pins.demo_only:
        blockers.append(f"{pins.id} is a demo-only pin set (reference harnesses): never ranked")
    counterfeit = takes_a_shipped_id(pins.id, pins.digest)
    if counterfeit is not None:
        blockers.append(f"{counterfeit}: never ranked")
    if evidence.scoring_generation != pins.pins.scoring_generation:
        current = pins.pins.scoring_generation
        blockers.append(f"scoring generation {evidence.scoring_generation} is not {current}")
    if other:
        blockers += judged
    if evidence.profile != pins.pins.standard_profile:
        blockers.append(
            f"profile {evidence.profile} is not the standard {pins.pins.standard_profile}"
        )
    if executed_weight < 100:
        blockers.append("incomplete executed weight")
    return blockers


def rank_group(run: Run) -> str | None:
    config = run.evidence.config
    if config is None:
        return None
    if config.track == "primary":
        return "primary"
    policy = config.reasoning_policy
    serialization = policy.serialization
    shown = f"{serialization.path}={json.dumps(serialization.value)}" if serialization else "none"
    return f"controlled:{policy.effective}:{shown}"
