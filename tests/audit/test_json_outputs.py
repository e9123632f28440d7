"""`audit run --json` and `audit rejudge --json` print one canonical document each, valid under
its committed JSON Schema: a real run against the reference endpoint (signed by a private
Sigstore instance on 127.0.0.1), and a real archive of example bundles judged again."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from bundle_schema import KINDS, canonical_bytes, parse_document
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import RejudgeReport, RunResult
from tests.audit.test_rank_archive import FULL, FULL_RUN, Archive
from tests.paths import SCHEMAS
from tests.private_sigstore import PrivateSigstore, Services
from tests.sigstore_kit import trust_files
from verify import verify_bundle

pytestmark = pytest.mark.usefixtures("private_home")  # sigstore never sees $HOME


def _document(out: bytes, kind: str) -> object:
    """Check stdout is one canonical JSON document valid under ``kind``'s committed schema, and
    return it as its model."""
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    value = json.loads(out)
    assert canonical_bytes(value) + b"\n" == out
    schema = json.loads((SCHEMAS / KINDS[kind].schema_file).read_bytes())
    jsonschema.Draft202012Validator(schema).validate(value)
    return parse_document(KINDS[kind], out[:-1], "stdout")


def _run(tmp_path: Path, mirrors: dict[str, Path], name: str, *extra: str) -> list[str]:
    argv = ["run", "--pins", "gx10-reference-v5", "--profile", "smoke", "--out",
            str(tmp_path / name), "--model-digest", DEMO_DIGEST, "--json", *extra]  # fmt: skip
    return argv + [f"--mirror={upstream}={path}" for upstream, path in mirrors.items()]


def test_run_json_is_a_run_result_document(
    tmp_path: Path,
    mirrors: dict[str, Path],
    instance: PrivateSigstore,
    services: Services,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    config = Path(trust_files(tmp_path, instance, services)["config"])
    token = instance.mint_token("release-bot@test.local")
    with serve() as endpoint:
        unsigned = _run(tmp_path, mirrors, "plain", "--endpoint", endpoint.url)
        assert main(unsigned) == 0
        plain = _document(capsysbinary.readouterr().out, "run-result")
        signing = ["--sign", "--trust-config", str(config), "--identity-token", token]
        assert main(_run(tmp_path, mirrors, "signed", "--endpoint", endpoint.url, *signing)) == 0
        signed = _document(capsysbinary.readouterr().out, "run-result")
    assert isinstance(plain, RunResult) and isinstance(signed, RunResult)
    assert (plain.bundle, plain.signature) == (str(tmp_path / "plain"), None)
    assert plain.bundle_digest == verify_bundle(tmp_path / "plain").verdict.bundle_digest
    assert signed.bundle == str(tmp_path / "signed")
    assert signed.signature == str(tmp_path / "signed" / MANIFEST_SIGNATURE)
    assert signed.bundle_digest == verify_bundle(tmp_path / "signed").verdict.bundle_digest


def test_rejudge_json_is_a_rejudge_report_document(
    built_examples: dict[str, Path], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    archive = Archive(tmp_path, built_examples)
    full = archive.copy(FULL, "full")
    rerun = archive.rerun(FULL, "rerun", "rerun-01", "2026-11-09T00:00:00Z")
    junk = archive.junk("junk.tar", b"not a tar at all")
    stricter = tmp_path / "stricter.toml"  # the full example no longer meets the aggregate
    text = Path("pins/gx10-reference-v5.toml").read_text("utf-8")
    stricter.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    paths = [str(p) for p in (full, archive.tar(full), rerun, junk)]
    assert main(["rejudge", *paths, "--pins", str(stricter), "--json"]) == 1
    report = _document(capsysbinary.readouterr().out, "rejudge-report")
    assert isinstance(report, RejudgeReport)
    assert (report.pin_set.id, report.bundles) == ("gx10-reference-v5", 2)
    assert sorted((c.run_id, c.bundle) for c in report.changed) == [
        (FULL_RUN, f"{full}, {full}.tar"),
        ("rerun-01", str(rerun)),
    ]
    for changed in report.changed:
        outcome = [d for d in changed.diff.differences if d.field == "outcome"]
        assert [(d.a, d.b) for d in outcome] == [("QUALIFIED", "NOT_QUALIFIED")]
    assert [(c.run_id, c.bundle) for c in report.copies] == [("rerun-01", str(rerun))]
    assert [(r.bundle, r.reason) for r in report.refused] == [
        (str(junk), "not a readable uncompressed tar: truncated header")
    ]
    assert len(report.notes) == 1 and f"{full}, {full}.tar" in report.notes[0]
    # the same archive, judged again, gives the same bytes
    assert main(["rejudge", *paths, "--pins", str(stricter), "--json"]) == 1
    again = capsysbinary.readouterr().out
    assert again == canonical_bytes(report.model_dump(mode="json")) + b"\n"
