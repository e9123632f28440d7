"""Verdicts for people (rich) and for programs (canonical JSON)."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO

from rich.cells import cell_len
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table
from rich.text import Text

from bundle_schema import canonical_bytes
from bundle_schema.errors import SHOWN_WRITTEN_OUT
from bundle_schema.models import (
    RankRow,
    ShowReport,
    SignatureCheck,
    Signer,
    SupplementaryMetrics,
    Verdict,
)
from verify.ranking import SpooledRanking

__all__ = [
    "PROGRESS_MIN_BYTES",
    "ProgressBar",
    "csv_cell",
    "describe_signature",
    "gate_figures",
    "plain_text",
    "ranking_markdown",
    "render_show",
    "render_verdict",
    "signer_line",
    "verdict_json",
    "write_csv",
]

PROGRESS_MIN_BYTES = 256 << 20
"""Below this much hashing, no progress bar is worth drawing."""


_CONTROLS = SHOWN_WRITTEN_OUT
"""Control characters other than tab and line feed, to be shown as ``\\xNN``, and the
bidirectional and invisible format characters, as ``\\u202e`` (a name would otherwise lay the
rest of its line out right to left: a ranked row's scores shown reversed; or read as the name
it differs from by a zero-width space)."""


def _t(value: object, style: str = "") -> Text:
    """Bundle text as it is: never read as rich markup or emoji codes (a publisher's ``[/]`` in
    a model name or a reason is shown, not interpreted), and with its control characters made
    visible (an ESC sequence in a reason must not clear or retitle the reviewer's terminal)."""
    return Text(("-" if value is None else str(value)).translate(_CONTROLS), style=style)


plain_text = _t
"""Bundle text for a rich table cell: shown as it is, never read as markup."""


def verdict_json(verdict: Verdict) -> bytes:
    """The verdict as one canonical JSON document and a newline: identical bytes every run."""
    return canonical_bytes(verdict.model_dump(mode="json")) + b"\n"


_AXIS_STYLE = {"QUALIFIED": "bold green", "NOT_QUALIFIED": "bold yellow", "INFRA_ERROR": "bold red"}
_GATE_STYLE = {"pass": "green", "fail": "yellow", "infra": "red", "not_selected": "dim"}


def describe_signature(check: SignatureCheck) -> str:
    """One line on a signature check, for people."""
    if check.status == "verified":
        when = f" at {check.integrated_time}" if check.integrated_time else ""
        return f"verified: signed by {check.identity} ({check.issuer}){when}"
    if check.status == "unsigned":
        return "unsigned"
    return f"{check.status}: {check.reason}"


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}|\b[0-9a-f]{40}\b")
"""A digest (or a git commit): printed whole, on a line of its own."""
_FIRST = 5
"""How many of a list (findings, exchange ids) the terminal names; the rest are counted."""
_HANG = 4
"""The indent of a wrapped paragraph's later lines."""


def _say(console: Console, text: Text | str, indent: int = 0, hang: int = _HANG) -> None:
    """Print ``text`` wrapped at spaces to the console's width, never inside a word: a word
    longer than a line is printed whole on a line of its own, and so is every digest (moved
    left to fit when it can), so that one can be selected and compared in one piece. A line
    break in it is a space: a reason a publisher wrote adds no line that reads as the report's."""
    text = text if isinstance(text, Text) else _t(text)
    if "\n" in text.plain:
        text = text.copy()
        text.plain = text.plain.replace("\n", " ")  # one for one: the styles stay in place
    width = max(console.width, 20)
    indent += len(text.plain) - len(text.plain.lstrip(" "))  # the text's own leading spaces
    plain = text.plain
    lines: list[tuple[int, int, int]] = []  # (indent, start, end) into the plain text
    line: tuple[int, int, int] | None = None  # the line being filled
    for word in re.finditer(r"\S+", plain):
        size = cell_len(word.group())
        alone = bool(_DIGEST.search(word.group()))
        if line is not None:
            lead, begin, _ = line
            if not alone and lead + cell_len(plain[begin : word.end()]) <= width:
                line = (lead, begin, word.end())
                continue
            lines.append(line)
            line = None
        lead = indent if not lines else hang
        if alone or lead + size > width:
            lines.append((min(lead, max(0, width - size)), word.start(), word.end()))
            continue
        line = (lead, word.start(), word.end())
    if line is not None:
        lines.append(line)
    for lead, begin, finish in lines or [(indent, 0, 0)]:
        console.print(Text.assemble(" " * lead, text[begin:finish]), soft_wrap=True)


def _labelled(console: Console, label: str, value: Text | str, indent: int = 2) -> None:
    """``label: value`` as one paragraph, its later lines hanging."""
    body = value if isinstance(value, Text) else _t(value)
    _say(console, Text.assemble((label, "bold"), ": ", body), indent, indent + _HANG)


def _digest_line(console: Console, label: str, digest: str, indent: int = 2) -> None:
    """A label, then the digest whole on the next line."""
    _say(console, Text(label, style="bold"), indent)
    _say(console, _t(digest), indent + 2)


def _ids(ids: tuple[int, ...], count: int | None = None) -> str:
    """Exchange ids as a count and the first few: ``none``, ``1 (id 7)``,
    ``12 (ids 3, 4, 5, 6, 7 and 7 more)``."""
    total = len(ids) if count is None else count
    if not total:
        return "none"
    shown = ids[:_FIRST]
    more = total - len(shown)
    listed = ", ".join(str(i) for i in shown) + (f" and {more} more" if more > 0 else "")
    return f"{total} ({'id' if total == 1 else 'ids'} {listed})"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _head(verdict: Verdict, console: Console, location: str) -> None:
    """The answer: the verdict, whether the check held (integrity, claims, signature), the
    reasons, and the integrity findings."""
    _say(console, Text.assemble(("evidence bundle ", "bold"), _t(flat(location))))
    style = _AXIS_STYLE[verdict.outcome]
    rank = f"rankable ({verdict.rank_group})" if verdict.rankable else "not rankable"
    _say(
        console,
        Text.assemble(
            (verdict.outcome, style),
            _t(f"  {verdict.result_validity} / {verdict.profile_decision}, {rank}"),
        ),
    )
    integrity = verdict.integrity
    findings = integrity.findings
    failed_signature = verdict.signature.status == "failed"
    _say(
        console,
        Text.assemble(
            ("integrity ", ""),
            ("ok", "green") if integrity.status == "ok" else ("FAILED", "bold red"),
            f" ({_plural(len(findings), 'finding')})" if findings else "",
            "; claims ",
            ("match", "") if verdict.claims.match else ("DIFFER", "bold red"),
            "; signature ",
            _t(describe_signature(verdict.signature), "bold red" if failed_signature else ""),
        ),
    )
    for reason in verdict.reasons:
        _say(console, _t(f"  - {reason}"), 0, _HANG)
    if len(findings) > 1:  # one finding is the reason above
        _say(console, Text(f"integrity findings: {len(findings)}", style="bold red"))
        for finding in findings[:_FIRST]:
            where = f" {finding.entry}" if finding.entry else ""
            _say(console, _t(f"  - {finding.code}{where}: {finding.message}"), 0, _HANG)
        if len(findings) > _FIRST:
            _say(console, f"  ... and {len(findings) - _FIRST} more (--json lists them all)")


def _scores(verdict: Verdict, console: Console) -> None:
    title = "scores (replayed)"
    if verdict.integrity.findings:
        title = "scores (replayed from the intact entries only: integrity failed)"
    _say(console, Text(title, style="bold"))
    table = Table()
    table.add_column("component", justify="left")
    table.add_column("score", justify="right")
    for name, value in verdict.scores.model_dump().items():
        table.add_row(name, "-" if value is None else f"{value:g}")
    console.print(table)
    for gate in verdict.diagnostics.supplementary:
        _say(console, gate_figures(gate))


def gate_figures(gate: SupplementaryMetrics) -> str:
    """A supplementary harness's figures in one sentence (a gate's: shown, never scored)."""
    v4 = "" if gate.v4_overall is None else f"; BFCL V4 overall {gate.v4_overall:.2f}%"
    return (
        f"{gate.upstream} ({gate.component}'s gate, not scored): "
        f"{_plural(gate.samples, 'sample')} in {_plural(gate.subsets, 'subset')}, "
        f"{gate.overall_accuracy:.2f}% right{v4}"
    )


def _gate_lines(verdict: Verdict, console: Console) -> None:
    """Each gate on its own lines: its status, its id, its reason (wrapped under the id)."""
    _say(console, Text("hard gates", style="bold"))
    width = max((len(g.status) for g in verdict.gates), default=0) + 1
    for gate in verdict.gates:
        _say(
            console,
            Text.assemble(
                "  ",
                _t(gate.status.ljust(width), _GATE_STYLE[gate.status]),
                _t(f"{gate.id}: {gate.reason}"),
            ),
            0,
            2 + width + 2,
        )


def _details(verdict: Verdict, console: Console) -> None:
    """Which run, pins, bundle and verifier: the digests whole, each on a line of its own."""
    _say(console, Text("the bundle", style="bold"))
    _labelled(console, "run", verdict.run_id)
    _digest_line(console, f"pin set {verdict.pin_set.id}", verdict.pin_set.digest)
    _digest_line(console, "bundle digest", verdict.bundle_digest)
    integrity = verdict.integrity
    _labelled(
        console,
        "checked",
        f"{_plural(integrity.blobs_checked, 'blob')}, {integrity.bytes_checked} bytes",
    )
    if verdict.unread:
        shown = ", ".join(verdict.unread[:3]) + (", ..." if len(verdict.unread) > 3 else "")
        _labelled(console, "unread", f"{len(verdict.unread)} entries no gate reads: {shown}")
    if verdict.signature.trusted_root is not None:
        _digest_line(
            console, "signature checked against trust root", verdict.signature.trusted_root
        )
    _labelled(console, "verifier", f"{verdict.verifier.name} {verdict.verifier.version}")


def render_verdict(verdict: Verdict, console: Console, location: str) -> None:
    """Print a verdict for people: the answer first (the verdict, whether the check held, the
    reasons, the integrity findings), then the scores, then the gates, then which bundle it
    is. Readable at 80 columns: nothing is split inside a word, and digests are whole."""
    _head(verdict, console, location)
    _scores(verdict, console)
    _gate_lines(verdict, console)
    _details(verdict, console)


def _answer(report: ShowReport, console: Console) -> None:
    """What broke, and was it the model: the forensic answer, and every item that ran out of
    time with what its exchanges show."""
    forensic = report.forensic
    timed_out = [item for item in report.timeline if item.timed_out is not None]
    if forensic is None and not timed_out:
        return
    _say(console, Text("what broke, and was it the model?", style="bold"))
    if forensic is not None:
        _labelled(console, "failed", Text(forensic.failed_part, style="bold red"))
        _say(console, _t(forensic.summary), 2, 2 + _HANG)
        _labelled(console, "first evidence", forensic.first_evidence or "none recorded")
        swap = forensic.substitution
        if swap is not None:
            how = "the model its replies name" if swap.by == "model" else "another engine's"
            how += "" if swap.by == "model" else " system_fingerprint"
            _labelled(
                console,
                "answered by",
                f"{swap.answered_by!a} ({how}), not {swap.expected!a}; exchanges "
                f"{_ids(swap.exchanges.first, swap.exchanges.count)}",
            )
        _labelled(console, "the model before it", forensic.model_before)
        if forensic.best_aggregate is None and forensic.worst_aggregate is None:
            held = "not computed" + (
                " (integrity failed)" if forensic.failed_part == "integrity" else ""
            )
        else:
            held = (
                f"{_score(forensic.worst_aggregate)} to {_score(forensic.best_aggregate)} "
                "(unscored components at 0 or 100)"
            )
        _labelled(console, "aggregate had it held", held)
    for item in timed_out:
        assert item.timed_out is not None  # noqa: S101 - filtered above
        _labelled(console, f"{item.kind} {item.name} {item.status}", item.timed_out.explanation)


def _timeline(report: ShowReport, console: Console) -> None:
    _say(console, Text("timeline", style="bold"))
    for item in report.timeline:
        if item.kind == "component":
            when = f"{item.started_at or '-'} to {item.ended_at or '-'}"
            reason = f"; {item.reason}" if item.reason else ""
            _say(console, _t(f"  {item.name} {item.status}, {when}{reason}"), 0, _HANG)
            continue
        parts = []
        if item.wall_s is not None:
            parts.append(f"wall {_score(item.wall_s)} s of {_score(item.wall_limit_s)} s")
        if item.inactivity_s is not None:
            parts.append(
                f"silence {_score(item.inactivity_s)} s of {_score(item.inactivity_limit_s)} s"
            )
        if item.timed_out is not None:
            parts.append(
                f"exchanges {_ids(item.timed_out.exchanges.first, item.timed_out.exchanges.count)}"
            )
        shown = ", ".join(parts) or "times not recorded"
        _say(console, _t(f"  task {item.name} {item.status}: {shown}"), 0, _HANG)


def _transport(report: ShowReport, console: Console) -> None:
    transport = report.transport
    if transport is None:
        _say(console, Text("no transport log", style="bold red"))
        return
    statuses = ", ".join(f"{k}: {v}" for k, v in transport.statuses.items()) or "none"
    _say(
        console,
        _t(
            f"transport: {_plural(transport.requests, 'request')} ({statuses}), "
            f"{transport.streamed_chunks} streamed chunks; errors: {_ids(transport.errors)} "
            f"(the harness gone before the answer: {_ids(transport.abandoned)}); "
            f"truncations: {_ids(transport.truncations)}; redirects: "
            f"{_ids(transport.redirects)}; suspected fallbacks: "
            f"{_ids(transport.suspected_fallbacks)}"
        ),
    )


def _sockets(report: ShowReport, console: Console) -> None:
    outside = len(report.non_loopback)
    _say(
        console,
        _t(
            f"socket ledger: {report.socket_attempts} connection attempts, "
            f"{outside} not to loopback"
        ),
    )
    for entry in report.non_loopback:
        _say(
            console,
            Text.assemble(
                "  ",
                ("non-loopback", "bold red"),
                _t(
                    f": seq {entry.seq} {entry.process} (pid {entry.pid}) "
                    f"{entry.address}:{entry.port} {entry.outcome}"
                ),
            ),
        )


def _evidence(report: ShowReport, console: Console) -> None:
    """Each evidence entry a gate read, once: the gates that read it, then its digest."""
    readers: dict[str, list[str]] = {}
    digests: dict[str, str] = {}
    for gate in report.gates:
        for ref in gate.evidence:
            readers.setdefault(ref.name, []).append(gate.id)
            digests[ref.name] = ref.digest
    _say(console, Text("evidence the gates read (entry: gates, then its digest)", style="bold"))
    for name in sorted(readers):
        _say(console, _t(f"  {name}: {', '.join(readers[name])}"), 0, _HANG + 2)
        _say(console, _t(digests[name]), _HANG)


def _identity(report: ShowReport, console: Console) -> None:
    for upstream in report.upstreams:
        state = "clean" if upstream.clean else "DIRTY"
        _say(console, _t(f"checkout {upstream.name} ({state}): {upstream.repository}"), 0, _HANG)
        _say(console, _t(upstream.commit), _HANG)
    model = report.model
    engine = " ".join(v for v in (model.engine, model.engine_version) if v) or "-"
    _say(
        console,
        _t(f"model {model.runtime_model_id} ({model.digest_source}); engine {engine}"),
        0,
        _HANG,
    )
    _say(console, _t(model.digest), _HANG)


def render_show(report: ShowReport, console: Console, location: str) -> None:
    """A reviewer's view of one bundle, the answer first: the verdict and its reasons, what
    broke (the forensic answer, and what every item that ran out of time was waiting on),
    then the scores, then the gates, then the detail (timeline, transport, sockets, the
    evidence each gate read, checkouts, identity, which bundle). Readable at 80 columns."""
    verdict = report.verdict
    _head(verdict, console, location)
    _answer(report, console)
    _scores(verdict, console)
    _gate_lines(verdict, console)
    _timeline(report, console)
    _transport(report, console)
    _sockets(report, console)
    _evidence(report, console)
    _identity(report, console)
    _details(verdict, console)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{round(value, 3):g}"


def flat(value: str) -> str:
    """Text on one line: each line break in it (``\\n``, ``\\r``, any :meth:`str.splitlines`
    splits at) a space, so that a name a publisher chose adds no line (a heading, a table row)
    to a report or to stderr; any other control character (ESC, which starts a terminal's
    escape sequences, NUL, DEL, C1) written out as ``\\x1b``, so that a name cannot recolour,
    move or clear a terminal that shows it, and any bidirectional formatting character as
    ``\\u202e``, so that it cannot reverse what follows it on the line."""
    return " ".join(value.splitlines()).translate(_CONTROLS)


def cell(value: str) -> str:
    """Bundle text as one Markdown table cell: a ``|`` or a line break would end it early."""
    return flat(value.replace("|", "\\|"))


_FORMULA_START = tuple("=+-@\t\r\n\uff1d\uff0b\uff0d\uff20")
"""What makes a spreadsheet read a CSV cell as a formula (OWASP's list, a line feed as it
takes a carriage return, and the full-width forms some spreadsheets take as the same)."""
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


_PIECES = re.compile(r"([;\t])")
"""What a spreadsheet may split a cell at besides the comma: ``;`` (the separator of Excel in
most European locales) and a tab (TSV)."""


def csv_cell(value: str) -> str:
    """Bundle text as a CSV cell a spreadsheet shows as text: one that starts as a formula
    would (``=HYPERLINK(...)`` as a model's name, ``@SUM(...)``, ``-1+cmd|...``) gets a leading
    ``'``, and so does each piece after a ``;`` or a tab (a cell a spreadsheet that splits there
    would start); a carriage return is a line feed (Python's ``csv`` quotes a field holding a
    line feed, not one holding a lone CR, which a reader takes as the end of a row); any other
    control character but a tab is shown as ``\\xNN`` (an ESC in a file's name must not reach a
    terminal that shows the CSV, as in every other output); a number as JSON writes one stays a
    number."""
    if _JSON_NUMBER.fullmatch(value):
        return value
    text = value.replace("\r\n", "\n").replace("\r", "\n").translate(_CONTROLS)
    pieces = _PIECES.split(text)
    for index in range(0, len(pieces), 2):
        if pieces[index].startswith(_FORMULA_START):
            pieces[index] = "'" + pieces[index]
    shown = "".join(pieces)
    return "'" + shown if text.startswith(_FORMULA_START) and shown[:1] != "'" else shown


def write_csv(out: IO[str], header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """CSV as every command writes it: a header row, then the rows as they come, each cell
    through :func:`csv_cell`; ``\n`` line ends."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(value) for value in row] for row in rows)


def _score_table(rows: Iterable[RankRow], numbered: bool) -> Iterator[str]:
    """A table of scores, a line at a time; ``(none)`` when there are no rows."""
    head = ["#"] if numbered else []
    head += [
        "run",
        "model",
        "policy",
        "overall",
        "coding",
        "Hermes",
        "tool/instr.",
        "reliability",
        "performance",
        "timestamp",
        "bundle",
    ]
    none = True
    for row in rows:
        if none:
            yield "| " + " | ".join(head) + " |"
            yield "|" + " --- |" * len(head)
            none = False
        s = row.scores
        cells = [str(row.position)] if numbered else []
        cells += [
            cell(row.run_id),
            cell(row.model),
            cell(row.reasoning_policy or "-"),
            _score(s.aggregate),
            _score(s.coding),
            _score(s.hermes),
            _score(s.tool_instruction),
            _score(s.reliability),
            _score(s.performance),
            row.created_at,
            f"`{row.bundle_digest}`",
        ]
        yield "| " + " | ".join(cells) + " |"
    if none:
        yield "(none)"


def signer_line(signer: Signer | None) -> str:
    """What an archive command's Markdown says of the signatures it checked (``--identity``,
    ``--issuer``)."""
    if signer is None:
        return "Signatures not checked: no --identity and --issuer were given."
    return (
        f"Signatures checked: each bundle signed by {cell(signer.identity)} "
        f"({cell(signer.issuer)}), under the trust root {signer.trusted_root}."
    )


def ranking_markdown(ranking: SpooledRanking) -> Iterator[str]:
    """The ranking as Markdown, a line at a time (each without its newline): the ranked table,
    the limitations table, controlled-policy groups, and the runs listed apart with their first
    reason."""
    pins = f"{ranking.pin_set.id} ({ranking.pin_set.digest})"
    yield from (f"## Ranked deployments: {pins}", "", signer_line(ranking.signer), "")
    yield from _score_table(ranking.ranked(), numbered=True)
    yield from ("", "## Completed with profile limitations", "")
    yield from _score_table(ranking.limitations(), numbered=False)
    for group in ranking.groups():
        yield from ("", f"## Controlled policy {group} (not in the primary ranking)", "")
        yield from _score_table(ranking.controlled(group), numbered=False)
    yield from ("", "## Listed apart", "")
    none = True
    for row in ranking.apart():
        if none:
            yield "| run | pin set | outcome | validity | profile | reason | bundle |"
            yield "| --- | --- | --- | --- | --- | --- | --- |"
            none = False
        reason = cell(row.reasons[0] if row.reasons else "-")
        yield (
            f"| {cell(row.run_id)} | {row.pin_set.id} | {row.outcome} | "
            f"{row.result_validity} | {row.profile_decision} | {reason} | "
            f"`{row.bundle_digest}` |"
        )
    if none:
        yield "(none)"


class ProgressBar:
    """A rich progress bar (bytes done of the total, speed, time left), drawn only for long work
    (:data:`PROGRESS_MIN_BYTES` or more) and only when ``console`` is a terminal, as pip draws
    its bars: give it the stderr console, so that stdout (``--json``) stays clean. It is
    transient: gone from the terminal when the work is done.

    Use as a context manager; pass :meth:`factory` as ``verify_bundle(progress=...)`` or
    ``pack(progress=...)``. The callback it makes may be called from any thread.
    """

    def __init__(self, console: Console, description: str = "hashing blobs") -> None:
        self._console = console
        self._description = description
        self._progress: Progress | None = None

    def factory(self, _count: int, total: int) -> Callable[[int], None] | None:
        """A callback that advances the bar by bytes, or None when no bar is drawn."""
        if total < PROGRESS_MIN_BYTES or not self._console.is_terminal:
            return None
        progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self._console,
            transient=True,
        )
        task = progress.add_task(self._description, total=total)
        progress.start()
        self._progress = progress
        return lambda done: progress.advance(task, done)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
