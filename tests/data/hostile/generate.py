"""The hostile-bundle corpus: every case built by code, with its expected exit code and message.

Run ``python -m tests.data.hostile.generate OUT`` to write the corpus into OUT (each case is a
file or a directory named after it) and ``--check`` to compare the deterministic cases with the
digests committed in ``expected.json`` (``--write`` rewrites that file). The tests
(tests/hostile/test_hostile_corpus.py) generate it into a temp directory, check the digests, and
run every case through the CLI in one process whose peak memory must stay under 512 MiB.

Categories: ``archive`` (tar attacks), ``directory`` (directory-bundle attacks), ``json`` (the
manifest's bytes), ``record`` (an evidence record's bytes), ``schema`` (a manifest that parses but
breaks its schema), ``content`` (evidence edited and resealed so that integrity holds), and
``signature`` (attacks on a bundle's Sigstore signature), and ``forgery`` (a real recorded run
edited and resealed, one or more cases per class of attack on the verifier's judgement:
tests/data/hostile/forgeries.py). Nothing here is a hand-made binary.

Cases marked ``deterministic=False`` (signatures carry fresh keys and times; compressors differ
between library versions; the largest archives are not worth a digest; sockets and links cannot
be hashed) are rebuilt on every run and checked by behaviour only.
"""

from __future__ import annotations

import base64
import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import socket
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit._archive import pack
from bundle_schema import canonical_bytes
from bundle_schema.attestation import bundle_statement
from bundle_schema.layout import MANIFEST_SIGNATURE, content_digest
from bundle_schema.models import ComponentRef
from pins import load_builtin
from tests.data.hostile.forgeries import FORGERIES
from tests.data.hostile.kit import (
    Builder,
    Case,
    Context,
    Files,
    lines,
    put_json,
    put_lines,
    read_bundle,
    rederive_metrics,
    reseal,
)
from tests.factories import COMPONENT_RESULT, write_small_bundle
from verify import parse_manifest
from verify.socket_trace import trace_entries

__all__ = ["CASES", "Case", "Context", "M", "craft", "generate", "read_bundle", "reseal"]

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"
HEX = "0" * 64
TRANSPORT = "application/vnd.evidence-audit.transport-exchange+jsonl"


# --- tars ----------------------------------------------------------------------------------------


@dataclass
class M:
    """A tar member to craft: a name, a type and data (``size`` overrides the header size)."""

    name: str
    type: bytes = tarfile.REGTYPE
    data: bytes = b""
    linkname: str = ""
    size: int | None = None
    pax: dict[str, str] = field(default_factory=dict)


def craft(path: Path, bundle: Path, members: list[M], fmt: int = tarfile.USTAR_FORMAT) -> None:
    """Write a tar holding a valid small bundle followed by ``members`` (headers as given).

    A member with ``size`` set gets a forged header declaring that size, followed by its data
    and nothing else: no padding and no end-of-archive blocks. Member times are fixed: the same
    case gives the same bytes.
    """
    out = io.BytesIO()
    archive = tarfile.open(fileobj=out, mode="w", format=fmt)  # noqa: SIM115 - left open on purpose for forged tails
    for file in sorted(p for p in bundle.rglob("*") if p.is_file()):
        info = tarfile.TarInfo(file.relative_to(bundle).as_posix())
        info.size, info.mode = file.stat().st_size, 0o644
        archive.addfile(info, io.BytesIO(file.read_bytes()))
    forged = b""
    for member in members:
        info = tarfile.TarInfo(member.name)
        info.type, info.linkname, info.mode = member.type, member.linkname, 0o644
        info.size = len(member.data) if member.type == tarfile.REGTYPE else 0
        info.pax_headers = member.pax
        if member.size is not None:
            info.size = member.size
            forged += info.tobuf(fmt, tarfile.ENCODING, "surrogateescape") + member.data
        else:
            archive.addfile(info, io.BytesIO(member.data) if info.size else None)
    if forged:
        path.write_bytes(out.getvalue()[: archive.offset] + forged)
        return
    archive.close()
    path.write_bytes(out.getvalue())


def _tar(*members: M, fmt: int = tarfile.USTAR_FORMAT) -> Builder:
    def build(context: Context, path: Path) -> None:
        craft(path, context.small("tar"), list(members), fmt)

    return build


def _packed(context: Context) -> bytes:
    target = context.work / "packed.tar"
    if not target.exists():
        pack(context.small("packed"), target)
    return target.read_bytes()


def _bytes(make: Callable[[Context], bytes]) -> Builder:
    def build(context: Context, path: Path) -> None:
        path.write_bytes(make(context))

    return build


def _gzip_bomb(_context: Context) -> bytes:
    """A multi-member gzip that would inflate to 16 GiB of zeros; it is 16 MiB."""
    member = gzip.compress(b"\0" * (1 << 20), mtime=0)
    return member * (16 << 10)


def _zip(context: Context) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        info = zipfile.ZipInfo("manifest.json", date_time=(2026, 1, 1, 0, 0, 0))
        archive.writestr(info, _packed(context)[:512])
    return out.getvalue()


def _many_members(count: int) -> Builder:
    """A tar of ``count`` empty members with distinct blob names, headers written directly."""

    def build(_context: Context, path: Path) -> None:
        template = tarfile.TarInfo("blobs/sha256/" + HEX)
        template.mode, template.size = 0o644, 0
        header = bytearray(template.tobuf(tarfile.USTAR_FORMAT))
        with path.open("wb") as out:
            for number in range(count):
                name = f"blobs/sha256/{number:064x}".encode()
                header[0:77] = name
                header[148:156] = b"        "
                checksum = sum(header)
                header[148:156] = b"%06o\0 " % checksum
                out.write(header)
            out.write(b"\0" * 1024)

    return build


def _huge_manifest(_context: Context, path: Path) -> None:
    body = b'{"padding":"' + b"x" * (65 << 20) + b'"}'
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mode = len(body), 0o644
        archive.addfile(info, io.BytesIO(body))
    path.write_bytes(out.getvalue())


def _without_manifest(context: Context, path: Path) -> None:
    bundle = context.small("no-manifest")
    (bundle / "manifest.json").unlink()
    craft(path, bundle, [])


def _unpack_into_occupied(context: Context, path: Path) -> list[str]:
    path.write_bytes(_packed(context))
    occupied = context.work / "occupied"
    occupied.mkdir(exist_ok=True)
    (occupied / "keep.txt").write_text("mine")
    return ["-o", str(occupied)]


# --- tars written header by header (for what tarfile will not write) ---------------------------

POSIX_MAGIC = b"ustar\x0000"
GNU_MAGIC = b"ustar  \x00"
END = bytes(1024)
"""The end-of-archive marker: two zero blocks."""
EXTRA = {n: f"blobs/sha256/{n * 64}" for n in "123456789"}
"""Blob paths for members that a case adds to a valid bundle (the manifest lists none of them)."""


def _header(
    name: bytes,
    kind: bytes = b"0",
    size: int = 0,
    *,
    magic: bytes = POSIX_MAGIC,
    at: dict[int, bytes] | None = None,
    signed: bool = False,
) -> bytes:
    """One 512-byte header, field by field; ``at`` overwrites bytes at the offsets given."""
    block = bytearray(512)
    block[0 : min(len(name), 100)] = name[:100]
    block[100:136] = b"0000644\x00" + b"0000000\x00" * 2 + b"%011o\x00" % size
    block[136:148] = b"00000000000\x00"
    block[156:157] = kind
    block[257:265] = magic
    if magic == POSIX_MAGIC:
        block[329:345] = b"0000000\x00" * 2
    for offset, data in (at or {}).items():
        block[offset : offset + len(data)] = data
    block[148:156] = b" " * 8
    checksum = sum(block) - (256 * sum(b >= 128 for b in block) if signed else 0)
    block[148:156] = b"%06o\x00 " % checksum
    return bytes(block[:512])


def _blocks(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def _file(name: str | bytes, data: bytes = b"x", **header: Any) -> bytes:
    raw = name.encode() if isinstance(name, str) else name
    return _header(raw, size=len(data), **header) + _blocks(data)


def _pax(records: list[tuple[str, str]], kind: bytes = b"x") -> bytes:
    """A pax header (``kind`` x, or g for a global one) holding the records given."""
    data = b""
    for key, value in records:
        body = f" {key}={value}\n".encode()
        length = len(body) + 1
        while len(str(length)) + len(body) != length:
            length += 1
        data += str(length).encode() + body
    return _header(b"././@PaxHeader", kind, len(data)) + _blocks(data)


def _longname(name: bytes, kind: bytes = b"L") -> bytes:
    data = name + b"\x00"
    return _header(b"././@LongLink", kind, len(data), magic=GNU_MAGIC) + _blocks(data)


def _bundle_members(bundle: Path) -> bytes:
    """A bundle's files as ustar members, without the end-of-archive marker."""
    out = io.BytesIO()
    archive = tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT)  # noqa: SIM115 - no end marker
    for file in sorted(p for p in bundle.rglob("*") if p.is_file()):
        info = tarfile.TarInfo(file.relative_to(bundle).as_posix())
        info.size, info.mode = file.stat().st_size, 0o644
        archive.addfile(info, io.BytesIO(file.read_bytes()))
    return out.getvalue()[: archive.offset]


def _raw(*parts: bytes, tail: bytes = END) -> Builder:
    """A valid small bundle's members, then the raw bytes given, then ``tail``."""

    def build(context: Context, path: Path) -> None:
        path.write_bytes(_bundle_members(context.small("tar")) + b"".join(parts) + tail)

    return build


def _bad_checksum(block: bytes) -> bytes:
    return block[:148] + b"000000\x00 " + block[156:]


def _unreferenced(key: str) -> str:
    return f"blob {EXTRA[key]} is not referenced by any evidence entry"


_SPARSE_MAP = b"1\n0\n3\n".ljust(512, b"\x00")
_PREFIXED = {345: b"blobs/sha256"}


ARCHIVE: list[Case] = [
    Case("absolute path", "archive", _tar(M("/etc/cron.d/evil", data=b"x")), 1,
         "'/etc/cron.d/evil' has an absolute path", screened=True),
    Case("dot-dot traversal", "archive", _tar(M("blobs/../../evil", data=b"x")), 1,
         "'blobs/../../evil' climbs out with '..'", screened=True),
    Case("leading dot-dot", "archive", _tar(M("../evil", data=b"x")), 1, "'../evil' climbs out",
         screened=True),
    Case("dot segment", "archive", _tar(M("./manifest.json", data=b"x")), 1,
         "'./manifest.json' has an empty or '.' path segment", screened=True),
    Case("empty segment", "archive", _tar(M("blobs//sha256/" + HEX, data=b"x")), 1,
         "has an empty or '.' path segment", screened=True),
    Case("backslash", "archive", _tar(M("blobs\\sha256\\x", data=b"x")), 1, "has a backslash",
         screened=True),
    Case("windows drive", "archive", _tar(M("C:/evil", data=b"x")), 1,
         "'C:/evil' has an absolute path", screened=True),
    Case("symbolic link", "archive",
         _tar(M(f"blobs/sha256/{HEX}", tarfile.SYMTYPE, linkname="/etc/passwd")), 1,
         "is a symbolic link", screened=True),
    Case("hard link", "archive",
         _tar(M(f"blobs/sha256/{HEX}", tarfile.LNKTYPE, linkname="manifest.json")), 1,
         "is a hard link", screened=True),
    Case("character device", "archive", _tar(M(f"blobs/sha256/{HEX}", tarfile.CHRTYPE)), 1,
         "is a device", screened=True),
    Case("block device", "archive", _tar(M(f"blobs/sha256/{HEX}", tarfile.BLKTYPE)), 1,
         "is a device", screened=True),
    Case("FIFO member", "archive", _tar(M(f"blobs/sha256/{HEX}", tarfile.FIFOTYPE)), 1,
         "is a FIFO", screened=True),
    Case("sparse member", "archive", _tar(M(f"blobs/sha256/{HEX}", tarfile.GNUTYPE_SPARSE),
                                          fmt=tarfile.GNU_FORMAT), 1, "is a sparse file",
         screened=True),
    Case("duplicate manifest", "archive", _tar(M("manifest.json", data=b"{}")), 1,
         "member 'manifest.json' appears twice", screened=True),
    Case("duplicate blob", "archive", _tar(M(f"blobs/sha256/{HEX}", data=b"a"),
                                           M(f"blobs/sha256/{HEX}", data=b"b")), 1,
         f"member 'blobs/sha256/{HEX}' appears twice", screened=True),
    Case("member outside layout", "archive", _tar(M("run.sh", data=b"rm -rf /")), 1,
         "'run.sh' is outside the bundle layout", screened=True),
    Case("misnamed blob", "archive", _tar(M("blobs/sha256/ABC", data=b"x")), 1,
         "'blobs/sha256/ABC' is outside the bundle layout", screened=True),
    Case("other digest directory", "archive", _tar(M("blobs/md5/" + "0" * 32, data=b"x")), 1,
         "is outside the bundle layout", screened=True),
    Case("hidden signature name", "archive", _tar(M("signatures/.hidden", data=b"x")), 1,
         "is outside the bundle layout", screened=True),
    Case("directory outside layout", "archive", _tar(M("hooks", tarfile.DIRTYPE)), 1,
         "'hooks' is a directory outside the bundle layout", screened=True),
    Case("manifest as a directory", "archive", _tar(M("manifest.json/", tarfile.DIRTYPE)), 1,
         "is a directory outside the bundle layout", screened=True),
    Case("deep directories", "archive",
         _tar(M("blobs/sha256/a/b/c/d/e/f/g/h", tarfile.DIRTYPE)), 1,
         "is a directory outside the bundle layout", screened=True),
    Case("huge declared size", "archive",
         _tar(M(f"blobs/sha256/{HEX}", size=1 << 40), fmt=tarfile.GNU_FORMAT), 1,
         "declares 1099511627776 bytes, over the member cap", screened=True),
    Case("truncated member", "archive",
         _tar(M(f"blobs/sha256/{HEX}", data=b"short", size=4096)), 1, "is truncated",
         screened=True),
    Case("pax path traversal", "archive",
         _tar(M(f"blobs/sha256/{HEX}", data=b"x", pax={"path": "../../evil"}),
              fmt=tarfile.PAX_FORMAT), 1, "'../../evil' climbs out", screened=True),
    Case("gnu long name traversal", "archive",
         _tar(M("blobs/" + "a" * 120 + "/../../../evil", data=b"x"), fmt=tarfile.GNU_FORMAT),
         1, "climbs out with '..'", screened=True),
    Case("a million tiny members", "archive", _many_members(1_000_001), 1,
         "more than 500000 members", deterministic=False, screened=True),
    Case("manifest over its cap", "archive", _huge_manifest, 1, "over the cap of 67108864",
         deterministic=False, screened=True),
    Case("no manifest", "archive", _without_manifest, 2, "manifest.json"),
    Case("gzip-compressed bundle", "archive",
         _bytes(lambda c: gzip.compress(_packed(c), mtime=0)), 2,
         "not a readable uncompressed tar", deterministic=False),
    Case("gzip bomb", "archive", _bytes(_gzip_bomb), 2, "not a readable uncompressed tar",
         deterministic=False),
    Case("bzip2-compressed bundle", "archive", _bytes(lambda c: bz2.compress(_packed(c))), 2,
         "not a readable uncompressed tar", deterministic=False),
    Case("xz-compressed bundle", "archive", _bytes(lambda c: lzma.compress(_packed(c))), 2,
         "not a readable uncompressed tar", deterministic=False),
    Case("zip archive", "archive", _bytes(_zip), 2, "not a readable uncompressed tar"),
    Case("empty file", "archive", _bytes(lambda _c: b""), 2, "not a readable uncompressed tar"),
    Case("random bytes", "archive",
         _bytes(lambda _c: hashlib.shake_256(b"hostile").digest(4096)), 2,
         "not a readable uncompressed tar"),
    Case("unpack traversal", "archive", _tar(M("../evil", data=b"x")), 1,
         "'../evil' climbs out", command="unpack", screened=True),
    Case("unpack symbolic link", "archive",
         _tar(M(f"blobs/sha256/{HEX}", tarfile.SYMTYPE, linkname="/etc/passwd")), 1,
         "is a symbolic link", command="unpack", screened=True),
    Case("unpack into an occupied directory", "archive", _unpack_into_occupied, 2,
         "exists and is not empty", command="unpack"),
    # sparse members in every form
    Case("old GNU sparse member with a map", "archive",
         _raw(_header(f"blobs/sha256/{HEX}".encode(), b"S", 512, magic=GNU_MAGIC,
                      at={386: b"%011o\x00%011o\x00" % (0, 3), 483: b"%011o\x00" % 4096}),
              _blocks(b"abc")), 1, f"member 'blobs/sha256/{HEX}' is a sparse file", screened=True),
    Case("pax GNU sparse 0.0", "archive",
         _raw(_pax([("GNU.sparse.size", "4096"), ("GNU.sparse.numblocks", "1"),
                    ("GNU.sparse.offset", "0"), ("GNU.sparse.numbytes", "3")]),
              _file(f"blobs/sha256/{HEX}", b"abc")), 1,
         "is a sparse file (GNU.sparse.numblocks in its pax header)", screened=True),
    Case("pax GNU sparse 0.1", "archive",
         _raw(_pax([("GNU.sparse.size", "4096"), ("GNU.sparse.numblocks", "1"),
                    ("GNU.sparse.map", "0,3")]), _file(f"blobs/sha256/{HEX}", b"abc")), 1,
         "is a sparse file (GNU.sparse.map in its pax header)", screened=True),
    Case("pax GNU sparse 1.0", "archive",
         _raw(_pax([("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"),
                    ("GNU.sparse.name", f"blobs/sha256/{HEX}"), ("GNU.sparse.realsize", "4096")]),
              _file(f"./GNUSparseFile.0/{HEX}", _SPARSE_MAP + b"abc")), 1,
         "is a sparse file (GNU.sparse.major in its pax header)", screened=True),
    Case("pax GNU sparse name alone", "archive",
         _raw(_pax([("GNU.sparse.name", f"blobs/sha256/{HEX}")]), _file("decoy")), 1,
         "is a sparse file (GNU.sparse.name in its pax header)", screened=True),
    # pax headers beyond what a bundle needs
    Case("pax extended attribute", "archive",
         _raw(_pax([("SCHILY.xattr.user.x", "1")]), _file(f"blobs/sha256/{HEX}")), 1,
         "has the pax key 'SCHILY.xattr.user.x', which this reader does not take", screened=True),
    Case("pax header charset", "archive",
         _raw(_pax([("hdrcharset", "BINARY"), ("path", EXTRA["1"])]), _file("decoy")), 1,
         "has the pax key 'hdrcharset'", screened=True),
    Case("pax link path on a file", "archive",
         _raw(_pax([("linkpath", "/etc/passwd")]), _file(f"blobs/sha256/{HEX}")), 1,
         "has the pax key 'linkpath'", screened=True),
    Case("pax key given twice", "archive",
         _raw(_pax([("path", EXTRA["1"]), ("path", EXTRA["2"])]), _file("decoy")), 1,
         "member 'decoy' has the pax key 'path' twice", screened=True),
    Case("empty pax path", "archive",
         _raw(_pax([("path", "")]), _file(f"blobs/sha256/{HEX}")), 1,
         "has an invalid pax path: b''", screened=True),
    Case("pax size not a plain decimal", "archive",
         _raw(_pax([("size", "1_0")]), _file(f"blobs/sha256/{HEX}")), 1,
         "has an invalid pax size: b'1_0'", screened=True),
    Case("malformed pax record", "archive",
         _raw(_header(b"././@PaxHeader", b"x", 14), _blocks(b"30 path=evil\n\n"),
              _file(f"blobs/sha256/{HEX}")), 1,
         "pax header '././@PaxHeader' has a malformed pax record at byte 0", screened=True),
    Case("global pax header", "archive",
         _raw(_pax([("path", EXTRA["1"])], kind=b"g"), _file("decoy")), 1,
         "is a global pax header (type b'g')", screened=True),
    Case("pax header over its cap", "archive",
         _raw(_header(b"././@PaxHeader", b"x", 1 << 20)), 1,
         "pax header '././@PaxHeader' declares 1048576 bytes, over the cap of 65536",
         screened=True),
    Case("pax header describing no member", "archive", _raw(_pax([("path", EXTRA["1"])])), 1,
         "an extended header describes no member", screened=True),
    # names that readers take from different places
    Case("ustar prefix on a GNU header", "archive",
         _raw(_file(HEX, magic=GNU_MAGIC, at=_PREFIXED)), 1,
         f"member '{HEX}' is a GNU header with bytes in the ustar prefix field", screened=True),
    Case("ustar prefix on a v7 header", "archive", _raw(_file(HEX, magic=bytes(8), at=_PREFIXED)),
         1, "has a ustar prefix field (bytes 345-500) in a header that is not ustar",
         screened=True),
    Case("ustar prefix with another version", "archive",
         _raw(_file(HEX, magic=b"ustar\x00  ", at=_PREFIXED)), 1,
         "has a ustar prefix field (bytes 345-500) in a header that is not ustar", screened=True),
    Case("v7 header", "archive", _raw(_file(f"blobs/sha256/{HEX}", magic=bytes(8))), 1,
         "is neither ustar nor GNU tar", screened=True),
    Case("ustar prefix with a GNU long name", "archive",
         _raw(_longname(EXTRA["1"].encode()), _file(HEX, at=_PREFIXED)), 1,
         f"member '{EXTRA['1']}' has both a GNU long name and a ustar prefix", screened=True),
    Case("NUL inside the name field", "archive",
         _raw(_file(f"blobs/sha256/{HEX}\x00../../evil")), 1,
         "has bytes after a NUL in its name field", screened=True),
    Case("NUL inside the prefix field", "archive",
         _raw(_file(HEX, at={345: b"blobs\x00sha256"})), 1,
         "has bytes after a NUL in its ustar prefix field", screened=True),
    Case("NUL inside a GNU long name", "archive",
         _raw(_longname(f"blobs/sha256/{HEX}\x00../evil".encode()), _file("decoy")), 1,
         "has bytes after a NUL in the name it holds, 'blobs/sha256/", screened=True),
    Case("two GNU long names", "archive",
         _raw(_longname(EXTRA["1"].encode()), _longname(EXTRA["2"].encode()), _file("decoy")), 1,
         "a second extended header for one member", screened=True),
    Case("pax header and a GNU long name", "archive",
         _raw(_pax([("path", EXTRA["1"])]), _longname(EXTRA["2"].encode()), _file("decoy")), 1,
         "a second extended header for one member", screened=True),
    Case("GNU long link name", "archive",
         _raw(_longname(b"/etc/passwd", kind=b"K"), _file(f"blobs/sha256/{HEX}")), 1,
         "is a GNU long link name (type b'K')", screened=True),
    Case("GNU long name over its cap", "archive",
         _raw(_header(b"././@LongLink", b"L", 1 << 20, magic=GNU_MAGIC)), 1,
         "GNU long-name header '././@LongLink' declares 1048576 bytes, over the cap of 65536",
         screened=True),
    Case("newline in a member name", "archive", _raw(_file(f"blobs/sha256/{HEX}\n")), 1,
         "has a control character in its name", screened=True),
    # header fields readers parse differently
    Case("size field with an underscore", "archive",
         _raw(_file(f"blobs/sha256/{HEX}", at={124: b"000000000_1\x00"})), 1,
         "has a size field that is not a number", screened=True),
    Case("size field with a leading NUL", "archive",
         _raw(_file(f"blobs/sha256/{HEX}", at={124: b"\x000000000001\x00"})), 1,
         "has a size field that is not a number", screened=True),
    Case("size field of blanks", "archive",
         _raw(_file(f"blobs/sha256/{HEX}", b"", at={124: b" " * 11 + b"\x00"})), 1,
         "has a size field that is not a number", screened=True),
    Case("bad checksum after the first member", "archive",
         _raw(_bad_checksum(_file(f"blobs/sha256/{HEX}")), _file(EXTRA["1"])), 1,
         "is not a tar header (its checksum does not match)", screened=True),
    Case("contiguous file", "archive", _raw(_file(f"blobs/sha256/{HEX}", kind=b"7")), 1,
         "is a special member (type b'7')", screened=True),
    Case("directory with data", "archive", _raw(_header(b"blobs/", b"5", 3), _blocks(b"abc")), 1,
         "member 'blobs' is a directory with 3 bytes of data", screened=True),
    # the end of the archive
    Case("member after the end-of-archive marker", "archive",
         _raw(tail=END + _file(EXTRA["1"]) + END), 1,
         f"after the end-of-archive marker at offset 4096 (a header for member '{EXTRA['1']}')",
         screened=True),
    Case("member after a lone zero block", "archive",
         _raw(tail=bytes(512) + _file(EXTRA["1"]) + END), 1,
         "non-zero bytes at offset 4608, after the end-of-archive marker at offset 4096",
         screened=True),
    Case("a byte after the end-of-archive marker", "archive", _raw(tail=END + b"\x00\x01"), 1,
         "non-zero bytes at offset 5121, after the end-of-archive marker", screened=True),
    Case("no end-of-archive marker", "archive", _raw(_file(EXTRA["1"]), tail=b""), 1,
         "ends at offset 5120 without the end-of-archive marker", screened=True),
    Case("one zero block at the end", "archive", _raw(tail=bytes(512)), 1,
         "the end-of-archive marker at offset 4096 is one zero block, not two", screened=True),
    Case("padding past its cap", "archive", _raw(tail=bytes(1024 + (1 << 20) + 512)), 1,
         "more than 1048576 bytes after the end-of-archive marker", screened=True),
]  # fmt: skip


AGREEING: list[Case] = [
    Case("extra blob named by a ustar prefix", "archive",
         _raw(_file(EXTRA["1"][13:], at=_PREFIXED)), 1, _unreferenced("1")),
    Case("extra blob named by a pax path", "archive",
         _raw(_pax([("path", EXTRA["2"])]), _file("decoy")), 1, _unreferenced("2")),
    Case("extra blob named by a GNU long name", "archive",
         _raw(_longname(EXTRA["3"].encode()), _file("decoy", magic=GNU_MAGIC)), 1,
         _unreferenced("3")),
    Case("pax size over the header size", "archive",
         _raw(_pax([("size", "3")]), _header(EXTRA["4"].encode()), _blocks(b"abc")), 1,
         _unreferenced("4")),
    Case("base-256 size", "archive",
         _raw(_header(EXTRA["5"].encode(), magic=GNU_MAGIC,
                      at={124: b"\x80" + (3).to_bytes(11, "big")}), _blocks(b"abc")), 1,
         _unreferenced("5")),
    Case("signed header checksum", "archive",
         _raw(_file(EXTRA["6"], at={265: "é".encode()}, signed=True)), 1, _unreferenced("6")),
    Case("zero padding after the end-of-archive marker", "archive",
         _raw(_file(EXTRA["7"]), tail=bytes(1024 + 64 * 1024)), 1, _unreferenced("7")),
    Case("pax header as GNU tar writes it", "archive",
         _raw(_pax([("path", EXTRA["8"]), ("mtime", "1767225600.5"), ("atime", "1767225600"),
                    ("ctime", "1767225600.123456789"), ("uid", "0"), ("gid", "0"),
                    ("uname", "root"), ("gname", "root")]), _file("decoy")), 1,
         _unreferenced("8")),
    Case("directory entries in GNU format", "archive",
         _raw(*(_header(d, b"5", magic=GNU_MAGIC) for d in (b"blobs/", b"blobs/sha256/")),
              _file(EXTRA["9"], magic=GNU_MAGIC)), 1, _unreferenced("9")),
]  # fmt: skip
"""Tar forms that GNU tar and this verifier read alike: accepted, the extra blob a finding.

Not in :data:`CASES`: the corpus also unpacks every tar case and expects the verdict's exit
code, and unpacking judges no integrity (it exits 0 here). tests/verify/test_tar_agreement.py runs
them, with every tar case of the corpus that is not refused, through GNU tar.
"""


# --- directory bundles ---------------------------------------------------------------------------


def _directory(change: Callable[[Path], None]) -> Builder:
    def build(context: Context, path: Path) -> None:
        shutil.copytree(context.small("directory"), path)
        change(path)

    return build


def _bind_socket(path: Path) -> None:
    here = Path.cwd()
    os.chdir(path)  # AF_UNIX paths are short: bind a relative one
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(f"blobs/sha256/{HEX}")
    finally:
        os.chdir(here)


def _symlinked_manifest(path: Path) -> None:
    (path / "manifest.json").rename(path / "blobs" / "elsewhere")
    (path / "manifest.json").symlink_to("blobs/elsewhere")


DIRECTORY: list[Case] = [
    Case("directory symbolic link", "directory",
         _directory(lambda p: (p / "blobs" / "sha256" / HEX).symlink_to("/etc/passwd")), 1,
         f"'blobs/sha256/{HEX}' is a symbolic link, not a file", deterministic=False,
         screened=True),
    Case("directory FIFO", "directory",
         _directory(lambda p: os.mkfifo(p / "blobs" / "sha256" / HEX)), 1,
         f"'blobs/sha256/{HEX}' is a FIFO, not a file", deterministic=False, screened=True),
    Case("directory socket", "directory", _directory(_bind_socket), 1, "is a socket, not a file",
         deterministic=False, screened=True),
    Case("directory symlinked manifest", "directory", _directory(_symlinked_manifest), 1,
         "'manifest.json' is a symbolic link", deterministic=False, screened=True),
    Case("directory nested too deep", "directory",
         _directory(lambda p: (p / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)), 1,
         "is nested deeper than a bundle's layout (4 levels)", screened=True),
    Case("directory without a manifest", "directory",
         _directory(lambda p: (p / "manifest.json").unlink()), 2, "manifest.json"),
    Case("directory file outside layout", "directory",
         _directory(lambda p: (p / "run.sh").write_text("rm -rf /")), 1, "run.sh"),
]  # fmt: skip


# --- the manifest's bytes ------------------------------------------------------------------------


def _manifest_value(bundle: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((bundle / "manifest.json").read_bytes())
    return value


def _manifest_bytes(make: Callable[[dict[str, Any], bytes], bytes]) -> Builder:
    """A small bundle whose manifest.json holds ``make(value, canonical bytes)``."""

    def build(context: Context, path: Path) -> None:
        shutil.copytree(context.small("manifest"), path)
        data = (path / "manifest.json").read_bytes()
        (path / "manifest.json").write_bytes(make(json.loads(data), data))

    return build


def _replace(old: bytes, new: bytes) -> Builder:
    return _manifest_bytes(lambda _v, data: data.replace(old, new, 1))


JSON: list[Case] = [
    Case("duplicate key", "json", _replace(b'{"claims"', b'{"run_id":"x","claims"'), 1,
         "duplicate key 'run_id'"),
    Case("duplicate nested key", "json",
         _replace(b'"media_type":', b'"size":1,"media_type":'), 1, "duplicate key 'size'"),
    Case("NaN", "json", _replace(b'"schema_version":1', b'"schema_version":NaN'), 1, "NaN"),
    Case("Infinity", "json", _replace(b'"schema_version":1', b'"schema_version":Infinity'), 1,
         "Infinity"),
    Case("negative Infinity", "json",
         _replace(b'"schema_version":1', b'"schema_version":-Infinity'), 1, "Infinity"),
    Case("a million-deep nesting", "json",
         _manifest_bytes(lambda _v, _d: b"[" * 1_000_000 + b"]" * 1_000_000), 1,
         "nested deeper than 64 levels"),
    Case("nesting past the depth cap", "json",
         _replace(b'"schema_version":1', b'"schema_version":' + b"[" * 65 + b"]" * 65), 1,
         "is not a version number"),
    Case("huge integer", "json",
         _replace(b'"schema_version":1', b'"schema_version":1' + b"0" * 5000), 1,
         "an integer of 5001 digits (over 4300)"),
    Case("huge float", "json", _replace(b'"schema_version":1', b'"schema_version":1e400'), 1,
         "manifest.json"),
    Case("integer beyond 2^53", "json",
         _replace(b'"schema_version":1', b'"schema_version":9007199254740993'), 1,
         "manifest.json"),
    Case("invalid UTF-8", "json", _replace(b'"run-1"', b'"run-\xff"'), 1, "UTF-8"),
    Case("lone surrogate", "json", _replace(b'"run-1"', b'"run-\\ud800"'), 1, "manifest.json"),
    Case("byte order mark", "json", _manifest_bytes(lambda _v, d: b"\xef\xbb\xbf" + d), 1,
         "manifest.json"),
    Case("insignificant whitespace", "json", _manifest_bytes(lambda v, _d: json.dumps(
        v, sort_keys=True, indent=1).encode()), 1, "not RFC 8785 canonical JSON"),
    Case("unsorted keys", "json", _manifest_bytes(lambda v, _d: json.dumps(
        dict(reversed(list(v.items()))), separators=(",", ":")).encode()), 1,
         "not RFC 8785 canonical JSON"),
    Case("escaped ASCII", "json", _replace(b'"run-1"', b'"run-\\u0031"'), 1,
         "not RFC 8785 canonical JSON"),
    Case("trailing data", "json", _manifest_bytes(lambda _v, d: d + b"{}"), 1, "manifest.json"),
    Case("trailing newline", "json", _manifest_bytes(lambda _v, d: d + b"\n"), 1,
         "manifest.json"),
    Case("empty manifest", "json", _manifest_bytes(lambda _v, _d: b""), 1, "manifest.json"),
    Case("array manifest", "json", _manifest_bytes(lambda _v, _d: b"[]"), 1, "manifest.json"),
    Case("truncated manifest", "json", _manifest_bytes(lambda _v, d: d[: len(d) // 2]), 1,
         "manifest.json"),
    Case("control character", "json", _replace(b'"run-1"', b'"run-\x01"'), 1, "manifest.json"),
    Case("leading zero", "json", _replace(b'"schema_version":1', b'"schema_version":01'), 1,
         "manifest.json"),
    Case("exponent form", "json", _replace(b'"schema_version":1', b'"schema_version":1E0'), 1,
         "manifest.json"),
    Case("single quotes", "json", _replace(b'"run_id":"run-1"', b"'run_id':'run-1'"), 1,
         "manifest.json"),
    Case("comment", "json", _manifest_bytes(lambda _v, d: b"// evil\n" + d), 1, "manifest.json"),
]  # fmt: skip


# --- an evidence record's bytes (the manifest intact: a finding, exit 1) -------------------------


_HERMES_RESULT = "components/hermes/result.json"


def _record(data: bytes, media_type: str = COMPONENT_RESULT) -> Builder:
    """A small bundle with a bad record at its role's place: a hermes result the manifest
    names, or the transport log."""
    result = media_type == COMPONENT_RESULT

    def build(_context: Context, path: Path) -> None:
        name = _HERMES_RESULT if result else "transport/exchanges.jsonl"
        components = (
            ComponentRef(name="coding", result="components/coding/result.json"),
            ComponentRef(name="hermes", result=_HERMES_RESULT),
        )
        changes: dict[str, Any] = {"components": components} if result else {}
        write_small_bundle(path, {name: data}, media_type=media_type, **changes)

    return build


RESULT = (b'{"component":"hermes","metrics":{},"raw_outputs":[],"schema_version":1,'
          b'"status":"COMPLETED"}')  # fmt: skip

RECORD: list[Case] = [
    Case("record with a duplicate key", "record",
         _record(RESULT.replace(b'{"component"', b'{"status":"FAILED","component"')), 1,
         "duplicate key 'status'"),
    Case("record with NaN", "record",
         _record(RESULT.replace(b'"metrics":{}', b'"metrics":{"x":NaN}')), 1, "NaN"),
    Case("record nested too deep", "record",
         _record(RESULT.replace(b'"metrics":{}', b'"metrics":{"x":' + b"[" * 70 + b"]" * 70 +
                                b"}")), 1, "$.metrics.x"),
    Case("record with invalid UTF-8", "record", _record(RESULT.replace(b"hermes", b"her\xffmes")),
         1, "UTF-8"),
    Case("record not canonical", "record", _record(RESULT.replace(b"{", b"{ ", 1)), 1,
         "not RFC 8785 canonical JSON"),
    Case("record with an extra field", "record",
         _record(RESULT.replace(b'{"component"', b'{"backdoor":1,"component"')), 1, "backdoor"),
    Case("record of an unknown version", "record",
         _record(RESULT.replace(b'"schema_version":1', b'"schema_version":9')), 1,
         "schema_version"),
    Case("record of the wrong type", "record",
         _record(RESULT.replace(b'"status":"COMPLETED"', b'"status":7')), 1, "status"),
    Case("record lines without a final newline", "record", _record(b"{}", TRANSPORT), 1,
         "does not end with a newline"),
    Case("record lines with a blank line", "record", _record(b"\n", TRANSPORT), 1,
         "transport/exchanges.jsonl"),
    Case("record line over its cap", "record",
         _record(b'"' + b"a" * (16 << 20) + b'"\n', TRANSPORT), 1,
         "a line is over the cap of 16777216 bytes", deterministic=False),
    # the first defect in line order is the one found: the blank line, not the line over the
    # cap after it (each line is checked as it comes, so the pieces a source reads in do not
    # decide; ADR 0051)
    Case("record refused before a line over its cap", "record",
         _record(b"\n" + b'"' + b"a" * (16 << 20) + b'"\n', TRANSPORT), 1,
         ":1: Expecting value", deterministic=False),
]  # fmt: skip


# --- a manifest that parses but breaks its schema ------------------------------------------------


def _resealed(change: Callable[[dict[str, Any]], None]) -> Builder:
    """A small bundle whose manifest value is changed and resealed (canonical bytes)."""

    def make(value: dict[str, Any], _data: bytes) -> bytes:
        change(value)
        value.pop("content_digest", None)
        value["content_digest"] = content_digest(value)
        return canonical_bytes(value)

    return _manifest_bytes(make)


def _set(path: str, new: Any) -> Callable[[dict[str, Any]], None]:
    def change(value: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = value
        for key in parents:
            if key == "*":
                node = node[next(iter(node))]
            else:
                node = node[int(key)] if isinstance(node, list) else node[key]
        if last == "*":
            last = next(iter(node))
        if new is _DELETE:
            del node[last]
        else:
            node[last] = new

    return change


_DELETE = object()


def _rename_entry(new_name: str) -> Callable[[dict[str, Any]], None]:
    def change(value: dict[str, Any]) -> None:
        name, entry = next(iter(value["evidence"].items()))
        del value["evidence"][name]
        value["evidence"][new_name] = entry

    return change


SCHEMA: list[Case] = [
    Case("unknown schema version", "schema", _resealed(_set("schema_version", 2)), 2,
         "schema_version"),
    Case("schema version as a string", "schema", _resealed(_set("schema_version", "1")), 1,
         "schema_version"),
    Case("schema version missing", "schema", _resealed(_set("schema_version", _DELETE)), 1,
         "schema_version"),
    Case("extra top-level field", "schema", _resealed(_set("backdoor", True)), 1, "backdoor"),
    Case("extra field in an entry", "schema", _resealed(_set("evidence/*/exec", "sh")), 1,
         "exec"),
    Case("size as a string", "schema", _resealed(_set("evidence/*/size", "11")), 1, "size"),
    Case("negative size", "schema", _resealed(_set("evidence/*/size", -1)), 1, "size"),
    Case("size past 2^53", "schema", _manifest_bytes(lambda _v, d: re.sub(
        rb'"size":\d+', b'"size":9007199254740992', d, count=1)), 1, "manifest.json"),
    Case("uppercase digest", "schema", _resealed(_set("evidence/*/digest", "sha256:" + "A" * 64)),
         1, "digest"),
    Case("md5 digest", "schema", _resealed(_set("evidence/*/digest", "md5:" + "0" * 32)), 1,
         "digest"),
    Case("bad media type", "schema", _resealed(_set("evidence/*/media_type", "text/plain\n")),
         1, "media_type"),
    Case("traversing logical name", "schema", _resealed(_rename_entry("../etc/passwd")), 1,
         "evidence"),
    Case("uppercase logical name", "schema", _resealed(_rename_entry("Raw/Output.json")), 1,
         "evidence"),
    Case("empty run id", "schema", _resealed(_set("run_id", "")), 1, "run_id"),
    Case("bad creation time", "schema", _resealed(_set("created_at", "yesterday")), 1,
         "created_at"),
    Case("component naming missing evidence", "schema",
         _resealed(_set("components/0/result", "nowhere.json")), 1,
         "which is not an evidence entry"),
    Case("claims of the wrong type", "schema", _resealed(_set("claims", "all good")), 1,
         "claims"),
    Case("unknown pin set", "schema",
         _resealed(_set("pin_set", {"id": "gx10-qualification-v99", "digest": "sha256:" + HEX})),
         2, "gx10-qualification-v99"),
    Case("unsealed edit", "schema", _manifest_bytes(lambda v, _d: canonical_bytes(
        v | {"run_id": "run-edited"})), 1, "content_digest"),
]  # fmt: skip


# --- content attacks on the full example (resealed: integrity holds) -----------------------------

Attack = Callable[[Files, dict[str, Any], dict[str, Path]], None]
_lines = lines


_put_lines, _put_json = put_lines, put_json


def _claims(**changes: Any) -> Attack:
    def attack(_files: Files, fields: dict[str, Any], _others: dict[str, Path]) -> None:
        fields["claims"] = fields["claims"] | changes

    return attack


def _pin_set(pin_id: str) -> Attack:
    def attack(_files: Files, fields: dict[str, Any], _others: dict[str, Path]) -> None:
        fields["pin_set"] = {"id": pin_id, "digest": load_builtin(pin_id).digest}

    return attack


def _both_attacks(*attacks: Attack) -> Attack:
    def attack(files: Files, fields: dict[str, Any], others: dict[str, Path]) -> None:
        for one in attacks:
            one(files, fields, others)

    return attack


def _undecodable_body(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    """A reply marked base64 whose data is no base64: a body that would hide whatever it held."""
    exchanges = _lines(files, "transport/exchanges.jsonl")
    exchanges[1]["response_body"] = {"encoding": "base64", "data": "<think>not base64</think>"}
    _put_lines(files, "transport/exchanges.jsonl", exchanges)


def _splice(files: Files, _fields: dict[str, Any], others: dict[str, Path]) -> None:
    _, donor = read_bundle(others["gx10-spark-quarantined"])
    files["transport/exchanges.jsonl"] = donor["transport/exchanges.jsonl"]


def _truncate(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    _put_lines(files, "transport/exchanges.jsonl", _lines(files, "transport/exchanges.jsonl")[:-1])


def _drop_ledger_line(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    entries = _lines(files, "network/socket-ledger.jsonl")
    _put_lines(files, "network/socket-ledger.jsonl", entries[:2] + entries[3:])


def _probe_to_nowhere(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    probe = json.loads(files["probes/direct-response.json"][0])
    _put_json(files, "probes/direct-response.json", probe | {"exchange": 99})


def _protected_input(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    tasks = _lines(files, "components/hermes/tasks.jsonl")
    tasks[0]["protected_inputs"]["after"] = "sha256:" + "9" * 64
    _put_lines(files, "components/hermes/tasks.jsonl", tasks)


def _observer_count(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    config = json.loads(files["run/config.json"][0])
    config["observer"]["exchanges"] = 4
    _put_json(files, "run/config.json", config)


def _quality(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    quality = json.loads(files["components/coding/spark-quality.json"][0])
    _put_json(files, "components/coding/spark-quality.json", quality | {"code_domain_quality": 99})


def _fallback(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    exchanges = _lines(files, "transport/exchanges.jsonl")
    reply = json.loads(exchanges[3]["response_body"]["data"])
    exchanges[3]["response_body"]["data"] = json.dumps(reply | {"model": "another-model-7b"})
    exchanges[3]["response_model"] = "another-model-7b"
    _put_lines(files, "transport/exchanges.jsonl", exchanges)


def _outside(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    """An outside attempt written into the ledger and into the raw trace it was parsed from."""
    entries = _lines(files, "network/socket-ledger.jsonl")
    entries[1]["address"] = "203.0.113.9"
    _put_lines(files, "network/socket-ledger.jsonl", entries)
    trace = next(n for n in sorted(files) if n.startswith("network/strace/000001-"))
    data, media = files[trace]
    files[trace] = (data.replace(b'inet_addr("127.0.0.1")', b'inet_addr("203.0.113.9")'), media)


def _host_socket(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    """A connect() to the host's Docker socket (under /run, which the sandbox hides) written into
    the raw trace, and the ledger parsed from the traces again: ledger, traces and count agree."""
    trace = next(n for n in sorted(files) if n.startswith("network/strace/000001-"))
    data, media = files[trace]
    loopback = b'{sa_family=AF_INET, sin_port=htons(18080), sin_addr=inet_addr("127.0.0.1")}, 16)'
    host = b'{sa_family=AF_UNIX, sun_path="/var/run/docker.sock"}, 110)'
    files[trace] = (data.replace(loopback, host, 1), media)
    traces = [files[n][0] for n in sorted(files) if n.startswith("network/strace/")]
    entries = [e.model_dump(mode="json") for t in traces for e in trace_entries([t])]
    _put_lines(files, "network/socket-ledger.jsonl", entries)


def _chunk_not_its_bytes(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    """A streamed chunk given bytes (``raw``) other than those its text reads from: the replay
    would read the text, the harness got the bytes."""
    exchanges = _lines(files, "transport/exchanges.jsonl")
    chunk = next(e for e in exchanges if e["chunks"])["chunks"][0]
    chunk["raw"] = base64.b64encode(chunk["data"].encode().replace(b"data", b"dat\xff", 1)).decode()
    _put_lines(files, "transport/exchanges.jsonl", exchanges)


_RAW = {
    "components/coding/spark-quality.json": "components/coding/raw/quality.json",
    "components/hermes/tasks.jsonl": "components/hermes/raw/tasks.jsonl",
}
"""The raw harness output each derived record of the example was read from."""


def _content(attack: Attack, *, raw: bool = False) -> Builder:
    """A resealed attack on the full example; with ``raw``, every raw harness output is edited
    to agree with its edited record (the forger keeps the two consistent)."""

    def build(context: Context, path: Path) -> None:
        manifest, files = read_bundle(context.examples["gx10-full-qualified"])
        fields: dict[str, Any] = {"claims": manifest.claims.model_dump(mode="json")}
        attack(files, fields, context.examples)
        if raw:
            for record, output in _RAW.items():
                data = files[record][0]
                if record.endswith(".jsonl"):
                    lines = [json.loads(line) for line in data.splitlines()]
                    kept = [{k: v for k, v in line.items() if k != "exchanges"} for line in lines]
                    data = b"".join(json.dumps(line).encode() + b"\n" for line in kept)
                files[output] = (data, files[output][1])
            rederive_metrics(files, "spark", ["coding", "reliability"])
            rederive_metrics(files, "hermes", ["hermes"])
        reseal(path, manifest, files, fields)

    return build


def _swapped_blob(context: Context, path: Path) -> None:
    """A blob's bytes replaced by another bundle's blob (the manifest untouched)."""
    shutil.copytree(context.examples["gx10-full-qualified"], path)
    manifest, _ = read_bundle(path)
    _, donor = read_bundle(context.examples["gx10-spark-quarantined"])
    entry = manifest.evidence["transport/exchanges.jsonl"]
    target = path / "blobs" / "sha256" / entry.digest[7:]
    target.chmod(0o644)
    target.write_bytes(donor["transport/exchanges.jsonl"][0])


def _other_size(context: Context, path: Path) -> None:
    """An entry that names its blob by digest but declares another size (resealed)."""
    shutil.copytree(context.small("size"), path)
    value = _manifest_value(path)
    name = next(iter(value["evidence"]))
    value["evidence"][name]["size"] += 1
    value.pop("content_digest")
    value["content_digest"] = content_digest(value)
    (path / "manifest.json").write_bytes(canonical_bytes(value))


CONTENT: list[Case] = [
    Case("claimed score edited", "content", _content(_claims(aggregate_score=99.0)), 1,
         "claims differ from the replay: aggregate_score: claimed 99"),
    Case("claimed outcome edited", "content", _content(_claims(outcome="NOT_QUALIFIED")), 1,
         "claims differ from the replay: outcome: claimed NOT_QUALIFIED, replayed QUALIFIED"),
    Case("pin set swapped for v4", "content",
         _content(_both_attacks(_pin_set("gx10-qualification-v4"), _claims(rankable=True))), 1,
         "rankable: claimed True, replayed False"),
    Case("base64 body that is not base64", "content", _content(_undecodable_body), 1,
         "$.response_body.data: '<think>not base64</think>' does not match"),
    Case("evidence spliced from another run", "content", _content(_splice), 1,
         "reading of the streams counts 0"),
    Case("transport log truncated", "content", _content(_truncate), 1,
         "visible chunks, Infermark's reading of the streams counts"),
    Case("socket-ledger line removed", "content", _content(_drop_ledger_line), 1,
         "the supervisor closed the ledger at 5 attempts; it holds 4"),
    Case("probe naming a missing exchange", "content", _content(_probe_to_nowhere), 1,
         "replayed INFRA_ERROR"),
    Case("protected input changed", "content", _content(_protected_input), 1,
         "the record is not what the raw outputs of hermesbench say"),
    Case("protected input changed in the raw output too", "content",
         _content(_protected_input, raw=True), 1, "replayed NOT_QUALIFIED"),
    Case("observer count edited", "content", _content(_observer_count), 1,
         "replayed INFRA_ERROR"),
    Case("harness score edited", "content", _content(_quality), 1,
         "the record is not what the raw outputs of sparkbench say"),
    Case("harness score edited in the raw output too", "content", _content(_quality, raw=True),
         1, "aggregate_score: claimed 87.835, replayed 96.075"),
    Case("reply from another model", "content", _content(_fallback), 1, "replayed INFRA_ERROR"),
    Case("outside attempt recorded", "content", _content(_outside), 1, "replayed INFRA_ERROR"),
    Case("host socket attempt recorded", "content", _content(_host_socket), 1,
         "replayed INFRA_ERROR"),
    Case("streamed chunk whose text is not its bytes", "content",
         _content(_chunk_not_its_bytes), 1, "not the UTF-8 reading of their bytes"),
    Case("blob swapped for another bundle's", "content", _swapped_blob, 1,
         "bytes, the manifest says"),
    Case("entry naming a blob of another size", "content", _other_size, 1,
         "has 184 bytes, the manifest says 185"),
]  # fmt: skip


# --- signature attacks ---------------------------------------------------------------------------


def _signature_case(attack_name: str) -> Builder:
    def build(context: Context, path: Path) -> list[str]:
        from tests.audit.test_signing import ATTACKS, WHO  # noqa: PLC0415
        from tests.private_sigstore import ISSUER  # noqa: PLC0415

        attack = {a[0]: a[1] for a in ATTACKS}[attack_name]
        instance, trust = context.sigstore["instance"], context.sigstore["trust"]
        shutil.copytree(context.small("signed"), path)
        source = parse_manifest((path / "manifest.json").read_bytes())
        statement = bundle_statement(source.model, source.bundle_digest)
        (path / "signatures").mkdir()
        (path / MANIFEST_SIGNATURE).write_bytes(instance.sign_dsse(statement, identity=WHO))
        scratch = context.work / "signature-scratch" / path.name
        scratch.mkdir(parents=True, exist_ok=True)
        extra = attack(path, instance, trust, scratch) or []
        policy = ["--identity", WHO, "--issuer", ISSUER, "--trusted-root", trust["root"]]
        return policy + list(extra)

    return build


def _signature_cases() -> list[Case]:
    from tests.audit.test_signing import ATTACKS  # noqa: PLC0415

    return [
        Case(f"signature: {name}", "signature", _signature_case(name), 1, fragment,
             deterministic=False)
        for name, _attack, fragment in ATTACKS
    ]  # fmt: skip


CASES: list[Case] = [
    *ARCHIVE, *DIRECTORY, *JSON, *RECORD, *SCHEMA, *CONTENT, *_signature_cases(),
    *FORGERIES,
]  # fmt: skip
"""Every case of the corpus, by category."""


# --- generation ----------------------------------------------------------------------------------


def digest_of_path(path: Path) -> str:
    """sha256 of a file, or of a directory's sorted (path, file digest) listing."""
    if path.is_file():
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    listing = "".join(
        f"{p.relative_to(path).as_posix()}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.is_symlink()
    )
    return "sha256:" + hashlib.sha256(listing.encode()).hexdigest()


def generate(out: Path, context: Context, cases: list[Case] = CASES) -> dict[str, dict[str, Any]]:
    """Write every case into ``out``; return, by case name, its path, arguments and digest."""
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, dict[str, Any]] = {}
    for case in cases:
        suffix = ".tar" if case.category == "archive" else ""
        path = out / f"{case.slug}{suffix}"
        extra = case.build(context, path) or []
        built[case.name] = {
            "path": str(path),
            "args": extra,
            "digest": digest_of_path(path) if case.deterministic else None,
        }
    return built


def expectations(built: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The committed table: each case's category, command, exit, fragment and digest."""
    return {
        case.name: {
            "category": case.category,
            "command": case.command,
            "exit": case.exit,
            "fragment": case.fragment,
            "digest": built[case.name]["digest"],
        }
        for case in CASES
    }


def main(argv: list[str]) -> int:
    """``generate.py OUT [--check | --write]``: build the corpus (needs the example bundles)."""
    import argparse  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    from audit.demo.examples import build_example, example_runs  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m tests.data.hostile.generate")
    parser.add_argument("out", type=Path, help="the directory to write the corpus into")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with expected.json")
    mode.add_argument("--write", action="store_true", help="rewrite expected.json")
    args = parser.parse_args(argv)
    out = args.out
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        examples = {}
        for run in example_runs():
            build_example(run, work / "examples" / run.name, work / f"build-{run.name}")
            examples[run.name] = work / "examples" / run.name
        context = Context(work, examples)
        deterministic = [c for c in CASES if c.deterministic]
        table = expectations(generate(out, context, deterministic) | {
            c.name: {"digest": None} for c in CASES if not c.deterministic
        })  # fmt: skip
    if args.write:
        EXPECTED.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        return 0
    if args.check:
        committed = json.loads(EXPECTED.read_text())
        drift = sorted(n for n in table if committed.get(n) != table[n])
        for name in drift:
            sys.stderr.write(f"drift: {name}\n")
        return 1 if drift else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
