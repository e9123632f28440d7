"""Every reader is total: schema-valid bundles with odd but legal values, through every reader.

Each case edits the evidence of the complete full-profile example and reseals it, so the schema
and integrity hold and only the values are odd: reply bodies whose ``choices`` is an object or a
number, a ``message`` that is a list, a tool call whose ``function`` is a string, a model list
whose ``data`` is not a list, bodies nested 100,000 deep, streamed chunks that are not SSE,
components and quarantine markers outside the profile, base64 bodies that are not base64, and
text that looks like terminal markup. Every case runs in-process through ``audit verify`` (and
``--json``), ``audit show`` (terminal, ``--json`` and ``--html``), ``audit diff`` against the
honest bundle, and ``audit rank`` and ``audit rejudge`` with the honest bundle beside it. Each
must answer with an exit code (0 or 1; 2 only where the case is a refusal) and at most one line
on stderr, never a traceback.
"""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema import canonical_bytes
from bundle_schema.models import ComponentRef
from pins import DEMO
from tests.conftest import DEPLOYMENT_PINS
from tests.data.hostile.generate import read_bundle, reseal

Files = dict[str, tuple[bytes, str]]
Fields = dict[str, Any]
Edit = Callable[[Files, Fields], None]

TRANSPORT = "transport/exchanges.jsonl"
LEDGER = "network/socket-ledger.jsonl"
RESULT = "application/vnd.evidence-audit.component-result+json"
MARKER = "application/vnd.evidence-audit.quarantine-marker+json"
EXAMPLE_MODEL = "reference-model-q8_0"
DEEP = "[" * 100_000 + "]" * 100_000
"""JSON text nested 100,000 deep."""
MODELS, PROBE_RESPONSE, PROBE_TOOL, CODING, STREAMED = 0, 1, 2, 3, 4
"""The example's exchanges: the model list, the two direct probes, a coding reply, a stream."""


# --- editing the example's evidence -------------------------------------------------------------


def _records(files: Files, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in files[name][0].splitlines()]


def _put_records(files: Files, name: str, records: list[dict[str, Any]]) -> None:
    data = b"".join(canonical_bytes(r) + b"\n" for r in records)
    files[name] = (data, files[name][1])


def _exchange(index: int, change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(files: Files, _fields: Fields) -> None:
        exchanges = _records(files, TRANSPORT)
        change(exchanges[index])
        _put_records(files, TRANSPORT, exchanges)

    return edit


def _body(index: int, value: Any, which: str = "response_body", raw: bool = False) -> Edit:
    """Exchange ``index``'s body replaced by ``value`` as JSON text (``raw``: the text itself)."""
    text = value if raw else json.dumps(value, separators=(",", ":"))
    return _exchange(index, lambda e: e.update({which: {"encoding": "utf-8", "data": text}}))


def _reply(message: Any, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]} | extra


def _tool_reply(call: Any) -> dict[str, Any]:
    return {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
        "usage": {"completion_tokens": 18},
    }


def _chunks(*data: str) -> Edit:
    return _exchange(
        STREAMED,
        lambda e: e.update(chunks=[{"t": 0.1 * (i + 1), "data": d} for i, d in enumerate(data)]),
    )


def _json_record(name: str, change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(files: Files, _fields: Fields) -> None:
        value = json.loads(files[name][0])
        change(value)
        files[name] = (canonical_bytes(value), files[name][1])

    return edit


def _ledger(index: int, **changes: Any) -> Edit:
    def edit(files: Files, _fields: Fields) -> None:
        entries = _records(files, LEDGER)
        entries[index] |= changes
        _put_records(files, LEDGER, entries)

    return edit


def _component(name: str, result: str, component: str | None = None) -> Edit:
    """A manifest component ``name`` whose result record (added when absent) names
    ``component``."""

    def edit(files: Files, fields: Fields) -> None:
        if result not in files:
            record = {
                "schema_version": 1,
                "component": component or name,
                "status": "COMPLETED",
                "started_at": "2026-11-02T11:40:03Z",
                "ended_at": "2026-11-02T11:41:48Z",
                "metrics": {"score": 50},
            }
            files[result] = (canonical_bytes(record), RESULT)
        fields["components"] = [*fields["components"], ComponentRef(name=name, result=result)]

    return edit


def _marker(component: str) -> Edit:
    def edit(files: Files, _fields: Fields) -> None:
        marker = {"schema_version": 1, "component": component, "upstream_reason": "odd marker"}
        files[f"components/{component}/quarantine.json"] = (canonical_bytes(marker), MARKER)

    return edit


def _field(key: str, value: Any) -> Edit:
    def edit(_files: Files, fields: Fields) -> None:
        fields[key] = value

    return edit


def _model(**changes: Any) -> Edit:
    def edit(_files: Files, fields: Fields) -> None:
        fields["model"] = fields["model"].model_dump(mode="json") | changes

    return edit


def _result(name: str, **changes: Any) -> Edit:
    return _json_record(f"components/{name}/result.json", lambda r: r.update(changes))


def _renamed(runtime: str) -> Edit:
    """The model served under another runtime id, everywhere the bundle names it."""

    def edit(files: Files, fields: Fields) -> None:
        fields["model"] = fields["model"].model_dump(mode="json") | {"runtime_model_id": runtime}
        exchanges = _records(files, TRANSPORT)
        for exchange in exchanges:
            if exchange["response_model"] is not None:
                exchange["response_model"] = runtime
            for which in ("request_body", "response_body"):
                if exchange[which] is not None:
                    data = exchange[which]["data"].replace(EXAMPLE_MODEL, json.dumps(runtime)[1:-1])
                    exchange[which]["data"] = data
            for chunk in exchange["chunks"]:
                chunk["data"] = chunk["data"].replace(EXAMPLE_MODEL, json.dumps(runtime)[1:-1])
        _put_records(files, TRANSPORT, exchanges)

    return edit


def _both(*edits: Edit) -> Edit:
    def edit(files: Files, fields: Fields) -> None:
        for one in edits:
            one(files, fields)

    return edit


# --- the cases ----------------------------------------------------------------------------------

COMMANDS = ("verify", "verify-json", "show", "show-json", "show-html", "diff", "rank", "rejudge")


@dataclass(frozen=True)
class Case:
    """One odd but schema-valid bundle."""

    name: str
    edit: Edit
    refusal: bool = False
    """Exit 2 (a refusal with one line) is a correct answer too."""

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


READY = {"role": "assistant", "content": "READY"}
CALL = {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}


def _call(**function: Any) -> Edit:
    """The tool-call probe's reply, its first call's ``function`` being ``function``."""
    return _body(PROBE_TOOL, _tool_reply(CALL | {"function": function}))


def _calls(calls: Any) -> Edit:
    """The tool-call probe's reply, its message's ``tool_calls`` being ``calls``."""
    reply = {"choices": [{"finish_reason": "tool_calls", "message": {"tool_calls": calls}}]}
    return _body(PROBE_TOOL, reply)


def _listing(data: Any) -> Edit:
    return _body(MODELS, {"object": "list", "data": data})


def _not_base64(index: int, which: str, data: str) -> Edit:
    return _exchange(index, lambda e: e.update({which: {"encoding": "base64", "data": data}}))


def _upstreams(**changes: Any) -> Edit:
    def edit(_files: Files, fields: Fields) -> None:
        fields["upstreams"] = [u.model_copy(update=changes) for u in fields["upstreams"]]

    return edit


LONG_LISTING = [{"id": f"m{i:03d}-" + "x" * 100} for i in range(100)]
ODD_CHUNKS = ('data: {"choices":7}\n\n', "data: 5\n\n", 'data: {"choices":[{"delta":[]}]}\n\n')
UNKNOWN_PINS = {"id": "gx10-qualification-v99", "digest": "sha256:" + "0" * 64}
FAILED = {"status": "FAILED"}

CASES = (
    # replies whose shape is not a chat completion's
    Case("choices is an object", _body(PROBE_RESPONSE, {"choices": {"0": {"message": READY}}})),
    Case("choices is a number", _body(PROBE_RESPONSE, {"choices": 7})),
    Case("choices is a string", _body(PROBE_RESPONSE, {"choices": "READY"})),
    Case("choices is a list of numbers", _body(PROBE_RESPONSE, {"choices": [1, 2.5]})),
    Case("choices of a coding reply is a number", _body(CODING, {"choices": 7})),
    Case(
        "message is a list",
        _body(PROBE_RESPONSE, _reply(["READY"])),
    ),
    Case(
        "message is a string",
        _body(PROBE_RESPONSE, _reply("READY")),
    ),
    Case("message content is an object", _body(PROBE_RESPONSE, _reply({"content": {"a": 1}}))),
    Case("usage is a list", _body(PROBE_RESPONSE, _reply(READY, usage=[2]))),
    Case("reply is a bare number", _body(PROBE_RESPONSE, 5)),
    Case("reply is a list", _body(PROBE_RESPONSE, [READY])),
    Case("tool call function is a string", _body(PROBE_TOOL, _tool_reply({"function": "f"}))),
    Case("tool call arguments is a number", _call(name="get_weather", arguments=5)),
    Case("tool call arguments is an object", _call(name="get_weather", arguments={"city": "Oslo"})),
    Case("tool call arguments is a list", _call(name="get_weather", arguments=["Oslo"])),
    Case("tool call name is an object", _call(name={"x": 1}, arguments="{}")),
    Case("tool calls is an object", _calls({"0": CALL})),
    Case("tool calls is a string", _calls("get_weather")),
    Case("tool call is a number", _body(PROBE_TOOL, _tool_reply(5))),
    # the endpoint's model list
    Case("models data is a number", _listing(5)),
    Case("models data is a string", _listing("qwen")),
    Case("models data is an object", _listing({"id": "qwen"})),
    Case("models items are not objects", _listing([1, "x", None, []])),
    Case("models list is a bare list", _body(MODELS, [{"id": "qwen"}])),
    Case(
        "models id is a 5000-digit number",
        _body(MODELS, '{"data":[{"id":' + "9" * 5000 + "}]}", raw=True),
    ),
    Case(
        "models id is a lone surrogate",
        _body(MODELS, '{"data":[{"id":"\\ud800"}]}', raw=True),
    ),
    Case("models list longer than a reason", _listing(LONG_LISTING)),
    # nested 100,000 deep
    Case("reply nested 100,000 deep", _body(PROBE_RESPONSE, DEEP, raw=True)),
    Case("models list nested 100,000 deep", _body(MODELS, DEEP, raw=True)),
    Case("request nested 100,000 deep", _body(CODING, DEEP, "request_body", raw=True)),
    Case("chunk nested 100,000 deep", _chunks("data: " + DEEP + "\n\n", "data: [DONE]\n\n")),
    # streams
    Case("chunks are not SSE", _chunks("this is not server-sent events", "\n\n\n", "{")),
    Case("chunks carry odd JSON", _chunks(*ODD_CHUNKS, "data: [[[\n\n")),
    Case("chunk carries odd reasoning", _chunks('data: {"choices":[{"delta":{"reasoning":5}}]}')),
    Case("chunk says finish length", _chunks('data: {"choices":[{"finish_reason": "length"}]}')),
    # base64 that is not
    Case("reply body is not base64", _not_base64(PROBE_RESPONSE, "response_body", "%% no %%")),
    Case("request body is not base64", _not_base64(CODING, "request_body", "==")),
    Case("models body is not base64", _not_base64(MODELS, "response_body", "*")),
    # components and markers outside the profile
    Case("component result for bogus", _component("bogus", "components/bogus/result.json")),
    Case(
        "component bogus naming coding's result",
        _component("bogus", "components/coding/result.json"),
    ),
    Case("component result naming another component", _result("coding", component="hermes")),
    Case("quarantine marker naming performance", _marker("performance")),
    Case("quarantine marker naming bogus", _marker("bogus")),
    Case("profile outside the pin set", _field("profile", "nonexistent")),
    # text that reaches the terminal and the HTML
    Case(
        "reply from a model named like markup",
        _exchange(CODING, lambda e: e.update(response_model="[/]")),
    ),
    Case(
        "runtime model id like markup",
        _model(runtime_model_id="[/bold] [link=x]"),
    ),
    Case("upstream repository like markup", _upstreams(repository="[/]")),
    Case(
        "outside attempt by a process named like markup",
        _ledger(1, address="203.0.113.9", process="[/]"),
    ),
    Case("loopback address like markup", _ledger(1, address="[/]")),
    Case(
        "component failed with a markup reason",
        _result("coding", **FAILED, reason="[/] :warning: [b"),
    ),
    Case(
        "component failed with the longest reason",
        _result("coding", **FAILED, reason="r" * 4096),
    ),
    Case(
        "exchange error like markup", _exchange(CODING, lambda e: e.update(error="[/]", status=500))
    ),
    Case("component with no times", _result("coding", started_at=None, ended_at=None)),
    Case("component time out of range", _result("coding", started_at="2026-13-45T99:99:99Z")),
    Case("component time in year 0", _result("coding", started_at="0000-01-01T00:00:00Z")),
    Case("component time on a leap second", _result("coding", ended_at="2026-11-02T23:59:60Z")),
    Case(
        "component ends before it starts",
        _result("coding", started_at="2026-11-02T23:00:00.123456789Z"),
    ),
    Case(
        "exchange at a huge time",
        _both(
            _exchange(CODING, lambda e: e.update(started=1e300, ended=1e300)),
            _ledger(1, address="203.0.113.9", t=1e300),
        ),
    ),
    Case("pin set unknown to the verifier", _field("pin_set", UNKNOWN_PINS), refusal=True),
    Case("served model named with a pipe and a line break", _renamed("qwen|3\ncoder")),
    Case("exchange with no status", _exchange(CODING, lambda e: e.update(status=None))),
    Case(
        "every exchange has the same id",
        _both(*(_exchange(i, lambda e: e.update(id=1)) for i in range(5))),
    ),
)


# --- running them -------------------------------------------------------------------------------


def _beside_honest(case: Case, honest: Path, both: Path) -> Path:
    """The case built from ``honest`` as ``both/a-case``, beside a copy of it (``b-honest``)."""
    manifest, files = read_bundle(honest)
    fields: Fields = {
        "components": list(manifest.components),
        "upstreams": list(manifest.upstreams),
        "model": manifest.model,
    }
    case.edit(files, fields)
    reseal(both / "a-case", manifest, files, fields)
    shutil.copytree(honest, both / "b-honest")
    return both


@pytest.fixture(scope="module")
def prepared(
    built_examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Case], tuple[Path, Path, Path]]:
    """Build a case (once): (its bundle, the honest bundle, a directory holding both)."""
    honest = built_examples["gx10-full-qualified"]
    root = tmp_path_factory.mktemp("total-readers")
    built: dict[str, tuple[Path, Path, Path]] = {}

    def build(case: Case) -> tuple[Path, Path, Path]:
        if case.slug not in built:
            both = _beside_honest(case, honest, root / case.slug)
            built[case.slug] = (both / "a-case", honest, both)
        return built[case.slug]

    return build


def _argv(command: str, bundle: Path, honest: Path, both: Path, html: Path) -> list[str]:
    return {
        "verify": ["verify", str(bundle)],
        "verify-json": ["verify", "--json", str(bundle)],
        "show": ["show", str(bundle)],
        "show-json": ["show", "--json", str(bundle)],
        "show-html": ["show", "--html", str(html), str(bundle)],
        "diff": ["diff", str(honest), str(bundle)],
        "rank": ["rank", str(both)],
        "rejudge": ["rejudge", str(both), "--pins", DEMO],
    }[command]


def _params() -> list[Any]:
    params = []
    for case in CASES:
        for command in COMMANDS:
            params.append(pytest.param(case, command, id=f"{case.slug}-{command}"))
    return params


@pytest.mark.parametrize(("case", "command"), _params())
def test_reader_is_total(
    case: Case,
    command: str,
    prepared: Callable[[Case], tuple[Path, Path, Path]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle, honest, both = prepared(case)
    html = tmp_path / "report.html"
    argv = _argv(command, bundle, honest, both, html)
    try:
        code = main(argv)
    except BaseException:  # any exception is the failure this test looks for
        pytest.fail(f"audit {' '.join(argv)} raised:\n{traceback.format_exc()}")
    captured = capsys.readouterr()
    allowed = {0, 1, 2} if case.refusal else {0, 1}
    assert code in allowed, f"exit {code}: {captured.err}"
    assert "Traceback" not in captured.err
    assert captured.err.count("\n") <= 1, captured.err
    if code == 2:
        assert captured.err.startswith("audit ") and captured.err.endswith("\n"), captured.err
    if command == "show-html" and code in (0, 1):
        assert html.read_text(encoding="utf-8").startswith("<!doctype html>")
    if command in ("verify-json", "show-json") and code in (0, 1):
        json.loads(captured.out)


def test_every_case_reaches_the_readers(
    prepared: Callable[[Case], tuple[Path, Path, Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The cases attack values, not the format: none is refused, and where integrity fails it
    is with findings that name the entry or field they are about."""
    for case in CASES:
        if case.refusal:
            continue
        bundle, _, _ = prepared(case)
        try:
            main(["verify", "--json", str(bundle)])
        except BaseException:  # a crash is the other test's finding
            capsys.readouterr()
            continue
        integrity = json.loads(capsys.readouterr().out)["integrity"]
        if integrity["status"] != "ok":
            assert integrity["findings"], case.name
            for finding in integrity["findings"]:
                assert finding["entry"] or finding["path"], (case.name, finding)


def test_rank_markdown_keeps_a_model_name_in_its_cell(
    ranked_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A runtime model id with a ``|`` and a line break stays one cell of one ranked row (the
    example recorded under a deployment's pin set, so that it ranks)."""
    case = next(c for c in CASES if c.slug == "served-model-named-with-a-pipe-and-a-line-break")
    both = _beside_honest(case, ranked_examples["gx10-full-qualified"], tmp_path / "both")
    assert main(["rank", "--markdown", "--pins", str(DEPLOYMENT_PINS), str(both)]) == 0
    out = capsys.readouterr().out
    ranked = [line for line in out.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert len(ranked) == 2, out
    assert any("| qwen\\|3 coder |" in line for line in ranked), ranked
    for line in ranked:  # 12 columns: #, run, model, policy, six scores, timestamp, bundle
        assert line.replace("\\|", "").count("|") == 13, line
