"""The gx10-qualification replay (seed 000): one test per rule, each named after it.

The base evidence is the complete full-profile example (QUALIFIED), read from its built bundle;
each case changes one thing and checks the decision and the class of the failure.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.errors import InvalidInput
from bundle_schema.models import Gx10Evidence, Gx10Replay, PinSetRef
from pins import (
    PinSetSource,
    load_builtin,
    parse_pin_set,
    pin_set_model,
    pin_set_source,
)
from tests.conftest import DEPLOYMENT_PINS
from tests.factories import write_small_bundle
from verify import verify_with_evidence
from verify.gx10 import GX10_VERSION, path_allowed, performance_score, replay
from verify.gx10.hermes import _wildcard

V5 = load_builtin("gx10-reference-v5")
V4 = load_builtin("gx10-qualification-v4")
REAL = load_builtin("gx10-qualification-v5")
DEPLOYMENT = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
"""The judging pins of the rules' tests: a deployment's own (not demo-only) pin set, under
which the examples are recorded by the ``ranked_examples`` fixture."""
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def evidence(ranked_examples: dict[str, Path]) -> dict[str, Gx10Evidence]:
    return {
        name: verify_with_evidence(path, pins=DEPLOYMENT)[1]
        for name, path in ranked_examples.items()
    }


@pytest.fixture(scope="module")
def demo_evidence(built_examples: dict[str, Path]) -> dict[str, Gx10Evidence]:
    return {name: verify_with_evidence(path)[1] for name, path in built_examples.items()}


@pytest.fixture
def full(evidence: dict[str, Gx10Evidence]) -> dict[str, Any]:
    return copy.deepcopy(evidence["gx10-full-qualified"].model_dump(mode="json"))


def judged(document: dict[str, Any], pins: PinSetSource = DEPLOYMENT) -> Gx10Replay:
    return replay(Gx10Evidence.model_validate(document), pins)


def gate(result: Gx10Replay, gate_id: str) -> str:
    return next(g.status for g in result.gates if g.id == gate_id)


def body(exchange: dict[str, Any], which: str) -> dict[str, Any]:
    return json.loads(exchange[which]["data"])


def set_body(exchange: dict[str, Any], which: str, value: dict[str, Any]) -> None:
    exchange[which]["data"] = json.dumps(value)


def exchange(document: dict[str, Any], exchange_id: int) -> dict[str, Any]:
    return next(e for e in document["transport"] if e["id"] == exchange_id)


def probe_reply(document: dict[str, Any], message: dict[str, Any], finish: str = "stop") -> None:
    """Make the direct-response probe's exchange answer ``message``; keep the probe record in
    step with it (as an honest runner would)."""
    ex = exchange(document, 1)
    response = body(ex, "response_body")
    response["choices"][0]["message"] = message
    response["choices"][0]["finish_reason"] = finish
    set_body(ex, "response_body", response)
    probe = next(p for p in document["probes"] if p["kind"] == "response")
    probe["got"] = message.get("content")
    probe["finish_reason"] = finish


def task(document: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return document["hermes_tasks"][index]


# --- the base case ----------------------------------------------------------------------------


def test_qualified_when_every_gate_and_threshold_passes(full: dict[str, Any]) -> None:
    result = judged(full)
    assert (result.outcome, result.result_validity, result.profile_decision) == (
        "QUALIFIED", "VALID", "MEETS_PROFILE"
    )  # fmt: skip
    assert all(g.status == "pass" for g in result.gates)
    assert (result.rankable, result.rank_group, result.claims.match) == (True, "primary", True)
    assert result.scores.aggregate == pytest.approx(87.835)


def test_the_deployment_score_is_the_weighted_mean_of_executed_components(
    full: dict[str, Any],
) -> None:
    scores = judged(full).scores
    by_hand = (78.4 * 40 + 100 * 30 + 82.5 * 15 + 91 * 10 + 100 * 5) / 100
    assert scores.aggregate == pytest.approx(by_hand, abs=1e-12)
    assert scores.executed_weight == 100


# --- every hard gate, with its failure class --------------------------------------------------


def _served(document: dict[str, Any], model_id: str) -> None:
    ex = exchange(document, 0)
    set_body(ex, "response_body", {"object": "list", "data": [{"id": model_id}]})


def _no_model_list(document: dict[str, Any]) -> None:
    document["transport"] = [e for e in document["transport"] if e["id"] != 0]
    document["config"]["observer"]["exchanges"] -= 1


def _redirect(document: dict[str, Any]) -> None:
    exchange(document, 3)["redirect"] = "http://10.0.0.5/v1/chat/completions"


def _truncated(document: dict[str, Any]) -> None:
    probe_reply(document, {"role": "assistant", "content": "REA"}, finish="length")


def _probe_ceiling(document: dict[str, Any]) -> None:
    ex = exchange(document, 1)
    request = body(ex, "request_body")
    request["max_tokens"] = 4096
    set_body(ex, "request_body", request)


def _probe_disagrees(document: dict[str, Any]) -> None:
    next(p for p in document["probes"] if p["kind"] == "response")["got"] = "READY!"


def _wrong_tool_call(document: dict[str, Any]) -> None:
    ex = exchange(document, 2)
    response = body(ex, "response_body")
    call = response["choices"][0]["message"]["tool_calls"][0]["function"]
    call["arguments"] = json.dumps({"city": "Bergen"})
    set_body(ex, "response_body", response)
    next(p for p in document["probes"] if p["kind"] == "tool_call")["got"] = None


def _reasoning(document: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    response = body(ex, "response_body")
    response["choices"][0]["message"]["reasoning_content"] = "Let me think..."
    set_body(ex, "response_body", response)


def _unserialized(document: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    request = body(ex, "request_body")
    del request["chat_template_kwargs"]
    set_body(ex, "request_body", request)


def _fallback(document: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    response = body(ex, "response_body")
    response["model"] = "gpt-4o-mini"  # read from the reply, not from the observer's note
    set_body(ex, "response_body", response)
    ex["response_model"] = "gpt-4o-mini"


def _fallback_in_stream(document: dict[str, Any]) -> None:
    ex = exchange(document, 4)
    ex["chunks"][1]["data"] = ex["chunks"][1]["data"].replace(
        '"model":"reference-model-q8_0"', '"model":"gpt-4o-mini"'
    )


def _split_event(document: dict[str, Any], delta: dict[str, Any], at: int) -> None:
    """Put a streamed event carrying ``delta`` into the performance stream, split across two
    chunks ``at`` characters in."""
    chunks = exchange(document, 4)["chunks"]
    event = "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"
    chunks[1]["data"] += event[:at]
    chunks[2]["data"] = event[at:] + chunks[2]["data"]


def _legacy_completion(document: dict[str, Any], path: str, text: str) -> None:
    ex = exchange(document, 3)
    ex["path"] = path
    response = body(ex, "response_body")
    response["choices"] = [{"index": 0, "text": text, "finish_reason": "stop"}]
    set_body(ex, "response_body", response)


MODEL = "reference-model-q8_0"


def _message(document: dict[str, Any], message: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    response = body(ex, "response_body")
    response["choices"][0]["message"] = message
    set_body(ex, "response_body", response)


def _reply_model(document: dict[str, Any], model: Any) -> None:
    ex = exchange(document, 3)
    response = body(ex, "response_body")
    response["model"] = model
    set_body(ex, "response_body", response)


def _fingerprint(document: dict[str, Any], exchange_id: int, value: Any) -> None:
    """Give an exchange's reply a ``system_fingerprint``: its body's, or every streamed
    event's."""
    ex = exchange(document, exchange_id)
    if ex["response_body"] is not None:
        response = body(ex, "response_body")
        set_body(ex, "response_body", response | {"system_fingerprint": value})
    for chunk in ex["chunks"]:
        chunk["data"] = chunk["data"].replace(
            "data: {", "data: {" + json.dumps({"system_fingerprint": value})[1:-1] + ",", 1
        )


def _fingerprints(document: dict[str, Any], values: dict[int, Any]) -> None:
    for exchange_id, value in values.items():
        _fingerprint(document, exchange_id, value)


def _ollama(document: dict[str, Any], path: str, reply: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    ex["path"] = path
    set_body(ex, "response_body", reply)


def _ollama_stream(document: dict[str, Any], line: dict[str, Any]) -> None:
    ex = exchange(document, 4)
    ex["path"] = "/api/chat"
    ex["chunks"][0]["data"] = json.dumps(line) + "\n"


def _base64_reasoning(document: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    response = body(ex, "response_body")
    response["choices"][0]["message"]["reasoning_content"] = "Let me think @"
    data = json.dumps(response).encode().replace(b"@", b"\xff")  # not UTF-8: kept as base64
    ex["response_body"] = {"encoding": "base64", "data": base64.b64encode(data).decode()}


def _conflicting_switch(document: dict[str, Any]) -> None:
    ex = exchange(document, 3)
    request = body(ex, "request_body")
    request["reasoning_effort"] = "high"
    set_body(ex, "request_body", request)


def _retried_probe(document: dict[str, Any]) -> None:
    retry = copy.deepcopy(exchange(document, 1)) | {"id": 99}
    document["transport"].append(retry)
    document["config"]["observer"]["exchanges"] += 1


def _non_local(document: dict[str, Any]) -> None:
    document["socket_ledger"][1]["address"] = "104.18.32.47"


CASES: list[tuple[str, Edit, str, str]] = [
    # (rule, edit, gate, status)
    ("identity_not_served_is_infra", lambda d: _served(d, "other-model"), "model_identity",
     "infra"),
    ("identity_unresolved_is_infra", _no_model_list, "model_identity", "infra"),
    ("non_loopback_endpoint_is_infra",
     lambda d: d["model"].update(endpoint="http://gpu-box.lan:8080/v1"), "local_endpoint", "infra"),
    ("a_redirect_is_infra", _redirect, "local_endpoint", "infra"),
    ("an_empty_direct_response_is_the_models",
     lambda d: probe_reply(d, {"role": "assistant", "content": ""}), "direct_response", "fail"),
    ("output_limit_truncation_is_the_models", _truncated, "direct_response", "fail"),
    ("a_wrong_direct_answer_is_the_models",
     lambda d: probe_reply(d, {"role": "assistant", "content": "OK"}), "direct_response", "fail"),
    ("an_endpoint_error_is_the_deployments",
     lambda d: exchange(d, 1).update(status=500), "direct_response", "fail"),
    ("a_probe_without_its_exchange_is_infra",
     lambda d: d["probes"][0].update(exchange=99), "direct_response", "infra"),
    ("a_probe_off_the_uniform_ceiling_is_infra", _probe_ceiling, "direct_response", "infra"),
    ("a_probe_record_that_disagrees_is_infra", _probe_disagrees, "direct_response", "infra"),
    ("another_probe_contract_is_infra",
     lambda d: d["probes"][0].update(contract="gx10-direct-probe-v0"), "direct_response", "infra"),
    ("a_wrong_tool_call_is_the_models", _wrong_tool_call, "tool_call_protocol", "fail"),
    ("a_moved_checkout_is_infra",
     lambda d: d["upstreams"][0].update(commit="0" * 40), "upstream_checkout", "infra"),
    ("a_dirty_checkout_is_infra",
     lambda d: d["upstreams"][1].update(clean=False), "upstream_checkout", "infra"),
    ("an_incompatible_output_is_infra",
     lambda d: d.update(benchlocal=None), "upstream_checkout", "infra"),
    ("a_failed_golden_gate_is_infra",
     lambda d: d["spark_quality"].update(golden_gate="FAIL"), "upstream_integrity", "infra"),
    ("sampling_contamination_is_the_deployments",
     lambda d: d["spark_quality"].update(sampling_contamination=True),
     "sampling_contamination", "fail"),
    ("reasoning_with_the_policy_off_is_the_deployments", _reasoning,
     "reasoning_contamination", "fail"),
    ("an_unserialized_policy_is_infra", _unserialized, "reasoning_serialization", "infra"),
    ("no_transport_log_is_infra", lambda d: d.update(transport=None), "transport_evidence",
     "infra"),
    ("a_failed_observer_is_infra",
     lambda d: d["config"]["observer"].update(status="failed", reason="proxy crashed"),
     "transport_evidence", "infra"),
    ("a_truncated_transport_log_is_infra",
     lambda d: d["config"]["observer"].update(exchanges=6), "transport_evidence", "infra"),
    ("a_task_naming_a_missing_exchange_is_infra",
     lambda d: task(d).update(exchanges=[42]), "transport_evidence", "infra"),
    ("an_orphaned_probe_exchange_is_infra",
     lambda d: exchange(d, 3).update(component="probes"), "transport_evidence", "infra"),
    ("an_exchange_claimed_twice_is_infra",
     lambda d: task(d).update(exchanges=[1]), "transport_evidence", "infra"),
    ("a_non_local_socket_is_infra", _non_local, "network_isolation", "infra"),
    ("fallback_activity_is_infra", _fallback, "network_isolation", "infra"),
    ("fallback_named_inside_a_stream_is_infra", _fallback_in_stream, "network_isolation",
     "infra"),
    ("reasoning_split_across_chunks_is_found",
     lambda d: _split_event(d, {"reasoning_content": "hmm"}, 40), "reasoning_contamination",
     "fail"),
    ("a_think_tag_split_across_chunks_is_found",
     lambda d: _split_event(d, {"content": "<think>plan</think>"}, 52),
     "reasoning_contamination", "fail"),
    ("reasoning_in_a_legacy_completion_is_found",
     lambda d: _legacy_completion(d, "/v1/completions", "<think>x</think>ok"),
     "reasoning_contamination", "fail"),
    ("reasoning_behind_a_query_string_is_found",
     lambda d: _legacy_completion(d, "/v1/chat/completions?trace=1", "<think>x</think>"),
     "reasoning_contamination", "fail"),
    ("reasoning_in_a_base64_body_is_found", _base64_reasoning, "reasoning_contamination",
     "fail"),
    ("thinking_content_parts_are_found",
     lambda d: _message(d, {"role": "assistant", "content": [
         {"type": "thinking", "thinking": "plan"}, {"type": "text", "text": "ok"}]}),
     "reasoning_contamination", "fail"),
    ("reasoning_details_are_found",
     lambda d: _message(d, {"role": "assistant", "content": "ok",
                            "reasoning_details": [{"type": "reasoning.text", "text": "plan"}]}),
     "reasoning_contamination", "fail"),
    ("ollama_chat_thinking_is_found",
     lambda d: _ollama(d, "/api/chat", {"model": MODEL, "message": {
         "role": "assistant", "content": "ok", "thinking": "plan"}, "done": True}),
     "reasoning_contamination", "fail"),
    ("ollama_generate_thinking_is_found",
     lambda d: _ollama(d, "/api/generate", {"model": MODEL, "response": "ok",
                                            "thinking": "plan", "done": True}),
     "reasoning_contamination", "fail"),
    ("an_ollama_stream_of_json_lines_is_read",
     lambda d: _ollama_stream(d, {"model": MODEL, "message": {"role": "assistant",
                                                             "thinking": "plan"}}),
     "reasoning_contamination", "fail"),
    ("a_summary_only_reasoning_details_list_is_found",
     lambda d: _message(d, {"role": "assistant", "content": "ok", "reasoning_details": [
         {"type": "reasoning.summary", "summary": "plan"}]}),
     "reasoning_contamination", "fail"),
    ("reasoning_as_a_list_of_strings_is_found",
     lambda d: _message(d, {"role": "assistant", "content": "ok",
                            "reasoning_content": ["plan"]}),
     "reasoning_contamination", "fail"),
    ("generated_text_on_a_path_that_is_no_completion_is_infra",
     lambda d: exchange(d, 3).update(path="/V1/CHAT/COMPLETIONS"),
     "reasoning_serialization", "infra"),
    ("a_model_named_in_another_shape_is_fallback",
     lambda d: _reply_model(d, ["gpt-4o-mini"]), "network_isolation", "infra"),
    ("completion_replies_of_two_fingerprints_are_fallback",
     lambda d: _fingerprints(d, {1: "b6500-1a2b3c4", 3: "b6500-1a2b3c4", 4: "fp_44709d6fcb"}),
     "network_isolation", "infra"),
    ("a_fingerprint_in_another_shape_is_another_fingerprint",
     lambda d: _fingerprints(d, {3: "7", 4: 7}), "network_isolation", "infra"),
    ("the_observer_noting_another_model_is_fallback",
     lambda d: exchange(d, 3).update(response_model="gpt-4o-mini"), "network_isolation",
     "infra"),
    ("a_policy_whose_serialization_disables_it_is_infra",
     lambda d: d["config"]["reasoning_policy"].update(effective="on"),
     "reasoning_serialization", "infra"),
    ("a_request_that_also_asks_for_reasoning_is_infra", _conflicting_switch,
     "reasoning_serialization", "infra"),
    ("a_retried_probe_is_infra", _retried_probe, "transport_evidence", "infra"),
    ("an_exchange_of_no_component_is_infra",
     lambda d: exchange(d, 3).update(component=None), "transport_evidence", "infra"),
    ("a_completion_of_an_unselected_component_is_infra",
     lambda d: exchange(d, 3).update(component="bogus"), "transport_evidence", "infra"),
    ("a_socket_ledger_with_a_gap_is_infra",
     lambda d: d["socket_ledger"].pop(2), "network_isolation", "infra"),
    ("no_socket_ledger_is_infra", lambda d: d.update(socket_ledger=None), "network_isolation",
     "infra"),
    ("inactivity_over_its_limit_is_the_models",
     lambda d: task(d).update(max_inactivity_s=300.5), "hermes_time_limits", "fail"),
    ("wall_over_its_limit_is_the_models",
     lambda d: task(d).update(wall_s=1800.5), "hermes_time_limits", "fail"),
    ("a_timeout_is_the_models", lambda d: task(d).update(outcome="TIMEOUT"),
     "hermes_time_limits", "fail"),
    ("untrusted_checkpoint_evidence_is_infra",
     lambda d: task(d)["evidence"]["checkpoint"].update(trusted=False), "hermes_evidence",
     "infra"),
    ("missing_task_state_evidence_is_infra",
     lambda d: task(d)["evidence"]["task_state"].update(present=False), "hermes_evidence",
     "infra"),
    ("a_harness_error_is_infra", lambda d: task(d).update(outcome="HARNESS_ERROR"),
     "hermes_evidence", "infra"),
    ("evaluator_contamination_is_infra_even_if_files_pass",
     lambda d: task(d).update(evaluator_isolated=False), "hermes_evaluator", "infra"),
    ("another_evaluator_is_infra",
     lambda d: task(d).update(evaluator="hermesbench-v1"), "hermes_evaluator", "infra"),
    ("changed_protected_inputs_are_the_models",
     lambda d: task(d)["protected_inputs"].update(after="sha256:" + "3" * 64),
     "hermes_evaluator", "fail"),
    ("an_evaluator_failure_is_the_models", lambda d: task(d).update(outcome="FAIL"),
     "hermes_evaluator", "fail"),
    ("a_change_outside_the_allowed_patterns_is_the_models",
     lambda d: task(d)["changed_paths"].append("setup.py"), "allowed_changes", "fail"),
    ("a_failed_cleanup_is_infra", lambda d: d["config"].update(cleanup="failed"), "cleanup",
     "infra"),
    ("a_task_left_behind_is_infra", lambda d: task(d).update(cleanup="failed"), "cleanup",
     "infra"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "edit", "gate_id", "status"), CASES, ids=[case[0] for case in CASES]
)
def test_gate(full: dict[str, Any], rule: str, edit: Edit, gate_id: str, status: str) -> None:
    edit(full)
    result = judged(full)
    assert gate(result, gate_id) == status, rule
    if status == "infra":
        assert (result.outcome, result.result_validity, result.profile_decision) == (
            "INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED"
        )  # fmt: skip
    else:
        assert (result.outcome, result.result_validity, result.profile_decision) == (
            "NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE"
        )  # fmt: skip
    assert not result.rankable
    assert any(reason.startswith(f"{gate_id}: ") for reason in result.reasons)


@pytest.mark.parametrize(
    "values",
    [
        {1: "b6500-1a2b3c4", 2: "b6500-1a2b3c4", 3: "b6500-1a2b3c4", 4: "b6500-1a2b3c4"},
        {3: "b6500-1a2b3c4", 4: None},  # null: the engine names none
        {0: "fp_listing", 3: "b6500-1a2b3c4"},  # the model list is no completion reply
    ],
    ids=["one-throughout", "null-is-none", "only-completions-count"],
)
def test_one_fingerprint_or_none_is_no_fallback(
    full: dict[str, Any], values: dict[int, Any]
) -> None:
    _fingerprints(full, values)
    result = judged(full)
    assert gate(result, "network_isolation") == "pass"
    assert result.outcome == "QUALIFIED"


def test_a_task_that_timed_out_is_the_models_failure(full: dict[str, Any]) -> None:
    untested = {"present": False, "trusted": False}
    task(full, 1).update(
        outcome="TIMEOUT", max_inactivity_s=301.0, wall_s=320.0, cases=[],
        protected_inputs={"before": None, "after": None}, completion_claim=None,
        evidence={"process": {"present": True, "trusted": True}, "checkpoint": untested,
                  "model_response": untested, "task_state": untested, "evaluator": untested},
    )  # fmt: skip
    result = judged(full)
    assert (result.outcome, result.result_validity) == ("NOT_QUALIFIED", "VALID")
    assert gate(result, "hermes_time_limits") == "fail"
    assert gate(result, "hermes_evidence") == "pass"
    assert gate(result, "hermes_evaluator") == "pass"


def test_a_missing_trajectory_or_final_response_overrides_nothing(full: dict[str, Any]) -> None:
    task(full).update(trajectory="malformed", final_response=None)
    task(full, 1).update(trajectory="missing")
    assert judged(full).outcome == "QUALIFIED"


def test_reasoning_is_allowed_when_the_policy_is_on(full: dict[str, Any]) -> None:
    _reasoning(full)
    full["config"]["reasoning_policy"]["effective"] = "on"
    assert gate(judged(full), "reasoning_contamination") == "pass"


# --- precedence, profiles, partial results ----------------------------------------------------


def test_quarantine_wins_over_a_passing_golden_gate_and_run_valid_marker(
    full: dict[str, Any], evidence: dict[str, Gx10Evidence]
) -> None:
    marker = evidence["gx10-spark-quarantined"].quarantines["coding"]
    full["quarantines"] = {"coding": marker.model_dump(mode="json")}
    full["results"]["coding"]["status"] = "QUARANTINED"
    assert full["spark_quality"]["golden_gate"] == "PASS"
    assert full["spark_quality"]["run_valid"] is True
    result = judged(full)
    assert (result.outcome, result.result_validity, result.profile_decision) == (
        "INFRA_ERROR", "QUARANTINED", "NOT_ASSESSED"
    )  # fmt: skip
    assert not result.rankable
    assert result.diagnostics.quarantine is not None
    assert result.diagnostics.quarantine.provisional_metrics["code_domain_quality"] == 74.1
    assert "coding quarantined by its upstream: golden replay drifted between repeats" in (
        result.reasons
    )


def test_quarantine_wins_over_an_infrastructure_failure(
    full: dict[str, Any], evidence: dict[str, Gx10Evidence]
) -> None:
    marker = evidence["gx10-spark-quarantined"].quarantines["coding"]
    full["quarantines"] = {"coding": marker.model_dump(mode="json")}
    full["results"]["coding"]["status"] = "QUARANTINED"
    full["socket_ledger"] = None
    assert judged(full).result_validity == "QUARANTINED"


def test_a_quarantined_status_without_a_marker_quarantines_nothing(full: dict[str, Any]) -> None:
    """Only the upstream's marker quarantines (seed 000): a status alone is a record that
    disagrees (verify._consistency), and the decision goes on without it."""
    full["results"]["coding"]["status"] = "QUARANTINED"
    assert judged(full).result_validity != "QUARANTINED"


def test_an_infrastructure_error_is_never_a_zero_model_score(full: dict[str, Any]) -> None:
    _non_local(full)
    result = judged(full)
    assert result.outcome == "INFRA_ERROR"
    assert result.scores.coding == 78.4
    assert result.scores.aggregate == pytest.approx(87.835)


def test_a_partial_component_stays_visible_but_cannot_qualify(full: dict[str, Any]) -> None:
    full["results"]["tool_instruction"]["status"] = "PARTIAL"
    result = judged(full)
    assert (result.outcome, result.result_validity, result.profile_decision) == (
        "INFRA_ERROR", "INCOMPLETE", "NOT_ASSESSED"
    )  # fmt: skip
    assert result.scores.tool_instruction == 82.5


def test_a_failed_runner_is_infrastructure(full: dict[str, Any]) -> None:
    full["results"]["hermes"].update(status="FAILED", reason="hermesbench exited 1")
    result = judged(full)
    assert (result.outcome, result.result_validity) == ("INFRA_ERROR", "INFRA_FAILURE")
    assert "hermes failed: hermesbench exited 1" in result.reasons


def test_a_component_that_did_not_run_is_incomplete(full: dict[str, Any]) -> None:
    full["results"]["performance"]["status"] = "NOT_RUN"
    result = judged(full)
    assert result.result_validity == "INCOMPLETE"
    assert result.scores.performance is None
    assert result.scores.executed_weight == 95


def test_smoke_is_a_plumbing_qualification_never_ranked(
    evidence: dict[str, Gx10Evidence],
) -> None:
    result = replay(evidence["gx10-smoke"], DEPLOYMENT)
    assert (result.outcome, result.profile_decision, result.rankable) == (
        "QUALIFIED", "MEETS_PROFILE", False
    )  # fmt: skip
    assert result.scores.executed_weight == 45
    assert not result.diagnostics.comparable
    assert "profile smoke is not the standard full" in result.reasons
    assert {g.id for g in result.gates if g.status == "not_selected"} == {
        "hermes_time_limits", "hermes_evidence", "hermes_evaluator", "allowed_changes"
    }  # fmt: skip


def test_reliability_is_the_hermes_pass_rate_when_spark_is_absent(full: dict[str, Any]) -> None:
    full.update(spark_quality=None, spark_repeat=None)
    full["results"]["coding"]["status"] = "NOT_RUN"
    result = judged(full)
    assert result.scores.reliability == 100.0
    assert result.scores.coding is None


# --- thresholds at and just under each bound --------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "meets"),
    [
        ("coding", 60, True),
        ("coding", 59.99, False),
        ("tool_instruction", 70, True),
        ("tool_instruction", 69.99, False),
        ("reliability", 80, True),
        ("reliability", 79.99, False),
    ],
)
def test_threshold_bounds(full: dict[str, Any], field: str, value: float, meets: bool) -> None:
    if field == "coding":
        full["spark_quality"]["code_domain_quality"] = value
    elif field == "tool_instruction":
        full["benchlocal"]["packs"] = {"only": value}
    else:
        full["spark_repeat"]["repeat_reliability"] = value
    result = judged(full)
    assert (result.profile_decision == "MEETS_PROFILE") is meets
    if not meets:
        assert f"{field} {value:g} is under" in " ".join(result.reasons)


def test_hermes_must_be_100(full: dict[str, Any]) -> None:
    task(full).update(outcome="FAIL")
    result = judged(full)
    assert result.scores.hermes == 50
    assert "hermes 50 is under 100" in result.reasons


def _pins_with(**thresholds: float) -> PinSetSource:
    """The v5 pins with other full-profile thresholds: a different pin set, by digest."""
    data = copy.deepcopy(dict(DEPLOYMENT.data))
    data["thresholds"]["full"].update(thresholds)
    return pin_set_source(data, "custom")


@pytest.mark.parametrize(("bound", "meets"), [(87.835, True), (87.836, False)])
def test_the_aggregate_threshold_at_and_just_under(
    full: dict[str, Any], bound: float, meets: bool
) -> None:
    result = judged(full, _pins_with(aggregate=bound))
    assert (result.profile_decision == "MEETS_PROFILE") is meets


# --- rankability ------------------------------------------------------------------------------


def test_controlled_policy_runs_are_grouped_by_their_exact_policy(full: dict[str, Any]) -> None:
    full["config"]["track"] = "controlled"
    full["claims"]["rankable"] = False
    result = judged(full)
    assert (result.outcome, result.rankable) == ("QUALIFIED", False)
    assert result.rank_group == "controlled:off:chat_template_kwargs.enable_thinking=false"


@pytest.fixture
def demo(demo_evidence: dict[str, Gx10Evidence]) -> dict[str, Any]:
    """The complete full-profile example as the demo records it: under gx10-reference-v5."""
    return copy.deepcopy(demo_evidence["gx10-full-qualified"].model_dump(mode="json"))


def test_v4_results_are_historical_and_never_ranked(demo: dict[str, Any]) -> None:
    result = judged(demo, V4)
    assert result.outcome == "QUALIFIED"
    assert not result.rankable
    assert any("historical generation" in r for r in result.reasons)


def test_the_reference_model_qualifies_under_the_demo_pins_but_is_never_ranked(
    demo: dict[str, Any],
) -> None:
    result = judged(demo, V5)
    assert (result.outcome, result.rankable, result.rank_group) == ("QUALIFIED", False, None)
    assert result.claims.match
    assert "gx10-reference-v5 is a demo-only pin set (reference harnesses): never ranked" in (
        result.reasons
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: d["model"].update(digest="sha256:" + "ab" * 32), id="another digest"
        ),
        pytest.param(
            lambda d: d.update(
                json.loads(json.dumps(d).replace("reference-model-q8_0", "smollm2-135m"))
            ),
            id="another model everywhere",
        ),
    ],
)
def test_the_demo_pins_judge_no_other_model(demo: dict[str, Any], change: Edit) -> None:
    change(demo)
    result = judged(demo, V5)
    assert (result.outcome, result.result_validity, result.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    assert gate(result, "upstream_checkout") == "infra"
    reason = next(g.reason for g in result.gates if g.id == "upstream_checkout")
    assert reason.startswith("pin set gx10-reference-v5 is demo only: its reference harnesses")


def test_a_pin_set_with_a_reference_harness_is_demo_only_without_a_reference_table(
    full: dict[str, Any],
) -> None:
    data = copy.deepcopy(dict(DEPLOYMENT.data))
    data["upstreams"]["infermark"]["repository"] = "reference://infermark"
    pins = pin_set_source(data, "mixed")
    assert pins.pins.demo_only
    result = judged(full, pins)
    assert (result.outcome, result.rankable) == ("INFRA_ERROR", False)
    reason = next(g.reason for g in result.gates if g.id == "upstream_checkout")
    assert "is demo only" in reason and "its reference deployment: none" in reason


def test_the_real_pins_name_no_hermes_harness_so_the_full_profile_cannot_qualify(
    full: dict[str, Any],
) -> None:
    assert not REAL.pins.demo_only
    assert "hermes" not in REAL.pins.component_upstreams
    result = judged(full, REAL)
    assert (result.outcome, result.result_validity, result.rankable) == (
        "INFRA_ERROR", "INFRA_FAILURE", False
    )  # fmt: skip
    reason = next(g.reason for g in result.gates if g.id == "upstream_checkout")
    assert reason == (
        "pin set gx10-qualification-v5 pins no upstream harness for hermes: profile full cannot "
        "be completed under it"
    )


def test_another_pin_set_digest_is_not_rankable(full: dict[str, Any]) -> None:
    full["pin_set"]["digest"] = "sha256:" + "0" * 64
    full["claims"]["rankable"] = False
    result = judged(full)
    assert (result.outcome, result.rankable) == ("QUALIFIED", False)
    assert result.claims.match


def test_a_pin_set_taking_a_shipped_id_with_other_content_is_never_ranked(
    full: dict[str, Any],
) -> None:
    """The deployment's pin set under the shipped qualification pin set's id: the run, recorded
    and judged by it, is QUALIFIED and not ranked (a summary of it would say PASSED under the
    shipped pin set's name); the same pin set under its own id ranks it."""
    counterfeit = pin_set_source(dict(DEPLOYMENT.data) | {"id": REAL.id}, "counterfeit.toml")
    full["pin_set"] = {"id": counterfeit.id, "digest": counterfeit.digest}
    full["claims"]["rankable"] = False
    result = judged(full, counterfeit)
    assert (result.outcome, result.rankable, result.rank_group) == ("QUALIFIED", False, None)
    assert result.claims.match
    assert (
        f"pin set {REAL.id} {counterfeit.digest} takes the id of a shipped pin set with other "
        f"content (shipped: {REAL.id} {REAL.digest}): never ranked"
    ) in result.reasons
    full["pin_set"] = {"id": DEPLOYMENT.id, "digest": DEPLOYMENT.digest}
    full["claims"]["rankable"] = True
    assert judged(full).rankable


def test_a_claims_mismatch_is_a_finding_and_not_rankable(full: dict[str, Any]) -> None:
    full["claims"]["component_scores"]["coding"] = 80.0
    result = judged(full)
    assert result.outcome == "QUALIFIED"
    assert not result.claims.match
    assert not result.rankable
    assert result.claims.differences == ("component_scores.coding: claimed 80, replayed 78.4",)


# --- formulas ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tps", "ttft", "errors", "expected"),
    [
        (14.2, 0.42, 0, 100.0),
        (5.0, 1.0, 0, 75.0),  # throughput 50, ttft 100
        (5.0, 3.5, 0, 62.5),  # ttft 100 - 2.5 x 10 = 75
        (20.0, 12.0, 0, 50.0),  # ttft floors at 0
        (14.2, 0.42, 1, 0.0),  # errors score zero
    ],
)
def test_performance_normalization(tps: float, ttft: float, errors: int, expected: float) -> None:
    assert performance_score(tps, ttft, errors) == pytest.approx(expected)


def test_performance_is_labelled_visible_chunks_never_tokens(full: dict[str, Any]) -> None:
    diagnostics = judged(full).diagnostics
    assert diagnostics.e2e_visible_chunks_per_second == 14.2
    assert diagnostics.estimated_visible_generation_chunks_per_second == pytest.approx(1 / 0.071)
    assert "token" not in " ".join(Gx10Replay.model_fields["diagnostics"].annotation.model_fields)  # type: ignore[union-attr]


def test_hermes_evaluator_metrics(full: dict[str, Any]) -> None:
    cases = task(full)["cases"]
    cases[1]["passed"] = False  # correctness case mapped to R1 and R2
    task(full)["outcome"] = "FAIL"
    task(full, 1)["completion_claim"] = None
    metrics = {m.task: m for m in judged(full).diagnostics.hermes_tasks}
    first = metrics["fix-date-parser"]
    assert (first.correctness, first.security) == (50.0, 100.0)
    assert first.requirement_retention == pytest.approx(100 / 3)  # R3 only
    assert first.truthfulness == 0  # a disproved affirmative completion claim
    assert metrics["add-retry-policy"].truthfulness is None  # unmeasured


def test_reasoning_on_a_path_that_is_no_completion_is_found(full: dict[str, Any]) -> None:
    """A path proves nothing: the reply is read wherever it was sent (and a generated reply on
    a path that is no completion endpoint also fails serialization, which comes first)."""
    _reasoning(full)
    exchange(full, 3)["path"] = "/v1/chat/completions;"
    result = judged(full)
    assert gate(result, "reasoning_contamination") == "fail"
    assert gate(result, "reasoning_serialization") == "infra"
    assert result.outcome == "INFRA_ERROR"


INFRA_TASKS: list[tuple[str, Edit]] = [
    ("a harness error", lambda d: task(d).update(outcome="HARNESS_ERROR")),
    ("untrusted evidence", lambda d: task(d)["evidence"]["checkpoint"].update(trusted=False)),
    ("an evaluator not isolated", lambda d: task(d).update(evaluator_isolated=False)),
    ("a non-pinned evaluator", lambda d: task(d).update(evaluator="hermesbench-v1")),
    ("incomplete protected inputs", lambda d: task(d)["protected_inputs"].update(after=None)),
    ("a failed cleanup", lambda d: task(d).update(cleanup="failed")),
    ("no recorded times", lambda d: task(d).update(wall_s=None)),
]


@pytest.mark.parametrize(("why", "edit"), INFRA_TASKS, ids=[case[0] for case in INFRA_TASKS])
def test_a_task_failing_on_infrastructure_leaves_the_hermes_score_null(
    full: dict[str, Any], why: str, edit: Edit
) -> None:
    """Seed 000: "an infrastructure error is never converted into a zero model score"."""
    edit(full)
    result = judged(full)
    assert result.scores.hermes is None, why
    assert result.diagnostics.comparable is False
    assert result.outcome == "INFRA_ERROR"


def test_a_task_by_a_non_pinned_evaluator_is_not_a_full_pass(full: dict[str, Any]) -> None:
    task(full).update(evaluator="hermesbench-v1")
    metrics = {m.task: m for m in judged(full).diagnostics.hermes_tasks}
    assert metrics["fix-date-parser"].full_pass is False


@pytest.mark.parametrize("outcome", ["HARNESS_ERROR", "TIMEOUT"])
def test_truthfulness_stays_null_when_nothing_measured_the_claim(
    full: dict[str, Any], outcome: str
) -> None:
    task(full).update(outcome=outcome, completion_claim=True)
    metrics = {m.task: m for m in judged(full).diagnostics.hermes_tasks}
    assert metrics["fix-date-parser"].truthfulness is None


@pytest.mark.parametrize(
    ("pattern", "path", "allowed"),
    [
        ("src/dates/**", "src/dates/parse.py", True),
        ("src/dates/**", "src/dates/deep/er.py", True),
        ("src/dates/**", "src/dates", False),  # ** is one or more whole segments
        ("src/**/test_*.py", "src/a/b/test_x.py", True),
        ("src/*.py", "src/a/b.py", False),  # * stays within a segment
        ("src/?.py", "src/a.py", True),
        ("src/dates/**", "src/dates/../../setup.py", False),  # normalised: leaves the workspace
        ("src/dates/**", "/src/dates/x.py", False),  # absolute
        ("src/dates/**", "./src//dates/x.py", True),  # ./ and empty segments dropped
        ("../**", "../outside.py", False),  # a pattern that leaves the workspace matches nothing
    ],
)
def test_allowed_change_patterns_match_segment_by_segment(
    pattern: str, path: str, allowed: bool
) -> None:
    assert path_allowed(pattern, path) is allowed


@pytest.mark.parametrize(
    ("pattern", "items", "star", "one"),
    [
        ("*a" * 200 + "b", "a" * 400, "*", False),  # hours for a backtracking regular expression
        (["**", "a"] * 50 + ["b"], ["a"] * 100, "**", True),
    ],
)
def test_a_pathological_pattern_takes_at_most_pattern_times_items_comparisons(
    pattern: Any, items: Any, star: str, one: bool
) -> None:
    """No backtracking: a pattern the bundle supplies cannot stall the matcher."""
    compared = 0

    def same(p: str, i: str) -> bool:
        nonlocal compared
        compared += 1
        return p == i

    assert not _wildcard(pattern, items, star, one, same)
    assert compared <= len(pattern) * len(items)


# --- pin sets ---------------------------------------------------------------------------------


def test_pin_set_errors_are_located() -> None:
    data = dict(V5.data)
    data["weights"] = {**data["weights"], "coding": "forty"}
    with pytest.raises(InvalidInput, match=r"^x\.toml: weights\.coding: Input should be"):
        pin_set_model(data, "x.toml")
    data = dict(V5.data)
    data["standard_profile"] = "nightly"
    with pytest.raises(InvalidInput, match="'nightly' is not a profile"):
        pin_set_model(data, "x.toml")


def test_v5_pins_are_the_seeds_numbers() -> None:
    pins = V5.pins
    assert dict(pins.weights) == {
        "coding": 40, "hermes": 30, "tool_instruction": 15, "reliability": 10, "performance": 5
    }  # fmt: skip
    assert pins.thresholds["full"].model_dump() == {
        "aggregate": 70, "coding": 60, "hermes": 100, "tool_instruction": 70, "reliability": 80
    }  # fmt: skip
    assert (pins.direct_probe.contract, pins.direct_probe.total_completion_ceiling_tokens) == (
        "gx10-direct-probe-v1", 1024
    )  # fmt: skip
    assert pins.hermes_evaluator == "hermesbench-v2-automated-1"
    assert V5.digest != V4.digest


# --- the CLI ----------------------------------------------------------------------------------


def test_verify_exits_1_when_the_claims_differ(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "evidence.json"
    bundle = str(ranked_examples["gx10-full-qualified"])
    pins = ["--pins", str(DEPLOYMENT_PINS)]
    assert main(["verify", bundle, *pins, "--evidence-out", str(out), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["outcome"], verdict["rankable"], verdict["rank_group"]) == (
        "QUALIFIED", True, "primary"
    )  # fmt: skip
    assert main(["score", "gx10", str(out), *pins, "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert (replayed["scorer"], replayed["scorer_version"]) == ("gx10", GX10_VERSION)
    assert {k: replayed[k] for k in ("outcome", "rankable", "scores")} == {
        k: verdict[k] for k in ("outcome", "rankable", "scores")
    }  # the replay from the evidence document is the verdict's
    document = json.loads(out.read_text())
    document["claims"]["aggregate_score"] = 90.0
    out.write_text(json.dumps(document))
    assert main(["score", "gx10", str(out), *pins]) == 1
    err = capsys.readouterr().err
    assert err == (
        "audit score gx10: the claims differ from the replay: aggregate_score: claimed 90, "
        "replayed 87.835\n"
    )


@pytest.mark.parametrize(
    ("name", "outcome", "validity"),
    [
        ("gx10-full-qualified", "QUALIFIED", "VALID"),
        ("gx10-full-not-qualified", "NOT_QUALIFIED", "VALID"),
        ("gx10-full-infra-error", "INFRA_ERROR", "INFRA_FAILURE"),
        ("gx10-spark-quarantined", "INFRA_ERROR", "QUARANTINED"),
        ("gx10-smoke", "QUALIFIED", "VALID"),
    ],
)
def test_every_example_verifies_with_its_claims(
    built_examples: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    name: str,
    outcome: str,
    validity: str,
) -> None:
    assert main(["verify", str(built_examples[name]), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["outcome"], verdict["result_validity"]) == (outcome, validity)
    assert verdict["claims"] == {"match": True, "differences": []}


def test_verify_under_another_pin_set_file(
    ranked_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = str(ranked_examples["gx10-full-qualified"])
    assert main(["verify", bundle, "--pins", "pins/gx10-qualification-v4.toml", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["pin_set"]["id"] == "gx10-qualification-v4"
    # v4 pins the reference harnesses (reference://): not the upstreams this run checked out
    assert captured.err == (
        "audit verify: the runner's claims differ from the replay: outcome: claimed QUALIFIED, "
        "replayed INFRA_ERROR\n"
    )


def test_a_bundle_naming_an_unknown_pin_set_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = PinSetRef(id="gx10-qualification-v9", digest="sha256:" + "cd" * 32)
    write_small_bundle(tmp_path / "b", pin_set=ref)
    assert main(["verify", str(tmp_path / "b")]) == 2
    unknown = (
        "unknown pin set 'gx10-qualification-v9'; shipped: "
        "gx10-qualification-v4, gx10-qualification-v5, gx10-reference-v5\n"
    )
    assert capsys.readouterr().err == f"audit verify: {tmp_path / 'b'}: {unknown}"
    write_small_bundle(tmp_path / "known")  # diff names which of its two names it; rank lists it
    assert main(["diff", str(tmp_path / "known"), str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err == f"audit diff: {tmp_path / 'b'}: {unknown}"
    assert main(["rank", str(tmp_path / "b")]) == 1
    assert capsys.readouterr().err == f"audit rank: refused {tmp_path / 'b'}: {unknown}"


def test_the_small_bundles_claims_match_its_replay(
    small_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(small_bundle), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["outcome"], verdict["result_validity"]) == ("INFRA_ERROR", "INFRA_FAILURE")


@pytest.mark.parametrize(
    ("name", "requirements", "code", "message"),
    [
        ("gx10-full-qualified", ["rankable", "qualified", "valid"], 0, ""),
        ("gx10-full-not-qualified", ["valid", "qualified"], 1,
         "audit verify: requirement not met: qualified: outcome NOT_QUALIFIED: hermes_evaluator: "
         "task add-retry-policy: evaluator did not pass\n"),
        ("gx10-smoke", ["qualified", "rankable"], 1,
         "audit verify: requirement not met: rankable: not rankable: executed weight 45 < 100: "
         "a plumbing qualification, not a comparable full deployment score\n"),
        ("gx10-spark-quarantined", ["valid"], 1,
         "audit verify: requirement not met: valid: QUARANTINED: coding quarantined by its "
         "upstream: golden replay drifted between repeats\n"),
        ("gx10-full-qualified", ["signed"], 1,
         "audit verify: requirement not met: signed: the bundle is unsigned\n"),
    ],
)  # fmt: skip
def test_verify_require(  # noqa: PLR0917
    ranked_examples: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    name: str,
    requirements: list[str],
    code: int,
    message: str,
) -> None:
    argv = ["verify", str(ranked_examples[name]), "--json", "--pins", str(DEPLOYMENT_PINS)]
    argv += [f"--require={r}" for r in requirements]
    assert main(argv) == code
    assert capsys.readouterr().err == message


def test_verify_require_rankable_under_the_demo_pins(
    built_examples: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["verify", str(built_examples["gx10-full-qualified"]), "--require=qualified"]
    assert main([*argv, "--require=rankable"]) == 1
    assert capsys.readouterr().err == (
        "audit verify: requirement not met: rankable: not rankable: gx10-reference-v5 is a "
        "demo-only pin set (reference harnesses): never ranked\n"
    )
    assert main(argv) == 0
