"""Hostile tests of 2026-12-05 (k): the two changes of that morning, attacked both ways.

1. efd0753: ``verify/_facts.py`` ``reported_digests`` attributes each digest an identity reply
   reports to a model (its entry of a ``data``/``models`` listing by ``id``/``name``/``model``,
   else a reply to a request naming the model, else a reply naming a model at its top), and
   ``verify/gx10/gates.py`` ``model_identity``/``_reporting`` accepts a ``digest_source =
   "endpoint"`` digest only when reported for the runtime model (``same_model``). Bounded
   (slim exchanges, ``audit verify``) and full (``--evidence-out``, ``audit score gx10``) must
   agree.
2. cbdd689: a quarantine marker that reads on its own quarantines whatever else a harness's
   outputs lack (``verify/harness_outputs.py`` ``read_markers``/``markers_alone``/``MARKERS``),
   in the runner (``audit/run.py`` ``_Harnesses.run``/``_marked``) and the verifier
   (``verify/_consistency/outputs.py`` ``_raw_outputs``/``_reread``/``_marker``).

The forgeries start from the example runs built under the tests' deployment pin set and are
resealed with claims equal to their own replay (``tests.decision_kit.forged``); the honest runs
are real ``audit run``s of the smoke profile against the reference endpoint, with the reference
SparkBench (or a stand-in writing Spark Bench's CSV) as pinned.

Attacked: which model a digest is attributed to when the request and the reply name different
models, when a request or an entry names a model in several members, when an object nested in
an entry names another model, when the reply echoes the request; ``same_model``'s path rule;
base64 bodies, duplicate JSON keys, replies nested near the parser's limit, huge replies and
the 1024 bound; slim against full. For markers: a marker beside outputs the runner refuses to
keep, the components the runner and the verifier hand a reader, a marker that does not read
itself (duplicate keys, two rows, two runs, not UTF-8), marker values the record schema
refuses, and whether either reader stays total.

Holes (each test asserts the safe behaviour; the strict expected failures are these):

1. HOLE: a reply to a request naming the runtime model is read as that model's, though the
   reply names another model at its top (by ``name`` or ``id``: only ``model`` is caught as
   fallback by ``network_isolation``): ``_names(request) or _names(reply)``
   (verify/_facts.py ``reported_digests``). Another model's digest passes ``model_identity`` and
   ranks.
2. HOLE: a request naming two models (Ollama's ``/api/show`` reads ``model`` before the
   deprecated ``name``) attributes the reply's digests to both (verify/_facts.py
   ``reported_digests``, ``_names``):
   ``{"name": runtime, "model": other}`` passes and ranks with ``other``'s digest.
3. HOLE: a listing entry whose naming members disagree (``{"id": "other-model-7b", "name":
   runtime}``) reports its digest for every name (verify/_facts.py ``reported_digests``): the
   forgery j 10 was fixed for passes again with one more member, and ranks.
4. HOLE (minor): a digest inside an object of the runtime model's entry (or of a reply naming
   it) that names another model is the runtime model's (``_digests_in`` walks the whole entry,
   verify/_facts.py).
5. HOLE (minor): a reply that echoes its request (a rerank's documents, a detokenization)
   "reports" the digest the request itself sent (verify/_facts.py ``reported_digests``: any 200
   reply to a request naming the model, whatever the request carries).
6. HOLE (bounded = full): whether a reply nested near the parser's limit reads depends on the
   caller's stack depth (``body_json`` catches RecursionError, verify/replies.py ``_loads``; the
   old raw-bytes scan did not parse): ``audit verify``, ``audit verify --evidence-out`` and
   ``audit score gx10`` name different exchanges for the same digest (at a depth between, one
   passes and another says infra).
7. HOLE (bounded memory): a slim exchange keeps every name of a reply uncut
   (verify/_facts.py ``_names``; ``verify.replies._named`` cuts at 256): 40 entries of 100 kB names
   keep 4 MB per exchange in the path meant to keep facts only (ADR 0012).
8. FALSE FINDING: an honest harness that writes its marker and an output the runner cannot
   keep (a symbolic link) is FAILED without its marker: ``_execute`` returns ``_Failed``
   without the files when anything was refused (audit/run.py ``_Harnesses._execute``), so
   ``_marked`` reads none; the verifier reads the kept outputs, finds the marker alone and the
   honest bundle fails integrity ("a quarantine marker ... that no quarantine record carries").
9. FALSE FINDING: the runner hands a reader the selected components its upstream serves
   (audit/run.py ``_components``), the verifier every component the pin set maps to it
   (verify/_consistency/outputs.py ``_raw_outputs``). A smoke run (coding only) whose Spark Bench
   CSV has no overall reliability row and a quarantine row: the runner reads it whole (marker with
   its provisional figures), the verifier's read fails and ``markers_alone`` gives the marker
   without them: two findings (the "do not read" one predates cbdd689 and hits an unmarked run
   alike). A profile listing reliability before coding puts Spark Bench's marker on another
   component (``components[0]``) in each.
10. HOLE (total readers): a ``quarantine.json`` whose provisional figures name a metric the
    record schema refuses (``"pass rate"``), or whose reason is a lone surrogate, raises
    pydantic's ValidationError out of ``_spark_marker`` (verify/harness_outputs.py), which
    ``read_markers``/``markers_alone`` (verify/harness_outputs.py) do not catch:
    ``audit run`` fails before its bundle is written ("ValidationError ... QuarantineMarker")
    and ``audit verify`` ends in a traceback (verify/_consistency/outputs.py ``_reread``).

Fixed the same day: 1 to 7 by ``reported_digests`` (an object names one model, by its runtime
name, or none where its members disagree or the name is over 256 characters; a reply to a
request is read only where the two name the same model or one names none; an object inside
that names another model is not walked; a digest the request holds is not reported; a body
nested past ``MAX_DEPTH`` reports nothing, on every path); 8 by the runner reading a harness's
outputs as kept, under the names the verifier reads them by, refused ones or not (the marked
component is QUARANTINED, its reason naming what did not complete); 9 by the verifier handing
a reader the profile's components its upstream serves, in the profile's order, as the runner
does; 10 by building a marker as any record is (``_build``: a value the schema refuses makes
the marker unreadable, not a traceback).

Held: bounded and full agree on base64 bodies, bodies that are not base64, duplicate JSON keys
(the last, as Go's decoder and Python's both take), 100,000-deep nesting (nothing, no
traceback) and a 20 MB reply (read within the 1024 bound, in well under a second); the path
rule (an entry named by the path of weights whose file name is the runtime id reports for it, a
path to another file name does not); Ollama's ``/api/tags`` and an ``/api/show`` reply to the
runner's own request shape (``{"name": model}``) report the runtime model's digest; a reply
naming another model by ``model`` is caught by ``network_isolation``, whatever
``model_identity`` says. Markers: one that does not read itself (duplicate keys, not JSON, two
quarantine rows, rows of two runs, not UTF-8) is none in the runner's ``read_markers`` and the
verifier's ``markers_alone`` alike. A publisher gains nothing new from cbdd689: a marker
already quarantined whatever the gates said when the outputs read; a marker beside outputs
that do not read only removes its provisional figures.
"""

from __future__ import annotations

import base64
import copy
import csv
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Body, Verdict
from pins import DEMO, PinSetSource, load_builtin, pin_set_source
from tests.data.hostile.kit import Files, lines, put_lines, read_bundle, reseal
from tests.decision_kit import (
    DEPLOYMENT_PINS,
    built_examples,
    deployment_pins,
    disagreeing,
    forged,
    json_edit,
    verdict_of,
)
from tests.factories import smoke_run, sparkbench_pins
from tests.identity_kit import identity_exchange as exchange
from tests.identity_kit import reported_both as both
from verify import verify_bundle
from verify._facts import MAX_REPORTED, reported_digests, slim_exchange
from verify.harness_outputs import (
    OutputsUnreadable,
    markers_alone,
    read_markers,
    read_outputs,
)
from verify.replies import same_model

QUALIFIED, QUARANTINED = "gx10-full-qualified", "gx10-spark-quarantined"
EXCHANGES = "transport/exchanges.jsonl"
A, B = "a1" * 32, "b2" * 32
OTHER = "cd" * 32
"""The digest of another model the publisher wants to pass as the runtime model's."""


@pytest.fixture(scope="module")
def deployment() -> PinSetSource:
    return deployment_pins()


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, deployment: PinSetSource) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    built = built_examples(root, deployment, (QUALIFIED, QUARANTINED))
    qualified = verify_bundle(built[QUALIFIED], pins=deployment).verdict
    assert qualified.rankable and qualified.claims.match, qualified.reasons
    return built


def _gate(verdict: Verdict, gate: str) -> tuple[str, str]:
    found = next(g for g in verdict.gates if g.id == gate)
    return found.status, found.reason


# --- reported_digests: which model a reply reports a digest for ---------------------------------


def _for(reported: frozenset[tuple[str, str]], model: str) -> set[str]:
    return {h for n, h in reported if n == model}


def test_a_reply_about_another_model_is_not_the_requested_models() -> None:
    show = exchange({"name": "other:7b", "digest": B}, method="POST", path="/api/show",
                    request={"model": "qwen3:8b"})  # fmt: skip
    assert B not in _for(both(show), "qwen3:8b")


def test_a_request_naming_two_models_reports_for_neither_or_the_one_shown() -> None:
    show = exchange({"modelfile": f"FROM /root/.ollama/models/blobs/sha256-{B}\n"},
                    method="POST", path="/api/show",
                    request={"name": "qwen3:8b", "model": "other:7b"})  # fmt: skip
    assert B not in _for(both(show), "qwen3:8b")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({"id": "other:7b", "name": "qwen3:8b", "digest": B}, id="id-and-name"),
        pytest.param({"name": "other:7b", "model": "qwen3:8b", "digest": B}, id="name-and-model"),
    ],
)
def test_an_entry_naming_two_models_reports_for_neither(entry: dict[str, Any]) -> None:
    listing = {"object": "list", "data": [{"id": "qwen3:8b", "digest": A}, entry]}
    assert _for(both(exchange(listing, path="/v1/models")), "qwen3:8b") == {A}


@pytest.mark.parametrize("where", ["listing", "top"])
def test_a_digest_under_an_object_naming_another_model_is_not_the_entrys(where: str) -> None:
    entry = {"id": "qwen3:8b", "digest": A, "parent": {"id": "other:7b", "digest": B}}
    reply = {"object": "list", "data": [entry]} if where == "listing" else entry
    assert _for(both(exchange(reply, path="/v1/models")), "qwen3:8b") == {A}


def test_a_reply_that_echoes_the_request_reports_nothing_the_request_sent() -> None:
    rerank = exchange(
        {"id": "rerank-1", "results": [{"index": 0, "document": {"text": f"sha256:{B}"},
                                        "relevance_score": 0.5}]},
        method="POST", path="/v1/rerank",
        request={"model": "qwen3:8b", "query": "which", "documents": [f"sha256:{B}"]},
    )  # fmt: skip
    assert B not in _for(both(rerank), "qwen3:8b")


def _at_depth(frames: int, call: Callable[[], Any]) -> Any:
    """``call()`` made ``frames`` Python frames deeper than this one."""
    return call() if frames <= 0 else _at_depth(frames - 1, call)


def test_a_deep_reply_reads_alike_whatever_the_callers_depth() -> None:
    differ = []
    for depth in range(500, 1000, 5):
        reply = '{"name": "m", "x": ' + "[" * depth + f'"{A}"' + "]" * depth + "}"
        record = exchange(reply)
        if reported_digests(record) != _at_depth(60, lambda r=record: reported_digests(r)):
            differ.append(depth)
    assert not differ, differ


def test_a_slim_exchange_keeps_bounded_facts_of_a_huge_reply() -> None:
    reply = {"models": [{"name": f"{i}-" + "n" * 100_000, "digest": A} for i in range(40)]}
    slim = slim_exchange(exchange(reply), None)
    kept = sum(len(n) + len(h) for n, h in reported_digests(slim))
    assert kept <= 3 * MAX_REPORTED * (256 + 64), kept  # a runtime id has 256 characters


def test_held_bodies_duplicate_keys_and_huge_or_deep_replies_read_alike() -> None:
    """Held: slim and full agree; the last of duplicate keys names (Go's decoder and Python's
    alike); a body that is not UTF-8 JSON, or nested 100,000 deep, reports nothing; a 20 MB reply
    is read within the bound, quickly."""
    assert both(exchange({"models": [{"name": "qwen3:8b", "digest": A}]}, base64_body=True)) == {
        ("qwen3:8b", A)
    }
    duplicated = f'{{"models": [{{"name": "other:7b", "digest": "{A}", "name": "qwen3:8b"}}]}}'
    assert both(exchange(duplicated)) == {("qwen3:8b", A)}
    not_utf8 = base64.b64encode(b"\xff" + json.dumps({"name": "m", "digest": A}).encode())
    garbled = Body(encoding="base64", data=not_utf8.decode())
    assert both(exchange("").model_copy(update={"response_body": garbled})) == frozenset()
    assert both(exchange('{"name": "m", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")) == (
        frozenset()
    )
    many = {"models": [{"name": f"m{i}", "digest": f"{i:064x}", "pad": "x" * 2_000}
                       for i in range(10_000)]}  # fmt: skip
    started = time.monotonic()
    reported = both(exchange(many))
    assert len(reported) == MAX_REPORTED and time.monotonic() - started < 10


def test_held_the_path_rule_and_the_runners_own_identity_replies() -> None:
    """Held: an entry named by the path of weights whose file name is the runtime id reports
    for it (llama.cpp lists paths), a path to another file does not; Ollama's ``/api/tags`` and
    an ``/api/show`` reply to the runner's request shape (audit/identity.py: ``{"name":
    model}``) report the runtime model's digest."""
    listing = {"data": [{"id": "/models/smol.gguf", "meta": {"sha": A}},
                        {"id": "/models/smol.gguf/other.gguf", "meta": {"sha": B}}]}  # fmt: skip
    reported = both(exchange(listing, path="/v1/models"))
    assert {h for n, h in reported if same_model(n, "smol.gguf")} == {A}
    tags = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "digest": A,
                        "details": {"parent_model": "", "family": "qwen3"}}]}  # fmt: skip
    assert both(exchange(tags)) == {("qwen3:8b", A)}
    show = {
        "modelfile": f"FROM /root/.ollama/models/blobs/sha256-{B}\n",
        "details": {"parent_model": "", "format": "gguf"},
        "model_info": {"general.architecture": "qwen3"},
    }
    asked = exchange(show, method="POST", path="/api/show", request={"name": "qwen3:8b"})
    assert both(asked) == {("qwen3:8b", B)}


# --- the forgeries: another model's digest passes model_identity and ranks --------------------


def _appended(files: Files, method: str, path: str, request: Any, reply: Any) -> None:
    """One more identity exchange at the end of the log, the observer's count with it."""
    exchanges = lines(files, EXCHANGES)
    last = exchanges[-1]
    exchanges.append(last | {
        "chunks": [], "component": "identity", "error": None, "id": len(exchanges),
        "method": method, "path": path, "redirect": None, "request_headers": {},
        "request_body": None if request is None else {"encoding": "utf-8",
                                                       "data": json.dumps(request)},
        "response_body": {"encoding": "utf-8", "data": json.dumps(reply)},
        "response_headers": {}, "response_model": None, "status": 200,
        "started": last["ended"] + 0.001, "ended": last["ended"] + 0.002,
    })  # fmt: skip
    put_lines(files, EXCHANGES, exchanges)
    json_edit(files, "run/config.json", lambda d: d["observer"].update(exchanges=len(exchanges)))


def _listed_twice(files: Files) -> None:
    """The recorded ``GET /v1/models`` reply with another model's entry that also carries the
    runtime model's name."""
    exchanges = lines(files, EXCHANGES)
    listing = next(e for e in exchanges if e["method"] == "GET" and e["path"] == "/v1/models")
    body = json.loads(listing["response_body"]["data"])
    runtime = body["data"][0]["id"]
    body["data"].append({"id": "other-model-7b", "object": "model", "name": runtime,
                         "digest": OTHER})  # fmt: skip
    listing["response_body"] = {"encoding": "utf-8", "data": json.dumps(body)}
    put_lines(files, EXCHANGES, exchanges)


def _shown(request: dict[str, Any], reply: dict[str, Any]) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        runtime = json.loads(lines(files, EXCHANGES)[1]["request_body"]["data"])["model"]
        named = {k: runtime if v == "RUNTIME" else v for k, v in request.items()}
        _appended(files, "POST", "/api/show", named, reply)

    return edit


def _endpoint_forgery(
    examples: dict[str, Path], deployment: PinSetSource, target: Path, edit: Callable[[Files], None]
) -> Verdict:
    manifest, _ = read_bundle(examples[QUALIFIED])
    model = manifest.model.model_dump() | {"digest_source": "endpoint", "digest": f"sha256:{OTHER}"}
    return verdict_of(forged(examples[QUALIFIED], target, deployment, edit, {"model": model}),
                      deployment)  # fmt: skip


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            _shown({"model": "RUNTIME"}, {"name": "other-model:7b", "digest": OTHER}),
            id="reply-about-another",
        ),
        pytest.param(
            _shown(
                {"name": "RUNTIME", "model": "other-model:7b"},
                {"modelfile": f"FROM /root/.ollama/models/blobs/sha256-{OTHER}\n"},
            ),
            id="request-naming-two",
        ),
        pytest.param(_listed_twice, id="entry-named-twice"),
    ],
)
def test_another_models_endpoint_digest_does_not_rank(
    examples: dict[str, Path],
    deployment: PinSetSource,
    tmp_path: Path,
    edit: Callable[[Files], None],
) -> None:
    verdict = _endpoint_forgery(examples, deployment, tmp_path / "b", edit)
    status, reason = _gate(verdict, "model_identity")
    assert status != "pass" and not verdict.rankable, reason


def test_held_a_reply_naming_another_model_by_model_is_fallback(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    """Held: the same forgery with the reply naming the other model by ``model`` passes
    model_identity but not ``network_isolation`` (fallback activity): it does not rank."""
    edit = _shown({"model": "RUNTIME"}, {"model": "other-model:7b", "digest": OTHER})
    verdict = _endpoint_forgery(examples, deployment, tmp_path / "b", edit)
    status, reason = _gate(verdict, "network_isolation")
    assert status == "infra" and "other-model:7b" in reason and not verdict.rankable, reason


def _deep_replies(files: Files) -> None:
    """Identity replies naming the runtime model, each with the digest nested one level less
    deep than the one before (1000 down to 500)."""
    runtime = json.loads(lines(files, EXCHANGES)[1]["request_body"]["data"])["model"]
    exchanges = lines(files, EXCHANGES)
    last = exchanges[-1]
    for k, depth in enumerate(range(1000, 499, -1)):
        data = f'{{"name": "{runtime}", "x": ' + "[" * depth + f'"{OTHER}"' + "]" * depth + "}"
        exchanges.append(last | {
            "chunks": [], "component": "identity", "error": None, "id": len(exchanges),
            "method": "GET", "path": "/api/tags", "redirect": None, "request_headers": {},
            "request_body": None, "response_body": {"encoding": "utf-8", "data": data},
            "response_headers": {}, "response_model": None, "status": 200,
            "started": last["ended"] + 0.001 * (k + 1), "ended": last["ended"] + 0.001 * (k + 2),
        })  # fmt: skip
    put_lines(files, EXCHANGES, exchanges)
    json_edit(files, "run/config.json", lambda d: d["observer"].update(exchanges=len(exchanges)))


def test_bounded_and_full_verification_agree_on_deep_identity_replies(
    examples: dict[str, Path],
    deployment: PinSetSource,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    manifest, _ = read_bundle(examples[QUALIFIED])
    model = manifest.model.model_dump() | {"digest_source": "endpoint", "digest": f"sha256:{OTHER}"}
    bundle = forged(examples[QUALIFIED], tmp_path / "b", deployment, _deep_replies,
                    {"model": model})  # fmt: skip
    gates = []
    for extra in ([], ["--evidence-out", str(tmp_path / "evidence.json")]):
        main(["verify", str(bundle), "--pins", str(DEPLOYMENT_PINS), "--json", *extra])
        verdict = json.loads(capsysbinary.readouterr().out)
        gates.append(next(g for g in verdict["gates"] if g["id"] == "model_identity"))
    main(["score", "gx10", str(tmp_path / "evidence.json"), "--pins", str(DEPLOYMENT_PINS),
          "--json"])  # fmt: skip
    scored = json.loads(capsysbinary.readouterr().out)
    gates.append(next(g for g in scored["gates"] if g["id"] == "model_identity"))
    assert gates[0] == gates[1] == gates[2], [g["evidence"] for g in gates]


# --- markers: the runner's record and the verifier's re-reading of the same bytes -------------

_LINKS_AND_DROPS = (
    "import atexit, os, runpy, sys; "
    "atexit.register(lambda: (os.remove(os.path.join(sys.argv[-1], 'repeat.json')), "
    "os.symlink('quality.json', os.path.join(sys.argv[-1], 'latest')))); "
    "sys.argv = ['spark', '--endpoint', '{endpoint}', '--model', '{model}', '--out', '{out}']; "
    "runpy.run_module('spark.run', run_name='__main__')"
)
"""The reference SparkBench as pinned; as it exits, its ``repeat.json`` removed and a symbolic
link ``latest`` written beside its outputs (a common convenience of real harnesses)."""


@pytest.fixture(scope="module")
def linked_run(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource, Verdict]:
    pins = sparkbench_pins(command=["{python}", "-c", _LINKS_AND_DROPS])
    bundle = smoke_run(tmp_path_factory.mktemp("linked") / "bundle", mirrors, pins,
                       harness_env={"SPARK_QUARANTINE": "golden replay drifted"})  # fmt: skip
    _, files = read_bundle(bundle)
    result = json.loads(files["components/coding/result.json"][0])
    assert result["status"] == "QUARANTINED" and "symbolic link" in result["reason"], result
    assert "components/coding/raw/quarantine.json" in files
    return bundle, pins, verify_bundle(bundle, pins=pins).verdict


def test_an_honest_marker_beside_a_refused_output_is_no_finding(
    linked_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    _, _, verdict = linked_run
    assert not disagreeing(verdict, "components/coding/raw/quarantine.json"), (
        verdict.integrity.findings
    )
    assert verdict.integrity.status == "ok", verdict.integrity.findings


_COLUMNS = (
    "run_id", "timestamp", "tier", "model", "label", "endpoint", "topology", "parallelism",
    "context", "batch", "spec_decode", "workload", "metric", "value", "unit", "notes",
)  # fmt: skip
_WRITES_CSV = (
    "import os, sys; "
    "GATE_ROWS = ('golden_gate', 'run_valid', 'quarantine'); "
    "open(sys.argv[-1] + '/spark_bench.csv', 'wb').write(bytes.fromhex(os.environ['SPARK_CSV']))"
)
"""A stand-in for Spark Bench: writes the CSV it is given (hex, in ``SPARK_CSV``). Its code names
the gate rows it writes, as a Spark Bench that writes them does (the verifier honours a gate
row only where the pinned code names its metric, ``verify._consistency.spark._spark_flags``)."""


def _spark_csv(*, reliability: bool) -> bytes:
    """A Spark Bench run of one code scenario, quarantined, with or without its overall
    reliability row."""

    def row(workload: str, metric: str, value: str, notes: str = "") -> list[str]:
        return ["r1", "2026-12-05T07:00:00", "eval", "m", "l", "http://127.0.0.1:1/v1",
                "unknown", "1", "", "", "na", workload, metric, value, "", notes]  # fmt: skip

    rows = [row("code", "domain_quality", "50.0", "n=1"), row("code-1", "score", "0.5", "code:x"),
            row("gates", "golden_gate", "PASS"), row("gates", "run_valid", "1"),
            row("gates", "quarantine", "1", "golden replay drifted")]  # fmt: skip
    if reliability:
        rows.append(row("overall", "reliability", "100.0"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(_COLUMNS)
    writer.writerows(rows)
    return out.getvalue().encode()


def _spark_bench_run(
    root: Path, mirrors: dict[str, Path], data: bytes, smoke: list[str] | None = None
) -> tuple[Path, PinSetSource, Verdict]:
    pins_data: dict[str, Any] = copy.deepcopy(dict(load_builtin(DEMO).data))
    pins_data["harnesses"]["sparkbench"] |= {
        "command": ["{python}", "-c", _WRITES_CSV, "{out}"], "parser": "spark-bench",
        "outputs": ["spark_bench.csv"],
    }  # fmt: skip
    if smoke is not None:
        pins_data["profiles"]["smoke"] = {"components": smoke}
    pins = pin_set_source(pins_data, "pins with a Spark Bench stand-in")
    bundle = smoke_run(root / "bundle", mirrors, pins, harness_env={"SPARK_CSV": data.hex()})
    return bundle, pins, verify_bundle(bundle, pins=pins).verdict


@pytest.fixture(scope="module")
def no_reliability_run(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource, Verdict]:
    data = _spark_csv(reliability=False)
    for components in (["coding"], ["coding", "reliability"]):  # the runner's, the verifier's
        try:
            read_outputs("spark-bench", {"spark_bench.csv": data}, components)  # type: ignore[arg-type]
        except OutputsUnreadable:
            assert components == ["coding", "reliability"]
    run = _spark_bench_run(tmp_path_factory.mktemp("no-reliability"), mirrors, data)
    _, files = read_bundle(run[0])
    result = json.loads(files["components/coding/result.json"][0])
    assert result["status"] == "QUARANTINED", result
    return run


def test_an_honest_smoke_run_quarantined_by_spark_bench_is_no_finding(
    no_reliability_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    _, _, verdict = no_reliability_run
    assert verdict.integrity.status == "ok", verdict.integrity.findings
    assert verdict.result_validity == "QUARANTINED", verdict.reasons


@pytest.fixture(scope="module")
def reordered_run(
    tmp_path_factory: pytest.TempPathFactory, mirrors: dict[str, Path]
) -> tuple[Path, PinSetSource, Verdict]:
    return _spark_bench_run(tmp_path_factory.mktemp("reordered"), mirrors,
                            _spark_csv(reliability=True),
                            ["reliability", "coding", "performance"])  # fmt: skip


def test_an_honest_run_whose_profile_lists_reliability_first_is_no_finding(
    reordered_run: tuple[Path, PinSetSource, Verdict],
) -> None:
    _, _, verdict = reordered_run
    assert verdict.integrity.status == "ok", verdict.integrity.findings


# --- markers: total readers ---------------------------------------------------------------------

_SPARK_OUTPUTS = {
    "quality.json": json.dumps({
        "generation": "sparkbench-1", "code_domain_quality": 50.0, "tasks": 2, "passed": 1,
        "golden_gate": "PASS", "self_integrity": "PASS", "run_valid": True,
        "sampling_contamination": False,
    }).encode(),
    "repeat.json": json.dumps({"repeats": 3, "repeat_reliability": 50.0}).encode(),
}  # fmt: skip


@pytest.mark.parametrize(
    "marker",
    [
        pytest.param(b'{"reason": "drift", "provisional": {"pass rate": 0.5}}', id="metric-name"),
        pytest.param(b'{"reason": "drift \\ud800"}', id="lone-surrogate"),
    ],
)
@pytest.mark.parametrize("repeat", [True, False], ids=["whole", "alone"])
def test_a_marker_the_schema_refuses_is_no_traceback(marker: bytes, repeat: bool) -> None:
    files = dict(_SPARK_OUTPUTS, **{"quarantine.json": marker})
    if not repeat:
        del files["repeat.json"]
    assert isinstance(read_markers("spark", files, ["coding", "reliability"]), dict)
    assert isinstance(markers_alone("spark", files, ["coding", "reliability"]), dict)


def test_verify_of_a_marker_the_schema_refuses_is_a_verdict(
    examples: dict[str, Path], deployment: PinSetSource, tmp_path: Path
) -> None:
    manifest, files = read_bundle(examples[QUARANTINED])
    raw = "components/coding/raw/quarantine.json"
    marker = json.loads(files[raw][0])
    marker["provisional"] = {"pass rate": 0.5}
    files = dict(files)
    files[raw] = (json.dumps(marker).encode(), files[raw][1])
    reseal(tmp_path / "b", manifest, files, {})
    verdict = verify_bundle(tmp_path / "b", pins=deployment).verdict
    assert verdict.integrity.status == "failed" or not verdict.rankable


def _csv_rows(*extra: list[str]) -> bytes:
    data = _spark_csv(reliability=True)
    if not extra:
        return data
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(extra)
    return data + out.getvalue().encode()


_QUARANTINE_ROW = ["r1", "2026-12-05T07:00:00", "eval", "m", "l", "http://127.0.0.1:1/v1",
                   "unknown", "1", "", "", "na", "gates", "quarantine", "0", "", ""]  # fmt: skip


@pytest.mark.parametrize(
    ("parser", "files"),
    [
        pytest.param(
            "spark", {"quarantine.json": b'{"reason": "a", "reason": "b"}'}, id="duplicate-keys"
        ),
        pytest.param("spark", {"quarantine.json": b'{"reason": "a"'}, id="not-json"),
        pytest.param(
            "spark-bench", {"spark_bench.csv": _csv_rows(_QUARANTINE_ROW)}, id="two-quarantine-rows"
        ),
        pytest.param(
            "spark-bench",
            {"spark_bench.csv": _csv_rows(["r2", *_QUARANTINE_ROW[1:]])},
            id="two-runs",
        ),
        pytest.param("spark-bench", {"spark_bench.csv": b"\xff" + _csv_rows()}, id="not-utf-8"),
    ],
)
def test_held_a_marker_that_does_not_read_itself_is_none_in_runner_and_verifier(
    parser: str, files: dict[str, bytes]
) -> None:
    """Held: the runner's ``read_markers`` and the verifier's ``markers_alone`` find no marker
    where the marker itself does not read (whatever the rest)."""
    with pytest.raises(OutputsUnreadable):
        read_outputs(parser, files, ["coding", "reliability"])
    assert read_markers(parser, files, ["coding", "reliability"]) == {}
    assert markers_alone(parser, files, ["coding", "reliability"]) == {}
    assert markers_alone(parser, files, ["coding"]) == {}
