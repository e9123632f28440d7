"""benchlocal-cli's ``tool_call`` and ``instruct_follow`` graders, replayed
(``verify._consistency.benchlocal_grades``), on hand-made cases: the assertions of toolcall-15
on replies that call tools, which the recorded SmolLM2 runs never make, and each constraint of
instructfollow-15. The replay is held to benchlocal-cli's own modules by
tests/verify/test_benchlocal_grades_differential.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verify._consistency.benchlocal_grades import grade_failure


def _failure(module: str, asserts: Any, reply: dict[str, Any]) -> str | None:
    """The replayed grade of ``reply`` to a scenario with these assertions."""
    return grade_failure(module, {"id": "T", "verifier": {"asserts": asserts}}, reply)


def tool_call_failure(asserts: Any, reply: dict[str, Any]) -> str | None:
    return _failure("tool_call", asserts, reply)


def _reply(*calls: tuple[str, Any], content: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"type": "function", "function": {"name": name,
             "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for name, args in calls
        ]  # fmt: skip
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


BERLIN = [
    {"kind": "exact_function_name", "value": "get_weather"},
    {"kind": "required_args_present", "args": ["location"]},
    {"kind": "arg_regex", "arg": "location", "pattern": "(?i)berlin"},
]
CHAIN = [{"kind": "multi_call_order", "expected_names": ["get_contacts", "send_email"],
          "dependent": True}]  # fmt: skip
TWO = [{"kind": "multi_call_order", "expected_names": ["translate_text", "translate_text"]},
       {"kind": "tool_call_count", "value": 2}]  # fmt: skip
RANGE = [{"kind": "arg_numeric_range", "arg": "duration_minutes", "min": 30, "max": 30}]
NONE = [{"kind": "tool_call_count", "value": 0}, {"kind": "content_regex", "pattern": "1945"}]


@pytest.mark.parametrize(
    ("asserts", "reply", "failure"),
    [
        (BERLIN, _reply(("get_weather", {"location": "Berlin, DE"})), None),
        (BERLIN, _reply(("web_search", {"query": "Berlin weather"})), "first tool not get_weather"),
        (BERLIN, _reply(("get_weather", {"city": "Berlin"})), "missing arguments ['location']"),
        (BERLIN, _reply(("get_weather", {"location": "Paris"})), "location does not match"),
        (BERLIN, _reply(("get_weather", "{not json")), "a tool call's arguments are not JSON"),
        (BERLIN, _reply(content="It is sunny in Berlin."), "the reply has no tool call"),
        (CHAIN, _reply(("get_contacts", {})), None),  # a correct first step of a chain
        (CHAIN, _reply(("send_email", {})), "tools not in the expected order"),
        (TWO, _reply(("translate_text", {}), ("translate_text", {})), None),
        (TWO, _reply(("translate_text", {})), "tools not in the expected order"),
        (RANGE, _reply(("create_calendar_event", {"duration_minutes": 30})), None),
        (RANGE, _reply(("create_calendar_event", {"duration_minutes": 45})),
         "duration_minutes out of range"),
        (RANGE, _reply(("create_calendar_event", {"duration_minutes": "30"})),
         "duration_minutes is not a number"),
        (NONE, _reply(content="It ended in 1945."), None),
        (NONE, _reply(content="<think>1945?</think>It ended in 1944."), "the text does not match"),
        (NONE, _reply(("search", {}), content="1945"), "not 0 tool calls"),
        ([{"kind": "sideways"}], _reply(("x", {})), "an assertion of an unknown kind 'sideways'"),
    ],
)  # fmt: skip
def test_the_tool_call_grader(
    asserts: list[Any], reply: dict[str, Any], failure: str | None
) -> None:
    assert tool_call_failure(asserts, reply) == failure


@pytest.mark.parametrize(
    ("asserts", "reply"),
    [
        (BERLIN, _reply(("get_weather", "null"))),  # arguments no object: benchlocal-cli errs
        ([{"kind": "exact_function_name"}], _reply(("get_weather", {}))),  # no value
        ("not a list", _reply(("get_weather", {}))),
    ],
)
def test_what_the_grader_raises_on_is_no_pass(asserts: Any, reply: dict[str, Any]) -> None:
    """benchlocal-cli's runner calls the grader bare: a reply or a scenario it raises on (here
    ``TypeError``, ``KeyError`` and ``AttributeError``) ends the run, so no run it grades is
    passed; a scenario marked passed on it is a finding."""
    failure = tool_call_failure(asserts, reply)
    assert failure is not None and failure.startswith("the grader raises on it ("), failure


def _said(text: str) -> dict[str, Any]:
    return _reply(content=text)


@pytest.mark.parametrize(
    ("asserts", "text", "failure"),
    [
        ([{"kind": "max_length_words", "value": 3}], "one two three", None),
        ([{"kind": "max_length_words", "value": 3}], "one two three four", "4 words, over 3"),
        ([{"kind": "exact_length_words", "value": 2}], "it's here", "3 words, not 2"),
        ([{"kind": "min_length_words", "value": 2}], "alone", "1 words, under 2"),
        ([{"kind": "case_only", "value": "uppercase"}], "RAIN, RAIN!", None),
        ([{"kind": "case_only", "value": "uppercase"}], "RAIN, rain", "the text is not uppercase"),
        ([{"kind": "format_regex", "pattern": "\\?$"}], "Coffee?  ", None),  # the text stripped
        ([{"kind": "required_phrase", "value": "Coffee"}], "coffee", "missing phrase 'Coffee'"),
        ([{"kind": "required_phrase_any", "values": ["30", "thirty"]}], "thirty", None),
        ([{"kind": "forbidden_phrase", "value": "banana"}], "a banana",
         "forbidden phrase 'banana'"),
        ([{"kind": "bullet_count", "value": 2}], "- a\n* b\n+ c", None),
        ([{"kind": "bullet_count", "value": 2}], "- a", "1 bullets, not 2"),
        ([{"kind": "required_section_headers", "headers": ["## A"]}], "## A\ntext", None),
        ([{"kind": "language", "value": "english"}], "caf\u00e9",
         "non-ASCII text in an English reply"),
        ([{"kind": "required_url_count", "min": 1}], "see https://x.example/a", None),
        ([{"kind": "format_regex", "pattern": ".+"}], "<think>plan</think>",
         "the text does not match the format"),
        ([{"kind": "sideways"}], "x", "an assertion of an unknown kind 'sideways'"),
    ],
)  # fmt: skip
def test_the_instruct_follow_grader(asserts: list[Any], text: str, failure: str | None) -> None:
    assert _failure("instruct_follow", asserts, _said(text)) == failure
