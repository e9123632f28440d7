"""`audit show PATH --exchange N`: one recorded exchange, the exact bytes (issue 14 point 8), and
the HTML report's links from each first evidence and gate evidence to the exchange it names.

Real bundles: the example builder's, and the full example's evidence edited and resealed with
the hostile corpus's kit (a redirect whose first evidence names its exchange; bodies recorded as
base64). The command runs in-process through ``main`` and once through a subprocess."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from audit.cli import main
from bundle_schema import KINDS, validate_document
from bundle_schema.models import ExchangeView
from tests.data.hostile.kit import lines, put_lines, read_bundle, reseal
from tests.paths import SCHEMAS
from verify import verify_with_evidence
from verify.exchange import pretty_json

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
TRANSPORT = "transport/exchanges.jsonl"
SCHEMA = SCHEMAS
COMPONENTS = ("coding", "hermes", "tool_instruction", "reliability", "performance")


def recorded(path: Path) -> list[dict[str, Any]]:
    """The transport log's records as the bundle holds them, one per line."""
    return lines(read_bundle(path)[1], TRANSPORT)


def show(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> tuple[int, str, str]:
    code = main(["show", str(path), *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def edited(source: Path, target: Path, edit: Callable[[list[dict[str, Any]]], None]) -> Path:
    """``source`` with its transport records edited, resealed with the claims an honest runner
    makes for that evidence (the replay's), so that only the edit differs."""
    manifest, files = read_bundle(source)
    exchanges = lines(files, TRANSPORT)
    edit(exchanges)
    put_lines(files, TRANSPORT, exchanges)
    first = target.with_name(target.name + "-unclaimed")
    reseal(first, manifest, files, {})
    verdict = verify_with_evidence(first)[0]
    shutil.rmtree(first)
    scores = verdict.scores
    claims = {
        "outcome": verdict.outcome,
        "result_validity": verdict.result_validity,
        "profile_decision": verdict.profile_decision,
        "rankable": verdict.rankable,
        "aggregate_score": scores.aggregate,
        "executed_weight": scores.executed_weight,
        "component_scores": {c: getattr(scores, c) for c in COMPONENTS},
        "reasons": list(verdict.reasons),
    }
    reseal(target, manifest, files, {"claims": claims})
    return target


def _redirect_coding(exchanges: list[dict[str, Any]]) -> None:
    """The endpoint answered the coding harness's request with a redirect off loopback."""
    redirected = exchanges[3]
    assert redirected["component"] == "coding"
    redirected |= {
        "status": 307,
        "redirect": "http://10.0.0.5/v1/chat/completions",
        "response_headers": {"location": "http://10.0.0.5/v1/chat/completions"},
        "response_body": None,
    }


BINARY = b"\xff\xfe\x00 not text"
TEXT = "café: text\tand a tab"


def _base64_bodies(exchanges: list[dict[str, Any]]) -> None:
    """Two streamed replies that also carry a body recorded as base64: one not UTF-8, one that
    is (the observer would have kept it as text; a publisher may not have)."""
    exchanges[4]["response_body"] = {
        "encoding": "base64",
        "data": base64.b64encode(BINARY).decode(),
    }
    text = base64.b64encode(TEXT.encode()).decode()
    exchanges[5]["response_body"] = {"encoding": "base64", "data": text}


@pytest.fixture(scope="module")
def redirected(built_examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("redirect") / "bundle"
    return edited(built_examples["gx10-full-qualified"], target, _redirect_coding)


def _seconds(value: float) -> str:
    """As the command prints seconds: to the microsecond, at least three decimals."""
    whole, _, decimals = f"{value:.6f}".rstrip("0").partition(".")
    return f"{whole}.{decimals.ljust(3, '0')}"


# --- the printed exchange is the recorded one ----------------------------------------------------


def test_a_streamed_exchange_prints_its_request_and_every_chunk_in_order_with_its_timing(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = built_examples["gx10-full-qualified"]
    record = next(e for e in recorded(path) if len(e["chunks"]) > 2)
    code, out, err = show(capsys, path, "--exchange", str(record["id"]))
    assert (code, err) == (0, "")
    assert out.startswith(f"exchange {record['id']}: POST /v1/chat/completions -> 200\n")
    for name, value in record["request_headers"].items():
        assert f"\n> {name}: {value}\n" in out
    body = record["request_body"]["data"]
    digest = hashlib.sha256(body.encode()).hexdigest()
    assert f"request body: {len(body.encode())} bytes, JSON, re-indented" in out
    assert f"\n  sha256:{digest}\n" in out
    # the recorded bodies are compact and plain: Python's own indenting is the same text
    assert json.dumps(json.loads(body), indent=2, ensure_ascii=False) + "\n" in out
    position, previous = 0, 0.0
    for index, chunk in enumerate(record["chunks"]):
        gap = chunk["t"] - previous
        size = len(chunk["data"].encode())
        shown = (
            f"chunk {index}  t {_seconds(chunk['t'])} s  gap {_seconds(gap)} s  {size} bytes\n"
            f"{chunk['data']}"
        )
        found = out.find(shown, position)
        assert found > position, f"chunk {index} missing or out of order"
        position, previous = found, chunk["t"]
    assert f"streamed: {len(record['chunks'])} chunks" in out
    assert "a performance exchange" in out


def test_json_is_the_record_as_it_is_with_its_timings_and_validates_against_its_schema(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = built_examples["gx10-full-qualified"]
    record = next(e for e in recorded(path) if e["chunks"])
    code, out, _ = show(capsys, path, "--exchange", str(record["id"]), "--json")
    assert code == 0
    view = json.loads(out)
    schema = json.loads((SCHEMA / "exchange-view.schema.json").read_bytes())
    jsonschema.Draft202012Validator(schema).validate(view)
    assert isinstance(validate_document(KINDS["exchange-view"], view, "stdout"), ExchangeView)
    assert view["exchange"] == record
    assert (view["log"]["name"], view["log_intact"], view["failed_check"]) == (
        TRANSPORT, True, None
    )  # fmt: skip
    assert view["line"] == record["id"] + 1
    times = [c["t"] for c in record["chunks"]]
    assert [c["t"] for c in view["chunks"]] == times
    assert [c["gap"] for c in view["chunks"]] == [
        round(t - p, 9) for t, p in zip(times, [0.0, *times[:-1]], strict=True)
    ]
    assert [c["at"] for c in view["chunks"]] == [round(record["started"] + t, 9) for t in times]
    request = record["request_body"]["data"].encode()
    assert view["request_body"] == {
        "bytes": len(request),
        "sha256": "sha256:" + hashlib.sha256(request).hexdigest(),
        "form": "json",
    }
    assert view["response_body"] is None
    assert view["role"] == "performance"
    assert "transport_evidence" in view["read_by"]


def test_json_is_byte_identical_on_two_runs_through_a_subprocess(
    built_examples: dict[str, Path],
) -> None:
    path = built_examples["gx10-full-infra-error"]
    command = [sys.executable, "-m", "audit", "show", str(path), "--exchange", "1", "--json"]
    runs = [subprocess.run(command, capture_output=True, check=False) for _ in range(2)]
    assert [(r.returncode, r.stderr) for r in runs] == [(0, b""), (0, b"")]
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stdout.startswith(b'{"also_on_lines":[],"bundle_digest":"sha256:')


def test_the_terminal_view_is_readable_at_80_columns(built_examples: dict[str, Path]) -> None:
    """Everything but recorded text (headers, bodies, chunks: printed whole) fits 80 columns."""
    path = built_examples["gx10-full-qualified"]
    record = recorded(path)[1]
    env = dict(os.environ, COLUMNS="80")
    command = [sys.executable, "-m", "audit", "show", str(path), "--exchange", "1"]
    run = subprocess.run(command, capture_output=True, check=False, env=env, text=True)
    assert (run.returncode, run.stderr) == (0, "")
    verbatim = {f"> {k}: {v}" for k, v in record["request_headers"].items()}
    verbatim |= {f"< {k}: {v}" for k, v in record["response_headers"].items()}
    for body in (record["request_body"], record["response_body"]):
        verbatim |= set((pretty_json(body["data"]) or "").splitlines())
    long = [line for line in run.stdout.splitlines() if len(line.rstrip()) > 80]
    assert [line for line in long if line not in verbatim] == []
    assert "the response probe (contract gx10-direct-probe-v1)" in " ".join(run.stdout.split())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a":1,"b":[]}', '{\n  "a": 1,\n  "b": []\n}'),
        ("[1,[2,{}],3]", "[\n  1,\n  [\n    2,\n    {}\n  ],\n  3\n]"),
        ('{"n":1.00000000000000000001}', '{\n  "n": 1.00000000000000000001\n}'),
        ('{"k":1,"k":2}', '{\n  "k": 1,\n  "k": 2\n}'),
        ('{"s":"a\\"b, {c}: [d]\\u00e9"}', '{\n  "s": "a\\"b, {c}: [d]\\u00e9"\n}'),
        ('  {"a" :  true }\n', '{\n  "a": true\n}'),
        ('"just a string"', '"just a string"'),
        ("NaN", None),
        ('{"a":NaN}', None),
        ("data: {}", None),
        ("", None),
        ("[" * 100_000, None),
    ],
    ids=[
        "object", "nested", "long-number-kept", "repeated-key-kept", "string-tokens-kept",
        "whitespace-only-changes", "scalar", "nan", "nan-inside", "sse-line", "empty", "too-deep",
    ],
)  # fmt: skip
def test_json_bodies_are_re_indented_without_changing_a_token(
    text: str, expected: str | None
) -> None:
    assert pretty_json(text) == expected


def test_base64_bodies_are_decoded_when_text_and_shown_with_their_size_when_not(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = edited(built_examples["gx10-full-qualified"], tmp_path / "b", _base64_bodies)
    code, out, _ = show(capsys, path, "--exchange", "4")
    assert code == 0
    data = base64.b64encode(BINARY).decode()
    sha = hashlib.sha256(BINARY).hexdigest()
    assert (
        f"response body: {len(BINARY)} bytes, not UTF-8: shown as the base64 recorded\n"
        f"  sha256:{sha}\n{data}\n"
    ) in out
    code, out, _ = show(capsys, path, "--exchange", "5")
    assert code == 0
    assert (
        f"response body: {len(TEXT.encode())} bytes, recorded as base64, decoded: UTF-8 text, "
        f"as it is\n  sha256:{hashlib.sha256(TEXT.encode()).hexdigest()}\n{TEXT}\n"
    ) in out
    code, out, _ = show(capsys, path, "--exchange", "4", "--json")
    assert json.loads(out)["response_body"] == {
        "bytes": len(BINARY), "sha256": f"sha256:{sha}", "form": "binary"
    }  # fmt: skip


# --- what cites it ---------------------------------------------------------------------------


def test_the_redirect_names_its_exchange_as_first_evidence_and_gate_evidence(
    redirected: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = show(capsys, redirected, "--exchange", "3", "--json")
    assert (code, err) == (0, "")  # the runner claimed what the replay finds: the check passes
    view = json.loads(out)
    assert view["role"] == "harness"
    assert view["first_evidence_names_it"] is True
    assert view["first_evidence"].startswith("exchange 3 redirected (307) to http://10.0.0.5/")
    assert view["cited_by"] == [
        {
            "gate": "local_endpoint",
            "status": "infra",
            "cites": [
                "exchange 3 was redirected (307); redirects are never followed",
                "transport exchange 3",
            ],
        }
    ]
    code, out, _ = show(capsys, redirected, "--exchange", "4", "--json")
    other = json.loads(out)
    assert (other["first_evidence_names_it"], other["cited_by"]) == (False, [])
    assert other["first_evidence"] == view["first_evidence"]
    code, out, _ = show(capsys, redirected, "--exchange", "3")
    assert "< 307\n< location: http://10.0.0.5/v1/chat/completions\n<\nresponse body: none\n" in out
    flat = " ".join(out.split())
    assert "first evidence names it: exchange 3 redirected (307)" in flat
    assert "cited by local_endpoint (infra): transport exchange 3" in flat


def test_a_probe_exchange_is_claimed_by_its_probe_and_cited_by_its_gate(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = show(capsys, built_examples["gx10-full-qualified"], "--exchange", "2", "--json")
    view = json.loads(out)
    assert (code, view["role"], view["claimed_by"]) == (
        0, "probe", ["the tool call probe (contract gx10-direct-probe-v1)"]
    )  # fmt: skip
    assert [c["gate"] for c in view["cited_by"]] == ["tool_call_protocol"]
    assert (view["first_evidence"], view["first_evidence_names_it"]) == (None, False)


# --- refusals and failed checks --------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("24", "audit show: no exchange 24 in transport/exchanges.jsonl: its ids are 0 to 23 (24 "
               "exchanges)\n"),
        ("x", "audit show: argument --exchange: 'x' is not an exchange id (0, 1, 2, ...) (see "
              "audit show --help)\n"),
        ("-3", "audit show: argument --exchange: '-3' is not an exchange id (0, 1, 2, ...) "
               "(see audit show --help)\n"),
        ("\u0663", "audit show: argument --exchange: '\u0663' is not an exchange id (0, 1, 2, "
                   "...) (see audit show --help)\n"),
        ("\u00b2", "audit show: argument --exchange: '\u00b2' is not an exchange id (0, 1, 2, "
                   "...) (see audit show --help)\n"),
    ],
    ids=["unknown-id", "not-a-number", "negative", "arabic-indic-digit", "superscript"],
)  # fmt: skip
def test_an_id_the_log_does_not_hold_is_refused_with_one_line(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str], given: str, message: str
) -> None:
    code, out, err = show(capsys, built_examples["gx10-full-qualified"], "--exchange", given)
    assert (code, out, err) == (2, "", message)


def test_an_unknown_id_with_html_writes_no_report(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    path = built_examples["gx10-full-qualified"]
    code = main(["show", str(path), "--html", str(report), "--exchange", "24"])
    assert code == 2
    assert capsys.readouterr().err.startswith("audit show: no exchange 24 ")
    assert not report.exists()


def _flip_in_blob(bundle: Path, name: str, old: bytes, new: bytes) -> None:
    manifest, _ = read_bundle(bundle)
    blob = bundle / "blobs" / "sha256" / manifest.evidence[name].digest.removeprefix("sha256:")
    data = blob.read_bytes()
    assert data.count(old) == 1
    blob.chmod(0o644)
    blob.write_bytes(data.replace(old, new))


def test_a_tampered_log_still_prints_the_exchange_and_exits_1(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A changed byte in the transport log: the reviewer gets the bytes as they are now, told
    that they are not the sealed ones, and the exit is 1 with the integrity line."""
    _flip_in_blob(
        full_bundle, TRANSPORT, b'\\"content\\":\\"READY\\"', b'\\"content\\":\\"READX\\"'
    )
    code, out, err = show(capsys, full_bundle, "--exchange", "1")
    assert code == 1
    assert err.startswith("audit show: integrity failed: 1 finding(s); first: evidence ")
    assert err.count("\n") == 1
    assert '"content": "READX"' in out
    assert "whose bytes do NOT hash to its sealed digest" in " ".join(out.split())
    assert out.startswith("verification failed: integrity failed")
    code, out, err = show(capsys, full_bundle, "--exchange", "1", "--json")
    view = json.loads(out)
    assert (code, view["log_intact"]) == (1, False)
    assert view["failed_check"] == err.removeprefix("audit show: ").rstrip("\n")
    assert "READX" in view["exchange"]["response_body"]["data"]


def test_another_tampered_blob_prints_the_intact_exchange_and_exits_1(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tail = read_bundle(full_bundle)[1]["logs/runner.log"][0][-24:]
    _flip_in_blob(full_bundle, "logs/runner.log", tail, tail[:-2] + b"X\n")
    code, out, err = show(capsys, full_bundle, "--exchange", "0", "--json")
    view = json.loads(out)
    assert (code, view["log_intact"]) == (1, True)
    assert view["exchange"] == recorded(full_bundle)[0]
    assert err.startswith("audit show: integrity failed: ")


def test_an_unknown_id_in_a_damaged_log_is_a_failed_check(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the id may be on the line the damage broke, it is the bundle that is defective."""
    _flip_in_blob(full_bundle, TRANSPORT, b'{"chunks":[],"component":"probes","ended":0.842', b"{")
    code, out, err = show(capsys, full_bundle, "--exchange", "1")
    assert (code, out) == (1, "")
    assert err == (
        "audit show: no exchange 1 in transport/exchanges.jsonl: its ids are 0 to 23 (23 "
        "exchanges, not every id between); the log is damaged: line 2 is not a record, its "
        "bytes do not hash to " + read_bundle(full_bundle)[0].evidence[TRANSPORT].digest + "\n"
    )


# --- the HTML report links to the exchanges --------------------------------------------------


def _html(capsys: pytest.CaptureFixture[str], path: Path, out: Path) -> str:
    assert main(["show", str(path), "--html", str(out)]) == 0
    capsys.readouterr()
    return out.read_text()


def test_the_html_anchors_each_exchange_and_links_the_first_evidence_and_gate_evidence(
    redirected: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = _html(capsys, redirected, tmp_path / "a.html")
    assert html == _html(capsys, redirected, tmp_path / "b.html")
    for record in recorded(redirected):
        assert html.count(f'id="exchange-{record["id"]}"') == 1
    link = '<a href="#exchange-3">exchange 3</a>'
    first = html[html.index("<th>first evidence</th>") :]
    assert first.startswith(f"<th>first evidence</th><td>{link} redirected (307) to ")
    gate = html[html.index("<td>local_endpoint</td>") :]
    gate = gate[: gate.index("</tr>")]
    assert f"<td>{link} was redirected (307); redirects are never followed</td>" in gate
    assert f"transport {link}" in gate
    assert '<a href="#transport">transport/exchanges.jsonl</a>' in gate
    assert f"<li>local_endpoint: {link} was redirected" in html  # the verdict's reasons
    assert "http" not in html.replace("http://10.0.0.5", "")  # self-contained: nothing to fetch


def test_the_fingerprint_substitution_links_both_exchanges_it_names(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fingerprints(exchanges: list[dict[str, Any]]) -> None:
        for exchange in exchanges[3:5]:
            fingerprint = "fp_a" if exchange["id"] == 3 else "fp_b"
            if exchange["response_body"] is not None:
                reply = json.loads(exchange["response_body"]["data"])
                exchange["response_body"]["data"] = json.dumps(
                    reply | {"system_fingerprint": fingerprint}
                )
            for chunk in exchange["chunks"]:
                chunk["data"] = chunk["data"].replace(
                    "data: {", f'data: {{"system_fingerprint":"{fingerprint}",'
                )

    path = edited(built_examples["gx10-full-qualified"], tmp_path / "b", fingerprints)
    html = _html(capsys, path, tmp_path / "r.html")
    first = html[html.index("<th>first evidence</th>") :]
    first = first[: first.index("</tr>")]
    assert '<a href="#exchange-3">exchange 3</a>' in first
    assert '<a href="#exchange-4">exchange 4</a>' in first
    code, out, _ = show(capsys, path, "--exchange", "4", "--json")
    assert (code, json.loads(out)["first_evidence_names_it"]) == (0, True)


@pytest.mark.skipif(
    shutil.which(str(CHROMIUM)) is None or shutil.which(str(CHROMEDRIVER)) is None,
    reason="chromium and chromium-driver are installed by make test (Debian packages)",
)
def test_following_the_link_in_headless_chromium_shows_the_exchange(
    redirected: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium import webdriver  # noqa: PLC0415 - a dev dependency, for this test
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415
    from selenium.webdriver.support.ui import Select  # noqa: PLC0415

    report = tmp_path / "report.html"
    _html(capsys, redirected, report)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,1400"]
    arguments += ["--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"]
    for argument in arguments:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.get(report.as_uri())
        row = driver.find_element(By.ID, "exchange-3")
        Select(driver.find_element(By.ID, "transport-filter")).select_by_value("stream")
        assert not row.is_displayed()  # exchange 3 is not streamed: the filter hides it
        forensic = driver.find_element(By.ID, "forensic")
        forensic.find_element(By.CSS_SELECTOR, 'a[href="#exchange-3"]').click()
        assert driver.execute_script("return location.hash") == "#exchange-3"
        assert row.is_displayed()
        assert row.find_element(By.TAG_NAME, "details").get_attribute("open") is not None
        assert "redirect: http://10.0.0.5/v1/chat/completions" in row.text
    finally:
        driver.quit()
