"""A tar listing checks a header of a shape it has already accepted (all fields but the name,
size and checksum the same) by those three fields alone (verify/_source.py `_parse_header`).
That shortcut must answer exactly as the whole check does: the same header, or the same refusal
with the same message, for any bytes."""

from __future__ import annotations

import tarfile

from hypothesis import given, settings
from hypothesis import strategies as st

from bundle_schema.errors import InvalidInput
from verify._source import HostileArchive, _parse_header, _shape

LOCATION = "bundle.tar"


def _header(name: str, size: int, kind: bytes, fmt: int, mtime: int = 0) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type = size, 0o644, mtime, kind
    return info.tobuf(fmt)[:512]


BASES = [
    _header("manifest.json", 1234, tarfile.REGTYPE, tarfile.USTAR_FORMAT),
    _header("blobs/sha256/" + "a" * 64, 0, tarfile.REGTYPE, tarfile.USTAR_FORMAT),
    _header("blobs", 0, tarfile.DIRTYPE, tarfile.USTAR_FORMAT),
    _header("blobs/sha256/" + "b" * 64, 7, tarfile.REGTYPE, tarfile.GNU_FORMAT, 1_700_000_000),
]


def _with_checksum(block: bytearray) -> bytes:
    block[148:156] = b"        "
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def _answer(block: bytes, shapes: dict[bytes, tuple[bytes, bytes, bool]]) -> object:
    try:
        return _parse_header(block, 512, LOCATION, shapes)
    except (HostileArchive, InvalidInput) as exc:
        return (type(exc).__name__, str(exc))


# Changes are drawn mostly where the shortcut looks or stops looking (name 0-100, size, mtime
# and checksum 124-156, the type and magic 156-265), but anywhere too, with the checksum made
# right again or not.
_PLACES = st.one_of(
    st.integers(0, 99), st.integers(124, 155), st.integers(156, 264), st.integers(0, 511)
)
_BYTES = st.one_of(st.sampled_from(b"\x00 /.0789\x80\xff\\\x1fa"), st.integers(0, 255))


@settings(max_examples=600, deadline=None)
@given(
    base=st.sampled_from(range(len(BASES))),
    other=st.sampled_from(range(len(BASES))),
    changes=st.lists(st.tuples(_PLACES, _BYTES), max_size=4),
    fix_checksum=st.booleans(),
)
def test_a_header_of_a_known_shape_is_answered_as_the_whole_check_answers(
    base: int, other: int, changes: list[tuple[int, int]], fix_checksum: bool
) -> None:
    primed: dict[bytes, tuple[bytes, bytes, bool]] = {}
    _parse_header(BASES[base], 0, LOCATION, primed)  # accepted: its shape is now known
    assert _shape(BASES[base]) in primed
    block = bytearray(BASES[other])
    for place, value in changes:
        block[place] = value
    changed = _with_checksum(block) if fix_checksum else bytes(block)
    assert _answer(changed, dict(primed)) == _answer(changed, {})


def test_a_known_shape_takes_the_shortcut_and_a_new_one_does_not() -> None:
    """The shortcut is taken (the test above compares something): a header renamed and resized
    adds no shape; one of another mode adds its own; a listing remembers 16 at most."""
    shapes: dict[bytes, tuple[bytes, bytes, bool]] = {}
    _parse_header(BASES[1], 0, LOCATION, shapes)
    renamed = _header("blobs/sha256/" + "c" * 64, 99, tarfile.REGTYPE, tarfile.USTAR_FORMAT)
    assert _shape(renamed) in shapes
    _parse_header(renamed, 512, LOCATION, shapes)
    assert len(shapes) == 1
    for mode in range(20):
        info = tarfile.TarInfo("blobs/sha256/" + "d" * 64)
        info.mode = 0o600 + mode
        _parse_header(info.tobuf(tarfile.USTAR_FORMAT)[:512], 1024, LOCATION, shapes)
    assert len(shapes) == 16
