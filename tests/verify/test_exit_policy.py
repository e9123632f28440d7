"""One exit policy (ADR 0019): a defect of a bundle's bytes is a failed check (1) wherever it is
found; a refused request (2) judged nothing. verify.policy is the one decision, for the CLI and a
library caller alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audit.cli import main
from bundle_schema.errors import CheckFailed, DefectiveBundle, InvalidInput
from tests.data.hostile.generate import M, craft
from verify import HostileArchive, verify_bundle
from verify.policy import REQUIREMENTS, failed_check, unmet_requirement


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_defective_bundle_is_a_failed_check_in_the_exception_tree() -> None:
    assert issubclass(HostileArchive, DefectiveBundle)
    assert issubclass(DefectiveBundle, CheckFailed)
    assert DefectiveBundle("x").exit_code == 1
    assert InvalidInput("x").exit_code == 2


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda data: data + b"x", "manifest.json: "),  # no longer one JSON document
        (lambda data: data.replace(b'{"claims"', b'{ "claims"', 1), "not RFC 8785 canonical"),
        (
            lambda data: data.replace(b'"schema_version":1', b'"schema_version":"1"', 1),
            "is not a version number",
        ),
    ],
    ids=["trailing byte", "not canonical", "version not a number"],
)
def test_one_changed_manifest_byte_is_exit_1_like_one_changed_blob_byte(
    full_bundle: Path, capsys: pytest.CaptureFixture[str], change: object, fragment: str
) -> None:
    manifest = full_bundle / "manifest.json"
    manifest.write_bytes(change(manifest.read_bytes()))  # type: ignore[operator]
    code, out, err = _run(["verify", str(full_bundle), "--json"], capsys)
    assert code == 1
    assert out == ""  # no verdict can be formed without a manifest
    assert err.startswith(f"audit verify: {full_bundle}: manifest.json: ") and fragment in err
    assert err.count("\n") == 1


def test_a_newer_manifest_version_is_a_refusal(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = full_bundle / "manifest.json"
    data = manifest.read_bytes().replace(b'"schema_version":1', b'"schema_version":2', 1)
    manifest.write_bytes(data)
    code, _, err = _run(["verify", str(full_bundle)], capsys)
    assert code == 2
    assert "a newer evidence-audit may read it" in err


def test_a_hostile_tar_is_exit_1_for_verify_and_unpack(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tar = tmp_path / "b.tar"
    craft(tar, small_bundle, [M("../escape.txt", data=b"x")])  # a member that climbs out
    for argv in (["verify", str(tar)], ["unpack", str(tar), "-o", str(tmp_path / "out")]):
        code, _, err = _run(argv, capsys)
        assert code == 1, err
        assert "'../escape.txt' climbs out" in err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape.txt").exists()


def test_a_folder_of_bundles_is_told_to_use_rank(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "published"
    folder.mkdir()
    shutil.copytree(built_examples["gx10-smoke"], folder / "smoke")
    assert main(["pack", str(folder / "smoke"), "-o", str(folder / "smoke.tar")]) == 0
    capsys.readouterr()
    code, _, err = _run(["verify", str(folder)], capsys)
    assert code == 2
    assert err == (
        f"audit verify: {folder}: a folder holding 2 bundle directories or tars, not a bundle; "
        f"verify each of them with: audit rank {folder}\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _run(["verify", str(empty)], capsys)
    assert (code, "no manifest.json; not a sealed bundle" in err) == (2, True)


def test_the_policy_is_the_clis_decision(full_bundle: Path) -> None:
    verdict = verify_bundle(full_bundle).verdict
    assert failed_check(verdict) is None
    assert unmet_requirement(verdict, ["valid", "qualified"]) is None
    unmet = failed_check(verdict, ["rankable"])
    assert unmet is not None and unmet.startswith("requirement not met: rankable: not rankable: ")
    assert unmet_requirement(verdict, ["signed"]) == "signed: the bundle is unsigned"
    with pytest.raises(InvalidInput, match="unknown requirement 'ranked'"):
        unmet_requirement(verdict, ["ranked"])
    assert set(REQUIREMENTS) == {"rankable", "qualified", "valid", "signed"}
    blob = next((full_bundle / "blobs" / "sha256").iterdir())
    blob.write_bytes(blob.read_bytes() + b"\n")
    tampered = verify_bundle(full_bundle).verdict
    failed = failed_check(tampered, ["rankable"])
    assert failed is not None and failed.startswith("integrity failed: 1 finding(s); first: ")


def test_one_verification_holds_what_every_command_needs(full_bundle: Path) -> None:
    """verify_bundle returns the verdict with the manifest, the pin set it was judged by and the
    evidence the replay read: no command reads the manifest or loads the pins again."""
    done = verify_bundle(full_bundle)
    assert done.manifest.bundle_digest == done.verdict.bundle_digest
    assert (done.pins.id, done.pins.digest) == (
        done.verdict.pin_set.id,
        done.verdict.pin_set.digest,
    )
    assert (done.integrity, done.signature) == (done.verdict.integrity, done.verdict.signature)
    assert done.failed_check() is None and done.failed_check(["rankable"]) is not None
    whole = verify_bundle(full_bundle, keep_evidence=True)
    assert whole.verdict == done.verdict  # the same decision, bounded or not (ADR 0012)

    def kept(exchanges: object) -> int:  # the bytes of the exchanges kept, as JSON
        return sum(len(e.model_dump_json()) for e in exchanges or ())  # type: ignore[attr-defined]

    assert kept(done.evidence.transport) < kept(whole.evidence.transport)  # reduced to facts
