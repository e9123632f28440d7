"""The commands that record: ``run`` (a qualification against a local endpoint) and ``demo``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from rich.console import Console

from audit.cli import signing
from audit.cli._common import (
    Handler,
    Subparsers,
    digest,
    example,
    named_paths,
    pin_set,
    print_json,
)
from bundle_schema.errors import EXIT_CHECK_FAILED, EXIT_OK, InvalidInput
from bundle_schema.models import MAX_ENV_VALUE, ReasoningPolicy, RunConfig, RunResult
from pins import ENV_NAME, RUNNER_VARIABLES

__all__ = ["register"]


def register(commands: Subparsers) -> dict[str, Handler]:
    """Add ``run`` and ``demo`` to ``commands``; return their handlers."""
    run_cmd = commands.add_parser(
        "run",
        help="record a qualification run against a local endpoint into a sealed bundle",
        description="Run a qualification against a local OpenAI-compatible endpoint: observer, "
        "model identity, pinned checkouts, direct probes, each harness in a network sandbox, "
        "streaming performance; then write the sealed bundle (claims are the verifier's own "
        "replay of the evidence). Exit 0 when a bundle was written, whatever its outcome.",
        epilog=example(
            "audit run --endpoint http://127.0.0.1:8080 --pins gx10-qualification-v5 "
            "--profile full --out runs/today --weights /models/model.gguf"
        ),
    )
    run_cmd.add_argument("--endpoint", required=True, metavar="URL", help="http:// on loopback")
    run_cmd.add_argument(
        "--pins", required=True, metavar="FILE.toml|ID", help="a pin-set file or a shipped id"
    )
    run_cmd.add_argument("--profile", required=True, metavar="NAME", help="e.g. full or smoke")
    run_cmd.add_argument("--out", required=True, metavar="DIR", help="a new bundle directory")
    run_cmd.add_argument(
        "--model", metavar="NAME", help="the runtime model id (default: the one served)"
    )
    identity = run_cmd.add_mutually_exclusive_group(required=True)
    identity.add_argument("--model-digest", type=digest, metavar="DIGEST")
    identity.add_argument("--weights", metavar="PATH", help="a weights file or directory to hash")
    run_cmd.add_argument(
        "--track", choices=get_args(RunConfig.model_fields["track"].annotation), default="primary"
    )
    run_cmd.add_argument(
        "--reasoning-policy",
        choices=get_args(ReasoningPolicy.model_fields["effective"].annotation),
        default="off",
        help="the effective reasoning policy (default: %(default)s)",
    )
    run_cmd.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="clone this upstream from a local mirror (repeatable)",
    )
    run_cmd.add_argument(
        "--harness-python",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="run this upstream's harness with this Python interpreter, one that holds its "
        "pinned requirements (default: the runner's own; repeatable)",
    )
    run_cmd.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="the data directory a harness reads under this name (the pin set pins its listing's "
        "digest; the harness's command gets it as {data[NAME]}; repeatable)",
    )
    run_cmd.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="give every harness this environment variable (recorded, a secret's value "
        "redacted; a value of at most 4096 characters; a variable the pin set pins with another "
        "value is refused; repeatable)",
    )
    run_cmd.add_argument("--run-id", metavar="ID", help="default: <pin set>-<profile>-<time>")
    run_cmd.add_argument(
        "--store",
        metavar="DIR",
        help="a blob store shared by runs: each blob kept there once, hard-linked into the bundle",
    )
    run_cmd.add_argument(
        "--json",
        action="store_true",
        help="no live display; print one run-result document (canonical JSON): the bundle, its "
        "digest, the signature written",
    )
    run_cmd.add_argument(
        "--sign",
        action="store_true",
        help="sign the sealed bundle with Sigstore (see audit sign); the identity is looked up "
        "before the run starts, so a missing one fails fast",
    )
    signing.add_signer_options(run_cmd)

    demo = commands.add_parser(
        "demo",
        help="build and verify the example bundles, then record and verify a run against the "
        "reference endpoint",
        description="The embedded default: build the example bundles from the example evidence "
        "shipped with the package, pack and verify them, show that a tampered copy fails, then "
        "run the whole recording pipeline (audit run) against the reference endpoint under the "
        "demo-only pin set gx10-reference-v5 and verify what it wrote. With --scenario, only "
        "the pipeline, misbehaving as named.",
        epilog=example("audit demo --scenario truncation"),
    )
    demo.add_argument("--out", default="build/demo", metavar="DIR", help="default: build/demo")
    demo.add_argument(
        "--scenario",
        metavar="NAME",
        help="run only the recording pipeline, misbehaving this way: well-behaved, truncation, "
        "non-local, redirect, reasoning, quarantine, hang, stray-change, fallback",
    )
    return {"run": _run_command, "demo": _demo}


def _variables(items: list[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` arguments by name; a name given twice, or one the runner sets for
    every harness itself, is refused."""
    variables: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not ENV_NAME.fullmatch(name) or "\0" in value:
            raise InvalidInput(f"--env {item!r}: expected NAME=VALUE")
        if len(value) > MAX_ENV_VALUE:
            raise InvalidInput(f"--env {name}: a value of over {MAX_ENV_VALUE} characters")
        if name in variables:
            raise InvalidInput(f"--env {name}: given twice")
        if name in RUNNER_VARIABLES:
            raise InvalidInput(f"--env {name}: the runner sets it for every harness")
        variables[name] = value
    return variables


def _run_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    from audit.progress import LiveProgress  # noqa: PLC0415 - the runner loads only for a run
    from audit.run import RunRequest, default_policy, run_qualification  # noqa: PLC0415

    pins = pin_set(args.pins)
    mirrors = named_paths("--mirror", args.mirror)
    unknown = sorted(set(mirrors) - set(pins.pins.upstreams))
    if unknown:
        raise InvalidInput(
            f"--mirror {unknown[0]}: the pin set pins no such upstream "
            f"({', '.join(sorted(pins.pins.upstreams))})"
        )
    pythons = named_paths("--harness-python", args.harness_python)
    unknown = sorted(set(pythons) - set(pins.pins.harnesses))
    if unknown:
        raise InvalidInput(f"--harness-python {unknown[0]}: the pin set runs no such harness")
    data = named_paths("--data", args.data)
    pinned = {name for h in pins.pins.harnesses.values() for name in h.data}
    unknown = sorted(set(data) - pinned)
    if unknown:
        raise InvalidInput(
            f"--data {unknown[0]}: no harness of the pin set reads a data directory of that name"
            + (f" (it pins {', '.join(sorted(pinned))})" if pinned else "")
        )
    variables = _variables(args.env)
    request = RunRequest(
        endpoint=args.endpoint, pins=pins, profile=args.profile, out=Path(args.out),
        model=args.model, model_digest=args.model_digest,
        weights=Path(args.weights) if args.weights else None, track=args.track,
        policy=default_policy(args.reasoning_policy), mirrors=mirrors, run_id=args.run_id,
        harness_python=pythons, data=data, harness_env=variables,
        store=Path(args.store) if args.store else None,
    )  # fmt: skip
    if args.sign:
        signing.signer_from(args)  # fail fast: no identity, no run
    if args.json:
        digest = run_qualification(request)
    else:
        with LiveProgress(out) as live:
            digest = run_qualification(request, live.step, live.watch)
    signed = signing.sign_after_run(args, out) if args.sign else None
    if args.json:
        signature = None if signed is None else str(signed)
        print_json(RunResult(schema_version=1, bundle=args.out, bundle_digest=digest,
                             signature=signature))  # fmt: skip
    else:
        out.print(f"sealed {digest} in {args.out}; check it with: audit verify {args.out}")
    return EXIT_OK


def _demo(args: argparse.Namespace, out: Console, err: Console) -> int:
    from audit.demo.pipeline import SCENARIOS, run_demo, run_pipeline  # noqa: PLC0415 - loads gitpython

    target = Path(args.out)
    if args.scenario is not None:
        if args.scenario not in SCENARIOS:
            raise InvalidInput(f"--scenario {args.scenario!r}: not one of {', '.join(SCENARIOS)}")
        return EXIT_OK if run_pipeline(target, out, args.scenario) else EXIT_CHECK_FAILED
    held = run_demo(target, out)
    held = run_pipeline(target, out) and held
    return EXIT_OK if held else EXIT_CHECK_FAILED
