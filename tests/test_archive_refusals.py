"""Every refused archive case, by name: exit 2, a one-line message naming the member, no writes."""

from __future__ import annotations

import gzip
import io
import os
import socket
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from audit.cli import main
from verify import HostileArchive, Limits, open_source

HEX = "0" * 64


@dataclass
class M:
    """A tar member to craft: a name, a type and data (``size`` overrides the header size)."""

    name: str
    type: bytes = tarfile.REGTYPE
    data: bytes = b""
    linkname: str = ""
    size: int | None = None
    pax: dict[str, str] = field(default_factory=dict)


def craft(path: Path, bundle: Path, members: list[M], fmt: int = tarfile.USTAR_FORMAT) -> None:
    """Write a tar holding a valid small bundle followed by ``members`` (headers as given).

    A member with ``size`` set gets a forged header declaring that size, followed by its data
    and nothing else: no padding and no end-of-archive blocks.
    """
    out = io.BytesIO()
    archive = tarfile.open(fileobj=out, mode="w", format=fmt)  # noqa: SIM115 - left open on purpose for forged tails
    for file in sorted(p for p in bundle.rglob("*") if p.is_file()):
        archive.add(file, arcname=file.relative_to(bundle).as_posix())
    forged = b""
    for member in members:
        info = tarfile.TarInfo(member.name)
        info.type = member.type
        info.linkname = member.linkname
        info.size = len(member.data) if member.type == tarfile.REGTYPE else 0
        info.pax_headers = member.pax
        if member.size is not None:
            info.size = member.size
            forged += info.tobuf(fmt, tarfile.ENCODING, "surrogateescape") + member.data
        else:
            archive.addfile(info, io.BytesIO(member.data) if info.size else None)
    if forged:
        path.write_bytes(out.getvalue()[: archive.offset] + forged)
        return
    archive.close()
    path.write_bytes(out.getvalue())


CASES = [
    (
        "absolute path",
        [M("/etc/cron.d/evil", data=b"x")],
        "'/etc/cron.d/evil' has an absolute path",
    ),
    (
        "dot-dot traversal",
        [M("blobs/../../evil", data=b"x")],
        "'blobs/../../evil' climbs out with '..'",
    ),
    ("leading dot-dot", [M("../evil", data=b"x")], "'../evil' climbs out"),
    (
        "dot segment",
        [M("./manifest.json", data=b"x")],
        "'./manifest.json' has an empty or '.' path segment",
    ),
    ("empty segment", [M("blobs//sha256/" + HEX, data=b"x")], "has an empty or '.' path segment"),
    ("backslash", [M("blobs\\sha256\\x", data=b"x")], "has a backslash"),
    ("windows drive", [M("C:/evil", data=b"x")], "'C:/evil' has an absolute path"),
    (
        "symbolic link",
        [M(f"blobs/sha256/{HEX}", tarfile.SYMTYPE, linkname="/etc/passwd")],
        "is a symbolic link",
    ),
    (
        "hard link",
        [M(f"blobs/sha256/{HEX}", tarfile.LNKTYPE, linkname="manifest.json")],
        "is a hard link",
    ),
    ("character device", [M(f"blobs/sha256/{HEX}", tarfile.CHRTYPE)], "is a device"),
    ("block device", [M(f"blobs/sha256/{HEX}", tarfile.BLKTYPE)], "is a device"),
    ("FIFO", [M(f"blobs/sha256/{HEX}", tarfile.FIFOTYPE)], "is a FIFO"),
    ("duplicate member", [M("manifest.json", data=b"{}")], "member 'manifest.json' appears twice"),
    (
        "member outside layout",
        [M("run.sh", data=b"rm -rf /")],
        "'run.sh' is outside the bundle layout",
    ),
    (
        "misnamed blob",
        [M("blobs/sha256/ABC", data=b"x")],
        "'blobs/sha256/ABC' is outside the bundle layout",
    ),
    (
        "other digest directory",
        [M("blobs/md5/" + "0" * 32, data=b"x")],
        "is outside the bundle layout",
    ),
    (
        "directory outside layout",
        [M("hooks", tarfile.DIRTYPE)],
        "'hooks' is a directory outside the bundle layout",
    ),
    (
        "huge declared size",
        [M(f"blobs/sha256/{HEX}", size=1 << 40)],
        "declares 1099511627776 bytes, over the member cap",
    ),
    ("truncated member", [M(f"blobs/sha256/{HEX}", data=b"short", size=4096)], "is truncated"),
    (
        "pax path traversal",
        [M(f"blobs/sha256/{HEX}", data=b"x", pax={"path": "../../evil"})],
        "'../../evil' climbs out",
    ),
]


@pytest.mark.parametrize(("members", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_archive(
    members: list[M],
    fragment: str,
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fmt = tarfile.PAX_FORMAT if any(m.pax for m in members) else tarfile.GNU_FORMAT
    archive = tmp_path / "hostile.tar"
    craft(archive, small_bundle, members, fmt)
    before = sorted(p.name for p in tmp_path.iterdir())

    assert main(["verify", str(archive)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"audit verify: {archive}: ")
    assert fragment in err
    assert "Traceback" not in err

    assert main(["unpack", str(archive), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_archive_total_over_the_cap(small_bundle: Path, tmp_path: Path) -> None:
    craft(tmp_path / "b.tar", small_bundle, [])
    with pytest.raises(HostileArchive, match="members total over the archive cap of 64 bytes at"):
        open_source(tmp_path / "b.tar", Limits(max_total_size=64))


def test_too_many_members(small_bundle: Path, tmp_path: Path) -> None:
    craft(tmp_path / "b.tar", small_bundle, [])
    with pytest.raises(HostileArchive, match="more than 2 members"):
        open_source(tmp_path / "b.tar", Limits(max_members=2))


def test_member_over_a_configured_cap(small_bundle: Path, tmp_path: Path) -> None:
    craft(tmp_path / "b.tar", small_bundle, [])
    with pytest.raises(HostileArchive, match="over the member cap of 8"):
        open_source(tmp_path / "b.tar", Limits(max_member_size=8))


def test_manifest_over_the_cap(
    small_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = open_source(small_bundle)
    with pytest.raises(Exception, match="over the cap of 10"):
        source.manifest_bytes(Limits(max_manifest_size=10))
    del capsys


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [
        ("random bytes", os.urandom(2048), "not a readable uncompressed tar"),
        ("empty file", b"", "not a readable uncompressed tar"),
        ("gzip-compressed tar", None, "not a readable uncompressed tar"),
    ],
)
def test_not_an_uncompressed_tar(  # noqa: PLR0917 - parametrized cases and fixtures
    name: str,
    data: bytes | None,
    fragment: str,
    small_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "bundle.tar"
    if data is None:
        craft(tmp_path / "plain.tar", small_bundle, [])
        data = gzip.compress((tmp_path / "plain.tar").read_bytes(), mtime=0)
    path.write_bytes(data)
    assert main(["verify", str(path)]) == 2, name
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


@pytest.mark.parametrize("kind", ["symbolic link", "FIFO", "socket"])
def test_directory_bundle_with_a_special_file(
    kind: str,
    small_bundle: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = small_bundle / "blobs" / "sha256" / HEX
    if kind == "symbolic link":
        target.symlink_to("/etc/passwd")
    elif kind == "FIFO":
        os.mkfifo(target)
    else:
        monkeypatch.chdir(small_bundle)  # AF_UNIX paths are short; bind a relative one
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(f"blobs/sha256/{HEX}")
    assert main(["verify", str(small_bundle)]) == 2
    err = capsys.readouterr().err
    assert f"'blobs/sha256/{HEX}' is a {kind}, not a file" in err


def test_symlinked_manifest_is_refused(small_bundle: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    (small_bundle / "manifest.json").rename(real)
    (small_bundle / "manifest.json").symlink_to(real)
    with pytest.raises(HostileArchive, match=r"'manifest\.json' is a symbolic link"):
        open_source(small_bundle)


def test_a_directory_bundle_nested_too_deep(
    small_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = small_bundle / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    assert main(["verify", str(small_bundle)]) == 2
    err = capsys.readouterr().err
    assert "'a/b/c/d/e' is nested deeper than a bundle's layout (4 levels)" in err
    assert err.count("\n") == 1
