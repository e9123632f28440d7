"""An error while writing names the path the user gave, never the temp file written first: files
written whole (--evidence-out, --attest, --html), pack's tar, unpack's files and a bundle's blobs.
Real writes that really fail: a missing directory, a directory in the way, and a file-size limit
(RLIMIT_FSIZE) on a real subprocess."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from audit import pack
from audit.cli import main
from bundle_schema.layout import BLOB_DIR
from tests.factories import write_small_bundle

AUDIT = str(Path(sys.executable).with_name("audit"))
LIMIT = 1 << 20
"""The file-size limit of the subprocesses: smaller than the large blob."""


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A small bundle with one blob larger than :data:`LIMIT`."""
    root = tmp_path / "bundle"
    write_small_bundle(root, [("raw/large.bin", b"\x07" * (3 * LIMIT))])
    return root


WRITERS = {
    "verify --evidence-out": ["verify", "{bundle}", "--evidence-out", "{target}"],
    "verify --attest": ["verify", "{bundle}", "--attest", "{target}"],
    "show --html": ["show", "{bundle}", "--html", "{target}"],
    "pack -o": ["pack", "{bundle}", "-o", "{target}"],
}


def _argv(template: list[str], bundle: Path, target: Path) -> list[str]:
    return [part.format(bundle=bundle, target=target) for part in template]


def _temporaries(directory: Path) -> list[Path]:
    return [p for p in directory.rglob(".*") if ".tmp-" in p.name or ".link-" in p.name]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_missing_directory_is_named_as_given(
    writer: str, bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "out.file"
    code = main(_argv(WRITERS[writer], bundle, target))
    command = WRITERS[writer][0]
    assert (code, capsys.readouterr().err) == (
        2,
        f"audit {command}: {target}: No such file or directory\n",
    )


@pytest.mark.parametrize("writer", ["verify --evidence-out", "verify --attest", "show --html"])
def test_a_directory_in_the_way_is_named_as_given(
    writer: str, bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "taken"
    (target / "inside").mkdir(parents=True)
    code = main(_argv(WRITERS[writer], bundle, target))
    command = WRITERS[writer][0]
    assert (code, capsys.readouterr().err) == (2, f"audit {command}: {target}: Is a directory\n")
    assert _temporaries(tmp_path) == []


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _run_limited(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, preexec_fn=_limited, check=False)


def test_pack_past_a_file_size_limit_names_the_tar(bundle: Path, tmp_path: Path) -> None:
    target = tmp_path / "bundle.tar"
    done = _run_limited([AUDIT, "pack", str(bundle), "-o", str(target)])
    assert (done.returncode, done.stderr) == (2, f"audit pack: {target}: File too large\n")
    assert list(tmp_path.glob("*.tar")) == []
    assert _temporaries(tmp_path) == []


def test_unpack_past_a_file_size_limit_names_the_file_it_writes(
    bundle: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "bundle.tar"
    pack(bundle, archive)
    large = next(p for p in (bundle / BLOB_DIR).iterdir() if p.stat().st_size > LIMIT)
    out = tmp_path / "unpacked"
    done = _run_limited([AUDIT, "unpack", str(archive), "-o", str(out)])
    expected = f"audit unpack: {out / BLOB_DIR / large.name}: File too large\n"
    assert (done.returncode, done.stderr) == (2, expected)
    assert not out.exists()  # the directory unpack made is removed again


@pytest.mark.parametrize("store", [False, True])
def test_a_blob_past_a_file_size_limit_names_the_blob_directory(
    tmp_path: Path, store: bool
) -> None:
    root, shelf = tmp_path / "run", tmp_path / "store"
    script = textwrap.dedent(f"""
        from pathlib import Path
        from tests.factories import write_small_bundle
        try:
            write_small_bundle(
                Path({str(root)!r}), [("raw/large.bin", bytes({3 * LIMIT}))],
                store={f"Path({str(shelf)!r})" if store else "None"},
            )
        except OSError as exc:
            print(exc.filename, exc.strerror, sep=": ")
        """)
    done = _run_limited([sys.executable, "-c", script])
    assert done.returncode == 0, done.stderr
    named = (shelf if store else root) / BLOB_DIR
    assert done.stdout == f"{named}: File too large\n"
    assert _temporaries(tmp_path) == []
