"""Packing is byte-reproducible; unpacking round-trips; pack refuses what is not a bundle."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from audit import pack, unpack
from bundle_schema.errors import CheckFailed, InvalidInput
from verify import verify_bundle


def _recreate(source: Path, target: Path, *, umask: int, mtime: int, reverse: bool) -> None:
    """Copy a bundle file by file, under another umask, mtime and creation order."""
    files = sorted(p.relative_to(source) for p in source.rglob("*") if p.is_file())
    old = os.umask(umask)
    try:
        for relative in reversed(files) if reverse else files:
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes((source / relative).read_bytes())
            os.utime(path, (mtime, mtime))
    finally:
        os.umask(old)


def test_pack_is_byte_reproducible(full_bundle: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    _recreate(full_bundle, one, umask=0o022, mtime=1_000_000_000, reverse=False)
    _recreate(full_bundle, two, umask=0o077, mtime=1_700_000_000, reverse=True)
    os.chmod(two / "manifest.json", 0o600)
    pack(one, tmp_path / "one.tar")
    pack(two, tmp_path / "two.tar")
    first, second = (tmp_path / "one.tar").read_bytes(), (tmp_path / "two.tar").read_bytes()
    assert first == second
    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()


def test_packed_members_are_normalised(full_bundle: Path, tmp_path: Path) -> None:
    pack(full_bundle, tmp_path / "b.tar")
    with tarfile.open(tmp_path / "b.tar") as archive:
        members = archive.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert "manifest.json" in names
    for member in members:
        assert member.isreg()
        assert (member.mtime, member.uid, member.gid, member.mode) == (0, 0, 0, 0o644)
        assert (member.uname, member.gname) == ("", "")
        assert member.pax_headers == {}


def test_pack_unpack_round_trip(full_bundle: Path, tmp_path: Path) -> None:
    result = pack(full_bundle, tmp_path / "b.tar")
    unpacked = unpack(tmp_path / "b.tar", tmp_path / "out")
    assert unpacked.bundle_digest == result.bundle_digest
    for path in full_bundle.rglob("*"):
        if path.is_file():
            assert (
                tmp_path / "out" / path.relative_to(full_bundle)
            ).read_bytes() == path.read_bytes()
    assert verify_bundle(tmp_path / "out").verdict.bundle_digest == result.bundle_digest
    assert verify_bundle(tmp_path / "b.tar").verdict.integrity.status == "ok"
    pack(tmp_path / "out", tmp_path / "again.tar")
    assert (tmp_path / "again.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_unpack_into_a_non_empty_directory_is_refused(full_bundle: Path, tmp_path: Path) -> None:
    pack(full_bundle, tmp_path / "b.tar")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("precious")
    with pytest.raises(InvalidInput, match="exists and is not empty"):
        unpack(tmp_path / "b.tar", tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_pack_refuses_a_file_outside_the_layout(full_bundle: Path, tmp_path: Path) -> None:
    (full_bundle / "blobs" / "sha256" / ".blob.tmp-0123").write_bytes(b"half")
    with pytest.raises(
        InvalidInput, match=r"'blobs/sha256/\.blob\.tmp-0123' is outside the bundle layout"
    ):
        pack(full_bundle, tmp_path / "b.tar")
    assert not (tmp_path / "b.tar").exists()


def test_pack_refuses_a_corrupt_bundle_and_writes_nothing(
    full_bundle: Path, tmp_path: Path
) -> None:
    blob = next((full_bundle / "blobs" / "sha256").iterdir())
    blob.write_bytes(blob.read_bytes() + b"x")
    with pytest.raises(CheckFailed, match="refusing to pack a bundle that fails integrity"):
        pack(full_bundle, tmp_path / "b.tar")
    assert list(tmp_path.glob("*.tar*")) == []


def test_pack_refuses_to_write_inside_the_bundle(full_bundle: Path) -> None:
    with pytest.raises(InvalidInput, match="inside the bundle"):
        pack(full_bundle, full_bundle / "b.tar")


def test_pack_never_replaces_a_device_or_fifo(full_bundle: Path, tmp_path: Path) -> None:
    """A target that is a FIFO (or, as root, ``/dev/null``) was replaced by the tar: the
    temporary file was renamed over it. It is refused and left as it was."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="not a regular file"):
        pack(full_bundle, fifo)
    assert fifo.is_fifo()  # (a device node is not tried here: a regression would replace it)


def test_pack_refuses_a_tar_and_unpack_a_directory(full_bundle: Path, tmp_path: Path) -> None:
    pack(full_bundle, tmp_path / "b.tar")
    with pytest.raises(InvalidInput, match="pack takes a bundle directory"):
        pack(tmp_path / "b.tar", tmp_path / "c.tar")
    with pytest.raises(InvalidInput, match="unpack takes a tar file"):
        unpack(full_bundle, tmp_path / "out")


def test_unpack_of_a_tar_made_by_tar_with_directory_entries(
    full_bundle: Path, tmp_path: Path
) -> None:
    with tarfile.open(tmp_path / "b.tar", "w", format=tarfile.GNU_FORMAT) as archive:
        for name in ["blobs", "blobs/sha256", "manifest.json"]:
            archive.add(full_bundle / name, arcname=name, recursive=False)
        for blob in sorted((full_bundle / "blobs" / "sha256").iterdir()):
            archive.add(blob, arcname=f"blobs/sha256/{blob.name}")
    unpack(tmp_path / "b.tar", tmp_path / "out")
    assert verify_bundle(tmp_path / "out").verdict.integrity.status == "ok"
    shutil.rmtree(tmp_path / "out")


def test_pack_writes_through_no_planted_link_and_leaves_no_temp(
    full_bundle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "b.tar").symlink_to(victim)  # the output path itself is a link
    for name in (".b.tar.tmp-pack", ".b.tar.tmp-0000000000000000"):
        (out / name).symlink_to(victim)
    pack(full_bundle, out / "b.tar")
    assert victim.read_text() == "precious"
    assert not (out / "b.tar").is_symlink()
    assert verify_bundle(out / "b.tar").verdict.integrity.status == "ok"
    left = sorted(p.name for p in out.iterdir())
    assert left == [".b.tar.tmp-0000000000000000", ".b.tar.tmp-pack", "b.tar"]
