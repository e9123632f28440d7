"""Harness data directories (issue 17): a data directory a harness reads outside its checkout is
pinned by the digest of its listing; the runner lists it, keeps the listing and refuses a
directory that is not the pinned one; the verifier holds a completed component to it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.demo.pipeline import DEMO_DIGEST
from audit.environments import EnvironmentUnavailable, data_listing
from pins import DEMO, PinSetSource, load_builtin
from tests.data.hostile.kit import read_bundle, reseal
from tests.factories import smoke_run, sparkbench_pins
from verify import verify_with_evidence

LISTING = "upstreams/sparkbench/data/corpus.jsonl"
CHECK = (
    "import os, runpy, sys; "
    "assert os.path.isfile(os.path.join(sys.argv[1], 'prompts.txt')), sys.argv[1]; "
    "sys.argv = ['spark.run', *sys.argv[2:]]; runpy.run_module('spark.run', run_name='__main__')"
)
"""The reference Spark harness, run only once it has found its data where {data[corpus]} says."""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "prompts.txt").write_text("implement merge_intervals\n")
    (root / "sub" / "answers.txt").write_bytes(b"\x00\x01 binary is fine\n")
    return root


def _pins(digest: str) -> PinSetSource:
    command = load_builtin(DEMO).data["harnesses"]["sparkbench"]["command"]
    return sparkbench_pins(
        command=["{python}", "-c", CHECK, "{data[corpus]}", *command[3:]], data={"corpus": digest}
    )


def _run(tmp_path: Path, mirrors: dict[str, Path], pins: PinSetSource, **changes: Any) -> Path:
    return smoke_run(tmp_path / "bundle", mirrors, pins, **changes)


def test_a_listing_is_every_file_with_its_size_and_digest(corpus: Path, tmp_path: Path) -> None:
    listing, digest = data_listing(corpus)
    assert listing == (
        b'{"path":"prompts.txt","sha256":"'
        + hashlib.sha256(b"implement merge_intervals\n").hexdigest().encode()
        + b'","size":26}\n{"path":"sub/answers.txt","sha256":"'
        + hashlib.sha256(b"\x00\x01 binary is fine\n").hexdigest().encode()
        + b'","size":18}\n'
    )
    assert digest == "sha256:" + hashlib.sha256(listing).hexdigest()
    copy_of = tmp_path / "elsewhere"
    copy_of.mkdir()
    for name in ("prompts.txt", "sub/answers.txt"):
        (copy_of / name).parent.mkdir(exist_ok=True)
        (copy_of / name).write_bytes((corpus / name).read_bytes())
    assert data_listing(copy_of) == (listing, digest)  # the same files, wherever they are
    (corpus / "sub" / "link").symlink_to(corpus / "prompts.txt")
    with pytest.raises(EnvironmentUnavailable, match=r"sub/link: a symbolic link in a data"):
        data_listing(corpus)


def test_the_pinned_directory_is_given_listed_and_verified(
    corpus: Path, tmp_path: Path, mirrors: dict[str, Path]
) -> None:
    listing, digest = data_listing(corpus)
    pins = _pins(digest)
    out = _run(tmp_path, mirrors, pins, data={"corpus": corpus})
    verdict, evidence = verify_with_evidence(out, pins=pins)
    assert verdict.integrity.findings == () and verdict.claims.match
    assert evidence.results["coding"].status == "COMPLETED"  # the harness found its data
    _, files = read_bundle(out)
    assert files[LISTING] == (listing, "application/vnd.evidence-audit.data-listing+jsonl")
    assert LISTING not in verdict.unread  # the pin set pins it: the verifier reads it

    # a forger who edits the listing (another data set) is caught against the pin
    manifest, files = read_bundle(out)
    files[LISTING] = (listing.replace(b"prompts.txt", b"prompts.tx2"), files[LISTING][1])
    forged = tmp_path / "forged"
    reseal(forged, manifest, files, {})
    verdict, _ = verify_with_evidence(forged, pins=pins)
    found = [f for f in verdict.integrity.findings if f.entry == LISTING]
    assert [f.code for f in found] == ["record_disagrees"]
    assert "whose pinned data directory corpus lists as sha256:" in found[0].message
    assert found[0].expected == digest


@pytest.mark.parametrize("given", [True, False], ids=["another directory", "none given"])
def test_a_directory_that_is_not_the_pinned_one_fails_the_component(
    corpus: Path, tmp_path: Path, mirrors: dict[str, Path], given: bool
) -> None:
    _, digest = data_listing(corpus)
    pinned = "sha256:" + "0" * 64
    out = _run(tmp_path, mirrors, _pins(pinned), data={"corpus": corpus} if given else {})
    verdict, evidence = verify_with_evidence(out, pins=_pins(pinned))
    coding = evidence.results["coding"]
    assert coding.status == "FAILED"
    if given:
        assert coding.reason == (
            f"sparkbench: its data directory corpus ({corpus}) lists as {digest}, not the pinned "
            f"{pinned}"
        )
    else:
        assert coding.reason == (
            "sparkbench: its data directory 'corpus' was not given (audit run --data corpus=PATH)"
        )
    assert verdict.outcome == "INFRA_ERROR" and verdict.claims.match


def test_run_refuses_a_data_name_no_harness_reads(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--endpoint", "http://127.0.0.1:9", "--pins", DEMO, "--profile", "smoke",
                 "--out", str(tmp_path / "b"), "--model-digest", DEMO_DIGEST,
                 "--data", f"corpus={corpus}"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err == (
        "audit run: --data corpus: no harness of the pin set reads a data directory of that name\n"
    )
