"""A pinned ``benchlocal-cli run`` command read as its argparse reads it: an option given by
the start of its name (``allow_abbrev``) is that option, one start of several names is none
(argparse refuses it, and the harness never runs), and the options known are those of the
recorded checkout's ``cli.py`` (0.9.9 at 47d1d66)."""

from __future__ import annotations

import argparse
import ast
from collections.abc import Collection

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gate_kit import tar_evidence
from tests.verify.test_benchlocal_grades_differential import RECORDED, _checkout
from verify._consistency.benchlocal import (
    RUN_OPTIONS,
    _option_name,
    _option_values,
    _options,
    _pinned_selection,
)

_GROUPS = {"run", "mode", "inline_retry", "thinking"}
"""The names ``cli._parser`` gives the ``run`` subparser and its option groups."""


def _added_options(source: str, function: str, receivers: Collection[str]) -> set[str]:
    """The option strings ``function`` of ``source`` gives its parsers (``receivers``: the
    names it calls ``add_argument`` on), and argparse's own ``--help``."""
    (parser,) = (n for n in ast.parse(source).body
                 if isinstance(n, ast.FunctionDef) and n.name == function)  # fmt: skip
    found = {"--help"}  # argparse's own
    for node in ast.walk(parser):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in receivers
        ):
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_options_are_those_of_the_recorded_checkouts_cli() -> None:
    listing, read = _checkout(tar_evidence(RECORDED[0]))
    assert _added_options(read("benchlocal_cli/cli.py").decode(), "_parser", _GROUPS) == set(
        RUN_OPTIONS
    )
    assert listing["benchlocal_cli/cli.py"] == "e84c7e6c9298f7c4194d2243b87390c24e52921a"


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Refused(message)


def _argparse_name(word: str, options: Collection[str] = RUN_OPTIONS) -> str | None:
    """What argparse itself takes ``word`` for, among ``options`` (:data:`RUN_OPTIONS`)."""
    parser = _Parser(add_help=False)
    for option in sorted(options):
        parser.add_argument(option, dest=option, nargs="?", default=None, const="")
    try:
        parsed, rest = parser.parse_known_args([word, "value"])
    except _Refused:
        return None
    named = [k for k, v in vars(parsed).items() if v is not None]
    return named[0] if named and not (rest and rest[0] == word) else None


_WORDS = sorted({option[:cut] for option in RUN_OPTIONS for cut in range(2, len(option) + 1)})


@pytest.mark.parametrize("word", _WORDS)
def test_every_start_of_an_option_is_read_as_argparse_reads_it(word: str) -> None:
    assert _option_name(word) == _argparse_name(word)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="-abcdefghijklmnoprstuvwxyz", min_size=1, max_size=12))
def test_any_word_is_read_as_argparse_reads_it(word: str) -> None:
    assert _option_name(word) == (_argparse_name(word) if word.startswith("--") else None)


def test_a_pinned_command_s_abbreviations_are_its_options() -> None:
    run = ["{python}", "-m", "benchlocal_cli.cli", "run", "--medium"]
    # every start of --repeat is a start of --repeat-penalty too: only the whole name is it
    assert _option_values([*run, "--repe", "2"], "--repeat") == []
    assert _option_values([*run, "--repeat", "2", "--repeat-p", "1.1"], "--repeat") == ["2"]
    assert _option_values([*run, "--max-trans=5"], "--max-transient-retries") == ["5"]
    assert _options([*run, "--max-trans", "5"], {}, None).transient_retries == 5
    assert _options([*run, "--retry-o"], {}, None).retry_on_timeout
    assert not _options([*run, "--retry"], {}, None).retry_on_timeout  # one of several
    assert _pinned_selection([*run, "--res", "old.json"]) is False  # --resume
    assert _pinned_selection([*run, "--scen", "toolcall-15/TC-01"]) is None  # one of two
    assert _pinned_selection([*run, "--scenario", "toolcall-15/TC-01"]) == {
        "toolcall-15": {"TC-01"}
    }
    assert _pinned_selection([*run, "--", "--resume", "x"]) is None  # after --: arguments


_REPEATS = [("2", False), ("+2", False), (" 2", False), ("0_2", False), ("3", True), ("2x", False)]


@pytest.mark.parametrize(("value", "finds"), _REPEATS)
def test_a_pinned_repeat_is_read_as_argparse_s_int_reads_it(value: str, finds: bool) -> None:
    """``--repeat`` is ``type=int``: a count argparse takes is held (RunResult repeat 2 here);
    one it refuses never ran, so nothing is held to it."""
    from verify._consistency.benchlocal import _repeats  # noqa: PLC0415
    from verify.harness_outputs import BenchlocalRuns  # noqa: PLC0415

    found = _repeats("raw", BenchlocalRuns(2, {}), ["run", "--medium", "--repeat", value])
    assert bool(found) is finds, found
