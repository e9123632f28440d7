"""Upstream checkouts: files hash to their git blob ids, the listing to the recorded tree, the
commit object to the pinned commit, and the checkout state agrees with the manifest."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from bundle_schema.documents import KINDS, parse_document
from bundle_schema.errors import InvalidInput
from bundle_schema.models import CheckoutState, Finding, Gx10Evidence
from verify._consistency._common import (
    BlobIds,
    Reader,
    _finding,
    _git_object,
    _Listed,
    _listing,
    git_tree_id,
)


@dataclass(frozen=True)
class _Checkout:
    name: str
    entries: list[_Listed]
    files: dict[str, str]
    """Path -> blob id."""


def checkout_file(
    checkouts: Mapping[str, _Checkout], upstream: str, path: str, read: Reader
) -> bytes | str:
    """The bytes of the file at ``path`` in the recorded checkout of ``upstream``, or why they
    cannot be read: the checkout not recorded whole, the path not in its listing, the file not
    kept (a file a check reads is never optional, though a sparse checkout keeps only some)."""
    checkout = checkouts.get(upstream)
    if checkout is None:
        return f"the {upstream} checkout is not recorded whole"
    object_id = checkout.files.get(path)
    if object_id is None:
        return f"{path} is not in the {upstream} checkout's listing"
    data = read(f"upstreams/{upstream}/files/{object_id}")
    if data is None:
        return f"{path} ({object_id}) is not kept in the bundle"
    return data


def _checkouts(  # noqa: PLR0912 - one branch per piece of a checkout's evidence
    evidence: Gx10Evidence,
    read: Reader,
    blob_id: BlobIds,
    findings: list[Finding],
    names: Collection[str],
) -> dict[str, _Checkout]:
    """Each recorded checkout whose evidence holds together; findings for those that do not.

    A checkout is its listing, its state record and its commit object, all three: the commit
    object is what ties the listing (and every file read through it) to the pinned commit, so
    a checkout without one of them proves nothing and is a finding, not a check left out."""
    found = {}
    for upstream in evidence.upstreams:
        base = f"upstreams/{upstream.name}"
        listing = upstream.tree or f"{base}/tree.txt"  # the runner's place, where none is named
        needed = [listing, f"{base}/checkout.json", f"{base}/commit.txt"]
        missing = [n for n in needed if n not in names]
        if names and missing:
            findings.append(
                _finding(
                    "checkout_mismatch",
                    missing[0],
                    f"the {upstream.name} checkout is not recorded whole: no {missing[0]}",
                )
            )
            continue
        data = read(listing)
        if data is None:
            continue
        entries = _listing(data)
        if isinstance(entries, str):
            findings.append(_finding("checkout_mismatch", listing, f"{listing}: {entries}"))
            continue
        tree = git_tree_id(entries)
        state_data = read(f"{base}/checkout.json")
        if state_data is not None:
            problem = _state_problem(state_data, upstream, tree)
            if problem is not None:
                findings.append(_finding("checkout_mismatch", f"{base}/checkout.json", problem))
                continue
        commit = read(f"{base}/commit.txt")
        if commit is not None:
            problem = _commit_problem(commit, upstream.commit, tree)
            if problem is not None:
                findings.append(_finding("checkout_mismatch", f"{base}/commit.txt", problem))
                continue
        files = {e.path: e.object_id for e in entries if e.kind == "blob"}
        bad = False
        listed = set(files.values())
        for name in sorted(n for n in names if n.startswith(f"{base}/files/")):
            if name.rsplit("/", 1)[1] not in listed:
                findings.append(
                    _finding(
                        "checkout_mismatch",
                        name,
                        f"{name}: a file the {upstream.name} listing does not name",
                    )
                )
                bad = True
        for object_id in sorted(set(files.values())):
            seen = blob_id(f"{base}/files/{object_id}")
            if seen is not None and seen != object_id:
                findings.append(
                    _finding(
                        "checkout_mismatch",
                        f"{base}/files/{object_id}",
                        f"{base}/files/{object_id}: the file's git blob id is {seen}, not its name",
                        expected=object_id,
                        got=seen,
                    )
                )
                bad = True
        if not bad:
            found[upstream.name] = _Checkout(upstream.name, entries, files)
    return found


def _state_problem(data: bytes, upstream: Any, tree: str | None) -> str | None:
    where = f"upstreams/{upstream.name}/checkout.json"
    try:  # strict: a repeated key, NaN or a member of no meaning is not a checkout record
        state: CheckoutState = parse_document(KINDS["checkout-state"], data, where)
    except InvalidInput as exc:
        return f"{where}: not a checkout record ({exc})"
    if state.commit != upstream.commit:
        return f"{where}: commit {state.commit!r}, the manifest says {upstream.commit}"
    if state.repository != upstream.repository:
        said = state.repository
        return f"{where}: repository {said!r}, the manifest says {upstream.repository}"
    if (state.porcelain == "") != upstream.clean:
        return (
            f"{where}: git status {state.porcelain[:200]!r} disagrees with clean={upstream.clean}"
        )
    if tree is None or state.tree != tree:
        return f"{where}: tree {state.tree!r}; the listing hashes to {tree}"
    return None


def _commit_problem(data: bytes, commit: str, tree: str | None) -> str | None:
    if _git_object(b"commit", data) != commit:
        return f"the commit object hashes to {_git_object(b'commit', data)}, not {commit}"
    first = data.split(b"\n", 1)[0]
    if tree is None or first != b"tree " + tree.encode():
        return (
            f"the commit's tree is {first[5:].decode('ascii', 'replace')!r}, the listing's {tree}"
        )
    return None
