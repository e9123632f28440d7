"""The bounded path (`audit verify`, :func:`verify.verify_bundle`) keeps each transport exchange
reduced to its facts and a socket ledger's facts only (ADR 0012); the full path
(:func:`verify.verify_with_evidence`, which `audit show` and `--evidence-out` use) keeps every
document. Both must give the same verdict, byte for byte, on every bundle: the examples, a
recorded run, and every bundle of the hostile corpus but the signature cases, which need a
private Sigstore and do not touch the records, and the screened cases, refused when the tar or
directory is listed, before either path reads a record (the corpus test runs those)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundle_schema.errors import DefectiveBundle, InvalidInput
from bundle_schema.models import SocketLedgerEntry, TransportExchange
from tests.data.hostile.forgeries import record_reference_run
from tests.data.hostile.generate import CASES, Context, generate
from verify import verdict_json, verify_bundle, verify_with_evidence
from verify._facts import SlimExchange, ledger_facts, reply_facts

CORPUS = [
    c for c in CASES if c.command == "verify" and c.category != "signature" and not c.screened
]


def _outcome(verify: Any, path: Path, args: list[str]) -> bytes:
    options: dict[str, Any] = {}
    if "--expect-digest" in args:
        options["expect_digest"] = args[args.index("--expect-digest") + 1]
    try:
        return verdict_json(verify(path, **options))
    except (InvalidInput, DefectiveBundle) as exc:  # no verdict: refused, or defective before one
        return f"{type(exc).__name__}: {exc}".encode()


_FULL: dict[tuple[Path, tuple[str, ...]], bytes] = {}
"""The full path's outcome of each bundle this module has verified (bundles are only read)."""


def _full(path: Path, args: list[str]) -> bytes:
    key = (path, tuple(args))
    if key not in _FULL:
        _FULL[key] = _outcome(lambda p, **o: verify_with_evidence(p, **o)[0], path, args)
    return _FULL[key]


def _both(path: Path, args: list[str] = ()) -> tuple[bytes, bytes]:  # type: ignore[assignment]
    bounded = _outcome(lambda p, **o: verify_bundle(p, **o).verdict, path, list(args))
    return bounded, _full(path, list(args))


def test_every_example_bundle_gives_the_same_verdict_both_ways(
    built_examples: dict[str, Path],
) -> None:
    for name, path in sorted(built_examples.items()):
        bounded, full = _both(path)
        assert bounded == full, name


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A well-behaved recorded run, recorded once for this module's tests (they only read it)."""
    work = tmp_path_factory.mktemp("recording")
    return record_reference_run(work / "recorded", work / "work")


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, built_examples: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """The cases of :data:`CORPUS`, generated once for this module's tests (they only read
    them: verifying never writes into a bundle, which the corpus test checks)."""
    root = tmp_path_factory.mktemp("corpus")
    return generate(root / "cases", Context(root / "work", built_examples), CORPUS)


def test_a_recorded_run_gives_the_same_verdict_both_ways(recorded: Path) -> None:
    bounded, full = _both(recorded)
    assert bounded == full
    assert b'"outcome":"QUALIFIED"' in bounded


def test_every_hostile_bundle_gives_the_same_verdict_both_ways(
    corpus: dict[str, dict[str, Any]],
) -> None:
    built = corpus
    assert len(built) == len(CORPUS)
    for case in CORPUS:
        entry = built[case.name]
        bounded, full = _both(Path(entry["path"]), entry["args"])
        assert bounded == full, case.name


def _exchange(**fields: Any) -> TransportExchange:
    base: dict[str, Any] = {
        "schema_version": 1,
        "id": 7,
        "component": "coding",
        "started": 1.0,
        "ended": 2.0,
        "method": "POST",
        "path": "/v1/chat/completions",
        "status": 200,
    }
    return TransportExchange.model_validate(base | fields)


def test_a_slim_exchange_keeps_the_facts_and_drops_the_bodies() -> None:
    from verify._facts import slim_exchange  # noqa: PLC0415

    events = [
        f'data: {{"model":"{m}","choices":[{{"delta":{{"content":"x"}}}}]}}\n\n'
        for m in ("a", "a", "b", "c")
    ]
    full = _exchange(
        request_headers={"x-other": "1"},
        response_headers={"content-type": "text/event-stream"},
        request_body={"encoding": "utf-8", "data": '{"messages":[' + '"m",' * 1000 + '"m"]}'},
        chunks=[{"t": 0.5 + i, "data": e} for i, e in enumerate(events)],
    )
    slim = slim_exchange(full, None)
    assert isinstance(slim, SlimExchange)
    assert slim.chunks == () and slim.request_body is None and slim.request_headers == {}
    assert reply_facts(slim) == reply_facts(full)
    assert reply_facts(full).models == ("a", "b")
    assert reply_facts(full).visible == 4
    assert reply_facts(full).first_visible == 0.5


def test_ledger_facts_keep_the_first_event_and_every_incoherent_entry() -> None:
    def entry(seq: int, address: str = "127.0.0.1", family: str = "AF_INET") -> Any:
        return SocketLedgerEntry.model_validate(
            {"schema_version": 1, "seq": seq, "t": 1.0, "pid": 1, "process": "p",
             "family": family, "address": address, "port": 80, "outcome": "connected"}
        )  # fmt: skip

    entries = [entry(0), entry(1, "::1"), entry(2, "10.0.0.1"), entry(4), entry(5, "::1")]
    facts = ledger_facts(entries)
    assert facts.count == 5
    assert facts.first_event == (2, entries[2])
    assert [n for n, _ in facts.incoherent] == [2, 5]


# --- a huge transport log read by helper processes (ADR 0012) -----------------------------------


@pytest.fixture
def helpers_for_every_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transport log goes to the helpers, one line a batch (many batches in flight)."""
    import verify._parallel  # noqa: PLC0415
    import verify._shell  # noqa: PLC0415

    monkeypatch.setattr(verify._shell, "PARALLEL_FROM", 0)
    monkeypatch.setattr(verify._parallel, "BATCH_LINES", 1)


def _with_helpers(path: Path, args: list[str] = ()) -> tuple[bytes, bytes]:  # type: ignore[assignment]
    helped = _outcome(lambda p, **o: verify_bundle(p, workers=2, **o).verdict, path, list(args))
    return helped, _full(path, list(args))


@pytest.mark.usefixtures("helpers_for_every_log")
def test_helpers_give_the_same_verdict_on_a_recorded_run_and_the_corpus(
    recorded: Path, corpus: dict[str, dict[str, Any]]
) -> None:
    helped, full = _with_helpers(recorded)
    assert helped == full
    assert b'"outcome":"QUALIFIED"' in helped
    cases = [c for c in CORPUS if c.category in ("record", "schema", "content", "forgery")]
    built = corpus
    for case in cases:
        entry = built[case.name]
        helped, full = _with_helpers(Path(entry["path"]), entry["args"])
        assert helped == full, case.name


@pytest.mark.usefixtures("helpers_for_every_log")
@pytest.mark.parametrize("tail", [b"", b"{}"], ids=["complete", "no-final-newline"])
def test_helpers_stop_at_the_first_invalid_line_as_the_reader_does(
    tmp_path: Path, built_examples: dict[str, Path], tail: bytes
) -> None:
    from tests.data.hostile.kit import read_bundle, reseal  # noqa: PLC0415

    manifest, files = read_bundle(built_examples["gx10-full-qualified"])
    name = "transport/exchanges.jsonl"
    data, media = files[name]
    rows = data.splitlines(keepends=True)
    rows[2] = rows[2].replace(b'"method":"', b'"method": "', 1)  # not canonical: line 3
    files[name] = (b"".join(rows) + tail, media)
    reseal(tmp_path / "b", manifest, files, {})
    helped, full = _with_helpers(tmp_path / "b")
    assert helped == full
    assert b":3: bytes are not RFC 8785 canonical JSON" in helped
