"""A blob read to be judged is the bytes that were hashed (``Member.proven``, ADR 0053).

The integrity check hashes every blob; the records and raw outputs are read again afterwards to
be judged. A file the publisher controls (a mount of their store, a tar on a file system that
answers as it pleases) can give other bytes the second time. Here a real file is rewritten in
place at the moment the hashing is done (the progress callback sees every byte hashed), so the
second read gets other bytes of the same size: nothing is judged, exit 2, one line naming the
blob. Its control: the same moment, the same bytes written back, gives the verdict as before.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from audit._archive import pack
from tests.factories import write_small_bundle
from verify import verdict_json, verify_bundle
from verify._source import ChangedWhileRead

RESULT = "components/coding/result.json"


def _rewrite_when_hashed(
    target: Path, offset: int, replace: Callable[[int], int]
) -> Callable[[int, int], Callable[[int], None]]:
    """A progress factory whose callback, once every byte was hashed, replaces the byte at
    ``offset`` of ``target`` (in place: same file, same size)."""

    def factory(_count: int, total: int) -> Callable[[int], None]:
        done = 0

        def advance(size: int) -> None:
            nonlocal done
            done += size
            if done >= total:
                with target.open("r+b") as file:
                    file.seek(offset)
                    byte = file.read(1)[0]
                    file.seek(offset)
                    file.write(bytes([replace(byte)]))

        return advance

    return factory


def _blob(root: Path, name: str) -> Path:
    manifest = json.loads((root / "manifest.json").read_bytes())
    return root / "blobs/sha256" / manifest["evidence"][name]["digest"].removeprefix("sha256:")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    write_small_bundle(root, durable=False)
    return root


def test_a_record_rewritten_after_it_was_hashed_is_not_judged(bundle: Path) -> None:
    blob = _blob(bundle, RESULT)
    factory = _rewrite_when_hashed(blob, 5, lambda b: b ^ 0x01)
    with pytest.raises(ChangedWhileRead, match="other bytes than when it was hashed") as caught:
        verify_bundle(bundle, progress=factory, workers=1)
    assert str(caught.value).startswith(f"{blob}: other bytes"), caught.value
    assert caught.value.exit_code == 2


def test_a_record_written_back_the_same_is_judged_as_before(bundle: Path) -> None:
    before = verdict_json(verify_bundle(bundle, workers=1).verdict)
    factory = _rewrite_when_hashed(_blob(bundle, RESULT), 5, lambda b: b)
    assert verdict_json(verify_bundle(bundle, progress=factory, workers=1).verdict) == before


def test_a_tar_member_rewritten_after_it_was_hashed_is_not_judged(
    bundle: Path, tmp_path: Path
) -> None:
    tar = tmp_path / "bundle.tar"
    pack(bundle, tar)
    digest = _blob(bundle, RESULT).name
    with tarfile.open(tar) as archive:
        offset = archive.getmember(f"blobs/sha256/{digest}").offset_data + 5
    factory = _rewrite_when_hashed(tar, offset, lambda b: b ^ 0x01)
    with pytest.raises(ChangedWhileRead) as caught:
        verify_bundle(tar, progress=factory, workers=1)
    assert str(caught.value).startswith(f"{tar}: blobs/sha256/{digest}: other bytes"), caught.value
