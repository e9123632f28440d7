"""Hostile tests of 2026-12-05 (h): the decision layer (quarantine authority, the claims
comparison, demo-only pin sets, the pin set and model identity, the verdict's axes).

The publisher is the adversary and reseals every forgery (integrity holds). The starting points
are the example runs built by the project's own example builder, under the tests' deployment
pin set (tests/data/pins/gx10-deployment-v5.toml: the demo's numbers and harnesses, not demo
only, so a qualified run is rankable) and, for the demo-only checks, under the shipped
``gx10-reference-v5``. Forgeries claim what their own replay finds (``resealed_as_replayed``),
so only the verifier's own decisions can stop them.

Holes (each test asserts the safe behaviour; the strict expected failures are the holes):

1. Quarantine authority (``verify/gx10/decision.py`` ``_axes``): a component result whose
   ``status`` is ``QUARANTINED`` quarantines the run though no marker exists, none is in the
   raw outputs, and the component's harness (Hermes, here) has no quarantine at all. A
   publisher turns a model failure (NOT_QUALIFIED / VALID, the "completed with profile
   limitations" table) into INFRA_ERROR / QUARANTINED, and the verdict says "hermes
   quarantined by its upstream: no marker recorded". The runner only writes the status beside
   a marker the harness wrote (``audit/run.py``).
2. Removing a marker (``verify/_consistency/outputs.py`` ``_raw_outputs``): a harness's raw outputs
   are re-read only when a derived record or a marker record exists; drop the marker record and
   record the component ``FAILED`` (no derived record), and SparkBench's own ``quarantine.json``,
   still in the bundle, is never read: the run is an INFRA_FAILURE of a "failed runner", not
   QUARANTINED, and no finding says a marker was left out.
3. Claims (``verify/gx10/decision.py`` ``_numbers``): only the five components of seed 000 are
   compared; a claim of a score for any other name (``bfcl``, ``Coding``) is never compared,
   and the claims "match".
4. Demo-only pin sets (``pins/_model.py`` ``PinSet.judges``, ``verify/gx10/gates.py``
   ``_unjudgeable``): "the reference endpoint" is decided by the manifest's runtime model id
   and its digest, and that digest is ``declared``: the operator's word (``--model-digest``).
   A run whose replies the reference endpoint never gives (its replies are a pure function
   of the prompt, ``audit.demo.reference_endpoint.reply_words``) and whose identity replies
   name llama.cpp b6500, owned by ``llamacpp``, is QUALIFIED under ``gx10-reference-v5``. Any
   server given the alias ``reference-model-q8_0`` and run with ``--model-digest`` of the
   reference digest is judged the same way, without a forgery.
5. The pin set the verifier uses (``audit/cli/_common.py`` ``pin_set``): ``--pins ID`` reads a
   file of that name in the working directory before the shipped pin set of that id. A
   publisher who ships a file named ``gx10-qualification-v5`` beside the bundle (a pin set of
   its own, under the shipped id, judging by its own harnesses and thresholds) gets a
   rankable verdict naming ``gx10-qualification-v5`` from ``audit verify BUNDLE --pins
   gx10-qualification-v5 --require rankable`` run there; nothing refuses a pin-set file that
   takes a shipped id with another digest.
6. Model identity (``verify/gx10/gates.py`` ``model_identity``): ``model.digest_source`` is
   never read. A manifest that says the digest came from the ``endpoint`` (the runner never
   writes that source) while no exchange reports any digest passes ``model_identity`` and is
   rankable with any digest.

Fixed the same day: 1 and 2 by ``verify._consistency`` (``_quarantine_statuses``: a
QUARANTINED result needs a marker; the raw outputs are read for a marker even when no record
is claimed) and ``verify.gx10.decision._axes`` (a marker alone quarantines); 3 by
``decision._numbers``; 5 by ``audit.cli._common.pin_set`` (a shipped id is the shipped pin
set; a file that takes a shipped id with other bytes is still judged as that file, its digest
in the verdict, as the demo's short-limit scenario needs); 6 by
``verify.gx10.gates.model_identity`` (an ``endpoint`` digest must be in a recorded identity
reply). Left, a strict xfail: 4, a decision
of ADR 0016 (point 2); the demo's examples are scenario bundles that name llama.cpp b6500.

Held (kept as guards): a quarantine marker record for a harness that writes none is a finding;
a marker that names no source is a finding; a missing claimed component, a claimed aggregate
2e-6 off the replay and ``rankable`` denied of a run that ranks are differences.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.demo.reference_endpoint import MODEL_ID, reply_words
from bundle_schema import canonical_bytes
from bundle_schema.models import Verdict
from pins import DEMO, PinSetSource, load_builtin, parse_pin_set
from tests.data.hostile.kit import Files, lines, read_bundle, reseal
from tests.decision_kit import (
    axes,
    built_example,
    built_examples,
    deployment_pins,
    forged,
    json_edit,
)
from tests.paths import DATA
from verify import verify_bundle

DEPLOYMENT_PINS = DATA / "pins" / "gx10-deployment-v5.toml"
MARKER_MEDIA = "application/vnd.evidence-audit.quarantine-marker+json"
QUALIFIED, NOT_QUALIFIED, QUARANTINED = (
    "gx10-full-qualified", "gx10-full-not-qualified", "gx10-spark-quarantined"
)  # fmt: skip


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    return built_examples(root, deployment, (QUALIFIED, NOT_QUALIFIED, QUARANTINED))


def _forge(
    source: Path,
    target: Path,
    pins: PinSetSource,
    edit: Callable[[Files], None] = lambda _: None,
    fields: dict[str, Any] | None = None,
) -> Verdict:
    """``source`` edited, resealed with claims equal to its replay, and verified."""
    return verify_bundle(forged(source, target, pins, edit, fields), pins=pins).verdict


# --- 1, 2. quarantine authority -------------------------------------------------------------------


def test_a_status_alone_cannot_quarantine_a_failed_model(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    before = verify_bundle(examples[NOT_QUALIFIED], pins=deployment).verdict
    assert axes(before) == ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE", False)

    def quarantine(files: Files) -> None:
        changed = {"status": "QUARANTINED", "reason": "upstream quarantine marker"}
        json_edit(files, "components/hermes/result.json", lambda d: d.update(changed))

    verdict = _forge(examples[NOT_QUALIFIED], tmp_path / "bundle", deployment, quarantine)
    assert verdict.result_validity != "QUARANTINED", verdict.reasons
    assert verdict.outcome == "NOT_QUALIFIED" or verdict.integrity.status == "failed"


def test_a_marker_record_for_a_harness_without_markers_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: a marker record at Hermes's place (whose raw outputs hold none) is a finding."""

    def quarantine(files: Files) -> None:
        json_edit(files, "components/hermes/result.json",
                   lambda d: d.update(status="QUARANTINED",
                                      quarantine="components/hermes/quarantine.json"))  # fmt: skip
        marker = {"schema_version": 1, "component": "hermes",
                  "upstream_reason": "flaky evaluator", "provisional_metrics": {}}  # fmt: skip
        files["components/hermes/quarantine.json"] = (canonical_bytes(marker), MARKER_MEDIA)

    verdict = _forge(examples[NOT_QUALIFIED], tmp_path / "bundle", deployment, quarantine)
    assert verdict.integrity.status == "failed" and not verdict.rankable
    assert any(
        f.code == "record_disagrees" and f.entry == "components/hermes/quarantine.json"
        for f in verdict.integrity.findings
    ), verdict.integrity.findings


def test_a_marker_that_names_no_source_is_a_finding(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: the marker record is compared whole with the one re-read from the raw output."""

    def unsourced(files: Files) -> None:
        json_edit(files, "components/coding/quarantine.json", lambda d: d.update(source=None))

    verdict = _forge(examples[QUARANTINED], tmp_path / "bundle", deployment, unsourced)
    assert any(
        f.code == "record_disagrees" and f.entry == "components/coding/quarantine.json"
        for f in verdict.integrity.findings
    ), verdict.integrity.findings


def test_a_raw_marker_counts_when_its_record_is_dropped(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    def drop(files: Files) -> None:
        del files["components/coding/quarantine.json"]
        changed = {"status": "FAILED", "quarantine": None, "reason": "runner crashed"}
        json_edit(files, "components/coding/result.json", lambda d: d.update(changed))

    verdict = _forge(examples[QUARANTINED], tmp_path / "bundle", deployment, drop)
    _, files = read_bundle(tmp_path / "bundle")
    assert "components/coding/raw/quarantine.json" in files  # the upstream's marker, still kept
    assert verdict.result_validity == "QUARANTINED" or any(
        "quarantine" in f.message for f in verdict.integrity.findings
    ), (verdict.result_validity, verdict.reasons)


# --- 3. the claims ------------------------------------------------------------------------------


def _claims_edited(
    source: Path, target: Path, pins: PinSetSource, change: Callable[[dict[str, Any]], None]
) -> Verdict:
    """``source`` resealed with its (matching) claims changed by ``change``."""
    manifest, files = read_bundle(source)
    claims = manifest.claims.model_dump()
    change(claims)
    reseal(target, manifest, dict(files), {"claims": claims})
    return verify_bundle(target, pins=pins).verdict


def test_a_claimed_score_of_no_component_differs(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    def extra(claims: dict[str, Any]) -> None:
        claims["component_scores"] |= {"bfcl": 100.0, "Coding": 100.0}

    verdict = _claims_edited(examples[QUALIFIED], tmp_path / "bundle", deployment, extra)
    assert not verdict.claims.match and not verdict.rankable


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda c: c["component_scores"].pop("coding"), id="coding left out"),
        pytest.param(
            lambda c: c.update(aggregate_score=c["aggregate_score"] + 2e-6), id="aggregate 2e-6 off"
        ),
        pytest.param(lambda c: c.update(rankable=False), id="rankable denied"),
    ],
)
def test_claims_that_differ_from_the_replay_are_caught(
    examples: dict[str, Path],
    deployment: PinSetSource,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
) -> None:
    """Held: a component left out of the claims is a claim of no score, the tolerance is the
    documented 1e-6, and every difference stops the ranking."""
    verdict = _claims_edited(examples[QUALIFIED], tmp_path / "bundle", deployment, change)
    assert not verdict.claims.match and not verdict.rankable


# --- 4. demo-only pin sets ----------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="DECISION (ADR 0016 point 2): a demo-only pin set knows its reference deployment by "
    "the runtime model id and the declared digest, not by the endpoint's replies or identity; "
    "a run naming them is judged (QUALIFIED here) and never ranked, which is all a demo-only "
    "pin set can give (pins/_model.py PinSet.judges; verify/gx10/gates.py _unjudgeable)",
)
def test_the_demo_pins_qualify_only_the_reference_endpoint(tmp_path: Path) -> None:
    demo = load_builtin(DEMO)
    bundle = built_example(QUALIFIED, tmp_path, demo)
    manifest, files = read_bundle(bundle)
    # the evidence is not the reference endpoint's: another engine, and replies it never gives
    assert (manifest.model.runtime_model_id, manifest.model.digest_source) == (MODEL_ID, "declared")
    assert manifest.model.engine_version == "b6500"  # the reference endpoint's build: reference-1
    other = 0
    for exchange in lines(files, "transport/exchanges.jsonl"):
        if exchange["component"] != "coding" or exchange["response_body"] is None:
            continue
        request = json.loads(exchange["request_body"]["data"])
        reply = json.loads(exchange["response_body"]["data"])["choices"][0]["message"]["content"]
        other += reply != " ".join(reply_words(request["messages"]))
    assert other > 0
    verdict = verify_bundle(bundle, pins=demo).verdict
    assert not verdict.rankable
    assert verdict.outcome != "QUALIFIED", verdict.reasons


# --- 5. the pin set the verifier uses -----------------------------------------------------------


def test_pins_given_by_a_shipped_id_are_the_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = load_builtin("gx10-qualification-v5")
    text = DEPLOYMENT_PINS.read_text("utf-8").replace(
        'id = "gx10-deployment-v5"', f'id = "{shipped.id}"', 1
    )
    own = parse_pin_set(text.encode(), "publisher's pins")
    assert own.id == shipped.id and own.digest != shipped.digest
    bundle = built_example(QUALIFIED, tmp_path / "published", own, rankable=True)
    (tmp_path / "published" / shipped.id).write_text(text, "utf-8")  # shipped beside the bundle
    monkeypatch.chdir(tmp_path / "published")
    code = main(["verify", str(bundle), "--pins", shipped.id, "--require", "rankable", "--json"])
    out = capsys.readouterr().out
    judged = json.loads(out)["pin_set"] if out.strip() else None
    assert code != 0 or judged == {"id": shipped.id, "digest": shipped.digest}, judged


# --- 6. model identity --------------------------------------------------------------------------


def test_a_digest_the_endpoint_never_reported_does_not_rank(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    manifest, files = read_bundle(examples[QUALIFIED])
    digest = "sha256:" + "ab" * 32
    assert not any(digest[7:].encode() in data for data, _ in files.values())
    model = manifest.model.model_dump() | {"digest_source": "endpoint", "digest": digest}
    verdict = _forge(examples[QUALIFIED], tmp_path / "bundle", deployment, fields={"model": model})
    identity = next(g for g in verdict.gates if g.id == "model_identity")
    assert identity.status != "pass" and not verdict.rankable, identity.reason


def test_a_shipped_pin_set_given_as_a_file_is_taken(
    tmp_path: Path, examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = load_builtin(DEMO)
    copy = tmp_path / "copy.toml"
    copy.write_bytes((Path(__file__).parents[2] / "pins" / f"{DEMO}.toml").read_bytes())
    assert main(["verify", str(examples[QUALIFIED]), "--pins", str(copy), "--json"]) in (0, 1)
    judged = json.loads(capsys.readouterr().out)["pin_set"]
    assert judged == {"id": shipped.id, "digest": shipped.digest}


def test_a_digest_the_endpoint_reported_passes(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """The safe side of 6: an identity reply that reports the digest (as Ollama's /api/tags
    does) carries it."""
    manifest, files = read_bundle(examples[QUALIFIED])
    digest = manifest.model.digest
    assert any(digest[7:].encode() in data for name, (data, _) in files.items()
               if name == "transport/exchanges.jsonl") is False  # fmt: skip
    model = manifest.model.model_dump() | {"digest_source": "endpoint"}

    def report(files: Files) -> None:
        data, media = files["transport/exchanges.jsonl"]
        records = [json.loads(line) for line in data.splitlines()]
        listing = next(r for r in records if r["method"] == "GET" and r["path"] == "/v1/models")
        body = json.loads(listing["response_body"]["data"])
        body["data"][0]["digest"] = digest[7:]
        listing["response_body"]["data"] = json.dumps(body)
        files["transport/exchanges.jsonl"] = (
            b"".join(canonical_bytes(r) + b"\n" for r in records),
            media,
        )

    verdict = _forge(examples[QUALIFIED], tmp_path / "b", deployment, report, {"model": model})
    identity = next(g for g in verdict.gates if g.id == "model_identity")
    assert identity.status == "pass", identity.reason
    assert identity.evidence[0].startswith("transport exchange "), identity.evidence
