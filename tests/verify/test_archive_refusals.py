"""Archive caps configured in process (the corpus in tests/data/hostile runs every hostile archive
through the CLI: see tests/hostile/test_hostile_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.hostile.generate import craft
from verify import HostileArchive, Limits, open_source


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


def test_a_refusal_names_the_member_and_its_header_offset(
    small_bundle: Path, tmp_path: Path
) -> None:
    craft(tmp_path / "b.tar", small_bundle, [])
    with pytest.raises(HostileArchive, match=r"header at offset \d+: member '[^']+' declares"):
        open_source(tmp_path / "b.tar", Limits(max_member_size=8))
