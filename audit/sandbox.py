"""The sandbox: a harness command in a fresh network namespace whose only way to the model is the
observer, with every connect() attempt of every process recorded, and its limits enforced.

``unshare --net`` makes the namespace (``--map-root-user`` when not root); inside it,
``audit._sandbox_inside`` brings loopback up, forwards a loopback port to the observer's Unix
socket and runs the command under ``strace -f -e trace=connect``. A non-local address fails at
once with ENETUNREACH and is recorded. The command's process group is killed when it is silent
for longer than its inactivity limit or runs past its total wall (a TIMEOUT). If the namespace
cannot be made, :class:`SandboxUnavailable` says why: a run never goes on without isolation.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from bundle_schema.models import SocketLedgerEntry

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "check_sandbox",
    "parse_ledger",
    "run_sandboxed",
]

_POLL = 0.02
_CONNECT = re.compile(
    r"^(?P<pid>\d+)(?:<(?P<comm>[^>]*)>)? (?P<t>\d+\.\d+) connect\(\d+, \{(?P<addr>.*?)\}, \d+"
    r"(?P<rest>.*)$"
)
_RESUMED = re.compile(
    r"^(?P<pid>\d+)(?:<[^>]*>)? \d+\.\d+ <\.\.\. connect resumed>.*?= (?P<result>.*)$"
)
_RESULT = re.compile(r"= (?P<code>-?\d+)(?: (?P<errno>E[A-Z0-9]+))?")


class SandboxUnavailable(Exception):
    """The network namespace (or a tool it needs) is not available here; the message says why."""


@dataclass(frozen=True)
class SandboxLimits:
    """A harness command's limits: silence (no output) and total wall, in seconds."""

    inactivity_s: float
    wall_s: float


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed command did."""

    returncode: int | None
    """None when it was killed for a limit."""
    timeout: Literal["inactivity", "wall"] | None
    wall_s: float
    max_inactivity_s: float
    stdout: bytes
    stderr: bytes
    ledger: tuple[SocketLedgerEntry, ...]


def _unshare(command: Sequence[str]) -> list[str]:
    mapping = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", "--net", "--fork", "--kill-child", *mapping, "--", *command]


def check_sandbox() -> None:
    """Make sure a network namespace can be made and traced here.

    Raises:
        SandboxUnavailable: a tool is missing or the kernel refuses the namespace.
    """
    for tool in ("unshare", "strace", "ip"):
        if shutil.which(tool) is None:
            raise SandboxUnavailable(f"{tool} is not installed; the sandbox needs it")
    probe = subprocess.run(
        _unshare(["ip", "link", "set", "lo", "up"]), capture_output=True, check=False
    )
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SandboxUnavailable(
            "cannot make a network namespace: " + (reason[-1] if reason else "unshare failed")
        )


def _address(fields: str) -> tuple[str, str, int | None] | None:
    family = re.search(r"sa_family=(AF_\w+)", fields)
    if family is None:
        return None
    name = family.group(1)
    port = re.search(r"sin6?_port=htons\((\d+)\)", fields)
    if name == "AF_INET":
        address = re.search(r'inet_addr\("([^"]*)"\)', fields)
    elif name == "AF_INET6":
        address = re.search(r'inet_pton\(AF_INET6, "([^"]*)"', fields)
    elif name == "AF_UNIX":
        address = re.search(r'sun_path=(@?"[^"]*")', fields)
    else:
        return None  # netlink and the like: kernel channels, not network connections
    shown = address.group(1).strip('"') if address else "?"
    return name, shown, int(port.group(1)) if port else None


def _outcome(text: str) -> str | None:
    result = _RESULT.search(text)
    if result is None:
        return None
    if result.group("code") == "0":
        return "connected"
    errno = result.group("errno") or "EUNKNOWN"
    return "in-progress" if errno == "EINPROGRESS" else errno


def parse_ledger(
    text: str, *, origin: float, first_seq: int = 0, component: str | None = None
) -> list[SocketLedgerEntry]:
    """Socket-ledger entries from ``strace -f -Y -ttt -e trace=connect`` output.

    ``origin`` is the epoch time the entries' ``t`` counts from. A call split across lines by
    another process (``<unfinished ...>`` / ``<... connect resumed>``) is joined.
    """
    entries: list[SocketLedgerEntry] = []
    pending: dict[str, tuple[str, str, float, tuple[str, str, int | None]]] = {}
    for line in text.splitlines():
        resumed = _RESUMED.match(line)
        if resumed and resumed.group("pid") in pending:
            pid, comm, when, address = pending.pop(resumed.group("pid"))
            outcome = _outcome("= " + resumed.group("result"))
        else:
            match = _CONNECT.match(line)
            parsed = _address(match.group("addr")) if match else None
            if match is None or parsed is None:
                continue
            pid, comm, when, address = match["pid"], match["comm"] or "?", float(match["t"]), parsed
            if "<unfinished" in match.group("rest"):
                pending[pid] = (pid, comm, when, address)
                continue
            outcome = _outcome(match.group("rest"))
        family, host, port = address
        entries.append(
            SocketLedgerEntry(
                schema_version=1,
                seq=first_seq + len(entries),
                t=max(0.0, when - origin),
                pid=int(pid),
                process=comm[:256],
                family=family,
                address=host[:256],
                port=port,
                outcome=outcome or "EUNKNOWN",
                component=component,
            )
        )
    return entries


class _Watch:
    """Collect a stream's bytes and the time of its last output."""

    def __init__(self, stream: IO[bytes], clock: list[float]) -> None:
        self.data = bytearray()
        self._clock = clock
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := os.read(stream.fileno(), 1 << 16):
                self.data += chunk
                now = time.monotonic()
                self._clock[1] = max(self._clock[1], now - self._clock[0])
                self._clock[0] = now

    def join(self) -> None:
        self._thread.join()


def run_sandboxed(
    command: Sequence[str],
    *,
    observer_socket: Path,
    port: int,
    cwd: Path,
    scratch: Path,
    limits: SandboxLimits,
    env: Mapping[str, str] | None = None,
    component: str | None = None,
    first_seq: int = 0,
) -> SandboxResult:
    """Run ``command`` in a fresh network namespace; the model is at ``127.0.0.1:port`` there.

    Args:
        command: the harness command.
        observer_socket: the observer's Unix socket, the namespace's only way out.
        port: the loopback port inside the namespace that leads to the observer.
        cwd: the command's working directory.
        scratch: a directory for the raw strace output.
        limits: inactivity and total wall limits.
        env: the command's environment (default: this process's).
        component: the component the ledger entries belong to.
        first_seq: the first ledger sequence number.

    Raises:
        SandboxUnavailable: the namespace could not be made.
    """
    check_sandbox()
    raw = scratch / f"strace-{component or 'command'}-{first_seq}.txt"
    inside = [sys.executable, "-m", "audit._sandbox_inside", str(port), str(observer_socket),
              str(raw), "--", *command]  # fmt: skip
    origin_epoch, started = time.time(), time.monotonic()
    process = subprocess.Popen(
        _unshare(inside),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    clock = [started, 0.0]  # last output, longest silence so far
    assert process.stdout is not None and process.stderr is not None  # noqa: S101 - PIPE
    watches = [_Watch(process.stdout, clock), _Watch(process.stderr, clock)]
    timeout: Literal["inactivity", "wall"] | None = None
    while process.poll() is None:
        now = time.monotonic()
        if now - clock[0] > limits.inactivity_s:
            timeout = "inactivity"
        elif now - started > limits.wall_s:
            timeout = "wall"
        if timeout is not None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            break
        time.sleep(_POLL)
    ended = time.monotonic()
    for watch in watches:
        watch.join()
    silence = max(clock[1], ended - clock[0])
    text = raw.read_text("utf-8", "replace") if raw.exists() else ""
    return SandboxResult(
        returncode=None if timeout else process.returncode,
        timeout=timeout,
        wall_s=ended - started,
        max_inactivity_s=silence,
        stdout=bytes(watches[0].data),
        stderr=bytes(watches[1].data),
        ledger=tuple(
            parse_ledger(text, origin=origin_epoch, first_seq=first_seq, component=component)
        ),
    )
