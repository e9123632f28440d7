"""The direct-probe contracts a pin set can name: each probe's prompt and the one answer that
passes. A pin set names its contract by id (``[direct_probe] contract``); what the contract asks
and expects is fixed here, never taken from a bundle's probe record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["PROBE_CONTRACTS", "ProbeContract"]


@dataclass(frozen=True)
class ProbeContract:
    """One contract's two probes: the exact-answer probe and the structured tool-call probe."""

    response_prompt: str
    response_expected: str
    tool_prompt: str
    tool_expected: Mapping[str, Any]
    tool: Mapping[str, Any]
    """The tool the tool-call probe offers (an OpenAI ``tools`` entry)."""
    sampling: Mapping[str, Any] = field(default_factory=dict)
    """Request fields every probe request sets to exactly these values (``temperature``,
    ``seed``), so that a probe asks the same thing every run; the verifier holds each probe's
    recorded request to them. Empty: the contract pins no sampling."""

    def prompt(self, kind: str) -> str:
        return self.response_prompt if kind == "response" else self.tool_prompt

    def expected(self, kind: str) -> Any:
        return self.response_expected if kind == "response" else dict(self.tool_expected)

    def request(self, kind: str, model: str, ceiling: int) -> dict[str, Any]:
        """The body of a probe's chat completion request, before the run's reasoning policy is
        written into it: exactly what the runner sends, and all the verifier accepts."""
        body: dict[str, Any] = {"model": model, "max_tokens": ceiling, **self.sampling}
        if kind == "tool_call":
            body |= {"tool_choice": "required", "tools": [dict(self.tool)]}
        return body | {"messages": [{"role": "user", "content": self.prompt(kind)}]}


_V1 = ProbeContract(
    response_prompt="Reply with exactly: READY",
    response_expected="READY",
    tool_prompt="What is the weather in Oslo? Use the tool.",
    tool_expected={"name": "get_weather", "arguments": {"city": "Oslo"}},
    tool={
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
)

PROBE_CONTRACTS: Mapping[str, ProbeContract] = {
    "gx10-direct-probe-v1": _V1,
    # v1's probes with pinned sampling: greedy decoding and a fixed seed, so that the probe
    # verdict of one deployment does not change from run to run
    "gx10-direct-probe-v2": replace(_V1, sampling={"temperature": 0, "seed": 42}),
}
"""Every known contract, by id."""
