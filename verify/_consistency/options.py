"""A pinned command's long options as a harness's ``argparse`` reads them (``allow_abbrev``):
an option given by the start of its name is that option, and the start of several names is
none (argparse refuses it, and the harness never runs). Each harness's table of options is
its own (``verify._consistency.benchlocal``, ``verify._consistency.spark``), each held to its
recorded checkout by a test."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from verify._consistency.env_prefix import under_env


def option_named(word: str, options: Collection[str]) -> str | None:
    """The option of ``options`` that ``word`` (before any ``=``) names as argparse reads it:
    itself, or the one option it is the start of; None where it names none, or several."""
    if word in options:
        return word
    if not word.startswith("--"):
        return None
    started = [option for option in options if option.startswith(word)]
    return started[0] if len(started) == 1 else None


def given_options(command: Sequence[str], options: Collection[str]) -> list[tuple[str, str]]:
    """The options of ``options`` the command gives, in order, each with the word it may take
    as its value (``--name V`` or ``--name=V``; an abbreviation of a name counts as the name).
    Words after ``--`` are arguments, never options, and so are those of an ``env`` prefix."""
    given = []
    command = under_env(command, {}).words
    for index, word in enumerate(command):
        if word == "--":
            break
        name, equals, value = word.partition("=")
        if equals and value == "--":
            continue  # argparse takes the "--" out: an empty value, read as none given
        if (option := option_named(name, options)) is not None:
            given.append((option, value if equals else "".join(command[index + 1 : index + 2])))
    return given
