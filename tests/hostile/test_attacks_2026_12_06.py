"""Attacks on two changes of 2026-12-06, as a publisher who controls every byte of a bundle (or an
endpoint behind the observer):

- ``audit verify-archive`` and ``audit rank`` with ``--identity``/``--issuer``/``--trusted-root``
  (ADR 0043: ``verify/archive.py``, ``verify/_dask.py``, ``verify/judging.py``,
  ``verify/ranking.py``);
- streamed chunks that keep their bytes (``Chunk.raw``, ``stream_chunks``,
  ``TransportExchange._chunks_as_read`` in ``bundle_schema/models/records.py``; the observer's
  ``_stream`` and ``_finish``).

Each test asserts the safe behaviour; those not marked held when written (their docstrings
say what held). Holes found (2026-12-06), both closed the same day:

1. ``audit rank`` with a policy: which source of one bundle digest decides whether its run was
   signed is the first intact one by name (``verify.judging.JudgedArchive._count``), whatever its
   signature: a copy of a signed run's bytes without its signature, given a name that sorts
   first, sets the signed run apart ("signature failed: ..."); and with the signed source first,
   the unsigned one is named among the run's sources, exit 0, where ``verify-archive`` refuses it.
2. A byte order mark split across the stream's first pieces: ``stream_chunks`` gives a first
   chunk of no text (its bytes in ``raw``), and ``verify.replies._stream_events`` strips a BOM
   only from the first chunk's text, so the verifier's replay loses the stream's first event,
   which the harness (any reader of the stream as UTF-8 with a BOM dropped) read. The observer
   records an endpoint's stream so since the change (before it, a piece of no text was no chunk).

Closed: 1 by ``JudgedArchive._count`` (of a digest's intact sources, the first that passes its
checks counts, and under a policy a source whose signature failed where the counted one's
verified is refused, naming why, as ``verify-archive`` refuses it); 2 by ``_stream_events``
(the BOM is dropped from the stream's first text, in whichever chunk it is).
"""

from __future__ import annotations

import base64
import codecs
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from audit._archive import pack
from audit.cli import main
from bundle_schema import KINDS, canonical_bytes
from bundle_schema.documents import parse_document
from bundle_schema.errors import DocumentError
from bundle_schema.layout import MANIFEST_SIGNATURE
from bundle_schema.models import Chunk, TransportExchange, stream_chunks
from tests.audit.test_signing import WHO, sign
from tests.factories import write_small_bundle
from tests.hostile.test_attacks_2026_12_05_runner import _Pieces, _streamed
from tests.http_range import serve as serve_http
from tests.http_range import url_of
from tests.paths import SCHEMAS
from tests.private_sigstore import PrivateSigstore
from tests.verify.test_archive_signer import (
    _identity_policy,
    _policy,
    reports_on_both_engines,
)
from tests.verify.test_record_fast_paths import _check_model_first
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify.judging import Here, Job, judge_archive
from verify.replies import read_exchange, sse_events

pytestmark = pytest.mark.usefixtures("private_home")

MALLORY = "mallory@test.local"
TRANSPORT = "transport/exchanges.jsonl"
TRANSPORT_TYPE = "application/vnd.evidence-audit.transport-exchange+jsonl"


# --- shared ------------------------------------------------------------------------------------


def _signed(
    path: Path, instance: PrivateSigstore, trust: dict[str, str], who: str = WHO, **changes: Any
) -> Path:
    write_small_bundle(path, durable=False, **changes)
    assert sign(path, instance, trust, who=who) == 0
    return path


def _stripped(signed: Path, path: Path) -> Path:
    """The bytes of ``signed`` (the same bundle digest) without its signature."""
    shutil.copytree(signed, path)
    shutil.rmtree(path / "signatures")
    return path


def _resigned(
    signed: Path, path: Path, instance: PrivateSigstore, trust: dict[str, str], who: str
) -> Path:
    """The bytes of ``signed`` (the same bundle digest), signed again by ``who``."""
    _stripped(signed, path)
    assert sign(path, instance, trust, who=who) == 0
    return path


def _run(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, Any]:
    capsysbinary.readouterr()  # what signing printed
    code = main(argv)
    out = capsysbinary.readouterr().out
    return code, json.loads(out)


def _rows(ranking: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [*ranking["ranked"], *ranking["limitations"], *ranking["apart"]]
    return rows + [row for group in ranking["controlled"].values() for row in group]


# --- 1. verify-archive: a source of a bundle's bytes with other signature files -----------------


@pytest.mark.parametrize("kind", ["stripped", "mallory", "stripped-tar"])
@pytest.mark.parametrize("signed_first", [True, False])
def test_verify_archive_passes_no_bundle_on_a_source_the_identity_did_not_sign(  # noqa: PLR0917
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    kind: str,
    signed_first: bool,
) -> None:
    """Held: a source of a signed bundle's digest that holds other signature files (none,
    another identity's; a directory or a tar) is refused (exit 1), never listed as a source of
    the passing entry, whether it comes before the signed source or after. (With it first, the
    entry once failed its check and the signed source was refused: the copy sank the run. Since
    2026-12-07 a source whose signature verifies takes its place, ADR 0043.)"""
    root = tmp_path / "archive"
    root.mkdir()
    signed = _signed(tmp_path / "keep", instance, trust, run_id="run-1")
    first, second = ("a", "b") if signed_first else ("b", "a")
    shutil.copytree(signed, root / first)
    if kind == "mallory":
        other = _resigned(signed, root / second, instance, trust, MALLORY)
    elif kind == "stripped":
        other = _stripped(signed, root / second)
    else:
        other = root / f"{second}.tar"
        pack(_stripped(signed, tmp_path / "stripped"), other)
    code, report = _run(["verify-archive", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 1
    (entry,) = report["bundles"]
    assert entry["sources"] == [str(root / first)]
    (refusal,) = report["refused"]
    assert refusal["source"] == str(other)
    assert f"but not the signature of {root / first} that the command's" in refusal["reason"]
    assert (entry["signature"], entry["failed_check"]) == ("verified", None)


@pytest.mark.parametrize("broken_signed", [True, False])
def test_a_complete_source_that_takes_a_broken_ones_place_is_held_to_the_signer(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    broken_signed: bool,
) -> None:
    """Held: the first source of a bundle lacks a blob, a further one holds every byte and
    takes its place (``ArchiveWriter.add`` returns True, the caller verifies it): that one is
    verified under the policy, so a complete unsigned source never passes on a broken signed
    one's signature, and a complete signed one passes."""
    root = tmp_path / "archive"
    root.mkdir()
    signed = _signed(tmp_path / "keep", instance, trust, run_id="run-1")
    broken = root / "a"
    complete = root / "b"
    if broken_signed:
        shutil.copytree(signed, broken)
        _stripped(signed, complete)
    else:
        _stripped(signed, broken)
        shutil.copytree(signed, complete)
    blob = next(p for p in (broken / "blobs" / "sha256").iterdir())
    blob.unlink()
    code, report = _run(["verify-archive", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 1
    (entry,) = report["bundles"]
    assert entry["sources"] == [str(complete)]
    assert [r["source"] for r in report["refused"]] == [str(broken)]
    assert entry["integrity"] == "ok"
    if broken_signed:
        assert entry["signature"] == "failed"
    else:
        assert (entry["signature"], entry["failed_check"]) == ("verified", None)


def test_verify_archive_fails_a_signature_lifted_from_another_bundle_of_the_identity(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: the identity's real signature over another bundle, put in an unsigned bundle's
    ``signatures/``, fails it (its subject is the other bundle) in verify-archive and sets it
    apart in rank, on its first reason."""
    root = tmp_path / "archive"
    donor = _signed(tmp_path / "donor", instance, trust, run_id="donor")
    target = root / "target"
    write_small_bundle(target, durable=False, run_id="target")
    (target / "signatures").mkdir()
    shutil.copy(donor / MANIFEST_SIGNATURE, target / MANIFEST_SIGNATURE)
    code, report = _run(["verify-archive", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 1
    (entry,) = report["bundles"]
    assert entry["signature"] == "failed" and "subject" in entry["failed_check"]
    code, ranking = _run(["rank", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 0
    (row,) = _rows(ranking)
    assert row["reasons"][0].startswith("signature failed: ")


@pytest.mark.parametrize("garbage", [b"[" * 200_000, b"\xff\xfe", b"{}", b"null"])
def test_a_signature_file_of_garbage_fails_its_check_cleanly_in_both_commands(
    tmp_path: Path,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    garbage: bytes,
) -> None:
    """Held: a signature file that is not a Sigstore bundle (deeply nested JSON, not UTF-8,
    empty object, null) is a failed signature (exit 1 in verify-archive, apart in rank), never
    a traceback."""
    root = tmp_path / "archive"
    bundle = root / "b"
    write_small_bundle(bundle, durable=False)
    (bundle / "signatures").mkdir()
    (bundle / MANIFEST_SIGNATURE).write_bytes(garbage)
    code, report = _run(["verify-archive", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 1
    assert report["bundles"][0]["failed_check"].startswith("signature failed: ")
    code, ranking = _run(["rank", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 0
    assert _rows(ranking)[0]["reasons"][0].startswith("signature failed: ")


# --- 2. rank: which source of a bundle digest speaks for its signature ----------------------------


def _first_reason_of(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    *,
    signed_name: str,
    stripped_name: str,
) -> tuple[str, str, int]:
    root = tmp_path / f"archive-{signed_name}"
    signed = _signed(root / signed_name, instance, trust, run_id="run-1")
    _stripped(signed, root / stripped_name)
    code, ranking = _run(["rank", str(root), "--json", *_policy(trust)], capsysbinary)
    (row,) = _rows(ranking)
    return row["reasons"][0], row["source"], code


def test_rank_judges_a_bundle_alike_whichever_of_its_sources_sorts_first(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """The same two sources of one bundle digest (the publisher's signed directory, and its
    bytes without the signature): the run's first reason must not depend on their names."""
    signed_first = _first_reason_of(
        tmp_path, instance, trust, capsysbinary, signed_name="a", stripped_name="b"
    )[0]
    stripped_first = _first_reason_of(
        tmp_path, instance, trust, capsysbinary, signed_name="b", stripped_name="a"
    )[0]
    assert signed_first.startswith("signature failed") == stripped_first.startswith(
        "signature failed"
    )


def test_rank_names_no_unsigned_source_of_a_run_held_to_the_signer(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    reason, sources, code = _first_reason_of(
        tmp_path, instance, trust, capsysbinary, signed_name="a", stripped_name="b"
    )
    assert not reason.startswith("signature failed")  # the signed source speaks for the run
    assert not sources.endswith("/b") or code != 0


def test_rank_keeps_the_signed_run_over_a_copy_signed_by_another(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: a copy of a signed run (the same evidence, another run id, made earlier) signed by
    another identity of the same instance never displaces it: the copy is apart on
    'signature failed', the run is not named a copy."""
    root = tmp_path / "archive"
    _signed(root / "run", instance, trust, run_id="run-1", created_at="2026-11-02T00:00:00Z")
    _signed(
        root / "0-copy", instance, trust, MALLORY, run_id="run-0", created_at="2026-11-01T00:00:00Z"
    )
    code, ranking = _run(["rank", str(root), "--json", *_policy(trust)], capsysbinary)
    assert code == 0
    first = {row["run_id"]: row["reasons"][0] for row in _rows(ranking)}
    assert first["run-0"].startswith("signature failed: ")
    assert not first["run-1"].startswith(("signature failed", "a copy of"))


# --- 3. the Dask engine and URL sources ---------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]) -> list[Any]:
    """Signed directories and tars, each beside another source of its bytes with other
    signature files (none, another identity's, a lifted one), in both orders."""
    root = tmp_path / "mixed"
    keep = tmp_path / "keep"
    one = _signed(keep / "one", instance, trust, run_id="one")
    two = _signed(keep / "two", instance, trust, run_id="two")
    three = _signed(keep / "three", instance, trust, MALLORY, run_id="three")
    root.mkdir()
    pack(one, root / "a-one.tar")
    _stripped(one, root / "b-one-stripped")
    _stripped(two, root / "a-two-stripped")
    pack(two, root / "b-two.tar")
    shutil.copytree(three, root / "a-three-mallory")
    _resigned(three, root / "b-three-who", instance, trust, WHO)
    lifted = _stripped(three, root / "c-three-lifted")
    (lifted / "signatures").mkdir()
    shutil.copy(one / MANIFEST_SIGNATURE, lifted / MANIFEST_SIGNATURE)
    return sorted(root.iterdir())


def test_dask_verifies_an_archive_of_mixed_signatures_as_one_process_does(
    mixed: list[Any],
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    """Held: verify-archive on Dask gives the same report bytes as in one process for tars and
    directories of one digest with other signature files; every bundle a source of which the
    identity signed passes on that source (before 2026-12-07: only those whose first source it
    signed), each other source refused."""
    local, dasked = reports_on_both_engines(mixed, _identity_policy(trust), dask_client)
    assert local == dasked
    report = json.loads(local)
    passed = {e["run_id"]: e["sources"] for e in report["bundles"] if e["failed_check"] is None}
    assert {run: [Path(s).name for s in sources] for run, sources in passed.items()} == {
        "one": ["a-one.tar"],
        "two": ["b-two.tar"],
        "three": ["b-three-who"],
    }
    refused = sorted(Path(r["source"]).name for r in report["refused"])
    assert refused == ["a-three-mallory", "a-two-stripped", "b-one-stripped", "c-three-lifted"]


def test_dask_ranks_an_archive_of_mixed_signatures_as_one_process_does(
    mixed: list[Any],
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    """Held: rank's judged archive on Dask is the one of one process, under a policy."""
    from verify.distributed import judge_on_dask  # noqa: PLC0415 - imports Dask

    job = Job(None, policy=_identity_policy(trust))
    with judge_archive(mixed, Here(mixed, job)) as judged:
        here = judged.whole()
    with judge_on_dask(mixed, job, client=dask_client) as there:
        assert there.whole() == here


def test_a_url_source_is_held_to_the_signer_as_a_file_is(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Held: a signed tar and a stripped tar served by HTTP (read by ranges): the signed one
    passes, the stripped one fails its check, in verify-archive; in rank it is apart."""
    served = tmp_path / "served"
    served.mkdir()
    signed = _signed(tmp_path / "signed", instance, trust, run_id="signed")
    pack(signed, served / "signed.tar")
    other = write_small_bundle(tmp_path / "unsigned", durable=False, run_id="unsigned")
    assert other.startswith("sha256:")
    pack(tmp_path / "unsigned", served / "unsigned.tar")
    with serve_http(served) as server:
        urls = [url_of(server, served / "signed.tar"), url_of(server, served / "unsigned.tar")]
        code, report = _run(["verify-archive", *urls, "--json", *_policy(trust)], capsysbinary)
        assert code == 1
        checks = {e["run_id"]: e["signature"] for e in report["bundles"]}
        assert checks == {"signed": "verified", "unsigned": "failed"}
        code, ranking = _run(["rank", *urls, "--json", *_policy(trust)], capsysbinary)
    assert code == 0
    first = {row["run_id"]: row["reasons"][0] for row in _rows(ranking)}
    assert first["unsigned"].startswith("signature failed: ")
    assert not first["signed"].startswith("signature failed")


# --- 4. streamed chunks: the replay reads what the harness read ---------------------------------

_EVENTS = (
    b'data: {"model":"m","choices":[{"delta":{"reasoning_content":"secret plan"}}]}\n\n'
    b'data: {"model":"m","choices":[{"delta":{"content":"caf\xc3\xa9 \xff ok"}}]}\n\n'
    b"data: [DONE]\n\n"
)
_STREAM = codecs.BOM_UTF8 + _EVENTS
"""A stream that begins with a byte order mark (no data: an SSE reader drops it), its first event
a reasoning delta, the second with a character of two bytes and a byte that is not UTF-8."""


def _exchange(chunks: Any) -> TransportExchange:
    listed = [c.model_dump(mode="json") if isinstance(c, Chunk) else c for c in chunks]
    return TransportExchange.model_validate({
        "schema_version": 1, "id": 0, "started": 0.0, "method": "POST", "status": 200,
        "path": "/v1/chat/completions", "chunks": listed,
    })  # fmt: skip


def _read(pieces: list[bytes]) -> tuple[str, str]:
    reply = read_exchange(_exchange(stream_chunks([(0.1 * i, p) for i, p in enumerate(pieces)])))
    return reply.content, reply.reasoning


def _harness_read(stream: bytes) -> tuple[str, str]:
    """What a reader of the stream as the SSE specification says gets (UTF-8, a leading BOM
    dropped, bytes that are not UTF-8 replaced), as (content, reasoning)."""
    text = stream.decode("utf-8-sig", "replace")
    content, reasoning = [], []
    for block in text.split("\n\n"):
        data = block.removeprefix("data: ")
        if not data or data == "[DONE]":
            continue
        delta = json.loads(data)["choices"][0]["delta"]
        content.append(delta.get("content", ""))
        reasoning.append(delta.get("reasoning_content", ""))
    return "".join(content), "".join(reasoning)


@pytest.mark.parametrize("cut", [3, 4, 20, 64, 95, len(_STREAM) - 3])
def test_the_replay_of_a_stream_does_not_depend_on_where_its_bytes_were_cut(cut: int) -> None:
    """Held (for cuts past the byte order mark): the verifier reads a stream cut anywhere in
    two pieces, mid-character, mid-line, as it reads it whole, and as the harness reads it."""
    assert _read([_STREAM[:cut], _STREAM[cut:]]) == _read([_STREAM]) == _harness_read(_STREAM)


@pytest.mark.parametrize("cut", [1, 2])
def test_a_byte_order_mark_cut_across_pieces_is_no_data_as_a_whole_one_is(cut: int) -> None:
    assert _read([_STREAM[:cut], _STREAM[cut:]]) == _harness_read(_STREAM)


class _SplitBom(_Pieces):
    """An endpoint that streams a BOM's first two bytes in one write, the rest in the next."""

    pieces = (_STREAM[:2], _STREAM[2:])


def test_the_observer_records_a_split_bom_so_the_replay_reads_what_the_harness_read() -> None:
    got, exchange = _streamed(_SplitBom)
    assert got == _STREAM
    assert b"".join(c.received() for c in exchange.chunks) == got  # the bytes are kept
    reply = read_exchange(exchange)
    assert (reply.content, reply.reasoning) == _harness_read(got)


# --- 5. streamed chunks: one record for one stream, a clean refusal for any other --------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize(
    "chunks",
    [
        # \xff's base64 with its unused bits set: decodes to the same byte
        [{"t": 0.1, "data": "\ufffd", "raw": "/x=="}],
        [{"t": 0.1, "data": "\ufffd", "raw": "/8=="}],
        # the UTF-8 of U+FFFD is text: no raw
        [{"t": 0.1, "data": "\ufffd", "raw": _b64("\ufffd".encode())}],
        # \xc3 then \xa9, recorded as if each read alone
        [{"t": 0.1, "data": "\ufffd", "raw": "ww=="}, {"t": 0.2, "data": "\ufffd", "raw": "qQ=="}],
        # \xc3 then \xa9, the character given to the first piece
        [{"t": 0.1, "data": "\u00e9", "raw": "ww=="}, {"t": 0.2, "data": "", "raw": "qQ=="}],
        # the second chunk's bytes as text, its character's first byte before it
        [{"t": 0.1, "data": "", "raw": "ww=="}, {"t": 0.2, "data": "\u00a9"}],
        # an empty chunk beside one with raw
        [{"t": 0.1, "data": ""}, {"t": 0.2, "data": "\ufffd", "raw": "/w=="}],
        # a half character at the end read as if more were to come
        [{"t": 0.1, "data": "", "raw": "ww=="}],
        # an overlong encoding of '/' (0xc0 0xaf) read as the character
        [{"t": 0.1, "data": "/", "raw": _b64(b"\xc0\xaf")}],
        # a surrogate's three bytes (CESU) read as one replacement
        [{"t": 0.1, "data": "\ufffd", "raw": _b64(b"\xed\xa0\x80")}],
    ],
)
def test_a_stream_has_one_record_and_every_other_is_refused(chunks: list[dict[str, Any]]) -> None:
    """Held: the model refuses a chunk list that is not ``stream_chunks`` of its bytes (a
    second base64 of one byte, a raw that restates UTF-8 text, a character given to the wrong
    piece, a text not a reader's), with the model's message, through the bundle's parser too."""
    with pytest.raises(ValidationError, match="reading of their bytes"):
        _exchange(chunks)
    line = canonical_bytes({
        "schema_version": 1, "id": 0, "started": 0.0, "method": "POST",
        "path": "/v1/chat/completions", "chunks": chunks,
    })  # fmt: skip
    with pytest.raises(DocumentError):
        parse_document(KINDS["transport-exchange"], line, "transport")


def test_every_record_the_model_accepts_with_raw_is_the_reading_of_its_bytes() -> None:
    """Held: for every way of cutting a stream of awkward bytes into pieces of up to three
    bytes, and every chunk given or not given a raw, a record the model accepts (with a raw) is
    exactly ``stream_chunks`` of the bytes it says arrived (a chunk left without its raw says
    other bytes arrived: its text's UTF-8)."""
    data = b"\xef\xbb\xbfa\xc3\xa9\xff\xe2\x82\xac\xf0\x9f"
    accepted = 0
    for size in (1, 2, 3):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        honest = stream_chunks([(0.1 * i, p) for i, p in enumerate(pieces)])
        for mask in range(1 << min(len(pieces), 10)):
            chunks = []
            for i, (chunk, piece) in enumerate(zip(honest, pieces, strict=True)):
                value: dict[str, Any] = {"t": chunk.t, "data": chunk.data}
                if mask >> i & 1:
                    value["raw"] = _b64(piece)
                chunks.append(value)
            try:
                record = _exchange(chunks)
            except ValidationError:
                continue
            accepted += 1
            if any(c.raw is not None for c in record.chunks):
                got = [(c.t, c.received()) for c in record.chunks]
                assert record.chunks == stream_chunks(got)
    assert accepted >= 3


@pytest.mark.parametrize(
    "chunks",
    [
        [{"t": 0.1, "data": "\ufffd", "raw": "/w=="}, {"t": 0.2, "data": "\ud800"}],
        [{"t": 0.1, "data": "\ud800", "raw": "/w=="}],
        [{"t": 0.1, "data": "x", "raw": "eA=="[:3]}],
        [{"t": 0.1, "data": "x", "raw": "\u0661\u0662=="}],
        [{"t": 0.1, "data": 1, "raw": "/w=="}],
        [{"t": 0.1, "data": "\ufffd", "raw": ["/w=="]}],
        [{"t": 0.1, "data": "\ufffd", "raw": "/w==", "bytes": 1}],
    ],
)
def test_odd_raw_chunks_are_refused_as_validation_errors(chunks: list[dict[str, Any]]) -> None:
    """Held: a lone surrogate beside a raw (``received`` raises UnicodeEncodeError inside the
    validator), base64 cut short, non-ASCII digits, wrong types, an extra member: each a
    ValidationError (a clean refusal), never another exception."""
    with pytest.raises(ValidationError):
        _exchange(chunks)


@pytest.mark.parametrize(
    "raw",
    ["/w==", "/x==", "/w==\n", "\n/w==", "/w", "/w=", "", None, 255, "/w==/w==", "////", "\u0660"],
)
@pytest.mark.parametrize("data", ["\ufffd", "\ufffd\ufffd\ufffd", "x"])
def test_the_model_accepts_no_raw_chunk_the_committed_schema_refuses(raw: Any, data: str) -> None:
    """Held: the fast path's rule (tests/verify/test_record_fast_paths.py) for chunks with a
    raw: what the model accepts the schema accepts, and validate_document refuses as the
    schema-then-model path did."""
    value = {
        "schema_version": 1, "id": 0, "started": 0.0, "method": "POST",
        "path": "/v1/chat/completions", "chunks": [{"t": 0.5, "data": data, "raw": raw}],
    }  # fmt: skip
    _check_model_first("transport-exchange", value)


def test_every_schema_that_holds_a_chunk_says_the_same_of_it() -> None:
    """Held: the three committed schemas that embed a chunk define it alike, as the model's."""
    defined = []
    for name in ("transport-exchange", "exchange-view", "gx10-evidence"):
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_bytes())
        defined.append(schema["$defs"]["Chunk"])
    assert defined[0] == defined[1] == defined[2]
    assert defined[0]["properties"]["raw"]["type"] == "string"
    assert defined[0]["required"] == ["t", "data"]


# --- 6. a bundle with raw chunks, end to end ---------------------------------------------------


def _bundle_with(path: Path, chunks: list[dict[str, Any]]) -> Path:
    record = {
        "schema_version": 1, "id": 0, "started": 0.0, "ended": 0.3, "method": "POST",
        "path": "/v1/chat/completions", "status": 200, "request_headers": {},
        "response_headers": {"content-type": "text/event-stream"}, "chunks": chunks,
    }  # fmt: skip
    line = canonical_bytes(record) + b"\n"
    write_small_bundle(path, {TRANSPORT: line}, media_type=TRANSPORT_TYPE, durable=False)
    return path


def test_show_exchange_prints_raw_chunks_and_counts_their_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Held: ``audit show --exchange`` of a stream with raw chunks prints each chunk's text and
    the bytes that arrived (its raw's), and the JSON view keeps the raw and validates."""
    pieces = [(0.1, _STREAM[:40]), (0.2, _STREAM[40:97]), (0.3, _STREAM[97:])]
    chunks = [c.model_dump(mode="json") for c in stream_chunks(pieces)]
    assert any("raw" in c for c in chunks)
    path = _bundle_with(tmp_path / "b", chunks)
    assert main(["show", str(path), "--exchange", "0"]) == 0
    out = capsys.readouterr().out
    assert f"{len(_STREAM)} bytes" in out
    assert main(["show", str(path), "--exchange", "0", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    schema = json.loads((SCHEMAS / "exchange-view.schema.json").read_bytes())
    jsonschema.Draft202012Validator(schema).validate(view)
    assert [c["bytes"] for c in view["chunks"]] == [len(p) for _, p in pieces]
    assert [c.get("raw") for c in view["exchange"]["chunks"]] == [c.get("raw") for c in chunks]


def test_a_record_whose_text_and_raw_disagree_is_refused_cleanly_by_verify_and_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Held: a transport line whose chunk text is not the reading of its raw makes ``audit
    verify`` find it (a defective record, exit 1, no traceback) and ``audit show --exchange``
    refuse it with one line (exit 1: the record fails integrity)."""
    chunks = [{"t": 0.1, "data": "fine", "raw": "/w=="}]
    path = _bundle_with(tmp_path / "b", chunks)
    code = main(["verify", str(path), "--json"])
    captured = capsys.readouterr()
    assert code in (1, 2), captured.err
    assert "Traceback" not in captured.err
    if code == 1:
        verdict = json.loads(captured.out)
        messages = [f["message"] for f in verdict["integrity"]["findings"]]
        assert any("reading of their bytes" in m for m in messages), messages
    assert main(["show", str(path), "--exchange", "0"]) in (1, 2)
    err = capsys.readouterr().err
    assert "reading of their bytes" in err and err.count("\n") == 1


def test_sse_events_over_raw_chunks_read_texts_not_bytes() -> None:
    """Held: the replay reads each chunk's text (U+FFFD where the bytes are not UTF-8), the
    text a UTF-8 reader of the whole stream gets, never the base64."""
    chunks = stream_chunks([(0.1, _EVENTS[:90]), (0.2, _EVENTS[90:])])
    events = [event for _, event in sse_events(chunks)]
    deltas = [e["choices"][0]["delta"] for e in events]
    assert deltas[1]["content"] == "caf\u00e9 \ufffd ok"
    assert _EVENTS.decode("utf-8", "replace") == "".join(c.data for c in chunks)
