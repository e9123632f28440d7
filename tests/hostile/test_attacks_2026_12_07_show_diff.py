"""Attacks on ``audit show`` (text, ``--json``, ``--html``, ``--exchange N``) and ``audit diff``.

The publisher controls every byte of a bundle and reseals it (content digests recomputed, claims
as the replay finds them), so only the checks under review stand between the forgery and the
reviewer. Built on the example bundles (``built_examples``) and the forensic view's own
resealing helpers (tests/verify/test_forensic_view.py).

Attacked:

* the HTML report against the text: a substitution named only in the reply's body (the
  observer's ``response_model`` note left as the runtime model), script injection through an
  exchange's body and error;
* the forensic answer: a substitution beside an earlier infra gate (the observer's count off by
  one), a task that ran out of time while an exchange it made never ended but a later one did
  ("slow model" or "hung agent"?);
* the transport summary: a truncated reply spelled with a tab after the colon;
* ``--exchange N``: two lines of the log with the same id and different bytes;
* ``audit diff``: one side failing integrity, the sides' attribution (A is A), a pair that
  differs only in the reasoning policy the run asked for;
* ``show`` against ``verify``: claims that differ from the replay; determinism of ``--json``.

Found (strict xfails against 0076029, all four closed in the commit that added this file, each
test now asserting the fixed behaviour: the page's filters take the text's lists; a
substitution is looked for whenever network_isolation is an infra gate, first or not, and named
beside the first; an exchange of any order still open when an item stopped makes it a slow
model; truncation is read as JSON, ``verify.replies.truncated``):

* the HTML transport log's "suspected fallbacks" filter reads only the observer's note with an
  exact comparison (verify/report_html.py, ``_transport``): an exchange whose reply body names
  another model is listed by the text's "suspected fallbacks" and not by the page's filter;
* the forensic answer names a substitution only when network_isolation is the first infra gate
  (verify/forensics.py, ``_forensic``): with an earlier infra gate (here transport_evidence) the
  answer says "the observer failed; no gate found a failure of the model" and has no
  substitution, though the replies name another model;
* a task that ran out of time is called a "hung agent" whose "no exchange was open when the
  task stopped" while one of its exchanges never ended (verify/forensics.py, ``_timed_out``:
  only the last-started exchange is asked whether it was cut, and ``_open_for`` counts a
  never-ended exchange without chunks as open for 0 s);
* truncation is found by a substring of the reply with spaces removed
  (verify/forensics.py, ``_transport``; verify/report_html.py, ``_transport``): a tab after
  ``"finish_reason":`` hides a truncated reply from both views.

A decision it found (was a strict xfail), changed the same day: ``audit diff`` neither listed
nor counted the run's reasoning policy (verify/diffing.py): two runs of the same model, one with
reasoning off and one with it on, were "the same deployment", the table of differences empty and
the exit 0. The reasoning policy is part of the deployment now (``config.reasoning_policy``).

Stopped: a side failing integrity makes ``diff`` exit 1 naming it; ``diff``'s A and B columns are
the bundles given as A and B; ``show`` exits 1 as ``verify`` does when claims differ from the
replay; ``--exchange N`` on a log repeating an id prints the first line, names the other and
exits 1 (the repeated id fails integrity: "exchange ids go from 23 to 1"); script in a body
or error is escaped in the page; ``show --json`` and ``--html`` give the same bytes twice.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Claims
from tests.data.hostile.kit import Files, lines, put_json, put_lines, read_bundle, reseal
from tests.verify.test_forensic_view import (
    CONFIG,
    OTHER_MODEL,
    TRANSPORT,
    _answered_by,
    _timed_out_task,
    report_of,
    resealed,
)
from verify import verify_with_evidence

QUALIFIED = "gx10-full-qualified"


def _show_json(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["show", str(path), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def _rows(page: str) -> dict[int, str]:
    """Each exchange row of the page's transport table, by its anchor."""
    return {
        int(m[1]): m[0]
        for m in re.finditer(r'<tr class="exchange" id="exchange-(\d+)"[^>]*>', page)
    }


# --- the HTML against the text -------------------------------------------------------------------


def test_the_page_flags_every_exchange_the_text_suspects(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _answered_by(OTHER_MODEL, 1))
    html = tmp_path / "report.html"
    code, report = _show_json(path, capsys, "--html", str(html))
    assert code == 0
    suspected = report["transport"]["suspected_fallbacks"]
    assert suspected  # the text names it
    rows = _rows(html.read_text())
    assert all('data-fallback="1"' in rows[n] for n in suspected)


def test_script_in_a_body_or_error_is_text_in_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    payload = "</pre></details><script>alert(1)</script><style>tr{display:none}</style>"

    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        exchanges[0]["response_body"]["data"] = payload
        put_lines(files, TRANSPORT, exchanges)

    path = resealed(built_examples[QUALIFIED], tmp_path / "b", edit)
    html = tmp_path / "report.html"
    main(["show", str(path), "--html", str(html)])
    page = html.read_text()
    assert page.count("<script") == 1  # the page's own
    assert page.count("<style") == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- the forensic answer -------------------------------------------------------------------------


def _substituted_and_miscounted(files: Files) -> None:
    """A reply names another model, and the observer's count is one more than the log holds
    (an infra gate, transport_evidence, that comes before network_isolation)."""
    _answered_by(OTHER_MODEL, 1)(files)
    config = json.loads(files[CONFIG][0])
    config["observer"]["exchanges"] += 1
    put_json(files, CONFIG, config)


def test_a_substitution_is_named_beside_an_earlier_infra_gate(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _substituted_and_miscounted)
    report = report_of(path)
    gates = {g.id: g.status for g in report.verdict.gates}
    assert gates["network_isolation"] == "infra"  # the gate found it
    assert report.forensic is not None
    assert report.forensic.substitution is not None
    assert report.forensic.substitution.answered_by == OTHER_MODEL


def _one_never_ended(files: Files) -> None:
    """The idle timed-out task, whose first exchange was sent and never answered (the observer
    saw no end and no byte), while the later two were answered."""
    _timed_out_task(cut=False)(files)
    exchanges = lines(files, TRANSPORT)
    first = exchanges[-3]
    first |= {"ended": None, "chunks": [], "status": None, "response_body": None}
    first["response_headers"] = {}
    put_lines(files, TRANSPORT, exchanges)


def test_a_task_with_an_exchange_never_answered_is_not_a_hung_agent(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _one_never_ended)
    verdict, evidence = verify_with_evidence(path)
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    never = (evidence.transport or ())[-3]
    assert never.ended is None
    item = next(t for t in report_of(path).timeline if t.name == "add-retry-policy")
    assert item.timed_out is not None
    assert never.id in item.timed_out.exchanges.first
    assert item.timed_out.cause != "hung agent"
    assert "no exchange was open when the task stopped" not in item.timed_out.explanation


# --- the transport summary -----------------------------------------------------------------------


def _truncated_with_a_tab(files: Files) -> None:
    exchanges = lines(files, TRANSPORT)
    exchange = exchanges[4]
    changed = 0
    for chunk in exchange["chunks"]:
        for spelled in ('"finish_reason":"stop"', '"finish_reason": "stop"'):
            if spelled in chunk["data"]:
                chunk["data"] = chunk["data"].replace(spelled, '"finish_reason":\t"length"')
                changed += 1
    assert changed
    put_lines(files, TRANSPORT, exchanges)


def test_a_truncated_reply_is_listed_however_its_json_is_spaced(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _truncated_with_a_tab)
    html = tmp_path / "report.html"
    _code, report = _show_json(path, capsys, "--html", str(html))
    assert 4 in report["transport"]["truncations"]
    assert 'data-truncated="1"' in _rows(html.read_text())[4]


# --- --exchange N --------------------------------------------------------------------------------


def test_an_exchange_id_twice_is_not_shown_as_the_one_exchange(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        exchanges.append(json.loads(json.dumps(exchanges[3])))  # a second line claiming id 3
        put_lines(files, TRANSPORT, exchanges)

    path = resealed(built_examples[QUALIFIED], tmp_path / "b", edit)
    count = len(lines(read_bundle(path)[1], TRANSPORT))
    code = main(["show", str(path), "--exchange", "3"])
    captured = capsys.readouterr()
    assert code == 1  # the log repeating an id fails integrity, as verify says
    assert "integrity failed" in captured.err
    shown = " ".join(captured.out.split())
    assert "line 4 of transport/exchanges.jsonl" in shown  # the first, and it says so
    assert f"the same id is also on line {count} of the log" in shown
    assert "Traceback" not in captured.err


# --- show against verify -------------------------------------------------------------------------


def test_show_fails_as_verify_does_when_claims_differ(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = built_examples["gx10-full-infra-error"]
    manifest, files = read_bundle(source)
    claims = manifest.claims.model_dump()
    claims |= {"outcome": "QUALIFIED", "result_validity": "VALID"}
    target = tmp_path / "b"
    reseal(target, manifest, files, {"claims": Claims.model_validate(claims).model_dump()})
    code, report = _show_json(target, capsys)
    assert code == 1
    assert report["verdict"]["outcome"] == "INFRA_ERROR"  # the replay's, not the claim's
    assert main(["verify", str(target)]) == 1
    capsys.readouterr()


def test_show_gives_the_same_bytes_twice(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _substituted_and_miscounted)
    outs = []
    for n in range(2):
        main(["show", str(path), "--json", "--html", str(tmp_path / f"r{n}.html")])
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert (tmp_path / "r0.html").read_bytes() == (tmp_path / "r1.html").read_bytes()


# --- diff ----------------------------------------------------------------------------------------


def _flipped(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    blobs = sorted((target / "blobs").rglob("*"))
    blob = next(b for b in blobs if b.is_file() and b.stat().st_size > 100)
    blob.chmod(0o644)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    return target


def test_diff_is_1_when_one_side_fails_integrity(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = built_examples[QUALIFIED]
    bad = _flipped(good, tmp_path / "bad")
    for a, b, name in ((good, bad, "B"), (bad, good, "A")):
        code = main(["diff", str(a), str(b)])
        err = capsys.readouterr().err
        assert code == 1
        assert f"{name} failed its check" in err
        assert "Traceback" not in err


def test_diff_puts_each_side_under_its_own_name(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = built_examples[QUALIFIED], built_examples["gx10-full-infra-error"]
    code = main(["diff", str(a), str(b), "--json"])
    diff = json.loads(capsys.readouterr().out)
    assert code == 1
    outcome = next(d for d in diff["differences"] if d["field"] == "outcome")
    assert (outcome["a"], outcome["b"]) == ("QUALIFIED", "INFRA_ERROR")
    assert diff["a"]["bundle_digest"] == verify_with_evidence(a)[0].bundle_digest


def _reasoning_on(files: Files) -> None:
    """The same run, its config saying reasoning was asked for (and every request asking)."""
    config = json.loads(files[CONFIG][0])
    config["reasoning_policy"] = {
        "effective": "high",
        "serialization": {"path": "reasoning_effort", "value": "high"},
    }
    put_json(files, CONFIG, config)
    exchanges = lines(files, TRANSPORT)
    for exchange in exchanges:
        body = exchange.get("request_body")
        if exchange["method"] == "POST" and body and body.get("encoding") == "utf-8":
            request = json.loads(body["data"])
            request.pop("chat_template_kwargs", None)
            request["reasoning_effort"] = "high"
            body["data"] = json.dumps(request, separators=(",", ":"))
    put_lines(files, TRANSPORT, exchanges)


def test_diff_shows_a_different_reasoning_policy(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = built_examples[QUALIFIED]
    b = resealed(a, tmp_path / "b", _reasoning_on)
    assert verify_with_evidence(b)[0].integrity.status == "ok"
    code = main(["diff", str(a), str(b), "--json"])
    diff = json.loads(capsys.readouterr().out)
    fields = [d["field"] for d in diff["differences"]]
    assert any("reasoning" in f for f in fields), fields
    assert code == 1
