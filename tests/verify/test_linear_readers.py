"""Readers of a reply's text that replace benchlocal-cli's regular expressions (47d1d66, kept
here as the reference) with code linear in the text, giving the same result:
``verify.replies.without_think_tags`` (``common.sanitize_reasoning_tags``) and the replayed
graders' ``_unfenced`` (``common.strip_code_fence``); and the graders' ``search``, which decides
a pinned pattern of literal runs joined by ``.+`` or ``.*`` (IF-01's) without ``re``'s
backtracking. And Spark's concurrency rows read as levels in time linear in the file."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.paths import ROOT
from verify._consistency.benchlocal_grades import _unfenced, search
from verify.replies import without_think_tags

_BLOCK = re.compile(r"<think\b[^>]*>.*?</think\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?think\b[^>]*>", re.IGNORECASE)


def _reference(text: str) -> str:
    cleaned = _TAG.sub("", _BLOCK.sub("", text))
    return text if cleaned == text else cleaned.strip()


_PIECES = st.sampled_from(
    ["<think", "</think", "<THINK", "</Think", "<thinking", ">", " ", "\n", "\t", "x", "k",
     "<", "/", "think", " >", "\u212a", "<thin\u212a"]  # the Kelvin sign folds to k
)  # fmt: skip


@settings(max_examples=2000, derandomize=True, deadline=None, database=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_same_text_as_benchlocal_clis_substitutions(text: str) -> None:
    assert without_think_tags(text) == _reference(text)


def test_replies_as_models_write_them() -> None:
    for text in ["<think>plan</think>Answer", "Answer", "<think>open", "a </think> b",
                 "<think a='1'>x</think >y<think>z</THINK>", "  <think/>  hi  "]:  # fmt: skip
        assert without_think_tags(text) == _reference(text)


def test_many_tags_that_never_close_do_not_hang_the_verifier() -> None:
    """420 KB of ``<think`` with no ``>``, of opening tags with no closing tag, and of closing
    tags with no ``>``: the reference takes minutes on each (a publisher's reply must not hang
    the verifier); a child process given a minute finishes all three."""
    script = (
        "from verify.replies import without_think_tags as w\n"
        "assert w('<think' * 70_000) == '<think' * 70_000\n"
        "assert w('<think>' * 60_000) == ''\n"
        "text = '<think ' + '</think' * 60_000\n"
        "assert w(text) == text\n"
    )
    _finishes_in_a_minute(script)


def _finishes_in_a_minute(script: str) -> None:
    """Runs ``script`` in a child process given a minute (a hang fails, never holds the suite)."""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60, check=False,
                          capture_output=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


_FENCE = re.compile(r"```(?:[A-Za-z0-9_-]+)?\s*(.*?)\s*```", re.DOTALL)


def _fence_reference(text: str) -> str:
    text = text.strip()
    match = _FENCE.fullmatch(text)
    return match.group(1).strip() if match else text


_FENCE_PIECES = st.sampled_from(
    ["```", "`", "``", "json", "a", "-", "_", "9", " ", "\n", "\t", "\u00a0", "\u2003", "{}",
     "x y", "\u00e9"]
)  # fmt: skip


@settings(max_examples=2000, derandomize=True, deadline=None, database=None)
@given(st.lists(_FENCE_PIECES, max_size=12).map("".join))
def test_the_same_text_as_benchlocal_clis_fence_pattern(text: str) -> None:
    assert _unfenced(text) == _fence_reference(text)


def test_a_fence_that_does_not_close_does_not_hang_the_verifier() -> None:
    """An opening fence and 200,000 spaces: the reference backtracks for hours."""
    script = (
        "from verify._consistency.benchlocal_grades import _unfenced\n"
        "text = '```' + ' ' * 200_000 + 'y'\n"
        "assert _unfenced(text) == text\n"
    )
    _finishes_in_a_minute(script)


_PATTERN_PIECES = st.sampled_from(
    ["a", "b", "1", "\\.", " ", "\\n", ".+", ".*", "\\-", "ab", "\u00e9", ".", "[a]", "\\d",
     "\\"]
)  # fmt: skip
_TEXT_PIECES = st.sampled_from(["a", "b", "1", ".", " ", "\n", "ab", "\u00e9", "1. a\n"])


@settings(max_examples=2000, derandomize=True, deadline=None, database=None)
@given(
    st.booleans(),
    st.lists(_PATTERN_PIECES, max_size=7).map("".join),
    st.lists(_TEXT_PIECES, max_size=12).map("".join),
    st.sampled_from([re.DOTALL, re.DOTALL | re.MULTILINE, re.MULTILINE, 0]),
)
def test_search_finds_what_re_finds(anchored: bool, pattern: str, text: str, flags: int) -> None:
    pattern = ("^" if anchored else "") + pattern
    try:
        expected = re.search(pattern, text, flags) is not None
    except re.error:  # not a pattern: the grader raises on it, as benchlocal-cli's does
        with pytest.raises(re.error):
            search(pattern, text, flags)
        return
    assert search(pattern, text, flags) is expected


def test_if_01s_pattern_on_a_crafted_reply_does_not_hang_the_verifier() -> None:
    """IF-01's pinned pattern on 20 KB of numbered lines that never reach 5: ``re`` takes
    hours; the graders' search, a child process given a minute."""
    script = (
        "import re\n"
        "from verify._consistency.benchlocal_grades import search\n"
        "pattern = r'^1\\. .+\\n2\\. .+\\n3\\. .+\\n4\\. .+\\n5\\. '\n"
        "text = '1. a\\n' + '2. a\\n3. a\\n4. a\\n' * 1700\n"
        "assert not search(pattern, text, re.MULTILINE | re.DOTALL)\n"
        "assert search(pattern, text + '5. done', re.MULTILINE | re.DOTALL)\n"
    )
    _finishes_in_a_minute(script)


def test_spark_s_concurrency_rows_read_in_time_linear_in_the_file() -> None:
    """Spark's concurrency rows (``verify.harness_outputs.spark_concurrency``): 200,000 rows of
    distinct metrics under one batch (one level), and 200,000 of one metric (as many levels),
    each read in a child process given a minute (a level copied row by row would take hours)."""
    script = (
        "from verify.harness_outputs import spark_concurrency as read\n"
        "head = 'run_id,timestamp,tier,model,label,endpoint,topology,parallelism,context,batch,'"
        " 'spec_decode,workload,metric,value,unit,notes\\n'\n"
        "row = 'r,t,tier2,m,l,e,u,1,,1,na,concurrency,{},1,u,\\n'\n"
        "one = read((head + ''.join(row.format(f'm{i}') for i in range(200_000))).encode())\n"
        "assert len(one) == 1 and len(one[0].given) == 200_000\n"
        "many = read((head + row.format('agg_decode_tps') * 200_000).encode())\n"
        "assert len(many) == 200_000\n"
    )
    _finishes_in_a_minute(script)
