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


def test_a_failed_checkout_says_what_git_said(mirror: Path, tmp_path: Path) -> None:
    """git's own last message is the reason (GitPython wraps git's stderr in ``stderr: '...'``,
    whose last line is the closing quote alone)."""
    missing = Upstream(repository="reference://hermesbench", commit="0" * 40)
    with pytest.raises(CheckoutFailed) as failed:
        checkout("hermesbench", missing, tmp_path / "co", mirror)
    reason = str(failed.value).rsplit(": ", 1)[-1]
    assert "0" * 40 in str(failed.value)
    assert reason.strip("' ") and not reason.endswith("'"), str(failed.value)
    assert "fatal" in str(failed.value) or "not" in reason, str(failed.value)


def test_a_reference_repository_needs_its_mirror(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="give its mirror path"):
        checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co")


def test_a_checkout_needs_a_new_directory(mirror: Path, tmp_path: Path) -> None:
    (tmp_path / "co").mkdir()
    (tmp_path / "co" / "x").write_text("x")
    with pytest.raises(InvalidInput, match="not empty"):
        checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co", mirror)


def _upstream_with_a_link_and_a_submodule(tmp_path: Path) -> tuple[Path, Upstream]:
    """A repository whose commit tracks a file, a symbolic link to a file outside it, and a
    submodule (a gitlink): the shapes a real harness's repository can have."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not the harness's\n")
    sub = git.Repo.init(tmp_path / "sub")
    (tmp_path / "sub" / "s.txt").write_text("sub\n")
    sub.index.add(["s.txt"])
    sub_commit = sub.index.commit("sub").hexsha
    root = tmp_path / "upstream"
    repo = git.Repo.init(root)
    (root / "a.txt").write_text("a\n")
    (root / "link").symlink_to(outside)
    (root / ".gitmodules").write_text(f'[submodule "vendored"]\n\tpath = vendored\n'
                                      f"\turl = {tmp_path / 'sub'}\n")  # fmt: skip
    repo.index.add(["a.txt", "link", ".gitmodules"])
    repo.git.update_index("--add", "--cacheinfo", f"160000,{sub_commit},vendored")
    commit = repo.index.commit("harness").hexsha
    return root, Upstream(repository="https://example.invalid/harness", commit=commit)


def test_a_link_is_recorded_as_git_stores_it_and_a_submodule_is_passed_over(
    tmp_path: Path,
) -> None:
    root, upstream = _upstream_with_a_link_and_a_submodule(tmp_path)
    done = checkout("harness", upstream, tmp_path / "co", root)
    outside = str(tmp_path / "outside.txt").encode()
    # the link's target text, never its file's
    assert set(done.files.values()) == {b"a\n", outside, (root / ".gitmodules").read_bytes()}
    listed = {line.split()[2] for line in done.listing.decode().splitlines()}
    blobs = {line.split()[2] for line in done.listing.decode().splitlines() if " blob " in line}
    assert set(done.files) == blobs and blobs < listed  # the gitlink is listed, not a file


def test_a_tracked_file_missing_from_the_checkout_makes_it_dirty_not_a_crash(
    mirror: Path, tmp_path: Path
) -> None:
    # e.g. a mirror that lacks a blob of the pinned commit: git checks out what it can
    checkout("hermesbench", V5.upstreams["hermesbench"], tmp_path / "co", mirror)
    (tmp_path / "co" / "hermes" / "evaluator.py").unlink()
    again = describe(
        "hermesbench", "reference://hermesbench", str(mirror), git.Repo(tmp_path / "co")
    )
    assert not again.clean
    assert again.porcelain == " D hermes/evaluator.py"


def _monorepo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with a harness in one directory and a large file elsewhere; returns it, the
    commit, and the blob id of the large file."""
    root = tmp_path / "mono"
    repo = git.Repo.init(root)
    (root / "harness" / "pkg").mkdir(parents=True)
    (root / "harness" / "pkg" / "run.py").write_text("print('harness')\n")
    (root / "harness" / "data.json").write_text("[1, 2, 3]\n")
    (root / "other").mkdir()
    (root / "other" / "big.bin").write_bytes(b"\0" * 100_000)
    (root / "README.md").write_text("top\n")
    repo.index.add(["harness/pkg/run.py", "harness/data.json", "other/big.bin", "README.md"])
    commit = repo.index.commit("monorepo").hexsha
    return root, commit, git_blob_id(b"\0" * 100_000)


def test_a_sparse_checkout_keeps_its_directories_and_lists_the_whole_commit(
    tmp_path: Path,
) -> None:
    root, commit, big = _monorepo(tmp_path)
    upstream = Upstream(repository="https://example.invalid/mono", commit=commit,
                        paths=("harness",))  # fmt: skip
    done = checkout("mono", upstream, tmp_path / "co", root)
    assert done.clean and done.commit == commit
    assert sorted(done.files.values()) == [b"[1, 2, 3]\n", b"print('harness')\n", b"top\n"]
    assert big in done.listing.decode()  # named by the listing: the commit pins it
    assert not (tmp_path / "co" / "other").exists()  # not there while the harness runs
    assert (tmp_path / "co" / "harness" / "pkg" / "run.py").exists()


def test_a_sparse_checkout_needs_no_byte_outside_its_directories(tmp_path: Path) -> None:
    """A mirror that lacks a blob of the commit outside the directories (a snapshot that leaves
    out its largest files) checks out clean; the whole tree is not clean (the file deleted)."""
    root, commit, big = _monorepo(tmp_path)
    loose = root / ".git" / "objects" / big[:2] / big[2:]
    loose.unlink()
    sparse = Upstream(repository="https://example.invalid/mono", commit=commit,
                      paths=("harness",))  # fmt: skip
    done = checkout("mono", sparse, tmp_path / "sparse", root)
    assert done.clean and len(done.files) == 3
    whole = Upstream(repository="https://example.invalid/mono", commit=commit)
    assert checkout("mono", whole, tmp_path / "whole", root).porcelain == " D other/big.bin"


@pytest.mark.parametrize(
    "path", ["", ".", "..", "a/../b", "/abs", "a//b", "a/", "-x", "a/*", "a\\b", "a b"]
)
def test_a_sparse_path_must_name_a_directory_plainly(path: str) -> None:
    with pytest.raises(ValueError, match="paths"):
        Upstream(repository="https://example.invalid/mono", commit="a" * 40, paths=(path,))


def test_a_harness_must_run_inside_its_sparse_directories() -> None:
    data = load_builtin("gx10-qualification-v5").pins.model_dump()
    data["upstreams"]["bfcl"]["paths"] = ("somewhere-else",)
    with pytest.raises(ValueError, match=r"harnesses\.bfcl: workdir"):
        type(load_builtin("gx10-qualification-v5").pins).model_validate(data)


def test_a_harness_at_the_top_of_a_sparse_checkout_runs_on_the_top_s_files() -> None:
    """Cone mode keeps the files at the top: a harness whose code is there (Spark Bench, whose
    results/ is not checked out) runs at the top; a directory at the top is not held unless
    named, a file at the top is."""
    loaded = load_builtin("gx10-qualification-v5").pins
    spark = loaded.upstreams["sparkbench"]
    assert spark.paths == ("recipes",) and loaded.harnesses["sparkbench"].workdir == "."
    assert spark.holds(".", directory=True) and spark.holds("spark_bench.py", directory=False)
    assert spark.holds("recipes/README.md", directory=False)
    assert not spark.holds("results", directory=True)
    assert not spark.holds("results/index.html", directory=False)
    data = loaded.model_dump()
    data["harnesses"]["sparkbench"]["workdir"] = "results"
    with pytest.raises(ValueError, match=r"harnesses\.sparkbench: workdir 'results' is not under"):
        type(loaded).model_validate(data)
