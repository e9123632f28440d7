"""benchlocal-cli's grade of a reply, replayed where this verifier knows the pinned grader.

benchlocal-cli 0.9.9 (47d1d66) grades a scenario's saved reply (``raw_response``, its think
tags already taken out) with the scoring module its pack names (``runner.run_scenario``:
``score_scenario(scenario, raw_response)``); before and after that, the runner may fail a run
for reasons of its own (an HTTP error, a time-out, a reply cut at the token limit), never pass
one. So a scenario marked passed must be one the module passes; a failed one may be anything.

Replayed here, each written from the module's behaviour at 47d1d66, the four modules of the
scored packs (:data:`GRADED`):

- ``tool_call`` (toolcall-15): the assertions on the reply's tool calls and text;
- ``instruct_follow`` (instructfollow-15): the constraints on the reply's text;
- ``struct_output`` (structoutput-15): JSON with its schema, paths and values, CSV columns,
  Markdown tables, minimal YAML and patterns, on the reply's text;
- ``data_extract`` (dataextract-15): the extracted fields against the scenario's
  ``expected`` value (85 percent of them, and the top-level shape where the scenario declares
  it), or its field assertions.

A module is replayed only where the recorded checkout's module and ``scoring/common.py`` are
the blobs of 47d1d66 (:func:`replayed_modules`); another commit's grade is the harness's own
(ADR 0048). A reply or a scenario this replay cannot read as benchlocal-cli does (arguments
that are no JSON object, an assertion with a missing member, a schema that is no schema) is not
judged here: only a clear failure is a finding.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable

from bundle_schema.errors import CheckFailed
from verify.replies import BENCHLOCAL_TEXT_FIELDS, without_think_tags

SCORING = "benchlocal_cli/scoring"
"""Where benchlocal-cli keeps its scoring modules."""

GRADED: Mapping[str, str] = {
    "tool_call": "c69568e9b5b304f3c70beb91e8a2c80330a0d433",
    "instruct_follow": "fb5a78981c2f6cde785b605ca00b5267370e11c2",
    "struct_output": "eb05afd6f14d8df20ffd77e7033c7509683b5a82",
    "data_extract": "b07dd24f2aabbf41663fe983ac6ad0ff9249b407",
}
"""The scoring modules whose grade is replayed (:func:`grade_failure`), each with the git blob
id of its ``<module>.py`` at 47d1d66."""

COMMON = "7f103c3066380bb4bc62e13e3ebd58620805fba2"
"""The git blob id of ``scoring/common.py`` at 47d1d66, which each of them reads the reply
with."""


def replayed_modules(files: Mapping[str, str]) -> frozenset[str]:
    """The modules of :data:`GRADED` whose grader is the one replayed here, in a checkout whose
    listing maps each path to its blob id: the module's file and ``scoring/common.py`` are the
    blobs of 47d1d66."""
    if files.get(f"{SCORING}/common.py") != COMMON:
        return frozenset()
    return frozenset(m for m, blob in GRADED.items() if files.get(f"{SCORING}/{m}.py") == blob)


_RAISES = (
    TypeError, KeyError, AttributeError, ValueError, IndexError, OverflowError, re.error,
    csv.Error, jsonschema.SchemaError, Unresolvable,
)  # fmt: skip
"""What benchlocal-cli's graders raise on a reply or a scenario they cannot read: its runner
does not catch it (``run_scenario`` calls ``score_scenario`` bare), so no run it grades is
passed."""


def grade_failure(module: str, scenario: Mapping[str, Any], reply: dict[str, Any]) -> str | None:
    """Why benchlocal-cli's scoring ``module`` (one of :data:`GRADED`) fails ``reply`` to the
    pinned ``scenario`` (its record in the pinned pack), or raises on it; None when it passes
    it, or when this replay cannot tell (a value nested past the stack; an assertion whose
    schema refers to another document is passed over)."""
    grader = _GRADERS[module]
    try:
        return grader(scenario, reply)
    except RecursionError:
        return None
    except _RAISES as exc:
        return f"the grader raises on it ({type(exc).__name__}), so no run it grades passes"


_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_METACHARACTERS = frozenset(".^$*+?{}[]\\|()")


def search(pattern: str, text: str, flags: int = 0) -> bool:
    """Whether ``re.search(pattern, text, flags)`` finds a match. A pattern of literal runs
    joined by ``.+`` or ``.*`` under ``re.DOTALL`` (perhaps after a ``^``; IF-01's
    ``^1\\. .+\\n2\\. .+...``) is decided by finding each run at its earliest place, in time
    linear in the text: ``re`` backtracks through every split of such a text that does not
    match, in time of the text's length to the power of the repeats (minutes on 10 KB for
    IF-01). Any other pattern is ``re``'s."""
    plain = flags & re.DOTALL and not flags & (re.IGNORECASE | re.VERBOSE)
    chain = _chain(pattern) if plain else None
    if chain is None:
        return re.search(pattern, text, flags) is not None
    anchored, runs, gaps = chain
    start = 0
    while (found := text.find(runs[0], start)) >= 0:
        if anchored and found and not (flags & re.MULTILINE and text[found - 1] == "\n"):
            start = found + 1
            continue
        end = found + len(runs[0])
        for gap, run in zip(gaps, runs[1:], strict=True):
            end = text.find(run, end + gap)
            if end < 0:  # no later start finds it either: each run would come later still
                return False
            end += len(run)
        return True
    return False


def _chain(pattern: str) -> tuple[bool, list[str], list[int]] | None:
    """A pattern as an optional ``^``, literal runs, and between each two the least number of
    characters that joins them (1 for ``.+``, 0 for ``.*``); None for any other pattern."""
    anchored = pattern.startswith("^")
    runs, gaps, run = [], [], []
    index = 1 if anchored else 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            escaped = pattern[index + 1 : index + 2]
            if escaped in _ESCAPED:
                run.append(_ESCAPED[escaped])
            elif escaped and (escaped in _METACHARACTERS or escaped in " -/:,#'\""):
                run.append(escaped)
            else:
                return None  # a class, a boundary, a reference: re's
            index += 2
        elif char == "." and pattern[index + 1 : index + 2] in ("+", "*"):
            if pattern[index + 2 : index + 3] in ("?", "+"):  # lazy or possessive: re's
                return None
            runs.append("".join(run))
            gaps.append(1 if pattern[index + 1] == "+" else 0)
            run = []
            index += 2
        elif char in _METACHARACTERS:
            return None
        else:
            run.append(char)
            index += 1
    runs.append("".join(run))
    return anchored, runs, gaps


def _asserts(scenario: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scenario's assertions (its ``verifier.asserts``), each an object."""
    verifier = scenario.get("verifier", {})
    asserts = verifier.get("asserts", []) if isinstance(verifier, dict) else None
    if not isinstance(asserts, list) or not all(isinstance(a, dict) for a in asserts):
        raise TypeError("assertions that are no list of objects")
    return asserts


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
        for field in BENCHLOCAL_TEXT_FIELDS:
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


def _tool_call(scenario: Mapping[str, Any], reply: dict[str, Any]) -> str | None:
    """The ``tool_call`` module: each assertion on the reply's tool calls (the first call's
    arguments) and text."""
    asserts = _asserts(scenario)
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
        matched = search(check["pattern"], _text(reply), re.MULTILINE | re.DOTALL)
        return None if matched else "the text does not match"
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


def _instruct_follow(  # noqa: PLR0911, PLR0912
    scenario: Mapping[str, Any], reply: dict[str, Any]
) -> str | None:
    """The ``instruct_follow`` module: each assertion on the reply's text, stripped."""
    asserts = _asserts(scenario)
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
        if kind == "format_regex" and not search(check["pattern"], text, re.MULTILINE | re.DOTALL):
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


# --- struct_output -------------------------------------------------------------------------------

_JSON_KINDS = frozenset({"json_parse_required", "json_schema", "exact_json", "jsonpath_assertion"})


_TAG_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _unfenced(text: str) -> str:
    """The text, stripped, out of the one Markdown code fence it is wholly in, if it is: the
    same as ``common.strip_code_fence``'s ``re.fullmatch(r"```(?:[A-Za-z0-9_-]+)?\\s*(.*?)
    \\s*```", ..., re.DOTALL)``, in time linear in the text (that pattern backtracks, cubic in
    the spaces of a fence that does not close)."""
    text = text.strip()
    fence = "```"
    if len(text) < 2 * len(fence) or not (text.startswith(fence) and text.endswith(fence)):
        return text
    inner = text[len(fence) : -len(fence)]
    tag = 0
    while tag < len(inner) and inner[tag] in _TAG_CHARACTERS:
        tag += 1
    return inner[tag:].strip()


def _json_of(text: str) -> Any:
    """The text's JSON value, out of its code fence (``common.parse_json_text``); raises
    :class:`_NotRead` where benchlocal-cli's parse fails, as its grader then fails the reply."""
    try:
        return json.loads(_unfenced(text))
    except (ValueError, RecursionError) as exc:
        raise _NotRead("the reply is not JSON") from exc


class _NotRead(CheckFailed):
    """The reply does not read as the grader requires: the grader fails it, with this why."""


def _at(data: Any, path: str) -> Any:
    """The value at a dotted path with ``[n]`` indexes (``common.get_path``); raises what the
    lookup raises where there is none."""
    current = data
    for part in path.split("."):
        if not part:
            continue
        if "[" in part:
            name, rest = part.split("[", 1)
            if name:
                current = current[name]
            for index in re.findall(r"\[(\d+)\]", "[" + rest):
                current = current[int(index)]
        else:
            current = current[part]
    return current


def _struct_output(scenario: Mapping[str, Any], reply: dict[str, Any]) -> str | None:
    """The ``struct_output`` module: each assertion on the reply's text, the first that fails
    named."""
    text = _text(reply)
    parsed: list[Any] = []  # the reply's JSON value, once read
    try:
        for check in _asserts(scenario):
            kind = check.get("kind")
            if kind in _JSON_KINDS and (kind == "json_parse_required" or not parsed):
                parsed[:] = [_json_of(text)]
            problem = _struct_check(kind, check, text, parsed[0] if parsed else None)
            if problem is not None:
                return problem
    except _NotRead as exc:
        return str(exc)
    return None


def _struct_check(  # noqa: PLR0911 - one branch per kind of assertion
    kind: Any, check: dict[str, Any], text: str, parsed: Any
) -> str | None:
    if kind == "json_parse_required":
        return None
    if kind == "json_schema":
        schema = check["schema"]
        if _refers_elsewhere(schema):
            return None  # not judged: a later assertion may still fail the reply
        try:
            jsonschema.validate(parsed, schema)
        except jsonschema.ValidationError as exc:
            return f"the JSON breaks its schema: {exc.message[:200]}"
        return None
    if kind == "yaml_parse_required":
        return None if _minimal_yaml(text) else "the reply is not key/value YAML"
    if kind == "exact_json":
        return None if parsed == check["value"] else "the JSON is not the expected value"
    if kind == "jsonpath_assertion":
        return _jsonpath_check(check, parsed)
    if kind == "csv_columns":
        try:
            columns = next(csv.reader(io.StringIO(_unfenced(text))), None)
        except csv.Error:
            return "the reply is not CSV"
        if columns is None or [c.strip() for c in columns] != check["expected"]:
            return "the CSV columns are not the expected ones"
        return None
    if kind == "markdown_structure":
        return _markdown_check(check["headers"], text)
    if kind == "format_regex":
        found = search(check["pattern"], text, re.MULTILINE | re.DOTALL)
        return None if found else "the text does not match the format"
    return f"an assertion of an unknown kind {kind!r}"


def _refers_elsewhere(schema: Any) -> bool:
    """Whether the schema refers to a document other than itself: jsonschema would fetch it,
    and verification never touches the network, so that assertion is not judged."""
    pending = [schema]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("$ref", "$dynamicRef") and not str(item).startswith("#"):
                    return True
                pending.append(item)
        elif isinstance(value, list):
            pending.extend(value)
    return False


def _jsonpath_check(check: dict[str, Any], parsed: Any) -> str | None:
    path = check["path"]
    try:
        if not path.startswith("$."):
            return f"the path {path!r} is not a $. path"
        value = _at(parsed, path[2:])
    except (KeyError, IndexError, TypeError, ValueError):
        return f"no value at {path}"
    if "value" in check and value != check["value"]:
        return f"the value at {path} differs"
    if "regex" in check and not re.search(check["regex"], str(value)):
        return f"the value at {path} does not match"
    return None


def _minimal_yaml(text: str) -> bool:
    """Whether benchlocal-cli's minimal YAML reader (``struct_output._minimal_yaml_parse``)
    reads the text: each line that is not blank or a comment holds a ``:``, one holds a key
    before it, and each value of digits is a number Python's ``int`` takes."""
    keyed = False
    for line in _unfenced(text).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if ":" not in line:
            return False
        key, value = (part.strip() for part in line.split(":", 1))
        if value.lower() not in _YAML_WORDS and _YAML_INTEGER.fullmatch(value):
            try:
                int(value)
            except ValueError:  # past the interpreter's limit on the digits of an int
                return False
        keyed = keyed or bool(key)
    return keyed


_YAML_WORDS = frozenset({"true", "false", "null", "~"})
_YAML_INTEGER = re.compile(r"-?\d+")


def _table_row(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|") or not stripped.endswith("|"):
        return None
    return [cell.strip().lower() for cell in stripped.strip("|").split("|")]


def _markdown_check(headers: list[Any], text: str) -> str | None:
    """Each header row in the text, a separator row of its width under it, in the order
    given (``struct_output``'s ``markdown_structure``)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    rows = [_table_row(line) for line in lines]
    positions = []
    for header in headers:
        expected = _table_row(header)
        if expected is None:
            return f"the header {header!r} is no table row"
        if expected not in rows:
            return f"no table header {header}"
        at = rows.index(expected)
        below = _table_row(lines[at + 1]) if at + 1 < len(lines) else None
        if (
            below is None
            or len(below) != len(expected)
            or not all(re.fullmatch(r":?-+:?", cell.replace(" ", "")) for cell in below)
        ):
            return f"no separator row under {header}"
        positions.append(at)
    return None if positions == sorted(positions) else "the table headers are out of order"


# --- data_extract --------------------------------------------------------------------------------

ANCHORS = {
    "DE-02.items": "name",
    "DE-07.$root": "name",
    "DE-13.line_items": "description",
    "DE-13.discounts": "description",
}
"""The key an array of objects is matched by, item to item, by scenario and path
(``data_extract._ARRAY_OBJECT_ANCHORS`` at 47d1d66: part of the grader, not of the pack)."""

TOLERANCE = 0.01
"""How far an extracted number may be from the expected one."""

PASS_PERCENT = 85
"""A scenario with an ``expected`` value passes with this share of its fields correct,
rounded to a whole percent."""


def _data_extract(scenario: Mapping[str, Any], reply: dict[str, Any]) -> str | None:
    """The ``data_extract`` module: the reply's JSON against the scenario's ``expected``
    value, else its field assertions."""
    try:
        data = _json_of(_text(reply))
    except _NotRead as exc:
        return str(exc)
    if "expected" in scenario:
        return _expected_failure(scenario, data, scenario["expected"])
    for check in _asserts(scenario):
        if (problem := _field_failure(check, data)) is not None:
            return problem
    return None


def _field_failure(check: dict[str, Any], data: Any) -> str | None:
    """One field assertion of ``data_extract`` on the reply's JSON."""
    kind, field = check.get("kind"), check.get("field")
    if kind == "no_extra_fields":
        if not isinstance(data, dict):
            return "the JSON is no object"
        extra = sorted(set(data) - set(check["allowed"]))
        return f"extra fields {extra}" if extra else None
    if kind not in ("field_required", "field_exact_value", "field_regex", "field_in_set"):
        return f"an assertion of an unknown kind {kind!r}"
    if not isinstance(field, str):
        raise TypeError("a field assertion with no field")
    try:
        value = _at(data, field)
    except (KeyError, IndexError, TypeError):
        return f"missing field {field}"
    if (
        (kind == "field_exact_value" and value != check["value"])
        or (kind == "field_regex" and not re.search(check["pattern"], str(value)))
        or (kind == "field_in_set" and value not in check["values"])
    ):
        return f"the field {field} is not as asked"
    return None


def _expected_failure(scenario: Mapping[str, Any], data: Any, expected: Any) -> str | None:
    """Under :data:`PASS_PERCENT` of the expected fields correct, or a top-level shape that
    is not the expected one where the scenario declares its shape
    (``declares_top_level_shape``): a singleton list is read as its object, and an object as
    a list of one where one is expected, for the count alone."""
    shape_differs = _shape(expected) != _shape(data)
    scored = data
    if isinstance(expected, dict) and isinstance(data, list):
        if len(data) == 1 and isinstance(data[0], dict):
            scored = data[0]
    elif isinstance(expected, list) and isinstance(data, dict) and len(expected) == 1:
        scored = [data]
    correct, total = _compared(expected, scored, str(scenario.get("id", "unknown")), "")
    score = round((correct / total) * 100) if total else 0
    if score < PASS_PERCENT:
        return f"{correct} of {total} fields correct ({score}%, under {PASS_PERCENT}%)"
    if shape_differs and scenario.get("declares_top_level_shape", False):
        return f"the top level is {_shape(data)}, not the declared {_shape(expected)}"
    return None


def _shape(value: Any) -> str:
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "other"


def _compared(expected: Any, actual: Any, scenario: str, path: str) -> tuple[int, int]:
    """(correct, total) fields of ``actual`` against ``expected`` (``_compare_value``)."""
    if isinstance(expected, list):
        if all(isinstance(item, dict) for item in expected):
            return _compared_objects(expected, actual, scenario, path)
        return _compared_scalars(expected, actual)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return 0, len(expected)
        correct = total = 0
        for key, value in expected.items():
            got, of = _compared(value, actual.get(key), scenario, f"{path}.{key}" if path else key)
            correct, total = correct + got, total + of
        return correct, total
    return (1 if _scalar_equal(expected, actual) else 0), 1


def _scalar_equal(expected: Any, actual: Any) -> bool:
    """``_compare_scalar``: null is null, text equal once stripped, a boolean the same, a
    number within 0.01; any other expected value matches nothing."""
    if expected is None:
        return actual is None
    if isinstance(expected, str):
        return isinstance(actual, str) and actual.strip() == expected.strip()
    if isinstance(expected, bool):
        return actual is expected
    if isinstance(expected, int | float):
        if not isinstance(actual, int | float) or isinstance(actual, bool):
            return False
        return abs(float(actual) - float(expected)) <= TOLERANCE
    return False


def _compared_scalars(expected: list[Any], actual: Any) -> tuple[int, int]:
    """One field: the list holds the expected values, as many, each matched once."""
    if not isinstance(actual, list) or len(expected) != len(actual):
        return 0, 1
    remaining = list(actual)
    for value in expected:
        match = next((i for i, got in enumerate(remaining) if _scalar_equal(value, got)), None)
        if match is None:
            return 0, 1
        remaining.pop(match)
    return 1, 1


def _compared_objects(
    expected: list[dict[str, Any]], actual: Any, scenario: str, path: str
) -> tuple[int, int]:
    """Each expected object matched to the reply's object of the same anchor (:data:`ANCHORS`)
    and compared key by key; an array with no anchor known scores none of its fields."""
    if not isinstance(actual, list):
        return 0, len(expected) * (len(expected[0]) if expected else 1)
    anchor = ANCHORS.get(f"{scenario}.{path or '$root'}")
    if not anchor:
        return 0, len(expected) or 1
    by_anchor = {
        str(item[anchor]): item
        for item in actual
        if isinstance(item, dict) and isinstance(item.get(anchor), str)
    }
    correct = total = 0
    for wanted in expected:
        item = by_anchor.get(str(wanted.get(anchor)))
        for key, value in wanted.items():
            if item is None:
                total += 1
                continue
            got, of = _compared(value, item.get(key), scenario, f"{path}.{key}" if path else key)
            correct, total = correct + got, total + of
    return correct, total


_GRADERS = {
    "tool_call": _tool_call,
    "instruct_follow": _instruct_follow,
    "struct_output": _struct_output,
    "data_extract": _data_extract,
}
