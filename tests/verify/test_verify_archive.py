"""`audit verify-archive` (issue 16 point 2, ADR 0025): an archive is a list of sources
(folders, tars, list files, an s3:// prefix on moto's real S3 server); each bundle digest is
verified once, each file of a shared store hashed once; one canonical archive-report document,
valid under its committed schema, written incrementally; Markdown and CSV alternatives; exit 1
on a failed check or a refusal."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from audit._archive import pack
from audit.cli import main
from bundle_schema import KINDS, canonical_bytes, parse_document
from bundle_schema.models import ArchiveReport
from tests.factories import write_small_bundle
from tests.paths import ROOT, SCHEMAS
from tests.verify.test_url_sources import published, s3  # noqa: F401 - fixtures: moto's S3 server
from verify import BlobCache, open_source, url_snapshots
from verify.archive import ArchiveWriter, expand, ordered, verify_archive
from verify.judging import Job

SHARED = 5


def _archive(root: Path, count: int) -> tuple[list[Path], Path]:
    """``count`` small bundles whose SHARED blobs are hard-linked from one store."""
    store = root / "store"
    shared = [(f"data/shared-{i}.bin", os.urandom(4096) + bytes([i])) for i in range(SHARED)]
    paths = []
    for number in range(count):
        path = root / "archive" / f"run-{number:02d}"
        own = [("data/own.bin", f"run {number}".encode())]
        write_small_bundle(path, shared + own, store=store, durable=False, run_id=f"run-{number}")
        paths.append(path)
    return paths, store


def _document(out: bytes) -> ArchiveReport:
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    value = json.loads(out)
    assert canonical_bytes(value) + b"\n" == out  # streamed, yet the canonical bytes
    schema = json.loads((SCHEMAS / KINDS["archive-report"].schema_file).read_bytes())
    jsonschema.Draft202012Validator(schema).validate(value)
    report = parse_document(KINDS["archive-report"], out[:-1], "stdout")
    assert isinstance(report, ArchiveReport)
    return report


def test_an_archive_is_one_canonical_report(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    paths, _ = _archive(tmp_path, 4)
    pack(paths[0], tmp_path / "run-00.tar")  # the same bundle twice: verified once
    broken = tmp_path / "broken"
    write_small_bundle(broken, {"data/x.bin": b"x"}, durable=False, run_id="broken")
    blob = next((broken / "blobs" / "sha256").iterdir())
    blob.chmod(0o644)
    blob.write_bytes(b"tampered")
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all")
    listing = tmp_path / "list.txt"
    listing.write_text("# the archive\n\nrun-00.tar\nbroken\njunk.tar\n", "utf-8")
    code = main(["verify-archive", str(tmp_path / "archive"), "--from", str(listing)])
    out = capsysbinary.readouterr().out
    assert code == 1
    report = _document(out)
    assert [b.bundle_digest for b in report.bundles] == sorted(
        b.bundle_digest for b in report.bundles
    )
    assert report.counts.model_dump() == {
        "sources": 7, "bundles": 5, "passed": 4, "failed": 1, "refused": 1,
    }  # fmt: skip
    first = next(b for b in report.bundles if b.run_id == "run-0")
    assert first.sources == (str(paths[0]), str(tmp_path / "run-00.tar"))
    failed = next(b for b in report.bundles if b.run_id == "broken")
    assert failed.integrity == "failed" and failed.failed_check is not None
    assert failed.failed_check.startswith("integrity failed")
    (refused,) = report.refused
    assert refused.source == str(tmp_path / "junk.tar")
    assert "not a readable uncompressed tar" in refused.reason
    assert report.pin_set is None

    assert main(["verify-archive", str(tmp_path / "archive"), "--markdown"]) == 0
    text = capsysbinary.readouterr().out.decode()
    assert text.startswith("## Bundles\n\n| bundle | run |")
    assert "4 bundles from 4 sources: 4 passed, 0 failed a check, 0 refused" in text
    assert main(["verify-archive", "--from", str(listing), "--csv"]) == 1
    rows = list(csv.reader(io.StringIO(capsysbinary.readouterr().out.decode())))
    assert rows[0][:2] == ["status", "bundle_digest"]
    assert sorted(row[0] for row in rows[1:]) == ["failed", "passed", "refused"]


def test_each_bundle_once_and_each_shared_blob_hashed_once(tmp_path: Path) -> None:
    paths, store = _archive(tmp_path, 8)
    distinct = len(list((store / "blobs" / "sha256").iterdir()))
    writer = ArchiveWriter(None)
    cache = BlobCache()
    verify_archive(ordered([*paths, *paths]).sources, writer, cache=cache)  # each path given twice
    assert (cache.hashed, writer.stats.hashed) == (distinct, distinct)
    assert distinct == 2 + SHARED + len(paths)  # raw output and result, shared, one own each
    out = io.BytesIO()
    writer.write_json(out)
    writer.close()
    report = _document(out.getvalue())
    assert report.counts.bundles == len(paths) and not writer.failed


def test_a_list_file_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text("# none yet\nmissing-run\n", "utf-8")
    assert main(["verify-archive", "--from", str(listing)]) == 2
    assert f"{listing}:2: {tmp_path / 'missing-run'}: no such bundle" in capsys.readouterr().err
    assert main(["verify-archive"]) == 2
    assert "no bundle given" in capsys.readouterr().err
    assert main(["verify-archive", "http://127.0.0.1:9/runs/"]) == 2
    assert "a web server has no listing" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [["rank"], ["rejudge", "--pins", "gx10-qualification-v5"], ["verify-archive"]]
)
@pytest.mark.parametrize("content", ["", "\n\n", "# runs of v5, none yet\n   \n"])
def test_a_list_of_no_bundle_holds_no_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], content: str
) -> None:
    """A list file of blank lines and comments is refused as an empty folder is (exit 2), not
    answered with empty tables and exit 0."""
    listing = tmp_path / "list.txt"
    listing.write_text(content, "utf-8")
    assert main([*command, "--from", str(listing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"audit {command[0]}: {listing}: no bundle listed (only blank lines and # comments)"
    ]
    assert main([*command, "--from", "/dev/null"]) == 2
    assert "/dev/null: no bundle listed" in capsys.readouterr().err


def test_an_s3_prefix_is_every_tar_under_it(
    published: Path,  # noqa: F811 - the fixture
    s3: dict[str, str],  # noqa: F811 - the fixture
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    code = main(["verify-archive", f"s3://{s3['bucket']}/v5/"])
    remote = _document(capsysbinary.readouterr().out)
    local_code = main(["verify-archive", str(published)])
    local = _document(capsysbinary.readouterr().out)
    assert code == local_code
    tars = sorted(p.name for p in published.glob("*.tar"))
    assert remote.counts.sources == len(tars) == local.counts.sources
    assert [b.sources for b in remote.bundles] == [
        tuple(s.replace(str(published), "s3://runs/v5") for s in b.sources) for b in local.bundles
    ]
    strip = {"sources"}
    assert [b.model_dump(exclude=strip) for b in remote.bundles] == [
        b.model_dump(exclude=strip) for b in local.bundles
    ]


def test_an_s3_prefix_is_listed_a_page_at_a_time(
    s3: dict[str, str],  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every tar under a prefix, by key, however many pages the listing takes (pages of 2
    here), deeper keys too; other objects left out; the file system keeps no listing of it."""
    import boto3  # noqa: PLC0415 - the test's own client

    from verify import _remote  # noqa: PLC0415 - its page size

    client = boto3.client("s3", endpoint_url=s3["AWS_ENDPOINT_URL"])
    names = ["b.tar", "a.tar", "notes.txt", "deeper/c.tar", "\u00e9.tar", "z.tar.gz", "d.tar"]
    for name in names:
        client.put_object(Bucket=s3["bucket"], Key=f"paged/{name}", Body=b"x")
    monkeypatch.setattr(_remote, "LIST_PAGE", 2)
    with url_snapshots():
        listed = list(expand(f"s3://{s3['bucket']}/paged/"))
        fs = _remote.filesystem("s3")
        assert not fs.dircache
    tars = sorted(name for name in names if name.endswith(".tar"))
    assert listed == [f"s3://{s3['bucket']}/paged/{name}" for name in tars]


def _copies(root: Path, tampered: str, honest: str) -> list[Path]:
    """One bundle twice under ``root``: the directory ``tampered``, one of its blobs rewritten
    (its manifest as it was), and the tar ``honest``; returns both, sorted."""
    original = root / "original"
    write_small_bundle(original, {"data/x.bin": b"the evidence"}, durable=False, run_id="copied")
    folder = root / "order"
    folder.mkdir()
    pack(original, folder / honest)
    shutil.copytree(original, folder / tampered)
    blob = max((folder / tampered / "blobs" / "sha256").iterdir(), key=lambda p: p.stat().st_size)
    blob.chmod(0o644)
    blob.write_bytes(b"not the evidence")
    return sorted(folder.iterdir())


def _namings(tmp_path: Path) -> Iterator[tuple[list[Path], Path, Path]]:
    """The tampered copy sorted before the honest tar, then after it: (sources, honest,
    tampered)."""
    for tampered, honest in (("a-copy", "b.tar"), ("c-copy", "b.tar")):
        root = tmp_path / tampered
        root.mkdir()
        sources = _copies(root, tampered, honest)
        yield sources, root / "order" / honest, root / "order" / tampered


def _only_the_honest_copy(report: ArchiveReport, honest: Path, tampered: Path) -> str:
    """The bundle passed, from the honest copy alone; the tampered copy refused: its reason."""
    (bundle,) = report.bundles
    assert bundle.sources == (str(honest),)
    assert bundle.failed_check is None and bundle.integrity == "ok"
    (refused,) = report.refused
    assert refused.source == str(tampered)
    assert refused.reason.startswith(f"does not hold the bytes of bundle {bundle.bundle_digest}")
    assert "the manifest says" in refused.reason  # the tampered blob's size, then its name
    assert report.counts.model_dump() == {
        "sources": 2, "bundles": 1, "passed": 1, "failed": 0, "refused": 1,
    }  # fmt: skip
    return refused.reason


def test_a_copy_is_judged_by_its_bytes_not_by_its_name(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Two copies of one manifest, one with a blob tampered with: whichever sorts first, the
    bundle passes from the honest copy, listed alone, and the tampered copy is refused for
    what its bytes lack (ADR 0025); exit 1 both ways."""
    reasons = set()
    for sources, honest, tampered in _namings(tmp_path):
        assert main(["verify-archive", str(honest.parent)]) == 1
        report = _document(capsysbinary.readouterr().out)
        reasons.add(_only_the_honest_copy(report, honest, tampered))
        writer = ArchiveWriter(None)
        verify_archive(sources, writer)
        assert writer.failed
        writer.close()
    assert len(reasons) == 1  # the same verdict for the tampered copy, whatever its name


# --- on Dask (issue 16 point 3, ADR 0026) --------------------------------------------------------


@pytest.fixture(scope="module")
def dask_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real LocalCluster of two workers, threads of this process (processes=False: starting
    worker processes costs seconds; `audit verify-archive --engine dask` starts processes, tested
    once below through the CLI); its scratch space under the test's own temporary folder, as
    the command keeps its own (Dask leaves ``TMPDIR/dask-scratch-space`` behind)."""
    distributed = pytest.importorskip("distributed")
    import dask  # noqa: PLC0415 - with distributed only

    with dask.config.set({"temporary-directory": str(tmp_path_factory.mktemp("dask"))}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _report(run: Callable[[ArchiveWriter], None]) -> tuple[bytes, ArchiveWriter]:
    writer = ArchiveWriter(None)
    run(writer)
    out = io.BytesIO()
    writer.write_json(out)
    writer.close()
    return out.getvalue(), writer


def test_dask_gives_the_bytes_of_one_process_and_hashes_a_shared_blob_once(
    tmp_path: Path, dask_client: Any
) -> None:
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    paths, store = _archive(tmp_path, 12)
    pack(paths[0], tmp_path / "run-00.tar")
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all")
    sources = ordered([*paths, tmp_path / "run-00.tar", tmp_path / "junk.tar"]).sources
    local, single = _report(lambda w: verify_archive(sources, w))
    dasked, spread = _report(lambda w: verify_on_dask(sources, w, client=dask_client))
    assert dasked == local
    distinct = len(list((store / "blobs" / "sha256").iterdir()))
    copy = len(open_source(tmp_path / "run-00.tar").members) - 1  # its blobs, not the manifest
    # each shared blob once; the tar, a copy of run-00, has its bytes checked (ADR 0025)
    assert single.stats.hashed == spread.stats.hashed == distinct + copy
    report = _document(dasked)
    assert report.counts.bundles == len(paths) and report.counts.refused == 1


def test_dask_counts_a_chunks_links_as_one_link_at_a_time_would(
    tmp_path: Path, dask_client: Any
) -> None:
    """A chunk's links are counted on its worker (one statement a file for the driver, not one
    a link): 48 bundles of one store in chunks of three, each shared blob linked three times a
    chunk, each hashed once, and the bytes of one process; so are the ranking's."""
    from verify._dask import _chunk_size, _OnDask, verify_on_dask  # noqa: PLC0415 - Dask

    paths, store = _archive(tmp_path, 48)
    assert _chunk_size(len(paths), 2) == 3
    sources = ordered(paths).sources
    local, single = _report(lambda w: verify_archive(sources, w))
    dasked, spread = _report(lambda w: verify_on_dask(sources, w, client=dask_client))
    assert dasked == local
    distinct = len(list((store / "blobs" / "sha256").iterdir()))
    assert single.stats.hashed == spread.stats.hashed == distinct
    steps = _OnDask(dask_client, list(paths), Job(None))
    try:
        shared = steps.db.execute("SELECT count(*) FROM hashed").fetchone()[0]
    finally:
        steps.close()
    # each blob file of the store two bundles or more link (the store's own link, and theirs)
    blobs = (store / "blobs" / "sha256").iterdir()
    assert shared == sum(blob.stat().st_nlink > 2 for blob in blobs) >= SHARED


def test_a_chunks_links_keep_each_bundles_files_and_count_each_file_once() -> None:
    """:func:`verify._dask._links`: each source's packed keys (None: not linked; a bundle
    with no blob file: none), and each file's count in the chunk with its first and second
    paths, in the order the files were first linked."""
    from verify._dask import _links  # noqa: PLC0415 - imports Dask
    from verify._hashing import packed_key  # noqa: PLC0415

    a, b, c = (1, 10, 5, 0, 0), (1, 11, 5, 0, 0), (1, 12, 5, 0, 0)
    links = _links([[(a, "x/a"), (b, "x/b")], None, [], [(b, "y/b"), (c, "y/c")], [(b, "z/b")]])
    pa, pb, pc = (packed_key(k) for k in (a, b, c))
    assert links.keys == [pa + pb, None, b"", pb + pc, pb]
    assert links.counted == [(pa, 1, b"x/a", None), (pb, 3, b"x/b", b"y/b"), (pc, 1, b"y/c", None)]


def test_dask_verifies_a_tar_as_it_lists_it_with_the_bytes_of_one_process(
    tmp_path: Path, dask_client: Any
) -> None:
    """A tar is verified by the task that lists it (ADR 0031): as the first source of its
    bundle, sound or not, and as a later copy (the check of its bytes): the same report and
    counts. A broken tar sorted first gives way to its bundle's sound directory (ADR 0025)."""
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    paths, _ = _archive(tmp_path, 4)
    pack(paths[1], tmp_path / "a-run-01.tar")  # sorts before archive/: its bundle's first source
    pack(paths[2], tmp_path / "z-run-02.tar")  # sorts after archive/run-02: a copy
    broken = tmp_path / "a-run-03.tar"
    pack(paths[3], broken)
    member = max(open_source(broken).members.values(), key=lambda m: m.size or 0)
    with broken.open("r+b") as file:  # one byte of its largest blob: integrity fails
        file.seek(member.offset)
        byte = file.read(1)
        file.seek(member.offset)
        file.write(bytes([byte[0] ^ 1]))
    sources = ordered([*paths, *tmp_path.glob("*.tar")]).sources
    local, single = _report(lambda w: verify_archive(sources, w))
    dasked, spread = _report(lambda w: verify_on_dask(sources, w, client=dask_client))
    assert dasked == local
    assert single.stats.hashed == spread.stats.hashed
    report = _document(dasked)
    counts = report.counts
    assert (counts.bundles, counts.failed, counts.refused, counts.sources) == (4, 0, 1, 7)
    (refused,) = report.refused
    assert refused.source == str(broken)
    assert refused.reason.startswith("does not hold the bytes of bundle sha256:")
    third = next(b for b in report.bundles if b.run_id == "run-3")
    assert third.sources == (str(paths[3]),) and third.failed_check is None


def test_dask_judges_a_copy_by_its_bytes_with_the_bytes_of_one_process(
    tmp_path: Path, dask_client: Any
) -> None:
    """Stage 3 checks a further directory source; a tar sorted after is checked as listed."""
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    reasons = set()
    for sources, honest, tampered in _namings(tmp_path):
        local, _ = _report(lambda w, s=sources: verify_archive(s, w))
        dasked, writer = _report(lambda w, s=sources: verify_on_dask(s, w, client=dask_client))
        assert dasked == local and writer.failed
        reasons.add(_only_the_honest_copy(_document(dasked), honest, tampered))
    assert len(reasons) == 1


def test_dask_judges_further_directory_copies_with_the_bytes_of_one_process(
    tmp_path: Path, dask_client: Any
) -> None:
    """Copies that are all directories (a store's files shared by hard links), the tampered one
    first, then after the honest one: the same bytes as the default engine, and the files the
    copies share hashed once."""
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    paths, _ = _archive(tmp_path, 2)
    copies = tmp_path / "copies"
    copies.mkdir()
    for name in ("a-tampered", "z-honest"):
        shutil.copytree(paths[1], copies / name, copy_function=os.link)  # the same files
    shutil.copytree(paths[1], copies / "z-honest-again")  # its own files: copies, not links
    own = max((copies / "a-tampered" / "blobs" / "sha256").iterdir(), key=os.path.getsize)
    own.unlink()  # the link to the store's file gone; a file of other bytes in its place
    own.write_bytes(b"not the evidence")
    sources = ordered([*paths, *sorted(copies.iterdir())]).sources
    local, single = _report(lambda w: verify_archive(sources, w))
    dasked, spread = _report(lambda w: verify_on_dask(sources, w, client=dask_client))
    assert dasked == local
    assert single.stats.hashed == spread.stats.hashed
    report = _document(dasked)
    second = next(b for b in report.bundles if b.run_id == "run-1")
    assert second.sources == tuple(
        str(p) for p in (paths[1], copies / "z-honest", copies / "z-honest-again")
    )
    (refused,) = report.refused
    assert refused.source == str(copies / "a-tampered")


def test_when_no_copy_holds_every_byte_the_first_is_listed_with_its_likes(
    tmp_path: Path, dask_client: Any
) -> None:
    """No source holds every byte: the entry is the first source's (failed), listed with the
    copies of the same findings; a copy that lacks other bytes is refused. Both engines."""
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    original = tmp_path / "original"
    write_small_bundle(original, {"data/x.bin": b"the evidence"}, durable=False, run_id="copied")
    blobs = sorted((original / "blobs" / "sha256").iterdir())
    folder = tmp_path / "copies"
    for name, tampered in (("a", blobs[0]), ("b", blobs[0]), ("c", blobs[1])):
        shutil.copytree(original, folder / name)
        blob = folder / name / tampered.relative_to(original)
        blob.chmod(0o644)
        blob.write_bytes(b"not the evidence")
    sources = ordered(sorted(folder.iterdir())).sources
    local, _ = _report(lambda w: verify_archive(sources, w))
    dasked, writer = _report(lambda w: verify_on_dask(sources, w, client=dask_client))
    assert dasked == local and writer.failed
    report = _document(local)
    (bundle,) = report.bundles
    assert bundle.sources == (str(folder / "a"), str(folder / "b"))
    assert bundle.integrity == "failed"
    (refused,) = report.refused
    assert refused.source == str(folder / "c")
    assert blobs[1].name in refused.reason and blobs[0].name not in refused.reason


def test_a_local_cluster_runs_its_workers_without_the_profiler_or_malloc_trimming() -> None:
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    from verify._dask import _local_config  # noqa: PLC0415 - imports Dask

    config = _local_config()
    assert config["distributed.worker.profile.enabled"] is False
    default = dask.config.get("distributed.nanny.pre-spawn-environ")
    assert "MALLOC_TRIM_THRESHOLD_" in default  # Dask's default, which the workers do without
    assert config["distributed.nanny.pre-spawn-environ"] == {
        name: value for name, value in default.items() if name != "MALLOC_TRIM_THRESHOLD_"
    }  # the rest (one BLAS thread each) kept


def test_json_is_the_default_and_may_be_asked_for(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """DESIGN's CLI contract: ``--json`` writes one JSON document; verify-archive's default is
    that document, so the flag gives the same bytes and excludes the other formats."""
    _archive(tmp_path, 2)
    assert main(["verify-archive", str(tmp_path / "archive")]) == 0
    default = capsysbinary.readouterr().out
    assert main(["verify-archive", str(tmp_path / "archive"), "--json"]) == 0
    assert capsysbinary.readouterr().out == default
    assert main(["verify-archive", str(tmp_path / "archive"), "--json", "--csv"]) == 2


def test_the_dask_engine_through_the_cli(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    pytest.importorskip("distributed")
    paths, _ = _archive(tmp_path, 3)
    assert main(["verify-archive", str(tmp_path / "archive")]) == 0
    local = capsysbinary.readouterr().out
    argv = ["verify-archive", str(tmp_path / "archive"), "--engine", "dask", "--workers", "1"]
    assert main(argv) == 0
    assert capsysbinary.readouterr().out == local
    assert main(["verify-archive", str(paths[0]), "--workers", "2"]) == 2


def test_the_local_clusters_workers_are_forked_with_the_verifier_imported(
    tmp_path: Path,
) -> None:
    """ADR 0035: the LocalCluster the command starts forks its workers, which hold the
    verifier's modules before any task (a spawned worker would import them again)."""
    pytest.importorskip("distributed")
    from verify._dask import _client  # noqa: PLC0415 - Dask only where the test needs it

    client, cluster = _client(None, 1, str(tmp_path))
    try:
        # a lambda goes by value: unpickling it imports nothing of the project
        answers = client.run(lambda: ("verify._dask" in sys.modules, os.getppid()))
    finally:
        client.close()
        cluster.close()
    ((imported, parent),) = answers.values()
    assert imported
    assert parent == os.getpid()
    # results come from the workers, not through the scheduler in the command's process
    assert client.direct_to_workers is True


LOGGING_WORKER = """
import logging, sys
from verify._dask import _client

def log():
    try:
        raise OSError("Stream is closed")
    except OSError:
        logging.getLogger("distributed.worker").exception("Failed during heartbeat.")
    logging.getLogger("distributed.nanny").error("worker gone")

client, cluster = _client(None, 1, sys.argv[1])
client.run(log)
client.close()
cluster.close()
"""


def test_the_local_clusters_own_log_lines_never_reach_the_terminal(tmp_path: Path) -> None:
    """Never a traceback: a worker of the LocalCluster the command starts logs an error with a
    traceback when its heartbeat meets the scheduler closing (a race of Dask's at a close, seen
    about once in seven runs of 10,000 bundles). A task's failure reaches the command as its
    exception; what a worker or nanny logs of Dask's own stays off the terminal. In a process
    of its own, as the command runs (the workers write to the stderr they inherit)."""
    pytest.importorskip("distributed")
    done = subprocess.run(
        [sys.executable, "-c", LOGGING_WORKER, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == ""


def test_the_local_cluster_makes_no_log_record_below_critical_while_it_runs() -> None:
    """A record of Dask's below CRITICAL is not made while the command's LocalCluster runs,
    in this process or in its forked workers, so it takes no handler's lock (a worker forked
    while another thread held one waited forever at its first record); the levels are
    restored after."""
    pytest.importorskip("distributed")
    import logging  # noqa: PLC0415

    from verify._dask import _session  # noqa: PLC0415 - Dask only where the test needs it

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    before = {name: logging.getLogger(name).level for name in ("distributed", "distributed.client")}
    logging.getLogger().addHandler(handler)
    try:
        with _session(None, None, 2) as client:
            enabled = client.run(
                lambda: [
                    logging.getLogger(name).isEnabledFor(logging.ERROR)
                    for name in ("distributed.worker", "distributed.nanny", "distributed.core")
                ]
            )
            here = logging.getLogger("distributed.scheduler").isEnabledFor(logging.ERROR)
    finally:
        logging.getLogger().removeHandler(handler)
    assert list(enabled.values()) == [[False, False, False]] * 2
    assert not here
    made = [(r.name, r.levelname) for r in records if r.name.startswith("distributed")]
    assert not [m for m in made if m[1] != "CRITICAL"], made
    assert before == {name: logging.getLogger(name).level for name in before}


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `dask scheduler` and one `dask worker`, processes started from `/` (as on any real
    cluster, not the command's working directory), on 127.0.0.1 at ports the system chose;
    killed at the end. The worker runs this source tree (PYTHONPATH)."""
    distributed = pytest.importorskip("distributed")
    dask = Path(sys.executable).with_name("dask")
    if not dask.exists():
        pytest.skip("no dask command next to this interpreter")
    root = tmp_path_factory.mktemp("cluster")
    file = root / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def start(*args: str | Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [dask, *args], cwd="/", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    started = [start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", file)]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        address = None
        while address is None and time.monotonic() < deadline:
            try:  # written by the scheduler once it listens
                address = json.loads(file.read_text("utf-8"))["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.05)
        assert address is not None, "the scheduler did not start"
        options = ["--nthreads", "1", "--no-nanny", "--no-dashboard"]
        worker = ["worker", address, "--host", "127.0.0.1", *options]
        started.append(start(*worker, "--local-directory", root / "worker"))
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for process in reversed(started):
            process.kill()
            process.wait()


def test_a_scheduler_elsewhere_opens_relative_paths_as_the_command_does(
    tmp_path: Path,
    scheduler: str,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """`--scheduler ADDRESS`: a worker whose working directory is another opens the command's
    relative paths (and a relative list file's lines) at their absolute paths, and the report
    names them as given: the default engine's bytes."""
    paths, _ = _archive(tmp_path, 3)
    pack(paths[0], tmp_path / "run-00.tar")  # a copy, its bytes checked by its listing task
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all")
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "runs.txt").write_text("../junk.tar\n../run-00.tar\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ["verify-archive", "archive", "--from", "lists/runs.txt"]
    assert main(argv) == 1
    local = capsysbinary.readouterr().out
    assert main([*argv, "--engine", "dask", "--scheduler", scheduler]) == 1
    assert capsysbinary.readouterr().out == local
    report = _document(local)
    assert report.counts.model_dump() == {
        "sources": 5, "bundles": 3, "passed": 3, "failed": 0, "refused": 1,
    }  # fmt: skip
    assert report.bundles[0].sources != () and all(
        not source.startswith("/") for bundle in report.bundles for source in bundle.sources
    )
    (refused,) = report.refused
    assert refused.source == "lists/../junk.tar"
    assert "not a readable uncompressed tar" in refused.reason
    # named relative as given (in the folder's order: the archive sorts its sources)
    assert sorted(str(p) for p in expand("archive")) == sorted(f"archive/{p.name}" for p in paths)


def test_the_local_cluster_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """The LocalCluster the command starts keeps its workers' scratch space in a temporary
    folder of its own, removed when it closes (Dask's default, ``TMPDIR/dask-scratch-space``,
    is left behind); the spool files and indexes are unlinked: a private ``TMPDIR`` is as
    empty after the command as before it."""
    pytest.importorskip("distributed")
    _archive(tmp_path, 2)
    private = tmp_path / "tmp"
    private.mkdir()
    argv = ["verify-archive", str(tmp_path / "archive"), "--engine", "dask", "--workers", "1"]
    code = f"import sys; from audit.cli import main; sys.exit(main({argv!r}))"
    environ = os.environ | {"TMPDIR": str(private)}
    run = [sys.executable, "-c", code]
    result = subprocess.run(run, capture_output=True, env=environ, check=False)
    assert result.returncode == 0, result.stderr
    assert list(private.iterdir()) == []


def test_without_the_flag_nothing_imports_dask(tmp_path: Path) -> None:
    _archive(tmp_path, 2)
    code = (
        "import sys; from audit.cli import main; "
        f"main(['verify-archive', {str(tmp_path / 'archive')!r}]); "
        "sys.exit(3 if 'dask' in sys.modules or 'distributed' in sys.modules else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert result.returncode == 0, result.stderr
