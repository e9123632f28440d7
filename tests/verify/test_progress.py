"""Progress of long work: hashing moves through a large blob (not only at its end), packing
reports the bytes written of the total, and a bar is drawn on stderr only when stderr is a
terminal, never on stdout. Real bundles, real hashing, a real pseudo-terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from audit._archive import pack
from bundle_schema.layout import MANIFEST
from tests.factories import write_small_bundle
from verify import Member, verify_bundle
from verify._hashing import PROCESS_THRESHOLD, PROGRESS_STEP, HashJob
from verify.render import PROGRESS_MIN_BYTES, ProgressBar, verdict_json

AUDIT = str(Path(sys.executable).with_name("audit"))
BIG = PROGRESS_MIN_BYTES
"""The large blob: as large as the smallest work a bar is drawn for."""


class Recorder:
    """A progress factory that keeps every advance, as the running total after it."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.after: list[int] = []
        self._lock = threading.Lock()

    def factory(self, _count: int, total: int) -> Callable[[int], None]:
        self.total = total
        return self.advance

    def advance(self, count: int) -> None:
        with self._lock:
            assert count > 0
            self.after.append((self.after[-1] if self.after else 0) + count)


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle with one blob of :data:`BIG` bytes beside the small ones."""
    root = tmp_path_factory.mktemp("progress") / "big"
    write_small_bundle(root, [("raw/big.bin", b"\x5a" * BIG)], durable=False)
    return root


def _blob_bytes(bundle: Path) -> int:
    return sum(p.stat().st_size for p in (bundle / "blobs" / "sha256").iterdir())


def test_hashing_one_large_file_advances_every_step_before_it_is_done(tmp_path: Path) -> None:
    path = tmp_path / "large"
    path.write_bytes(b"\x01" * (64 << 20))
    recorder = Recorder()
    with HashJob([Member("large", str(path))], workers=1) as job:
        (result,) = job.results(recorder.advance).values()
    assert result.size == 64 << 20
    assert recorder.after == [PROGRESS_STEP * n for n in range(1, 9)]


def test_verify_progress_moves_while_the_large_blob_is_hashed(big_bundle: Path) -> None:
    recorder = Recorder()
    verdict = verify_bundle(big_bundle, workers=2, progress=recorder.factory).verdict
    assert verdict.integrity.status == "ok"
    assert recorder.total == _blob_bytes(big_bundle)
    assert recorder.after[-1] == recorder.total  # the advances add up to the bytes hashed
    before_the_end = [done for done in recorder.after if done < BIG]
    assert len(before_the_end) >= 8, recorder.after


def test_helper_processes_report_what_they_hash(tmp_path: Path) -> None:
    root = tmp_path / "many"
    blobs = [(f"logs/part-{i:04d}.bin", bytes([i % 256]) * (1 << 20)) for i in range(96)]
    assert len(blobs) >= PROCESS_THRESHOLD
    write_small_bundle(root, blobs, durable=False)
    recorder = Recorder()
    verdict = verify_bundle(root, workers=3, progress=recorder.factory).verdict
    assert verdict.integrity.status == "ok"
    assert recorder.after[-1] == recorder.total == _blob_bytes(root)
    assert len(recorder.after) >= 4, recorder.after


def test_pack_reports_bytes_written_of_the_total(big_bundle: Path, tmp_path: Path) -> None:
    recorder = Recorder()
    result = pack(big_bundle, tmp_path / "big.tar", progress=recorder.factory)
    assert recorder.total == sum(p.stat().st_size for p in big_bundle.rglob("*") if p.is_file())
    assert recorder.after[-1] == recorder.total == result.bytes
    assert len([done for done in recorder.after if done < BIG]) >= 8, recorder.after


def test_the_bar_is_drawn_on_the_console_it_is_given_and_nothing_on_stdout(
    big_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with ProgressBar(terminal) as bar:
        verdict = verify_bundle(big_bundle, progress=bar.factory).verdict
    assert verdict.integrity.status == "ok"
    assert "hashing blobs" in terminal.file.getvalue()  # type: ignore[attr-defined]
    assert capsys.readouterr() == ("", "")
    not_a_terminal = Console(file=io.StringIO(), force_terminal=False)
    with ProgressBar(not_a_terminal) as bar:
        verify_bundle(big_bundle, progress=bar.factory)
    assert not_a_terminal.file.getvalue() == ""  # type: ignore[attr-defined]


def _environment() -> dict[str, str]:
    forced = ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TTY_INTERACTIVE")
    env = {k: v for k, v in os.environ.items() if k not in forced}
    return env | {"TERM": "xterm-256color", "COLUMNS": "100"}


def _run_with_stderr_on_a_terminal(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run ``audit`` with stdout a pipe and stderr a pseudo-terminal: exit code, stdout, what
    the terminal received."""
    main, secondary = pty.openpty()
    received: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        with subprocess.Popen(
            [AUDIT, *argv],
            stdout=subprocess.PIPE,
            stderr=secondary,
            stdin=subprocess.DEVNULL,
            env=_environment(),
        ) as process:
            os.close(secondary)
            out, _ = process.communicate(timeout=120)
            code = process.returncode
    finally:
        reader.join(timeout=30)
        os.close(main)
    return code, out, b"".join(received)


def test_verify_json_draws_its_bar_on_a_terminal_stderr_and_keeps_stdout_json(
    big_bundle: Path,
) -> None:
    code, out, terminal = _run_with_stderr_on_a_terminal(["verify", str(big_bundle), "--json"])
    assert code == 0
    assert b"hashing blobs" in terminal
    assert out == verdict_json(verify_bundle(big_bundle).verdict)
    json.loads(out)


def test_no_bar_when_stderr_is_not_a_terminal(big_bundle: Path, tmp_path: Path) -> None:
    for argv in (["verify", str(big_bundle), "--json"],
                 ["pack", str(big_bundle), "-o", str(tmp_path / "quiet.tar")]):  # fmt: skip
        done = subprocess.run([AUDIT, *argv], capture_output=True, env=_environment(), check=False)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr


def test_pack_draws_its_bar_on_a_terminal_stderr(big_bundle: Path, tmp_path: Path) -> None:
    target = tmp_path / "big.tar"
    code, out, terminal = _run_with_stderr_on_a_terminal(
        ["pack", str(big_bundle), "-o", str(target)]
    )
    assert code == 0
    assert b"packing" in terminal
    manifest = (big_bundle / MANIFEST).read_bytes()
    assert " ".join(out.decode().split()).startswith("packed 4 files (")
    assert manifest in target.read_bytes()
