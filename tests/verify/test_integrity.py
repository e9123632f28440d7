"""Every integrity finding, located by logical name; deterministic verdict JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from audit import pack
from audit.cli import main
from bundle_schema import canonical_bytes, digest_of
from bundle_schema.layout import blob_path, content_digest
from tests.factories import write_small_bundle
from verify import Limits, parse_manifest, verify_bundle
from verify._core import integrity_findings
from verify._hashing import PROCESS_THRESHOLD, Hashed
from verify.render import PROGRESS_MIN_BYTES, ProgressBar

TRANSPORT = "transport/exchanges.jsonl"
RESULT = "components/coding/result.json"


def manifest_value(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_bytes())


def reseal(bundle: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the manifest, recompute its seal, and write it back canonically."""
    value = manifest_value(bundle)
    change(value)
    value["content_digest"] = content_digest(value)
    (bundle / "manifest.json").write_bytes(canonical_bytes(value))


def replace_evidence(bundle: Path, name: str, data: bytes) -> None:
    """Store new bytes for an evidence entry and point the manifest (resealed) at them."""
    digest = digest_of(data)
    (bundle / blob_path(digest)).write_bytes(data)

    def change(value: dict[str, Any]) -> None:
        old = value["evidence"][name]["digest"]
        value["evidence"][name].update(digest=digest, size=len(data))
        if not any(e["digest"] == old for e in value["evidence"].values()):
            (bundle / blob_path(old)).unlink()

    reseal(bundle, change)


def blob_of(bundle: Path, name: str) -> Path:
    return bundle / blob_path(manifest_value(bundle)["evidence"][name]["digest"])


Verify = Callable[..., tuple[int, dict[str, Any], str]]


@pytest.fixture
def verdict(capsysbinary: pytest.CaptureFixture[bytes]) -> Verify:
    """Run ``audit verify --json`` in-process: exit code, parsed verdict, stderr."""

    def run(bundle: Path, *args: str) -> tuple[int, dict[str, Any], str]:
        code = main(["verify", str(bundle), "--json", *args])
        captured = capsysbinary.readouterr()
        return code, json.loads(captured.out or b"{}"), captured.err.decode()

    return run


def codes(result: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(f["code"], f["entry"]) for f in result["integrity"]["findings"]]


def test_intact_bundle_verifies(full_bundle: Path, verdict: Verify) -> None:
    code, result, err = verdict(full_bundle)
    assert (code, result["integrity"]["status"], err) == (0, "ok", "")
    assert result["bundle_digest"] == digest_of((full_bundle / "manifest.json").read_bytes())


def test_missing_blob(full_bundle: Path, verdict: Verify) -> None:
    blob_of(full_bundle, TRANSPORT).unlink()
    code, result, err = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("missing_blob", TRANSPORT)]
    assert f"evidence '{TRANSPORT}': blob blobs/sha256/" in err and err.count("\n") == 1


def test_changed_blob_byte(full_bundle: Path, verdict: Verify) -> None:
    blob = blob_of(full_bundle, TRANSPORT)
    data = bytearray(blob.read_bytes())
    data[10] ^= 0xFF
    blob.write_bytes(bytes(data))
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("digest_mismatch", TRANSPORT)]
    finding = result["integrity"]["findings"][0]
    assert finding["expected"] == "sha256:" + blob.name
    assert finding["got"] == digest_of(bytes(data))


def test_wrong_size_blob(full_bundle: Path, verdict: Verify) -> None:
    blob = blob_of(full_bundle, TRANSPORT)
    size = blob.stat().st_size
    blob.write_bytes(blob.read_bytes() + b"\n")
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("size_mismatch", TRANSPORT)]
    assert result["integrity"]["findings"][0]["expected"] == str(size)
    assert result["integrity"]["findings"][0]["got"] == str(size + 1)


def test_added_blob(full_bundle: Path, verdict: Verify) -> None:
    data = b"spliced in"
    (full_bundle / blob_path(digest_of(data))).write_bytes(data)
    code, result, err = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("extra_blob", None)]
    assert "is not referenced by any evidence entry" in err


def test_misnamed_blob(full_bundle: Path, verdict: Verify) -> None:
    blob = blob_of(full_bundle, TRANSPORT)
    (blob.parent / blob.name.upper()).write_bytes(b"x")
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("misnamed_blob", None)]


def test_a_blob_name_with_a_trailing_newline_is_misnamed(
    full_bundle: Path, verdict: Verify
) -> None:
    blob = blob_of(full_bundle, TRANSPORT)
    (blob.parent / (blob.name + "\n")).write_bytes(blob.read_bytes())
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("misnamed_blob", None)]


def test_file_outside_the_layout(full_bundle: Path, verdict: Verify) -> None:
    (full_bundle / "notes.txt").write_text("hello")
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert result["integrity"]["findings"][0]["path"] == "notes.txt"
    assert codes(result) == [("unexpected_file", None)]


def test_manifest_field_edited_without_resealing(full_bundle: Path, verdict: Verify) -> None:
    value = manifest_value(full_bundle)
    value["claims"]["aggregate_score"] = 99.5
    (full_bundle / "manifest.json").write_bytes(canonical_bytes(value))
    code, result, err = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("content_digest_mismatch", None)]
    assert "manifest.json: content_digest is sha256:" in err


def test_manifest_byte_that_breaks_canonical_form(full_bundle: Path, verdict: Verify) -> None:
    data = (full_bundle / "manifest.json").read_bytes()
    (full_bundle / "manifest.json").write_bytes(data.replace(b'{"claims"', b'{ "claims"', 1))
    code, _, err = verdict(full_bundle)
    assert code == 1  # a defect of the bundle's bytes: a failed check (ADR 0019)
    assert err.startswith(
        f"audit verify: {full_bundle}: manifest.json: bytes are not RFC 8785 canonical JSON"
    )


def test_expected_bundle_digest(full_bundle: Path, verdict: Verify) -> None:
    digest = digest_of((full_bundle / "manifest.json").read_bytes())
    assert verdict(full_bundle, "--expect-digest", digest)[0] == 0
    other = "sha256:" + "1" * 64
    code, result, _ = verdict(full_bundle, "--expect-digest", other)
    assert code == 1
    assert codes(result) == [("bundle_digest_mismatch", None)]
    assert "first: not the published bundle: its digest is " in result["reasons"][0]


def test_a_broken_manifest_is_not_the_published_bundle(full_bundle: Path, verdict: Verify) -> None:
    """With a published digest, a manifest that no longer parses is "not the published bundle"
    (exit 1), not a defect that would blame the bundle's making."""
    published = digest_of((full_bundle / "manifest.json").read_bytes())
    data = (full_bundle / "manifest.json").read_bytes()
    (full_bundle / "manifest.json").write_bytes(data + b"x")
    code, _, err = verdict(full_bundle, "--expect-digest", published)
    assert code == 1
    assert err.startswith(
        f"audit verify: {full_bundle}: not the published bundle: its manifest digests to "
        f"{digest_of(data + b'x')}, expected {published} (and it is not a manifest: "
    )
    assert err.count("\n") == 1
    code, _, err = verdict(full_bundle)  # without a published digest: a defect of the bundle
    assert code == 1
    assert err.startswith(f"audit verify: {full_bundle}: manifest.json: ")
    assert "not the published" not in err


def test_invalid_record(full_bundle: Path, verdict: Verify) -> None:
    bad = canonical_bytes({"schema_version": 1, "component": "coding", "status": "DONE"})
    replace_evidence(full_bundle, RESULT, bad)
    code, result, err = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("record_invalid", RESULT)]
    assert f"evidence '{RESULT}': blobs/sha256/" in err and "$.status: 'DONE' is not one of" in err


def test_invalid_json_lines_record_names_the_line(full_bundle: Path, verdict: Verify) -> None:
    lines = blob_of(full_bundle, TRANSPORT).read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"method":"POST"', b'"method":"post"')
    replace_evidence(full_bundle, TRANSPORT, b"\n".join(lines))
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("record_invalid", TRANSPORT)]
    assert ".jsonl:3" not in result["integrity"]["findings"][0]["message"]
    assert ":3: $.method" in result["integrity"]["findings"][0]["message"]


def test_non_canonical_record_line(full_bundle: Path, verdict: Verify) -> None:
    data = blob_of(full_bundle, TRANSPORT).read_bytes().replace(b'{"chunks"', b'{ "chunks"', 1)
    replace_evidence(full_bundle, TRANSPORT, data)
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert "not RFC 8785 canonical" in result["integrity"]["findings"][0]["message"]


def test_json_lines_record_without_final_newline(full_bundle: Path, verdict: Verify) -> None:
    replace_evidence(full_bundle, TRANSPORT, blob_of(full_bundle, TRANSPORT).read_bytes()[:-1])
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("record_invalid", TRANSPORT)]
    assert (
        "the last line does not end with a newline" in result["integrity"]["findings"][0]["message"]
    )


def test_json_lines_record_with_a_blank_line(full_bundle: Path, verdict: Verify) -> None:
    replace_evidence(full_bundle, TRANSPORT, b"\n" + blob_of(full_bundle, TRANSPORT).read_bytes())
    code, result, _ = verdict(full_bundle)
    assert code == 1
    assert ":1: Expecting value" in result["integrity"]["findings"][0]["message"]


def test_record_over_the_cap(full_bundle: Path) -> None:
    found = verify_bundle(full_bundle, limits=Limits(max_record_line=64)).verdict.integrity.findings
    assert {f.entry for f in found} >= {TRANSPORT, RESULT}
    # records over the cap are invalid; raw outputs and listings over it cannot be checked
    # against the records derived from them, which is a finding too
    assert all(
        (f.code == "record_invalid" and "over the cap of 64 bytes" in f.message)
        or (f.code == "record_disagrees" and "over 64 bytes, too large" in f.message)
        for f in found
    )


def test_dangling_reference_in_a_record(full_bundle: Path, verdict: Verify) -> None:
    record = json.loads(blob_of(full_bundle, RESULT).read_bytes())
    record["raw_outputs"] = ["components/coding/nowhere.json"]
    replace_evidence(full_bundle, RESULT, canonical_bytes(record))
    code, result, err = verdict(full_bundle)
    assert code == 1
    assert codes(result) == [("dangling_reference", RESULT)]
    assert "raw_outputs[0] names 'components/coding/nowhere.json'" in err


def test_unreadable_blob_is_a_finding(full_bundle: Path) -> None:
    manifest = parse_manifest((full_bundle / "manifest.json").read_bytes())
    files = {
        p.relative_to(full_bundle).as_posix(): p.stat().st_size
        for p in full_bundle.rglob("*")
        if p.is_file()
    }
    path = blob_path(manifest.model.evidence[TRANSPORT].digest)
    hashed = {path: Hashed(None, 0, "Input/output error")}
    findings = integrity_findings(manifest, files, hashed)
    unreadable = [f for f in findings if f.entry == TRANSPORT]
    assert [f.code for f in unreadable] == ["unreadable_blob"]
    assert "cannot be read: Input/output error" in unreadable[0].message


def test_several_findings_are_all_reported_in_a_stable_order(
    full_bundle: Path, verdict: Verify
) -> None:
    blob_of(full_bundle, TRANSPORT).unlink()
    blob_of(full_bundle, RESULT).write_bytes(b"{}")
    (full_bundle / "zz.txt").write_text("x")
    first = verdict(full_bundle)
    assert first[0] == 1
    assert codes(first[1]) == [
        ("unexpected_file", None),
        ("size_mismatch", RESULT),
        ("missing_blob", TRANSPORT),
    ]
    assert verdict(full_bundle) == first


def test_verdict_json_is_identical_across_runs_and_forms(
    full_bundle: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    pack(full_bundle, tmp_path / "b.tar")
    outputs = []
    for target in (full_bundle, full_bundle, tmp_path / "b.tar"):
        assert main(["verify", str(target), "--json"]) == 0
        outputs.append(capsysbinary.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].endswith(b"}\n")
    assert canonical_bytes(json.loads(outputs[0])) + b"\n" == outputs[0]


def test_single_worker_and_many_workers_agree(full_bundle: Path) -> None:
    assert (
        verify_bundle(full_bundle, workers=1).verdict
        == verify_bundle(full_bundle, workers=4).verdict
    )


def test_many_blobs_take_the_process_path_and_agree(tmp_path: Path) -> None:
    """Past PROCESS_THRESHOLD blobs hashing runs in worker processes; results do not change."""
    root = tmp_path / "many"
    extra = {f"logs/part-{i:04d}.txt": f"line {i}\n".encode() for i in range(PROCESS_THRESHOLD * 2)}
    write_small_bundle(root, extra=extra)
    pack(root, tmp_path / "many.tar")
    processes = 3  # two helper processes; the caller keeps a core
    for target in (root, tmp_path / "many.tar"):
        assert (
            verify_bundle(target, workers=processes).verdict
            == verify_bundle(target, workers=1).verdict
        )
        assert verify_bundle(target, workers=2).verdict == verify_bundle(target, workers=1).verdict
        assert verify_bundle(target, workers=processes).verdict.integrity.status == "ok"
    manifest = parse_manifest((root / "manifest.json").read_bytes()).model
    victim = root / blob_path(manifest.evidence["logs/part-0077.txt"].digest)
    victim.write_bytes(b"line 78\n")
    found = verify_bundle(root, workers=processes).verdict.integrity.findings
    assert [(f.code, f.entry) for f in found] == [("digest_mismatch", "logs/part-0077.txt")]


def test_progress_bar_only_for_long_work_on_a_terminal() -> None:
    plain = Console(file=io.StringIO(), force_terminal=False)
    with ProgressBar(plain) as bar:
        assert bar.factory(10, PROGRESS_MIN_BYTES * 2) is None
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with ProgressBar(terminal) as bar:
        assert bar.factory(10, PROGRESS_MIN_BYTES - 1) is None
    with ProgressBar(terminal) as bar:
        advance = bar.factory(10, PROGRESS_MIN_BYTES)
        assert advance is not None
        advance(PROGRESS_MIN_BYTES)
    assert "hashing blobs" in terminal.file.getvalue()  # type: ignore[attr-defined]
