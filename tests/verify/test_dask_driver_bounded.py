"""The Dask engine's driver does not grow with the archive (ADR 0026 point 8): it holds at most
a window of chunks in flight, not a stage's every task, whatever the archive's size; it starts
its LocalCluster before it reads the first source (so its forked workers inherit nothing of the
archive); and it gives the bytes of one process over an archive of more chunks than its
window, with copies and refusals among them. The memory itself is measured, not timed, in
benchmarks/archive_memory.py (docs/performance.md)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit._archive import pack
from tests.verify.test_verify_archive import _archive, _report, dask_client  # noqa: F401
from verify.archive import ArchiveWriter, ordered, verify_archive
from verify.judging import Here, Job, judge_archive

distributed = pytest.importorskip("distributed")


class Counting:
    """A real client that counts the futures the driver holds: submitted and not yet
    released, the most at once."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.held = 0
        self.most = 0
        self.submitted = 0

    def submit(self, *args: Any, **kwargs: Any) -> Tracked:
        self._taken(1)
        return Tracked(self, self.client.submit(*args, **kwargs))

    def map(self, function: Any, chunks: list[Any], **kwargs: Any) -> list[Tracked]:
        self._taken(len(chunks))
        return [Tracked(self, f) for f in self.client.map(function, chunks, **kwargs)]

    def _taken(self, count: int) -> None:
        self.submitted += count
        self.held += count
        self.most = max(self.most, self.held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class Tracked:
    """A real future; its release counted."""

    def __init__(self, counting: Counting, future: Any) -> None:
        self.counting, self.future = counting, future

    def result(self) -> Any:
        return self.future.result()

    def release(self) -> None:
        self.counting.held -= 1
        self.future.release()


def _sources(tmp_path: Path) -> list[Any]:
    """60 bundles (chunks of 3 on two workers: 20 chunks a stage, more than a window of 8),
    a tar copy of one, a directory copy of another with one blob changed, and junk."""
    paths, _ = _archive(tmp_path, 60)
    pack(paths[3], tmp_path / "z-run-03.tar")
    tampered = tmp_path / "z-run-07"
    shutil.copytree(paths[7], tampered)
    own = max((tampered / "blobs" / "sha256").iterdir(), key=lambda p: p.stat().st_size)
    own.unlink()
    own.write_bytes(b"not the evidence")
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    return list(
        ordered([*paths, tmp_path / "z-run-03.tar", tampered, tmp_path / "junk.tar"]).sources
    )


def test_verify_archive_keeps_a_window_of_chunks_in_flight(
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify._dask import WINDOW, verify_on_dask  # noqa: PLC0415 - imports Dask

    sources = _sources(tmp_path)
    local, _ = _report(lambda w: verify_archive(sources, w))
    counting = Counting(dask_client)
    dasked, _ = _report(lambda w: verify_on_dask(iter(sources), w, client=counting))
    assert dasked == local
    workers = len(dask_client.scheduler_info()["workers"])
    assert counting.submitted > 2 * WINDOW * workers  # two stages of more chunks than a window
    assert counting.most == WINDOW * workers


def test_rank_keeps_a_window_of_chunks_in_flight(
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    from verify._dask import WINDOW, _OnDask  # noqa: PLC0415 - imports Dask

    sources = _sources(tmp_path)
    job = Job(None)
    counting = Counting(dask_client)
    with _OnDask(counting, sources, job) as steps, judge_archive(sources, steps) as there:
        assert steps.late == 0
        with judge_archive(sources, Here(sources, job)) as here:
            assert there.whole() == here.whole()
    workers = len(dask_client.scheduler_info()["workers"])
    assert counting.submitted > 2 * WINDOW * workers
    assert counting.most == WINDOW * workers


def test_the_local_cluster_is_up_before_the_first_source_is_read(tmp_path: Path) -> None:
    """And Dask's logs of recent messages are short: each kept every chunk's task."""
    from verify._dask import LOG_LENGTH, verify_on_dask  # noqa: PLC0415 - imports Dask

    paths, _ = _archive(tmp_path, 2)
    clients: list[Any] = []
    kept: list[int] = []

    def sources() -> Iterator[Path]:
        client = distributed.default_client()  # raises ValueError when there is none
        clients.append(client)
        kept.append(client.scheduler_comm.recent_message_log.maxlen)
        yield from paths

    writer = ArchiveWriter(None)
    try:
        verify_on_dask(sources(), writer, workers=1)
        out = io.BytesIO()
        writer.write_json(out)
    finally:
        writer.close()
    assert len(clients) == 1 and clients[0].status == "closed"  # the command's, closed after
    assert kept == [LOG_LENGTH]  # its stream keeps 16 recent messages, not Dask's 1,000
    assert b'"bundles":2' in out.getvalue()
