"""The commands that judge one or two bundles: ``verify``, ``show`` and ``diff``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit._store import output_target, write_atomically
from audit.cli import signing
from audit.cli._common import (
    PROG,
    Handler,
    Subparsers,
    digest,
    example,
    optional_pins,
    positive,
    print_json,
)
from bundle_schema import canonical_bytes
from bundle_schema.errors import EXIT_CHECK_FAILED, EXIT_OK, InvalidInput
from bundle_schema.models import Gx10Evidence, ShowReport, Verdict
from verify import (
    open_source,
    render_verdict,
    shown_url,
    verdict_json,
    verify_bundle,
    verify_with_evidence,
)
from verify.diffing import diff_runs
from verify.exchange import RecordedExchange, exchange_view, read_exchange, render_exchange
from verify.forensics import show_report
from verify.policy import REQUIREMENTS, failed_check
from verify.render import ProgressBar, plain_text, render_show
from verify.report_html import report_html

__all__ = ["register"]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``verify``, ``show`` and ``diff`` to ``commands``; return their handlers."""
    verify = commands.add_parser(
        "verify",
        help="check a bundle offline: integrity, signature, replay, claims",
        description="Check a bundle (directory or tar) offline: strict manifest, every blob "
        "hashed, every evidence record validated; then replay the run under its pin set (hard "
        "gates, scores, outcome, validity, profile decision, rankability) and compare with the "
        "runner's claims. With --identity and --issuer, the bundle's Sigstore signature is "
        "checked offline against a pinned trust root, and an unsigned bundle fails. Exit 1 when "
        "integrity fails, the signature fails, or the claims differ from the replay; a "
        "NOT_QUALIFIED or INFRA_ERROR verdict is a result, not a failure of the check.",
        epilog=example("audit verify build/demo/gx10-full-qualified.tar --require qualified"),
    )
    verify.add_argument(
        "path",
        metavar="PATH",
        help="bundle directory or .tar, or a tar's URL (file://, http(s)://, s3://)",
    )
    verify.add_argument("--json", action="store_true", help="print the verdict as canonical JSON")
    verify.add_argument(
        "--expect-digest",
        type=digest,
        metavar="DIGEST",
        help="fail unless the bundle digest is this one (as published)",
    )
    verify.add_argument(
        "--workers", type=positive, metavar="N", help="hashing threads (default: cores)"
    )
    verify.add_argument(
        "--pins",
        metavar="FILE.toml|ID",
        help="judge the run by this pin set (default: the shipped pin set the bundle names)",
    )
    verify.add_argument(
        "--require",
        action="append",
        default=[],
        choices=list(REQUIREMENTS),
        help="exit 1 unless the verdict meets this (repeatable): rankable, qualified (outcome "
        "QUALIFIED), valid (result validity VALID), signed (a verified signature)",
    )
    verify.add_argument(
        "--evidence-out",
        metavar="FILE.json",
        help="also write the evidence the replay read, as one gx10-evidence document "
        "(what `audit score gx10` replays without the bundle)",
    )
    signing.add_policy_options(verify, attest=True)

    show = commands.add_parser(
        "show",
        help="a reviewer's view of one bundle",
        description="Verify a bundle and show it for review, the answer first: the verdict and "
        "its reasons; what broke (for a result that is not a valid model decision, which part "
        "failed, its first evidence, what the model had done before it, and the best and worst "
        "aggregate the run could have reached; a model substitution names the exchanges and the "
        "model that answered them; a bundle that fails integrity leads with its first finding "
        "and gets no aggregate; every task or component that ran out of time, with its "
        "exchanges and whether the model or the agent was the slow one); then the scores; then "
        "each gate; then the timeline against its limits, the transport log summarized, the "
        "non-loopback socket attempts, the evidence each gate read (digests whole), checkouts "
        "and identity. Exit 1, after the report, when the check fails as `audit verify`'s does "
        "(integrity, signature, claims differing from the replay).",
        epilog=example("audit show build/demo/gx10-full-infra-error --html report.html"),
    )
    show.add_argument(
        "path",
        metavar="PATH",
        help="bundle directory or .tar, or a tar's URL (file://, http(s)://, s3://)",
    )
    show.add_argument("--pins", metavar="FILE.toml|ID", help="judge by this pin set")
    show.add_argument("--json", action="store_true", help="print the report as canonical JSON")
    show.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write the report as one self-contained HTML file (no network needed to view it)",
    )
    show.add_argument(
        "--exchange",
        type=_exchange_id,
        metavar="N",
        help="print only transport exchange N (its id as recorded), the exact bytes: request line, "
        "headers and body, response status, headers and body, every streamed chunk with its "
        "time and the gap to the one before, and the gates and forensic evidence that cite it. "
        "JSON bodies are re-indented (whitespace only), other text printed as it is, bodies "
        "that are not UTF-8 as their base64; nothing is cut. With --json, one exchange-view "
        "document. Exit 1 (after printing) when the bundle fails verification, e.g. integrity; "
        "exit 2 for an id the log does not hold",
    )
    signing.add_policy_options(show)

    diff = commands.add_parser(
        "diff",
        help="what differs between two bundles",
        description="Verify two bundles and list what differs: pin set, model digest (and how "
        "it was known), engine and version, reasoning policy, upstream commits, integrity and "
        "signature, verdict, scores (with deltas, B - A) and gates. Exit 0 when both are the "
        "same deployment (pin set, model, engine, reasoning policy, upstream commits) with the "
        "same verdict and both pass their checks "
        "(integrity, signature, claims), 1 otherwise (a different deployment is 1 even when the "
        "verdicts agree; a failed check is named on stderr).",
        epilog=example(
            "audit diff build/demo/gx10-full-qualified build/demo/gx10-full-not-qualified"
        ),
    )
    diff.add_argument("a", metavar="A", help="the first bundle (directory or .tar, or a tar's URL)")
    diff.add_argument("b", metavar="B", help="the second bundle, compared with A")
    diff.add_argument("--pins", metavar="FILE.toml|ID", help="judge both by this pin set")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")
    return {"verify": _verify, "show": _show, "diff": _diff}


def _outputs(bundle: str, args: argparse.Namespace, *paths: str | None) -> None:
    """Refuse, before any work, an output a command was asked to write that it must not
    write (:func:`audit._store.output_target`), two outputs that name one file (the second
    written would replace the first), and an output that is a file the command reads (its
    ``--pins`` file or ``--trusted-root``, which it would replace)."""
    seen: dict[str, str] = {}
    read = {
        option: given
        for option, given in (("--pins", args.pins), ("--trusted-root", args.trusted_root))
        if given is not None and os.path.isfile(given)
    }
    for path in paths:
        if path is None:
            continue
        target = output_target(path, bundle)
        key = os.path.realpath(target)
        if key in seen:
            raise InvalidInput(
                f"{path}: named for two outputs (as {seen[key]} too); give each its own file"
            )
        seen[key] = path
        for option, given in read.items():
            if target.exists() and os.path.samefile(target, given):
                raise InvalidInput(f"{path}: is the {option} file the command reads")


def _verify(args: argparse.Namespace, out: Console, err: Console) -> int:
    _outputs(args.path, args, args.evidence_out, args.attest, args.vsa)
    if args.resource_uri is not None and args.vsa is None:
        raise InvalidInput("--resource-uri is recorded in a Verification Summary: give --vsa FILE")
    moment = signing.summary_time() if args.vsa is not None else None  # refused before any work
    read, uri = args.path, ""
    if args.vsa is not None:  # what the summary names is what is read
        read, uri = signing.summarized(args.path, args.resource_uri)
    policy = signing.policy_from(args)
    with ProgressBar(err) as bar:
        done = verify_bundle(
            read,
            expect_digest=args.expect_digest,
            workers=args.workers,
            progress=bar.factory,
            pins=optional_pins(args.pins),
            signature_policy=policy,
            # without --evidence-out bounded: memory does not grow with the records (ADR 0012)
            keep_evidence=args.evidence_out is not None,
        )
    verdict = done.verdict
    if args.evidence_out is not None:
        data = canonical_bytes(done.evidence.model_dump(mode="json")) + b"\n"
        write_atomically(Path(args.evidence_out), [data])
    if args.attest is not None:
        signing.attest(verdict, args.attest)
    if args.vsa is not None:
        signing.summarize(
            verdict,
            args.vsa,
            uri,
            signature_digest=done.signature_digest,
            moment=moment,
        )
    if args.json:
        sys.stdout.buffer.write(verdict_json(verdict))
        sys.stdout.flush()
    else:
        render_verdict(verdict, out, shown_url(args.path))
    failed = done.failed_check(args.require)
    if failed is not None:
        sys.stderr.write(f"{PROG} verify: {failed}\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _show(args: argparse.Namespace, out: Console, err: Console) -> int:
    _outputs(args.path, args, args.html)
    policy = signing.policy_from(args)
    done = verify_bundle(
        args.path, pins=optional_pins(args.pins), signature_policy=policy, keep_evidence=True
    )
    verdict, evidence, manifest, judged = done.verdict, done.evidence, done.manifest, done.pins
    report = show_report(verdict, evidence, manifest.model.evidence, judged)
    # an exchange that is not there is exit 2 before anything is written
    recorded = None
    if args.exchange is not None:
        recorded = read_exchange(open_source(args.path), manifest, args.exchange)
    if args.html is not None:
        bounds = judged.pins.thresholds.get(evidence.profile)
        html = report_html(
            report,
            evidence.transport or (),
            evidence.socket_ledger or (),
            bounds.model_dump() if bounds is not None else {},
        )
        write_atomically(Path(args.html), [html.encode()])
    if recorded is not None:
        return _exchange(args, recorded, (verdict, evidence, report), out)
    if args.json:
        print_json(report)
    else:
        render_show(report, out, shown_url(args.path))
    failed = done.failed_check()  # as `audit verify` decides: integrity, signature, claims
    if failed is not None:
        sys.stderr.write(f"{PROG} show: {failed}\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _exchange_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()):  # "٣" and "²" are digits too
        raise argparse.ArgumentTypeError(f"{text!r} is not an exchange id (0, 1, 2, ...)")
    return int(text)


def _exchange(
    args: argparse.Namespace,
    recorded: RecordedExchange,
    shown: tuple[Verdict, Gx10Evidence, ShowReport],
    out: Console,
) -> int:
    """``show --exchange N``: the exchange is printed even when verification fails (the bytes
    are what a forensic reviewer wants), and then the exit is 1 with the failed check."""
    verdict, evidence, report = shown
    failed = failed_check(verdict)
    view = exchange_view(recorded, verdict, evidence, report, failed)
    if args.json:
        print_json(view)
    else:
        render_exchange(view, out, shown_url(args.path))
    if failed is not None:
        sys.stderr.write(f"{PROG} show: {failed}\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _diff(args: argparse.Namespace, out: Console, err: Console) -> int:
    pins = optional_pins(args.pins)
    runs = verify_with_evidence(args.a, pins=pins), verify_with_evidence(args.b, pins=pins)
    result = diff_runs(*runs)
    if args.json:
        print_json(result)
    else:
        deployment = "the same" if result.same_deployment else "DIFFERS"
        verdict = "the same" if result.same_verdict else "DIFFERS"
        compared = f"{shown_url(args.a)} -> {shown_url(args.b)}"
        table = Table(title=plain_text(f"{compared}: deployment {deployment}, verdict {verdict}"))
        for column in ("field", "A", "B", "B - A"):
            table.add_column(column, overflow="fold")
        for side, name in ((result.a, "A"), (result.b, "B")):
            out.print(f"{name}: {side.bundle_digest}, integrity {side.integrity}, "
                      f"signature {side.signature}")  # fmt: skip
        for item in result.differences:
            delta = "" if item.delta is None else f"{item.delta:+g}"
            quoted = _alike(item.a) or _alike(item.b)
            a, b = _side_value(item.a, quoted), _side_value(item.b, quoted)
            table.add_row(plain_text(item.field), a, b, delta)
        out.print(table)
    failed = [
        f"{name} failed its check: {problem}"
        for name, (verdict, _) in zip("AB", runs, strict=True)
        if (problem := failed_check(verdict)) is not None
    ]
    if failed:  # a side whose check fails is no answer to "the same?" (ADR 0019)
        sys.stderr.write(f"{PROG} diff: {'; '.join(failed)}\n")
        return EXIT_CHECK_FAILED
    same = result.same_deployment and result.same_verdict
    return EXIT_OK if same else EXIT_CHECK_FAILED


def _alike(value: bool | float | str | None) -> bool:
    """Whether text could look like other text it differs from: with a character past ASCII (a
    look-alike letter, a no-break or zero-width space), a control character, or space at an
    end."""
    return isinstance(value, str) and not (
        value.isascii() and value.isprintable() and value == value.strip()
    )


def _side_value(value: bool | float | str | None, quoted: bool = False) -> Text | str:
    """A side of a difference in the table: text as it is (never markup), others as JSON; the
    text of both sides as JSON strings, every character past ASCII written out, where either
    could look like the other (:func:`_alike`): ``"reference-model-q8_0\\u200b"``."""
    if value is None:
        return ""
    if isinstance(value, str) and not quoted:
        return plain_text(value)
    return plain_text(json.dumps(value))
