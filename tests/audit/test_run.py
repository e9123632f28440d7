"""`audit run` end to end: the reference endpoint, real git mirrors, real sandboxes, and the
verifier's verdict on what the runner wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST, SCENARIOS, run_pipeline
from audit.demo.reference_endpoint import Behaviour, serve
from audit.run import RunRequest, run_qualification
from bundle_schema.models import Verdict
from pins import PinSetSource, load_builtin, pin_set_source
from verify import parse_manifest, verify_bundle
from verify._source import open_source

V5 = load_builtin("gx10-reference-v5")
DIGEST = DEMO_DIGEST
"""The reference model's digest: the demo pins judge no other model."""


def run(
    tmp_path: Path,
    mirrors: dict[str, Path],
    behaviour: Behaviour | None = None,
    pins: PinSetSource = V5,
    **changes: object,
) -> Verdict:
    """Run a full qualification against a reference endpoint; return the verifier's verdict."""
    with serve(behaviour) as endpoint:
        fields: dict[str, object] = {
            "endpoint": endpoint.url,
            "pins": pins,
            "profile": "full",
            "out": tmp_path / "bundle",
            "model_digest": DIGEST,
            "mirrors": mirrors,
        }
        run_qualification(RunRequest(**(fields | changes)))  # type: ignore[arg-type]
    return verify_bundle(tmp_path / "bundle", pins=pins).verdict


def test_a_full_run_qualifies_and_its_claims_are_the_replay(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    verdict = run(tmp_path, mirrors)
    assert verdict.integrity.status == "ok"
    assert (verdict.outcome, verdict.result_validity, verdict.profile_decision) == (
        "QUALIFIED", "VALID", "MEETS_PROFILE"
    )  # fmt: skip
    # the demo pins run the reference harnesses: never ranked
    assert (verdict.rankable, verdict.rank_group, verdict.claims.match) == (False, None, True)
    assert all(g.status == "pass" for g in verdict.gates), verdict.gates
    assert verdict.scores.executed_weight == 100
    manifest = parse_manifest(open_source(tmp_path / "bundle").manifest_bytes())
    entry = manifest.model.evidence["upstreams/sparkbench/checkout.json"]
    state = json.loads((tmp_path / "bundle" / "blobs" / "sha256" / entry.digest[7:]).read_bytes())
    assert state["commit"] == V5.pins.upstreams["sparkbench"].commit
    assert (state["porcelain"], state["submodules"]) == ("", "")
    assert state["remote_url"] == str(mirrors["sparkbench"])
    tasks_entry = manifest.model.evidence["components/hermes/tasks.jsonl"]
    tasks_blob = tmp_path / "bundle" / "blobs" / "sha256" / tasks_entry.digest[7:]
    tasks = [json.loads(line) for line in tasks_blob.read_bytes().splitlines()]
    assert all(len(t["exchanges"]) == 1 for t in tasks)  # one model request per reference task


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_demo_scenario_ends_as_its_scoring_generation_prescribes(
    tmp_path: Path, scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_pipeline(tmp_path, Console(width=100), scenario)
    chosen = SCENARIOS[scenario]
    verdict = verify_bundle(tmp_path / f"run-{scenario}", pins=chosen.pins()).verdict
    assert (verdict.outcome, verdict.result_validity) == chosen.expected
    assert verdict.claims.match
    assert "as gx10-qualification-v5 prescribes" in capsys.readouterr().out


def test_the_outside_attempt_is_in_the_ledger(tmp_path: Path) -> None:
    assert run_pipeline(tmp_path, Console(width=100), "non-local")
    verdict = verify_bundle(tmp_path / "run-non-local").verdict
    isolation = next(g for g in verdict.gates if g.id == "network_isolation")
    assert isolation.reason.endswith("tried 93.184.216.34:443 (ENETUNREACH)")


def test_a_pinned_commit_that_does_not_exist_is_infrastructure(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    data = json.loads(json.dumps(dict(V5.data)))
    data["upstreams"]["benchlocal"]["commit"] = "0" * 40
    pins = pin_set_source(data, "custom")
    verdict = run(tmp_path, mirrors, pins=pins)
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    assert any("cannot check out 0000000000" in r for r in verdict.reasons)
    assert verdict.claims.match


def test_a_harness_that_exits_non_zero_is_a_failed_runner(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    data = json.loads(json.dumps(dict(V5.data)))
    data["harnesses"]["hermesbench"]["command"] = [
        "{python}", "-c", "import sys; sys.stderr.write('agent crashed'); sys.exit(3)"
    ]  # fmt: skip
    pins = pin_set_source(data, "custom")
    verdict = run(tmp_path, mirrors, pins=pins)
    assert (verdict.outcome, verdict.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    assert "hermes failed: hermesbench exited 3: agent crashed" in verdict.reasons
    assert verdict.claims.match


def test_the_cli_runs_a_smoke_profile(
    tmp_path: Path, mirrors: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with serve() as endpoint:
        argv = ["run", "--endpoint", endpoint.url, "--pins", "gx10-reference-v5",
                "--profile", "smoke", "--out", str(tmp_path / "smoke"), "--model-digest", DIGEST,
                "--json"]  # fmt: skip
        argv += [f"--mirror={name}={path}" for name, path in mirrors.items()]
        assert main(argv) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["bundle"] == str(tmp_path / "smoke")
    assert main(["verify", str(tmp_path / "smoke"), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["bundle_digest"] == written["bundle_digest"]
    assert (verdict["outcome"], verdict["rankable"]) == ("QUALIFIED", False)
    assert verdict["scores"]["executed_weight"] == 45


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--endpoint", "http://10.1.1.1:8080"], "not an http:// endpoint on loopback"),
        (["--profile", "nightly"], "--profile nightly: not a profile"),
    ],
)
def test_run_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    base = {
        "--endpoint": "http://127.0.0.1:9",
        "--pins": "gx10-reference-v5",
        "--profile": "full",
        "--out": str(tmp_path / "o"),
        "--model-digest": DIGEST,
    }
    base.update(dict(zip(argv[::2], argv[1::2], strict=True)))
    assert main(["run", *[x for pair in base.items() for x in pair]]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_the_demo_pins_refuse_another_model_before_anything_runs(
    tmp_path: Path, mirrors: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with serve() as endpoint:
        argv = ["run", "--endpoint", endpoint.url, "--pins", "gx10-reference-v5",
                "--profile", "smoke", "--out", str(tmp_path / "real"),
                "--model-digest", "sha256:" + "ab" * 32, "--json"]  # fmt: skip
        argv += [f"--mirror={name}={path}" for name, path in mirrors.items()]
        assert main(argv) == 2
    assert capsys.readouterr().err == (
        "audit run: --pins gx10-reference-v5: a demo-only pin set (the reference harnesses, "
        "which score synthetic answers) cannot judge reference-model-q8_0; qualify it under "
        "gx10-qualification-v5 (the real upstream harnesses) or a pin set of your own\n"
    )
    assert not (tmp_path / "real" / "manifest.json").exists()


def test_runs_sharing_a_store_keep_one_copy_of_their_checkouts(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    store = tmp_path / "store"
    for run_name in ("first", "second"):
        verdict = run(tmp_path / run_name, mirrors, store=store, run_id=f"store-{run_name}")
        assert (verdict.integrity.status, verdict.claims.match) == ("ok", True)
    manifest = parse_manifest(open_source(tmp_path / "first" / "bundle").manifest_bytes())
    name = next(n for n in manifest.model.evidence if n.startswith("upstreams/sparkbench/files/"))
    digest = manifest.model.evidence[name].digest[7:]
    inodes = {(tmp_path / r / "bundle" / "blobs" / "sha256" / digest).stat().st_ino
              for r in ("first", "second")}  # fmt: skip
    assert inodes == {(store / "blobs" / "sha256" / digest).stat().st_ino}


def test_an_endpoint_that_dies_mid_run_never_yields_a_valid_result(
    tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    verdict = run(tmp_path, mirrors, Behaviour(dies_after=4))  # the probes, then two more
    assert verdict.integrity.status == "ok"
    assert verdict.claims.match
    assert verdict.result_validity != "VALID"
    assert verdict.outcome == "INFRA_ERROR"
    assert any("failed" in reason for reason in verdict.reasons)
