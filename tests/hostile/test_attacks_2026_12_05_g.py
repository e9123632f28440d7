"""Hostile tests of 2026-12-05 (g): attacks on the day's fixes (``git log 50bf573..HEAD``).

Every bundle attack starts from the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar: policy off, serialization
``chat_template_kwargs.enable_thinking = false``), edits it as an adversarial publisher, and
reseals it with claims that repeat its own replay (``tests.gate_kit.forged``): integrity holds and
the claims match, so only the gates and the cross-checks can tell. The helpers are those of
tests/hostile/test_attacks_2026_12_05_transport.py.

Holes (each test asserts the safe behaviour and failed on the code as found; all eight fixed
the same day: 1, 2 and 5 in ``verify.replies._stream_events`` (a CR ending a chunk and an LF
starting the next are one line end, each data line kept with its time, a leading byte order
mark skipped; ``body_json`` skips one too), 3 by ``_consistency._infermark`` (at concurrency 1
the wall holds every exchange's duration one after another), 4 by reading the model of a
nested ``message``, 6 by ``verify._facts.asks_a_probe`` reading the parsed request (parsed once
with the request facts), 7 by ``pins._model.Harness._known_placeholders`` (a data name of
digits alone), 8 by ``audit.parsers.MAX_OUTPUT_BYTES`` and ``MAX_OUTPUTS``):

1. SSE framing (``replies._stream_events``): a CRLF line break split between two chunks (CR
   ending one, LF starting the next) is read as two breaks, the second a blank line that
   dispatches the event so far. An event whose JSON spans two ``data:`` lines, its first line
   ended by a CR that closes a chunk, is cut in two halves that are no JSON: both are dropped.
   The openai client (and the specification: CRLF is one line end) reads one event, so a
   ``reasoning_content`` the harness got passes ``reasoning_contamination``.
2. SSE framing and time (``_stream_events`` -> ``_consistency._infermark``): an event is timed by
   the chunk of its blank line; events whose blank line never comes are dispatched at the end,
   timed -1.0, which the TTFT bound drops (``first_visible >= 0``). A forger who removes the
   blank lines of the performance streams (the per-line fallback of ``_dispatch`` still reads
   every event, so the chunk count is unchanged) claims any TTFT: 0.0001 s passes where the
   observer saw 0.016 s (the same claim on the untouched framing is a finding: control test).
3. ``_consistency._span``: the bound is max(end or last chunk) - min(start); the starts
   themselves are never checked (not ordered by id, no overlap in a ``-c 1`` run): the 20
   performance exchanges moved to start 1 ms apart make a span of 2.3 s, and a report of the
   recorded 4,680 chunks over 2.29 s (2,044 chunk/s instead of 120) passes, no finding.
4. The messages API stream (``replies._read_value``): its model is named only in
   ``message_start``'s ``message.model``, which ``_read_message`` does not read: another model
   answering ``/v1/messages`` (a fallback provider) passes ``network_isolation``.
5. A JSON reply with a UTF-8 byte order mark: ``body_json`` decodes to text and ``json.loads``
   refuses the BOM, and the new body-as-stream fallback does not strip it either, so the
   reply is unread; ``json.loads`` of the bytes (what httpx's ``Response.json`` and so the
   openai client do) reads it. Its ``reasoning_content`` passes ``reasoning_contamination``.
6. ``_facts.asks_a_probe`` looks for the prompt's bytes before parsing: a retried probe's failed
   first attempt relabelled ``coding``, its request the same JSON value with one character
   written as a ``\\u`` escape (``\\u0052EADY``), is no probe to it; ``transport_evidence`` and
   ``direct_response`` pass.
7. ``pins._model.Harness._known_placeholders`` accepts ``{data[2024]}`` for a pinned data
   directory named ``2024`` (``DataName`` allows digits first), but ``str.format`` reads an
   all-digit index as an int: ``"{data[2024]}".format(data={"2024": ...})`` is KeyError 2024,
   the very stop midway the validator was added to prevent (``audit/run.py`` ``_execute``).
8. ``audit.parsers.collect_outputs`` reads every regular output whole, without a size bound: a
   harness's 16 GiB sparse file (no disk, no memory for the harness) raises MemoryError in the
   runner (``_Walk.entry``: ``file.read()``), which ``audit/run.py _run`` answers by removing the
   scratch, the run's evidence with it.

Held: a ``data:`` event followed by ``data: [DONE]`` without a blank line is still read
(``_dispatch`` falls back to each line); an output swapped for a FIFO between ``stat`` and
``open`` is refused at once (``O_NONBLOCK`` then ``fstat``), no hang; the TTFT claim on the
recorded framing (control of 2); the new SSE parser stays linear on 1-character chunks, CR
floods, ``data:`` floods and unterminated lines (measured, not kept as a test); a probe request
equal as JSON but ``max_tokens`` written ``1024.0`` is harmless (servers read the same value);
the tallies' model rule ("x" vs "evil/x" accepted) is by design, an endpoint's alias being the
publisher's choice either way.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bundle_schema.models import TransportExchange, Verdict
from tests.data.hostile.kit import Files, lines
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_05_transport import (
    CODING_EXCHANGE,
    INFERMARK,
    INFERMARK_RAW,
    LOG,
    MODEL,
    REASONING_STREAM,
    _edit_exchange,
    _edit_exchanges,
    _findings,
    _forge,
    _gate,
    _json_of,
    _performance,
    _streamed,
    _utf8,
    _visible,
    put_report,
    retried_probe,
)
from tests.paths import ROOT
from verify.replies import read_exchange


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _report(files: Files, *, ttft: float | None = None, wall: float | None = None) -> None:
    """Infermark's raw report (and the record and metrics its reader derives) with every TTFT
    statistic ``ttft``, or the level's wall ``wall`` over the streams' visible chunks."""
    report = _json_of(files, INFERMARK_RAW)
    level = report["results"][0]
    if ttft is not None:
        level["ttft"] = dict.fromkeys(level["ttft"], ttft) | {"std": 0.0}
    if wall is not None:
        level["total_duration"] = wall
        level["tokens_per_second"] = _visible(lines(files, LOG)) / wall
    put_report(files, report)


# --- 1. CRLF split between two chunks -----------------------------------------------------------


def test_a_crlf_split_between_chunks_loses_no_event(recorded: Recorded, tmp_path: Path) -> None:
    event = json.dumps(REASONING_STREAM[1], indent=1).split("\n")
    text = "".join(f"data: {line}\r\n" for line in event) + "\r\n"
    cut = text.index("\r\n") + 1  # the chunk ends on the first line's CR
    chunks = [{"data": f"data: {json.dumps(REASONING_STREAM[0])}\r\n\r\n", "t": 0.05},
              {"data": text[:cut], "t": 0.06}, {"data": text[cut:], "t": 0.061}]  # fmt: skip
    chunks += [
        {"data": f"data: {json.dumps(e)}\r\n\r\n", "t": 0.07 + 0.01 * i}
        for i, e in enumerate(REASONING_STREAM[2:])
    ]
    chunks.append({"data": "data: [DONE]\r\n\r\n", "t": 0.1})
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _streamed(f, chunks))
    assert _gate(verdict, "reasoning_contamination") == "fail"


def test_an_event_before_done_without_a_blank_line_is_read(recorded: Recorded) -> None:
    """Held: ``data: {...}`` then ``data: [DONE]`` with no blank line between (one event whose
    data is no JSON) is read line by line."""
    (logged,) = [e for e in lines(recorded[1], LOG) if e["id"] == CODING_EXCHANGE]
    data = f"data: {json.dumps(REASONING_STREAM[1])}\ndata: [DONE]\n\n"
    exchange = TransportExchange.model_validate(
        logged | {"response_body": None, "chunks": [{"data": data, "t": 0.05}]}
    )
    assert read_exchange(exchange).contaminated


# --- 2, 3. Infermark's bounds -------------------------------------------------------------------


def _without_blank_lines(files: Files) -> None:
    def strip(exchanges: list[dict[str, Any]]) -> None:
        for exchange in _performance(exchanges):
            for chunk in exchange["chunks"]:
                chunk["data"] = chunk["data"].replace("\n\n", "\n")

    _edit_exchanges(files, strip)


def test_a_ttft_faster_than_the_streams_is_a_finding(recorded: Recorded, tmp_path: Path) -> None:
    """Held (the control of hole 2): on the recorded framing, a claimed TTFT p50 of 0.1 ms
    against the 16 ms the observer saw is a finding."""
    verdict = _forge(recorded, tmp_path / "bundle", lambda f: _report(f, ttft=0.0001))
    assert any("TTFT p50" in f for f in _findings(verdict, INFERMARK))


def test_removing_the_blank_lines_does_not_lift_the_ttft_bound(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        _without_blank_lines(files)
        _report(files, ttft=0.0001)

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert any("TTFT p50" in f for f in _findings(verdict, INFERMARK)), verdict.scores


def test_performance_exchanges_moved_together_do_not_shorten_the_wall(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(files: Files) -> None:
        def squeeze(exchanges: list[dict[str, Any]]) -> None:
            performance = _performance(exchanges)
            first = performance[0]["started"]
            for number, exchange in enumerate(performance):
                shift = exchange["started"] - (first + 0.001 * number)
                exchange["started"] -= shift  # chunk times are relative: they move too
                exchange["ended"] -= shift

        _edit_exchanges(files, squeeze)
        performance = _performance(lines(files, LOG))
        span = max(e["ended"] for e in performance) - min(e["started"] for e in performance)
        assert span < 2.5
        _report(files, wall=round(span + 0.01, 3))

    verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert _findings(verdict, INFERMARK) or verdict.integrity.status != "ok"


# --- 4, 5. replies the gates do not read --------------------------------------------------------


def test_a_messages_stream_of_another_model_fails_isolation(
    recorded: Recorded, tmp_path: Path
) -> None:
    request = {"model": MODEL, "max_tokens": 256, "stream": True,
               "chat_template_kwargs": {"enable_thinking": False},
               "messages": [{"role": "user", "content": "Write a Python function."}]}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "message_start",
         "message": {"id": "msg_1", "type": "message", "role": "assistant",
                     "model": "claude-sonnet-4-5", "content": [], "stop_reason": None,
                     "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "def f(): return []"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    chunks = [
        {"data": f"event: {e['type']}\ndata: {json.dumps(e)}\n\n", "t": 0.05 + 0.01 * i}
        for i, e in enumerate(events)
    ]
    verdict = _forge(
        recorded,
        tmp_path / "bundle",
        lambda f: _streamed(f, chunks, path="/v1/messages", request_body=_utf8(request)),
    )
    assert _gate(verdict, "network_isolation") == "infra"


def test_a_reply_after_a_byte_order_mark_is_read(recorded: Recorded, tmp_path: Path) -> None:
    reply = {"id": "chatcmpl-x", "object": "chat.completion", "model": MODEL,
             "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": "def f(): return []",
                                      "reasoning_content": "The user wants a function."}}],
             "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}}  # fmt: skip
    body = "\ufeff" + json.dumps(reply)
    assert json.loads(body.encode())["choices"][0]["message"]["reasoning_content"]  # as a client

    def edit(exchange: dict[str, Any]) -> None:
        exchange.update(chunks=[], response_body={"encoding": "utf-8", "data": body},
                        response_headers={"content-type": "application/json"})  # fmt: skip

    verdict = _forge(
        recorded, tmp_path / "bundle", lambda f: _edit_exchange(f, CODING_EXCHANGE, edit)
    )
    assert _gate(verdict, "reasoning_contamination") == "fail"


# --- 6. a retried probe, its prompt escaped -----------------------------------------------------


def test_a_retried_probe_with_an_escaped_prompt_is_an_orphan(
    recorded: Recorded, tmp_path: Path
) -> None:
    def disguise(first: dict[str, Any]) -> None:
        first["component"] = "coding"  # the failed attempt, under a selected harness
        sent = first["request_body"]["data"].replace("READY", "\\u0052EADY")
        assert json.loads(sent) == json.loads(first["request_body"]["data"])
        first["request_body"] = _utf8(sent)

    def edit(files: Files) -> None:
        retried_probe(files, disguise)

    verdict: Verdict = _forge(recorded, tmp_path / "bundle", edit)
    assert (
        _gate(verdict, "direct_response") != "pass"
        or _gate(verdict, "transport_evidence") != "pass"
        or _findings(verdict)
    )


# --- 7. placeholders ----------------------------------------------------------------------------


def test_a_data_placeholder_the_validator_accepts_is_one_the_runner_fills() -> None:
    from pins._model import Harness  # noqa: PLC0415

    fields = {"command": ["{python}", "-m", "bench", "--data", "{data[2024]}", "{out}"],
              "parser": "infermark", "inactivity_s": 60, "wall_s": 600,
              "data": {"2024": "sha256:" + "0" * 64}}  # fmt: skip
    try:
        harness = Harness.model_validate(fields)
    except ValidationError:
        return  # refused at load: safe
    values = {"python": "py", "endpoint": "http://127.0.0.1:1", "model": MODEL, "out": "/o",
              "data": {"2024": "/data/2024"}}  # fmt: skip
    assert [part.format(**values) for part in harness.command][4] == "/data/2024"


# --- 8. collect_outputs -------------------------------------------------------------------------

_COLLECT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from pathlib import Path
from audit.parsers import collect_outputs
try:
    files, refused = collect_outputs(Path(sys.argv[1]))
except MemoryError:
    print("MemoryError")
else:
    print(sorted(files), refused)
"""


def test_a_huge_sparse_output_is_refused_by_name(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "results.json").write_text("{}")
    with (out / "sub" / "huge.json").open("wb") as file:
        file.truncate(16 << 30)  # sparse: no disk, no memory for the harness that made it
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, str(out)],
        capture_output=True, text=True, timeout=60, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert "MemoryError" not in done.stdout, done.stdout
    assert "huge.json" in done.stdout and "results.json" in done.stdout, done.stdout


def test_an_output_swapped_for_a_fifo_after_its_stat_does_not_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held: the file stat saw is a FIFO when opened (the race, made certain by a stat that
    still says regular file): refused at once, no reader blocks on a writer that never comes."""
    from audit import parsers  # noqa: PLC0415

    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "results.json")
    real_stat = os.stat

    def stat_before_the_swap(name: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        found = real_stat(name, *args, **kwargs)
        if name == "results.json":
            fields = list(found)
            fields[0] = stat.S_IFREG | 0o644
            return os.stat_result(fields)
        return found

    monkeypatch.setattr(parsers.os, "stat", stat_before_the_swap)
    answer: list[Any] = []
    worker = threading.Thread(target=lambda: answer.append(parsers.collect_outputs(out)))
    worker.daemon = True
    worker.start()
    worker.join(10)
    assert answer, "collect_outputs blocked on the FIFO"
    files, refused = answer[0]
    assert files == {} and any("no longer a regular file" in r for r in refused), refused
