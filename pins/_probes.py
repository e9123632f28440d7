"""The direct-probe contracts a pin set can name: each probe's prompt and the one answer that
passes. A pin set names its contract by id (``[direct_probe] contract``); what the contract asks
and expects is fixed here, never taken from a bundle's probe record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

    def prompt(self, kind: str) -> str:
        return self.response_prompt if kind == "response" else self.tool_prompt

    def expected(self, kind: str) -> Any:
        return self.response_expected if kind == "response" else dict(self.tool_expected)


PROBE_CONTRACTS: Mapping[str, ProbeContract] = {
    "gx10-direct-probe-v1": ProbeContract(
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
    ),
}
"""Every known contract, by id."""
