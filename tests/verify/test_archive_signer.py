"""An archive held to who published it: ``audit verify-archive`` and ``audit rank`` with
``--identity`` and ``--issuer`` check every bundle's Sigstore signature (the private test
instance's, offline), on either engine. A bundle signed by another identity, or unsigned, fails
its check in the archive report and is listed apart in the ranking; the documents name the
signer they held the archive to (ADR 0043)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from audit.cli import main
from bundle_schema import digest_of
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import PinSetRef, Signer
from tests.audit.test_signing import WHO, sign
from tests.factories import write_small_bundle
from tests.paths import SCHEMAS
from tests.private_sigstore import ISSUER, PrivateSigstore
from tests.verify.test_verify_archive import _document, dask_client  # noqa: F401 - the fixture
from verify._signature import IdentityPolicy
from verify._trust import trust_root_from_file
from verify.archive import ArchiveWriter, verify_archive
from verify.judging import Here, Job, judge_archive
from verify.ranking import Entry, Facts, place

MALLORY = "mallory@test.local"


@pytest.fixture
def archive(tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]) -> Path:
    """Three bundles: signed by WHO, signed by another identity of the same instance, and
    unsigned."""
    root = tmp_path / "archive"
    for name, who in (("a-by-who", WHO), ("b-by-mallory", MALLORY), ("c-unsigned", None)):
        write_small_bundle(root / name, durable=False, run_id=name)
        if who is not None:
            assert sign(root / name, instance, trust, who=who) == 0
    return root


def _policy(trust: dict[str, str]) -> list[str]:
    return ["--identity", WHO, "--issuer", ISSUER, "--trusted-root", trust["root"]]


def _identity_policy(trust: dict[str, str]) -> IdentityPolicy:
    return IdentityPolicy(WHO, ISSUER, trust_root_from_file(trust["root"]))


def _signer(trust: dict[str, str]) -> dict[str, str]:
    root = digest_of(Path(trust["root"]).read_bytes())
    return {"identity": WHO, "issuer": ISSUER, "trusted_root": root}


def test_verify_archive_fails_every_bundle_the_identity_did_not_sign(
    archive: Path, trust: dict[str, str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["verify-archive", str(archive), *_policy(trust)]) == 1
    report = _document(capsysbinary.readouterr().out)
    assert report.signer == Signer(**_signer(trust))
    by_run = {e.run_id: e for e in report.bundles}
    assert by_run["a-by-who"].signature == "verified"
    assert by_run["a-by-who"].failed_check is None
    for run in ("b-by-mallory", "c-unsigned"):
        assert by_run[run].signature == "failed"
        assert (by_run[run].failed_check or "").startswith("signature failed: ")
    assert "SANs do not match" in (by_run["b-by-mallory"].failed_check or "")
    assert "unsigned" in (by_run["c-unsigned"].failed_check or "")
    assert (report.counts.passed, report.counts.failed) == (1, 2)


def test_without_an_identity_nothing_is_held_to_a_signer(
    archive: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["verify-archive", str(archive)]) == 0
    report = _document(capsysbinary.readouterr().out)
    assert report.signer is None
    statuses = {e.run_id: e.signature for e in report.bundles}
    assert statuses == {"a-by-who": "unchecked", "b-by-mallory": "unchecked",
                        "c-unsigned": "unsigned"}  # fmt: skip
    assert main(["verify-archive", str(archive), "--markdown"]) == 0
    markdown = capsysbinary.readouterr().out.decode()
    assert "Signatures not checked: no --identity and --issuer were given." in markdown


def test_the_markdown_names_the_signer(
    archive: Path, trust: dict[str, str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["verify-archive", str(archive), "--markdown", *_policy(trust)]) == 1
    markdown = capsysbinary.readouterr().out.decode()
    root = _signer(trust)["trusted_root"]
    line = (
        f"Signatures checked: each bundle signed by {WHO} ({ISSUER}), under the trust root {root}."
    )
    assert line in markdown.splitlines()


def reports_on_both_engines(
    sources: list[Any], policy: IdentityPolicy, client: Any
) -> tuple[bytes, bytes]:
    """The archive report of ``sources`` held to ``policy``, made in this process and on Dask."""
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    reports = []
    for engine in ("local", "dask"):
        writer = ArchiveWriter(None, policy.signer)
        if engine == "local":
            verify_archive(sources, writer, policy=policy)
        else:
            verify_on_dask(sources, writer, policy=policy, client=client)
        out = io.BytesIO()
        writer.write_json(out)
        writer.close()
        reports.append(out.getvalue())
    return reports[0], reports[1]


def test_dask_holds_the_archive_to_the_signer_as_one_process_does(
    archive: Path,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    local, dasked = reports_on_both_engines(
        sorted(archive.iterdir()), _identity_policy(trust), dask_client
    )
    assert local == dasked
    signatures = [e["signature"] for e in json.loads(local)["bundles"]]
    assert sorted(signatures) == ["failed", "failed", "verified"]


def test_rank_lists_apart_every_run_the_identity_did_not_sign(
    archive: Path, trust: dict[str, str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["rank", str(archive), "--json", *_policy(trust)]) == 0
    value = json.loads(capsysbinary.readouterr().out)
    schema = json.loads((SCHEMAS / "ranking.schema.json").read_bytes())
    jsonschema.Draft202012Validator(schema).validate(value)
    assert value["signer"] == _signer(trust)
    first = {row["run_id"]: row["reasons"][0] for row in value["apart"]}
    assert first["b-by-mallory"].startswith("signature failed: ")
    assert first["c-unsigned"].startswith("signature failed: ")
    assert not first["a-by-who"].startswith("signature failed")
    assert main(["rank", str(archive), "--json"]) == 0  # unchecked: no row is set apart for it
    value = json.loads(capsysbinary.readouterr().out)
    assert value["signer"] is None
    assert not any(r["reasons"][0].startswith("signature") for r in value["apart"])


def test_rank_on_dask_holds_runs_to_the_signer_as_one_process_does(
    archive: Path,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify.distributed import judge_on_dask  # noqa: PLC0415 - imports Dask

    policy = _identity_policy(trust)
    paths: list[Any] = sorted(archive.iterdir())
    job = Job(None, policy=policy)
    with judge_archive(paths, Here(paths, job)) as judged:
        here = judged.whole()
    with judge_on_dask(paths, job, client=dask_client) as there:
        assert there.whole() == here
    unsigned = {b.kept.facts.run_id: b.kept.facts.unsigned for b in here.bundles}
    assert unsigned["a-by-who"] is None
    assert unsigned["b-by-mallory"] is not None and unsigned["c-unsigned"] is not None


def test_a_rankable_run_whose_signature_failed_is_apart_whatever_its_verdict() -> None:
    pins = PinSetRef(id="gx10-deployment-v5", digest="sha256:" + "a" * 64)
    facts = Facts(
        run_id="run-1", bundle_digest="sha256:" + "b" * 64, pin_set=pins, outcome="QUALIFIED",
        result_validity="VALID", profile_decision="MEETS_PROFILE", rankable=True,
        rank_group="primary", scores=_scores(), reasons=(), intact=True, claims_match=True,
        passed=True, unsigned=None, comparable=True, why="",
        verdict_digest="sha256:" + "c" * 64, created_at="2026-12-06T00:00:00Z", model="m",
        model_digest="sha256:" + "d" * 64, reasoning_policy="off", track="primary",
        recorded_pin_set=pins,
    )  # fmt: skip
    assert place(Entry("run-1", facts), pins)[0] == "ranked"
    forged = Facts(**{**facts.__dict__, "passed": False, "unsigned": "SANs do not match"})
    table, group, row = place(Entry("run-1", forged), pins)
    assert (table, group) == ("apart", None)
    assert row.reasons == ("signature failed: SANs do not match",)


def _scores() -> Any:
    from bundle_schema.models import Gx10Scores  # noqa: PLC0415

    values = dict.fromkeys(
        ("coding", "hermes", "tool_instruction", "reliability", "performance", "aggregate"), 90.0
    )
    return Gx10Scores(**values, executed_weight=100)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--identity", WHO], "give both --identity and --issuer"),
        (["--issuer", ISSUER], "give both --identity and --issuer"),
        (["--identity", " ", "--issuer", ISSUER], "--identity is empty"),
    ],
)
@pytest.mark.parametrize("command", ["verify-archive", "rank"])
def test_half_a_policy_is_refused(
    archive: Path, command: str, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, str(archive), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"audit {command}: ") and says in err and err.count("\n") == 1


# --- copies of one signed bundle, signed otherwise (ADR 0043 point 2) ---------------------------


def _signed_twice(root: Path, instance: PrivateSigstore, trust: dict[str, str], copy: str,
                  signer: str | None) -> tuple[Path, Path]:  # fmt: skip
    """A bundle signed by WHO (``b-signed``) and a copy of its bytes (named ``copy``) that is
    signed by ``signer`` (None: unsigned; ``flipped``: WHO's signature with a byte changed)."""
    honest = root / "b-signed"
    write_small_bundle(honest, durable=False, run_id="run")
    shutil.copytree(honest, root / copy)
    assert sign(honest, instance, trust) == 0
    if signer == "flipped":
        shutil.copytree(honest / "signatures", root / copy / "signatures")
        signature = root / copy / MANIFEST_SIGNATURE
        data = bytearray(signature.read_bytes())
        data[len(data) // 2] ^= 0x01
        signature.write_bytes(bytes(data))
    elif signer is not None:
        assert sign(root / copy, instance, trust, who=signer) == 0
    return honest, root / copy


@pytest.mark.parametrize("signer", [None, MALLORY, "flipped"])
@pytest.mark.parametrize("copy", ["a-copy", "c-copy"])  # walked before or after the signed one
def test_the_copy_signed_by_the_identity_counts_whichever_comes_first(  # noqa: PLR0917
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    copy: str,
    signer: str | None,
) -> None:
    """A bundle signed by the identity and a copy of its bytes without that signature: the
    entry is the signed one's, verified, and the copy is refused as not holding the signature
    the identity verified, on either engine, whichever is walked first. (A copy walked first
    made the entry "signature failed" and refused the signed one as signed otherwise: a copy
    dropped into an archive under a name that sorts first sank an honest run.)"""
    honest, other = _signed_twice(tmp_path / "archive", instance, trust, copy, signer)
    local, dasked = reports_on_both_engines(
        sorted(honest.parent.iterdir()), _identity_policy(trust), dask_client
    )
    assert local == dasked
    report = json.loads(local)
    (entry,) = report["bundles"]
    assert (entry["signature"], entry["failed_check"]) == ("verified", None)
    assert entry["sources"] == [str(honest)]
    (refused,) = report["refused"]
    assert refused["source"] == str(other)
    digest = entry["bundle_digest"]
    said = f"holds the bytes of bundle {digest} but not the signature of {honest} that the "
    assert refused["reason"].startswith(said + "command's --identity verified: signature failed: ")
    assert report["counts"] == {"bundles": 1, "failed": 0, "passed": 1, "refused": 1,
                                "sources": 2}  # fmt: skip


def test_copies_both_signed_by_the_identity_are_both_its_sources(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Signed twice by the identity (two signature files, both verified): under the policy the
    copy verifies as the bundle does and is one of its sources; without a policy neither
    signature is checked, and the copy is refused as signed otherwise, as before."""
    honest, other = _signed_twice(tmp_path / "archive", instance, trust, "a-copy", WHO)
    assert (honest / MANIFEST_SIGNATURE).read_bytes() != (other / MANIFEST_SIGNATURE).read_bytes()
    local, dasked = reports_on_both_engines(
        sorted(honest.parent.iterdir()), _identity_policy(trust), dask_client
    )
    assert local == dasked
    report = json.loads(local)
    assert report["refused"] == []
    (entry,) = report["bundles"]
    assert entry["signature"] == "verified" and entry["sources"] == [str(other), str(honest)]
    capsysbinary.readouterr()  # what signing said
    assert main(["verify-archive", str(honest.parent), "--json"]) == 1
    unchecked = json.loads(capsysbinary.readouterr().out)
    (refused,) = unchecked["refused"]
    assert "but other signature files than" in refused["reason"]
