"""``audit score``: replay a published score from recorded evidence, one scorer per subcommand."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from audit.cli._common import (
    PROG,
    Handler,
    Parser,
    Subparsers,
    example,
    located,
    optional_pins,
    print_json,
    read,
)
from bundle_schema import canonical_bytes, kind_of, loads_strict, validate_document
from bundle_schema.errors import EXIT_CHECK_FAILED, EXIT_OK, InvalidInput
from bundle_schema.models import (
    Gx10Evidence,
    QualityCheck,
    QualityProtocolReport,
    QualitySummaryLine,
)
from pins import load_builtin
from verify.gx10 import replay
from verify.scorers import lmspeed, load_plan, load_shard, quality, score_shards
from verify.scorers.bfcl import AGGREGATIONS, DEFAULT_AGGREGATION
from verify.scorers.lmspeed import DIMENSIONS

__all__ = ["register"]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``score`` and its scorers to ``commands``; return its handler."""
    score = commands.add_parser(
        "score",
        help="replay a published score from recorded evidence",
        description="Replay a scorer over recorded evidence and print what it computes.",
        epilog=example("audit score gx10 evidence.json"),
    )
    scorers = score.add_subparsers(
        dest="scorer",
        metavar="SCORER",
        parser_class=Parser,
        help="the scorer to replay (each has its --help)",
    )
    bfcl = scorers.add_parser(
        "bfcl",
        help="aggregate BFCL shard reports (score.py's weighting, or the BFCL V4 overall)",
        description="Sum per-subset (hits, n) tallies over BFCL shard reports and aggregate the "
        "union as score.py does, or as the official BFCL V4 overall. Refuses (exit 2) a "
        "duplicated or overlapping shard, a shard missing from or extra to --plan, an unknown "
        "subset, and hits above n.",
        epilog=example("audit score bfcl shard-0.json shard-1.json --plan plan.json"),
    )
    bfcl.add_argument(
        "shards", nargs="+", metavar="SHARD.json", help="the shard reports, one per shard"
    )
    bfcl.add_argument(
        "--aggregation",
        choices=AGGREGATIONS,
        default=DEFAULT_AGGREGATION,
        help="score-py: the hierarchical weighting of BFCL's score.py (default); bfcl-v4: the "
        "official BFCL V4 overall "
        "as bfcl-eval 2026.3.23 computes it",
    )
    bfcl.add_argument("--plan", metavar="PLAN.json", help="the run's shard plan: shard digests")
    bfcl.add_argument("--json", action="store_true", help="print the result as canonical JSON")

    gx10 = scorers.add_parser(
        "gx10",
        help="replay a gx10-qualification run from one evidence document",
        description="Replay a gx10-qualification run from one gx10-evidence document (as "
        "`audit verify --evidence-out` writes it): the hard gates, scores, outcome, validity, "
        "profile decision and rankability, compared with the claims it carries. Exit 1 when "
        "the claims differ from the replay.",
        epilog=example("audit score gx10 evidence.json --json"),
    )
    gx10.add_argument(
        "evidence", metavar="EVIDENCE.json", help="a gx10-evidence document to replay"
    )
    gx10.add_argument(
        "--pins", metavar="FILE.toml|ID", help="default: the shipped pin set the evidence names"
    )
    gx10.add_argument("--json", action="store_true", help="print the replay as canonical JSON")
    quality = scorers.add_parser(
        "quality",
        help="replay a quality measurement: pair mode, task mode, paired-substrate protocol",
        description="Replay a quality measurement from the answer logits its score tool "
        "recorded: the pair mode, the task mode, or the paired-substrate protocol. Exit 2 for "
        "an input the tool refuses (the limit is named), 1 when the run did not complete or "
        "its files disagree with the replay, 0 otherwise.",
        epilog=example("audit score quality protocol measurement.json"),
    )
    modes = quality.add_subparsers(
        dest="mode", metavar="MODE", parser_class=Parser, help="what was measured"
    )
    pairs = modes.add_parser(
        "pairs",
        help="win rate of side b over side a on a rubric",
        description="Replay the pair mode: log-odds of yes per pair, side and rubric item, side "
        "scores, win/loss/tie at a margin of 0.5 nats (ties count one half), the win rate with "
        "Wilson bounds at a nominal 90%, the same per item, the cut pairs; then compare with "
        "the run's pairs.jsonl and check the blind transcripts against their key.",
        epilog=example(
            "audit score quality pairs --pairs pairs.jsonl --rubric rubric.tsv "
            "--logits logits.jsonl --claimed out/pairs.jsonl"
        ),
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
        epilog=example(
            "audit score quality tasks --tasks tasks.tsv --logits logits.jsonl --axis warmth "
            "--doses 0,0.25,0.5"
        ),
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
        epilog=example("audit score quality protocol measurement.json --json"),
    )
    protocol.add_argument(
        "measurement", metavar="MEASUREMENT.json", help="the measurement file to replay"
    )
    protocol.add_argument("--json", action="store_true", help="print the report as canonical JSON")
    lmspeed = scorers.add_parser(
        "lmspeed",
        help="replay LMSpeed Category Score V3.0, category by category",
        description="Replay LMSpeed Category Score V3.0 for every category: eligibility under "
        "the catalog, dedupe, unit-based normalization, robust z, evidence quality, the "
        "Gaussian model per dimension, the score with its 80% interval, Rated / Estimated / "
        "Unrated and the formal rank of Rated models. No average across categories. With "
        "--claimed, exit 1 when the published scores differ from the replay.",
        epilog=example(
            "audit score lmspeed --catalog catalog.json --results results.json --claimed score.json"
        ),
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

    return {"score": _score}


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


def _quality_pairs(args: argparse.Namespace, out: Console, err: Console) -> int:
    pairs = quality.replay_pairs(
        {
            name: located(getattr(args, name))
            for name in ("pairs", "rubric", "logits", "claimed", "blind_transcripts", "blind_key")
        }
    )
    if args.json:
        print_json(pairs)
    else:
        out.print(_pairs_table(pairs.summary))
        out.print(_checks_table(pairs.checks))
    return _checks_exit(pairs.checks)


def _quality_tasks(args: argparse.Namespace, out: Console, err: Console) -> int:
    tasks = quality.replay_tasks(
        (read(args.tasks), args.tasks),
        (read(args.logits), args.logits),
        args.axis,
        args.doses,
        located(args.claimed),
    )
    if args.json:
        print_json(tasks)
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


def _quality_protocol(args: argparse.Namespace, out: Console, err: Console) -> int:
    report = _protocol(Path(args.measurement))
    if args.json:
        print_json(report)
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


def _quality(args: argparse.Namespace, out: Console, err: Console) -> int:
    mode = _QUALITY_MODES.get(args.mode)
    if mode is None:
        raise InvalidInput(
            f"give a mode: {', '.join(_QUALITY_MODES)} (see {PROG} score quality --help)"
        )
    return mode(args, out, err)


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
    measurement = quality.load_measurement(read(path), str(path))
    base = path.parent

    def at(relative: str | None) -> tuple[bytes, str] | None:
        return None if relative is None else located(base / relative)

    files = measurement.pairs
    pairs = quality.replay_pairs(
        {
            name: at(getattr(files, name))
            for name in ("pairs", "rubric", "logits", "claimed", "blind_transcripts", "blind_key")
        }
    )
    spec = measurement.tasks
    tasks = quality.replay_tasks(
        (read(base / spec.tasks), str(base / spec.tasks)),
        (read(base / spec.logits), str(base / spec.logits)),
        spec.axis,
        spec.doses,
        at(spec.claimed),
    )
    streams = tuple(
        quality.parse_quality_stream(read(base / name), str(base / name))
        for name in (measurement.quality_off, measurement.quality_on)
    )
    return quality.judge_protocol(
        pairs,
        tasks,
        float(measurement.working_dose),
        (streams[0], streams[1]),
        at(measurement.blind_read),
    )


def _lmspeed(args: argparse.Namespace, out: Console, err: Console) -> int:
    catalog = lmspeed.load_catalog(read(args.catalog), args.catalog)
    result = lmspeed.score_run(catalog, lmspeed.load_results(read(args.results), args.results))
    if args.json:
        print_json(result)
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
        difference = lmspeed.compare_claimed(read(args.claimed), args.claimed, result)
        if difference is not None:
            sys.stderr.write(f"{PROG} score lmspeed: {difference}\n")
            return EXIT_CHECK_FAILED
    return EXIT_OK


def _gx10(args: argparse.Namespace, out: Console, err: Console) -> int:
    evidence = validate_document(
        kind_of(Gx10Evidence), loads_strict(read(args.evidence), args.evidence), args.evidence
    )
    pins = optional_pins(args.pins) or load_builtin(evidence.pin_set.id)
    replayed = replay(evidence, pins)
    if args.json:
        print_json(replayed)
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


def _score(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.scorer == "gx10":
        return _gx10(args, out, err)
    if args.scorer == "quality":
        return _quality(args, out, err)
    if args.scorer == "lmspeed":
        return _lmspeed(args, out, err)
    if args.scorer != "bfcl":
        raise InvalidInput(f"give a scorer (see {PROG} score --help)")
    shards = [load_shard(read(path), path) for path in args.shards]
    plan = load_plan(read(args.plan), args.plan) if args.plan else None
    result = score_shards(shards, plan, args.aggregation)
    if args.json:
        print_json(result)
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
