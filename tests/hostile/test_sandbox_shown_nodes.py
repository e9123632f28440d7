"""What a harness is shown under ``/tmp`` holds no way to a host's process (ADR 0047, point 12).

A read-only bind refuses writes to files, directories and links, but not ``connect()`` to a Unix
socket nor an ``open()`` of a FIFO for writing: a host's daemon's socket (ssh-agent's, a
database's, X11's) or a FIFO a host process reads, inside a place the harness is shown, was
reached out of its network namespace, and the ledger counted it inside the sandbox. Now a
directory shown under ``/tmp`` is an overlay of it: its files read as they are, but its sockets
and FIFOs are nodes of the overlay's, and a socket, FIFO or device named on its own is not
shown. Each test drives a real sandbox through ``run_sandboxed`` (``tests.sandbox_kit``); what
the tests plant is under ``tmp_path``.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import listening as _listening
from tests.sandbox_kit import nobody_came as _nobody_came
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said


@pytest.fixture(autouse=True)
def _under_tmp(tmp_path: Path) -> None:
    if not tmp_path.resolve().is_relative_to("/tmp"):
        pytest.skip("the planted places must lie under /tmp, where point 12 applies")


CONNECT = """
for path in sys.argv[1:]:
    client = socket.socket(socket.AF_UNIX)
    print('connect', os.path.basename(path), client.connect_ex(path), flush=True)
"""


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[socket.socket]:
    """A host's Unix socket, listening, at ``tmp_path/shown/s``; no harness reaches it."""
    (tmp_path / "shown").mkdir()
    server = _listening(tmp_path / "shown" / "s")
    yield server
    _nobody_came(server)


def test_a_host_s_socket_in_a_shown_directory_refuses(
    tmp_path: Path, work: Path, listening: socket.socket, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    result = _harness(work, CONNECT, str(shown / "s"), shown=[shown])
    assert _said(result) == [f"connect s {errno.ECONNREFUSED}"]
    assert not _outside(result)


def test_a_host_s_socket_named_on_its_own_is_not_shown(
    tmp_path: Path, work: Path, listening: socket.socket, sandbox: None
) -> None:
    # the command line names the socket itself, not its directory: nothing is bound at its path
    result = _harness(work, CONNECT, str(tmp_path / "shown" / "s"))
    assert _said(result) == [f"connect s {errno.ENOENT}"]


def test_a_host_s_socket_through_a_link_in_a_shown_directory_refuses(
    tmp_path: Path, work: Path, listening: socket.socket, sandbox: None
) -> None:
    # a link the harness is shown that leads to the socket (in another shown directory)
    other = tmp_path / "other"
    other.mkdir()
    (other / "l").symlink_to(tmp_path / "shown" / "s")
    result = _harness(work, CONNECT, str(other / "l"), shown=[other, tmp_path / "shown"])
    assert _said(result) == [f"connect l {errno.ECONNREFUSED}"]


FIFO = """
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b'from the harness')
        print('fifo', os.path.basename(path), 'written', flush=True)
    except OSError as exc:
        print('fifo', os.path.basename(path), exc.errno, flush=True)
"""


def test_a_host_s_fifo_in_a_shown_directory_has_no_reader(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    shown.mkdir()
    os.mkfifo(shown / "f")
    os.mkfifo(tmp_path / "alone")
    reader = os.open(shown / "f", os.O_RDONLY | os.O_NONBLOCK)  # a host process reads it
    alone = os.open(tmp_path / "alone", os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = _harness(work, FIFO, str(shown / "f"), str(tmp_path / "alone"), shown=[shown])
        assert _said(result) == [f"fifo f {errno.ENXIO}", f"fifo alone {errno.ENOENT}"]
        for fd in (reader, alone):
            assert os.read(fd, 64) == b""  # no writer ever came: the host's reader got nothing
    finally:
        os.close(reader)
        os.close(alone)


SHOWN = """
shown = sys.argv[1]
print('read', open(os.path.join(shown, 'data.txt')).read(), flush=True)
print('link', os.readlink(os.path.join(shown, 'link')), flush=True)
print('mode', oct(os.stat(os.path.join(shown, 'tool')).st_mode & 0o7777), flush=True)
print('ran', subprocess.run([os.path.join(shown, 'tool')], capture_output=True).stdout, flush=True)
for name in ('new', 'data.txt'):
    try:
        open(os.path.join(shown, name), 'a')
        print('wrote', name, flush=True)
    except OSError as exc:
        print('write', name, exc.errno, flush=True)
print('inner', os.access(os.path.join(shown, 'inner'), os.W_OK), flush=True)
open(os.path.join(shown, 'inner', 'out.txt'), 'w').write('kept')
"""


def test_held_a_shown_directory_reads_and_runs_as_it_is_and_a_given_one_in_it_stays_writable(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    (shown / "inner").mkdir(parents=True)
    (shown / "data.txt").write_text("as it is")
    (shown / "link").symlink_to("data.txt")
    tool = shown / "tool"
    tool.write_text("#!/bin/sh\necho from the tool\n")
    tool.chmod(0o750)
    result = _harness(work, SHOWN, str(shown), shown=[shown], writable=[work, shown / "inner"])
    assert _said(result) == [
        "read as it is",
        "link data.txt",
        "mode 0o750",
        "ran b'from the tool\\n'",
        f"write new {errno.EROFS}",
        f"write data.txt {errno.EROFS}",
        "inner True",
    ]
    assert (shown / "inner" / "out.txt").read_text() == "kept"
    assert sorted(p.name for p in shown.iterdir()) == ["data.txt", "inner", "link", "tool"]
    assert stat.S_IMODE(tool.stat().st_mode) == 0o750
