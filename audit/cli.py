"""The ``audit`` command line: one dispatcher, named exit codes, no traceback for bad input.

Exit codes: 0 done; 1 a check failed; 2 refused input or usage, with one line on stderr that says
what was wrong and where.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.table import Table

from audit._archive import pack, unpack
from audit._store import write_atomically
from bundle_schema import canonical_bytes, generate_schemas, schema_drift
from bundle_schema.errors import (
    EXIT_CHECK_FAILED,
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EvidenceAuditError,
    InvalidInput,
    one_line,
)
from bundle_schema.models import DIGEST_PATTERN
from verify import VERSION, render_verdict, verdict_json, verify_bundle
from verify.render import ProgressBar
from verify.scorers import load_plan, load_shard, score_shards

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
        help="check a bundle's integrity offline",
        description="Check a bundle (directory or tar) offline: strict manifest, every blob "
        "hashed, every evidence record validated. Exit 1 when a check fails.",
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

    demo = commands.add_parser(
        "demo",
        help="build, pack and verify the example bundles",
        description="The embedded default: build the example bundles from the example evidence "
        "in the source tree, pack and verify them, and show that a tampered copy fails.",
    )
    demo.add_argument("--out", default="build/demo", metavar="DIR", help="default: build/demo")
    return parser


def _verify(args: argparse.Namespace, out: Console, err: Console) -> int:
    with ProgressBar(err) as bar:
        verdict = verify_bundle(
            args.path, expect_digest=args.expect_digest, workers=args.workers, progress=bar.factory
        )
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
    return EXIT_OK


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


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror}") from None


def _score(args: argparse.Namespace, out: Console) -> int:
    if args.scorer != "bfcl":
        raise InvalidInput(f"give a scorer (see {PROG} score --help)")
    shards = [load_shard(_read(path), path) for path in args.shards]
    plan = load_plan(_read(args.plan), args.plan) if args.plan else None
    result = score_shards(shards, plan, args.aggregation)
    if args.json:
        sys.stdout.buffer.write(canonical_bytes(result.model_dump(mode="json")) + b"\n")
        sys.stdout.flush()
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


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.command == "verify":
        return _verify(args, out, err)
    if args.command == "pack":
        result = pack(args.directory, args.output)
        out.print(f"packed {result.members} files ({result.bytes} bytes) of {result.bundle_digest}")
        return EXIT_OK
    if args.command == "unpack":
        result = unpack(args.archive, args.output)
        out.print(f"unpacked {result.members} files of {result.bundle_digest} into {args.output}")
        return EXIT_OK
    if args.command == "schema":
        return _schema(args, out)
    if args.command == "score":
        return _score(args, out)
    if args.command == "demo":
        from audit.demo import run_demo  # noqa: PLC0415 - gitpython loads only for the demo

        return EXIT_OK if run_demo(Path(args.out), out) else EXIT_CHECK_FAILED
    raise InvalidInput(f"give a command (see {PROG} --help)")


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
