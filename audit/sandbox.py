"""The sandbox: a harness command in a fresh network namespace whose only way to the model is the
observer, with every connection attempt of every process recorded (a ``connect()``, a send that
names an address), and its limits enforced.

``unshare --net --pid --fork`` makes the namespace, and a PID namespace whose first process
ends every other one in it when it ends (``--map-root-user`` when not root); inside it,
``audit._sandbox_inside`` brings loopback up, listens on the model's loopback port, hands that
listening socket out to the supervisor (which gives it to the observer, so the observer accepts
the harness's connections itself: no relay in between) and runs the command under
``strace --seccomp-bpf -f -e trace=connect`` (a process stops for strace at ``connect()``
only), writing into a pipe the supervisor reads; the command runs in a PID namespace below
strace's, out of its reach, in a view of the files of its own (its places writable, everything
else read-only, the other harnesses' places hidden, a ``/tmp`` and a ``/dev`` of its own:
ADR 0047). A non-local address fails at once with ENETUNREACH and is
recorded. The command's process group is killed when it is silent for longer than its
inactivity limit or runs past its total wall (a TIMEOUT); when the command has ended, for
whatever reason, every process still in the namespace is killed too (every one the command
left in its own PID namespace ends with it), and the PID namespace holds one that left the
network namespace as well. If the namespace cannot be made, :class:`SandboxUnavailable` says
why: a run never goes on without isolation.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from audit import _sandbox_inside
from audit._sandbox_inside import EMPTY_TMPFS, STRACE_OPTIONS, TEMPORARY, outermost, under
from audit.environments import PLACES
from bundle_schema.errors import InvalidInput
from bundle_schema.models import SocketLedgerEntry
from verify.socket_trace import TRACE_MEDIA_TYPE, trace_entries, trace_header, trace_name

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "check_sandbox",
    "run_sandboxed",
]

_POLL = 0.02
_HANDOFF_S = 30.0
"""Seconds the supervisor waits for the namespace's listening socket."""

Serve = Callable[[socket.socket], AbstractContextManager[object]]
"""Serves harnesses on a listening socket until the block ends (:meth:`Observer.serving
<audit.observer.Observer.serving>`)."""


class SandboxUnavailable(InvalidInput):
    """The network namespace (or a tool it needs) is not available here; the message says why."""


TRACE_BYTES = 64 << 20
"""The default of :attr:`SandboxLimits.trace_bytes`: 64 MiB, some hundred thousand lines
(an honest harness's trace is a few hundred kilobytes; one that writes control messages by
the thousand in each ``sendmsg()`` makes strace write about 100 MB a second)."""


OUTPUT_BYTES = 256 << 20
"""The default of :attr:`SandboxLimits.output_bytes`: 256 MiB on stdout, and as much on stderr
(bfcl-eval's progress bars over its 3,641 entries are a few megabytes)."""


@dataclass(frozen=True)
class SandboxLimits:
    """A harness command's limits: silence (no output) and total wall, in seconds, and the
    size of its trace and of each of its output streams, in bytes."""

    inactivity_s: float
    wall_s: float
    trace_bytes: int = TRACE_BYTES
    """Past it the command is killed (the ``trace`` limit): the trace is kept to that size,
    so that a harness cannot fill the runner's memory or the bundle with it."""
    output_bytes: int = OUTPUT_BYTES
    """The same for stdout and for stderr (the ``output`` limit), which the bundle keeps as
    the harness's logs."""


Limit = Literal["inactivity", "wall", "trace", "output"]
"""A limit a command was killed for (:class:`SandboxLimits`)."""


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed command did."""

    returncode: int | None
    """None when it was killed for a limit."""
    timeout: Limit | None
    wall_s: float
    max_inactivity_s: float
    stdout: bytes
    stderr: bytes
    ledger: tuple[SocketLedgerEntry, ...]
    trace: bytes = b""
    """The raw trace the ledger was parsed from: the supervisor's header, then strace's lines."""
    trace_name: str = ""
    """Its logical name in the bundle (``network/strace/<first seq>-<component>.txt``)."""

    def evidence(self) -> dict[str, tuple[bytes, str]]:
        """The trace as evidence, by logical name (kept beside the ledger; ADR 0017)."""
        return {self.trace_name: (self.trace, TRACE_MEDIA_TYPE)} if self.trace_name else {}


def _unshare(command: Sequence[str]) -> list[str]:
    # --mount-proc: a mount namespace of its own (private propagation) with a /proc of the
    # PID namespace's, where the inside part hides the host's /run (audit/_sandbox_inside.py)
    mapping = [] if os.geteuid() == 0 else ["--map-root-user"]
    return [
        "unshare", "--net", "--pid", "--mount-proc", "--fork", "--kill-child", *mapping, "--",
        *command,
    ]  # fmt: skip


def check_sandbox() -> None:
    """Make sure a network namespace can be made and traced here.

    Raises:
        SandboxUnavailable: a tool is missing or the kernel refuses the namespace.
    """
    for tool in ("unshare", "strace", "ip", "mount"):
        if shutil.which(tool) is None:
            raise SandboxUnavailable(f"{tool} is not installed; the sandbox needs it")
    for probe_command, what in (
        (["ip", "link", "set", "lo", "up"], "a network namespace"),
        ([*EMPTY_TMPFS, "/run"], "a mount namespace whose /run is its own"),
    ):
        probe = subprocess.run(_unshare(probe_command), capture_output=True, check=False)
        if probe.returncode != 0:
            reason = probe.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SandboxUnavailable(
                f"cannot make {what}: " + (reason[-1] if reason else "unshare failed")
            )
    traced = subprocess.run(
        ["strace", *STRACE_OPTIONS, "-o", os.devnull, "--", "true"], capture_output=True,
        check=False,
    )  # fmt: skip
    if traced.returncode != 0:
        reason = traced.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SandboxUnavailable(
            "strace cannot trace connect() alone (--seccomp-bpf needs strace 5.3 or later): "
            + (reason[-1][:200] if reason else f"exit {traced.returncode}")
        )


class _Watch:
    """Collect a stream's bytes (up to ``cap``, then set :attr:`over` and read the rest to
    its end without keeping it) and the time of its last output."""

    def __init__(self, stream: IO[bytes], clock: list[float], cap: int | None = None) -> None:
        self.data = bytearray()
        self.over = False
        self._clock, self._cap = clock, cap
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := os.read(stream.fileno(), 1 << 16):
                if self._cap is not None and len(self.data) + len(chunk) > self._cap:
                    self.data += chunk[: max(0, self._cap - len(self.data))]
                    self.over = True
                else:
                    self.data += chunk
                now = time.monotonic()
                self._clock[1] = max(self._clock[1], now - self._clock[0])
                self._clock[0] = now

    def join(self) -> None:
        self._thread.join()


def _past_a_size(tracing: _Watch, watches: Sequence[_Watch]) -> Limit | None:
    """The size limit a command's trace or output went past, if any."""
    if tracing.over:
        return "trace"
    return "output" if any(watch.over for watch in watches) else None


def run_sandboxed(
    command: Sequence[str],
    *,
    serve: Serve | None,
    port: int,
    cwd: Path,
    limits: SandboxLimits,
    env: Mapping[str, str] | None = None,
    component: str | None = None,
    first_seq: int = 0,
    active: Callable[[], float] | None = None,
    hidden: Sequence[Path] = (),
    writable: Sequence[Path] | None = None,
    read_only: Sequence[Path] = (),
    shown: Sequence[Path] = (),
    tmp: Path | None = None,
) -> SandboxResult:
    """Run ``command`` in a fresh network namespace; the model is at ``127.0.0.1:port`` there.

    Args:
        command: the harness command.
        serve: what serves the namespace's listening socket, the only way out of it (the
            observer's ``serving``); ``None``: nothing does, a connection to the port is
            refused.
        port: the loopback port inside the namespace where the observer accepts.
        cwd: the command's working directory.
        limits: inactivity and total wall limits.
        env: the command's environment (default: this process's).
        component: the component the ledger entries belong to.
        first_seq: the first ledger sequence number.
        active: when the command last talked to the model (``time.monotonic()``: the
            observer's last request, chunk or reply): activity, as output is, for the
            inactivity limit (a harness that prints nothing until it ends is not silent while
            it asks the model).
        hidden: existing directories the command sees empty (an empty tmpfs over each, which
            it cannot take off): what is not its own in the run's scratch directory.
        writable: existing directories the command may write, besides its ``/tmp``
            (default: ``cwd``); every other file it sees is read-only (ADR 0047). ``cwd`` is
            not writable unless it is in one of them (a working directory that is a link to
            elsewhere makes nothing writable).
        read_only: existing paths in those the command may not write (a checkout's ``.git``:
            the runner runs git there after the command).
        shown: existing paths the command reads (its interpreter's prefixes and import paths,
            its data): the host's ``/tmp`` and ``/var/tmp`` are not in its view, and those of
            these in them are shown at their own paths, read-only, as are the paths the command
            names (its program, an argument that is an absolute path), its ``PYTHONPATH``'s
            and this interpreter's (isolated: not this process's working directory).
        tmp: an existing directory, the command's ``/tmp`` and ``/var/tmp`` (default: an empty
            tmpfs of its own, gone when it ends).

    Raises:
        SandboxUnavailable: the namespace could not be made.
    """
    check_sandbox()
    view = _view(cwd, command=command, env=env, hidden=hidden, writable=writable,
                 read_only=read_only, shown=shown, tmp=tmp)  # fmt: skip
    channel, inside_end = socket.socketpair()
    # strace writes the trace into a pipe this process reads (never a file: nothing the
    # command could rewrite, or keep strace from writing by filling a disk; ADR 0047)
    trace_out, trace_in = os.pipe()
    # the inside part by its file, in isolated mode: the command's working directory (a
    # checkout) is not on its sys.path, where an audit/ package of the harness's would replace it
    script = os.path.abspath(_sandbox_inside.__file__)
    inside = [sys.executable, "-I", script, str(port), str(inside_end.fileno()), str(trace_in),
              view, "--", *command]  # fmt: skip
    origin_epoch, started = time.time(), time.monotonic()
    header = trace_header(origin_epoch, first_seq, component).encode()
    process, listener = _launch(_unshare(inside), cwd, env, (channel, inside_end),
                                (trace_out, trace_in))  # fmt: skip
    stream = open(trace_out, "rb", buffering=0)  # noqa: SIM115 - the reader closes it at EOF
    # a clock of its own: a connect is not activity
    tracing = _Watch(stream, [started, 0.0], limits.trace_bytes)
    namespace = _namespace_of(process.pid)  # unshare made it before its child handed over
    clock = [started, 0.0]  # last output, longest silence so far
    assert process.stdout is not None and process.stderr is not None  # noqa: S101 - PIPE
    watches = [_Watch(s, clock, limits.output_bytes) for s in (process.stdout, process.stderr)]
    timeout: Limit | None = None
    try:
        with contextlib.ExitStack() as serving:
            if listener is not None:
                if serve is None:
                    listener.close()
                else:
                    serving.enter_context(serve(listener))
            while process.poll() is None:
                now = time.monotonic()
                last = clock[0] if active is None else max(clock[0], active())
                if now - last > limits.inactivity_s:
                    timeout = "inactivity"
                elif now - started > limits.wall_s:
                    timeout = "wall"
                else:
                    timeout = _past_a_size(tracing, watches)
                if timeout is not None:
                    _kill_group(process)
                    break
                time.sleep(_POLL)
    finally:  # also when serving failed or the supervisor was interrupted: nothing is left
        _kill_group(process)
        if namespace is not None:
            _kill_namespace(namespace)
    ended = time.monotonic()
    for watch in (*watches, tracing):
        watch.join()
    timeout = timeout or _past_a_size(tracing, watches)  # past one as it ended: not kept whole
    silence = max(clock[1], ended - clock[0])
    trace = header + bytes(tracing.data)
    return SandboxResult(
        returncode=None if timeout else process.returncode,
        timeout=timeout,
        wall_s=ended - started,
        max_inactivity_s=silence,
        stdout=bytes(watches[0].data),
        stderr=bytes(watches[1].data),
        ledger=tuple(trace_entries([trace])),
        trace=trace,
        trace_name=trace_name(first_seq, component),
    )


_PLACES = f"import json, sys; print(json.dumps({PLACES}))"


@functools.cache
def _interpreter_places() -> tuple[str, ...]:
    """Where this interpreter reads from when it runs a harness (its default interpreter): its
    prefixes and import paths as it has them in isolated mode, asked once. Not this process's
    ``sys.path``, which holds its working directory (``python -m audit``) and ``PYTHONPATH``:
    the operator's, not the harness's."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _PLACES], capture_output=True,
                              check=True, timeout=60, env={"PATH": os.defpath})  # fmt: skip
        places = [str(p) for p in json.loads(done.stdout)]
    except (OSError, subprocess.SubprocessError, ValueError, TypeError):
        places = [sys.prefix, sys.base_prefix]
    return tuple(p for p in places if p and os.path.exists(p))


def _launch(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    channel: tuple[socket.socket, socket.socket],
    trace: tuple[int, int],
) -> tuple[subprocess.Popen[bytes], socket.socket | None]:
    """Start the sandbox's first process, in a session of its own (its stdin ``/dev/null``, its
    stdout and stderr pipes, the inside's end of ``channel`` and the trace pipe's writing end
    passed down), and take the listening socket it hands over (:func:`_handed_over`). This
    process's copies of what it passed down are closed; so is the trace's reading end when it
    could not start.

    Raises:
        SandboxUnavailable: it could not start (an argument list over the kernel's limit, a
            NUL in an argument, a working directory gone).
    """
    ours, inside_end = channel
    trace_out, trace_in = trace
    try:
        with ours, inside_end:
            try:
                process = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=dict(env) if env is not None else None,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=(inside_end.fileno(), trace_in),
                )
            except (OSError, ValueError) as exc:
                os.close(trace_out)
                raise SandboxUnavailable(f"the sandbox could not start: {exc}") from None
            inside_end.close()  # the namespace's end: an inside that exits closes the channel
            return process, _handed_over(ours, process)
    finally:
        os.close(trace_in)  # strace's (and the inside part's) end only: EOF when they end


def _existing(paths: Sequence[str]) -> list[tuple[str, str]]:
    """Those of ``paths`` that name an existing file or directory, each with what it resolves
    to: a path the kernel cannot take (a NUL, a lone surrogate) or a loop of links names
    none."""
    kept = []
    for path in paths:
        try:
            if os.path.exists(path):
                kept.append((path, os.path.realpath(path)))
        except (OSError, ValueError, RecursionError):
            continue
    return kept


def _python_path(env: Mapping[str, str] | None) -> list[str]:
    """The absolute entries of the command's ``PYTHONPATH``: where its interpreter is told to
    read from."""
    given = (os.environ if env is None else env).get("PYTHONPATH", "")
    return [p for p in given.split(os.pathsep) if os.path.isabs(p) and os.path.exists(p)]


def _named(command: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """The paths ``command`` names: its program (looked up on its ``PATH``) and each argument
    that is an existing absolute path."""
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    program = shutil.which(command[0], path=path) if command else None
    named = [p for p in command[1:] if p.startswith("/") and os.path.exists(p)]
    return [os.path.abspath(program), *named] if program else named


MAX_VIEW = 96 * 1024
"""The most bytes the command's view of the files may take (it is one argument of the inside
part's command line, where the kernel takes at most 128 KiB)."""
_HOPS = 64
"""The most links :func:`_links` follows (a loop of links ends there)."""


def _links(paths: Sequence[str]) -> list[tuple[str, str]]:
    """The symbolic links in :data:`TEMPORARY` on the way to each of ``paths`` (each followed,
    a link to a link too), with what each says: the command sees them at their own paths, so
    that a path through one (``--harness-python`` given as a link to a venv) leads where it
    does on the host."""
    found: dict[str, str] = {}
    todo = [os.path.abspath(p) for p in paths]
    while todo and len(found) < _HOPS:
        parts = Path(todo.pop()).parts
        for end in range(2, len(parts) + 1):
            prefix = os.path.join(*parts[:end])
            if under(prefix, TEMPORARY) and os.path.islink(prefix) and prefix not in found:
                found[prefix] = os.readlink(prefix)
                rest = os.path.join(os.path.dirname(prefix), found[prefix], *parts[end:])
                todo.append(os.path.normpath(rest))
                break
    return sorted(found.items())


def _view(
    cwd: Path,
    *,
    command: Sequence[str],
    env: Mapping[str, str] | None,
    hidden: Sequence[Path],
    writable: Sequence[Path] | None,
    read_only: Sequence[Path],
    shown: Sequence[Path],
    tmp: Path | None,
) -> str:
    """The command's view of the files, for the inside part (``_sandbox_inside.init``): of
    ``shown``, the paths ``command`` names and this interpreter's places, those under
    :data:`TEMPORARY` as read-only places (the others are visible and read-only anyway), and
    the links there on the way to them (:func:`_links`).

    Raises:
        SandboxUnavailable: the view is over :data:`MAX_VIEW` bytes.
    """
    given = [cwd] if writable is None else writable
    existing = _existing(
        [*map(str, shown), *_named(command, env), *_python_path(env), *_interpreter_places()]
    )
    named, read = [path for path, _ in existing], [real for _, real in existing]
    # in the host's /tmp, not all of it (a script's directory on sys.path may be /tmp itself),
    # and not in a place given: its outputs named on its command line and its /tmp stay
    # writable, what is hidden stays hidden
    own = [os.path.realpath(p) for p in (*given, *hidden, *([] if tmp is None else [tmp]))]
    inside = [p for p in read if under(p, TEMPORARY) and p not in TEMPORARY]
    kept = outermost([p for p in inside if not under(p, own)])
    view = json.dumps({"hidden": list(map(str, hidden)), "writable": list(map(str, given)),
                       "read_only": [*map(str, read_only), *kept],
                       "links": _links(named),
                       "tmp": None if tmp is None else str(tmp)})  # fmt: skip
    if len(view) > MAX_VIEW:
        raise SandboxUnavailable(
            f"the command's view of the files names too many places ({len(view)} bytes, at "
            f"most {MAX_VIEW})"
        )
    return view


def _handed_over(channel: socket.socket, process: subprocess.Popen[bytes]) -> socket.socket | None:
    """The listening socket the namespace's inside part sends over ``channel``; ``None`` if it
    exited (or closed the channel) first, or sent nothing within :data:`_HANDOFF_S` seconds
    (its stderr says why; a harness that connects is then refused)."""
    deadline = time.monotonic() + _HANDOFF_S
    while process.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([channel], [], [], _POLL)
        if not ready:
            continue
        try:
            _, fds, _, _ = socket.recv_fds(channel, 64, 1)
        except OSError:
            return None
        if not fds:
            return None
        listener = socket.socket(fileno=fds[0])
        listener.set_inheritable(False)  # never into a later command
        return listener
    return None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the command's process group, if it still runs, and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


_Namespace = tuple[int, int]


def _namespace_of(pid: int) -> _Namespace | None:
    """The network namespace process ``pid`` is in (device and inode), when it is not this
    process's: the sandbox's, once ``unshare`` has made it; else None."""
    try:
        ours, theirs = os.stat("/proc/self/ns/net"), os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino):
        return None
    return theirs.st_dev, theirs.st_ino


def _kill_namespace(namespace: _Namespace) -> None:
    """Kill every process still in the sandbox's network namespace. A harness process that left
    the command's process group (``setsid``), or that strace does not wait for, outlives the
    kill of the group and holds the command's output pipes open: the run would wait for it
    past every limit, and it could go on talking to the observer during a later component."""
    for _ in range(100):
        found = False
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                try:
                    status = os.stat(f"/proc/{entry.name}/ns/net")
                except OSError:
                    continue  # gone, or a zombie (no namespaces left)
                if (status.st_dev, status.st_ino) == namespace:
                    found = True
                    with contextlib.suppress(OSError):
                        os.kill(int(entry.name), signal.SIGKILL)
        if not found:
            return
        time.sleep(_POLL)
