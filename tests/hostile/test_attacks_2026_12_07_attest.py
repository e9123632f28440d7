"""Hostile tests of 2026-12-07: the verdict as a Statement (``audit verify --attest``), as a SLSA
Verification Summary (``audit verify --vsa``), ``audit sign --statement`` and ``audit
verify-attestation`` (``audit/cli/signing.py``, ``audit/cli/bundle.py``,
``bundle_schema/attestation.py``, ``verify/_signature.py``; ADR 0023, docs/signing.md).

The attacker is a publisher (every byte of the bundle, a signing identity of their own on the
private test Sigstore instance, write access to the directory a bundle is verified from), or
someone who hands an auditor or a third party a verdict, summary or attestation file. Signatures
are made by the private instance (tests/private_sigstore.py) on 127.0.0.1 and checked by the
unmodified sigstore Verifier, offline.

Holes (strict xfails against aaa889a; all six closed in the commit that added this file, each
test now asserting the fixed behaviour: ``_verify_again`` takes no empty identity or issuer
from the attested verdict; ``verify-attestation --pins`` needs ``--bundle``; the resource URI
is bounded by ``_published_uri`` and, derived, by ``summarized``, which also resolves the path
before the verification and has the resolved path read; ``output_target`` refuses an output
whose directory does not exist; ``_outputs`` refuses an output that is the ``--pins`` or
``--trusted-root`` file read):

1. ``audit verify-attestation --bundle`` re-verifies the bundle's signature under the identity and
   issuer the *attested* verdict names (``_verify_again``), without the rule ``policy_from``
   applies to ``--issuer`` (not empty): an attestation whose verdict was edited to say
   ``signature.issuer: ""`` (self-consistent, signed by the auditor) is confirmed ("this
   verifier reaches the attested verdict", exit 0) for a bundle signed by the right e-mail
   through *another* OIDC issuer, because sigstore's ``Identity(issuer="")`` skips the issuer.
   ``audit verify --issuer ""`` is refused (exit 2) since 2026-12-05; this path brings it back.
2. ``verify-attestation --pins`` without ``--bundle`` is ignored, even a file that does not exist
   (exit 0): an option that does nothing, which the CLI refuses elsewhere (``--resource-uri``
   without ``--vsa``, a trust root without an identity).
3. A ``--resource-uri`` over 4096 characters is accepted by ``_published_uri`` and then fails the
   model (``VsaStatement``, ``max_length=4096``) after the verification: a pydantic
   ``ValidationError`` traceback, with ``--attest`` already written. The same traceback for a
   bundle whose path's ``file:`` URI is over 4096 characters (a path of 1,600 spaces: a
   ``file:`` URI triples each), where the operator gave no URI at all.
4. The summary's ``resourceUri`` is ``Path(bundle).resolve()`` taken *after* the verification
   (``_resource_uri``): a publisher who can repoint a directory symlink on the path in between
   gets a summary naming a tar that was never verified (the subject still the one verified). The
   class of 2026-12-05's hole 5 (a second read of the file system after the check).
5. An output that cannot be written (``--vsa`` into a directory that does not exist) is refused
   (exit 2) only after the verification, and the outputs written before it (``--attest``,
   ``--evidence-out``) stay: a refusal that leaves outputs (``audit/_store.py`` ``output_target``,
   used by ``audit/cli/bundle.py`` ``_outputs``, does not check the parent directory).
6. ``--vsa`` naming the ``--pins`` file the command reads (``--attest`` and ``--evidence-out``
   pass the same check) replaces the pin set with the summary, exit 0, not a word (``_outputs``
   checks the outputs against each other and the bundle, not against the command's inputs;
   ``audit sign --statement`` refuses to write over the Statement it reads since 2026-12-06).

Decisions (strict xfails, reason "DECISION: ..."):

- ``audit sign --statement`` writes the Statement again from the verdict inside it, but never
  verifies the bundle: a summary forged whole (a verdict edited to rankable, its signature to
  ``verified``, an input attestation digest of the forger's choosing, PASSED) is signed.
- A ``--pins`` file may take a shipped pin set's id: the summary of a run judged by it was PASSED
  under ``urn:evidence-audit:pin-set:gx10-qualification-v5``, only the digest telling it from the
  shipped one (SLSA consumers commonly read ``policy.uri`` only, if at all). Decided 2026-12-08:
  such a pin set still judges, but nothing ranks under it (``pins.takes_a_shipped_id``, a rank
  blocker and a reason ``audit rank`` sets every run apart for), so its summary is FAILED; the
  test now asserts that.
- ``audit verify --require signed --vsa`` on an unsigned rankable bundle exits 1 and writes a
  PASSED summary (PASSED is what ``--require rankable`` alone exits 0 for).
- ``verify-attestation --bundle`` exits 0 for a genuine attestation of a bundle that fails its
  check (integrity failed): it answers "is this the verdict?", not "did the bundle pass?".
- ``audit verify --vsa``/``--attest`` replace an existing file silently (a rename over it);
  ``audit sign --statement`` asks for ``--replace``.

Held (passing tests): a summary is FAILED for the real recorded bundle (INFRA_ERROR), for a
rankable run judged by a demo-only pin set, by a pin set it does not name, with another
``--expect-digest``, or with a signature that failed; its subject is always the bytes verified
and its policy the pin set applied; ``inputAttestations`` names a signature only when it verified
under the identity given, by the digest of the bytes read; the same bundle gives the same summary
and Statement bytes from a directory, a tar, a URL and any ``--workers`` (only ``timeVerified``
differs without ``SOURCE_DATE_EPOCH``); ``audit sign --statement`` refuses a summary whose
embedded verdict, levels, input attestations or subjects disagree, or that is not canonical;
``verify-attestation`` refuses a signed summary (another predicate type), two subjects, a
non-canonical Statement, another DSSE payload type, another bundle, and answers malformed,
empty, huge or directory inputs with one line and no traceback, and re-checks the
recorded bundle only under a pin set it has (its own file; without ``--pins`` a refusal
naming the pin set, with a shipped one a difference); a summary is never written over
or into the bundle it reads, and its subject is the bytes verified even when the bundle
directory is replaced after the verification.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import audit.cli.bundle as cli_bundle
from audit._archive import pack
from audit.cli import main
from audit.demo.examples import ExampleRun, build_example, example_runs
from bundle_schema import canonical_bytes
from bundle_schema.attestation import (
    bundle_statement,
    verification_statement,
    verification_summary,
)
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import Verdict
from pins import load_builtin, parse_pin_set
from tests.audit.test_signing import WHO
from tests.conftest import DEPLOYMENT_PINS
from tests.factories import write_small_bundle
from tests.http_range import serve, url_of
from tests.paths import EXAMPLES
from tests.private_sigstore import ISSUER, PrivateSigstore, Services
from tests.sigstore_kit import trust_files
from verify import Verification, open_source, parse_manifest, verify_bundle

pytestmark = pytest.mark.usefixtures("private_home")

AUDITOR = "auditor@test.local"
OTHER_ISSUER = "https://evil.test"
RECORDED = EXAMPLES / "recorded" / "llamacpp-smollm2-135m-bfcl-draw.tar"
RECORDED_PINS = EXAMPLES / "recorded" / "gx10-qualification-v5-bfcl-draw.toml"
EPOCH = "1796000000"
SHIPPED_V5 = "gx10-qualification-v5"


# --- fixtures and helpers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def trust(
    tmp_path_factory: pytest.TempPathFactory, instance: PrivateSigstore, services: Services
) -> dict[str, str]:
    return trust_files(tmp_path_factory.mktemp("trust"), instance, services)


def _example(out: Path, work: Path, pins_text: str | None, *, claim_rankable: bool) -> Path:
    """The full-profile qualified example, recorded under ``pins_text`` (default: the demo-only
    pin set its run.toml names), its runner claiming rankable when ``claim_rankable``."""
    run = next(r for r in example_runs() if r.name == "gx10-full-qualified")
    copy = work / "run"
    shutil.copytree(run.path, copy)
    if claim_rankable:
        meta = copy / "run.toml"
        text = meta.read_text("utf-8")
        meta.write_text(text.replace("rankable = false", "rankable = true", 1), "utf-8")
    pins = None if pins_text is None else parse_pin_set(pins_text.encode(), "pins.toml")
    build_example(ExampleRun(run.name, copy), out, work / "upstreams", pins=pins)
    return out


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run a deployment records under its own pin set (DEPLOYMENT_PINS): rankable. Unsigned;
    copy it before changing it."""
    work = tmp_path_factory.mktemp("ranked-work")
    out = tmp_path_factory.mktemp("ranked") / "bundle"
    return _example(out, work, DEPLOYMENT_PINS.read_text("utf-8"), claim_rankable=True)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


def _manifest_hex(bundle: Path) -> str:
    return parse_manifest(open_source(bundle).manifest_bytes()).bundle_digest[7:]


def _plant_signature(bundle: Path, signer: PrivateSigstore, issuer: str = ISSUER) -> bytes:
    """The publisher signs the bundle as WHO (through ``issuer``), as ``audit sign`` would."""
    manifest = parse_manifest(open_source(bundle).manifest_bytes())
    signature = signer.sign_dsse(
        bundle_statement(manifest.model, manifest.bundle_digest), identity=WHO, issuer=issuer
    )
    (bundle / MANIFEST_SIGNATURE).parent.mkdir(exist_ok=True)
    (bundle / MANIFEST_SIGNATURE).write_bytes(signature)
    return signature


def _policy(root: str, who: str = WHO, issuer: str = ISSUER) -> list[str]:
    return ["--identity", who, "--issuer", issuer, "--trusted-root", root]


def _one_line(code: int, err: str, *codes: int) -> None:
    """A refusal or a failed check: the exit code expected, one line, no traceback."""
    assert code in codes, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err


# --- what a Verification Summary says: PASSED only when every check passed ------------------


def test_the_recorded_bundle_is_summarised_as_failed_under_the_pin_set_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real recorded run (INFRA_ERROR, not rankable): FAILED, its subject the tar's manifest,
    its policy the pin set applied (the file given, then a shipped one the bundle does not name),
    no input attestation, and the embedded verdict the one printed."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    recorded_pins = parse_pin_set(RECORDED_PINS.read_bytes(), str(RECORDED_PINS))
    digest = hashlib.sha256(open_source(RECORDED).manifest_bytes()).hexdigest()
    for pins, applied in (
        (str(RECORDED_PINS), recorded_pins),
        (SHIPPED_V5, load_builtin(SHIPPED_V5)),
    ):
        vsa, attest = tmp_path / "vsa.json", tmp_path / "attest.json"
        argv = ["verify", str(RECORDED), "--pins", pins, "--vsa", str(vsa), "--attest", str(attest)]
        code, out, err = _cli([*argv, "--json"], capsys)
        verdict = json.loads(out)
        assert code in (0, 1), err
        statement = _summary(vsa)
        predicate = statement["predicate"]
        assert statement["subject"] == [{"name": "manifest.json", "digest": {"sha256": digest}}]
        assert (predicate["verificationResult"], predicate["verifiedLevels"]) == (
            "FAILED", ["FAILED"]
        )  # fmt: skip
        assert predicate["policy"] == {
            "uri": f"urn:evidence-audit:pin-set:{applied.id}",
            "digest": {"sha256": applied.digest[7:]},
        }
        assert predicate["inputAttestations"] == []
        assert predicate["evidenceAuditVerdict"] == verdict
        assert _summary(attest)["predicate"]["verdict"] == verdict
        assert verdict["rankable"] is False


@pytest.mark.parametrize(
    ("extra", "result"),
    [
        pytest.param(("--pins", str(DEPLOYMENT_PINS)), "PASSED", id="honest"),
        pytest.param(
            ("--pins", str(DEPLOYMENT_PINS), "--expect-digest", "sha256:" + "c" * 64),
            "FAILED",
            id="not-the-published-digest",
        ),
        pytest.param(("--pins", SHIPPED_V5), "FAILED", id="a-pin-set-it-does-not-name"),
        pytest.param(("--pins", "gx10-reference-v5"), "FAILED", id="a-demo-only-pin-set"),
    ],
)
def test_a_rankable_run_is_passed_only_when_every_check_passes(
    ranked: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    result: str,
) -> None:
    vsa = tmp_path / "vsa.json"
    code, out, err = _cli(["verify", str(ranked), *extra, "--vsa", str(vsa), "--json"], capsys)
    assert code == (0 if result == "PASSED" else 1), err
    verdict = json.loads(out)
    predicate = _summary(vsa)["predicate"]
    assert predicate["verificationResult"] == result
    assert predicate["evidenceAuditVerdict"] == verdict
    assert predicate["policy"]["uri"] == f"urn:evidence-audit:pin-set:{verdict['pin_set']['id']}"
    # the subject is the bytes verified, never the digest the operator expected
    assert _summary(vsa)["subject"][0]["digest"]["sha256"] == _manifest_hex(ranked)


def test_a_run_judged_by_its_demo_only_pin_set_is_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """QUALIFIED, VALID, MEETS_PROFILE, claims matching, but under the demo-only pin set it names:
    never ranked, so FAILED."""
    bundle = _example(tmp_path / "demo", tmp_path, None, claim_rankable=False)
    vsa = tmp_path / "vsa.json"
    code, out, err = _cli(["verify", str(bundle), "--vsa", str(vsa), "--json"], capsys)
    verdict = json.loads(out)
    assert code == 0, err
    assert (verdict["outcome"], verdict["claims"]["match"], verdict["rankable"]) == (
        "QUALIFIED", True, False
    )  # fmt: skip
    assert _summary(vsa)["predicate"]["verificationResult"] == "FAILED"


@pytest.mark.parametrize(
    ("who", "other_instance", "result", "named"),
    [
        pytest.param(WHO, False, "PASSED", True, id="verified"),
        pytest.param(None, False, "PASSED", False, id="unchecked"),
        pytest.param("mallory@test.local", False, "FAILED", False, id="another-signer"),
        pytest.param(WHO, True, "FAILED", False, id="another-instance"),
    ],
)
def test_input_attestations_name_only_a_signature_that_verified(  # noqa: PLR0917
    ranked: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    who: str | None,
    other_instance: bool,
    result: str,
    named: bool,
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(ranked, bundle)
    signer = PrivateSigstore(name="other.local") if other_instance else instance
    signature = _plant_signature(bundle, signer)
    vsa = tmp_path / "vsa.json"
    policy = _policy(trust["root"], who) if who is not None else []
    argv = ["verify", str(bundle), "--pins", str(DEPLOYMENT_PINS), *policy, "--vsa", str(vsa)]
    code, _, err = _cli(argv, capsys)
    assert code == (0 if result == "PASSED" else 1), err
    predicate = _summary(vsa)["predicate"]
    assert predicate["verificationResult"] == result
    expected = [
        {"uri": MANIFEST_SIGNATURE, "digest": {"sha256": hashlib.sha256(signature).hexdigest()}}
    ]
    assert predicate["inputAttestations"] == (expected if named else [])


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: audit verify --require signed --vsa on an unsigned rankable bundle exits 1 "
    "and still writes verificationResult PASSED: PASSED is defined as what --require rankable "
    "alone exits 0 for (ADR 0023; audit/cli/signing.py _summary uses failed_check(verdict, "
    "['rankable']), not the command's --require)",
)
def test_a_summary_is_not_passed_when_its_command_fails_a_requirement(
    ranked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vsa = tmp_path / "vsa.json"
    argv = ["verify", str(ranked), "--pins", str(DEPLOYMENT_PINS), "--require", "signed"]
    code, _, err = _cli([*argv, "--vsa", str(vsa)], capsys)
    assert code == 1, err
    assert not vsa.exists() or _summary(vsa)["predicate"]["verificationResult"] == "FAILED"


def test_a_pin_set_file_cannot_pass_under_a_shipped_pin_sets_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DEPLOYMENT_PINS.read_text("utf-8")
    text = text.replace('id = "gx10-deployment-v5"', f'id = "{SHIPPED_V5}"', 1)
    assert f'id = "{SHIPPED_V5}"' in text
    lookalike = tmp_path / "gx10-qualification-v5.toml"
    lookalike.write_text(text, "utf-8")
    bundle = _example(tmp_path / "bundle", tmp_path, text, claim_rankable=True)
    vsa = tmp_path / "vsa.json"
    code, _, _ = _cli(["verify", str(bundle), "--pins", str(lookalike), "--vsa", str(vsa)], capsys)
    if code == 2:  # refused: as safe
        assert not vsa.exists()
        return
    predicate = _summary(vsa)["predicate"]
    shipped = load_builtin(SHIPPED_V5)
    assert predicate["policy"]["digest"]["sha256"] != shipped.digest[7:]
    assert predicate["verificationResult"] != "PASSED" or predicate["policy"]["uri"] != (
        f"urn:evidence-audit:pin-set:{SHIPPED_V5}"
    )


# --- determinism --------------------------------------------------------------------------------


def test_one_bundle_gives_one_summary_from_a_directory_a_tar_and_a_url(
    ranked: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With SOURCE_DATE_EPOCH and one --resource-uri: the same summary and Statement bytes from
    the directory, its tar, its tar by URL, and any number of hashing workers."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    published = tmp_path / "published"
    published.mkdir()
    pack(ranked, published / "run.tar")
    common = ["--pins", str(DEPLOYMENT_PINS), "--resource-uri", "https://e.test/run.tar"]
    written: list[tuple[bytes, bytes]] = []
    with serve(published) as server:
        sources = [
            (str(ranked), ()),
            (str(ranked), ("--workers", "1")),
            (str(published / "run.tar"), ()),
            (url_of(server, published / "run.tar"), ("--workers", "2")),
        ]
        for i, (source, extra) in enumerate(sources):
            vsa, attest = tmp_path / f"vsa{i}.json", tmp_path / f"attest{i}.json"
            argv = ["verify", source, *common, *extra, "--vsa", str(vsa), "--attest", str(attest)]
            code, _, err = _cli(argv, capsys)
            assert code == 0, err
            written.append((vsa.read_bytes(), attest.read_bytes()))
    assert len(set(written)) == 1
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    later = []
    for i in range(2):
        vsa = tmp_path / f"now{i}.json"
        assert _cli(["verify", str(ranked), *common, "--vsa", str(vsa)], capsys)[0] == 0
        statement = _summary(vsa)
        del statement["predicate"]["timeVerified"]  # documented: the one field of the clock
        later.append(statement)
    first = _summary(tmp_path / "vsa0.json")
    del first["predicate"]["timeVerified"]
    assert later[0] == later[1] == first


# --- where the summary says the bundle is -------------------------------------------------------


def test_the_resource_uri_names_the_file_that_was_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    honest, other = tmp_path / "releases-a", tmp_path / "releases-b"
    for folder, run_id in ((honest, "run-1"), (other, "run-2")):
        folder.mkdir()
        write_small_bundle(tmp_path / run_id, run_id=run_id)
        pack(tmp_path / run_id, folder / "run.tar")
    current = tmp_path / "current"
    current.symlink_to(honest.name)

    def verify_then_repoint(*args: Any, **kwargs: Any) -> Verification:
        done = verify_bundle(*args, **kwargs)
        current.unlink()
        current.symlink_to(other.name)  # the publisher's write into the shared directory
        return done

    monkeypatch.setattr(cli_bundle, "verify_bundle", verify_then_repoint)
    vsa = tmp_path / "vsa.json"
    code, _, err = _cli(["verify", str(current / "run.tar"), "--vsa", str(vsa)], capsys)
    assert code == 0, err
    statement = _summary(vsa)
    assert statement["subject"][0]["digest"]["sha256"] == _manifest_hex(honest / "run.tar")
    assert statement["predicate"]["resourceUri"] != (other / "run.tar").resolve().as_uri()


# --- odd input: one line, never a traceback -------------------------------------------------------


def test_an_overlong_resource_uri_is_refused_in_one_line(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vsa, attest = tmp_path / "vsa.json", tmp_path / "attest.json"
    uri = "https://e.test/" + "a" * 5000
    argv = ["verify", str(small_bundle), "--vsa", str(vsa), "--attest", str(attest)]
    code, _, err = _cli([*argv, "--resource-uri", uri], capsys)
    _one_line(code, err, 2)
    assert "--resource-uri" in err
    assert not vsa.exists() and not attest.exists()


def test_a_bundle_with_a_long_path_gets_a_summary_or_one_line(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path
    for _ in range(8):
        deep /= " " * 200
    deep.mkdir(parents=True)
    shutil.copytree(small_bundle, deep / "run")
    vsa = tmp_path / "vsa.json"
    code, _, err = _cli(["verify", str(deep / "run"), "--vsa", str(vsa)], capsys)
    if code == 0:
        assert _summary(vsa)["predicate"]["verificationResult"] == "FAILED"
        return
    _one_line(code, err, 2)


ODD_FILES: dict[str, bytes | None] = {
    "empty": b"",
    "null": b"null",
    "not-utf8": b"\xff\xfe{",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge-number": b"9" * 5000,
    "bare": b'{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}',
    "over-4-MiB": b" " * (5 << 20),
    "a-directory": None,
    "missing": None,
}


@pytest.mark.parametrize("case", list(ODD_FILES))
def test_verify_attestation_answers_any_file_in_one_line(
    trust: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    target = tmp_path / "attestation.sigstore.json"
    content = ODD_FILES[case]
    if case == "a-directory":
        target.mkdir()
    elif content is not None:
        target.write_bytes(content)
    code, out, err = _cli(
        ["verify-attestation", str(target), *_policy(trust["root"], AUDITOR)], capsys
    )
    _one_line(code, err, 1, 2)
    assert "re-verified" not in out and "attests bundle" not in out


# --- audit sign --statement -------------------------------------------------------------------


def _vsa_of_small_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    vsa = tmp_path / "vsa.json"
    assert _cli(["verify", str(bundle), *extra, "--vsa", str(vsa)], capsys)[0] == 0
    return _summary(vsa)


def _verdict_rankable(statement: dict[str, Any]) -> None:
    statement["predicate"]["evidenceAuditVerdict"]["rankable"] = True


def _levels_only(statement: dict[str, Any]) -> None:
    statement["predicate"]["verifiedLevels"] = ["EVIDENCE_AUDIT_RANKABLE"]


def _claimed_input(statement: dict[str, Any]) -> None:
    statement["predicate"]["inputAttestations"] = [
        {"uri": MANIFEST_SIGNATURE, "digest": {"sha256": "ab" * 32}}
    ]


def _two_subjects(statement: dict[str, Any]) -> None:
    statement["subject"].append({"name": "manifest.json", "digest": {"sha256": "cd" * 32}})


def _verdict_of_other_bundle(statement: dict[str, Any]) -> None:
    statement["predicate"]["evidenceAuditVerdict"]["bundle_digest"] = "sha256:" + "cd" * 32


@pytest.mark.parametrize(
    "edit",
    [_verdict_rankable, _levels_only, _claimed_input, _two_subjects, _verdict_of_other_bundle],
    ids=["verdict-rankable", "levels-only", "claimed-input", "two-subjects", "verdict-other"],
)
def test_a_summary_whose_parts_disagree_is_not_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any
) -> None:
    """Refused (exit 2, one line naming the Statement) before any identity token is looked at."""
    statement = _vsa_of_small_bundle(tmp_path, capsys)
    edit(statement)
    edited = tmp_path / "edited.json"
    edited.write_bytes(canonical_bytes(statement))
    argv = ["sign", "--statement", str(edited), "--identity-token", "x.y.z"]
    code, _, err = _cli(argv, capsys)
    _one_line(code, err, 2)
    assert str(edited) in err and "identity token" not in err
    assert not Path(f"{edited}.sigstore.json").exists()


def test_a_summary_that_is_not_canonical_is_not_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "pretty.json"
    edited.write_text(json.dumps(_vsa_of_small_bundle(tmp_path, capsys), indent=2))
    code, _, err = _cli(["sign", "--statement", str(edited), "--identity-token", "x.y.z"], capsys)
    _one_line(code, err, 2)
    assert "canonical" in err
    assert not Path(f"{edited}.sigstore.json").exists()


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: audit sign --statement writes the summary again from the verdict inside "
    "it (audit/cli/signing.py _as_written) but never verifies the bundle: a summary forged "
    "whole (verdict edited to rankable with a verified signature, an input attestation digest "
    "of the forger's choosing, PASSED) is signed, and stock sigstore then accepts it for the "
    "bundle (ADR 0023: 'this one signs what this verifier concluded')",
)
def test_a_summary_forged_whole_is_not_signed(
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    statement = _vsa_of_small_bundle(tmp_path, capsys)
    predicate = statement["predicate"]
    verdict = predicate["evidenceAuditVerdict"]
    assert predicate["verificationResult"] == "FAILED"
    verdict["rankable"] = True
    verdict["signature"] = {
        "status": "verified", "identity": WHO, "issuer": ISSUER, "reason": None,
        "integrated_time": "2026-12-01T00:00:00Z", "trusted_root": "sha256:" + "ee" * 32,
    }  # fmt: skip
    predicate.update(verificationResult="PASSED", verifiedLevels=["EVIDENCE_AUDIT_RANKABLE"])
    predicate["inputAttestations"] = [{"uri": MANIFEST_SIGNATURE, "digest": {"sha256": "ab" * 32}}]
    forged = tmp_path / "forged.json"
    forged.write_bytes(canonical_bytes(statement))
    argv = ["sign", "--statement", str(forged), "--trust-config", trust["config"]]
    code, _, _ = _cli([*argv, "--identity-token", instance.mint_token(AUDITOR)], capsys)
    assert code != 0
    assert not Path(f"{forged}.sigstore.json").exists()


# --- audit verify-attestation -------------------------------------------------------------------


def _attestation_of(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> bytes:
    attest = tmp_path / "attest.json"
    code, _, err = _cli(["verify", str(bundle), *extra, "--attest", str(attest)], capsys)
    assert code in (0, 1), err
    return attest.read_bytes()


def _check(signature: Path, root: str, *extra: str) -> list[str]:
    return ["verify-attestation", str(signature), *_policy(root, AUDITOR), *extra]


def _as_vsa(statement: bytes, bundle: Path) -> bytes:
    """The summary audit verify --vsa writes for the verdict ``statement`` attests."""
    verdict = Verdict.model_validate(json.loads(statement)["predicate"]["verdict"])
    return verification_summary(
        verdict,
        passed=False,
        time_verified="2026-12-07T00:00:00Z",
        resource_uri=bundle.resolve().as_uri(),
        signature=None,
    )


def _second_subject(statement: bytes, bundle: Path) -> bytes:
    value = json.loads(statement)
    value["subject"].insert(0, {"name": "manifest.json", "digest": {"sha256": "cd" * 32}})
    return canonical_bytes(value)


def _pretty(statement: bytes, bundle: Path) -> bytes:
    return json.dumps(json.loads(statement), indent=1).encode()


@pytest.mark.parametrize(
    ("make", "payload_type", "said"),
    [
        pytest.param(_as_vsa, None, "predicateType", id="a-verification-summary"),
        pytest.param(_second_subject, None, "subject", id="two-subjects"),
        pytest.param(_pretty, None, "canonical", id="not-canonical"),
        pytest.param(None, "application/json", "payload type", id="another-payload-type"),
        pytest.param(None, None, "not this bundle", id="another-bundle"),
    ],
)
def test_verify_attestation_refuses_what_is_not_an_attestation_of_this_bundle(  # noqa: PLR0917
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Any,
    payload_type: str | None,
    said: str,
) -> None:
    bundle, other = tmp_path / "a", tmp_path / "b"
    write_small_bundle(bundle)
    write_small_bundle(other, run_id="run-2")
    statement = _attestation_of(bundle, tmp_path, capsys)
    payload = statement if make is None else make(statement, bundle)
    options = {} if payload_type is None else {"payload_type": payload_type}
    signature = tmp_path / "attestation.sigstore.json"
    signature.write_bytes(instance.sign_dsse(payload, identity=AUDITOR, **options))
    target = other if said == "not this bundle" else bundle
    argv = [*_check(signature, trust["root"], "--bundle", str(target)), "--json"]
    code, out, err = _cli(argv, capsys)
    _one_line(code, err, 1)
    assert "signature failed" in err and said in err
    report = json.loads(out)
    assert report["signature"]["status"] == "failed" and report["verdict"] is None


def test_verify_attestation_refuses_pins_it_would_not_use(
    instance: PrivateSigstore,
    trust: dict[str, str],
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    signature = tmp_path / "attestation.sigstore.json"
    statement = _attestation_of(small_bundle, tmp_path, capsys)
    signature.write_bytes(instance.sign_dsse(statement, identity=AUDITOR))
    missing = tmp_path / "no-such-pins.toml"
    code, _, err = _cli(_check(signature, trust["root"], "--pins", str(missing)), capsys)
    _one_line(code, err, 2)
    assert "--pins" in err


def test_an_attested_empty_issuer_is_not_confirmed(
    instance: PrivateSigstore,
    trust: dict[str, str],
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _plant_signature(small_bundle, instance, issuer=OTHER_ISSUER)
    code, _, _ = _cli(["verify", str(small_bundle), *_policy(trust["root"])], capsys)
    assert code == 1  # under the issuer it claims, the signature fails
    argv = ["verify", str(small_bundle), *_policy(trust["root"], issuer=OTHER_ISSUER), "--json"]
    code, out, err = _cli(argv, capsys)
    assert code == 0, err
    verdict = json.loads(out)
    verdict["signature"]["issuer"] = ""  # edited before the auditor signed it
    statement = verification_statement(Verdict.model_validate(verdict))
    signature = tmp_path / "attestation.sigstore.json"
    signature.write_bytes(instance.sign_dsse(statement, identity=AUDITOR))
    code, out, err = _cli(_check(signature, trust["root"], "--bundle", str(small_bundle)), capsys)
    assert code != 0
    assert "reaches the attested verdict" not in out


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: verify-attestation --bundle exits 0 for a genuine attestation of a bundle "
    "that fails its check (integrity failed; audit verify exits 1 for it): it answers 'is this "
    "the verdict this verifier reaches?', and only --require (valid, rankable, qualified) asks "
    "more (docs/signing.md)",
)
def test_verify_attestation_of_a_bundle_that_fails_its_check_is_not_a_pass(
    instance: PrivateSigstore,
    trust: dict[str, str],
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blob = next(
        p for p in sorted((small_bundle / "blobs" / "sha256").iterdir()) if p.stat().st_size
    )
    blob.write_bytes(blob.read_bytes() + b" ")
    statement = _attestation_of(small_bundle, tmp_path, capsys)
    assert json.loads(statement)["predicate"]["verdict"]["integrity"]["status"] == "failed"
    signature = tmp_path / "attestation.sigstore.json"
    signature.write_bytes(instance.sign_dsse(statement, identity=AUDITOR))
    code, _, err = _cli(_check(signature, trust["root"], "--bundle", str(small_bundle)), capsys)
    assert code == 1, err


def test_the_recorded_bundles_attestation_is_checked_under_the_pin_set_given(
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The attested pin set is not shipped: without --pins a refusal naming it (exit 2), with
    the file it was judged by the verdict is reached again, with a shipped one it differs."""
    statement = _attestation_of(RECORDED, tmp_path, capsys, "--pins", str(RECORDED_PINS))
    signature = tmp_path / "attestation.sigstore.json"
    signature.write_bytes(instance.sign_dsse(statement, identity=AUDITOR))
    check = _check(signature, trust["root"], "--bundle", str(RECORDED))
    code, _, err = _cli(check, capsys)
    _one_line(code, err, 2)
    assert "gx10-qualification-v5-bfcl-draw" in err
    code, out, err = _cli([*check, "--pins", str(RECORDED_PINS)], capsys)
    assert code == 0, err
    assert "this verifier reaches the attested verdict" in out
    code, _, err = _cli([*check, "--pins", SHIPPED_V5], capsys)
    _one_line(code, err, 1)
    assert "pin_set.id" in err


# --- where the outputs go -----------------------------------------------------------------------


def test_a_summary_never_replaces_the_pin_set_it_read(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = tmp_path / "pins.toml"
    shutil.copyfile(RECORDED_PINS, pins)
    before = pins.read_bytes()
    code, _, err = _cli(
        ["verify", str(small_bundle), "--pins", str(pins), "--vsa", str(pins)], capsys
    )
    assert pins.read_bytes() == before
    _one_line(code, err, 2)


def test_an_output_that_cannot_be_written_leaves_no_other(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attest, vsa = tmp_path / "attest.json", tmp_path / "missing" / "vsa.json"
    argv = ["verify", str(small_bundle), "--attest", str(attest), "--vsa", str(vsa)]
    code, _, err = _cli(argv, capsys)
    _one_line(code, err, 2)
    assert not attest.exists()


def test_a_summary_is_never_written_over_or_into_the_bundle(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tar = tmp_path / "run.tar"
    pack(small_bundle, tar)
    before = tar.read_bytes()
    for bundle, target in ((tar, tar), (small_bundle, small_bundle / "vsa.json")):
        code, _, err = _cli(["verify", str(bundle), "--vsa", str(target)], capsys)
        _one_line(code, err, 2)
        assert "inside the bundle" in err
    assert tar.read_bytes() == before
    assert not (small_bundle / "vsa.json").exists()


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: audit verify --vsa/--attest replace an existing file without a word (a "
    "rename over it, audit/_store.py output_target), as a shell redirection does; audit sign "
    "--statement refuses an existing signature without --replace",
)
def test_an_existing_file_is_not_replaced_silently(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "release-notes.json"
    existing.write_text('{"kept": true}\n')
    code, out, err = _cli(["verify", str(small_bundle), "--vsa", str(existing)], capsys)
    said = str(existing) in out + err
    assert existing.read_text() == '{"kept": true}\n' or said, (code, err)


def test_the_written_statements_are_about_the_verified_bytes(
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bundle directory is replaced by another bundle after the verification: the Statement
    and the summary are written from the verdict, never from a second read of the bundle."""
    digest = _manifest_hex(small_bundle)

    def verify_then_swap(*args: Any, **kwargs: Any) -> Verification:
        done = verify_bundle(*args, **kwargs)
        shutil.rmtree(small_bundle)
        write_small_bundle(small_bundle, run_id="run-2")
        return done

    monkeypatch.setattr(cli_bundle, "verify_bundle", verify_then_swap)
    vsa, attest = tmp_path / "vsa.json", tmp_path / "attest.json"
    argv = ["verify", str(small_bundle), "--vsa", str(vsa), "--attest", str(attest)]
    assert _cli(argv, capsys)[0] == 0
    assert _manifest_hex(small_bundle) != digest
    for written in (vsa, attest):
        assert _summary(written)["subject"][0]["digest"]["sha256"] == digest
    assert os.path.basename(_summary(vsa)["predicate"]["resourceUri"]) == small_bundle.name
