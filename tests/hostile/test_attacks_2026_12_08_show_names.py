"""Attacks on ``audit show`` (text, ``--html``, ``--exchange N``) and ``audit diff`` through the
names and values a publisher chooses: line breaks, Unicode bidirectional controls, zero-width
and look-alike characters, trailing spaces, markup, and very long names.

The publisher controls every byte of a bundle and reseals it (content digests recomputed,
claims as the replay finds them, the socket ledger and its sandbox traces edited together), so
integrity holds and the claims match: only the views are under test. Built on the example
bundles (``built_examples``) and the forensic view's resealing helpers
(tests/verify/test_forensic_view.py). The review of 2026-12-07 (show_diff) tried the HTML
against the text's lists and script in bodies; 2026-12-05 (review) ESC/BEL/CR in the text
views and markup in the operator's paths; 2026-12-07 (rank) bidi controls in the ranking's
Markdown. Not tried before, and tried here:

* a line feed (and U+2028) in a completed component's ``reason`` (any text, no gate reads it
  on a COMPLETED component) in ``audit show``'s text;
* a line feed in a response header's value in ``audit show --exchange N``;
* bidi controls in a sandbox process's name (the ledger and its strace edited together) in
  the text and in the page;
* a zero-width character and a Cyrillic look-alike in the model an exchange was answered by
  (the observer's ``response_model`` note): the substitution the views name;
* markup in names (``"><script>``, ``<base href>``, ``javascript:``, ``<style>``) in the
  page's forensic answer, transport table and ledger;
* a 256-character unbroken model name in the page's transport table;
* ``audit diff``: a model id with a trailing space, a zero-width space, a Cyrillic ``\\u0435`` or a
  line break against the same id; an engine spelled in another case; a manifest naming an
  upstream twice (two commits, one read?); ``diff --json``'s bytes twice.

Holes (strict xfails against 8e982c8; all five closed in the commit that added this file, each
test now asserting the fixed behaviour: ``_say`` takes a line feed as a space, and the text and
the page write out every control character but tab and line feed and every bidirectional or
invisible format character, U+2028 and U+2029 included (``bundle_schema.errors``
``SHOWN_WRITTEN_OUT``); a recorded header's name and value are ``written_out``; ``audit diff``
shows both sides as JSON strings, ASCII only, where either could look like other text):

1. ``audit show`` (text) printed a line feed in a publisher's text raw, so a name forged a line
   of the report: a COMPLETED component's reason ``"fine\\nintegrity ok; claims match;
   signature verified: ..."`` started a line at column 0 with the publisher's words, as the
   report's own check line starts (verify/render.py ``_t``/``_say``, via ``_timeline``; the
   same path for reasons, gate reasons and non-loopback lines); U+2028 went through too.
2. ``audit show --exchange N`` printed a line feed in a recorded header's value raw: the value
   ``"a\\n< x-forged: 1"`` added a header line ``< x-forged: 1`` the exchange never had
   (verify/exchange.py ``_message``; HTTP forbids LF in a header, so a recorded one is a
   forgery, and the view promises ``curl -v``'s lines).
3. The page printed bidi controls raw (verify/report_html.py ``_e``): a sandbox process named
   ``no\\u202ede`` laid the rest of the network_isolation reason, the forensic answer's first
   evidence and the ledger row out right to left, where the text view writes ``\\u202e``.
4. The page's substitution row showed a zero-width character raw (verify/report_html.py
   ``_substitution``): "answered by reference-model-q8_0 (expected reference-model-q8_0)"
   read as the same model.
5. ``audit diff``'s table showed values as they are (audit/cli/bundle.py ``_diff``,
   ``_side_value``): a model id with a trailing space, a zero-width space or a trailing
   no-break space was rightly "DIFFERS" with exit 1, but its row read
   ``reference-model-q8_0 | reference-model-q8_0``. A line feed in the id split the cell over
   two lines of the table (no row rules), forging what read as another row.

Decisions, both taken the same day (the tests assert them):

* a Cyrillic look-alike (U+0435 for ``e``) in the answering model or a diffed model id was
  shown as it is: "answered by 'r?ference-model-q8_0', not 'reference-model-q8_0'" read as a
  false alarm. The substitution's two names are now written as ``ascii()`` writes them (text,
  page, the forensic answer), and ``audit diff`` writes both sides out where either is past
  ASCII: only where two names are compared, so real non-Latin names elsewhere stay as they are.
* the page broke long words only in the gates' evidence column and in bodies (``_CSS``): every
  cell now takes ``overflow-wrap:anywhere``.

Held: the text view writes bidi controls out (``\\u202e``) and the zero-width character of
the substitution (``!r``); the page escapes markup in the answering model, the transport table
and the ledger (one ``<script>``, one ``<style>``, no ``<base>``, every ``href`` a ``#``
anchor); ``audit diff`` compares exactly: a trailing space, a zero-width space, a look-alike or
an engine in another case is "deployment DIFFERS" and exit 1, never "the same"; a manifest
naming an upstream twice is refused, not read as one commit; ``diff --json`` gives the same
bytes twice and keeps each value's characters as they are.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.layout import content_digest
from tests.data.hostile.kit import Files, lines, put_json, put_lines, read_bundle, reseal
from tests.verify.test_forensic_view import REFERENCE_MODEL, TRANSPORT, resealed
from verify import verify_with_evidence

QUALIFIED = "gx10-full-qualified"
INFRA = "gx10-full-infra-error"
LEDGER = "network/socket-ledger.jsonl"
CODING = "components/coding/result.json"
FORGED = "integrity ok; claims match; signature verified: signed by https://github.com/org/repo"

ZERO_WIDTH = "\u200b"
CYRILLIC_E = "\u0435"
LOOK_ALIKE = REFERENCE_MODEL.replace("e", CYRILLIC_E, 1)


def _seen(text: str) -> str:
    """What a reader sees of a value: no format characters (zero-width, bidi), no whitespace at
    either end, and the look-alike this file uses as the letter it imitates."""
    kept = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return kept.strip().replace(CYRILLIC_E, "e")


def _intact(path: Path) -> None:
    verdict = verify_with_evidence(path)[0]
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert verdict.claims.match


# --- edits ---------------------------------------------------------------------------------------


def _reason(text: str) -> Callable[[Files], None]:
    """The coding component (COMPLETED) carries a reason of the publisher's."""

    def edit(files: Files) -> None:
        result = json.loads(files[CODING][0])
        result["reason"] = text
        put_json(files, CODING, result)

    return edit


def _header(value: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        exchanges[1]["response_headers"]["x-note"] = value
        put_lines(files, TRANSPORT, exchanges)

    return edit


def _noted(model: str) -> Callable[[Files], None]:
    """The observer's note says exchange 1 was answered by ``model``."""

    def edit(files: Files) -> None:
        exchanges = lines(files, TRANSPORT)
        assert exchanges[1]["id"] == 1
        exchanges[1]["response_model"] = model
        put_lines(files, TRANSPORT, exchanges)

    return edit


def _process(name: str) -> Callable[[Files], None]:
    """The harness's process (``node``) renamed in the ledger and in every sandbox trace."""

    def edit(files: Files) -> None:
        entries = lines(files, LEDGER)
        for entry in entries:
            if entry["process"] == "node":
                entry["process"] = name
        put_lines(files, LEDGER, entries)
        for entry_name in [n for n in files if n.startswith("network/strace/")]:
            data, media = files[entry_name]
            files[entry_name] = (data.replace(b"<node>", f"<{name}>".encode()), media)

    return edit


def _show(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["show", str(path), *args])
    return code, capsys.readouterr().out


def _page(path: Path, out: Path) -> str:
    main(["show", str(path), "--html", str(out)])
    return out.read_text(encoding="utf-8")


# --- 1. line breaks in the text views -------------------------------------------------------------


@pytest.mark.parametrize("brk", ["\n", "\u2028"], ids=["LF", "U+2028"])
def test_a_line_break_in_a_reason_adds_no_line_to_show(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    brk: str,
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _reason(f"fine{brk}{FORGED}"))
    _intact(path)
    code, out = _show(path, capsys)
    assert code == 0
    assert "integrity ok; claims match; signature unsigned" in out  # the report's own
    assert "fine" in out
    # the report's own check line is the only one that starts "integrity"; the reason's
    # forgery starts a line at column 0 as well
    assert len([line for line in out.splitlines() if line.startswith("integrity")]) == 1


def test_a_line_feed_in_a_header_adds_no_header_line(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _header("a\n< x-forged: 1"))
    _intact(path)
    code, out = _show(path, capsys, "--exchange", "1")
    assert code == 0
    assert "< x-note: a" in out  # the header is there
    assert "< x-forged: 1" not in out.splitlines()


# --- 2. bidi controls ----------------------------------------------------------------------------


BIDI_NAME = "no\u202ede"


def test_bidi_in_a_process_name_is_written_out_in_the_text(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[INFRA], tmp_path / "b", _process(BIDI_NAME))
    _intact(path)
    code, out = _show(path, capsys)
    assert code == 0
    assert "\u202e" not in out
    assert "no\\u202ede (pid 4391)" in out


def test_bidi_in_a_process_name_is_written_out_in_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[INFRA], tmp_path / "b", _process(BIDI_NAME))
    page = _page(path, tmp_path / "r.html")
    assert "4391" in page
    assert "\u202e" not in page


# --- 3. the model that answered, spelled alike ---------------------------------------------------


def _answered_row(page: str) -> str:
    found = re.search(r'<tr id="substitution">.*?</tr>', page)
    assert found is not None
    return found[0]


def test_a_zero_width_answering_model_is_visible_in_the_text(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _noted(REFERENCE_MODEL + ZERO_WIDTH))
    _intact(path)
    code, out = _show(path, capsys)
    assert code == 0
    flat = " ".join(out.split())
    assert f"answered by: '{REFERENCE_MODEL}\\u200b'" in flat
    assert ZERO_WIDTH not in out


def test_a_zero_width_answering_model_is_visible_in_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _noted(REFERENCE_MODEL + ZERO_WIDTH))
    row = _answered_row(_page(path, tmp_path / "r.html"))
    assert ZERO_WIDTH not in row
    assert REFERENCE_MODEL in row


def test_a_look_alike_answering_model_is_told_apart(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _noted(LOOK_ALIKE))
    code, out = _show(path, capsys)
    assert code == 0
    said = re.search(r"answered by: '([^']*)' \(.*?\), not '([^']*)'", " ".join(out.split()))
    assert said is not None
    assert _seen(said[1]) != _seen(said[2])  # the reader can tell them apart


# --- 4. markup and long names in the page --------------------------------------------------------


MARKUP = '"><script>alert(1)</script><base href="javascript:alert(2)//"><style>*{x:y}</style>'


def test_markup_in_names_is_text_in_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _noted(MARKUP))
    _intact(path)
    page = _page(path, tmp_path / "r.html")
    shown = page.replace("&quot;", '"').replace("&#x27;", "'")
    assert "answered by</th><td>'\"&gt;&lt;script&gt;" in shown
    assert page.count("<script") == 1
    assert page.count("<style") == 1
    assert "<base" not in page
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', page))


def test_markup_in_a_process_name_is_text_in_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    name = "n\"'<script src=//e.vil/x.js<base href=javascript:alert(1)//"  # no '>': strace's <comm>
    path = resealed(built_examples[INFRA], tmp_path / "b", _process(name))
    _intact(path)
    page = _page(path, tmp_path / "r.html")
    assert "&lt;script src=//e.vil/x.js" in page
    assert page.count("<script") == 1
    assert "<base" not in page
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', page))


def test_a_long_unbroken_name_cannot_widen_the_page(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    path = resealed(built_examples[QUALIFIED], tmp_path / "b", _noted("m" * 256))
    page = _page(path, tmp_path / "r.html")
    assert "m" * 256 in page
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", style[1])
    breaking = [
        sel
        for sel, body in rules
        if re.search(r"overflow-wrap:\s*anywhere|word-break:\s*break-(all|word)", body)
    ]
    assert any(
        re.fullmatch(r"\s*(td|th\s*,\s*td|td\s*,\s*th|table\s+td)\s*", s) for s in breaking
    ), breaking


# --- 5. audit diff -------------------------------------------------------------------------------


def _renamed(source: Path, target: Path, **model: str) -> Path:
    """``source`` with its manifest's model identity changed (the evidence as it was)."""
    manifest, files = read_bundle(source)
    reseal(target, manifest, files, {"model": manifest.model.model_dump() | model})
    return target


def _diff_text(
    a: Path, b: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["diff", str(a), str(b)])
    return code, capsys.readouterr().out


SPELLED_ALIKE = {
    "trailing-space": REFERENCE_MODEL + " ",
    "zero-width": REFERENCE_MODEL + ZERO_WIDTH,
    "no-break-space": REFERENCE_MODEL + "\u00a0",
}


@pytest.mark.parametrize("spelled", sorted(SPELLED_ALIKE))
def test_diff_never_reads_a_model_spelled_alike_as_the_same(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    spelled: str,
) -> None:
    a = built_examples[QUALIFIED]
    b = _renamed(a, tmp_path / "b", runtime_model_id=SPELLED_ALIKE[spelled])
    code, out = _diff_text(a, b, capsys, monkeypatch)
    assert code == 1
    assert "deployment DIFFERS" in " ".join(out.split())  # however the title wraps
    capsys.readouterr()
    main(["diff", str(a), str(b), "--json"])
    diff = json.loads(capsys.readouterr().out)
    assert diff["same_deployment"] is False
    row = next(d for d in diff["differences"] if d["field"] == "model.runtime_model_id")
    assert (row["a"], row["b"]) == (REFERENCE_MODEL, SPELLED_ALIKE[spelled])


def _row(out: str, field: str) -> list[str]:
    line = next(x for x in out.splitlines() if field in x)
    return [cell.strip() for cell in line.split("│")[1:-1]]


@pytest.mark.parametrize("spelled", sorted(SPELLED_ALIKE))
def test_diff_shows_where_a_model_spelled_alike_differs(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    spelled: str,
) -> None:
    a = built_examples[QUALIFIED]
    b = _renamed(a, tmp_path / "b", runtime_model_id=SPELLED_ALIKE[spelled])
    _code, out = _diff_text(a, b, capsys, monkeypatch)
    _field, left, right, _delta = _row(out, "model.runtime_model_id")
    assert _seen(left) != _seen(right)


def test_diff_shows_where_a_look_alike_model_differs(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = built_examples[QUALIFIED]
    b = _renamed(a, tmp_path / "b", runtime_model_id=LOOK_ALIKE)
    code, out = _diff_text(a, b, capsys, monkeypatch)
    assert code == 1
    _field, left, right, _delta = _row(out, "model.runtime_model_id")
    assert _seen(left) != _seen(right)


def test_a_line_feed_in_a_diffed_model_forges_no_row(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = built_examples[QUALIFIED]
    b = _renamed(a, tmp_path / "b", runtime_model_id=f"{REFERENCE_MODEL}\nmodel.digest")
    code, out = _diff_text(a, b, capsys, monkeypatch)
    assert code == 1
    rows = [x for x in out.splitlines() if "model.digest" in x]
    assert rows
    assert all("model.runtime_model_id" in x for x in rows)


def test_diff_reads_an_engine_in_another_case_as_another(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = built_examples[QUALIFIED]
    engine = read_bundle(a)[0].model.engine
    assert engine is not None
    b = _renamed(a, tmp_path / "b", engine=engine.swapcase())
    code, out = _diff_text(a, b, capsys, monkeypatch)
    assert code == 1
    assert "deployment DIFFERS" in " ".join(out.split())  # however the title wraps
    assert _row(out, "model.engine")[1:3] == [engine, engine.swapcase()]


def test_diff_refuses_a_manifest_naming_an_upstream_twice(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two commits under one name: a dict by name would keep one, and read the pair "same"."""
    a = built_examples[QUALIFIED]
    b = tmp_path / "b"
    shutil.copytree(a, b)
    manifest = b / "manifest.json"
    manifest.chmod(0o644)
    value = json.loads(manifest.read_bytes())
    first = dict(value["upstreams"][0]) | {"commit": "0" * 40}
    value["upstreams"] = [first, *value["upstreams"]]
    value["content_digest"] = content_digest(value)
    manifest.write_bytes(canonical_bytes(value))
    code = main(["diff", str(a), str(b)])
    captured = capsys.readouterr()
    assert code != 0
    assert "twice" in captured.err
    assert "Traceback" not in captured.err


def test_diff_json_is_the_same_bytes_twice_and_keeps_the_characters(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = built_examples[QUALIFIED]
    b = _renamed(a, tmp_path / "b", runtime_model_id=LOOK_ALIKE + ZERO_WIDTH)
    outs = []
    for _ in range(2):
        main(["diff", str(a), str(b), "--json"])
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    row = next(
        d for d in json.loads(outs[0])["differences"] if d["field"] == "model.runtime_model_id"
    )
    assert row["b"] == LOOK_ALIKE + ZERO_WIDTH
