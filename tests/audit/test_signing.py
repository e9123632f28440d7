"""Signing and offline verification, end to end through the CLI.

Signatures are made by sigstore's unmodified Signer against a private Sigstore instance whose
Fulcio and Rekor listen on 127.0.0.1 (tests/private_sigstore.py), and checked by the unmodified
sigstore Verifier inside ``audit verify``, with no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from audit._archive import pack
from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from bundle_schema import canonical_bytes
from bundle_schema.attestation import (
    BUNDLE_PREDICATE_TYPE,
    STATEMENT_TYPE,
    bare_uri,
    bundle_statement,
    is_bare_uri,
    read_verification_statement,
    read_verification_summary,
    subject_digest,
)
from bundle_schema.errors import InvalidInput
from bundle_schema.layout import MANIFEST_SIGNATURE
from tests.factories import write_small_bundle
from tests.http_range import serve as serve_http
from tests.paths import PINS, ROOT, SCHEMAS
from tests.private_sigstore import ISSUER, PrivateSigstore
from verify import open_source, parse_manifest
from verify._trust import PINS_FILE, shipped_root

pytestmark = pytest.mark.usefixtures("private_home")

WHO = "release-bot@test.local"


def sign(path: Path, instance: PrivateSigstore, trust: dict[str, str], who: str = WHO) -> int:
    token = instance.mint_token(who)
    return main(["sign", str(path), "--trust-config", trust["config"], "--identity-token", token])


def verify(path: Path, trust: dict[str, str], *extra: str, who: str = WHO) -> list[str]:
    return [
        "verify", str(path), "--identity", who, "--issuer", ISSUER,
        "--trusted-root", trust["root"], *extra,
    ]  # fmt: skip


@pytest.fixture
def signed(tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    assert sign(bundle, instance, trust) == 0
    return bundle


def verdict_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_a_signed_bundle_verifies_offline(
    signed: Path, trust: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, verdict, err = verdict_of(verify(signed, trust, "--require", "signed"), capsys)
    assert code == 0, err
    signature = verdict["signature"]
    assert signature["status"] == "verified"
    assert (signature["identity"], signature["issuer"]) == (WHO, ISSUER)
    assert signature["integrated_time"].endswith("Z")
    assert signature["trusted_root"].startswith("sha256:")
    assert not (tmp_path / "home").exists()  # nothing cached in the home directory


def test_the_signature_is_outside_the_manifest_digest(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]
) -> None:
    bundle = tmp_path / "bundle"
    digest = write_small_bundle(bundle)
    assert sign(bundle, instance, trust) == 0
    assert parse_manifest(open_source(bundle).manifest_bytes()).bundle_digest == digest
    envelope = json.loads((bundle / MANIFEST_SIGNATURE).read_bytes())["dsseEnvelope"]
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    import base64  # noqa: PLC0415

    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == STATEMENT_TYPE
    assert statement["predicateType"] == BUNDLE_PREDICATE_TYPE
    assert statement["subject"] == [{"name": "manifest.json", "digest": {"sha256": digest[7:]}}]
    assert set(statement["predicate"]) == {
        "run_id", "created_at", "scoring_generation", "profile", "pin_set", "runner",
    }  # fmt: skip


def test_verification_never_opens_a_socket(signed: Path, trust: dict[str, str]) -> None:
    """In a network namespace of its own (no interface but a down loopback), it still verifies."""
    audit = str(Path(sys.executable).parent / "audit")
    result = subprocess.run(
        ["unshare", "--net", audit, *verify(signed, trust, "--require", "signed")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_an_unsigned_bundle_is_unsigned(
    small_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdict, _ = verdict_of(["verify", str(small_bundle)], capsys)
    assert (code, verdict["signature"]) == (0, {"status": "unsigned"} | _NULLS)
    code, _, err = verdict_of(["verify", str(small_bundle), "--require", "signed"], capsys)
    assert code == 1
    assert err == "audit verify: requirement not met: signed: the bundle is unsigned\n"


def test_naming_a_signer_requires_a_signature(
    small_bundle: Path, trust: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """As cosign, slsa-verifier and gh attestation verify: --identity/--issuer on an unsigned
    bundle is a failed check, not an unsigned pass."""
    code, verdict, err = verdict_of(verify(small_bundle, trust), capsys)
    assert code == 1
    reason = "the bundle is unsigned, but --identity and --issuer name who must have signed it"
    assert (verdict["signature"]["status"], verdict["signature"]["reason"]) == ("failed", reason)
    assert err == f"audit verify: signature failed: {reason}\n"


_NULLS = dict.fromkeys(("identity", "issuer", "integrated_time", "trusted_root", "reason"))


def test_a_signature_without_an_identity_is_unchecked(
    signed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdict, _ = verdict_of(["verify", str(signed)], capsys)
    assert code == 0
    assert verdict["signature"]["status"] == "unchecked"
    code, _, err = verdict_of(["verify", str(signed), "--require", "signed"], capsys)
    assert code == 1
    assert "signature unchecked: the bundle is signed; give --identity and --issuer" in err


def test_the_signature_travels_in_the_tar(
    signed: Path, trust: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tar = tmp_path / "bundle.tar"
    assert main(["pack", str(signed), "-o", str(tar)]) == 0
    capsys.readouterr()
    code, verdict, err = verdict_of(verify(tar, trust, "--require", "signed"), capsys)
    assert code == 0, err
    assert verdict["signature"]["status"] == "verified"
    unpacked = tmp_path / "unpacked"
    assert main(["unpack", str(tar), "-o", str(unpacked)]) == 0
    original = (signed / MANIFEST_SIGNATURE).read_bytes()
    assert (unpacked / MANIFEST_SIGNATURE).read_bytes() == original


def test_a_reviewer_sees_the_signature(
    signed: Path, trust: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = ["--identity", WHO, "--issuer", ISSUER, "--trusted-root", trust["root"]]
    html = tmp_path / "report.html"
    assert main(["show", str(signed), *policy, "--json", "--html", str(html)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["signature"]["status"] == "verified"
    assert f"signature verified: signed by {WHO} ({ISSUER})" in html.read_text()
    assert main(["show", str(signed)]) == 0
    assert "unchecked: the bundle is signed" in capsys.readouterr().out


# --- attacks on a signature: each ends in exit 1 and status "failed" ---------------------------

Attack = Callable[[Path, PrivateSigstore, dict[str, str], Path], list[str] | None]


def _statement(bundle: Path) -> bytes:
    manifest = parse_manifest(open_source(bundle).manifest_bytes())
    return bundle_statement(manifest.model, manifest.bundle_digest)


def _plant(bundle: Path, signature: bytes) -> None:
    (bundle / MANIFEST_SIGNATURE).parent.mkdir(exist_ok=True)
    (bundle / MANIFEST_SIGNATURE).write_bytes(signature)


def _edited_statement(bundle: Path, edit: Callable[[dict[str, Any]], None]) -> bytes:
    statement = json.loads(_statement(bundle))
    edit(statement)
    return canonical_bytes(statement)


def _tampered_manifest(bundle: Path, *_: object) -> None:
    signature = (bundle / MANIFEST_SIGNATURE).read_bytes()
    shutil.rmtree(bundle)
    write_small_bundle(bundle, run_id="run-2")  # a resealed, internally consistent manifest
    _plant(bundle, signature)


def _another_bundles_signature(
    bundle: Path, instance: PrivateSigstore, trust: dict[str, str], tmp: Path
) -> None:
    other = tmp / "other"
    write_small_bundle(other, created_at="2026-11-02T00:00:00Z")
    assert sign(other, instance, trust) == 0
    _plant(bundle, (other / MANIFEST_SIGNATURE).read_bytes())


def _another_instance(bundle: Path, *_: object) -> None:
    _plant(bundle, PrivateSigstore(name="other.local").sign_dsse(_statement(bundle), identity=WHO))


def _bad_inclusion_proof(bundle: Path, *_: object) -> None:
    signature = json.loads((bundle / MANIFEST_SIGNATURE).read_bytes())
    proof = signature["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
    assert proof["hashes"], "the module's log holds several entries: the path is not empty"
    proof["hashes"][0] = "A" * 43 + "="
    _plant(bundle, json.dumps(signature).encode())


def _signed_directly(edit: Callable[[dict[str, Any]], None], **options: str) -> Attack:
    def attack(bundle: Path, instance: PrivateSigstore, *_: object) -> None:
        statement = _edited_statement(bundle, edit)
        _plant(bundle, instance.sign_dsse(statement, identity=WHO, **options))

    return attack


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(statement: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = statement
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return edit


def _root_file(root: dict[str, Any], tmp: Path) -> str:
    path = tmp / "other_root.json"
    path.write_text(json.dumps(root))
    return str(path)


def _expired_root(
    _bundle: Path, instance: PrivateSigstore, trust: dict[str, str], tmp: Path
) -> list[str]:
    import datetime as dt  # noqa: PLC0415

    ended = instance.start + dt.timedelta(hours=1)  # before any certificate was issued
    return ["--trusted-root", _root_file(instance.trusted_root(ca_end=ended), tmp)]


def _expired_log_key(
    _bundle: Path, instance: PrivateSigstore, _t: dict[str, str], tmp: Path
) -> list[str]:
    import datetime as dt  # noqa: PLC0415

    root = instance.trusted_root()
    ended = (instance.start + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    root["tlogs"][0]["publicKey"]["validFor"]["end"] = ended
    return ["--trusted-root", _root_file(root, tmp)]


def _swapped_root(_bundle: Path, _i: PrivateSigstore, _t: dict[str, str], tmp: Path) -> list[str]:
    return ["--trusted-root", _root_file(PrivateSigstore(name="swap.local").trusted_root(), tmp)]


ATTACKS: list[tuple[str, Attack, str]] = [
    ("tampered manifest", _tampered_manifest, "not this bundle"),
    ("signature of another bundle", _another_bundles_signature, "not this bundle"),
    ("wrong identity", lambda *_: ["--identity", "mallory@test.local"], "SANs do not match"),
    ("wrong issuer", lambda *_: ["--issuer", "https://evil.test"], "OIDCIssuer does not match"),
    ("another instance's CA", _another_instance, "CertValidationError"),
    ("bad inclusion proof", _bad_inclusion_proof, "inclusion proof"),
    (
        "wrong predicate type",
        _signed_directly(_set("predicateType", "https://slsa.dev/provenance/v1")),
        "predicateType",
    ),
    (
        "wrong subject digest",
        _signed_directly(_set("subject.0.digest.sha256", "0" * 64)),
        "not this bundle",
    ),
    (
        "wrong payload type",
        _signed_directly(lambda _s: None, payload_type="application/json"),
        "DSSE payload type is 'application/json'",
    ),
    (
        "predicate that disagrees with the manifest",
        _signed_directly(_set("predicate.profile", "full")),
        "disagrees with the manifest on profile",
    ),
    ("two subjects", _signed_directly(lambda s: s["subject"].append(s["subject"][0])), "subject"),
    ("not a Sigstore bundle", lambda b, *_: _plant(b, b'{"mediaType": "x"}'), "not a Sigstore"),
    ("expired trust root", _expired_root, "was not valid when it issued the signing certificate"),
    ("expired log key", _expired_log_key, "was not valid at the entry's integrated time"),
    ("swapped trust root", _swapped_root, "CertValidationError"),
]


@pytest.mark.parametrize(
    ("attack", "fragment"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS]
)
def test_an_attack_on_the_signature_fails_closed(  # noqa: PLR0917
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    attack: Attack,
    fragment: str,
) -> None:
    for _ in range(3):  # the log holds more than one entry, so inclusion paths are not empty
        instance.sign_dsse(b"{}", identity="filler@test.local")
    extra = attack(signed, instance, trust, tmp_path) or []
    capsys.readouterr()
    code, verdict, err = verdict_of([*verify(signed, trust), *extra], capsys)
    assert code == 1, err
    assert verdict["signature"]["status"] == "failed"
    assert fragment in verdict["signature"]["reason"], verdict["signature"]["reason"]
    assert err.startswith("audit verify: signature failed: ")
    assert err.count("\n") == 1
    assert verdict["integrity"]["status"] == "ok"  # the evidence itself is intact


# --- refusals (exit 2) ---------------------------------------------------------------------------


def test_a_changed_shipped_root_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "trust"
    shutil.copytree(ROOT / "verify" / "trust", folder)
    assert shipped_root("production", folder).digest.startswith("sha256:")
    root = folder / "production.trusted_root.json"
    root.write_bytes(root.read_bytes().replace(b"rekor.sigstore.dev", b"rekor.evil.example", 1))
    with pytest.raises(InvalidInput, match=f"but {PINS_FILE} pins sha256:"):
        shipped_root("production", folder)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--identity", WHO], "give both --identity and --issuer"),
        (["--issuer", ISSUER], "give both --identity and --issuer"),
        (["--identity", WHO, "--issuer", ISSUER, "--trusted-root", "/nonexistent"], "cannot read"),
        (
            ["--identity", WHO, "--issuer", ISSUER, "--trusted-root", "MANIFEST"],
            "not a Sigstore trusted root",
        ),
    ],
)
def test_policy_refusals(
    signed: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    extra = [str(signed / "manifest.json") if x == "MANIFEST" else x for x in extra]
    assert main(["verify", str(signed), *extra]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert err.count("\n") == 1


def test_signing_refusals(
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = (signed / MANIFEST_SIGNATURE).read_bytes()
    assert sign(signed, instance, trust) == 2  # already signed
    assert "already signed" in capsys.readouterr().err
    assert (signed / MANIFEST_SIGNATURE).read_bytes() == before
    broken = tmp_path / "broken"
    write_small_bundle(broken)
    blob = next((broken / "blobs" / "sha256").iterdir())
    blob.write_bytes(b"changed")
    assert sign(broken, instance, trust) == 1
    assert "refusing to sign a bundle that fails integrity" in capsys.readouterr().err
    assert not (broken / "signatures").exists()
    assert main(["sign", str(broken), "--identity-token", "not-a-jwt"]) == 1  # the bundle first
    assert "refusing to sign a bundle that fails integrity" in capsys.readouterr().err
    sound = tmp_path / "sound"
    write_small_bundle(sound)
    assert main(["sign", str(sound), "--identity-token", "not-a-jwt"]) == 2
    assert "identity token refused" in capsys.readouterr().err
    assert main(["sign", str(tmp_path / "x"), "--statement", "y"]) == 2
    assert "either a bundle directory or --statement" in capsys.readouterr().err


def test_no_identity_means_no_signature(
    small_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sign", str(small_bundle)]) == 2
    err = capsys.readouterr().err
    assert "no identity token: pass --identity-token, set SIGSTORE_ID_TOKEN" in err
    assert not (small_bundle / "signatures").exists()


def test_unreachable_signing_services_leave_the_bundle_unsigned(
    small_bundle: Path,
    instance: PrivateSigstore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = instance.client_trust_config("http://127.0.0.1:9", "http://127.0.0.1:9")
    (tmp_path / "down.json").write_text(json.dumps(config))
    token = instance.mint_token(WHO)
    argv = ["sign", str(small_bundle), "--trust-config", str(tmp_path / "down.json")]
    assert main([*argv, "--identity-token", token]) == 1
    assert "audit sign: signing failed: " in capsys.readouterr().err
    assert not (small_bundle / "signatures").exists()


# --- verification attestations ------------------------------------------------------------------


def test_a_verification_attestation_round_trip(
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    statement = tmp_path / "verdict.intoto.json"
    code, verdict, _ = verdict_of(verify(signed, trust, "--attest", str(statement)), capsys)
    assert code == 0
    attested = read_verification_statement(statement.read_bytes(), str(statement))
    assert attested.predicate.verdict.model_dump(mode="json") == verdict
    assert attested.subject[0].digest.sha256 == verdict["bundle_digest"][7:]
    token = instance.mint_token("auditor@test.local")
    argv = ["sign", "--statement", str(statement), "--trust-config", trust["config"]]
    assert main([*argv, "--identity-token", token]) == 0
    capsys.readouterr()
    signature = f"{statement}.sigstore.json"
    check = ["verify-attestation", signature, "--identity", "auditor@test.local", "--issuer",
             ISSUER, "--trusted-root", trust["root"]]  # fmt: skip
    code = main([*check, "--bundle", str(signed), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["signature"]["status"] == "verified"
    assert report["verdict"] == verdict
    assert main([*check, "--require", "rankable"]) == 1  # the small bundle is not rankable
    assert "requirement not met: rankable: not rankable" in capsys.readouterr().err
    other = tmp_path / "other"
    write_small_bundle(other, run_id="run-other")
    assert main([*check, "--bundle", str(other)]) == 1
    assert "not this bundle" in capsys.readouterr().err
    check[3] = "mallory@test.local"
    assert main(check) == 1
    assert "SANs do not match" in capsys.readouterr().err


AUDITOR = "auditor@test.local"
PINS_V4 = str(PINS / "gx10-qualification-v4.toml")


def _verdict_edit(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return _set(f"predicate.verdict.{path}", value)


def _both_pin_digests(statement: dict[str, Any]) -> None:
    for node in (statement["predicate"], statement["predicate"]["verdict"]):
        node["pin_set"]["digest"] = "sha256:" + "cd" * 32


def _corrupt_a_blob(bundle: Path) -> None:
    blob = next(p for p in sorted((bundle / "blobs" / "sha256").iterdir()))
    blob.write_bytes(blob.read_bytes() + b" ")


@pytest.mark.parametrize(
    ("edit", "after", "extra", "expected"),
    [
        pytest.param(None, None, (), None, id="honest"),
        pytest.param(
            _verdict_edit("outcome", "QUALIFIED"),
            None,
            (),
            'outcome: attested "QUALIFIED", now "INFRA_ERROR"',
            id="outcome-edited",
        ),
        pytest.param(
            _verdict_edit("reasons", []),
            None,
            (),
            "reasons.length: attested 0, now ",
            id="reasons-removed",
        ),
        pytest.param(
            _verdict_edit("integrity.blobs_checked", 99),
            None,
            (),
            "integrity.blobs_checked: attested 99, now 2",
            id="integrity-edited",
        ),
        pytest.param(
            _verdict_edit("signature.identity", "mallory@test.local"),
            None,
            (),
            'signature.status: attested "verified", now "failed" (',
            id="bundle-signer-edited",
        ),
        pytest.param(
            _both_pin_digests, None, (), 'pin_set.digest: attested "sha256:cdcd', id="pins-edited"
        ),
        pytest.param(
            None,
            _corrupt_a_blob,
            (),
            'integrity.status: attested "ok", now "failed" (',
            id="bundle-changed-since",
        ),
        pytest.param(
            None,
            None,
            ("--pins", PINS_V4),
            'pin_set.id: attested "gx10-reference-v5", now "gx10-qualification-v4" (',
            id="other-pin-set",
        ),
    ],
)
def test_an_attestation_with_its_bundle_must_give_the_verdict_this_verifier_reaches(  # noqa: PLR0917
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None] | None,
    after: Callable[[Path], None] | None,
    extra: tuple[str, ...],
    expected: str | None,
) -> None:
    """The attested verdict (signed genuinely, by the private instance) is compared field by
    field with a fresh verify of the bundle; an edited verdict, or a bundle that changed since,
    fails with one line naming the first field that differs."""
    statement = tmp_path / "verdict.intoto.json"
    code, _verdict, _ = verdict_of(verify(signed, trust, "--attest", str(statement)), capsys)
    assert code == 0
    value = json.loads(statement.read_bytes())
    if edit is not None:
        edit(value)
    signature = tmp_path / "verdict.intoto.json.sigstore.json"
    signature.write_bytes(instance.sign_dsse(canonical_bytes(value), identity=AUDITOR))
    if after is not None:
        after(signed)
    check = ["verify-attestation", str(signature), "--identity", AUDITOR, "--issuer", ISSUER,
             "--trusted-root", trust["root"]]  # fmt: skip
    assert main(check) == 0  # without --bundle only the signature and the subject are checked
    out = capsys.readouterr().out
    assert "re-verified" not in out
    code = main([*check, "--bundle", str(signed), *extra])
    captured = capsys.readouterr()
    if expected is None:
        assert code == 0, captured.err
        assert f"re-verified {signed}: this verifier reaches the attested verdict" in captured.out
        return
    assert code == 1
    prefix = (
        f"audit verify-attestation: the attested verdict is not the one this verifier reaches "
        f"for {signed} now: "
    )
    assert captured.err.startswith(prefix + expected), captured.err
    assert captured.err.count("\n") == 1


def test_a_bundle_signature_is_not_a_verification_attestation(
    signed: Path, trust: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    check = ["verify-attestation", str(signed / MANIFEST_SIGNATURE), "--identity", WHO,
             "--issuer", ISSUER, "--trusted-root", trust["root"]]  # fmt: skip
    assert main(check) == 1
    assert "predicateType" in capsys.readouterr().err


def test_only_a_verification_statement_is_signed_as_one(
    signed: Path, trust: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sign", "--statement", str(signed / "manifest.json"), "--trust-config", trust["config"]]
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not Path(f"{signed / 'manifest.json'}.sigstore.json").exists()


# --- start-up ------------------------------------------------------------------------------------


def test_help_and_unsigned_verification_do_not_import_sigstore(small_bundle: Path) -> None:
    program = (
        "import sys\n"
        "from audit.cli import main\n"
        "assert main(['verify', sys.argv[1], '--json']) == 0\n"
        "try:\n"
        "    main(['--help'])\n"
        "finally:\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('sigstore', 'tuf'))\n"
        "    assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program, str(small_bundle)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# --- audit run --sign ----------------------------------------------------------------------------


def test_a_run_signs_what_it_seals(
    tmp_path: Path,
    mirrors: dict[str, Path],
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from audit.demo.reference_endpoint import serve  # noqa: PLC0415

    out = tmp_path / "run"
    with serve() as endpoint:
        argv = ["run", "--endpoint", endpoint.url, "--pins", "gx10-reference-v5",
                "--profile", "smoke", "--out", str(out), "--model-digest", DEMO_DIGEST,
                "--json", "--sign", "--trust-config", trust["config"],
                "--identity-token", instance.mint_token(WHO)]  # fmt: skip
        argv += [f"--mirror={name}={path}" for name, path in mirrors.items()]
        assert main(argv) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["signature"] == str(out / MANIFEST_SIGNATURE)
    code, verdict, err = verdict_of(verify(out, trust, "--require", "signed"), capsys)
    assert code == 0, err
    assert verdict["bundle_digest"] == written["bundle_digest"]
    assert verdict["signature"]["identity"] == WHO


def test_a_run_without_an_identity_to_sign_with_does_not_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--endpoint", "http://127.0.0.1:9", "--pins", "gx10-reference-v5",
            "--profile", "smoke", "--out", str(tmp_path / "run"),
            "--model-digest", DEMO_DIGEST, "--sign"]  # fmt: skip
    assert main(argv) == 2
    assert "no identity token" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# --- the shipped trust roots ------------------------------------------------------------------


def test_trust_root_show_prints_each_shipped_root(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trust-root", "show"]) == 0
    printed = capsys.readouterr().out
    for name in ("production", "staging"):
        assert f"{name}: {shipped_root(name).digest}" in printed
    assert "https://fulcio.sigstore.dev" in printed


def test_a_shipped_root_is_replaced_only_with_the_digest_expected(
    tmp_path: Path, instance: PrivateSigstore, capsys: pytest.CaptureFixture[str]
) -> None:
    from audit.cli.signing import replace_shipped_root  # noqa: PLC0415
    from verify._trust import trust_root_from_file  # noqa: PLC0415

    new = tmp_path / "new_root.json"
    new.write_bytes(instance.trusted_root_bytes())
    before = shipped_root("production").digest
    argv = ["trust-root", "update", "production", str(new), "--expect-sha256", "0" * 64]
    assert main(argv) == 2
    assert "not the expected sha256:0000" in capsys.readouterr().err
    assert shipped_root("production").digest == before  # nothing was written
    folder = tmp_path / "trust"
    shutil.copytree(ROOT / "verify" / "trust", folder)
    replaced = replace_shipped_root(folder, "staging", trust_root_from_file(new))
    assert replaced.data == new.read_bytes()
    assert shipped_root("staging", folder).digest == replaced.digest
    assert shipped_root("production", folder).digest == before
    broken = tmp_path / "broken.json"
    broken.write_text('{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", '
                      '"tlogs": "no"}')  # fmt: skip
    with pytest.raises(InvalidInput, match="cannot be used"):
        replace_shipped_root(folder, "staging", trust_root_from_file(broken))
    assert shipped_root("staging", folder).digest == replaced.digest


def stock_verify(
    artifact: Path, signature: Path, who: str, trust: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``python -m sigstore verify identity`` of ``artifact`` against the Sigstore bundle
    ``signature``: the stock command line, offline, against the private instance, in an isolated
    process (``-I``: no current directory, no PYTHONPATH) that imports no evidence-audit code
    (``-X importtime`` lists every module it imported)."""
    done = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-m", "sigstore",
         "--trust-config", trust["config"],
         "verify", "identity", str(artifact), "--bundle", str(signature),
         "--cert-identity", who, "--cert-oidc-issuer", ISSUER, "--offline"],
        capture_output=True, text=True, check=False, cwd=cwd, timeout=120,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd / "home")},
    )  # fmt: skip
    imported = {
        line.rpartition("|")[2].strip().partition(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "sigstore" in imported
    assert not imported & OUR_PACKAGES, imported & OUR_PACKAGES
    return done


OUR_PACKAGES = {"audit", "bundle_schema", "pins", "verify", "tests"}
"""evidence-audit's top-level packages (and its tests'): the stock process imports none."""


def _payload(signature: Path) -> Any:
    """The in-toto Statement a Sigstore bundle's DSSE envelope carries (read as plain JSON)."""
    envelope = json.loads(signature.read_bytes())["dsseEnvelope"]
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    return json.loads(base64.b64decode(envelope["payload"]))


def test_a_signed_bundle_and_its_verdict_that_stock_sigstore_verifies(
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The bundle's own signature (signatures/manifest.sigstore.json) and a signed --attest
    verdict verify with the stock sigstore command line against the bundle's manifest, in a
    process that runs no evidence-audit code; each Statement's one subject is manifest.json by
    the SHA-256 of the manifest's bytes (the bundle digest), and another file fails."""
    manifest = signed / "manifest.json"
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    subject = [{"name": "manifest.json", "digest": {"sha256": digest}}]
    own = signed / MANIFEST_SIGNATURE
    checked = stock_verify(manifest, own, WHO, trust, tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "OK" in checked.stderr + checked.stdout
    statement = _payload(own)
    assert (statement["predicateType"], statement["subject"]) == (BUNDLE_PREDICATE_TYPE, subject)
    attestation = tmp_path / "verdict.intoto.json"
    code, verdict, err = verdict_of(verify(signed, trust, "--attest", str(attestation)), capsys)
    assert code == 0, err
    assert verdict["bundle_digest"] == f"sha256:{digest}"
    assert main(["sign", "--statement", str(attestation), "--trust-config", trust["config"],
                 "--identity-token", instance.mint_token(AUDITOR)]) == 0  # fmt: skip
    signed_verdict = Path(f"{attestation}.sigstore.json")
    checked = stock_verify(manifest, signed_verdict, AUDITOR, trust, tmp_path)
    assert checked.returncode == 0, checked.stderr
    statement = _payload(signed_verdict)
    assert statement["subject"] == subject
    assert statement["predicate"]["verdict"] == verdict
    other = tmp_path / "other.json"
    other.write_bytes(manifest.read_bytes() + b" ")
    for signature, who in ((own, WHO), (signed_verdict, AUDITOR)):
        assert stock_verify(other, signature, who, trust, tmp_path).returncode != 0
    assert stock_verify(manifest, own, AUDITOR, trust, tmp_path).returncode != 0  # not its signer


def test_a_verification_summary_that_stock_sigstore_verifies(  # noqa: PLR0917
    ranked_examples: dict[str, Path],
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit verify --vsa writes a SLSA Verification Summary v1; signed with audit sign, the
    stock sigstore command line verifies it against the bundle's manifest, in a process that
    runs no evidence-audit code; PASSED only for a rankable result."""
    from tests.conftest import DEPLOYMENT_PINS  # noqa: PLC0415

    bundle = tmp_path / "qualified"
    shutil.copytree(ranked_examples["gx10-full-qualified"], bundle)
    assert sign(bundle, instance, trust) == 0
    capsys.readouterr()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796000000")
    summary = tmp_path / "vsa.intoto.json"
    argv = verify(bundle, trust, "--pins", str(DEPLOYMENT_PINS), "--vsa", str(summary))
    code, verdict, _ = verdict_of(argv, capsys)
    assert code == 0 and verdict["rankable"] is True
    first = summary.read_bytes()
    assert verdict_of(argv, capsys)[0] == 0
    assert summary.read_bytes() == first  # the same bundle and time: the same bytes
    statement = read_verification_summary(first, str(summary))
    predicate = statement.predicate
    assert statement.predicate_type == "https://slsa.dev/verification_summary/v1"
    assert subject_digest(statement) == verdict["bundle_digest"]
    assert (predicate.verification_result, predicate.verified_levels) == (
        "PASSED", ("EVIDENCE_AUDIT_RANKABLE",)
    )  # fmt: skip
    assert predicate.time_verified == "2026-11-30T00:53:20Z"
    assert predicate.resource_uri == bundle.resolve().as_uri()
    assert predicate.policy.uri == f"urn:evidence-audit:pin-set:{verdict['pin_set']['id']}"
    assert "sha256:" + predicate.policy.digest.sha256 == verdict["pin_set"]["digest"]
    signature = (bundle / MANIFEST_SIGNATURE).read_bytes()
    assert [(a.uri, a.digest.sha256) for a in predicate.input_attestations] == [
        (MANIFEST_SIGNATURE, hashlib.sha256(signature).hexdigest())
    ]
    assert predicate.evidence_audit_verdict.model_dump(mode="json") == verdict
    token = instance.mint_token(AUDITOR)
    assert main(["sign", "--statement", str(summary), "--trust-config", trust["config"],
                 "--identity-token", token]) == 0  # fmt: skip
    capsys.readouterr()
    signed_summary = Path(f"{summary}.sigstore.json")
    checked = stock_verify(bundle / "manifest.json", signed_summary, AUDITOR, trust, tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "OK" in checked.stderr + checked.stdout
    other = tmp_path / "other.json"
    other.write_bytes((bundle / "manifest.json").read_bytes() + b" ")
    # the subject digest is the bundle's, nothing else
    assert stock_verify(other, signed_summary, AUDITOR, trust, tmp_path).returncode != 0


def test_a_verification_summary_fails_what_is_not_rankable(
    signed: Path, trust: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "vsa.json"
    code, verdict, _ = verdict_of(
        verify(signed, trust, "--vsa", str(summary), "--resource-uri", "https://e.test/b.tar"),
        capsys,
    )
    assert code == 0 and verdict["rankable"] is False
    predicate = read_verification_summary(summary.read_bytes(), str(summary)).predicate
    assert (predicate.verification_result, predicate.verified_levels) == ("FAILED", ("FAILED",))
    assert predicate.resource_uri == "https://e.test/b.tar"
    assert predicate.evidence_audit_verdict.reasons == tuple(verdict["reasons"])


# --- what a verification summary records of where the bundle is -------------------------------

PRESIGNED = (
    "zq9-user:zq9-password@{host}/runs/run.tar?X-Amz-Credential=zq9-credential"
    "&X-Amz-Security-Token=zq9-token&X-Amz-Signature=zq9-signature#zq9-fragment"
)
"""A presigned-style URL with userinfo: every part that holds a secret starts ``zq9-``."""


@pytest.mark.parametrize(
    ("url", "bare"),
    [
        ("http://u:p@127.0.0.1:8080/x.tar?X-Amz-Signature=abc#f", "http://127.0.0.1:8080/x.tar"),
        ("https://token@e.test/runs/a@b.tar", "https://e.test/runs/a%40b.tar"),
        ("s3://AKIA:secret@runs/v5/x.tar?versionId=3", "s3://runs/v5/x.tar"),
        ("https://u:p@[::1]:8443/x.tar?", "https://[::1]:8443/x.tar"),
        ("https://e.test/x.tar", "https://e.test/x.tar"),
        ("file:///srv/runs/x.tar", "file:///srv/runs/x.tar"),
    ],
)
def test_a_bare_uri_has_no_userinfo_query_or_fragment(url: str, bare: str) -> None:
    assert bare_uri(url) == bare
    assert is_bare_uri(bare)
    assert is_bare_uri(url) == (url == bare)


def test_a_verification_summary_records_no_credential_of_the_url_read(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle read by a presigned URL with a user name and password: the summary's resourceUri
    is its scheme, host, port and path, nothing else; the --attest Statement names no URL; both
    are valid against their committed schemas; and signing refuses a summary edited to carry
    the credentials back."""
    published = tmp_path / "published"
    (published / "runs").mkdir(parents=True)
    pack(small_bundle, published / "runs" / "run.tar")
    summary, attestation = tmp_path / "vsa.json", tmp_path / "verdict.json"
    with serve_http(published) as server:
        url = "http://" + PRESIGNED.format(host=server.url.removeprefix("http://"))
        argv = ["verify", url, "--vsa", str(summary), "--attest", str(attestation)]
        assert main(argv) == 0, capsys.readouterr().err
        capsys.readouterr()
    data = summary.read_bytes()
    assert read_verification_summary(data, str(summary)).predicate.resource_uri == (
        f"{server.url}/runs/run.tar"
    )
    for kind, written in (("vsa", data), ("verification", attestation.read_bytes())):
        assert b"zq9-" not in written and b"X-Amz" not in written, kind
        schema = json.loads((SCHEMAS / f"{kind}-statement.schema.json").read_bytes())
        jsonschema.Draft202012Validator(schema).validate(json.loads(written))
    edited = json.loads(data)
    edited["predicate"]["resourceUri"] = url
    forged = tmp_path / "forged.json"
    forged.write_bytes(canonical_bytes(edited))
    schema = json.loads((SCHEMAS / "vsa-statement.schema.json").read_bytes())
    assert not jsonschema.Draft202012Validator(schema).is_valid(edited)
    assert main(["sign", "--statement", str(forged), "--identity-token", "x"]) == 2
    assert "resourceUri" in capsys.readouterr().err
    assert not Path(f"{forged}.sigstore.json").exists()


@pytest.mark.parametrize(
    "given",
    [
        pytest.param("https://zq9-user:zq9-password@e.test/run.tar", id="userinfo"),
        pytest.param("https://zq9-token@e.test/run.tar", id="user"),
        pytest.param("https://e.test/run.tar?X-Amz-Signature=zq9-signature", id="query"),
        pytest.param("https://e.test/run.tar#zq9-fragment", id="fragment"),
        pytest.param("s3://zq9-key:zq9-secret@runs/run.tar", id="s3-userinfo"),
        pytest.param("runs/run.tar", id="not-a-uri"),
        # userinfo to a WHATWG reader (a browser), a path or an opaque part to urlsplit
        pytest.param("https:zq9-user:zq9-secret@e.test/run.tar", id="no-slashes"),
        pytest.param("https:/zq9-key:zq9-secret@bucket.e.test/run.tar", id="one-slash"),
        pytest.param("https://zq9-alice:pa/zq9-ss@e.test/run.tar", id="slash-in-password"),
        pytest.param("https://zq9-alice:pa?zq9-ss@e.test/run.tar", id="query-in-password"),
    ],
)
def test_a_resource_uri_with_a_credential_is_refused(
    given: str, small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resource-uri is recorded as given: one that is no URI, or carries userinfo, a query or
    a fragment, is a usage error before anything is verified or written, and is not echoed."""
    summary = tmp_path / "vsa.json"
    argv = ["verify", str(small_bundle), "--vsa", str(summary), "--resource-uri", given]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("audit verify: argument --resource-uri: not a URI without a user name")
    assert err.count("\n") == 1
    assert "zq9-" not in err
    assert not summary.exists()


def test_verify_attestation_names_a_bundle_url_without_its_password(
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """verify-attestation --bundle URL names the URL as every message does, the password
    masked (audit verify's messages), when it re-verifies and when the verdicts differ."""
    statement = tmp_path / "verdict.intoto.json"
    assert verdict_of(verify(signed, trust, "--attest", str(statement)), capsys)[0] == 0
    value = json.loads(statement.read_bytes())
    honest = tmp_path / "honest.sigstore.json"
    honest.write_bytes(instance.sign_dsse(canonical_bytes(value), identity=AUDITOR))
    value["predicate"]["verdict"]["outcome"] = "QUALIFIED"
    edited = tmp_path / "edited.sigstore.json"
    edited.write_bytes(instance.sign_dsse(canonical_bytes(value), identity=AUDITOR))
    published = tmp_path / "published"
    (published / "runs").mkdir(parents=True)
    pack(signed, published / "runs" / "run.tar")
    with serve_http(published) as server:
        url = "http://" + PRESIGNED.format(host=server.url.removeprefix("http://"))
        for signature, code in ((honest, 0), (edited, 1)):
            check = ["verify-attestation", str(signature), "--identity", AUDITOR, "--issuer",
                     ISSUER, "--trusted-root", trust["root"], "--bundle", url]  # fmt: skip
            assert main(check) == code
            captured = capsys.readouterr()
            printed = captured.out + captured.err
            assert "zq9-user:***@127.0.0.1" in printed, printed
            assert "zq9-password" not in printed
