"""Forgeries of a real recorded run (tests/data/hostile/forgeries.py): the honest recording
verifies QUALIFIED; every forgery, resealed so that integrity holds and keeping the claims of a
QUALIFIED run, fails with exit 1 and its located reason, and is never QUALIFIED."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.cli import main
from tests.data.hostile.forgeries import CONTROL, FORGERIES
from tests.data.hostile.kit import Context
from verify import verify_bundle

ISOLATION = (
    ("a vsock attempt", "AF_VSOCK {sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=9"),
    ("an attempt at an address strace could not read", "an address strace could not read (0x7f"),
)
DETAIL = (
    {case.name: case.fragment for case in FORGERIES}
    | {
        "1: a retried probe in the log": "a retried probe",
        "3: an upstream file forged in place": "git blob id",
        "3: the listing pointed at a forged file": "the listing hashes to",
        "3: a listing path quoted to exhaust a parser": "is not a git ls-tree entry",
        "3: a listing path 5,000 segments deep": "the listing hashes to None",
        "5: the effective policy relabelled against its serialization": "disables reasoning",
    }
    | {  # the network_isolation gate's reason (the pid before it is the sandbox's)
        f"4: {attempt}, in the trace and the ledger alike": f"tried {what}"
        for attempt, what in ISOLATION
    }
)
"""What the verdict must say of each forgery, where its first line says something else."""


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Context:
    return Context(tmp_path_factory.mktemp("forgery-work"), {})


def test_the_honest_recording_is_qualified(
    context: Context, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    CONTROL(context, tmp_path / "control")
    verdict = verify_bundle(tmp_path / "control").verdict
    # recorded under the demo pins (the reference endpoint and harnesses): qualified, never ranked
    assert (verdict.outcome, verdict.rankable, verdict.integrity.status) == (
        "QUALIFIED", False, "ok"
    )  # fmt: skip
    assert verdict.claims.match
    assert main(["verify", str(tmp_path / "control")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("case", FORGERIES, ids=[case.slug for case in FORGERIES])
def test_a_forgery_is_caught_and_never_qualified(
    case: object, context: Context, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = tmp_path / "forged"
    case.build(context, forged)  # type: ignore[attr-defined]
    verdict = verify_bundle(forged).verdict
    assert verdict.outcome != "QUALIFIED"
    assert not verdict.rankable
    assert DETAIL[case.name] in verdict.model_dump_json()  # type: ignore[attr-defined]
    assert main(["verify", str(forged)]) == 1
    err = capsys.readouterr().err
    assert case.fragment in err, err  # type: ignore[attr-defined]
    assert err.count("\n") == 1
