"""What every command group shares: the parser, argument types, ``--pins``, bounded reads of input
files, and the one canonical-JSON writer."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import BaseModel
from rich.console import Console

from bundle_schema import canonical_bytes
from bundle_schema.errors import EXIT_INVALID_INPUT, InvalidInput, one_line
from bundle_schema.models import DIGEST_PATTERN
from pins import BUILTIN, PinSetSource, load_builtin, parse_pin_set
from verify import read_capped

__all__ = [
    "MAX_INPUT_BYTES",
    "PROG",
    "Handler",
    "Parser",
    "Subparsers",
    "digest",
    "example",
    "located",
    "named_paths",
    "optional_pins",
    "pin_set",
    "positive",
    "print_json",
    "read",
]

PROG = "audit"

Handler = Callable[[argparse.Namespace, Console, Console], int]
"""A command: its parsed arguments, stdout and stderr consoles; returns the exit code."""


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's, but each line of a description or epilog is wrapped on its own, and an
    indented line (an example command) is kept whole, so that it can be copied."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n".join(
            indent + line if line.startswith("  ") else fill(line, width, indent)
            for line in text.splitlines()
        )


def example(command: str, before: str = "") -> str:
    """An epilog: ``before`` (if any), then the one example command on a line of its own."""
    return (before + "\n\n" if before else "") + "example:\n  " + command


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2, and help is formatted by
    :class:`_HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_INVALID_INPUT)


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[Parser]
else:  # subscriptable only to the type checker
    Subparsers = argparse._SubParsersAction


def digest(text: str) -> str:
    if not re.match(DIGEST_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not sha256:<64 lowercase hex>")
    return text


MAX_WORKERS = 1024
"""The most of anything a count option asks for (threads, processes): more is a typo."""


def positive(text: str) -> int:
    """A count option's value: ASCII digits (``"٣"`` and ``"²"`` are digits to ``str``), 1 to
    :data:`MAX_WORKERS`."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive integer of at most {MAX_WORKERS}"
        )
    return int(text)


MAX_INPUT_BYTES = 64 << 20
"""A scorer input file larger than this is refused before it is read whole."""


def read(path: str | Path) -> bytes:
    return read_capped(path, MAX_INPUT_BYTES, "a scorer input")


def located(path: str | Path | None) -> tuple[bytes, str] | None:
    return None if path is None else (read(path), str(path))


def pin_set(given: str) -> PinSetSource:
    """``--pins ID|FILE``, the same in every command: a shipped id is always the shipped pin
    set, even beside a file of that name in the working directory (give such a file as a path:
    ``./gx10-qualification-v5``); anything else is a pin-set file. (A file may take a shipped
    id with other bytes, as the demo's short-limit scenario does: the verdict names its
    digest, and ranks nothing under it.)"""
    if given in BUILTIN:
        return load_builtin(given)
    path = Path(given)
    if path.is_file():
        return parse_pin_set(read(path), given)
    shipped = ", ".join(BUILTIN)
    if path.exists():
        raise InvalidInput(
            f"{given}: not a regular file; a pin set is a TOML file or one of {shipped}"
        )
    if "/" in given or given.endswith(".toml"):
        raise InvalidInput(
            f"{given}: no such file, and no shipped pin set has that name ({shipped})"
        )
    return load_builtin(given)


def optional_pins(given: str | None) -> PinSetSource | None:
    return None if given is None else pin_set(given)


def print_json(document: BaseModel) -> None:
    sys.stdout.buffer.write(canonical_bytes(document.model_dump(mode="json")) + b"\n")
    sys.stdout.flush()


def named_paths(flag: str, items: list[str]) -> dict[str, Path]:
    """``NAME=PATH`` arguments by name; one name given twice is refused."""
    named: dict[str, Path] = {}
    for item in items:
        name, sep, where = item.partition("=")
        if not sep or not name or not where:
            raise InvalidInput(f"{flag} {item!r}: expected NAME=PATH")
        if name in named:
            raise InvalidInput(f"{flag} {name}: given twice")
        named[name] = Path(where)
    return named
