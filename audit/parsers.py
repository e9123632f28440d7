"""Parse a harness's output directory into evidence records, with the verifier's own readers.

The readers (:mod:`verify.harness_outputs`) are the verifier's: the runner reads what a harness
wrote with the same code the verifier later re-reads the kept raw outputs with, so a record and
the raw output it came from cannot drift apart unnoticed. A missing or malformed output is a
:class:`ParseFailed`, which the runner records as a failed component (an infrastructure failure:
"compatible structured output").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bundle_schema.errors import CheckFailed
from bundle_schema.models import ComponentName
from verify.harness_outputs import Outputs, OutputsUnreadable, read_outputs

__all__ = [
    "MAX_OUTPUTS",
    "MAX_OUTPUT_BYTES",
    "MAX_OUTPUT_DEPTH",
    "ParseFailed",
    "Parsed",
    "collect_outputs",
    "output_files",
    "parse_files",
    "parse_outputs",
    "shown_output",
]

Parsed = Outputs


class ParseFailed(CheckFailed):
    """A harness's outputs cannot be read as evidence; the message says which and why."""


MAX_OUTPUT_BYTES = 256 << 20
"""The largest output file kept (the largest a reader reads: bfcl-eval's result files are
bounded alike); a larger one is refused by name, never read into memory."""
MAX_OUTPUTS = 1 << 30
"""All of one harness's output files together, at most."""
MAX_OUTPUT_DEPTH = 32
"""How many directories deep under its output directory a harness's outputs are read; a
directory deeper than this is refused by name (no pinned harness writes more than four)."""


def shown_output(relative: str) -> str:
    """An output's relative path for a message: as text, or as its bytes where it is no
    printable UTF-8 (a name of bytes that are not UTF-8 comes as surrogate escapes)."""
    try:
        relative.encode()
    except UnicodeEncodeError:
        return repr(os.fsencode(relative))
    return repr(relative)


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class _Walk:
    """What a walk of an output directory found: depth first, one open directory a level (at
    most :data:`MAX_OUTPUT_DEPTH`), no link followed."""

    files: dict[str, bytes] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    size: int = 0

    def directory(self, fd: int, prefix: str) -> None:
        try:
            names = sorted(os.listdir(fd))
        except OSError as exc:
            self.refused.append(f"{shown_output(prefix or '.')}: cannot be listed ({exc.strerror})")
            return
        for name in names:
            try:
                self.entry(fd, name, prefix + name)
            except OSError as exc:
                self.refused.append(
                    f"{shown_output(prefix + name)}: cannot be read ({exc.strerror})"
                )

    def entry(self, fd: int, name: str, relative: str) -> None:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            if relative.count("/") + 1 >= MAX_OUTPUT_DEPTH:
                self.refused.append(
                    f"{shown_output(relative)}: a directory over {MAX_OUTPUT_DEPTH} levels deep"
                )
                return
            child = os.open(name, _DIRECTORY, dir_fd=fd)
            try:
                self.directory(child, relative + "/")
            finally:
                os.close(child)
        elif stat.S_ISREG(mode):
            with open(os.open(name, _FILE, dir_fd=fd), "rb") as file:
                status = os.fstat(file.fileno())
                if not stat.S_ISREG(status.st_mode):
                    self.refused.append(f"{shown_output(relative)}: no longer a regular file")
                    return
                if status.st_size > MAX_OUTPUT_BYTES or self.size + status.st_size > MAX_OUTPUTS:
                    self.refused.append(
                        f"{shown_output(relative)}: {status.st_size} bytes, past what a harness's "
                        f"outputs are kept to ({MAX_OUTPUT_BYTES >> 20} MiB a file, "
                        f"{MAX_OUTPUTS >> 20} MiB in all)"
                    )
                    return
                data = file.read(MAX_OUTPUT_BYTES + 1)
                if len(data) > MAX_OUTPUT_BYTES:  # grown since: refused as above
                    self.refused.append(
                        f"{shown_output(relative)}: grew past {MAX_OUTPUT_BYTES} bytes"
                    )
                    return
                self.size += len(data)
                self.files[relative] = data
        elif stat.S_ISLNK(mode):
            target = os.readlink(name, dir_fd=fd)
            self.refused.append(
                f"{shown_output(relative)}: a symbolic link (to {shown_output(target)[:200]}), "
                "never followed: an output is kept as a regular file only"
            )
        else:
            self.refused.append(
                f"{shown_output(relative)}: not a regular file (a FIFO, socket or device node)"
            )


def collect_outputs(
    out: Path, identity: tuple[int, int] | None = None
) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file under a harness's output directory by its relative path, read without
    following any link (the directory itself, its subdirectories and its files are each opened
    with ``O_NOFOLLOW``), and what cannot be kept, each one located: a symbolic link, a FIFO,
    socket or device node, a directory deeper than :data:`MAX_OUTPUT_DEPTH`, the output
    directory itself replaced (not the directory of ``identity``, its device and inode when it
    was made). A name of bytes that are not UTF-8 is kept as Python's surrogate escapes of them.
    No output directory at all is no outputs (the harness removed it)."""
    try:
        top = os.open(out, _DIRECTORY)
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [f"its output directory {out} cannot be read as one ({exc.strerror})"]
    try:
        status = os.fstat(top)
        if identity is not None and (status.st_dev, status.st_ino) != identity:
            return {}, [f"its output directory {out} was replaced by another"]
        walk = _Walk()
        walk.directory(top, "")
    finally:
        os.close(top)
    return dict(sorted(walk.files.items())), sorted(walk.refused)


def output_files(out: Path) -> dict[str, bytes]:
    """Every regular file under a harness's output directory, by its relative path
    (:func:`collect_outputs`; what it refuses is left out)."""
    return collect_outputs(out)[0]


def parse_files(
    parser: str, files: dict[str, bytes], components: Sequence[ComponentName]
) -> Parsed:
    """Read a harness's outputs (:func:`collect_outputs`) with the named reader, for the
    components it serves.

    Raises:
        ParseFailed: an output is missing or malformed.
    """
    try:
        return read_outputs(parser, files, components)
    except OutputsUnreadable as exc:
        raise ParseFailed(str(exc)) from None


def parse_outputs(parser: str, out: Path, components: Sequence[ComponentName]) -> Parsed:
    """Read a harness's output directory with the named reader, for the components it serves.

    Raises:
        ParseFailed: an output is missing or malformed.
    """
    return parse_files(parser, output_files(out), components)
