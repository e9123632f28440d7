"""Fallback detection that does not trust the reply's ``model`` alone (issue 17, build point 4;
ADR 0014): engines such as llama-cpp-python echo whatever ``model`` the client asked for, so a
gateway that fails over to another engine is invisible in ``model``. Completion replies of one
run that carry more than one distinct ``system_fingerprint`` are fallback activity
(``network_isolation``, infrastructure); one fingerprint throughout, or none, passes.

Real HTTP servers on 127.0.0.1 (tests/engines.py) through the real observer, and the committed
full example's evidence edited and resealed, judged on both the bounded and the full path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.components import measure_streaming, run_direct_probes
from audit.identity import resolve_identity
from audit.observer import observe
from bundle_schema.models import GateResult, Gx10Evidence, ReasoningSerialization
from pins import load_builtin
from tests.data.hostile.kit import lines, put_lines, read_bundle, reseal
from tests.engines import Engine, FailingOver, serve_engine
from verify import verdict_json, verify_bundle, verify_with_evidence
from verify._facts import reply_facts, slim_exchange
from verify.gx10 import GATES
from verify.gx10._context import Run
from verify.replies import FINGERPRINTS_KEPT, is_completion, read_exchange

V5 = load_builtin("gx10-reference-v5")
POLICY = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
DIGEST = "sha256:" + "34" * 32
WEIGHTS = "/srv/models/tiny-q4_1.gguf"
BUILD = "b6500-1a2b3c4"
"""llama.cpp's ``system_fingerprint``: its build (``build_info``), the same on every reply."""
TRANSPORT = "transport/exchanges.jsonl"


@pytest.fixture(scope="module")
def example(built_examples: dict[str, Path]) -> Gx10Evidence:
    return verify_with_evidence(built_examples["gx10-full-qualified"])[1]


def observed_run(
    example: Gx10Evidence, engine: Engine | FailingOver
) -> tuple[dict[str, GateResult], Gx10Evidence]:
    """Resolve the identity, run both direct probes (whole replies) and two streamed requests
    through the observer against ``engine``, and judge the transport log in the example run's
    place with the verifier's gates."""
    with serve_engine(engine) as server, observe(server.url, policy=POLICY) as obs:
        obs.component = "identity"
        identity = resolve_identity(
            obs.url, model=None, model_digest=DIGEST, weights=None, endpoint=server.url
        )
        probes = run_direct_probes(obs, identity.runtime_model_id, V5.pins.direct_probe, POLICY)
        measure_streaming(
            obs, identity.runtime_model_id, ["Say it.", "Again."], serialization=POLICY
        )
        exchanges = tuple(obs.exchanges())
    evidence = example.model_copy(
        update={"model": identity, "probes": probes, "transport": exchanges}
    )
    run = Run(evidence, V5, V5.pins.profiles["full"].components)
    return {result.id: result for result in (gate.judge(run) for gate in GATES)}, evidence


# --- real servers through the real observer ---------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "named"),
    [
        (Engine(listed=WEIGHTS, props={"build_info": BUILD}, fingerprint=BUILD), BUILD),
        (Engine(listed=WEIGHTS, echoes=True, fingerprint=BUILD), BUILD),
        (Engine(listed=WEIGHTS, echoes=True), None),  # llama-cpp-python: no fingerprint
    ],
    ids=["llama-server", "echoing-with-fingerprint", "llama-cpp-python"],
)
def test_an_honest_single_engine_run_passes(
    example: Gx10Evidence, engine: Engine, named: str | None
) -> None:
    gates, evidence = observed_run(example, engine)
    assert gates["model_identity"].status == "pass", gates["model_identity"].reason
    isolation = gates["network_isolation"]
    assert isolation.status == "pass", isolation.reason
    if named is None:
        assert "fingerprint" not in isolation.reason
    else:
        assert isolation.reason.endswith(
            f"; every fingerprinted completion reply carries {named!r}"
        )
    completions = [e for e in evidence.transport or () if is_completion(e)]
    assert len(completions) == 4
    assert all(e.chunks for e in completions[2:])  # streamed: the fingerprint of every chunk
    for exchange in completions:
        assert reply_facts(exchange).fingerprints == ((named,) if named else ())


def test_a_gateway_failing_over_to_another_engine_that_echoes_the_model_is_fallback(
    example: Gx10Evidence,
) -> None:
    gateway = FailingOver(
        primary=Engine(listed=WEIGHTS, echoes=True, fingerprint=BUILD),
        fallback=Engine(listed="qwen2.5-72b", echoes=True, fingerprint="fp_44709d6fcb"),
        after=2,  # the probes from the primary, the streamed requests from the fallback
    )
    gates, evidence = observed_run(example, gateway)
    assert gates["model_identity"].status == "pass"
    completions = [e for e in evidence.transport or () if is_completion(e)]
    assert {m for e in completions for m in reply_facts(e).models} == {"tiny-q4_1.gguf"}
    isolation = gates["network_isolation"]
    assert isolation.status == "infra"
    ids = [e.id for e in completions]
    assert isolation.reason == (
        f"completion replies carry more than one system_fingerprint: exchange {ids[0]}'s "
        f"'{BUILD}', exchange {ids[2]}'s 'fp_44709d6fcb': replies of another engine than the "
        "one the run began with (model substitution: fallback activity)"
    )
    assert isolation.evidence == (f"transport exchange {ids[0]}", f"transport exchange {ids[2]}")


def test_a_fallback_that_names_no_fingerprint_is_no_evidence_either_way(
    example: Gx10Evidence,
) -> None:
    """The limit of the signal, kept visible: an echoing fallback that sends no fingerprint is
    indistinguishable from the primary by the transport log (ADR 0014)."""
    gateway = FailingOver(
        primary=Engine(listed=WEIGHTS, echoes=True, fingerprint=BUILD),
        fallback=Engine(listed="qwen2.5-72b", echoes=True),
        after=2,
    )
    gates, _ = observed_run(example, gateway)
    assert gates["network_isolation"].status == "pass"


def test_a_fallback_that_names_its_own_model_is_found_by_the_model_first(
    example: Gx10Evidence,
) -> None:
    gateway = FailingOver(
        primary=Engine(listed=WEIGHTS, fingerprint=BUILD, answers_as="tiny-q4_1.gguf"),
        fallback=Engine(listed="qwen2.5-72b", fingerprint="fp_44709d6fcb"),
        after=2,
    )
    gates, evidence = observed_run(example, gateway)
    isolation = gates["network_isolation"]
    streamed = [e.id for e in evidence.transport or () if is_completion(e)][2]
    assert isolation.status == "infra"
    assert isolation.reason == (
        f"exchange {streamed} was answered by 'qwen2.5-72b', not 'tiny-q4_1.gguf': fallback "
        "activity"
    )


# --- the reader: bounded, and the same on the slim exchange -------------------------------------


def _stream_exchange(example: Gx10Evidence, fingerprints: list[Any]) -> Any:
    base = next(e for e in example.transport or () if e.chunks)
    events = [
        "data: " + json.dumps({"model": "m", "system_fingerprint": f, "choices": [
            {"index": 0, "delta": {"content": "x"}}]}) + "\n\n"
        for f in fingerprints
    ]  # fmt: skip
    chunks = [{"t": 0.1 * (i + 1), "data": e} for i, e in enumerate(events)]
    return type(base).model_validate(base.model_dump(mode="json") | {"chunks": chunks})


def test_a_reply_keeps_a_few_distinct_fingerprints_and_counts_the_rest(
    example: Gx10Evidence,
) -> None:
    values = ["a", "a", None, "b", 7, "c", "d", "e", "b"]
    exchange = _stream_exchange(example, values)
    reply = read_exchange(exchange)
    assert reply.fingerprints == ("a", "b", "int 7")[:FINGERPRINTS_KEPT]
    assert reply.more_fingerprints == 3  # c, d, e
    assert reply_facts(slim_exchange(exchange, example.config)) == reply_facts(exchange)


def test_null_fingerprints_are_none_and_long_ones_stay_distinct(example: Gx10Evidence) -> None:
    assert read_exchange(_stream_exchange(example, [None, None])).fingerprints == ()
    long_a, long_b = "f" * 300 + "a", "f" * 300 + "b"
    named = read_exchange(_stream_exchange(example, [long_a, long_b])).fingerprints
    assert len(named) == 2 and named[0] != named[1]
    assert all(len(n) <= 256 for n in named)


# --- a resealed example: the verdict, both paths, and audit show --------------------------------


def _with_fingerprints(source: Path, target: Path, by_id: dict[int, str]) -> Path:
    """The example bundle with ``system_fingerprint`` set in the replies of the exchanges
    given (a body's top level, every streamed event), resealed."""
    manifest, files = read_bundle(source)
    exchanges = lines(files, TRANSPORT)
    for exchange in exchanges:
        fingerprint = by_id.get(exchange["id"])
        if fingerprint is None:
            continue
        if exchange["response_body"] is not None:
            reply = json.loads(exchange["response_body"]["data"])
            exchange["response_body"]["data"] = json.dumps(
                reply | {"system_fingerprint": fingerprint}
            )
        for chunk in exchange["chunks"]:
            chunk["data"] = re.sub(
                r"data: \{", f'data: {{"system_fingerprint":"{fingerprint}",', chunk["data"]
            )
    put_lines(files, TRANSPORT, exchanges)
    reseal(target, manifest, files, {})
    return target


def _completions(path: Path) -> list[tuple[int, bool]]:
    evidence = verify_with_evidence(path)[1]
    return [(e.id, bool(e.chunks)) for e in evidence.transport or () if is_completion(e)]


def _both_paths(path: Path) -> bytes:
    bounded = verdict_json(verify_bundle(path).verdict)
    assert bounded == verdict_json(verify_with_evidence(path)[0])
    return bounded


def test_one_fingerprint_throughout_keeps_the_example_qualified(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    source = built_examples["gx10-full-qualified"]
    completions = _completions(source)
    assert any(streamed for _, streamed in completions)
    path = _with_fingerprints(source, tmp_path / "b", {i: BUILD for i, _ in completions})
    verdict = json.loads(_both_paths(path))
    assert verdict["outcome"] == "QUALIFIED"
    isolation = next(g for g in verdict["gates"] if g["id"] == "network_isolation")
    assert isolation["status"] == "pass"
    assert f"every fingerprinted completion reply carries '{BUILD}'" in isolation["reason"]


def test_a_changed_fingerprint_is_fallback_on_both_paths_and_in_audit_show(
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = built_examples["gx10-full-qualified"]
    completions = _completions(source)
    streamed = next(i for i, s in completions if s)
    fingerprints = {i: BUILD for i, _ in completions} | {streamed: "fp_44709d6fcb"}
    path = _with_fingerprints(source, tmp_path / "b", fingerprints)
    verdict = json.loads(_both_paths(path))
    assert (verdict["outcome"], verdict["result_validity"]) == ("INFRA_ERROR", "INFRA_FAILURE")
    isolation = next(g for g in verdict["gates"] if g["id"] == "network_isolation")
    first = completions[0][0]
    assert isolation["status"] == "infra"
    changed = f"exchange {first}'s '{BUILD}', exchange {streamed}'s 'fp_44709d6fcb'"
    assert changed in isolation["reason"]

    import verify._parallel  # noqa: PLC0415 - the helper processes decide the same
    import verify._shell  # noqa: PLC0415

    monkeypatch.setattr(verify._shell, "PARALLEL_FROM", 0)
    monkeypatch.setattr(verify._parallel, "BATCH_LINES", 1)
    assert verdict_json(verify_bundle(path, workers=2).verdict) == verdict_json(
        verify_bundle(path).verdict
    )

    # the resealed bundle still claims QUALIFIED: the check fails, as `audit verify`'s does
    assert main(["show", str(path), "--json"]) == 1
    shown = capsys.readouterr()
    assert shown.err.startswith("audit show: the runner's claims differ from the replay")
    report = json.loads(shown.out)
    forensic = report["forensic"]
    assert forensic["failed_part"] == "substitution"  # not isolation: no socket left the sandbox
    assert forensic["summary"].startswith(
        "INFRA_FAILURE: model substitution (fallback activity: completion replies carry more "
        "than one system_fingerprint), not a socket outside the sandbox: 1 exchange answered "
        f"by 'fp_44709d6fcb', not '{BUILD}'"
    )
    assert forensic["substitution"] == {
        "by": "fingerprint",
        "exchanges": {"count": 1, "first": [streamed]},
        "answered_by": "fp_44709d6fcb",
        "expected": BUILD,
    }
    assert forensic["first_evidence"].startswith("model substitution at ")
    assert f"exchange {streamed}'s 'fp_44709d6fcb'" in forensic["first_evidence"]
    assert report["transport"]["suspected_fallbacks"] == [streamed]


def test_two_fingerprints_in_one_stream_are_fallback(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    source = built_examples["gx10-full-qualified"]
    streamed = next(i for i, s in _completions(source) if s)
    path = _with_fingerprints(source, tmp_path / "b", {streamed: BUILD})
    manifest, files = read_bundle(path)
    exchanges = lines(files, TRANSPORT)
    stream = next(e for e in exchanges if e["id"] == streamed)
    stream["chunks"][-1]["data"] = stream["chunks"][-1]["data"].replace(BUILD, "b6501-0000000")
    put_lines(files, TRANSPORT, exchanges)
    reseal(tmp_path / "c", manifest, files, {})
    verdict = json.loads(_both_paths(tmp_path / "c"))
    isolation = next(g for g in verdict["gates"] if g["id"] == "network_isolation")
    assert isolation["status"] == "infra"
    assert isolation["reason"].startswith(
        f"exchange {streamed}'s reply carries system_fingerprints '{BUILD}', 'b6501-0000000'"
    )
