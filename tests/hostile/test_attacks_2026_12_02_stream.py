"""Hostile tests of the change of 2026-12-02 that made ``audit rank`` and ``audit rejudge``
stream (``verify.judging.JudgedArchive``, ``verify.ranking.SpooledRanking``, the writers of
``audit/cli/archive.py``): an archive's publisher controls every byte of every bundle and every
name in it (a folder's entries, a list file's lines, the URLs it gives).

What the review found, comparing every output (``--json``, ``--markdown``, ``--csv``, text;
rank and rejudge; the default engine and Dask) byte for byte with the code before the change:

- held: names with astral characters, ``|``, tabs, newlines, carriage returns, escape codes and
  ``, ``; 150 hard links and copies of one bundle (the row's 4096-character source clip); one
  path given twice, and relative; a directory and its tar; copies with equal ``created_at``;
  corrupted copies sorted first; refused sources, an archive of only refused sources, an empty
  folder; the sources given in reverse; no file left in ``TMPDIR`` after a run, a Ctrl-C or a
  ``SIGKILL`` (the spool is an unlinked temporary file, SQLite's temporary database is unlinked
  when opened);
- holes, fixed: ``rejudge`` joined every source of a bundle into the ``bundle`` of a changed run
  or a copy, and named a refused source as given, unbounded, where its report's schema bounds
  them (1 MiB, 4096 characters): a bundle hard linked under a few hundred long names, or a list
  file with a URL of 5,000 characters, crashed ``rejudge`` (``--json``, ``--markdown`` and text)
  with a traceback, now after writing part of the document; they are clipped at the bound, as
  ``rank`` clips a row's sources; a source's path that holds ``[/`` ... ``]`` (a folder ``x[``
  holding a bundle ``]y``) crashed ``rejudge``'s text with a traceback (Rich read it as a closing
  tag), and one that holds an emoji code (``:smile:``) was shown as an emoji in the text of
  ``rank`` and ``rejudge``: both print every name as it is now;
- holes left open (before the change too, and in ``verify-archive``): a source's path that is
  not UTF-8 (a folder entry named by bytes such as ``\xff``) failed every archive command
  with a traceback (pydantic refuses the surrogates Python decodes them to; so does the UTF-8
  CSV writer): closed since, such a byte is shown written out (``verify.archive.shown``;
  tests/verify/test_source_list.py); and a Dask ``LocalCluster`` left its
  ``dask-scratch-space`` folder in ``TMPDIR``: closed since, it keeps its scratch space in a
  temporary folder of its own (tests/verify/test_verify_archive.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from audit import pack
from audit.cli import main
from bundle_schema.models import RejudgeReport
from tests.conftest import DEPLOYMENT_PINS

FULL = "gx10-full-qualified"
SOURCES_MAX = 1 << 20
"""The bound of a report's joined sources (``bundle_schema.models.reports.Sources``)."""


@pytest.fixture
def stricter(tmp_path: Path) -> Path:
    """The deployment's pin set with a higher aggregate threshold: the full run's verdict
    changes under it."""
    path = tmp_path / "stricter.toml"
    text = DEPLOYMENT_PINS.read_text("utf-8")
    path.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    return path


def _long_named_links(ranked_examples: dict[str, Path], root: Path, count: int) -> Path:
    """A list file naming one bundle's tar and ``count`` hard links to it, each at a path of
    more than 3,000 characters: their names joined are more than 1 MiB."""
    tar = root / "full.tar"
    pack(shutil.copytree(ranked_examples[FULL], root / "full"), tar)
    deep = root
    for level in range(13):
        deep /= f"{level:02d}" + "d" * 240
    deep.mkdir(parents=True)
    lines = [str(tar)]
    for index in range(count):
        link = deep / (f"l{index:03d}-" + "x" * 150 + ".tar")
        os.link(tar, link)
        lines.append(str(link))
    assert sum(len(line) + 2 for line in lines) > SOURCES_MAX
    listed = root / "list.txt"
    listed.write_text("\n".join(lines) + "\n", "utf-8")
    return listed


@pytest.mark.parametrize("output", ["--json", "--markdown", None])
def test_rejudge_clips_the_sources_of_a_bundle_named_by_more_than_a_mebibyte(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    stricter: Path,
    capsys: pytest.CaptureFixture[str],
    output: str | None,
) -> None:
    listed = _long_named_links(ranked_examples, tmp_path / "archive", 330)
    argv = ["rejudge", "--from", str(listed), "--pins", str(stricter)]
    argv += ["--before", str(DEPLOYMENT_PINS), *([output] if output else [])]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    if output == "--json":
        report = RejudgeReport.model_validate_json(captured.out)
        assert report.bundles == 1
        (changed,) = report.changed
        assert changed.bundle.startswith(f"{tmp_path / 'archive' / '00'}")  # sorted
        assert changed.bundle.endswith(", ... (331 sources)")
        assert len(changed.bundle) == SOURCES_MAX
        (note,) = report.notes
        assert len(note) <= SOURCES_MAX
        assert note.startswith("sha256:")
    else:
        assert ", ... (331 sources)" in captured.out


def test_rejudge_clips_a_refused_source_named_by_more_than_its_bound(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    stricter: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "http://127.0.0.1:9/" + "a" * 5000 + ".tar"  # the discard port: nothing listens
    listed = tmp_path / "list.txt"
    listed.write_text(f"{url}\n{ranked_examples[FULL]}\n", "utf-8")
    argv = ["rejudge", "--from", str(listed), "--pins", str(stricter)]
    assert main([*argv, "--before", str(DEPLOYMENT_PINS), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    RejudgeReport.model_validate(report)
    (refused,) = report["refused"]
    assert len(refused["bundle"]) == 4096
    assert refused["bundle"].startswith("http://127.0.0.1:9/aaa")
    assert refused["bundle"].endswith("...")
    assert report["bundles"] == 1
    (line,) = captured.err.splitlines()  # stderr names it whole
    assert line.startswith(f"audit rejudge: refused {url}: ")


def test_the_text_of_rank_and_rejudge_shows_each_name_as_it_is(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    stricter: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A folder ``x[`` holding a bundle ``:smile:]`` and its tar: their paths hold ``[/:smile:]``,
    which Rich reads as a closing tag (``rejudge``'s text failed with a traceback, MarkupError),
    and ``:smile:``, an emoji code (``rank``'s text showed it as an emoji)."""
    folder = tmp_path / "x["
    folder.mkdir()
    bundle = Path(shutil.copytree(ranked_examples[FULL], folder / ":smile:]"))
    pack(bundle, folder / ":smile:].tar")
    both = f"{bundle}, {bundle}.tar"
    assert main(["rank", str(folder), "--pins", str(DEPLOYMENT_PINS)]) == 0
    out = capsys.readouterr().out
    assert f"is one bundle, counted once: {both}\n" in out
    argv = ["rejudge", str(folder), "--pins", str(stricter), "--before", str(DEPLOYMENT_PINS)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"({both}): outcome " in out
    assert "note: sha256:" in out and f"counted once: {both}\n" in out
