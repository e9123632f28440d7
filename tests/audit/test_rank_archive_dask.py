"""``audit rank`` and ``audit rejudge`` with ``--engine dask`` (issue 16 point 3, ADR 0026): the
same archive as in this process, for every way an archive counts its bundles
(tests/audit/test_rank_archive.py), on a real Dask cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from pins import parse_pin_set
from tests.audit.test_rank_archive import CASES, DEPLOYMENT, FULL, Archive
from tests.audit.test_rank_archive_once import _corrupt_tar, _links
from tests.conftest import DEPLOYMENT_PINS
from tests.http_range import RangeServer
from tests.verify.test_shown_url_queries import _urls, presigned  # noqa: F401 - the fixture
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify.archive import MASKED_TWIN
from verify.judging import Here, Job, Whole, judge_archive

pytest.importorskip("distributed")

STRICTER = DEPLOYMENT_PINS.read_text("utf-8").replace("aggregate = 70", "aggregate = 90", 1)


def _both(sources: list[Any], job: Job, client: Any) -> tuple[Whole, Whole]:
    """The archive judged in this process, and on Dask, where every step the walk takes was
    foreseen (done in the tasks of one of the three stages, none a task of its own)."""
    from verify._dask import _OnDask  # noqa: PLC0415 - imports Dask

    steps = _OnDask(client, sources, job)
    try:
        with judge_archive(sources, steps) as there:
            assert steps.late == 0
            with judge_archive(sources, Here(sources, job)) as here:
                return here.whole(), there.whole()
    finally:
        steps.close()


def _tars_linked_and_one_corrupt(a: Archive) -> list[Path]:
    """A mirror of tars: hard links to one, and a corrupted copy sorted first."""
    full = a.copy(FULL, "full")
    tar = a.tar(full)
    corrupt = a.root / "a-corrupt.tar"
    corrupt.write_bytes(tar.read_bytes())
    _corrupt_tar(corrupt)
    return [full, tar, corrupt, *(Path(p) for p in _links(tar, a.root, 2))]


BUILDS = {case: build for case, (build, _) in CASES.items()}
BUILDS["hard links to a tar, and a corrupted copy first"] = _tars_linked_and_one_corrupt


@pytest.mark.parametrize("case", list(BUILDS))
def test_dask_judges_an_archive_as_one_process_does(
    case: str,
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    archive = Archive(tmp_path, ranked_examples)
    sources: list[Any] = list(BUILDS[case](archive))
    stricter = parse_pin_set(STRICTER.encode(), "stricter.toml")
    for job in (Job(DEPLOYMENT), Job(stricter, rejudge=True, before=DEPLOYMENT)):
        here, there = _both(sources, job, dask_client)
        assert there == here
        assert here.bundles  # every case has a bundle that is judged
        assert all(bundle.diff is not None for bundle in here.bundles) == job.rejudge


def test_relative_paths_on_dask_name_the_sources_as_given(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    dask_client: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    archive = Archive(tmp_path, ranked_examples)
    full = archive.copy(FULL, "full")
    archive.tar(full)
    junk = archive.junk("junk.tar", b"not a tar at all")
    monkeypatch.chdir(tmp_path)
    sources: list[Any] = [Path("full"), Path("full.tar"), Path(junk.name)]
    here, there = _both(sources, Job(DEPLOYMENT), dask_client)
    assert there == here
    assert here.refused == [("junk.tar", "not a readable uncompressed tar: truncated header")]
    (bundle,) = here.bundles
    assert bundle.sources == ("full", "full.tar")


def test_rank_and_rejudge_on_dask_through_the_cli(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = Archive(tmp_path, ranked_examples)
    full = archive.copy(FULL, "full")
    paths = [str(full), str(archive.tar(full)), str(archive.junk("junk.tar", b"junk"))]
    stricter = tmp_path / "stricter.toml"
    stricter.write_text(STRICTER, "utf-8")
    commands = [
        ["rank", *paths, "--pins", str(DEPLOYMENT_PINS), "--json"],
        ["rejudge", *paths, "--pins", str(stricter), "--before", str(DEPLOYMENT_PINS), "--csv"],
    ]
    for argv in commands:
        assert main(argv) == 1  # the junk is refused
        local = capsys.readouterr()
        assert main([*argv, "--engine", "dask", "--workers", "2"]) == 1
        dasked = capsys.readouterr()
        assert (dasked.out, dasked.err) == (local.out, local.err)
    ranking = json.loads(main_out(capsys, commands[0]))
    assert [row["source"] for row in ranking["ranked"]] == [f"{full}, {full}.tar"]


def main_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    main(argv)
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["rank", "rejudge"])
def test_engine_options_that_do_not_go_together_are_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = ["--pins", "gx10-reference-v5"]
    assert main([command, str(tmp_path), *pins, "--workers", "2"]) == 2
    assert "--scheduler and --workers are options of --engine dask" in capsys.readouterr().err
    argv = [command, str(tmp_path), *pins, "--engine", "dask", "--scheduler", "tcp://[::1]:1"]
    assert main([*argv, "--workers", "2"]) == 2
    assert "an existing cluster (--scheduler) has its own workers" in capsys.readouterr().err


def test_dask_refuses_a_masked_twin_as_one_process_does(
    presigned: RangeServer,  # noqa: F811 - the fixture
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    """Tars at URLs, one given twice under two signatures (shown alike): the twin is refused
    by the walk, not listed or verified on the cluster."""
    found, again, missing = _urls(presigned)
    here, there = _both([again, missing, found], Job(None), dask_client)
    assert there == here
    assert [reason for _, reason in here.refused] == [  # in the walk's order, by name
        "cannot open: not found (HTTP 404)",
        MASKED_TWIN,
    ]
