"""The ``audit`` command line: one dispatcher, named exit codes, no traceback for bad input.

Exit codes: 0 done; 1 a check failed; 2 refused input or usage, with one line on stderr that says
what was wrong and where.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit import _signing_cli
from audit._archive import pack, unpack
from audit._store import write_atomically
from bundle_schema import (
    KINDS,
    canonical_bytes,
    generate_schemas,
    loads_strict,
    schema_drift,
    validate_document,
)
from bundle_schema.errors import (
    EXIT_CHECK_FAILED,
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EvidenceAuditError,
    InvalidInput,
    one_line,
)
from bundle_schema.models import (
    DIGEST_PATTERN,
    Gx10Evidence,
    PinSetRef,
    QualityCheck,
    QualityProtocolReport,
    QualitySummaryLine,
    Verdict,
)
from pins import CURRENT, PinSetSource, load_builtin, parse_pin_set
from verify import (
    VERSION,
    BlobCache,
    parse_manifest,
    render_verdict,
    verdict_json,
    verify_bundle,
    verify_with_evidence,
)
from verify._source import open_source, read_capped
from verify.diffing import diff_runs
from verify.forensics import show_report
from verify.gx10 import replay
from verify.ranking import Distinct, Found, contents_key, distinct, rank
from verify.render import ProgressBar, plain_text, ranking_markdown, render_show
from verify.report_html import report_html
from verify.scorers import lmspeed, load_plan, load_shard, quality, score_shards
from verify.scorers.lmspeed import DIMENSIONS

__all__ = ["main"]

PROG = "audit"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_INVALID_INPUT)


def _digest(text: str) -> str:
    if not re.match(DIGEST_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not sha256:<64 lowercase hex>")
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Record LLM deployment qualification runs as evidence bundles; verify them.",
        epilog="Exit codes: 0 done, 1 a check failed, 2 refused input or usage.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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
    )
    verify.add_argument("path", metavar="PATH", help="bundle directory or .tar")
    verify.add_argument("--json", action="store_true", help="print the verdict as canonical JSON")
    verify.add_argument(
        "--expect-digest",
        type=_digest,
        metavar="DIGEST",
        help="fail unless the bundle digest is this one (as published)",
    )
    verify.add_argument(
        "--workers", type=_positive, metavar="N", help="hashing threads (default: cores)"
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
        choices=list(_REQUIREMENTS),
        help="exit 1 unless the verdict meets this (repeatable): rankable, qualified (outcome "
        "QUALIFIED), valid (result validity VALID), signed (a verified signature)",
    )
    verify.add_argument(
        "--evidence-out",
        metavar="FILE.json",
        help="also write the evidence the replay read, as one gx10-evidence document "
        "(what `audit score gx10` replays without the bundle)",
    )
    _signing_cli.add_policy_options(verify, attest=True)
    _signing_cli.sign_parser(commands)
    _signing_cli.verify_attestation_parser(commands, _REQUIREMENTS)
    _signing_cli.trust_root_parser(commands)

    rank_cmd = commands.add_parser(
        "rank",
        help="the public ranking of verified bundles",
        description="Verify bundles (directories, tars, or directories holding them) and "
        "list the public ranking of seed 000: complete VALID / MEETS_PROFILE primary-track "
        "results of the exact pin set, by overall score then coding, Hermes, tool/instruction, "
        "reliability and performance, then timestamp and run id; then the 'Completed with "
        "profile limitations' table, controlled-policy groups, and every other run apart with "
        "its reasons. Repeated trials stay separate rows. Each bundle counts once, by bundle "
        "digest: a directory and its tar are one row (its source names both; a note says so); "
        "a copy (the same evidence entries and model digest under another run id or creation "
        "time) is listed apart, naming the bundle it copies. A bundle that cannot be read is "
        "listed under 'Refused' with its reason, and the others are still judged. Exit 0, or 1 "
        "when any bundle was refused; 2 when a PATH holds no bundle.",
    )
    rank_cmd.add_argument("paths", nargs="+", metavar="PATH")
    rank_cmd.add_argument(
        "--pins",
        metavar="FILE.toml|ID",
        help="rank under this pin set (default: the current shipped generation; each bundle is "
        "judged by the pin set it names)",
    )
    rank_format = rank_cmd.add_mutually_exclusive_group()
    rank_format.add_argument("--json", action="store_true", help="print the ranking as JSON")
    rank_format.add_argument("--markdown", action="store_true", help="print Markdown tables")

    _run_parser(commands)

    _diff_parser(commands)
    _show_parser(commands)
    _rejudge_parser(commands)

    pack_cmd = commands.add_parser(
        "pack",
        help="pack a bundle directory into a reproducible tar",
        description="Pack a bundle directory into a byte-reproducible tar. Refuses a bundle "
        "that fails integrity (exit 1).",
    )
    pack_cmd.add_argument("directory", metavar="DIR")
    pack_cmd.add_argument("-o", "--output", required=True, metavar="FILE.tar")

    unpack_cmd = commands.add_parser(
        "unpack",
        help="unpack a bundle tar, refusing hostile members",
        description="Unpack a bundle tar into a new or empty directory. Refuses (exit 2) links, "
        "devices, FIFOs, absolute or '..' paths, duplicates, members outside the layout and "
        "members or archives over the size caps.",
    )
    unpack_cmd.add_argument("archive", metavar="FILE.tar")
    unpack_cmd.add_argument("-o", "--output", required=True, metavar="DIR")

    schema = commands.add_parser(
        "schema",
        help="list, check or regenerate the JSON Schema files",
        description="Without options, list the document kinds' schema files. --check fails "
        "(exit 1) when the committed files differ from the models; --out DIR writes them.",
    )
    mode = schema.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        nargs="?",
        const="",
        metavar="DIR",
        help="compare DIR (default: the installed bundle_schema/json) with the models",
    )
    mode.add_argument("--out", metavar="DIR", help="write the schema files into DIR")

    scorers = _score_parser(commands)
    _quality_parser(scorers)
    lmspeed = scorers.add_parser(
        "lmspeed",
        help="replay LMSpeed Category Score V3 (seed 002)",
        description="Replay LMSpeed Category Score V3.0 for every category: eligibility under "
        "the catalog, dedupe, unit-based normalization, robust z, evidence quality, the "
        "Gaussian model per dimension, the score with its 80%% interval, Rated / Estimated / "
        "Unrated and the formal rank of Rated models. No average across categories. With "
        "--claimed, exit 1 when the published scores differ from the replay.",
    )
    lmspeed.add_argument("--catalog", required=True, metavar="CATALOG.json")
    lmspeed.add_argument("--results", required=True, metavar="RESULTS.json")
    lmspeed.add_argument(
        "--claimed", metavar="SCORE.json", help="published scores (lmspeed-score) to compare"
    )
    lmspeed.add_argument(
        "--category",
        choices=list(DIMENSIONS),
        action="append",
        help="show only this category (repeatable; --json always holds all eight)",
    )
    lmspeed.add_argument("--json", action="store_true", help="print the result as canonical JSON")

    demo = commands.add_parser(
        "demo",
        help="build, pack and verify the example bundles",
        description="The embedded default: build the example bundles from the example evidence "
        "shipped with the package, pack and verify them, show that a tampered copy fails, then "
        "run the whole recording pipeline (audit run) against the reference endpoint under the "
        "demo-only pin set gx10-reference-v5 and verify what it wrote. With --scenario, only "
        "the pipeline, misbehaving as named.",
    )
    demo.add_argument("--out", default="build/demo", metavar="DIR", help="default: build/demo")
    demo.add_argument(
        "--scenario",
        metavar="NAME",
        help="run only the recording pipeline, misbehaving this way: well-behaved, truncation, "
        "non-local, redirect, reasoning, quarantine, hang, stray-change, fallback",
    )
    return parser


def _score_parser(
    commands: argparse._SubParsersAction[_Parser],
) -> argparse._SubParsersAction[_Parser]:
    score = commands.add_parser(
        "score",
        help="replay a published score from recorded evidence",
        description="Replay a scorer over recorded evidence and print what it computes.",
    )
    scorers = score.add_subparsers(dest="scorer", metavar="SCORER", parser_class=_Parser)
    bfcl = scorers.add_parser(
        "bfcl",
        help="aggregate BFCL shard reports (seed 003)",
        description="Sum per-subset (hits, n) tallies over BFCL shard reports and aggregate the "
        "union as score.py does, or as the official BFCL V4 overall. Refuses (exit 2) a "
        "duplicated or overlapping shard, a shard missing from or extra to --plan, an unknown "
        "subset, and hits above n.",
    )
    bfcl.add_argument("shards", nargs="+", metavar="SHARD.json")
    bfcl.add_argument(
        "--aggregation",
        choices=["score-py", "bfcl-v4"],
        default="score-py",
        help="score-py: the seed's score.py (default); bfcl-v4: the official BFCL V4 overall "
        "as bfcl-eval 2026.3.23 computes it",
    )
    bfcl.add_argument("--plan", metavar="PLAN.json", help="the run's shard plan: shard digests")
    bfcl.add_argument("--json", action="store_true", help="print the result as canonical JSON")

    gx10 = scorers.add_parser(
        "gx10",
        help="replay a gx10-qualification run from one evidence document (seed 000)",
        description="Replay a gx10-qualification run from one gx10-evidence document (as "
        "`audit verify --evidence-out` writes it): the hard gates, scores, outcome, validity, "
        "profile decision and rankability, compared with the claims it carries. Exit 1 when "
        "the claims differ from the replay.",
    )
    gx10.add_argument("evidence", metavar="EVIDENCE.json")
    gx10.add_argument(
        "--pins", metavar="FILE.toml|ID", help="default: the shipped pin set the evidence names"
    )
    gx10.add_argument("--json", action="store_true", help="print the replay as canonical JSON")
    return scorers


def _run_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    run_cmd = commands.add_parser(
        "run",
        help="record a qualification run against a local endpoint into a sealed bundle",
        description="Run a qualification against a local OpenAI-compatible endpoint: observer, "
        "model identity, pinned checkouts, direct probes, each harness in a network sandbox, "
        "streaming performance; then write the sealed bundle (claims are the verifier's own "
        "replay of the evidence). Exit 0 when a bundle was written, whatever its outcome.",
    )
    run_cmd.add_argument("--endpoint", required=True, metavar="URL", help="http:// on loopback")
    run_cmd.add_argument(
        "--pins", required=True, metavar="FILE.toml|ID", help="a pin-set file or a shipped id"
    )
    run_cmd.add_argument("--profile", required=True, metavar="NAME", help="e.g. full or smoke")
    run_cmd.add_argument("--out", required=True, metavar="DIR", help="a new bundle directory")
    run_cmd.add_argument(
        "--model", metavar="NAME", help="the runtime model id (default: the one served)"
    )
    identity = run_cmd.add_mutually_exclusive_group(required=True)
    identity.add_argument("--model-digest", type=_digest, metavar="DIGEST")
    identity.add_argument("--weights", metavar="PATH", help="a weights file or directory to hash")
    run_cmd.add_argument("--track", choices=["primary", "controlled"], default="primary")
    run_cmd.add_argument(
        "--reasoning-policy",
        choices=["off", "on", "low", "medium", "high"],
        default="off",
        help="the effective reasoning policy (default: off)",
    )
    run_cmd.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="clone this upstream from a local mirror (repeatable)",
    )
    run_cmd.add_argument(
        "--harness-python",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="run this upstream's harness with this Python interpreter, one that holds its "
        "pinned requirements (default: the runner's own; repeatable)",
    )
    run_cmd.add_argument("--run-id", metavar="ID", help="default: <pin set>-<profile>-<time>")
    run_cmd.add_argument(
        "--store",
        metavar="DIR",
        help="a blob store shared by runs: each blob kept there once, hard-linked into the bundle",
    )
    run_cmd.add_argument("--json", action="store_true", help="print the result as JSON, quietly")
    run_cmd.add_argument(
        "--sign",
        action="store_true",
        help="sign the sealed bundle with Sigstore (see audit sign); the identity is looked up "
        "before the run starts, so a missing one fails fast",
    )
    _signing_cli.add_signer_options(run_cmd)


def _show_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    show = commands.add_parser(
        "show",
        help="a reviewer's view of one bundle",
        description="Verify a bundle and show it for review: the verdict and its reasons; for a "
        "result that is not a valid model decision, which part failed, its first evidence, what "
        "the model had done before it, and the best and worst aggregate the run could have "
        "reached; each gate with the evidence entries it read; the timeline against its limits; "
        "the transport log summarized; the non-loopback socket attempts; checkouts and identity.",
    )
    show.add_argument("path", metavar="PATH")
    show.add_argument("--pins", metavar="FILE.toml|ID", help="judge by this pin set")
    show.add_argument("--json", action="store_true", help="print the report as canonical JSON")
    show.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write the report as one self-contained HTML file (no network needed to view it)",
    )
    _signing_cli.add_policy_options(show)


def _diff_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    diff = commands.add_parser(
        "diff",
        help="what differs between two bundles",
        description="Verify two bundles and list what differs: pin set, model digest, engine and "
        "version, upstream commits, integrity and signature, verdict, scores (with deltas, "
        "B - A) and gates. Exit 0 when both are the same deployment (pin set, model, engine, "
        "upstream commits) with the same verdict, 1 otherwise (a different deployment is 1 even "
        "when the verdicts agree).",
    )
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B")
    diff.add_argument("--pins", metavar="FILE.toml|ID", help="judge both by this pin set")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")


def _rejudge_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    rejudge = commands.add_parser(
        "rejudge",
        help="re-verify an archive of bundles under another pin set",
        description="Verify every bundle under PATH (directories, tars, or directories of them) "
        "twice: under the pin set each names, and under --pins; list the runs whose verdict "
        "changes, with what changed. Each bundle counts once, by bundle digest (a directory and "
        "its tar are one); copies of another bundle (the same evidence and model, another run id "
        "or creation time) are named. A bundle that cannot be read is listed as refused with its "
        "reason, and the others are still judged. Exit 0 (a report), 1 when any bundle was "
        "refused, 2 when a PATH holds no bundle.",
    )
    rejudge.add_argument("paths", nargs="+", metavar="PATH")
    rejudge.add_argument("--pins", required=True, metavar="FILE.toml|ID", help="the new pin set")
    rejudge.add_argument("--json", action="store_true", help="print the report as JSON")


def _quality_parser(scorers: argparse._SubParsersAction[_Parser]) -> None:
    quality = scorers.add_parser(
        "quality",
        help="replay a quality measurement (seed 001)",
        description="Replay a quality measurement from the answer logits its score tool "
        "recorded: the pair mode, the task mode, or the paired-substrate protocol. Exit 2 for "
        "an input the tool refuses (the limit is named), 1 when the run did not complete or "
        "its files disagree with the replay, 0 otherwise.",
    )
    modes = quality.add_subparsers(dest="mode", metavar="MODE", parser_class=_Parser)
    pairs = modes.add_parser(
        "pairs",
        help="win rate of side b over side a on a rubric",
        description="Replay the pair mode: log-odds of yes per pair, side and rubric item, side "
        "scores, win/loss/tie at a margin of 0.5 nats (ties count one half), the win rate with "
        "Wilson bounds at a nominal 90%%, the same per item, the cut pairs; then compare with "
        "the run's pairs.jsonl and check the blind transcripts against their key.",
    )
    pairs.add_argument("--pairs", required=True, metavar="PAIRS.jsonl", help="the pairs file")
    pairs.add_argument("--rubric", required=True, metavar="RUBRIC.tsv", help="<id> TAB <question>")
    pairs.add_argument(
        "--logits", required=True, metavar="LOGITS.jsonl", help="the recorded answer logits"
    )
    pairs.add_argument("--claimed", metavar="PAIRS.jsonl", help="the run's <out>/pairs.jsonl")
    pairs.add_argument("--blind-transcripts", metavar="FILE.md", help="the run's pairs-blind.md")
    pairs.add_argument("--blind-key", metavar="FILE.tsv", help="the run's pairs-key.tsv")
    pairs.add_argument("--json", action="store_true", help="print the result as canonical JSON")
    tasks = modes.add_parser(
        "tasks",
        help="capability per steer dose on a task set",
        description="Replay the task mode: per item the largest of the four letter logits (a "
        "tie keeps the earlier letter), per dose the mean over the items; then compare with "
        "the last lines of the run's capability.jsonl.",
    )
    tasks.add_argument("--tasks", required=True, metavar="TASKS.tsv", help="the task file")
    tasks.add_argument(
        "--logits", required=True, metavar="LOGITS.jsonl", help="the recorded letter logits"
    )
    tasks.add_argument("--axis", required=True, metavar="NAME", help="the steer axis")
    tasks.add_argument("--doses", required=True, metavar="LIST", help="e.g. 0,0.25,0.5")
    tasks.add_argument("--claimed", metavar="CAPABILITY.jsonl", help="the run's capability.jsonl")
    tasks.add_argument("--print-items", action="store_true", help="one line per item and dose")
    tasks.add_argument("--json", action="store_true", help="print the result as canonical JSON")
    protocol = modes.add_parser(
        "protocol",
        help="judge the paired-substrate protocol",
        description="Replay both modes from a measurement file and judge each condition of the "
        "paired-substrate protocol on its own: a gain, a style gain at a cost, no measured "
        "gain, or incomplete (no blind read recorded). Paths in the file are relative to it.",
    )
    protocol.add_argument("measurement", metavar="MEASUREMENT.json")
    protocol.add_argument("--json", action="store_true", help="print the report as canonical JSON")


def _pin_set(given: str) -> PinSetSource:
    """``--pins FILE|ID``, the same in every command: a pin-set file, else a shipped id."""
    path = Path(given)
    return parse_pin_set(_read(path), given) if path.is_file() else load_builtin(given)


def _pins(given: str | None) -> PinSetSource | None:
    return None if given is None else _pin_set(given)


def _bounded(path: str, **options: Any) -> tuple[Verdict, None]:
    return verify_bundle(path, **options), None


def _verify(args: argparse.Namespace, out: Console, err: Console) -> int:
    policy = _signing_cli.policy_from(args)
    # without --evidence-out the bounded path: memory does not grow with the records (ADR 0012)
    verify = verify_with_evidence if args.evidence_out else _bounded
    with ProgressBar(err) as bar:
        verdict, evidence = verify(
            args.path,
            expect_digest=args.expect_digest,
            workers=args.workers,
            progress=bar.factory,
            pins=_pins(args.pins),
            signature_policy=policy,
        )
    if args.evidence_out and evidence is not None:
        data = canonical_bytes(evidence.model_dump(mode="json")) + b"\n"
        write_atomically(Path(args.evidence_out), [data])
    if args.attest:
        _signing_cli.attest(verdict, args.attest)
    if args.json:
        sys.stdout.buffer.write(verdict_json(verdict))
        sys.stdout.flush()
    else:
        render_verdict(verdict, out, args.path)
    findings = verdict.integrity.findings
    if findings:
        sys.stderr.write(
            f"{PROG} verify: integrity failed: {len(findings)} finding(s); first: "
            f"{findings[0].message}\n"
        )
        return EXIT_CHECK_FAILED
    if verdict.signature.status == "failed":
        sys.stderr.write(f"{PROG} verify: signature failed: {verdict.signature.reason}\n")
        return EXIT_CHECK_FAILED
    if not verdict.claims.match:
        sys.stderr.write(
            f"{PROG} verify: the runner's claims differ from the replay: "
            f"{verdict.claims.differences[0]}\n"
        )
        return EXIT_CHECK_FAILED
    for requirement in args.require:
        unmet = _REQUIREMENTS[requirement](verdict)
        if unmet is not None:
            sys.stderr.write(f"{PROG} verify: requirement not met: {requirement}: {unmet}\n")
            return EXIT_CHECK_FAILED
    return EXIT_OK


def _first_reason(verdict: Verdict) -> str:
    return verdict.reasons[0] if verdict.reasons else "no reason recorded"


_REQUIREMENTS: dict[str, Callable[[Verdict], str | None]] = {
    "rankable": lambda v: None if v.rankable else f"not rankable: {_first_reason(v)}",
    "qualified": lambda v: (
        None if v.outcome == "QUALIFIED" else f"outcome {v.outcome}: {_first_reason(v)}"
    ),
    "valid": lambda v: (
        None if v.result_validity == "VALID" else f"{v.result_validity}: {_first_reason(v)}"
    ),
    "signed": lambda v: (
        None
        if v.signature.status == "verified"
        else "the bundle is unsigned"
        if v.signature.status == "unsigned"
        else f"signature {v.signature.status}: {v.signature.reason}"
    ),
}
"""What ``--require`` can ask of a verdict: each returns why it is unmet, or None."""


def _schema(args: argparse.Namespace, out: Console) -> int:
    if args.out:
        target = Path(args.out)
        target.mkdir(parents=True, exist_ok=True)
        schemas = generate_schemas()
        for name, data in sorted(schemas.items()):
            write_atomically(target / name, [data])
        out.print(f"wrote {len(schemas)} schema files to {target}")
        return EXIT_OK
    if args.check is not None:
        if args.check:
            directory = Path(args.check)
            if not directory.is_dir():
                raise InvalidInput(f"{directory}: not a directory")
            files = {p.name: p.read_bytes() for p in directory.glob("*.schema.json")}
            shown = str(directory)
        else:
            root = resources.files("bundle_schema") / "json"
            files = {p.name: p.read_bytes() for p in root.iterdir() if p.name.endswith(".json")}
            shown = "bundle_schema/json"
        drift = schema_drift(files)
        if drift:
            sys.stderr.write(
                f"{PROG} schema: {shown} differs from the models: {', '.join(drift)}; "
                f"regenerate with: audit schema --out {shown}\n"
            )
            return EXIT_CHECK_FAILED
        out.print(f"{shown}: {len(files)} schema files match the models")
        return EXIT_OK
    for name in sorted(generate_schemas()):
        out.print(name)
    return EXIT_OK


MAX_INPUT_BYTES = 64 << 20
"""A scorer input file larger than this is refused before it is read whole."""


def _read(path: str | Path) -> bytes:
    return read_capped(path, MAX_INPUT_BYTES, "a scorer input")


def _located(path: str | Path | None) -> tuple[bytes, str] | None:
    return None if path is None else (_read(path), str(path))


def _print_json(document: BaseModel) -> None:
    sys.stdout.buffer.write(canonical_bytes(document.model_dump(mode="json")) + b"\n")
    sys.stdout.flush()


def _checks_exit(checks: Sequence[QualityCheck]) -> int:
    failed = [c for c in checks if c.status == "fail"]
    if failed:
        sys.stderr.write(f"{PROG} score quality: {failed[0].check} failed: {failed[0].message}\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _checks_table(checks: Sequence[QualityCheck]) -> Table:
    table = Table(title="checks against the run's files")
    for column in ("check", "status", "detail"):
        table.add_column(column)
    for check in checks:
        table.add_row(check.check, check.status, check.message)
    return table


def _quality_pairs(args: argparse.Namespace, out: Console) -> int:
    pairs = quality.replay_pairs(
        {
            name: _located(getattr(args, name))
            for name in ("pairs", "rubric", "logits", "claimed", "blind_transcripts", "blind_key")
        }
    )
    if args.json:
        _print_json(pairs)
    else:
        out.print(_pairs_table(pairs.summary))
        out.print(_checks_table(pairs.checks))
    return _checks_exit(pairs.checks)


def _quality_tasks(args: argparse.Namespace, out: Console) -> int:
    tasks = quality.replay_tasks(
        (_read(args.tasks), args.tasks),
        (_read(args.logits), args.logits),
        args.axis,
        args.doses,
        _located(args.claimed),
    )
    if args.json:
        _print_json(tasks)
        return _checks_exit(tasks.checks)
    for dose in tasks.doses:
        for item in dose.items if args.print_items else ():
            out.print(
                f"dose {dose.capability.dose:g} {item.item}: answer {item.answer} "
                f"largest {item.largest} result {item.result} logit {item.logit:.6g}"
            )
        out.print(canonical_bytes(dose.capability.model_dump(mode="json")).decode())
    out.print(_checks_table(tasks.checks))
    return _checks_exit(tasks.checks)


def _quality_protocol(args: argparse.Namespace, out: Console) -> int:
    report = _protocol(Path(args.measurement))
    if args.json:
        _print_json(report)
        return _checks_exit(report.checks)
    table = Table(title=f"paired-substrate protocol: {report.verdict}")
    for column in ("condition", "met", "observed", "rule"):
        table.add_column(column)
    for c in report.conditions:
        table.add_row(c.id, "yes" if c.met else "no", c.observed, c.rule)
    out.print(table)
    out.print(_checks_table(report.checks))
    return _checks_exit(report.checks)


_QUALITY_MODES = {"pairs": _quality_pairs, "tasks": _quality_tasks, "protocol": _quality_protocol}


def _quality(args: argparse.Namespace, out: Console) -> int:
    mode = _QUALITY_MODES.get(args.mode)
    if mode is None:
        raise InvalidInput(
            f"give a mode: {', '.join(_QUALITY_MODES)} (see {PROG} score quality --help)"
        )
    return mode(args, out)


def _pairs_table(summary: QualitySummaryLine) -> Table:
    table = Table(
        title=f"{summary.pairs} pairs, {summary.cut} cut; margin {summary.margin:g} "
        f"{summary.margin_unit}; Wilson at {summary.confidence:.0%}"
    )
    for column in ("", "wins", "losses", "ties", "win rate", "Wilson low", "Wilson high"):
        table.add_column(column, justify="left" if not column else "right")
    rows = [("overall", summary.overall), *sorted(summary.items.items())]
    for name, t in rows:
        table.add_row(
            name,
            str(t.wins),
            str(t.losses),
            str(t.ties),
            f"{t.win_rate:.4f}",
            f"{t.wilson_low:.4f}",
            f"{t.wilson_high:.4f}",
        )
    return table


def _protocol(path: Path) -> QualityProtocolReport:
    measurement = quality.load_measurement(_read(path), str(path))
    base = path.parent

    def at(relative: str | None) -> tuple[bytes, str] | None:
        return None if relative is None else _located(base / relative)

    files = measurement.pairs
    pairs = quality.replay_pairs(
        {
            name: at(getattr(files, name))
            for name in ("pairs", "rubric", "logits", "claimed", "blind_transcripts", "blind_key")
        }
    )
    spec = measurement.tasks
    tasks = quality.replay_tasks(
        (_read(base / spec.tasks), str(base / spec.tasks)),
        (_read(base / spec.logits), str(base / spec.logits)),
        spec.axis,
        spec.doses,
        at(spec.claimed),
    )
    streams = tuple(
        quality.parse_quality_stream(_read(base / name), str(base / name))
        for name in (measurement.quality_off, measurement.quality_on)
    )
    return quality.judge_protocol(
        pairs,
        tasks,
        float(measurement.working_dose),
        (streams[0], streams[1]),
        at(measurement.blind_read),
    )


def _lmspeed(args: argparse.Namespace, out: Console) -> int:
    catalog = lmspeed.load_catalog(_read(args.catalog), args.catalog)
    result = lmspeed.score_run(catalog, lmspeed.load_results(_read(args.results), args.results))
    if args.json:
        _print_json(result)
    else:
        for name in args.category or list(result.categories):
            table = Table(title=f"{name} (Category Score V3.0, catalog {result.catalog_version})")
            for column in ("rank", "model", "status", "score", "80% interval", "dims", "families"):
                table.add_column(
                    column, justify="left" if column in ("model", "status") else "right"
                )
            for m in result.categories[name].models:
                interval = m.central80_score
                table.add_row(
                    "" if m.rank is None else str(m.rank),
                    m.model,
                    m.status,
                    "-" if m.score is None else f"{m.score:.1f}",
                    "-" if interval is None else f"{interval[0]:.1f} to {interval[1]:.1f}",
                    f"{m.observed_dimensions}/4",
                    str(m.families),
                )
            out.print(table)
        out.print(f"{len(result.excluded)} result(s) excluded (see --json)")
    if args.claimed:
        difference = lmspeed.compare_claimed(_read(args.claimed), args.claimed, result)
        if difference is not None:
            sys.stderr.write(f"{PROG} score lmspeed: {difference}\n")
            return EXIT_CHECK_FAILED
    return EXIT_OK


def _gx10(args: argparse.Namespace, out: Console) -> int:
    evidence = validate_document(
        KINDS["gx10-evidence"], loads_strict(_read(args.evidence), args.evidence), args.evidence
    )
    assert isinstance(evidence, Gx10Evidence)  # noqa: S101 - the kind's model
    pins = _pins(args.pins) or load_builtin(evidence.pin_set.id)
    replayed = replay(evidence, pins)
    if args.json:
        _print_json(replayed)
    else:
        table = Table(title=f"{replayed.run_id} under {replayed.pin_set.id}", show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        table.add_row("outcome", replayed.outcome)
        table.add_row(
            "validity / profile", f"{replayed.result_validity} / {replayed.profile_decision}"
        )
        table.add_row("rankable", f"yes ({replayed.rank_group})" if replayed.rankable else "no")
        for name, value in replayed.scores.model_dump().items():
            table.add_row(name, "-" if value is None else f"{value:g}")
        table.add_row("claims", "match" if replayed.claims.match else "DIFFER")
        out.print(table)
        for reason in replayed.reasons:
            out.print(f"  - {reason}", highlight=False)
    if not replayed.claims.match:
        sys.stderr.write(
            f"{PROG} score gx10: the claims differ from the replay: "
            f"{replayed.claims.differences[0]}\n"
        )
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _score(args: argparse.Namespace, out: Console) -> int:
    if args.scorer == "gx10":
        return _gx10(args, out)
    if args.scorer == "quality":
        return _quality(args, out)
    if args.scorer == "lmspeed":
        return _lmspeed(args, out)
    if args.scorer != "bfcl":
        raise InvalidInput(f"give a scorer (see {PROG} score --help)")
    shards = [load_shard(_read(path), path) for path in args.shards]
    plan = load_plan(_read(args.plan), args.plan) if args.plan else None
    result = score_shards(shards, plan, args.aggregation)
    if args.json:
        _print_json(result)
        return EXIT_OK
    table = Table(title=f"BFCL ({result.aggregation}) over {len(result.shards)} shard(s)")
    table.add_column("category")
    table.add_column("value", justify="right")
    for name, value in result.categories.items():
        table.add_row(name, "-" if value is None else f"{value:.6f}")
    out.print(table)
    tallies = Table(title="union tallies")
    for column in ("subset", "hits", "n"):
        tallies.add_column(column, justify="left" if column == "subset" else "right")
    for subset, tally in result.tallies.items():
        tallies.add_row(subset, str(tally.hits), str(tally.n))
    out.print(tallies)
    return EXIT_OK


def _bundles(paths: Sequence[str]) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_file() or (path / "manifest.json").is_file():
            found.append(path)
        elif path.is_dir():
            inside = sorted(
                child
                for child in path.iterdir()
                if (child.is_dir() and (child / "manifest.json").is_file())
                or (child.is_file() and child.suffix == ".tar")
            )
            if not inside:
                raise InvalidInput(f"{path}: no bundle directory or .tar in it")
            found += inside
        else:
            raise InvalidInput(f"{path}: no such bundle, tar or directory")
    return found


Run = tuple[Verdict, Gx10Evidence]


@dataclass(frozen=True)
class _Archive:
    """The bundles under an archive command's paths: each counted once, copies flagged, and
    the sources refused, each with its one-line reason."""

    bundles: list[Distinct]
    notes: list[str]
    refused: list[tuple[str, str]]


def _refusal(path: Path, exc: EvidenceAuditError | OSError) -> str:
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        text = f"{where}{exc.strerror or exc}"
    else:
        text = str(exc)
    return one_line(text.removeprefix(f"{path}: "))


def _archive(paths: Sequence[str], judge: Callable[[Path], Run]) -> _Archive:
    """Judge every bundle under ``paths``; a bundle that is refused (unreadable, hostile, no
    valid manifest, an unknown pin set) is set apart with its reason, never aborts the rest."""
    found: list[Found] = []
    refused: list[tuple[str, str]] = []
    for path in _bundles(paths):
        try:
            manifest = parse_manifest(open_source(path).manifest_bytes())
            verdict, evidence = judge(path)
        except (EvidenceAuditError, OSError) as exc:
            refused.append((str(path), _refusal(path, exc)))
            continue
        found.append(Found(str(path), verdict, evidence, contents_key(manifest.model)))
    bundles, notes = distinct(found)
    return _Archive(bundles, notes, refused)


def _report_refused(command: str, archive: _Archive) -> int:
    """One line on stderr per refused bundle; exit 1 when any was refused, else 0."""
    for source, reason in archive.refused:
        sys.stderr.write(f"{PROG} {command}: refused {source}: {reason}\n")
    return EXIT_CHECK_FAILED if archive.refused else EXIT_OK


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _archive_markdown(archive: _Archive) -> str:
    """What the ranking tables do not hold: the refused bundles, and the notes."""
    out: list[str] = []
    if archive.refused:
        out += ["", "## Refused", "", "| source | reason |", "| --- | --- |"]
        out += [f"| {_cell(source)} | {_cell(reason)} |" for source, reason in archive.refused]
    if archive.notes:
        out += ["", "## Notes", ""]
        out += [f"- {note}" for note in archive.notes]
    return "\n".join(out) + "\n" if out else ""


def _rank(args: argparse.Namespace, out: Console) -> int:
    pins = _pins(args.pins)
    cache = BlobCache()  # a blob linked into many bundles from a shared store: hashed once
    archive = _archive(args.paths, lambda path: verify_with_evidence(path, pins=pins, cache=cache))
    chosen = pins or load_builtin(CURRENT)
    items = [bundle.ranked() for bundle in archive.bundles]
    ranking = rank(
        items, PinSetRef(id=chosen.id, digest=chosen.digest), demo_only=chosen.pins.demo_only
    )
    if args.json:
        _print_json(ranking)
    else:
        text = ranking_markdown(ranking) + _archive_markdown(archive)
        if args.markdown:
            sys.stdout.write(text)
        else:
            out.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    return _report_refused("rank", archive)


def _named_paths(flag: str, items: list[str]) -> dict[str, Path]:
    """``NAME=PATH`` arguments by name; one name given twice is refused."""
    named: dict[str, Path] = {}
    for item in items:
        name, sep, where = item.partition("=")
        if not sep or not name or not where:
            raise InvalidInput(f"{flag} {item!r}: expected NAME=PATH")
        if name in named:
            raise InvalidInput(f"{flag} {name}: given twice")
        named[name] = Path(where)
    return named


def _run_command(args: argparse.Namespace, out: Console) -> int:
    from audit.progress import LiveProgress  # noqa: PLC0415 - aiohttp loads only for a run
    from audit.run import RunRequest, default_policy, run_qualification  # noqa: PLC0415

    pins = _pin_set(args.pins)
    mirrors = _named_paths("--mirror", args.mirror)
    pythons = _named_paths("--harness-python", args.harness_python)
    unknown = sorted(set(pythons) - set(pins.pins.harnesses))
    if unknown:
        raise InvalidInput(f"--harness-python {unknown[0]}: the pin set runs no such harness")
    request = RunRequest(
        endpoint=args.endpoint, pins=pins, profile=args.profile, out=Path(args.out),
        model=args.model, model_digest=args.model_digest,
        weights=Path(args.weights) if args.weights else None, track=args.track,
        policy=default_policy(args.reasoning_policy), mirrors=mirrors, run_id=args.run_id,
        harness_python=pythons,
        store=Path(args.store) if args.store else None,
    )  # fmt: skip
    if args.sign:
        _signing_cli.signer_from(args)  # fail fast: no identity, no run
    if args.json:
        digest = run_qualification(request)
    else:
        with LiveProgress(out) as live:
            digest = run_qualification(request, live.step, live.watch)
    signed = _signing_cli.sign_after_run(args, out) if args.sign else None
    if args.json:
        result = {"bundle": args.out, "bundle_digest": digest}
        if signed is not None:
            result["signature"] = str(signed)
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        out.print(f"sealed {digest} in {args.out}; check it with: audit verify {args.out}")
    return EXIT_OK


def _diff(args: argparse.Namespace, out: Console) -> int:
    pins = _pins(args.pins)
    result = diff_runs(
        verify_with_evidence(args.a, pins=pins), verify_with_evidence(args.b, pins=pins)
    )
    if args.json:
        _print_json(result)
    else:
        deployment = "the same" if result.same_deployment else "DIFFERS"
        verdict = "the same" if result.same_verdict else "DIFFERS"
        table = Table(title=f"{args.a} -> {args.b}: deployment {deployment}, verdict {verdict}")
        for column in ("field", "A", "B", "B - A"):
            table.add_column(column, overflow="fold")
        for side, name in ((result.a, "A"), (result.b, "B")):
            out.print(f"{name}: {side.bundle_digest}, integrity {side.integrity}, "
                      f"signature {side.signature}")  # fmt: skip
        for item in result.differences:
            delta = "" if item.delta is None else f"{item.delta:+g}"
            table.add_row(plain_text(item.field), _side_value(item.a), _side_value(item.b), delta)
        out.print(table)
    same = result.same_deployment and result.same_verdict
    return EXIT_OK if same else EXIT_CHECK_FAILED


def _side_value(value: bool | float | str | None) -> Text | str:
    """A side of a difference in the table: text as it is (never markup), others as JSON."""
    if value is None:
        return ""
    return plain_text(value if isinstance(value, str) else json.dumps(value))


_AXES = ("outcome", "result_validity", "profile_decision", "rankable")


def _rejudge(args: argparse.Namespace, out: Console) -> int:
    pins = _pin_set(args.pins)
    cache = BlobCache()  # each bundle is verified twice: its blobs are hashed once
    before: dict[str, Run] = {}

    def judge(bundle: Path) -> Run:
        before[str(bundle)] = verify_with_evidence(bundle, cache=cache)
        return verify_with_evidence(bundle, pins=pins, cache=cache)

    archive = _archive(args.paths, judge)
    changed: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    for bundle in archive.bundles:
        kept = bundle.kept
        source = ", ".join(bundle.sources)
        result = diff_runs(before[kept.source], (kept.verdict, kept.evidence))
        if not result.same_verdict:
            changed.append({"bundle": source, "run_id": kept.verdict.run_id,
                            "diff": result.model_dump(mode="json"),
                            "reasons": list(kept.verdict.reasons)})  # fmt: skip
        if bundle.copy_of is not None:
            copies.append({"bundle": source, "run_id": kept.verdict.run_id,
                           "copy_of": bundle.copy_of})  # fmt: skip
    if args.json:
        report = {"pin_set": {"id": pins.id, "digest": pins.digest},
                  "bundles": len(archive.bundles), "changed": changed, "copies": copies,
                  "notes": archive.notes,
                  "refused": [{"bundle": s, "reason": r} for s, r in archive.refused]}  # fmt: skip
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
        return _report_refused("rejudge", archive)
    out.print(
        f"{len(changed)} of {len(archive.bundles)} verdicts change under {pins.id} ({pins.digest})"
        + (f"; {len(archive.refused)} bundle(s) refused" if archive.refused else "")
    )
    for row in changed:
        fields = [d for d in row["diff"]["differences"] if d["field"] in _AXES]
        shown = "; ".join(f"{d['field']} {d['a']} -> {d['b']}" for d in fields)
        out.print(f"- {row['run_id']} ({row['bundle']}): {shown}", soft_wrap=True)
        for reason in row["reasons"][:3]:
            out.print(f"    {reason}", soft_wrap=True, highlight=False)
    for row in copies:
        out.print(f"copy: {row['run_id']} ({row['bundle']}): {row['copy_of']}", soft_wrap=True)
    for note in archive.notes:
        out.print(f"note: {note}", soft_wrap=True, highlight=False)
    for source, reason in archive.refused:
        out.print(f"refused: {source}: {reason}", soft_wrap=True, highlight=False)
    return _report_refused("rejudge", archive)


def _show(args: argparse.Namespace, out: Console) -> int:
    pins = _pins(args.pins)
    policy = _signing_cli.policy_from(args)
    verdict, evidence = verify_with_evidence(args.path, pins=pins, signature_policy=policy)
    manifest = parse_manifest(open_source(args.path).manifest_bytes())
    judged = pins or load_builtin(verdict.pin_set.id)
    report = show_report(verdict, evidence, manifest.model.evidence, judged)
    if args.html:
        bounds = judged.pins.thresholds.get(evidence.profile)
        html = report_html(
            report,
            evidence.transport or (),
            evidence.socket_ledger or (),
            bounds.model_dump() if bounds is not None else {},
        )
        write_atomically(Path(args.html), [html.encode()])
    if args.json:
        _print_json(report)
    else:
        render_show(report, out, args.path)
    return EXIT_OK


def _pack(args: argparse.Namespace, out: Console) -> int:
    result = pack(args.directory, args.output)
    out.print(f"packed {result.members} files ({result.bytes} bytes) of {result.bundle_digest}")
    return EXIT_OK


def _unpack(args: argparse.Namespace, out: Console) -> int:
    result = unpack(args.archive, args.output)
    out.print(f"unpacked {result.members} files of {result.bundle_digest} into {args.output}")
    return EXIT_OK


def _demo(args: argparse.Namespace, out: Console) -> int:
    from audit.demo import SCENARIOS, run_demo, run_pipeline  # noqa: PLC0415 - loads gitpython

    target = Path(args.out)
    if args.scenario is not None:
        if args.scenario not in SCENARIOS:
            raise InvalidInput(f"--scenario {args.scenario!r}: not one of {', '.join(SCENARIOS)}")
        return EXIT_OK if run_pipeline(target, out, args.scenario) else EXIT_CHECK_FAILED
    held = run_demo(target, out)
    held = run_pipeline(target, out) and held
    return EXIT_OK if held else EXIT_CHECK_FAILED


def _verify_attestation(args: argparse.Namespace, out: Console) -> int:
    return _signing_cli.verify_attestation_command(args, out, _REQUIREMENTS)


_COMMANDS = {
    "run": _run_command,
    "show": _show,
    "rejudge": _rejudge,
    "diff": _diff,
    "rank": _rank,
    "pack": _pack,
    "unpack": _unpack,
    "schema": _schema,
    "score": _score,
    "demo": _demo,
    "sign": _signing_cli.sign_command,
    "trust-root": _signing_cli.trust_root_command,
    "verify-attestation": _verify_attestation,
}


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.command == "verify":
        return _verify(args, out, err)
    command = _COMMANDS.get(args.command)
    if command is None:
        raise InvalidInput(f"give a command (see {PROG} --help)")
    return command(args, out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0)
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    command = f"{PROG} {args.command}" if args.command else PROG
    try:
        return _run(args, out, err)
    except EvidenceAuditError as exc:
        sys.stderr.write(f"{command}: {exc}\n")
        return exc.exit_code
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"{command}: {where}{exc.strerror or exc}\n")
        return EXIT_INVALID_INPUT
    except KeyboardInterrupt:
        sys.stderr.write(f"{command}: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
