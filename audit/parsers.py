"""Parse a harness's output directory into evidence records, with the verifier's own readers.

The readers (:mod:`verify.harness_outputs`) are the verifier's: the runner reads what a harness
wrote with the same code the verifier later re-reads the kept raw outputs with, so a record and
the raw output it came from cannot drift apart unnoticed. A missing or malformed output is a
:class:`ParseFailed`, which the runner records as a failed component (an infrastructure failure:
"compatible structured output").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bundle_schema.errors import CheckFailed
from bundle_schema.models import ComponentName
from verify.harness_outputs import Outputs, OutputsUnreadable, read_outputs

__all__ = ["ParseFailed", "Parsed", "output_files", "parse_outputs"]

Parsed = Outputs


class ParseFailed(CheckFailed):
    """A harness's outputs cannot be read as evidence; the message says which and why."""


def output_files(out: Path) -> dict[str, bytes]:
    """Every regular file under a harness's output directory, by its relative path."""
    return {
        path.relative_to(out).as_posix(): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def parse_outputs(parser: str, out: Path, components: Sequence[ComponentName]) -> Parsed:
    """Read a harness's output directory with the named reader, for the components it serves.

    Raises:
        ParseFailed: an output is missing or malformed.
    """
    try:
        return read_outputs(parser, output_files(out), components)
    except OutputsUnreadable as exc:
        raise ParseFailed(str(exc)) from None
