"""A pinned ``spark_bench.py eval`` command read as its argparse reads it: an option given by
the start of its name (``allow_abbrev``) is that option, one start of several names is none
(argparse refuses it, and the harness never runs), the last of an option given twice is the
one kept, and the options known are those of the recorded checkout's ``spark_bench.py``
(196e60d, the pin set's commit)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gate_kit import RECORDED_TAR, tar_evidence
from tests.verify.test_benchlocal_options import _added_options, _argparse_name
from verify._consistency.options import option_named
from verify._consistency.spark import EVAL_OPTIONS, _option, _pinned_counts

EVAL = ["{python}", "spark_bench.py", "eval", "--label", "gx10"]


def test_the_options_are_those_of_the_recorded_checkouts_spark_bench() -> None:
    files = tar_evidence(RECORDED_TAR)
    listing = {}
    for line in files["upstreams/sparkbench/tree.txt"].decode().splitlines():
        meta, path = line.split("\t", 1)
        listing[path] = meta.split()[2]
    source = files[f"upstreams/sparkbench/files/{listing['spark_bench.py']}"].decode()
    assert _added_options(source, "main", {"sp", "se"}) == set(EVAL_OPTIONS)  # eval's, common's


_WORDS = sorted({option[:cut] for option in EVAL_OPTIONS for cut in range(2, len(option) + 1)})


@pytest.mark.parametrize("word", _WORDS)
def test_every_start_of_an_option_is_read_as_argparse_reads_it(word: str) -> None:
    assert option_named(word, EVAL_OPTIONS) == _argparse_name(word, EVAL_OPTIONS)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="-acdeghiklmnoprstuvwy", min_size=1, max_size=12))
def test_any_word_is_read_as_argparse_reads_it(word: str) -> None:
    expected = _argparse_name(word, EVAL_OPTIONS) if word.startswith("--") else None
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
