"""Hostile tests of 2026-12-07 (grades): the replay of benchlocal-cli 0.9.9's scoring modules
(``verify/_consistency/benchlocal_grades.py``, commit ed05790) attacked both ways.

- false findings: replies an honest run grades passed that the replay fails (none found: the
  held cases below agree with the real modules, imported from the recorded checkout as
  tests/verify/test_benchlocal_grades_differential.py imports them);
- missed failures: a scenario marked passed whose logged reply its grader fails, with no
  finding (fields the grader reads that the reply's binding to the transport log ignores; a
  listing that switches the replay off; a reply the real module fails or cannot grade);
- robustness: replies that make the replay run for minutes (catastrophic backtracking in the
  code-fence and think-tag expressions and in two pinned patterns) or raise.

Closed the same day (each test below passes): a scored run's copy of its reply must be the
logged reply whole, as benchlocal-cli keeps it, and only such a copy is graded again; the
listing's kind and id are read as git writes them; the fence and think-tag readers are linear;
the minimal YAML reader's ``int()`` is replayed; a reply the module raises on is no pass; IF-01's
pinned pattern, which backtracks for minutes on a crafted reply of a few KB, is decided in
linear time.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.data.hostile.kit import Files
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import (
    _benchlocal_edit,
    _findings,
    _flipped,
    _graded,
    _verdict,
)
from tests.paths import ROOT
from tests.verify import test_benchlocal_grades_differential as differential
from tests.verify.test_benchlocal_grades_differential import _agree, _reply
from verify._consistency.benchlocal_grades import COMMON, grade_failure
from verify.replies import answer_key, copy_digest, kept_digest

Scenarios = dict[str, dict[str, dict[str, Any]]]
TREE = "upstreams/benchlocal/tree.txt"
COMMON_FILE = f"upstreams/benchlocal/files/{COMMON}"
COMMON_LINE = f"100644 blob {COMMON}\tbenchlocal_cli/scoring/common.py"


recorded = differential.recorded  # its fixtures: the recorded bundles' files, the real
upstream = differential.upstream  # modules imported from their checkout, the pinned packs
scenarios = differential.scenarios


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


# --- missed failures: what the grader reads is not what the log binds ------------------------


def _smuggled(key: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Scenario ``key`` (failed on its real reply) marked passed, its ``raw_response`` given a
    member the graders read before ``choices[0].message`` (``common.content_with_source`` and
    ``common.message``: the reply's own ``content``, ``message``; ``tool_call._tool_calls``: its
    own ``tool_calls``). ``choices[0].message`` is left as the log has it."""

    def change(pack: dict[str, Any]) -> None:
        for scenario in pack["scenarios"]:
            if scenario["id"] == key:
                scenario["raw_response"][field] = value
                _graded(pack, scenario, True)

    return change


GATSBY = '{"title": "The Great Gatsby", "author": "F. Scott Fitzgerald", "year": 1925}'
SIX = "- Zebra\n- Mango\n- Lemon\n- Anemone\n- Tulip\n- Fig"
AAPL = [{"type": "function", "function": {"name": "get_stock_price",
                                          "arguments": '{"ticker": "AAPL"}'}}]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [("SO-01", "content", GATSBY),
     ("IF-04", "message", {"role": "assistant", "content": SIX}),
     ("TC-02", "tool_calls", AAPL)],
    ids=["top-level-content", "top-level-message", "top-level-tool-calls"],
)  # fmt: skip
def test_a_member_the_grader_reads_first_is_held_to_the_log(
    bundle: Recorded, tmp_path: Path, key: str, field: str, value: Any
) -> None:
    """SO-01, IF-04 and TC-02 failed on their logged replies. Each is marked passed, its
    ``raw_response`` keeping the logged ``choices[0].message`` (so its answer key,
    ``verify.replies.answer_key``: ``choices[0].message``'s content or tool calls and the token
    counts, is the logged reply's and ``_replies`` takes the exchange) with one member added
    that benchlocal-cli's graders read first: the reply's own ``content`` (a JSON object with
    the right title and year), its own ``message`` (six bullets), its own ``tool_calls``
    (get_stock_price AAPL). The replay grades what the RunResult holds, faithfully: it passes.
    Verdict ok, no finding, tool/instruction up. Closed: the copy must be the logged reply
    whole (``verify.replies.kept_digest``), and only such a copy is graded again."""
    verdict = _verdict(bundle, tmp_path / "forged", _benchlocal_edit(_smuggled(key, field, value)))
    assert any(f"scenario {key!r}" in f for f in _findings(verdict)), _findings(verdict)


def test_a_tool_calls_own_arguments_are_held_to_the_log(
    upstream: dict[str, ModuleType], scenarios: Scenarios
) -> None:
    """The same at the level of one call: ``tool_call._name`` and ``_args`` read the call's own
    ``name`` and ``arguments`` before its ``function``'s, the answer key only the ``function``'s.
    A logged call of get_stock_price for MSFT (TC-02 fails it) copied with ``"arguments":
    {"ticker": "AAPL"}`` added has the logged reply's answer key, and the module passes it.
    (A fix that grades the logged exchange instead of the copy leaves the keys equal: then
    this check belongs end to end, as the test above.) Closed: the whole copy is held to the
    logged reply, not only its answer."""
    scenario = scenarios["toolcall-15"]["TC-02"]
    call = {"type": "function",
            "function": {"name": "get_stock_price", "arguments": '{"ticker": "MSFT"}'}}  # fmt: skip
    logged = _reply(None, [call])
    logged["usage"] = {"prompt_tokens": 90, "completion_tokens": 12}
    copied = copy.deepcopy(logged)
    copied["choices"][0]["message"]["tool_calls"][0]["arguments"] = {"ticker": "AAPL"}
    assert _agree(upstream, "tool_call", scenario, logged) == "failed"
    assert _agree(upstream, "tool_call", scenario, copied) == "passed"
    assert answer_key(copied) == answer_key(logged)  # the answer alone does not tell them apart
    assert copy_digest(copied) != kept_digest(logged)  # the whole copy does


def _both(*edits: Callable[[Files], None]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        for one in edits:
            one(files)

    return edit


def _listing(change: Callable[[str], str]) -> Callable[[Files], None]:
    """tree.txt's common.py line changed by ``change`` (the tree it hashes to unchanged), and
    common.py's file not kept (a listed file need not be kept: a sparse checkout keeps some)."""

    def edit(files: Files) -> None:
        text = files[TREE][0].decode()
        assert COMMON_LINE in text
        files[TREE] = (text.replace(COMMON_LINE, change(COMMON_LINE)).encode(), files[TREE][1])
        del files[COMMON_FILE]

    return edit


@pytest.mark.parametrize(
    "change",
    [lambda line: line.replace(" blob ", " Blob "),
     lambda line: line.replace(COMMON, COMMON.upper())],
    ids=["kind-Blob", "id-uppercase"],
)  # fmt: skip
def test_the_listing_cannot_switch_the_replay_off(
    bundle: Recorded, tmp_path: Path, change: Callable[[str], str]
) -> None:
    """``replayed_modules`` replays a grader only where the listing maps common.py to 47d1d66's
    blob id. The listing is bound to the pinned commit by ``git_tree_id``, which hashes each
    entry's mode, name and ``bytes.fromhex(object id)``, not its kind, and reads an id in upper
    case as the same bytes. So common.py's line written ``100644 Blob 7f10...`` (then no
    ``blob`` entry: ``_Checkout.files`` leaves it out) or ``100644 blob 7F10...`` (then no
    lowercase id) hashes to the pinned tree, the commit object and checkout.json agree, and
    with common.py's file not kept nothing reads the blob: no finding, and no grader is
    replayed. SO-01 marked passed on its own failed reply (the 12-06 flip test's finding) then
    gives none. A careful listing reader requires ``[0-9a-f]{40}`` ids and the kind the mode
    says (or ``replayed_modules`` requires the blobs where the pin set pins 47d1d66). Closed:
    the listing reader requires both."""
    edit = _benchlocal_edit(_flipped("structoutput-15"))
    verdict = _verdict(bundle, tmp_path / "forged", _both(_listing(change), edit))
    assert _findings(verdict), "the flipped SO-01 is no finding"


def test_a_listed_file_not_kept_leaves_the_replay_on(bundle: Recorded, tmp_path: Path) -> None:
    """Held: common.py's file not kept (its line as listed) still replays; SO-01 marked passed
    on its own reply is found."""

    def unkept(files: Files) -> None:
        del files[COMMON_FILE]

    edit = _benchlocal_edit(_flipped("structoutput-15"))
    verdict = _verdict(bundle, tmp_path / "forged", _both(unkept, edit))
    assert any("SO-01" in f and "struct_output grader fails" in f for f in _findings(verdict))


# --- missed failures: the module fails (or cannot grade) what the replay passes -----------------


def test_a_yaml_value_the_module_cannot_convert_fails(
    upstream: dict[str, ModuleType], scenarios: Scenarios
) -> None:
    """``struct_output._minimal_yaml_parse`` converts a value of digits with ``int()``, which
    raises over Python's 4300-digit limit: the module fails the reply ("YAML parse failed").
    ``_minimal_yaml`` only asks each line for a ``:``, so SO-03 passes it: marked passed, no
    finding. Closed: the conversion is replayed."""
    reply = _reply("name: demo\nsize: " + "7" * 5000)
    _agree(upstream, "struct_output", scenarios["structoutput-15"]["SO-03"], reply)


def _unreadable(scenarios: Scenarios) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    args = [{"type": "function", "function": {"name": "get_stock_price", "arguments": '["AAPL"]'}}]
    expected = dict(scenarios["dataextract-15"]["DE-02"]["expected"], subtotal=10**400)
    return [
        ("tool_call", scenarios["toolcall-15"]["TC-02"], _reply(None, args)),
        ("data_extract", scenarios["dataextract-15"]["DE-02"], _reply(json.dumps(expected))),
    ]


@pytest.mark.parametrize("case", [0, 1], ids=["arguments-a-list", "number-over-float"])
def test_a_reply_the_module_cannot_grade_is_no_pass(
    upstream: dict[str, ModuleType], scenarios: Scenarios, case: int
) -> None:
    """TC-02 answered with arguments ``["AAPL"]`` (``first_args.get`` on a list) and DE-02
    with every field right but a 401-digit subtotal (``float()`` overflows): the module raises.
    benchlocal-cli's runner calls ``score_scenario`` unguarded (``run_scenario``, ``run_pack``):
    the exception ends the run, so no honest RunResult holds such a run, let alone as passed.
    The replay caught the error and gave no verdict: marked passed, no finding. Closed: what
    the module raises on is a failure."""
    module, scenario, reply = _unreadable(scenarios)[case]
    assert _agree(upstream, module, scenario, reply) == "raised"
    assert grade_failure(module, scenario, reply) is not None


# --- robustness --------------------------------------------------------------------------------

_CHILD = """
import json, sys
from verify._consistency.benchlocal_grades import grade_failure
module, scenario, reply = json.load(sys.stdin)
grade_failure(module, scenario, reply)
"""


def _finishes(module: str, scenario: dict[str, Any], text: str, seconds: float = 5.0) -> bool:
    """Whether the replay grades a reply of ``text`` within ``seconds`` (in a child process,
    killed when it does not)."""
    given = json.dumps([module, scenario, _reply(text)]).encode()
    try:
        subprocess.run([sys.executable, "-c", _CHILD], input=given, cwd=ROOT, timeout=seconds,
                       check=True, capture_output=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    return True


SLOW = {
    # _unfenced (common.strip_code_fence): cubic in a run of spaces after an opening fence;
    # 8 KB takes ~170 s, 16 KB over 20 min. Every JSON, CSV and YAML reply goes through it.
    "fence-dataextract": ("data_extract", "dataextract-15", "DE-01", "```" + " " * 8000 + "y"),
    "fence-structoutput": ("struct_output", "structoutput-15", "SO-01", "```" + " " * 8000 + "y"),
    # IF-01's pinned pattern (four DOTALL .+), its first assertion: ~n^4; 3.6 KB takes 4 s,
    # 6 KB ~30 s. (IF-10's, quadratic, is held: its word count is asserted first.)
    "if01-numbered": ("instruct_follow", "instructfollow-15", "IF-01",
                      "1. a\n" + "2. a\n3. a\n4. a\n" * 400),
    # without_think_tags: quadratic in unclosed <think> tags (280 KB: ~90 s).
    "think-openers": ("instruct_follow", "instructfollow-15", "IF-05", "<think>" * 60000),
}  # fmt: skip


@pytest.mark.parametrize("case", list(SLOW))
def test_the_replay_finishes_on_a_hostile_reply(scenarios: Scenarios, case: str) -> None:
    """A scenario marked passed is graded whatever ``_replies`` finds of its reply (``_grades``
    does not wait for the binding), so the RunResult's reply text is the publisher's. Each of
    these replies (6 KB to 420 KB) keeps the verifier busy for minutes to hours: no verdict.
    A careful replay reads the fence linearly (``startswith``/``endswith`` and the greedy
    language tag give ``strip_code_fence``'s exact result), bounds the text it hands a pinned
    pattern, and treats a reply longer than the run could have produced as a finding. Closed:
    the fence and the think tags are read linearly, and only a copy of a logged reply is graded
    (a crafted reply must be forged into the transport log); a pinned pattern of literal runs
    joined by ``.+`` (IF-01's) is decided without backtracking (``benchlocal_grades.search``)."""
    module, pack, key, text = SLOW[case]
    assert _finishes(module, scenarios[pack][key], text)


def test_a_schema_with_a_dangling_local_reference_gives_no_traceback() -> None:
    """``_local_references_only`` lets ``#`` references through; one that points nowhere
    raises ``referencing``'s ``Unresolvable`` (not in ``grade_failure``'s list): a traceback,
    though the docstring promises no verdict for "a schema that is no schema". Not reachable
    with 47d1d66's packs (bound by the tree); reachable under a pin set of a commit whose
    scoring blobs are 47d1d66's and whose pack has such a schema. Closed: the module raises on
    it too, so it is a failure, not a traceback."""
    schema = {"properties": {"title": {"$ref": "#/$defs/missing"}}}
    scenario = {"id": "SO-X", "verifier": {"asserts": [{"kind": "json_schema", "schema": schema}]}}
    failure = grade_failure("struct_output", scenario, _reply('{"title": "x"}'))
    assert failure is not None and failure.startswith("the grader raises on it"), failure


# --- held --------------------------------------------------------------------------------------

HELD = [
    ("struct_output", "SO-01", _reply('{"title": "The Great Gatsby", "year": 1925.0}')),
    ("struct_output", "SO-01", _reply('{"title": "The Great Gatsby", "year": 1925, "year": 1}')),
    ("struct_output", "SO-01", _reply('{"title": "The Great Gatsby", "year": true}')),
    ("struct_output", "SO-01", _reply('\ufeff{"title": "The Great Gatsby", "year": 1925}')),
    ("struct_output", "SO-01", _reply('```json\n```json\n{"title": "The Great Gatsby"}\n```\n```')),
    ("struct_output", "SO-01", {"content": '{"title": "The Great Gatsby", "year": 1925}'}),
    ("struct_output", "SO-01", {"choices": [{"message": {}, "delta": {"content": GATSBY}}]}),
    ("struct_output", "SO-01", {"choices": [{"message": {"content": "", "reasoning_content":
                                                         f"<think>x</think>\n{GATSBY}"}}]}),
    ("struct_output", "SO-13", _reply('{"zero": false}')),
    ("struct_output", "SO-13", _reply('{"zero": -0.0}')),
    ("struct_output", "SO-13", _reply('{"zero": NaN}')),
    ("struct_output", "SO-13", _reply('{"zero": 1e-400, "x": Infinity}')),
    ("struct_output", "SO-03", _reply("key: ١٢٣\n# note\n: x")),
    ("struct_output", "SO-03", _reply("\ufeffkey: v")),
    ("struct_output", "SO-02", _reply("name,age,city,email\x00")),
    ("struct_output", "SO-02", _reply('"name,age,city,email')),
    ("struct_output", "SO-02", _reply("name,age,city,email\rada")),
    ("struct_output", "SO-02", _reply("```csv\nname, age ,city,email\n```")),
    ("struct_output", "SO-10", _reply("| Name | Score | Grade |\n|:-|-:|:-:|")),
    ("struct_output", "SO-10", _reply("|name|score|grade|\n|---|---|")),
    ("struct_output", "SO-10", _reply("| name | score | grade |\n\n| - | - | - |")),
    ("struct_output", "SO-07", _reply('{"user": {}, "metadata": 1e400}')),
    ("data_extract", "DE-02", _reply('[{"store_name": "URBAN BEAN COFFEE"}]')),
    ("data_extract", "DE-02", _reply('{"store_name": "URBAN BEAN COFFEE", "subtotal": NaN}')),
    ("data_extract", "DE-07", _reply('{"name": "Marcus Washington"}')),
    ("instruct_follow", "IF-14", _reply("ÉCOLE RAIN")),
    ("instruct_follow", "IF-04", _reply("- a\n* b\n-\tc\n- d\n- e\n-\u00a0f")),
    ("instruct_follow", "IF-10", _reply("<th<think>ink>Humanity " + "x " * 47 + "stars.")),
    ("tool_call", "TC-02", _reply(None, [{"name": "get_stock_price", "arguments": {"ticker": "AAPL"}}])),  # noqa: E501
    ("tool_call", "TC-02", _reply(None, [{"function": {"name": "get_stock_price", "arguments": ""}}])),  # noqa: E501
    ("tool_call", "TC-10", _reply("It ended in 1945.", [])),
]  # fmt: skip
PACK = {"S": "structoutput-15", "D": "dataextract-15", "I": "instructfollow-15", "T": "toolcall-15"}


def test_edge_replies_are_graded_as_benchlocal_grades_them(
    upstream: dict[str, ModuleType], scenarios: Scenarios
) -> None:
    """Held (no false finding, none missed): JSON edge cases (a float year, a repeated key, a
    boolean, a BOM, nested fences, NaN, -0.0, underflow, overflow), YAML of Arabic digits,
    CSV with a NUL, an open quote, a bare CR, a fenced header; Markdown separators of every
    spelling; data_extract shapes; reply members at the top level, in a delta, in
    ``reasoning_content``; think tags that rebuild a tag when taken out (benchlocal-cli takes
    them out twice too: the runner, then ``content``); a call's own name and arguments."""
    grades = [_agree(upstream, m, scenarios[PACK[k[0]]][k], r) for m, k, r in HELD]
    assert grades.count("passed") >= 10 and grades.count("failed") >= 10, grades


HOSTILE: list[tuple[str, str, dict[str, Any]]] = [
    ("data_extract", "DE-02", _reply("[" * 100_000)),
    ("data_extract", "DE-02", _reply(json.dumps({"subtotal": 10**400, "items": 10**400}))),
    ("struct_output", "SO-07", _reply('{"user": ' + "[" * 900 + "]" * 900 + "}")),
    ("struct_output", "SO-13", _reply('{"zero": ' + "9" * 4301 + "}")),
    ("tool_call", "TC-02", _reply(None, [{"function": {"name": "x", "arguments": "[" * 100_000}}])),
    ("tool_call", "TC-02", {"choices": [{"message": {"tool_calls": ["not a call", 7]}}]}),
    ("tool_call", "TC-02", {"choices": "no list", "message": ["no object"], "tool_calls": {}}),
    ("tool_call", "TC-01", _reply(None, [{"name": [[["get_weather"]]], "arguments": {"x": 1}}])),
    ("instruct_follow", "IF-02", {"content": "word " * 2_000_000}),
]  # fmt: skip


def test_hostile_shapes_give_a_verdict_or_none_quickly(scenarios: Scenarios) -> None:
    """Held: deep nesting (JSON and tool arguments), numbers over a float and over Python's
    digit limit, calls that are no objects, members of the wrong type and a 10 MB reply each
    get a verdict or none, with no traceback, in well under a second each."""
    for module, key, reply in HOSTILE:
        grade_failure(module, scenarios[PACK[key[0]]][key], reply)
