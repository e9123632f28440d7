"""Hostile tests of the change of 2026-12-04 that keeps the Dask driver's state on disk
(``verify._dask._Driver``, ``_Verifying``, ``_OnDask``: SQLite and a spool, a window of chunks).

What the review found (``--engine dask --workers 2`` against the default engine, byte for byte,
``verify-archive --json/--markdown``, ``rank --json/--markdown``, ``rejudge --json``):

- held: 70 sources (more chunks than the window): tars first with directory copies after, a
  broken tar first, tampered tars and directories (a flipped byte, a missing blob, an extra
  file) before and after good copies, hard-linked tars, copies hard-linking a store, names
  with a newline, ``|`` and a byte not UTF-8, a symlink to a copy, junk, a list file with
  relative paths and ``./`` doubles, a source given twice; ``http://`` twins that differ only
  in a masked password, token or ``X-Amz-Signature``; no file left in a private ``TMPDIR``.
- two holes, both from before the change (the code before it does the same), fixed:
  1. a local source whose name holds a credential parameter (``d?X-Amz-Signature=secret``)
     is shown masked by the Dask engine and as it is by the default one: ``_wired`` sends a
     local path as ``str``, and ``verify.archive.shown`` masks a ``str`` as a URL
     (``shown_url``); the entries' ``sources`` differed. A local path now goes to a task as
     ``verify._dask._Local`` (its text, marked) and is a ``Path`` again there;
  2. stage 2 hashes a shared file by the path of the second bundle that linked it and files
     the digest under the identity stage 1 listed, without checking that the file it read has
     that identity (``_hash``): a bundle given through a symlink that is retargeted between
     stage 1 and stage 2 to a good copy gives the good bytes' digest to the tampered inode the
     first bundle links, and the tampered bundle was listed as passing. Stage 2 now reads
     each file from one descriptor whose ``fstat`` must be the listed identity before and
     after the read (``verify._hashing.hash_identified``), else keeps no digest for it (stage
     3 hashes it where a bundle links it).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.factories import write_small_bundle
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify.archive import ArchiveWriter, verify_archive

pytest.importorskip("distributed")


def _report(sources: list[Path], client: Any = None) -> bytes:
    writer = ArchiveWriter(None)
    try:
        if client is None:
            verify_archive(sources, writer)
        else:
            from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

            verify_on_dask(iter(sources), writer, client=client)
        out = io.BytesIO()
        writer.write_json(out)
        return out.getvalue()
    finally:
        writer.close()


def test_a_local_name_with_a_signature_parameter_is_shown_alike(
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    source = tmp_path / "d?X-Amz-Signature=secret"
    write_small_bundle(source, durable=False)
    assert _report([source], dask_client) == _report([source])


def test_a_symlink_retargeted_before_stage_two_does_not_pass_a_tampered_copy(
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verify import _dask  # noqa: PLC0415 - imports Dask

    archive, store = tmp_path / "archive", tmp_path / "store"
    write_small_bundle(archive / "x1", {"extra/a.txt": b"run-x"}, durable=False, store=store)
    shutil.copytree(archive / "x1", tmp_path / "linked", copy_function=os.link)
    shutil.copytree(archive / "x1", tmp_path / "good")
    (archive / "x2").symlink_to(tmp_path / "linked")
    blob = next(p for p in (archive / "x1/blobs/sha256").iterdir() if p.read_bytes() == b"run-x")
    with blob.open("r+b") as f:  # x1, the store and linked/ share this inode: same size
        f.write(b"R")

    hash_shared = _dask._Driver._hash_shared

    def retargeted(self: Any) -> int:
        new = archive / "x2.new"
        new.symlink_to(tmp_path / "good")
        new.replace(archive / "x2")  # x1's inode untouched: its identity is the one listed
        return int(hash_shared(self))

    monkeypatch.setattr(_dask._Driver, "_hash_shared", retargeted)
    report = json.loads(_report([archive / "x1", archive / "x2"], dask_client))
    assert str(archive / "x1") not in [s for b in report["bundles"] for s in b["sources"]]
    assert [r["source"] for r in report["refused"]] == [str(archive / "x1")]
