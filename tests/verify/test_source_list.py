"""An archive's sources kept on disk (:class:`verify.archive.SourceList`): read back as given,
walked in the order an archive sorts them (by how they are shown, then as given; one given
twice, twice), each masked twin (shown alike, given differently) flagged; and what rank,
rejudge and verify-archive print does not depend on the order the sources are given in."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.cli import main
from tests.factories import write_small_bundle
from verify.archive import MASKED_TWIN, Source, SourceList, ordered, shown, sort_key
from verify.judging import walked

names = st.text(alphabet=st.sampled_from("ab/\udcff\u00e9\U0001f600"), min_size=1, max_size=4)
urls = st.tuples(st.sampled_from("ab"), st.sampled_from(["", "1", "2"])).map(
    lambda p: f"https://h.example/{p[0]}.tar" + (f"?X-Amz-Signature={p[1]}" if p[1] else "")
)
sources = st.lists(st.one_of(names.map(Path), urls), max_size=10)


def _walked(given: list[Source]) -> list[tuple[int, bool]]:
    """The walk as the archive commands made it in memory: a stable sort by
    :func:`sort_key`, the first given of each shown name walked, the others twins."""
    order = sorted(range(len(given)), key=lambda i: sort_key(given[i]))
    first: dict[str, str] = {}
    return [(i, first.setdefault(shown(given[i]), str(given[i])) != str(given[i])) for i in order]


@settings(max_examples=500, deadline=None, derandomize=True)
@given(given=sources)
def test_the_walk_is_the_sorted_walk(given: list[Source]) -> None:
    with SourceList(given) as listed:
        assert len(listed) == len(given)
        assert list(listed) == given
        assert [listed[i] for i in range(len(given))] == given
        walk = list(listed.walk())
        assert [(i, twin) for i, _, twin in walk] == _walked(given)
        assert [source for _, source, _ in walk] == [given[i] for i, _ in _walked(given)]
    with walked(given) as walk:  # a plain list, listed on disk first
        assert [(i, twin) for i, _, twin in walk] == _walked(given)
    kept, refused = ordered(given)
    once = {sort_key(s): s for s in given}
    assert kept == [s for k, s in sorted(once.items()) if not _twin_of(k, once)]
    assert [r.data.decode() for r in refused] == [MASKED_TWIN] * (len(once) - len(kept))


def _twin_of(key: tuple[str, str], once: dict[tuple[str, str], Source]) -> bool:
    return any(k[0] == key[0] and k[1] < key[1] for k in once)


def test_an_index_past_the_end_is_refused() -> None:
    with SourceList([Path("a")]) as listed, pytest.raises(IndexError):
        listed[1]


@pytest.mark.parametrize("command", ["rank", "rejudge", "verify-archive"])
def test_the_report_does_not_depend_on_the_order_given(
    command: str, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    junk = []
    for name in ("c-junk.tar", "a-junk.tar", "b-junk.tar"):
        (tmp_path / name).write_bytes(b"not a tar")
        junk.append(str(tmp_path / name))
    pins = ["--pins", "gx10-reference-v5"]
    printed = set()
    for paths in (junk, junk[::-1], sorted(junk), [str(tmp_path)]):  # a folder: as listed
        assert main([command, *paths, *pins]) == 1
        out = capsysbinary.readouterr()
        printed.add((out.out, out.err))
    ((out, err),) = printed
    assert (
        err.decode().splitlines()
        == [
            f"audit {command}: refused {tmp_path / name}: not a readable uncompressed tar: "
            "truncated header"
            for name in ("a-junk.tar", "b-junk.tar", "c-junk.tar")
        ]
        or command == "verify-archive"
    )


@pytest.mark.parametrize("command", ["rank", "rejudge", "verify-archive"])
@pytest.mark.parametrize("form", [[], ["--json"], ["--markdown"], ["--csv"]])
def test_a_name_that_is_not_utf8_is_shown_written_out(
    command: str, form: list[str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A folder entry named by bytes that are not UTF-8 is a bundle like any other, shown with
    the byte written out (``\\xff``); one whose name is that text itself is then shown alike
    and refused as its twin, never taken for it."""
    folder = tmp_path / "archive"
    odd = folder / os.fsdecode(b"run-\xff")
    write_small_bundle(odd)
    shutil.copytree(odd, folder / "run-\\xff")  # the same bytes, named by the escape itself
    argv = [command, str(folder), *form, "--pins", "gx10-reference-v5"]
    assert main(argv) == 1  # the twin is refused
    out, err = capsysbinary.readouterr()
    assert b"Traceback" not in err
    text = (out + err).decode("utf-8")  # every byte of the output is UTF-8
    name = f"{folder}/run-\\xff"
    assert name in text or json.dumps(name)[1:-1] in text  # as it is, or in JSON
    assert MASKED_TWIN in text or MASKED_TWIN.replace("|", "\\|") in text
