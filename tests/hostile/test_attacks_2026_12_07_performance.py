"""Hostile tests of 2026-12-07 (performance): an adversarial publisher against seed 000's
performance component (Infermark's legacy concurrency-1 streaming field and TTFT median, errors
scoring zero), as ``verify/harness_outputs.py`` ``_infermark`` reads Infermark's report and
``verify/_consistency/exchanges.py`` ``_infermark`` holds it to the performance exchanges.

Every bundle attack starts from the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar: Infermark 0.3.0 at the pinned commit, 20 streamed
requests at concurrency 1, 120.6 visible chunks/s, TTFT p50 18 ms, performance 100), edits it as
a publisher who controls every byte, and reseals it with claims equal to its replay
(``tests.gate_kit.forged``): integrity holds and the claims match, so only the cross-checks can
tell. A forged Infermark report is always written back with the record and metrics its reader
derives (``put_report``). Where the recorded run's score is already 100, the attack starts from a
run made worse first (a failed request; or each stream's chunks moved towards its end, a TTFT
of about 2 s), which verifies as an honest account on its own (its control test).

The threat model leaves open a wholly fabricated run (timings the observer never saw, answers
the endpoint never gave); it closes relabelling, a report that disagrees with its exchanges,
and a dishonest endpoint read otherwise than the harness read it. The attacks stay in those.

Holes found (each test asserts the safe behaviour; all six closed the same day: every
performance exchange is read as Infermark's client reads it, ``verify/infermark.py``, and held
to the request the pinned command sends; a TTFT never measured scores 0, ADR 0049):

1. A failed performance request swapped with the next harness's exchange. The failed last
   Infermark request (500) is labelled ``coding`` (or deleted, the ids and the observer's
   count renumbered), and Spark Bench's first streamed exchange after it is
   labelled ``performance``; the report says 20 requests, 0 errors. 20 exchanges, no failure,
   the wall and TTFT bounds hold, both windows hold on the log's clock (the two exchanges are
   at the boundary), ``transport_evidence`` passes: performance 0 becomes 100, no finding. The
   performance exchanges are never held to be Infermark's requests (the pinned command's
   prompt, ``--max-tokens 256``, ``stream``; the swapped-in one asked Spark Bench's question
   with ``max_tokens`` 800), nor a harness's exchanges to be its own.
2. The performance requests and the report's ``config`` made with other arguments than the
   pinned command's (``--max-tokens 4096``; another prompt): read without a finding
   (``$.config.max_tokens`` and ``prompt_length`` are never compared with the pin set, nor the
   requests with either). More tokens a request raise chunks/s where a long TTFT weighs.
3. A dishonest endpoint's filler event that Infermark does not read. Infermark 0.3.0 counts a
   token per ``data:`` line whose ``choices[0].delta.content`` is a non-empty string; the
   verifier's reader (``replies.read_exchange`` via ``_facts.reply_facts``) counts an event
   visible for a legacy ``text`` (or a ``message``), any choice, a bare JSON line, or ``data:``
   lines joined. An endpoint that sends one such event 1 ms after each request (then the
   real stream, about 2 s later) leaves Infermark's TTFT honest at 2 s; the publisher's report
   then says TTFT 1.1 ms and one more chunk a request, and the observed median agrees:
   performance 95.3 becomes 100.
4. Every stream's one visible event on an unterminated last line: ``replies._stream_events``
   times that line -1.0, and ``_consistency.exchanges._infermark`` leaves first-chunk times
   below 0 out of the median, so no stream bounds the TTFT: a report of TTFT 0 passes where
   Infermark (httpx's ``aiter_lines`` yields the last line) measured 2 s (performance 47.4
   becomes 52.6). Terminated, the same claim is a finding (the control).
5. No visible chunk at all. A dishonest endpoint that streams Infermark's fixed prompt its
   answer where neither reader looks (here: no content) has no TTFT measured; the reader
   records ``ttft: null`` as 0.0 s and ``performance_score`` gives it the full 100: a run
   whose performance streams showed nothing scores 50 (a slow honest run of 3 chunks/s and a
   12 s TTFT scores 15). ``tests/verify/test_adapters.py::test_infermark_without_visible_content``
   pins the 0.0 on purpose; the seed says TTFT is the time to the first visible content chunk,
   and here there is none.
6. A 200 stream Infermark's client fails on. A ``"delta": null`` event (a quirk some servers
   have in their last event) raises AttributeError in Infermark 0.3.0's
   ``_extract_token_from_chunk``, so that request is an error (``unknown``) and performance is
   0; the verifier counts errors by status and the observer's error only
   (``replies.exchange_failed``), so a report of 0 errors passes (performance 100). The same
   two counts make honest reports findings (false positives, not a publisher's gain): that
   request's honest report of 1 error, and a stream the endpoint broke off mid-way (the
   observer's error) whose chunks Infermark leaves out of its count, as it counts the tokens of
   successful requests only, while the verifier counted every performance exchange's.

Held (passing tests): a failed request relabelled to no component or to one of no harness (an
orphan: ``transport_evidence`` is infra); the slowed run verifies as honest (score about 95)
and a fast TTFT claimed over it is a finding (the control of 3); a concurrency-4 run whose
report says ``"concurrency": true`` (equal to 1 in Python, so read as 1) and a wall of its
real span is a finding (its exchanges one after another take four times as long); Infermark
JSON with a repeated key (a failed level hidden behind a later ``results``, or ``n_error``
twice), a level repeated, concurrency ``"1"``, ``n_error`` as ``false`` or ``0.0``: refused.
Not tested, out of scope: a performance exchange's start moved later with its chunk times
shortened alike (a faster TTFT) is a timing the observer never saw, the fabricated run the
threat model leaves open; Infermark's ITL (shown as estimated chunks/s in the diagnostics,
never scored) and latency statistics are not bounded by the exchanges at all.
"""

from __future__ import annotations

import copy
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundle_schema.models import TransportExchange
from tests.data.hostile.kit import Files, lines, put_json
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_05_transport import (
    CONFIG,
    INFERMARK,
    INFERMARK_RAW,
    LOG,
    MODEL,
    RECORDED_WALL,
    TTFT_HOP,
    _edit_exchanges,
    _findings,
    _forge,
    _gate,
    _honest,
    _json_of,
    _performance,
    _utf8,
    _visible,
    observed_figures,
    put_report,
)
from verify._facts import reply_facts
from verify.gx10.scores import performance_score
from verify.harness_outputs import OutputsUnreadable, read_outputs

Exchanges = list[dict[str, Any]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


# --- helpers ------------------------------------------------------------------------------------


def _report(
    files: Files,
    *,
    errors: int = 0,
    ttft: float | None = None,
    wall: float = RECORDED_WALL,
    error_kind: str = "HTTP 500",
    chunks: int | None = None,
) -> None:
    """Infermark's raw report (and its record and metrics) over the performance exchanges as
    they now are: 20 requests, ``errors`` failed, their visible chunks (or ``chunks``) over
    ``wall``, every TTFT statistic ``ttft`` (None: as recorded)."""
    report = _json_of(files, INFERMARK_RAW)
    level = report["results"][0]
    level["n_success"], level["n_error"] = 20 - errors, errors
    level["errors"] = {error_kind: errors} if errors else {}
    level["total_duration"] = wall
    counted = _visible(lines(files, LOG)) if chunks is None else chunks
    level["tokens_per_second"] = counted / wall
    level |= observed_figures(files)
    if ttft is not None:
        level["ttft"] = dict.fromkeys(level["ttft"], ttft) | {"std": 0.0}
    put_report(files, report)


def _first_chunks(files: Files) -> list[float | None]:
    """The observer's first visible chunk time of each performance exchange."""
    return [
        reply_facts(TransportExchange.model_validate(e)).first_visible
        for e in _performance(lines(files, LOG))
    ]


def _fail_last(exchanges: Exchanges) -> dict[str, Any]:
    """The last Infermark request answered 500 (as the endpoint failed it)."""
    last = _performance(exchanges)[-1]
    last.update(status=500, chunks=[], response_body=_utf8({"error": "model crashed"}))
    return last


def _slowed(exchanges: Exchanges) -> None:
    """Each performance stream's chunks moved towards its last (a 20th of the way left): the
    same chunks, the same end, a first visible chunk at about 95% of the exchange (an honest
    run of a slow prefill)."""
    for exchange in _performance(exchanges):
        last = max(chunk["t"] for chunk in exchange["chunks"])
        for chunk in exchange["chunks"]:
            chunk["t"] = last - (last - chunk["t"]) * 0.05


def _event(choices: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"id": "chatcmpl-x", "model": MODEL, "object": "chat.completion.chunk", "choices": choices}
    )


def _infermark_tokens(stream: str) -> int:
    """The tokens Infermark 0.3.0 counts in a stream (``infermark/client.py``
    ``send_streaming_request``: httpx's ``aiter_lines``, ``_parse_sse_line``,
    ``_extract_token_from_chunk``); raises where its client raises (the request is then an
    error)."""
    tokens = 0
    for raw in stream.splitlines():
        line = raw.strip()
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            chunk = json.loads(line[5:].strip())
        except json.JSONDecodeError:
            continue
        choices = chunk.get("choices", [])
        token = choices[0].get("delta", {}).get("content") if choices else None
        tokens += token is not None and token != ""
    return tokens


# --- 1. a failed request swapped for the next harness's exchange ---------------------------------


def _swapped(label: str) -> Callable[[Files], None]:
    """The failed last Infermark request labelled ``label`` (``deleted``: removed, the ids and
    the observer's count renumbered), the next exchange (Spark Bench's) labelled performance,
    and a report of 20 requests and no error."""

    def edit(files: Files) -> None:
        def swap(exchanges: Exchanges) -> None:
            failed = _fail_last(exchanges)
            place = exchanges.index(failed)
            if label == "deleted":
                del exchanges[place]
                for number, exchange in enumerate(exchanges):
                    exchange["id"] = number
            else:
                failed["component"] = label
                place += 1
            assert exchanges[place]["component"] == "coding"
            exchanges[place]["component"] = "performance"

        _edit_exchanges(files, swap)
        if label == "deleted":
            config = _json_of(files, CONFIG)
            config["observer"]["exchanges"] -= 1
            put_json(files, CONFIG, config)
        performance = _performance(lines(files, LOG))
        span = max(e["ended"] for e in performance) - min(e["started"] for e in performance)
        _report(files, wall=max(RECORDED_WALL, span + 0.01))

    return edit


@pytest.mark.parametrize("label", ["coding", "deleted"])
def test_a_failed_request_swapped_for_the_next_harness_exchange_still_counts(
    recorded: Recorded, tmp_path: Path, label: str
) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", _swapped(label))
    assert verdict.scores.performance == 0.0 or _findings(verdict), verdict.scores


@pytest.mark.parametrize("label", [None, "warmup"])
def test_a_failed_request_relabelled_to_no_harness_is_an_orphan(
    recorded: Recorded, tmp_path: Path, label: str | None
) -> None:
    """Held: labelled no component, or one no harness of the profile is, the failed request is
    an orphaned exchange (``transport_evidence`` infra), whatever the performance score."""

    def edit(files: Files) -> None:
        def swap(exchanges: Exchanges) -> None:
            failed = _fail_last(exchanges)
            failed["component"] = label
            exchanges[exchanges.index(failed) + 1]["component"] = "performance"

        _edit_exchanges(files, swap)
        _report(files)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert _gate(verdict, "transport_evidence") == "infra" or _findings(verdict)


# --- 2. requests made with other arguments than the pinned command's -----------------------------


def _max_tokens(request: dict[str, Any], config: dict[str, Any]) -> None:
    request["max_tokens"] = config["max_tokens"] = 4096


def _prompt(request: dict[str, Any], config: dict[str, Any]) -> None:
    request["messages"] = [{"role": "user", "content": "Hi"}]
    config["prompt_length"] = 2


@pytest.mark.parametrize("change", [_max_tokens, _prompt], ids=["max-tokens-4096", "prompt"])
def test_performance_requests_are_the_pinned_commands(
    recorded: Recorded,
    tmp_path: Path,
    change: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    def edit(files: Files) -> None:
        report = _json_of(files, INFERMARK_RAW)

        def ask(exchanges: Exchanges) -> None:
            for exchange in _performance(exchanges):
                request = json.loads(exchange["request_body"]["data"])
                change(request, report["config"])
                exchange["request_body"] = _utf8(request)

        _edit_exchanges(files, ask)
        put_report(files, report)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert _findings(verdict), verdict.scores


# --- 3. a filler event Infermark does not read ---------------------------------------------------

_DOT = [{"index": 0, "delta": {"content": "."}}]
FILLERS = {
    "legacy-text": f"data: {_event([{'index': 0, 'delta': {}, 'text': '.'}])}\n\n",
    "second-choice": f"data: {_event([{'index': 0, 'delta': {}}, {**_DOT[0], 'index': 1}])}\n\n",
    "json-line": f"{_event(_DOT)}\n",
    "joined-data-lines": "data: " + _event(_DOT).replace('"choices"', '\ndata: "choices"') + "\n\n",
}
"""An event the verifier reads as a visible chunk and Infermark 0.3.0 does not count."""


def _slow_run(files: Files, honest: list[float] | None = None) -> None:
    """The slowed run with its honest report (each TTFT the observer's, plus the hop: its
    median the observer's plus the hop); that TTFT median appended to ``honest``."""
    _edit_exchanges(files, _slowed)
    ttft = statistics.median(t for t in _first_chunks(files) if t is not None) + TTFT_HOP
    _report(files)
    assert _json_of(files, INFERMARK_RAW)["results"][0]["ttft"]["p50"] == pytest.approx(ttft)
    if honest is not None:
        honest.append(ttft)


def test_held_the_slowed_run_is_honest_and_its_ttft_bounded(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held (the control of 3): the slowed run verifies as one account, performance about 95;
    the same exchanges with a TTFT of 1.1 ms claimed are a finding."""
    verdict = _forge(recorded, tmp_path / "honest", _slow_run)
    _honest(verdict)
    assert verdict.scores.performance is not None and 90 < verdict.scores.performance < 99

    def claimed_fast(files: Files) -> None:
        _slow_run(files)
        _report(files, ttft=0.0011)

    verdict = _forge(recorded, tmp_path / "fast", claimed_fast)
    assert any("TTFT p50" in f for f in _findings(verdict, INFERMARK)), verdict.scores


@pytest.mark.parametrize("filler", sorted(FILLERS))
def test_a_filler_event_infermark_does_not_read_does_not_lower_the_ttft_bound(
    recorded: Recorded, tmp_path: Path, filler: str
) -> None:
    assert _infermark_tokens(FILLERS[filler]) == 0  # Infermark's TTFT stays the real one
    honest: list[float] = []

    def edit(files: Files) -> None:
        _slow_run(files, honest)

        def fill(exchanges: Exchanges) -> None:
            for exchange in _performance(exchanges):
                exchange["chunks"].insert(0, {"t": 0.001, "data": FILLERS[filler]})

        _edit_exchanges(files, fill)
        _report(files, ttft=0.0011)  # and one more chunk a request, as the verifier counts

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    score = performance_score(100.0, honest[0], 0)  # throughput is 100 either way
    caught = any("TTFT p50" in f for f in _findings(verdict, INFERMARK))
    assert caught or (verdict.scores.performance or 0.0) <= score, verdict.scores


# --- 4. one visible event on an unterminated last line -------------------------------------------


def _one_event(end: str) -> Callable[[Files], None]:
    """Each performance stream one visible event at its last chunk's time, its line ended by
    ``end``; a report of TTFT 0 (Infermark measured about 2 s)."""

    def edit(files: Files) -> None:
        def one(exchanges: Exchanges) -> None:
            for exchange in _performance(exchanges):
                last = max(chunk["t"] for chunk in exchange["chunks"])
                data = f"data: {_event([{'index': 0, 'delta': {'content': 'Relativity'}}])}{end}"
                assert _infermark_tokens(data) == 1
                exchange["chunks"] = [{"t": last, "data": data}]

        _edit_exchanges(files, one)
        _report(files, ttft=0.0)

    return edit


@pytest.mark.parametrize(
    "end",
    [
        pytest.param("", id="unterminated"),
        pytest.param("\n\n", id="terminated"),
    ],
)
def test_a_last_line_without_its_end_still_bounds_the_ttft(
    recorded: Recorded, tmp_path: Path, end: str
) -> None:
    verdict = _forge(recorded, tmp_path / "bundle", _one_event(end))
    assert any("TTFT p50" in f for f in _findings(verdict, INFERMARK)), verdict.scores


# --- 5. no visible chunk at all ------------------------------------------------------------------


def test_streams_that_showed_nothing_earn_no_ttft_points(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        def empty(exchanges: Exchanges) -> None:
            for exchange in _performance(exchanges):
                exchange["chunks"] = [c for c in exchange["chunks"] if '"content"' not in c["data"]]

        _edit_exchanges(files, empty)
        report = _json_of(files, INFERMARK_RAW)
        report["results"][0].update(tokens_per_second=0.0, ttft=None, itl=None)
        put_report(files, report)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert verdict.scores.performance == 0.0 or _findings(verdict), verdict.scores


# --- 6. a 200 stream Infermark's client fails on -------------------------------------------------

NULL_DELTA = f"data: {_event([{'index': 0, 'delta': None, 'finish_reason': 'length'}])}\n\n"
"""A last event whose ``delta`` is null: Infermark 0.3.0's ``delta.get`` raises on it."""


def _null_delta(files: Files) -> None:
    def edit(exchanges: Exchanges) -> None:
        chunks = _performance(exchanges)[-1]["chunks"]
        chunks.insert(len(chunks) - 1, {"t": chunks[-1]["t"], "data": NULL_DELTA})

    _edit_exchanges(files, edit)


def test_infermarks_client_fails_on_a_null_delta() -> None:
    """What 6 rests on: Infermark's reading raises on the event (its request an error)."""
    with pytest.raises(AttributeError):
        _infermark_tokens(NULL_DELTA)


def test_a_request_infermarks_client_failed_is_not_hidden(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        _null_delta(files)
        _report(files)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert verdict.scores.performance == 0.0 or _findings(verdict), verdict.scores


def _broken_mid_stream(files: Files) -> None:
    """The last Infermark request's stream broken off by the endpoint halfway, as the observer
    records it (its harness's stream closed unfinished too)."""

    def edit(exchanges: Exchanges) -> None:
        last = _performance(exchanges)[-1]
        last["chunks"] = last["chunks"][: len(last["chunks"]) // 2]
        last["error"] = "upstream broke off mid-stream: ConnectionResetError: [Errno 104] reset"

    _edit_exchanges(files, edit)


@pytest.mark.parametrize(
    "failure", [_null_delta, _broken_mid_stream], ids=["null-delta", "broken-mid-stream"]
)
def test_the_honest_report_of_a_request_infermarks_client_failed_holds(
    recorded: Recorded, tmp_path: Path, failure: Callable[[Files], None]
) -> None:
    """Infermark's report as its client makes it: the request an ``unknown`` error (an
    AttributeError; httpx's RemoteProtocolError), its tokens not counted."""

    def edit(files: Files) -> None:
        failure(files)
        exchanges = _performance(lines(files, LOG))
        _report(files, errors=1, error_kind="unknown", chunks=_visible(exchanges[:-1]))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    _honest(verdict)
    assert verdict.scores.performance == 0.0
    # the zero is explained by the exchange that failed, a 200 among them (issue 17 point 4)
    (reason,) = [r for r in verdict.reasons if r.startswith("performance 0: ")]
    last = _performance(lines(forged_files(recorded, failure), LOG))[-1]["id"]
    how = "a stream Infermark's client fails on" if failure is _null_delta else "broke off"
    assert f"exchange {last} (200: " in reason and how in reason, reason


def forged_files(recorded: Recorded, edit: Callable[[Files], None]) -> Files:
    files = dict(recorded[1])
    edit(files)
    return files


# --- held: another concurrency standing in for 1 -------------------------------------------------


def test_a_concurrency_4_run_reported_as_concurrency_true_is_a_finding(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Held: four requests at a time (the recorded exchanges moved into groups of four that
    start together), the report's level ``"concurrency": true`` (``[True] == [1]``, so the
    reader takes it for 1) and its wall their real span: the exchanges one after another take
    four times that wall."""

    def edit(files: Files) -> None:
        def four_at_a_time(exchanges: Exchanges) -> None:
            performance = _performance(exchanges)
            start = performance[0]["started"]
            for group in range(0, len(performance), 4):
                for exchange in performance[group : group + 4]:
                    shift = exchange["started"] - start
                    exchange["started"] -= shift  # chunk times are relative: they move too
                    exchange["ended"] -= shift
                start = max(e["ended"] for e in performance[group : group + 4])

        _edit_exchanges(files, four_at_a_time)
        performance = _performance(lines(files, LOG))
        span = max(e["ended"] for e in performance) - min(e["started"] for e in performance)
        assert span < RECORDED_WALL / 3
        report = _json_of(files, INFERMARK_RAW)
        report["results"][0]["concurrency"] = True
        put_report(files, report)
        _report(files, wall=span + 0.01)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert any("one after another" in f for f in _findings(verdict, INFERMARK)), verdict.scores


# --- held: Infermark JSON that means two things, or another level --------------------------------


def _raw(recorded: Recorded) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(recorded[1][INFERMARK_RAW][0])
    return report


def _failed_level(report: dict[str, Any]) -> dict[str, Any]:
    level: dict[str, Any] = copy.deepcopy(report["results"][0])
    level.update(n_success=19, n_error=1, errors={"HTTP 500": 1})
    return level


def _hostile_reports(report: dict[str, Any]) -> dict[str, bytes]:
    text = json.dumps(report)
    twice = copy.deepcopy(report)
    twice["results"].append(twice["results"][0])
    variants: dict[str, bytes] = {
        # a failed level first, the clean one after: a reader that keeps the last key reads 0
        "results-key-twice": (
            '{"results": ' + json.dumps([_failed_level(report)]) + ", " + text[1:]
        ).encode(),
        "n_error-key-twice": text.replace('"n_error": 0', '"n_error": 1, "n_error": 0').encode(),
        "level-twice": json.dumps(twice).encode(),
    }
    for name, where, value in [
        ("concurrency-string", "concurrency", "1"),
        ("n_error-false", "n_error", False),
        ("n_error-float", "n_error", 0.0),
    ]:
        changed = copy.deepcopy(report)
        changed["results"][0][where] = value
        variants[name] = json.dumps(changed).encode()
    return variants


HOSTILE_REPORTS = (
    "results-key-twice",
    "n_error-key-twice",
    "level-twice",
    "concurrency-string",
    "n_error-false",
    "n_error-float",
)


@pytest.mark.parametrize("variant", HOSTILE_REPORTS)
def test_an_infermark_report_that_means_two_things_is_refused(
    recorded: Recorded, variant: str
) -> None:
    data = _hostile_reports(_raw(recorded))[variant]
    with pytest.raises(OutputsUnreadable):
        read_outputs("infermark", {"infermark.json": data}, ["performance"])


def test_the_recorded_report_reads(recorded: Recorded) -> None:
    """The control of the refusals: the report as recorded reads, 0 errors of 20."""
    outputs = read_outputs(
        "infermark", {"infermark.json": recorded[1][INFERMARK_RAW][0]}, ["performance"]
    )
    assert outputs.metrics["performance"]["errors"] == 0
