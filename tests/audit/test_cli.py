"""The CLI contract: exit codes 0/1/2, one-line reasons, no traceback; once via a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli import main
from verify import VERSION


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"audit {VERSION}"


@pytest.mark.parametrize(
    "command",
    [
        [], ["verify"], ["pack"], ["unpack"], ["schema"], ["demo"], ["score"], ["score", "bfcl"],
        ["score", "quality"], ["score", "quality", "pairs"], ["score", "quality", "tasks"],
        ["score", "quality", "protocol"], ["score", "lmspeed"], ["score", "gx10"],
        ["run"], ["rank"], ["diff"], ["show"], ["rejudge"], ["sign"], ["verify-attestation"],
        ["trust-root"], ["trust-root", "show"], ["trust-root", "update"],
    ],
)  # fmt: skip
def test_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    assert "usage: audit" in capsys.readouterr().out


_RUN = ["run", "--endpoint", "http://127.0.0.1:1", "--out", "x", "--pins", "gx10-reference-v5",
        "--profile", "smoke", "--model-digest", "sha256:" + "0" * 64]  # fmt: skip
USAGE = [
    ("no command", [], "audit: give a command (see audit --help)"),
    ("unknown command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("verify without a path", ["verify"], "the following arguments are required: PATH"),
    (
        "bad digest",
        ["verify", ".", "--expect-digest", "abc"],
        "'abc' is not sha256:<64 lowercase hex>",
    ),
    ("bad workers", ["verify", ".", "--workers", "0"], "'0' is not a positive integer"),
    ("workers not ASCII", ["verify", ".", "--workers", "\u0663"], "'\u0663' is not a positive"),
    ("workers past the bound", ["verify", ".", "--workers", "100000"], "of at most 1024"),
    ("pack without output", ["pack", "."], "the following arguments are required: -o/--output"),
    ("check and out", ["schema", "--check", "--out", "x"], "not allowed with argument"),
    ("unknown option", ["verify", ".", "--fast"],
     "audit verify: unrecognized arguments: --fast (see audit verify --help)"),
    ("unknown option, no command", ["--fast"], "audit: unrecognized arguments: --fast"),
    *(
        (f"run --env {given}", [*_RUN, "--env", given], fragment)
        for given, fragment in [
            ("NOVALUE", "--env 'NOVALUE': expected NAME=VALUE"),
            ("1BAD=x", "--env '1BAD=x': expected NAME=VALUE"),
            ("PATH=/tmp", "--env PATH: the runner sets it for every harness"),
        ]
    ),
    ("run --env twice", [*_RUN, "--env", "A=1", "--env", "A=2"], "--env A: given twice"),
    *(
        (f"run --run-id {given!r}", [*_RUN, "--run-id", given], f"--run-id {given!r}: not an")
        for given in ["a b", "a,b", ".a", "x" * 129]
    ),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "fragment"), [u[1:] for u in USAGE], ids=[u[0] for u in USAGE])
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert fragment in err


REFUSED = [
    ("missing path", lambda d: d / "nope", "cannot open: No such file or directory"),
    ("empty directory", lambda d: d, "no manifest.json; not a sealed bundle"),
    ("device", lambda d: Path("/dev/null"), "neither a bundle directory nor a tar file"),
]


@pytest.mark.parametrize(
    ("make", "fragment"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_refused_input_exit_2(
    make, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    assert main(["verify", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err


def test_pack_and_unpack_commands(
    full_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pack", str(full_bundle), "-o", str(tmp_path / "b.tar")]) == 0
    assert "packed" in capsys.readouterr().out
    assert main(["unpack", str(tmp_path / "b.tar"), "-o", str(tmp_path / "out")]) == 0
    assert main(["verify", str(tmp_path / "out")]) == 0


def test_pack_of_a_corrupt_bundle_exits_1(
    full_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    next((full_bundle / "blobs" / "sha256").iterdir()).write_bytes(b"corrupt")
    assert main(["pack", str(full_bundle), "-o", str(tmp_path / "b.tar")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("audit pack: ") and err.count("\n") == 1
    assert not (tmp_path / "b.tar").exists()


def test_unwritable_output_is_a_one_line_error(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pack", str(full_bundle), "-o", "/proc/b.tar"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("audit pack: /proc/") and err.count("\n") == 1


def test_human_output_shows_the_verdict(
    full_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(full_bundle)]) == 0
    out = capsys.readouterr().out
    assert "integrity" in out and "ok" in out and "gx10-v5-full-20261102T100000Z-01" in out
    assert "3 entries no gate reads: identity/endpoint-models.json" in " ".join(out.split())


def test_through_a_subprocess(full_bundle: Path) -> None:
    """The installed entry point, as a user runs it: exit codes and streams."""
    env = dict(os.environ, COLUMNS="200")
    run = [sys.executable, "-m", "audit"]
    ok = subprocess.run(
        [*run, "verify", str(full_bundle), "--json"], capture_output=True, env=env, check=False
    )
    assert (ok.returncode, ok.stderr) == (0, b"")
    assert ok.stdout.startswith(b'{"bundle_digest":"sha256:')
    blob = next((full_bundle / "blobs" / "sha256").iterdir())
    blob.write_bytes(blob.read_bytes()[:-1])
    failed = subprocess.run(
        [*run, "verify", str(full_bundle)], capture_output=True, env=env, check=False
    )
    assert failed.returncode == 1
    assert failed.stderr.decode().count("\n") == 1
    refused = subprocess.run(
        [*run, "verify", "/nonexistent"], capture_output=True, env=env, check=False
    )
    assert refused.returncode == 2
    assert refused.stderr == b"audit verify: /nonexistent: cannot open: No such file or directory\n"
    script = Path(sys.executable).parent / "audit"
    version = subprocess.run([str(script), "--version"], capture_output=True, check=False)
    assert version.stdout.decode().strip() == f"audit {VERSION}"


def test_diff_names_the_side_a_refusal_is_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Of two bundles, the one whose manifest does not read is named (every refusal of a source
    names it first), and only once."""
    from tests.factories import write_small_bundle  # noqa: PLC0415 - as the other CLI tests

    good, bad = tmp_path / "good", tmp_path / "bad"
    write_small_bundle(good, durable=False)
    write_small_bundle(bad, durable=False)
    manifest = bad / "manifest.json"
    manifest.write_bytes(b"\xff" + manifest.read_bytes()[1:])
    assert main(["diff", str(good), str(bad)]) == 1
    assert capsys.readouterr().err == f"audit diff: {bad}: manifest.json: invalid UTF-8 at byte 0\n"
    missing = tmp_path / "missing"
    assert main(["diff", str(missing), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"audit diff: {missing}: ") and err.count(str(missing)) == 1, err


def test_every_command_names_the_bundle_whose_manifest_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest that does not read is refused by every command that reads one, naming the
    bundle first, once: verify, show, pack, sign (before any signing), and unpack of its tar."""
    from audit._archive import pack  # noqa: PLC0415 - as the other CLI tests
    from tests.factories import write_small_bundle  # noqa: PLC0415 - as the other CLI tests

    bad = tmp_path / "bad"
    write_small_bundle(bad, durable=False)
    pack(bad, tmp_path / "bad.tar")  # packed whole, then its manifest broken in both
    manifest = bad / "manifest.json"
    manifest.write_bytes(b"\xff" + manifest.read_bytes()[1:])
    tar = tmp_path / "bad.tar"
    data = tar.read_bytes()
    at = data.index(b'{"claims"')  # the manifest member's first byte
    tar.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    invalid = "manifest.json: invalid UTF-8 at byte 0"
    for argv, named in (
        (["verify", str(bad)], bad),
        (["show", str(bad)], bad),
        (["pack", str(bad), "-o", str(tmp_path / "out.tar")], bad),
        (["sign", str(bad), "--identity-token", "x"], bad),
        (["unpack", str(tar), "-o", str(tmp_path / "out")], tar),
    ):
        assert main(argv) == 1, argv
        assert capsys.readouterr().err == f"audit {argv[0]}: {named}: {invalid}\n", argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "bad.tar"]
