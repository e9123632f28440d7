"""The replayed graders (``verify._consistency.benchlocal_grades``) against benchlocal-cli's own
scoring modules, run here from the pinned checkout a recorded real bundle holds (0.9.9 at
47d1d66: ``benchlocal_cli/scoring/`` and the packs, byte for byte as the run had them).

The replay is the verifier's; the modules are the harness's. The two must agree:

- on every reply of the three recorded real bundles, to each scenario of the four scored packs
  (toolcall-15, instructfollow-15, structoutput-15, dataextract-15);
- on replies generated for each pinned scenario (hypothesis, derandomized): its expected value
  or the recorded replies, edited field by field, wrapped, fenced, or given think tags.

Where the replay says "fails", the module fails the reply or raises on it (no false finding);
where the module fails it or raises on it (its runner does not catch that: no run it grades
passes), the replay names a failure (nothing missed).
"""

from __future__ import annotations

import copy
import importlib
import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gate_kit import tar_evidence
from tests.paths import EXAMPLES
from verify._consistency.benchlocal_grades import GRADED, grade_failure, replayed_modules

RECORDED = sorted((EXAMPLES / "recorded").glob("llamacpp-smollm2-135m*.tar"))
PACKS = {
    "toolcall-15": "tool_call",
    "instructfollow-15": "instruct_follow",
    "structoutput-15": "struct_output",
    "dataextract-15": "data_extract",
}
SCORING = ("__init__", "common", *GRADED)


@pytest.fixture(scope="module")
def recorded() -> list[dict[str, bytes]]:
    assert len(RECORDED) == 3, RECORDED
    return [tar_evidence(tar) for tar in RECORDED]


def _checkout(files: dict[str, bytes]) -> tuple[dict[str, str], Callable[[str], bytes]]:
    """The benchlocal-cli checkout's listing (path -> blob id) and a reader of its files."""
    listing = {}
    for line in files["upstreams/benchlocal/tree.txt"].decode().splitlines():
        meta, path = line.split("\t", 1)
        listing[path] = meta.split()[2]
    return listing, lambda path: files[f"upstreams/benchlocal/files/{listing[path]}"]


@pytest.fixture(scope="module")
def upstream(
    recorded: list[dict[str, bytes]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ModuleType]]:
    """benchlocal-cli's scoring modules, imported from the recorded checkout's own files (the
    package's ``__init__`` left empty: it reads the installed distribution's version)."""
    listing, read = _checkout(recorded[0])
    assert replayed_modules(listing) == frozenset(GRADED)  # the replay is of these blobs
    root = tmp_path_factory.mktemp("benchlocal")
    package = root / "benchlocal_cli"
    (package / "scoring").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "types.py").write_bytes(read("benchlocal_cli/types.py"))
    for name in SCORING:
        path = f"benchlocal_cli/scoring/{name}.py"
        (package / "scoring" / f"{name}.py").write_bytes(read(path))
    assert "benchlocal_cli" not in sys.modules
    sys.path.insert(0, str(root))
    try:
        yield {m: importlib.import_module(f"benchlocal_cli.scoring.{m}") for m in GRADED}
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.split(".")[0] == "benchlocal_cli"]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def scenarios(recorded: list[dict[str, bytes]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The pinned scenarios of the four scored packs, by pack and id."""
    _, read = _checkout(recorded[0])
    packs = {}
    for pack in PACKS:
        lines = read(f"benchlocal_cli/packs/{pack}.jsonl").decode().splitlines()
        records = [json.loads(line) for line in lines[1:] if line.strip()]
        packs[pack] = {r["id"]: r for r in records}
    return packs


def _agree(
    upstream: dict[str, ModuleType], module: str, scenario: dict[str, Any], reply: dict[str, Any]
) -> str:
    """The module's grade of the reply ("passed", "failed", or "raised"), which the replay's
    agrees with."""
    replayed = grade_failure(module, scenario, copy.deepcopy(reply))
    try:
        graded = upstream[module].score_scenario(copy.deepcopy(scenario), copy.deepcopy(reply))
    except RecursionError:  # nested past the stack: the replay may say either
        return "raised"
    except Exception:  # the module cannot grade it: no run it grades passes
        assert replayed is not None, (scenario["id"], reply)
        return "raised"
    if graded.passed:
        assert replayed is None, (scenario["id"], reply, replayed)
        return "passed"
    assert replayed is not None, (scenario["id"], reply, graded.detail)
    return "failed"


def _recorded_replies(
    recorded: list[dict[str, bytes]],
) -> Iterator[tuple[str, str, dict[str, Any], bool]]:
    for files in recorded:
        report = json.loads(files["components/tool_instruction/raw/benchlocal.json"])
        for pack in report["packs"]:
            if pack["pack_id"] not in PACKS:
                continue
            for run in pack["scenarios"]:
                if isinstance(run.get("raw_response"), dict):
                    yield pack["pack_id"], run["id"], run["raw_response"], run["passed"]


def _retried_replies(recorded: list[dict[str, bytes]]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The replies of the runs' earlier attempts (``retry_attempts``), graded too."""
    for files in recorded:
        report = json.loads(files["components/tool_instruction/raw/benchlocal.json"])
        for pack in report["packs"]:
            for run in pack["scenarios"] if pack["pack_id"] in PACKS else ():
                for attempt in run.get("retry_attempts") or ():
                    if isinstance(attempt.get("raw_response"), dict):
                        yield pack["pack_id"], run["id"], attempt["raw_response"]


def test_every_recorded_reply_is_graded_as_benchlocal_graded_it(
    recorded: list[dict[str, bytes]],
    upstream: dict[str, ModuleType],
    scenarios: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """Each reply of the recorded real runs (SmolLM2-135M on llama.cpp): the replay, the module
    and the run's own verdict agree."""
    seen = dict.fromkeys(PACKS, 0)
    passed = dict.fromkeys(PACKS, 0)
    for pack, key, reply, verdict in _recorded_replies(recorded):
        scenario = scenarios[pack][key]
        _agree(upstream, PACKS[pack], scenario, reply)
        assert (grade_failure(PACKS[pack], scenario, reply) is None) is verdict, (pack, key)
        seen[pack] += 1
        passed[pack] += verdict
    assert seen == dict.fromkeys(PACKS, 31), seen  # 15, 15 and 1 (the draw) a pack
    assert all(0 < passed[p] < seen[p] for p in PACKS if p != "dataextract-15"), passed
    retried = 0
    for pack, key, reply in _retried_replies(recorded):
        _agree(upstream, PACKS[pack], scenarios[pack][key], reply)
        retried += 1
    assert retried > 0


# --- generated replies ---------------------------------------------------------------------------


def _reply(text: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls is not None:
        message["tool_calls"] = calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 3000), st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from(["", " ", "Berlin", "URBAN BEAN COFFEE", "4821", "Visa", "true"]),
    st.text(max_size=8),
)  # fmt: skip


def _near(draw: st.DrawFn, value: Any) -> Any:
    """A value close to ``value``: a number moved a little or more, a boolean as a number, a
    text padded, recased or cut."""
    if isinstance(value, bool):
        return draw(st.sampled_from([int(value), not value, str(value).lower()]))
    if isinstance(value, int | float):
        return value + draw(st.sampled_from([0.004, -0.009, 0.02, 0.3, -1, 0.0]))
    if isinstance(value, str):
        return draw(st.sampled_from([f" {value} ", value.lower(), value.upper(), value[:-1]]))
    return draw(_SCALARS)


@st.composite
def _edited(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with a few of its members replaced, moved near, removed, or added to."""
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(0, 3))):
        holders = list(_containers(value))
        if not holders:
            return _near(draw, value)
        holder = draw(st.sampled_from(holders))
        if isinstance(holder, dict):
            keys = [*sorted(holder), "extra"]
            key = draw(st.sampled_from(keys))
            action = draw(st.sampled_from(["set", "near", "near", "drop", "shape"]))
            if action == "drop":
                holder.pop(key, None)
            elif action == "shape" and key in holder:
                holder[key] = [holder[key]]
            elif action == "near" and key in holder:
                holder[key] = _near(draw, holder[key])
            else:
                holder[key] = draw(_SCALARS)
        elif holder:
            index = draw(st.integers(0, len(holder) - 1))
            action = draw(st.sampled_from(["pop", "set", "near", "swap"]))
            if action == "pop":
                holder.pop(index)
            elif action == "near":
                holder[index] = _near(draw, holder[index])
            elif action == "swap":
                holder.reverse()
            else:
                holder[index] = draw(_SCALARS)
    return value


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict | list):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item)


def _wrapped(text: str, how: str) -> str:
    return {
        "as is": text,
        "fenced": f"```json\n{text}\n```",
        "bare fence": f"```\n{text}\n```",
        "think": f"<think>first</think>\n{text}",
        "spaced": f"  \n{text}\n ",
        "prose": f"Here it is: {text}",
    }[how]


_WRAPS = st.sampled_from(["as is", "fenced", "bare fence", "think", "spaced", "prose"])


def _holding(path: str, value: Any) -> Any:
    """The smallest JSON value with ``value`` at a ``common.get_path`` path (``a.b[1].c``)."""
    steps: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        steps += [name] if name else []
        steps += [int(i) for i in rest.replace("]", "").split("[") if i]
    for step in reversed(steps):
        value = {step: value} if isinstance(step, str) else [None] * step + [value]
    return value


def _table(header: str) -> str:
    width = header.count("|") - 1
    return f"{header}\n|{'---|' * width}\n|{' x |' * width}"


def _texts_of(scenario: dict[str, Any]) -> list[str]:
    """Texts a reply to the scenario could be built from: its expected value, its assertions'
    values, columns, headers and paths."""
    texts = []
    if "expected" in scenario:
        texts.append(json.dumps(scenario["expected"]))
        if isinstance(scenario["expected"], list):
            texts.append(json.dumps(scenario["expected"][0]))
        else:
            texts.append(json.dumps([scenario["expected"]]))
    found: dict[str, Any] = {}  # one object holding every path asked about
    for check in scenario["verifier"].get("asserts", []):
        texts += _texts_for(check, found)
    if found:
        texts.append(json.dumps(found))
    return texts or ["{}"]


def _texts_for(  # noqa: PLR0911 - one branch per kind of assertion
    check: dict[str, Any], found: dict[str, Any]
) -> list[str]:
    """Texts built from one assertion; the value at a path it asks about put in ``found``."""
    kind = check.get("kind")
    if kind == "csv_columns":
        columns = check["expected"]
        return [",".join(columns) + "\nada,36,London,a@example.com", " , ".join(columns),
                ",".join(columns[::-1])]  # fmt: skip
    if kind == "markdown_structure":
        tables = [_table(h) for h in check["headers"]]
        return ["\n\n".join(tables), "\n\n".join(tables[::-1]), "\n".join(check["headers"])]
    if kind == "jsonpath_assertion":
        at = check["path"][2:]
        if isinstance(part := _holding(at, check.get("value")), dict):
            found.update(part)
        return [json.dumps(_holding(at, check.get("value", "ISBN 978-0")))]
    if kind == "exact_json":
        return [json.dumps(check["value"])]
    if kind == "json_schema":
        return [json.dumps(dict.fromkeys(check["schema"].get("required", []), 1))]
    if kind in ("field_required", "field_exact_value", "field_regex", "field_in_set"):
        found.update(
            _holding(check["field"], check.get("value", (check.get("values") or ["x-17"])[0]))
        )
    if kind == "yaml_parse_required":
        return ["name: x\nport: 8080\nenabled: true", ": x\n# note", "name x", ""]
    return []


@st.composite
def _text_reply(draw: st.DrawFn, scenario: dict[str, Any], recorded: list[str]) -> dict[str, Any]:
    base = draw(st.sampled_from(_texts_of(scenario) + recorded))
    if draw(st.booleans()):
        try:
            base = json.dumps(draw(_edited(json.loads(base))))
        except ValueError:
            base = base[: draw(st.integers(0, len(base)))]
    if draw(st.integers(0, 9)) == 0:
        base = draw(st.text(max_size=40))
    return _reply(_wrapped(base, draw(_WRAPS)))


def _names_and_args(scenario: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    names, args = ["web_search"], {}
    for check in scenario["verifier"].get("asserts", []):
        for key in ("value", "values", "expected_names"):
            found = check.get(key)
            if check.get("kind") in ("exact_function_name", "function_name_in",
                                     "multi_call_order", "required_function_names"):  # fmt: skip
                names += found if isinstance(found, list) else [found] if found else []
        for arg in check.get("args", []) + ([check["arg"]] if "arg" in check else []):
            args[arg] = check.get("value", check.get("min", "Berlin"))
    return sorted(set(names)), args


@st.composite
def _call_reply(draw: st.DrawFn, scenario: dict[str, Any]) -> dict[str, Any]:
    names, args = _names_and_args(scenario)
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        chosen = {k: v for k, v in args.items() if draw(st.booleans())}
        chosen = draw(_edited(chosen)) if draw(st.booleans()) else chosen
        given = json.dumps(chosen) if draw(st.integers(0, 5)) else "{not json"
        function = {"name": draw(st.sampled_from(names)), "arguments": given}
        calls.append({"type": "function", "function": function})
    text = draw(st.sampled_from([None, "", "It ended in 1945.", "I cannot call tools."]))
    return _reply(text, calls or None)


def _generated(
    upstream: dict[str, ModuleType],
    module: str,
    scenarios: list[dict[str, Any]],
    answers: dict[str, list[str]],
) -> Counter[str]:
    """How the module graded 300 replies generated for the scenarios, each of which the replay
    agreed with."""

    @st.composite
    def case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
        scenario = draw(st.sampled_from(scenarios))
        if module == "tool_call" and draw(st.integers(0, 3)):
            return scenario, draw(_call_reply(scenario))
        return scenario, draw(_text_reply(scenario, answers.get(scenario["id"], [])))

    @settings(max_examples=300, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
    @given(case())
    def agree(drawn: tuple[dict[str, Any], dict[str, Any]]) -> None:
        outcomes[_agree(upstream, module, *drawn)] += 1

    outcomes: Counter[str] = Counter()
    agree()
    return outcomes


@pytest.mark.parametrize("pack", list(PACKS))
def test_generated_replies_are_graded_as_benchlocal_grades_them(
    pack: str,
    recorded: list[dict[str, bytes]],
    upstream: dict[str, ModuleType],
    scenarios: dict[str, dict[str, dict[str, Any]]],
) -> None:
    pinned = [scenarios[pack][key] for key in sorted(scenarios[pack])]
    outcomes = _generated(upstream, PACKS[pack], pinned, _answers(recorded, pack))
    # both grades, often: a replay that agreed only by failing (or passing) everything fails here
    assert outcomes["passed"] >= 20 and outcomes["failed"] >= 20, outcomes


def _asked(*asserts: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": more.pop("id", "M"), "verifier": {"asserts": list(asserts)}, **more}


MADE = {
    "tool_call": [
        _asked({"kind": "content_regex", "pattern": "1945"}),  # no call needed
        _asked({"kind": "multi_call_order", "expected_names": ["get_contacts", "send_email"]},
               {"kind": "required_function_names", "values": ["send_email"]}),
        _asked({"kind": "function_name_in", "values": ["get_weather", "web_search"]},
               {"kind": "forbidden_args_absent", "args": ["units"]},
               {"kind": "arg_numeric_range", "arg": "days", "min": 1},
               {"kind": "exact_arg_value", "arg": "location", "value": "Berlin"},
               {"kind": "arg_in_enum", "arg": "units", "values": ["celsius"]}),
    ],
    "struct_output": [
        _asked({"kind": "markdown_structure", "headers": ["| a | b |", "| c | d | e |"]}),
        _asked({"kind": "json_parse_required"},
               {"kind": "jsonpath_assertion", "path": "$.items[1].isbn", "regex": "^ISBN \\d"},
               {"kind": "jsonpath_assertion", "path": "$.count", "value": 2}),
        _asked({"kind": "jsonpath_assertion", "path": "x.title", "value": "T"}),  # no $. path
        _asked({"kind": "exact_json", "value": {"a": [1, 2.5, True, None], "b": "x"}}),
        _asked({"kind": "json_schema", "schema": {
            "type": "object", "required": ["n"],
            "properties": {"n": {"type": "integer", "minimum": 1}}}}),
        _asked({"kind": "csv_columns", "expected": ["a", "b"]}),
        _asked({"kind": "yaml_parse_required"}),
    ],
    "data_extract": [
        _asked({"kind": "field_required", "field": "who.name"},
               {"kind": "field_exact_value", "field": "n", "value": 3},
               {"kind": "field_regex", "field": "code", "pattern": "^X-\\d+$"},
               {"kind": "field_in_set", "field": "kind", "values": ["p", "q"]},
               {"kind": "no_extra_fields", "allowed": ["who", "n", "code", "kind"]}),
        _asked(id="DE-07", declares_top_level_shape=True,
               expected=[{"name": "Ann", "age": 31, "tags": ["a", "b"]},
                         {"name": "Bo", "age": 40.5, "tags": ["c"]}]),
        _asked(id="DE-07",  # the same anchor, no shape declared: one object is read as a list
               expected=[{"name": "Ann", **{f"k{i}": i for i in range(9)}}, {"name": "Bo"}]),
        _asked(id="DE-13", expected={"line_items": [{"description": "tea", "qty": 2, "ok": True}],
                                     "discounts": [], "total": 9.5, "note": None}),
        _asked(id="DE-02", expected={  # an object list that is no list weighs its fields
            "items": [{"name": "a", "price": 1}, {"name": "b", "price": 2}],
            **{f"f{i}": f"v{i}" for i in range(12)}}),
        _asked(id="DE-50", expected={f"f{i}": i * 1.5 for i in range(13)}),  # 11 of 13: 84.6
        _asked(id="DE-99", expected=[{"name": "no anchor known", "n": 1}]),
    ],
}  # fmt: skip
"""Scenarios of kinds and shapes the pinned packs do not use (more than one table header, a
path with an index, a declared array shape, anchors, field assertions), graded by the module
and the replay alike."""


@pytest.mark.parametrize("module", list(MADE))
def test_generated_replies_to_made_scenarios_are_graded_as_benchlocal_grades_them(
    module: str, upstream: dict[str, ModuleType]
) -> None:
    outcomes = _generated(upstream, module, MADE[module], {})
    assert outcomes["passed"] >= 20 and outcomes["failed"] >= 20, outcomes


def _answers(recorded: list[dict[str, bytes]], pack: str) -> dict[str, list[str]]:
    """The recorded runs' reply texts to each scenario of ``pack``."""
    answers: dict[str, list[str]] = {}
    for got, key, reply, _ in _recorded_replies(recorded):
        choices = reply.get("choices") or [{}]
        text = (choices[0].get("message") or {}).get("content")
        if got == pack and isinstance(text, str):
            answers.setdefault(key, []).append(text)
    return answers


def _every_scenario(
    scenarios: dict[str, dict[str, dict[str, Any]]],
) -> Iterator[tuple[str, dict[str, Any]]]:
    for pack, module in PACKS.items():
        for key in sorted(scenarios[pack]):
            yield module, scenarios[pack][key]
    for module, made in MADE.items():
        for scenario in made:
            yield module, scenario


def test_each_text_built_for_a_scenario_is_graded_as_benchlocal_grades_it(
    recorded: list[dict[str, bytes]],
    upstream: dict[str, ModuleType],
    scenarios: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """Every scenario, pinned or made, with each text built from it (:func:`_texts_of`) and
    each recorded answer to it, in each wrapping: all of them, none drawn."""
    outcomes: Counter[str] = Counter()
    answers = {pack: _answers(recorded, pack) for pack in PACKS}
    for module, scenario in _every_scenario(scenarios):
        pack = next((p for p, m in PACKS.items() if m == module), "")
        texts = _texts_of(scenario) + answers.get(pack, {}).get(scenario["id"], [])
        for text in texts:
            for how in ("as is", "fenced", "bare fence", "think", "spaced", "prose"):
                outcomes[_agree(upstream, module, scenario, _reply(_wrapped(text, how)))] += 1
    assert outcomes["passed"] >= 100 and outcomes["failed"] >= 100, outcomes


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Each member of ``value`` by its path, containers included (after their members)."""
    if isinstance(value, dict | list):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _leaves(item, (*path, key))
    yield path, value


def _moved(value: Any) -> list[Any]:
    """Values near ``value`` (as :func:`_near`, every one)."""
    if isinstance(value, bool):
        return [int(value), not value, str(value).lower()]
    if isinstance(value, int | float):
        return [value + d for d in (0.004, -0.009, 0.02, 0.3, -1)] + [str(value)]
    if isinstance(value, str):
        return [f" {value} ", value.lower(), value[:-1], None]
    if value is None:
        return ["", 0, "null"]
    if isinstance(value, list):
        return [value[::-1], value[:-1], [*value, *value[-1:]], {}]
    return [{k: value[k] for k in list(value)[:-1]}, [value], None]


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value = copy.deepcopy(value)
    holder = value
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return value


def test_each_field_of_an_expected_value_moved_is_graded_as_benchlocal_grades_it(
    upstream: dict[str, ModuleType], scenarios: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Every dataextract scenario with an ``expected`` value (the pinned pack's and the made
    ones), answered with that value with one member moved near (each member, each way), and
    with two members moved (each member with the next): around the 85 percent line."""
    outcomes: Counter[str] = Counter()
    for module, scenario in _every_scenario(scenarios):
        if module != "data_extract" or "expected" not in scenario:
            continue
        expected = scenario["expected"]
        members = list(_leaves(expected))
        for path, value in members:
            for new in _moved(value):
                reply = _reply(json.dumps(_put(expected, path, new)))
                outcomes[_agree(upstream, module, scenario, reply)] += 1
        for (first, one), (second, two) in itertools.pairwise(members):
            if first[: len(second)] == second or second[: len(first)] == first:
                continue  # one holds the other
            both = _put(_put(expected, first, _moved(one)[-1]), second, _moved(two)[-1])
            outcomes[_agree(upstream, module, scenario, _reply(json.dumps(both)))] += 1
    assert outcomes["passed"] >= 100 and outcomes["failed"] >= 100, outcomes


def test_a_grader_of_another_commit_is_not_replayed(recorded: list[dict[str, bytes]]) -> None:
    """A checkout whose module (or the ``common.py`` every module reads replies with) is not
    the blob of 47d1d66 keeps its grade as the harness's own: no replay, no false finding."""
    listing, _ = _checkout(recorded[0])
    changed = dict(listing, **{"benchlocal_cli/scoring/data_extract.py": "0" * 40})
    assert replayed_modules(changed) == frozenset(GRADED) - {"data_extract"}
    changed = dict(listing, **{"benchlocal_cli/scoring/common.py": "0" * 40})
    assert replayed_modules(changed) == frozenset()


def test_a_schema_that_refers_elsewhere_is_not_judged() -> None:
    """jsonschema fetches a ``$ref`` to another document; the verifier never touches the
    network, so such a schema gets no verdict."""
    elsewhere = {"$ref": "https://schemas.example/book.json"}
    scenario = _asked({"kind": "json_schema", "schema": elsewhere}, id="SO-X")
    assert grade_failure("struct_output", scenario, _reply('{"title": 1}')) is None
    local = {"$defs": {"t": {"type": "string"}}, "properties": {"title": {"$ref": "#/$defs/t"}}}
    scenario = _asked({"kind": "json_schema", "schema": local}, id="SO-X")
    assert grade_failure("struct_output", scenario, _reply('{"title": 1}')) is not None
    assert grade_failure("struct_output", scenario, _reply('{"title": "x"}')) is None


def test_a_csv_field_over_the_readers_limit_fails() -> None:
    """A CSV field over the csv module's limit fails the reply, as it does in the module."""
    scenario = _asked({"kind": "csv_columns", "expected": ["a"]}, id="SO-Y")
    big = '"' + "x" * (1 << 18) + '"'
    assert grade_failure("struct_output", scenario, _reply(big)) == "the reply is not CSV"
