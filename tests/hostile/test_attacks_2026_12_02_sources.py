"""Hostile tests of the change of 2026-12-02 that keeps an archive's sources and the blob
cache's digests on disk (``verify.archive.SourceList``, ``verify._hashing.BlobCache`` past
4,096 digests, ``bundle_schema.errors.printable``): an archive's publisher controls every name
in it (a folder's entries, a list file's lines) and every byte of its bundles.

What the review found, comparing with the code before the change (45431c2):

- held: the walk and every output of ``rank``, ``rejudge`` and ``verify-archive`` (text,
  ``--json``, ``--markdown``, ``--csv``) the same bytes whatever the order the sources are
  given in, and on Dask (``--workers 2``) as here, with names that are astral, U+FFFF, not
  UTF-8 (``\\xff``), the text ``\\xff`` itself (refused as the other's twin, never judged as it),
  200 characters long; a source given twice; list files with relative paths and folders; a
  folder of only non-bundles (exit 2, one line); a symlink to a bundle (judged); a blob of a
  shared store rewritten in place with the same size after the cache moved its digest to disk
  (``in_memory`` 0, 1, 2: hashed again, failed); no file left in ``TMPDIR``. A blob rewritten
  with its old mtime restored (``os.utime``) was still taken for itself, with or without the
  spill; since ADR 0039 the cache's key holds the change time and it is hashed again
  (``tests/verify/test_blob_cache_ctime.py``);
- holes, fixed: a folder holding a symlink loop (``x.tar -> x.tar``) made every archive command
  fail with exit 2 (``os.DirEntry.is_file`` raises ``ELOOP``, where ``Path.is_file`` said no and
  the entry was skipped); a list file (under its 256 MiB bound) with one line of 130 million
  characters failed with a traceback (``sqlite3.DataError: string or blob too big``: the
  walk's sort key is 8 bytes a character), where it was refused as a source: a line longer
  than any path or URL (:data:`verify.archive.MAX_LINE`) is now bad input, exit 2;
- a hole from before the change, fixed: a ``file://`` folder URL that names no folder failed
  with a traceback when it held a NUL (a list file's line), and was said on two lines when it
  held a newline (argv): it is bad input on one line, as a path that names nothing is;
- a hole from before the change, fixed: a refused ``.tar`` whose name held a line break
  (``\n``, or ``\r``, which Markdown also ends a line at) and a heading or a row after it put
  them into the Markdown and text of ``rank`` and ``rejudge`` (``|`` was escaped, a line break
  was not; ``verify-archive`` folded ``\n`` only) and cut the ``refused`` line on stderr in
  two: a line break in a cell, a note or that line is a space;
- and ``rejudge``'s plain text (``refused: ...``, ``copy: ...``, ``note: ...``) printed such a
  name as it is: each of its lines is one line now too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from audit.cli import main
from tests.factories import write_small_bundle
from verify.archive import MAX_LINE

COMMANDS = [["rank"], ["rejudge", "--pins", "gx10-qualification-v5"], ["verify-archive"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_symlink_loop_in_a_folder_is_skipped_as_before(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "archive"
    write_small_bundle(folder / "run-1")
    (folder / "loop.tar").symlink_to("loop.tar")
    (folder / "loop").symlink_to("loop")
    (folder / "gone.tar").symlink_to(tmp_path / "nowhere")
    assert main([*command, str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "run-1" in out or '"bundles":1,' in out  # rejudge lists only what changed
    for name in ("loop.tar", "loop", "gone.tar"):
        assert f'{folder / name}"' not in out
    assert err == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_a_list_line_longer_than_any_source_is_bad_input(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a traceback: a line of 130 million characters made a sort key of over 10^9 bytes,
    SQLite's bound of a blob. One of ``MAX_LINE`` characters is still a source (refused: no
    such host), one more is bad input."""
    listed = tmp_path / "list.txt"
    url = "https://h.invalid/"
    listed.write_text(url + "a" * (MAX_LINE - len(url)) + "\n", "utf-8")
    assert len(listed.read_text("utf-8").strip()) == MAX_LINE
    assert main([*command, "--from", str(listed), "--json"]) in (1, 2)
    assert "Traceback" not in capsys.readouterr().err
    listed.write_text("# a note\n" + url + "a" * 130_000_000 + ".tar\n", "utf-8")
    assert os.path.getsize(listed) < 256 << 20  # under a list file's bound
    assert main([*command, "--from", str(listed)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith(f"audit {command[0]}: {listed}:2: a line of 130000022 characters")
    assert len(err) < 1000


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_url_folder_that_is_not_one_is_bad_input_on_one_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``file://`` URL ending in ``/`` that names no folder: one with a NUL in a list file's
    line failed with a traceback (``ValueError: embedded null byte``), one with a newline
    (argv) was a message on two lines, a file was named "Not a directory" as the OS put it;
    each is now said as a path that names no folder is."""
    listed = tmp_path / "list.txt"
    listed.write_text(f"file://{tmp_path}/a\0b/\n", "utf-8")
    assert main([*command, "--from", str(listed)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith(f"audit {command[0]}: {listed}:1: ")
    (tmp_path / "a-file").write_bytes(b"")
    for url in (f"file://{tmp_path}/a\nb/", f"file://{tmp_path}/a-file/"):
        assert main([*command, url]) == 2
        (err,) = capsys.readouterr().err.splitlines()
        assert err.endswith(": no such directory")


@pytest.mark.parametrize(
    "argv",
    [
        ["rank"],
        ["rank", "--markdown"],
        ["rejudge", "--pins", "gx10-qualification-v5", "--markdown"],
        ["rejudge", "--pins", "gx10-qualification-v5"],
        ["verify-archive", "--markdown"],
    ],
)
def test_a_name_with_line_breaks_adds_no_line_to_a_table(
    argv: list[str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A folder entry's name is the publisher's: a refused ``.tar`` named with a newline or a
    carriage return (Markdown's line endings) and a heading after it put that heading, and a
    row, into the ranking's Markdown and text (``|`` was escaped, a line break was not), and
    cut its ``refused`` line on stderr in two. A line break in a cell is now a space."""
    folder = tmp_path / "archive"
    write_small_bundle(folder / "run-1")
    (folder / "x\n## Forged\n| forged | row |\ny.tar").write_bytes(b"junk")
    (folder / "p\r## Forged\r| forged | row |\rq.tar").write_bytes(b"junk")
    assert main([*argv, str(folder)]) == 1
    out, err = capsysbinary.readouterr()
    lines = re.split(r"\r\n?|\n", out.decode())
    assert not [line for line in lines if line.startswith(("## Forged", "| forged"))]
    tables = argv != ["rejudge", "--pins", "gx10-qualification-v5"]  # its text: no tables
    assert lines.count("## Refused") == (1 if tables else 0)
    said = re.split(r"\r\n?|\n", err.decode().removesuffix("\n")) if err else []
    assert len(said) == (0 if argv[0] == "verify-archive" else 2)  # it says so in its report
    for line in said:
        assert line.startswith(f"audit {argv[0]}: refused {folder}/")
