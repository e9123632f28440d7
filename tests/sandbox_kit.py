"""What the sandbox's attack tests share: a harness script run for real in ``run_sandboxed``, and
what its ledger says of the address it tries outside."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from audit.sandbox import SandboxLimits, SandboxResult, run_sandboxed
from verify._facts import off_sandbox

__all__ = ["CONNECT", "LIMITS", "OUTSIDE", "PORT", "cc", "compiled", "harness", "outside",
           "recorded", "said", "sandboxed"]  # fmt: skip

PORT = 18123
LIMITS = SandboxLimits(inactivity_s=15, wall_s=30)
OUTSIDE = ("93.184.216.34", 443)
"""Only ever tried from inside the sandbox's network namespace (no route: ENETUNREACH)."""

CONNECT = "s = socket.socket(); print('connect', s.connect_ex(('93.184.216.34', 443)), flush=True)"


def sandboxed(command: list[str], tmp_path: Path, **kwargs: Any) -> SandboxResult:
    """``command`` in the sandbox, ``tmp_path`` its working directory, nothing serving."""
    options: dict[str, Any] = {"serve": None, "port": PORT, "limits": LIMITS, "cwd": tmp_path,
                               "component": "coding", **kwargs}  # fmt: skip
    return run_sandboxed(command, **options)


def harness(tmp_path: Path, body: str, *args: str, **kwargs: Any) -> SandboxResult:
    """A Python harness of ``body`` (ctypes, os, signal, socket, subprocess, sys and time
    imported) in the sandbox."""
    script = tmp_path / "harness.py"
    script.write_text("import ctypes, os, signal, socket, subprocess, sys, time\n"
                      + textwrap.dedent(body))  # fmt: skip
    return sandboxed([sys.executable, str(script), *args], tmp_path, **kwargs)


def said(result: SandboxResult) -> list[str]:
    """The lines the command printed, once it exited 0 (else the test fails on its stderr)."""
    assert result.returncode == 0, result.stderr.decode()[-800:]
    return result.stdout.decode().splitlines()


def outside(result: SandboxResult) -> list[tuple[str, str, int | None, str]]:
    """The ledger's attempts outside the sandbox (the verifier's ``off_sandbox``)."""
    return [(e.family, e.address, e.port, e.outcome) for e in result.ledger if off_sandbox(e)]


def recorded(result: SandboxResult) -> bool:
    """Whether the ledger holds an attempt to :data:`OUTSIDE`."""
    return any(e.address == OUTSIDE[0] and e.port == OUTSIDE[1] for e in result.ledger)


def cc() -> str:
    """A C compiler (the test skips without one)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    return compiler


def compiled(where: Path, name: str, source: str, *flags: str) -> Path:
    """C ``source`` compiled into ``where/name`` with ``flags`` (the test skips without a
    compiler); the program's path."""
    (where / f"{name}.c").write_text(source)
    subprocess.run([cc(), *flags, "-o", str(where / name), str(where / f"{name}.c")],
                   check=True, capture_output=True)  # fmt: skip
    return where / name


LISTENING: list[socket.socket] = []
"""The host's sockets :func:`listening` made, closed after each test (``tests/hostile``)."""


def listening(path: str | Path) -> socket.socket:
    """A host's Unix socket listening at ``path``, never accepting: :func:`nobody_came` checks
    that no harness reached it."""
    server = socket.socket(socket.AF_UNIX)
    LISTENING.append(server)
    server.bind(str(path))
    server.listen(4)
    server.setblocking(False)
    return server


def nobody_came(*servers: socket.socket) -> None:
    """Fails the test naming each of ``servers`` that a connection reached."""
    came = []
    for server in servers:
        try:
            connection, _ = server.accept()
        except BlockingIOError:
            continue
        connection.close()
        came.append(server.getsockname())
    assert not came, f"a harness reached the host's {came}"


NON_ROOT_RUNNER = """
import json, os, sys
from pathlib import Path
from audit.sandbox import SandboxLimits, run_sandboxed
from verify._facts import off_sandbox
work = Path(sys.argv[1])
result = run_sandboxed(
    [sys.executable, str(work / "harness.py"), *sys.argv[2:]], serve=None, port=18080,
    cwd=work, limits=SandboxLimits(inactivity_s=20, wall_s=40),
)
print(json.dumps({
    "returncode": result.returncode, "stdout": result.stdout.decode(),
    "stderr": result.stderr.decode()[-2000:],
    "counted": [e.address for e in result.ledger if off_sandbox(e)],
    "ledger": [(e.address, e.outcome) for e in result.ledger],
}))
"""


_READABLE_VIEW = """
import os, subprocess, sys
view, repo, *command = sys.argv[1:]
def mount(*args):  # the paths as words of their own, never through a shell
    return subprocess.run(["mount", *args], check=False).returncode == 0
# a tmpfs any uid may enter, holding the checkout's entries, each bound in place (the private
# mount namespace this runs in keeps it from the host's); then the command, from there
if not mount("-t", "tmpfs", "-o", "mode=0755,size=1m", "evidence-audit-view", view):
    sys.exit("Skipped: the checkout's readable view cannot be mounted")
for name in os.listdir(repo):
    source, place = os.path.join(repo, name), os.path.join(view, name)
    if os.path.islink(source):
        os.symlink(os.readlink(source), place)
        continue
    if os.path.isdir(source):
        os.mkdir(place)
    else:
        open(place, "w").close()
    if not mount("--bind", source, place):
        sys.exit(f"Skipped: {name} cannot be bound into the checkout's readable view")
os.chdir(view)
os.execvp(command[0], command)
"""


def _as_uid_65534(repo: Path, site: list[str], python: Path) -> list[str]:
    """The command prefix that runs ``python`` as uid 65534 with the checkout and its venv's
    site packages importable."""
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env",
            f"PYTHONPATH={os.pathsep.join([str(repo), *site])}", str(python)]  # fmt: skip


def as_nobody(work: Path, *args: str) -> dict[str, Any]:
    """``work/harness.py ARGS...`` in the sandbox of a runner of uid 65534 (``setpriv``; its
    sandbox is a user namespace of its own, where the host's mounts are locked): what it
    said (``returncode``, ``stdout``, ``stderr``, ``counted``, ``ledger``). Skips where
    ``setpriv`` or a system Python of this version is missing. Where uid 65534 cannot read the
    checkout (a fresh clone in a ``mktemp -d``, or under ``/root``: the sandbox runs its inside
    part from the checkout, in a user namespace where no capability reads another uid's
    private files), the runner runs from a view of it that it can read: a private mount
    namespace in which a tmpfs of mode 0755 holds the checkout's entries, bound in place
    (nothing of it reaches the host's mounts). ``work`` must be uid 65534's to write."""
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if shutil.which("setpriv") is None or not system.exists():
        pytest.skip("setpriv or a system Python of this version (uid 65534 can run) is missing")
    repo = Path(__file__).resolve().parents[1]
    site = [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)]
    nobody = _as_uid_65534(repo, site, system)
    probe = [*nobody, "-c", "import audit.sandbox, verify._facts"]
    with contextlib.ExitStack() as stack:
        cwd = repo
        if subprocess.run(probe, capture_output=True, cwd="/", check=False).returncode != 0:
            view = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ea-view-")))
            view.chmod(0o755)
            inside = [Path(p) for p in site if Path(p).is_relative_to(repo)]
            if len(inside) != len(site):
                pytest.skip("uid 65534 cannot read the venv's site packages (outside the checkout)")
            seen = [str(view / p.relative_to(repo)) for p in inside]
            nobody = ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                      "-c", _READABLE_VIEW, str(view), str(repo),
                      *_as_uid_65534(view, seen, system)]  # fmt: skip
            cwd = Path("/")  # the view is entered once it is mounted
        done = subprocess.run([*nobody, "-c", NON_ROOT_RUNNER, str(work), *args],
                              capture_output=True, cwd=cwd, check=False, timeout=50)  # fmt: skip
    if done.returncode != 0 and done.stderr.startswith(b"Skipped: "):
        pytest.skip(done.stderr.decode(errors="replace").strip().removeprefix("Skipped: "))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout.decode().splitlines()[-1])
    return answer


AFTER_THE_HOST = """
def after_the_host(work):
    open(os.path.join(work, 'ready'), 'w').close()
    for _ in range(200):
        if os.path.exists(os.path.join(work, 'made')):
            break
        time.sleep(0.05)
"""
"""A harness's prelude (``os`` and ``time`` imported): ``after_the_host(WORK)`` writes
``WORK/ready`` and waits (10 s at most) for the host's ``WORK/made``: what the host does
while the harness runs."""
