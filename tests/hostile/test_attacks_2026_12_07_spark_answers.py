"""Hostile review of :mod:`verify.sparkbench` (2026-12-07): Spark Bench code answers.

``spark_reply`` names a reason (``python``, ``sql``) only where Spark Bench's own grader gives
the reply 0 whatever its code does. These tests hold it to the real thing: Spark Bench 196e60d's
``spark_bench.chat_stream`` and ``eval_suite`` graders, loaded from the pinned checkout the
recorded real bundle holds (byte for byte as the run had them), served replies generated here
over a real HTTP server on 127.0.0.1, and graded as ``run_suite`` grades them (any exception:
0). Where ``spark_reply`` names a reason, every real grading scores 0 (no false finding).

The graders used: CODE-01 (Python, ``test_fn``) and CODE-02 (SQL) of ``eval_suite.SCENARIOS``,
and a permissive grader of each kind (any code that runs scores 1, any query that runs scores
1), so "whatever its code does" is tested as such.

Found (module as of 2026-12-07 10:40): no reason given where Spark can score. Missed bounds
(Spark surely gives 0, ``spark_reply`` said "may score"), each closed the same day and kept
as a test: a data line nested past ``_DEEP`` anywhere in the stream (now parsed on a fresh
stack), an event the client raises on, a redirect the observer answered with 502, a query
sqlite3 refuses (lone surrogate, NUL).
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import itertools
import json
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bundle_schema.models import Body, TransportExchange, stream_chunks
from tests.gate_kit import tar_evidence
from tests.paths import EXAMPLES
from verify import sparkbench
from verify.sparkbench import NO_CODE, NO_COMPILE, REPLY_ERROR, spark_reply

RECORDED_TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m.tar"
UPSTREAM = ("eval_suite.py", "spark_bench.py", "html_report.py")
MODULES = ("eval_suite", "spark_bench", "html_report")
SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# --- the pinned upstream, from the recorded bundle ---------------------------------------------


def _bundle_files(tar: Path) -> dict[str, bytes]:
    """The evidence of a bundle tar by logical name (sparkbench upstream files only)."""
    files = tar_evidence(tar)
    return {name: data for name, data in files.items() if name.startswith("upstreams/sparkbench/")}


@dataclass(frozen=True)
class Spark:
    ev: ModuleType
    bench: ModuleType
    python: tuple[Callable[[dict[str, Any]], Any], ...]
    sql: tuple[Callable[[dict[str, Any]], Any], ...]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spark]:
    files = _bundle_files(RECORDED_TAR)
    listing = {}
    for line in files["upstreams/sparkbench/tree.txt"].decode().splitlines():
        meta, path = line.split("\t", 1)
        listing[path] = meta.split()[2]
    assert listing["eval_suite.py"] == "be5f71e298aa74b620fd1eb01543d03c2b337a88"
    assert listing["spark_bench.py"] == "8e78d6620b367e83536ad42c59482537e42a7bc0"
    root = tmp_path_factory.mktemp("sparkbench")
    for name in UPSTREAM:
        (root / name).write_bytes(files[f"upstreams/sparkbench/files/{listing[name]}"])
    saved = {name: sys.modules.pop(name) for name in MODULES if name in sys.modules}
    before = set(Path("/tmp").glob("tmp*.py"))
    sys.path.insert(0, str(root))
    try:
        ev = importlib.import_module("eval_suite")
        bench = importlib.import_module("spark_bench")
        scenarios = {sc["id"]: sc for sc in ev.SCENARIOS}
        python = (
            scenarios["CODE-01"]["grade"],
            ev.expect_executable_code(test_fn=lambda ns: (1.0, "ran")),
        )
        sql = (
            scenarios["CODE-02"]["grade"],
            ev.expect_sql_code(schema_sql="CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);"),
        )
        yield Spark(ev, bench, python, sql)
    finally:
        sys.path.remove(str(root))
        for name in MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        # _run_python_safely leaves its file behind where it cannot be written (a surrogate)
        for left in set(Path("/tmp").glob("tmp*.py")) - before:
            with contextlib.suppress(OSError):
                if left.stat().st_size == 0:
                    left.unlink()


def _score(grade: Callable[[dict[str, Any]], Any], resp: dict[str, Any] | None) -> float:
    """``run_suite``'s score of one repeat: the grade, 0 for any exception (the harness runs
    with Python's default warning filters, not pytest's ``error``)."""
    if resp is None:
        return 0.0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            score, _ = grade(dict(resp))
    except Exception:
        return 0.0
    return float(score)


def _real_text(spark: Spark, text: str) -> tuple[list[float], list[float]]:
    resp = {"text": text, "reasoning": "", "tool_calls": [], "total": 1.0}
    return [_score(g, resp) for g in spark.python], [_score(g, resp) for g in spark.sql]


# --- a real server on 127.0.0.1 ----------------------------------------------------------------


class _Served:
    def __init__(self) -> None:
        self.status = 200
        self.body = b""
        self.length = True
        self.headers: dict[str, str] = {}
        self.asked: list[bytes] = []
        self.fetched: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    served: _Served

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", "0"))
        self.served.asked.append(self.rfile.read(size))
        self.send_response(self.served.status)
        self.send_header("Content-Type", "text/event-stream")
        for name, value in self.served.headers.items():
            self.send_header(name, value)
        if self.served.length:
            self.send_header("Content-Length", str(len(self.served.body)))
        self.end_headers()
        self.wfile.write(self.served.body)

    def do_GET(self) -> None:
        """Where a followed redirect goes: the same stream, 200."""
        self.served.fetched.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(self.served.body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass(frozen=True)
class Server:
    url: str
    served: _Served


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    served = _Served()
    handler = type("Handler", (_Handler,), {"served": served})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}/v1", served)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


CODE_01_ASK = [{"role": "user", "content": "Write parse_csv_typed."}]


def _exchange(
    asked: bytes,
    status: int,
    body: bytes,
    cuts: list[int] | None,
    headers: dict[str, str] | None = None,
) -> TransportExchange:
    """The exchange as the observer records it: the request as sent, the reply's bytes as a
    stream of chunks cut at ``cuts`` (None: a whole body)."""
    request = Body(encoding="utf-8", data=asked.decode("utf-8"))
    if cuts is None:
        try:
            response = Body(encoding="utf-8", data=body.decode("utf-8"))
        except UnicodeDecodeError:
            response = Body(encoding="base64", data=base64.b64encode(body).decode("ascii"))
        return TransportExchange(
            schema_version=1, id=1, started=0.0, ended=1.0, method="POST",
            path="/v1/chat/completions", status=status, request_body=request,
            response_body=response, response_headers=headers or {},
        )  # fmt: skip
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    pieces = [(0.01 * i, body[a:b]) for i, (a, b) in enumerate(_pairs(points))]
    return TransportExchange(
        schema_version=1, id=1, started=0.0, ended=1.0, method="POST",
        path="/v1/chat/completions", status=status, request_body=request,
        chunks=stream_chunks(pieces), response_headers=headers or {},
    )  # fmt: skip


def _pairs(points: list[int]) -> list[tuple[int, int]]:
    return list(itertools.pairwise(points))


def _served(
    spark: Spark,
    server: Server,
    status: int,
    body: bytes,
    *,
    length: bool = True,
    headers: dict[str, str] | None = None,
) -> tuple[dict[str, Any] | None, bytes]:
    """The real ``chat_stream`` against ``body`` served with ``status``: its result (None where
    it raised: the repeat scores 0) and the request it sent."""
    server.served.status, server.served.body, server.served.length = status, body, length
    server.served.headers = dict(headers or {})
    server.served.asked.clear()
    try:
        resp = spark.bench.chat_stream(
            server.url, "m", CODE_01_ASK, 800, temperature=0.3, timeout=10
        )
    except Exception:
        resp = None
    assert len(server.served.asked) == 1
    return resp, server.served.asked[0]


def _check(spark: Spark, server: Server, status: int, body: bytes, cuts: list[int] | None,
           *, length: bool = True, headers: dict[str, str] | None = None,
           ) -> tuple[Any, list[float], list[float]]:  # fmt: skip
    """Serve ``body``, grade what Spark reads, and hold ``spark_reply`` to it: a reason only
    where every real grading of that kind scores 0."""
    resp, asked = _served(spark, server, status, body, length=length, headers=headers)
    recorded = {k.lower(): v for k, v in (headers or {}).items() if k.lower() == "location"}
    reply = spark_reply(_exchange(asked, status, body, cuts, recorded))
    assert reply is not None
    python = [_score(g, resp) for g in spark.python]
    sql = [_score(g, resp) for g in spark.sql]
    if reply.python is not None:
        assert python == [0.0, 0.0], (reply, resp, body)
    if reply.sql is not None:
        assert sql == [0.0, 0.0], (reply, resp, body)
    return reply, python, sql


# --- answers ---------------------------------------------------------------------------------

GOOD_PY = """import csv
import io


def parse_csv_typed(text):
    def infer(v):
        if v in ("true", "false"):
            return v == "true"
        if v in ("null", "None"):
            return None
        s = v[1:] if v[:1] == "-" else v
        if s.isdigit():
            return v if len(s) > 1 and s[0] == "0" else int(v)
        try:
            return float(v)
        except ValueError:
            return v

    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    return [dict(zip(rows[0], map(infer, r))) for r in rows[1:]]
"""

GOOD_SQL = (
    "SELECT c.name, SUM(o.amount) - COALESCE((SELECT SUM(r.refund_amount) FROM refunds r "
    "JOIN orders o2 ON r.order_id = o2.id WHERE o2.customer_id = c.id), 0) AS net_revenue\n"
    "FROM customers c JOIN orders o ON o.customer_id = c.id\nGROUP BY c.id, c.name\n"
    "HAVING net_revenue > 40\nORDER BY net_revenue DESC;"
)


def _tabs(code: str) -> str:
    return "\n".join(
        "\t" * ((len(ln) - len(ln.lstrip(" "))) // 4) + ln.lstrip(" ") for ln in code.split("\n")
    )


PY_EDITS: dict[str, Callable[[str], str]] = {
    "as is": lambda c: c,
    "crlf": lambda c: c.replace("\n", "\r\n"),
    "lone cr": lambda c: c.replace("\n", "\r"),
    "mixed ends": lambda c: c.replace("\n\n", "\r\n\r").replace("):\n", "):\r"),
    "tabs": _tabs,
    "tab in one line": lambda c: c.replace("        try:", "\ttry:", 1),
    "future first": lambda c: "from __future__ import annotations\n" + c,
    "future late": lambda c: c + "\nfrom __future__ import annotations\n",
    "future braces": lambda c: "from __future__ import braces\n" + c,
    "nul": lambda c: c.replace("import io", "import io\x00", 1),
    "nul in comment": lambda c: c + "# \x00\n",
    "surrogate": lambda c: c.replace("return None", "return '\ud800'", 1),
    "surrogate comment": lambda c: c + "# \udfff\n",
    "long int 4300": lambda c: c + "BIG = " + "7" * 4300 + "\n",
    "long int 4301": lambda c: c + "BIG = " + "7" * 4301 + "\n",
    "long hex": lambda c: c + "BIG = 0x" + "f" * 6000 + "\n",
    "long int broken": lambda c: c + "BIG = " + "7" * 5000 + "\ndef (:\n",
    "nest 199": lambda c: c + "DEEP = " + "(" * 199 + "1" + ")" * 199 + "\n",
    "nest 201": lambda c: c + "DEEP = " + "(" * 201 + "1" + ")" * 201 + "\n",
    "unary deep": lambda c: c + "DEEP = lambda: " + "-" * 60000 + "1\n",
    "chain deep": lambda c: c + "DEEP = lambda: " + "+".join(["1"] * 100000) + "\n",
    "syntax error": lambda c: c + "def broken(:\n    pass\n",
    "indent error": lambda c: c.replace("    rows =", "     rows =", 1),
    "fffd": lambda c: c + "x = 1 \ufffd\n",
    "fffd in string": lambda c: c + "X = '\ufffd'\n",
    "bom": lambda c: "\ufeff" + c,
    "form feed": lambda c: c.replace("\n\n\ndef", "\n\x0c\ndef"),
    "line separator": lambda c: c + "X = '\u2028'\n",
    "backslash end": lambda c: c + "x = 1 + \\",
    "yield annotation": lambda c: c + "def g():\n    x: (yield) = 1\n",
    "trailing ws": lambda c: c + "   \t ",
}

WRAPS: dict[str, Callable[[str], str]] = {
    "fenced": lambda c: f"```python\n{c}\n```",
    "fenced no lang": lambda c: f"```\n{c}```",
    "fenced tag spaces": lambda c: f"Here:\n```py  \t\n{c}\n```\nDone.",
    "unclosed": lambda c: f"```python\n{c}",
    "bare": lambda c: c,
    "prose": lambda c: f"Sure! Here is the code:\n{c}\nHope it helps.",
    "first block prose": lambda c: f"```text\nno code\n```\n```python\n{c}\n```",
    "crlf fence": lambda c: f"```python\r\n{c}\r\n```",
    "inline fence": lambda c: f"```{c}```",
    "tilde": lambda c: f"~~~python\n{c}\n~~~",
}

SQL_EDITS: dict[str, Callable[[str], str]] = {
    "as is": lambda q: q,
    "lower": lambda q: q.lower(),
    "with": lambda q: "WITH x AS (SELECT 1) " + q,
    "long s": lambda q: "\u017f" + q[1:],
    "prose": lambda q: "The query is:\n" + q,
    "prose no select": lambda q: "I cannot write that query.",
    "crlf": lambda q: q.replace("\n", "\r\n"),
}


def _answer(wrap: str, edit: str, sql: str | None) -> str:
    code = PY_EDITS[edit](GOOD_PY)
    if sql is not None:
        return WRAPS[wrap](SQL_EDITS[sql](GOOD_SQL))
    return WRAPS[wrap](code)


# --- the stream ------------------------------------------------------------------------------

GOOD_USAGES: list[Any] = [
    {"prompt_tokens": 9, "completion_tokens": 40},
    {"completion_tokens": 0},
    {"completion_tokens": None},
    {"completion_tokens": True},
    {"completion_tokens": 2.5},
    {"completion_tokens": -(10**299)},
    {},
    None,
]
ODD_USAGES: list[Any] = [{"completion_tokens": "40"}, {"completion_tokens": []},
                         {"completion_tokens": 10**301}, [1], "usage", 7]  # fmt: skip
BENIGN: list[bytes] = [
    b": keep-alive",
    b"event: message",
    b"",
    b"data: not json",
    b"data: {",
    b"data:",
    b"data: \xff\xfe",
    b"\xef\xbb\xbfdata: [1]",
    b'data: {"choices": []}',
    b'data: {"choices": ""}',
    b'data: {"choices": [{"delta": {"reasoning_content": "think"}}]}',
    b'data: {"choices": [{"delta": {"reasoning": "hm", "tool_calls": [{"id": 1}]}}]}',
    b'data: {"choices": [{"finish_reason": "stop", "delta": {}}]}',
    b'data: {"choices": [{"delta": {"content": ""}}], "usage": 0}',
    b'data: {"choices": [{"delta": {"content": "x"}}]}\rdata: [1]',
    b'data: {"choices": [{"delta": {"content": "def junk(:\\n"}}]}',
    b"data: " + b"[" * 70,
]
HOSTILE: list[bytes] = [
    b'data: {"choices": [{"delta": {"tool_calls": "abc"}}]}',
    b'data: {"choices": [{"delta": {"content": 5}}]}',
    b'data: {"choices": [{"delta": {"reasoning": 5}}]}',
    b'data: {"choices": [{"delta": null}]}',
    b'data: {"choices": {}}',
    b'data: {"choices": null}',
    b'data: {"choices": ["x"]}',
    b"data: [1, 2]",
    b"data: null",
    b'data: "text"',
    b'data: {"x": ' + b"[" * 65 + b"]" * 65 + b"}",
    b'data: {"x": ' + b"1" * 5000 + b"}",
    b"data:[DONE]",
]


@st.composite
def noise(draw: st.DrawFn) -> bytes:
    return draw(st.sampled_from(HOSTILE if draw(st.integers(0, 11)) == 9 else BENIGN))


@st.composite
def streams(draw: st.DrawFn, text: str) -> bytes:
    """``text`` streamed as content deltas, with odd lines, line ends, bytes and usage."""
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=6))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    lines: list[bytes] = []
    for piece in pieces:
        if draw(st.integers(0, 2)) == 2:
            lines.append(draw(noise()))
        delta: dict[str, Any] = {"content": piece}
        if draw(st.booleans()):
            delta["reasoning_content"] = draw(st.sampled_from(["", "why", None]))
        event: dict[str, Any] = {"choices": [{"index": 0, "delta": delta}]}
        ascii_only = draw(st.booleans()) or any(0xD800 <= ord(c) < 0xE000 for c in piece)
        line = json.dumps(event, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
        if draw(st.integers(0, 9)) == 7:
            line = line.replace(b'"content": "', b'"content": "\xff', 1)
        prefix = draw(st.sampled_from([b"data: ", b"data:", b"  data:  "]))
        lines.append(prefix + line)
    odd = draw(st.integers(0, 15)) == 9
    usage = draw(st.sampled_from(ODD_USAGES if odd else GOOD_USAGES))
    if usage is not None:
        lines.append(b"data: " + json.dumps({"choices": [], "usage": usage}).encode())
    if draw(st.booleans()):
        lines.append(b"data: [DONE]")
        lines.append(draw(st.sampled_from(HOSTILE)))
    end = draw(st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\r\n\r\n"]))
    body = end.join(lines)
    return body + end if draw(st.booleans()) else body


STATUSES = [200] * 8 + [201, 206, 299, 302, 400, 404, 429, 500, 503]


@st.composite
def exchanges(draw: st.DrawFn) -> tuple[str, int, bytes, list[int] | None, bool]:
    sql = draw(st.sampled_from([None] * 14 + list(SQL_EDITS)))
    text = _answer(draw(st.sampled_from(list(WRAPS))), draw(st.sampled_from(list(PY_EDITS))), sql)
    body = draw(streams(text))
    cuts = draw(st.none() | st.lists(st.integers(0, 1 << 20), max_size=5))
    return text, draw(st.sampled_from(STATUSES)), body, cuts, draw(st.booleans())


# --- 1. served replies: spark_reply against chat_stream and the graders ----------------------


@settings(SETTINGS, max_examples=250)
@given(case=exchanges())
def test_served_reply_named_zero_only_where_spark_scores_zero(
    spark: Spark, server: Server, case: tuple[str, int, bytes, list[int] | None, bool]
) -> None:
    _, status, body, cuts, length = case
    reply, python, sql = _check(spark, server, status, body, cuts, length=length)
    event(f"python {reply.python}: {'scores' if any(python) else '0'}")
    event(f"sql {reply.sql}: {'scores' if any(sql) else '0'}")


@pytest.mark.parametrize("edit", sorted(PY_EDITS))
def test_each_python_edit_served_plainly(spark: Spark, server: Server, edit: str) -> None:
    """Each edit of a correct answer, fenced, streamed cleanly: the verdict holds against the
    real path, and a verdict of 0 is named where the real compile surely fails."""
    text = _answer("fenced", edit, None)
    event = {"choices": [{"index": 0, "delta": {"content": text}}]}
    usage = {"choices": [], "usage": {"completion_tokens": 5}}
    body = (
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in (event, usage))
        + b"data: [DONE]\n\n"
    )
    reply, _, _ = _check(spark, server, 200, body, [7, 300, 301])
    assert reply.python in (None, NO_COMPILE)


@pytest.mark.parametrize("status", [400, 401, 404, 407, 413, 429, 500, 502, 503, 599])
def test_error_status_is_zero_in_spark(spark: Spark, server: Server, status: int) -> None:
    text = "```python\n" + GOOD_PY + "```\n" + GOOD_SQL
    body = b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n"
    reply, python, sql = _check(spark, server, status, body, None)
    assert reply.python == reply.sql == REPLY_ERROR
    assert python == sql == [0.0, 0.0]


def test_good_answers_score_in_spark(spark: Spark, server: Server) -> None:
    """The fixtures are meaningful: a correct answer scores in each real grader."""
    for text in (_answer("fenced", "as is", None), _answer("fenced", "crlf", None)):
        body = b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode()
        reply, python, _ = _check(spark, server, 200, body + b"\n", None)
        assert reply.python is None and python == [1.0, 1.0]
    body = b"data: " + json.dumps({"choices": [{"delta": {"content": GOOD_SQL}}]}).encode()
    reply, _, sql = _check(spark, server, 200, body, None)
    assert reply.sql is None and sql[0] > 0 and sql[1] == 0.0  # t has no customers table


# --- 2. the compile check and the extraction, text only ----------------------------------------


FRAGMENTS = st.sampled_from(
    [
        "def ", "import ", "class ", "print(", "return ", "```", "```python\n", "```sql ",
        "\n", "\r\n", "\r", "\t", "    ", "\x00", "\ud800", "\udc00", "\ufffd", "\ufeff",
        "x", "1", "(", ")", ":", "=", "'", '"', "#", "\\", "from __future__ import annotations\n",
        "SELECT ", "select 1", "WITH ", ";", "pass", "f(", "lambda: ", "\x0c", "\u2028", "é",
        "1" * 4400, "(" * 120, ")" * 120,
    ]
)  # fmt: skip
TEXTS = st.lists(FRAGMENTS | st.text(max_size=8), max_size=14).map("".join)


@settings(SETTINGS, max_examples=400)
@given(text=TEXTS)
def test_text_verdicts_against_the_graders(spark: Spark, text: str) -> None:
    """``_strip_fences`` and the code found are Spark's own; a reason given by ``_python`` or
    ``_sql`` is a real 0; and no code found by Spark is named as such."""
    ev = spark.ev
    assert sparkbench._strip_fences(text) == ev._strip_fences(text)
    python, sql = _real_text(spark, text)
    found_py, found_sql = sparkbench._python(text), sparkbench._sql(text)
    if found_py is not None:
        assert python == [0.0, 0.0], found_py
    if found_sql is not None:
        assert sql == [0.0, 0.0], found_sql
    if ev._extract_python_code({"text": text}) is None:
        assert found_py == NO_CODE
    if sql[1] == 0.0 and _real_reason(spark, text) == "no SQL query found":
        assert found_sql == NO_CODE


def _real_reason(spark: Spark, text: str) -> str:
    try:
        return str(spark.sql[1]({"text": text})[1])
    except Exception as exc:
        return repr(exc)


def _compile_failure(spark: Spark, code: str) -> str | None:
    """Spark's own ``_run_python_safely`` on ``code`` (the code here only defines and prints):
    its error, None where it ran."""
    ok, _, err = spark.ev._run_python_safely(code)
    return None if ok else str(err)


@pytest.mark.parametrize("edit", sorted(PY_EDITS))
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_python_edit_verdicts(spark: Spark, wrap: str, edit: str) -> None:
    """Every edit in every wrapping: ``_python`` names NO_COMPILE only where Spark's own run of
    that code fails, and where Spark's run fails at compile (SyntaxError, or the file cannot
    be written) in a way no harness setting changes, ``_python`` names it."""
    text = _answer(wrap, edit, None)
    found, err = _held(spark, text)
    if found == NO_COMPILE:
        assert err is not None


def _held(spark: Spark, text: str) -> tuple[str | None, str | None]:
    """``_python``'s reason for ``text`` held to Spark's own path: a reason is a real 0 in both
    graders, and a compile failure Spark surely meets (not a digits limit, not the stack) is
    named. The reason, and Spark's own error running the code (None where it ran)."""
    python, _ = _real_text(spark, text)
    found = sparkbench._python(text)
    if found is not None:
        assert python == [0.0, 0.0], (found, python)
    code = spark.ev._extract_python_code({"text": text})
    if code is None:
        assert found == NO_CODE
        return found, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err = _compile_failure(spark, code)
    compiled = ("SyntaxError", "IndentationError", "TabError", "exec_error")
    if err is not None and "digits" not in err and err.startswith(compiled):
        assert found == NO_COMPILE, err
    return found, err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\ndef f():\r\n    return 1\r\n```", None),
        ("```python\ndef f():\r    return 1\r```", None),
        ("def f():\n\treturn 1\n", None),
        ("def f():\n\treturn 1\n        return 2\n", NO_COMPILE),
        ("from __future__ import annotations\ndef f() -> X: return 1", None),
        ("x = 1\nfrom __future__ import annotations\ndef f(): return 1", NO_COMPILE),
        ("def f():\n    x: (yield) = 1\n", None),
        ("def f(): return '\ud800'", NO_COMPILE),
        ("def f(): return 1\x00", NO_COMPILE),
        ("def f(): return " + "1" * 5000, None),
        ("def f(): return " + "(" * 201 + ")" * 201, NO_COMPILE),
        ("def f(): return " + "-" * 60000 + "1", None),
        ("Here you go: print(", NO_COMPILE),
        ("no code at all", NO_CODE),
        ("```\nreturn 1\n```", NO_COMPILE),
        ("```\n```\nprint(1)", NO_COMPILE),
    ],
)
def test_python_pinned_cases(spark: Spark, text: str, expected: str | None) -> None:
    found = sparkbench._python(text)
    assert found == expected
    python, _ = _real_text(spark, text)
    if expected is not None:
        assert python == [0.0, 0.0]


# --- 3. missed bounds: Spark surely gives 0, spark_reply says "may score" (not false findings) --


def _stream(text: str, *extra: bytes, usage: Any = None) -> bytes:
    lines = [b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode()]
    lines += extra
    if usage is not None:
        lines.append(b"data: " + json.dumps({"choices": [], "usage": usage}).encode())
    return b"\n\n".join([*lines, b"data: [DONE]", b""])


DEEP_JSON = b'data: {"note": ' + b"[" * 65 + b"]" * 65 + b"}"
DEEP_TEXT = b"data: " + b"[" * 70 + b" not json"


@pytest.mark.parametrize("line", [DEEP_JSON, DEEP_TEXT], ids=["deep json", "deep text"])
def test_a_deep_line_leaves_the_answer_read(spark: Spark, server: Server, line: bytes) -> None:
    body = _stream("I will not write code.", line, usage={"completion_tokens": 5})
    reply, python, sql = _check(spark, server, 200, body, None)
    assert python == sql == [0.0, 0.0]
    assert (reply.python, reply.sql) == (NO_CODE, NO_CODE)


@pytest.mark.parametrize(
    ("extra", "usage"),
    [(b"data: [1]", None), (b"data: null", None), (b"", {"completion_tokens": "40"})],
    ids=["array event", "null event", "string count"],
)
def test_a_stream_the_client_raises_on_is_zero(
    spark: Spark, server: Server, extra: bytes, usage: Any
) -> None:
    body = _stream("```python\n" + GOOD_PY + "```", extra, usage=usage)
    reply, python, sql = _check(spark, server, 200, body, None)
    assert python == sql == [0.0, 0.0]
    assert reply.python is not None and reply.sql is not None


@pytest.mark.parametrize(
    ("status", "headers"),
    [(300, {}), (302, {}), (304, {}), (307, {"Location": "/v1/x"}), (308, {"Location": "/v1/x"}),
     (399, {})],
)  # fmt: skip
def test_redirect_urllib_raises_on_is_zero(
    spark: Spark, server: Server, status: int, headers: dict[str, str]
) -> None:
    body = _stream("```python\n" + GOOD_PY + "```", usage={"completion_tokens": 5})
    reply, python, sql = _check(spark, server, status, body, None, headers=headers)
    assert python == sql == [0.0, 0.0]
    assert reply.python == reply.sql == REPLY_ERROR


@pytest.mark.parametrize("status", [301, 302, 303])
def test_redirect_urllib_follows_is_answered_502_by_the_observer(
    spark: Spark, server: Server, status: int
) -> None:
    """Without the observer, urllib follows it (as a GET) and grades that answer. A recorded
    exchange went through the observer, which follows no redirect and answers the harness
    502 (``audit/observer.py``): its answer is 0."""
    body = _stream("```python\n" + GOOD_PY + "```", usage={"completion_tokens": 5})
    headers = {"Location": "/v1/elsewhere"}
    server.served.fetched.clear()
    resp, asked = _served(spark, server, status, body, headers=headers)
    assert server.served.fetched == ["/v1/elsewhere"]
    assert [_score(g, resp) for g in spark.python] == [1.0, 1.0]
    reply = spark_reply(_exchange(asked, status, body, None, {"location": "/v1/elsewhere"}))
    assert reply is not None and reply.python == reply.sql == REPLY_ERROR


def test_an_observed_redirect_is_zero(spark: Spark, server: Server) -> None:
    body = _stream("```python\n" + GOOD_PY + "```", usage={"completion_tokens": 5})
    resp, asked = _served(spark, server, 502, b'{"error": "the observer does not follow"}')
    assert resp is None  # what the harness got through the observer: urllib raised
    recorded = _exchange(asked, 302, body, None, {"location": "/v1/elsewhere"})
    reply = spark_reply(recorded)
    assert reply is not None and reply.python == REPLY_ERROR


@pytest.mark.parametrize("bad", ["\ud800", "\x00"], ids=["surrogate", "nul"])
def test_a_query_sqlite_cannot_be_given_is_zero(spark: Spark, bad: str) -> None:
    text = GOOD_SQL.replace("net_revenue DESC", f"net_revenue DESC -- {bad}")
    _, sql = _real_text(spark, text)
    assert sql == [0.0, 0.0]
    assert sparkbench._sql(text) is not None


# --- 4. generated Python: line ends, indentation, fences, odd characters -------------------------

STATEMENTS = [
    "import os", "from __future__ import annotations", "def f(x):", "return x",
    "class C:", "pass", "print(1)", "x = 1", "if x:", "else:", "y = (1,", "2)",
    "z = '''a", "b'''", "w = 1 + \\", "2", "# c", "@staticmethod", "lambda: 0",
    "BIG = " + "9" * 4301, "s = '\\ud800'", "t = '\u2028'", "try:", "except Exception:",
]  # fmt: skip


@st.composite
def programs(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        indent = draw(st.sampled_from(["", "    ", "\t", "  ", "        ", "\t    ", " \t"]))
        line = draw(st.sampled_from(STATEMENTS))
        if draw(st.integers(0, 9)) == 7:
            line += draw(st.sampled_from(["\x00", "\ud800", "\ufffd", "\x0c", "\ufeff", " "]))
        lines.append(indent + line)
    ends = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r", "\n\r", "\r\r\n"]), min_size=1))
    code = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    wrap = draw(st.sampled_from(list(WRAPS)))
    return WRAPS[wrap](code)


@settings(SETTINGS, max_examples=300)
@given(text=programs())
def test_generated_python_verdicts(spark: Spark, text: str) -> None:
    """A reason from ``_python`` is a real 0 in both graders; a compile failure Spark surely
    meets (not a digits limit, not the stack) is named."""
    found, err = _held(spark, text)
    event(f"{found}: {'compiles' if err is None else err.split(':', 1)[0]}")
