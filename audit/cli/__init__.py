"""The ``audit`` command line: one dispatcher, named exit codes, no traceback for bad input.

One module per command group: :mod:`~audit.cli.bundle` (verify, show, diff),
:mod:`~audit.cli.archive` (rank, rejudge), :mod:`~audit.cli.score`, :mod:`~audit.cli.files`
(pack, unpack, schema), :mod:`~audit.cli.recording` (run, demo) and :mod:`~audit.cli.signing`
(sign, verify-attestation, trust-root); what they share is in :mod:`~audit.cli._common`.

Exit codes: 0 done; 1 a check failed; 2 refused input or usage, with one line on stderr that says
what was wrong and where.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
from collections.abc import Sequence

from rich.console import Console

from audit.cli import archive, bundle, files, recording, score, signing
from audit.cli._common import PROG, Handler, Parser, example
from bundle_schema.errors import (
    ERROR_LINE,
    EXIT_INVALID_INPUT,
    EvidenceAuditError,
    InvalidInput,
    one_line,
)
from verify import VERSION, masked_text, url_snapshots

__all__ = ["main"]

_GROUPS = (bundle, signing, archive, recording, files, score)
"""The command groups, in the order ``audit --help`` lists their commands."""


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Handler], dict[str, Parser]]:
    """The CLI's parser, each command's handler, and each command's own parser."""
    parser = Parser(
        prog=PROG,
        description="Record LLM deployment qualification runs as evidence bundles; verify them.",
        epilog=example(
            "audit demo",
            "Exit codes: 0 done, 1 a check failed, 2 refused input or usage, 141 the output's "
            "reader went away.",
        ),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    commands = parser.add_subparsers(
        dest="command",
        metavar="COMMAND",
        parser_class=Parser,
        help="what to do (each has its --help: audit COMMAND --help)",
    )
    handlers: dict[str, Handler] = {}
    for group in _GROUPS:
        handlers |= group.register(commands)
    return parser, handlers, commands.choices


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it)."""
    parser, handlers, commands = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the command's own parser, which names its --help
            named = commands.get(args.command, parser) if args.command else parser
            named.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0)
    for stream in (sys.stdout, sys.stderr):  # a character the terminal cannot show: \u2713
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    out = _Console(highlight=False)
    err = _Console(stderr=True, highlight=False)
    command = f"{PROG} {args.command}" if args.command else PROG
    try:
        handler = handlers.get(args.command)
        if handler is None:
            raise InvalidInput(f"give a command (see {PROG} --help)")
        with url_snapshots():  # a URL read twice by one command is one object (ADR 0024)
            return handler(args, out, err)
    except EvidenceAuditError as exc:
        _say(command, exc.message)
        return exc.exit_code
    except BrokenPipeError:
        # Whoever read the output stopped reading (``| head``): nothing failed here. Exit as a
        # process the pipe's SIGPIPE ended (a shell's 141), with nothing more to write.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        _say(command, _os_error(exc))
        return EXIT_INVALID_INPUT
    except KeyboardInterrupt:
        sys.stderr.write(f"{command}: interrupted\n")
        return 130


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""The exit code when the reader of the output went away (a shell's code for SIGPIPE)."""


class _Console(Console):
    """rich's console, whose lost reader is the one the CLI handles once (rich's own exits 1,
    the code of a failed check)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _say(command: str, text: str) -> None:
    """The one line on stderr of a command that stopped: a URL in it never shows a credential
    (masked before the text is folded), a line break in a name is a space and a byte that is
    not UTF-8 is written out (:func:`~bundle_schema.errors.one_line`)."""
    sys.stderr.write(f"{command}: {one_line(masked_text(text), ERROR_LINE)}\n")


def _os_error(exc: OSError) -> str:
    """An operating system's refusal with the file (or the two files) it names."""
    names = [
        os.fsdecode(name)
        for name in (exc.filename, exc.filename2)
        if isinstance(name, (str, bytes))
    ]
    where = "".join(f"{name}: " for name in names)
    return f"{where}{exc.strerror or exc}"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
