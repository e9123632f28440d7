"""A publisher's review of Spark Bench's code scores held to the transport log
(``verify/_consistency/spark.py`` ``_spark_answers``, ``verify/sparkbench.py``; ADR 0050).

Every attack starts from the recorded real bundle (examples/recorded/llamacpp-smollm2-135m.tar:
every Spark code score 0; both answers of CODE-01 (exchanges 213, 214) and one of CODE-03
(exchange 217) do not compile; CODE-05's (221, 222) do) and is resealed with claims equal to its
replay, so only the cross-checks can tell. The publisher raises a score (or the repeat
reliability) without writing a new model answer: the answer text Spark Bench reads is left as it
was, and only what is around it (the status, the stream's framing, a line Spark's client reads
and drops, which exchange asked what, which files of the checkout are kept) is edited.

Holes found (8), each asserted as the safe behaviour and closed the same day. In each, the
edited answer scores 0 for Spark Bench whatever the edit leaves unknown (the client raises, or it
reads the same text, which does not compile), yet the reading left the answer unknown and the
forged score stood: a status under 200, or no status and no error (now an error reply: urllib
takes no other); a line past ``int()``'s digits, or nested past any stack, or a count at a
float's limit (now read both ways the client may read it); the reliability bound lifted the same
way; the requests of two scenarios swapped (now held to the order Spark asks them in); the
harness's file left out of the bundle (now a finding: a file the check reads is never optional).
Also closed: the harness's environment record left out (a finding: whether code compiles
depends on its Python).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundle_schema.canonical import canonical_bytes
from bundle_schema.models.records import TransportExchange, stream_chunks
from tests.data.hostile.kit import Files, lines, put_lines
from tests.gate_kit import Recorded, unpacked_recorded
from tests.hostile.test_attacks_2026_12_06_flip import SPARK_CSV, _findings, _verdict
from tests.hostile.test_spark_answers import _passed
from verify.sparkbench import NO_COMPILE, spark_reply

LOG = "transport/exchanges.jsonl"
PREFIX = (
    f"record_disagrees {SPARK_CSV}: evidence {SPARK_CSV!r}: "
    "code scenarios against the transport log: "
)
CODE_01 = {213, 214}
CODE_05 = {221, 222}
FORGED_PASS = (
    PREFIX + "CODE-01 scores 1; its answers earn at most 0 (exchange 213: the answer's code "
    "does not compile, exchange 214: the answer's code does not compile)"
)

Edit = Callable[[Files], None]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


def _exchanges(ids: set[int], change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(files: Files) -> None:
        exchanges = lines(files, LOG)
        for exchange in exchanges:
            if exchange["id"] in ids:
                change(exchange)
        put_lines(files, LOG, exchanges)

    return edit


def _both(*edits: Edit) -> Edit:
    def edit(files: Files) -> None:
        for each in edits:
            each(files)

    return edit


def _spark_findings(verdict: Any) -> list[str]:
    return [f for f in _findings(verdict) if f.startswith(PREFIX)]


def _reframed(
    transform: Callable[[bytes], bytes], cuts: Callable[[bytes], list[int]]
) -> Callable[[dict[str, Any]], None]:
    """The exchange's stream as the bytes ``transform`` gives, arrived in pieces cut at ``cuts``
    (the chunks recorded as the observer records them, :func:`stream_chunks`)."""

    def change(exchange: dict[str, Any]) -> None:
        body = transform(b"".join(c["data"].encode() for c in exchange["chunks"]))
        last = exchange["chunks"][-1]["t"]
        points = sorted({0, *cuts(body), len(body)})
        pieces = [
            (last * n / len(points), body[a:b])
            for n, (a, b) in enumerate(itertools.pairwise(points))
        ]
        exchange["chunks"] = [c.model_dump(mode="json") for c in stream_chunks(pieces)]

    return change


def _every(step: int) -> Callable[[bytes], list[int]]:
    return lambda body: list(range(step, len(body), step))


# --- what holds --------------------------------------------------------------------------------


def _holds_with_code_05_passed(
    recorded: Recorded, tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    """CODE-05's two exchanges changed by ``change`` and its pass written as Spark would: an
    honest variant, no finding."""
    edit = _both(_exchanges(CODE_05, change), _passed(("CODE-05", "1.0")))
    honest = _verdict(recorded, tmp_path / "honest", edit)
    assert honest.integrity.status == "ok", _findings(honest)


def test_a_lone_surrogate_after_done_is_no_record(recorded: Recorded, tmp_path: Path) -> None:
    """A chunk whose text holds a lone surrogate no raw bytes explain would leave the answer
    unknown (``Chunk.received`` raises); one added after ``[DONE]`` (which Spark never reads)
    is no canonical JSON: the transport log is refused as a record."""

    def change(exchange: dict[str, Any]) -> None:
        exchange["chunks"][-1]["data"] += "\ud800"

    def edit(files: Files) -> None:
        out = []
        for exchange in lines(files, LOG):
            if exchange["id"] in CODE_01:
                change(exchange)
                out.append(json.dumps(exchange, sort_keys=True, separators=(",", ":")).encode())
            else:
                out.append(canonical_bytes(exchange))
        files[LOG] = (b"".join(x + b"\n" for x in out), files[LOG][1])

    verdict = _verdict(recorded, tmp_path / "forged", _both(edit, _passed(("CODE-01", "1.0"))))
    assert verdict.integrity.status != "ok"
    assert any(f.startswith(f"record_invalid {LOG}") for f in _findings(verdict))


def _crlf(body: bytes) -> bytes:
    return body.replace(b"\n", b"\r\n")


def _after_cr(body: bytes) -> list[int]:
    return [i + 1 for i in range(len(body)) if body[i : i + 1] == b"\r"]  # CR | LF


def test_crlf_framing_cut_between_cr_and_lf_is_read(recorded: Recorded, tmp_path: Path) -> None:
    """The streams re-framed with CRLF line ends, every chunk cut between CR and LF: Spark's
    client splits at LF and strips, so its answers are the same. CODE-01's forged pass is still
    found, and CODE-05's honest pass (its answers compile) still holds."""
    reframed = _reframed(_crlf, _after_cr)
    forged = _verdict(
        recorded,
        tmp_path / "forged",
        _both(_exchanges(CODE_01, reframed), _passed(("CODE-01", "1.0"))),
    )
    assert _spark_findings(forged) == [FORGED_PASS]
    _holds_with_code_05_passed(recorded, tmp_path, reframed)


_FENCE_NEWLINE = b'{"content": "\\n"}'
_COMMENT = '{"content": "\\n# caf\u00e9 \u2713\\n"}'.encode()


def _commented(body: bytes) -> bytes:
    """A comment of non-ASCII text added at the top of the code (after the fence's newline):
    code that compiled still does, and code that did not still does not."""
    assert _FENCE_NEWLINE in body
    return body.replace(_FENCE_NEWLINE, _COMMENT, 1)


def _inside_characters(body: bytes) -> list[int]:
    e_acute, check = body.index("\u00e9".encode()), body.index("\u2713".encode())
    return [e_acute + 1, check + 1, check + 2, *range(97, len(body), 97)]


def test_a_chunk_cut_inside_a_utf8_character_is_read(recorded: Recorded, tmp_path: Path) -> None:
    """An honest answer with non-ASCII text in its code, its stream cut inside the characters
    (the chunks then carry their raw bytes): CODE-05's answers still compile (no finding), and
    CODE-01's still do not."""
    reframed = _reframed(_commented, _inside_characters)
    exchanges = {e["id"]: e for e in lines(recorded[1], LOG)}
    for number, why in ((221, None), (213, NO_COMPILE)):
        exchange = json.loads(json.dumps(exchanges[number]))
        reframed(exchange)
        assert any("raw" in c for c in exchange["chunks"])
        reply = spark_reply(TransportExchange.model_validate(exchange))
        assert reply is not None
        assert reply.python == why
    _holds_with_code_05_passed(recorded, tmp_path, reframed)


def _sse_variants(body: bytes) -> bytes:
    """The same events with ``event:`` and ``id:`` fields, ``data:`` with no space, and comment
    lines (keep-alives) between them: Spark's client reads ``data:`` lines only."""
    body = body.replace(b"data: {", b"event: message\nid: 7\ndata:{")
    return b": keep-alive\n\n" + body.replace(b"\n\n", b"\n\n: ping\n\n")


def test_stream_framing_variants_are_read(recorded: Recorded, tmp_path: Path) -> None:
    """Honest server-sent-event variants (CODE-05 passed) are no finding; the same framing of
    CODE-01's answers does not hide that they do not compile."""
    reframed = _reframed(_sse_variants, _every(41))
    _holds_with_code_05_passed(recorded, tmp_path, reframed)
    forged = _verdict(
        recorded,
        tmp_path / "forged",
        _both(_exchanges(CODE_01, reframed), _passed(("CODE-01", "1.0"))),
    )
    assert _spark_findings(forged) == [FORGED_PASS]


def test_an_observer_retry_note_is_no_finding(recorded: Recorded, tmp_path: Path) -> None:
    """An exchange the observer sent twice (its first attempt failed before any response) is
    one exchange, with the retry note among its request headers: CODE-05's pass holds."""

    def retried(exchange: dict[str, Any]) -> None:
        exchange["request_headers"]["x-evidence-retry"] = (
            "2; the first attempt failed before any response: ConnectionResetError: reset"
        )

    _holds_with_code_05_passed(recorded, tmp_path, retried)


def _escaped(value: Any) -> str:
    """``value`` as JSON with every character of its strings a unicode escape."""
    if isinstance(value, str):
        units = value.encode("utf-16-be")
        codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
        return '"' + "".join(f"\\u{code:04x}" for code in codes) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_escaped(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_escaped(k)}: {_escaped(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _respelled(exchange: dict[str, Any]) -> None:
    """The request body written otherwise, its values the same: keys in reverse order, every
    character of its strings a unicode escape, ``max_tokens`` given twice (the first value
    another, the last, which Python's parser and the observer's keep, the same)."""
    request = json.loads(exchange["request_body"]["data"])
    parts = []
    for key in reversed(list(request)):
        if key == "max_tokens":
            parts.append(f'"max_tokens": 4096, "max_tokens": {request[key]}')
        else:
            parts.append(f"{_escaped(key)}: {_escaped(request[key])}")
    data = "{" + ", ".join(parts) + "}"
    assert json.loads(data) == request
    exchange["request_body"]["data"] = data


def test_request_bodies_spelled_otherwise_still_ask_the_scenario(
    recorded: Recorded, tmp_path: Path
) -> None:
    """CODE-01's requests respelled (:func:`_respelled`): still CODE-01 asked twice, its
    answers still do not compile, and its forged pass is still found."""
    edit = _both(_exchanges(CODE_01, _respelled), _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert _spark_findings(verdict) == [FORGED_PASS]


# --- holes: the answer left unknown where Spark Bench surely scored it 0 ---------------------


def test_a_status_under_200_hides_answers_that_do_not_compile(
    recorded: Recorded, tmp_path: Path
) -> None:
    edit = _both(_exchanges(CODE_01, lambda e: e.update(status=199)), _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "CODE-01 scores 1;" in f]


def test_no_status_and_no_error_hides_answers_that_do_not_compile(
    recorded: Recorded, tmp_path: Path
) -> None:
    edit = _both(
        _exchanges(CODE_01, lambda e: e.update(status=None, error=None)),
        _passed(("CODE-01", "1.0")),
    )
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "CODE-01 scores 1;" in f]


def _before_done(line: bytes) -> Callable[[dict[str, Any]], None]:
    """A ``data:`` line added in the last chunk, before ``[DONE]``: the answer text is not
    changed by it (Spark's client either raises on it or reads no content from it)."""

    def change(exchange: dict[str, Any]) -> None:
        last = exchange["chunks"][-1]
        assert last["data"] == "data: [DONE]\n\n"
        last["data"] = line.decode() + "\n\n" + last["data"]

    return change


def test_an_event_past_the_integer_digits_hides_answers_that_do_not_compile(
    recorded: Recorded, tmp_path: Path
) -> None:
    line = b'data: {"padding": ' + b"1" * 5000 + b"}"
    edit = _both(_exchanges(CODE_01, _before_done(line)), _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "CODE-01 scores 1;" in f]


def test_a_deep_array_event_hides_answers_that_do_not_compile(
    recorded: Recorded, tmp_path: Path
) -> None:
    line = b"data: " + b"[" * 100_000 + b"]" * 100_000
    edit = _both(_exchanges(CODE_01, _before_done(line)), _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "CODE-01 scores 1;" in f]


def _huge_usage(exchange: dict[str, Any]) -> None:
    finish = exchange["chunks"][-2]
    stop = '"finish_reason": "stop"}]'
    assert stop in finish["data"]
    finish["data"] = finish["data"].replace(
        stop, stop + f', "usage": {{"completion_tokens": {2**1023}}}'
    )


def test_a_usage_at_a_floats_limit_hides_answers_that_do_not_compile(
    recorded: Recorded, tmp_path: Path
) -> None:
    edit = _both(_exchanges(CODE_01, _huge_usage), _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "CODE-01 scores 1;" in f]


def test_a_status_under_200_lifts_the_reliability_bound(recorded: Recorded, tmp_path: Path) -> None:
    edit = _both(_exchanges({217}, lambda e: e.update(status=199)), _passed(("CODE-03", "0.5")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert [f for f in _spark_findings(verdict) if "the repeat reliability is 100;" in f]


# --- holes: which exchange asked what, and which code is kept ----------------------------------


def _swap_requests(files: Files) -> None:
    """CODE-01's two requests (exchanges 213, 214) swapped with CODE-05's (221, 222), body and
    headers: each scenario still asked twice; CODE-01's answers now those that compile."""
    exchanges = lines(files, LOG)
    by_id = {e["id"]: e for e in exchanges}
    for one, other in ((213, 221), (214, 222)):
        for key in ("request_body", "request_headers"):
            by_id[one][key], by_id[other][key] = by_id[other][key], by_id[one][key]
    put_lines(files, LOG, exchanges)


def test_requests_swapped_between_scenarios(recorded: Recorded, tmp_path: Path) -> None:
    verdict = _verdict(
        recorded, tmp_path / "forged", _both(_swap_requests, _passed(("CODE-01", "1.0")))
    )
    assert _spark_findings(verdict)


def _without_spark_bench_py(files: Files) -> None:
    listing = files["upstreams/sparkbench/tree.txt"][0].decode()
    (blob,) = [
        line.split()[2] for line in listing.splitlines() if line.endswith("\tspark_bench.py")
    ]
    del files[f"upstreams/sparkbench/files/{blob}"]


def test_the_harness_file_left_out_skips_the_check(recorded: Recorded, tmp_path: Path) -> None:
    edit = _both(_without_spark_bench_py, _passed(("CODE-01", "1.0")))
    verdict = _verdict(recorded, tmp_path / "forged", edit)
    assert verdict.integrity.status != "ok"
