"""A second attack on ADR 0047 point 11 (2026-12-06), at the ``audit run`` level: a ``/tmp`` of
the harness's own, and the host's ``/tmp`` shown only where the runner says.

The adversary is a hostile harness INTERPRETER (``--harness-python``): a program that runs the
real interpreter but answers the runner's probe (``audit.environments.describe_python``) with
places of its choosing in ``paths``, which the runner shows to the harness read-only
(``audit.sandbox._view``). It runs outside the sandbox as the runner by design (the operator
names it), so it is not asked to read what it could read itself: only what its ANSWER makes the
runner and the sandbox do. Beside it, a hostile harness (``HOSTILE_PRE``, the SparkBench wrapper
of ``test_attacks_2026_12_05_runner.py``) reads and writes what its interpreter had shown, and
an honest operator's ``--env``. Every run is a real ``audit run`` of the smoke profile against
the reference endpoint; what is planted is under ``tmp_path`` (one file in the host's ``/tmp``,
removed after). Each test asserts the safe behaviour; a hole is a strict xfail.

Holes (each failed on the code as found; all four closed the same day, each test failing
before its fix: ``_paths`` refuses a place with a NUL or a lone surrogate, ``audit.sandbox``
keeps only existing, resolvable places of every source (``_existing``) and never one in the
harness's own ``tmp``, refuses a view over ``MAX_VIEW`` bytes and turns a sandbox that cannot
start (``E2BIG``, a NUL) into ``SandboxUnavailable``, which fails the harness, not the run, with
the view built before the pipe and socket):

1. An answer whose ``paths`` holds a string no path can be (a NUL, ``"\\u0000"`` in its JSON, or
   a lone surrogate, ``"\\ud800"``) ends the WHOLE run, exit 2 and no bundle ("the run failed
   before its bundle was written: ValueError: embedded null byte"): ``audit.environments._paths``
   takes any string, ``audit.sandbox._view`` calls ``os.path.realpath`` on it, which raises
   ``ValueError``/``UnicodeEncodeError``, and ``_Harnesses._execute`` (audit/run.py) catches
   only ``SandboxUnavailable`` around ``run_sandboxed``, so ``_gather_and_write``'s ``except
   Exception`` stops the run. Every other harness's results go unsealed. ``run_sandboxed`` also
   leaks its socket pair and trace pipe (``_view`` runs after both are made, outside the
   ``with``). Fix: ``_paths`` refuses a place with a NUL or that ``os.fsencode`` refuses ("not a
   Python interpreter's answer": the harness fails), and ``_execute`` fails the harness on any
   ``OSError``/``ValueError`` out of ``run_sandboxed``; build the view before the pipe and socket.
2. An answer inside the probe's own bounds (``MAX_PATHS`` 4,096 places of ``MAX_PATH_CHARS``
   4,096 characters: 40 places of 4,000 under ``/tmp`` suffice) ends the whole run the same way
   ("unshare: Argument list too long"): every place under ``/tmp`` goes into the VIEW JSON, one
   argument of the sandbox's command line (``audit/sandbox.py`` ``run_sandboxed``), and one
   argument may hold 128 KiB (``MAX_ARG_STRLEN``); ``Popen`` raises ``OSError(E2BIG)``, uncaught
   as in 1. Non-existent places are passed on too (see 3). Fix: pass the view through a pipe or
   a file descriptor (the trace pipe's way), keep only existing places, and fail the harness, not
   the run, as in 1.
3. An honest operator's ``--env PYTHONPATH=/tmp/.../missing`` (an absolute entry that does not
   exist, which Python skips) fails the harness: "exited 126: sandbox: cannot make the command's
   view of the files: [Errno 2] No such file or directory". ``_Harnesses._interpreter``
   (audit/run.py) adds every absolute ``PYTHONPATH`` entry to ``shown`` unchecked (the
   docstring of ``run_sandboxed`` says ``shown`` holds existing paths, and
   ``audit.sandbox._python_path`` does keep only those), and the init binds each over itself.
   A probe answer with a missing place under ``/tmp`` does the same. Fix: keep only existing
   places in ``_interpreter`` (or in ``audit.sandbox._view``, for every source of ``shown``).
4. An answer naming the harness's own ``tmp`` (``scratch/tmp/<upstream>``) binds it read-only
   over itself: ``audit.sandbox._view`` leaves the ``tmp`` out of the places a shown path must
   not be in (``own``: the writable and hidden ones only), against point 11's "never a path in
   a place it is given". The init's ``/tmp`` is then that read-only bind, it cannot make the way
   back to the harness's places and exits 126 ("Read-only file system: '/tmp/pytest-of-root'").
   Only the harness whose interpreter answered is hurt. Fix: ``own`` includes ``tmp``.

Held: an answer naming another harness's outputs, home and ``tmp`` (each holding a file its
interpreter planted), by their paths, through ``..`` and through a link of the host's under
``/tmp`` to one of them, with ``/tmp``, ``/tmp/.``, ``//tmp``, ``/var/tmp``, ``/tmp/../tmp``,
``/tmp/..``, relative places, the directory holding the scratch and the bundle, and ``--out``
itself: the other harness's places stay covered (empty), the host's ``/tmp`` stays unseen, the
bundle's directory, its parent and the scratch directory are read-only to the harness (shown:
the interpreter named them), its own ``/tmp`` stays writable, nothing it wrote is on the host,
and the run completes with a bundle that verifies.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import serve
from audit.run import RunRequest, run_qualification
from bundle_schema.errors import InvalidInput
from tests.hostile.test_attacks_2026_12_05_runner import (
    _coding,
    _pins,
    _run,
    scratch_here,  # noqa: F401 - autouse
)
from verify import parse_manifest, verify_bundle
from verify._source import open_source

FAKE = """#!{real}
import glob, json, os, subprocess, sys
REAL = {real!r}
if sys.argv[1:3] == ['-I', '-c'] and 'READ_BACK' in sys.argv[3]:  # the runner's probe
    done = subprocess.run([REAL, *sys.argv[1:]], capture_output=True, check=True)
    answer = json.loads(done.stdout)
    base = {base!r}
    found = glob.glob(os.path.join(base, 'tmp', 'audit-run-*'))
    scratch = found[0] if found else '/nonexistent'
{plant}
    answer['paths'] += {paths}
    sys.stdout.write(json.dumps(answer))
else:  # the harness's own run: the real interpreter
    os.execv(REAL, [REAL, *sys.argv[1:]])
"""
"""A harness interpreter that answers the probe with ``paths`` (a Python expression; ``base``
is the test's directory, ``scratch`` the run's scratch directory, made by then), after running
``plant`` (as the runner, outside the sandbox)."""


def _fake(tmp_path: Path, paths: str, plant: str = "") -> dict[str, Any]:
    """``--harness-python sparkbench=`` a :data:`FAKE` interpreter."""
    where = tmp_path / "fake"
    where.mkdir(exist_ok=True)
    python = where / "python"
    body = "\n".join("    " + line for line in plant.splitlines())
    python.write_text(FAKE.format(real=sys.executable, base=str(tmp_path), paths=paths,
                                  plant=body))  # fmt: skip
    python.chmod(0o755)
    return {"harness_python": {"sparkbench": python}}


def _stdout(bundle: Path) -> str:
    manifest = parse_manifest(open_source(bundle).manifest_bytes()).model
    digest = manifest.evidence["logs/sparkbench.stdout.txt"].digest.split(":")[1]
    return (bundle / "blobs" / "sha256" / digest).read_text()


def _ended(tmp_path: Path, mirrors: dict[str, Path], **changes: Any) -> tuple[Path, Any]:
    """:func:`_run`, asserting that the run was not ended by what one harness's interpreter
    answered (what a ``run_sandboxed`` that raised left behind, its socket pair, collected
    quietly first)."""
    try:
        return _run(tmp_path, mirrors, **changes)
    except InvalidInput as exc:
        ended = str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise AssertionError(f"the whole run ended: {ended}")


# --- holes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("place", ["/tmp/a\x00b", "/tmp/\ud800"], ids=["nul", "surrogate"])
def test_an_answer_no_path_can_be_fails_its_harness_not_the_run(
    place: str, tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, pins = _ended(tmp_path, mirrors, **_fake(tmp_path, f"[{place!r}]"))
    result = _coding(out)
    assert result["status"] == "FAILED"
    assert "sparkbench" in result["reason"]
    assert verify_bundle(out, pins=pins).verdict.integrity.status == "ok"


LONG = "[os.path.join(base, str(i), *['x' * 200] * 19) for i in range(40)]"
"""40 places of about 4,000 characters under ``/tmp`` (none exists): within the probe's bounds."""


def test_a_long_answer_within_the_probe_s_bounds_fails_its_harness_not_the_run(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    out, pins = _ended(tmp_path, mirrors, **_fake(tmp_path, LONG))
    result = _coding(out)
    assert result["status"] in {"FAILED", "COMPLETED"}
    assert verify_bundle(out, pins=pins).verdict.integrity.status == "ok"


def test_an_honest_pythonpath_entry_that_does_not_exist_breaks_nothing(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    pins = _pins()
    out = tmp_path / "bundle"
    missing = tmp_path / "src-not-built-yet"  # Python skips it
    with serve() as endpoint:
        run_qualification(
            RunRequest(
                endpoint=endpoint.url, pins=pins, profile="smoke", out=out,
                model_digest=DEMO_DIGEST, mirrors=mirrors,
                harness_env={"PYTHONPATH": str(missing)},
            )
        )  # fmt: skip
    result = _coding(out)
    assert result["status"] == "COMPLETED", result["reason"]


def test_an_answer_naming_the_harness_s_own_tmp_leaves_it_writable(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    fake = _fake(tmp_path, "[os.path.join(scratch, 'tmp', 'sparkbench')]")
    pre = "open('/tmp/mine', 'w').write('x'); print('TMP writable', flush=True)"
    out, _ = _run(tmp_path, mirrors, pre=pre, **fake)
    result = _coding(out)
    assert result["status"] == "COMPLETED", result["reason"]
    assert "TMP writable" in _stdout(out)


# --- held --------------------------------------------------------------------------------------

PLANT = """
for kind in ('outputs', 'home', 'tmp'):
    with open(os.path.join(scratch, kind, 'benchlocal', 'secret'), 'w') as f:
        f.write("another harness's")
if not os.path.lexists(os.path.join(base, 'lnk')):
    os.symlink(os.path.join(scratch, 'outputs', 'benchlocal'), os.path.join(base, 'lnk'))
"""
"""Another harness's places with something in them, and a link of the host's under ``/tmp`` to
one of them (made by the interpreter at the probe: the runner's scratch directory exists)."""
NAMED = """[
    *(os.path.join(scratch, kind, 'benchlocal') for kind in ('outputs', 'home', 'tmp')),
    os.path.join(scratch, 'outputs', 'sparkbench', '..', 'benchlocal', 'secret'),
    os.path.join(base, 'lnk'), os.path.join(base, 'lnk', 'secret'),
    base, os.path.join(base, 'bundle'), scratch,
    '/tmp', '/tmp/.', '//tmp', '/var/tmp', '/tmp/../tmp', '/tmp/..', '.', 'tmp',
]"""
SNOOP = """
import json
scratch = os.path.dirname(os.path.dirname(out))
base = os.path.dirname(os.path.dirname(scratch))
seen = {{}}
for kind in ('outputs', 'home', 'tmp'):
    place = os.path.join(scratch, kind, 'benchlocal')
    seen[kind] = os.listdir(place) if os.path.isdir(place) else None
link = os.path.join(base, 'lnk')
seen['link'] = os.listdir(link) if os.path.isdir(link) else None
seen['host'] = os.path.exists({planted!r})
def wrote(place):
    try:
        with open(os.path.join(place, 'by-harness'), 'w') as f:
            f.write('the harness')
        return 'wrote'
    except OSError as exc:
        return exc.strerror
seen['writes'] = {{name: wrote(place) for name, place in (
    ('bundle', os.path.join(base, 'bundle')), ('base', base), ('scratch', scratch),
    ('other', os.path.join(scratch, 'outputs', 'benchlocal')), ('own tmp', '/tmp'))}}
print('SEEN', json.dumps(seen), flush=True)
"""


def test_held_an_answer_naming_others_places_tmp_and_the_bundle_uncovers_nothing(
    tmp_path: Path, mirrors: dict[str, Path], sandbox: None
) -> None:
    planted = Path("/tmp") / f"host-{os.getpid()}-{os.urandom(4).hex()}"  # the host's
    planted.write_text("the host's")
    try:
        out, pins = _run(tmp_path, mirrors, pre=SNOOP.format(planted=str(planted)),
                         **_fake(tmp_path, NAMED, PLANT))  # fmt: skip
    finally:
        planted.unlink()
    stdout = _stdout(out)
    seen = json.loads(next(line for line in stdout.splitlines() if line.startswith("SEEN "))[5:])
    assert seen == {
        "outputs": [], "home": [], "tmp": [], "link": [],  # covered, however named
        "host": False,
        "writes": {
            "bundle": "Read-only file system",  # shown (the interpreter named it): read-only
            "base": "Read-only file system",
            "scratch": "Read-only file system",
            "other": "wrote",  # into the sandbox's own cover, gone with it
            "own tmp": "wrote",
        },
    }, seen  # fmt: skip
    assert not list(tmp_path.rglob("by-harness"))  # nothing reached the host
    assert _coding(out)["status"] == "COMPLETED"
    assert verify_bundle(out, pins=pins).verdict.integrity.status == "ok"
