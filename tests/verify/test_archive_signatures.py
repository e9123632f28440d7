"""Copies of one bundle that differ only in ``signatures/`` (outside the manifest's digest): one
signed and one not, or signed otherwise. They do not hold the same bytes: verify-archive lists
the first and refuses the other, naming the first, whichever sorts first; rank and rejudge
verify each (both engines give the same)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from audit import pack
from bundle_schema.layout import MANIFEST_SIGNATURE
from tests.factories import write_small_bundle
from tests.verify.test_verify_archive import _document, dask_client  # noqa: F401 - the fixture
from verify._source import open_source
from verify.archive import SIGNED_OTHERWISE, ArchiveWriter, ordered, signatures_of, verify_archive
from verify.judging import Here, Job, judge_archive


def _copies(root: Path, names: dict[str, bytes | None]) -> list[Path]:
    """One small bundle copied under each name, with ``signatures/manifest.sigstore.json``
    holding the bytes given (None: unsigned)."""
    original = root / "original"
    write_small_bundle(original, durable=False)
    paths = []
    for name, signature in names.items():
        path = Path(shutil.copytree(original, root / name))
        if signature is not None:
            (path / MANIFEST_SIGNATURE).parent.mkdir()
            (path / MANIFEST_SIGNATURE).write_bytes(signature)
        paths.append(path)
    shutil.rmtree(original)
    return paths


def _report(sources: list[Any], client: Any = None) -> tuple[bytes, bool]:
    writer = ArchiveWriter(None)
    if client is None:
        verify_archive(sources, writer)
    else:
        from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

        verify_on_dask(sources, writer, client=client)
    out = io.BytesIO()
    writer.write_json(out)
    writer.close()
    return out.getvalue(), writer.failed


def test_the_fingerprint_is_of_the_signature_files(tmp_path: Path) -> None:
    unsigned, signed, again, other = _copies(
        tmp_path, {"u": None, "s": b'{"a": 1}', "s2": b'{"a": 1}', "o": b'{"a": 2}'}
    )
    prints = [signatures_of(open_source(p)) for p in (unsigned, signed, again, other)]
    assert prints[0] is None
    assert prints[1] == prints[2] != prints[3]
    assert prints[1] is not None and prints[3] is not None
    pack(signed, tmp_path / "s.tar")  # a tar of the signed copy: the same files
    assert signatures_of(open_source(tmp_path / "s.tar")) == prints[1]


@pytest.mark.parametrize(
    ("names", "kept", "status"),
    [
        ({"a-unsigned": None, "b-signed": b"{}"}, "a-unsigned", "unsigned"),
        ({"a-signed": b"{}", "b-unsigned": None}, "a-signed", "unchecked"),
        ({"a-signed": b'{"x": 1}', "b-signed": b'{"x": 2}'}, "a-signed", "unchecked"),
    ],
)
def test_a_copy_signed_otherwise_is_refused_naming_the_first(
    tmp_path: Path,
    names: dict[str, bytes | None],
    kept: str,
    status: str,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    paths = _copies(tmp_path, names)
    other = next(p for p in paths if p.name != kept)
    sources = ordered(paths).sources
    out, failed = _report(sources)
    assert failed  # a refused source
    report = _document(out)
    (entry,) = report.bundles
    assert entry.sources == (str(tmp_path / kept),)
    assert entry.signature == status  # the status of the source listed, said as its
    (refused,) = report.refused
    assert refused.source == str(other)
    first = str(tmp_path / kept)
    assert refused.reason == SIGNED_OTHERWISE.format(digest=entry.bundle_digest, first=first)
    assert _report(sources, dask_client) == (out, failed)


def test_copies_signed_alike_are_one_source_each_listed(tmp_path: Path) -> None:
    paths = _copies(tmp_path, {"a": b"{}", "b": b"{}"})
    pack(paths[0], tmp_path / "a.tar")
    out, failed = _report(ordered([*paths, tmp_path / "a.tar"]).sources)
    report = _document(out)
    assert not report.refused
    (entry,) = report.bundles
    assert len(entry.sources) == 3
    assert not failed


def test_rank_verifies_a_copy_signed_otherwise_itself(
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify.distributed import judge_on_dask  # noqa: PLC0415 - imports Dask

    paths: list[Any] = _copies(tmp_path, {"a": None, "b": b"{}", "c": b"{}"})
    with judge_archive(paths, Here(paths, Job(None))) as judged:
        here = judged.whole()
    with judge_on_dask(paths, Job(None), client=dask_client) as there:
        assert there.whole() == here
    (bundle,) = here.bundles
    assert bundle.sources == tuple(str(p) for p in paths)
    notes = [n for n in here.notes if "verified differently" in n]
    assert [n.split(":", 1)[0] for n in notes] == [str(tmp_path / "b"), str(tmp_path / "c")]
    assert all(f"the same bundle as {tmp_path / 'a'}, verified differently" in n for n in notes)


def test_the_signature_checked_is_the_one_fingerprinted(tmp_path: Path) -> None:
    """A source's fingerprint counts its manifest signature by the bytes its verification read
    (``Verification.signature_digest``), not by a second read: a source (a server, a mount
    the publisher runs) that answers the second read with other bytes is fingerprinted by the
    signature that was checked. Other files under ``signatures/`` are read as they are."""
    from bundle_schema import digest_of  # noqa: PLC0415 - this test's alone

    checked, other = b'{"checked": true}', b'{"served": "later"}'
    bundles = []
    for name, data in (("checked", checked), ("served", other)):
        root = tmp_path / name
        write_small_bundle(root, durable=False)
        (root / MANIFEST_SIGNATURE).parent.mkdir(exist_ok=True)
        (root / MANIFEST_SIGNATURE).write_bytes(data)
        bundles.append(open_source(root))
    as_checked, as_served = (signatures_of(bundle) for bundle in bundles)
    assert as_checked != as_served
    assert signatures_of(bundles[1], digest_of(checked)) == as_checked
    assert signatures_of(bundles[1], None) == as_served  # none checked: read
