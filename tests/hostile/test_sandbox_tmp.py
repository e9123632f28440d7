"""A harness's ``/tmp`` and ``/var/tmp`` are one directory of its own (ADR 0047, point 11).

Before, both were the host's, writable: a harness wrote, as the runner's uid, among every other
process's temporary files (a bundle written under ``/tmp``, another program's socket or lock),
and read them. Now the host's are not in its view; what it is given that lies there (its
checkout, outputs and home when the scratch directory is under ``/tmp``, the interpreter that
runs it) is shown at its own path, as writable or read-only as before. Each test drives a real
sandbox through ``run_sandboxed`` (``tests.sandbox_kit``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import said as _said
from tests.sandbox_kit import sandboxed as _sandboxed

TMP = """
planted, mark = sys.argv[1], sys.argv[2]  # names: a path on the command line is shown
print('host file', os.path.exists(os.path.join('/tmp', planted)), flush=True)
for place in ('/tmp', '/var/tmp'):
    with open(os.path.join(place, mark), 'w') as f:
        f.write(place)
print('one directory', open(os.path.join('/tmp', mark)).read(), flush=True)
print('own places', os.access(os.getcwd(), os.W_OK), os.path.exists(sys.executable), flush=True)
print('temporary', __import__('tempfile').gettempdir(), flush=True)
"""


@pytest.fixture
def planted() -> object:
    """A file of the host's in its ``/tmp``, gone after the test."""
    path = Path("/tmp") / f"host-{os.getpid()}-{os.urandom(4).hex()}"  # the host's
    path.write_text("the host's")
    yield path
    path.unlink()


def _mark() -> str:
    return f"sandbox-{os.getpid()}-{os.urandom(4).hex()}"


def test_a_harness_s_tmp_is_an_empty_one_of_its_own(
    tmp_path: Path, planted: Path, sandbox: None
) -> None:
    mark = _mark()
    result = _harness(tmp_path, TMP, planted.name, mark)
    assert _said(result) == [
        "host file False",
        "one directory /var/tmp",  # /var/tmp is /tmp: the second write replaced the first
        "own places True True",  # its working directory (under the host's /tmp here) is shown
        "temporary /tmp",
    ]
    assert not (Path("/tmp") / mark).exists()  # nothing reached the host's
    assert not (Path("/var/tmp") / mark).exists()


def test_a_given_tmp_directory_holds_what_the_harness_wrote(
    tmp_path: Path, planted: Path, sandbox: None
) -> None:
    own = tmp_path / "own-tmp"
    own.mkdir()
    mark = _mark()
    result = _harness(tmp_path, TMP, planted.name, mark, tmp=own)
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.decode().splitlines()[:2] == ["host file False", "one directory /var/tmp"]
    assert (own / mark).read_text() == "/var/tmp"


def test_given_places_under_the_host_s_tmp_keep_their_paths_and_modes(
    tmp_path: Path, sandbox: None
) -> None:
    # the runner's layout with a scratch directory under /tmp: its folders read-only, the
    # harness's own places writable in them, the other harnesses' hidden, its .git read-only
    scratch = tmp_path / "scratch"
    checkout, out, home = (scratch / k / "up" for k in ("checkouts", "outputs", "home"))
    other = scratch / "outputs" / "other"
    for place in (checkout / ".git", out, home, other):
        place.mkdir(parents=True)
    (other / "secret").write_text("another harness's")
    data = tmp_path / "data"
    data.mkdir()
    (data / "set.jsonl").write_text("{}\n")
    probe = """
import os, sys
for place in sys.argv[1:]:
    print(os.path.basename(place), os.path.exists(place), os.access(place, os.W_OK))
"""
    places = [str(p) for p in (checkout, out, home, checkout / ".git", scratch, other / "secret",
                               data / "set.jsonl")]  # fmt: skip
    result = _sandboxed(
        [sys.executable, "-c", probe, *places], checkout, writable=[checkout, out, home],
        read_only=[scratch, *(scratch / k for k in ("outputs", "home", "checkouts")),
                   checkout / ".git"],
        hidden=[other], shown=[data],
    )  # fmt: skip
    assert _said(result) == [
        "up True True",
        "up True True",
        "up True True",
        ".git True False",
        "scratch True False",
        "secret False False",
        "set.jsonl True False",  # shown: read-only
    ]


def test_an_interpreter_under_the_host_s_tmp_runs_the_harness(
    tmp_path: Path, sandbox: None
) -> None:
    # a harness's own environment under /tmp (a fresh clone's, a CI job's), shown to it
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    work = tmp_path / "work"
    work.mkdir()
    command = [str(python), "-c", "import sys; print(sys.prefix)"]
    hidden = _sandboxed(command, work)
    # not shown: the venv is not there (its python, a link the command names, leads to the
    # base interpreter, which runs as itself)
    assert hidden.stdout.decode().strip() != str(venv)
    result = _sandboxed(command, work, shown=[venv])
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.decode().strip() == str(venv)


NAMED = """
import os, sys
out, secret, planted = sys.argv[1:4]
print('script', os.path.basename(__file__), os.access(__file__, os.W_OK), flush=True)
print('out', os.access(out, os.W_OK), flush=True)
print('hidden', os.path.exists(secret), flush=True)
print('host file', os.path.exists(os.path.join('/tmp', planted)), flush=True)
"""


def test_what_the_command_line_names_is_shown_read_only_but_never_more(
    tmp_path: Path, planted: Path, sandbox: None
) -> None:
    # its program and its script are shown, read-only; an output directory it names stays
    # writable, a hidden place it names stays hidden, and naming /tmp shows none of the host's
    elsewhere, work, out, other = (tmp_path / n for n in ("elsewhere", "work", "out", "other"))
    for place in (elsewhere, work, out, other):
        place.mkdir()
    (elsewhere / "named.py").write_text(NAMED)
    (other / "secret").write_text("another harness's")
    command = [sys.executable, str(elsewhere / "named.py"), str(out), str(other / "secret"),
               planted.name, "/tmp", "/var/tmp"]  # fmt: skip
    result = _sandboxed(command, work, writable=[work, out], hidden=[other])
    assert _said(result) == [
        "script named.py False",
        "out True",
        "hidden False",
        "host file False",
    ]


def test_an_interpreter_reached_through_links_under_the_host_s_tmp_runs(
    tmp_path: Path, sandbox: None
) -> None:
    # as the live quickstart gives it: --harness-python work/.venv/bin/python, where work/.venv
    # is a link (here to a link) to the venv; the runner shows the prefix the interpreter names
    venv = tmp_path / "real-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "hop").symlink_to("real-venv")
    (work / ".venv").symlink_to(tmp_path / "hop")
    python = work / ".venv" / "bin" / "python"
    command = [str(python), "-c", "import sys; print(sys.prefix)"]
    result = _sandboxed(command, work, shown=[work / ".venv"])
    assert result.returncode == 0, result.stderr.decode()[-800:]
    assert result.stdout.decode().strip() == str(work / ".venv")


def test_a_link_left_in_a_tmp_given_again_is_refused(tmp_path: Path, sandbox: None) -> None:
    # a command given the same tmp twice left a link where the init makes the way back to its
    # working directory: the init neither mounts nor makes anything where it points
    if tmp_path.parts[1] != "tmp":
        pytest.skip("the test's directory is not under /tmp here")
    own = tmp_path / "own-tmp"
    own.mkdir()
    top = tmp_path.parts[2]  # the first folder under /tmp on the way to the working directory
    (own / top).symlink_to("/dev/shm")
    result = _harness(tmp_path, "print('ran')", tmp=own)
    assert result.returncode == 126
    assert b"a link on the way to" in result.stderr, result.stderr
    assert result.stdout == b""
