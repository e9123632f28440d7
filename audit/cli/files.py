"""The commands on bundle files and schemas: ``pack``, ``unpack`` and ``schema``."""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from rich.console import Console

from audit._archive import pack, unpack
from audit._store import write_atomically
from audit.cli._common import PROG, Handler, Subparsers, example
from bundle_schema import generate_schemas, schema_drift
from bundle_schema.errors import EXIT_CHECK_FAILED, EXIT_OK, InvalidInput, one_line
from verify.render import ProgressBar, plain_text

__all__ = ["register"]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``pack``, ``unpack`` and ``schema`` to ``commands``; return their handlers."""
    pack_cmd = commands.add_parser(
        "pack",
        help="pack a bundle directory into a reproducible tar",
        description="Pack a bundle directory into a byte-reproducible tar. Refuses a bundle "
        "that fails integrity (exit 1). On a terminal, a bar on stderr shows the bytes written "
        "of the total.",
        epilog=example("audit pack runs/today -o runs/today.tar"),
    )
    pack_cmd.add_argument("directory", metavar="DIR", help="the bundle directory to pack")
    pack_cmd.add_argument("-o", "--output", required=True, metavar="FILE.tar")

    unpack_cmd = commands.add_parser(
        "unpack",
        help="unpack a bundle tar, refusing hostile members",
        description="Unpack a bundle tar into a new or empty directory. Refuses (exit 1: a "
        "defective bundle) links, devices, FIFOs, absolute or '..' paths, duplicates, members "
        "outside the layout and members or archives over the size caps.",
        epilog=example("audit unpack runs/today.tar -o unpacked/today"),
    )
    unpack_cmd.add_argument(
        "archive", metavar="FILE.tar", help="the bundle tar to unpack (a path, or its URL)"
    )
    unpack_cmd.add_argument("-o", "--output", required=True, metavar="DIR")

    schema = commands.add_parser(
        "schema",
        help="list, check or regenerate the JSON Schema files",
        description="Without options, list the document kinds' schema files. --check fails "
        "(exit 1) when the committed files differ from the models; --out DIR writes them.",
        epilog=example("audit schema --check"),
    )
    mode = schema.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        nargs="?",
        const="",
        metavar="DIR",
        help="compare DIR (default: the installed bundle_schema/json) with the models",
    )
    mode.add_argument(
        "--out",
        metavar="DIR",
        help="write the schema files into DIR (and remove a *.schema.json no model makes)",
    )
    return {"pack": _pack, "unpack": _unpack, "schema": _schema}


def _schema(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.out is not None:
        if not args.out:
            raise InvalidInput("--out: an empty path: name the directory to write the schemas in")
        target = Path(args.out)
        target.mkdir(parents=True, exist_ok=True)
        schemas = generate_schemas()
        for name, data in sorted(schemas.items()):
            write_atomically(target / name, [data])
        stale = sorted(p for p in target.glob("*.schema.json") if p.name not in schemas)
        for path in stale:  # a retired kind's file: what --check would name as drift
            path.unlink()
        removed = f", removed {len(stale)} no model makes" if stale else ""
        out.print(plain_text(f"wrote {len(schemas)} schema files to {target}{removed}"))
        return EXIT_OK
    if args.check is not None:
        if args.check:
            directory = Path(args.check)
            if not directory.is_dir():
                raise InvalidInput(f"{directory}: not a directory")
            files = {p.name: p.read_bytes() for p in directory.glob("*.schema.json")}
            shown = str(directory)
        else:
            root = resources.files("bundle_schema") / "json"
            files = {p.name: p.read_bytes() for p in root.iterdir() if p.name.endswith(".json")}
            shown = "bundle_schema/json"
        drift = schema_drift(files)
        if drift:
            line = (
                f"{shown} differs from the models: {', '.join(drift)}; regenerate with: audit "
                f"schema --out {shown}"
            )
            sys.stderr.write(f"{PROG} schema: {one_line(line)}\n")
            return EXIT_CHECK_FAILED
        out.print(f"{shown}: {len(files)} schema files match the models")
        return EXIT_OK
    for name in sorted(generate_schemas()):
        out.print(name)
    return EXIT_OK


def _pack(args: argparse.Namespace, out: Console, err: Console) -> int:
    with ProgressBar(err, "packing") as bar:
        result = pack(args.directory, args.output, progress=bar.factory)
    out.print(f"packed {result.members} files ({result.bytes} bytes) of {result.bundle_digest}")
    return EXIT_OK


def _unpack(args: argparse.Namespace, out: Console, err: Console) -> int:
    result = unpack(args.archive, args.output)
    out.print(
        plain_text(f"unpacked {result.members} files of {result.bundle_digest} into {args.output}")
    )
    return EXIT_OK
