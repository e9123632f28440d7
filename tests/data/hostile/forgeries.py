"""Resealed forgeries of a real recorded run, one or more per class of attack on the verifier.

The base is a run recorded by ``audit run`` against the reference endpoint (well-behaved:
QUALIFIED, its claims the replay's). Each forgery edits what a publisher controls (every byte)
and reseals the manifest so that integrity holds; each keeps the claims of a QUALIFIED, rankable
run, since that is what a forger wants believed. Every one must end exit 1, never QUALIFIED. The
honest control is the recording itself, untouched: exit 0.

Classes (the issue's numbering): 1 one entry per fact, 2 what the pins or the upstream decide,
3 every derived record against its source, 4 the socket ledger, 5 reasoning wherever it hides.
And 6, the real upstreams' own outputs: forgeries of the recorded real bundle
(examples/recorded/llamacpp-smollm2-135m.tar: llama.cpp serving SmolLM2-135M through Spark
Bench, benchlocal-cli and Infermark; honest verdict INFRA_ERROR, exit 0), Spark Bench's CSV
edited, its records re-derived and the bundle resealed with claims equal to its replay
(``tests.gate_kit.forged``): integrity and the claims hold, so only the cross-check with the
transport log can stop them.

No forgery here edits or adds a harness's environment record: the recording's pin set (the
demo's) gives no harness requirements or variables, so the verifier reads none of them (each is
listed as unread) and a forged one rightly leaves the run QUALIFIED, exit 0. Their strict reading
and the unread listing are tested under pinned variables in test_attacks_2026_12_01.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from audit._archive import unpack
from bundle_schema import canonical_bytes
from bundle_schema.models import Manifest
from tests.data.hostile.kit import (
    Builder,
    Case,
    Context,
    Files,
    read_bundle,
    rederive_metrics,
    reseal,
)
from tests.data.hostile.kit import lines as _lines
from tests.data.hostile.kit import put_json as _put_json
from tests.data.hostile.kit import put_lines as _put_lines
from verify import git_blob_id
from verify.harness_outputs import OutputsUnreadable
from verify.socket_trace import read_header, trace_entries

__all__ = ["CONTROL", "FORGERIES", "record_reference_run"]

TRANSPORT = "transport/exchanges.jsonl"
LEDGER = "network/socket-ledger.jsonl"
TASKS = "components/hermes/tasks.jsonl"
RAW_TASKS = "components/hermes/raw/tasks.jsonl"
QUALITY = "components/coding/spark-quality.json"
INFERMARK = "components/performance/infermark-c1.json"
TRANSPORT_MEDIA = "application/vnd.evidence-audit.transport-exchange+jsonl"
PROBE_MEDIA = "application/vnd.evidence-audit.direct-probe+json"
SHARD_MEDIA = "application/vnd.evidence-audit.bfcl-shard+json"
STAMP = "%Y-%m-%dT%H:%M:%SZ"

Forgery = Callable[[Files, dict[str, Any]], None]


def record_reference_run(out: Path, work: Path) -> Path:
    """Record a well-behaved run against the reference endpoint into ``out`` (once)."""
    from audit.demo.examples import EXAMPLES_DIR, build_upstream  # noqa: PLC0415
    from audit.demo.pipeline import DEMO_DIGEST  # noqa: PLC0415
    from audit.demo.reference_endpoint import serve  # noqa: PLC0415
    from audit.run import RunRequest, run_qualification  # noqa: PLC0415
    from pins import DEMO, load_builtin  # noqa: PLC0415

    if (out / "manifest.json").is_file():
        return out
    pins = load_builtin(DEMO)
    mirrors = {}
    for name in pins.pins.upstreams:
        build_upstream(EXAMPLES_DIR / "upstreams" / name, work / "mirrors" / name)
        mirrors[name] = work / "mirrors" / name
    with serve() as endpoint:
        run_qualification(
            RunRequest(
                endpoint=endpoint.url, pins=pins, profile="full", out=out,
                model_digest=DEMO_DIGEST, mirrors=mirrors, run_id="recorded-reference",
            )
        )  # fmt: skip
    return out


def _recorded(context: Context) -> Path:
    return record_reference_run(context.work / "recorded", context.work / "recording")


def _forged(forgery: Forgery) -> Builder:
    def build(context: Context, path: Path) -> None:
        manifest, files = read_bundle(_recorded(context))
        fields: dict[str, Any] = {}
        forgery(files, fields)
        if callable(fields.get("upstreams")):  # a change to the manifest's checkouts
            fields["upstreams"] = fields["upstreams"](manifest.upstreams)
        reseal(path, manifest, files, fields)

    return build


def _control(context: Context, path: Path) -> None:
    shutil.copytree(_recorded(context), path)


# --- helpers ----------------------------------------------------------------------------------


def _exchanges(files: Files) -> list[dict[str, Any]]:
    return _lines(files, TRANSPORT)


def _of(exchanges: list[dict[str, Any]], component: str) -> list[dict[str, Any]]:
    return [e for e in exchanges if e["component"] == component]


def _count_exchanges(files: Files, exchanges: list[dict[str, Any]]) -> None:
    """Write the log back with the observer's count in step (a forger keeps them agreeing)."""
    _put_lines(files, TRANSPORT, exchanges)
    config = json.loads(files["run/config.json"][0])
    config["observer"]["exchanges"] = len(exchanges)
    _put_json(files, "run/config.json", config)


def _tasks(files: Files, change: Callable[[list[dict[str, Any]]], None]) -> None:
    """Edit the Hermes task records and their raw output alike (consistent with each other)."""
    tasks = _lines(files, TASKS)
    change(tasks)
    _put_lines(files, TASKS, tasks)
    raw = [{k: v for k, v in t.items() if k != "exchanges"} for t in tasks]
    files[RAW_TASKS] = (b"".join(json.dumps(t).encode() + b"\n" for t in raw), files[RAW_TASKS][1])
    with contextlib.suppress(OutputsUnreadable):  # refused by the reader: no metrics to copy
        rederive_metrics(files, "hermes", ["hermes"])  # and the result's metrics alike


def _add(files: Files, name: str, data: bytes, media: str) -> None:
    files[name] = (data, media)


# --- 1: one entry per fact ----------------------------------------------------------------------


def _second_transport_log(files: Files, _fields: dict[str, Any]) -> None:
    clean = [e for e in _exchanges(files) if e["component"] != "performance"]
    data = b"".join(canonical_bytes(e) + b"\n" for e in clean)
    _add(files, "transport/exchanges-clean.jsonl", data, TRANSPORT_MEDIA)


def _second_probe(files: Files, _fields: dict[str, Any]) -> None:
    _add(files, "probes/direct-response-retry.json", files["probes/direct-response.json"][0],
         PROBE_MEDIA)  # fmt: skip


def _retried_probe(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    retry = dict(_of(exchanges, "probes")[0]) | {"id": len(exchanges)}
    _count_exchanges(files, [*exchanges, retry])


def _probe_record_of_the_other_kind(files: Files, _fields: dict[str, Any]) -> None:
    files["probes/direct-response.json"] = files["probes/tool-call.json"]


def _transport_log_as_a_harness_log(files: Files, _fields: dict[str, Any]) -> None:
    """A copy of the transport log kept at a harness log's place, under its own media type: a
    gate's evidence in ``audit show``'s view, had the view listed entries by media type."""
    _add(files, "logs/exchanges.jsonl", files[TRANSPORT][0], TRANSPORT_MEDIA)


# --- 2: what the pins or the upstream decide ----------------------------------------------------


def _widened_patterns(files: Files, _fields: dict[str, Any]) -> None:
    def change(tasks: list[dict[str, Any]]) -> None:
        tasks[0]["allowed_changes"] = ["**"]
        tasks[0]["changed_paths"] = [*tasks[0]["changed_paths"], "setup.py"]

    _tasks(files, change)


def _dropped_task(files: Files, _fields: dict[str, Any]) -> None:
    _tasks(files, lambda tasks: tasks.pop())


def _raised_limit(files: Files, _fields: dict[str, Any]) -> None:
    _tasks(files, lambda tasks: tasks[0].update(wall_limit_s=99999.0))


def _escaping_path(files: Files, _fields: dict[str, Any]) -> None:
    def change(tasks: list[dict[str, Any]]) -> None:
        tasks[0]["allowed_changes"] = [*tasks[0]["allowed_changes"], "../**"]
        tasks[0]["changed_paths"] = ["../outside.py"]

    _tasks(files, change)


def _task_twice(files: Files, _fields: dict[str, Any]) -> None:
    _tasks(files, lambda tasks: tasks.append(dict(tasks[0]) | {"exchanges": []}))


def _hidden_quarantine(files: Files, _fields: dict[str, Any]) -> None:
    marker = b'{"quarantined":true,"reason":"golden replay drifted","provisional":{}}'
    _add(files, "components/coding/raw/quarantine.json", marker, "application/json")
    for component in ("coding", "reliability"):
        name = f"components/{component}/result.json"
        result = json.loads(files[name][0])
        result["raw_outputs"] = sorted([*result["raw_outputs"],
                                        "components/coding/raw/quarantine.json"])  # fmt: skip
        _put_json(files, name, result)


def _unlisted_quarantine(files: Files, _fields: dict[str, Any]) -> None:
    marker = b'{"quarantined":true,"reason":"golden replay drifted","provisional":{}}'
    _add(files, "components/coding/raw/quarantine.json", marker, "application/json")


def _marker_moved(files: Files, _fields: dict[str, Any]) -> None:
    """An upstream quarantine marker kept at another served component's raw place."""
    marker = b'{"quarantined":true,"reason":"golden replay drifted","provisional":{}}'
    _add(files, "components/reliability/raw/quarantine.json", marker, "application/json")


def _tallies_of_a_gate_never_run(files: Files, _fields: dict[str, Any]) -> None:
    """BFCL tallies, every sample passed, at the place a gate beside tool/instruction keeps
    them: the pin set runs no such gate, so no run of it is behind them."""
    shard = {"subset_totals": {"live_simple": {"hits": 1, "n": 1},
                               "simple_python": {"hits": 3, "n": 3}}}  # fmt: skip
    _add(files, "components/tool_instruction/gates/bfcl/bfcl-eval.json", canonical_bytes(shard),
         SHARD_MEDIA)  # fmt: skip


def _fallback_in_body_only(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    coding = _of(exchanges, "coding")[0]
    reply = json.loads(coding["response_body"]["data"])
    coding["response_body"]["data"] = json.dumps(reply | {"model": "cloud-model-405b"})
    _put_lines(files, TRANSPORT, exchanges)  # the observer's response_model note left as it was


# --- 3: every derived record against its source -------------------------------------------------


def _quality_record(files: Files, _fields: dict[str, Any]) -> None:
    quality = json.loads(files[QUALITY][0])
    _put_json(files, QUALITY, quality | {"code_domain_quality": 99})


def _record_beside_a_fork(files: Files, fields: dict[str, Any]) -> None:
    """A record that disagrees with its raw output, beside its harness's checkout relabelled
    as a fork (the checkout record and the manifest alike): another harness than the pin set
    pins, whose outputs make no finding (ADR 0036), so upstream_checkout must fail the run and
    the forged score must not count."""
    _quality_record(files, fields)
    fork = "reference://sparkbench-fork"
    name = "upstreams/sparkbench/checkout.json"
    _put_json(files, name, json.loads(files[name][0]) | {"repository": fork})
    fields["upstreams"] = lambda upstreams: tuple(
        u.model_copy(update={"repository": fork}) if u.name == "sparkbench" else u
        for u in upstreams
    )


def _pass_with_a_failed_case(files: Files, _fields: dict[str, Any]) -> None:
    def change(tasks: list[dict[str, Any]]) -> None:
        tasks[0]["cases"][0]["passed"] = False

    _tasks(files, change)


def _pass_without_cases(files: Files, _fields: dict[str, Any]) -> None:
    _tasks(files, lambda tasks: tasks[0].update(cases=[]))


def _forged_upstream_file(files: Files, _fields: dict[str, Any]) -> None:
    """The pinned task manifest replaced by one that allows every change (same name)."""
    name = next(
        n for n in files
        if n.startswith("upstreams/hermesbench/files/") and b"[[task]]" in files[n][0]
    )  # fmt: skip
    files[name] = (files[name][0].replace(b'"src/dates/**"', b'"**"'), files[name][1])


def _forged_listing(files: Files, _fields: dict[str, Any]) -> None:
    """A forged task manifest kept under its own blob id, and the listing pointed at it."""
    manifest = next(
        n for n in files
        if n.startswith("upstreams/hermesbench/files/") and b"[[task]]" in files[n][0]
    )  # fmt: skip
    forged = files[manifest][0].replace(b'"src/dates/**"', b'"**"')
    forged_id = git_blob_id(forged)
    _add(files, f"upstreams/hermesbench/files/{forged_id}", forged, "application/octet-stream")
    listing = "upstreams/hermesbench/tree.txt"
    old_id = manifest.rsplit("/", 1)[1]
    files[listing] = (files[listing][0].replace(old_id.encode(), forged_id.encode()),
                      files[listing][1])  # fmt: skip


def _unbound_checkout(files: Files, _fields: dict[str, Any]) -> None:
    """The listing pointed at a widened task manifest, with the evidence that would tie the
    listing to the pinned commit (the commit object and the state record) left out."""
    _forged_listing(files, _fields)
    del files["upstreams/hermesbench/commit.txt"], files["upstreams/hermesbench/checkout.json"]


def _listing_quoting_bomb(files: Files, _fields: dict[str, Any]) -> None:
    listing = "upstreams/hermesbench/tree.txt"
    bomb = b"100644 blob " + b"0" * 40 + b'\t"x"' + b".a" * 50_000 + b"\n"
    files[listing] = (files[listing][0] + bomb, files[listing][1])


def _deep_listing(files: Files, _fields: dict[str, Any]) -> None:
    listing = "upstreams/hermesbench/tree.txt"
    deep = b"100644 blob " + b"0" * 40 + b"\t" + b"d/" * 5000 + b"f\n"
    files[listing] = (files[listing][0] + deep, files[listing][1])


def _listing_spelled_otherwise(upper: bool) -> Callable[[Files, dict[str, Any]], None]:
    """A listing line spelled as git never writes it, hashing to the same tree: the tree id
    takes an entry's mode, name and id bytes, not its kind's word or its id's case."""

    def forge(files: Files, _fields: dict[str, Any]) -> None:
        listing = "upstreams/hermesbench/tree.txt"
        lines = files[listing][0].split(b"\n")
        head, tab, name = lines[0].partition(b"\t")
        mode, kind, oid = head.split(b" ")
        lines[0] = b" ".join([mode, kind, oid.upper()] if upper else [mode, b"Blob", oid])
        lines[0] += tab + name
        files[listing] = (b"\n".join(lines), files[listing][1])

    return forge


def _dirty_state(files: Files, _fields: dict[str, Any]) -> None:
    name = "upstreams/sparkbench/checkout.json"
    state = json.loads(files[name][0])
    _put_json(files, name, state | {"commit": "0" * 40})


def _state_said_twice(files: Files, _fields: dict[str, Any]) -> None:
    # a dirty git status, then a clean one under the same key: a reader that keeps the last
    # value of a repeated key saw a clean checkout
    name = "upstreams/sparkbench/checkout.json"
    data = files[name][0]
    assert data.count(b'"porcelain":""') == 1
    data = data.replace(b'"porcelain":""', b'"porcelain":" M spark/run.py","porcelain":""')
    files[name] = (data, files[name][1])


def _inflated_throughput(files: Files, _fields: dict[str, Any]) -> None:
    record = json.loads(files[INFERMARK][0])
    record["wall_seconds"] = record["wall_seconds"] / 10
    record["tokens_per_second"] = record["visible_chunks"] / record["wall_seconds"]
    _put_json(files, INFERMARK, record)


def _faster_ttft(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    for exchange in _of(exchanges, "performance"):
        for chunk in exchange["chunks"]:
            chunk["t"] += 5.0  # the observer saw the first chunks 5 s later than claimed
    _put_lines(files, TRANSPORT, exchanges)


def _probe_tokens(files: Files, _fields: dict[str, Any]) -> None:
    name = "probes/direct-response.json"
    probe = json.loads(files[name][0])
    _put_json(files, name, probe | {"completion_tokens": 1000})


def _expected_what_it_got(files: Files, _fields: dict[str, Any]) -> None:
    """The response probe's record made to expect whatever the model answered."""
    name = "probes/direct-response.json"
    probe = json.loads(files[name][0])
    _put_json(files, name, probe | {"expected": "READY, and more"})


def _bundle_before_its_run(files: Files, fields: dict[str, Any]) -> None:
    fields["created_at"] = "2020-01-01T00:00:00Z"


def _bundle_made_at_no_time(files: Files, fields: dict[str, Any]) -> None:
    """A creation time the schema's pattern takes and no clock gives (month 13): once checked
    by nothing, so a copy dated so decided nothing, but passed."""
    fields["created_at"] = "2026-13-45T23:59:60Z"


def _result(files: Files, component: str, change: Callable[[dict[str, Any]], None]) -> None:
    name = f"components/{component}/result.json"
    result = json.loads(files[name][0])
    change(result)
    _put_json(files, name, result)


def _stamp_moved(stamp: str, seconds: int) -> str:
    moved = datetime.strptime(stamp, STAMP) + timedelta(seconds=seconds)
    return moved.strftime(STAMP)


def _window_before_the_probes(files: Files, _fields: dict[str, Any]) -> None:
    """Hermes "ran" an hour longer, from before the identity and the probes were asked."""
    _result(files, "hermes", lambda r: r.update(started_at=_stamp_moved(r["started_at"], -3600)))


def _two_harnesses_at_once(files: Files, _fields: dict[str, Any]) -> None:
    """BenchLocal's and Hermes' windows stretched back over each other by ten seconds."""
    tool = json.loads(files["components/tool_instruction/result.json"][0])
    _result(files, "tool_instruction",
            lambda r: r.update(started_at=_stamp_moved(tool["started_at"], -10)))  # fmt: skip
    _result(files, "hermes", lambda r: r.update(started_at=_stamp_moved(tool["started_at"], -9)))


def _completed_without_a_start(files: Files, _fields: dict[str, Any]) -> None:
    _result(files, "coding", lambda r: r.pop("started_at"))


# --- 4: the socket ledger -------------------------------------------------------------------------


def _unix_with_an_ip(files: Files, _fields: dict[str, Any]) -> None:
    entries = _lines(files, LEDGER)
    entries[0] |= {"family": "AF_UNIX", "address": "203.0.113.9", "port": 443}
    _put_lines(files, LEDGER, entries)


def _cut_tail(files: Files, _fields: dict[str, Any]) -> None:
    entries = _lines(files, LEDGER)
    _put_lines(files, LEDGER, entries[: len(entries) // 2])


def _attempt_traced(call: str, *, in_the_ledger: bool = True) -> Forgery:
    """One more attempt, ``call`` the call, its arguments and result as strace prints them, in
    the last sandbox trace and in the ledger alike (parsed from that trace, as the runner does):
    what a harness that went round loopback leaves when the publisher keeps the evidence
    whole. Neither is a forgery of a record; the verifier must fail isolation on its own.
    Without ``in_the_ledger``, the trace alone holds it: a ledger that left it out."""

    def forge(files: Files, _fields: dict[str, Any]) -> None:
        last = max(n for n in files if n.startswith("network/strace/"))
        data, media = files[last]
        entries = _lines(files, LEDGER)
        origin = read_header([data]).origin
        line = f"{entries[-1]['pid']}<python> {origin + entries[-1]['t'] + 0.5:.6f} {call}"
        files[last] = (data + line.encode() + b"\n", media)
        if not in_the_ledger:
            return
        added = list(trace_entries([files[last][0]]))[-1].model_dump(mode="json")
        _put_lines(files, LEDGER, [*entries, added])
        config = json.loads(files["run/config.json"][0])
        config["ledger"]["entries"] = len(entries) + 1  # the supervisor's closing count too
        _put_json(files, "run/config.json", config)

    return forge


_OUTSIDE = 'sin_port=htons(53), sin_addr=inet_addr("93.184.216.34")}, 16) = -1 ENETUNREACH'
"""The end of a send's line to an address outside, as strace prints it in the sandbox."""


# --- 5: reasoning wherever it hides --------------------------------------------------------------


def _policy_relabelled(files: Files, _fields: dict[str, Any]) -> None:
    """The run config says reasoning was on; every request still said it was off."""
    name = "run/config.json"
    config = json.loads(files[name][0])
    config["reasoning_policy"]["effective"] = "on"
    _put_json(files, name, config)


def _completion_path_disguised(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    for exchange in exchanges:
        if exchange["method"] == "POST" and exchange["path"] == "/v1/chat/completions":
            exchange["path"] = "/v1/chat/completions;"
    _put_lines(files, TRANSPORT, exchanges)


def _model_in_another_shape(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    coding = _of(exchanges, "coding")[0]
    reply = json.loads(coding["response_body"]["data"])
    coding["response_body"]["data"] = json.dumps(reply | {"model": ["cloud-model-405b"]})
    _put_lines(files, TRANSPORT, exchanges)


def _reasoning_split_across_chunks(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    stream = next(e for e in _of(exchanges, "performance") if len(e["chunks"]) >= 2)
    event = 'data: {"choices":[{"index":0,"delta":{"reasoning_content":"step 1"}}]}\n\n'
    stream["chunks"][0]["data"] += event[:38]
    stream["chunks"][1]["data"] = event[38:] + stream["chunks"][1]["data"]
    _put_lines(files, TRANSPORT, exchanges)


def _reasoning_in_base64(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    coding = _of(exchanges, "coding")[0]
    reply = json.loads(coding["response_body"]["data"])
    reply["choices"][0]["message"]["reasoning_content"] = "hidden @"
    data = json.dumps(reply).encode().replace(b"@", b"\xff")
    coding["response_body"] = {"encoding": "base64", "data": base64.b64encode(data).decode()}
    _put_lines(files, TRANSPORT, exchanges)


def _reasoning_behind_a_query(files: Files, _fields: dict[str, Any]) -> None:
    exchanges = _exchanges(files)
    coding = _of(exchanges, "coding")[0]
    coding["path"] += "?trace=1"
    reply = json.loads(coding["response_body"]["data"])
    reply["choices"][0]["message"]["content"] = "<think>plan</think>done"
    coding["response_body"]["data"] = json.dumps(reply)
    _put_lines(files, TRANSPORT, exchanges)


def _case(name: str, forgery: Forgery, fragment: str) -> Case:
    return Case(name, "forgery", _forged(forgery), 1, fragment, deterministic=False)


# --- 6: the real upstreams' own outputs ----------------------------------------------------------


def _real(context: Context) -> tuple[Manifest, Files]:
    """The recorded real bundle, unpacked once into the corpus's work folder, read."""
    from tests.gate_kit import RECORDED_TAR  # noqa: PLC0415 - the kit imports this package's

    root = context.work / "real" / "bundle"
    if not (root / "manifest.json").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        unpack(RECORDED_TAR, root)
    return read_bundle(root)


def _real_case(name: str, workload: str, change: tuple[str, str], fragment: str) -> Case:
    """A forgery of the recorded real bundle: a figure of Spark Bench's CSV changed."""

    def build(context: Context, path: Path) -> None:
        from tests.gate_kit import forged, spark_changes  # noqa: PLC0415 - as _real

        forged(_real(context), path, spark_changes(workload, change))

    return Case(name, "forgery", build, 1, fragment, deterministic=False)


FORGERIES: list[Case] = [
    _case("1: a second transport log under another name", _second_transport_log,
          "transport/exchanges-clean.jsonl"),
    _case("1: a second response probe under another name", _second_probe,
          "direct-response-retry.json"),
    _case("1: a retried probe in the log", _retried_probe, "replayed INFRA_ERROR"),
    _case("1: a probe record of the other kind", _probe_record_of_the_other_kind,
          "a tool_call probe at the place of the response probe"),
    _case("1: the transport log copied to a harness log's place", _transport_log_as_a_harness_log,
          "a transport-exchange record at logs/exchanges.jsonl, the place of a harness log"),
    _case("2: a task's patterns widened", _widened_patterns, "allowed_changes"),
    _case("2: a task dropped", _dropped_task, "has no record"),
    _case("2: a task's wall limit raised", _raised_limit, "wall_limit_s"),
    _case("2: a changed path outside the workspace", _escaping_path,
          "is not a path inside the workspace"),
    _case("2: a task recorded twice", _task_twice, "recorded twice"),
    _case("2: a quarantine marker no record carries", _hidden_quarantine,
          "no quarantine record carries"),
    _case("2: a quarantine marker left off the result's list", _unlisted_quarantine,
          "no quarantine record carries"),
    _case("2: a quarantine marker moved to another component's raw place", _marker_moved,
          "no quarantine record carries"),
    _case("2: a probe expecting what the model answered", _expected_what_it_got,
          "its contract gx10-direct-probe-v1 expects"),
    _case("2: tallies of a gate the pin set does not run", _tallies_of_a_gate_never_run,
          "a gate the pin set gx10-reference-v5 does not run there"),
    _case("2: a fallback reply under the observer's note", _fallback_in_body_only,
          "replayed INFRA_ERROR"),
    _case("3: a record that disagrees with its raw output", _quality_record,
          "not what the raw outputs of sparkbench say"),
    _case("3: a forged record beside its harness's checkout relabelled as a fork",
          _record_beside_a_fork, "replayed INFRA_ERROR"),
    _case("3: a PASS with a failed case", _pass_with_a_failed_case, "an evaluator case failed"),
    _case("3: a PASS without evaluator cases", _pass_without_cases, "has no evaluator case"),
    _case("3: an upstream file forged in place", _forged_upstream_file,
          "the hermesbench checkout is not recorded whole"),
    _case("3: the listing pointed at a forged file", _forged_listing,
          "the hermesbench checkout is not recorded whole"),
    _case("3: a checkout without the evidence that binds it to its commit", _unbound_checkout,
          "the hermesbench checkout is not recorded whole"),
    _case("3: a listing path quoted to exhaust a parser", _listing_quoting_bomb,
          "the hermesbench checkout is not recorded whole"),
    _case("3: a listing path 5,000 segments deep", _deep_listing,
          "the hermesbench checkout is not recorded whole"),
    _case("3: a listing line whose kind is spelled otherwise", _listing_spelled_otherwise(False),
          "the hermesbench checkout is not recorded whole"),
    _case("3: a listing line whose id is in upper case", _listing_spelled_otherwise(True),
          "the hermesbench checkout is not recorded whole"),
    _case("3: a checkout state of another commit", _dirty_state, "checkout.json: commit"),
    _case("3: a checkout state that says its git status twice", _state_said_twice,
          "checkout.json: not a checkout record"),
    _case("3: throughput inflated", _inflated_throughput, "the exchanges span"),
    _case("3: a TTFT the observer did not see", _faster_ttft, "TTFT p50"),
    _case("3: probe tokens edited", _probe_tokens, "the probe records 1000 tokens"),
    _case("3: a bundle made before its run ended", _bundle_before_its_run,
          "after the bundle was made"),
    _case("3: a bundle made at no time", _bundle_made_at_no_time, "is no time"),
    _case("3: a window moved back before the probes", _window_before_the_probes,
          "which the observer's clock cannot hold with the other windows"),
    _case("3: two harnesses' windows over each other", _two_harnesses_at_once,
          "of another harness"),
    _case("3: a completed component without its start", _completed_without_a_start,
          "COMPLETED, and no started_at: it ran"),
    # no trace parses into such an entry: the ledger no longer agrees with its raw trace
    _case("4: an AF_UNIX attempt with an IP address", _unix_with_an_ip,
          "line 1 is not the attempt its sandbox trace records"),
    _case("4: the ledger's tail cut", _cut_tail, "the supervisor closed the ledger"),
    _case("4: a vsock attempt, in the trace and the ledger alike",
          _attempt_traced("connect(7, {sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=9, "
                          "svm_flags=0}, 16) = 0"),
          "replayed INFRA_ERROR"),
    _case("4: an attempt at an address strace could not read, in the trace and the ledger alike",
          _attempt_traced("connect(7, 0x7f2c4e1b3000, 16) = -1 EFAULT (Bad address)"),
          "replayed INFRA_ERROR"),
    _case("4: a datagram outside, in the trace and the ledger alike",
          _attempt_traced(f'sendto(7, ""..., 5, 0, {{sa_family=AF_INET, {_OUTSIDE}'),
          "replayed INFRA_ERROR"),
    _case("4: a datagram outside in the trace, left out of the ledger",
          _attempt_traced(f'sendto(7, ""..., 5, 0, {{sa_family=AF_INET, {_OUTSIDE}',
                          in_the_ledger=False),
          "connection attempts; it holds"),
    _case("4: a datagram to AF_UNSPEC (an IPv4 socket's AF_INET), in the trace and the ledger",
          _attempt_traced('sendmsg(7, {msg_name={sa_family=AF_UNSPEC, sa_data="\\0005]\\270"}, '
                          "msg_namelen=16, msg_iov=[...], msg_iovlen=1, msg_controllen=0, "
                          "msg_flags=0}, 0) = -1 ENETUNREACH"),
          "replayed INFRA_ERROR"),
    _case("4: a datagram sent to a host's socket under /run, in the trace and the ledger",
          _attempt_traced('sendto(7, ""..., 3, 0, {sa_family=AF_UNIX, '
                          'sun_path="/run/systemd/journal/socket"}, 30) = 3'),
          "replayed INFRA_ERROR"),
    _case("4: a connect shown to loopback that found no route, in the trace and the ledger",
          _attempt_traced("connect(7, {sa_family=AF_INET, sin_port=htons(9), "
                          'sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ENETUNREACH'),
          "replayed INFRA_ERROR"),
    _case("4: a send in a form the parser does not know, in the trace and the ledger",
          _attempt_traced("sendto(7, <a buffer>, 5, 0, {sa_family=AF_INET, " + _OUTSIDE),
          "replayed INFRA_ERROR"),
    _case("5: the effective policy relabelled against its serialization", _policy_relabelled,
          "replayed INFRA_ERROR"),
    _case("5: completion paths disguised", _completion_path_disguised, "replayed INFRA_ERROR"),
    _case("2: a fallback model named in another shape", _model_in_another_shape,
          "replayed INFRA_ERROR"),
    _case("5: reasoning split across stream chunks", _reasoning_split_across_chunks,
          "replayed NOT_QUALIFIED"),
    _case("5: reasoning in a base64 body", _reasoning_in_base64, "replayed NOT_QUALIFIED"),
    _case("5: a think tag behind a query string", _reasoning_behind_a_query,
          "replayed NOT_QUALIFIED"),
    _real_case("6: Spark Bench's code scenario passed on answers that do not compile", "CODE-01",
               ("score", "1.0"), "CODE-01 scores 1; its answers earn at most 0"),
    _real_case("6: Spark Bench's single-stream TTFT earlier than its first token",
               "single_stream", ("ttft_ms", "2000.0"),
               "tier2 single-stream figures against the transport log"),
    _real_case("6: Spark Bench's concurrency aggregate faster than its tokens came",
               "concurrency", ("agg_decode_tps", "500.0"),
               "tier2 concurrency figures against the transport log: batch 1"),
    _real_case("6: Spark Bench's concurrency TTFT median earlier than its first token",
               "concurrency", ("ttft_p50_ms", "100.0"), "a TTFT p50 of 100 ms"),
]  # fmt: skip
"""Every forgery: each must end exit 1 with its fragment, and never QUALIFIED."""

CONTROL: Builder = _control
"""The honest control: the recorded run, untouched (QUALIFIED, exit 0)."""
