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
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox_kit import as_nobody as _as_nobody
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import listening as _listening
from tests.sandbox_kit import nobody_came as _nobody_came
from tests.sandbox_kit import outside as _outside
from tests.sandbox_kit import said as _said

CONNECT = """
for path in sys.argv[1:]:
    client = socket.socket(socket.AF_UNIX)
    print('connect', os.path.basename(path), client.connect_ex(path), flush=True)
"""


def test_a_host_s_socket_outside_tmp_refuses(home: Path, work: Path, sandbox: None) -> None:
    (home / "lib").mkdir()
    server = _listening(home / "lib" / "s")  # a database's, under /var/lib say
    result = _harness(work, CONNECT, str(home / "lib" / "s"))
    _nobody_came(server)
    assert _said(result) == [f"connect s {errno.ECONNREFUSED}"]
    assert not _outside(result)


def test_a_host_s_fifo_outside_tmp_has_no_reader(home: Path, work: Path, sandbox: None) -> None:
    os.mkfifo(home / "f")
    reader = os.open(home / "f", os.O_RDONLY | os.O_NONBLOCK)  # a host process reads it
    try:
        result = _harness(work, "os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)\n",
                          str(home / "f"))  # fmt: skip
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
    home: Path, work: Path, sandbox: None
) -> None:
    given = home / "scratch"  # a scratch directory outside /tmp, with a read-only place in it
    (given / "ro").mkdir(parents=True)
    (given / "ro" / "data.txt").write_text("as it is")
    server = _listening(given / "ro" / "s")
    result = _harness(work, GIVEN, str(given), writable=[work, given],
                      read_only=[given / "ro"])  # fmt: skip
    _nobody_came(server)
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
    home: Path, work: Path, sandbox: None
) -> None:
    (home / "data.txt").write_text("as it is")
    tool = home / "tool"
    tool.write_text("#!/bin/sh\necho from the tool\n")
    tool.chmod(0o755)
    result = _harness(work, HOST, str(home))
    assert _said(result) == [
        "read as it is",
        "ran b'from the tool\\n'",
        f"write new {errno.EROFS}",
        f"write data.txt {errno.EROFS}",
        "run []",
    ]
    assert sorted(p.name for p in home.iterdir()) == ["data.txt", "tool"]


@pytest.fixture
def shared(root: None) -> Iterator[Path]:
    """A directory of the host's outside ``/tmp`` that uid 65534 reads, gone after."""
    where = next((Path(p) for p in ("/srv", "/opt", "/var/cache") if os.path.isdir(p)), None)
    if where is None:
        pytest.skip("no /srv, /opt or /var/cache to plant the host's places in")
    place = where / f".evidence-audit-test-{os.getpid()}-{os.urandom(4).hex()}"
    place.mkdir(mode=0o755)
    yield place
    shutil.rmtree(place)


def test_a_non_root_runner_s_harness_reaches_no_host_s_socket_outside_tmp(
    tmp_path: Path, shared: Path, sandbox: None
) -> None:
    # the runner as uid 65534: the host's mounts are locked in its sandbox's user namespace,
    # where overlayfs takes no layer holding one (each directory is then covered entry by entry)
    server = _listening(shared / "s")
    (shared / "s").chmod(0o777)  # anyone's to connect to, but for the overlay
    work = Path(tempfile.mkdtemp(prefix="ea-hostile-", dir="/tmp"))  # reachable by uid 65534
    work.chmod(0o777)
    (work / "harness.py").write_text("import os, socket, sys\n" + CONNECT)
    try:
        run = _as_nobody(work, str(shared / "s"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _nobody_came(server)
    assert run["returncode"] == 0, run["stderr"]
    assert run["stdout"].splitlines()[0] == f"connect s {errno.ECONNREFUSED}", run
