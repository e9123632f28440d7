"""The harnesses the pin set judges: the upstreams a profile's components need, and the harnesses
the bundle holds no checkout of as pinned, whose outputs are another harness's (ADR 0036)."""

from __future__ import annotations

from collections.abc import Iterable

from bundle_schema.models import ComponentName, Gx10Evidence, UpstreamCheckout
from pins import PinSetSource


def checkout_problem(
    pins: PinSetSource, upstreams: Iterable[UpstreamCheckout], name: str
) -> str | None:
    """Why the bundle holds no checkout of the upstream ``name`` as ``pins`` pin it: none of
    that name, or one at another repository or commit. None: it holds one (clean or not).
    The ``upstream_checkout`` gate's comparison, and the one that decides whose outputs the
    pin set's readers re-read (ADR 0036)."""
    pinned = pins.pins.upstreams[name]
    checkout = next((u for u in upstreams if u.name == name), None)
    if checkout is None:
        return f"{name} was not checked out"
    if checkout.commit != pinned.commit or checkout.repository != pinned.repository:
        return (
            f"{name} is at {checkout.repository}@{checkout.commit[:12]}, pinned "
            f"{pinned.repository}@{pinned.commit[:12]}"
        )
    return None


def needed_upstreams(pins: PinSetSource, selected: Iterable[ComponentName]) -> list[str]:
    """The upstreams a profile's components need under ``pins``, sorted: each selected
    component's harness and its gates (a component the pins give none is not here)."""
    table = pins.pins
    chosen = list(selected)
    return sorted(
        {table.component_upstreams[c] for c in chosen if c in table.component_upstreams}
        | {g for c in chosen for g in table.gates_of(c)}
    )


def profile_components(pins: PinSetSource, evidence: Gx10Evidence) -> tuple[ComponentName, ...]:
    """The components of the run's profile under ``pins`` (none: a profile it does not define)."""
    profile = pins.pins.profiles.get(evidence.profile)
    return tuple(profile.components) if profile else ()


def foreign_harnesses(
    evidence: Gx10Evidence, pins: PinSetSource, selected: Iterable[ComponentName]
) -> dict[str, str]:
    """The harnesses whose outputs are not evidence under ``pins`` (ADR 0036): each harness
    (or needed upstream) of the pin set the bundle holds no checkout of as pinned, and why
    (:func:`checkout_problem`). Their records are another harness's: the pin set's readers
    do not re-read them, its settings (environment, data, walls, task set) are not held
    against them, and no score is replayed from them.

    Empty unless a harness the profile needs is among them, which fails ``upstream_checkout``
    as infrastructure: a run whose needed harnesses are all as pinned keeps every cross-check
    (a record of an unselected component at a missing checkout is still read and held), so
    leaving a check out never lets a run be QUALIFIED or ranked that a finding stopped. Every
    such harness where the pin set does not define the run's profile: a run it cannot judge
    (INFRA_ERROR), whose harnesses it does not know it needs."""
    needed = needed_upstreams(pins, selected)
    problems = {
        name: problem
        for name in sorted(set(pins.pins.harnesses) | set(needed))
        if (problem := checkout_problem(pins, evidence.upstreams, name)) is not None
    }
    if evidence.profile not in pins.pins.profiles:  # a run it cannot judge: INFRA_ERROR anyway
        return problems
    return problems if any(name in problems for name in needed) else {}
