"""Hostile review of ``audit rejudge`` (2026-12-07): an archive of bundles judged twice, under
the pin set each names (or ``--before``) and under ``--pins``, and the runs whose verdict
changes listed (``verify.judging.Job.judge``, ``judge_archive``, ``JudgedArchive``;
``verify.diffing.diff_runs``; ``audit/cli/archive.py``). The adversary publishes bundles into
the archive, or runs a mirror the archive lists (``tests/http_range.py`` on 127.0.0.1).

Attacked: the two verifications of one source made to read different bytes (a server that
answers the N-th read of one byte of a blob otherwise, as the ``_Lying`` server of
``test_attacks_2026_12_07_listing.py`` does for the manifest); a bundle counted once or twice
(a directory, its tar, a hard link to the tar, the tar's URL, a re-sealed copy); pin sets that
cannot apply (one no bundle names, a file taking a shipped id with other bytes, a demo-only
one, a bundle naming one not shipped); the options of the engines; the Dask engine against
this process; names a publisher chose in the Markdown, CSV, text and JSON (its schema).

What the review found:

- holes (strict xfails against cda2607; all four closed in the commit that added this file,
  each test now asserting the fixed behaviour: ``Job.judge`` refuses a source whose two
  verifications found other byte findings, as changed while the archive was verified;
  ``--workers`` takes ``audit verify``'s positive counts; the text's first line is printed as
  every other line is):
  1. ``Job.judge`` (``verify/judging.py``) holds the two verifications of a source to the same
     manifest (``_as_listed``) and the same signature file, but not to the same blob bytes. A
     tar at a URL larger than what ``verify._remote`` keeps of it (``CACHE_BYTES``, 64 MiB) is
     hashed once by each verification; a server that flips one byte of a blob in the read the
     verification *before* hashes makes that verdict an integrity failure (INFRA_ERROR), so a
     run that stops qualifying under the new pin set (QUALIFIED -> INFRA_ERROR) is reported as
     unchanged: ``0 of 1 verdicts change``, exit 0, nothing refused (a local tar replaced
     between the two verifications by a publisher who may write the archive's folder does
     the same: a tar's members are hashed by each). An honest mirror of the
     same tar walked after the lying URL is given the lying source's verdict and diff (its byte
     check matches the verification *under the new pin set*, which read honest bytes), so the
     report names the honest mirror beside the lie.
  2. The same lie makes up a change: judged again under the very pin set it names, a run is
     listed as changed (INFRA_ERROR -> QUALIFIED when the read before is flipped,
     QUALIFIED -> INFRA_ERROR when the read under ``--pins`` is), where it is not. Nothing
     compares the byte findings of the two verifications (``defect_of``), which differ.
  3. ``--workers`` (``audit/cli/archive.py``, ``_add_engine``: ``type=int``) takes 0 and
     negative counts, where ``audit verify --workers 0`` is refused: ``--workers 0`` without
     ``--engine dask`` passes ``_engine_options`` (its test is truthiness) and is ignored;
     with ``--engine dask`` 0 is taken for "the cores" (``verify._dask._client``: ``workers
     or default_workers()``), and -1 starts a LocalCluster that waits 30 s for workers, then
     ends ``audit rejudge: No valid workers found``, naming no option.
  4. The text's first line (``_rejudge_text``: ``N of M verdicts change under ID (DIGEST)``)
     is printed without ``soft_wrap``: Rich cuts it at the console's width (80 columns when
     not a terminal), the pin set's digest on a line of its own, where the docstring promises
     each line one line.
- decisions (documented, and worth a second look):
  - (changed the same day, 0076029: ``same_verdict`` compares the integrity status too, and the test
    below passes) a run whose integrity holds under the pin set it names and fails under ``--pins``
    (the recorded BFCL draw judged by gx10-qualification-v5: a ``record_disagrees`` finding, which
    reads as tampering) is "same" whenever its four decisions were already INFRA_ERROR /
    INFRA_FAILURE / NOT_ASSESSED / not rankable: ``diff_runs``'s ``same_verdict`` looks at the
    decisions alone, so no output (JSON, Markdown, text, CSV) says that its integrity changed;
  - (changed the same day: four pin set columns, and the test below passes) ``--csv`` names
    neither the pin set judged under nor the one before (``_REJUDGE_CSV``),
    where ``rank --csv`` names each row's pin set and digest: two CSVs of two rejudges cannot
    be told apart.
- held: a directory, its tar, a hard link to the tar and the tar's URL are one bundle (one row,
  every source named, a note), a re-sealed copy is another bundle flagged as a copy, a bundle
  naming a pin set not shipped is refused on one line while the others are judged, all valid
  under ``rejudge-report.schema.json``; names with ``|``, line breaks and formula starts add no
  row, heading or formula to the Markdown, text or CSV; a file taking a shipped pin set's id
  with other bytes is named by its digest in every output that names a pin set; one pin set
  given twice (by id and by its file) changes nothing; a demo-only ``--pins`` ranks nothing and
  says why; ``--pins`` that do not read (empty, a directory, a FIFO, ``/dev/zero``, not UTF-8,
  not TOML, an unknown id) end in one line, exit 2 (tried by hand, held as the pin set tests
  hold them); the Dask engine judges a mixed archive (a bundle naming an unshipped pin set and
  its tar, whose late verification the walk asks for, hard-linked copies, a directory and its
  tar, a corrupted copy) as this process does.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from audit._archive import pack
from audit.cli import main
from bundle_schema import KINDS, canonical_bytes
from bundle_schema.errors import InvalidInput
from bundle_schema.models import PinSetRef
from pins import load_builtin, parse_pin_set
from tests.audit.test_rank_archive import _reseal
from tests.factories import write_small_bundle
from tests.hostile.test_attacks_2026_12_07_listing import _handler, _Lying
from tests.http_range import listening, serve, url_of
from tests.paths import EXAMPLES, PINS, SCHEMAS
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify.judging import Here, Job, Whole, judge_archive

FULL = "gx10-full-qualified"
FULL_RUN = "gx10-v5-full-20261102T100000Z-01"
V5 = "gx10-qualification-v5"
REFERENCE = "gx10-reference-v5"
RECORDED = EXAMPLES / "recorded" / "llamacpp-smollm2-135m-bfcl-draw.tar"
DRAW_PINS = EXAMPLES / "recorded" / "gx10-qualification-v5-bfcl-draw.toml"


def _cli(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, captured.out.decode(errors="replace"), captured.err.decode(errors="replace")


def _report(out: str) -> dict[str, Any]:
    """``out`` as one canonical ``rejudge-report`` document, valid under its schema."""
    assert out.endswith("\n") and out.count("\n") == 1, out
    value: dict[str, Any] = json.loads(out)
    assert canonical_bytes(value) + b"\n" == out.encode()
    schema = json.loads((SCHEMAS / KINDS["rejudge-report"].schema_file).read_bytes())
    jsonschema.Draft202012Validator(schema).validate(value)
    return value


def _changes(report: dict[str, Any]) -> dict[str, dict[str, tuple[Any, Any]]]:
    """Each changed run's decisions, ``{run_id: {field: (before, after)}}``."""
    axes = ("outcome", "result_validity", "profile_decision", "rankable")
    return {
        row["run_id"]: {
            d["field"]: (d["a"], d["b"]) for d in row["diff"]["differences"] if d["field"] in axes
        }
        for row in report["changed"]
    }


@pytest.fixture
def small_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tar at a URL past what ``verify._remote`` keeps of it (``CACHE_BYTES``, 64 MiB; here
    64 KiB, the demo's tar being 400 KB): each verification asks the server for its blobs."""
    monkeypatch.setattr("verify._remote.CACHE_BYTES", 64 << 10)


@pytest.fixture
def full_tar(built_examples: dict[str, Path], tmp_path: Path) -> Path:
    """The demo's complete run (QUALIFIED under the gx10-reference-v5 it names; INFRA_ERROR
    under gx10-qualification-v5, whose harnesses it does not hold: ADR 0036) as a tar."""
    tar = tmp_path / "served" / "full.tar"
    tar.parent.mkdir()
    pack(built_examples[FULL], tar)
    return tar


def _blob_byte(tar: Path) -> int:
    """The offset in ``tar`` of the middle byte of its largest blob."""
    with tarfile.open(tar) as archive:
        blobs = [m for m in archive.getmembers() if m.name.startswith("blobs/")]
    largest = max(blobs, key=lambda m: m.size)
    return largest.offset_data + largest.size // 2


@contextmanager
def _lying(tar: Path, flips: set[int]) -> Iterator[tuple[str, _Lying]]:
    """``tar`` at a URL whose server flips a byte of its largest blob in the reads ``flips``
    (numbered from 1 among the requests that cover that byte)."""
    state = _Lying(tar, _blob_byte(tar), flips)
    with listening(_handler(state), "lying-blob") as root:
        yield f"{root}/{tar.name}", state


# --- holes 1 and 2: the two verifications of one source read different blob bytes ------------

# The requests that cover the byte (the middle of the transport log), in one process, with
# ``small_cache``: 1-2 the listing (its first read, the scan of its headers); 3 the verification
# before: its integrity check's read, which hashes the blob; then reads of other members
# (ranges that run to the tar's end); 13 the verification under --pins: its integrity check's
# read. A transport log reduced once is not read again in the process (``_READ_LOGS`` in
# ``verify/_shell.py``, by digest); where it was not (a fresh process), its proven read is a
# request more, after 3, so the second hash is 14: the flips below take both.
BEFORE_HASH, AFTER_HASH = {3}, {13, 14}


@pytest.mark.parametrize("mirror", [False, True], ids=["alone", "honest-mirror-after"])
@pytest.mark.usefixtures("small_cache")
def test_a_lie_to_the_verification_before_hides_no_change(
    mirror: bool, full_tar: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    (tmp_path / "mirror").mkdir()
    os.link(full_tar, tmp_path / "mirror" / "full.tar")
    with serve(tmp_path / "mirror") as honest:
        # localhost sorts after 127.0.0.1: the lying URL is walked first
        copy = url_of(honest, tmp_path / "mirror" / "full.tar").replace("127.0.0.1", "localhost")
        with _lying(full_tar, BEFORE_HASH) as (url, state):
            code, out, err = _cli(
                ["rejudge", url, *([copy] if mirror else []), "--pins", V5, "--json"], capsysbinary
            )
    assert state.count >= max(AFTER_HASH) - 1, state.count  # the reads are as numbered above
    report = _report(out)
    refused = {r["bundle"] for r in report["refused"]}
    want = {"outcome": ("QUALIFIED", "INFRA_ERROR")}
    if url in refused:  # refused as changed while verified: the honest mirror judged alone
        assert code == 1
        assert [r["bundle"] for r in report["changed"]] == ([copy] if mirror else [])
    else:  # judged: the change is there, whichever bytes were read
        assert len(report["changed"]) == 1, (report["notes"], report["changed"])
        assert _changes(report)[FULL_RUN].items() >= want.items(), (out, err)


@pytest.mark.parametrize("flips", [BEFORE_HASH, AFTER_HASH], ids=["before", "after"])
@pytest.mark.usefixtures("small_cache")
def test_a_lie_to_one_verification_makes_up_no_change(
    flips: set[int], full_tar: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = _cli(["rejudge", str(full_tar), "--pins", REFERENCE, "--json"], capsysbinary)
    assert (code, _report(out)["changed"]) == (0, [])  # honestly, nothing changes
    with _lying(full_tar, flips) as (url, state):
        code, out, err = _cli(["rejudge", url, "--pins", REFERENCE, "--json"], capsysbinary)
    assert state.count >= max(AFTER_HASH) - 1, state.count
    report = _report(out)
    if code == 1:
        assert [r["bundle"] for r in report["refused"]] == [url]
        assert "changed while the archive was verified" in err
    assert report["changed"] == [], (out, err)


# --- decisions ---------------------------------------------------------------------------------


def test_a_run_that_fails_integrity_only_under_the_new_pins_is_listed(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    argv = ["rejudge", str(RECORDED), "--before", str(DRAW_PINS), "--pins", V5, "--json"]
    code, out, err = _cli(argv, capsysbinary)
    assert code == 0, err
    report = _report(out)
    assert report["bundles"] == 1
    (row,) = report["changed"]
    assert (row["diff"]["a"]["integrity"], row["diff"]["b"]["integrity"]) == ("ok", "failed")


def test_the_csv_names_the_pin_set_it_judged_under(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    write_small_bundle(tmp_path / "b")
    code, out, _ = _cli(["rejudge", str(tmp_path / "b"), "--pins", V5, "--csv"], capsysbinary)
    assert code == 0
    assert load_builtin(V5).digest in out


# --- hole 3: --workers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [["--workers", "0"], ["--engine", "dask", "--workers", "0"],
     ["--engine", "dask", "--workers", "-1"]],
    ids=["local-0", "dask-0", "dask-minus-1"],
)  # fmt: skip
def test_workers_not_a_positive_count_are_refused_before_any_cluster(
    options: list[str],
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("distributed")

    def no_cluster(*args: object) -> None:
        raise InvalidInput("a cluster was started")

    monkeypatch.setattr("verify._dask._client", no_cluster)
    write_small_bundle(tmp_path / "b")
    code, out, err = _cli(["rejudge", str(tmp_path / "b"), "--pins", V5, *options], capsysbinary)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "--workers" in err, err


# --- hole 4: the text's first line -------------------------------------------------------------


def test_the_texts_first_line_is_one_line(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    write_small_bundle(tmp_path / "b")
    code, out, _ = _cli(["rejudge", str(tmp_path / "b"), "--pins", V5], capsysbinary)
    assert code == 0
    digest = load_builtin(V5).digest
    assert out.splitlines()[0] == f"0 of 1 verdicts change under {V5} ({digest})", out


# --- held: counting, names, pin sets, engines -------------------------------------------------

_FORMULA = tuple("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _spreadsheet_safe(value: str) -> bool:
    """No piece of a cell (split where a spreadsheet may split it) starts a formula."""
    if _NUMBER.fullmatch(value):
        return True
    return not any(piece.startswith(_FORMULA) for piece in re.split(r"[;\t]", value))


def test_one_bundle_at_four_sources_a_copy_and_a_refusal_in_every_output(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The complete run as a directory, its tar, a hard link to the tar and the tar's URL, named
    by the publisher; a re-sealed copy under another run id; a bundle naming a pin set that is
    not shipped. Relative names, so that they start the CSV's cells."""
    monkeypatch.chdir(tmp_path)
    directory = Path("x|y\n## Forged\n| forged | row |")
    shutil.copytree(built_examples[FULL], directory)
    tar = Path("=HYPERLINK(1)|;@SUM(1).tar")
    pack(directory, tar)
    Path("links").mkdir()
    link = Path("links/+cmd|' C calc'!A0.tar")
    os.link(tar, link)
    copy = Path("-rerun\r| forged |")
    shutil.copytree(built_examples[FULL], copy)
    _reseal(copy, run_id="rerun-01", created_at="2026-11-09T00:00:00Z")
    unknown = Path("unknown")
    write_small_bundle(unknown, pin_set=PinSetRef(id="gx10-other-v9", digest="sha256:" + "ab" * 32))
    with serve(tmp_path) as server:
        url = url_of(server, tmp_path / tar)
        sources = [str(directory), str(tar), str(link), url, str(copy), str(unknown)]
        outputs = {}
        for form in ("--json", "--markdown", "--csv", None):
            argv = ["rejudge", *sources, "--pins", V5, *([form] if form else [])]
            code, outputs[form], err = _cli(argv, capsysbinary)
            assert code == 1, (form, err)
            (line,) = err.splitlines()
            assert line.startswith("audit rejudge: refused unknown: unknown pin set 'gx10-other")

    report = _report(outputs["--json"])
    assert report["bundles"] == 2
    joined = ", ".join(sorted([str(directory), str(tar), str(link), url]))
    bundles = sorted(row["bundle"] for row in report["changed"])
    assert bundles == sorted([str(copy), joined])
    assert {run: c["outcome"] for run, c in _changes(report).items()} == {
        FULL_RUN: ("QUALIFIED", "INFRA_ERROR"),
        "rerun-01": ("QUALIFIED", "INFRA_ERROR"),
    }
    (flagged,) = report["copies"]
    assert (flagged["run_id"], flagged["bundle"]) == ("rerun-01", str(copy))
    assert [r["bundle"] for r in report["refused"]] == ["unknown"]
    assert any("is one bundle, counted once" in note for note in report["notes"])

    for form in ("--markdown", None):
        lines = re.split(r"\r\n?|\n", outputs[form])
        assert not [li for li in lines if li.startswith(("## Forged", "| forged"))]
    table = [li for li in outputs["--markdown"].splitlines() if li.startswith("| ")]
    assert len(table) == 2 + 2 + 1 + 2 + 1 + 2  # changed, copies, refused: head, rule, rows
    assert [li.count(" | ") for li in table if not li.startswith("| ---")] == [3, 3, 3, 2, 2, 1, 1]

    rows = list(csv.reader(io.StringIO(outputs["--csv"])))
    assert [row[0] for row in rows] == ["status", "changed", "changed", "refused"]
    assert all(len(row) == len(rows[0]) for row in rows)
    assert all(_spreadsheet_safe(value) for row in rows for value in row), rows


def test_a_file_taking_a_shipped_id_is_named_by_its_digest(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """``--pins FILE`` whose id is gx10-qualification-v5 and whose bytes are the reference's: no
    output passes it off as the shipped one."""
    impostor = tmp_path / "v5.toml"
    text = (PINS / f"{REFERENCE}.toml").read_text("utf-8")
    impostor.write_text(text.replace(f'id = "{REFERENCE}"', f'id = "{V5}"', 1), "utf-8")
    digest = parse_pin_set(impostor.read_bytes(), str(impostor)).digest
    assert digest != load_builtin(V5).digest
    write_small_bundle(tmp_path / "b")
    base = ["rejudge", str(tmp_path / "b"), "--pins", str(impostor)]
    code, out, _ = _cli([*base, "--json"], capsysbinary)
    assert code == 0 and _report(out)["pin_set"] == {"digest": digest, "id": V5}
    code, out, _ = _cli([*base, "--markdown"], capsysbinary)
    assert out.startswith(f"## Rejudged under {V5} ({digest})\n")
    code, out, _ = _cli(base, capsysbinary)
    assert digest in out.replace("\n", " ")


def test_one_pin_set_given_twice_by_id_and_by_file_changes_nothing(
    full_tar: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    argv = ["rejudge", str(full_tar), "--before", str(PINS / f"{REFERENCE}.toml"), "--pins"]
    code, out, err = _cli([*argv, REFERENCE, "--json"], capsysbinary)
    assert code == 0, err
    report = _report(out)
    assert (
        report["before"]
        == report["pin_set"]
        == {
            "digest": load_builtin(REFERENCE).digest,
            "id": REFERENCE,
        }
    )
    assert (report["bundles"], report["changed"], report["refused"]) == (1, [], [])


def test_a_demo_only_pin_set_ranks_nothing_and_says_why(
    built_examples: dict[str, Path], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The demo's complete run judged before by the real pins (INFRA_ERROR: not their
    harnesses) and now by the demo-only pins it was recorded under (QUALIFIED): a change, never
    rankable, the reason said."""
    full = Path(shutil.copytree(built_examples[FULL], tmp_path / "full"))
    argv = ["rejudge", str(full), "--before", V5, "--pins", REFERENCE, "--json"]
    code, out, err = _cli(argv, capsysbinary)
    assert code == 0, err
    report = _report(out)
    changes = _changes(report)[FULL_RUN]
    assert changes["outcome"] == ("INFRA_ERROR", "QUALIFIED") and "rankable" not in changes
    (row,) = report["changed"]
    assert any("demo-only pin set" in reason for reason in row["reasons"]), row["reasons"]


def _corrupt_copy(tar: Path, to: Path) -> Path:
    data = bytearray(tar.read_bytes())
    data[_blob_byte(tar)] ^= 0x01
    to.write_bytes(bytes(data))
    return to


def test_dask_rejudges_a_mixed_archive_as_this_process_does(
    built_examples: dict[str, Path],
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify._dask import _OnDask  # noqa: PLC0415 - imports Dask

    unknown = tmp_path / "unknown"
    write_small_bundle(unknown, pin_set=PinSetRef(id="gx10-other-v9", digest="sha256:" + "ab" * 32))
    pack(unknown, tmp_path / "unknown.tar")  # its first source refused: a step not foreseen
    small = tmp_path / "small"
    write_small_bundle(small)
    linked = tmp_path / "small-linked"
    for file in sorted(small.rglob("*")):
        target = linked / file.relative_to(small)
        if file.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(file, target)
    full = Path(shutil.copytree(built_examples[FULL], tmp_path / "full"))
    pack(full, tmp_path / "full.tar")
    corrupt = _corrupt_copy(tmp_path / "full.tar", tmp_path / "a-corrupt.tar")
    sources: list[Any] = [
        unknown, tmp_path / "unknown.tar", small, linked, full, tmp_path / "full.tar", corrupt,
    ]  # fmt: skip
    job = Job(load_builtin(V5), rejudge=True)
    with judge_archive(sources, Here(sources, job)) as archive:
        here: Whole = archive.whole()
    with _OnDask(dask_client, sources, job) as steps, judge_archive(sources, steps) as archive:
        there: Whole = archive.whole()
    assert there == here
    assert [source for source, _ in here.refused] == [str(unknown), f"{unknown}.tar"]
    assert len(here.bundles) == 2
    assert any("verified differently" in note for note in here.notes), here.notes
