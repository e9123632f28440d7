"""Checks of a real run's bundle that derive what the verdict must be from its raw evidence:
shared by the live test (a run made now) and the recorded real bundle's test (a run kept)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

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
