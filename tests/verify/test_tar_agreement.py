"""A tar means one thing: what the verifier accepts, GNU tar extracts to exactly the files the
verifier judged; what readers would read two ways, the verifier refuses.

Every tar case of the hostile corpus (tests/data/hostile/generate.py) that the verifier does not
refuse, the corpus's tar forms that readers read alike (``AGREEING``), and tars written by GNU tar
and by tarfile in each of their formats, are extracted with the system's GNU tar into a fresh
directory; the regular files there, and their bytes, must be those that
:func:`verify._source.open_source` lists and reads.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from audit.cli import main
from tests.data.hostile.generate import AGREEING, ARCHIVE, Case, Context, generate
from tests.factories import write_small_bundle
from verify import HostileArchive
from verify._source import ALLOWED_DIRS, open_source

GNU_TAR = "/usr/bin/tar"
CAP = 1 << 26


def _is_gnu_tar() -> bool:
    try:
        result = subprocess.run([GNU_TAR, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return "GNU tar" in result.stdout


pytestmark = pytest.mark.skipif(not _is_gnu_tar(), reason=f"{GNU_TAR} is not GNU tar")

ACCEPTED = [
    c for c in ARCHIVE + AGREEING if c.exit != 2 and not c.screened and c.command == "verify"
]
REFUSED = [
    "sparse member", "old GNU sparse member with a map", "pax GNU sparse 0.0",
    "pax GNU sparse 0.1", "pax GNU sparse 1.0", "pax GNU sparse name alone",
    "pax extended attribute", "pax header charset", "pax link path on a file",
    "pax key given twice", "empty pax path", "pax size not a plain decimal",
    "malformed pax record", "global pax header", "pax header over its cap",
    "pax header describing no member", "ustar prefix on a GNU header",
    "ustar prefix on a v7 header", "ustar prefix with another version", "v7 header",
    "ustar prefix with a GNU long name", "NUL inside the name field",
    "NUL inside the prefix field", "NUL inside a GNU long name", "two GNU long names",
    "pax header and a GNU long name", "GNU long link name", "GNU long name over its cap",
    "newline in a member name", "size field with an underscore",
    "size field with a leading NUL", "size field of blanks",
    "bad checksum after the first member", "contiguous file", "directory with data",
    "member after the end-of-archive marker", "member after a lone zero block",
    "a byte after the end-of-archive marker", "no end-of-archive marker",
    "one zero block at the end", "padding past its cap",
]  # fmt: skip
DISAGREEING = [
    "ustar prefix on a GNU header", "ustar prefix on a v7 header", "two GNU long names",
    "bad checksum after the first member", "size field with an underscore",
]  # fmt: skip
"""Cases that Python's tarfile and GNU tar read as different sets of files."""
BY_NAME = {case.name: case for case in ARCHIVE}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tar-agreement")
    cases = ACCEPTED + [BY_NAME[name] for name in REFUSED]
    built = generate(root / "cases", Context(root / "work", {}), cases)
    return {name: Path(entry["path"]) for name, entry in built.items()}


def _extract(archive: Path, into: Path) -> subprocess.CompletedProcess[str]:
    """GNU tar into a fresh directory, keeping nothing of the archive's owners or modes and
    overwriting nothing (the directory is empty: there is no link to follow out of it)."""
    into.mkdir()
    return subprocess.run(
        [GNU_TAR, "--extract", f"--file={archive}", f"--directory={into}", "--no-same-owner",
         "--no-same-permissions", "--keep-old-files"],
        capture_output=True, text=True, check=False, env=os.environ | {"LC_ALL": "C"},
    )  # fmt: skip


def _extracted(root: Path) -> dict[str, bytes]:
    """Every regular file under root, by relative path; anything else fails the test."""
    files = {}
    for directory, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                assert relative in ALLOWED_DIRS, f"GNU tar made a directory {relative!r}"
            else:
                assert stat.S_ISREG(mode), f"GNU tar made a {stat.filemode(mode)} {relative!r}"
                files[relative] = path.read_bytes()
    return files


def _judged(archive: Path) -> dict[str, bytes]:
    """The files the verifier lists in a tar, with the bytes it reads for each."""
    read = {}
    for name, member in open_source(archive).members.items():
        data = member.read(CAP)
        assert data is not None and len(data) == member.size
        read[name] = data
    return read


def _assert_agree(archive: Path, scratch: Path) -> None:
    judged = _judged(archive)
    result = _extract(archive, scratch)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert _extracted(scratch) == judged


def test_the_corpus_has_accepted_tars_to_compare() -> None:
    assert len(ACCEPTED) >= 9
    assert all(BY_NAME[name].screened and BY_NAME[name].exit == 1 for name in REFUSED)


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.slug)
def test_gnu_tar_extracts_what_the_verifier_judged(
    case: Case, corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(corpus[case.name])]) == case.exit
    err = capsys.readouterr().err
    assert case.fragment in err and err.count("\n") == 1, err
    _assert_agree(corpus[case.name], tmp_path / "gnu")


@pytest.mark.parametrize("form", ["gnu", "oldgnu", "ustar", "posix"])
def test_tars_written_by_gnu_tar_are_read_as_gnu_tar_reads_them(form: str, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    archive = tmp_path / f"{form}.tar"
    subprocess.run([GNU_TAR, "-C", str(bundle), "-cf", str(archive), f"--format={form}",
                    "manifest.json", "blobs"], check=True)  # fmt: skip
    _assert_agree(archive, tmp_path / "gnu")
    assert sorted(_judged(archive)) == sorted(
        p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize(
    "form",
    [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT],
    ids=["ustar", "gnu", "pax"],
)
def test_tars_written_by_tarfile_are_read_as_gnu_tar_reads_them(form: int, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle)
    archive = tmp_path / "b.tar"
    with tarfile.open(archive, "w", format=form) as out:
        for name in ["blobs", "blobs/sha256", "manifest.json"]:
            out.add(bundle / name, arcname=name, recursive=False)
        for blob in sorted((bundle / "blobs" / "sha256").iterdir()):
            out.add(blob, arcname=f"blobs/sha256/{blob.name}")
    _assert_agree(archive, tmp_path / "gnu")


@pytest.mark.parametrize("name", REFUSED)
def test_sparse_prefix_and_trailing_forms_are_refused_where_they_are(
    name: str, corpus: dict[str, Path]
) -> None:
    with pytest.raises(HostileArchive) as refused:
        open_source(corpus[name])
    message = str(refused.value)
    assert BY_NAME[name].fragment in message
    assert "\n" not in message.rstrip("\n") or name == "newline in a member name"
    assert " offset " in message  # where: the header (or the end marker) by its offset


@pytest.mark.parametrize("name", DISAGREEING)
def test_what_is_refused_gnu_tar_and_tarfile_read_as_different_files(
    name: str, corpus: dict[str, Path], tmp_path: Path
) -> None:
    """Why the refusals matter: before them, the verifier (then on tarfile) judged other files
    than GNU tar extracts from these very bytes."""
    with tarfile.open(corpus[name]) as archive:
        by_tarfile = {m.name for m in archive.getmembers() if m.isreg()}
    _extract(corpus[name], tmp_path / "gnu")
    assert set(_extracted(tmp_path / "gnu")) != by_tarfile
