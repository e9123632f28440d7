"""The built-in components against the reference endpoint, judged by the verifier's own gates."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from audit.components import measure_streaming, run_direct_probes
from audit.demo.reference_endpoint import MODEL_ID, Behaviour, reply_words, serve
from audit.identity import resolve_identity
from audit.observer import observe
from bundle_schema.models import Body, GateResult, Gx10Evidence, ReasoningSerialization
from pins import PROBE_CONTRACTS, load_builtin
from pins._model import DirectProbeContract
from tests.engines import Engine, serve_engine
from verify import verify_with_evidence
from verify._consistency import _probe_contracts
from verify._facts import reply_facts
from verify.gx10 import GATES, replay
from verify.gx10._context import Run
from verify.gx10.gates import (
    model_identity,
    network_isolation,
    reasoning_contamination,
    reasoning_serialization,
)
from verify.replies import read_exchange

V5 = load_builtin("gx10-reference-v5")
POLICY = ReasoningSerialization(path="chat_template_kwargs.enable_thinking", value=False)
DIGEST = "sha256:" + "34" * 32


@pytest.fixture(scope="module")
def example(built_examples: dict[str, Path]) -> Gx10Evidence:
    return verify_with_evidence(built_examples["gx10-full-qualified"])[1]


def gates_of_a_run(example: Gx10Evidence, behaviour: Behaviour) -> dict[str, GateResult]:
    """Probe the reference endpoint through the observer, then judge the transport log and the
    probe records with the verifier's gates, in the example run's place."""
    with serve(behaviour) as endpoint, observe(endpoint.url) as observer:
        observer.component = "identity"
        identity = resolve_identity(
            observer.url, model=MODEL_ID, model_digest=DIGEST, weights=None, endpoint=endpoint.url
        )
        probes = run_direct_probes(observer, MODEL_ID, V5.pins.direct_probe, POLICY)
        exchanges = tuple(observer.exchanges())
    assert example.config is not None
    config = example.config.model_copy(
        update={
            "observer": example.config.observer.model_copy(update={"exchanges": len(exchanges)})
        }
    )
    evidence = example.model_copy(
        update={"model": identity, "probes": probes, "transport": exchanges, "config": config}
    )
    run = Run(evidence, V5, V5.pins.profiles["full"].components)
    return {result.id: result for result in (gate.judge(run) for gate in GATES)}


def test_a_well_behaved_endpoint_passes_every_run_level_gate(example: Gx10Evidence) -> None:
    gates = gates_of_a_run(example, Behaviour())
    for gate_id in ("model_identity", "local_endpoint", "direct_response", "tool_call_protocol",
                    "reasoning_contamination", "reasoning_serialization", "transport_evidence",
                    "network_isolation"):  # fmt: skip
        assert gates[gate_id].status == "pass", gates[gate_id].reason


@pytest.mark.parametrize(
    ("behaviour", "gate_id", "status", "reason"),
    [
        (Behaviour(verbose=True), "direct_response", "fail", "output-limit truncation at 1024"),
        (Behaviour(reasoning=True), "reasoning_contamination", "fail", "reasoning content"),
        (Behaviour(served_as="other-7b"), "network_isolation", "infra", "fallback activity"),
    ],
)
def test_a_misbehaving_endpoint_fails_the_gate_the_seed_names(
    example: Gx10Evidence, behaviour: Behaviour, gate_id: str, status: str, reason: str
) -> None:
    gate = gates_of_a_run(example, behaviour)[gate_id]
    assert gate.status == status
    assert reason in gate.reason


def test_streaming_measurement_counts_visible_chunks_only() -> None:
    prompts = ["First question.", "Second question.", "Third question."]
    words = sum(len(reply_words([{"role": "user", "content": p}])) for p in prompts)
    with (
        serve(Behaviour(chunk_delay=0.01, reasoning=True)) as endpoint,
        observe(endpoint.url) as obs,
    ):
        result = measure_streaming(obs, MODEL_ID, prompts, serialization=POLICY)
        exchanges = obs.exchanges()
    assert (result.requests, result.errors, result.visible_chunks) == (3, 0, words)
    assert result.tokens_per_second == pytest.approx(words / result.wall_seconds)
    assert result.itl_mean_seconds is not None
    assert result.itl_mean_seconds >= 0.009
    assert 0 < result.ttft_p50_seconds < result.wall_seconds
    assert [e.component for e in exchanges] == ["performance"] * 3
    assert all(e.chunks for e in exchanges)


def test_a_performance_score_of_zero_names_the_exchanges_that_failed(
    example: Gx10Evidence,
) -> None:
    prompts = ["First question.", "Second question.", "Third question.", "Fourth question."]
    with serve(Behaviour(dies_after=2)) as endpoint, observe(endpoint.url) as obs:
        obs.component = "identity"
        result = measure_streaming(obs, MODEL_ID, prompts, serialization=POLICY)
        exchanges = tuple(obs.exchanges())
    assert (result.requests, result.errors) == (4, 2)
    verdict = replay(example.model_copy(update={"infermark": result, "transport": exchanges}), V5)
    assert verdict.scores.performance == 0.0
    (reason,) = [r for r in verdict.reasons if r.startswith("performance 0: ")]
    assert reason.startswith(
        "performance 0: 2 of 4 streaming requests failed, and any error scores zero: "
        "exchange 2 (200: upstream broke off mid-stream"
    )
    assert "exchange 3 (200: upstream broke off mid-stream" in reason


def test_a_performance_score_the_formula_makes_zero_names_its_measurements(
    example: Gx10Evidence,
) -> None:
    """No error, and a throughput and TTFT that the seed's formula scores 0 each: the reason
    names both figures, so a zero is never unexplained."""
    assert example.infermark is not None
    slow = example.infermark.model_copy(
        update={"errors": 0, "tokens_per_second": 0, "ttft_p50_seconds": 12.5}
    )
    verdict = replay(example.model_copy(update={"infermark": slow}), V5)
    assert verdict.scores.performance == 0.0
    (reason,) = [r for r in verdict.reasons if r.startswith("performance 0: ")]
    assert reason == (
        "performance 0: 0 visible chunks/s scores 0 for throughput (10 a chunk/s, at most 100) "
        "and a TTFT p50 of 12.5 s scores 0 (100 less 10 a second over 1 s)"
    )
    unmeasured = slow.model_copy(update={"ttft_p50_seconds": None})
    verdict = replay(example.model_copy(update={"infermark": unmeasured}), V5)
    assert verdict.scores.performance == 0.0  # no TTFT measured: no TTFT points (ADR 0049)
    (reason,) = [r for r in verdict.reasons if r.startswith("performance 0: ")]
    assert "and no TTFT (no request streamed a visible chunk) scores 0" in reason


def test_a_performance_score_that_is_not_zero_needs_no_explanation(example: Gx10Evidence) -> None:
    verdict = replay(example, V5)
    assert not [r for r in verdict.reasons if r.startswith("performance 0")]


# --- reasoning is found by the fields and tags that carry it, never by a word of the content ---

WORDY = "My reasoning: reasoning_content, thinking and reasoning_details are words here."


@pytest.mark.parametrize(
    ("engine", "contaminated"),
    [
        (Engine(listed=MODEL_ID, content=WORDY), False),
        (Engine(listed=MODEL_ID, content=WORDY, reasoning_content=""), False),
        (Engine(listed=MODEL_ID, content=WORDY, reasoning_content="Let me think."), True),
        (Engine(listed=MODEL_ID, content="<think>hm</think> READY"), True),
    ],
    ids=["the-word", "an-empty-field", "a-reasoning-field", "a-think-tag"],
)
def test_reasoning_is_read_from_its_fields_and_tags_streamed_or_not(
    example: Gx10Evidence, engine: Engine, contaminated: bool
) -> None:
    with serve_engine(engine) as server, observe(server.url) as obs:
        run_direct_probes(obs, MODEL_ID, V5.pins.direct_probe, POLICY)
        streaming = measure_streaming(obs, MODEL_ID, ["Say it."], serialization=POLICY)
        exchanges = tuple(obs.exchanges())
    plain, _tool, streamed = exchanges
    assert streamed.chunks
    assert plain.response_body is not None
    words = len(engine.content.split(" "))
    assert streaming.visible_chunks == words  # the runner's streaming check: content chunks
    for exchange in (plain, streamed):  # the verifier's reader, shared with the runner
        reply = read_exchange(exchange)
        assert reply.contaminated is contaminated, exchange.id
        assert reply_facts(exchange).contaminated is contaminated
    for exchange in (plain, streamed):
        evidence = example.model_copy(update={"transport": (exchange,)})
        gate = reasoning_contamination(Run(evidence, V5, V5.pins.profiles["full"].components))
        assert gate.status == ("fail" if contaminated else "pass"), gate.reason


def test_a_refused_completion_request_fails_serialization_with_the_refusal(
    example: Gx10Evidence,
) -> None:
    with serve_engine(Engine(listed=MODEL_ID)) as server, observe(server.url, policy=POLICY) as obs:
        obs.component = "probes"
        request = urllib.request.Request(  # noqa: S310 - loopback
            obs.url + "/v1/responses", data=b"[1]", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310 - loopback
        refused.value.close()
        exchanges = tuple(obs.wait_for(1))
    assert refused.value.code == 400
    evidence = example.model_copy(update={"transport": exchanges})
    gate = reasoning_serialization(Run(evidence, V5, V5.pins.profiles["full"].components))
    assert gate.status == "infra"
    assert gate.reason.startswith(
        "exchange 0 does not carry chat_template_kwargs.enable_thinking = false (refused by the "
        "observer: a completion request (/v1/responses) whose body is not a JSON object"
    )


# --- probes with pinned sampling ------------------------------------------------------------------

V2 = DirectProbeContract(contract="gx10-direct-probe-v2", total_completion_ceiling_tokens=1024)


def _probed(contract: DirectProbeContract, example: Gx10Evidence) -> tuple[Gx10Evidence, Engine]:
    engine = Engine(listed=MODEL_ID)
    with serve_engine(engine) as server, observe(server.url, policy=POLICY) as obs:
        probes = run_direct_probes(obs, MODEL_ID, contract, POLICY)
        exchanges = tuple(obs.exchanges())
    return example.model_copy(update={"probes": probes, "transport": exchanges}), engine


def test_probes_are_sent_with_the_sampling_their_contract_pins(example: Gx10Evidence) -> None:
    assert PROBE_CONTRACTS["gx10-direct-probe-v2"].sampling == {"temperature": 0, "seed": 42}
    evidence, engine = _probed(V2, example)
    assert [(b["temperature"], b["seed"]) for b in engine.seen] == [(0, 42), (0, 42)]
    assert _probe_contracts(evidence) == []


def test_a_probe_request_without_the_pinned_sampling_is_a_finding(example: Gx10Evidence) -> None:
    evidence, engine = _probed(V5.pins.direct_probe, example)  # v1: pins no sampling
    assert all("temperature" not in b and "seed" not in b for b in engine.seen)
    assert _probe_contracts(evidence) == []
    probes = tuple(p.model_copy(update={"contract": V2.contract}) for p in evidence.probes)
    relabelled = evidence.model_copy(update={"probes": probes})
    messages = [f.message for f in _probe_contracts(relabelled)]
    assert messages == [
        "evidence 'probes/direct-response.json': exchange 0 asked with no temperature, not the "
        "contract's pinned temperature 0",
        "evidence 'probes/direct-response.json': exchange 0 asked with no seed, not the "
        "contract's pinned seed 42",
        "evidence 'probes/tool-call.json': exchange 1 asked with no temperature, not the "
        "contract's pinned temperature 0",
        "evidence 'probes/tool-call.json': exchange 1 asked with no seed, not the contract's "
        "pinned seed 42",
    ]


@pytest.mark.parametrize("value", [0.7, "0", True, None])
def test_a_probe_request_with_other_sampling_is_a_finding(
    example: Gx10Evidence, value: object
) -> None:
    evidence, _ = _probed(V2, example)
    exchange = evidence.transport[0] if evidence.transport else None
    assert exchange is not None and exchange.request_body is not None
    body = json.loads(exchange.request_body.data) | {"temperature": value}
    changed = exchange.model_copy(
        update={"request_body": Body(encoding="utf-8", data=json.dumps(body))}
    )
    transport = (changed, *(evidence.transport or ())[1:])
    messages = [
        f.message for f in _probe_contracts(evidence.model_copy(update={"transport": transport}))
    ]
    assert messages == [
        f"evidence 'probes/direct-response.json': exchange 0 asked with temperature "
        f"{json.dumps(value)}, not the contract's pinned temperature 0"
    ]


@pytest.mark.parametrize(
    "engine",
    [
        Engine(listed="/models/tiny.gguf", props={"build_info": "b6500"}),  # replies: the path
        Engine(listed="/models/tiny.gguf", echoes=True),  # llama-cpp-python: echoes the request
    ],
    ids=["llama-server", "llama-cpp-python"],
)
def test_a_model_listed_by_its_path_is_one_model_with_its_file_name(
    example: Gx10Evidence, engine: Engine
) -> None:
    with serve_engine(engine) as server, observe(server.url, policy=POLICY) as obs:
        obs.component = "identity"
        identity = resolve_identity(
            obs.url, model=None, model_digest=DIGEST, weights=None, endpoint=server.url
        )
        probes = run_direct_probes(obs, identity.runtime_model_id, V5.pins.direct_probe, POLICY)
        exchanges = tuple(obs.exchanges())
    assert identity.runtime_model_id == "tiny.gguf"
    assert [b["model"] for b in engine.seen] == ["tiny.gguf", "tiny.gguf"]
    evidence = example.model_copy(
        update={"model": identity, "probes": probes, "transport": exchanges}
    )
    run = Run(evidence, V5, V5.pins.profiles["full"].components)
    for gate in (model_identity, network_isolation):
        result = gate(run)
        assert result.status == "pass", result.reason
