"""When a verification fails: the one exit policy, shared by ``audit verify`` and library callers.

A verdict is a result; whether the *check* passed is a separate question, answered here once
(docs/verification.md, "Exit codes"). The check fails (exit 1) when the bundle's integrity fails,
its signature fails, the runner's claims differ from the replay, or a requirement the caller
named is not met. A NOT_QUALIFIED or INFRA_ERROR verdict alone is not a failed check.

>>> from verify import verify_bundle
>>> from verify.policy import failed_check
>>> failed_check(verify_bundle("bundle.tar").verdict, require=["rankable"])  # doctest: +SKIP
'requirement not met: rankable: not rankable: ...'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from bundle_schema.errors import InvalidInput
from bundle_schema.models import Verdict

__all__ = ["REQUIREMENTS", "failed_check", "unmet_requirement"]


def _first_reason(verdict: Verdict) -> str:
    return verdict.reasons[0] if verdict.reasons else "no reason recorded"


def _signed(verdict: Verdict) -> str | None:
    status = verdict.signature.status
    if status == "verified":
        return None
    if status == "unsigned":
        return "the bundle is unsigned"
    return f"signature {status}: {verdict.signature.reason}"


REQUIREMENTS: Mapping[str, Callable[[Verdict], str | None]] = MappingProxyType(
    {
        "rankable": lambda v: None if v.rankable else f"not rankable: {_first_reason(v)}",
        "qualified": lambda v: (
            None if v.outcome == "QUALIFIED" else f"outcome {v.outcome}: {_first_reason(v)}"
        ),
        "valid": lambda v: (
            None if v.result_validity == "VALID" else f"{v.result_validity}: {_first_reason(v)}"
        ),
        "signed": _signed,
    }
)
"""What ``--require`` can ask of a verdict: each returns why it is unmet, or None."""


def unmet_requirement(verdict: Verdict, require: Iterable[str]) -> str | None:
    """The first requirement ``verdict`` does not meet, as ``"<name>: <why>"``, or None.

    An unknown requirement name is refused (:class:`InvalidInput`), never ignored.
    """
    for name in require:
        check = REQUIREMENTS.get(name)
        if check is None:
            raise InvalidInput(
                f"unknown requirement {name!r}: expected one of {', '.join(REQUIREMENTS)}"
            )
        why = check(verdict)
        if why is not None:
            return f"{name}: {why}"
    return None


def signature_failure(verdict: Verdict) -> str | None:
    """Why a bundle's signature failed under the identity policy it was verified with, or None
    (verified, or not checked)."""
    return verdict.signature.reason if verdict.signature.status == "failed" else None


def failed_check(verdict: Verdict, require: Iterable[str] = ()) -> str | None:
    """Why verifying the bundle behind ``verdict`` failed (one line), or None when it passed."""
    findings = verdict.integrity.findings
    if findings:
        return f"integrity failed: {len(findings)} finding(s); first: {findings[0].message}"
    if (unsigned := signature_failure(verdict)) is not None:
        return f"signature failed: {unsigned}"
    if not verdict.claims.match:
        return f"the runner's claims differ from the replay: {verdict.claims.differences[0]}"
    unmet = unmet_requirement(verdict, require)
    return None if unmet is None else f"requirement not met: {unmet}"
