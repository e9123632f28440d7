"""What differs between two verified runs: the deployment (pin set, model, engine, upstream
commits), the bundles' integrity and signature, and the result (verdict, scores, gates). Pure:
it compares what it is given."""

from __future__ import annotations

from collections.abc import Iterator

from bundle_schema.models import DiffItem, DiffSide, Gx10Evidence, RunDiff, Verdict

__all__ = ["diff_runs"]

Run = tuple[Verdict, Gx10Evidence]


def _value(value: object) -> bool | int | float | str | None:
    """A side of a difference as the JSON value it is (anything else as its text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _deployment(a: Run, b: Run) -> list[tuple[str, object, object]]:
    """What makes a run's deployment: the pin set, the model, the engine, the upstreams, and the
    reasoning policy it was run with (the same weights with reasoning on and off answer as two
    deployments, and are ranked apart)."""
    (va, ea), (vb, eb) = a, b
    policy_a = ea.config.reasoning_policy.effective if ea.config else None
    policy_b = eb.config.reasoning_policy.effective if eb.config else None
    pairs: list[tuple[str, object, object]] = [
        ("pin_set", f"{va.pin_set.id} {va.pin_set.digest}", f"{vb.pin_set.id} {vb.pin_set.digest}"),
        ("model.runtime_model_id", ea.model.runtime_model_id, eb.model.runtime_model_id),
        ("model.digest", ea.model.digest, eb.model.digest),
        ("model.engine", ea.model.engine, eb.model.engine),
        ("config.reasoning_policy", policy_a, policy_b),
        ("model.engine_version", ea.model.engine_version, eb.model.engine_version),
    ]
    commits_a = {u.name: u.commit for u in ea.upstreams}
    commits_b = {u.name: u.commit for u in eb.upstreams}
    pairs += [(f"upstreams.{n}.commit", commits_a.get(n), commits_b.get(n))
              for n in sorted(set(commits_a) | set(commits_b))]  # fmt: skip
    return pairs


def _items(a: Run, b: Run) -> Iterator[DiffItem]:
    (va, ea), (vb, eb) = a, b
    pairs = _deployment(a, b)
    pairs += [
        # how the digest was known (hashed from the weights, or only declared): shown, though
        # the same digest is the same deployment
        ("model.digest_source", ea.model.digest_source, eb.model.digest_source),
        ("integrity", va.integrity.status, vb.integrity.status),
        ("signature", va.signature.status, vb.signature.status),
        ("profile", ea.profile, eb.profile),
        ("track", ea.config.track if ea.config else None, eb.config.track if eb.config else None),
        ("outcome", va.outcome, vb.outcome),
        ("result_validity", va.result_validity, vb.result_validity),
        ("profile_decision", va.profile_decision, vb.profile_decision),
        ("rankable", va.rankable, vb.rankable),
    ]
    for field, left, right in pairs:
        if left != right:
            yield DiffItem(field=field, a=_value(left), b=_value(right))
    scores_a, scores_b = va.scores.model_dump(), vb.scores.model_dump()
    for name in scores_a:
        left, right = scores_a[name], scores_b[name]
        if left != right:
            delta = right - left if left is not None and right is not None else None
            yield DiffItem(field=f"scores.{name}", a=_value(left), b=_value(right), delta=delta)
    gates_a = {g.id: g.status for g in va.gates}
    gates_b = {g.id: g.status for g in vb.gates}
    for gate in sorted(set(gates_a) | set(gates_b)):
        if gates_a.get(gate) != gates_b.get(gate):
            yield DiffItem(field=f"gates.{gate}", a=gates_a.get(gate), b=gates_b.get(gate))


def _side(verdict: Verdict) -> DiffSide:
    return DiffSide(
        bundle_digest=verdict.bundle_digest,
        integrity=verdict.integrity.status,
        signature=verdict.signature.status,
    )


def diff_runs(a: Run, b: Run) -> RunDiff:
    """What differs from run ``a`` to run ``b``: the same deployment when the pin set, model,
    engine and upstream commits are; the same verdict when the integrity status, outcome,
    validity, profile decision and rankability are (a run whose bytes verify under one pin set
    and not under another has not the same verdict, whatever its decisions were already)."""
    (va, _), (vb, _) = a, b
    same = (va.integrity.status, va.outcome, va.result_validity, va.profile_decision,
            va.rankable) == (vb.integrity.status, vb.outcome, vb.result_validity,
                             vb.profile_decision, vb.rankable)  # fmt: skip
    return RunDiff(
        schema_version=1,
        a=_side(va),
        b=_side(vb),
        same_deployment=all(left == right for _, left, right in _deployment(a, b)),
        same_verdict=same,
        differences=tuple(_items(a, b)),
    )
