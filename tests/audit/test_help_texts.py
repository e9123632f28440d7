"""Every ``--help``, of every command and subcommand: one example, on a line of its own and whole
whatever the width, that the parser accepts; a help string for every positional; and no
references to the specification's documents ("seed 000"), which users do not have."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.cli import _parser, main

AUDIT = str(Path(sys.executable).with_name("audit"))


def _commands() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser, with the words that reach it: (), ("verify",), ("score", "bfcl"), ..."""
    pending: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), _parser()[0])]
    while pending:
        words, parser = pending.pop(0)
        yield words, parser
        for action in parser._actions:  # argparse has no public walk
            if isinstance(action, argparse._SubParsersAction):
                pending += [((*words, name), sub) for name, sub in action.choices.items()]


COMMANDS = {" ".join(words) or "audit": words for words, _ in _commands()}


def test_every_command_is_walked() -> None:
    assert len(COMMANDS) >= 20
    assert {"audit", "verify", "score quality pairs", "trust-root update"} <= set(COMMANDS)


def _help(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*words, "--help"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def _example(text: str) -> str:
    """The example of a help text: the one line after "example:"."""
    examples = re.findall(r"^example:\n  (audit .+)$", text, re.MULTILINE)
    assert len(examples) == 1, text
    return str(examples[0])


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_has_one_example_of_this_command_that_parses(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    words = COMMANDS[name]
    example = _example(_help(words, capsys))
    argv = shlex.split(example)[1:]
    assert tuple(argv[: len(words)]) == words, example
    _parser()[0].parse_args(argv)  # a usage error would exit 2


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_describes_every_positional(name: str) -> None:
    parser = dict(_commands())[COMMANDS[name]]
    for action in parser._actions:
        if not action.option_strings:
            assert action.help not in (None, "", argparse.SUPPRESS), (name, action.dest)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_names_no_seed_document(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(COMMANDS[name], capsys)
    assert "seed " not in text.lower(), text
    assert "seed's" not in text.lower(), text


@pytest.mark.parametrize("columns", ["40", "200"])
def test_the_example_stays_whole_on_its_own_line_at_any_width(columns: str) -> None:
    env = os.environ | {"COLUMNS": columns}
    done = subprocess.run(
        [AUDIT, "run", "--help"], capture_output=True, text=True, env=env, check=True
    )
    example = _example(done.stdout)
    assert example.startswith("audit run --endpoint http://127.0.0.1:8080 ")
    assert example.endswith(" --weights /models/model.gguf")
