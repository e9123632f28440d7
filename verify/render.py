"""Verdicts for people (rich) and for programs (canonical JSON)."""

from __future__ import annotations

from collections.abc import Callable

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
from bundle_schema.models import Ranking, RankRow, ShowReport, SignatureCheck, Verdict

__all__ = [
    "PROGRESS_MIN_BYTES",
    "ProgressBar",
    "describe_signature",
    "plain_text",
    "ranking_markdown",
    "render_show",
    "render_verdict",
    "verdict_json",
]

PROGRESS_MIN_BYTES = 256 << 20
"""Below this much hashing, no progress bar is worth drawing."""


_CONTROLS = {
    code: f"\\x{code:02x}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if code not in (0x09, 0x0A)
}
"""Control characters other than tab and line feed, to be shown as ``\\xNN``."""


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


def render_verdict(verdict: Verdict, console: Console, location: str) -> None:
    """Print a verdict: the decision and its reasons first, then scores, gates and findings."""
    integrity = verdict.integrity
    table = Table(title=_t(f"evidence bundle {location}"), show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    style = _AXIS_STYLE[verdict.outcome]
    table.add_row("outcome", f"[{style}]{verdict.outcome}[/]")
    table.add_row("validity / profile", f"{verdict.result_validity} / {verdict.profile_decision}")
    rank = f"yes ({verdict.rank_group})" if verdict.rankable else "no"
    table.add_row("rankable", _t(rank))
    table.add_row("claims", "match" if verdict.claims.match else "[bold red]DIFFER[/]")
    table.add_row("run", _t(verdict.run_id))
    table.add_row("pin set", _t(f"{verdict.pin_set.id} {verdict.pin_set.digest}"))
    table.add_row("bundle digest", _t(verdict.bundle_digest))
    status = "[green]ok[/]" if integrity.status == "ok" else "[bold red]FAILED[/]"
    table.add_row("integrity", status)
    table.add_row("checked", f"{integrity.blobs_checked} blobs, {integrity.bytes_checked} bytes")
    if verdict.unread:
        shown = ", ".join(verdict.unread[:3]) + (", ..." if len(verdict.unread) > 3 else "")
        table.add_row("unread", _t(f"{len(verdict.unread)} entries no gate reads: {shown}"))
    failed = verdict.signature.status == "failed"
    table.add_row(
        "signature", _t(describe_signature(verdict.signature), "bold red" if failed else "")
    )
    table.add_row("verifier", f"{verdict.verifier.name} {verdict.verifier.version}")
    console.print(table)
    for reason in verdict.reasons:
        console.print(_t(f"  - {reason}"))
    scores = Table(title="scores (replayed)", title_justify="left")
    for column in ("component", "score"):
        scores.add_column(column, justify="left" if column == "component" else "right")
    for name, value in verdict.scores.model_dump().items():
        shown = "-" if value is None else f"{value:g}"
        scores.add_row(name, shown)
    console.print(scores)
    gates = Table(title="hard gates", title_justify="left")
    for column in ("gate", "status", "reason"):
        gates.add_column(column, overflow="fold")
    for gate in verdict.gates:
        gates.add_row(
            _t(gate.id),
            _t(gate.status, _GATE_STYLE[gate.status]),
            _t(gate.reason),
        )
    console.print(gates)
    if integrity.findings:
        findings = Table(title="findings", title_justify="left")
        findings.add_column("code", style="red")
        findings.add_column("evidence")
        findings.add_column("message", overflow="fold")
        for finding in integrity.findings:
            findings.add_row(_t(finding.code), _t(finding.entry), _t(finding.message))
        console.print(findings)


def render_show(report: ShowReport, console: Console, location: str) -> None:
    """A reviewer's view of one bundle: the verdict, the forensic answer, then the detail."""
    render_verdict(report.verdict, console, location)
    forensic = report.forensic
    if forensic is not None:
        table = Table(
            title="what broke, and was it the model?", show_header=False, title_justify="left"
        )
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        table.add_row("failed", _t(forensic.failed_part, "bold red"))
        table.add_row("summary", _t(forensic.summary))
        table.add_row("first evidence", _t(forensic.first_evidence))
        table.add_row("the model before it", _t(forensic.model_before))
        table.add_row(
            "aggregate had it held",
            f"{_score(forensic.worst_aggregate)} to "
            f"{_score(forensic.best_aggregate)} (unscored components at 0 or 100)",
        )
        console.print(table)
    timeline = Table(title="timeline", title_justify="left")
    for column in ("kind", "name", "status", "started", "ended", "wall / limit", "silence / limit"):
        timeline.add_column(column, overflow="fold")
    for item in report.timeline:
        wall = f"{_score(item.wall_s)} / {_score(item.wall_limit_s)}" if item.wall_s else "-"
        quiet = (
            f"{_score(item.inactivity_s)} / {_score(item.inactivity_limit_s)}"
            if item.inactivity_s is not None
            else "-"
        )
        timeline.add_row(
            *(_t(v) for v in (item.kind, item.name, item.status, item.started_at, item.ended_at)),
            _t(wall),
            _t(quiet),
        )
    console.print(timeline)
    evidence = Table(title="evidence each gate read", title_justify="left")
    evidence.add_column("gate")
    evidence.add_column("entries", overflow="fold")
    for gate in report.gates:
        names = ", ".join(f"{ref.name} ({ref.digest[:15]}…)" for ref in gate.evidence) or "-"
        evidence.add_row(_t(gate.id), _t(names))
    console.print(evidence)
    transport = report.transport
    if transport is None:
        console.print("[bold red]no transport log[/]")
    else:
        statuses = ", ".join(f"{k}: {v}" for k, v in transport.statuses.items())
        console.print(
            _t(
                f"transport: {transport.requests} requests ({statuses}), "
                f"{transport.streamed_chunks} streamed chunks; errors {list(transport.errors)}, "
                f"truncations {list(transport.truncations)}, redirects "
                f"{list(transport.redirects)}, suspected fallbacks "
                f"{list(transport.suspected_fallbacks)}"
            ),
            soft_wrap=True,
        )
    console.print(_t(f"socket ledger: {report.socket_attempts} connect() attempts"))
    for entry in report.non_loopback:
        console.print(
            Text.assemble(
                "  ",
                ("non-loopback", "bold red"),
                _t(
                    f": seq {entry.seq} {entry.process} (pid {entry.pid}) "
                    f"{entry.address}:{entry.port} {entry.outcome}"
                ),
            ),
            soft_wrap=True,
        )
    for upstream in report.upstreams:
        console.print(
            _t(
                f"checkout {upstream.name}: {upstream.repository}@{upstream.commit} "
                f"({'clean' if upstream.clean else 'DIRTY'})"
            ),
            soft_wrap=True,
        )
    model = report.model
    console.print(
        _t(
            f"model {model.runtime_model_id} {model.digest} ({model.digest_source}); "
            f"engine {model.engine or '-'} {model.engine_version or ''}"
        ),
        soft_wrap=True,
    )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{round(value, 3):g}"


def _cell(value: str) -> str:
    """Bundle text as one Markdown table cell: a ``|`` or a line break would end it early."""
    return " ".join(value.replace("|", "\\|").splitlines())


def _score_table(rows: tuple[RankRow, ...], numbered: bool) -> list[str]:
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
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        s = row.scores
        cells = [str(row.position)] if numbered else []
        cells += [
            _cell(row.run_id),
            _cell(row.model),
            _cell(row.reasoning_policy or "-"),
            _score(s.aggregate),
            _score(s.coding),
            _score(s.hermes),
            _score(s.tool_instruction),
            _score(s.reliability),
            _score(s.performance),
            row.created_at,
            f"`{row.bundle_digest}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ranking_markdown(ranking: Ranking) -> str:
    """The ranking as Markdown: the ranked table, the limitations table, controlled-policy
    groups, and the runs listed apart with their first reason."""
    pins = f"{ranking.pin_set.id} ({ranking.pin_set.digest})"
    out = [f"## Ranked deployments: {pins}", ""]
    out += _score_table(ranking.ranked, numbered=True) if ranking.ranked else ["(none)"]
    out += ["", "## Completed with profile limitations", ""]
    out += _score_table(ranking.limitations, numbered=False) if ranking.limitations else ["(none)"]
    for group, rows in ranking.controlled.items():
        out += ["", f"## Controlled policy {group} (not in the primary ranking)", ""]
        out += _score_table(rows, numbered=False)
    out += ["", "## Listed apart", ""]
    if ranking.apart:
        out += [
            "| run | pin set | outcome | validity | profile | reason | bundle |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for row in ranking.apart:
            reason = _cell(row.reasons[0] if row.reasons else "-")
            out.append(
                f"| {_cell(row.run_id)} | {row.pin_set.id} | {row.outcome} | "
                f"{row.result_validity} | {row.profile_decision} | {reason} | "
                f"`{row.bundle_digest}` |"
            )
    else:
        out.append("(none)")
    return "\n".join(out) + "\n"


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
