"""The bundle writer: content addressing, dedupe, crash safety, manifest last."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit import BundleWriter
from bundle_schema import digest_of
from bundle_schema.errors import InvalidInput, SchemaViolation
from bundle_schema.layout import blob_path, content_digest
from tests.factories import seal_arguments, write_small_bundle
from verify import parse_manifest, verify_bundle


def test_written_bundle_has_exactly_the_layout(small_bundle: Path) -> None:
    files = sorted(
        p.relative_to(small_bundle).as_posix() for p in small_bundle.rglob("*") if p.is_file()
    )
    assert files[-1] == "manifest.json"
    assert all(f.startswith("blobs/sha256/") and len(f) == 13 + 64 for f in files[:-1])
    assert len(files) == 3


def test_blobs_are_named_by_their_digest(small_bundle: Path) -> None:
    for blob in (small_bundle / "blobs" / "sha256").iterdir():
        assert digest_of(blob.read_bytes()) == "sha256:" + blob.name


def test_seal_returns_the_digest_of_the_manifest_bytes(tmp_path: Path) -> None:
    digest = write_small_bundle(tmp_path / "b")
    data = (tmp_path / "b" / "manifest.json").read_bytes()
    assert digest == digest_of(data)
    parsed = parse_manifest(data)
    assert parsed.model.content_digest == content_digest(parsed.value)
    assert verify_bundle(tmp_path / "b").verdict.integrity.status == "ok"


def test_same_content_gives_the_same_digest(tmp_path: Path) -> None:
    assert write_small_bundle(tmp_path / "a") == write_small_bundle(tmp_path / "b")


def test_identical_content_is_stored_once(tmp_path: Path) -> None:
    write_small_bundle(tmp_path / "b", extra={"x/one.txt": b"same", "x/two.txt": b"same"})
    blobs = list((tmp_path / "b" / "blobs" / "sha256").iterdir())
    assert len(blobs) == 3
    manifest = parse_manifest((tmp_path / "b" / "manifest.json").read_bytes()).model
    assert manifest.evidence["x/one.txt"].digest == manifest.evidence["x/two.txt"].digest


def test_streams_are_written_in_chunks(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b")
    entry = writer.add_stream(
        "big.bin", (bytes([i]) * 65536 for i in range(64)), "application/octet-stream"
    )
    assert entry.size == 64 * 65536
    blob = tmp_path / "b" / "blobs" / "sha256" / entry.digest.removeprefix("sha256:")
    assert digest_of(blob.read_bytes()) == entry.digest


def test_a_failing_stream_leaves_no_blob_and_no_temp_file(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b")

    def dies() -> Iterator[bytes]:
        yield b"partial evidence"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        writer.add_stream("log.txt", dies(), "text/plain")
    assert list((tmp_path / "b" / "blobs" / "sha256").iterdir()) == []
    assert not (tmp_path / "b" / "manifest.json").exists()
    assert writer.entries == {}


def test_an_unsealed_bundle_is_refused_as_not_sealed(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b")
    writer.add_bytes("log.txt", b"evidence", "text/plain")
    with pytest.raises(InvalidInput, match=r"no manifest\.json; not a sealed bundle"):
        verify_bundle(tmp_path / "b")


def test_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious")
    with pytest.raises(InvalidInput, match="exists and is not an empty directory"):
        BundleWriter(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "precious"


@pytest.mark.parametrize("name", ["", "/abs", "a/../b", "A/upper", "a//b", "./a", "a/", "x" * 257])
def test_refuses_names_that_are_not_logical_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a logical evidence name"):
        BundleWriter(tmp_path / "b").add_bytes(name, b"", "text/plain")


def test_refuses_a_name_twice_and_writing_after_seal(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b")
    writer.add_bytes("a.txt", b"1", "text/plain")
    with pytest.raises(ValueError, match="already written"):
        writer.add_bytes("a.txt", b"2", "text/plain")


def test_seal_refuses_an_invalid_manifest_and_writes_none(tmp_path: Path) -> None:
    with pytest.raises(SchemaViolation, match=r"components\[0\]\.result names"):
        BundleWriter(tmp_path / "b").seal(**seal_arguments())
    assert not (tmp_path / "b" / "manifest.json").exists()


def test_writing_after_seal_is_refused(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b")
    writer.add_bytes("components/coding/result.json", b"{}", "application/json")
    writer.seal(**seal_arguments())
    with pytest.raises(ValueError, match="the bundle is sealed"):
        writer.add_bytes("late.txt", b"2", "text/plain")


def test_blob_files_are_not_world_writable(small_bundle: Path) -> None:
    for blob in (small_bundle / "blobs" / "sha256").iterdir():
        assert not os.stat(blob).st_mode & 0o022


def test_a_shared_store_keeps_each_blob_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    digests = []
    for run in ("one", "two"):
        writer = BundleWriter(tmp_path / run, store=store)
        writer.add_bytes("shared/file.txt", b"the same checkout file\n", "text/plain")
        writer.add_bytes(f"own/{run}.txt", run.encode(), "text/plain")
        digests.append(writer.seal(**seal_arguments(components=())))
    shared = BundleWriter(tmp_path / "x").add_bytes("a", b"the same checkout file\n", "t/p").digest
    one = tmp_path / "one" / blob_path(shared)
    two = tmp_path / "two" / blob_path(shared)
    kept = store / blob_path(shared)
    assert one.stat().st_ino == two.stat().st_ino == kept.stat().st_ino
    assert kept.stat().st_mode & 0o777 == 0o444
    assert len(list((store / "blobs" / "sha256").iterdir())) == 3  # shared, one, two
    for run, digest in zip(("one", "two"), digests, strict=True):
        verdict = verify_bundle(tmp_path / run).verdict
        assert verdict.integrity.status == "ok"
        assert verdict.bundle_digest == digest
