"""benchlocal-cli's grade of a reply, replayed where this verifier knows the pinned grader.

benchlocal-cli 0.9.9 (47d1d66) grades a scenario's saved reply (``raw_response``, its think
tags already taken out) with the scoring module its pack names (``runner.run_scenario``:
``score_scenario(scenario, raw_response)``); before and after that, the runner may fail a run
for reasons of its own (an HTTP error, a time-out, a reply cut at the token limit), never pass
one. So a scenario marked passed must be one the module passes; a failed one may be anything.

Replayed here: the ``tool_call`` module (``scoring/tool_call.py``: the assertions of
toolcall-15 on the reply's tool calls and text) and the ``instruct_follow`` module
(``scoring/instruct_follow.py``: instructfollow-15's constraints on the reply's text). Another
module's grade is the harness's own (ADR 0048). A reply or an assertion this replay cannot read
as benchlocal-cli does (arguments that are no JSON object, an assertion with a missing member)
is not judged here: only a clear failure is a finding.
"""

from __future__ import annotations

import json
import re
from typing import Any

from verify.replies import without_think_tags

GRADED = frozenset({"tool_call", "instruct_follow"})
"""The scoring modules whose grade is replayed (:func:`grade_failure`)."""

_TEXT_FIELDS = ("content", "reasoning_content", "reasoning")


def grade_failure(module: str, asserts: Any, reply: dict[str, Any]) -> str | None:
    """Why benchlocal-cli's scoring ``module`` (one of :data:`GRADED`) fails ``reply`` under the
    pinned assertions ``asserts``; None when it passes it, or when this replay cannot tell."""
    grader = _tool_call if module == "tool_call" else _instruct_follow
    try:
        return grader(asserts, reply)
    except (TypeError, KeyError, AttributeError, ValueError, re.error):  # no verdict
        return None


def tool_call_failure(asserts: Any, reply: dict[str, Any]) -> str | None:
    """:func:`grade_failure` of the ``tool_call`` module."""
    return grade_failure("tool_call", asserts, reply)


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


def _instruct_follow(asserts: Any, reply: dict[str, Any]) -> str | None:  # noqa: PLR0911, PLR0912
    """The ``instruct_follow`` module: each assertion on the reply's text, stripped."""
    if not isinstance(asserts, list) or not all(isinstance(a, dict) for a in asserts):
        raise TypeError("assertions that are no list of objects")
    text = _text(reply).strip()
    words = len(re.findall(r"[A-Za-z0-9]+", text))
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    for check in asserts:
        kind = check.get("kind")
        if kind == "exact_length_words" and words != check["value"]:
            return f"{words} words, not {check['value']}"
        if kind == "max_length_words" and words > check["value"]:
            return f"{words} words, over {check['value']}"
        if kind == "min_length_words" and words < check["value"]:
            return f"{words} words, under {check['value']}"
        if kind == "case_only":
            letters = "".join(re.findall(r"[A-Za-z]+", text))
            case = check["value"]
            if (case == "lowercase" and letters != letters.lower()) or (
                case == "uppercase" and letters != letters.upper()
            ):
                return f"the text is not {case}"
            if case == "titlecase" and text != text.title():
                return "the text is not titlecase"
        if kind == "format_regex" and not re.search(
            check["pattern"], text, re.MULTILINE | re.DOTALL
        ):
            return "the text does not match the format"
        if kind == "required_phrase" and check["value"] not in text:
            return f"missing phrase {check['value']!r}"
        if kind == "required_phrase_any" and not any(v in text for v in check.get("values") or []):
            return "missing each of the phrases"
        if kind == "forbidden_phrase" and check["value"] in text:
            return f"forbidden phrase {check['value']!r}"
        if kind == "required_url_count" and len(re.findall(r"https?://\S+", text)) < check["min"]:
            return "too few URLs"
        if kind == "required_section_headers":
            missing = [h for h in check["headers"] if h not in lines]
            if missing:
                return f"missing headers {missing}"
        if kind == "bullet_count":
            bullets = sum(1 for line in lines if re.match(r"^[-*]\s+", line))
            if bullets != check["value"]:
                return f"{bullets} bullets, not {check['value']}"
        if kind == "language" and check["value"] == "english" and re.search(r"[^\x00-\x7F]", text):
            return "non-ASCII text in an English reply"
        if kind not in _INSTRUCT_KINDS:
            return f"an assertion of an unknown kind {kind!r}"
    return None


_INSTRUCT_KINDS = frozenset({
    "exact_length_words", "max_length_words", "min_length_words", "case_only", "format_regex",
    "required_phrase", "required_phrase_any", "forbidden_phrase", "required_url_count",
    "required_section_headers", "bullet_count", "language",
})  # fmt: skip
