"""Property: no single added entry and no single removed line turns a forgery into a QUALIFIED run.

The base is a run recorded by ``audit run`` against the reference endpoint (QUALIFIED, its claims
the replay's; tests/data/hostile/forgeries.py). Each example makes one change and reseals the
manifest so that integrity holds, keeping the recording's claims (those of a QUALIFIED, rankable
run, which is what a forger wants believed):

(a) **one added entry**: at the place of any role of the format (bundle_schema/roles.py ``ROLES``)
    under a name the run does not use (another ``components/<c>/bfcl/<name>``,
    ``components/<c>/raw/<path>``, ``logs/<name>``, ``identity/<name>``,
    ``upstreams/<u>/files/<id>``, a quarantine marker or BFCL plan of a component, the checkout
    evidence of an upstream), at a new name beside a role of one place (a second transport log,
    probe, task list, ... under a record media type), or at no place at all; its bytes copied from
    one of the run's other entries or generated (arbitrary bytes, JSON, a valid record of the
    place's kind, a checkout file named by its own git blob id), its media type the place's, the
    source's or an opaque one;
(b) **one removed line** of any JSON Lines entry (transport log, socket ledger, Hermes tasks, the
    raw Hermes output), alone or with what counts it kept in step as a forger would: the
    observer's exchange count, the ledger's closing count, the same task's line in the other
    Hermes file.

The property: the resealed bundle never verifies QUALIFIED with integrity ok and the claims
matching (``verify_bundle``), unless the change is **provably neutral**, which is narrow:

- only an addition can be neutral; no removed line is ever neutral;
- an addition is neutral when the verdict lists the added entry in ``unread`` (the format's
  "kept, listed, read by no gate": a harness log, an identity reply, an opaque entry at no place;
  a raw output file or any other entry that no reader reads qualifies only if the verdict lists
  it so) **and** the verdict is otherwise the recording's, apart from the bundle digest and
  the count of blobs and bytes hashed;
- and an addition that the format says no gate reads (a non-record at ``logs/``, ``identity/``
  or at no place) must be listed in ``unread``: nothing is ignored silently.

Holes: each class of change that broke the property has a named regression case below; one
still open is marked ``xfail(strict=True)`` with what the verifier misses. The property exempts a
change of such a class only while that class's reproduction still breaks the property (checked
once per module), so a fix in verify/ makes its regression case XPASS (strict: the mark must go)
and the exemption lapses by itself: from then on the property covers the class in full.

``make test`` runs a modest, derandomized number of examples (the recording is made once per
module; each example reseals and verifies a ~50-entry bundle); EVIDENCE_AUDIT_FUZZ_EXAMPLES=N
runs N of each property with fresh randomness.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from bundle_schema import KINDS, RECORD_MEDIA_TYPES, canonical_bytes, digest_of
from bundle_schema.errors import DefectiveBundle, InvalidInput
from bundle_schema.models import Manifest, Verdict
from bundle_schema.roles import COMPONENT_NAMES, ROLES, Role, place
from tests.data.hostile.forgeries import record_reference_run
from tests.data.hostile.kit import Files, read_bundle, reseal
from verify import git_blob_id, verify_bundle

EXAMPLES = int(os.environ.get("EVIDENCE_AUDIT_FUZZ_EXAMPLES", "0"))


def _settings(default: int) -> settings:
    return settings(
        max_examples=EXAMPLES or default,
        deadline=None,
        derandomize=not EXAMPLES,  # make test: the same examples every time; make fuzz: new ones
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],  # explain: replays st.data() badly
    )


TRANSPORT = "transport/exchanges.jsonl"
LEDGER = "network/socket-ledger.jsonl"
TASKS = "components/hermes/tasks.jsonl"
RAW_TASKS = "components/hermes/raw/tasks.jsonl"
CONFIG = "run/config.json"
TEXT = "text/plain; charset=utf-8"
OPAQUE = (TEXT, "application/json", "application/octet-stream")
SEGMENT = st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,11}\Z")
HEX40 = st.text("0123456789abcdef", min_size=40, max_size=40)
SAFE = 2**53 - 1
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)


# --- the recording ---------------------------------------------------------------------------


@dataclass
class Recording:
    """The recorded run, read once: its manifest, its evidence, its verdict, a scratch place."""

    path: Path
    manifest: Manifest
    files: Files
    verdict: Verdict
    scratch: Path
    counter: itertools.count[int] = field(default_factory=itertools.count)
    open_holes: frozenset[str] = frozenset()

    @property
    def upstreams(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.manifest.upstreams)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    work = tmp_path_factory.mktemp("forgery-properties")
    path = record_reference_run(work / "recorded", work / "recording")
    manifest, files = read_bundle(path)
    verdict = verify_bundle(path).verdict
    assert (verdict.outcome, verdict.integrity.status, verdict.claims.match) == (
        "QUALIFIED", "ok", True
    )  # fmt: skip
    found = Recording(path, manifest, files, verdict, work / "scratch")
    found.open_holes = frozenset(
        hole.id for hole in HOLES if _breaks(found, hole.reproduce(found.files))
    )
    return found


# --- changes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Added:
    """One added evidence entry."""

    name: str
    media_type: str
    source: str
    """Where the bytes came from (an entry of the run, or how they were generated)."""
    data: bytes = field(repr=False)

    def apply(self, files: Files) -> Files:
        return {**files, self.name: (self.data, self.media_type)}


@dataclass(frozen=True)
class Removed:
    """One removed line of a JSON Lines entry, alone or with the counts kept in step."""

    name: str
    line: int
    in_step: bool

    def apply(self, files: Files) -> Files:
        out = dict(files)
        data, media = files[self.name]
        kept = data.splitlines(keepends=True)
        gone = kept.pop(self.line)
        out[self.name] = (b"".join(kept), media)
        if not self.in_step:
            return out
        config = json.loads(files[CONFIG][0])
        if self.name == TRANSPORT:
            config["observer"]["exchanges"] -= 1
        elif self.name == LEDGER:
            config["ledger"]["entries"] -= 1
        elif self.name in (TASKS, RAW_TASKS):
            other = RAW_TASKS if self.name == TASKS else TASKS
            task = json.loads(gone).get("task")
            lines = files[other][0].splitlines(keepends=True)
            out[other] = (
                b"".join(line for line in lines if json.loads(line).get("task") != task),
                files[other][1],
            )
        out[CONFIG] = (canonical_bytes(config), files[CONFIG][1])
        return out


Change = Added | Removed


def _verify(recording: Recording, change: Change) -> Verdict | None:
    """The verdict on the recording with the change resealed in; None: the bundle is refused."""
    target = recording.scratch / str(next(recording.counter))
    try:
        reseal(target, recording.manifest, change.apply(recording.files), {})
        return verify_bundle(target).verdict
    except (InvalidInput, DefectiveBundle):
        return None
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _qualified(verdict: Verdict | None) -> bool:
    return (
        verdict is not None
        and verdict.outcome == "QUALIFIED"
        and verdict.integrity.status == "ok"
        and verdict.claims.match
    )


def _otherwise_the_recordings(recording: Recording, verdict: Verdict) -> bool:
    def plain(v: Verdict) -> dict[str, Any]:
        # the digest and the counts of blobs and bytes hashed change with any added entry
        return v.model_dump(
            mode="json",
            exclude={"bundle_digest": True, "unread": True,
                     "integrity": {"blobs_checked", "bytes_checked"}},
        )  # fmt: skip

    return plain(verdict) == plain(recording.verdict)


def _neutral(recording: Recording, change: Change, verdict: Verdict) -> bool:
    """Provably neutral: an addition listed as unread, the verdict otherwise the recording's."""
    return (
        isinstance(change, Added)
        and change.name in verdict.unread
        and _otherwise_the_recordings(recording, verdict)
    )


def _unread_by_format(change: Change) -> bool:
    """An addition the format says no gate reads: a non-record at an unread place or none."""
    if not isinstance(change, Added):
        return False
    placed = place(change.name, change.media_type)
    return placed.problem is None and (placed.role is None or not placed.role.read)


def _breaks(recording: Recording, change: Change) -> bool:
    """Whether the change breaks the property (ignoring the known holes)."""
    verdict = _verify(recording, change)
    if verdict is None:  # refused: never QUALIFIED
        return False
    if _unread_by_format(change) and change.name not in verdict.unread:
        return True
    return _qualified(verdict) and not _neutral(recording, change, verdict)


# --- the known holes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hole:
    """A class of change the verifier lets through today, and its smallest reproduction."""

    id: str
    reason: str
    matches: Callable[[Recording, Change], bool]
    reproduce: Callable[[Files], Change]


def _placed(change: Change, *roles: str) -> tuple[Role, str | None, str | None] | None:
    if not isinstance(change, Added):
        return None
    placed = place(change.name, change.media_type)
    if placed.problem is not None or placed.role is None or placed.role.id not in roles:
        return None
    return placed.role, placed.component, placed.upstream


READ_BY_A_HARNESS = ("coding", "hermes", "tool_instruction")
"""The components whose raw place a harness's reader is given (the first each harness serves)."""
CHECKOUT_ROLES = ("checkout listing", "checkout state", "checkout commit", "checkout file")


def _raw_ignored(_recording: Recording, change: Change) -> bool:
    found = _placed(change, "raw output")
    return found is not None and found[1] in READ_BY_A_HARNESS


def _raw_of_no_harness(_recording: Recording, change: Change) -> bool:
    found = _placed(change, "raw output")
    return found is not None and found[1] not in READ_BY_A_HARNESS


def _bfcl_unread(_recording: Recording, change: Change) -> bool:
    return _placed(change, "bfcl shard", "bfcl plan") is not None


def _unlisted_file(recording: Recording, change: Change) -> bool:
    found = _placed(change, "checkout file")
    return found is not None and found[2] in recording.upstreams


def _unnamed_upstream(recording: Recording, change: Change) -> bool:
    found = _placed(change, *CHECKOUT_ROLES)
    return found is not None and found[2] not in recording.upstreams


def _exchange_gone(_recording: Recording, change: Change) -> bool:
    return isinstance(change, Removed) and change.name == TRANSPORT and change.in_step


def _ledger_tail_gone(recording: Recording, change: Change) -> bool:
    return (
        isinstance(change, Removed)
        and change.name == LEDGER
        and change.in_step
        and change.line == len(recording.files[LEDGER][0].splitlines()) - 1
    )


def _first_coding_exchange(files: Files) -> int:
    lines = files[TRANSPORT][0].splitlines()
    return next(i for i, line in enumerate(lines) if json.loads(line)["component"] == "coding")


HOLES: tuple[Hole, ...] = (
    Hole(
        "raw-output-ignored-by-its-reader",
        "an extra file at a harness's raw place (components/coding/raw/notes.txt) is handed to "
        "its reader, which ignores it; the verdict neither reads nor lists it as unread",
        _raw_ignored,
        lambda _files: Added("components/coding/raw/notes.txt", TEXT, "generated", b"notes\n"),
    ),
    Hole(
        "raw-output-of-no-harness",
        "the raw place of a component no harness's reader is given (components/reliability/raw/, "
        "components/performance/raw/) is never read, and its entries are not listed as unread",
        _raw_of_no_harness,
        lambda files: Added(
            "components/reliability/raw/quality.json",
            "application/json",
            "components/coding/raw/quality.json",
            files["components/coding/raw/quality.json"][0],
        ),
    ),
    Hole(
        "bfcl-records-unread",
        "a valid BFCL shard or plan at components/<c>/bfcl/ is validated but read by no gate "
        "under a pin set with no BFCL harness, and is not listed as unread",
        _bfcl_unread,
        lambda _files: Added(
            "components/coding/bfcl/shard.json",
            KINDS["bfcl-shard"].media_type or "",
            "generated",
            canonical_bytes({"subset_totals": {"parallel": {"hits": 1, "n": 2}}}),
        ),
    ),
    Hole(
        "checkout-file-not-in-the-listing",
        "an upstreams/<u>/files/<id> entry whose id the listing does not name is never hashed "
        "against its name (even bytes of another id pass), and is not listed as unread",
        _unlisted_file,
        lambda _files: Added(
            "upstreams/sparkbench/files/" + "0" * 40, "application/octet-stream", "generated", b"x"
        ),
    ),
    Hole(
        "checkout-of-an-upstream-the-manifest-does-not-name",
        "checkout evidence (tree.txt, checkout.json, commit.txt, files/) of an upstream the "
        "manifest does not name is read by no check, and is not listed as unread",
        _unnamed_upstream,
        lambda files: Added(
            "upstreams/other/tree.txt",
            TEXT,
            "upstreams/sparkbench/tree.txt",
            files["upstreams/sparkbench/tree.txt"][0],
        ),
    ),
    Hole(
        "exchange-removed-with-the-count",
        "a harness exchange removed from the transport log with the observer's exchange count "
        "lowered to match: the ids now skip one, and nothing checks that they run without a gap",
        _exchange_gone,
        lambda files: Removed(TRANSPORT, _first_coding_exchange(files), in_step=True),
    ),
    Hole(
        "ledger-tail-removed-with-the-count",
        "the socket ledger's last entry removed with the closing count lowered to match: the "
        "sequence has no gap and the count agrees; nothing else (e.g. the harness exchanges each "
        "connect() carried) accounts for it",
        _ledger_tail_gone,
        lambda files: Removed(LEDGER, len(files[LEDGER][0].splitlines()) - 1, in_step=True),
    ),
)
HOLE_BY_ID = {hole.id: hole for hole in HOLES}


def _known_hole(recording: Recording, change: Change) -> str | None:
    for hole in HOLES:
        if hole.id in recording.open_holes and hole.matches(recording, change):
            return hole.id
    return None


# --- strategies ----------------------------------------------------------------------------------


def _valid_record(kind: str, component: str, files: Files) -> st.SearchStrategy[bytes]:
    """A valid record of a kind the recording holds none of (for the others, copies serve)."""
    if kind == "quarantine-marker":
        return st.builds(
            lambda reason, source: canonical_bytes(
                {
                    "schema_version": 1,
                    "component": component,
                    "upstream_reason": reason,
                    "provisional_metrics": {},
                    "source": source,
                }
            ),
            st.text("abcdefgh ", min_size=1, max_size=12),
            st.none() | st.sampled_from(sorted(files)),
        )
    if kind == "bfcl-shard":
        return st.tuples(st.integers(0, 5), st.integers(0, 5)).map(
            lambda t: canonical_bytes(
                {"subset_totals": {"parallel": {"hits": min(t), "n": max(t)}}}
            )
        )
    if kind == "task-tallies":  # a gate's tallies (Inspect AI, lm-eval): the recording runs none
        return st.tuples(
            st.sampled_from(("inspect-ai", "lm-eval")), st.integers(0, 5), st.integers(0, 5)
        ).map(
            lambda t: canonical_bytes(
                {"harness": t[0], "version": "1", "model": "m",
                 "tasks": {"arithmetic": {"hits": min(t[1:]), "n": max(t[1:])}}}
            )
        )  # fmt: skip
    if kind == "bfcl-plan":
        return st.lists(st.sampled_from(sorted(files)), max_size=2).map(
            lambda names: canonical_bytes({"shards": [digest_of(files[n][0]) for n in names]})
        )
    of_kind = sorted(
        n
        for n, (_, m) in files.items()
        if m in RECORD_MEDIA_TYPES and RECORD_MEDIA_TYPES[m].name == kind
    )
    return st.sampled_from(of_kind).map(lambda n: files[n][0])


def _fill(draw: st.DrawFn, pattern: str, upstreams: tuple[str, ...], data: bytes) -> str:
    """A name matching a role's pattern."""
    out = []
    for part in pattern.split("/"):
        if part == "{component}":
            out.append(draw(st.sampled_from(COMPONENT_NAMES)))
        elif part == "{upstream}":
            out.append(draw(st.sampled_from(upstreams) | SEGMENT))
        elif part == "{name}" and pattern.endswith("/files/{name}"):
            # a checkout file: named by its own git blob id, another's, or any
            out.append(draw(st.sampled_from([git_blob_id(data)]) | HEX40))
        elif part == "{name}":
            out.append(draw(SEGMENT))
        elif part == "**":
            out.append("/".join(draw(st.lists(SEGMENT, min_size=1, max_size=3))))
        else:
            out.append(part)
    return "/".join(out)


def _clashes(name: str, files: Files) -> bool:
    """A name already used, or one that is a directory of a used name or has one for a parent."""
    return any(
        name == other or other.startswith(name + "/") or name.startswith(other + "/")
        for other in files
    )


@st.composite
def additions(draw: st.DrawFn, recording: Recording) -> Added:
    files = recording.files
    role: Role | None = draw(st.sampled_from((*ROLES, None)))
    component = draw(st.sampled_from(COMPONENT_NAMES))
    how = draw(st.sampled_from(("copy", "copy-bytes", "valid-record", "json", "bytes")))
    if how in ("copy", "copy-bytes"):
        source = draw(st.sampled_from(sorted(files)))
        data, source_media = files[source]
    elif how == "valid-record" and role is not None and role.kind is not None:
        source, source_media = "a valid record", role.media_type or ""
        data = draw(_valid_record(role.kind, component, files))
    elif how == "json":
        source, source_media = "generated JSON", "application/json"
        data = canonical_bytes(draw(json_values))
    else:
        source, source_media = "generated bytes", "application/octet-stream"
        data = draw(st.binary(max_size=64))
    media_choices = [source_media, *OPAQUE]
    if role is not None and role.media_type is not None:
        media_choices = [role.media_type, role.media_type, *media_choices]
    media = source_media if how == "copy" else draw(st.sampled_from(media_choices))
    if role is None:
        name = "/".join(draw(st.lists(SEGMENT, min_size=1, max_size=3)))
    else:
        name = _fill(draw, role.pattern, recording.upstreams, data)
        if name in files:  # a role of one place, filled: a second entry beside it
            head, _, tail = name.rpartition("/")
            name = f"{head}/{draw(SEGMENT)}-{tail}" if head else f"{draw(SEGMENT)}-{tail}"
    if _clashes(name, files):
        name = f"{name}.{draw(SEGMENT)}"
    assume(not _clashes(name, files))  # e.g. a name under an entry's name: draw another
    return Added(name, media, source, data)


def _jsonl(files: Files) -> list[str]:
    return sorted(n for n, (_, m) in files.items() if n.endswith(".jsonl") or m.endswith("+jsonl"))


@st.composite
def removals(draw: st.DrawFn, recording: Recording) -> Removed:
    name = draw(st.sampled_from(_jsonl(recording.files)))
    count = len(recording.files[name][0].splitlines())
    return Removed(name, draw(st.integers(0, count - 1)), draw(st.booleans()))


# --- the properties ------------------------------------------------------------------------------


def _check(recording: Recording, change: Change) -> None:
    verdict = _verify(recording, change)
    if verdict is None:  # refused: never QUALIFIED
        return
    if _unread_by_format(change):
        assert change.name in verdict.unread, (
            f"{change} is read by no gate, yet the verdict does not list it as unread"
        )
    if _qualified(verdict) and not _neutral(recording, change, verdict):
        assert _known_hole(recording, change) is not None, (
            f"{change} leaves a bundle that verifies QUALIFIED with the recording's claims, "
            f"and is not neutral (unread: {verdict.unread})"
        )


def test_the_recording_holds_what_the_properties_draw_on(recording: Recording) -> None:
    assert set(_jsonl(recording.files)) == {TRANSPORT, LEDGER, TASKS, RAW_TASKS}
    assert any(n.startswith("logs/") for n in recording.verdict.unread)
    assert recording.open_holes <= set(HOLE_BY_ID)


@_settings(200)
@given(data=st.data())
def test_no_single_added_entry_makes_a_forgery_qualified(
    recording: Recording, data: st.DataObject
) -> None:
    _check(recording, data.draw(additions(recording)))


@_settings(80)
@given(data=st.data())
def test_no_single_removed_line_makes_a_forgery_qualified(
    recording: Recording, data: st.DataObject
) -> None:
    _check(recording, data.draw(removals(recording)))


@pytest.mark.parametrize(
    "change",
    [
        Added("logs/extra.stdout.txt", TEXT, "generated", b"hello\n"),
        Added("identity/models.json", "application/json", "generated", b"{}"),
        Added("notes/readme.txt", TEXT, "generated", b"a note\n"),
    ],
    ids=["harness-log", "identity-reply", "no-place"],
)
def test_a_neutral_addition_is_listed_as_unread(recording: Recording, change: Added) -> None:
    verdict = _verify(recording, change)
    assert verdict is not None
    assert change.name in verdict.unread
    assert _neutral(recording, change, verdict)


# --- regression cases: the holes the property found ----------------------------------------------


def _regression(recording: Recording, hole_id: str) -> None:
    change = HOLE_BY_ID[hole_id].reproduce(recording.files)
    assert not _breaks(recording, change), f"{change}: {HOLE_BY_ID[hole_id].reason}"


def _xfail(hole_id: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=HOLE_BY_ID[hole_id].reason)


def test_regression_raw_output_ignored_by_its_reader(recording: Recording) -> None:
    _regression(recording, "raw-output-ignored-by-its-reader")


def test_regression_raw_output_of_no_harness(recording: Recording) -> None:
    _regression(recording, "raw-output-of-no-harness")


def test_regression_bfcl_records_unread(recording: Recording) -> None:
    _regression(recording, "bfcl-records-unread")


def test_regression_checkout_file_not_in_the_listing(recording: Recording) -> None:
    _regression(recording, "checkout-file-not-in-the-listing")


def test_regression_checkout_of_an_upstream_the_manifest_does_not_name(
    recording: Recording,
) -> None:
    _regression(recording, "checkout-of-an-upstream-the-manifest-does-not-name")


def test_regression_exchange_removed_with_the_count(recording: Recording) -> None:
    _regression(recording, "exchange-removed-with-the-count")


def test_regression_ledger_tail_removed_with_the_count(recording: Recording) -> None:
    _regression(recording, "ledger-tail-removed-with-the-count")
