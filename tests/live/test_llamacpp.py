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
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import REPO
from tests.live.engine import free_port, smollm2_gguf
from tests.real_runs import (
    RECORDED_DRAW,
    RECORDING_PINS,
    Bundle,
    check_gates,
    check_outcome,
    recording_pins,
    reply,
)
from verify.replies import runtime_name

# a real engine's run takes minutes to hours on two cores (the bfcl-eval gate): no per-test limit
pytestmark = [pytest.mark.live, pytest.mark.timeout(0)]

QUICKSTART = REPO / "docs" / "quickstart.md"
_BLOCK = re.compile(r"<!-- live-test: ([\w-]+) -->\n```(?:sh|console)\n(.*?)```", re.S)


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


@dataclass
class _Run:
    """A quickstart run: its working directory, the bundle, the verdict and the steps' times."""

    work: Path
    out: str
    bundle: Bundle
    verdict: dict[str, Any]
    exchanges: list[dict[str, Any]]
    timings: list[dict[str, Any]]


def _quickstart(
    server_kind: str, gguf: Path, engine_bin: Path, tmp_path: Path, **values: str
) -> _Run:
    """The quickstart's setup block (``values`` and a free port, the model and the mirrors
    given), its ``server_kind`` block as the server (``engine_bin`` first on its PATH) and its
    run blocks in order; then the checks every honest run passes, whatever the engine."""
    blocks = quickstart_blocks()
    kinds = [kind for kind, _ in blocks]
    assert kinds[0] == "setup" and kinds.count("setup") == 1 and kinds.count(server_kind) == 1
    assert kinds.count("run") >= 3, kinds
    port = free_port()
    values |= {"PORT": str(port), "MODEL": str(gguf)}
    if mirrors := os.environ.get("EVIDENCE_AUDIT_LIVE_MIRRORS"):  # offline: local clones
        values["MIRRORS"] = shlex.quote(mirrors)
    setup = _setup(blocks[0][1], **values)
    out = _variable(setup, "OUT")
    work = tmp_path / "work"
    work.mkdir()
    for venv in (".venv", ".venv-harnesses", ".venv-bfcl"):
        (work / venv).symlink_to(REPO / venv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIDENCE_AUDIT_")}
    server_env = env | {"PATH": f"{engine_bin}{os.pathsep}{env.get('PATH', '')}"}
    server = next(text for kind, text in blocks if kind == server_kind)

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
                capture_output=True, text=True, timeout=6 * 3600, check=False,
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
    # a run whose pinned harnesses could not be checked out ran none of them: the sandbox, the
    # real upstreams and their readers were never exercised, and this test proves nothing
    ran = [n for n in bundle.evidence if n.startswith("logs/") and n.endswith(".stdout.txt")]
    if not ran:
        checkout = next((g for g in verdict["gates"] if g["id"] == "upstream_checkout"), {})
        pytest.fail(
            "no pinned harness ran (no checkout could be made: "
            f"{checkout.get('reason', 'see the verdict')}); without network, give local clones "
            "of the pinned upstreams: make test-live LIVE_MIRRORS='--mirror NAME=PATH ...'"
        )
    assert (work / f"{out}.html").stat().st_size > 0
    assert (work / f"{out}.tar").stat().st_size > 0

    # The bundle is whole and the runner's claims are the verifier's replay.
    assert verdict["integrity"]["findings"] == []
    assert verdict["claims"]["match"], verdict["claims"]

    # The identity: the weights' own bytes.
    assert (
        bundle.manifest["model"]["digest"]
        == "sha256:" + hashlib.sha256(gguf.read_bytes()).hexdigest()
    )

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

    check_gates(bundle, exchanges, verdict)
    check_outcome(verdict)
    return _Run(work, out, bundle, verdict, exchanges, timings)


def _summary(run: _Run, engine: str) -> dict[str, Any]:
    """What ``EVIDENCE_AUDIT_LIVE_KEEP`` keeps beside the bundle: the run in figures."""
    bundle, verdict, exchanges = run.bundle, run.verdict, run.exchanges
    components = {
        name.split("/")[1]: bundle.json(name)
        for name in bundle.evidence
        if name.startswith("components/") and name.endswith("/result.json")
    }
    return {
        "engine": engine,
        "timings": run.timings,
        "exchanges": len(exchanges),
        "exchanges_by_component": Counter(str(e["component"]) for e in exchanges),
        "streamed_chunks": sum(len(e.get("chunks") or ()) for e in exchanges),
        "ledger_entries": len(bundle.lines("network/socket-ledger.jsonl")),
        "bundle_bytes": _size(bundle.root),
        "blobs": len(bundle.evidence),
        "components": {c: {k: r[k] for k in ("status", "started_at", "ended_at", "metrics")}
                       for c, r in sorted(components.items())},
        "verdict": {k: verdict[k] for k in ("outcome", "result_validity", "profile_decision",
                                            "rankable", "reasons", "scores")},
        "gates": {g["id"]: [g["status"], g["reason"]] for g in verdict["gates"]},
    }  # fmt: skip


def test_the_quickstart_qualifies_a_real_server_honestly(live_python: Path, tmp_path: Path) -> None:
    gguf = smollm2_gguf(live_python)
    run = _quickstart("server", gguf, live_python.parent, tmp_path)
    server = next(text for kind, text in quickstart_blocks() if kind == "server")
    if alias := re.search(r"--model_alias (\S+)", server):  # the name the server gives it
        assert run.bundle.manifest["model"]["runtime_model_id"] == alias.group(1)
    _keep(run.bundle.root, run.work, run.out,
          _summary(run, f"llama-cpp-python server, {gguf.name}"))  # fmt: skip


def test_the_quickstart_qualifies_llama_cpp_s_own_server_honestly(
    live_python: Path, llama_server: Path, tmp_path: Path
) -> None:
    """The C++ ``llama-server`` as the quickstart starts it (no alias: it lists the weights'
    path as the model id, answers ``/props`` and stamps a ``system_fingerprint``), the smoke
    profile (Spark Bench's coding and Infermark's performance)."""
    gguf = smollm2_gguf(live_python)
    run = _quickstart("cpp-server", gguf, llama_server.parent, tmp_path, PROFILE="smoke")
    model = run.bundle.manifest["model"]
    by_path = {e["path"]: e for e in run.exchanges if e["component"] == "identity"}

    # The model's name is what the server lists, its file name when that is a path.
    listed = [m["id"] for m in reply(by_path["/v1/models"])["data"]]
    assert len(listed) == 1, listed
    assert model["runtime_model_id"] == runtime_name(listed[0])
    assert "/" not in model["runtime_model_id"], model
    # The engine is what its /props answer says, recorded as transport evidence.
    props = reply(by_path["/props"])
    assert by_path["/props"]["status"] == 200 and "build_info" in props, props
    assert model["engine"] == "llama.cpp"
    assert model["engine_version"] == props["build_info"], (model, props["build_info"])
    # No reply names another model: the identity gate found no fallback.
    gates = {g["id"]: g for g in run.verdict["gates"]}
    assert gates["model_identity"]["status"] == "pass", gates["model_identity"]
    components = {n.split("/")[1] for n in run.bundle.evidence
                  if n.startswith("components/") and n.endswith("/result.json")}  # fmt: skip
    assert components == {"coding", "performance"}, components
    _keep(run.bundle.root, run.work, run.out,
          _summary(run, f"llama.cpp llama-server {props['build_info']}, {gguf.name}"))  # fmt: skip


def test_the_recorded_real_run(live_python: Path, tmp_path: Path) -> None:
    """How examples/recorded/'s newest bundle is made (``EVIDENCE_AUDIT_LIVE_KEEP=DIR``: DIR.tar
    and DIR.pins.toml are the files committed): the quickstart, full profile, against
    llama-cpp-python's server, under :func:`recording_pins`, every upstream from its pinned
    commit (offline: a gorilla clone among the mirrors too). Its bfcl-eval gate ran on the draw
    and was read as bfcl-eval counted it."""
    gguf = smollm2_gguf(live_python)
    pins = recording_pins(tmp_path / f"{RECORDING_PINS}.toml")
    run = _quickstart("server", gguf, live_python.parent, tmp_path, PINS=str(pins))
    gates = [n for n in run.bundle.evidence if n.endswith("/bfcl-eval.json")]
    assert gates, "no bfcl-eval gate record: did its checkout fail (a gorilla clone in MIRRORS)?"
    raw = {n.rsplit("/raw/", 1)[1]: n for n in run.bundle.evidence if "/bfcl/raw/" in n}
    assert json.loads(run.bundle.blob(raw["test_case_ids_to_generate.json"])) == RECORDED_DRAW
    result = run.bundle.json("components/tool_instruction/result.json")
    assert result["metrics"]["bfcl_samples"] == sum(len(v) for v in RECORDED_DRAW.values())
    _keep(run.bundle.root, run.work, run.out,
          _summary(run, f"llama-cpp-python server, {gguf.name}, {RECORDING_PINS}"))  # fmt: skip
    if keep := os.environ.get("EVIDENCE_AUDIT_LIVE_KEEP"):  # the pin set beside the bundle
        shutil.copyfile(pins, f"{keep}.pins.toml")


def _bfcl_python() -> Path:
    """bfcl-eval's interpreter: make test-live's (``EVIDENCE_AUDIT_BFCL_PYTHON``), else
    ``.venv-bfcl``'s."""
    named = os.environ.get("EVIDENCE_AUDIT_BFCL_PYTHON")
    return Path(named) if named else REPO / ".venv-bfcl" / "bin" / "python"


ERRORS_PINS = REPO / "examples" / "recorded" / "gx10-qualification-v5-bfcl-whole-check.toml"


def test_the_recorded_errors_run(live_python: Path, tmp_path: Path) -> None:
    """How examples/recorded/llamacpp-smollm2-135m-bfcl-errors.tar is made
    (``EVIDENCE_AUDIT_LIVE_KEEP=DIR``: DIR.tar): `audit run` under the pin set kept beside it
    (tool/instruction alone, bfcl-eval on every entry of three whole categories) against
    llama-cpp-python's server with a 384-token context, so that the longer prompts fail and
    bfcl-eval records inference errors; every upstream from its pinned commit (offline: the
    clones among the mirrors). The verifier finds each error a request of its own."""
    from pins._loader import parse_pin_set  # noqa: PLC0415 - the live test's own imports
    from tests.data.hostile.kit import read_bundle  # noqa: PLC0415
    from verify import verify_bundle  # noqa: PLC0415
    from verify.harness_outputs import bfcl_answers  # noqa: PLC0415

    port, gguf = free_port(), smollm2_gguf(live_python)
    alias = "smollm2-135m-instruct"
    server = (
        f"exec {shlex.quote(str(live_python))} -m llama_cpp.server --model "
        f"{shlex.quote(str(gguf))} --model_alias {alias} --host 127.0.0.1 --port {port} "
        "--n_ctx 384"
    )
    mirrors = shlex.split(os.environ.get("EVIDENCE_AUDIT_LIVE_MIRRORS", ""))
    out = tmp_path / "bundle"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVIDENCE_AUDIT_", "OPENAI_"))}
    with _server(server, tmp_path, env, port, tmp_path / "server.log"):
        done = subprocess.run(
            [str(REPO / ".venv" / "bin" / "audit"), "run", "--endpoint",
             f"http://127.0.0.1:{port}", "--pins", str(ERRORS_PINS), "--profile", "gate",
             "--weights", str(gguf),
             "--harness-python", f"benchlocal={REPO / '.venv-harnesses' / 'bin' / 'python'}",
             "--harness-python", f"bfcl={_bfcl_python()}",
             *mirrors, "--out", str(out)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3600, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    pins = parse_pin_set(ERRORS_PINS.read_bytes(), str(ERRORS_PINS))
    verdict = verify_bundle(out, pins=pins).verdict
    assert verdict.integrity.findings == () and verdict.claims.match
    gates = verdict.diagnostics.supplementary
    assert gates, "no bfcl-eval gate figures: did its checkout fail (a gorilla clone in MIRRORS)?"
    assert (gates[0].samples, gates[0].subsets) == (56, 3)
    _, files = read_bundle(out)
    raw = "components/tool_instruction/gates/bfcl/raw/"
    kept = {n.removeprefix(raw): data for n, (data, _) in files.items() if n.startswith(raw)}
    results = bfcl_answers(kept)
    assert results.errors, "no inference error: the server's context did not cut a prompt"
    if keep := os.environ.get("EVIDENCE_AUDIT_LIVE_KEEP"):
        packed = subprocess.run(
            [str(REPO / ".venv" / "bin" / "audit"), "pack", str(out), "-o", f"{keep}.tar"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert packed.returncode == 0, packed.stderr


BFCL_DRAW = {
    "simple_python": ["simple_python_0", "simple_python_1"],
    "irrelevance": ["irrelevance_0", "irrelevance_1"],
    "live_simple": ["live_simple_0-0-0"],
}


def test_the_real_bfcl_eval_against_the_real_server_reads_as_it_counted(
    live_python: Path, tmp_path: Path
) -> None:
    """The pin set's own bfcl-eval command (its program, bfcl-eval 2026.3.23's generate and
    evaluate) against the real server on a small draw; its outputs read by the bfcl-eval reader
    exactly as bfcl-eval counted them (each score header, data_overall.csv's Overall Acc)."""
    bfcl = _bfcl_python()
    if not bfcl.exists():
        pytest.fail(f"{bfcl}: no bfcl-eval venv; make test-live builds it (make bfcl-venv)")
    from pins import CURRENT, load_builtin  # noqa: PLC0415 - the live test's own imports
    from verify.harness_outputs import read_outputs  # noqa: PLC0415

    version = subprocess.run(
        [str(bfcl), "-c", "import importlib.metadata as m; print(m.version('bfcl-eval'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert version == "2026.3.23"
    port, gguf = free_port(), smollm2_gguf(live_python)
    out = tmp_path / "out"
    out.mkdir()
    (out / "test_case_ids_to_generate.json").write_text(json.dumps(BFCL_DRAW))
    command = load_builtin(CURRENT).pins.harnesses["bfcl"].command
    assert command[1] == "-c" and command[3:6] == ("{model}", "{out}", "{endpoint}/v1")
    alias = "smollm2-135m-instruct"
    server = (
        f"exec {shlex.quote(str(live_python))} -m llama_cpp.server --model "
        f"{shlex.quote(str(gguf))} --model_alias {alias} --host 127.0.0.1 --port {port}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVIDENCE_AUDIT_", "OPENAI_"))}
    with _server(server, tmp_path, env, port, tmp_path / "server.log"):
        done = subprocess.run(
            [str(bfcl), "-c", command[2], alias, str(out), f"http://127.0.0.1:{port}/v1",
             "generate", "--run-ids", "--then", "evaluate", "--test-category",
             ",".join(BFCL_DRAW), "--partial-eval"],
            cwd=tmp_path, env=env | {"PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True,
            text=True, timeout=1800, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    metrics = read_outputs("bfcl-eval", files, ["tool_instruction"]).metrics["tool_instruction"]
    headers = [
        json.loads(data.split(b"\n", 1)[0]) for name, data in files.items()
        if name.endswith("_score.json")
    ]  # fmt: skip
    assert sorted(h["total_count"] for h in headers) == sorted(len(v) for v in BFCL_DRAW.values())
    hits = sum(h["correct_count"] for h in headers)
    assert metrics["bfcl_samples"] == sum(len(v) for v in BFCL_DRAW.values())
    assert metrics["bfcl_overall_accuracy"] == 100 * hits / metrics["bfcl_samples"]
    overall = files["score/data_overall.csv"].decode().splitlines()[1].split(",")[1]
    assert f"{metrics['bfcl_v4_overall']:.2f}%" == overall
