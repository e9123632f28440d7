"""An attack on ADR 0047 point 12 at eabe5ea (2026-12-06): a directory shown read-only under
``/tmp`` is an overlay of it and of an empty read-only tmpfs (``audit/_sandbox_inside.py``
``_placed``, ``_cut_off``), so that a host's Unix socket or FIFO in it is a node of the overlay's.

The adversary is a hostile harness driven for real through ``run_sandboxed``
(``tests.sandbox_kit``), root in a user namespace of its own. Its goals: reach a host's socket,
FIFO or device through a place it is shown under ``/tmp`` (or ``/var/tmp``), uncover what the
overlay or another mount covers, or find an honest program that breaks. Each test asserts the
safe behaviour; a hole is a strict xfail that says what happens and where. What the tests plant
is under ``tmp_path`` (one directory in ``/var/tmp``, removed after; device nodes unlinked
after); a host mount a test needs is made in a mount namespace of its own
(``unshare --mount --propagation private``), gone with it, never in the host's.

Holes: 1 and 4 closed the same day, each test failing before its fix (the overlay is always
``nodev`` and ``nosuid``, and ``xino=on``); 2 and 3 were strict xfails until point 13 (each
mount inside a shown directory is shown through an overlay of its own, over the directory's),
and failed before it.

1. A host's device node inside a shown directory opens: ``_cut_off`` gives the overlay only the
   ``nosuid``, ``nodev`` and ``noexec`` of the mount the directory is on, and a ``/tmp`` on the
   root file system (here ext4 ``rw,relatime``) has no ``nodev``. The overlay's node of a
   character device is the device (a device is its number, not its inode), so a ``kmsg``
   (1, 11) in a shown directory opens for writing: the host's kernel log, which point 10 takes
   out of ``/dev``. A device NAMED on the command line is not shown (``_placed`` skips it);
   one in a shown directory is. The command is the host's uid 0 under a root runner. Fix: the
   overlay (and the empty tmpfs, and ``_bound_read_only`` of a file under ``/tmp``) always
   ``nodev`` (and ``nosuid``): ``flags = _RDONLY | ST_NODEV | ST_NOSUID | (f_flag & ST_NOEXEC)``.
2. What a host's READ-ONLY mount inside a shown directory covers is shown: an overlay layer does
   not cross mounts, so the overlay shows the directory under the mount, not the mount; the
   read-only pass of ``_view`` skips the host's mount (it is ``ro`` already). A host that masks
   a directory with a mount (systemd's ``InaccessiblePaths=``, a ``ro`` tmpfs or bind over a
   secret, a parent sandbox's cover) has it read by the harness (its uid 0 passes a
   ``mode=000``). Before point 12 the recursive read-only bind showed the mount (the cover).
   Fix: ``_cut_off`` lists the mounts strictly inside the source in ``/proc/self/mountinfo``
   and binds each again over the overlay at its path (read-only; one under ``/tmp`` itself cut
   off), before anything else is mounted; or refuses (126) such a place.
3. (an honest harness) A host's WRITABLE mount inside a shown directory makes the harness exit
   126 ("[Errno 22] Invalid argument: <the mount's path>"): the read-only pass of ``_view``
   remounts every writable mount by its PATH (``_read_only``), which now leads into the
   overlay, where nothing is mounted. Point 12 says such a mount "is not shown"; the harness
   does not start. Fix: as 2 (the mount bound again over the overlay is then made read-only by
   that pass).
4. (an honest harness) In a shown directory a file's ``st_dev`` is not its directory's: the
   overlay's layers are on two file systems (the host's and the empty tmpfs) and ``xino`` is
   off, so directories report the overlay's device and other files a pseudo device of their
   layer (and a directory's ``st_ino`` is the overlay's own, not persistent). ``du -sx`` of a
   shown directory counts none of its files (only its directories' blocks), and any
   one-file-system walk (``-xdev``, ``--one-file-system``) is told each file is elsewhere.
   Fix: mount the overlay with ``xino=on`` (one device, inode numbers with the layer in the high
   bits), checked here to give files and directories one ``st_dev``.

Held: a host's socket in a shown directory refuses (``ECONNREFUSED``) and its FIFO has no reader
(``ENXIO``) however the harness reaches them: a bind of the socket or of the directory it makes,
``open_tree`` of the directory moved elsewhere, an overlay of its own over the shown one
(``userxattr``), an ``O_PATH`` descriptor through ``/proc/self/fd``; ``link``/``linkat`` of the
node into its own directory is ``EXDEV``; the shown mount does not unmount or move
(``EINVAL``: locked); ``open_by_handle_at`` of the host's real handles (the shown directory's,
the socket's) refuses (``ESTALE``/``EPERM``: Linux 6.12's relaxed check allows only a directory
under a mount of its own with nothing locked in it); the init's descriptors are not its to
open. A host's socket made after the sandbox started, and a hard link of a host's socket, refuse
too; so do a socket in a shown directory under ``/var/tmp`` and one whose directory's name holds
``:``, ``,``, ``\\`` and ``=`` (the overlay's option syntax: the init passes ``/proc/self/fd/N``),
and an abstract socket of the host's (the network namespace's own). A device named alone is not
there and the harness makes none. A place given both writable and read-only is read-only and cut
off; a read-only place in a writable place in a read-only place is cut off and the writable one
stays writable; a hidden place in a shown directory stays hidden against a non-recursive bind or
``open_tree`` (``EINVAL``: locked children) and an unmount in a recursive clone. An honest
harness loads a shared library, imports, ``mmap``s, sees a hard link as the same file, watches
with inotify, archives with ``tar`` and runs ``git`` in a shown repository and with a read-only
``.git``. An overlay the kernel refuses (a directory on an overlay two deep: "maximum fs
stacking depth exceeded") makes the harness exit 126 with the reason, never run with the host's
nodes.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.sandbox_kit import AFTER_THE_HOST
from tests.sandbox_kit import harness as _harness
from tests.sandbox_kit import listening as _listening
from tests.sandbox_kit import nobody_came as _nobody_came
from tests.sandbox_kit import said as _said

ROOT = Path(__file__).resolve().parents[2]
_LIBC = ctypes.CDLL(None, use_errno=True)


@pytest.fixture(autouse=True)
def _under_tmp(tmp_path: Path) -> None:
    if not tmp_path.resolve().is_relative_to("/tmp"):
        pytest.skip("the planted places must lie under /tmp, where point 12 applies")


class _Handle(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint), ("type", ctypes.c_int), ("bytes", ctypes.c_ubyte * 128)]


def _handle(path: Path) -> str:
    """The host's file handle of ``path`` (``name_to_handle_at``), as ``type:hex``."""
    handle, mount = _Handle(), ctypes.c_int()
    handle.size = 128
    named = _LIBC.name_to_handle_at(-100, os.fsencode(path), ctypes.byref(handle),
                                    ctypes.byref(mount), 0)  # fmt: skip
    if named:
        pytest.skip(f"no file handles here: {os.strerror(ctypes.get_errno())}")
    return f"{handle.type}:{bytes(handle.bytes[: handle.size]).hex()}"


def _in_a_mount_namespace_of_its_own(
    tmp_path: Path, mounts: list[list[str]], body: str, *args: str, shown: list[Path]
) -> tuple[int, str, str]:
    """``body`` run by :func:`tests.sandbox_kit.harness` (its directory ``tmp_path/work``) from
    a process in a mount namespace of its own (private: nothing reaches the host's), after
    ``mount``ing each of ``mounts`` there; its exit status, stdout and stderr."""
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import json, subprocess, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from pathlib import Path\n"
        "from tests.sandbox_kit import harness\n"
        f"for command in {mounts!r}:\n"
        "    made = subprocess.run(['mount', '--no-mtab', *command], capture_output=True)\n"
        "    if made.returncode:\n"
        "        print(json.dumps(['setup', made.stderr.decode()])); raise SystemExit\n"
        f"result = harness(Path({str(tmp_path / 'work')!r}), {body!r}, *{list(args)!r},\n"
        f"                 shown=[Path(p) for p in {list(map(str, shown))!r}])\n"
        "print(json.dumps([result.returncode, result.stdout.decode(),\n"
        "                  result.stderr.decode()[-600:]]))\n"
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", sys.executable, str(driver)],
        capture_output=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    with open("/proc/self/mountinfo") as table:  # nothing of it is in the host's
        assert str(tmp_path) not in table.read()
    assert done.returncode == 0, done.stderr.decode()[-800:]
    answer = json.loads(done.stdout.decode().splitlines()[-1])
    if answer[0] == "setup":
        pytest.skip(f"the host's mount cannot be made here: {answer[1]}")
    return answer[0], answer[1], answer[2]


# --- holes -------------------------------------------------------------------------------------

DEVICE = """
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # opened, closed: nothing written
        print(os.path.basename(path), 'opened', flush=True)
    except OSError as exc:
        print(os.path.basename(path), errno.errorcode[exc.errno], flush=True)
"""


def test_a_host_s_device_in_a_shown_directory_does_not_open(
    tmp_path: Path, work: Path, root: None, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    shown.mkdir()
    kmsg = shown / "kmsg"
    os.mknod(kmsg, 0o600 | stat.S_IFCHR, os.makedev(1, 11))  # the host's kernel log
    try:
        result = _harness(work, "import errno\n" + DEVICE, str(kmsg), shown=[shown])
    finally:
        kmsg.unlink()
    assert _said(result)[0] in {"kmsg EACCES", "kmsg EPERM", "kmsg ENOENT"}, result.stdout


COVERED = """
covered = os.path.join(sys.argv[1], 'covered')
print('listed', sorted(os.listdir(covered)), flush=True)
if os.path.exists(os.path.join(covered, 'under')):
    print('read', open(os.path.join(covered, 'under')).read(), flush=True)
"""


def _covered(tmp_path: Path, options: str) -> tuple[int, str, str]:
    """A shown directory holding ``covered``, a directory with a file the host then covers
    with a tmpfs mounted with ``options`` (in a mount namespace of the test's own)."""
    shown = tmp_path / "shown"
    (shown / "covered").mkdir(parents=True)
    (shown / "covered" / "under").write_text("what the host covered")
    (tmp_path / "work").mkdir()
    cover = ["-t", "tmpfs", "-o", f"{options},mode=000,size=4k", "cover", str(shown / "covered")]
    return _in_a_mount_namespace_of_its_own(tmp_path, [cover], COVERED, str(shown), shown=[shown])


def test_what_a_host_s_read_only_mount_covers_in_a_shown_directory_stays_covered(
    tmp_path: Path, root: None, sandbox: None
) -> None:
    code, out, err = _covered(tmp_path, "ro")
    assert "under" not in out and "what the host covered" not in out, (code, out, err)


def test_a_host_s_writable_mount_in_a_shown_directory_does_not_stop_the_harness(
    tmp_path: Path, root: None, sandbox: None
) -> None:
    code, out, err = _covered(tmp_path, "rw")
    assert (code, out) == (0, "listed []\n"), (code, out, err)


DEVICES = """
shown = sys.argv[1]
top, inner = os.stat(shown), os.stat(os.path.join(shown, 'inner'))
data = os.stat(os.path.join(shown, 'inner', 'data'))
print('one device', top.st_dev == inner.st_dev == data.st_dev, flush=True)
sizes = [subprocess.run(['du', '-s', *x, shown], capture_output=True, text=True).stdout.split()[0]
         for x in ([], ['-x'])]
print('du -x counts it all', sizes[0] == sizes[1], flush=True)
"""


def test_a_shown_directory_is_one_device(tmp_path: Path, work: Path, sandbox: None) -> None:
    if shutil.which("du") is None:
        pytest.skip("no du here")
    shown = tmp_path / "shown"
    (shown / "inner").mkdir(parents=True)
    (shown / "inner" / "data").write_bytes(os.urandom(256 * 1024))
    result = _harness(work, DEVICES, str(shown), shown=[shown])
    assert _said(result) == ["one device True", "du -x counts it all True"]


# --- held --------------------------------------------------------------------------------------

REACH = r"""
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err(code):
    return 'ok' if code >= 0 else errno.errorcode[ctypes.get_errno()]
def connect(what, path):
    code = socket.socket(socket.AF_UNIX).connect_ex(path)
    print(what, errno.errorcode.get(code, 'connected'), flush=True)
shown, sock, fifo = sys.argv[1], os.path.join(sys.argv[1], 's'), os.path.join(sys.argv[1], 'f')
for place in ('/tmp/bound', '/tmp/tree', '/tmp/own', '/tmp/up', '/tmp/wk'):
    os.makedirs(place)
open('/tmp/file', 'w').close()
MS_BIND, MS_MOVE, MNT_DETACH = 4096, 8192, 2
print('umount shown', err(libc.umount2(shown.encode(), MNT_DETACH)))
print('move shown', err(libc.mount(shown.encode(), b'/tmp/bound', None, MS_MOVE, None)))
print('bind shown', err(libc.mount(shown.encode(), b'/tmp/bound', None, MS_BIND, None)))
connect('through its bind', '/tmp/bound/s')
print('bind socket', err(libc.mount(sock.encode(), b'/tmp/file', None, MS_BIND, None)))
connect('through the socket bound', '/tmp/file')
tree = libc.syscall(428, -100, shown.encode(), 1 | 0x8000)  # OPEN_TREE_CLONE | AT_RECURSIVE
print('open_tree', err(tree), err(libc.syscall(429, tree, b'', -100, b'/tmp/tree', 4)))
connect('through open_tree', '/tmp/tree/s')
print('own overlay', err(libc.mount(b'o', b'/tmp/own', b'overlay', 0, (
    'lowerdir=%s,upperdir=/tmp/up,workdir=/tmp/wk,userxattr' % shown).encode())))
connect('through its overlay', '/tmp/own/s')
node = os.open(sock, os.O_PATH)
connect('through /proc/self/fd', f'/proc/self/fd/{node}')
for what, call in (('link', lambda: os.link(f'/proc/self/fd/{node}', 'linked')),
                   ('linkat', lambda: os.link(sock, 'linked2'))):
    try:
        call()
        print(what, 'ok', flush=True)
    except OSError as exc:
        print(what, errno.errorcode[exc.errno], flush=True)
print('linkat empty path', err(libc.linkat(node, b'', -100, b'linked3', 0x1000)))
try:
    os.close(os.open(f'/proc/self/fd/{os.open(fifo, os.O_PATH)}', os.O_WRONLY | os.O_NONBLOCK))
    print('fifo through /proc/self/fd opened', flush=True)
except OSError as exc:
    print('fifo through /proc/self/fd', errno.errorcode[exc.errno], flush=True)
class Handle(ctypes.Structure):
    _fields_ = [('size', ctypes.c_uint), ('type', ctypes.c_int), ('bytes', ctypes.c_ubyte * 128)]
for name, given in zip(('dir', 'socket'), sys.argv[2:4]):
    kind, raw = given.split(':')
    raw = bytes.fromhex(raw)
    handle = Handle(len(raw), int(kind))
    ctypes.memmove(handle.bytes, raw, len(raw))
    for mount in ('.', '/', shown):
        at = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
        for flags in (os.O_RDONLY | os.O_DIRECTORY, os.O_PATH):
            opened = libc.open_by_handle_at(at, ctypes.byref(handle), flags)
            print('handle', name, 'opened' if opened >= 0 else 'refused', flush=True)
for what in ('/proc/1/fd/0', '/proc/1/root'):
    try:
        os.stat(what)
        print(what, 'ok', flush=True)
    except OSError as exc:
        print(what, errno.errorcode[exc.errno], flush=True)
"""


def test_held_a_shown_socket_and_fifo_stay_the_overlay_s_however_reached(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    shown.mkdir()
    server = _listening(shown / "s")
    os.mkfifo(shown / "f")
    reader = os.open(shown / "f", os.O_RDONLY | os.O_NONBLOCK)  # a host process reads it
    try:
        handles = (_handle(shown), _handle(shown / "s"))
        result = _harness(work, "import errno\n" + REACH, str(shown), *handles, shown=[shown])
        assert os.read(reader, 64) == b""
    finally:
        os.close(reader)
    _nobody_came(server)
    lines = _said(result)
    assert lines[:15] == [
        "umount shown EINVAL",  # locked (CONFINE's user namespace)
        "move shown EINVAL",
        "bind shown ok",  # a bind of the overlay: its nodes still
        "through its bind ECONNREFUSED",
        "bind socket ok",
        "through the socket bound ECONNREFUSED",
        "open_tree ok ok",
        "through open_tree ECONNREFUSED",
        "own overlay ok",  # over the shown overlay: its nodes are not the host's either
        "through its overlay ECONNREFUSED",
        "through /proc/self/fd ECONNREFUSED",
        "link EXDEV",
        "linkat EXDEV",
        "linkat empty path EXDEV",
        "fifo through /proc/self/fd ENXIO",
    ], lines
    assert lines[15:27] == ["handle dir refused"] * 6 + ["handle socket refused"] * 6, lines
    assert lines[27:] == ["/proc/1/fd/0 EACCES", "/proc/1/root EACCES"], lines
    assert not list(work.glob("linked*"))


LATE = (
    AFTER_THE_HOST
    + """
late, work = sys.argv[1], sys.argv[2]
after_the_host(work)
for path in (os.path.join(late, 's'), os.path.join(late, 'hard')):
    found = os.path.basename(path) in os.listdir(late)
    code = socket.socket(socket.AF_UNIX).connect_ex(path)
    print(os.path.basename(path), found, errno.errorcode.get(code, 'connected'), flush=True)
"""
)


def test_held_a_host_s_socket_made_after_the_start_or_hard_linked_refuses(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    late, elsewhere = tmp_path / "late", tmp_path / "elsewhere"
    late.mkdir()
    elsewhere.mkdir()
    servers: list[socket.socket] = []

    def host() -> None:  # once the harness runs: a socket there, and a link to one elsewhere
        deadline = time.monotonic() + 20
        while not (work / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        servers.append(_listening(late / "s"))
        servers.append(_listening(elsewhere / "s"))
        os.link(elsewhere / "s", late / "hard")
        (work / "made").touch()

    thread = threading.Thread(target=host)
    thread.start()
    result = _harness(work, "import errno\n" + LATE, str(late), str(work), shown=[late])
    thread.join()
    _nobody_came(*servers)
    assert _said(result) == ["s True ECONNREFUSED", "hard True ECONNREFUSED"]


CONNECT = """
for path in sys.argv[1:]:
    path = '\\0' + path[1:] if path.startswith('@') else path  # an abstract name
    code = socket.socket(socket.AF_UNIX).connect_ex(path)
    name = repr(os.path.basename(os.path.dirname(path)))
    print(name, errno.errorcode.get(code, 'connected'), flush=True)
"""


def test_held_var_tmp_odd_names_and_abstract_sockets(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    odd = tmp_path / "a:b,c\\d=e lowerdir=x"
    odd.mkdir()
    places, servers = [odd], [_listening(odd / "s")]
    var = None
    if os.path.isdir("/var/tmp") and not os.path.islink("/var/tmp"):
        var = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="audit-overlay-"))
        places.append(var)
        servers.append(_listening(var / "s"))
    abstract = f"\0audit-overlay-{os.getpid()}-{os.urandom(4).hex()}"
    servers.append(_listening(abstract))
    try:
        result = _harness(work, "import errno\n" + CONNECT, *(str(p / "s") for p in places),
                          "@" + abstract[1:], shown=places)  # fmt: skip
    finally:
        if var is not None:
            shutil.rmtree(var)
    _nobody_came(*servers)
    assert _said(result) == [
        f"{odd.name!r} ECONNREFUSED",
        *([f"{var.name!r} ECONNREFUSED"] if var is not None else []),
        "'' ECONNREFUSED",  # the abstract one: the host's network namespace's, not the sandbox's
    ]


MKNOD = """
try:
    os.mknod('/tmp/made', 0o600 | 0o020000, os.makedev(1, 11))
    print('mknod ok', flush=True)
except OSError as exc:
    print('mknod', errno.errorcode[exc.errno], flush=True)
"""


def test_held_a_device_named_alone_is_not_shown_and_the_harness_makes_none(
    tmp_path: Path, work: Path, root: None, sandbox: None
) -> None:
    alone = tmp_path / "kmsg"
    os.mknod(alone, 0o600 | stat.S_IFCHR, os.makedev(1, 11))
    body = "import errno\n" + DEVICE + MKNOD
    try:
        result = _harness(work, body, str(alone))
    finally:
        alone.unlink()
    assert _said(result) == ["kmsg ENOENT", "mknod EPERM"]


NESTED = """
for path in sys.argv[1:4]:
    code = socket.socket(socket.AF_UNIX).connect_ex(path)
    print(os.path.relpath(path, sys.argv[4]), 'writable', os.access(os.path.dirname(path), os.W_OK),
          errno.errorcode.get(code, 'connected'), flush=True)
open(os.path.join(sys.argv[4], 'a', 'b', 'out'), 'w').write('kept')
"""


def test_held_nested_places_and_a_place_given_twice_are_cut_off(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    # a read-only a holding a writable a/b holding a read-only a/b/c; and both, given both ways
    outer, middle, inner, both = (tmp_path / "a", tmp_path / "a" / "b",
                                  tmp_path / "a" / "b" / "c", tmp_path / "both")  # fmt: skip
    inner.mkdir(parents=True)
    both.mkdir()
    servers = [_listening(inner / "s"), _listening(both / "s"), _listening(outer / "s")]
    result = _harness(work, "import errno\n" + NESTED, str(inner / "s"), str(both / "s"),
                      str(outer / "s"), str(tmp_path), shown=[outer, both],
                      writable=[work, middle, both], read_only=[inner, both])  # fmt: skip
    _nobody_came(*servers)
    assert _said(result) == [
        "a/b/c/s writable False ECONNREFUSED",
        "both/s writable False ECONNREFUSED",
        "a/s writable False ECONNREFUSED",
    ]
    assert (middle / "out").read_text() == "kept"


HIDDEN = r"""
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err(code):
    return 'ok' if code >= 0 else errno.errorcode[ctypes.get_errno()]
shown = sys.argv[1]
hidden = os.path.join(shown, 'hidden')
for place in ('/tmp/bound', '/tmp/tree'):
    os.makedirs(place)
print('bind', err(libc.mount(shown.encode(), b'/tmp/bound', None, 4096, None)))
print('open_tree', err(libc.syscall(428, -100, shown.encode(), 1)))
print('umount hidden', err(libc.umount2(hidden.encode(), 2)))
tree = libc.syscall(428, -100, shown.encode(), 1 | 0x8000)
print('open_tree -r', err(tree), err(libc.syscall(429, tree, b'', -100, b'/tmp/tree', 4)))
print('umount its hidden', err(libc.umount2(b'/tmp/tree/hidden', 2)))
print('seen', sorted(os.listdir(hidden)), sorted(os.listdir('/tmp/tree/hidden')), flush=True)
"""


def test_held_a_hidden_place_in_a_shown_directory_stays_hidden(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    shown = tmp_path / "shown"
    (shown / "hidden").mkdir(parents=True)
    (shown / "hidden" / "secret").write_text("another harness's")
    server = _listening(shown / "hidden" / "s")
    result = _harness(work, "import errno\n" + HIDDEN, str(shown), shown=[shown],
                      hidden=[shown / "hidden"])  # fmt: skip
    _nobody_came(server)
    assert _said(result) == [
        "bind EINVAL",  # it would show what the locked cover covers
        "open_tree EINVAL",
        "umount hidden EINVAL",
        "open_tree -r ok ok",
        "umount its hidden EINVAL",
        "seen [] []",
    ]


HONEST = r"""
import importlib, mmap
shown, repo, checkout = sys.argv[1:4]
if os.path.exists(os.path.join(shown, 'libanswer.so')):
    print('library', ctypes.CDLL(os.path.join(shown, 'libanswer.so')).answer(), flush=True)
sys.path.insert(0, shown)
print('import', importlib.import_module('shownpkg').VALUE, flush=True)
with open(os.path.join(shown, 'data.bin'), 'rb') as f:
    print('mmap', mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:4], flush=True)
data, hard = os.path.join(shown, 'data.bin'), os.path.join(shown, 'hard.bin')
print('same file', os.path.samefile(data, hard), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
watch = libc.inotify_add_watch(libc.inotify_init1(0), shown.encode(), 0x100)  # IN_CREATE
print('inotify', watch >= 0, flush=True)
archived = subprocess.run(['tar', '-cf', '/tmp/shown.tar', '-C', shown, '.']).returncode
print('tar', archived, flush=True)
for where in (repo, checkout):
    for command in (['log', '--format=%s'], ['status', '--porcelain']):
        done = subprocess.run(['git', '-C', where, *command], capture_output=True, text=True)
        print(f'git {command[0]} {done.returncode} {done.stdout.strip()}'.strip(), flush=True)
"""


def _repository(path: Path) -> None:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)


def test_held_an_honest_harness_reads_a_shown_directory(
    tmp_path: Path, work: Path, sandbox: None
) -> None:
    if shutil.which("git") is None or shutil.which("tar") is None:
        pytest.skip("no git or tar here")
    shown = tmp_path / "shown"
    (shown / "shownpkg").mkdir(parents=True)
    (shown / "shownpkg" / "__init__.py").write_text("VALUE = 'imported'\n")
    (shown / "data.bin").write_bytes(b"data" * 1024)
    os.link(shown / "data.bin", shown / "hard.bin")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is not None:
        (tmp_path / "answer.c").write_text("int answer(void) { return 42; }\n")
        subprocess.run([compiler, "-shared", "-fPIC", "-o", str(shown / "libanswer.so"),
                        str(tmp_path / "answer.c")], check=True)  # fmt: skip
    repo, checkout = shown / "repo", tmp_path / "checkout"
    _repository(repo)
    _repository(checkout)
    result = _harness(work, HONEST, str(shown), str(repo), str(checkout), shown=[shown],
                      writable=[work, checkout], read_only=[checkout / ".git"])  # fmt: skip
    assert _said(result) == [
        *(["library 42"] if compiler is not None else []),
        "import imported",
        "mmap b'data'",
        "same file True",
        "inotify True",
        "tar 0",
        *(["git log 0 first", "git status 0"] * 2),
    ]


def test_held_an_overlay_the_kernel_refuses_fails_the_harness_closed(
    tmp_path: Path, root: None, sandbox: None
) -> None:
    # a directory on an overlay of an overlay: a third is past the kernel's stacking depth
    for name in ("l1", "l2", "o1", "o2", "work"):
        (tmp_path / name).mkdir()
    (tmp_path / "l1" / "shown").mkdir()
    server = _listening(tmp_path / "l1" / "shown" / "s")
    mounts = [
        ["-t", "overlay", "o1", "-o", f"lowerdir={tmp_path / 'l1'}:{tmp_path / 'l2'}",
         str(tmp_path / "o1")],
        ["-t", "overlay", "o2", "-o", f"lowerdir={tmp_path / 'o1'}:{tmp_path / 'l2'}",
         str(tmp_path / "o2")],
    ]  # fmt: skip
    shown = tmp_path / "o2" / "shown"
    body = "print('ran', socket.socket(socket.AF_UNIX).connect_ex(sys.argv[1]), flush=True)"
    code, out, err = _in_a_mount_namespace_of_its_own(
        tmp_path, mounts, body, str(shown / "s"), shown=[shown]
    )
    _nobody_came(server)
    assert (code, out) == (126, ""), (code, out, err)
    assert "cannot make the command's view of the files" in err, err
