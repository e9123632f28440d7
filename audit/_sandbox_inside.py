"""The part of the sandbox that runs inside the fresh network namespace.

``python -I audit/_sandbox_inside.py PORT FD TRACE [HIDDEN...] -- COMMAND...``: hide the
host's ``/run`` (and a ``/var/run`` that is a directory of its own) under an empty tmpfs of the
namespace's own mount namespace, where the host's daemons keep their sockets (Docker's,
D-Bus's, systemd's, the name service cache's: a filesystem Unix socket is reachable across
network namespaces); bring loopback up, listen on ``127.0.0.1:PORT`` (the model's address for
the harness), hand that listening socket to the supervisor over the Unix socket ``FD`` it
passed down (the observer then accepts the harness's connections itself, so no process of the
namespace relays them), then run ``COMMAND`` under ``strace --seccomp-bpf -f -e
trace=connect``, writing every connect() attempt of every process into the pipe ``TRACE`` (a
descriptor the supervisor passed down and reads; it adds the header line), and exit with the
command's status. The command runs out of
the trace's reach (ADR 0047): in a PID namespace of its own (:data:`ISOLATE`: strace is not
among the processes it can see or open the files of), in a session of its own (no signal to
its process group reaches strace), with an empty tmpfs over each ``HIDDEN`` directory (the
run's other harnesses' checkouts, outputs and homes: :func:`covering`), and in a user
namespace of its own (:data:`CONFINE`), which locks them.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

STRACE_OPTIONS = ("--seccomp-bpf", "-f", "-qq", "-Y", "-ttt", "-e", "trace=connect",
                  "-e", "signal=none")  # fmt: skip
"""How the command is traced: every process it starts (``-f``), each stopped for strace at
``connect()`` only (``--seccomp-bpf``, strace 5.3 and later: its other system calls run at
full speed), no signals (ADR 0034); run with ``-A -o`` the trace pipe. The supervisor's
``check_sandbox`` tries them first."""
EMPTY_TMPFS = ("mount", "--no-mtab", "-t", "tmpfs", "-o", "mode=0755,size=1m,nosuid,nodev,noexec",
               "sandbox")  # fmt: skip
"""How a directory is hidden: an empty tmpfs mounted over it (the directory follows), in the
sandbox's own mount namespace (the host's stays as it is); ``--no-mtab``: nothing written in
the hidden ``/run`` (util-linux keeps ``/run/mount/utab``). The supervisor's ``check_sandbox``
tries it on ``/run`` first."""
ISOLATE = ("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--")
"""A PID namespace (with a /proc of its own) and a mount namespace for the command, made by the
namespace's root before :data:`CONFINE`: strace stays in the PID namespace above, where the
command cannot name it (no ``kill``, no ``/proc/<pid>/fd`` of its trace file), and the /proc
and tmpfs mounted here are locked for the command."""
CONFINE = ("setsid", "unshare", "--user", "--map-root-user", "--mount", "--")
"""What the command runs in: a session (and process group) of its own, so that a signal it
sends to its group (``kill(0, ...)``) reaches none of the processes above it; a user namespace
of its own, owning a mount namespace of its own, so that every mount the sandbox made above is
locked for it. It is a child of :func:`covering`'s shell, the first process of
:data:`ISOLATE`'s PID namespace: the command is not that namespace's init (whose signals are
not a process's), its status is the shell's (128 + N when signal N ended it), and when it ends,
every process it left there ends with the shell."""
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


def covering(directories: Sequence[str], command: Sequence[str]) -> list[str]:
    """``command`` run, as a child of the shell that mounts an empty tmpfs over each of
    ``directories`` first (exit 126 if one cannot be; ``mount`` says why on stderr)."""
    mount = shlex.join(EMPTY_TMPFS)
    script = f'until [ "$1" = -- ]; do {mount} "$1" || exit 126; shift; done; shift; "$@"'
    return ["sh", "-c", script, "sh", *directories, "--", *command]


def main(argv: list[str]) -> int:
    """Run the command inside the namespace; the exit status is the command's (126: setup)."""
    port, channel_fd, trace_fd, *rest = argv
    if "--" not in rest or rest.index("--") == len(rest) - 1:
        usage = "usage: python -I _sandbox_inside.py PORT FD TRACE [HIDDEN...] -- CMD...\n"
        sys.stderr.write(usage)
        return 2
    hide, command = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
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
    confined = covering(hide, [*CONFINE, *command])
    traced = ["strace", *STRACE_OPTIONS, "-A", "-o", trace, "--", *ISOLATE, *confined]
    return subprocess.run(traced, check=False).returncode


if __name__ == "__main__":  # pragma: no cover - run as a script inside the namespace
    raise SystemExit(main(sys.argv[1:]))
