"""The one line a command that stops writes on stderr: an operating system's refusal names its
file as the project's own errors do (``bundle_schema.errors.one_line``): a line break in the
name is a space, a byte that is not UTF-8 is written out as ``\\xff``, and the file name is
never cut short. Before, an ``OSError``'s file name was written as it was: a name with a line
break split the line in two, and one that is not UTF-8 showed ``\\udcff`` (or, where stderr
encodes strictly, ended in a ``UnicodeEncodeError`` traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli import main
from bundle_schema.errors import ERROR_LINE
from tests.factories import write_small_bundle

AUDIT = str(Path(sys.executable).with_name("audit"))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    write_small_bundle(tmp_path / "run")
    return tmp_path / "run"


def test_a_line_break_in_a_file_name_stays_on_one_line(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no\nsuch" / "out.tar"
    assert main(["pack", str(bundle), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == f"audit pack: {tmp_path}/no such/out.tar: No such file or directory\n"


def test_a_name_that_is_not_utf8_is_written_out(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = os.fsdecode(os.fsencode(tmp_path) + b"/no\xffsuch/out.tar")
    assert main(["pack", str(bundle), "-o", target]) == 2
    err = capsys.readouterr().err
    assert err == f"audit pack: {tmp_path}/no\\xffsuch/out.tar: No such file or directory\n"


def test_strict_stderr_gets_the_line_not_a_traceback(bundle: Path, tmp_path: Path) -> None:
    target = os.fsencode(tmp_path) + b"/no\xff\nsuch/out.tar"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run(
        [AUDIT, "pack", str(bundle), "-o", target], capture_output=True, env=env, check=False
    )
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr
    assert done.stderr == (
        b"audit pack: " + os.fsencode(tmp_path) + b"/no\\xff such/out.tar: No such file or "
        b"directory\n"
    )


def test_the_longest_path_the_kernel_takes_is_shown_whole(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path
    while len(os.fsencode(deep)) < 3900:  # about PATH_MAX, in names of 200 bytes
        deep /= "\xe9" * 100
    target = deep / "out.tar"
    assert main(["pack", str(bundle), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert str(target) in err
    assert not err.rstrip("\n").endswith("...")


def test_the_line_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A name past any the kernel takes is still cut (ENAMETOOLONG names the whole of it)."""
    target = tmp_path / ("x" * 200) / ("y" * (4 * ERROR_LINE))
    write_small_bundle(tmp_path / "run")
    assert main(["pack", str(tmp_path / "run"), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert len(err) <= len("audit pack: ") + ERROR_LINE + 1
    assert err.endswith("...\n")
