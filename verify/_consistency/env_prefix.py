"""A pinned command that starts with coreutils' ``env``, read as ``env`` runs it: the
variables its program is given and the words it runs.

A pin set gives a harness its variables in its ``env`` table, and may as well write them into
the command (``env BENCHLOCAL_RETRY_ON_TIMEOUT=1 {python} -m benchlocal_cli run ...``, or
``env -i ...``, which clears the ones the pin set gives). A reader of the pinned command that
looks at the variables reads them through :func:`under_env`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

_LONG = {
    "--ignore-environment": "i", "--null": "0", "--unset": "u", "--chdir": "C", "--debug": "v",
    "--split-string": "S", "--default-signal": "signal", "--ignore-signal": "signal",
    "--block-signal": "signal", "--list-signal-handling": "list", "--help": "help",
    "--version": "help",
}  # fmt: skip
"""coreutils 9.1 ``env``'s long options, each as the short option it is, or as what it does:
``signal`` takes an optional ``=SIG`` and changes no variable; ``list`` prints the signals'
handling and runs the program as given; ``help`` (``--help``, ``--version``) prints, and no
program runs."""
_TAKES = frozenset("uCS")
"""Short options that take a value (``-u NAME``, ``-uNAME``)."""
_BARE = frozenset("iv0")
"""Short options that take none (any other letter, a space or a tab among them, is refused)."""


class Launch(NamedTuple):
    """What a pinned command runs after its ``env`` prefixes."""

    words: tuple[str, ...]
    """The program and its arguments (the whole command where it has no ``env`` prefix)."""
    variables: dict[str, str] | None
    """The variables the program is given, from those the command is run with; None where the
    prefix is one this reader does not follow (``-S``, whose string ``env`` splits by rules
    of its own) or one ``env`` refuses (the program never runs)."""


def under_env(command: Sequence[str], variables: Mapping[str, str]) -> Launch:
    """``command``, run with ``variables``, as coreutils' ``env`` runs it: each leading ``env``
    (by its file name, any number of them) clears the variables (``-i``, ``-``), unsets some
    (``-u NAME``) and sets some (``NAME=VALUE``), in that order, then runs what follows. Its
    options are read as its ``getopt_long`` does: up to the first word that is not one, short
    ones joined, long ones by an unambiguous start of their names."""
    words = tuple(command)
    env = dict(variables)
    while words and words[0].rpartition("/")[2] == "env":
        read = _prefix(words)
        if read is None:
            return Launch(tuple(command), None)
        clear, unset, null, index = read
        env = {} if clear else env
        for name in unset:
            env.pop(name, None)
        while index < len(words) and "=" in words[index]:
            name, _, value = words[index].partition("=")
            env[name] = value
            index += 1
        if null and index < len(words):
            return Launch(tuple(command), None)  # "cannot specify --null (-0) with command"
        words = words[index:]
    return Launch(words, env)


def _prefix(words: tuple[str, ...]) -> tuple[bool, list[str], bool, int] | None:
    """The options of the ``env`` at ``words[0]``: whether it clears the variables, those it
    unsets, whether it is given ``-0``, and the index of the first word after its options;
    None where it is not followed or refused."""
    clear, null, unset, index, more = False, False, [], 1, True
    try:
        while more and index < len(words) and (read := _word(words, index)) is not None:
            options, index, more = read
            clear = clear or any(option == "i" for option, _ in options)
            null = null or any(option == "0" for option, _ in options)
            unset += [value for option, value in options if option == "u"]
    except ValueError:  # not followed, or refused
        return None
    if index < len(words) and words[index] == "-":
        clear, index = True, index + 1
    if not clear and any(not name or "=" in name for name in unset):
        return None  # "cannot unset": a name unsetenv refuses (-i unsets nothing)
    return clear, unset, null, index


_WordRead = tuple[list[tuple[str, str]], int, bool]
"""Options read from a word, each with its value; the index after them (past a value in the
next word); whether more options may follow."""


def _word(words: tuple[str, ...], index: int) -> _WordRead | None:
    """The options the word at ``index`` gives; None where options end before it.

    Raises:
        ValueError: an option ``env`` refuses, ``-S``, or ``--help`` (no program runs).
    """
    word = words[index]
    if word == "--":
        return [], index + 1, False
    if word.startswith("--"):
        return _long(words, index)
    if not word.startswith("-") or word == "-":
        return None
    options = []
    for at, letter in enumerate(word[1:], start=1):
        if letter in _TAKES:
            value = word[at + 1 :]
            after = index + 1 if value else index + 2
            options.append((letter, value or _value(words, index + 1)))
            return _checked(options), after, True
        if letter not in _BARE:
            raise ValueError("not followed")
        options.append((letter, ""))
    return options, index + 1, True


def _long(words: tuple[str, ...], index: int) -> _WordRead:
    """The long option at ``index``, by its name or an unambiguous start of it.

    Raises:
        ValueError: unknown, ambiguous, a value it does not take or lacks, ``--split-string``,
            ``--help`` or ``--version``.
    """
    name, equals, value = words[index].partition("=")
    started = [o for o in _LONG if o.startswith(name)] if name not in _LONG else [name]
    if len(started) != 1:
        raise ValueError("not followed")
    option = _LONG[started[0]]
    if option in _TAKES and not equals:
        return _checked([(option, _value(words, index + 1))]), index + 2, True
    if equals and option not in _TAKES and option != "signal":
        raise ValueError("not followed")  # "doesn't allow an argument"
    return _checked([(option, value)]), index + 1, True


def _checked(options: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``options``, none of them ``-S`` (not followed) or ``--help``/``--version``.

    Raises:
        ValueError: one is.
    """
    if any(option in ("S", "help") for option, _ in options):
        raise ValueError("not followed")
    return options


def _value(words: tuple[str, ...], index: int) -> str:
    """The word at ``index``, an option's value.

    Raises:
        ValueError: there is none.
    """
    if index >= len(words):
        raise ValueError("not followed")
    return words[index]
