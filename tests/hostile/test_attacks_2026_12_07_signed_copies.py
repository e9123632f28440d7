"""Attacks on the amendment of 2026-12-07 to ADR 0043, "the signed copy counts, whichever comes
first" (``ArchiveWriter.add``, ``_add_copy``, ``_signed_otherwise``, ``_displace``,
``unsigned_copy`` and ``Judged.unsigned`` in ``verify/archive.py``, commits 606204a and
e32b079; the Dask engine's ``_add_further`` and ``_verified`` in ``verify/_dask.py``; ``audit
rank``'s ``JudgedArchive._count`` in ``verify/judging.py``), as a publisher, anyone able to
drop a file into an archive, or the server of a mirror an archive lists.

Attacked: three sources of one bundle digest in each of their six orders, on both engines
(signed by the identity, signed by it twice, by another identity once or twice, unsigned, a
signature with a byte changed, one over 4 MiB); directories, tars (on Dask a tar is verified as
it is listed, and that is its check as a further source) and tars at a URL of 127.0.0.1;
copies that lack a blob and are signed otherwise; a mirror whose signature changes between its
byte check and its verification; a signature that is a FIFO, a symbolic link or a folder;
extra files in ``signatures/``; a first source named with a run of blanks, or whose path makes
a refusal longer than the schema's bound; the same archives without a policy; ``audit rank``
beside ``verify-archive``.

Holes found (strict xfails against e32b079, closed in the commit that added this file; each
test now asserts the fixed behaviour); none let a source the identity did not sign pass, or
sank a signed one; they were reports that named the wrong source or said what is not so, and
depended on the order of names:

1. Two copies whose signatures fail for different reasons, both walked before the identity's
   source (``a-mallory``, ``b-unsigned``, ``c-who``; or unsigned then a changed byte, or over
   4 MiB then another identity's): ``_signed_otherwise`` refuses the second with
   ``SIGNED_OTHERWISE`` naming the first ("the entry's signature status is that source's");
   then the identity's source takes the first one's place (``_add_copy`` -> ``_displace``),
   which refuses only the sources listed under the entry, so the second's reason still names
   the first, itself refused and no longer the entry's source. Walked in another order both
   are refused naming the identity's source (``audit rank`` names it in every order): the
   report is not the same bytes whichever copy sorts first, as the amendment says it is. (A
   mirror holding the identity's signature when checked and another when verified gives the
   same.)
2. A copy that lacks bytes is refused as holding them. ``a-broken-unsigned``, ``b-broken-who``
   (one blob changed in both, ``b`` keeping the identity's signature, which anyone copies from
   the honest bundle) and the honest ``c-who``: ``b`` takes ``a``'s place through
   ``_add_copy`` (equal defects, its signature verified), so ``a`` is refused "holds the bytes
   of bundle ... but not the signature of b-broken-who", naming a source refused in turn for
   lacking bytes when ``c-who`` takes its place; with ``c-who`` first ``a`` is refused for its
   defect. With three broken copies (another identity's, unsigned, the identity's) the two
   listed together under the first are displaced with the first one's failure
   (``unsigned_copy(digest, judged.source, kept.unsigned)`` in ``_add_copy``): the unsigned
   copy is said to fail on mallory's certificate. ``audit rank`` too refuses an unsigned copy
   lacking a blob as "holds the bytes of bundle" (``_count`` gives ``unsigned_copy`` to any
   source whose verdict differs), where ``verify-archive`` gives its defect.
3. The name in a refusal is folded: ``one_line`` in ``_signed_otherwise`` (new: before, the
   reason named ``kept.first`` as shown) and in ``unsigned_copy`` collapses each run of blanks,
   so the first source ``a  x`` (two spaces) is named ``a x``, another bundle's source in the
   test. Without a policy too: the command's behaviour without one changed.

How they were closed (``verify/archive.py``): a copy signed otherwise whose signature fails
for another reason than the entry's is left pending, and refused naming the bundle's first
source only when the report is written (``ArchiveWriter._settle``), or for its own failure
naming the source that takes the entry's place (``_displace``); sources that lack the bundle's
bytes are refused for their defect whatever they are signed with; reasons are cut to the
schema's bound without folding the names in them (``signed_otherwise``, ``unsigned_copy``);
``rank`` says what a copy lacks (``unsigned_copy``'s ``lacking``).

A decision found (was a strict xfail) and changed: copies were compared by their entries, so
two copies lacking the same blob, one signed by another identity and one unsigned, were both
sources of the (failed) entry (``failed_check`` names the integrity failure first, and the
entry holds no signature reason); they are now compared by entry and signature failure.

A cost found (was a strict DECISION xfail), changed the same day: on Dask a further directory
source signed otherwise was only byte-checked in stage 3, then verified one task at a time in
``_add_further`` (``client.submit(...).result()``), so an archive whose every bundle had a mirror
without its signature was verified at one task's pace on the driver's round trip. Its signature
files are now fingerprinted as it is listed, and such a source is verified in stage 3
(``verify/_dask.py`` ``_Verifying._verified``).

Held (the tests that pass): in every order and on both engines (the same bytes), with tars and
URLs, the bundle passes on the identity's sources alone (signed twice: both listed), every
other source refused, and the counts add up (every source once, listed or refused; passed and
failed the entries'); where at most one way of failing is present the report is the same bytes
in every order; copies lacking bytes never pass; a mirror that changes between check and
verification counts for what its verification read; a signature that is a FIFO, a link or a
folder is refused with no hang and no traceback; extra files in ``signatures/`` beside the
identity's signature neither sink the honest source nor are refused under a policy (without
one, refused as signed otherwise); refusal reasons stay within the schema's 4,096 characters
with a first source's path of 3,990 (without a policy such a reason exceeded it before the
change); without a policy every copy signed otherwise is refused naming the first source with
the reason of before.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import verify.archive
from audit._archive import pack
from audit.cli import main
from bundle_schema.layout import MANIFEST_SIGNATURE
from tests.audit.test_signing import WHO, sign
from tests.factories import write_small_bundle
from tests.http_range import serve as serve_http
from tests.http_range import url_of
from tests.paths import SCHEMAS
from tests.private_sigstore import PrivateSigstore
from tests.verify.test_archive_signer import (
    MALLORY,
    _identity_policy,
    _policy,
    reports_on_both_engines,
)
from tests.verify.test_verify_archive import dask_client  # noqa: F401 - the fixture
from verify._signature import MAX_SIGNATURE_SIZE
from verify.archive import ArchiveWriter, verify_archive

pytestmark = pytest.mark.usefixtures("private_home")

SCHEMA = json.loads((SCHEMAS / "archive-report.schema.json").read_text())


# --- shared ------------------------------------------------------------------------------------


def _base(tmp_path: Path) -> Path:
    """An unsigned bundle: every copy below is made of its bytes (one bundle digest)."""
    base = tmp_path / "base"
    write_small_bundle(base, durable=False, run_id="run")
    return base


def _copy(
    base: Path, path: Path, instance: PrivateSigstore, trust: dict[str, str], kind: str
) -> Path:
    """A copy of ``base`` at ``path``: ``who`` (signed by the identity; ``who-again`` another
    signature of it), ``mallory`` (``mallory-again``), ``unsigned``, ``flipped`` (the
    identity's signature with a byte changed), ``oversize`` (a signature file over 4 MiB);
    ``broken-KIND``: KIND with a byte of a blob changed (the manifest's digest the same)."""
    shutil.copytree(base, path)
    how = kind.removeprefix("broken-").removesuffix("-again")
    if how in {"who", "mallory", "flipped"}:
        assert sign(path, instance, trust, who=MALLORY if how == "mallory" else WHO) == 0
    if how == "flipped":
        signature = path / MANIFEST_SIGNATURE
        data = bytearray(signature.read_bytes())
        data[len(data) // 2] ^= 0x01
        signature.write_bytes(bytes(data))
    elif how == "oversize":
        (path / "signatures").mkdir()
        (path / MANIFEST_SIGNATURE).write_bytes(b"{" * (MAX_SIGNATURE_SIZE + 1))
    if kind.startswith("broken-"):
        blob = min((path / "blobs" / "sha256").iterdir())
        data = bytearray(blob.read_bytes())
        data[0] ^= 0x01
        blob.write_bytes(bytes(data))
    return path


def _copies(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str], kinds: list[str]
) -> list[Path]:
    """One copy of each kind (``NAME=KIND``: named NAME, else named by its kind; a name ending
    in ``.tar``: that copy packed), in the order given (the order the tests walk them in)."""
    base = _base(tmp_path)
    root = tmp_path / "archive"
    root.mkdir()
    sources = []
    for item in kinds:
        name, _, kind = item.rpartition("=")
        name = name or kind
        kind = kind.removesuffix(".tar")
        if name.endswith(".tar"):
            made = _copy(base, tmp_path / "packed" / kind, instance, trust, kind)
            pack(made, root / name)
            sources.append(root / name)
        else:
            sources.append(_copy(base, root / name, instance, trust, kind))
    return sources


def _consistent(report: dict[str, Any]) -> None:
    """The report is valid (its schema: every reason at most 4,096 characters) and its counts
    add up: every source once, listed under its bundle or refused."""
    jsonschema.validate(report, SCHEMA)
    counts = report["counts"]
    listed = [source for entry in report["bundles"] for source in entry["sources"]]
    refused = [refusal["source"] for refusal in report["refused"]]
    assert len(set(listed + refused)) == len(listed + refused), report
    assert counts["sources"] == len(listed) + len(refused), report
    assert counts["refused"] == len(refused), report
    assert counts["bundles"] == len(report["bundles"]), report
    failed = sum(entry["failed_check"] is not None for entry in report["bundles"])
    assert (counts["failed"], counts["passed"]) == (failed, counts["bundles"] - failed), report


def _local(sources: list[Any], trust: dict[str, str] | None) -> bytes:
    """The archive report of ``sources``, walked in the order given, in this process
    (``trust`` None: without a policy)."""
    policy = None if trust is None else _identity_policy(trust)
    writer = ArchiveWriter(None, None if policy is None else policy.signer)
    verify_archive(sources, writer, policy=policy)
    out = io.BytesIO()
    writer.write_json(out)
    writer.close()
    return out.getvalue()


def _every_order(sources: list[Any], trust: dict[str, str], client: Any) -> list[bytes]:
    """The report of each order of ``sources``, made on both engines (the same bytes), each
    consistent."""
    reports = []
    for order in itertools.permutations(sources):
        local, dasked = reports_on_both_engines(list(order), _identity_policy(trust), client)
        assert local == dasked, order
        _consistent(json.loads(local))
        reports.append(local)
    return reports


def _run(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, Any, str]:
    capsysbinary.readouterr()  # what signing printed
    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, json.loads(captured.out) if captured.out else None, captured.err.decode()


def _unsigned_copy_of(report: dict[str, Any], kept: str) -> str:
    digest = report["bundles"][0]["bundle_digest"]
    return (
        f"holds the bytes of bundle {digest} but not the signature of {kept} that the "
        "command's --identity verified: signature failed: "
    )


# --- 1. every order of copies: the identity's source counts --------------------------------------


def _passes_on_the_identitys(report: dict[str, Any], sources: list[Any], signed: list[str]) -> None:
    """The bundle passed on the sources in ``signed`` alone; every other source is refused as
    not holding the signature of one of them."""
    (entry,) = report["bundles"]
    assert (entry["signature"], entry["failed_check"]) == ("verified", None)
    assert entry["sources"] == sorted(signed)
    refused = {r["source"]: r["reason"] for r in report["refused"]}
    assert sorted(refused) == sorted(str(s) for s in sources if str(s) not in signed)
    assert all(
        any(reason.startswith(_unsigned_copy_of(report, kept)) for kept in signed)
        for reason in refused.values()
    ), refused


HELD = {
    "who-twice-unsigned": ["who", "who-again", "unsigned"],
    "mallory-twice-who": ["mallory", "mallory-again", "who"],
    "unsigned-twice-who": ["unsigned", "unsigned-again", "who"],
    "tars-who-twice-unsigned": ["who.tar", "unsigned", "who-again.tar"],
    "tars-mallory-twice-who": ["mallory.tar", "who", "mallory-again.tar"],
}


@pytest.mark.parametrize("kinds", HELD.values(), ids=HELD.keys())
def test_every_order_of_copies_gives_one_report_passing_on_the_identitys_sources(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    kinds: list[str],
) -> None:
    """Held: three sources of one bundle (at most one way of failing the signature), in each
    of their six orders, on both engines (a tar verified as it is listed on Dask, its result
    the check of a further source): the entry is verified, its sources are the ones the
    identity signed, each other source is refused as not holding the signature of one of
    them, and the report is the same bytes in every order (signed twice: the refusals name the
    first of the two walked, which in the command is the first by name)."""
    sources = _copies(tmp_path, instance, trust, kinds)
    signed = [str(s) for s, kind in zip(sources, kinds, strict=True) if kind.startswith("who")]
    reports = _every_order(sources, trust, dask_client)
    assert len(set(reports)) == len(signed)
    for report in reports:
        _passes_on_the_identitys(json.loads(report), sources, signed)


# --- 2. hole 1: copies that fail otherwise, and a copy refused naming a refused source ----------


OTHERWISE = {
    "mallory-unsigned-who": ["mallory", "unsigned", "who"],
    "unsigned-flipped-who": ["unsigned", "flipped", "who"],
    "oversize-mallory-who": ["oversize", "mallory", "who"],
    "tars-mallory-unsigned-who": ["mallory.tar", "unsigned", "who.tar"],
}


@pytest.mark.parametrize("kinds", OTHERWISE.values(), ids=OTHERWISE.keys())
def test_copies_failing_otherwise_never_sink_the_identitys_in_any_order(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    kinds: list[str],
) -> None:
    """Held (the part of hole 1 that is safe): two copies whose signatures fail for different
    reasons (another identity's, none, a changed byte, over 4 MiB; directories and tars) and
    the identity's, in every order on both engines (the same bytes): the entry passes on the
    identity's source alone, the two others refused, the counts the same in every order."""
    sources = _copies(tmp_path, instance, trust, kinds)
    reports = [json.loads(report) for report in _every_order(sources, trust, dask_client)]
    for report in reports:
        (entry,) = report["bundles"]
        assert (entry["signature"], entry["sources"]) == ("verified", [str(sources[2])])
        assert sorted(r["source"] for r in report["refused"]) == sorted(map(str, sources[:2]))
        assert report["counts"] == reports[0]["counts"]


def test_urls_and_a_local_copy_in_every_order_pass_on_the_identitys_tar(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    """Held: a signed tar and a tar signed by another identity at 127.0.0.1, with an unsigned
    directory of the same bytes, in every order on both engines (the same bytes): the bundle
    passes on the URL the identity signed, the two others refused (naming it, or with hole 1,
    naming the other refused one)."""
    unsigned, signed, mallory = _copies(
        tmp_path, instance, trust, ["unsigned", "who.tar", "mallory.tar"]
    )
    with serve_http(signed.parent) as server:
        url, other = url_of(server, signed), url_of(server, mallory)
        reports = _every_order([unsigned, url, other], trust, dask_client)
    for report in (json.loads(r) for r in reports):
        (entry,) = report["bundles"]
        assert (entry["signature"], entry["sources"]) == ("verified", [url])
        assert sorted(r["source"] for r in report["refused"]) == sorted([str(unsigned), other])
        assert all(r["reason"].startswith("holds the bytes of bundle ") for r in report["refused"])


@pytest.mark.parametrize("kinds", OTHERWISE.values(), ids=OTHERWISE.keys())
def test_the_report_of_copies_failing_otherwise_is_the_same_in_every_order(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str], kinds: list[str]
) -> None:
    sources = _copies(tmp_path, instance, trust, kinds)
    reports = {_local(list(order), trust) for order in itertools.permutations(sources)}
    assert len(reports) == 1


def test_every_refused_copy_names_the_source_the_identity_signed(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """As an attacker would: drop a copy signed by another identity and an unsigned one into
    the archive, named to sort before the signed bundle. Both must be refused naming the
    source whose signature the identity verified, as ``audit rank`` names it."""
    sources = _copies(
        tmp_path, instance, trust, ["a-mallory=mallory", "b-unsigned=unsigned", "c-who=who"]
    )
    mallory, unsigned, signed = (str(source) for source in sources)
    root = str(sources[0].parent)
    code, _, err = _run(["rank", root, "--json", *_policy(trust)], capsysbinary)
    assert code == 1 and "Traceback" not in err
    assert f"refused {mallory}: holds the bytes of bundle" in err
    assert f"refused {unsigned}: holds the bytes of bundle" in err
    assert err.count(f"but not the signature of {signed} that the command's") == 2, err
    code, report, _ = _run(["verify-archive", root, "--json", *_policy(trust)], capsysbinary)
    assert code == 1
    _consistent(report)
    assert report["bundles"][0]["sources"] == [signed]
    said = _unsigned_copy_of(report, signed)
    refused = {r["source"]: r["reason"] for r in report["refused"]}
    assert refused[mallory].startswith(said)
    assert refused[unsigned].startswith(said), refused[unsigned]


def test_a_mirror_signed_otherwise_when_checked_counts_for_what_was_verified(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Held: a mirror that holds another identity's signature when its bytes are checked and
    the identity's when it is verified (it changes in between) is judged by what its
    verification read: it takes the unsigned first source's place, and the identity's other
    source, the same signature file, is listed beside it."""
    unsigned, mirror, signed = _copies(tmp_path, instance, trust, ["unsigned", "mallory", "who"])
    check = verify.archive.check

    def changing(source: Any, *args: Any, **kwargs: Any) -> Any:
        checked = check(source, *args, **kwargs)
        if source == mirror:
            shutil.copyfile(signed / MANIFEST_SIGNATURE, mirror / MANIFEST_SIGNATURE)
        return checked

    monkeypatch.setattr(verify.archive, "check", changing)
    report = json.loads(_local([unsigned, mirror, signed], trust))
    _consistent(report)
    (entry,) = report["bundles"]
    assert (entry["signature"], entry["sources"]) == ("verified", [str(mirror), str(signed)])
    (refusal,) = report["refused"]
    assert refusal["source"] == str(unsigned)
    assert refusal["reason"].startswith(_unsigned_copy_of(report, str(mirror)))


# --- 3. hole 2: copies that lack bytes and are signed otherwise ---------------------------------


BROKEN = {
    "broken-unsigned-broken-who-who": ["broken-unsigned", "broken-who", "who"],
    "three-broken": [
        "broken-mallory",
        "broken-unsigned",
        "broken-who",
    ],
}


@pytest.mark.parametrize("kinds", BROKEN.values(), ids=BROKEN.keys())
def test_copies_that_lack_bytes_never_pass_and_the_engines_agree(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    kinds: list[str],
) -> None:
    """Held (the part of hole 2 that is safe): in every order, on both engines (the same
    bytes), the entry is the intact source's when there is one, verified, and failed
    otherwise; no source lacking bytes is listed under an entry that passed."""
    sources = _copies(tmp_path, instance, trust, kinds)
    for report in (json.loads(r) for r in _every_order(sources, trust, dask_client)):
        (entry,) = report["bundles"]
        if "who" in kinds:
            assert (entry["failed_check"], entry["sources"]) == (None, [str(sources[-1])])
        else:
            assert entry["integrity"] == "failed" and entry["failed_check"] is not None


def test_a_copy_that_lacks_bytes_is_refused_for_them_in_every_order(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]
) -> None:
    sources = _copies(tmp_path, instance, trust, ["broken-unsigned", "broken-who", "who"])
    for order in itertools.permutations(sources):
        report = json.loads(_local(list(order), trust))
        refused = {r["source"]: r["reason"] for r in report["refused"]}
        assert refused[str(sources[0])].startswith("does not hold the bytes of bundle"), order


def test_a_displaced_copy_is_refused_for_its_own_signature(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]
) -> None:
    sources = _copies(
        tmp_path, instance, trust, ["broken-mallory", "broken-unsigned", "broken-who"]
    )
    report = json.loads(_local(sources, trust))
    refused = {r["source"]: r["reason"] for r in report["refused"]}
    reason = refused[str(sources[1])]  # the unsigned copy: for what it lacks, not mallory's
    assert reason.startswith("does not hold the bytes of bundle") and MALLORY not in reason


def test_rank_refuses_a_copy_that_lacks_bytes_for_them(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    broken, signed = _copies(tmp_path, instance, trust, ["a-broken=broken-unsigned", "b-who=who"])
    code, report, _ = _run(
        ["verify-archive", str(signed.parent), "--json", *_policy(trust)], capsysbinary
    )
    assert code == 1
    (refusal,) = report["refused"]
    assert refusal["source"] == str(broken)
    assert refusal["reason"].startswith("does not hold the bytes of bundle")
    code, _, err = _run(["rank", str(signed.parent), "--json", *_policy(trust)], capsysbinary)
    assert code == 1 and "Traceback" not in err
    assert f"refused {broken}: does not hold the bytes of bundle" in err, err


def test_copies_that_lack_bytes_and_fail_their_signatures_otherwise_are_not_one_source(
    tmp_path: Path, instance: PrivateSigstore, trust: dict[str, str]
) -> None:
    sources = _copies(tmp_path, instance, trust, ["broken-mallory", "broken-unsigned"])
    report = json.loads(_local(sources, trust))
    _consistent(report)
    assert [r["source"] for r in report["refused"]] == [str(sources[1])]


def test_dask_verifies_copies_signed_otherwise_in_the_parallel_stage(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verify._dask import verify_on_dask  # noqa: PLC0415 - imports Dask

    root = tmp_path / "archive"
    sources: list[Path] = []
    for run in ("r0", "r1", "r2"):
        write_small_bundle(root / f"a-{run}", durable=False, run_id=run)
        shutil.copytree(root / f"a-{run}", root / f"b-{run}")  # a mirror without the signature
        assert sign(root / f"a-{run}", instance, trust) == 0
        sources += [root / f"a-{run}", root / f"b-{run}"]
    submitted: list[Any] = []
    submit = dask_client.submit

    def counted(*args: Any, **kwargs: Any) -> Any:
        submitted.append(args[0])
        return submit(*args, **kwargs)

    monkeypatch.setattr(dask_client, "submit", counted)
    policy = _identity_policy(trust)
    writer = ArchiveWriter(None, policy.signer)
    verify_on_dask(sources, writer, policy=policy, client=dask_client)
    writer.close()
    assert submitted == []


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_copy_whose_signature_is_no_file_never_sinks_the_signed_source(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    kind: str,
) -> None:
    """Held: a copy walked first whose ``signatures/manifest.sigstore.json`` is a FIFO (a read
    would block), a symbolic link to the identity's very signature, or a folder: exit 1, no
    traceback, nothing on stderr; the signed source passes and the copy is refused."""
    copy, signed = _copies(tmp_path, instance, trust, ["a-copy=unsigned", "b-who=who"])
    (copy / "signatures").mkdir()
    at = copy / MANIFEST_SIGNATURE
    if kind == "fifo":
        os.mkfifo(at)
    elif kind == "symlink":
        at.symlink_to(signed / MANIFEST_SIGNATURE)
    else:
        at.mkdir()
    argv = ["verify-archive", str(copy.parent), "--json", *_policy(trust)]
    code, report, err = _run(argv, capsysbinary)
    assert code == 1 and not err
    _consistent(report)
    (entry,) = report["bundles"]
    assert (entry["signature"], entry["sources"]) == ("verified", [str(signed)])
    assert [r["source"] for r in report["refused"]] == [str(copy)]


# --- 4. names, lengths, and no policy -----------------------------------------------------------


def test_extra_signature_files_beside_the_identitys_neither_sink_nor_are_refused(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    dask_client: Any,  # noqa: F811 - the fixture
) -> None:
    """Held: a copy that holds the identity's very signature and a file more in
    ``signatures/`` (outside the manifest's digest, never verified) verifies as the signed
    source does: under the policy both are the entry's sources, in either order, on both
    engines; without one, the copy walked second is refused as signed otherwise."""
    (signed,) = _copies(tmp_path, instance, trust, ["who"])
    extra = tmp_path / "archive" / "extra"
    shutil.copytree(signed, extra)
    (extra / "signatures" / "notes.txt").write_bytes(b"not a signature")
    reports = _every_order([signed, extra], trust, dask_client)
    assert len(set(reports)) == 1
    report = json.loads(reports[0])
    assert report["refused"] == []
    assert report["bundles"][0]["sources"] == sorted([str(signed), str(extra)])
    plain = json.loads(_local([signed, extra], None))
    (refusal,) = plain["refused"]
    assert refusal["source"] == str(extra)
    assert f"but other signature files than {signed} (" in refusal["reason"]


@pytest.mark.parametrize("policy", [False, True], ids=["no policy", "policy"])
def test_without_a_policy_a_copy_signed_otherwise_is_refused_naming_the_first_source(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    policy: bool,
) -> None:
    """Held: through the command (names sorted), without a policy every copy with other
    signature files (another identity's, none, a changed byte) is refused naming the first
    source, signed or not, as before the change; under one, naming the identity's source."""
    sources = _copies(
        tmp_path,
        instance,
        trust,
        ["a-mallory=mallory", "b-who=who", "c-unsigned=unsigned", "d-flipped=flipped"],
    )
    argv = ["verify-archive", str(sources[0].parent), "--json"]
    code, report, err = _run(argv + (_policy(trust) if policy else []), capsysbinary)
    assert code == 1 and not err
    _consistent(report)
    first = sources[1] if policy else sources[0]
    assert report["bundles"][0]["sources"] == [str(first)]
    for refusal in report["refused"]:
        if policy:
            assert refusal["reason"].startswith(_unsigned_copy_of(report, str(first)))
        else:
            digest = report["bundles"][0]["bundle_digest"]
            assert refusal["reason"] == verify.archive.SIGNED_OTHERWISE.format(
                digest=digest, first=first
            )


@pytest.mark.parametrize("policy", [False, True], ids=["no policy", "policy"])
def test_a_refused_copy_names_the_first_source_as_it_is_shown(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    policy: bool,
) -> None:
    signed, _ = _copies(tmp_path, instance, trust, ["a  x=who", "b copy=unsigned"])
    root = signed.parent
    write_small_bundle(root / "a x", durable=False, run_id="another")
    argv = ["verify-archive", str(root), "--json"]
    code, report, err = _run(argv + (_policy(trust) if policy else []), capsysbinary)
    assert code == 1 and not err
    _consistent(report)
    by_run = {entry["run_id"]: entry["sources"] for entry in report["bundles"]}
    assert by_run == {"run": [str(signed)], "another": [str(root / "a x")]}
    (refusal,) = report["refused"]
    assert refusal["source"] == str(root / "b copy")
    named = "signature of" if policy else "signature files than"
    assert f"{named} {signed} " in refusal["reason"], refusal["reason"]


@pytest.mark.parametrize("policy", [False, True], ids=["no policy", "policy"])
def test_a_refusal_naming_a_long_first_source_stays_within_the_schema(
    tmp_path: Path,
    instance: PrivateSigstore,
    trust: dict[str, str],
    capsysbinary: pytest.CaptureFixture[bytes],
    policy: bool,
) -> None:
    """Held: the first source's path is 3,990 characters (the kernel takes 4,096), so a reason
    naming it, with a signature failure after it, is longer than the schema's bound of 4,096:
    it is cut to the bound, the report valid, exit 1 with no traceback, with and without a
    policy."""
    deep = tmp_path
    while len(str(deep)) < 3988 - 250:
        deep /= "d" * 200
    deep /= "e" * (3988 - len(str(deep)) - 1)
    base = _base(tmp_path)
    first = _copy(base, deep / "a", instance, trust, "who" if policy else "mallory")
    copy = _copy(base, deep / "b", instance, trust, "mallory" if policy else "who")
    assert len(str(first)) == 3990
    argv = ["verify-archive", str(deep), "--json"]
    code, report, err = _run(argv + (_policy(trust) if policy else []), capsysbinary)
    assert code == 1 and not err
    _consistent(report)
    (refusal,) = report["refused"]
    assert refusal["source"] == str(copy)
    assert len(refusal["reason"]) == 4096 and refusal["reason"].endswith("...")
    assert str(first)[:3000] in refusal["reason"]
