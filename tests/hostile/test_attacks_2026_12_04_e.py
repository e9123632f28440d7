"""Hostile tests of 2026-12-04 (e): today's fixes (93de928..8396f44) attacked again by an
adversarial publisher and a careless operator: the copies rule of the archive commands
(``Facts.passed``), ``audit._store.output_target``, ``verify.render.csv_cell``, the readers'
new bounds (benchlocal-cli's pack count, Spark's domain quality, ``_CSV_NUMBER``, ``_number``),
URL masking (``masked_text``, ``EvidenceAuditError.message``) and ``file://`` folders.

Holes (each test asserts the safe behaviour and failed on the code as found). Fixed the same
day: 1 and 2 (copies placed by standing: rankable and passing, then passing; then the instant
``created_at`` names), 3 (a ``file://`` bundle compared as its path), 4 and 5 (``csv_cell``
quotes each piece after ``;`` or a tab, a CR becomes a quoted LF), 7 (the bound's slack takes
float error), 8 (the host only, never the user information, in the message), 9 (an
unreachable or unparsable ``--scheduler`` is one masked line) and 10 (a URL in a message ends
at ASCII whitespace only). 6 at the bundle: the verifier recomputes the weighted mean from
the recorded checkout's ``eval_suite.py`` (``_consistency._spark_weights``); the reader's own
test stays a strict xfail (the weights are not in the CSV).

1. ``rank``: a copy that *passes* its checks but is not rankable still displaces the ranked run
   it copies. The manifest's ``model.runtime_model_id`` is outside ``contents_key``; a forger
   renames it, dates the copy a second earlier and writes claims equal to its (INFRA_ERROR)
   replay: ``audit verify`` exits 0, the copy is "the earliest that passes its checks", and
   the real QUALIFIED run is listed apart as "a copy of" it; the ranking is empty
   (``verify/judging.py`` ``JudgedArchive._count``: ``passed`` is no measure of
   which copy may stand for the evidence).
2. ``rank``: "earliest" is the order of the ``created_at`` *strings*; a timestamp with a
   fraction sorts before the same second without one (``'.' < 'Z'``), so a copy made half a
   second *after* the run (``...11:45:00.5Z`` vs ``...11:45:00Z``), same claims, is placed and
   the real run is listed apart as its copy (``verify/judging.py`` ``JudgedArchive._count``,
   ``named(row[4])``).
3. ``output_target`` skips every check when the bundle is given as a URL, ``file://``
   included: ``audit verify file:///abs/run.tar --vsa /abs/run.tar`` replaces the tar with the
   summary (exit 0), ``show file:///abs/run --html /abs/run/report.html`` (also
   ``file://localhost``) and ``pack file:///abs/run -o /abs/run/x.tar`` write into the bundle
   (``audit/_store.py`` ``output_target``: ``not is_url(bundle)``).
4. CSV: ``csv_cell`` looks only at a cell's first character. A spreadsheet that splits a
   ``.csv`` on ``;`` (Excel in most European locales) reads the model name
   ``x;=cmd|' /C calc'!A0`` (no comma or quote, so the writer leaves it unquoted) as a cell
   ``x`` and a DDE formula cell (``verify/render.py`` ``csv_cell``).
5. CSV: ``write_csv`` sets ``lineterminator="\\n"``, so Python's csv module no longer quotes a
   field holding a bare CR: the model name ``x<CR>=cmd|...`` (or ``<CR>=1+1``, after
   ``csv_cell``'s quote: ``'<CR>=1+1``) ends the row at the CR in a spreadsheet and in
   ``csv.reader``, and the next row starts with the formula (``verify/render.py``
   ``write_csv``; every CSV of rank, rejudge and verify-archive).
6. Spark Bench: ``_within_scenarios`` bounds the code domain's quality by the scenarios' least
   and greatest score only. A run where one code scenario of ten scored 1.0 (CODE-10: Spark
   writes 12.6; no weights in its 0.8 to 4.0 range give more than 35.8) is replayed as coding
   100 when the forger edits only the ``domain_quality`` row (``verify/harness_outputs.py``
   ``_within_scenarios``).
7. Spark Bench (false positive): the rounding slack is exactly 0.1 with no room for float
   error. Ten code scenarios each scoring 0.1375 over 5 repeats (Spark writes ``0.138`` each
   and a quality of ``13.7``: its weighted mean with the code difficulties is
   13.749999999999998) are refused as "outside what its scenarios' scores give":
   ``100 * 0.138 - 0.1`` is 13.700000000000001 (``_within_scenarios``,
   ``SPARK_BENCH_ROUNDING``).
8. A ``file://`` URL of another host prints its user information in clear: the URL is
   masked, but the message repeats ``parts.netloc!r``, ``('user:hunter2@evil.example')``
   (``verify/_source.py`` ``file_url_path``), on verify's and rank's stderr
   and in rank's JSON report (refused).
9. ``--engine dask --scheduler tcp://user:hunter2@127.0.0.1:9`` (or ``tcp://[::1``): a
   traceback (``ValueError: invalid address``) from distributed with the password in clear,
   exit 1 (``verify/_dask.py`` ``_client``: ``dask.Client(scheduler)`` unguarded).
10. ``masked_text`` ends a URL at any Unicode whitespace (``\\s``) that ``urlsplit`` keeps in a
    password (``\\x1c``-``\\x1f``, NBSP, U+3000): ``https://user:hun<US>ter2@h`` is left
    unmasked and ``one_line`` prints ``user:hun ter2@h`` (``verify/_remote.py``
    ``_URL_IN_TEXT``); reached where a raw URL is in a message (a library's text).

Held (cheap tests below): a copy minted to fail its checks, dated earlier, does not displace;
symlinks, a parent symlink into the bundle, ``..`` and a trailing slash as outputs of a local
bundle are refused; formula starts ``= + - @``, tab and the full-width forms get a quote
in rank's CSV; a huge integer is not a number, not a traceback; benchlocal-cli's real output
reads (its pack count is its scenario runs', as benchlocal-cli 47d1d66 counts them); the
recorded real bundle verifies with claims matching; ``rank --from`` of an empty list and of
``/dev/null`` is exit 2; ``file://localhost/abs/`` and a percent-encoded folder are read; a
password split by a tab, CR or LF is masked on the error line (by hand: a quote or ``<`` in a
password is masked too).
Noted, not tested: benchlocal-cli's per-scenario ``failure_mode`` is trusted (a failing
scenario relabelled ``verifier_not_implemented`` leaves the count, as flipping ``passed``
would: raw-output fabrication); ``shown_url`` lower-cases the scheme and drops an empty ``?``
or ``#``; ``file:///abs/folder`` without its slash is refused with advice to run the same
command again.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from audit.cli import main
from bundle_schema.errors import one_line
from bundle_schema.models import ModelIdentity
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.kit import audit_process, manifest_changed
from tests.factories import DIGEST, write_small_bundle
from tests.paths import DATA, EXAMPLES
from verify import verify_bundle
from verify._remote import masked_text
from verify.harness_outputs import OutputsUnreadable, read_outputs

FULL = "gx10-full-qualified"
FULL_RUN = "gx10-v5-full-20261102T100000Z-01"
ROOT = Path(__file__).resolve().parents[2]
RECORDED = EXAMPLES / "recorded" / "llamacpp-smollm2-135m.tar"
SPARK_CSV = DATA / "upstream_outputs" / "spark-bench" / "spark_bench.csv"
BENCHLOCAL = DATA / "upstream_outputs" / "benchlocal-cli" / "benchlocal.json"


_audit = audit_process


_reseal = manifest_changed


def _ranked(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["rank", *map(str, paths), "--pins", str(DEPLOYMENT_PINS), "--json"]) == 0
    ranking: dict[str, Any] = json.loads(capsys.readouterr().out)
    return ranking


# --- 1, 2. copies ---------------------------------------------------------------------------------


def test_a_copy_that_passes_its_checks_but_is_not_rankable_does_not_hide_the_ranked_run(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 1: the copy renames the model (outside contents_key), its claims repeat its own
    replay (INFRA_ERROR, not rankable): verify exited 0, and it displaced the QUALIFIED run.
    Since 2026-12-05 a probe's request is held to the runtime model id, so the renamed copy
    fails its checks too (exit 1); either way it must not displace the ranked run."""
    victim = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "victim"))
    forged = _reseal(
        Path(shutil.copytree(victim, tmp_path / "forged")),
        run_id="forged-01",
        created_at="2026-11-02T11:44:59Z",
        model={"runtime_model_id": "another-name"},
        claims={"outcome": "INFRA_ERROR", "result_validity": "INFRA_FAILURE",
                "profile_decision": "NOT_ASSESSED", "rankable": False},
    )  # fmt: skip
    assert main(["verify", str(forged), "--pins", str(DEPLOYMENT_PINS)]) == 1
    assert "asked otherwise than the contract's request (model differ)" in capsys.readouterr().err
    ranking = _ranked(capsys, victim, forged)
    assert [r["run_id"] for r in ranking["ranked"]] == [FULL_RUN], [
        (r["run_id"], r["reasons"][:1]) for r in ranking["apart"]
    ]


def test_a_copy_made_after_the_run_is_not_the_earliest_by_a_fraction_of_a_second(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 2: '2026-11-02T11:45:00.5Z' is half a second after '2026-11-02T11:45:00Z' but
    sorts before it as text; the later copy (the same claims, it passes) is placed."""
    victim = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "victim"))
    forged = _reseal(
        Path(shutil.copytree(victim, tmp_path / "forged")),
        run_id="forged-later-01",
        created_at="2026-11-02T11:45:00.5Z",
    )
    ranking = _ranked(capsys, victim, forged)
    assert [r["run_id"] for r in ranking["ranked"]] == [FULL_RUN], ranking["ranked"]


def test_held_a_copy_minted_to_fail_its_checks_does_not_displace(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = Path(shutil.copytree(ranked_examples[FULL], tmp_path / "victim"))
    forged = _reseal(
        Path(shutil.copytree(victim, tmp_path / "forged")),
        run_id="forged-02",
        created_at="2026-11-02T11:44:59Z",
        model={"runtime_model_id": "another-name"},  # claims left QUALIFIED: a failed check
    )
    ranking = _ranked(capsys, victim, forged)
    assert [r["run_id"] for r in ranking["ranked"]] == [FULL_RUN]


# --- 3. outputs of a bundle given as a file:// URL ----------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    write_small_bundle(root)
    return root


@pytest.fixture
def small_tar(small: Path, tmp_path: Path) -> Path:
    tar = tmp_path / "run.tar"
    assert main(["pack", str(small), "-o", str(tar)]) == 0
    return tar


def test_verify_of_a_file_url_does_not_write_its_summary_over_the_tar(
    small_tar: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = small_tar.read_bytes()
    code = main(["verify", f"file://{small_tar}", "--vsa", str(small_tar)])
    capsys.readouterr()
    assert small_tar.read_bytes() == before, "the bundle's tar was replaced by its summary"
    assert code == 2


@pytest.mark.parametrize("form", ["file://{}", "file://localhost{}"])
def test_show_of_a_file_url_writes_no_report_into_the_bundle(
    form: str, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["show", form.format(small), "--html", str(small / "report.html")])
    capsys.readouterr()
    assert not (small / "report.html").exists(), "a file outside the layout, in the bundle"


def test_pack_of_a_file_url_writes_no_tar_into_the_bundle(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["pack", f"file://{small}", "-o", str(small / "run.tar")])
    capsys.readouterr()
    assert not (small / "run.tar").exists()


def test_held_local_outputs_into_the_bundle_are_refused(
    small: Path, small_tar: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "into").symlink_to(small)
    (tmp_path / "tarlink").symlink_to(small_tar)
    before = small_tar.read_bytes()
    outputs = [
        (small, tmp_path / "into" / "report.html"),  # a parent that is a link into it
        (small, small / "blobs" / ".." / "x.html"),
        (small, Path(f"{small}/sub/../y.html")),
        (small_tar, tmp_path / "tarlink"),  # a link to the tar
        (small_tar, Path(f"{small_tar}/")),  # a trailing slash
    ]
    for bundle, out in outputs:
        assert main(["verify", str(bundle), "--vsa", str(out)]) == 2, out
    capsys.readouterr()
    assert small_tar.read_bytes() == before
    assert sorted(p.name for p in small.iterdir()) == ["blobs", "manifest.json"]


# --- 4, 5. CSV ------------------------------------------------------------------------------------


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _rank_csv(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    model = ModelIdentity(runtime_model_id=name, digest=DIGEST, digest_source="declared")
    folder = tmp_path / "archive"
    shutil.rmtree(folder, ignore_errors=True)
    write_small_bundle(folder / "run-1", model=model)
    capsys.readouterr()
    assert main(["rank", str(folder), "--csv"]) == 0
    return capsys.readouterr().out


def test_a_model_name_is_no_formula_in_a_spreadsheet_that_splits_on_semicolons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 4: Excel in a ';' locale opens a .csv split on ';'. The name holds no ',' or '"',
    so the writer leaves it unquoted, and the field after the ';' is a DDE formula."""
    text = _rank_csv("x;=cmd|' /C calc'!A0", tmp_path, capsys)
    for row in csv.reader(io.StringIO(text, newline=""), delimiter=";"):
        for field in row:
            assert not field.startswith(FORMULA_START), (field, text)


@pytest.mark.parametrize("name", ["x\r=cmd|' /C calc'!A0", "\r=1+1"], ids=["inside", "first"])
def test_a_carriage_return_in_a_cell_starts_no_row_with_a_formula(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole 5: the writer's line end is ``\\n`` only, so Python's csv module no longer quotes
    a field holding a bare CR; a spreadsheet (and ``csv.reader``) ends the row at the CR, and
    the next row's first cell is the formula (even after csv_cell's leading quote)."""
    text = _rank_csv(name, tmp_path, capsys)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 2, rows  # the header and the one bundle
    for row in rows:
        for field in row:
            assert not field.startswith(FORMULA_START), (field, rows)


@pytest.mark.parametrize(
    "name", ["=1+1", "+1+1", "-1+1", "@SUM(A1)", "\t=1", "\uff1d1+1", "=cmd|' /C calc'!A0"]
)
def test_held_a_formula_start_gets_a_quote_in_the_ranking_csv(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _rank_csv(name, tmp_path, capsys)
    (row,) = list(csv.DictReader(io.StringIO(text, newline="")))
    # a tab also splits the cell for a TSV reader: the piece after it is quoted too
    assert row["model"] == ("'\t'=1" if name == "\t=1" else "'" + name)


# --- 6, 7. Spark Bench's domain quality -----------------------------------------------------------


CODE_SCENARIOS = [f"CODE-{n:02d}" for n in range(1, 11)]


def _spark(scores: dict[str, str], quality: str) -> bytes:
    """The real Spark Bench CSV with the code scenarios' score rows and the code domain's
    quality row set as given."""
    lines = SPARK_CSV.read_text("utf-8").splitlines(keepends=True)
    out = []
    for given in lines:
        line = given
        fields = next(csv.reader([line]))
        if len(fields) > 13 and fields[2] == "eval":
            if fields[11] in scores and fields[12] == "score":
                fields[13] = scores[fields[11]]
            elif fields[11] == "code" and fields[12] == "domain_quality":
                fields[13] = quality
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator=line[len(line.rstrip("\r\n")) :]).writerow(fields)
            line = buffer.getvalue()
        out.append(line)
    return "".join(out).encode()


def _coding(data: bytes) -> float:
    parsed = read_outputs("spark-bench", {"spark_bench.csv": data}, ["coding", "reliability"])
    quality: float = parsed.records["components/coding/spark-quality.json"][1].code_domain_quality  # type: ignore[union-attr]
    return quality


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the reader alone cannot: the difficulty weights are not in the CSV; the verifier "
        "recomputes the weighted mean from the recorded checkout's eval_suite.py "
        "(_consistency._spark_weights, tests/hostile/test_attacks_2026_12_04_c.py)"
    ),
)
def test_a_spark_quality_no_weighting_of_its_scenarios_gives_is_refused() -> None:
    """Hole 6: one code scenario of ten scored 1.0 (CODE-10, Spark's heaviest, difficulty
    2.8: Spark writes 12.6); the forger edits only the domain_quality row, to 100.0."""
    scores = dict.fromkeys(CODE_SCENARIOS, "0.0") | {"CODE-10": "1.0"}
    assert _coding(_spark(scores, "12.6")) == 12.6  # the honest file reads
    try:
        coding = _coding(_spark(scores, "100.0"))
    except OutputsUnreadable:
        return
    assert coding != 100.0, "coding replayed as 100 over nine scenarios of 0 and one of 1"


def test_a_spark_quality_rounded_as_spark_rounds_it_is_not_refused() -> None:
    """Hole 7: each code scenario's mean over 5 repeats is 0.1375 (Spark writes 0.138); the
    weighted mean with Spark's code difficulties is 13.749999999999998, written 13.7."""
    difficulties = [1.6, 1.8, 1.7, 2.0, 2.1, 2.6, 2.4, 2.5, 2.7, 2.8]  # eval_suite.py, 196e60d
    score = (3 / 16 + 2 / 16 + 2 / 16 + 2 / 16 + 2 / 16) / 5
    qsum = wsum = 0.0
    for d in difficulties:
        wsum += d
        qsum += score * d
    written = str(round(100 * qsum / wsum, 1))
    assert (str(round(score, 3)), written) == ("0.138", "13.7")  # as Spark writes them
    data = _spark(dict.fromkeys(CODE_SCENARIOS, "0.138"), written)
    try:
        assert _coding(data) == 13.7
    except OutputsUnreadable as exc:
        pytest.fail(f"Spark's own rounding refused: {exc}")


def test_held_a_huge_integer_is_not_a_number_not_a_traceback() -> None:
    run = json.loads(BENCHLOCAL.read_bytes())
    run["packs"][0]["score"] = 10**400
    with pytest.raises(OutputsUnreadable, match="not a number"):
        read_outputs("benchlocal-cli", {"benchlocal.json": json.dumps(run).encode()},
                     ["tool_instruction"])  # fmt: skip


def test_held_the_real_benchlocal_output_reads_by_its_scenario_counts() -> None:
    parsed = read_outputs(
        "benchlocal-cli", {"benchlocal.json": BENCHLOCAL.read_bytes()}, ["tool_instruction"]
    )
    assert parsed.records


def test_held_the_recorded_real_bundle_verifies_as_before() -> None:
    verdict = verify_bundle(RECORDED).verdict
    assert verdict.integrity.status == "ok", verdict.integrity.findings[:2]
    assert verdict.claims.match, verdict.claims.differences


# --- 8, 9, 10. credentials ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "file://user:hunter2@evil.example/x.tar"],
        ["rank", "file://user:hunter2@evil.example/runs/"],
        ["rank", "file://user:hunter2@evil.example/x.tar", "--json"],
    ],
)
def test_a_file_url_of_another_host_shows_no_password(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert "hunter2" not in out + err, err or out


@pytest.mark.parametrize(
    "scheduler", ["tcp://user:hunter2@127.0.0.1:9", "tcp://[::1"], ids=["userinfo", "bracket"]
)
def test_a_scheduler_address_that_does_not_parse_is_one_line_without_its_password(
    scheduler: str, small: Path
) -> None:
    done = _audit(["rank", str(small), "--engine", "dask", "--scheduler", scheduler])
    assert "Traceback" not in done.stderr, done.stderr[-300:]
    assert "hunter2" not in done.stderr
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("space", ["\x1f", "\xa0", "\u3000", "\x1c"])
def test_a_password_with_whitespace_urlsplit_keeps_is_masked(space: str) -> None:
    password = f"hun{space}ter2"
    url = f"https://user:{password}@127.0.0.1/x.tar"
    assert urlsplit(url).password == password  # what URL parsers read as the password
    shown = one_line(masked_text(f"cannot open {url} (refused)"))
    assert "hun" not in shown and "ter2" not in shown, shown


def test_held_a_password_split_by_a_tab_or_line_break_is_masked_on_the_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for space in ("\t", "\r", "\n"):
        main(["verify", f"file://user:hun{space}ter2@evil.example/x.tar"])
        err = capsys.readouterr().err
        assert "ter2" not in err.split("(", 1)[0], err  # hole 8 is the part in parentheses


# --- rank --from, file:// folders -------------------------------------------------------------


def test_held_an_empty_list_is_refused_and_file_url_folders_are_read(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n   \n", "utf-8")
    assert main(["rank", "--from", str(empty)]) == 2
    assert main(["rank", "--from", os.devnull]) == 2
    folder = tmp_path / "my archive"
    shutil.copytree(small, folder / "run-1")
    for url in (f"file://localhost{tmp_path}/my%20archive/", f"FILE://{tmp_path}/my%20archive/"):
        assert main(["verify-archive", url, "--json"]) == 0, url
    capsys.readouterr()
