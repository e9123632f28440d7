"""The part of the sandbox that runs inside the fresh network namespace.

``python -m audit._sandbox_inside PORT FD LEDGER -- COMMAND...``: hide the host's ``/run`` (and a
``/var/run`` that is a directory of its own) under an empty tmpfs of the namespace's own mount
namespace, where the host's daemons keep their sockets (Docker's, D-Bus's, systemd's, the name
service cache's: a filesystem Unix socket is reachable across network namespaces); bring
loopback up, listen on ``127.0.0.1:PORT`` (the model's address for the harness), hand that
listening socket to the supervisor over the Unix socket ``FD`` it passed down (the observer
then accepts the harness's connections itself, so no process of the namespace relays them),
then run ``COMMAND`` under ``strace --seccomp-bpf -f -e trace=connect``, appending every
connect() attempt of every process to ``LEDGER`` (after the header line the supervisor wrote),
and exit with the command's status. The command runs out of the trace's reach (ADR 0047): in a
PID namespace of its own (:data:`ISOLATE`: strace is not among the processes it can see, signal
or open the files of), with an empty tmpfs over the directory that holds ``LEDGER``
(:func:`covering`), and in a user namespace of its own (:data:`CONFINE`), which locks both.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
from pathlib import Path

STRACE_OPTIONS = ("--seccomp-bpf", "-f", "-qq", "-Y", "-ttt", "-e", "trace=connect",
                  "-e", "signal=none")  # fmt: skip
"""How the command is traced: every process it starts (``-f``), each stopped for strace at
``connect()`` only (``--seccomp-bpf``, strace 5.3 and later: its other system calls run at
full speed), no signals (ADR 0034); run with ``-A -o LEDGER``. The supervisor's
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
CONFINE = ("unshare", "--user", "--map-root-user", "--mount", "--fork", "--")
"""What the command runs in: a user namespace of its own, owning a mount namespace of its own,
so that every mount the sandbox made above is locked for it; ``--fork``: ``unshare`` stays the
first process of :data:`ISOLATE`'s PID namespace (the command is not its init, whose signals
are not a process's), and when the command ends, every process it left there ends with it."""
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


def covering(directory: str, command: list[str]) -> list[str]:
    """``command`` run after an empty tmpfs is mounted over ``directory`` (exit 126 if it
    cannot be; ``mount`` says why on stderr)."""
    mount = shlex.join(EMPTY_TMPFS)
    return ["sh", "-c", f'{mount} "$0" || exit 126; exec "$@"', directory, *command]


def main(argv: list[str]) -> int:
    """Run the command inside the namespace; the exit status is the command's (126: setup)."""
    port, channel_fd, ledger, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: python -m audit._sandbox_inside PORT FD LEDGER -- CMD...\n")
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
    # strace opens LEDGER (close-on-exec) before it starts the command; below it, in a PID
    # namespace strace is not in, the directory of LEDGER is covered and the command confined:
    # it can neither rewrite the trace by its name nor reach strace's open file or strace.
    confined = covering(str(Path(ledger).parent), [*CONFINE, *command])
    traced = ["strace", *STRACE_OPTIONS, "-A", "-o", ledger, "--", *ISOLATE, *confined]
    return subprocess.run(traced, check=False).returncode


if __name__ == "__main__":  # pragma: no cover - run as a module inside the namespace
    raise SystemExit(main(sys.argv[1:]))
