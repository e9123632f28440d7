"""Archives at scale: `audit rank` and `audit rejudge` verify each bundle digest once per pin set
(a further source of it is only checked for its bytes, and verified itself only when they
differ), and keep only the facts of each verdict that the ranking reads, never a bundle's whole
evidence."""

from __future__ import annotations

import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verify.judging
from audit.cli import main
from bundle_schema.models import PinSetRef
from tests.audit.test_rank_archive import DEPLOYMENT, FULL, FULL_RUN, Archive, _corrupt
from tests.conftest import DEPLOYMENT_PINS
from verify import Verification, verify_with_evidence
from verify.ranking import Entry, Facts, Ranked, rank

PINS = ["--pins", str(DEPLOYMENT_PINS)]


@pytest.fixture
def verified(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The source of every verification the archive commands make, in order (they still
    verify: this only records)."""
    seen: list[str] = []
    real = verify.judging.verify_bundle

    def recording(bundle: Any, **options: Any) -> Verification:
        assert not options.get("keep_evidence"), "an archive keeps no bundle's whole evidence"
        seen.append(str(bundle.location))
        return real(bundle, **options)

    monkeypatch.setattr(verify.judging, "verify_bundle", recording)
    yield seen


def _links(target: Path, root: Path, count: int, name: str = "link") -> list[str]:
    """``count`` hard links to one tar, as a mirror of an archive on one disk holds them."""
    paths = []
    for index in range(count):
        link = root / f"{name}-{index}.tar"
        os.link(target, link)
        paths.append(str(link))
    return paths


def test_each_bundle_digest_is_verified_once_per_pin_set(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    verified: list[str],
) -> None:
    archive = Archive(tmp_path, ranked_examples)
    full = archive.copy(FULL, "full")
    paths = [str(full), str(archive.tar(full)), *_links(archive.tar(full), tmp_path, 3)]
    assert main(["rank", *paths, *PINS, "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert verified == [str(full)]  # the first source by path, then reused
    ((row,),) = [ranking["ranked"]]
    assert row["source"] == ", ".join(sorted(paths))  # every source still named

    verified.clear()
    stricter = tmp_path / "stricter.toml"
    stricter.write_text(
        DEPLOYMENT_PINS.read_text("utf-8").replace("aggregate = 70", "aggregate = 90", 1), "utf-8"
    )
    code = main(["rejudge", *paths, "--pins", str(stricter), "--before", str(DEPLOYMENT_PINS),
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert verified == [str(full), str(full)]  # before, and under --pins
    assert report["bundles"] == 1
    (changed,) = report["changed"]
    assert changed["bundle"] == ", ".join(sorted(paths))


def _corrupt_tar(tar: Path) -> Path:
    """The tar with one byte of its first blob changed (``audit pack`` packs no broken bundle)."""
    with tarfile.open(tar) as archive:
        blob = next(m for m in archive.getmembers() if m.name.startswith("blobs/") and m.size)
    with tar.open("r+b") as file:
        file.seek(blob.offset_data)
        first = file.read(1)
        file.seek(blob.offset_data)
        file.write(bytes([first[0] ^ 1]))
    return tar


def test_a_copy_whose_bytes_differ_is_verified_itself_whichever_sorts_first(
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    verified: list[str],
) -> None:
    """A broken verdict may be one copy's (a corrupted blob): a copy of the same digest with
    other bytes is verified, and the first intact one counts; hard links to the very tar are
    not verified again, nor a copy whose bytes the check finds the same."""
    archive = Archive(tmp_path, ranked_examples)
    corrupt = _corrupt(archive.copy(FULL, "a-corrupt"))
    links = _links(_corrupt_tar(archive.tar(archive.copy(FULL, "to-pack"))), tmp_path, 2, "a-link")
    intact = archive.copy(FULL, "b-intact")
    paths = [str(intact), *links, str(corrupt)]
    assert main(["rank", *paths, *PINS, "--markdown"]) == 0
    text = capsys.readouterr().out
    assert verified == [str(corrupt), links[0], str(intact)]  # by path; link 1 is link 0's file
    assert f"| 1 | {FULL_RUN} |" in text
    for source in (corrupt, *links):
        assert f"- {source}: the same bundle as {intact}, verified differently" in text

    verified.clear()
    assert main(["rank", *links, *PINS, "--json"]) == 0
    capsys.readouterr()
    assert verified == [links[0]]  # the second link is the same file: its verdict is reused

    verified.clear()  # sorted after the intact bundle, a corrupted copy is still found
    later = [str(archive.copy(FULL, "0-intact")), str(intact), *links, str(corrupt)]
    assert main(["rank", *later, *PINS, "--markdown"]) == 0
    text = capsys.readouterr().out
    assert verified == [later[0], str(corrupt), links[0]]  # b-intact: checked, the same bytes
    assert f"- {intact}: the same bundle" not in text
    for source in (corrupt, *links):
        assert f"- {source}: the same bundle as {later[0]}, verified differently" in text


def test_an_entry_ranks_as_the_verdict_and_evidence_it_keeps_the_facts_of(
    ranked_examples: dict[str, Path],
) -> None:
    ranked, entries = [], []
    for name, path in ranked_examples.items():
        verdict, evidence = verify_with_evidence(path, pins=DEPLOYMENT)
        ranked.append(Ranked(name, verdict, evidence))
        entries.append(Entry(name, Facts.of(verdict, evidence)))
    pins = PinSetRef(id=DEPLOYMENT.id, digest=DEPLOYMENT.digest)
    assert rank(entries, pins) == rank(ranked, pins)
    assert rank(entries, pins).ranked  # something is placed
