"""Honest runs of 2026-12-05: a false-finding hunt. Every bundle here is recorded by the
project's own runner (``audit run``, or ``audit.run.run_qualification``) against the reference
endpoint in a configuration the other tests rarely use, and nothing in it is edited afterwards:
each must verify with integrity ok, the runner's claims matching the replay and the verdict the
run deserves; the verdict must be the same bytes every way (twice, with and without
``--evidence-out``, from the directory and from its tar), and ``audit show`` (human and
``--json``) must find nothing either. Where the verifier (or the runner, whose evidence it then
judges) makes a false finding, the test is kept as a strict expected failure naming it; its
premises are checked apart (``_given``: a premise that does not hold fails the test, never
passes for the finding).

Tried (recorded once for the module, about 45 to 65 s; the two slow runs in threads while the
rest run):

- the tests' deployment pin set (not demo only) through the CLI, one ``--store`` for three
  runs (and a killed one), ``--env`` with a key: the full primary run (QUALIFIED, rankable,
  ``primary``; ``audit rank`` ranks it, ``--require rankable`` holds) and the full controlled
  run with ``--reasoning-policy on`` against an endpoint that reasons (QUALIFIED,
  ``controlled:on:...``, not rankable);
- smoke, ``--reasoning-policy high`` against a reasoning endpoint streaming a chunk every 10
  ms and dying after 35 completions (2 of the 5 performance streams broken off: QUALIFIED,
  performance 0), probe contract gx10-direct-probe-v2, ``--weights`` a directory with
  ``--model``, ``--run-id``, ``--store`` on another filesystem (/dev/shm: blobs copied, not
  linked); an endpoint dying after 1 completion (the tool-call probe's reply broken off);
- a smoke run through the CLI in which SparkBench asks the endpoint's ``/v1/models`` and
  ``/props`` first and quarantines its run (``--env SPARK_QUARANTINE=...``), killed (SIGKILL
  at ``before-manifest``), then recorded again into the same store under the same run id;
  SparkBench quarantining its run under a profile of reliability alone;
- tool/instruction alone with a pinned ``env`` (given again, same value, by ``--env``), two
  pinned data directories (one empty), a pinned requirement, ``--harness-python`` the venv's
  symlinked interpreter, ``--env`` secrets (a key, a URL with credentials) and an empty value;
- single components: performance alone (the runner measures it: no harness), Hermes alone with
  every task hanging past its limit (TIMEOUT: the model's failure), Hermes alone under a pin
  set that selects one task of two;
- coding alone, SparkBench stopped at a 1 s wall while it loads (before it asks anything); a
  harness stopped at its wall mid-stream, another harness after it;
- a model id as Ollama names one (``qwen3-coder:30b``) with bfcl-eval and
  lm-evaluation-harness as tool/instruction's gates (Inspect AI's too, tried, not kept: held);
- SparkBench's interpreter behind a launcher that takes 10 s to start (``conda run``, a
  container), its run inside tool/instruction's window (BenchLocal, then a bfcl-eval gate);
  6 s and walls of 4 and 9 s when the findings below were seen, widened since so that a
  loaded machine stays within them.

Held: every run in ``HELD`` (integrity ok, claims match, the deserved axes; the verdict bytes
identical twice, with ``--evidence-out``, from the tar; ``audit show`` and ``show --json`` exit
0, no finding, the same verdict); the killed run is refused as unsealed (exit 2) and the blobs
it left in the store harm no later run; every blob of the three store runs is in the store;
the secrets are redacted from every blob; lm-evaluation-harness's gate under a model id with
a colon; a harness's own ``GET /v1/models`` and ``/props``; ``--evidence-out``
inside the bundle is refused (tried, not kept).

False findings (strict expected failures; the code cited as of 2026-12-05, commit 267b149):

1. An empty socket ledger is read as no ledger: ``EvidenceRecords.take`` fills nothing from a
   record of no document (verify/evidence.py, ``or not documents``), so ``network_isolation``
   is infra "no socket ledger: isolation is unproven" (verify/gx10/gates.py), though the
   entry is in the manifest and run/config.json closes the ledger at 0 entries. Honest runs in
   which no harness connected: (a) performance alone is INFRA_ERROR, not QUALIFIED; (b) Hermes
   alone, every task timing out before it asked the model, is INFRA_ERROR, not NOT_QUALIFIED
   (the model's failure becomes the infrastructure's); (c) a harness stopped at its wall before
   it connected: the verdict holds, but ``audit show`` blames ``isolation``, the first infra
   gate (verify/forensics.py ``_forensic``), not ``harness``. Fix: take an empty JSON Lines record
   as ``()`` (or have the gate read the closing count with the entry present).
2. SparkBench quarantining its run under a profile of reliability alone: the reference reader
   puts the marker on ``coding`` whatever it serves (verify/harness_outputs.py
   ``_spark_marker``); the runner, reading for the selected components, records none
   (audit/run.py ``_record``: reliability COMPLETED); the verifier re-reads with every
   component the upstream serves (verify/_consistency/outputs.py ``_raw_outputs``) and finds "a
   quarantine marker (golden drift) that no quarantine record carries" (``_marker``) at
   ``components/coding/raw/quarantine.json``, an entry that does not exist (the file is
   ``components/reliability/raw/quarantine.json``). Fix: mark the first served component the runner
   selected (as the spark-bench reader does), and re-read with the selected served components, as
   the runner did; the run is then QUARANTINED.
3. A pin set selecting Hermes tasks (``[hermes] tasks``): the runner has no way to tell the
   harness (no placeholder: pins/_model.py ``Placeholders``) and records every task it ran;
   ``_hermes`` fails integrity: "task add-retry-policy is not a pinned task"
   (verify/_consistency/hermes.py). The gates and the score read every recorded task, selected or
   not. Resolved (ADR 0040): a pin set that selects tasks must give the Hermes harness
   ``{tasks}`` (refused at load otherwise), the runner fills it with the selection, and a
   recorded task the pin set does not select stays an integrity finding.
4. A model id with a colon (Ollama's ``qwen3-coder:30b``, as docs/running.md qualifies Ollama)
   and bfcl-eval as a gate, as gx10-qualification-v5 pins it: the bundle keeps
   ``score/qwen3-coder:30b/...`` escaped as ``score/xqwen3-coder_3a30b/...``
   (audit/run.py ``escaped_path``), and the reader compares the CSV's model with the
   escaped directory (verify/harness_outputs.py ``_bfcl_overall``; ``_bfcl_model``,
   verify/_consistency/outputs.py, alike). Through 265310c the verifier's re-reading failed
   integrity ("the bfcl raw outputs do not read"); since 267b149 the runner reads its outputs
   under the escaped names too and fails the gate itself ("its gate bfcl failed: bfcl:
   score/data_overall.csv:2: the row of model 'qwen3-coder:30b', the score files of
   'xqwen3-coder_3a30b'"): INFRA_FAILURE either way, for outputs that read. Fix: compare the
   escaped model name with the escaped directory (one escaping, in verify).
5. The over-wall check (verify/_consistency/times.py ``_times``) reads a component's window
   (``started_at`` to ``ended_at``, whole seconds) as its harness's run: (a) the runner stamps
   ``started_at`` (audit/run.py ``_Harnesses._execute``) before it asks the interpreter what it
   holds (``_prepared``, called after it), so an interpreter slow to start counts twice: "ran 14 s,
   over its harness's pinned wall of 9 s, yet was not stopped" for a harness the sandbox saw finish
   within 9 s; a harness the sandbox did stop at a short wall reads so too, by the time its
   preparation took under load ("ran 5 s, over its harness's pinned wall of 2.5 s, yet was not
   stopped", seen once for BenchLocal stopped at 2.5 s: why the runs stopped at a wall are not in
   ``HELD``); (b) a component's gates run after every harness (audit/run.py ``_components``), so
   tool/instruction's window holds SparkBench's run: "ran 19 s, over its harness's pinned wall and
   its gates' of 8 s". Fix: record the sandbox's own wall per harness and gate (``SandboxResult``)
   and hold that to the pinned walls, or stamp ``started_at`` as the sandbox starts and run a gate
   right after its component's harness.
6. The runner's evidence: a harness stopped at its wall while the model still streams to it
   leaves its exchange in flight; its connection has left the observer's set
   (audit/_http_server.py ``HarnessConnection.connection_lost``), ``Observer.stop`` waits only for
   the connections still there (audit/observer.py) and closes the loop on the exchange, never
   recorded ("Task was destroyed but it is pending!"). With a later harness's exchanges after it,
   ``_exchange_ids`` finds "exchange ids go from 5 to 7: an exchange is missing from the log"
   (verify/_consistency/exchanges.py); as the last exchange it is lost without a trace. Fix: keep
   the handler tasks of every exchange under way (not only of open connections) and record an
   exchange whose harness went away when it goes (error "the client disconnected").

Not a finding, but an honest run with no bundle to verify (a strict expected failure too): an
endpoint that breaks off a direct probe's reply ends ``audit run`` with "the run failed before
its bundle was written: IncompleteRead" (exit 2): audit/components.py ``_post`` lets
``http.client.IncompleteRead`` out of ``run_direct_probes``, where the exchange the observer
recorded (with its error) is what ``tool_call_protocol`` judges. Seen while trying, not kept:
``--run-id`` with a space or a comma is refused only when the bundle is written, after the
whole run ("cannot write the bundle: ValidationError ... Gx10Evidence").

Fixed the same day: 1 (an empty JSON Lines record is a log of no entries, ``EvidenceRecords.
take``), 2 (the reference reader marks the first component the harness ran for, and the
verifier reads with the profile's components, as the runner does), 4 (one escaping,
``verify.harness_outputs.escaped_path``, and ``bfcl_model_folder`` on both sides), 5 (a
harness's window is its sandbox's run: ``started_at`` as it starts, ``ended_at`` as it ends,
and each gate runs right after the harness it gates), the probe reply broken off (``_post``:
no reply, the recorded exchange judges it) and ``--run-id`` (refused before the run). Left,
strict expected failure: 3. The next change the same day: 6 (the observer keeps every
exchange under way, whether its harness is still connected or not; at its stop, one whose
harness has gone ends at once, recorded with "the run ended before the exchange did (the
client had disconnected)").
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.demo import reference_endpoint
from audit.demo.pipeline import DEMO_DIGEST
from audit.demo.reference_endpoint import Behaviour, ReferenceEndpoint, serve
from audit.environments import data_listing
from audit.run import RunRequest, default_policy, run_qualification
from bundle_schema.models import Verdict
from pins import PinSetSource, parse_pin_set
from tests.data.hostile.kit import lines, read_bundle
from tests.gate_kit import bfcl_gate_harness, gate_mirror
from tests.paths import DATA, ROOT
from verify import verify_bundle

DEPLOYMENT = DATA / "pins" / "gx10-deployment-v5.toml"
QUALIFIED = ("QUALIFIED", "VALID", "MEETS_PROFILE")
NOT_QUALIFIED = ("NOT_QUALIFIED", "VALID", "DOES_NOT_MEET_PROFILE")
INFRA_FAILURE = ("INFRA_ERROR", "INFRA_FAILURE", "NOT_ASSESSED")
QUARANTINED = ("INFRA_ERROR", "QUARANTINED", "NOT_ASSESSED")
OLLAMA_ID = "qwen3-coder:30b"
HIDDEN = "sk-honest-secret-0123456789"
_SLOW_PYTHON = "#!/bin/sh\n# a launcher that takes its time (conda run, a container)\nsleep 10\n"
_STREAM = (
    "import json, urllib.request; body = json.dumps({{'model': '{model}', 'stream': True, "
    "'max_tokens': 1, 'messages': [{{'role': 'user', 'content': 'stream slowly'}}]}}).encode(); "
    "r = urllib.request.urlopen(urllib.request.Request('{endpoint}/v1/chat/completions', body, "
    "{{'Content-Type': 'application/json'}})); [print(line, flush=True) for line in r]"
)
"""A harness that streams one reply and prints it as it comes (a pinned command)."""
_SPARK_ASKS = (
    "import runpy, sys, urllib.request; [print(urllib.request.urlopen('{endpoint}' + path).read(), "
    "flush=True) for path in ('/v1/models', '/props')]; sys.argv = ['spark', '--endpoint', "
    "'{endpoint}', '--model', '{model}', '--out', '{out}']; "
    "runpy.run_module('spark.run', run_name='__main__')"
)
"""SparkBench as pinned, after asking what the endpoint serves (as real harnesses do)."""
_SPARK_LOADS = (
    "import runpy, sys, time; time.sleep(3); sys.argv = ['spark', '--endpoint', '{endpoint}', "
    "'--model', '{model}', '--out', '{out}']; runpy.run_module('spark.run', run_name='__main__')"
)
"""SparkBench as pinned, after 3 s of loading (its data, a model's tokenizer) in which it asks
nothing."""


# --- recording ----------------------------------------------------------------------------------


@dataclass
class Recorded:
    """One honest run: its bundle, the pin-set file it was recorded and is judged under, and
    the verdict (or why the run could not be recorded)."""

    bundle: Path
    pins_file: Path
    verdict: Verdict | None = None
    error: BaseException | None = None

    @property
    def pins(self) -> PinSetSource:
        return parse_pin_set(self.pins_file.read_bytes(), str(self.pins_file))

    def judged(self) -> Verdict:
        """The verdict; a run that could not be recorded is an error, never an expected
        failure (the strict xfails below expect an AssertionError only)."""
        if self.error is not None:
            raise RuntimeError(f"the run was not recorded: {self.error!r}") from self.error
        assert self.verdict is not None
        return self.verdict


def _toml(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """A pin set's data as TOML (strings, numbers, booleans, lists of strings, tables)."""
    plain = [f"{_key(k)} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    text = "".join(line + "\n" for line in plain)
    for key, value in data.items():
        if isinstance(value, dict):
            path = (*prefix, _key(key))
            text += f"\n[{'.'.join(path)}]\n" + _toml(value, path)
    return text


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _pins(root: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The deployment pin set under its own id, edited, as a file (what ``--pins`` reads)."""
    data = copy.deepcopy(tomllib.loads(DEPLOYMENT.read_text("utf-8")))
    data["id"] = f"honest-{name}"
    edit(data)
    path = root / "pins" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_toml(data), "utf-8")
    parse_pin_set(path.read_bytes(), str(path))  # a valid pin set, or the run is refused
    return path


def _profile(name: str, *components: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data["profiles"].update({name: {"components": list(components)}})


def _edits(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        for one in edits:
            one(data)

    return edit


def _record(
    out: Path,
    pins_file: Path,
    mirrors: Mapping[str, Path],
    behaviour: Behaviour | None = None,
    endpoint: ReferenceEndpoint | None = None,
    **request: Any,
) -> Recorded:
    """``run_qualification`` of ``pins_file`` against a reference endpoint, then its verdict."""
    recorded = Recorded(out, pins_file)
    pins = recorded.pins
    fields: dict[str, Any] = {"profile": "full", "model_digest": DEMO_DIGEST} | request
    try:
        with contextlib.ExitStack() as stack:
            served = endpoint or stack.enter_context(serve(behaviour))
            run_qualification(
                RunRequest(endpoint=served.url, pins=pins, out=out, mirrors=mirrors, **fields)
            )
        recorded.verdict = verify_bundle(out, pins=pins).verdict
    except Exception as exc:  # kept, and raised by the test that reads it
        recorded.error = exc
        _remove_kept_evidence(str(exc))
    return recorded


def _remove_kept_evidence(message: str) -> None:
    """A run that fails keeps its evidence in a scratch directory of the system's temp
    directory and says where: removed here (the message keeps the path)."""
    kept = re.search(r"(/\S+/audit-run-[^/\s]+)/evidence", message)
    if kept is not None and Path(kept[1]).parent == Path(tempfile.gettempdir()):
        shutil.rmtree(kept[1], ignore_errors=True)


def _cli(*argv: str) -> tuple[int, bytes, str]:
    """``audit`` in this process: exit code, stdout bytes, stderr text."""
    out, err = io.BytesIO(), io.BytesIO()
    text_out = io.TextIOWrapper(out, "utf-8", write_through=True)
    text_err = io.TextIOWrapper(err, "utf-8", write_through=True)
    with contextlib.redirect_stdout(text_out), contextlib.redirect_stderr(text_err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue().decode("utf-8", "replace")


def _cli_run(out: Path, pins_file: Path, mirrors: Mapping[str, Path], *argv: str) -> Recorded:
    """``audit run`` (the CLI, ``--json``) of ``pins_file`` into ``out``; then its verdict."""
    recorded = Recorded(out, pins_file)
    try:
        code, written, err = _cli(
            "run",
            "--pins",
            str(pins_file),
            "--out",
            str(out),
            "--model-digest",
            DEMO_DIGEST,
            "--json",
            *argv,
            *(f"--mirror={name}={path}" for name, path in mirrors.items()),
        )
        assert code == 0, err
        assert json.loads(written)["bundle"] == str(out)
        recorded.verdict = verify_bundle(out, pins=recorded.pins).verdict
    except Exception as exc:  # kept, and raised by the test that reads it
        recorded.error = exc
    return recorded


@contextlib.contextmanager
def _served_as(model: str) -> Iterator[None]:
    """The reference endpoint serving ``model`` (its list and its replies) for a while: while no
    other run is under way, since every reference endpoint reads the module's name."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference_endpoint, "MODEL_ID", model)
        yield


# --- the runs -----------------------------------------------------------------------------------


def _gated(root: Path, commits: Mapping[str, str]) -> Path:
    """Tool/instruction alone, gated by bfcl-eval and lm-evaluation-harness (the reference
    stand-ins that write each one's own files), at ordinary repository URLs."""

    def edit(data: dict[str, Any]) -> None:
        merged = tomllib.loads((DATA / "pins" / "lm-eval-gate.toml").read_text("utf-8"))
        data["harnesses"]["lmeval"] = merged["harnesses"]["lmeval"]
        data["harnesses"]["bfcl"] = bfcl_gate_harness()
        for upstream, commit in commits.items():
            data["upstreams"][upstream] = {
                "repository": f"https://example.invalid/evidence-audit/{upstream}",
                "commit": commit,
            }
        # lm-evaluation-harness first: a gate runs only while its component still holds
        data["gate_upstreams"] = {"tool_instruction": ["lmeval", "bfcl"]}

    return _pins(root, "gated", _edits(_profile("tool", "tool_instruction"), edit))


def _slow_launcher(root: Path, mirrors: Mapping[str, Path], commits: Mapping[str, str]) -> Recorded:
    """Tool/instruction (gated by bfcl-eval) and coding, SparkBench's interpreter behind a
    launcher that takes 10 s to start; every harness finishes within its wall."""
    launcher = root / "slow-python"
    launcher.write_text(f'{_SLOW_PYTHON}exec {sys.executable} "$@"\n', "utf-8")
    launcher.chmod(0o755)

    def edit(data: dict[str, Any]) -> None:
        data["harnesses"]["bfcl"] = bfcl_gate_harness(inactivity_s=60, wall_s=8)
        data["upstreams"]["bfcl"] = {
            "repository": "https://example.invalid/evidence-audit/bfcl",
            "commit": commits["bfcl"],
        }
        data["gate_upstreams"] = {"tool_instruction": ["bfcl"]}
        # walls with room for a loaded machine, and still shorter than the windows the runner
        # stamped before 2026-12-05 (SparkBench's interpreter asked first, through the 10 s
        # launcher; tool/instruction's gate after SparkBench's run)
        data["harnesses"]["benchlocal"]["wall_s"] = 8
        data["harnesses"]["sparkbench"]["wall_s"] = 16

    pins_file = _pins(
        root, "slow-launcher", _edits(_profile("pair", "tool_instruction", "coding"), edit)
    )
    return _record(
        root / "slow-launcher",
        pins_file,
        mirrors,
        profile="pair",
        harness_python={"sparkbench": launcher},
    )


def _stopped_mid_stream(root: Path, mirrors: Mapping[str, Path]) -> Recorded:
    """BenchLocal's harness streams a reply slower than its wall; Hermes runs after it."""

    def edit(data: dict[str, Any]) -> None:
        data["harnesses"]["benchlocal"] |= {"command": ["{python}", "-c", _STREAM], "wall_s": 6}

    pins_file = _pins(
        root, "mid-stream", _edits(_profile("pair", "tool_instruction", "hermes"), edit)
    )
    # a chunk a minute: the run ends between two; the endpoint stops at its next one, in the
    # background (a daemon thread: nothing waits for it)
    endpoint = ReferenceEndpoint(Behaviour(chunk_delay=60.0)).start()
    try:
        return _record(root / "mid-stream", pins_file, mirrors, endpoint=endpoint, profile="pair")
    finally:
        _collect_what_the_loss_left()
        threading.Thread(target=endpoint.stop, daemon=True).start()


def _collect_what_the_loss_left() -> None:
    """The observer's loop closed on the exchange it lost (finding 6): the task and the
    endpoint connection it held are garbage, each an "unclosed" ResourceWarning when
    collected. Collected now, with those warnings kept out of pytest's unraisable-exception
    check, which would otherwise fail whichever test happened to be running then."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _killed_then_again(
    root: Path, pins_file: Path, mirrors: Mapping[str, Path], store: Path
) -> Callable[[], Recorded]:
    """Start ``audit run`` (smoke, into ``store``; SparkBench quarantining its run) that is
    killed before its manifest; the returned call waits for it and records the same run again
    into the same store."""
    endpoint = ReferenceEndpoint().start()
    argv = [
        sys.executable,
        "-m",
        "audit",
        "run",
        "--endpoint",
        endpoint.url,
        "--pins",
        str(pins_file),
        "--profile",
        "smoke",
        "--out",
        str(root / "killed"),
        "--model-digest",
        DEMO_DIGEST,
        "--store",
        str(store),
        "--run-id",
        "resumed",
        "--env",
        "SPARK_QUARANTINE=golden drift",
        "--json",
        *(f"--mirror={name}={path}" for name, path in mirrors.items()),
    ]
    scratch = root / "scratch"  # where the killed run leaves its scratch directory
    scratch.mkdir()
    env = os.environ | {"EVIDENCE_AUDIT_TEST_KILL_AT": "before-manifest", "TMPDIR": str(scratch)}
    killed = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def again() -> Recorded:
        try:
            assert killed.wait(timeout=120) == -9  # SIGKILL, at the point named
        finally:
            endpoint.stop()
        with serve() as served:
            return _cli_run(
                root / "resumed",
                pins_file,
                mirrors,
                "--endpoint",
                served.url,
                "--profile",
                "smoke",
                "--store",
                str(store),
                "--run-id",
                "resumed",
                "--env",
                "SPARK_QUARANTINE=golden drift",
            )

    return again


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> Iterator[dict[str, Recorded]]:
    """Every honest run of this module, recorded once."""
    root = tmp_path_factory.mktemp("honest")
    gates: dict[str, Path] = dict(mirrors)
    commits: dict[str, str] = {}
    for upstream, source in (("bfcl", "bfcl_eval_harness"), ("lmeval", "lm_eval_tasks")):
        gates, commits[upstream] = gate_mirror(root / "gates", gates, DATA / source, upstream)
    done: dict[str, Recorded] = {}

    # first, alone: the reference endpoint serving a model id with a colon (a module's name)
    with _served_as(OLLAMA_ID):
        done["ollama-id-gates"] = _record(
            root / "ollama-id-gates", _gated(root, commits), gates, profile="tool"
        )

    store = root / "store"
    shm = Path("/dev/shm")  # a store on another filesystem: blobs copied, not linked
    elsewhere = Path(tempfile.mkdtemp(prefix="honest-", dir=shm if shm.is_dir() else root))
    asks_first = _pins(
        root,
        "asks-first",
        lambda d: d["harnesses"]["sparkbench"].update(command=["{python}", "-c", _SPARK_ASKS]),
    )
    again = _killed_then_again(root, asks_first, mirrors, store)
    with ThreadPoolExecutor(max_workers=2) as pool:  # the slow ones sleep while the rest run
        slow: dict[str, Future[Recorded]] = {
            "slow-launcher": pool.submit(_slow_launcher, root, gates, commits),
            "mid-stream": pool.submit(_stopped_mid_stream, root, mirrors),
        }
        _foreground(root, mirrors, store, elsewhere, done)
        done["resumed"] = again()
        done |= {name: future.result() for name, future in slow.items()}
    try:
        yield done
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


def _foreground(
    root: Path,
    mirrors: Mapping[str, Path],
    store: Path,
    elsewhere: Path,
    done: dict[str, Recorded],
) -> None:
    with serve() as endpoint:
        done["primary"] = _cli_run(
            root / "primary",
            DEPLOYMENT,
            mirrors,
            "--endpoint",
            endpoint.url,
            "--profile",
            "full",
            "--store",
            str(store),
            "--env",
            f"OPENAI_API_KEY={HIDDEN}",
        )
    with serve(Behaviour(reasoning=True)) as endpoint:
        done["controlled-on"] = _cli_run(
            root / "controlled-on",
            DEPLOYMENT,
            mirrors,
            "--endpoint",
            endpoint.url,
            "--profile",
            "full",
            "--store",
            str(store),
            "--track",
            "controlled",
            "--reasoning-policy",
            "on",
        )
    weights = root / "weights"  # a directory of weights, hashed file by file
    (weights / "shards").mkdir(parents=True)
    (weights / "config.json").write_text("{}", "utf-8")
    (weights / "shards" / "model-00001.gguf").write_bytes(b"honest weights\n" * 4096)
    v2 = _pins(
        root, "probe-v2", lambda d: d["direct_probe"].update(contract="gx10-direct-probe-v2")
    )
    done["high-slow-dying"] = _record(
        root / "high-slow-dying",
        v2,
        mirrors,
        Behaviour(reasoning=True, chunk_delay=0.01, dies_after=35),
        profile="smoke",
        policy=default_policy("high"),
        model=reference_endpoint.MODEL_ID,
        model_digest=None,
        weights=weights,
        run_id="honest-high-reasoning-slow-dying",
        store=elsewhere / "store",
    )
    done["probe-broken-off"] = _record(
        root / "probe-broken-off", DEPLOYMENT, mirrors, Behaviour(dies_after=1), profile="smoke"
    )
    done["environment"] = _environment_run(root, mirrors)
    singles = _pins(
        root,
        "singles",
        _edits(
            _profile("performance", "performance"),
            _profile("reliability", "reliability"),
            _profile("hermes", "hermes"),
            _profile("coding", "coding"),
        ),
    )
    done["performance-alone"] = _record(
        root / "performance-alone", singles, mirrors, profile="performance"
    )
    done["quarantine-reliability"] = _record(
        root / "quarantine-reliability",
        singles,
        mirrors,
        profile="reliability",
        harness_env={"SPARK_QUARANTINE": "golden drift"},
    )
    hang = _pins(
        root,
        "hang",
        _edits(_profile("hermes", "hermes"), lambda d: d["hermes"].update(inactivity_s=1)),
    )
    done["hermes-timeouts"] = _record(
        root / "hermes-timeouts",
        hang,
        mirrors,
        profile="hermes",
        harness_env={"HERMES_HANG": "1.5", "HERMES_INACTIVITY_LIMIT": "1"},
    )
    subset = _pins(
        root,
        "subset",
        _edits(
            _profile("hermes", "hermes"),
            lambda d: d["hermes"].update(tasks=["fix-date-parser"]),
            lambda d: d["harnesses"]["hermesbench"]["command"].extend(["--tasks", "{tasks}"]),
        ),
    )
    done["hermes-one-task"] = _record(root / "hermes-one-task", subset, mirrors, profile="hermes")
    short = _pins(
        root,
        "short-wall",
        _edits(
            _profile("coding", "coding"),
            lambda d: d["harnesses"]["sparkbench"].update(
                command=["{python}", "-c", _SPARK_LOADS], wall_s=1
            ),
        ),
    )
    done["stopped-early"] = _record(root / "stopped-early", short, mirrors, profile="coding")


def _environment_run(root: Path, mirrors: Mapping[str, Path]) -> Recorded:
    """Tool/instruction alone: pinned variables, data directories and requirements, a
    symlinked interpreter, secrets given with ``--env``."""
    corpus, cache = root / "data" / "corpus", root / "data" / "cache"
    (corpus / "sub").mkdir(parents=True)
    cache.mkdir()
    (corpus / "a.txt").write_text("a data file\n", "utf-8")
    (corpus / "sub" / "b.bin").write_bytes(bytes(range(256)))
    listed = {name: data_listing(path)[1] for name, path in (("corpus", corpus), ("cache", cache))}
    link = Path(sys.executable)  # the venv's python: a symbolic link, kept as given
    assert link.is_symlink()

    def edit(data: dict[str, Any]) -> None:
        data["harnesses"]["benchlocal"] |= {
            "data": listed,
            "env": {"HF_DATASETS_OFFLINE": "1"},
            "requirements": [f"pydantic=={version('pydantic')}"],
        }

    pins_file = _pins(root, "environment", _edits(_profile("tool", "tool_instruction"), edit))
    given = {
        "OPENAI_API_KEY": HIDDEN,
        "PROXY_URL": f"http://user:{HIDDEN}@127.0.0.1:9/",
        "HF_DATASETS_OFFLINE": "1",
        "EMPTY_VALUE": "",
    }
    return _record(
        root / "environment",
        pins_file,
        mirrors,
        profile="tool",
        data={"corpus": corpus, "cache": cache},
        harness_env=given,
        harness_python={"benchlocal": link},
    )


# --- what every honest bundle must show -----------------------------------------------------------


HELD: Mapping[str, tuple[str, str, str]] = {
    "primary": QUALIFIED,
    "controlled-on": QUALIFIED,
    "high-slow-dying": QUALIFIED,
    "environment": QUALIFIED,
    "resumed": QUARANTINED,
}
"""The honest runs that verify as they should, with the axes each deserves."""


def _axes(verdict: Verdict) -> tuple[str, str, str]:
    return verdict.outcome, verdict.result_validity, verdict.profile_decision


def _sound(verdict: Verdict, expected: tuple[str, str, str]) -> None:
    """No finding, claims that match, the verdict the run deserves."""
    assert verdict.integrity.status == "ok", [f.message for f in verdict.integrity.findings]
    assert verdict.claims.match, verdict.claims.differences
    assert _axes(verdict) == expected, verdict.reasons


@pytest.mark.parametrize("name", sorted(HELD))
def test_an_honest_run_verifies_as_it_deserves(runs: dict[str, Recorded], name: str) -> None:
    _sound(runs[name].judged(), HELD[name])


@pytest.mark.parametrize("name", sorted(HELD))
def test_an_honest_verdict_is_the_same_bytes_every_way_and_show_finds_nothing(
    runs: dict[str, Recorded], name: str
) -> None:
    run = runs[name]
    run.judged()
    pins, bundle = str(run.pins_file), str(run.bundle)
    evidence = run.bundle.with_suffix(".evidence.json")
    tar = run.bundle.with_suffix(".tar")
    first = _cli("verify", bundle, "--pins", pins, "--json")
    assert first[0] == 0, first[2]
    assert _cli("verify", bundle, "--pins", pins, "--json") == first  # deterministic
    with_evidence = _cli(
        "verify", bundle, "--pins", pins, "--json", "--evidence-out", str(evidence)
    )
    assert with_evidence == first  # bounded and full verification: the same bytes
    assert _cli("pack", bundle, "-o", str(tar))[0] == 0
    assert _cli("verify", str(tar), "--pins", pins, "--json") == first
    code, shown, err = _cli("show", bundle, "--pins", pins, "--json")
    assert code == 0, err
    report = json.loads(shown)
    assert report["verdict"]["integrity"]["findings"] == [], report["verdict"]["integrity"]
    assert report["verdict"] == json.loads(first[1])  # show presents the verdict verify gives
    human = _cli("show", bundle, "--pins", pins)
    assert human[0] == 0, human[2]
    assert "integrity ok; claims match" in human[1].decode("utf-8")


def test_the_primary_run_ranks_and_the_controlled_one_stays_in_its_group(
    runs: dict[str, Recorded],
) -> None:
    primary, controlled = runs["primary"].judged(), runs["controlled-on"].judged()
    assert (primary.rankable, primary.rank_group) == (True, "primary"), primary.reasons
    assert not controlled.rankable
    assert controlled.rank_group == "controlled:on:chat_template_kwargs.enable_thinking=true"
    gate = next(g for g in controlled.gates if g.id == "reasoning_contamination")
    assert gate.status == "pass", gate.reason  # the endpoint reasons, as the policy allows
    bundle = str(runs["primary"].bundle)
    assert _cli("verify", bundle, "--pins", str(DEPLOYMENT), "--require", "rankable")[0] == 0
    code, ranked, err = _cli(
        "rank", bundle, str(runs["controlled-on"].bundle), "--pins", str(DEPLOYMENT), "--json"
    )
    assert code == 0, err
    assert runs["primary"].verdict is not None
    assert runs["primary"].verdict.bundle_digest in ranked.decode("utf-8")


def test_the_store_serves_repeated_and_resumed_runs(runs: dict[str, Recorded]) -> None:
    root = runs["resumed"].bundle.parent
    code, _, err = _cli("verify", str(root / "killed"))
    assert code == 2, err  # killed before its manifest: not a sealed bundle
    assert "not a sealed bundle" in err
    stored = {p.name for p in (root / "store" / "blobs" / "sha256").iterdir()}
    for name in ("primary", "controlled-on", "resumed"):
        blobs = {p.name for p in (runs[name].bundle / "blobs" / "sha256").iterdir()}
        assert blobs <= stored, name  # every blob of each run kept once in the store


@pytest.mark.parametrize("name", ["environment", "primary"])
def test_the_secrets_given_to_a_harness_are_redacted(runs: dict[str, Recorded], name: str) -> None:
    run = runs[name]
    run.judged()
    _, files = read_bundle(run.bundle)
    assert not [entry for entry, (data, _) in files.items() if HIDDEN.encode() in data]


def test_a_stream_broken_off_mid_performance_scores_zero_as_the_deployments_failure(
    runs: dict[str, Recorded],
) -> None:
    verdict = runs["high-slow-dying"].judged()
    assert verdict.scores.performance == 0, verdict.reasons
    assert any(
        r.startswith("performance 0: 2 of 5 streaming requests failed") for r in verdict.reasons
    ), verdict.reasons


def test_the_lm_eval_gate_holds_under_a_model_id_with_a_colon(runs: dict[str, Recorded]) -> None:
    run = runs["ollama-id-gates"]
    verdict = run.judged()
    _, files = read_bundle(run.bundle)
    assert "components/tool_instruction/gates/lmeval/tasks.json" in files  # it ran and read
    others = [
        f.message for f in verdict.integrity.findings if "/gates/bfcl/" not in (f.entry or "")
    ]
    assert not others  # lm-evaluation-harness's gate reads alike (bfcl-eval's: finding 4)


# --- false findings ----------------------------------------------------------------------------


def _given(held: bool, why: object) -> None:
    """A premise of a strict expected failure: not an AssertionError, so that a premise that
    does not hold fails the test instead of passing for the false finding it names."""
    if not held:
        raise RuntimeError(f"the premise does not hold: {why}")


def _ledger_gate(verdict: Verdict) -> tuple[str, str]:
    gate = next(g for g in verdict.gates if g.id == "network_isolation")
    return gate.status, gate.reason


def test_performance_alone_qualifies(runs: dict[str, Recorded]) -> None:
    verdict = runs["performance-alone"].judged()
    assert _ledger_gate(verdict)[0] == "pass", _ledger_gate(verdict)
    _sound(verdict, QUALIFIED)


def test_hermes_tasks_that_time_out_are_the_models_failure(runs: dict[str, Recorded]) -> None:
    verdict = runs["hermes-timeouts"].judged()
    limits = next(g for g in verdict.gates if g.id == "hermes_time_limits")
    _given(limits.status == "fail", limits.reason)  # held: the timeouts are the model's
    _sound(verdict, NOT_QUALIFIED)


def test_a_harness_stopped_before_it_connected_is_blamed_on_the_harness(
    runs: dict[str, Recorded],
) -> None:
    run = runs["stopped-early"]
    verdict = run.judged()
    _, files = read_bundle(run.bundle)
    stopped = json.loads(files["components/coding/result.json"][0])["reason"]
    _given(stopped == "sparkbench wall limit exceeded", stopped)
    _given(not lines(files, "network/socket-ledger.jsonl"), "the harness connected")
    assert _ledger_gate(verdict)[0] == "pass", _ledger_gate(verdict)
    _, shown, _ = _cli("show", str(run.bundle), "--pins", str(run.pins_file), "--json")
    forensic = json.loads(shown)["forensic"]
    assert forensic["failed_part"] == "harness", forensic


def test_a_quarantine_under_reliability_alone_quarantines(runs: dict[str, Recorded]) -> None:
    _sound(runs["quarantine-reliability"].judged(), QUARANTINED)


def test_a_pin_set_selecting_hermes_tasks_verifies(runs: dict[str, Recorded]) -> None:
    run = runs["hermes-one-task"]
    _, files = read_bundle(run.bundle)
    ran = [task["task"] for task in lines(files, "components/hermes/tasks.jsonl")]
    assert ran == ["fix-date-parser"], ran  # the harness was told the selection
    _sound(run.judged(), QUALIFIED)


def test_bfcl_eval_gates_a_model_id_with_a_colon(runs: dict[str, Recorded]) -> None:
    _sound(runs["ollama-id-gates"].judged(), QUALIFIED)


def _result_findings(verdict: Verdict, component: str) -> list[str]:
    entry = f"components/{component}/result.json"
    return [f.message for f in verdict.integrity.findings if f.entry == entry]


def test_a_slow_interpreter_launch_is_not_a_harness_over_its_wall(
    runs: dict[str, Recorded],
) -> None:
    verdict = runs["slow-launcher"].judged()
    assert not _result_findings(verdict, "coding")


def test_a_gate_after_another_harness_is_not_a_harness_over_its_wall(
    runs: dict[str, Recorded],
) -> None:
    verdict = runs["slow-launcher"].judged()
    assert not _result_findings(verdict, "tool_instruction")
    _sound(verdict, QUALIFIED)


def test_a_harness_stopped_mid_stream_keeps_its_exchange(runs: dict[str, Recorded]) -> None:
    run = runs["mid-stream"]
    verdict = run.judged()
    _, files = read_bundle(run.bundle)
    stopped = json.loads(files["components/tool_instruction/result.json"][0])["reason"]
    _given(stopped == "benchlocal wall limit exceeded", stopped)
    printed = files["logs/benchlocal.stdout.txt"][0]
    _given(b"data:" in printed, printed)  # the reply had begun: its exchange was under way
    exchanges = lines(files, "transport/exchanges.jsonl")
    assert [e["id"] for e in exchanges] == list(range(len(exchanges))), "an exchange is lost"
    assert any(e["component"] == "tool_instruction" for e in exchanges), "it is lost"
    cut = [e for e in exchanges if e["component"] == "tool_instruction" and e.get("error")]
    assert cut and "disconnected" in cut[-1]["error"], cut  # recorded, with why it ended
    assert not [
        f.message for f in verdict.integrity.findings if f.entry == "transport/exchanges.jsonl"
    ]


# --- an honest run the runner cannot record ------------------------------------------------------


def test_a_probe_reply_broken_off_is_recorded_and_judged(runs: dict[str, Recorded]) -> None:
    run = runs["probe-broken-off"]
    assert run.error is None, run.error
    verdict = run.judged()
    probe = next(g for g in verdict.gates if g.id == "tool_call_protocol")
    assert probe.status == "fail", probe.reason
    _sound(verdict, INFRA_FAILURE)  # the harness after it fails on the dead endpoint too
