"""Hostile tests of 2026-12-05 (o): a harness's installed files, pinned (ADR 0042), attacked
both ways.

Attacked: commits 42ed09e and 40bfbd7: the files digest the harness's interpreter computes
(``audit/environments.py`` ``_PROBE``, ``files``), ``[harnesses.X] installed`` in a pin set
(``pins/_model.py`` ``Harness.installed``, ``_installed_of_requirements``, ``other_files``), the
runner's refusal (``audit/run.py`` ``_Harnesses._interpreter``) and the verifier's
``record_disagrees`` (``verify/_consistency/exchanges.py`` ``_environments``). Every
interpreter here is a real venv (``python -m venv --without-pip``) into which pip installs,
offline, wheels built here with ``zipfile``; honest runs are ``audit run`` of the smoke profile
against the reference endpoint with such a venv as SparkBench's interpreter; forgeries are that
bundle, edited and resealed.

Findings (each a test; the fixed ones now pass):

1. HOLE, fixed (``audit/environments.py`` ``_PROBE``, ADR 0042 §3): the files digest was of
   what the installed RECORD says, and pip (23.2.1, the project's) copies each row's hash from
   the wheel's own RECORD without checking it against the file it extracts. A wheel of toy 1.0
   with ``toy/__init__.py`` edited inside the zip and its RECORD left as it was installs the
   edited code (``import toy`` says ``patched``) and had the genuine wheel's files digest. Now
   the files of each distribution a pin set pins are read back (the runner names them to the
   probe) and their rows hold what is on disk: another digest.
2. HOLE, fixed (``_PROBE`` ``files``: ``parts[-1].endswith('.pyc')``): every ``.pyc`` row was
   left out, not only the bytecode an installer compiles (always under ``__pycache__``). A
   wheel that ships a module as sourceless bytecode (``toy/core.pyc``, imported as
   ``toy.core`` where no ``core.py`` is) had its code outside the digest. Now only rows under
   ``__pycache__`` are left out.
3. Was a DECISION, now held by the fix of 1: another distribution's wheel that carries a file
   of the pinned one (``toy/__init__.py``) overwrites it at install, silently, and the pinned
   distribution's RECORD stays as it was; read back, the file is not what that RECORD says.
4. FALSE FINDING, fixed (``pins/_model.py`` ``_installed_of_requirements``): a pin set that
   pinned one distribution twice under two spellings of its name (``toy==1.0`` and
   ``Toy==1.0``, each a TOML key of its own) with two digests loaded, and no interpreter could
   satisfy it. Now refused at load, and so is ``requirements`` naming one distribution twice
   (at two versions: the older form of the same gap).
5. HELD (no false finding): one wheel (console script, ``.data`` purelib, scripts and data
   files, a path with a comma that RECORD quotes) installed in two venvs, one at a deeper path
   with ``--no-compile``, has one files digest, that of ADR 0042's definition read from the
   installed RECORD with the csv module; a RECORD with CRLF line ends and one with LF, the
   same rows otherwise, read as the same rows (the csv module's reading); of a distribution
   found twice on the path (its second copy on a directory a ``.pth`` adds) the first is
   recorded, as imports find it.
6. HELD: an honest run whose pin set spells the distribution otherwise (``requirements =
   ["Toy==1.0"]``, ``installed = {"TOY==1.0" = ...}``) than its metadata (``toy``) is QUALIFIED
   with integrity ok, the record naming ``toy==1.0`` with the pinned digest.
7. HELD: forgeries of that bundle that show the pinned digest ambiguously or elsewhere are
   findings or no qualification: a repeated ``installed`` key (first another digest, then the
   pinned), the pinned digest under another spelling than ``distributions`` lists, the record
   at another version spelling (``toy==1.0.0``), the record of another harness, an old record
   (``installed`` null); coding PARTIAL with another digest is still held (``coding
   (partial)``); coding QUARANTINED, or SparkBench made foreign (its checkout dropped, ADR
   0036), with another digest is never QUALIFIED.
8. HELD: ``audit run --pins FILE`` with a bad ``installed`` (not a table, a digest that is not
   one, a key that is no exact pin, a pin of a distribution nothing requires, a version spelled
   otherwise than its requirement) exits 2 with one line naming the field, no traceback.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import marshal
import subprocess
import sys
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.environments import describe_python
from bundle_schema import canonical_bytes
from bundle_schema.errors import InvalidInput
from bundle_schema.models import Manifest
from pins import PinSetSource, other_files
from tests.data.hostile.kit import Files, read_bundle, reseal
from tests.factories import smoke_run, sparkbench_pins
from tests.paths import PINS
from verify import verify_bundle

TOY = "toy==1.0"
INFO = "toy-1.0.dist-info"
ENTRY = "upstreams/sparkbench/environment.json"
CODING = "components/coding/result.json"
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python"]
_INIT = b"from toy.core import ANSWER\n\n\ndef main():\n    print(ANSWER)\n"
_AT_INSTALL = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json")


# --- wheels and venvs ------------------------------------------------------------------------


def _pyc(source: str) -> bytes:
    """Sourceless bytecode of ``source`` for this interpreter (the venvs' own)."""
    code = compile(source, "core.py", "exec")
    return importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _record(files: dict[str, bytes], info: str) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    for name, data in files.items():
        writer.writerow([name, _hash(data), len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    return text.getvalue()


def _wheel(
    folder: Path,
    files: dict[str, bytes],
    name: str = "toy",
    claimed: dict[str, bytes] | None = None,
) -> Path:
    """A pure-Python wheel of ``name`` 1.0 with ``files`` besides its metadata, whose RECORD
    describes them, or ``claimed`` in their place (a RECORD left as it was)."""
    folder.mkdir(parents=True)
    info = f"{name}-1.0.dist-info"
    meta = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in {**files, **meta}.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", _record({**(claimed or files), **meta}, info))
    return wheel


_GENUINE = {
    "toy/__init__.py": _INIT,
    "toy/core.pyc": _pyc("ANSWER = 'genuine'\n"),
    "toy/a,b.txt": b"a path RECORD quotes\n",
    "toy-1.0.data/purelib/toy/extra.py": b"EXTRA = 1\n",
    "toy-1.0.data/scripts/toy-tool": b"#!python\nimport toy\ntoy.main()\n",
    "toy-1.0.data/data/share/toy/readme.txt": b"data outside site-packages\n",
    f"{INFO}/entry_points.txt": b"[console_scripts]\ntoy = toy:main\n",
}
"""A wheel with every kind of row: a sourceless module, a quoted path, ``.data`` purelib,
scripts and data, a console script."""


def _venv(venv: Path, *wheels: Path, compile_: bool = True) -> Path:
    """A real venv at ``venv`` with ``wheels`` installed in it by pip (offline), in order."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    for wheel in wheels:
        extra = [] if compile_ else ["--no-compile"]
        subprocess.run(
            [*PIP, str(python), "install", "--quiet", "--no-index", *extra, str(wheel)], check=True
        )
    return python


def _answer(python: Path) -> str:
    done = subprocess.run(
        [str(python), "-I", "-c", "import toy; print(toy.ANSWER)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Venvs by what they hold (their pythons), made two at a time."""
    root = tmp_path_factory.mktemp("venvs")
    genuine = _wheel(root / "w-genuine", _GENUINE)
    stale_files = {**_GENUINE, "toy/__init__.py": _INIT + b"ANSWER = 'patched'\n"}
    stale = _wheel(root / "w-stale", stale_files, claimed=_GENUINE)
    pyc = _wheel(root / "w-pyc", {**_GENUINE, "toy/core.pyc": _pyc("ANSWER = 'patched'\n")})
    other = _wheel(
        root / "w-other",
        {"toy/__init__.py": _INIT + b"ANSWER = 'patched'\n", "other/__init__.py": b""},
        name="other",
    )
    made: dict[str, Callable[[], Path]] = {
        "genuine": lambda: _venv(root / "genuine", genuine),
        "elsewhere": lambda: _venv(root / "deeper" / "elsewhere", genuine, compile_=False),
        "stale": lambda: _venv(root / "stale", stale),
        "pyc": lambda: _venv(root / "pyc", pyc),
        "shadowed": lambda: _venv(root / "shadowed", genuine, other),
    }
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(make) for name, make in made.items()}
        pythons = {name: future.result() for name, future in futures.items()}
    answers = {name: _answer(python) for name, python in pythons.items()}
    expected = {"genuine": "genuine", "elsewhere": "genuine", "stale": "patched", "pyc": "patched",
                "shadowed": "patched"}  # fmt: skip
    if answers != expected:  # a premise, not a finding: an error, never an expected failure
        raise RuntimeError(f"the venvs do not run what they should: {answers}")
    return pythons


def _digest(python: Path) -> str:
    """Toy's files digest as the runner asks for it when a pin set pins toy (read back)."""
    return describe_python("sparkbench", str(python), {}, read_back=["toy"]).installed[TOY]


def _site(python: Path) -> Path:
    done = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(done.stdout.strip())


def _files_digest(record: str) -> str:
    """ADR 0042's files digest read from RECORD's text with the csv module as a file is read
    (``newline=''``)."""
    rows = []
    for row in csv.reader(io.StringIO(record, newline="")):
        if not row:
            continue
        path, parts = row[0], row[0].split("/")
        if path.startswith("/") or ".." in parts or "__pycache__" in parts:
            continue
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _AT_INSTALL:
            continue
        rows.append([path, *[*row[1:3], "", ""][:2]])
    data = json.dumps(sorted(rows), separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --- 1-3: a wheel's other files, one digest ---------------------------------------------------


def test_a_patched_wheel_with_its_record_left_as_it_was_has_another_digest(
    venvs: dict[str, Path],
) -> None:
    assert _digest(venvs["stale"]) != _digest(venvs["genuine"])


def test_a_wheel_whose_sourceless_module_differs_has_another_digest(
    venvs: dict[str, Path],
) -> None:
    assert _digest(venvs["pyc"]) != _digest(venvs["genuine"])


def test_a_pinned_distribution_overwritten_by_another_has_another_digest(
    venvs: dict[str, Path],
) -> None:
    assert _digest(venvs["shadowed"]) != _digest(venvs["genuine"])


# --- 4: the pin-set loader ----------------------------------------------------------------------


def test_one_distribution_pinned_twice_with_two_digests_is_refused_at_load() -> None:
    one, two = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    pins = {TOY: one, "Toy==1.0": two}
    for recorded in (one, two):  # the premise: whatever it installed, it is refused
        assert other_files(pins, {TOY: recorded}, "nothing recorded")
    try:
        sparkbench_pins(requirements=[TOY], installed=pins)
    except InvalidInput as exc:
        refused = str(exc)
    else:
        refused = ""
    assert "oy==1.0" in refused, "loaded"


# --- 5: one wheel, one digest ---------------------------------------------------------------------


def test_one_wheel_installed_twice_has_one_digest_as_adr_0042_defines_it(
    venvs: dict[str, Path],
) -> None:
    digests = {name: _digest(venvs[name]) for name in ("genuine", "elsewhere")}
    records = {name: (_site(venvs[name]) / INFO / "RECORD").read_text("utf-8") for name in digests}
    assert records["genuine"] != records["elsewhere"]  # bytecode, the script, direct_url.json
    assert '"toy/a,b.txt"' in records["genuine"]
    assert "toy/extra.py," in records["genuine"]
    assert digests["genuine"] == digests["elsewhere"] == _files_digest(records["genuine"])


def test_record_line_ends_and_a_second_copy_on_the_path_do_not_change_the_digest(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = _site(python)
    rows = '"a/x,y.py",sha256=AAA,3\na/__init__.py,sha256=BBB,4\n{info}/METADATA,sha256=C,9\n'
    second = tmp_path / "second"
    for name, folder, ends in (("crlf", site, "\r\n"), ("lf", site, "\n"), ("crlf", second, "\n")):
        info = folder / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        text = rows.format(info=f"{name}-1.0.dist-info").replace("\n", ends)
        if folder == second:
            text += "a/other.py,sha256=DDD,5\n"
        (info / "RECORD").write_bytes(text.encode())
    (site / "second.pth").write_text(f"{second}\n")
    env = describe_python("x", str(python), {})
    lf = rows.format(info="lf-1.0.dist-info")
    assert env.installed["lf==1.0"] == _files_digest(lf)
    # the first on the path (site-packages), not the copy the .pth adds after it
    assert env.installed["crlf==1.0"] == _files_digest(rows.format(info="crlf-1.0.dist-info"))
    assert env.distributions.count("crlf==1.0") == 1


# --- 6, 7: an honest run, and its forgeries ----------------------------------------------------


@pytest.fixture(scope="module")
def honest(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path], venvs: dict[str, Path]
) -> tuple[Path, PinSetSource, str]:
    """An honest run whose pin set spells toy otherwise than its metadata; its pinned digest."""
    digest = _digest(venvs["genuine"])
    pins = sparkbench_pins(requirements=["Toy==1.0"], installed={"TOY==1.0": digest})
    out = tmp_path_factory.mktemp("honest") / "bundle"
    return (
        smoke_run(out, mirrors, pins, harness_python={"sparkbench": venvs["genuine"]}),
        pins,
        digest,
    )


def test_an_honest_run_pinned_under_another_spelling_qualifies(
    honest: tuple[Path, PinSetSource, str],
) -> None:
    bundle, pins, digest = honest
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok"), verdict.reasons
    _, files = read_bundle(bundle)
    recorded = json.loads(files[ENTRY][0])
    assert recorded["installed"][TOY] == digest
    assert TOY in recorded["distributions"]


def test_the_runner_reads_a_pinned_distribution_back_and_refuses_a_patched_one(
    honest: tuple[Path, PinSetSource, str],
    tmp_path: Path,
    mirrors: dict[str, Path],
    venvs: dict[str, Path],
) -> None:
    """The wheel patched under its own RECORD (1), as SparkBench's interpreter of a run whose
    pin set pins toy: the runner reads toy's files back and refuses the harness."""
    _, pins, digest = honest
    bundle = smoke_run(tmp_path / "b", mirrors, pins, harness_python={"sparkbench": venvs["stale"]})
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR"
    assert any(
        "installed TOY==1.0 as " in r and r.endswith(f", not the pinned {digest}")
        for r in verdict.reasons
    ), verdict.reasons


OTHER = "sha256:" + "1" * 64


def _record_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Files, str], None]:
    def edit(files: Files, pinned: str) -> None:
        recorded = json.loads(files[ENTRY][0])
        change(recorded)
        files[ENTRY] = (canonical_bytes(recorded), files[ENTRY][1])

    return edit


def _repeated_key(files: Files, pinned: str) -> None:
    """``installed`` with the key twice: another digest, then the pinned one."""
    text = files[ENTRY][0].decode()
    shown = f'"{TOY}":"{pinned}"'
    assert shown in text
    files[ENTRY] = (text.replace(shown, f'"{TOY}":"{OTHER}",{shown}').encode(), files[ENTRY][1])


def _respelled(recorded: dict[str, Any]) -> None:
    recorded["installed"] = {"Toy==1.0": recorded["installed"].pop(TOY)}


def _versioned(recorded: dict[str, Any]) -> None:
    recorded["distributions"] = ["toy==1.0.0" if d == TOY else d for d in recorded["distributions"]]
    recorded["installed"] = {"toy==1.0.0": recorded["installed"].pop(TOY)}


def _of_another(recorded: dict[str, Any]) -> None:
    recorded["upstream"] = "hermesbench"


def _old(recorded: dict[str, Any]) -> None:
    recorded["installed"] = None


@pytest.mark.parametrize(
    ("edit", "shown"),
    [
        (_repeated_key, f"no readable environment record shows ({ENTRY}: duplicate key '{TOY}')"),
        (_record_edit(_respelled), "installed names 'Toy==1.0', not among the distributions"),
        (_record_edit(_versioned), "lacks the pinned Toy==1.0"),
        (_record_edit(_of_another), "the environment of 'hermesbench'"),
        (_record_edit(_old), "installed TOY==1.0 as nothing recorded"),
    ],
    ids=["repeated-key", "another-spelling", "another-version", "another-harness", "old-record"],
)
def test_a_record_showing_the_pin_ambiguously_or_elsewhere_is_a_finding(
    honest: tuple[Path, PinSetSource, str],
    tmp_path: Path,
    edit: Callable[[Files, str], None],
    shown: str,
) -> None:
    bundle, pins, digest = honest
    manifest, files = read_bundle(bundle)
    edit(files, digest)
    reseal(tmp_path / "forged", manifest, files, {})
    verdict = verify_bundle(tmp_path / "forged", pins=pins).verdict
    assert verdict.outcome != "QUALIFIED"
    messages = [f.message for f in verdict.integrity.findings if f.entry == ENTRY]
    assert any(shown in m for m in messages), messages
    assert all(f.code == "record_disagrees" for f in verdict.integrity.findings if f.entry == ENTRY)


def _status(status: str) -> Callable[[Manifest, Files], dict[str, Any]]:
    def edit(manifest: Manifest, files: Files) -> dict[str, Any]:
        result = json.loads(files[CODING][0])
        result["status"] = status
        files[CODING] = (canonical_bytes(result), files[CODING][1])
        return {}

    return edit


def _foreign(manifest: Manifest, files: Files) -> dict[str, Any]:
    """SparkBench's checkout dropped (its environment record left): a foreign harness."""
    for name in [n for n in files if n.startswith("upstreams/sparkbench/") and n != ENTRY]:
        del files[name]
    return {"upstreams": tuple(u for u in manifest.upstreams if u.name != "sparkbench")}


@pytest.mark.parametrize(
    ("edit", "held"),
    [(_status("PARTIAL"), True), (_status("QUARANTINED"), False), (_foreign, False)],
    ids=["partial", "quarantined", "foreign"],
)
def test_another_digest_beside_a_status_or_harness_the_check_skips_never_qualifies(
    honest: tuple[Path, PinSetSource, str],
    tmp_path: Path,
    edit: Callable[[Manifest, Files], dict[str, Any]],
    held: bool,
) -> None:
    bundle, pins, _ = honest
    manifest, files = read_bundle(bundle)
    _record_edit(lambda r: r.update(installed={TOY: OTHER}))(files, "")
    fields = edit(manifest, files)
    reseal(tmp_path / "forged", manifest, files, fields)
    verdict = verify_bundle(tmp_path / "forged", pins=pins).verdict
    assert verdict.outcome != "QUALIFIED", verdict.reasons
    messages = [f.message for f in verdict.integrity.findings if f.entry == ENTRY]
    if held:
        assert any(
            "coding (partial) completed by sparkbench, whose interpreter installed TOY==1.0 as "
            f"{OTHER}" in m
            for m in messages
        ), messages
    else:
        assert verdict.outcome == "INFRA_ERROR", verdict.reasons


# --- 8: the CLI with a bad pin set -------------------------------------------------------------


_D = "sha256:" + "a" * 64
_BAD = {
    "not-a-table": (
        'installed = "x"',
        "harnesses.sparkbench.installed: Input should be a valid dictionary",
    ),
    "a-number": (
        'installed = {"toy==1.0" = 5}',
        "harnesses.sparkbench.installed.toy==1.0: Input should be a valid string",
    ),
    "upper-case": (
        f'installed = {{"toy==1.0" = "SHA256:{"A" * 64}"}}',
        "harnesses.sparkbench.installed.toy==1.0: String should match pattern",
    ),
    "no-pin": (
        f'installed = {{"toy>=1" = "{_D}"}}',
        "harnesses.sparkbench.installed.toy>=1: String should match pattern",
    ),
    "not-required": (
        f'installed = {{"other==1.0" = "{_D}"}}',
        "installed pins other==1.0, which is not among its requirements (toy==1.0)",
    ),
    "version-spelling": (
        f'installed = {{"toy==1.0.0" = "{_D}"}}',
        "installed pins toy==1.0.0, which is not among its requirements (toy==1.0)",
    ),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_a_bad_installed_pin_exits_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, shown = _BAD[case]
    text = (PINS / "gx10-reference-v5.toml").read_text("utf-8")
    block = "[harnesses.sparkbench]\n"
    assert text.count(block) == 1
    pin_file = tmp_path / "pins.toml"
    pin_file.write_text(text.replace(block, f'{block}requirements = ["toy==1.0"]\n{line}\n'))
    out = tmp_path / "out"
    digest = "sha256:" + "0" * 64
    argv = ["run", "--endpoint", "http://127.0.0.1:9", "--pins", str(pin_file),
            "--profile", "smoke", "--out", str(out), "--model-digest", digest]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("audit run: "), err
    assert "Traceback" not in err and shown in err, err
    assert not out.exists()
