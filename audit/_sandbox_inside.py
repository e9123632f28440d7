"""The part of the sandbox that runs inside the fresh network namespace.

``python -I audit/_sandbox_inside.py PORT FD TRACE VIEW -- COMMAND...``: hide the host's
``/run`` (and a ``/var/run`` that is a directory of its own) under an empty tmpfs of the
namespace's own mount namespace, where the host's daemons keep their sockets (Docker's,
D-Bus's, systemd's, the name service cache's: a filesystem Unix socket is reachable across
network namespaces); bring loopback up, listen on ``127.0.0.1:PORT`` (the model's address for
the harness), hand that listening socket to the supervisor over the Unix socket ``FD`` it
passed down (the observer then accepts the harness's connections itself, so no process of the
namespace relays them), then run ``COMMAND`` under strace (:data:`STRACE_OPTIONS`), writing
every attempt of every process to reach an address into the pipe ``TRACE`` (a descriptor the
supervisor passed down and reads; it adds the header line), and exit with the command's
status.

The command runs out of the trace's reach (ADR 0047): in a PID namespace of its own
(:data:`ISOLATE`: strace is not among the processes it can see or open the files of), whose
first process is this script again (``--init VIEW -- COMMAND``, :func:`init`): it makes the
command's view of the files (``VIEW``: every other harness's directories under an empty tmpfs,
every file read-only but the command's own places, the host's directories through overlays, so
that no host's socket or FIFO is within reach, a ``/tmp`` and a ``/dev`` of its own) and
starts the command in a session of its
own (no signal to its process group reaches strace) and a user namespace of its own
(:data:`CONFINE`), which locks all of it.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

STRACE_OPTIONS = ("--seccomp-bpf", "-f", "-qq", "-Y", "-ttt", "-s", "0",
                  "-e", "trace=connect,sendto,sendmsg,sendmmsg,ptrace,seccomp,io_uring_setup,"
                        "add_key,keyctl,request_key",
                  "-e", "signal=none",
                  "-e", "inject=ptrace:error=EPERM", "-e", "inject=seccomp:error=ENOSYS",
                  "-e", "inject=io_uring_setup,sendmmsg:error=ENOSYS",
                  "-e", "inject=add_key,keyctl,request_key:error=ENOSYS")  # fmt: skip
"""How the command is traced: every process it starts (``-f``), each stopped for strace at
``connect()``, ``sendto()`` and ``sendmsg()`` only (``--seccomp-bpf``, strace 5.3 and later:
its other system calls run at full speed; a send that names an address reaches it with no
``connect()``: a datagram, TCP Fast Open), the data sent not shown (``-s 0``), no signals
(ADR 0034); ``sendmmsg`` absent (strace shows a batch of messages' addresses only in full,
with every part of every message), as on an old kernel (glibc's resolver and libuv fall
back, or fail as a name lookup in the sandbox does anyway); ``ptrace`` refused (a process
the harness traced itself, made with ``CLONE_UNTRACED``, would stop for it, not for strace)
and ``seccomp`` absent as on
an old kernel (a filter of the harness's own with a user-notification listener would let a
``connect()`` go on unseen; ``prctl(PR_SET_SECCOMP)`` filters still work), and so is
``io_uring_setup`` (an ``IORING_OP_CONNECT`` makes no ``connect()`` call; libuv and the like
fall back), and so are the kernel's keyrings (``add_key``, ``keyctl``, ``request_key``: a
session keyring has no namespace and passes to every child, so it was a channel between the
runner's harnesses and the runner's own keys were readable; Docker's default profile refuses
them too), ADR 0047; run with ``-A -o`` the trace pipe. Their lines are in the trace too
(``(INJECTED)``), and the parser reads the lines of ``connect()``, ``sendto()`` and
``sendmsg()`` only. The supervisor's ``check_sandbox`` tries them first."""
EMPTY_TMPFS = ("mount", "--no-mtab", "-t", "tmpfs", "-o", "mode=0755,size=1m,nosuid,nodev,noexec",
               "sandbox")  # fmt: skip
"""How a directory is hidden: an empty tmpfs mounted over it (the directory follows), in the
sandbox's own mount namespace (the host's stays as it is); ``--no-mtab``: nothing written in
the hidden ``/run`` (util-linux keeps ``/run/mount/utab``). The supervisor's ``check_sandbox``
tries it on ``/run`` first."""
ISOLATE = ("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--")
"""A PID namespace (with a /proc of its own), a mount namespace and an IPC namespace for the
command, made by the namespace's root before :data:`CONFINE`: strace stays in the PID
namespace above, where the command cannot name it (no ``kill``, no ``/proc/<pid>/fd`` of its
trace pipe), the /proc and tmpfs mounted here are locked for the command, and System V shared
memory, semaphores and message queues and POSIX message queues are its own, not the host's
(nor another harness's)."""
CONFINE = ("unshare", "--user", "--map-root-user", "--mount", "--")
"""What the command runs in: a user namespace of its own, owning a mount namespace of its own,
so that every mount the sandbox made above is locked for it. :func:`init` starts it in a
session of its own, so that a signal it sends to its group (``kill(0, ...)``) reaches none of
the processes above it."""
TEMPORARY = ("/tmp", "/var/tmp")  # noqa: S108 - the places themselves, not a file in them
"""Where any program may write: in the command's view, both are one directory of its own
(:func:`_temporary`), writable whatever else is read-only; the host's are not there."""
RUNTIME_DIRS = ("/run", "/var/run")
"""Where the host's daemons keep their sockets: each one that is a directory of its own (not a
link to another) is hidden. The verifier holds the same (``verify._facts.RUNTIME_DIRS``: it is
separate code, and this module imports nothing but the standard library); a test keeps the
two equal."""
HANDOFF = b"listening"
"""The message that carries the listening socket to the supervisor."""
_BACKLOG = 128


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(_BACKLOG)  # a harness that connects before the observer serves it waits here
    return listener


def _hide_runtime_dirs() -> str | None:
    """Mount an empty tmpfs over each of :data:`RUNTIME_DIRS`; why one could not be, or None."""
    for place in RUNTIME_DIRS:
        path = Path(place)
        if path.is_symlink() or not path.is_dir():
            continue
        done = subprocess.run([*EMPTY_TMPFS, place], capture_output=True, check=False)
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"{place}: {said[-1] if said else 'mount failed'}"
    return None


_FLAGS = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048,
          "relatime": 1 << 21, "strictatime": 1 << 24}  # fmt: skip
"""A mount's flags by its name in ``/proc/self/mountinfo``: kept when it is made read-only (a
mount locked by a user namespace refuses a remount that would drop one)."""
_RDONLY, _REMOUNT, _BIND, _REC = 1, 32, 4096, 16384
_NO_SUID_NO_DEV = _FLAGS["nosuid"] | _FLAGS["nodev"]
"""What every mount of a host's file is: no set-uid holds, no device opens (as an overlay)."""
_SEALED = _NO_SUID_NO_DEV | _FLAGS["noexec"]
"""A mount of the sandbox's own from which nothing runs, no device opens and no set-uid holds."""
_KERNEL_TREES = ("/proc", "/dev")
"""Left out of the read-only pass: ``/proc`` as it is (``/proc/self``: a program's), but for
:data:`KERNEL_SETTINGS`, and ``/dev``, the sandbox's own (:func:`_devices`); ``/sys`` is
read-only as every other mount."""
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
"""The host's device nodes in the command's ``/dev``, each bound from the host's, read-only
(its mode and owner are the host's to keep; reading and writing a device is not writing the
file): what a program opens by name. Nothing else of the host's ``/dev`` is there: not the
kernel log (``kmsg``), ``kvm``, loop or block devices, nor the host's ``/dev/shm`` and
``/dev/pts`` (ADR 0047)."""
DEVICE_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
                ("ptmx", "pts/ptmx"))  # fmt: skip
"""The links of a ``/dev`` (``ptmx``: to the sandbox's own terminals)."""
KERNEL_SETTINGS = ("/proc/acpi", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/scsi", "/proc/sys",
                   "/proc/sysrq-trigger")  # fmt: skip
"""The host's kernel settings in ``/proc``, read-only for the command: its uid 0 is the
host's (``CONFINE``'s ``--map-root-user`` under a root runner), and ``/proc/sys`` checks the
uid alone (``kernel.core_pattern`` would run a program of the harness's as the host's root)."""


MASKED = ("/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/sched_debug",
          "/proc/timer_list")  # fmt: skip
"""What ``/proc`` tells of the host that a command has no use for, each read as empty (the
host's ``/dev/null`` bound over it, read-only), as Docker masks them: ``/proc/keys`` lists the
description of every key the runner's uid may view (the keyring calls themselves are absent,
:data:`STRACE_OPTIONS`)."""


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    code = libc.mount(
        None if source is None else os.fsencode(source), os.fsencode(target),
        None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
        data.encode() if data else None,
    )  # fmt: skip
    if code != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{os.strerror(number)}: {target}")


def _table() -> list[tuple[int, str, set[str], str]]:
    """Every mount of this mount namespace, in mount order: its id, mount point, per-mount
    options and file system type."""
    mounts = []
    with open("/proc/self/mountinfo", "rb") as table:
        for line in table:
            fields = line.split()
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])
            kind = fields[fields.index(b"-") + 1].decode()
            options = set(fields[5].decode().split(","))
            mounts.append((int(fields[0]), os.fsdecode(point), options, kind))
    return mounts


_STATX_MNT_ID, _AT_SYMLINK_NOFOLLOW, _AT_NO_AUTOMOUNT, _AT_FDCWD = 0x1000, 0x100, 0x800, -100


def _mount_id(path: str) -> int | None:
    """The id (as :func:`_table` numbers it) of the mount ``path`` is on, the last part not
    followed; None when nothing is there."""
    libc = ctypes.CDLL(None, use_errno=True)
    answer = ctypes.create_string_buffer(256)  # struct statx; stx_mnt_id at byte 144
    flags = _AT_SYMLINK_NOFOLLOW | _AT_NO_AUTOMOUNT
    if libc.statx(_AT_FDCWD, os.fsencode(path), flags, _STATX_MNT_ID, answer) != 0:
        return None
    return int.from_bytes(answer.raw[144:152], sys.byteorder)


def _on_top(point: str, mount: int) -> bool:
    """Whether ``mount`` (an id of :func:`_table`) is what ``point`` leads to: not covered by a
    mount over it or over a place on the way to it (nothing there: it is covered)."""
    return _mount_id(point) == mount


def under(path: str, places: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in places)


def _read_only(point: str, options: set[str]) -> None:
    kept = sum(flag for name, flag in _FLAGS.items() if name in options)
    _mount(None, point, None, _REMOUNT | _BIND | _RDONLY | kept, "")


_KEPT = os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME
"""The flags ``statvfs`` and ``mount`` number alike, kept when a bind is made read-only."""
_ST_NOSYMFOLLOW, _NOSYMFOLLOW = 0x2000, 256
"""``nosymfollow`` as ``statvfs`` and ``mount`` number it (Linux 5.10), kept too."""


def _bound_read_only(source: str, target: str, flags: int = _BIND, added: int = 0) -> None:
    """Bind ``source`` over ``target`` (``flags``: ``_BIND``, or with ``_REC`` what is mounted
    in it too), then make that bind read-only (:func:`_made_read_only`)."""
    _mount(source, target, None, flags, "")
    _made_read_only(target, added)


def _made_read_only(target: str, added: int = 0) -> None:
    """Make the mount at ``target`` (one this process made) read-only, keeping its other flags
    (as ``statvfs`` of ``target`` reads them: no read of the mount table, whose length a host
    chooses) and adding ``added`` (``nodev``, say)."""
    flag = os.statvfs(target).f_flag
    relatime = _FLAGS["relatime"] if flag & os.ST_RELATIME else 0
    nosymfollow = _NOSYMFOLLOW if flag & _ST_NOSYMFOLLOW else 0
    kept = (flag & _KEPT) | relatime | nosymfollow | added
    _mount(None, target, None, _REMOUNT | _BIND | _RDONLY | kept, "")


def _devices() -> None:
    """Mount a ``/dev`` of the sandbox's own over the host's: a read-only tmpfs holding
    :data:`DEVICES` (bound from the host's, read-only) and :data:`DEVICE_LINKS`, an empty
    ``/dev/shm`` (the command's to write, as ``/tmp``) and a new instance of the terminals
    (``/dev/pts``; left out where the kernel refuses one).

    Raises:
        OSError: a mount could not be made.
    """
    host = os.open("/dev", os.O_PATH | os.O_DIRECTORY)  # the host's nodes, once covered
    try:
        _mount("sandbox", "/dev", "tmpfs", _SEALED, "mode=0755,size=64k")
        for name in DEVICES:
            source = f"/proc/self/fd/{host}/{name}"
            if not os.path.exists(source):
                continue
            os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))  # a mount point
            _bound_read_only(source, f"/dev/{name}")
    finally:
        os.close(host)
    for name, target in DEVICE_LINKS:
        os.symlink(target, f"/dev/{name}")
    for name in ("shm", "pts"):
        os.mkdir(f"/dev/{name}", 0o755)
    _mount("sandbox", "/dev/shm", "tmpfs", _NO_SUID_NO_DEV, "mode=1777")  # noqa: S108
    try:
        _mount("devpts", "/dev/pts", "devpts", _FLAGS["nosuid"] | _FLAGS["noexec"],
               "newinstance,ptmxmode=0666,mode=0620")  # fmt: skip
    except OSError:  # no terminals: a harness has no use of one
        os.rmdir("/dev/pts")
        os.unlink("/dev/ptmx")
    _made_read_only("/dev")


def outermost(places: Sequence[str]) -> list[str]:
    """``places`` but those inside another of them, each once, in order."""
    kept: list[str] = []
    for place in sorted(set(places), key=len):
        if not under(place, kept):
            kept.append(place)
    return sorted(kept)


def _unlinked(path: str) -> None:
    """Refuse ``path`` when a link is on the way to it or at it (each part looked at itself,
    never followed: ``/proc/self/cwd`` reads as the path it is at): in a ``tmp`` given again,
    a link the command left would have a mount or a link made where it points.

    Raises:
        OSError: a link is on the way.
    """
    parts = path.split("/")
    for end in range(2, len(parts) + 1):
        if os.path.islink("/".join(parts[:end])):
            raise OSError(errno.ELOOP, f"a link on the way to {path}")


def _temporary(tmp: str | None, given: Sequence[str], links: Sequence[Sequence[str]]) -> None:
    """Make :data:`TEMPORARY` one directory of the command's own: ``tmp`` (bound; it must be
    bound over itself already, writable) or else an empty tmpfs, the host's ``/tmp`` and
    ``/var/tmp`` under it; then each of ``given`` that was in the host's is bound back at its
    own path as it is now (read-only or writable, with what is mounted in it), so that the
    places the command is given, and its interpreter, keep their paths, and each of ``links``
    (a link of the host's there: its path and what it says) that is not there yet is made. A
    ``/var/tmp`` that is a link (to ``/tmp``) follows.

    Raises:
        OSError: a mount could not be made.
    """
    places = [p for p in TEMPORARY if os.path.isdir(p) and not os.path.islink(p)]
    if not places:
        return
    held = {place: os.open(place, os.O_PATH) for place in outermost(given)
            if under(place, places)}  # fmt: skip
    source = None if tmp is None else os.open(tmp, os.O_PATH | os.O_DIRECTORY)
    try:
        if source is None:
            _mount("sandbox", places[0], "tmpfs", _NO_SUID_NO_DEV, "mode=1777")
        else:
            _mount(f"/proc/self/fd/{source}", places[0], None, _BIND, "")
        for place in places[1:]:
            _mount(places[0], place, None, _BIND, "")
        for place, fd in held.items():
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(place, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(place), exist_ok=True)
                os.close(os.open(place, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            _unlinked(place)
            _mount(f"/proc/self/fd/{fd}", place, None, _BIND | _REC, "")
        for link, target in links:
            if under(link, places) and not os.path.lexists(link):
                os.makedirs(os.path.dirname(link), exist_ok=True)
                _unlinked(os.path.dirname(link))
                os.symlink(target, link)
    finally:
        for fd in [*held.values(), *([] if source is None else [source])]:
            os.close(fd)


UNCOVERED = ("/proc", "/dev", *RUNTIME_DIRS)
"""The host's trees :func:`_host` leaves alone: ``/proc`` (the command's own), ``/dev`` (the
sandbox's own) and :data:`RUNTIME_DIRS` (empty)."""
KERNEL_TYPES = frozenset({"autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs",
                          "debugfs", "efivarfs", "fusectl", "nsfs", "proc", "pstore",
                          "securityfs", "selinuxfs", "sysfs", "tracefs"})  # fmt: skip
"""File systems of the kernel's, in which no socket, FIFO or device can be made: bound as they
are (read-only, ``nodev``, ``nosuid``, ``noexec``), not through an overlay (which most of them
refuse as a layer). Not ``devpts`` (a host's terminal outside ``/dev``, a chroot's, opens for
writing), ``mqueue`` (an ``open()`` of a host's queue receives from it) nor ``rpc_pipefs``
(the kernel's pipes to the host's NFS daemons, which open for writing): each is covered as
any other mount, or hidden where overlayfs refuses it."""


def _host(
    own: Sequence[str], table: Sequence[tuple[int, str, set[str], str]]
) -> list[tuple[str, int]]:
    """The host's places (ADR 0047, point 13) and how each is shown (:func:`_place`): every
    directory in ``/`` (not a link) and every mount point through an overlay of its own
    (:data:`_COVER`), a mount of :data:`KERNEL_TYPES` bound (:data:`_KERNEL`), a socket, FIFO
    or device in ``/`` masked (:data:`_MASK`); not ``/`` itself nor :data:`TEMPORARY`
    themselves (a mount in a place shown under them is one), nothing in :data:`UNCOVERED` or
    in ``own`` (what the command writes is bound as it is); ``table``: :func:`_table`."""
    places: dict[str, int] = {}
    for entry in os.scandir("/"):
        if entry.is_dir(follow_symlinks=False):
            places[entry.path] = _COVER
        elif not entry.is_symlink() and not entry.is_file(follow_symlinks=False):
            places[entry.path] = _MASK
    for _, point, _, kind in table:
        if point != "/":
            places[point] = _KERNEL if kind in KERNEL_TYPES else _COVER
    return [(place, kind) for place, kind in places.items()
            if place not in TEMPORARY and not under(place, (*UNCOVERED, *own))]  # fmt: skip


def _unmount(place: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(place), 2) != 0:  # MNT_DETACH
        number = ctypes.get_errno()
        raise OSError(number, f"{os.strerror(number)}: {place}")


def _cut_off(source: int, place: str) -> None:
    """Show the directory ``source`` (a descriptor) at ``place`` through an overlay of it and
    an empty read-only tmpfs, read-only, ``nosuid`` and ``nodev`` (a host's device node in it
    does not open), ``noexec`` where the mount it is on is: its files read as they are, one
    device (``xino``), but a Unix socket or a FIFO in it is a node of the overlay's, not the
    host's, so that ``connect()`` is refused and a FIFO has no reader (a read-only bind
    refuses neither). What is mounted inside it is not shown (:func:`_placed` shows each
    such mount through an overlay of its own). Nothing is left mounted at ``place`` when the
    overlay cannot be made.

    Raises:
        OSError: a mount could not be made.
    """
    flags = _RDONLY | os.ST_NOSUID | os.ST_NODEV | (os.fstatvfs(source).f_flag & os.ST_NOEXEC)
    _mount("sandbox", place, "tmpfs", flags, "mode=0555,size=4k")  # the empty lower layer
    try:
        empty = os.open(place, os.O_PATH | os.O_DIRECTORY)
        try:
            _mount("sandbox", place, "overlay", flags,
                   f"lowerdir=/proc/self/fd/{source}:/proc/self/fd/{empty},xino=on")  # fmt: skip
        finally:
            os.close(empty)
    except OSError:
        _unmount(place)
        raise


_COVER, _KERNEL, _MASK, _OWN, _SHOWN = range(5)
"""What a place is to :func:`_placed`, in the order of those at one path: the host's (a
directory or file, a kernel's file system, a socket, FIFO or device), the command's to write,
the command's to read."""


def _hide(place: str, why: OSError) -> None:
    """Cover ``place`` with an empty read-only tmpfs, and say so on stderr (the harness's log)."""
    _mount("sandbox", place, "tmpfs", _RDONLY | _SEALED, "mode=0555,size=4k")
    sys.stderr.write(f"sandbox: {place} is hidden: no overlay of it could be made ({why})\n")


def _cover(fd: int, place: str, points: Sequence[str], *, shown: bool) -> None:
    """Show the directory ``fd`` (a descriptor) at ``place`` through an overlay
    (:func:`_cut_off`). Where the kernel refuses one over the mounts it holds (in a user
    namespace, the host's mounts are locked, and no overlay may take a layer that holds one),
    a copy of it instead (:func:`_rebuilt`; ``points``: every mount point). Where it refuses
    one at all, the place is hidden (:func:`_hide`), or, ``shown`` (a place the command is
    given), the harness fails.

    Raises:
        OSError: a mount could not be made.
    """
    try:
        _cut_off(fd, place)
    except OSError as exc:
        refused = exc
    else:
        return
    inside = [point for point in points if point != place and under(point, [place])]
    if not inside:
        if shown:
            raise refused
        _hide(place, refused)
        return
    _rebuilt(fd, place, inside, shown=shown)


def _rebuilt(fd: int, place: str, inside: Sequence[str], *, shown: bool) -> None:
    """Mount at ``place`` a tmpfs of the sandbox's own holding what the directory ``fd`` (a
    descriptor) holds now, then make it read-only: each directory in it shown through
    :func:`_cover` (the same way, down to the mounts), each other entry as :func:`_copied`
    makes it, and an empty directory or file where a mount of ``inside`` (the mount points in
    it) is to be shown as a place of its own. What the host makes in the directory later is
    not there, nor its socket.

    Raises:
        OSError: a mount could not be made.
    """
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    _mount("sandbox", place, "tmpfs", _SEALED, f"mode={mode:o}")  # links may take a page each
    for entry in os.scandir(f"/proc/self/fd/{fd}"):
        path = f"{place.rstrip('/')}/{entry.name}"
        if path in inside:  # shown as a place of its own, on what is made here
            _point(path, directory=entry.is_dir(follow_symlinks=False))
        elif not entry.is_dir(follow_symlinks=False):
            _copied(entry.path, path)
        else:
            held = os.open(entry.path, os.O_PATH | os.O_NOFOLLOW)
            try:
                if stat.S_ISDIR(os.fstat(held).st_mode):  # not replaced since it was listed
                    os.mkdir(path)
                    _cover(held, path, inside, shown=shown)
            finally:
                os.close(held)
    _made_read_only(place)


def _point(path: str, *, directory: bool) -> None:
    """Make at ``path`` an empty directory or file for a mount to go on."""
    if directory:
        os.mkdir(path)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def _copied(source: str, path: str) -> None:
    """Make at ``path`` (on a tmpfs of the sandbox's own) what the host's ``source`` (not a
    directory) is now: a link saying what it says, a regular file bound read-only, nothing for
    a socket, FIFO or device (nor for what is gone)."""
    try:
        held = os.open(source, os.O_PATH | os.O_NOFOLLOW)
    except OSError:
        return  # gone since it was listed
    try:
        mode = os.fstat(held).st_mode
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink("", dir_fd=held), path)
        elif stat.S_ISREG(mode):
            _point(path, directory=False)
            try:
                _bound_read_only(f"/proc/self/fd/{held}", path, added=_NO_SUID_NO_DEV)
            except FileNotFoundError:  # the host removed it since: not shown
                os.unlink(path)
    finally:
        os.close(held)


def _place(fd: int, place: str, kind: int, points: Sequence[str]) -> bool:
    """Mount ``fd`` (its node, a descriptor) at ``place`` as :func:`_placed` says for ``kind``
    (a directory through :func:`_cover`; ``points``: every mount point); whether anything was
    mounted.

    Raises:
        OSError: a mount could not be made.
    """
    source, mode = f"/proc/self/fd/{fd}", os.fstat(fd).st_mode
    if kind == _OWN:
        _mount(source, place, None, _BIND | _REC, "")
    elif kind == _KERNEL:  # with what is mounted in it (a bind without would uncover a lock)
        _bound_read_only(source, place, _BIND | _REC, _SEALED)
    elif stat.S_ISDIR(mode):
        _cover(fd, place, points, shown=kind == _SHOWN)
    elif stat.S_ISREG(mode):
        _bound_read_only(source, place)
    elif kind == _SHOWN:  # a host's socket, FIFO or device named on a command line: not shown
        return False
    else:  # one of the host's in / or bound on a file: the host's /dev/null in its place
        _bound_read_only("/dev/null", place)
    return True


def _shown(fd: int, place: str, kind: int, points: Sequence[str]) -> bool:
    """:func:`_place`, but a host's place (not the command's) that the host removed or
    replaced since it was opened is left out, as one that no longer opens is: its mount finds
    nothing there, or a directory where a file was, or the reverse, or, directly in ``/``
    (where the host's places are not mount points, which it could not remove), the path leads
    to another node (the host's removal takes a mount of the sandbox's there away with it).

    Raises:
        OSError: a mount could not be made.
    """
    try:
        return _place(fd, place, kind, points)
    except OSError as exc:
        if kind >= _OWN:
            raise
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
            return False
        if os.path.dirname(place) != "/":
            raise
        try:
            now, held = os.lstat(place), os.fstat(fd)
        except OSError:
            return False
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            return False
        raise


def _placed(own: Sequence[str], read_only: Sequence[str]) -> list[str]:
    """Show the host's files (:func:`_host`) and each of ``read_only`` read-only, a directory
    through :func:`_cut_off` (the host's sockets and FIFOs in it out of reach), a regular file
    bound, and bind each of ``own`` over itself; each from its node as it is before any of
    them is mounted, the outer ones first, so that an overlay covers no place inside it.
    Return the places of ``own`` and ``read_only`` mounted (a socket, FIFO or device among
    ``read_only`` is not). A host's place that no longer opens is left out (nothing is there).

    Raises:
        OSError: a place of ``own`` or ``read_only`` could not be opened or mounted.
    """
    table = _table()
    points = [point for _, point, _, _ in table]
    kinds = set(_host(own, table))
    kinds |= {(place, _OWN) for place in own} | {(place, _SHOWN) for place in read_only}
    order = sorted(kinds, key=lambda item: (item[0].count("/"), item[0], item[1]))
    sources: dict[str, int] = {}
    try:
        for place, kind in order:
            try:
                if place not in sources:
                    sources[place] = os.open(place, os.O_PATH)
            except OSError:
                if kind >= _OWN:
                    raise
        return [place for place, kind in order if place in sources
                and _shown(sources[place], place, kind, points) and kind >= _OWN]  # fmt: skip
    finally:
        for fd in sources.values():
            os.close(fd)


def _view(
    hidden: Sequence[str],
    writable: Sequence[str],
    read_only: Sequence[str],
    links: Sequence[Sequence[str]],
    tmp: str | None,
) -> None:
    """The command's view of the files (ADR 0047): an empty tmpfs over each of ``hidden``,
    the host's files read-only through overlays (:func:`_placed`), but ``/proc`` and
    ``writable`` (bound over themselves), which stay as they were, but for ``read_only`` in
    them and :data:`KERNEL_SETTINGS` (read-only); every other mount read-only;
    :data:`TEMPORARY` its own, with ``links`` (:func:`_temporary`), a ``/dev`` of the
    sandbox's own (:func:`_devices`), and all of it under a ``/`` of its own (:func:`_rooted`).

    Raises:
        OSError: a mount could not be made; the view is not the sandbox's.
    """
    own = [*writable, *([] if tmp is None else [tmp])]
    shown = [place for place in _placed(own, read_only) if place != tmp]
    settings = [place for place in KERNEL_SETTINGS if os.path.exists(place)]
    for place in settings:
        _bound_read_only(place, place, _BIND | _REC)
    for place in (p for p in MASKED if os.path.exists(p)):
        _bound_read_only("/dev/null", place)
    for place in hidden:  # over what the binds show
        _mount("sandbox", place, "tmpfs", _SEALED, "mode=0755,size=1m")
    table = _table()
    for mount, point, options, _ in table:
        if "ro" in options or under(point, (*_KERNEL_TREES, *hidden, *own)):
            continue
        if _on_top(point, mount):  # not one an overlay or a tmpfs covers
            _read_only(point, options)
    _devices()  # first: the host's /dev is writable until then
    _temporary(tmp, shown, links)  # the places as they are now
    _rooted(table)


_MOVE = 8192  # MS_MOVE
STAGE = "/dev/shm/.sandbox-root"  # noqa: S108 - in the sandbox's own /dev/shm, made here
"""Where the command's ``/`` is made (:func:`_rooted`): in the sandbox's own ``/dev/shm``, the
one mount not moved into it before ``pivot_root``; gone after."""
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "loongarch64": 41, "armv7l": 218,
               "armv6l": 218, "i686": 217, "i386": 217, "ppc64le": 203, "ppc64": 203,
               "s390x": 217}  # fmt: skip
"""``pivot_root``'s system call number by machine (the C library has no call for it)."""


def _pivot_root(new: str, old: str) -> None:
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"no pivot_root known on {os.uname().machine}: {new}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(ctypes.c_long(number), os.fsencode(new), os.fsencode(old)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{os.strerror(code)}: pivot_root into {os.getcwd()}")


def _rooted(table: Sequence[tuple[int, str, set[str], str]]) -> None:
    """Make the command's ``/`` a read-only tmpfs of the sandbox's own holding what ``/``
    shows now: each mount on an entry of ``/`` moved into it (every directory of ``/`` is one
    by now: :func:`_placed`, :func:`_devices`, :func:`_temporary`), each other entry but a
    directory as :func:`_copied` makes it; ``pivot_root`` into it and let the host's root
    go. What the host makes in ``/`` later is not in the command's view, nor a directory of
    ``/`` that was not there when :func:`_host` looked. The working directory stays where it
    was, by its path.

    An initramfs root (``rootfs``, as ``table``, :func:`_table`, says) cannot be pivoted
    from: there ``/`` stays the host's, read-only, as a line on stderr says.

    Raises:
        OSError: a mount could not be made.
    """
    cwd, root = os.getcwd(), _mount_id("/")
    if any(mount == root and kind == "rootfs" for mount, _, _, kind in table):
        sys.stderr.write("sandbox: / is the host's (an initramfs root is not pivoted from): "
                         "what the host makes in / later is shown\n")  # fmt: skip
        return
    os.mkdir(STAGE, 0o700)
    mode = stat.S_IMODE(os.stat("/").st_mode)
    _mount("sandbox", STAGE, "tmpfs", _SEALED, f"mode={mode:o}")
    for entry in os.scandir("/"):
        path = f"{STAGE}/{entry.name}"
        if entry.path == "/dev":  # the stage is in it: moved after the pivot
            os.mkdir(path)
        elif _mount_id(entry.path) not in (root, None):
            _point(path, directory=entry.is_dir())  # as the mount's root is
            try:
                _mount(entry.path, path, None, _MOVE, "")
            except OSError:  # the host removed it, which takes the mount on it away: not shown
                if _mount_id(entry.path) not in (root, None):
                    raise
                (os.rmdir if entry.is_dir() else os.unlink)(path)
        elif not entry.is_dir(follow_symlinks=False):
            _copied(entry.path, path)
    host = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        os.chdir(STAGE)
        _pivot_root(".", ".")  # the host's root is now mounted over the stage's
        os.fchdir(host)
    finally:
        os.close(host)
    _mount("dev", "/dev", None, _MOVE, "")  # from the host's root, by the working directory
    _unmount(".")
    os.chdir("/")
    os.rmdir(STAGE)  # where the stage was mounted, in the command's /dev/shm
    _made_read_only("/")
    os.chdir(cwd)  # by its path, as the new root shows it


_ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""The signals the init ignores and the command gets back as they were."""


def init(argv: list[str]) -> int:
    """The first process of the command's PID namespace: make the command's view of the files
    (:func:`_view`), start the command in a session of its own under :data:`CONFINE`, wait for
    it (and for every process left to this one), and exit with its status (128 + N when
    signal N ended it; 126: the view could not be made, the reason on stderr)."""
    view, command = json.loads(argv[0]), argv[2:]  # VIEW -- CMD...
    try:
        real = {key: [os.path.realpath(p) for p in view[key]]
                for key in ("hidden", "writable", "read_only")}  # fmt: skip
        tmp = None if view["tmp"] is None else os.path.realpath(view["tmp"])
        _view(real["hidden"], real["writable"], real["read_only"], view["links"], tmp)
    except (OSError, KeyError) as exc:
        sys.stderr.write(f"sandbox: cannot make the command's view of the files: {exc}\n")
        return 126
    for number in _ENDING:
        signal.signal(number, signal.SIG_IGN)  # the command's, not this process's, to end
    child = os.fork()
    if child == 0:  # pragma: no cover - replaced by the command
        for number in _ENDING:
            signal.signal(number, signal.SIG_DFL)
        os.setsid()
        # a stdin of the view's (read-only) /dev/null: the supervisor's is the host's, through
        # whose descriptor the command's uid 0 could chmod the host's node
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        try:
            os.execvp(CONFINE[0], [*CONFINE, *command])  # noqa: S606 - the pinned command
        finally:
            os._exit(127)
    while True:
        pid, status = os.wait()  # orphans of the command are reaped here too
        if pid == child:
            break
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def main(argv: list[str]) -> int:
    """Run the command inside the namespace; the exit status is the command's (126: setup)."""
    if argv[:1] == ["--init"]:
        return init(argv[1:])
    port, channel_fd, trace_fd, view, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: python -I _sandbox_inside.py PORT FD TRACE VIEW -- CMD...\n")
        return 2
    hidden = _hide_runtime_dirs()
    if hidden is not None:
        sys.stderr.write(f"sandbox: cannot hide the host's sockets: {hidden}\n")
        return 126
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with socket.socket(fileno=int(channel_fd)) as channel, _listen(int(port)) as listener:
        try:
            socket.send_fds(channel, [HANDOFF], [listener.fileno()])
        except OSError as exc:
            sys.stderr.write(f"sandbox: cannot hand the listening socket over: {exc}\n")
            return 126
    # The supervisor holds the listening socket now; neither it nor the channel reaches the
    # command. --seccomp-bpf: the command's processes stop for strace at connect() only, not at
    # every system call (39 us each without it here, against 0.2); -A: strace appends after
    # the header line the supervisor wrote (verify/socket_trace.py).
    # In a user namespace of its own, with a mount namespace owned by it: the command is root
    # there, not where /run and /proc were mounted, so those mounts are locked (it cannot
    # unmount them to uncover the host's), and it has no capability over the namespaces the
    # runner is in (no setns into the runner's network namespace).
    # strace opens the trace pipe through this process's descriptor (its own copy is
    # close-on-exec; this one is not passed down), so no process below strace holds it; below
    # strace, in a PID namespace strace is not in, the command is confined: it can neither
    # reach strace's pipe nor strace (ADR 0047).
    trace = f"/proc/{os.getpid()}/fd/{trace_fd}"
    first = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--init", view, "--"]
    traced = ["strace", *STRACE_OPTIONS, "-A", "-o", trace, "--", *ISOLATE, *first, *command]
    return subprocess.run(traced, check=False).returncode


if __name__ == "__main__":  # pragma: no cover - run as a script inside the namespace
    raise SystemExit(main(sys.argv[1:]))
