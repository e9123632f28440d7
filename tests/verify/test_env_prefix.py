"""A pinned command's ``env`` prefix read as coreutils' ``env`` runs it: each reading held to
the real ``/usr/bin/env``, which runs ``printenv`` with the variables it gives."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from verify._consistency.benchlocal import _options
from verify._consistency.env_prefix import under_env

ENV = "/usr/bin/env"
PRINTENV = "/usr/bin/printenv"
_NAMES = ("BENCHLOCAL_RETRY_ON_TIMEOUT", "BENCHLOCAL_MAX_TRANSIENT_RETRIES", "A")
_VALUES = ("1", "5", "", "on", "x=y")


def _real(command: list[str], variables: dict[str, str]) -> dict[str, str] | None:
    """The variables ``printenv`` was given by ``command`` run with ``variables``; None where
    ``env`` did not run it (refused the command, or took its words for its own: then ``env``
    run with a program that does not exist in its place does not fail to find it)."""

    def run(program: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*command, program, "-0"], env=variables, capture_output=True, check=False, cwd="/"
        )

    done = run(PRINTENV)
    if done.returncode != 0 or run("/nonexistent/program").returncode != 127:
        return None
    pairs = [entry.partition("=") for entry in done.stdout.decode().split("\0") if entry]
    return {name: value for name, _, value in pairs}


_NAME = st.sampled_from(_NAMES)
_WORD = st.one_of(
    st.sampled_from(["-i", "-", "--", "-v", "--debug", "--ignore-environment", "--ignore-env",
                     "--ig", "-0", "--null", "-x", "--bogus", "-C/", "--chdir=/", "--ch=/", "-vC/",
                     "--default-signal", "--block-signal=INT", "--ignore-signal=TERM",
                     "--list-signal-handling", "--unset", "-u", "-iv", "-vi", "-i ", "-\t", ENV,
                     "env"]),
    _NAME.map(lambda n: f"-u{n}"),
    _NAME.map(lambda n: f"-iu{n}"),
    _NAME.map(lambda n: f"--unset={n}"),
    _NAME.map(lambda n: f"--un={n}"),
    _NAME,
    st.tuples(_NAME, st.sampled_from(_VALUES)).map("=".join),
)  # fmt: skip
"""The words of a prefix: ``env``'s options (given whole, by a start of their names, joined,
or refused), names, assignments, and ``env`` again."""


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_WORD, max_size=8),
    st.dictionaries(_NAME, st.sampled_from(_VALUES), max_size=3),
)
def test_a_prefix_is_read_as_env_runs_it(words: list[str], base: dict[str, str]) -> None:
    variables = {"PATH": "/usr/bin:/bin", **base}
    command = [ENV, *words]
    real = _real(command, variables)
    read = under_env([*command, PRINTENV, "-0"], variables)
    if real is not None:  # printenv ran, with these variables
        assert read == ((PRINTENV, "-0"), real)
    else:  # env refused it, or ran another program (a name taken for one): never printenv
        assert read.variables is None or read.words != (PRINTENV, "-0"), read
    event("printenv ran" if real is not None else "printenv did not run")


@pytest.mark.parametrize(
    "command",
    [
        [ENV, "-S", "A=1", PRINTENV],
        [ENV, "--split-string=A=1 printenv"],
        [ENV, "--help", PRINTENV],
        [ENV, "--version", PRINTENV],
        [ENV, "-u", "A=1", PRINTENV],
        [ENV, "-0", PRINTENV],
        [ENV, "-u"],
    ],
)
def test_a_prefix_not_followed_or_refused_gives_no_variables(command: list[str]) -> None:
    assert under_env(command, {"A": "2"}) == (tuple(command), None)


def test_a_command_without_env_is_itself() -> None:
    command = ["{python}", "-m", "benchlocal_cli.cli", "run", "A=1"]
    assert under_env(command, {"A": "2"}) == (tuple(command), {"A": "2"})


RUN = ["{python}", "-m", "benchlocal_cli.cli", "run", "--medium"]


def test_the_walk_reads_the_variables_an_env_prefix_gives() -> None:
    on = {"BENCHLOCAL_RETRY_ON_TIMEOUT": "1", "BENCHLOCAL_MAX_TRANSIENT_RETRIES": "7"}
    options = _options(["env", *(f"{k}={v}" for k, v in on.items()), *RUN], {}, None)
    assert (options.retry_on_timeout, options.transient_retries) == (True, 7)
    cleared = _options(["env", "-i", "PATH=/usr/bin", *RUN], on, None)
    assert (cleared.retry_on_timeout, cleared.transient_retries) == (False, 3)
    unset = _options(["/usr/bin/env", "-u", "BENCHLOCAL_RETRY_ON_TIMEOUT", *RUN], on, None)
    assert (unset.retry_on_timeout, unset.transient_retries) == (False, 7)
    # an option of the harness after the prefix is read; env's own "--" is not the harness's
    assert _options(["env", "--", "A=1", *RUN, "--retry-on-timeout"], {}, None).retry_on_timeout
    # a prefix not followed: the command's own options alone, never the pin set's variables
    split = _options(["env", "-S", "A=1", *RUN], on, None)
    assert (split.retry_on_timeout, split.transient_retries) == (False, 3)


def test_a_variable_the_record_gives_and_the_prefix_clears_is_not_named() -> None:
    """The record's variables go through the prefix as the pin set's do: one that ``env -i``
    clears allows nothing, so a finding does not name it."""
    record = b'{"variables": {"BENCHLOCAL_RETRY_ON_TIMEOUT": "1"}}'
    assert _options(["env", "-i", *RUN], {}, record).unpinned == ()
    assert _options(RUN, {}, record).unpinned == ("BENCHLOCAL_RETRY_ON_TIMEOUT",)
