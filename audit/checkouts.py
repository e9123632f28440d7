"""Upstream checkouts: each pinned harness cloned at its exact commit, proven clean, and kept as
content-addressed evidence.

An upstream is cloned with gitpython from a local mirror path when one is given, else from its
repository URL, and checked out (detached) at the pinned commit: the whole tree, or, when its
pin names ``paths``, those directories alone (a sparse checkout; the listing still names every
file of the commit, and only the files checked out are kept). The record holds the commit, the
tree id, ``git status --porcelain`` (empty when clean), the submodule states and the remote URL;
the tracked files are kept by git blob id, with the ``git ls-tree -r`` listing that names them,
so that a reader can check every file against the commit.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import git

from audit._faults import point
from bundle_schema import canonical_bytes
from bundle_schema.errors import CheckFailed, InvalidInput
from bundle_schema.models import CheckoutState
from pins import Upstream
from verify import git_blob_id

__all__ = ["Checkout", "CheckoutFailed", "checkout", "checkout_evidence", "git_blob_id"]


class CheckoutFailed(CheckFailed):
    """An upstream could not be checked out at its pinned commit: the run cannot go on, and it
    ends as an infrastructure failure (setup) with this reason."""


@dataclass(frozen=True)
class Checkout:
    """One upstream as checked out."""

    name: str
    repository: str
    source: str
    """Where it was cloned from: the repository URL, or the mirror path used instead."""
    commit: str
    tree: str
    porcelain: str
    submodules: str
    remote_url: str
    listing: bytes
    """``git ls-tree -r --full-tree`` of the commit."""
    commit_object: bytes
    """The commit object's raw bytes (``git cat-file commit``): they hash to the commit id and
    name the tree, so a reader can tie the listing to the pinned commit."""
    files: dict[str, bytes]
    """Every tracked file's bytes, by git blob id."""

    @property
    def clean(self) -> bool:
        return self.porcelain == ""


_TEXT = "text/plain; charset=utf-8"
_GIT_TEXT = 1 << 20


def checkout_evidence(done: Checkout) -> dict[str, tuple[bytes, str]]:
    """A checkout's evidence entries (logical name -> bytes and media type): the listing, the
    state record, the commit object and every tracked file by its git blob id."""
    base = f"upstreams/{done.name}"
    # git's texts are kept up to the record's bounds (1 MiB of status is dirty all the same)
    state = CheckoutState(commit=done.commit, tree=done.tree,
                          porcelain=done.porcelain[:_GIT_TEXT],
                          submodules=done.submodules[:_GIT_TEXT],
                          remote_url=done.remote_url[:4096], source=done.source,
                          repository=done.repository)  # fmt: skip
    files = {
        f"{base}/tree.txt": (done.listing, _TEXT),
        f"{base}/checkout.json": (
            canonical_bytes(state.model_dump(mode="json")),
            "application/json",
        ),
        f"{base}/commit.txt": (done.commit_object, _TEXT),
    }
    for blob, data in done.files.items():
        files[f"{base}/files/{blob}"] = (data, "application/octet-stream")
    return files


def checkout(name: str, upstream: Upstream, into: Path, mirror: Path | None = None) -> Checkout:
    """Clone ``upstream`` into ``into`` (new or empty) at its pinned commit and describe it.

    Raises:
        InvalidInput: ``into`` is not empty, or the repository is a ``reference://`` one and no
            mirror was given.
        CheckoutFailed: the clone failed or the pinned commit does not exist there.
    """
    if into.exists() and any(into.iterdir()):
        raise InvalidInput(f"{into}: not empty; a checkout needs a new directory")
    if mirror is None and upstream.repository.startswith("reference://"):
        raise InvalidInput(
            f"upstream {name}: {upstream.repository} is built by the demo; give its mirror path"
        )
    source = str(mirror) if mirror is not None else upstream.repository
    try:
        repo = git.Repo.clone_from(source, into, no_checkout=True)
    except git.GitCommandError as exc:
        raise _failed(name, upstream.commit, source, exc) from None
    with repo:  # closes git's persistent helper processes
        try:
            point(f"cloned:{name}")  # during a checkout: cloned, not yet checked out
            if upstream.paths:  # only these directories: git reads no other file's bytes
                repo.git.sparse_checkout("set", "--cone", *upstream.paths)
            repo.git.checkout("--detach", upstream.commit)
        except git.GitCommandError as exc:
            raise _failed(name, upstream.commit, source, exc) from None
        head = repo.head.commit
        if head.hexsha != upstream.commit:  # pragma: no cover - git checks out what it is asked
            raise CheckoutFailed(
                f"upstream {name}: checked out {head.hexsha}, not {upstream.commit}"
            )
        return describe(name, upstream.repository, source, repo)


def _failed(name: str, commit: str, source: str, exc: git.GitCommandError) -> CheckoutFailed:
    # GitPython wraps git's stderr as "\n  stderr: '<git's lines>\n'": its last line is the
    # closing quote alone; git's own last message is the reason
    text = (exc.stderr or str(exc)).strip().removeprefix("stderr:").strip()
    detail = [line.strip() for line in text.strip("'").splitlines() if line.strip()]
    reason = detail[-1] if detail else "git failed"
    return CheckoutFailed(f"upstream {name}: cannot check out {commit} from {source}: {reason}")


def _tracked(path: Path) -> bytes | None:
    """A tracked path's blob as git stores it: a symbolic link's target text (never the file it
    points to, which may be outside the checkout), a file's bytes; ``None`` for a submodule's
    directory (recorded by ``git submodule status``), a file outside a sparse checkout's
    directories, or a file that is not there (``git status`` shows it deleted: the checkout is
    not clean, and is recorded so)."""
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            return os.fsencode(os.readlink(path))
        if not stat.S_ISREG(mode):  # a FIFO a harness made in its place would block a read
            return None  # git status shows it changed
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def describe(name: str, repository: str, source: str, repo: git.Repo) -> Checkout:
    """The record of a checkout as it is now (a later edit shows in ``porcelain``)."""
    head = repo.head.commit
    files: dict[str, bytes] = {}
    for path in repo.git.ls_files("-z").split("\0"):
        if path:
            data = _tracked(Path(repo.working_dir) / path)
            if data is not None:
                files[git_blob_id(data)] = data
    return Checkout(
        name=name,
        repository=repository,
        source=source,
        commit=head.hexsha,
        tree=head.tree.hexsha,
        porcelain=repo.git.status("--porcelain"),
        submodules=repo.git.submodule("status"),
        remote_url=repo.remotes.origin.url if repo.remotes else "",
        listing=(repo.git.ls_tree("-r", "--full-tree", head.hexsha) + "\n").encode(),
        commit_object=repo.odb.stream(head.binsha).read(),
        files=files,
    )
