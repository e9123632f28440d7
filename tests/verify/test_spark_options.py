"""A pinned ``spark_bench.py eval`` command read as its argparse reads it: an option given by
the start of its name (``allow_abbrev``) is that option, one start of several names is none
(argparse refuses it, and the harness never runs), the last of an option given twice is the
one kept, and the options known are those of the recorded checkout's ``spark_bench.py``
(196e60d, the pin set's commit)."""

from __future__ import annotations

import argparse
import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gate_kit import RECORDED_TAR, tar_evidence
from verify._consistency.options import option_named
from verify._consistency.spark import EVAL_OPTIONS, _option, _pinned_counts

EVAL = ["{python}", "spark_bench.py", "eval", "--label", "gx10"]


def _eval_options(source: str) -> set[str]:
    """The option strings ``main`` gives the ``eval`` subparser (``se``, and ``common(sp)``),
    read from the source."""
    (main,) = (n for n in ast.parse(source).body
               if isinstance(n, ast.FunctionDef) and n.name == "main")  # fmt: skip
    found = {"--help"}  # argparse's own
    for node in ast.walk(main):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"sp", "se"}
        ):
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_options_are_those_of_the_recorded_checkouts_spark_bench() -> None:
    files = tar_evidence(RECORDED_TAR)
    listing = {}
    for line in files["upstreams/sparkbench/tree.txt"].decode().splitlines():
        meta, path = line.split("\t", 1)
        listing[path] = meta.split()[2]
    source = files[f"upstreams/sparkbench/files/{listing['spark_bench.py']}"].decode()
    assert _eval_options(source) == set(EVAL_OPTIONS)


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Refused(message)


def _argparse_name(word: str) -> str | None:
    """What argparse itself takes ``word`` for, among :data:`EVAL_OPTIONS`."""
    parser = _Parser(add_help=False)
    for option in sorted(EVAL_OPTIONS):
        parser.add_argument(option, dest=option, nargs="?", default=None, const="")
    try:
        parsed, rest = parser.parse_known_args([word, "value"])
    except _Refused:
        return None
    named = [k for k, v in vars(parsed).items() if v is not None]
    return named[0] if named and not (rest and rest[0] == word) else None


_WORDS = sorted({option[:cut] for option in EVAL_OPTIONS for cut in range(2, len(option) + 1)})


@pytest.mark.parametrize("word", _WORDS)
def test_every_start_of_an_option_is_read_as_argparse_reads_it(word: str) -> None:
    assert option_named(word, EVAL_OPTIONS) == _argparse_name(word)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="-acdeghiklmnoprstuvwy", min_size=1, max_size=12))
def test_any_word_is_read_as_argparse_reads_it(word: str) -> None:
    expected = _argparse_name(word) if word.startswith("--") else None
    assert option_named(word, EVAL_OPTIONS) == expected


def test_a_pinned_command_s_abbreviations_are_its_options() -> None:
    contexts = ("--throughput-contexts", "1024,8192,32768")
    levels = ("--throughput-concurrency", "1,2,4,8")
    assert _pinned_counts([*EVAL, "--throughput-cont", "512"], *contexts) == [512]
    assert _pinned_counts([*EVAL, "--throughput-conc=2,4"], *levels) == [1, 2, 4, 8]  # two
    assert _pinned_counts([*EVAL, "--throughput-concu=2,4"], *levels) == [2, 4]
    assert _pinned_counts([*EVAL, "--skip-t"], *levels) == []  # --skip-throughput
    assert _option([*EVAL, "--rep", "3", "--repeats=4"], "--repeats") == "4"  # the last
    assert _option([*EVAL, "--ti", "hard"], "--tier") is None  # --tier, --timeout, --thinking
    assert _option([*EVAL, "--tie", "hard"], "--tier") == "hard"
    assert _option([*EVAL, "--", "--tier", "hard"], "--tier") is None  # an argument
