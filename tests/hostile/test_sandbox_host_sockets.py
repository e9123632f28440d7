"""No host's Unix socket or FIFO is within a harness's reach, wherever it lies (ADR 0047, point 13).

``/run`` is hidden (ADR 0045) and ``/tmp`` is the harness's own (point 11), with what it is
shown there through overlays (point 12); but the rest of the host's files was shown as it is,
read-only, and a read-only mount refuses neither ``connect()`` to a Unix socket nor an
``open()`` of a FIFO for writing. A daemon's socket elsewhere (a database's under
``/var/lib``, an agent's in a home directory) was reached out of the network namespace, and the
ledger counted it inside the sandbox. Now every directory of ``/`` and every mount point of the
host is shown through an overlay of its own: its files read and run as they are, its sockets
and FIFOs are the overlay's nodes. The places a harness is given outside ``/tmp`` keep their
ways: writable ones writable, read-only ones through an overlay of their own.

What the tests plant lies in a directory of the runner's home (outside ``/tmp``), removed after.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
from pathlib import Path

import pytest

from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said


@pytest.fixture
def host(tmp_path: Path) -> object:
    """A directory of the host's outside ``/tmp`` (in the runner's home), gone after."""
    home = Path.home().resolve()
    if home.is_relative_to("/tmp") or not os.access(home, os.W_OK):
        pytest.skip("needs a writable home outside /tmp to plant the host's places in")
    place = home / f".evidence-audit-test-{os.getpid()}-{os.urandom(4).hex()}"
    place.mkdir()
    yield place
    shutil.rmtree(place)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def _listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    server.setblocking(False)
    return server


def _never_reached(server: socket.socket) -> None:
    with server, pytest.raises(BlockingIOError):
        server.accept()


CONNECT = """
for path in sys.argv[1:]:
    client = socket.socket(socket.AF_UNIX)
    print('connect', os.path.basename(path), client.connect_ex(path), flush=True)
"""


def test_a_host_s_socket_outside_tmp_refuses(host: Path, work: Path, sandbox: None) -> None:
    (host / "lib").mkdir()
    server = _listening(host / "lib" / "s")  # a database's, under /var/lib say
    # its path is in the harness's environment: a path on the command line under the home
    # would be shown anyway, as the rest of the host's files are
    result = _harness(work, CONNECT, str(host / "lib" / "s"))
    _never_reached(server)
    assert _said(result) == [f"connect s {errno.ECONNREFUSED}"]
    assert not _outside(result)


def test_a_host_s_fifo_outside_tmp_has_no_reader(host: Path, work: Path, sandbox: None) -> None:
    os.mkfifo(host / "f")
    reader = os.open(host / "f", os.O_RDONLY | os.O_NONBLOCK)  # a host process reads it
    try:
        result = _harness(work, "os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)\n",
                          str(host / "f"))  # fmt: skip
        assert result.returncode != 0
        assert b"No such device or address" in result.stderr  # ENXIO: no reader of its own
        assert os.read(reader, 64) == b""  # no writer ever came
    finally:
        os.close(reader)


GIVEN = """
given = sys.argv[1]
client = socket.socket(socket.AF_UNIX)
print('connect', client.connect_ex(os.path.join(given, 'ro', 's')), flush=True)
open(os.path.join(given, 'written.txt'), 'w').write('kept')
print('read', open(os.path.join(given, 'ro', 'data.txt')).read(), flush=True)
try:
    open(os.path.join(given, 'ro', 'new'), 'w')
except OSError as exc:
    print('write ro', exc.errno, flush=True)
"""


def test_given_places_outside_tmp_keep_their_ways_and_their_sockets_refuse(
    host: Path, work: Path, sandbox: None
) -> None:
    given = host / "scratch"  # a scratch directory outside /tmp, with a read-only place in it
    (given / "ro").mkdir(parents=True)
    (given / "ro" / "data.txt").write_text("as it is")
    server = _listening(given / "ro" / "s")
    result = _harness(work, GIVEN, str(given), writable=[work, given],
                      read_only=[given / "ro"])  # fmt: skip
    _never_reached(server)
    assert _said(result) == [
        f"connect {errno.ECONNREFUSED}",
        "read as it is",
        f"write ro {errno.EROFS}",
    ]
    assert (given / "written.txt").read_text() == "kept"


HOST = """
place = sys.argv[1]
print('read', open(os.path.join(place, 'data.txt')).read(), flush=True)
print('ran', subprocess.run([os.path.join(place, 'tool')], capture_output=True).stdout, flush=True)
for name in ('new', 'data.txt'):
    try:
        open(os.path.join(place, name), 'a')
        print('wrote', name, flush=True)
    except OSError as exc:
        print('write', name, exc.errno, flush=True)
print('run', sorted(os.listdir('/run')), flush=True)
"""


def test_held_the_host_s_files_read_and_run_as_they_are_and_stay_unwritten(
    host: Path, work: Path, sandbox: None
) -> None:
    (host / "data.txt").write_text("as it is")
    tool = host / "tool"
    tool.write_text("#!/bin/sh\necho from the tool\n")
    tool.chmod(0o755)
    result = _harness(work, HOST, str(host))
    assert _said(result) == [
        "read as it is",
        "ran b'from the tool\\n'",
        f"write new {errno.EROFS}",
        f"write data.txt {errno.EROFS}",
        "run []",
    ]
    assert sorted(p.name for p in host.iterdir()) == ["data.txt", "tool"]
