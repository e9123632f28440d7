"""Hostile review of 2026-12-07 (2c79cea): the observer records a whole answer that came after
its harness had closed its connection with ``the client disconnected before the answer``
(``audit.observer.Observer._handle``, ``HarnessConnection.gone``), and the benchlocal-cli
first-attempt walk (``verify/_consistency/benchlocal.py``: ``_answered``, ``_first_answers``,
``_options``) is made for every run, such an exchange read as a failed request. Attacked both
ways, with real sockets on 127.0.0.1 for the observer.

Found:

1. Hole: the walk no longer knows whether the run retried time-outs. ``_answered`` makes any
   exchange with an error a transient failure, and ``_first_answers`` lets a first attempt
   follow up to ``--max-transient-retries`` of them as its own retries, so a request that timed
   out is taken as sent again within the attempt whatever the command says. Without
   ``--retry-on-timeout`` benchlocal-cli 0.9.9 ends the attempt on a time-out (``_post_chat``
   raises ``_TransientPostFailure("timeout")``) and, under ``--retry-runaways``, retries the
   scenario: pass@2. Shown as pass@1 (the retry's reply as the first attempt's, no retries
   listed) it is no finding; before the change that late answer was an answer passed over (a
   finding). ADR 0048 says "without it, an attempt with no reply accounts for it"; the code
   does not. Shown end to end through the observer.
2. Hole: a harness that disconnects mid-stream (``the client disconnected mid-stream``) is a
   transient failure too. benchlocal-cli never streams; a harness that does reads as much of
   each answer as it likes, drops the ones it does not want before their end, and shows the one
   it keeps as a first-attempt pass: no finding (the same answer read whole is one). Shown end
   to end through the observer and the reference endpoint.
3. Hole: ``_options`` reads ``BENCHLOCAL_MAX_TRANSIENT_RETRIES`` with ``_count`` (ASCII digits,
   at most four), benchlocal-cli with ``int()``. A value benchlocal-cli takes as a count that
   ``_count`` does not (``+3``, ``00003``, ``-1``, an Arabic-Indic ``3``; ``audit run --env``
   gives it) makes the walk hold no failed request at all: a first attempt that spent its
   transient retries on 5xx (or time-outs) and failed, its retry's pass shown as pass@1, is no
   finding.
4. False mark (not benchlocal-cli's): a harness connection whose reading is paused
   (``HarnessConnection.data_received``: over 1 MiB sent behind the request being answered)
   does not see its client go; the answer is written to a closed socket and recorded as had.

Closed the same day (the tests of 1 to 3 pass): the observer's marks of a harness that went
(``verify.replies.harness_went``: before the answer, before or mid-stream, at the run's end) are
a kind of their own in the walk, an attempt's own retries only under ``--retry-on-timeout``
and otherwise a failure that ends the attempt; ``_count`` is ``max(0, int())`` (0 where
``int()`` raises: benchlocal-cli would not have run); and both options are taken from the pin
set alone, the environment record's variables named in a finding they would have excused.
Later the same day 4 was closed too: ``HarnessConnection.gone`` asks the kernel for the
connection's TCP state (``TCP_INFO``), which holds the client's close behind unread data.

Held (guards below): a late answer is never taken as a run's reply; time-outs under
``--retry-on-timeout`` within ``--max-transient-retries`` (from the command or the
environment), mixed with 429/5xx, an attempt whose retries ran out, repeats, upstream breaks and
exchanges cut by the run's end are no finding, and one failure over the count, or an answer the
harness had, still is; an attempt said to have had no reply excuses no more than its own. Against
the observer: a client that waits (HTTP/1.1, HTTP/1.0, kept alive, pipelined) has its answer with
no error, one that closes (FIN or RST) before it gets the mark and no bytes, one that closes
right after reading keeps no mark; a client that half-closes after its request is taken as gone
(as aiohttp's server did: asyncio closes the transport on EOF) and is sent nothing, so the mark
says what happened. No client behaviour gets an answer written and marked: ``gone`` is read once,
with no await before the write, and never turns back to false.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from audit.demo.reference_endpoint import Behaviour, serve
from audit.observer import Observer, observe
from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER, TransportExchange
from pins import Harness
from tests.engines import EngineServer, _serve
from tests.hostile.test_attacks_2026_12_07_review import (
    _BLOB,
    _PACK,
    COMP,
    ERROR,
    PACK,
    PINNED,
    UP,
    Q,
    _found,
    _reply,
    _run,
)
from verify._consistency.benchlocal import benchlocal_packs
from verify._consistency.checkouts import _Checkout

MID_STREAM = "the client disconnected mid-stream"
RUN_ENDED = "the run ended before the exchange did (the client had disconnected)"
WRONG, RIGHT = "I cannot check the weather.", "It is 23 C in Berlin."


def _held(
    runs: list[dict[str, Any]],
    transport: list[TransportExchange],
    *,
    command: tuple[str, ...] = (),
    given_env: dict[str, str] | None = None,
) -> list[str]:
    """benchlocal_packs' findings for the runs against a transport log the observer wrote
    (``_found``'s world, with the exchanges as recorded)."""
    report = json.dumps({"repeat": 1, "packs": [{"pack_id": PACK, "scenarios": runs}]})
    files = {
        f"components/{COMP}/raw/benchlocal.json": report.encode(),
        f"upstreams/{UP}/files/{_BLOB}": _PACK,
        f"upstreams/{UP}/environment.json": json.dumps(
            {"schema_version": 1, "upstream": UP, "variables": given_env or {}}
        ).encode(),
    }
    harness = Harness(command=PINNED + command, parser="benchlocal-cli", inactivity_s=900,
                      wall_s=7200, env={})  # fmt: skip
    pinned = SimpleNamespace(component_upstreams={COMP: UP}, harnesses={UP: harness})
    checkouts = {UP: _Checkout(UP, [], {f"benchlocal_cli/packs/{PACK}.jsonl": _BLOB})}
    evidence = SimpleNamespace(transport=transport)
    found = benchlocal_packs(evidence, SimpleNamespace(pins=pinned), checkouts, files.get)  # type: ignore[arg-type]
    return [f.message for f in found]


# --- a model behind the observer: each request says how long it takes ----------------------


@contextmanager
def _model() -> Iterator[EngineServer]:
    """A chat endpoint that answers after the request's own ``wait`` seconds, with the
    request's ``say`` (a llama.cpp reply, its ``id`` its own)."""
    count = iter(range(1 << 30))

    def app(method: str, path: str, body: Any) -> tuple[int, Any, str]:
        asked = body if isinstance(body, dict) else {}
        time.sleep(float(asked.get("wait", 0)))
        return 200, _reply(str(asked.get("say", RIGHT)), next(count)), "application/json"

    with _serve(app) as server:
        yield server


def _asked(wait: float = 0.0, say: str = RIGHT, **more: Any) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": Q}],
                       "wait": wait, "say": say, **more}).encode()  # fmt: skip


def _post(body: bytes, version: str = "1.1", *fields: str) -> bytes:
    head = [f"POST /v1/chat/completions HTTP/{version}", "Host: x",
            "Content-Type: application/json", f"Content-Length: {len(body)}", *fields]  # fmt: skip
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _connect(observer: Observer) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", observer.port))
    client.settimeout(5)
    return client


def _reset(client: socket.socket) -> None:
    """Close with an RST, as a client whose socket lingers for 0 seconds."""
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def _one_reply(client: socket.socket) -> tuple[bytes, bytes]:
    """One whole HTTP reply read off the socket (Content-Length framed): head, body."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = client.recv(65536)
        assert piece, f"the connection ended before a reply: {data!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))  # fmt: skip
    while len(body) < length:
        piece = client.recv(65536)
        assert piece
        body += piece
    return head, body[:length]


def _errors(observer: Observer, count: int) -> list[str | None]:
    return [exchange.error for exchange in observer.wait_for(count)]


# --- 1. a time-out taken as retried within the attempt, whatever the run's options ---------


def _timed_out_then_asked_again() -> list[TransportExchange]:
    """benchlocal-cli 0.9.9's first attempt of a scenario under ``--retry-runaways`` and without
    ``--retry-on-timeout``: its request times out (the httpx client closes, ``_post_chat``
    raises ``timeout``), the scenario is retried and the retry's request answered (the log the
    observer writes of it)."""
    with _model() as model, observe(model.url) as observer:
        observer.component = COMP
        with _connect(observer) as client:
            client.sendall(_post(_asked(wait=0.4, say=WRONG)))
            client.settimeout(0.1)
            with pytest.raises(TimeoutError):
                client.recv(1)
        observer.wait_for(1)
        with _connect(observer) as client:
            client.sendall(_post(_asked()))
            _one_reply(client)
        return observer.wait_for(2)


def test_the_observer_marks_the_timed_out_request_and_not_its_retry() -> None:
    late, kept = _timed_out_then_asked_again()
    assert (late.status, late.error, kept.status, kept.error) == (
        200, GONE_BEFORE_THE_ANSWER, 200, None
    )  # fmt: skip
    assert late.response_body is not None and WRONG in late.response_body.data


def test_pass_at_2_after_a_time_out_as_benchlocal_lists_it_is_no_finding() -> None:
    """Held: the first attempt timed out (no reply), its retry passed (pass@2)."""
    log = _timed_out_then_asked_again()
    assert log[1].response_body is not None
    right = json.loads(log[1].response_body.data)
    assert _held([_run(1, False, None, right)], log, command=("--retry-runaways",)) == []


def test_a_time_out_retried_within_the_attempt_is_no_finding() -> None:
    """Held: under ``--retry-on-timeout`` ``_post_chat`` sends the timed-out request again in
    the same attempt, which passes: pass@1."""
    log = _timed_out_then_asked_again()
    assert log[1].response_body is not None
    right = json.loads(log[1].response_body.data)
    assert _held([_run(1, True, right)], log, command=("--retry-on-timeout",)) == []


def test_a_pass_at_2_after_a_time_out_shown_as_pass_at_1_is_a_finding() -> None:
    log = _timed_out_then_asked_again()
    assert log[1].response_body is not None
    right = json.loads(log[1].response_body.data)
    (said,) = _held([_run(1, True, right)], log, command=("--retry-runaways",))
    assert "benchlocal-cli grades a run by its first attempt" in said


# --- 2. a streamed answer read in part and dropped -----------------------------------------


def _streamed(read_whole: bool) -> list[TransportExchange]:
    """A harness that asks for a stream, reads its first event and closes (or reads it all),
    then asks again without a stream and keeps that reply (the reference endpoint, one event a
    word every 20 ms)."""
    asked = {"model": "m", "messages": [{"role": "user", "content": Q}]}
    with serve(Behaviour(chunk_delay=0.02)) as endpoint, observe(endpoint.url) as observer:
        observer.component = COMP
        with _connect(observer) as client:
            client.sendall(_post(json.dumps(asked | {"stream": True}).encode()))
            seen = b""
            while b"data:" not in seen or (read_whole and b"[DONE]" not in seen):
                piece = client.recv(65536)
                assert piece
                seen += piece
            if read_whole:
                while not seen.endswith(b"0\r\n\r\n"):
                    seen += client.recv(65536)
        observer.wait_for(1)
        with _connect(observer) as client:
            client.sendall(_post(json.dumps(asked).encode()))
            _one_reply(client)
        return observer.wait_for(2)


def test_a_stream_read_whole_before_the_pass_is_a_finding() -> None:
    """Held: an answer the harness had, streamed, is an earlier answer the pass passes over."""
    log = _streamed(read_whole=True)
    assert log[0].error is None and log[0].chunks
    assert log[1].response_body is not None
    (said,) = _held([_run(1, True, json.loads(log[1].response_body.data))], log)
    assert "came after 1 earlier answer(s)" in said


def test_a_stream_dropped_after_its_first_words_before_the_pass_is_a_finding() -> None:
    log = _streamed(read_whole=False)
    assert log[0].error == MID_STREAM and log[0].chunks
    assert log[1].response_body is not None
    (said,) = _held([_run(1, True, json.loads(log[1].response_body.data))], log)
    assert "benchlocal-cli grades a run by its first attempt" in said


# --- 3. a transient-retry count benchlocal-cli takes and the walk does not ------------------


@pytest.mark.parametrize("value", ["+3", "00003", "\u0663", "-1"])
def test_a_count_benchlocal_reads_is_the_walk_s_count(value: str) -> None:
    right = _reply(RIGHT, 9)
    log = [(503, ERROR), (503, ERROR), (503, ERROR), (503, ERROR), (200, right)]
    assert int(value) in (3, -1)  # benchlocal-cli's reading: 3 retries (or, -1, none)
    (said,) = _found([_run(1, True, right)], log, pinned_env={
        "BENCHLOCAL_MAX_TRANSIENT_RETRIES": value})  # fmt: skip
    assert "4 failed request(s)" in said


def test_the_same_count_spelled_plainly_is_held() -> None:
    right = _reply(RIGHT, 9)
    log = [(503, ERROR), (503, ERROR), (503, ERROR), (503, ERROR), (200, right)]
    (said,) = _found([_run(1, True, right)], log, pinned_env={
        "BENCHLOCAL_MAX_TRANSIENT_RETRIES": " 3 "})  # fmt: skip
    assert "4 failed request(s)" in said


# --- honest sequences of benchlocal-cli 0.9.9 (no finding) ---------------------------------

GONE = GONE_BEFORE_THE_ANSWER
_LATE = (200, _reply(WRONG, 0), GONE)
_HONEST: dict[str, tuple[list[Any], list[tuple[Any, ...]], tuple[str, ...], dict[str, str]]] = {
    "3 time-outs then a pass, --retry-on-timeout": (
        [_run(1, True, _reply(RIGHT, 9))], [_LATE, _LATE, _LATE, (200, _reply(RIGHT, 9))],
        ("--retry-on-timeout",), {}),
    "time-outs and 429/5xx mixed, --max-transient-retries 5": (
        [_run(1, True, _reply(RIGHT, 9))],
        [_LATE, (429, ERROR), (503, ERROR), _LATE, (500, ERROR), (200, _reply(RIGHT, 9))],
        ("--retry-on-timeout", "--max-transient-retries", "5"), {}),
    "both from the pin set's environment": (
        [_run(1, True, _reply(RIGHT, 9))], [_LATE, (503, ERROR), (200, _reply(RIGHT, 9))],
        (), {"BENCHLOCAL_RETRY_ON_TIMEOUT": " Yes ", "BENCHLOCAL_MAX_TRANSIENT_RETRIES": "2"}),
    "--max-transient-retries 0: the time-out ends the attempt, retried": (
        [_run(1, False, None, _reply(RIGHT, 9))], [_LATE, (200, _reply(RIGHT, 9))],
        ("--retry-on-timeout", "--max-transient-retries=0", "--retry-runaways"), {}),
    "retries spent on time-outs, the scenario retried, pass@2": (
        [_run(1, False, None, _reply(RIGHT, 9))],
        [_LATE, _LATE, _LATE, _LATE, (200, _reply(RIGHT, 9))],
        ("--retry-on-timeout", "--retry-runaways"), {}),
    "a time-out cut by the run's end, then a pass": (
        [_run(1, True, _reply(RIGHT, 9))], [(None, None, RUN_ENDED), (200, _reply(RIGHT, 9))],
        ("--retry-on-timeout",), {}),
    "an upstream that broke, 502, sent again": (
        [_run(1, True, _reply(RIGHT, 9))],
        [(502, ERROR, "ConnectionResetError: reset"), (200, _reply(RIGHT, 9))], (), {}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(_HONEST), ids=list(_HONEST))
def test_an_honest_run_is_no_finding(case: str) -> None:
    runs, log, command, env = _HONEST[case]
    assert _found(runs, log, command=command, pinned_env=env) == []


def test_what_only_the_environment_record_says_is_not_taken() -> None:
    """Closed the same day: the variables that allow a first attempt more failed requests are
    taken from the pin set alone; the environment record (``audit run --env``, the publisher's
    to write) saying so is named in the finding it would have excused."""
    runs, log, _, env = _HONEST["both from the pin set's environment"]
    (said,) = _found(runs, log, given_env=env)
    assert "came after 0 earlier answer(s) and 2 failed request(s)" in said
    # named: the variable that would have excused it (its count of 2 allows less than 3)
    assert (
        "(the harness's environment record sets BENCHLOCAL_RETRY_ON_TIMEOUT, which the pin set "
        "does not: not taken)"
    ) in said
    # the record repeating the pin set's values is no finding
    assert _found(runs, log, pinned_env=env, given_env=env) == []


@pytest.mark.parametrize("late", ["late, marked", "late, cut by the run's end"])
def test_repeats_after_a_time_out_are_no_finding(late: str) -> None:
    right = _reply(RIGHT, 9)
    first = _LATE if late == "late, marked" else (None, None, RUN_ENDED)
    runs = [_run(1, False, None), _run(2, True, right)]
    assert _found(runs, [first, (200, right)], repeat=2, command=("--repeat", "2")) == []


# --- what a publisher could try with the mark (held) ---------------------------------------


def test_a_late_answer_is_never_a_run_s_reply() -> None:
    """The harness never had it: a run graded on it is graded on no reply of the log's."""
    late = _reply(RIGHT, 0)
    (said,) = _found([_run(1, True, late)], [(200, late, GONE)], command=("--retry-on-timeout",))
    assert "no reply of" in said


def test_one_time_out_over_the_count_is_a_finding() -> None:
    right = _reply(RIGHT, 9)
    log = [_LATE, _LATE, (503, ERROR), _LATE, (200, right)]
    (said,) = _found([_run(1, True, right)], log, command=("--retry-on-timeout",))
    assert "4 failed request(s)" in said


def test_an_answer_the_harness_had_among_time_outs_is_a_finding() -> None:
    right = _reply(RIGHT, 9)
    log = [_LATE, (200, _reply(WRONG, 1)), _LATE, (200, right)]
    (said,) = _found([_run(1, True, right)], log, command=("--retry-on-timeout",))
    assert "came after 1 earlier answer(s)" in said


def test_a_repeat_said_to_have_timed_out_excuses_its_own_only() -> None:
    """A repeat listed with no reply may leave one answer and its own failures (1 + 3) behind;
    the next repeat's pass may not pass over two answers, nor five failures."""
    right = _reply(RIGHT, 9)
    runs = [_run(1, False, None), _run(2, True, right)]
    command = ("--repeat", "2", "--retry-on-timeout")
    answers = [(200, _reply(WRONG, 0)), (200, _reply(WRONG, 1)), (200, right)]
    (said,) = _found(runs, answers, repeat=2, command=command)
    assert "came after 2 earlier answer(s)" in said
    # the time-out's own four (1 + 3), the passing attempt's three, and one more
    failures = [_LATE] * 8 + [(200, right)]
    (said,) = _found(runs, failures, repeat=2, command=command)
    assert "8 failed request(s)" in said


# --- real clients against the observer ------------------------------------------------------


@pytest.mark.parametrize("version", ["1.1", "1.0"])
@pytest.mark.parametrize("how", ["waits", "closes", "resets"])
def test_the_mark_is_set_exactly_when_nothing_was_written(version: str, how: str) -> None:
    with _model() as model, observe(model.url) as observer:
        client = _connect(observer)
        client.sendall(_post(_asked(wait=0.3), version))
        if how == "waits":
            head, body = _one_reply(client)
            assert head.startswith(f"HTTP/{version} 200".encode()) and RIGHT.encode() in body
            client.close()
        elif how == "closes":
            client.close()
        else:
            _reset(client)
        (error,) = _errors(observer, 1)
    assert error == (None if how == "waits" else GONE)


@pytest.mark.parametrize("how", ["closes", "resets"])
def test_a_client_that_closes_as_soon_as_it_has_read_keeps_no_mark(how: str) -> None:
    """The record lands before the write: whatever the client does once it has the answer."""
    with _model() as model, observe(model.url) as observer:
        client = _connect(observer)
        client.sendall(_post(_asked(wait=0.05), "1.1", "Connection: close"))
        assert client.recv(1) == b"H"
        if how == "closes":
            client.close()
        else:
            _reset(client)
        (error,) = _errors(observer, 1)
    assert error is None


def test_a_kept_alive_connection_marks_only_the_request_it_left() -> None:
    with _model() as model, observe(model.url) as observer:
        with _connect(observer) as client:
            client.sendall(_post(_asked()))
            _one_reply(client)
            client.sendall(_post(_asked(wait=0.3)))
        assert _errors(observer, 2) == [None, GONE]


def test_a_pipelining_client_that_leaves_after_its_first_answer() -> None:
    with _model() as model, observe(model.url) as observer:
        with _connect(observer) as client:
            client.sendall(_post(_asked(wait=0.05)) + _post(_asked(wait=0.3)))
            _one_reply(client)
        assert _errors(observer, 2) == [None, GONE]


def test_a_client_that_half_closes_is_sent_nothing_and_marked() -> None:
    """A client that shuts its side after its request (``shutdown(SHUT_WR)``) is taken as
    gone, as aiohttp's server took it (no ``eof_received`` that keeps the connection open):
    it is sent nothing, so the mark says what happened (no benchlocal-cli client does this)."""
    with _model() as model, observe(model.url) as observer:
        with _connect(observer) as client:
            client.sendall(_post(_asked(wait=0.3)))
            client.shutdown(socket.SHUT_WR)
            assert client.recv(65536) == b""
        (error,) = _errors(observer, 1)
    assert error == GONE


def test_no_client_has_an_answer_marked_as_not_had() -> None:
    """Many clients closing around the moment their answer comes: each has bytes of it
    exactly when its exchange has no mark."""
    had: dict[int, bool] = {}

    def one(index: int, observer: Observer) -> None:
        client = _connect(observer)
        client.sendall(_post(_asked(wait=0.1, say=f"n{index}")))
        client.settimeout(0.06 + index * 0.0025)
        try:
            had[index] = bool(client.recv(65536))
        except TimeoutError:
            had[index] = False
        _reset(client)

    with _model() as model, observe(model.url) as observer:
        threads = [threading.Thread(target=one, args=(i, observer)) for i in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        exchanges = observer.wait_for(32)
    for exchange in exchanges:
        assert exchange.response_body is not None
        index = int(json.loads(exchange.response_body.data)["choices"][0]["message"]["content"][1:])
        if had[index]:
            assert exchange.error is None, index


def test_a_client_gone_while_its_connection_is_paused_is_marked() -> None:
    with _model() as model, observe(model.url) as observer:
        with _connect(observer) as client:
            bulk = b"x" * ((1 << 20) + 4096)
            client.sendall(_post(_asked(wait=0.4)) + _post(bulk))
            time.sleep(0.1)
        first = observer.wait_for(1)[0]
    assert first.error == GONE


def test_an_answer_to_a_client_that_went_is_kept_whole() -> None:
    with _model() as model, observe(model.url) as observer:
        req = urllib.request.Request(  # noqa: S310 - loopback test server
            observer.url + "/v1/chat/completions", data=_asked(wait=0.3, say="kept"),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with pytest.raises(OSError):
            urllib.request.urlopen(req, timeout=0.1)  # noqa: S310
        (exchange,) = observer.wait_for(1)
    assert exchange.error == GONE and exchange.status == 200
    assert exchange.response_body is not None and "kept" in exchange.response_body.data
