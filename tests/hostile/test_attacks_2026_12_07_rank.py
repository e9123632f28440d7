"""Attacks on ``audit rank`` (``verify/ranking.py``: ``Facts``, ``place``, ``instant``,
``contents_key``, the tables and their order; ``verify/judging.py``: ``JudgedArchive._count``,
``_standing``; ``verify/render.py``: the Markdown of the ranking) as a publisher who wants a
better place on the leaderboard or a competitor's run lower or out.

Attacked: a copy of a competitor's ranked run (the same evidence entries and model digest)
resealed under the attacker's run id and an earlier creation time, beside one dated with a
leap second and one with an impossible date; a tie on every score won by ``created_at``; odd
but schema-valid timestamps (leap second, month 13, nine fractional digits, the same instant
spelled twice) in the in-memory ranking and the spooled one; -0.0 against 0.0; a model name
with a ``|``, a line break and Unicode bidi controls in the Markdown tables.

Found (the two holes were strict xfails against 57c222a, closed in the commit that added this
file, each test now asserting the fixed behaviour: a ``created_at`` that names no time is a
``record_disagrees`` finding of the manifest; bidirectional formatting characters are written
out as ``\\u202e`` wherever control characters are, ``verify.render.flat``/``cell`` and
``bundle_schema.errors.one_line``):

1. DECISION: the tie-break and the copy rule both trust ``created_at``, the publisher's own
   word. A copy of a competitor's ranked run dated after its evidence ends but before the
   competitor's bundle takes its row (the competitor's is listed apart as "a copy of" the
   attacker's bundle), and a run with equal scores dated so is placed above it (``instant`` in
   ``verify/ranking.py``; ``_count`` in ``verify/judging.py``). docs/ranking.md says so ("who
   published first is the bundles' own word"); the only bound is the evidence's end times.
3. HOLE: a ``created_at`` that names no time (``23:59:60``, month 13: the schema's pattern
   takes them) passes integrity and is printed in the row (``verify/_consistency/times.py``
   ``_times`` skips its check when the time does not read; an ``ended_at`` so is a finding).
2. HOLE: a model name (``runtime_model_id``, any text) holding Unicode bidi controls (U+202E
   RIGHT-TO-LEFT OVERRIDE, U+2066..U+2069 isolates) reaches the ranked Markdown row and the text
   output raw (``verify/render.py`` ``cell`` / ``flat`` write out only C0/C1 controls): in a
   terminal or any viewer of the Markdown source the scores after it are shown reversed, so a
   row reads as other numbers than the JSON holds.

Stopped: a copy dated before its own evidence ends fails integrity; a leap second or impossible
date sorts after every valid time and does not crash;
the spooled ranking (what the CLI prints) is the same bytes as ``rank`` in memory for odd
timestamps and -0.0; ``|`` and line breaks in a model name add no cell and no row.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bundle_schema import canonical_bytes
from pins import parse_pin_set
from tests.audit.test_rank_archive import _reseal
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.kit import audit_process
from verify import verify_with_evidence
from verify.ranking import Ranked, SpooledRanking, rank
from verify.render import ranking_markdown

V5 = parse_pin_set(DEPLOYMENT_PINS.read_bytes(), str(DEPLOYMENT_PINS))
PINS = ["--pins", str(DEPLOYMENT_PINS)]
FULL = "gx10-full-qualified"
BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f"]


@pytest.fixture(scope="module")
def honest(ranked_examples: dict[str, Path]) -> Ranked:
    verdict, evidence = verify_with_evidence(ranked_examples[FULL], pins=V5)
    return Ranked(FULL, verdict, evidence)


def _variant(item: Ranked, run_id: str, created_at: str, model: str | None = None, **scores: Any):
    verdict = item.verdict.model_copy(
        update={"run_id": run_id, "scores": item.verdict.scores.model_copy(update=scores)}
    )
    update: dict[str, Any] = {"created_at": created_at}
    if model is not None:
        update["model"] = item.evidence.model.model_copy(update={"runtime_model_id": model})
    return Ranked(run_id, verdict, item.evidence.model_copy(update=update))


def _spooled(items: list[Ranked]) -> SpooledRanking:
    ranking = SpooledRanking(rank([], _ref()).pin_set)
    for item in items:
        ranking.add(item)
    return ranking


def _ref():  # the deployment pin set as a ranking names it
    from bundle_schema.models import PinSetRef  # noqa: PLC0415

    return PinSetRef(id=V5.id, digest=V5.digest)


@pytest.fixture(scope="module")
def copied_archive(
    ranked_examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """A competitor's ranked run, the attacker's copy dated in year 0001, and two copies dated
    with a leap second and an impossible date: ``audit rank --json`` and its exit code."""
    root = tmp_path_factory.mktemp("copied")
    original = Path(shutil.copytree(ranked_examples[FULL], root / "competitor"))
    copies = {
        "attacker": ("attacker-run-01", "2026-11-02T11:42:00Z"),
        "leap": ("leap-run-01", "2016-12-31T23:59:60Z"),
        "odd": ("odd-run-01", "2026-13-45T99:99:99.999999999Z"),
    }
    for name, (run_id, created_at) in copies.items():
        _reseal(Path(shutil.copytree(original, root / name)), run_id=run_id, created_at=created_at)
    done = audit_process(["rank", *PINS, "--json", str(root)])
    return {"done": done, "original": original}


def test_no_odd_timestamp_crashes_rank(copied_archive: dict[str, Any]) -> None:
    done = copied_archive["done"]
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    ranking = json.loads(done.stdout)
    rows = [*ranking["ranked"], *ranking["apart"]]
    assert len(rows) == 4  # each bundle once


def test_a_leap_second_or_impossible_date_never_wins_the_copy(
    copied_archive: dict[str, Any],
) -> None:
    ranking = json.loads(copied_archive["done"].stdout)
    assert len(ranking["ranked"]) == 1
    assert ranking["ranked"][0]["run_id"] not in {"leap-run-01", "odd-run-01"}


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: a copy of a competitor's ranked run (created 11:45), resealed under the "
    "attacker's run id dated 11:42 (after its evidence ends), takes its row; the competitor's "
    "is listed apart as a copy of the attacker's (verify/judging.py JudgedArchive._count sorts "
    "copies by standing, then instant(created_at): the publisher's own word, docs/ranking.md)",
)
def test_a_backdated_copy_does_not_take_the_competitors_row(
    copied_archive: dict[str, Any],
) -> None:
    ranking = json.loads(copied_archive["done"].stdout)
    assert [r["run_id"] for r in ranking["ranked"]] == ["gx10-v5-full-20261102T100000Z-01"]


@pytest.mark.xfail(
    strict=True,
    reason="DECISION: on equal scores the earlier created_at ranks first (verify/ranking.py "
    "_key, instant); a publisher dates its bundle as early as its evidence allows and wins",
)
def test_a_tie_is_not_won_by_dating_a_run_early(honest: Ranked) -> None:
    competitor = _variant(honest, "competitor-01", "2026-11-02T11:45:00Z")
    attacker = _variant(honest, "zz-attacker-01", "2026-11-02T11:42:00Z")
    ranking = rank([attacker, competitor], _ref())
    assert ranking.ranked[0].run_id == "competitor-01"


ODD = [
    "2016-12-31T23:59:60Z",
    "2026-13-45T99:99:99.999999999Z",
    "0000-00-00T00:00:00Z",
    "9999-12-31T23:59:59.999999999Z",
    "2026-11-02T10:00:00Z",
    "2026-11-02T10:00:00.000000000Z",
    "2026-11-02T10:00:00.5Z",
    "2026-11-02T10:00:00.500000001Z",
]


def test_odd_timestamps_order_alike_in_memory_and_spooled(honest: Ranked) -> None:
    items = [_variant(honest, f"r-{i:02d}", at) for i, at in enumerate(ODD)]
    items += [_variant(honest, "r-zero", "2026-11-02T10:00:00Z", performance=0.0)]
    items += [_variant(honest, "r-negzero", "2026-11-02T10:00:00Z", performance=-0.0)]
    memory = rank(items, _ref())
    import io  # noqa: PLC0415

    for order in (items, items[::-1]):
        out = io.BytesIO()
        with _spooled(order) as spooled:
            spooled.write_json(out)
        assert out.getvalue() == canonical_bytes(memory.model_dump(mode="json")) + b"\n"
    valid = [r.run_id for r in memory.ranked]
    # a time that does not read sorts after every one that does
    assert valid.index("r-00") > valid.index("r-07")
    assert valid.index("r-02") > valid.index("r-07")


def _markdown(items: list[Ranked]) -> str:
    with _spooled(items) as spooled:
        return "\n".join(ranking_markdown(spooled))


def test_a_pipe_or_line_break_in_a_model_name_adds_no_cell_or_row(honest: Ranked) -> None:
    evil = _variant(honest, "evil-01", "2026-11-02T10:00:00Z", model="m | 99.999 |\n| 1 | x")
    fair = _variant(honest, "fair-01", "2026-11-02T10:00:00Z", model="fair")
    text = _markdown([evil, fair])
    rows = [line for line in text.splitlines() if line.startswith("| ") and "sha256:" in line]
    assert len(rows) == 2
    cells = {len(line.replace("\\|", "").split("|")) for line in rows}
    assert len(cells) == 1


@pytest.mark.parametrize("control", BIDI)
def test_bidi_controls_in_a_model_name_are_written_out(honest: Ranked, control: str) -> None:
    evil = _variant(honest, "evil-01", "2026-11-02T10:00:00Z", model=f"llama{control}")
    assert control not in _markdown([evil])


@pytest.mark.parametrize("run_id", ["leap-run-01", "odd-run-01"])
def test_a_created_at_that_is_no_time_is_a_finding(
    copied_archive: dict[str, Any], run_id: str
) -> None:
    ranking = json.loads(copied_archive["done"].stdout)
    (row,) = [r for r in ranking["apart"] if r["run_id"] == run_id]
    assert any(reason.startswith("integrity failed") for reason in row["reasons"])
