"""One self-contained HTML file for a bundle's review (``audit show --html``): inline CSS, JS and
SVG only, nothing fetched. The verdict banner, reasons, the forensic answer (a substitution's
model and exchanges), score bars against their thresholds, a timeline chart and what ran out of
time (slow model or hung agent), the gates table, a searchable and filterable transport log
with bodies and streamed-chunk timing, and the socket ledger. Each exchange's row is anchored
(``#exchange-N``) and every "exchange N" in the reasons, the first evidence and the gates'
reasons and evidence links to it (ADR 0020). The same report gives the same bytes."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence, Set
from html import escape

from bundle_schema.errors import SHOWN_WRITTEN_OUT
from bundle_schema.models import (
    EvidenceRef,
    ExchangeIds,
    ShowReport,
    SocketLedgerEntry,
    Substitution,
    TransportExchange,
    TransportSummary,
)
from verify.exchange import TRANSPORT_LOG
from verify.gx10 import off_sandbox
from verify.render import describe_signature, gate_figures
from verify.replies import harness_went

__all__ = ["report_html"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:16px}
section{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:12px 16px;margin:12px 0}
h2{font-size:16px;margin:0 0 8px}
.verdict{padding:18px 16px;color:#fff;font-size:20px;font-weight:600}
.verdict.QUALIFIED{background:#1a7f37}.verdict.NOT_QUALIFIED{background:#9a6700}
.verdict.INFRA_ERROR{background:#cf222e}
.verdict small{display:block;font-size:13px;font-weight:400;opacity:.9}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #eaeef2;vertical-align:top}
th,td{overflow-wrap:anywhere}
td.evidence{word-break:break-all;font-size:12px;width:30%}
tr[data-status=pass] .status{color:#1a7f37}tr[data-status=fail] .status{color:#9a6700}
tr[data-status=infra] .status{color:#cf222e;font-weight:600}
tr[data-status=not_selected] .status{color:#6e7781}
tr.outside{background:#ffebe9}
tr.exchange:target{background:#fff8c5;outline:2px solid #d4a72c}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:6px;max-height:240px;overflow:auto}
.controls{display:flex;gap:8px;margin-bottom:8px}
input,select{font:inherit;padding:4px 6px}
svg text{font:12px system-ui,sans-serif}
"""

_JS = """
(function(){
  var search=document.getElementById('transport-search');
  var filter=document.getElementById('transport-filter');
  var rows=Array.prototype.slice.call(
    document.querySelectorAll('#transport-table tbody tr.exchange'));
  var count=document.getElementById('transport-count');
  function apply(){
    var q=search.value.toLowerCase(), f=filter.value, shown=0;
    rows.forEach(function(r){
      var ok=(!q||r.textContent.toLowerCase().indexOf(q)>=0)&&(!f||r.getAttribute('data-'+f)==='1');
      r.style.display=ok?'':'none'; if(ok){shown++;}
    });
    count.textContent=shown+' of '+rows.length+' exchanges shown';
  }
  search.addEventListener('input',apply); filter.addEventListener('change',apply); apply();
  function reveal(){
    var id=decodeURIComponent(location.hash.slice(1));
    if(id.indexOf('exchange-')!==0){return;}
    var row=document.getElementById(id); if(!row){return;}
    search.value=''; filter.value=''; apply();
    var details=row.querySelector('details'); if(details){details.open=true;}
    row.scrollIntoView();
  }
  window.addEventListener('hashchange',reveal); reveal();
})();
"""


def _e(value: object) -> str:
    """Bundle text in the page: markup escaped, and shown as the text view shows it (control
    characters but tab and line feed as ``\\x1b``, bidirectional and invisible format
    characters as ``\\u202e``): a name cannot reverse a row or read as the name it differs
    from by a zero-width space."""
    return escape(("" if value is None else str(value)).translate(SHOWN_WRITTEN_OUT))


_NAMED = re.compile(r"\bexchange (\d+)(?![0-9])")
"""How reasons, gate evidence and the forensic answer name an exchange ("exchange 12")."""


def _linked(value: object, ids: Set[int]) -> str:
    """Escaped text in which each "exchange N" of the transport table links to its row."""

    def link(match: re.Match[str]) -> str:
        n = int(match[1])
        return f'<a href="#exchange-{n}">{match[0]}</a>' if n in ids else match[0]

    return _NAMED.sub(link, _e(value))


def _banner(report: ShowReport) -> str:
    v = report.verdict
    rank = f"rankable ({v.rank_group})" if v.rankable else "not rankable"
    claims = "claims match the replay" if v.claims.match else "claims DIFFER from the replay"
    return (
        f'<header id="verdict" class="verdict {_e(v.outcome)}">{_e(v.outcome)}'
        f"<small>{_e(v.result_validity)} · {_e(v.profile_decision)} · {rank} · {claims} · "
        f"run {_e(v.run_id)} · pin set {_e(v.pin_set.id)} · bundle {_e(v.bundle_digest)} · "
        f"integrity {_e(v.integrity.status)} · "
        f'<span id="signature">signature {_e(describe_signature(v.signature))}</span>'
        "</small></header>"
    )


def _reasons(report: ShowReport, ids: Set[int]) -> str:
    items = (
        "".join(f"<li>{_linked(r, ids)}</li>" for r in report.verdict.reasons) or "<li>none</li>"
    )
    forensic = report.forensic
    extra = ""
    if forensic is not None:
        first = _linked(forensic.first_evidence or "-", ids)
        extra = (
            '<section id="forensic"><h2>What broke, and was it the model?</h2><table>'
            f"<tr><th>failed</th><td>{_e(forensic.failed_part)}</td></tr>"
            f"<tr><th>summary</th><td>{_e(forensic.summary)}</td></tr>"
            f"<tr><th>first evidence</th><td>{first}</td></tr>"
            f"<tr><th>the model before it</th><td>{_e(forensic.model_before)}</td></tr>"
            f"<tr><th>aggregate had it held</th><td>{_e(forensic.worst_aggregate)} to "
            f"{_e(forensic.best_aggregate)}</td></tr>{_substitution(forensic.substitution, ids)}"
            "</table></section>"
        )
    return f'<section id="reasons"><h2>Reasons</h2><ul>{items}</ul></section>{extra}'


def _exchanges(found: ExchangeIds, ids: Set[int]) -> str:
    """A count and the first few exchanges, each linked to its row."""
    shown = ", ".join(_linked(f"exchange {n}", ids) for n in found.first)
    more = f" and {found.count - len(found.first)} more" if found.count > len(found.first) else ""
    return f"{found.count}: {shown}{more}" if found.count else "none"


def _substitution(found: Substitution | None, ids: Set[int]) -> str:
    if found is None:
        return ""
    how = "the reply's model" if found.by == "model" else "the reply's system_fingerprint"
    return (
        f'<tr id="substitution"><th>answered by</th><td>{_e(ascii(found.answered_by))} '
        f"(expected {_e(ascii(found.expected))}; by {how})</td></tr>"
        f"<tr><th>its exchanges</th><td>{_exchanges(found.exchanges, ids)}</td></tr>"
    )


def _timed_out(report: ShowReport, ids: Set[int]) -> str:
    """Every task or component that ran out of time: slow model or hung agent, and why."""
    rows = "".join(
        f"<tr><td>{_e(t.kind)} {_e(t.name)}</td><td>{_e(t.timed_out.cause)}</td>"
        f"<td>{_exchanges(t.timed_out.exchanges, ids)}</td>"
        f"<td>{_linked(t.timed_out.explanation, ids)}</td></tr>"
        for t in report.timeline
        if t.timed_out is not None
    )
    if not rows:
        return ""
    return (
        '<table id="timed-out"><thead><tr><th>ran out of time</th><th>cause</th>'
        "<th>exchanges</th><th>why</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _scores(report: ShowReport, thresholds: Mapping[str, float]) -> str:
    scores = report.verdict.scores.model_dump()
    names = [n for n in scores if n != "executed_weight"]
    row, width, left = 26, 520, 140
    parts = [
        f'<svg id="score-bars" width="{left + width + 80}" height="{row * len(names) + 10}" '
        'role="img" aria-label="scores against thresholds">'
    ]
    for i, name in enumerate(names):
        y = 5 + i * row
        value = scores[name]
        shown = "-" if value is None else f"{round(value, 3):g}"
        bar = 0 if value is None else width * value / 100
        parts.append(f'<text x="0" y="{y + 15}">{_e(name)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{width}" height="18" fill="#eaeef2"/>')
        parts.append(
            f'<rect class="score" x="{left}" y="{y}" width="{bar:.1f}" height="18" fill="#0969da"/>'
        )
        if name in thresholds:
            x = left + width * thresholds[name] / 100
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 2}" y2="{y + 20}" '
                'stroke="#cf222e" stroke-width="2"><title>threshold '
                f"{thresholds[name]:g}</title></line>"
            )
        parts.append(f'<text x="{left + width + 8}" y="{y + 15}">{shown}</text>')
    parts.append("</svg>")
    weight = scores["executed_weight"]
    gates = "".join(
        f'<p class="gate-figures">{_e(gate_figures(g))}</p>'
        for g in report.verdict.diagnostics.supplementary
    )
    return (
        '<section id="scores"><h2>Scores (red: the profile\'s threshold)</h2>'
        f"{''.join(parts)}<p>executed weight {weight:g}</p>{gates}</section>"
    )


def _seconds(timestamp: str) -> float | None:
    """A schema-valid timestamp as POSIX seconds; None when it names no calendar time (the
    schema's pattern admits month 13, hour 99, a leap second and year 0)."""
    try:
        return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):
        return None


def _timeline(report: ShowReport, ids: Set[int]) -> str:
    spans = []
    untimed = []
    for item in report.timeline:
        if item.kind == "component" and item.started_at and item.ended_at:
            began, ended = _seconds(item.started_at), _seconds(item.ended_at)
            if began is None or ended is None:
                untimed.append(f"{item.name} ({item.started_at} to {item.ended_at})")
            else:
                spans.append((item.name, item.status, began, ended))
    odd = (
        f'<p id="untimed">not calendar times, left off the chart: {_e(", ".join(untimed))}</p>'
        if untimed
        else ""
    )
    return (
        f'<section id="timeline"><h2>Timeline</h2>{_chart(spans)}{odd}{_tasks(report)}'
        f"{_timed_out(report, ids)}</section>"
    )


def _chart(spans: Sequence[tuple[str, str, float, float]]) -> str:
    if not spans:
        return "<p>no timed components</p>"
    first, last = min(s[2] for s in spans), max(s[3] for s in spans)
    total = max(last - first, 1.0)
    row, width, left = 24, 700, 140
    parts = [
        f'<svg id="timeline-chart" width="{left + width + 20}" height="{row * len(spans) + 24}" '
        'role="img" aria-label="run timeline">'
    ]
    for i, (name, status, start, end) in enumerate(spans):
        y = 4 + i * row
        x = left + width * (start - first) / total
        w = max(2.0, width * (end - start) / total)
        colour = "#1a7f37" if status == "COMPLETED" else "#cf222e"
        parts.append(f'<text x="0" y="{y + 14}">{_e(name)}</text>')
        parts.append(
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="16" fill="{colour}">'
            f"<title>{_e(name)} {_e(status)}: {end - start:.0f} s</title></rect>"
        )
    parts.append(f'<text x="{left}" y="{row * len(spans) + 18}">0 s</text>')
    parts.append(f'<text x="{left + width - 40}" y="{row * len(spans) + 18}">{total:.0f} s</text>')
    parts.append("</svg>")
    return "".join(parts)


def _tasks(report: ShowReport) -> str:
    tasks = "".join(
        f"<tr><td>{_e(t.name)}</td><td>{_e(t.status)}</td><td>{_e(t.wall_s)} / "
        f"{_e(t.wall_limit_s)}</td><td>{_e(t.inactivity_s)} / {_e(t.inactivity_limit_s)}</td>"
        f"<td>{_e(t.cleanup)}</td></tr>"
        for t in report.timeline
        if t.kind == "task"
    )
    if not tasks:
        return ""
    return (
        "<table><thead><tr><th>task</th><th>outcome</th><th>wall / limit (s)</th>"
        "<th>silence / limit (s)</th><th>cleanup</th></tr></thead>"
        f"<tbody>{tasks}</tbody></table>"
    )


def _refs(refs: Sequence[EvidenceRef], details: Sequence[str], ids: Set[int]) -> str:
    """The entries a gate read (the transport log links to its table) and the evidence lines
    of its result (each exchange they name links to its row)."""
    entries = [
        f'<a href="#transport">{_e(r.name)}</a> {_e(r.digest[:19])}…'
        if r.name == TRANSPORT_LOG
        else f"{_e(r.name)} {_e(r.digest[:19])}…"
        for r in refs
    ]
    return "<br>".join(entries + [_linked(d, ids) for d in details])


def _gates(report: ShowReport, ids: Set[int]) -> str:
    rows = "".join(
        f'<tr class="gate" data-status="{_e(g.status)}"><td>{_e(g.id)}</td>'
        f'<td class="status">{_e(g.status)}</td><td>{_linked(g.reason, ids)}</td>'
        f'<td class="evidence">{_refs(g.evidence, g.details, ids)}</td></tr>'
        for g in report.gates
    )
    return (
        '<section id="gates"><h2>Hard gates</h2><table id="gates-table"><thead><tr>'
        "<th>gate</th><th>status</th><th>reason</th><th>evidence</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _body(body: object) -> str:
    data = getattr(body, "data", None)
    return "" if data is None else _e(data)


def _transport(exchanges: Sequence[TransportExchange], summary: TransportSummary | None) -> str:
    """The transport log's rows, each flagged for the page's filters; the suspected fallbacks
    and truncations are the text's (:class:`TransportSummary`), never found again here."""
    suspected = set(summary.suspected_fallbacks) if summary is not None else set()
    truncations = set(summary.truncations) if summary is not None else set()
    rows = []
    anchored: set[int] = set()
    for e in exchanges:
        # one anchor per id: a log that repeats an id (a defect) links to its first line
        anchor = "" if e.id in anchored else f' id="exchange-{e.id}"'
        anchored.add(e.id)
        flags = {
            "error": e.error is not None or (e.status or 0) >= 400,
            "abandoned": harness_went(e),
            "stream": bool(e.chunks),
            "redirect": e.redirect is not None,
            "fallback": e.id in suspected,
            "truncated": e.id in truncations,
        }
        data = " ".join(f'data-{k}="{int(v)}"' for k, v in flags.items())
        chunks = "".join(f"<li>{c.t:.4f} s: {_e(c.data)}</li>" for c in e.chunks)
        rows.append(
            f'<tr class="exchange"{anchor} {data}><td>{e.id}</td><td>{_e(e.component)}</td>'
            f"<td>{_e(e.method)} {_e(e.path)}</td><td>{_e(e.status)}</td>"
            f"<td>{_e(e.response_model)}</td><td>{len(e.chunks)}</td>"
            f"<td><details><summary>bodies</summary><p>request</p><pre>{_body(e.request_body)}"
            f"</pre><p>response</p><pre>{_body(e.response_body)}</pre>"
            + (f"<p>chunks</p><ol>{chunks}</ol>" if chunks else "")
            + (f"<p>error: {_e(e.error)}</p>" if e.error else "")
            + (f"<p>redirect: {_e(e.redirect)}</p>" if e.redirect else "")
            + "</details></td></tr>"
        )
    options = "".join(
        f'<option value="{k}">{label}</option>'
        for k, label in (
            ("", "all exchanges"),
            ("stream", "streamed"),
            ("error", "errors"),
            ("abandoned", "the harness gone before the answer"),
            ("truncated", "truncated"),
            ("redirect", "redirects"),
            ("fallback", "suspected fallbacks"),
        )
    )
    return (
        '<section id="transport"><h2>Transport log</h2><div class="controls">'
        '<input id="transport-search" type="search" placeholder="search the transport log">'
        f'<select id="transport-filter">{options}</select>'
        '<span id="transport-count"></span></div><table id="transport-table"><thead><tr>'
        "<th>id</th><th>component</th><th>request</th><th>status</th><th>model</th>"
        f"<th>chunks</th><th>bodies</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "</section>"
    )


def _ledger(entries: Sequence[SocketLedgerEntry]) -> str:
    rows = "".join(
        f'<tr class="{"outside" if off_sandbox(e) else ""}">'
        f"<td>{e.seq}</td><td>{e.t:.3f}</td><td>{_e(e.process)} ({e.pid})</td>"
        f"<td>{_e(e.family)}</td><td>{_e(e.address)}</td><td>{_e(e.port)}</td>"
        f"<td>{_e(e.outcome)}</td><td>{_e(e.component)}</td></tr>"
        for e in entries
    )
    return (
        '<section id="ledger"><h2>Socket ledger (red: not loopback)</h2><table>'
        "<thead><tr><th>seq</th><th>t (s)</th><th>process</th><th>family</th>"
        "<th>address</th><th>port</th><th>outcome</th><th>component</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def report_html(
    report: ShowReport,
    exchanges: Sequence[TransportExchange],
    ledger: Sequence[SocketLedgerEntry],
    thresholds: Mapping[str, float],
) -> str:
    """The review report as one self-contained HTML document."""
    v = report.verdict
    ids = {e.id for e in exchanges}
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(v.outcome)}: {_e(v.run_id)}</title><style>{_CSS}</style></head><body>"
        f"{_banner(report)}<main>{_reasons(report, ids)}{_scores(report, thresholds)}"
        f"{_timeline(report, ids)}{_gates(report, ids)}"
        f"{_transport(exchanges, report.transport)}{_ledger(ledger)}</main>"
        f"<script>{_JS}</script></body></html>\n"
    )
