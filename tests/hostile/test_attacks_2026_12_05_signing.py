"""Hostile tests of 2026-12-05 (signing): an adversarial publisher (every byte of the bundle, and
a valid signing identity of their own on the private test Sigstore instance) and a careless
verifier operator, against the SEAL, SIGNATURE and TRUST layer and the attestations the verifier
writes (``verify/_signature.py``, ``verify/_trust.py``, ``audit/cli/signing.py``,
``bundle_schema/attestation.py`` and its Statement models).

Signatures are made by sigstore's unmodified Signer through the private instance's Fulcio and
Rekor on 127.0.0.1 (tests/private_sigstore.py) and checked by the unmodified Verifier, offline.

Holes (each test asserts the safe behaviour and failed on the code as found; all five fixed the
same day: 1 by ``policy_from`` (an empty or blank identity or issuer is exit 2), 2 by
``verify._signature._check_sct_window``, 3 by ``bundle_schema.attestation.statement_difference``
(``audit sign --statement`` signs only what ``audit verify`` writes for the verdict inside;
``verify-attestation`` holds an ``--attest`` Statement to it too), 4 by catching
``RecursionError``, 5 by ``verify.Verification.signature_digest`` (the digest of the bytes the
check read; ``SOURCE_DATE_EPOCH`` is read once)):

1. An empty ``--issuer`` waives the issuer check. ``policy_from`` only tests ``is None``, and
   sigstore's ``Identity(identity=..., issuer="")`` skips the OIDC-issuer comparison (``if
   issuer:``). A signature for ``release-bot@test.local`` issued through *another* OIDC issuer
   (``https://evil.test``) verifies with ``--identity release-bot@test.local --issuer ""``:
   ``signature.status`` ``verified``, ``issuer`` ``""``, exit 0 with ``--require signed``. An
   unset shell variable (``--issuer "$ISSUER"``) is exactly this. The same policy is built for
   ``verify-attestation`` and ``show``.
2. The CT log key's validity window is never checked. ``_check_windows`` checks the CA at the
   certificate's issuance and the Rekor key at the integrated time, but sigstore accepts SCTs
   from an expired (or not yet valid) ``ctlogs`` key (``ct_keyring(VERIFY)`` allows expired) and
   the project does not add the check: a trust root whose CT log key ended a day before the SCT
   still gives ``verified``.
3. ``audit sign --statement`` signs a Verification Summary edited to lie, and stock ``sigstore
   verify`` then accepts it: the VSA model has no cross-field rule, so
   (a) ``verificationResult`` PASSED / ``verifiedLevels`` EVIDENCE_AUDIT_RANKABLE beside an
   ``evidenceAuditVerdict`` that is not rankable, (b) a subject that is another bundle than the
   ``evidenceAuditVerdict``'s (the signed summary then verifies with stock sigstore against the
   *other* bundle's manifest), (c) a ``policy`` that is not the verdict's pin set, are all signed
   (``_sign_command`` -> ``_attestation`` -> ``VsaStatement`` validation only). The docs present
   ``audit sign --statement`` as the gate that refuses an edited summary (``resourceUri``).
   (d) Likewise a verification Statement (``--attest``) whose subject is not its verdict's
   bundle is signed; ``verify-attestation`` refuses it afterwards, stock sigstore accepts it for
   the other bundle.
4. ``audit sign --statement`` on deeply nested JSON ends in a ``RecursionError`` traceback:
   ``audit/cli/signing.py`` ``_attestation`` catches ``ValueError`` and ``AttributeError`` around
   ``json.loads``, not ``RecursionError`` (every other reader of this layer catches it).
5. The VSA's ``inputAttestations`` digest is of a second read of the bundle's signature, not of
   the bytes verified: ``summarize`` re-opens the bundle (``open_source(bundle)``) after
   ``verify_bundle``. A signature file changed in a local bundle directory between the two reads
   (a shared directory the publisher can write) is recorded as the verified input attestation.
   (A bundle by URL is held: the command's URL snapshot pins the second read.)

Held: ``--identity`` is matched exactly (case, prefix, substring, regular-expression
metacharacters, a trailing line break all fail); a signature whose transparency-log entry is
grafted from another signature of the same instance fails; the VSA's ``policy`` is the pin set
the run was judged by under ``--pins`` (not the one the manifest names); a ``--resource-uri``
made of JSON metacharacters is recorded as one string and cannot inject a field; the VSA of a
bundle by URL names the signature bytes that were verified even when the object at the URL is
replaced before the summary is written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import audit.cli.bundle as cli_bundle
from audit._archive import pack
from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.layout import MANIFEST_SIGNATURE
from pins import load_builtin
from tests.factories import write_small_bundle
from tests.http_range import serve, url_of
from tests.private_sigstore import ISSUER, PrivateSigstore, Services
from tests.sigstore_kit import trust_files
from verify import Verification, verify_bundle

pytestmark = pytest.mark.usefixtures("private_home")

WHO = "release-bot@test.local"
AUDITOR = "auditor@test.local"
OTHER_ISSUER = "https://evil.test"


@pytest.fixture(scope="module")
def trust(
    tmp_path_factory: pytest.TempPathFactory, instance: PrivateSigstore, services: Services
) -> dict[str, str]:
    return trust_files(tmp_path_factory.mktemp("trust"), instance, services)


def _sign(
    bundle: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    who: str = WHO,
    issuer: str = ISSUER,
) -> None:
    token = instance.mint_token(who, issuer=issuer)
    code = main(["sign", str(bundle), "--trust-config", trust["config"], "--identity-token", token])
    assert code == 0


def _sign_statement(path: Path, instance: PrivateSigstore, trust: dict[str, str]) -> int:
    token = instance.mint_token(AUDITOR)
    return main(
        ["sign", "--statement", str(path), "--trust-config", trust["config"],
         "--identity-token", token]
    )  # fmt: skip


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err


def _verify(
    path: Path | str, root: str, *extra: str, who: str = WHO, issuer: str = ISSUER
) -> list[str]:
    return [
        "verify", str(path), "--identity", who, "--issuer", issuer, "--trusted-root", root, *extra
    ]  # fmt: skip


@pytest.fixture
def signed(tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    _sign(bundle, instance, trust)
    return bundle


# --- the identity policy ---------------------------------------------------------------------


def test_an_empty_issuer_does_not_waive_the_issuer_check(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    _sign(bundle, instance, trust, issuer=OTHER_ISSUER)  # the right e-mail, another issuer
    code, verdict, err = _run(
        [*_verify(bundle, trust["root"], issuer=""), "--require", "signed"], capsys
    )
    assert code == 2 and verdict is None
    assert "--issuer is empty" in err


@pytest.mark.parametrize(
    "identity",
    [
        "RELEASE-BOT@test.local",  # case
        "release-bot@test",  # prefix
        "bot@test.local",  # suffix (substring)
        ".*",  # a regular expression
        "release-bot@test\\.local",  # an escaped one
        WHO + "\n",  # a trailing line break
    ],
)
def test_the_identity_is_matched_exactly(
    signed: Path, trust: dict[str, str], capsys: pytest.CaptureFixture[str], identity: str
) -> None:
    code, verdict, err = _run(_verify(signed, trust["root"], who=identity), capsys)
    assert code == 1, err
    assert verdict["signature"]["status"] == "failed"
    assert "SANs do not match" in verdict["signature"]["reason"]


# --- the trust root's windows ------------------------------------------------------------------


def test_a_ct_log_key_that_had_expired_cannot_vouch(
    signed: Path,
    instance: PrivateSigstore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = instance.trusted_root()
    ended = instance.start + dt.timedelta(hours=1)  # a day before any SCT was made
    root["ctlogs"][0]["publicKey"]["validFor"]["end"] = ended.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / "ct_expired_root.json"
    path.write_text(json.dumps(root))
    code, verdict, _ = _run(_verify(signed, str(path)), capsys)
    assert code == 1
    assert verdict["signature"]["status"] == "failed"


# --- a transparency-log entry of other content -------------------------------------------------


def test_a_log_entry_grafted_from_another_signature_fails(
    signed: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = tmp_path / "other"
    write_small_bundle(other, run_id="run-2")
    _sign(other, instance, trust)
    mine = json.loads((signed / MANIFEST_SIGNATURE).read_bytes())
    theirs = json.loads((other / MANIFEST_SIGNATURE).read_bytes())
    mine["verificationMaterial"]["tlogEntries"] = theirs["verificationMaterial"]["tlogEntries"]
    (signed / MANIFEST_SIGNATURE).write_text(json.dumps(mine))
    code, verdict, _ = _run(_verify(signed, trust["root"]), capsys)
    assert code == 1
    assert verdict["signature"]["status"] == "failed"
    assert verdict["integrity"]["status"] == "ok"


# --- Statements signed with audit sign --statement ----------------------------------------------


def _digest_hex(bundle: Path) -> str:
    return hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()


def _written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> tuple[dict[str, Any], str]:
    """The Statement ``audit verify`` writes with ``option`` (``--vsa``, ``--attest``) for a
    small bundle that is not rankable, and the digest of another bundle."""
    bundle, other = tmp_path / "a", tmp_path / "b"
    write_small_bundle(bundle)
    write_small_bundle(other, run_id="run-2")
    written = tmp_path / "statement.json"
    code, verdict, _ = _run(["verify", str(bundle), option, str(written)], capsys)
    assert code == 0 and verdict["rankable"] is False
    return json.loads(written.read_bytes()), _digest_hex(other)


def _assert_not_signed(
    statement: dict[str, Any], tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]
) -> None:
    """``statement``, edited, is refused by ``audit sign --statement``, and nothing written."""
    edited = tmp_path / "edited.json"
    edited.write_bytes(canonical_bytes(statement))
    assert _sign_statement(edited, instance, trust) != 0
    assert not Path(f"{edited}.sigstore.json").exists()


def _passed(statement: dict[str, Any], _other: str) -> None:
    statement["predicate"]["verificationResult"] = "PASSED"
    statement["predicate"]["verifiedLevels"] = ["EVIDENCE_AUDIT_RANKABLE"]


def _other_subject(statement: dict[str, Any], other: str) -> None:
    statement["subject"][0]["digest"]["sha256"] = other


def _other_policy(statement: dict[str, Any], _other: str) -> None:
    statement["predicate"]["policy"] = {
        "uri": "urn:evidence-audit:pin-set:gx10-qualification-v5",
        "digest": {"sha256": load_builtin("gx10-qualification-v5").digest[7:]},
    }


VSA_EDITS: list[tuple[str, Callable[[dict[str, Any], str], None]]] = [
    ("PASSED beside a verdict that is not rankable", _passed),
    ("a subject that is not the verdict's bundle", _other_subject),
    ("a policy that is not the verdict's pin set", _other_policy),
]


@pytest.mark.parametrize("edit", [e[1] for e in VSA_EDITS], ids=[e[0] for e in VSA_EDITS])
def test_a_summary_edited_to_lie_is_not_signed(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any], str], None],
) -> None:
    statement, other = _written(tmp_path, capsys, "--vsa")
    assert statement["predicate"]["verificationResult"] == "FAILED"
    edit(statement, other)
    _assert_not_signed(statement, tmp_path, instance, trust)


def test_an_attestation_about_another_bundle_is_not_signed(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    statement, other = _written(tmp_path, capsys, "--attest")
    _other_subject(statement, other)
    _assert_not_signed(statement, tmp_path, instance, trust)


def test_a_deeply_nested_statement_is_refused_in_one_line(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b'{"predicateType":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    capsys.readouterr()
    assert _sign_statement(deep, instance, trust) == 2
    err = capsys.readouterr().err
    assert err.startswith("audit sign: ") and err.count("\n") == 1
    assert not Path(f"{deep}.sigstore.json").exists()


# --- what a Verification Summary records --------------------------------------------------------


def test_the_summary_names_the_signature_bytes_that_were_verified(
    signed: Path,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verified = (signed / MANIFEST_SIGNATURE).read_bytes()

    def verify_then_swap(*args: Any, **kwargs: Any) -> Verification:
        """The publisher's write into the shared bundle directory lands after the verification
        read the signature and before the summary is written."""
        done = verify_bundle(*args, **kwargs)
        (signed / MANIFEST_SIGNATURE).write_bytes(b'{"not": "what was verified"}')
        return done

    monkeypatch.setattr(cli_bundle, "verify_bundle", verify_then_swap)
    summary = tmp_path / "vsa.json"
    code, verdict, _ = _run(_verify(signed, trust["root"], "--vsa", str(summary)), capsys)
    assert verdict is not None and verdict["signature"]["status"] == "verified"
    if code == 0 and summary.exists():
        inputs = json.loads(summary.read_bytes())["predicate"]["inputAttestations"]
        assert inputs == [
            {"uri": MANIFEST_SIGNATURE, "digest": {"sha256": hashlib.sha256(verified).hexdigest()}}
        ]


def test_a_summary_of_a_url_names_the_signature_bytes_that_were_verified(
    signed: Path,
    trust: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The object at the URL is replaced (another signature in it) after the verification read
    it and before the summary is written: the summary still names what was verified."""
    verified = (signed / MANIFEST_SIGNATURE).read_bytes()
    published = tmp_path / "published"
    published.mkdir()
    pack(signed, published / "run.tar")
    (signed / MANIFEST_SIGNATURE).write_bytes(b'{"not": "what was verified"}')
    pack(signed, tmp_path / "swapped.tar")

    def verify_then_swap(*args: Any, **kwargs: Any) -> Verification:
        done = verify_bundle(*args, **kwargs)
        os.replace(tmp_path / "swapped.tar", published / "run.tar")
        return done

    monkeypatch.setattr(cli_bundle, "verify_bundle", verify_then_swap)
    summary = tmp_path / "vsa.json"
    with serve(published) as server:
        url = url_of(server, published / "run.tar")
        code, verdict, _ = _run(_verify(url, trust["root"], "--vsa", str(summary)), capsys)
    assert verdict is not None and verdict["signature"]["status"] == "verified"
    if code == 0 and summary.exists():
        inputs = json.loads(summary.read_bytes())["predicate"]["inputAttestations"]
        assert inputs == [
            {"uri": MANIFEST_SIGNATURE, "digest": {"sha256": hashlib.sha256(verified).hexdigest()}}
        ]


def test_the_summary_policy_is_the_pin_set_that_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest names gx10-reference-v5; judged by gx10-qualification-v5, the summary's
    policy is the latter, with its digest."""
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    summary = tmp_path / "vsa.json"
    judge = load_builtin("gx10-qualification-v5")
    _run(["verify", str(bundle), "--pins", "gx10-qualification-v5", "--vsa", str(summary)], capsys)
    predicate = json.loads(summary.read_bytes())["predicate"]
    assert predicate["policy"] == {
        "uri": "urn:evidence-audit:pin-set:gx10-qualification-v5",
        "digest": {"sha256": judge.digest.removeprefix("sha256:")},
    }
    assert predicate["evidenceAuditVerdict"]["pin_set"]["id"] == "gx10-qualification-v5"
    assert predicate["verificationResult"] == "FAILED"


def test_a_resource_uri_cannot_inject_a_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    summary = tmp_path / "vsa.json"
    uri = 'https://e.test/x.tar"},"verificationResult":"PASSED","x":{"y":"'
    code, _, err = _run(
        ["verify", str(bundle), "--vsa", str(summary), "--resource-uri", uri], capsys
    )
    if code == 2:  # refused as no URI: as safe
        assert not summary.exists(), err
        return
    statement = json.loads(summary.read_bytes())
    assert statement["predicate"]["resourceUri"] == uri
    assert statement["predicate"]["verificationResult"] == "FAILED"
    assert "x" not in statement["predicate"]
