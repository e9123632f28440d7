"""benchlocal-cli's grade of a reply, replayed where this verifier knows the pinned grader.

benchlocal-cli 0.9.9 (47d1d66) grades a scenario's saved reply (``raw_response``, its think
tags already taken out) with the scoring module its pack names (``runner.run_scenario``:
``score_scenario(scenario, raw_response)``); before and after that, the runner may fail a run
for reasons of its own (an HTTP error, a time-out, a reply cut at the token limit), never pass
one. So a scenario marked passed must be one the module passes; a failed one may be anything.

Replayed here: the ``tool_call`` module (``scoring/tool_call.py``: the assertions of
toolcall-15 on the reply's tool calls and text). Another module's grade is the harness's own
(ADR 0048). A reply or an assertion this replay cannot read as benchlocal-cli does (arguments
that are no JSON object, an assertion with a missing member) is not judged here: only a clear
failure is a finding.
"""

from __future__ import annotations

import json
import re
from typing import Any

from verify.replies import without_think_tags

GRADED = frozenset({"tool_call"})
"""The scoring modules whose grade is replayed."""

_TEXT_FIELDS = ("content", "reasoning_content", "reasoning")


def tool_call_failure(asserts: Any, reply: dict[str, Any]) -> str | None:
    """Why benchlocal-cli's ``tool_call`` module fails ``reply`` under the pinned assertions
    ``asserts``; None when it passes it, or when this replay cannot tell."""
    try:
        return _tool_call(asserts, reply)
    except (TypeError, KeyError, AttributeError, ValueError, re.error):  # no verdict
        return None


def _message(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply's message: its own ``message``, else its first choice's message or delta."""
    own = reply.get("message")
    if isinstance(own, dict):
        return own
    choices = reply.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(first, dict):
        found = first.get("message") or first.get("delta")
        if isinstance(found, dict):
            return found
    return {}


def _text(reply: dict[str, Any]) -> str:
    """The reply's text as the module reads it: the first non-empty text field, of the reply
    itself, then of its message, think tags taken out."""
    for holder in (reply, _message(reply)):
        for field in _TEXT_FIELDS:
            value = holder.get(field)
            if isinstance(value, str) and value:
                return without_think_tags(value)
    return ""


def _calls(reply: dict[str, Any]) -> list[Any]:
    calls = reply.get("tool_calls")
    if not isinstance(calls, list):
        calls = _message(reply).get("tool_calls")
    return calls if isinstance(calls, list) else []


def _function(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise TypeError("a tool call that is no object")
    function = call.get("function")
    return function if isinstance(function, dict) else {}


def _call_name(call: Any) -> str:
    return str(call.get("name") or _function(call).get("name") or "")


def _call_arguments(call: Any) -> Any:
    """A call's arguments: an object as given, a JSON text parsed (an empty one is ``{}``),
    anything else ``{}``. A text that is not JSON raises :class:`json.JSONDecodeError`."""
    given = call.get("arguments", _function(call).get("arguments", {}))
    if isinstance(given, dict):
        return given
    if isinstance(given, str):
        return json.loads(given or "{}")
    return {}


def _tool_call(asserts: Any, reply: dict[str, Any]) -> str | None:
    if not isinstance(asserts, list) or not all(isinstance(a, dict) for a in asserts):
        raise TypeError("assertions that are no list of objects")
    calls = _calls(reply)
    kinds = [a.get("kind") for a in asserts]
    none_allowed = any(
        a.get("kind") == "tool_call_count" and a.get("value") == 0 for a in asserts
    ) or all(kind == "content_regex" for kind in kinds)
    if not calls and asserts and not none_allowed:
        return "the reply has no tool call"
    try:
        arguments = [_call_arguments(call) for call in calls]
    except json.JSONDecodeError:
        return "a tool call's arguments are not JSON"
    names = [_call_name(call) for call in calls]
    first = arguments[0] if arguments else {}
    for check in asserts:
        problem = _assertion(check, names, first, calls, reply)
        if problem is not None:
            return problem
    return None


def _assertion(  # noqa: PLR0911, PLR0912 - one branch per kind of assertion
    check: dict[str, Any],
    names: list[str],
    first: Any,
    calls: list[Any],
    reply: dict[str, Any],
) -> str | None:
    kind = check.get("kind")
    if kind == "exact_function_name":
        return None if names and names[0] == check["value"] else f"first tool not {check['value']}"
    if kind == "function_name_in":
        return None if names and names[0] in set(check["values"]) else "first tool not allowed"
    if kind == "tool_call_count":
        return None if len(calls) == check["value"] else f"not {check['value']} tool calls"
    if kind == "required_function_names":
        missing = [n for n in check["values"] if n not in names]
        return f"missing tools {missing}" if missing else None
    if kind == "content_regex":
        found = re.search(check["pattern"], _text(reply), re.MULTILINE | re.DOTALL)
        return None if found else "the text does not match"
    if kind == "required_args_present":
        missing = [a for a in check["args"] if a not in first]
        return f"missing arguments {missing}" if missing else None
    if kind == "forbidden_args_absent":
        present = [a for a in check["args"] if a in first]
        return f"forbidden arguments {present}" if present else None
    if kind == "exact_arg_value":
        return None if first.get(check["arg"]) == check["value"] else f"{check['arg']} differs"
    if kind == "arg_regex":
        found = re.search(check["pattern"], str(first.get(check["arg"], "")))
        return None if found else f"{check['arg']} does not match"
    if kind == "arg_in_enum":
        return None if first.get(check["arg"]) in check["values"] else f"{check['arg']} not allowed"
    if kind == "arg_numeric_range":
        value = first.get(check["arg"])
        if not isinstance(value, int | float):
            return f"{check['arg']} is not a number"
        low: Any = check.get("min")
        high: Any = check.get("max")
        outside = ("min" in check and value < low) or ("max" in check and value > high)
        return f"{check['arg']} out of range" if outside else None
    if kind == "multi_call_order":
        expected = check["expected_names"]
        if check.get("dependent"):  # a chain asked in one reply: a correct prefix of it
            common = min(len(names), len(expected))
            ok = bool(names) and names[:common] == expected[:common]
        else:
            ok = names[: len(expected)] == expected
        return None if ok else "tools not in the expected order"
    return f"an assertion of an unknown kind {kind!r}"
