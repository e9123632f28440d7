"""The commands over an archive of bundles: ``rank``, ``rejudge`` and ``verify-archive``."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import IO

from pydantic import BaseModel, TypeAdapter
from rich.console import Console

from audit.cli._common import (
    PROG,
    Handler,
    Subparsers,
    example,
    optional_pins,
    pin_set,
    positive,
)
from audit.cli.signing import add_policy_options, policy_from
from bundle_schema import canonical_bytes
from bundle_schema.canonical import write_array
from bundle_schema.errors import EXIT_CHECK_FAILED, EXIT_OK, InvalidInput, clip
from bundle_schema.models import (
    PinSetRef,
    RankRow,
    RefusedBundle,
    RejudgedCopy,
    RejudgedRun,
    RunDiff,
)
from bundle_schema.models.reports import Sources
from pins import CURRENT, load_builtin
from verify.archive import (
    ArchiveWriter,
    SourceList,
    expand,
    read_list,
    text_out,
    verify_archive,
)
from verify.judging import Here, Job, JudgedArchive, judge_archive
from verify.ranking import Distinct, SpooledRanking
from verify.render import cell, flat, ranking_markdown, write_csv

__all__ = ["register"]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``rank``, ``rejudge`` and ``verify-archive`` to ``commands``; return their
    handlers."""
    rank_cmd = commands.add_parser(
        "rank",
        help="the public ranking of verified bundles",
        description="Verify bundles (directories, tars, or directories holding them) and "
        "list the public ranking of the scoring generation (gx10-qualification-v5 unless "
        "--pins names another): complete VALID / MEETS_PROFILE primary-track "
        "results of the exact pin set, by overall score then coding, Hermes, tool/instruction, "
        "reliability and performance, then timestamp and run id; then the 'Completed with "
        "profile limitations' table, controlled-policy groups, and every other run apart with "
        "its reasons. Repeated trials stay separate rows. Each bundle counts once, by bundle "
        "digest: a directory and its tar are one row (its source names both; a note says so); "
        "a copy (the same evidence entries and model digest under another run id or creation "
        "time) is listed apart, naming the bundle it copies. A bundle that cannot be read is "
        "listed under 'Refused' with its reason, and the others are still judged. With "
        "--identity and --issuer, each bundle's signature is checked: a run not signed by "
        "that identity (unsigned, or signed by another) is listed apart, its first reason "
        "'signature failed: ...'; without them no signature is checked, and a run ranks "
        "whoever published it. Exit 0, or 1 when any bundle was refused; 2 when a PATH holds "
        "no bundle.",
        epilog=example("audit rank build/demo --markdown"),
    )
    rank_cmd.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=_PATHS_HELP,
    )
    rank_cmd.add_argument(
        "--pins",
        metavar="FILE.toml|ID",
        help="rank under this pin set (default: the current shipped generation; each bundle is "
        "judged by the pin set it names)",
    )
    _add_from(rank_cmd)
    rank_format = rank_cmd.add_mutually_exclusive_group()
    rank_format.add_argument("--json", action="store_true", help="print the ranking as JSON")
    rank_format.add_argument("--markdown", action="store_true", help="print Markdown tables")
    rank_format.add_argument(
        "--csv",
        action="store_true",
        help="print CSV: a header row, then one row a bundle (its table, position, run, "
        "decisions, scores, first reason, bundle digest, sources), then one a refused source",
    )
    _add_engine(rank_cmd, "verified, or a further source's bytes checked")
    add_policy_options(rank_cmd)

    rejudge = commands.add_parser(
        "rejudge",
        help="re-verify an archive of bundles under another pin set",
        description="Verify every bundle under PATH (directories, tars, or directories of them) "
        "twice: under the pin set each names (or --before), and under --pins; list the runs "
        "whose verdict changes, with what changed. Each bundle counts once, by bundle digest (a "
        "directory and "
        "its tar are one); copies of another bundle (the same evidence and model, another run id "
        "or creation time) are named. A bundle that cannot be read is listed as refused with its "
        "reason, and the others are still judged. Exit 0 (a report), 1 when any bundle was "
        "refused, 2 when a PATH holds no bundle.",
        epilog=example("audit rejudge build/demo --pins stricter.toml --json"),
    )
    rejudge.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=_PATHS_HELP,
    )
    _add_from(rejudge)
    rejudge.add_argument("--pins", required=True, metavar="FILE.toml|ID", help="the new pin set")
    rejudge.add_argument(
        "--before",
        metavar="FILE.toml|ID",
        help="the pin set the runs were judged by until now (default: the one each bundle "
        "names, which must then be a shipped one)",
    )
    rejudge_format = rejudge.add_mutually_exclusive_group()
    rejudge_format.add_argument(
        "--json",
        action="store_true",
        help="print one rejudge-report document (canonical JSON)",
    )
    rejudge_format.add_argument(
        "--markdown",
        action="store_true",
        help="print Markdown tables: the runs whose verdict changes, the copies, the refused "
        "bundles and the notes",
    )
    rejudge_format.add_argument(
        "--csv",
        action="store_true",
        help="print CSV: a header row, then one row a bundle (changed or same, each decision "
        "before and after, first reason, sources), then one a refused source",
    )
    _add_engine(rejudge, "verified twice, or a further source's bytes checked")
    archive = commands.add_parser(
        "verify-archive",
        help="verify every bundle of an archive, each once, into one report",
        description="Verify every bundle under the PATHs and --from lists (directories, tars, "
        "directories of them, tars' URLs, s3://bucket/prefix/ for every .tar under it): each "
        "bundle once by bundle digest (from the first of its sources, sorted; every further "
        "source's bytes checked, a copy whose bytes differ refused), each file of a shared store "
        "hashed once. Prints one canonical archive-report document (the default, or --json; by "
        "bundle "
        "digest: its sources, run, outcome, validity, profile decision, rankability, integrity, "
        "the check it failed and its first reason; then every refused source), written as the "
        "bundles are verified; or Markdown or CSV. With --identity and --issuer, each bundle's "
        "signature is checked (a bundle unsigned or signed by another fails its check; of "
        "copies of one bundle signed otherwise, one that the identity signed counts and the "
        "others are refused, whichever sorts first); "
        "without them a signature present is 'unchecked'. Exit 0 when every bundle passed, 1 "
        "when any failed a check (integrity, signature, claims) or any source was refused, 2 "
        "when a PATH holds no bundle.",
        epilog=example("audit verify-archive s3://runs/v5/ --csv"),
    )
    archive.add_argument("paths", nargs="*", metavar="PATH", help=_PATHS_HELP)
    _add_from(archive)
    archive.add_argument(
        "--pins",
        metavar="FILE.toml|ID",
        help="judge every bundle by this pin set (default: the shipped pin set each names)",
    )
    archive_format = archive.add_mutually_exclusive_group()
    archive_format.add_argument(
        "--json", action="store_true", help="print the archive-report document (the default)"
    )
    archive_format.add_argument("--markdown", action="store_true", help="print Markdown tables")
    archive_format.add_argument("--csv", action="store_true", help="print CSV, one row a bundle")
    _add_engine(archive, "verified or checked")
    add_policy_options(archive)
    return {"rank": _rank, "rejudge": _rejudge, "verify-archive": _verify_archive}


_PATHS_HELP = (
    "bundle directories, tars, or directories of them; a tar's URL (file://, http(s)://, "
    "s3://); or s3://bucket/prefix/ (every .tar under it)"
)


def _add_engine(parser: argparse.ArgumentParser, work: str) -> None:
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this process (default); dask: on a Dask cluster, in tasks of up to 256 "
        f"sources each (listed, then {work}), every bundle digest still verified "
        "once (docs/scale.md)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: the scheduler to use (tcp://host:8786); default: a "
        "LocalCluster on this machine",
    )
    parser.add_argument(
        "--workers",
        type=positive,
        metavar="N",
        help="with --engine dask and no --scheduler: the LocalCluster's workers (default: cores)",
    )


def _engine_options(args: argparse.Namespace) -> None:
    """Refuse engine options that do not go together."""
    if args.engine != "dask" and (args.scheduler is not None or args.workers is not None):
        raise InvalidInput("--scheduler and --workers are options of --engine dask")
    if args.scheduler and args.workers is not None:
        raise InvalidInput(
            "--workers is for the LocalCluster the command starts; an existing cluster "
            "(--scheduler) has its own workers"
        )


def _judged(args: argparse.Namespace, job: Job) -> JudgedArchive:
    """The archive under the command's paths and lists, judged by ``job`` on its engine."""
    _engine_options(args)
    with _bundles(args.paths, args.lists) as sources:
        if args.engine == "dask":
            from verify.distributed import judge_on_dask  # noqa: PLC0415 - Dask only when asked

            return judge_on_dask(sources, job, scheduler=args.scheduler, workers=args.workers)
        return judge_archive(sources, Here(sources, job))


def _add_from(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="lists",
        action="append",
        default=[],
        metavar="FILE",
        help="a list of bundles, a local file: one path or URL a line (# comments); relative "
        "paths are relative to the file; a list naming no bundle is refused (exit 2) "
        "(repeatable)",
    )


def _bundles(paths: Sequence[str], lists: Sequence[str] = ()) -> SourceList:
    """The sources the command's paths and lists name, on disk (a folder or list of millions
    is never held in memory)."""
    if not paths and not lists:
        raise InvalidInput("no bundle given: name a PATH or URL, or a list with --from FILE")
    found = SourceList()
    try:
        for text in paths:
            found.extend(expand(text))
        for file in lists:
            found.extend(read_list(file))
    except BaseException:
        found.close()
        raise
    return found


def _report_refused(command: str, archive: JudgedArchive) -> int:
    """One line on stderr per refused bundle; exit 1 when any was refused, else 0."""
    for source, reason in archive.refused():
        sys.stderr.write(f"{PROG} {command}: refused {flat(source)}: {flat(reason)}\n")
    return EXIT_CHECK_FAILED if archive.refusals else EXIT_OK


def _archive_markdown(archive: JudgedArchive) -> Iterator[str]:
    """What the ranking tables do not hold, a line at a time: the refused bundles, and the
    notes."""
    if archive.refusals:
        yield from ("", "## Refused", "", "| source | reason |", "| --- | --- |")
        for source, reason in archive.refused():
            yield f"| {cell(source)} | {cell(reason)} |"
    for index, note in enumerate(archive.notes()):
        if not index:
            yield from ("", "## Notes", "")
        yield f"- {flat(note)}"


def _write_lines(lines: Iterable[str]) -> None:
    """Lines on stdout, each with its newline, as they come."""
    for line in lines:
        sys.stdout.write(line + "\n")


def _write_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """CSV on stdout as ``verify-archive --csv`` writes it: a header row, then the rows."""
    text = text_out(sys.stdout.buffer)
    write_csv(text, header, rows)
    text.detach()
    sys.stdout.buffer.flush()


def _number(value: float | None) -> str:
    """A score as ``--json`` writes it (RFC 8785), or empty."""
    return "" if value is None else canonical_bytes(value).decode()


_SCORES = ("aggregate", "coding", "hermes", "tool_instruction", "reliability", "performance")

_RANK_CSV = (
    "table", "position", "run_id", "model", "reasoning_policy", "pin_set", "pin_set_digest",
    "outcome", "result_validity", "profile_decision", "rank_group", *_SCORES, "created_at",
    "first_reason", "bundle_digest", "source",
)  # fmt: skip


def _rank_csv(ranking: SpooledRanking, archive: JudgedArchive) -> Iterator[tuple[str, ...]]:
    """One row per bundle, table by table in the ranking's order, then one per refused source."""
    tables: list[tuple[str, Iterable[RankRow]]] = [
        ("ranked", ranking.ranked()), ("limitations", ranking.limitations()),
    ]  # fmt: skip
    tables += [("controlled", ranking.controlled(group)) for group in ranking.groups()]
    tables += [("apart", ranking.apart())]
    for table, rows in tables:
        for r in rows:
            scores = r.scores.model_dump()
            yield (
                table, "" if r.position is None else str(r.position), r.run_id, r.model,
                r.reasoning_policy or "", r.pin_set.id, r.pin_set.digest, r.outcome,
                r.result_validity, r.profile_decision, r.rank_group or "",
                *(_number(scores[name]) for name in _SCORES), r.created_at,
                r.reasons[0] if r.reasons else "", r.bundle_digest, r.source,
            )  # fmt: skip
    blank = ("",) * (len(_RANK_CSV) - 4)  # but table, first_reason, bundle_digest, source
    for source, reason in archive.refused():
        yield ("refused", *blank, reason, "", source)


def _rank(args: argparse.Namespace, out: Console, err: Console) -> int:
    pins = optional_pins(args.pins)
    policy = policy_from(args)
    chosen = pins or load_builtin(CURRENT)
    ref = PinSetRef(id=chosen.id, digest=chosen.digest)
    signer = None if policy is None else policy.signer
    with (
        _judged(args, Job(pins, policy=policy)) as archive,
        SpooledRanking(ref, demo_only=chosen.pins.demo_only, signer=signer) as ranking,
    ):
        for bundle in archive.bundles():
            ranking.add(bundle.ranked())
        if args.json:
            ranking.write_json(sys.stdout.buffer)
            sys.stdout.flush()
        elif args.csv:
            _write_csv(_RANK_CSV, _rank_csv(ranking, archive))
        else:
            lines = itertools.chain(ranking_markdown(ranking), _archive_markdown(archive))
            if args.markdown:
                _write_lines(lines)
            else:
                for line in lines:
                    out.print(line, markup=False, emoji=False, highlight=False, soft_wrap=True)
        return _report_refused("rank", archive)


_AXES = ("integrity", "outcome", "result_validity", "profile_decision", "rankable")
"""What a rejudged verdict changes in (``run-diff``'s ``same_verdict``)."""


def _changes(diff: RunDiff) -> str:
    """What changes of the verdict (:data:`_AXES`), ``field A -> B``, joined by ``; ``."""
    fields = [d for d in diff.differences if d.field in _AXES]
    return "; ".join(f"{d.field} {d.a} -> {d.b}" for d in fields)


def _diff(bundle: Distinct) -> RunDiff:
    """The ``run-diff`` of a rejudged bundle's verdicts before and under the new pin set."""
    assert bundle.diff is not None  # noqa: S101 - every verification of a rejudge keeps one
    return bundle.diff


_SOURCES_MAX = 1 << 20
"""The bound of a report's joined sources (:data:`bundle_schema.models.reports.Sources`)."""
_PATH_MAX = 4096
"""The bound of a refused source's name (:data:`bundle_schema.models.reports.CommandPath`)."""


def _sources(sources: Sequence[str]) -> str:
    """Every source of a bundle joined by ``, ``, as a report's ``bundle`` names them; past its
    bound (a bundle under thousands of long names) clipped as a ranking row's ``source`` is."""
    text = ", ".join(sources)
    if len(text) <= _SOURCES_MAX:
        return text
    tail = f", ... ({len(sources)} sources)"
    return text[: _SOURCES_MAX - len(tail)] + tail


def _changed(archive: JudgedArchive) -> Iterator[RejudgedRun]:
    """The runs whose verdict changes, by bundle digest."""
    for bundle in archive.bundles():
        if not _diff(bundle).same_verdict:
            kept = bundle.kept.facts
            yield RejudgedRun(bundle=_sources(bundle.sources), run_id=kept.run_id,
                              diff=_diff(bundle), reasons=kept.reasons)  # fmt: skip


def _copies(archive: JudgedArchive) -> Iterator[RejudgedCopy]:
    """The copies of another bundle, by bundle digest."""
    for bundle in archive.bundles():
        if bundle.copy_of is not None:
            yield RejudgedCopy(bundle=_sources(bundle.sources), run_id=bundle.kept.facts.run_id,
                               copy_of=bundle.copy_of)  # fmt: skip


def _rejudge_markdown(
    archive: JudgedArchive, pins: PinSetRef, was: PinSetRef | None
) -> Iterator[str]:
    before = "the pin set each bundle names" if was is None else f"{was.id} ({was.digest})"
    yield from (f"## Rejudged under {pins.id} ({pins.digest})", "")
    yield f"{archive.changed} of {archive.count} verdicts change; before: {before}"
    yield from ("", "## Changed", "")
    none = True
    for row in _changed(archive):
        if none:
            yield from (
                "| run | what changes | first reason | bundle |",
                "| --- | --- | --- | --- |",
            )
            none = False
        reason = row.reasons[0] if row.reasons else "-"
        cells = (row.run_id, _changes(row.diff), reason, row.bundle)
        yield "| " + " | ".join(cell(c) for c in cells) + " |"
    if none:
        yield "(none)"
    for index, copy in enumerate(_copies(archive)):
        if not index:
            yield from ("", "## Copies", "", "| run | copy of | bundle |", "| --- | --- | --- |")
        yield f"| {cell(copy.run_id)} | {cell(copy.copy_of)} | {cell(copy.bundle)} |"
    yield from _archive_markdown(archive)


_REJUDGE_CSV = (
    "status", "bundle_digest", "run_id", "pin_set_before", "pin_set_before_digest", "pin_set",
    "pin_set_digest", "integrity_before", "integrity", "outcome_before", "outcome",
    "result_validity_before", "result_validity", "profile_decision_before", "profile_decision",
    "rankable_before", "rankable", "copy_of", "first_reason", "bundle",
)  # fmt: skip


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _rejudge_csv(archive: JudgedArchive) -> Iterator[tuple[str, ...]]:
    """One row per bundle by bundle digest (``changed`` or ``same``), then one per refused
    source (``refused``, its reason as ``first_reason``)."""
    for bundle in archive.bundles():
        facts = bundle.kept.facts
        diff = _diff(bundle)
        now: dict[str, object] = {
            "integrity": diff.b.integrity,
            "outcome": facts.outcome,
            "result_validity": facts.result_validity,
            "profile_decision": facts.profile_decision,
            "rankable": facts.rankable,
        }
        was = now | {d.field: d.a for d in diff.differences if d.field in _AXES}
        judged = (facts.pin_set.id, facts.pin_set.digest)
        before = next(  # run-diff's pin_set: "ID DIGEST" (an id has no space)
            (tuple(str(d.a).split(" ", 1)) for d in diff.differences if d.field == "pin_set"),
            judged,
        )
        yield (
            "same" if diff.same_verdict else "changed", facts.bundle_digest, facts.run_id,
            *before, *judged,
            *(cell for axis in _AXES for cell in (_text(was[axis]), _text(now[axis]))),
            bundle.copy_of or "", facts.reasons[0] if facts.reasons else "",
            ", ".join(bundle.sources),
        )  # fmt: skip
    blank = ("",) * (len(_REJUDGE_CSV) - 3)  # but status, first_reason, bundle
    for source, reason in archive.refused():
        yield ("refused", *blank, reason, source)


def _array(out: IO[bytes], items: Iterable[BaseModel]) -> None:
    """A JSON array of documents, canonical, an item at a time."""
    write_array(out, (canonical_bytes(item.model_dump(mode="json")) for item in items))


_NOTE: TypeAdapter[str] = TypeAdapter(Sources)


def _rejudge_json(archive: JudgedArchive, pins: PinSetRef, before: PinSetRef | None) -> None:
    """The ``rejudge-report`` document, canonical (members in key order), as
    ``RejudgeReport(...)`` would print, a run at a time, then a newline."""
    out = sys.stdout.buffer
    out.write(b'{"before":' + canonical_bytes(before and before.model_dump(mode="json")))
    out.write(b',"bundles":' + canonical_bytes(archive.count) + b',"changed":')
    _array(out, _changed(archive))
    out.write(b',"copies":')
    _array(out, _copies(archive))
    out.write(b',"notes":')
    # a name or note past the bound the report's schema sets is clipped; stderr names it whole
    notes = (_NOTE.validate_python(clip(note, _SOURCES_MAX)) for note in archive.notes())
    write_array(out, (canonical_bytes(note) for note in notes))
    out.write(b',"pin_set":' + canonical_bytes(pins.model_dump(mode="json")) + b',"refused":')
    _array(out, (RefusedBundle(bundle=clip(source, _PATH_MAX), reason=reason)
                 for source, reason in archive.refused()))  # fmt: skip
    out.write(b',"schema_version":1}\n')
    sys.stdout.flush()


def _rejudge(args: argparse.Namespace, out: Console, err: Console) -> int:
    pins = pin_set(args.pins)
    was = optional_pins(args.before)  # None: the pin set each bundle names
    new = PinSetRef(id=pins.id, digest=pins.digest)
    before = None if was is None else PinSetRef(id=was.id, digest=was.digest)
    with _judged(args, Job(pins, rejudge=True, before=was)) as archive:
        if args.json:
            _rejudge_json(archive, new, before)
        elif args.markdown:
            _write_lines(_rejudge_markdown(archive, new, before))
        elif args.csv:
            _write_csv(_REJUDGE_CSV, _rejudge_csv(archive))
        else:
            _rejudge_text(archive, pins.id, pins.digest, out)
        return _report_refused("rejudge", archive)


def _rejudge_text(archive: JudgedArchive, pins: str, digest: str, out: Console) -> None:
    """The text of ``rejudge``: every name and reason as it is (no Rich markup or emoji code
    in a source's path, ``[/]`` or ``:smile:``, is read as one), each line one line (a line
    break in a name a space)."""

    def say(text: str) -> None:
        out.print(flat(text), markup=False, emoji=False, highlight=False, soft_wrap=True)

    refused = archive.refusals
    say(
        f"{archive.changed} of {archive.count} verdicts change under {pins} ({digest})"
        + (f"; {refused} bundle(s) refused" if refused else "")
    )
    for row in _changed(archive):
        say(f"- {row.run_id} ({row.bundle}): {_changes(row.diff)}")
        for reason in row.reasons[:3]:
            say(f"    {reason}")
    for copy in _copies(archive):
        say(f"copy: {copy.run_id} ({copy.bundle}): {copy.copy_of}")
    for note in archive.notes():
        say(f"note: {note}")
    for source, reason in archive.refused():
        say(f"refused: {source}: {reason}")


def _verify_archive(args: argparse.Namespace, out: Console, err: Console) -> int:
    _engine_options(args)
    pins = optional_pins(args.pins)
    policy = policy_from(args)
    writer = ArchiveWriter(
        None if pins is None else PinSetRef(id=pins.id, digest=pins.digest),
        None if policy is None else policy.signer,
    )
    try:
        with _bundles(args.paths, args.lists) as listed:
            for twin in listed.twins():  # the twins first, as ordered() gives them
                writer.add(twin)
            if args.engine == "dask":
                from verify.distributed import verify_on_dask  # noqa: PLC0415 - when asked

                verify_on_dask(
                    listed.kept(),
                    writer,
                    pins,
                    policy=policy,
                    scheduler=args.scheduler,
                    workers=args.workers,
                )
            else:
                verify_archive(listed.kept(), writer, pins, policy=policy)
        stream = sys.stdout.buffer
        if args.markdown or args.csv:
            text = text_out(stream)
            (writer.write_markdown if args.markdown else writer.write_csv)(text)
            text.detach()
        else:
            writer.write_json(stream)
        stream.flush()
        return EXIT_CHECK_FAILED if writer.failed else EXIT_OK
    finally:
        writer.close()
