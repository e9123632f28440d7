"""Archives: `audit rank` and `audit rejudge` count each bundle once, flag copies of another
bundle, and set a bundle they cannot read apart without aborting the others."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from audit import pack
from audit.cli import main
from bundle_schema import canonical_bytes, digest_of
from bundle_schema.layout import content_digest
from pins import parse_pin_set
from tests.conftest import DEPLOYMENT_PINS
from verify import open_source, parse_manifest
from verify.ranking import contents_key

FULL = "gx10-full-qualified"
DEPLOYMENT = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
SMOKE = "gx10-smoke"
FULL_RUN = "gx10-v5-full-20261102T100000Z-01"
SMOKE_RUN = "gx10-v5-smoke-20261106T100000Z-01"


def _digest(bundle: Path) -> str:
    return digest_of((bundle / "manifest.json").read_bytes())


def _reseal(bundle: Path, **changes: Any) -> Path:
    """Change manifest fields, recompute the seal, and write the manifest back canonically."""
    value = json.loads((bundle / "manifest.json").read_bytes())
    value |= changes
    value["content_digest"] = content_digest(value)
    (bundle / "manifest.json").write_bytes(canonical_bytes(value))
    return bundle


class Archive:
    """Bundles written under one directory for a case, by name."""

    def __init__(self, root: Path, examples: dict[str, Path]) -> None:
        self.root, self.examples = root, examples

    def copy(self, example: str, name: str) -> Path:
        return Path(shutil.copytree(self.examples[example], self.root / name))

    def tar(self, bundle: Path) -> Path:
        target = bundle.with_name(bundle.name + ".tar")
        pack(bundle, target)
        return target

    def rerun(self, example: str, name: str, run_id: str, created_at: str) -> Path:
        """The same evidence and model under another run id and creation time."""
        return _reseal(self.copy(example, name), run_id=run_id, created_at=created_at)

    def junk(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        return path


@dataclass(frozen=True)
class Expect:
    ranked: list[tuple[str, str]]
    """(run id, source names joined) of the ranked rows, in order."""
    apart: list[tuple[str, str]] = field(default_factory=list)
    """(run id, start of the first reason) of the rows apart, in order."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """(source name, start of the reason) of the refused bundles."""
    notes: int = 0


def _dir_and_tar(a: Archive) -> list[Path]:
    full = a.copy(FULL, "full")
    return [full, a.tar(full)]


def _same_path_twice(a: Archive) -> list[Path]:
    full = a.copy(FULL, "full")
    return [full, full]


def _rerun_later(a: Archive) -> list[Path]:
    return [a.copy(FULL, "full"), a.rerun(FULL, "rerun", "rerun-01", "2026-11-09T00:00:00Z")]


def _rerun_earlier(a: Archive) -> list[Path]:
    return [a.copy(FULL, "full"), a.rerun(FULL, "rerun", "rerun-01", "2026-11-02T11:44:00Z")]


def _corrupt(bundle: Path) -> Path:
    blob = sorted((bundle / "blobs" / "sha256").iterdir())[0]
    blob.write_bytes(blob.read_bytes() + b" ")
    return bundle


def _broken_rerun_earlier(a: Archive) -> list[Path]:
    rerun = a.rerun(FULL, "rerun", "rerun-01", "2026-11-02T11:44:00Z")
    return [a.copy(FULL, "full"), _corrupt(rerun)]


def _one_bundle_corrupt_at_one_source(a: Archive) -> list[Path]:
    return [_corrupt(a.copy(FULL, "a-corrupt")), a.copy(FULL, "b-intact")]


def _broken_among_good(a: Archive) -> list[Path]:
    not_canonical = a.copy(SMOKE, "not-canonical")
    manifest = not_canonical / "manifest.json"
    manifest.write_bytes(json.dumps(json.loads(manifest.read_bytes()), indent=1).encode())
    return [
        a.copy(FULL, "full"),
        a.junk("junk.tar", b"not a tar at all"),
        not_canonical,
        a.copy(SMOKE, "smoke"),
    ]


CASES: dict[str, tuple[Callable[[Archive], list[Path]], Expect]] = {
    "a directory and its tar are one bundle": (
        _dir_and_tar, Expect(ranked=[(FULL_RUN, "full, full.tar")], notes=1)
    ),
    "one path given twice is one bundle": (
        _same_path_twice, Expect(ranked=[(FULL_RUN, "full")])
    ),
    "a later rerun of the same evidence is a copy": (
        _rerun_later,
        Expect(ranked=[(FULL_RUN, "full")], apart=[("rerun-01", "a copy of {full}")]),
    ),
    "the earliest of the two stays": (
        _rerun_earlier,
        Expect(ranked=[("rerun-01", "rerun")], apart=[(FULL_RUN, "a copy of {rerun}")]),
    ),
    "an intact bundle stays before a broken earlier copy": (
        _broken_rerun_earlier,
        Expect(ranked=[(FULL_RUN, "full")], apart=[("rerun-01", "a copy of {full}")]),
    ),
    "a corrupted source of an intact bundle is a note": (
        _one_bundle_corrupt_at_one_source,
        Expect(ranked=[(FULL_RUN, "a-corrupt, b-intact")], notes=2),
    ),
    "a broken bundle among good ones": (
        _broken_among_good,
        Expect(
            ranked=[(FULL_RUN, "full")],
            apart=[(SMOKE_RUN, "executed weight 45 < 100")],
            refused=[
                ("junk.tar", "not a readable uncompressed tar"),
                ("not-canonical", "manifest.json: "),
            ],
        ),
    ),
}  # fmt: skip


def _names(sources: str, root: Path) -> str:
    return ", ".join(Path(s).relative_to(root).as_posix() for s in sources.split(", "))


@pytest.mark.parametrize("case", list(CASES))
def test_an_archive_counts_each_bundle_once(
    case: str,
    ranked_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build, expect = CASES[case]
    archive = Archive(tmp_path, ranked_examples)
    paths = [str(p) for p in build(archive)]
    digests = {p.name: _digest(p) for p in tmp_path.iterdir() if (p / "manifest.json").is_file()}
    pins = ["--pins", str(DEPLOYMENT_PINS)]  # the examples as recorded under it rank

    code = main(["rank", *paths, *pins, "--json"])
    captured = capsys.readouterr()
    assert code == (1 if expect.refused else 0), captured.err
    ranking = json.loads(captured.out)
    assert [(r["run_id"], _names(r["source"], tmp_path)) for r in ranking["ranked"]] == (
        expect.ranked
    )
    assert [r["position"] for r in ranking["ranked"]] == list(range(1, len(expect.ranked) + 1))
    apart = [(r["run_id"], r["reasons"][0]) for r in ranking["apart"]]
    assert len(apart) == len(expect.apart)
    for (run, reason), (want_run, want) in zip(apart, expect.apart, strict=True):
        assert run == want_run
        assert reason.startswith(want.format(**digests)), reason
    lines = captured.err.splitlines()
    assert len(lines) == len(expect.refused)
    for line, (name, reason) in zip(lines, expect.refused, strict=True):
        assert line.startswith(f"audit rank: refused {tmp_path / name}: "), line
        assert reason in line

    code = main(["rank", *paths, *pins, "--markdown"])
    text = capsys.readouterr().out
    assert code == (1 if expect.refused else 0)
    assert ("## Refused" in text) == bool(expect.refused)
    for name, _ in expect.refused:
        assert f"| {tmp_path / name} | " in text
    assert text.count("\n- ") == expect.notes
    if case == "a directory and its tar are one bundle":
        assert f"- {digests['full']} is one bundle, counted once: {paths[0]}, {paths[1]}" in text


def test_rejudge_counts_each_bundle_once_and_judges_past_a_broken_one(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = Archive(tmp_path, built_examples)
    full = archive.copy(FULL, "full")
    rerun = archive.rerun(FULL, "rerun", "rerun-01", "2026-11-09T00:00:00Z")
    junk = archive.junk("junk.tar", b"not a tar at all")
    paths = [str(p) for p in (full, archive.tar(full), rerun, junk)]
    stricter = tmp_path / "stricter.toml"  # the full example no longer meets the aggregate
    text = Path("pins/gx10-reference-v5.toml").read_text("utf-8")
    stricter.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    code = main(["rejudge", *paths, "--pins", str(stricter), "--json"])
    captured = capsys.readouterr()
    assert code == 1
    report = json.loads(captured.out)
    assert report["bundles"] == 2
    changed = sorted((c["run_id"], c["bundle"]) for c in report["changed"])
    assert changed == [(FULL_RUN, f"{full}, {full}.tar"), ("rerun-01", str(rerun))]
    (copy,) = report["copies"]
    assert copy["run_id"] == "rerun-01"
    assert copy["copy_of"].startswith(f"a copy of {_digest(full)} (run {FULL_RUN}, {full})")
    assert report["refused"] == [
        {"bundle": str(junk), "reason": "not a readable uncompressed tar: truncated header"}
    ]
    assert captured.err == (
        f"audit rejudge: refused {junk}: not a readable uncompressed tar: truncated header\n"
    )
    assert main(["rejudge", *paths[:3], "--pins", "gx10-reference-v5"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("0 of 2 verdicts change under gx10-reference-v5")
    assert "copy: rerun-01" in text


def test_a_copy_has_the_contents_key_of_what_it_copies(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    archive = Archive(tmp_path, built_examples)

    def key(bundle: Path) -> str:
        return contents_key(parse_manifest(open_source(bundle).manifest_bytes()).model)

    full = archive.copy(FULL, "full")
    rerun = archive.rerun(FULL, "rerun", "rerun-01", "2026-11-09T00:00:00Z")
    value = json.loads((full / "manifest.json").read_bytes())
    other_model = _reseal(
        archive.copy(FULL, "other-model"),
        model=value["model"] | {"digest": "sha256:" + "ef" * 32},
    )
    assert _digest(full) != _digest(rerun)
    assert key(full) == key(rerun) == key(archive.tar(full))
    assert key(other_model) != key(full)
    assert key(archive.copy(SMOKE, "smoke")) != key(full)


def test_rejudge_takes_the_pin_set_a_deployment_judged_by_until_now(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deployment's own pin set is not shipped: its bundles cannot be judged by the id they
    name, so each is refused with the reason, unless --before gives that pin set."""
    full = ranked_examples[FULL]
    stricter = tmp_path / "stricter.toml"  # the full example no longer meets the aggregate
    text = DEPLOYMENT_PINS.read_text("utf-8")
    stricter.write_text(text.replace("aggregate = 70", "aggregate = 90", 1), "utf-8")
    assert main(["rejudge", str(full), "--pins", str(stricter), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    ((refused),) = report["refused"]
    assert refused["bundle"] == str(full)
    assert "pin set" in refused["reason"], refused["reason"]
    code = main(["rejudge", str(full), "--pins", str(stricter), "--before", str(DEPLOYMENT_PINS),
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["refused"] == []
    assert report["before"] == {"id": DEPLOYMENT.id, "digest": DEPLOYMENT.digest}
    (changed,) = report["changed"]
    assert changed["run_id"] == FULL_RUN
    assert any("aggregate" in r and "under 90" in r for r in changed["reasons"]), changed
