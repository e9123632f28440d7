"""The CLI contract under careless and hostile input (review of 2026-12-06).

The contract (DESIGN.md, README "Exit codes", ADR 0019, ADR 0021): refused input or usage is
exit 2 with ONE line on stderr that says what was wrong and where; a failed check is exit 1;
never a Python traceback; never a write outside the target; never a partial or overwritten
output on error; control characters of a name are never written raw.

Each test here asserts the contract for one defect found by hand, each fixed; the one strict
expected failure left is a decision (its reason says which).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.factories import write_small_bundle

AUDIT = str(Path(sys.executable).with_name("audit"))
DIGEST = "sha256:" + "c" * 64


def audit(
    args: Sequence[str | os.PathLike[str]],
    cwd: Path,
    *,
    timeout: float = 60,
    limit_memory: int | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``audit`` with its scratch space under ``cwd``."""
    env = {**os.environ, "TMPDIR": str(cwd), "COLUMNS": "200"}

    def limit() -> None:  # pragma: no cover - runs in the child
        if limit_memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))

    return subprocess.run(
        [AUDIT, *(os.fspath(arg) for arg in args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
        preexec_fn=limit if limit_memory is not None else None,
    )


def assert_refused(done: subprocess.CompletedProcess[bytes]) -> str:
    """Exit 2, one line on stderr, no traceback; returns the line."""
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert b"Traceback" not in done.stderr, err
    assert done.returncode == 2, (done.returncode, err)
    assert err.count("\n") == 1, err
    return err


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    write_small_bundle(tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture
def bundle_tar(bundle: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run.tar"
    done = audit(["pack", bundle, "-o", target], tmp_path)
    assert done.returncode == 0, done.stderr
    return target


# --- audit run -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:99999", "http://127.0.0.1:abc", "http://[::1"]
)
def test_run_refuses_an_endpoint_url_that_does_not_parse(tmp_path: Path, endpoint: str) -> None:
    done = audit(
        ["run", "--endpoint", endpoint, "--pins", "gx10-reference-v5", "--profile", "smoke",
         "--model-digest", DIGEST, "--out", tmp_path / "out"],
        tmp_path,
    )  # fmt: skip
    err = assert_refused(done)
    assert "--endpoint" in err
    assert not (tmp_path / "out").exists()


def test_run_refuses_a_mirror_of_no_upstream(tmp_path: Path) -> None:
    done = audit(
        ["run", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--pins", "gx10-reference-v5",
         "--profile", "smoke", "--model-digest", DIGEST, "--out", tmp_path / "out",
         "--mirror", f"sparkbnech={tmp_path}"],
        tmp_path,
    )  # fmt: skip
    err = assert_refused(done)
    assert "--mirror sparkbnech" in err


def test_run_refuses_a_store_that_is_a_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.write_bytes(b"not a directory\n")
    done = audit(
        ["run", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--pins", "gx10-reference-v5",
         "--profile", "smoke", "--model-digest", DIGEST, "--out", tmp_path / "out",
         "--store", store],
        tmp_path,
    )  # fmt: skip
    err = assert_refused(done)
    assert "--store" in err


def test_a_refused_run_leaves_no_directories_it_made(tmp_path: Path) -> None:
    done = audit(
        ["run", "--endpoint", f"http://127.0.0.1:{closed_port()}", "--pins", "gx10-reference-v5",
         "--profile", "smoke", "--model-digest", DIGEST, "--out", tmp_path / "a" / "b" / "out"],
        tmp_path,
    )  # fmt: skip
    assert_refused(done)  # the endpoint answers nothing: refused at the identity step
    assert not (tmp_path / "a").exists()


# --- input files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["rank"], ["verify-archive"], ["rejudge", "--pins", "gx10-reference-v5"]]
)
def test_a_list_that_never_ends_is_refused(tmp_path: Path, command: list[str]) -> None:
    done = audit([*command, "--from", "/dev/zero"], tmp_path, limit_memory=2 << 30)
    assert_refused(done)


@pytest.mark.parametrize("command", [["rank", "--from"], ["score", "gx10"], ["rank"]])
def test_a_fifo_input_is_refused_not_waited_on(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "list"
    os.mkfifo(fifo)
    try:
        done = audit([*command, fifo], tmp_path, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"audit {' '.join(command)} FIFO waited 15 s for a writer")
    assert_refused(done)


def test_a_directory_without_a_manifest_is_no_bundle(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-bundle"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    (folder / "latest").symlink_to("notes.txt")
    err = assert_refused(audit(["verify", folder], tmp_path))
    assert "no manifest.json" in err


# --- outputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("other", ["--vsa", "--evidence-out"])
def test_two_outputs_naming_one_file_are_refused(
    bundle_tar: Path, tmp_path: Path, other: str
) -> None:
    target = tmp_path / "out.json"
    done = audit(["verify", bundle_tar, "--attest", target, other, target], tmp_path)
    assert_refused(done)
    assert not target.exists()


def test_sign_refuses_to_write_over_its_statement(bundle_tar: Path, tmp_path: Path) -> None:
    statement = tmp_path / "verdict.json"
    assert audit(["verify", bundle_tar, "--attest", statement], tmp_path).returncode == 0
    done = audit(
        ["sign", "--statement", statement, "-o", statement, "--replace",
         "--identity-token", "x.y.z"],
        tmp_path,
    )  # fmt: skip
    err = assert_refused(done)
    assert "identity token" not in err
    assert str(statement) in err


def test_schema_refuses_an_empty_output_directory(tmp_path: Path) -> None:
    assert_refused(audit(["schema", "--out", ""], tmp_path))


def test_schema_check_line_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "sch\nemas\x1b[31m"
    folder.mkdir()
    done = audit(["schema", "--check", folder], tmp_path)
    assert done.returncode == 1
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert b"\x1b" not in done.stderr


def test_schema_out_fixes_what_schema_check_reports(tmp_path: Path) -> None:
    folder = tmp_path / "json"
    assert audit(["schema", "--out", folder], tmp_path).returncode == 0
    (folder / "retired-kind.schema.json").write_text("{}\n")
    assert audit(["schema", "--check", folder], tmp_path).returncode == 1
    assert audit(["schema", "--out", folder], tmp_path).returncode == 0
    done = audit(["schema", "--check", folder], tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "command",
    [["rank"], ["verify-archive"], ["rejudge", "--pins", "gx10-reference-v5"]],
)
def test_csv_never_writes_a_control_character(
    bundle_tar: Path, tmp_path: Path, command: list[str]
) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    data = bundle_tar.read_bytes()
    (archive / "good.tar").write_bytes(data)
    (archive / "evil\x1b]0;PWNED\x07.tar").write_bytes(data)  # a copy: one more source
    done = audit([*command, archive, "--csv"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"evil" in done.stdout
    assert b"\x1b" not in done.stdout
    assert b"\x07" not in done.stdout


# --- options that do nothing -----------------------------------------------------------------


@pytest.mark.parametrize("command", [["verify"], ["show"], ["rank"], ["verify-archive"]])
def test_a_trust_root_without_an_identity_is_refused(
    bundle_tar: Path, tmp_path: Path, command: list[str]
) -> None:
    done = audit([*command, bundle_tar, "--trusted-root", tmp_path / "missing.json"], tmp_path)
    assert_refused(done)


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: verify-attestation checks the file it is given; a file that is no "
    "Sigstore bundle is a signature that failed (exit 1, 'signature failed: ... not a Sigstore "
    "bundle'), as a bundle's own malformed signature is (verify/_signature.py check_attestation "
    "never raises)",
)
def test_an_attestation_that_is_not_a_sigstore_bundle_is_refused(
    bundle_tar: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.sigstore.json"
    empty.write_bytes(b"")
    done = audit(
        ["verify-attestation", empty, "--identity", "a@example.com", "--issuer",
         "https://accounts.example.com"],
        tmp_path,
    )  # fmt: skip
    assert_refused(done)


# --- stdout closed ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["verify"], ["show"]])
def test_a_closed_stdout_is_not_a_failed_check(
    bundle_tar: Path, tmp_path: Path, command: list[str]
) -> None:
    process = subprocess.Popen(
        [AUDIT, *command, os.fspath(bundle_tar)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None and process.stderr is not None
    with process, process.stderr:
        process.stdout.close()  # as `| head -0` does, before the first write
        err = process.stderr.read()
        code = process.wait(timeout=60)
    assert b"Traceback" not in err
    assert code != 1, err


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("missing.toml", "missing.toml: no such file, and no shipped pin set has that name"),
        ("./no/such", "./no/such: no such file, and no shipped pin set has that name"),
        (".", ".: not a regular file; a pin set is a TOML file or one of "),
        ("gx10-no-such", "unknown pin set 'gx10-no-such'; shipped: "),
    ],
)
def test_a_pin_set_that_is_no_file_says_which_it_is(
    bundle_tar: Path, tmp_path: Path, given: str, said: str
) -> None:
    """``--pins`` names a shipped id or a file: a path that is not there, or not a file, says
    so (it said "unknown pin set" for both)."""
    err = assert_refused(audit(["verify", bundle_tar, "--pins", given], tmp_path))
    assert err.startswith(f"audit verify: {said}"), err


@pytest.mark.parametrize(
    ("command", "listed"),
    [(["verify"], True), (["show"], True), (["verify-archive", "--markdown"], True),
     (["rank"], False)],
)  # fmt: skip
def test_a_line_break_in_a_bundles_path_adds_no_line(
    bundle_tar: Path, tmp_path: Path, command: list[str], listed: bool
) -> None:
    """A bundle's path is the user's, yet a name with a line break (``x\\nQUALIFIED.tar``,
    in an archive the publisher named) must not print a line of its own in human output (rank
    lists no bundle that is not rankable: the name must only not print a line there)."""
    archive = tmp_path / "archive"
    archive.mkdir()
    named = archive / "x\nQUALIFIED rankable.tar"
    named.write_bytes(bundle_tar.read_bytes())
    done = audit([*command, named if command[0] in ("verify", "show") else archive], tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr
    lines = done.stdout.decode().splitlines() + done.stderr.decode().splitlines()
    assert not [line for line in lines if line.lstrip().startswith("QUALIFIED rankable")], lines
    assert any("x QUALIFIED rankable" in line for line in lines) is listed, lines


def test_outputs_of_a_failed_check_are_written_and_of_a_refusal_are_not(
    bundle: Path, tmp_path: Path
) -> None:
    """``--evidence-out``, ``--attest`` and ``--vsa`` carry the verdict whatever it is: a
    tampered blob (exit 1) still writes them, the VSA saying FAILED; a path that is no bundle
    (exit 2) writes none (ADR 0019, kept as decided)."""
    blob = next(p for p in sorted((bundle / "blobs" / "sha256").iterdir()) if p.stat().st_size)
    blob.write_bytes(blob.read_bytes() + b" ")
    outs = [tmp_path / name for name in ("evidence.json", "attest.json", "vsa.json")]
    flags = ["--evidence-out", outs[0], "--attest", outs[1], "--vsa", outs[2]]
    done = audit(["verify", bundle, *flags], tmp_path)
    assert done.returncode == 1, done.stderr
    assert all(out.is_file() for out in outs)
    vsa = json.loads(outs[2].read_text())
    assert vsa["predicate"]["verificationResult"] == "FAILED"
    for out in outs:
        out.unlink()
    assert_refused(audit(["verify", tmp_path / "missing", *flags], tmp_path))
    assert not any(out.exists() for out in outs)
