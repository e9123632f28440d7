"""Checks of a real run's bundle that derive what the verdict must be from its raw evidence:
shared by the live test (a run made now) and the recorded real bundle's test (a run kept)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pins import CURRENT, load_builtin
from tests.paths import PINS

LOOPBACK = ("127.", "::1", "localhost")


class Bundle:
    """A sealed bundle's evidence, read by logical name (the test's own reader)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest = json.loads((root / "manifest.json").read_bytes())
        self.evidence: dict[str, Any] = self.manifest["evidence"]

    def blob(self, name: str) -> bytes:
        digest = self.evidence[name]["digest"].removeprefix("sha256:")
        return (self.root / "blobs" / "sha256" / digest).read_bytes()

    def json(self, name: str) -> Any:
        return json.loads(self.blob(name))

    def lines(self, name: str) -> list[Any]:
        return [json.loads(line) for line in self.blob(name).splitlines() if line.strip()]


def reply(exchange: dict[str, Any]) -> Any:
    """The exchange's reply body as JSON (None when it is not UTF-8 JSON)."""
    body = exchange.get("response_body") or {}
    utf8 = isinstance(body, dict) and body.get("encoding") == "utf-8"
    text = body.get("data") if utf8 else None
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def message(exchange: dict[str, Any]) -> dict[str, Any]:
    body = reply(exchange)
    choices = body.get("choices") if isinstance(body, dict) else None
    message = choices[0].get("message") if choices else None
    return message if isinstance(message, dict) else {}


def calls_get_weather_in_oslo(message: dict[str, Any]) -> bool:
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "null")
        except ValueError:
            continue
        if function.get("name") == "get_weather" and arguments == {"city": "Oslo"}:
            return True
    return False


def check_gates(bundle: Bundle, exchanges: list[dict[str, Any]], verdict: dict[str, Any]) -> None:
    """The gates, as the raw evidence says they must go."""
    gates = {g["id"]: g for g in verdict["gates"]}
    by_id = {e["id"]: e for e in exchanges}
    reply = message(by_id[bundle.json("probes/direct-response.json")["exchange"]])
    if (reply.get("content") or "").strip() != "READY":
        assert gates["direct_response"]["status"] == "fail", gates["direct_response"]
    call = message(by_id[bundle.json("probes/tool-call.json")["exchange"]])
    if not calls_get_weather_in_oslo(call):
        assert gates["tool_call_protocol"]["status"] == "fail", gates["tool_call_protocol"]
    ledger = bundle.lines("network/socket-ledger.jsonl")
    off = [entry for entry in ledger if not str(entry.get("address", "")).startswith(LOOPBACK)]
    # a Unix socket is the sandbox's own but one that connected in the host's /run
    off = [e for e in off if e.get("family") != "AF_UNIX" or (
        str(e.get("address", "")).startswith(("/run/", "/var/run/"))
        and e.get("outcome") in ("connected", "in-progress"))]  # fmt: skip
    if not off:  # an empty ledger (no harness connected) is isolation held as well
        assert gates["network_isolation"]["status"] == "pass", gates["network_isolation"]


def check_outcome(verdict: dict[str, Any]) -> None:
    """The verdict follows the gates in the seed's precedence, and says why."""
    statuses = Counter(g["status"] for g in verdict["gates"])
    reasons = "\n".join(verdict["reasons"])
    if statuses["infra"]:
        assert verdict["outcome"] == "INFRA_ERROR"
        for gate in verdict["gates"]:
            if gate["status"] == "infra":
                assert gate["id"] in reasons
    elif statuses["fail"]:
        assert verdict["outcome"] in ("NOT_QUALIFIED", "INFRA_ERROR")
        if verdict["outcome"] == "NOT_QUALIFIED":
            for gate in verdict["gates"]:
                if gate["status"] == "fail":
                    assert gate["id"] in reasons
    if verdict["outcome"] == "QUALIFIED":
        assert set(statuses) == {"pass"}
    if verdict["rankable"]:
        assert verdict["outcome"] == "QUALIFIED"


# The recorded real bundle's draw (examples/recorded/, ADR 0046): three test entries of each of
# bfcl-eval's 13 single_turn categories, random.Random(1).sample of each category's ids in
# bfcl-eval 2026.3.23's data, sorted.
RECORDED_DRAW = {
    "simple_python": ["simple_python_291", "simple_python_391", "simple_python_68"],
    "simple_java": ["simple_java_17", "simple_java_72", "simple_java_97"],
    "simple_javascript": ["simple_javascript_36", "simple_javascript_48", "simple_javascript_8"],
    "multiple": ["multiple_145", "multiple_195", "multiple_34"],
    "parallel": ["parallel_145", "parallel_195", "parallel_34"],
    "parallel_multiple": ["parallel_multiple_145", "parallel_multiple_195", "parallel_multiple_34"],
    "irrelevance": ["irrelevance_145", "irrelevance_216", "irrelevance_34"],
    "live_simple": ["live_simple_130-84-0", "live_simple_32-9-0", "live_simple_68-32-0"],
    "live_multiple": ["live_multiple_129-50-1", "live_multiple_275-127-10",
                      "live_multiple_522-150-10"],
    "live_parallel": ["live_parallel_13-9-0", "live_parallel_4-1-0", "live_parallel_9-5-0"],
    "live_parallel_multiple": ["live_parallel_multiple_18-16-0", "live_parallel_multiple_2-2-0",
                               "live_parallel_multiple_4-3-0"],
    "live_irrelevance": ["live_irrelevance_137-13-3", "live_irrelevance_582-182-2",
                         "live_irrelevance_867-353-0"],
    "live_relevance": ["live_relevance_13-13-0", "live_relevance_4-4-0", "live_relevance_9-9-0"],
}  # fmt: skip
RECORDING_PINS = "gx10-qualification-v5-bfcl-draw"


def recording_pins(target: Path) -> Path:
    """The pin set the recorded real bundle is made under, written to ``target``: the shipped
    ``gx10-qualification-v5`` with another id and bfcl-eval's gate on :data:`RECORDED_DRAW`
    instead of its 3,641 entries (hours on two cores). Its program is the shipped one after a
    line that takes the draw from its arguments (one ``category=id,id,id`` each: the pin set
    names every entry; no braces, which a command reads as placeholders) and writes it where
    ``bfcl generate --run-ids`` reads it, among the outputs: the draw is evidence of the run."""
    text = (PINS / f"{CURRENT}.toml").read_text()
    assert load_builtin(CURRENT).pins.id == CURRENT
    take = (
        "import json, pathlib, sys\n"
        'i = sys.argv.index("generate")\n'
        'draw = dict((k, v.split(",")) for k, v in (a.split("=") for a in sys.argv[4:i]))\n'
        "del sys.argv[4:i]\n"
        'pathlib.Path(sys.argv[2], "test_case_ids_to_generate.json").write_text(json.dumps(draw))\n'
    )
    categories = "".join(f'           "{c}={",".join(ids)}",\n' for c, ids in RECORDED_DRAW.items())
    edits = {
        f'id = "{CURRENT}"\n': f'id = "{RECORDING_PINS}"\n',
        "-c\", '''\nimport os, sys\n": f"-c\", '''\n{take}import os, sys\n",
        '"{endpoint}/v1",\n           "generate", "--test-category", "single_turn",\n'
        '           "--then", "evaluate", "--test-category", "single_turn"]': (
            f'"{{endpoint}}/v1",\n{categories}           "generate", "--run-ids",\n'
            '           "--then", "evaluate", "--test-category", "single_turn", "--partial-eval"]'
        ),
    }
    for old, new in edits.items():
        assert text.count(old) == 1, f"{CURRENT}.toml no longer holds {old!r}"
        text = text.replace(old, new)
    head = (
        f"# {RECORDING_PINS}: the pin set examples/recorded/ was made under, written by\n"
        f"# tests/real_runs.py (recording_pins) from {CURRENT}: the same in all but its id and\n"
        "# bfcl-eval's gate, which runs a draw of 39 of its 3,641 single_turn entries (ADR 0046).\n"
        "# Not for qualifying a deployment: its gate is a sample.\n#\n"
    )
    target.write_text(head + text)
    return target
