"""Hostile tests of 2026-12-07 (Infermark's reading): an adversarial publisher against ADR 0049,
which reads every performance exchange as Infermark 0.3.0's client reads it
(``verify/infermark.py``) and holds each to the request the pinned command sends
(``verify/_consistency/exchanges.py`` ``_infermark``, ``_infermark_requests``; ``verify/_facts.py``
``infermark_facts``, ``infermark_payload``).

Most attacks are differentials: the same bytes fed to the verifier's reading and to the real thing,
Infermark 0.3.0 at the pinned a5e252b (its source taken from the recorded real bundle's checkout
evidence) on httpx 0.28.1, h11 0.16 and click 8.5.1 in the harnesses' interpreter
(``.venv-harnesses``; the tests that need it are skipped where it is absent). The real client runs
in a subprocess, ``send_streaming_request`` over an ``httpx.MockTransport`` whose reply head is the
one the observer passes on (parsed by the real h11, as httpcore parses it) and whose body comes in
the observer's pieces, each at its recorded time on Infermark's clock; the real CLI runs as
``python -m infermark.cli`` with its client's transport replaced. The bundle attacks edit the
recorded real bundle (examples/recorded/llamacpp-smollm2-135m.tar) and reseal it with claims equal
to its replay (``tests.gate_kit.forged``).

Held (passing):

- httpx's ``TextDecoder`` and ``LineDecoder`` against ``_texts``/``_lines`` on 400 random byte
  streams (CR, LF, VT, FF, FS, NEL, U+2028, a BOM, invalid bytes; UTF-8, UTF-16, UTF-16-LE,
  UTF-32, Latin-1, cp1252, and readings that raise: UTF-16 with no BOM, rot13, punycode on
  bytes that are not ASCII) cut at random byte boundaries: the same lines, each at the piece
  that completed it (the flush at the last piece), and an exception exactly where httpx raises.
- Whole streams read by the real client and by ``infermark_reading``: CRLF and CR framing, an
  event split over pieces, a CR at the end of a piece, an unterminated last line, ``delta``
  null, a JSON array event, ``choices`` a string, content ``0``, UTF-16 with a BOM and its
  charset, an unknown charset, a 500, a reply not streamed: the same success, tokens and TTFT.
- The pinned v5 command and click-equivalent spellings of it (``-n2``, ``--max-tokens=64``,
  ``-m{model}``, ``--model={model}``, an empty prompt, a prompt ``-n``): the real CLI sends
  exactly ``run.requests`` requests of ``run.payload`` to ``run.path()``, and its report's
  config is the one the verifier pins.
- A performance request whose reasoning policy is flipped, missing or an empty object (what
  ``removed_from`` takes out before the payload is compared): ``reasoning_serialization`` infra.
- A performance request to ``/v1/chat/completions/``, with a query, or a ``PUT``; the last
  performance request labelled ``coding``: a finding on the transport log.

Holes found (each test asserts the safe behaviour; all eight closed the same day, ADR 0049's
section "Later (2026-12-07)": the observer refuses heads the client's parser refuses and a
Content-Type that is not ASCII, and the reading fails a recorded field with a control byte and
a charset whose reading depends on the reads; fixes a nesting depth; applies the pinned
time-out; holds the request's bytes; fills the pinned words as the runner does):

1. A reply head h11 refuses (a NUL, VT or CR in a header value, a space in a header name): the
   observer passes it on (``audit/observer.py`` ``_Reply`` splits on CRLF and checks only
   ``name.strip() == name``), the harness's httpx raises ``RemoteProtocolError`` and Infermark
   counts the request an error; ``infermark_reading`` reads its body as a success. End to end: a
   NUL in one performance exchange's recorded ``x-request-id`` and a report of no error keep
   performance at 100 with no finding (Infermark's own report: 1 error, performance 0).
2. A header smuggled by a bare LF: ``X-Junk: a\\nContent-Type: text/plain; charset=utf-16`` is
   one unrecorded field to the observer and two fields to h11; the harness decodes the body as
   UTF-16 (no BOM: ``UnicodeError``, an error), the verifier as UTF-8 (a success with tokens).
3. The charset of a head that is not all UTF-8: httpx decodes every field as Latin-1 when any
   byte is not UTF-8; the observer records UTF-8 text with ``\\xhh`` escapes. ``charset=<U+00A0>
   utf-16`` is ``utf-16`` to the verifier (``email`` strips the NBSP) and no charset (UTF-8) to
   httpx (``Â\\xa0utf-16`` is not ASCII). A UTF-16 stream then has its tokens counted by the
   verifier and none by Infermark; a UTF-8 stream is an error to the verifier and a success to
   Infermark (a false positive).
4. A codec whose incremental decoder keeps no state (``charset=punycode``): the verifier decodes
   piece by piece at the observer's boundaries; httpx decodes the pieces its socket reads gave
   it, which may be joined. The observer's pieces count 3 tokens, the same bytes joined count 1.
5. JSON nested past the parser's stack: ``_token`` calls ``json.loads`` at whatever depth the
   verifier is at, so the reading of the same bytes depends on the call stack (the unit test:
   a fresh thread against 150 frames deeper). Infermark's pinned CLI fails on an event nested
   about 966 deep (an ``unknown`` error); the ``audit verify`` CLI reads one nested 968 or 975
   deep (checked by hand: exit 0, performance 100) and fails on 985. End to end (sealed and
   verified from a fresh thread, as shallow as the CLI): an event with no token whose unread
   member is nested as deep as Infermark's first failure, and a report of no error:
   performance 100, no finding.
6. Infermark's read timeout: the reading has no clock (``infermark_run`` knows ``--timeout``
   and drops it; ``infermark_reading`` reads no gap). Under a pin of ``--timeout 0.005``
   every recorded exchange waited more than twice that between two body chunks (httpx's read
   timeout, which Infermark counts an error); the verifier reads 20 successes, performance
   100. (At the shipped 120 s the same holds for a log with the harness's disconnect edited
   out.)
7. Request bytes the observer never forwards: the observer re-serializes every completion
   request (``_with_policy``: ``json.dumps(..., separators=(",", ":"))`` in the harness's key
   order, the policy appended), so an honest performance request body is one exact byte string;
   ``payload_asked`` compares parsed JSON, so a repeated key (``"max_tokens":4096`` before
   ``"max_tokens":256``: a first-wins parser generates 4096), other key order, spaces, a BOM or
   ``\\u`` escapes pass with no finding.
8. (false positive) The runner formats every word of the pinned command (``audit/run.py``
   ``part.format(**values)``); ``infermark_run`` reads the words unformatted, so a pinned prompt
   with ``{model}`` or ``{{ }}`` (or a model ``{model}-x``) expects another payload than the
   one Infermark sends.

Not holes: a pin of ``-c 1,4``, no ``--warmup 0`` or ``--mode non_streaming`` makes Infermark send
other requests than ``infermark_run`` expects, but its honest report is refused by the reader
(``verify/harness_outputs.py`` ``_infermark``), so nothing is scored either way. Side finding,
fixed the same day: ``audit/observer.py`` ``_model_named`` caught ``ValueError`` only, so a reply
whose first JSON event is nested past the parser's stack raised ``RecursionError`` out of
``_finish`` (``test_a_reply_nested_past_the_parsers_stack_is_recorded``).
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from audit.observer import _finish, _media_type, _Reply
from bundle_schema.models import TransportExchange, Verdict, stream_chunks
from pins import load_builtin, pin_set_source
from tests.data.hostile.kit import Files, lines
from tests.gate_kit import Recorded, forged, resealed_as_replayed, unpacked_recorded
from tests.hostile.test_attacks_2026_12_05_transport import (
    INFERMARK,
    LOG,
    _edit_exchanges,
    _findings,
    _performance,
)
from tests.paths import ROOT
from verify import verify_bundle
from verify.infermark import (
    DEFAULT_PROMPT,
    InfermarkReading,
    infermark_reading,
    infermark_run,
)
from verify.infermark import _lines as verifier_lines
from verify.infermark import _texts as verifier_texts

HARNESS_PYTHON = ROOT / ".venv-harnesses" / "bin" / "python"
"""The harnesses' interpreter: httpx 0.28.1, h11 0.16, click 8.5.1 (Infermark's pins)."""
needs_harness = pytest.mark.skipif(
    not HARNESS_PYTHON.exists(), reason="no .venv-harnesses: the real httpx and click are absent"
)
MODEL = "smollm2-135m-instruct"
Exchanges = list[dict[str, Any]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return unpacked_recorded(tmp_path_factory.mktemp("recorded"))


# --- the real Infermark, in the harnesses' interpreter -------------------------------------------

_HARNESS = r'''
import asyncio, base64, json, runpy, sys

import h11
import httpx
import infermark.client as client
import infermark.runner as runner
from httpx._decoders import LineDecoder, TextDecoder


class Clock:
    now = 0.0

    def perf_counter(self):
        return self.now


CLOCK = Clock()
client.time = CLOCK  # Infermark's clock reads the time of the piece being read


def raw(text):
    return base64.b64decode(text)


def lines(job):
    """aiter_text and aiter_lines over the pieces: each line with the index of the piece that
    gave it (the flush: len(pieces)), or what they raised."""
    text, decoder, out = TextDecoder(job["charset"]), LineDecoder(), []
    try:
        for index, piece in enumerate(job["pieces"]):
            decoded = text.decode(raw(piece))
            if decoded:  # TextChunker passes no empty text on
                out += [[index, line] for line in decoder.decode(decoded)]
        end = len(job["pieces"])
        flushed = text.flush()
        if flushed:
            out += [[end, line] for line in decoder.decode(flushed)]
        out += [[end, line] for line in decoder.flush()]
    except Exception as exc:
        return {"raised": type(exc).__name__}
    return {"lines": out}


async def stream(job):
    """send_streaming_request against a reply: the head as the observer passes it on, parsed
    by h11 as httpcore parses it, and the body in its pieces, each at its time."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
    connection.receive_data(raw(job["head"]))
    try:
        head = connection.next_event()
        refused = None
    except h11.RemoteProtocolError as exc:
        head, refused = None, str(exc)
    pieces = [(t, raw(data)) for t, data in job["pieces"]]

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self):
            for t, data in pieces:
                CLOCK.now = 1000.0 + t
                yield data

    def handler(request):
        if refused is not None:
            raise httpx.RemoteProtocolError(refused, request=request)
        return httpx.Response(head.status_code, headers=list(head.headers.raw_items()),
                              stream=Body())

    CLOCK.now = 1000.0
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        result = await client.send_streaming_request(http, "http://x/v1/chat/completions", {},
                                                     {}, 120.0)
    return {"success": result.success, "tokens": result.output_tokens, "ttft": result.ttft,
            "error": result.error}


class Stopped(Exception):
    pass


def cli(job):
    """python -m infermark.cli <argv>: the requests it sends to an endpoint answering
    job["reply"], and its JSON report (read from job["report"])."""
    sent, reply = [], raw(job["reply"])

    def handler(request):
        sent.append({"method": request.method, "url": str(request.url),
                     "body": base64.b64encode(request.content).decode()})
        return httpx.Response(200, headers=[(b"content-type", b"text/event-stream")],
                              content=reply)

    init = httpx.AsyncClient.__init__

    def patched(self, *args, **kwargs):
        kwargs["transport"] = httpx.MockTransport(handler)
        init(self, *args, **kwargs)

    httpx.AsyncClient.__init__ = patched
    sys.argv = ["infermark", *job["argv"]]
    try:
        runpy.run_module("infermark.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code:
            return {"exit": str(exc.code)}
    finally:
        httpx.AsyncClient.__init__ = init
    with open(job["report"], encoding="utf-8") as report:
        return {"sent": sent, "report": json.load(report)}


def main():
    out, jobs = sys.argv[1], json.load(sys.stdin)
    done = {}
    for name, job in jobs.items():
        kind = job["kind"]
        if kind == "lines":
            done[name] = lines(job)
        elif kind == "stream":
            done[name] = asyncio.run(stream(job))
        else:
            done[name] = cli(job)
    with open(out, "w", encoding="utf-8") as written:
        json.dump(done, written)


main()
'''


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _infermark_source(recorded: Recorded, folder: Path) -> Path:
    """Infermark's ``src`` at the pinned commit, written from the recorded checkout's files."""
    files = recorded[1]
    tree = files["upstreams/infermark/tree.txt"][0].decode()
    for line in tree.splitlines():
        meta, _, path = line.partition("\t")
        if path.startswith("src/infermark/") and path.endswith(".py"):
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[f"upstreams/infermark/files/{meta.split()[2]}"][0])
    return folder / "src"


def _run_harness(source: Path, folder: Path, jobs: Mapping[str, Any]) -> dict[str, Any]:
    script, out = folder / "harness.py", folder / "done.json"
    script.write_text(_HARNESS, encoding="utf-8")
    done = subprocess.run(
        [str(HARNESS_PYTHON), str(script), str(out)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        cwd=folder,
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


# --- the observer's record of a reply, and the head it passes on ---------------------------------


def _event(content: Any = "x", **extra: Any) -> bytes:
    delta = {"content": content} if content is not ... else {}
    value = {"id": "chatcmpl-x", "model": MODEL, "choices": [{"index": 0, "delta": delta}]}
    return b"data: " + json.dumps(value | extra).encode() + b"\n\n"


STREAM = [(0.05, _event(None) + _event("a")), (0.06, _event("b")), (0.07, b"data: [DONE]\n\n")]
"""Three pieces: a role event and a token, a token, the end."""


def _observed(
    head: bytes, pieces: list[tuple[float, bytes]]
) -> tuple[TransportExchange, dict[str, Any]]:
    """An endpoint's reply (``head``: its status line and fields; ``pieces``: its body as it
    came) as the observer records it (``_Reply``, ``_finish``), and the stream job of the real
    client: the head the observer passes on (``_passed``, framed as ``_http_server`` frames it)
    and the pieces the harness reads (a reply not streamed: whole, when recorded)."""
    reply = _Reply(None, head.removesuffix(b"\r\n"), False)  # type: ignore[arg-type]
    record: dict[str, Any] = {
        "schema_version": 1, "id": 7, "component": "performance", "started": 10.0,
        "ended": 12.0, "method": "POST", "path": "/v1/chat/completions",
        "request_headers": [], "request_body": b"{}", "status": reply.status,
        "response_headers": reply.headers,
    }  # fmt: skip
    if _media_type(reply.first.get("content-type", "")) == "text/event-stream":
        record["chunks"], read = pieces, pieces
        framing = b"Transfer-Encoding: chunked\r\n"
    else:
        body = b"".join(data for _, data in pieces)
        record["response_body"], read = body, [(2.0, body)] if body else []
        framing = b"Content-Length: %d\r\n" % len(body)
    fields = b"".join(
        b"%s: %s\r\n" % (n.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape"))
        for n, v in reply.passed.values()
    )
    passed = b"HTTP/1.1 %d X\r\n" % reply.status + fields + framing + b"\r\n"
    job = {"kind": "stream", "head": _b64(passed), "pieces": [[t, _b64(d)] for t, d in read]}
    return _finish(record), job


def _as_sent(head: bytes, pieces: list[tuple[float, bytes]]) -> dict[str, Any]:
    """The stream job of the real client for a reply head as the endpoint sent it (the
    observer refuses these: what the harness's httpx would have made of it passed on)."""
    passed = head + b"Transfer-Encoding: chunked\r\n\r\n"
    return {"kind": "stream", "head": _b64(passed), "pieces": [[t, _b64(d)] for t, d in pieces]}


def _refused(head: bytes, match: str) -> None:
    """The observer refuses the reply head (a 502 to the harness, the exchange an error:
    ``tests/audit/test_observer.py``)."""
    with pytest.raises(ConnectionError, match=match):
        _Reply(None, head.removesuffix(b"\r\n"), False)  # type: ignore[arg-type]


def _same(real: Mapping[str, Any], reading: InfermarkReading) -> bool:
    """The verifier's reading is the real client's: error, tokens, and a first token exactly
    when it measured a TTFT, at the time of the piece it read it in."""
    if reading.failed != (not real["success"]):
        return False
    if reading.failed:
        return True
    if reading.tokens != real["tokens"] or (reading.first is None) != (real["ttft"] is None):
        return False
    return reading.first is None or abs(reading.first - real["ttft"]) < 1e-6


SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"

HELD_STREAMS: dict[str, tuple[bytes, list[tuple[float, bytes]]]] = {
    "plain": (SSE, STREAM),
    "crlf": (SSE, [(t, d.replace(b"\n", b"\r\n")) for t, d in STREAM]),
    "cr": (SSE, [(t, d.replace(b"\n", b"\r")) for t, d in STREAM]),
    "split-event": (SSE, [(0.05, _event("a")[:17]), (0.08, _event("a")[17:]), *STREAM[1:]]),
    "cr-ends-a-piece": (
        SSE,
        [(0.05, _event("a")[:-1].replace(b"\n", b"\r")), (0.09, b"\n"), *STREAM[1:]],
    ),
    "unterminated-last": (SSE, [(0.05, _event("a")), (0.2, _event("b").rstrip())]),
    "null-delta": (SSE, [*STREAM[:2], (0.07, b'data: {"choices":[{"delta":null}]}\n\n')]),
    "array-event": (SSE, [*STREAM[:2], (0.07, b"data: [1]\n\n")]),
    "choices-string": (SSE, [(0.05, b'data: {"choices":"abc"}\n\n')]),
    "content-zero": (SSE, [(0.05, _event(0)), (0.06, _event(""))]),
    "utf16-bom": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-16\r\n",
        [
            (0.05, (_event("é") * 2).decode().encode("utf-16")[:41]),
            (0.06, (_event("é") * 2).decode().encode("utf-16")[41:]),
        ],
    ),
    "unknown-charset": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=no-such\r\n",
        STREAM,
    ),
    "status-500": (
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/event-stream\r\n",
        STREAM,
    ),
    "not-streamed": (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", STREAM),
}
"""Replies on which the verifier's reading is the real client's."""

HEAD_H11_REFUSES = {
    "nul-in-recorded-x-request-id": SSE + b"X-Request-Id: a\x00b\r\n",
    "vt-in-a-field": SSE + b"X-Junk: a\x0bb\r\n",
    "cr-in-a-field": SSE + b"X-Junk: a\rb\r\n",
    "space-in-a-name": SSE + b"X Junk: 1\r\n",
}
"""Reply heads the observer passes on and h11 refuses (httpx: ``RemoteProtocolError``)."""

SMUGGLED = b"HTTP/1.1 200 OK\r\nX-Junk: a\nContent-Type: text/plain; charset=utf-16\r\n"
"""A field the observer reads as one (``X-Junk``, unrecorded) and h11 as two."""

NBSP_UTF16 = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=\xc2\xa0utf-16\r\n"
"""A charset padded with a UTF-8 no-break space (stripped by ``email``'s parameter reader)."""
NOT_UTF8_HEADS = {
    "utf8-stream-byte-in-content-type": (NBSP_UTF16[:-2] + b"; x=\xff\r\n", STREAM),
    "utf8-stream-byte-in-another-field": (NBSP_UTF16 + b"X-Junk: \xff\r\n", STREAM),
    "utf16-stream": (
        NBSP_UTF16 + b"X-Junk: \xff\r\n",
        [(0.05, (_event("a") + _event("b")).decode().encode("utf-16"))],
    ),
}
"""Heads with a byte that is not UTF-8: httpx reads every field as Latin-1."""

PUNYCODE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=punycode\r\n"
PUNY_EVENT = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n-'
"""An event punycode decodes to itself, piece by piece (its last ``-`` is the separator)."""

DEPTH_PROBES = range(940, 1001, 2)
"""Nesting depths at which the real CLI's reading of an event is tried."""


def _deep_event(depth: int) -> bytes:
    """An event with no token whose unread member is nested ``depth`` deep: no token to any
    reading that parses it, an error to one that cannot."""
    nested = "[" * depth + "]" * depth
    return b'data: {"choices":[{"delta":{"content":""}}],"x":' + nested.encode() + b"}\n\n"


def _cli_job(argv: list[str], folder: Path, name: str, reply: bytes) -> dict[str, Any]:
    report = folder / f"{name}.json"
    return {"kind": "cli", "argv": [*argv, "-o", str(report)], "reply": _b64(reply),
            "report": str(report)}  # fmt: skip


# the pinned command's words after `run`, and spellings click reads alike
V5 = ["{endpoint}/v1", "-m", "{model}", "-n", "2", "-c", "1", "--warmup", "0", "--max-tokens",
      "256", "--mode", "streaming"]  # fmt: skip
COMMANDS: dict[str, list[str]] = {
    "pinned-v5": V5,
    "joined": [
        *("{endpoint}/v1", "-m{model}", "-n2", "-c1", "--warmup=0", "--max-tokens=64"),
        *("--prompt=Hi", "--mode=streaming"),
    ],
    "model-equals": ["{endpoint}/v1", "--model={model}", *V5[3:]],
    "empty-prompt": [*V5, "--prompt", ""],
    "dash-prompt": [*V5, "--prompt", "-n"],
    "last-given-counts": [*V5, "-n", "3", "--max-tokens", "9"],
    "placeholder-prompt": [*V5, "--prompt", "Answer as {model} {{briefly}}"],
    "placeholder-model": ["{endpoint}/v1", "-m", "{model}-x", *V5[3:]],
}
PLACEHOLDERS = {"python": "python", "endpoint": "http://127.0.0.1:9", "model": "M", "out": "/out",
                "tasks": "", "data": "/data"}  # fmt: skip


def _random_streams(count: int) -> list[tuple[str, list[bytes]]]:
    """Byte streams of line breaks of every kind, cut at random byte boundaries."""
    rng = random.Random(20261207)  # noqa: S311 - a fixed draw of test inputs
    alphabet = ["a", "d", ":", " ", "\r", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x85",
                "\u2028", "é", "\ufeff", "data: x"]  # fmt: skip
    streams = []
    for _ in range(count):
        written, read = rng.choice(CHARSETS)
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        data = text.encode(written, "replace")
        if rng.random() < 0.2:
            data += rng.choice([b"\xff", b"\xc3", b"\xe2\x80", b"\x00"])
        many = min(max(len(data) - 1, 0), rng.randint(0, 5))
        cuts = sorted(rng.sample(range(1, len(data)), many))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        streams.append((read, [p for p in pieces if p]))
    return streams


CHARSETS = [("utf-8", "utf-8"), ("utf-16", "utf-16"), ("utf-16-le", "utf-16"),
            ("utf-16-le", "utf-16-le"), ("utf-8", "utf-16-le"), ("latin-1", "latin-1"),
            ("latin-1", "utf-8"), ("cp1252", "cp1252"), ("utf-32", "utf-32"), ("utf-8", "rot13"),
            ("utf-8", "punycode")]  # fmt: skip
"""How each stream is written, and the charset it is read in (some raise: a UTF-16 stream with
no BOM, a codec of text to text)."""


RANDOM_STREAMS = _random_streams(400)


def _verifier_lines(charset: str, pieces: list[bytes]) -> dict[str, Any]:
    try:
        read = list(verifier_lines(verifier_texts(list(enumerate(pieces)), charset)))
    except Exception as exc:  # compared with what httpx raised
        return {"raised": type(exc).__name__}
    return {"lines": [[int(t), line] for t, line in read]}


@pytest.fixture(scope="module")
def real(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every job of this module, done by the real Infermark, httpx, h11 and click."""
    if not HARNESS_PYTHON.exists():
        pytest.skip("no .venv-harnesses")
    folder = tmp_path_factory.mktemp("infermark")
    source = _infermark_source(recorded, folder)
    jobs: dict[str, Any] = {}
    for index, (charset, cut) in enumerate(RANDOM_STREAMS):
        jobs[f"lines-{index}"] = {"kind": "lines", "charset": charset,
                                  "pieces": [_b64(p) for p in cut]}  # fmt: skip
    for name, (head, pieces) in HELD_STREAMS.items():
        jobs[f"stream-{name}"] = _observed(head, pieces)[1]
    refused = {**{k: (v, STREAM) for k, v in HEAD_H11_REFUSES.items()},
               "smuggled": (SMUGGLED, STREAM), **NOT_UTF8_HEADS}  # fmt: skip
    for name, (head, pieces) in refused.items():  # the observer passes none of them on
        jobs[f"stream-{name}"] = _as_sent(head, pieces)
    puny = [(0.05 + 0.01 * i, PUNY_EVENT) for i in range(3)]
    jobs["stream-punycode-pieces"] = _observed(PUNYCODE, puny)[1]
    jobs["stream-punycode-joined"] = _observed(PUNYCODE, [(0.07, PUNY_EVENT * 3)])[1]
    reply = _event("a") + _event("b") + b"data: [DONE]\n\n"
    for name, words in COMMANDS.items():
        argv = ["run", *(w.format(**PLACEHOLDERS) for w in words)]
        jobs[f"cli-{name}"] = _cli_job(argv, folder, name, reply)
    for depth in DEPTH_PROBES:
        argv = ["run", *(w.format(**PLACEHOLDERS) for w in V5)]
        argv[argv.index("-n") + 1] = "1"
        jobs[f"depth-{depth}"] = _cli_job(argv, folder, f"depth-{depth}", _deep_event(depth))
    return _run_harness(source, folder, jobs)


# --- held: lines, texts and whole streams as httpx and Infermark read them -----------------------


@needs_harness
def test_lines_and_texts_are_httpx_own_on_random_streams(real: dict[str, Any]) -> None:
    """The same lines, each at the piece that completed it (the flush: the last piece), and an
    exception exactly where httpx's ``TextDecoder``/``LineDecoder`` raise."""
    differ = []
    for index, (charset, pieces) in enumerate(RANDOM_STREAMS):
        theirs = real[f"lines-{index}"]
        if "lines" in theirs:
            end = max(len(pieces) - 1, 0)
            theirs = {"lines": [[min(i, end), line] for i, line in theirs["lines"]]}
        ours = _verifier_lines(charset, pieces)
        if ("raised" in theirs) != ("raised" in ours) or ("lines" in ours and ours != theirs):
            differ.append((charset, pieces, theirs, ours))
    assert not differ, differ[:3]


@needs_harness
@pytest.mark.parametrize("name", sorted(HELD_STREAMS))
def test_a_stream_is_read_as_infermarks_client_reads_it(real: dict[str, Any], name: str) -> None:
    exchange, _ = _observed(*HELD_STREAMS[name])
    reading = infermark_reading(exchange)
    assert _same(real[f"stream-{name}"], reading), (real[f"stream-{name}"], reading)


# --- 1, 2, 3: the head the harness's httpx reads is not the one the verifier reads ---------------


@needs_harness
@pytest.mark.parametrize("name", sorted(HEAD_H11_REFUSES))
def test_a_reply_head_h11_refuses_is_an_error(real: dict[str, Any], name: str) -> None:
    """Closed: the observer passes on no head the harness's own parser refuses (a 502, the
    exchange an error, as Infermark's request is); a recorded field with such a byte is a
    reply no harness read (the reading fails it)."""
    assert not real[f"stream-{name}"]["success"]  # the real client: an error
    _refused(HEAD_H11_REFUSES[name], "malformed header line")


@needs_harness
def test_a_header_smuggled_by_a_bare_line_feed(real: dict[str, Any]) -> None:
    """Closed: a bare LF in a field is a malformed header line to the observer too."""
    theirs = real["stream-smuggled"]
    assert not theirs["success"] and "UnicodeError" in theirs["error"]
    _refused(SMUGGLED, "malformed header line")


@pytest.mark.parametrize("name", sorted(NOT_UTF8_HEADS))
def test_the_charset_of_a_head_that_is_not_utf8(name: str) -> None:
    """Closed: a Content-Type that is not ASCII, read in whichever encoding the client reads
    the whole head in, is refused by the observer; recorded, its reply is no count."""
    head, pieces = NOT_UTF8_HEADS[name]
    _refused(head, "Content-Type that is not ASCII")
    exchange = _exchange_with({"content-type": "text/event-stream; charset=\u00a0utf-16"}, pieces)
    assert infermark_reading(exchange).failed


def _exchange_with(headers: dict[str, str], pieces: list[tuple[float, bytes]]) -> TransportExchange:
    chunks = stream_chunks(pieces)
    return TransportExchange.model_validate({
        "schema_version": 1, "id": 7, "component": "performance", "started": 10.0,
        "ended": 12.0, "method": "POST", "path": "/v1/chat/completions", "status": 200,
        "response_headers": headers,
        "chunks": [c.model_dump(exclude_none=True) for c in chunks],
    })  # fmt: skip


# --- 4. a codec that decodes each piece on its own -----------------------------------------------


@needs_harness
def test_a_codec_whose_reading_depends_on_the_reads(real: dict[str, Any]) -> None:
    """Closed: a charset whose decoder reads each piece on its own has no one reading (3
    tokens piece by piece, 1 joined, by the real client); the verifier claims no count for it
    (an error, ``_cut_free``)."""
    pieces, joined = real["stream-punycode-pieces"], real["stream-punycode-joined"]
    assert (pieces["success"], joined["success"]) == (True, True)
    assert pieces["tokens"] != joined["tokens"], (pieces, joined)
    exchange, _ = _observed(PUNYCODE, [(0.05 + 0.01 * i, PUNY_EVENT) for i in range(3)])
    assert infermark_reading(exchange).failed


# --- 5. JSON nested past the parser's stack ------------------------------------------------------


def _at_depth(frames: int, call: Callable[[], Any]) -> Any:
    return call() if frames <= 0 else _at_depth(frames - 1, call)


def _deep_exchange(depth: int) -> TransportExchange:
    chunks = stream_chunks([(0.05, _event("a")), (0.06, _deep_event(depth))])
    return TransportExchange.model_validate({
        "schema_version": 1, "id": 1, "component": "performance", "started": 1.0, "ended": 2.0,
        "method": "POST", "path": "/v1/chat/completions", "status": 200,
        "response_headers": {"content-type": "text/event-stream"},
        "chunks": [c.model_dump(exclude_none=True) for c in chunks],
    })  # fmt: skip


def _first_failing_depth(real: Mapping[str, Any]) -> int:
    """The shallowest event the real pinned CLI's client fails on (its request an error)."""
    failing = [d for d in DEPTH_PROBES if real[f"depth-{d}"]["report"]["results"][0]["n_error"]]
    assert failing and failing[0] > DEPTH_PROBES[0], [real[f"depth-{d}"] for d in DEPTH_PROBES]
    return failing[0]


def test_the_reading_of_deep_json_does_not_depend_on_the_callers_stack() -> None:
    sys_limit = sys.getrecursionlimit()
    depth = sys_limit - 60
    shallow = _in_thread(lambda: infermark_reading(_deep_exchange(depth)))
    deep = _in_thread(lambda: _at_depth(150, lambda: infermark_reading(_deep_exchange(depth))))
    assert shallow == deep, (shallow, deep)


def _in_thread(call: Callable[[], Any]) -> Any:
    """``call()`` from a fresh thread: a stack as shallow as the ``audit verify`` CLI's."""
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _deep_last_request(depth: int) -> Callable[[Files], None]:
    """The last performance stream with one more event before its end, no token to any reader,
    whose unread member is nested ``depth`` deep; the report as recorded (no error)."""

    def edit(files: Files) -> None:
        def deepen(exchanges: Exchanges) -> None:
            chunks = _performance(exchanges)[-1]["chunks"]
            chunks.insert(-1, {"t": chunks[-2]["t"], "data": _deep_event(depth).decode()})

        _edit_exchanges(files, deepen)

    return edit


@needs_harness
def test_an_event_infermarks_client_could_not_parse_is_an_error(
    recorded: Recorded, real: dict[str, Any], tmp_path: Path
) -> None:
    depth = _first_failing_depth(real)
    assert real[f"depth-{depth}"]["report"]["results"][0]["errors"] == {"unknown": 1}
    # sealed and verified from a fresh thread, as the audit CLI's shallow stack does both
    bundle = _in_thread(lambda: forged(recorded, tmp_path / "bundle", _deep_last_request(depth)))
    verdict: Verdict = _in_thread(lambda: verify_bundle(bundle).verdict)
    assert verdict.scores.performance == 0.0 or _findings(verdict, INFERMARK), verdict.scores


# --- 6. Infermark's read timeout -----------------------------------------------------------------


def _timeout_pins(seconds: str) -> Any:
    data = copy.deepcopy(dict(load_builtin("gx10-qualification-v5").data))
    data["id"] = "gx10-qualification-v5-timeout"
    harness = data["harnesses"]["infermark"]
    data["harnesses"]["infermark"] = {
        **harness,
        "command": [*harness["command"], "--timeout", seconds],
    }
    return pin_set_source(data, "timeout pins")


def _longest_gap(exchange: Mapping[str, Any]) -> float:
    times: list[float] = [chunk["t"] for chunk in exchange["chunks"]]
    return max(later - earlier for earlier, later in itertools.pairwise(times))


def test_a_stream_silent_past_infermarks_read_timeout_is_an_error(
    recorded: Recorded, tmp_path: Path
) -> None:
    manifest, files = recorded
    pins = _timeout_pins("0.005")
    gaps = [_longest_gap(e) for e in _performance(lines(dict(files), LOG))]
    assert min(gaps) > 2 * 0.005  # between two body chunks: a read that waited that long
    pin_set = {"id": pins.id, "digest": pins.digest}
    fields = {"pin_set": pin_set}
    bundle = resealed_as_replayed(tmp_path / "bundle", manifest, dict(files), pins, fields)
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert verdict.scores.performance == 0.0 or _findings(verdict, INFERMARK), verdict.scores


# --- 7. request bytes the observer never forwards ------------------------------------------------

SENT = (
    '{"model":"smollm2-135m-instruct","messages":[{"role":"user","content":"Explain the theory '
    'of relativity in simple terms."}],"max_tokens":256,"stream":true,'
    '"chat_template_kwargs":{"enable_thinking":false}}'
)
"""A recorded performance request: Infermark's payload as the observer forwarded it."""

BODIES = {
    "repeated-key": SENT.replace('"max_tokens":256', '"max_tokens":4096,"max_tokens":256'),
    "other-key-order": json.dumps(dict(reversed(json.loads(SENT).items())), separators=(",", ":")),
    "spaced": json.dumps(json.loads(SENT), indent=1),
    "bom": "\ufeff" + SENT,
    "escaped": SENT.replace('"content":"Explain', '"content":"\\u0045xplain'),
}


def _body(text: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        def ask(exchanges: Exchanges) -> None:
            last = _performance(exchanges)[-1]
            assert last["request_body"]["data"] == SENT
            last["request_body"] = {"encoding": "utf-8", "data": text}

        _edit_exchanges(files, ask)

    return edit


def _asked_otherwise(verdict: Verdict) -> bool:
    return any("is not the request the pinned Infermark" in f for f in _findings(verdict, LOG))


@pytest.mark.parametrize("name", sorted(BODIES))
def test_request_bytes_the_observer_never_forwards_are_a_finding(
    recorded: Recorded, tmp_path: Path, name: str
) -> None:
    verdict = verify_bundle(forged(recorded, tmp_path / "bundle", _body(BODIES[name]))).verdict
    assert _asked_otherwise(verdict), (verdict.scores, _findings(verdict))


POLICIES = {
    "flipped": SENT.replace('"enable_thinking":false', '"enable_thinking":true'),
    "missing": SENT.replace(',"chat_template_kwargs":{"enable_thinking":false}', ""),
    "empty-object": SENT.replace('{"enable_thinking":false}', "{}"),
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_performance_request_of_another_reasoning_policy_is_found(
    recorded: Recorded, tmp_path: Path, name: str
) -> None:
    """Held: the policy ``removed_from`` takes out before the payload is compared is the
    reasoning gate's to check, and it does."""
    verdict = verify_bundle(forged(recorded, tmp_path / "bundle", _body(POLICIES[name]))).verdict
    reasoning = [g for g in verdict.gates if "reasoning" in g.id]
    assert _findings(verdict) or any(g.status != "pass" for g in reasoning), verdict.gates


def _sent_elsewhere(method: str, path: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        def move(exchanges: Exchanges) -> None:
            _performance(exchanges)[-1].update(method=method, path=path)

        _edit_exchanges(files, move)

    return edit


def _relabelled(files: Files) -> None:
    def relabel(exchanges: Exchanges) -> None:
        _performance(exchanges)[-1]["component"] = "coding"

    _edit_exchanges(files, relabel)


ELSEWHERE = {
    "trailing-slash": _sent_elsewhere("POST", "/v1/chat/completions/"),
    "query": _sent_elsewhere("POST", "/v1/chat/completions?stream=false"),
    "put": _sent_elsewhere("PUT", "/v1/chat/completions"),
    "relabelled-coding": _relabelled,
}


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_a_performance_request_sent_elsewhere_or_relabelled_is_found(
    recorded: Recorded, tmp_path: Path, name: str
) -> None:
    """Held: a performance exchange to another path or with another method is not the pinned
    command's request; Infermark's request labelled another component's is a finding."""
    verdict = verify_bundle(forged(recorded, tmp_path / "bundle", ELSEWHERE[name])).verdict
    said = "a performance request is performance's" if name.startswith("relabelled") else ""
    found = [f for f in _findings(verdict, LOG) if "pinned Infermark command sends" in f]
    assert any(said in f for f in found), _findings(verdict)


# --- 1, end to end: a NUL in a recorded field ----------------------------------------------------


def _nul_request_id(files: Files) -> None:
    def edit(exchanges: Exchanges) -> None:
        headers = _performance(exchanges)[-1]["response_headers"]
        headers["x-request-id"] = headers["x-request-id"][:8] + "\x00" + headers["x-request-id"][8:]

    _edit_exchanges(files, edit)


def test_a_head_infermarks_client_refused_is_an_error_end_to_end(
    recorded: Recorded, tmp_path: Path
) -> None:
    verdict = verify_bundle(forged(recorded, tmp_path / "bundle", _nul_request_id)).verdict
    assert verdict.scores.performance == 0.0 or _findings(verdict, INFERMARK), verdict.scores


# --- 8 and held: the pinned command as click reads it, and the requests it sends -----------------


def _expected(words: list[str]) -> tuple[Any, list[str]]:
    command = ["{python}", "-m", "infermark.cli", "run", *words]
    return infermark_run(command, PLACEHOLDERS["model"]), command


def _sent_as_expected(run: Any, result: Mapping[str, Any]) -> list[str]:
    """Where the requests the real CLI sent, and its report's config, differ from what the
    verifier holds the performance exchanges and the report to."""
    problems = []
    sent = result["sent"]
    if len(sent) != run.requests:
        problems.append(f"{len(sent)} requests sent, {run.requests} expected")
    wanted = run.body(None)  # no policy here: the bytes httpx sends, as the observer passes them
    for request in sent:
        body = base64.b64decode(request["body"])
        if request["method"] != "POST" or body != wanted:
            problems.append(f"sent {request['method']} {body!r}, expected {wanted!r}")
        if run.path() is not None and urlsplit(request["url"]).path != run.path():
            problems.append(f"sent to {request['url']}, expected {run.path()}")
    config = result["report"]["config"]
    pinned = {"prompt_length": len(run.prompt or DEFAULT_PROMPT), "max_tokens": run.max_tokens,
              "n_requests": run.requests}  # fmt: skip
    problems += [f"config {k} {config[k]}, pinned {v}" for k, v in pinned.items() if config[k] != v]
    return problems


def _command_cases() -> Iterable[Any]:
    yield from (pytest.param(name, id=name) for name in COMMANDS)


@needs_harness
@pytest.mark.parametrize("name", list(_command_cases()))
def test_the_pinned_command_sends_what_the_verifier_expects(
    real: dict[str, Any], name: str
) -> None:
    run, _ = _expected(COMMANDS[name])
    result = real[f"cli-{name}"]
    assert run is not None and "sent" in result, result
    assert not _sent_as_expected(run, result)


def test_a_reply_nested_past_the_parsers_stack_is_recorded() -> None:
    """The side finding: the observer's reading of the model a reply names passes over a first
    event nested past the parser's stack (the next names it), and records the reply."""
    deep = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    exchange, _ = _observed(SSE, [(0.05, deep), (0.06, _event("a"))])
    assert exchange.response_model == json.loads(_event("a")[len(b"data: ") :])["model"]
    assert infermark_reading(exchange).failed  # Infermark's client: a RecursionError
