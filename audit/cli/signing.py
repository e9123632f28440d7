"""The signing side of the command line: options, ``sign``, ``verify-attestation``, ``trust-root``.

Nothing here imports sigstore at module level (``audit --help`` does not pay for it).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console

from audit._store import output_target, write_atomically
from audit.cli._common import PROG, Handler, Subparsers, example, optional_pins
from audit.signing import DEFAULT_INSTANCE, INSTANCES
from bundle_schema import canonical_bytes, digest_of
from bundle_schema.attestation import (
    VSA_PREDICATE_TYPE,
    bare_uri,
    flat_fields,
    is_bare_uri,
    read_verification_statement,
    read_verification_summary,
    statement_difference,
    subject_digest,
    verification_statement,
    verification_summary,
)
from bundle_schema.errors import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    CheckFailed,
    EvidenceAuditError,
    InvalidInput,
    one_line,
)
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import (
    MAX_RESOURCE_URI,
    AttestationReport,
    Verdict,
    VerificationStatement,
    VsaStatement,
)
from pins import load_builtin
from verify import (
    DEFAULT_ROOT,
    MAX_SIGNATURE_SIZE,
    PINS_FILE,
    SHIPPED_ROOTS,
    IdentityPolicy,
    SignatureFailed,
    TrustRoot,
    build_verifier,
    check_attestation,
    is_url,
    open_source,
    read_capped,
    shipped_root,
    shown_url,
    trust_root_from_file,
    verify_bundle,
)
from verify.policy import REQUIREMENTS, failed_check, unmet_requirement
from verify.render import describe_signature

__all__ = [
    "add_policy_options",
    "add_signer_options",
    "attest",
    "policy_from",
    "register",
    "replace_shipped_root",
    "sign_after_run",
    "signer_from",
    "summarize",
    "verdict_difference",
]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``sign``, ``verify-attestation`` and ``trust-root`` to ``commands``; return their
    handlers."""
    _sign_parser(commands)
    _verify_attestation_parser(commands)
    _trust_root_parser(commands)
    return {
        "sign": _sign_command,
        "verify-attestation": _verify_attestation_command,
        "trust-root": _trust_root_command,
    }


def add_policy_options(parser: argparse.ArgumentParser, *, attest: bool = False) -> None:
    """--identity, --issuer and the trust root they are checked under (and --attest)."""
    group = parser.add_argument_group("signature (checked offline)")
    if attest:
        group.add_argument(
            "--attest",
            metavar="FILE.json",
            help="also write the verdict as an in-toto Statement (sign it: audit sign --statement)",
        )
        group.add_argument(
            "--vsa",
            metavar="FILE.json",
            help="also write a SLSA Verification Summary (v1) Statement: PASSED only for a "
            "rankable result whose checks all passed (sign it: audit sign --statement)",
        )
        group.add_argument(
            "--resource-uri",
            metavar="URI",
            type=_published_uri,
            help="with --vsa: where the bundle was published, with no user name, password, query "
            "or fragment (default: PATH without those when it is a URL, else a file: URI of it)",
        )
    group.add_argument(
        "--identity",
        metavar="ID",
        help="who must have signed: the certificate's identity (an e-mail, or a URI such as a "
        "GitHub Actions workflow ref)",
    )
    group.add_argument(
        "--issuer",
        metavar="URL",
        help="the OIDC issuer of that identity (e.g. https://token.actions.githubusercontent.com)",
    )
    roots = group.add_mutually_exclusive_group()
    roots.add_argument(
        "--trusted-root",
        metavar="FILE",
        help="a Sigstore trusted_root.json to trust instead of the shipped production root",
    )
    roots.add_argument(
        "--trust",
        choices=SHIPPED_ROOTS,
        help=f"which shipped, hash-pinned root to trust (default: {DEFAULT_ROOT})",
    )


def _published_uri(text: str) -> str:
    """``--resource-uri``: recorded as given, so it must be a URI that carries no credentials,
    that splits as a URL and is its own bare form (a tab or line break, which URL parsers drop,
    would be recorded otherwise than given), in printable characters."""
    try:
        bare = bare_uri(text)
    except ValueError:  # an unclosed IPv6 bracket, a port that is no number
        bare = None
    if len(text) > MAX_RESOURCE_URI:
        raise argparse.ArgumentTypeError(
            f"a URI of {len(text):,} characters: a Verification Summary's resourceUri holds at "
            f"most {MAX_RESOURCE_URI:,}"
        )
    if is_bare_uri(text) and bare == text and text.isprintable() and " " not in text:
        return text
    # nothing of what was given is echoed: it may hold the very credential refused
    raise argparse.ArgumentTypeError(
        "not a URI without a user name, password, query, fragment or '@': a Verification "
        "Summary is published, and a presigned URL's query is its signature; give the "
        "bundle's URI as scheme://host/path"
    )


def policy_from(args: argparse.Namespace, *, required: bool = False) -> IdentityPolicy | None:
    """The identity policy the options name, or None when neither --identity nor --issuer is given.

    Raises:
        InvalidInput: only one of the two is given (or neither, when ``required``), or the trust
            root cannot be loaded.
    """
    if args.identity is None and args.issuer is None and not required:
        root = (
            "--trusted-root" if args.trusted_root is not None else "--trust" if args.trust else None
        )
        if root is not None:  # a root no signature is checked under: a command not as meant
            raise InvalidInput(
                f"{root} is the root a signature is checked under: give --identity and --issuer too"
            )
        return None
    if args.identity is None or args.issuer is None:
        raise InvalidInput("give both --identity and --issuer: a signature is checked against both")
    for option, value in (("--identity", args.identity), ("--issuer", args.issuer)):
        if not value.strip():
            raise InvalidInput(
                f"{option} is empty: a signature is checked against both an identity and an "
                "issuer (an empty one would match any)"
            )
    trust = (
        trust_root_from_file(args.trusted_root)
        if args.trusted_root
        else shipped_root(args.trust or DEFAULT_ROOT)
    )
    return IdentityPolicy(args.identity, args.issuer, trust)


def add_signer_options(parser: argparse.ArgumentParser) -> None:
    """Where the signing identity and the Sigstore instance come from."""
    group = parser.add_argument_group("signing (keyless Sigstore)")
    group.add_argument(
        "--identity-token",
        metavar="JWT",
        help="an OIDC identity token (default: $SIGSTORE_ID_TOKEN, then ambient CI credentials)",
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--instance",
        choices=INSTANCES,
        default=DEFAULT_INSTANCE,
        help="the public Sigstore instance to sign with (default: %(default)s)",
    )
    where.add_argument(
        "--trust-config",
        metavar="FILE",
        help="a Sigstore ClientTrustConfig JSON file describing a custom instance",
    )


def signer_from(args: argparse.Namespace) -> tuple[Any, Any]:
    """The signing context and identity token the options name (sigstore loads here)."""
    from audit.signing import identity_token, signing_context  # noqa: PLC0415 - loads sigstore

    token = identity_token(args.identity_token)
    return signing_context(args.instance, args.trust_config), token


def sign_after_run(args: argparse.Namespace, out: Console) -> Path:
    """``audit run --sign``: sign the bundle just sealed (a fresh ambient token, if ambient).

    Raises:
        CheckFailed: signing failed; the sealed bundle stays, unsigned, and the message says how
            to sign it later.
    """
    from audit.signing import sign_bundle  # noqa: PLC0415 - loads sigstore

    try:
        signed = sign_bundle(args.out, lambda: signer_from(args))
    except EvidenceAuditError as exc:
        raise CheckFailed(
            f"the bundle is sealed in {args.out} but not signed: {exc}; "
            f"sign it with: audit sign {args.out}"
        ) from None
    if not args.json:
        out.print(f"signed as {signed.identity} ({signed.issuer}); wrote {signed.signature}")
    return signed.signature


# --- audit sign ----------------------------------------------------------------------------------


def _sign_parser(commands: Subparsers) -> None:
    sign = commands.add_parser(
        "sign",
        help="sign a bundle (or a verification attestation or summary) with Sigstore",
        description="Keyless Sigstore signing. Given a bundle directory: check its integrity, "
        "sign an in-toto Statement whose subject is the bundle's manifest, and store the "
        "Sigstore bundle as signatures/manifest.sigstore.json. Given --statement: sign that "
        "Statement (as written by audit verify --attest or --vsa) into FILE.sigstore.json; one "
        "that is not what audit verify writes for the verdict it carries (an edited result, "
        "subject or policy) is refused (exit 2). Needs the network (Fulcio and Rekor) and an "
        "OIDC identity. Exit 1 when signing fails.",
        epilog=example("audit sign runs/today"),
    )
    sign.add_argument("bundle", nargs="?", metavar="BUNDLE", help="a bundle directory")
    sign.add_argument(
        "--statement",
        metavar="FILE",
        help="a Statement to sign: a verification attestation (audit verify --attest) or a SLSA "
        "Verification Summary (audit verify --vsa)",
    )
    sign.add_argument("-o", "--output", metavar="FILE", help="with --statement: where to write")
    sign.add_argument("--replace", action="store_true", help="replace an existing signature")
    add_signer_options(sign)


def _sign_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    from audit.signing import sign_bundle, sign_statement  # noqa: PLC0415 - loads sigstore

    if (args.bundle is None) == (args.statement is None):
        raise InvalidInput("give either a bundle directory or --statement FILE")
    if args.statement is None and args.output is not None:
        raise InvalidInput(
            f"-o {args.output}: a bundle's signature is written into the bundle "
            "(signature.sigstore.json); -o names where a Statement's goes"
        )
    if args.statement is None:
        signed = sign_bundle(args.bundle, lambda: signer_from(args), replace=args.replace)
        out.print(
            f"signed {signed.bundle_digest} as {signed.identity} ({signed.issuer}); "
            f"wrote {signed.signature}"
        )
        return EXIT_OK
    statement = read_capped(args.statement, MAX_SIGNATURE_SIZE, "a Statement")
    parsed = _attestation(statement, args.statement)
    difference = statement_difference(parsed, _as_written(parsed))
    if difference is not None:
        raise InvalidInput(
            f"{args.statement}: {difference} is not what audit verify writes for the verdict "
            "the Statement carries; only a Statement as audit verify wrote it is signed"
        )
    subject = subject_digest(parsed)
    target = output_target(args.output or f"{args.statement}.sigstore.json")
    if target.exists() and os.path.samefile(target, args.statement):
        raise InvalidInput(f"{target}: the Statement it signs; write the signature beside it")
    if target.exists() and not args.replace:
        raise InvalidInput(f"{target}: exists; pass --replace to overwrite it")
    context, token = signer_from(args)
    signature = sign_statement(statement, context, token)
    write_atomically(target, [signature])
    out.print(
        f"signed the attestation of {subject} as {token.identity} ({token.issuer}); wrote {target}"
    )
    return EXIT_OK


# --- audit verify --attest -------------------------------------------------------------------


def attest(verdict: Verdict, path: str) -> Path:
    """Write the verdict as an in-toto Statement (canonical JSON) to ``path``."""
    target = Path(path)
    write_atomically(target, [verification_statement(verdict)])
    return target


def _attestation(data: bytes, where: str) -> VerificationStatement | VsaStatement:
    """A Statement ``audit verify`` writes (--attest or --vsa), by its predicate type."""
    try:
        kind = json.loads(data).get("predicateType")
    except (ValueError, AttributeError, RecursionError):
        kind = None  # the strict reader below says what is wrong with it
    if kind == VSA_PREDICATE_TYPE:
        return read_verification_summary(data, where)
    return read_verification_statement(data, where)


def _as_written(statement: VerificationStatement | VsaStatement) -> bytes:
    """The Statement ``audit verify`` writes for the verdict ``statement`` carries (--attest),
    or (--vsa) for it at the time, place and input attestation the summary names: its result
    the one that verdict gives, its subject, policy and verifier the verdict's."""
    if isinstance(statement, VerificationStatement):
        return verification_statement(statement.predicate.verdict)
    summary = statement.predicate
    inputs = summary.input_attestations
    return _summary(
        summary.evidence_audit_verdict,
        summary.time_verified,
        summary.resource_uri,
        "sha256:" + inputs[0].digest.sha256 if len(inputs) == 1 else None,
    )


def _summary(
    verdict: Verdict, time_verified: str, resource_uri: str, signature_digest: str | None
) -> bytes:
    """The Verification Summary ``audit verify --vsa`` writes of ``verdict``: PASSED only when
    every check passed and the result is rankable (verify.policy); the bundle's own signature
    the input attestation when it verified, by ``signature_digest``."""
    signature = None
    if verdict.signature.status == "verified" and signature_digest is not None:
        signature = (MANIFEST_SIGNATURE, signature_digest)
    return verification_summary(
        verdict,
        passed=failed_check(verdict, ["rankable"]) is None,
        time_verified=time_verified,
        resource_uri=resource_uri,
        signature=signature,
    )


_EPOCH = re.compile(r"[0-9]{1,12}")


def summary_time() -> dt.datetime | None:
    """When a Verification Summary says it verified, where the environment fixes it:
    ``SOURCE_DATE_EPOCH`` (whole seconds, ASCII digits, up to the end of year 9999, which RFC
    3339 holds); None when it is not set (the summary says when it is written). Read once, before
    the bundle is.

    Raises:
        InvalidInput: ``SOURCE_DATE_EPOCH`` is set to anything else.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return None
    if _EPOCH.fullmatch(epoch):
        with contextlib.suppress(OverflowError, ValueError, OSError):
            moment = dt.datetime.fromtimestamp(int(epoch), dt.UTC)
            if moment.year <= 9999:
                return moment
    raise InvalidInput(
        f"SOURCE_DATE_EPOCH={ascii(epoch)[:40]}: not a whole number of seconds from 1970 to the "
        "end of year 9999"
    )


def summarize(
    verdict: Verdict,
    path: str,
    resource_uri: str,
    *,
    signature_digest: str | None,
    moment: dt.datetime | None,
) -> Path:
    """Write the verification of a bundle, read at ``resource_uri`` (:func:`summarized`, taken
    before the verification), as a SLSA Verification Summary Statement to ``path``.

    PASSED only when every check passed and the result is rankable (verify.policy); the time is
    ``moment`` (:func:`summary_time`: ``SOURCE_DATE_EPOCH``, for reproducible output), else now;
    the bundle's own signature is the input attestation when it verified, by the digest of the
    bytes the check read (``signature_digest``, :attr:`verify.Verification.signature_digest`),
    never a second read of the bundle.
    """
    moment = moment or dt.datetime.now(dt.UTC)
    target = Path(path)
    time_verified = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    write_atomically(target, [_summary(verdict, time_verified, resource_uri, signature_digest)])
    return target


def summarized(bundle: str, resource_uri: str | None) -> tuple[str, str]:
    """What ``audit verify --vsa`` reads, and the ``resourceUri`` its summary records, both
    taken before the verification: the bundle's URL and that URL without userinfo, query or
    fragment (ADR 0023), or its path resolved and that path's ``file:`` URI (the resolved path
    is what is read, so that the summary never names a file another than the one verified: a
    symbolic link on the path repointed during the verification changes neither);
    ``resource_uri`` instead, when given.

    Raises:
        InvalidInput: the ``file:`` URI is longer than a summary holds.
    """
    if is_url(bundle):
        return bundle, resource_uri or bare_uri(bundle)
    resolved = Path(bundle).resolve()
    uri = resource_uri or resolved.as_uri()
    if len(uri) > MAX_RESOURCE_URI:
        raise InvalidInput(
            f"{bundle}: its file: URI is {len(uri):,} characters, more than a Verification "
            f"Summary's resourceUri holds ({MAX_RESOURCE_URI:,}): give --resource-uri"
        )
    return str(resolved), uri


# --- audit verify-attestation ------------------------------------------------------------------


def _verify_attestation_parser(commands: Subparsers) -> None:
    check = commands.add_parser(
        "verify-attestation",
        help="check a signed verification attestation offline",
        description="Check, offline, a Sigstore-signed verification attestation (from audit "
        "verify --attest, then audit sign --statement): the signature under --identity and "
        "--issuer, the payload and predicate types, and, with --bundle, that it is about that "
        "bundle and that this verifier, verifying the bundle again now under the attested pin "
        "set (or --pins), reaches the attested verdict: every field of the canonical verdict "
        "but 'verifier' (integrity, gates, scores, outcome, validity, profile decision, "
        "rankability, reasons, claims, and the bundle's signature, checked again under the "
        "identity and issuer the attested verdict names). Prints the attested verdict. Exit 1 "
        "when the signature fails, the verdict differs (one line names the first field that "
        "differs), or a --require is not met by the attested verdict.",
        epilog=example(
            "audit verify-attestation verdict.json.sigstore.json --identity release@example.com "
            "--issuer https://accounts.google.com --bundle run.tar"
        ),
    )
    check.add_argument(
        "attestation",
        metavar="FILE.sigstore.json",
        help="the signed attestation (audit verify --attest, then audit sign --statement)",
    )
    check.add_argument(
        "--bundle",
        metavar="PATH",
        help="the attested bundle (a directory or .tar, or a tar's URL) must be this one, and "
        "verifying it now must give the attested verdict",
    )
    check.add_argument(
        "--pins",
        metavar="FILE.toml|ID",
        help="with --bundle: the pin set to verify it under, when the attested one is not shipped "
        "(default: the shipped pin set of the attested id; a digest that differs is a difference)",
    )
    check.add_argument(
        "--require",
        action="append",
        default=[],
        choices=[r for r in REQUIREMENTS if r != "signed"],
        help="exit 1 unless the attested verdict meets this (repeatable)",
    )
    check.add_argument("--json", action="store_true", help="print the report as canonical JSON")
    add_policy_options(check)


def _verify_attestation_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.pins is not None and args.bundle is None:
        raise InvalidInput("--pins is the pin set --bundle is verified under: give --bundle too")
    policy = policy_from(args, required=True)
    assert policy is not None  # noqa: S101 - required=True never returns None
    data = read_capped(args.attestation, MAX_SIGNATURE_SIZE, "a Sigstore bundle")
    bundle_digest = None
    if args.bundle is not None:
        bundle_digest = digest_of(open_source(args.bundle).manifest_bytes())
    signature, statement = check_attestation(
        data, policy, args.attestation, bundle_digest=bundle_digest
    )
    verdict = statement.predicate.verdict if statement is not None else None
    difference = None
    if statement is not None and args.bundle is not None:
        fresh = _verify_again(args, policy, statement)
        difference = verdict_difference(statement.predicate.verdict, fresh)
    report = AttestationReport(
        schema_version=1,
        signature=signature,
        bundle_digest=verdict.bundle_digest if verdict is not None else None,
        verdict=verdict,
    )
    if args.json:
        sys.stdout.buffer.write(canonical_bytes(report.model_dump(mode="json")) + b"\n")
        sys.stdout.flush()
    else:
        _render_attestation(report, out)
    if verdict is None:
        sys.stderr.write(f"{PROG} verify-attestation: signature failed: {signature.reason}\n")
        return EXIT_CHECK_FAILED
    if difference is not None:
        sys.stderr.write(
            f"{PROG} verify-attestation: the attested verdict is not the one this verifier "
            f"reaches for {shown_url(args.bundle)} now: {difference}\n"
        )
        return EXIT_CHECK_FAILED
    if args.bundle is not None and not args.json:
        out.print(
            f"re-verified {shown_url(args.bundle)}: this verifier reaches the attested verdict",
            soft_wrap=True,
        )
    unmet = unmet_requirement(verdict, args.require)
    if unmet is not None:
        sys.stderr.write(f"{PROG} verify-attestation: requirement not met: {unmet}\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _verify_again(
    args: argparse.Namespace, policy: IdentityPolicy, statement: VerificationStatement
) -> Verdict:
    """Verify the bundle of ``--bundle`` now, as the attested verdict was made: under the
    attested pin set (or ``--pins``), and its signature under the attested identity policy."""
    pins = optional_pins(args.pins) or load_builtin(statement.predicate.pin_set.id)
    check = statement.predicate.verdict.signature
    bundle_policy = None
    identity, issuer = check.identity or "", check.issuer or ""
    # an empty one matches any (policy_from refuses it): the verdict is then not reached again
    if check.status == "verified" and identity.strip() and issuer.strip():
        root = _root_for(check.trusted_root, policy.trust)
        bundle_policy = IdentityPolicy(identity, issuer, root)
    fresh = verify_bundle(args.bundle, pins=pins, signature_policy=bundle_policy).verdict
    if check.status == "failed" and fresh.signature.status == "unchecked":
        # A failed check records no identity to check it under again: the bundle must still
        # carry a signature, and the attested failure stands for what that check found.
        fresh = fresh.model_copy(update={"signature": check})
    return fresh


def _root_for(digest: str | None, given: TrustRoot) -> TrustRoot:
    """The trust root the attested bundle signature was checked under: the given one, or the
    shipped one with that digest; otherwise the given one (a difference the comparison names)."""
    if digest is None or given.digest == digest:
        return given
    for name in SHIPPED_ROOTS:
        root = shipped_root(name)
        if root.digest == digest:
            return root
    return given


_ABSENT = object()
"""A field one verdict has and the other has not (a longer list)."""

_FIRST = (
    "pin_set.id",
    "pin_set.digest",
    "integrity.status",
    "signature.status",
    "outcome",
    "result_validity",
    "profile_decision",
    "rankable",
    "claims.match",
)
"""The fields named first when they differ (the causes, then the decisions); then the others by
their dotted path."""


def verdict_difference(attested: Verdict, fresh: Verdict) -> str | None:
    """The first field where the attested verdict and a fresh one differ (see :data:`_FIRST`),
    on one line, with how many differ; None when every field but ``verifier`` is the same."""
    left = flat_fields(attested.model_dump(mode="json", exclude={"verifier"}))
    right = flat_fields(fresh.model_dump(mode="json", exclude={"verifier"}))
    fields = sorted(
        (f for f in left.keys() | right.keys() if left.get(f, _ABSENT) != right.get(f, _ABSENT)),
        key=lambda f: (_FIRST.index(f) if f in _FIRST else len(_FIRST), f),
    )
    if not fields:
        return None
    first = fields[0]
    more = f" ({len(fields)} fields differ)" if len(fields) > 1 else ""
    return one_line(
        f"{first}: attested {_shown(left.get(first, _ABSENT))}, "
        f"now {_shown(right.get(first, _ABSENT))}{more}"
    )


def _shown(value: object) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value)[:200]


def _render_attestation(report: AttestationReport, out: Console) -> None:
    out.print(f"signature: {describe_signature(report.signature)}")
    verdict = report.verdict
    if verdict is None:
        return
    out.print(f"attests bundle {verdict.bundle_digest} (run {verdict.run_id})")
    out.print(
        f"verdict: {verdict.outcome} / {verdict.result_validity} / {verdict.profile_decision}; "
        f"rankable: {'yes' if verdict.rankable else 'no'}; integrity: {verdict.integrity.status}; "
        f"bundle signature: {verdict.signature.status}"
    )
    out.print(
        f"by {verdict.verifier.name} {verdict.verifier.version}, pin set {verdict.pin_set.id}"
    )


# --- audit trust-root ----------------------------------------------------------------------------


def _trust_root_parser(commands: Subparsers) -> None:
    root = commands.add_parser(
        "trust-root",
        help="show or replace the shipped Sigstore trust roots",
        description="The verifier trusts the shipped production root by default (staging with "
        "--trust staging), each pinned by its SHA-256 in verify/trust/SHA256SUMS and checked at "
        "every load. 'show' prints them; 'update NAME FILE' replaces one with a trusted_root.json "
        "you have obtained and checked yourself (e.g. from Sigstore's TUF repository), and pins "
        "its new digest. Nothing is ever fetched.",
        epilog=example("audit trust-root show"),
    )
    actions = root.add_subparsers(
        dest="action", metavar="ACTION", required=True, help="show or update"
    )
    show = actions.add_parser(
        "show",
        help="print each shipped root's digest and contents",
        description="Print each shipped root's digest and what it trusts (CAs, transparency "
        "logs, timestamp authorities, with their validity), or describe another file.",
        epilog=example("audit trust-root show --trusted-root trusted_root.json"),
    )
    show.add_argument("--trusted-root", metavar="FILE", help="describe this file instead")
    update = actions.add_parser(
        "update",
        help="replace a shipped root, explicitly",
        description="Replace a shipped root with FILE, refused unless its SHA-256 is the one "
        "given, and pin its new digest.",
        epilog=example(
            "audit trust-root update staging trusted_root.json --expect-sha256 "
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ),
    )
    update.add_argument("name", choices=SHIPPED_ROOTS, help="the shipped root to replace")
    update.add_argument("file", metavar="FILE", help="the new trusted_root.json")
    update.add_argument(
        "--expect-sha256",
        required=True,
        metavar="HEX",
        help="the SHA-256 of FILE as obtained from a source you trust; refused if it differs",
    )


def _describe_root(root: TrustRoot, out: Console) -> None:
    value = json.loads(root.data)
    out.print(f"{root.name}: {root.digest}", soft_wrap=True)
    for label, key in (("CA", "certificateAuthorities"), ("tlog", "tlogs"), ("ctlog", "ctlogs")):
        for item in value.get(key, []):
            url = item.get("uri") or item.get("baseUrl")
            valid = item.get("validFor") or item.get("publicKey", {}).get("validFor", {})
            span = f"{valid.get('start', '?')} .. {valid.get('end', 'open')}"
            out.print(f"  {label:6} {url}  {span}", soft_wrap=True)
    for item in value.get("timestampAuthorities", []):
        out.print(f"  TSA    {item.get('uri')}", soft_wrap=True)


def _trust_root_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.action == "show":
        if args.trusted_root:
            _describe_root(trust_root_from_file(args.trusted_root), out)
        else:
            for name in SHIPPED_ROOTS:
                _describe_root(shipped_root(name), out)
        return EXIT_OK
    new = trust_root_from_file(args.file)
    expected = "sha256:" + args.expect_sha256.lower().removeprefix("sha256:")
    if new.digest != expected:
        raise InvalidInput(f"{args.file}: sha256 is {new.digest}, not the expected {expected}")
    folder = Path(str(resources.files("verify") / "trust"))
    check = replace_shipped_root(folder, args.name, new)
    out.print(f"{args.name} trust root replaced: {check.digest} in {os.fspath(folder)}")
    return EXIT_OK


def replace_shipped_root(folder: Path, name: str, new: TrustRoot) -> TrustRoot:
    """Write a new shipped root into ``folder`` and pin its digest in SHA256SUMS.

    Raises:
        InvalidInput: sigstore cannot use the new root (nothing is written).
    """
    _usable(new)
    file_name = f"{name}.trusted_root.json"
    sums = (folder / PINS_FILE).read_bytes().decode("ascii").splitlines()
    lines = [line for line in sums if line.partition("  ")[2] != file_name]
    lines.append(f"{new.digest.removeprefix('sha256:')}  {file_name}")
    lines.sort(key=lambda line: line.partition("  ")[2])
    # The root first, then its pin: an interrupted update leaves a mismatch that refuses to load.
    write_atomically(folder / file_name, [new.data])
    write_atomically(folder / PINS_FILE, ["\n".join(lines).encode() + b"\n"])
    return shipped_root(name, folder)


def _usable(root: TrustRoot) -> None:
    """Refuse a root that sigstore cannot build a verifier from."""
    try:
        build_verifier(root)
    except SignatureFailed as exc:
        raise InvalidInput(str(exc)) from None
