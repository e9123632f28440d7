"""Upstream checkouts with real git repositories made in temp directories."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from audit.checkouts import CheckoutFailed, checkout, describe, git_blob_id
from audit.demo.examples import EXAMPLES_DIR, build_upstream
from bundle_schema.errors import InvalidInput
from pins import load_builtin
from pins._model import Upstream

V5 = load_builtin("gx10-reference-v5").pins


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    """The hermesbench reference harness as a real repository at its pinned commit."""
    commit, _ = build_upstream(EXAMPLES_DIR / "upstreams" / "hermesbench", tmp_path / "mirror")
    assert commit == V5.upstreams["hermesbench"].commit
    return tmp_path / "mirror"


def test_a_checkout_at_the_pinned_commit_is_recorded_whole(mirror: Path, tmp_path: Path) -> None:
    result = checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co", mirror)
    assert result.commit == V5.upstreams["hermesbench"].commit
    assert result.clean
    assert (result.submodules, result.remote_url, result.source) == ("", str(mirror), str(mirror))
    assert result.tree == git.Repo(mirror).head.commit.tree.hexsha
    listed = {line.split()[2] for line in result.listing.decode().splitlines()}
    assert listed == set(result.files)
    assert all(git_blob_id(data) == blob for blob, data in result.files.items())


def test_git_blob_ids_are_gits(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path)
    (tmp_path / "f").write_bytes(b"hello\n")
    assert git_blob_id(b"hello\n") == repo.git.hash_object("f")


def test_a_dirty_checkout_shows(mirror: Path, tmp_path: Path) -> None:
    checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co", mirror)
    (tmp_path / "co" / "hermes" / "evaluator.py").write_text("print('changed')\n")
    again = describe(
        "hermesbench", "reference://hermesbench", str(mirror), git.Repo(tmp_path / "co")
    )
    assert not again.clean
    assert again.porcelain == " M hermes/evaluator.py"
    listed = {line.split()[2] for line in again.listing.decode().splitlines()}
    assert listed != set(again.files)  # the changed file no longer matches the commit


def test_a_pinned_commit_that_does_not_exist(mirror: Path, tmp_path: Path) -> None:
    missing = Upstream(repository="reference://hermesbench", commit="0" * 40)
    with pytest.raises(
        CheckoutFailed, match="cannot check out 0000000000000000000000000000000000000000"
    ):
        checkout("hermesbench", missing, tmp_path / "co", mirror)


def test_a_reference_repository_needs_its_mirror(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="give its mirror path"):
        checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co")


def test_a_checkout_needs_a_new_directory(mirror: Path, tmp_path: Path) -> None:
    (tmp_path / "co").mkdir()
    (tmp_path / "co" / "x").write_text("x")
    with pytest.raises(InvalidInput, match="not empty"):
        checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co", mirror)
