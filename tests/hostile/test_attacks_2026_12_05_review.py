"""Hostile tests of 2026-12-05 (review): an adversarial publisher (every byte of a bundle, its
tar's name included) and a careless operator against the commands a forensic reviewer and a
release manager type by hand: ``audit show`` (text, ``--json``, ``--exchange N``, ``--html``;
``verify/forensics.py``, ``verify/exchange.py``, ``verify/report_html.py``, ``verify/render.py``),
``audit diff`` (``verify/diffing.py``, ``audit/cli/bundle.py``), ``audit pack`` / ``audit
unpack`` (``audit/_archive.py``, ``audit/cli/files.py``) and the CLI's one error line
(``audit/cli/__init__.py``).

Every bundle attack starts from the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar, an INFRA_ERROR run: the forensic case), edits its
evidence and reseals it with claims that repeat its own replay, so integrity holds and the claims
match (``tests.gate_kit.resealed_as_replayed``): only the review commands are under test.

Holes (each test asserts the safe behaviour and failed on the code as found; fixed the same
day: 1 and 2 by bounding record times (``MAX_SECONDS``, ADR 0012), 3 and 4 by
``plain_text``, 5 in ``audit._archive.unpack``, 6 by ``one_line`` writing control characters
out (ADR 0021), 7 by ``audit diff`` exiting 1 when either side fails its check, 8 by listing
``model.digest_source`` (the same digest stays the same deployment: docs/review.md), 9 by
stdout and stderr writing what their encoding cannot hold as backslash escapes):

1. ``audit show B --exchange N --json`` ends in a traceback (ValueError: inf is not
   representable in JCS) for an exchange whose ``started`` and a chunk's ``t`` are each a
   finite 1.7e308 (``Seconds`` has no upper bound): ``verify/exchange.py`` ``_timings`` computes
   ``at = started + t``, which overflows to inf, and ``print_json`` refuses it.
2. ``audit show B --json`` ends in the same traceback on a bundle that verifies (integrity ok,
   claims match) when a component the sandbox stopped at a limit (``FAILED``, "wall limit
   exceeded") has an exchange like that, never ended: ``verify/forensics.py`` ``_last_bytes``
   -> ``_end`` -> ``_open_for`` sums to inf, which ``TimedOut.model_s`` (``Seconds``) accepts.
3. ``audit diff A B`` reads the operator's paths as rich markup in its table title
   (``audit/cli/bundle.py`` ``_diff``: ``Table(title=f"{compared}: ...")``): a bundle
   directory or tar named ``q[/x]`` ends in a traceback (``MarkupError``), one named
   ``[nosuchstyle]m`` is shown as ``m``, and an ESC in a tar's name (the publisher names the
   file) reaches the terminal.
4. ``audit unpack T -o 'q[/y]'`` unpacks, then ends in a traceback (``MarkupError``) on its
   success line (``audit/cli/files.py`` ``_unpack``: ``out.print(f"... into {args.output}")``).
5. ``audit unpack T -o ""`` (an unset variable) unpacks into the current directory and exits 0
   (``audit/_archive.py`` ``unpack``: ``Path("")`` is ``.``); every file output refuses an
   empty path (``audit._store.output_target``, ADR 0019's amendment), unpack's does not.
6. The error line of a command that stops (``audit/cli/__init__.py`` ``_say`` ->
   ``bundle_schema.errors.one_line``) writes a file name's ESC and BEL raw: a tar the publisher
   named ``evil\\x1b]0;PWNED\\x07\\x1b[2J.tar`` retitles and clears the reviewer's terminal on
   ``audit show``/``verify``/``unpack``/``diff``, where the report itself writes ``\\x1b``
   (``verify.render._t``) and the archive commands' lines were fixed for the same thing.
7. ``audit diff A B`` exits 0 ("the same deployment, the same verdict") when B fails a check
   ``audit verify`` exits 1 on: B is A with one log blob's byte changed (integrity failed: the
   difference is listed, the exit is 0), or B is A resealed with claims that differ from the
   replay (nothing in the diff says so: ``DiffSide`` has no claims; ``verify/diffing.py``).
   Both are INFRA_ERROR runs, the forensic case, whose verdict axes do not move.
8. ``audit diff A B`` lists no difference and exits 0 when B's model digest is only
   ``declared`` where A's was hashed from the ``weights`` (``model.digest_source``, which no
   gate reads): "is this exact deployment the one that qualified?" is answered yes on the
   publisher's word (``verify/diffing.py`` ``_deployment``).
9. ``audit show B --exchange N`` on a stdout that cannot encode a character of a recorded body
   (a Latin-1 terminal, ``PYTHONIOENCODING=latin-1``) ends in a traceback (UnicodeEncodeError
   from ``console.file.write`` in ``verify/exchange.py`` ``render_exchange``); stderr was made
   safe for this (ADR 0021), stdout was not.

Held: ``show --json``, ``show --exchange N --json``, ``show --html`` and ``diff --json`` give
the same bytes for the tar and its unpacked directory; the HTML report escapes publisher text
in every field tried (``</script>``, attribute breaks, ``<img onerror>``, ``javascript:``
redirects: one script, no element or link of the publisher's); the text views (``show``,
``show --exchange``) write ESC, BEL, CR, DEL and C1 from headers, bodies, chunks, errors and
model names as ``\\xNN``; odd ``--exchange`` values (negative, non-numeric, superscript digits,
5,000 digits, past any id) are exit 2 with one line; ``pack`` refuses a blob that is a FIFO
(without hanging) or a symlink and writes no tar; ``unpack`` refuses an output that is a symlink
to an empty directory or a file and writes nothing through it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Manifest
from tests.data.hostile.kit import (
    Files,
    audit_process,
    lines,
    put_json,
    put_lines,
    read_bundle,
    reseal,
)
from tests.factories import write_small_bundle
from tests.gate_kit import resealed_as_replayed
from tests.hostile.test_attacks_2026_12_06_flip import _spark_rows
from tests.paths import EXAMPLES

TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m.tar"
LOG = "transport/exchanges.jsonl"
CODING = "components/coding/result.json"
STREAMED = 234
"""A streamed chat completion of Spark Bench (coding) in the recorded run: its request under
concurrency, after the code scenarios and the single-stream request. The verifier holds
Spark's figures to each of them (ADR 0050; an edit of one of those is a finding of its own):
where an edit makes 234 another request, the concurrency figures go from the CSV with it."""
HUGE = 1.7e308
"""A finite number of seconds (the schema bounds none) whose double overflows to inf."""
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31m\r\x7f\x9b"
"""Retitle the terminal, clear it, recolour, return the carriage; DEL and a C1 CSI."""
XSS = "</script><script>alert(1)</script>\"'><img src=x onerror=alert(1)>"

Recorded = tuple[Path, Manifest, Files]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("recorded") / "bundle"
    assert main(["unpack", str(TAR), "-o", str(root)]) == 0
    manifest, files = read_bundle(root)
    return root, manifest, files


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = tmp_path / "small"
    write_small_bundle(root)
    return root


def _forged(
    recorded: Recorded,
    target: Path,
    exchanges: Callable[[list[dict[str, Any]]], None] | None = None,
    files_edit: Callable[[Files], None] | None = None,
    fields: dict[str, Any] | None = None,
) -> Path:
    """The recorded bundle edited, resealed with claims that are its replay."""
    _, manifest, original = recorded
    files = dict(original)
    if exchanges is not None:
        records = lines(files, LOG)
        exchanges(records)
        put_lines(files, LOG, records)
    if files_edit is not None:
        files_edit(files)
    return resealed_as_replayed(target, manifest, files, fields=fields)


def _streamed(records: list[dict[str, Any]]) -> dict[str, Any]:
    (exchange,) = [r for r in records if r["id"] == STREAMED]
    assert exchange["chunks"], "the recorded exchange is streamed"
    return exchange


@pytest.fixture(scope="module")
def overflowing(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Exchange 234 began at 1.7e308 s and never ended, its last chunk 1.7e308 s in; coding
    (its component) stopped by the sandbox at its wall limit. Both numbers are finite."""

    def edit(records: list[dict[str, Any]]) -> None:
        exchange = _streamed(records)
        exchange["started"] = HUGE
        exchange["ended"] = None
        exchange["chunks"][-1]["t"] = HUGE

    def stopped(files: Files) -> None:
        result = json.loads(files[CODING][0])
        result |= {"status": "FAILED", "reason": "sparkbench: wall limit exceeded", "metrics": {}}
        put_json(files, CODING, result)

    return _forged(recorded, tmp_path_factory.mktemp("overflow") / "bundle", edit, stopped)


@pytest.fixture(scope="module")
def publisher_text(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Exchange 234 carrying terminal escapes and HTML in every free-text field the review
    commands print: header names and values, bodies, chunks, error, redirect, model, path."""

    def edit(records: list[dict[str, Any]]) -> None:
        exchange = _streamed(records)
        exchange["path"] = f"/v1/chat/completions{ESCAPES}{XSS}"
        exchange["request_headers"] = {f"x-evil{ESCAPES}": f"{ESCAPES}{XSS}"}
        exchange["response_headers"] = {"x-html": XSS, "x-esc": ESCAPES}
        exchange["request_body"] = {"encoding": "utf-8", "data": f"{ESCAPES}{XSS}"}
        exchange["response_body"] = {
            "encoding": "utf-8",
            "data": json.dumps({"say": ESCAPES, "html": XSS}, ensure_ascii=False),
        }
        exchange["chunks"][0]["data"] = f"data: {ESCAPES}{XSS} \u2713\n\n"
        exchange["error"] = f"{ESCAPES}{XSS}"
        exchange["redirect"] = "javascript:alert(document.domain)//" + ESCAPES
        exchange["response_model"] = f"{ESCAPES}{XSS}"[:256]

    no_concurrency = _spark_rows(lambda fields: None if fields[11] == "concurrency" else fields)
    return _forged(recorded, tmp_path_factory.mktemp("text") / "bundle", edit, no_concurrency)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _controls(text: str) -> list[str]:
    """The control characters in ``text`` other than line feed and tab (C0, DEL, C1)."""
    return [c for c in text if c not in "\n\t" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]


# --- 1, 2: a finite time that overflows -------------------------------------------------------


def test_an_exchange_at_the_edge_of_a_double_is_one_json_document(
    overflowing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "show", str(overflowing), "--exchange", str(STREAMED), "--json")
    # a time past any record's bound (MAX_SECONDS, ADR 0012): the record is refused, located
    assert (code, out) == (1, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"exchange {STREAMED}, line {STREAMED + 1} of transport/exchanges.jsonl" in err


def test_a_time_past_a_double_is_refused_and_the_show_report_is_one_json_document(
    overflowing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundle verified (integrity ok) and ``show --json`` ended in a traceback: its times
    are now bounded (MAX_SECONDS, ADR 0012), so it fails its check with the record located, and
    its report is one JSON document."""
    assert main(["verify", str(overflowing), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["integrity"]["findings"]
    assert any("$.started: 1.7e+308 is greater than the maximum" in f["message"] for f in findings)
    code, out, err = _run(capsys, "show", str(overflowing), "--json")
    assert code == 1, err
    assert json.loads(out)["verdict"]["integrity"]["status"] == "failed"


# --- 3, 4, 5: the operator's paths ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["q[/x]", "[nosuchstyle]m", "evil\x1b]0;PWNED\x07\x1b[2J.tar"],
    ids=["closing-tag", "style-tag", "escape-in-a-tar-name"],
)
def test_diff_shows_the_paths_it_compares_as_they_are(
    name: str,
    recorded: Recorded,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "4000")  # the title on one line
    (tmp_path / "q[").mkdir()
    other = tmp_path / name
    if name.endswith(".tar"):
        shutil.copyfile(TAR, other)
    else:
        shutil.copytree(recorded[0], other)
    code, out, err = _run(capsys, "diff", str(recorded[0]), str(other))
    assert code == 0, err
    assert not _controls(out + err)
    shown = name.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert shown in "".join(out.split())  # the title may fold at the table's width


def test_unpack_into_a_directory_named_with_brackets_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "4000")
    (tmp_path / "q[").mkdir()
    target = tmp_path / "q[/y]"
    code, out, err = _run(capsys, "unpack", str(TAR), "-o", str(target))
    assert code == 0, err
    assert str(target) in "".join(out.split())


def test_unpack_into_an_empty_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    code, _, err = _run(capsys, "unpack", str(TAR), "-o", "")
    assert code == 2
    assert len(err.splitlines()) == 1
    assert not list(here.iterdir())


# --- 6: the error line --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["show", "verify", "unpack", "diff"])
def test_no_control_character_of_a_tar_name_reaches_the_terminal_on_the_error_line(
    command: str, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = tmp_path / "evil\x1b]0;PWNED\x07\x1b[2J\x9b.tar"
    evil.write_bytes(b"not a tar at all" * 64)
    argv = {
        "show": ["show", str(evil)],
        "verify": ["verify", str(evil)],
        "unpack": ["unpack", str(evil), "-o", str(tmp_path / "out")],
        "diff": ["diff", str(small), str(evil)],
    }[command]
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert "not a readable uncompressed tar" in err
    assert not _controls(out + err), repr(err)
    assert "evil\\x1b]0;PWNED" in err


# --- 7, 8: what diff does not show -------------------------------------------------------------


@pytest.mark.parametrize("defect", ["a-changed-byte", "claims-that-lie"])
def test_diff_does_not_pass_a_bundle_that_fails_its_check(
    defect: str, recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, manifest, files = recorded
    other = tmp_path / "b"
    if defect == "a-changed-byte":
        shutil.copytree(root, other)
        name = next(n for n in sorted(manifest.evidence) if n.startswith("logs/"))
        blob = other / "blobs" / "sha256" / manifest.evidence[name].digest[7:]
        blob.chmod(0o644)
        blob.write_bytes(blob.read_bytes() + b"x")
    else:
        claims = manifest.claims.model_dump()
        claims["aggregate_score"] = 99.0
        reseal(other, manifest, files, {"claims": claims})
    assert main(["verify", str(other)]) == 1  # the check fails
    capsys.readouterr()
    code, out, _ = _run(capsys, "diff", str(root), str(other), "--json")
    assert code == 1, out


def test_diff_shows_a_digest_that_is_only_declared(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, manifest, _ = recorded
    assert manifest.model.digest_source == "weights"
    model = manifest.model.model_dump() | {"digest_source": "declared"}
    declared = _forged(recorded, tmp_path / "declared", fields={"model": model})
    code, out, _ = _run(capsys, "diff", str(root), str(declared), "--json")
    diff = json.loads(out)
    # listed; the same digest stays the same deployment (docs/review.md): how it was known is
    # the evidence's strength, shown beside it, not another deployment
    assert [d["field"] for d in diff["differences"]] == ["model.digest_source"], out
    assert (diff["differences"][0]["a"], diff["differences"][0]["b"]) == ("weights", "declared")
    assert diff["same_deployment"] and code == 0


# --- 9: a stdout that cannot encode a recorded body ---------------------------------------------


def test_an_exchange_is_shown_on_a_terminal_that_cannot_encode_its_body(
    publisher_text: Path,
) -> None:
    done = audit_process(
        ["show", str(publisher_text), "--exchange", str(STREAMED)],
        env={"PYTHONIOENCODING": "latin-1"},
    )
    assert "Traceback" not in done.stderr, done.stderr[-400:]
    assert done.returncode in (0, 1, 2)
    assert f"exchange {STREAMED}:" in done.stdout


# --- held ---------------------------------------------------------------------------------------


def test_held_show_and_diff_give_the_same_bytes_for_the_tar_and_its_directory(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = str(recorded[0])
    outputs: dict[str, list[bytes]] = {}
    for form in (str(TAR), directory):
        for name, argv in (
            ("show", ["show", form, "--json"]),
            ("exchange", ["show", form, "--exchange", str(STREAMED), "--json"]),
            ("diff", ["diff", form, directory if form == str(TAR) else str(TAR), "--json"]),
        ):
            code, out, err = _run(capsys, *argv)
            assert code == 0, err
            outputs.setdefault(name, []).append(out.encode())
        html = tmp_path / f"{len(outputs['show'])}.html"
        assert main(["show", form, "--html", str(html)]) == 0
        capsys.readouterr()
        outputs.setdefault("html", []).append(html.read_bytes())
    for name, (from_tar, from_directory) in outputs.items():
        assert from_tar == from_directory, name


def test_held_the_html_report_escapes_every_publisher_string(
    publisher_text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    code, _, err = _run(capsys, "show", str(publisher_text), "--html", str(report))
    assert code == 0, err
    html = report.read_text()
    assert html.count("<script") == 1  # the report's own
    assert "<img" not in html
    assert "alert(1)</script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # shown, escaped
    assert not re.findall(r"""<[^>]*\b(?:href|src|action)\s*=\s*(?!["']?#)""", html)
    assert not re.findall(r"<[^>]*\son[a-z]+\s*=", html)  # no event handler attribute


@pytest.mark.parametrize("view", ["show", "exchange"])
def test_held_no_control_character_of_a_record_reaches_the_terminal(
    view: str, publisher_text: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["show", str(publisher_text)]
    argv += ["--exchange", str(STREAMED)] if view == "exchange" else []
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    assert not _controls(out + err), sorted(set(_controls(out + err)))
    if view == "exchange":
        assert "\\x1b]0;PWNED\\x07\\x1b[2J" in out  # written out, where it was recorded


@pytest.mark.parametrize(
    "value",
    ["-1", "x", "1e3", "\u00b2", "9" * 5000, str(10**30), " 3"],
    ids=["negative", "word", "float", "superscript", "5000-digits", "past-any-id", "space"],
)
def test_held_an_exchange_id_that_is_none_is_one_line(
    value: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "show", str(recorded[0]), "--exchange", value)
    assert code == 2
    assert not out
    assert len(err.splitlines()) == 1
    assert len(err) < 1200


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_held_pack_refuses_a_blob_that_is_no_regular_file(
    kind: str, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = next((small / "blobs" / "sha256").iterdir())
    outside = tmp_path / "outside"
    shutil.copyfile(blob, outside)
    blob.unlink()
    if kind == "fifo":
        os.mkfifo(blob)
    else:
        blob.symlink_to(outside)
    tar = tmp_path / "out.tar"
    code, _, err = _run(capsys, "pack", str(small), "-o", str(tar))
    assert code == 1
    assert ("FIFO" if kind == "fifo" else "symbolic link") in err
    assert not tar.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "small"]


@pytest.mark.parametrize("kind", ["symlink-to-empty-dir", "file"])
def test_held_unpack_writes_nothing_through_an_output_that_is_no_directory(
    kind: str, small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tar = tmp_path / "small.tar"
    assert main(["pack", str(small), "-o", str(tar)]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "target"
    if kind == "file":
        target.write_bytes(b"keep")
    else:
        target.symlink_to(elsewhere)
    capsys.readouterr()
    code, _, err = _run(capsys, "unpack", str(tar), "-o", str(target))
    assert code == 2
    assert "exists and is not a directory" in err
    assert not list(elsewhere.iterdir())
    if kind == "file":
        assert target.read_bytes() == b"keep"
