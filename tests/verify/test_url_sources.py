"""Bundles by URL (ADR 0024): a tar read from file://, from a real HTTP server on 127.0.0.1 with
byte ranges (tests/http_range.py) and from a real S3-compatible server (moto's standalone
server, started as its own process) gives the verdict bytes it gives from disk; the listing
reads headers, never a large member; a server that lies fails closed with one located line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit._archive import pack
from audit.cli import main
from bundle_schema.errors import InvalidInput
from tests.factories import write_small_bundle
from tests.http_range import LIES as SERVER_LIES
from tests.http_range import RangeServer, serve, url_of
from tests.s3_server import moto_s3
from verify import open_source, url_snapshots, verdict_json, verify_bundle
from verify._remote import BLOCK, FIRST_READ, SMALL_TAR, filesystem, shown_url

BIG = 48 << 20
"""The large blob: the listing must not read it, hashing reads it once."""
FULL = "gx10-full-qualified"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, built_examples: dict[str, Path]) -> Path:
    """A folder of published tars: every example bundle, and one with a large blob."""
    root = tmp_path_factory.mktemp("published")
    for name, path in built_examples.items():
        pack(path, root / f"{name}.tar")
    big = tmp_path_factory.mktemp("big") / "big"
    write_small_bundle(big, [("raw/big.bin", b"\x5a" * BIG)], durable=False)
    pack(big, root / "big.tar")
    return root


@pytest.fixture(scope="module")
def http(published: Path) -> Iterator[RangeServer]:
    with serve(published) as server:
        yield server


@pytest.fixture
def server(http: RangeServer) -> Iterator[RangeServer]:
    """The module's server, honest and with no requests counted, for one test."""
    http.lie = "none"
    http.reset()
    yield http
    http.lie = "none"


@pytest.fixture(scope="module")
def s3(published: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """moto's S3 server as its own process on 127.0.0.1 (tests/s3_server.py), bucket ``runs``
    holding the published tars; the environment points the AWS SDK at it
    (``AWS_ENDPOINT_URL``), as an operator points it at MinIO or R2."""
    with moto_s3(tmp_path_factory.mktemp("moto")) as environment:
        import boto3  # noqa: PLC0415 - the test's own client, not the code under test

        client = boto3.client("s3", endpoint_url=environment["AWS_ENDPOINT_URL"])
        client.create_bucket(Bucket="runs")
        for tar in sorted(published.glob("*.tar")):
            client.upload_file(str(tar), "runs", f"v5/{tar.name}")
        yield environment | {"bucket": "runs"}


def _cli(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, bytes, str]:
    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err.decode()


# --- the same verdict from every source ----------------------------------------------------------


def test_file_and_http_give_the_verdict_bytes_of_the_disk(
    published: Path, server: RangeServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tar = published / f"{FULL}.tar"
    code, local, _ = _cli(["verify", str(tar), "--json"], capsysbinary)
    assert code == 0
    assert json.loads(local)["integrity"]["status"] == "ok"
    for url in (tar.as_uri(), url_of(server, tar)):
        assert _cli(["verify", url, "--json"], capsysbinary) == (0, local, ""), url
    # every example, through the library, from HTTP
    for example in sorted(published.glob("gx10-*.tar")):
        assert verdict_json(verify_bundle(url_of(server, example)).verdict) == verdict_json(
            verify_bundle(example).verdict
        )


def test_s3_gives_the_verdict_bytes_of_the_disk(
    published: Path, s3: dict[str, str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tar = published / f"{FULL}.tar"
    local = _cli(["verify", str(tar), "--json"], capsysbinary)
    assert _cli(["verify", f"s3://runs/v5/{FULL}.tar", "--json"], capsysbinary) == local
    big = _cli(["verify", "s3://runs/v5/big.tar", "--json"], capsysbinary)
    assert big == _cli(["verify", str(published / "big.tar"), "--json"], capsysbinary)


def test_through_a_subprocess_from_http_and_s3(
    published: Path, server: RangeServer, s3: dict[str, str]
) -> None:
    """The entry point as an operator runs it: credentials and endpoint from the environment."""
    run = [sys.executable, "-m", "audit", "verify", "--json"]
    env = os.environ | s3
    local = subprocess.run([*run, str(published / f"{FULL}.tar")], capture_output=True, check=True)
    for url in (url_of(server, published / f"{FULL}.tar"), f"s3://runs/v5/{FULL}.tar"):
        remote = subprocess.run([*run, url], capture_output=True, env=env, check=False)
        assert (remote.returncode, remote.stderr, remote.stdout) == (0, b"", local.stdout), url


def test_show_diff_rank_and_unpack_take_urls(
    published: Path,
    server: RangeServer,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    tar = published / f"{FULL}.tar"
    url = url_of(server, tar)
    code, shown, err = _cli(["show", url, "--json"], capsysbinary)
    assert (code, err) == (0, "")
    assert shown == _cli(["show", str(tar), "--json"], capsysbinary)[1]
    other = url_of(server, published / "gx10-full-not-qualified.tar")
    code, out, _ = _cli(["diff", url, other, "--json"], capsysbinary)
    assert code == 1
    assert json.loads(out)["same_verdict"] is False
    code, out, err = _cli(["rank", url, other, "--json"], capsysbinary)
    assert (code, err) == (0, "")
    assert url in out.decode()
    assert _cli(["unpack", url, "-o", str(tmp_path / "unpacked")], capsysbinary)[0] == 0
    assert (
        verify_bundle(tmp_path / "unpacked").verdict.bundle_digest
        == verify_bundle(tar).verdict.bundle_digest
    )
    vsa = tmp_path / "vsa.json"
    assert _cli(["verify", url, "--vsa", str(vsa)], capsysbinary)[0] == 0
    assert json.loads(vsa.read_bytes())["predicate"]["resourceUri"] == url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://reader:zq9-pass@e.test/x.tar", "http://reader:***@e.test/x.tar"),
        ("https://zq9-ghp-token@e.test/x.tar", "https://***@e.test/x.tar"),
        ("https://:zq9-pass@e.test/x.tar", "https://:***@e.test/x.tar"),
        ("https://e.test/x.tar", "https://e.test/x.tar"),
        ("http://zq9-user:zq9-pass@[::1/x.tar", "http://***@[::1/x.tar"),
    ],
)
def test_a_url_is_shown_without_its_credential(url: str, shown: str) -> None:
    """Messages name a URL with its password masked, and a user name that stands alone (a
    token given as the user name) too."""
    assert shown_url(url) == shown
    assert "zq9-" not in shown_url(url)


def test_the_human_outputs_never_show_a_urls_password(
    published: Path, server: RangeServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """audit verify, show, show --exchange and diff name a bundle read by URL as messages do:
    its password masked (an operator pastes these outputs into tickets and reviews)."""
    plain = url_of(server, published / f"{FULL}.tar")
    url = plain.replace("http://", "http://reader:s3cr3t-word@", 1)
    other = url_of(server, published / "gx10-full-not-qualified.tar")
    for argv in (["verify", url], ["show", url], ["show", url, "--exchange", "1"],
                 ["diff", url, other]):  # fmt: skip
        code, out, err = _cli(argv, capsysbinary)
        assert code in (0, 1), (argv, err)
        assert "s3cr3t-word" not in out.decode() + err, argv
        assert "reader:***@" in out.decode().replace("\n", ""), (argv, out.decode()[-500:])


@pytest.mark.parametrize(
    "url",
    ["http://zq9-user:zq9-pass@[::1/x.tar", "http://[::1/x.tar", "http://127.0.0.1:99999/x.tar"],
    ids=["unclosed-bracket-userinfo", "unclosed-bracket", "no-port"],
)
def test_a_url_that_does_not_split_is_refused_with_one_line(
    url: str, published: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """audit verify refuses it (exit 2, one line, no password); in an archive list it is one
    refused source and the other bundles are verified (never a traceback for the whole)."""
    code, out, err = _cli(["verify", url], capsysbinary)
    assert (code, out) == (2, b"")
    assert err.count("\n") == 1 and ": not a URL: " in err and "zq9-pass" not in err, err
    listed = tmp_path / "list.txt"
    listed.write_text(f"{url}\n{published / (FULL + '.tar')}\n", "utf-8")
    code, out, err = _cli(["verify-archive", "--from", str(listed)], capsysbinary)
    report = json.loads(out)
    assert code == 1 and "Traceback" not in err
    assert report["counts"]["bundles"] == 1
    ((refused,),) = [report["refused"]]
    assert refused["reason"].startswith("not a URL: ") and "zq9-pass" not in refused["source"]


# --- what is read --------------------------------------------------------------------------------


def test_the_listing_reads_headers_not_the_large_blob(published: Path, server: RangeServer) -> None:
    tar = published / "big.tar"
    url = url_of(server, tar)
    source = open_source(url)
    source.manifest_bytes()
    assert source.members["manifest.json"].size is not None
    listing = server.sent
    # the first read (1 MiB), headers and the manifest: not the 48 MiB blob
    assert listing < FIRST_READ + (512 << 10), listing
    assert len(server.requests) <= 4, server.requests
    server.reset()
    assert verify_bundle(url).verdict.integrity.status == "ok"
    size = tar.stat().st_size
    # hashing reads the tar once, in blocks; the records come from what was received
    assert size <= server.sent < size + (1 << 20), (server.sent, size)
    assert len(server.requests) <= size // BLOCK + 4, len(server.requests)
    assert all(r.status == 206 for r in server.requests)


def test_a_small_tar_is_one_request(published: Path, server: RangeServer) -> None:
    tar = published / "gx10-spark-quarantined.tar"
    assert tar.stat().st_size <= 64 << 10
    assert verify_bundle(url_of(server, tar)).verdict.integrity.status == "ok"
    assert len(server.requests) == 1


def _verified_by_url(tmp_path: Path, blobs: int, size: int) -> tuple[int, list[Any], int]:
    """A bundle of ``blobs`` blobs of ``size`` bytes packed, served and verified by its URL (the
    same verdict as from disk): the tar's size, the requests and the bytes sent."""
    bundle = tmp_path / "bundle"
    write_small_bundle(bundle, [(f"raw/{i}.bin", bytes([i]) * size) for i in range(blobs)],
                       durable=False)  # fmt: skip
    root = tmp_path / "site"
    root.mkdir()
    tar = root / "run.tar"
    pack(bundle, tar)
    with serve(root) as site:
        verdict = verify_bundle(url_of(site, tar)).verdict
        assert verdict_json(verdict) == verdict_json(verify_bundle(tar).verdict)
        return tar.stat().st_size, site.requests, site.sent


def test_a_tar_of_up_to_a_mebibyte_is_one_request(tmp_path: Path) -> None:
    """As a plain GET of it (it was its first 64 KiB, then the rest: two): the listing's
    windows and hashing ask for nothing more, and no byte is received twice."""
    size, requests, sent = _verified_by_url(tmp_path, 4, 200 << 10)
    assert 512 << 10 < size <= FIRST_READ
    assert len(requests) == 1, requests
    assert sent == size


def test_a_tar_of_up_to_a_block_is_two_requests(tmp_path: Path) -> None:
    """A tar of a few MiB of small members: its first MiB, then all the rest, and no byte is
    received twice (by the listing's windows, then hashing, it was five requests and 4.9 MB for
    these 3.1 MB: the data between the windows came again)."""
    size, requests, sent = _verified_by_url(tmp_path, 30, 100 << 10)
    assert 2 * FIRST_READ < size <= SMALL_TAR
    assert sent == size
    assert len(requests) == 2, requests


def test_one_command_reads_one_object(published: Path, server: RangeServer, tmp_path: Path) -> None:
    """Within a command (url_snapshots), a URL opened again is the snapshot first read: the
    listing is reused, and an object replaced meanwhile is refused, never mixed in."""
    root = tmp_path / "site"
    root.mkdir()
    tar = root / "run.tar"
    shutil.copyfile(published / "big.tar", tar)
    with serve(root) as site, url_snapshots():
        url = url_of(site, tar)
        first = open_source(url)
        requests = len(site.requests)
        assert open_source(url) is first
        assert len(site.requests) == requests  # the listing was not read again
        replacement = tmp_path / "replacement.tar"
        shutil.copyfile(published / f"{FULL}.tar", replacement)
        os.replace(replacement, tar)
        largest = max(first.members.values(), key=lambda m: m.size or 0)  # not read yet
        with pytest.raises(InvalidInput, match="changed since it was first read") as raised:
            b"".join(largest.chunks())
        assert str(raised.value).startswith(f"{url}: bytes ")


def test_one_file_system_per_command(s3: dict[str, str]) -> None:
    """A command's URLs share one file system (one client: a new one per URL cost a quarter of
    a second and tens of MiB), made afresh for the next command, from its environment."""
    with url_snapshots():
        first = filesystem("s3")
        assert filesystem("s3") is first
        assert filesystem("http") is not first
    with url_snapshots():
        assert filesystem("s3") is not first
    assert filesystem("s3") is not filesystem("s3")  # outside a command: never kept


# --- servers that lie ----------------------------------------------------------------------------

LIES = {
    "no-ranges": "the server does not serve byte ranges",
    "bigger-total": "answers bytes ",
    "short-body": "the response broke off",
    "long-length": "Content-Length '",
    "etag-changes": "the object changed since it was first read (If-Match failed)",
    "etag-changes-ignoring-if-match": "the object changed since it was first read: its ETag",
    "redirect-elsewhere": "redirected (HTTP 302) to another origin, http://127.0.0.2:9/",
    "wrong-start": "answers bytes ",
    "gzip-encoded": "the server encoded the bytes (Content-Encoding: gzip)",
}


def test_every_lie_of_the_server_is_tested() -> None:
    again = {"other-bytes-again"}  # below: it needs ranges read twice
    assert set(LIES) | {"none", "redirect-here"} | again == set(SERVER_LIES)


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_server_that_lies_fails_closed_with_a_located_line(
    lie: str,
    published: Path,
    server: RangeServer,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    server.lie = lie
    url = url_of(server, published / "big.tar")  # past the first read: a second request
    code, out, err = _cli(["verify", url, "--json"], capsysbinary)
    assert (code, out) == (2, b""), err
    assert err.startswith(f"audit verify: {url}: "), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert LIES[lie] in err, err


def test_a_redirect_on_the_same_origin_is_followed(published: Path, server: RangeServer) -> None:
    server.lie = "redirect-here"
    tar = published / f"{FULL}.tar"
    assert verdict_json(verify_bundle(url_of(server, tar)).verdict) == verdict_json(
        verify_bundle(tar).verdict
    )
    redirects = [r for r in server.requests if r.status == 307]
    assert len(redirects) == 1  # followed once: later ranges go where it led


def test_refusals_name_the_url_given(
    published: Path,
    server: RangeServer,
    s3: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    secret = server.url.replace("http://", "http://reader:hunter2@") + "/missing.tar"
    cases = {
        f"{server.url}/missing.tar": "cannot open: not found (HTTP 404)",
        secret: "cannot open: not found (HTTP 404)",
        f"{server.url}/": "names a directory or prefix, not a tar",
        "s3://runs/v5/missing.tar": "cannot open: not found (NoSuchKey)",
        "s3://runs/v5/": "names a directory or prefix, not a tar",
        "s3://runs": "an s3:// URL names a bucket and a key",
        "ftp://127.0.0.1/x.tar": "not ftp://",
        "file://elsewhere/x.tar": "a file:// URL of another host",
    }
    for url, fragment in cases.items():
        code, out, err = _cli(["verify", url], capsysbinary)
        assert (code, out) == (2, b""), (url, err)
        assert err.startswith(f"audit verify: {shown_url(url)}: "), err
        assert fragment in err, err
        assert "hunter2" not in err
    empty = published.parent / "empty-site"
    empty.mkdir(exist_ok=True)
    (empty / "empty.tar").write_bytes(b"")
    with serve(empty) as site:
        code, _, err = _cli(["verify", f"{site.url}/empty.tar"], capsysbinary)
    assert (code, err) == (2, f"audit verify: {site.url}/empty.tar: not a readable "
                               "uncompressed tar: empty file\n")  # fmt: skip


def test_s3_object_replaced_while_read_is_refused(published: Path, s3: dict[str, str]) -> None:
    import boto3  # noqa: PLC0415 - the test's own client

    client: Any = boto3.client("s3", endpoint_url=s3["AWS_ENDPOINT_URL"])
    client.upload_file(str(published / "big.tar"), "runs", "moving.tar")
    source = open_source("s3://runs/moving.tar")
    client.upload_file(str(published / f"{FULL}.tar"), "runs", "moving.tar")
    largest = max(source.members.values(), key=lambda m: m.size or 0)  # not read yet
    with pytest.raises(InvalidInput, match=r"^s3://runs/moving.tar: bytes .*changed since it"):
        b"".join(largest.chunks())


# --- the default stays local ---------------------------------------------------------------------


def test_help_and_local_verification_import_no_url_reader(published: Path) -> None:
    program = (
        "import sys\n"
        "from audit.cli import main\n"
        "assert main(['verify', sys.argv[1], '--json']) == 0\n"
        "try:\n"
        "    main(['--help'])\n"
        "finally:\n"
        "    roots = ('fsspec', 's3fs', 'aiobotocore', 'botocore')\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in roots)\n"
        "    assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program, str(published / f"{FULL}.tar")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# --- a range read again ---------------------------------------------------------------------------


RESULT = "components/coding/result.json"


def _blob_name(tar: Path, name: str) -> str:
    """The digest that names evidence entry ``name``'s blob in ``tar``."""
    with tarfile.open(tar) as archive:
        manifest = json.loads(archive.extractfile("manifest.json").read())  # type: ignore[union-attr]
    return str(manifest["evidence"][name]["digest"]).removeprefix("sha256:")


def _record_byte(tar: Path, name: str) -> int:
    """The offset in ``tar`` of the middle byte of evidence entry ``name``'s blob."""
    with tarfile.open(tar) as archive:
        member = archive.getmember(f"blobs/sha256/{_blob_name(tar, name)}")
        return member.offset_data + member.size // 2


def test_ranges_let_go_and_read_again_give_the_verdict_bytes_of_the_disk(
    published: Path,
    server: RangeServer,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With little kept of what was received (a tar larger than ``CACHE_BYTES``), the records
    are received again after the blobs were hashed, each hashed again as it is read (ADR
    0053): the verdict is the disk's."""
    monkeypatch.setattr("verify._remote.CACHE_BYTES", 4 << 10)
    tar = published / "big.tar"
    code, disk, _ = _cli(["verify", str(tar), "--json"], capsysbinary)
    assert code == 0
    code, out, err = _cli(["verify", url_of(server, tar), "--json"], capsysbinary)
    assert (code, out) == (0, disk), err
    assert server.resent > 0  # the proof was needed


def test_a_server_that_serves_other_bytes_on_a_second_read_fails_closed(
    published: Path,
    server: RangeServer,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that answers every check as for the same object (size, ETag, Last-Modified,
    If-Match) but sends other bytes for a range it sent before: the bytes hashed would not be
    the bytes read, so nothing is judged. Its record's bytes are honest when the tar is listed
    and when they are hashed, and changed only when the record is read to be judged (little is
    kept of what was received: the record is received again, not taken from memory)."""
    monkeypatch.setattr("verify._remote.CACHE_BYTES", 4 << 10)
    tar = published / "big.tar"
    server.lie, server.flip_at = "other-bytes-again", _record_byte(tar, RESULT)
    server.flip_after = 2  # listed, hashed, then read
    url = url_of(server, tar)
    try:
        code, out, err = _cli(["verify", url, "--json"], capsysbinary)
    finally:
        server.flip_at, server.flip_after = None, 1
    assert (code, out) == (2, b""), err
    digest = _blob_name(tar, RESULT)
    assert err.startswith(f"audit verify: {url}: blobs/sha256/{digest}: other bytes "), err
    assert "than when it was hashed" in err and err.count("\n") == 1, err


def _manifest(tar: Path) -> tuple[int, str]:
    """The offset in ``tar`` of the last digit of its manifest's ``created_at`` (XOR 0x01
    keeps it a digit: another valid manifest, another bundle digest), and the bundle digest."""
    with tarfile.open(tar) as archive:
        member = archive.getmember("manifest.json")
        data = archive.extractfile(member).read()  # type: ignore[union-attr]
    start = data.index(b'"created_at":"') + len(b'"created_at":"')
    last = max(i for i in range(start, data.index(b'"', start)) if data[i : i + 1].isdigit())
    return member.offset_data + last, f"sha256:{hashlib.sha256(data).hexdigest()}"


def _digests(document: Any) -> set[str]:
    """Every ``bundle_digest`` anywhere in a report."""
    if isinstance(document, dict):
        found = {document["bundle_digest"]} if "bundle_digest" in document else set()
        return found.union(*(_digests(v) for v in document.values()))
    if isinstance(document, list):
        return set().union(*(_digests(v) for v in document))
    return set()


@pytest.mark.parametrize("case", [("rank", 2), ("verify-archive", 3)], ids=["rank", "archive"])
def test_a_source_whose_manifest_changes_after_its_listing_is_refused(
    case: tuple[str, int],
    server: RangeServer,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An archive lists each source by its manifest's digest, then verifies it. A server that
    answers the manifest's read by the verification with another valid manifest is refused as
    changed. Less is kept of what was received than the manifest, so each read is a request;
    ``reads`` are the ones before the verification's (the order's listing and the engine's, and
    verify-archive's digest), which give the honest manifest. The honest copy of the bundle it
    was listed as, at another URL and judged next, is judged for its own bytes, as when alone."""
    command, reads = case
    monkeypatch.setattr("verify._remote.CACHE_BYTES", 256)
    tar = server.root / "big.tar"
    (tmp_path / "copy").mkdir()
    os.link(tar, tmp_path / "copy" / "big.tar")
    offset, listed = _manifest(tar)
    with serve(tmp_path / "copy") as honest:
        copy = url_of(honest, tmp_path / "copy" / "big.tar")
        code, alone, err = _cli([command, copy, "--json"], capsysbinary)
        assert code == 0, err
        server.lie, server.flip_at, server.flip_to = "other-bytes-again", offset, 0x01
        server.flip_after = reads
        url = url_of(server, tar)
        try:
            code, out, err = _cli([command, url, copy, "--json"], capsysbinary)
        finally:
            server.flip_at, server.flip_to, server.flip_after = None, 0xFF, 1
    assert code == 1, err
    said = out.decode() + err
    assert f"changed while the archive was verified: listed as {listed}, then sha256:" in said
    assert said.count(url) == 1, said  # the refused source, named once
    report, before = json.loads(out), json.loads(alone)
    assert _digests(report) == {listed}, report
    kept = {k: v for k, v in report.items() if k not in ("refused", "counts")}
    assert kept == {k: v for k, v in before.items() if k not in ("refused", "counts")}
