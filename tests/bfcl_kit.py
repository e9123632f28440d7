"""The recorded real bundle whose bfcl-eval gate ran on a draw (examples/recorded/, ADR 0046),
as the tests that forge its bfcl-eval answers read, edit and reseal it."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from bundle_schema.models import Body, Verdict
from pins import PinSetSource
from pins._loader import parse_pin_set
from tests.data.hostile.kit import Files, lines, put_json, put_lines, read_bundle
from tests.gate_kit import Recorded, resealed_as_replayed
from tests.paths import EXAMPLES
from tests.real_runs import RECORDING_PINS
from verify import verify_bundle
from verify.harness_outputs import _bfcl_files, _bfcl_subset, read_gate_outputs
from verify.replies import answer_digest, answer_digest_of, body_json
from verify.scorers.bfcl import aggregate_v4

DRAW_TAR = EXAMPLES / "recorded" / "llamacpp-smollm2-135m-bfcl-draw.tar"
DRAW_PINS = EXAMPLES / "recorded" / f"{RECORDING_PINS}.toml"
COMPONENT = "tool_instruction"
PLACE = f"components/{COMPONENT}/gates/bfcl/"
GATE = PLACE + "bfcl-eval.json"
"""The gate's tallies record: where a finding about its answers is made."""
RAW = PLACE + "raw/"
MODEL = "smollm2-135m-instruct"
RESULTS = f"{RAW}result/{MODEL}/"
SCORES = f"{RAW}score/{MODEL}/"
LOG = "transport/exchanges.jsonl"
CONFIG = "run/config.json"
OVERALL = RAW + "score/data_overall.csv"
RESULT_JSON = f"components/{COMPONENT}/result.json"
ANSWER_KEYS = ("result", "input_token_count", "output_token_count")
_BFCL_EVAL = importlib.util.find_spec("bfcl_eval")
assert _BFCL_EVAL is not None and _BFCL_EVAL.origin is not None, "make installs bfcl-eval (a peer)"
BFCL_EVAL_DATA = Path(_BFCL_EVAL.origin).parent / "data"
"""bfcl-eval 2026.3.23's own data (the package the scorer tests compare with, which `make`
installs in the project's environment; found, not imported)."""


def unpacked_draw(folder: Path) -> Recorded:
    """The bundle, unpacked under ``folder`` and read."""
    root = folder / "bundle"
    assert main(["unpack", str(DRAW_TAR), "-o", str(root)]) == 0
    return read_bundle(root)


def draw_pins() -> PinSetSource:
    """The pin set the bundle ran under (kept beside it)."""
    return parse_pin_set(DRAW_PINS.read_bytes(), str(DRAW_PINS))


@pytest.fixture(scope="module", name="drawn")
def drawn_fixture(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The bundle unpacked and read, once a module (a test module imports this to use it)."""
    return unpacked_draw(tmp_path_factory.mktemp("drawn"))


@pytest.fixture(scope="module", name="pins")
def pins_fixture() -> PinSetSource:
    """The pin set the bundle ran under, as fixture ``pins``."""
    return draw_pins()


def pins_asking(drawn: dict[str, list[str]]) -> PinSetSource:
    """The draw's pin set with ``drawn`` drawn too (a subset's ids replacing those the draw
    names of it): named among its command's arguments (``subset=id,...``) and evaluated
    (:func:`drawn_too` writes them into the draw bfcl-eval read): a run that answers them is
    the pinned one."""
    text = DRAW_PINS.read_text()
    evaluated, generated = '"evaluate", "--test-category", "single_turn"', '"generate", "--run-ids"'
    assert text.count(evaluated) == 1 and text.count(generated) == 1
    asked = ",".join(("single_turn", *drawn))
    text = text.replace(evaluated, f'"evaluate", "--test-category", "{asked}"')
    for subset, ids in drawn.items():  # a subset the draw names already: its ids replaced
        named = f'"{subset}={",".join(ids)}"'
        text, found = re.subn(f'"{subset}=[^"]*"', named, text)
        text = text if found else text.replace(generated, f"{named}, {generated}")
    return parse_pin_set(text.encode(), f"{DRAW_PINS.name} drawing {asked}")


def drawn_too(files: Files, subset: str, ids: list[str]) -> None:
    """The draw bfcl-eval read (``test_case_ids_to_generate.json``) names ``ids`` of
    ``subset`` too."""
    name = f"{RAW}test_case_ids_to_generate.json"
    drawn = json.loads(files[name][0])
    drawn[subset] = ids
    put_json(files, name, drawn)


def result_files(files: Files) -> list[str]:
    return sorted(n for n in files if n.startswith(RESULTS) and n.endswith("_result.json"))


def bfcl_entries(files: Files) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Each entry of the result files: (file, index, entry)."""
    for name in result_files(files):
        for index, entry in enumerate(lines(files, name)):
            yield name, index, entry


def edit_entry(
    files: Files, name: str, index: int, change: Callable[[dict[str, Any]], None]
) -> None:
    """The entry at ``index`` of result file ``name`` changed by ``change``."""
    entries = lines(files, name)
    change(entries[index])
    put_lines(files, name, entries)


def answered(files: Files, component: str = COMPONENT) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each answered POST of ``component`` whose reply reads as an answer: (index, body)."""
    for index, exchange in enumerate(lines(files, LOG)):
        if (
            exchange["component"] == component and exchange["method"] == "POST"
            and exchange["status"] == 200 and exchange.get("response_body")
        ):  # fmt: skip
            body = body_json(Body.model_validate(exchange["response_body"]))
            if answer_digest(body) is not None:
                yield index, body


def giving(files: Files, entry: dict[str, Any]) -> int:
    """The index in the transport log of the one exchange whose reply gave ``entry``."""
    wanted = answer_digest_of(*(entry[k] for k in ANSWER_KEYS))
    (given,) = [i for i, body in answered(files) if answer_digest(body) == wanted]
    return given


def log_written(files: Files, exchanges: list[dict[str, Any]]) -> None:
    """The transport log written back as ``exchanges``, numbered 0, 1, 2, ..., and the
    observer's count of them with it (as a careful forger keeps them)."""
    for number, exchange in enumerate(exchanges):
        exchange["id"] = number
    put_lines(files, LOG, exchanges)
    config = json.loads(files[CONFIG][0])
    config["observer"]["exchanges"] = len(exchanges)
    put_json(files, CONFIG, config)


def exchange_edited(
    index: int, change: Callable[[dict[str, Any]], None]
) -> Callable[[Files], None]:
    """An edit that changes the exchange at ``index`` of the transport log by ``change``."""

    def edit(files: Files) -> None:
        exchanges = lines(files, LOG)
        change(exchanges[index])
        put_lines(files, LOG, exchanges)

    return edit


def forged_verdict(
    drawn: Recorded, pins: PinSetSource, target: Path, edit: Callable[[Files], None]
) -> Verdict:
    """The bundle edited by ``edit``, resealed at ``target`` with claims equal to its replay (a
    careful forger's), and verified under ``pins``."""
    manifest, original = drawn
    files = dict(original)
    edit(files)
    resealed_as_replayed(target, manifest, files, pins)
    return verify_bundle(target, pins=pins).verdict


def gate_findings(verdict: Verdict) -> list[str]:
    """The messages of the ``record_disagrees`` findings on the gate's tallies."""
    return [
        f.message for f in verdict.integrity.findings
        if f.code == "record_disagrees" and f.entry == GATE
    ]  # fmt: skip


def raw_outputs(files: Files) -> dict[str, bytes]:
    return {n.removeprefix(RAW): data for n, (data, _) in files.items() if n.startswith(RAW)}


def rederived(files: Files) -> None:
    """What a careful forger keeps consistent after editing bfcl-eval's files: the Overall Acc
    of ``data_overall.csv`` as BFCL V4 weighs the score files' tallies, the gate's tallies
    record and the component's gate metrics as the reader gives them, and the component's list
    of raw outputs naming the files kept."""
    raw = raw_outputs(files)
    _, scores, results = _bfcl_files(raw)
    tallies = {s: _bfcl_subset(raw, s, name, results[s])[0] for s, name in scores.items()}
    overall = aggregate_v4(tallies)["overall_accuracy"]
    assert overall is not None
    rows = files[OVERALL][0].decode().split("\n")
    fields = rows[1].split(",")
    fields[1] = f"{100 * overall:.2f}%"
    rows[1] = ",".join(fields)
    files[OVERALL] = ("\n".join(rows).encode(), files[OVERALL][1])
    outputs = read_gate_outputs("bfcl-eval", raw_outputs(files), COMPONENT, "bfcl")
    put_json(files, GATE, outputs.records[GATE][1].model_dump(mode="json"))
    result = json.loads(files[RESULT_JSON][0])
    result["metrics"] |= outputs.metrics[COMPONENT]
    kept = [n for n in result["raw_outputs"] if not n.startswith(RAW) or n in files]
    result["raw_outputs"] = kept + sorted(n for n in files if n.startswith(RAW) and n not in kept)
    put_json(files, RESULT_JSON, result)


def answer_of(body: dict[str, Any]) -> tuple[Any, int, int]:
    """(result, input_token_count, output_token_count) as bfcl-eval's handler records a reply."""
    message = body["choices"][0]["message"]
    calls = message.get("tool_calls")
    result = (
        [{c["function"]["name"]: c["function"]["arguments"]} for c in calls]
        if isinstance(calls, list) else message.get("content")
    )  # fmt: skip
    return result, body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]


def gate_tallies(target: Path) -> dict[str, Any]:
    _, files = read_bundle(target)
    return json.loads(files[GATE][0])["subset_totals"]


def only_on_the_gate(verdict: Verdict) -> None:
    """A forgery's precondition: no finding but on the gate's tallies (raised as no assertion,
    so that an expected failure is never its precondition's)."""
    others = [f for f in verdict.integrity.findings if f.entry != GATE]
    if others:
        raise RuntimeError(f"the forgery is found elsewhere: {others}")


def unused_replies(files: Files) -> list[tuple[int, dict[str, Any]]]:
    """The component's answered exchanges no bfcl answer came from (benchlocal-cli's)."""
    used = {answer_digest_of(*(e[k] for k in ANSWER_KEYS)) for _, _, e in bfcl_entries(files)}
    return [(i, b) for i, b in answered(files) if answer_digest(b) not in used]


def data_entry(files: Files, subset: str, sample: str) -> dict[str, Any]:
    """A test entry of bfcl-eval's own data, as the bundle's gorilla checkout keeps it."""
    path = f"berkeley-function-call-leaderboard/bfcl_eval/data/BFCL_v4_{subset}.json"
    listing = files["upstreams/bfcl/tree.txt"][0].decode()
    (line,) = [x for x in listing.splitlines() if x.endswith(f"\t{path}")]
    data = files[f"upstreams/bfcl/files/{line.split()[2]}"][0]
    (entry,) = [e for e in map(json.loads, data.splitlines()) if e["id"] == sample]
    return entry


def result_file(files: Files, subset: str) -> str:
    """The result file of ``subset``."""
    (name,) = [
        n for n in files if n.startswith(RESULTS) and n.endswith(f"/bfcl_v4_{subset}_result.json")
    ]
    return name


def score_file(files: Files, subset: str) -> str:
    """The score file of ``subset``."""
    (name,) = [
        n for n in files if n.startswith(SCORES) and n.endswith(f"/bfcl_v4_{subset}_score.json")
    ]
    return name


def rescored(files: Files, subset: str, entries: list[dict[str, Any]], failed: set[str]) -> None:
    """A subset's result file holding ``entries``, its score file failing ``failed``."""
    put_lines(files, result_file(files, subset), entries)
    total, wrong = len(entries), [e["id"] for e in entries if e["id"] in failed]
    header = {"accuracy": (total - len(wrong)) / total, "correct_count": total - len(wrong),
              "total_count": total}  # fmt: skip
    put_lines(files, score_file(files, subset),
              [header, *({"id": i, "valid": False} for i in wrong)])  # fmt: skip


def failed_ids(files: Files, subset: str) -> set[str]:
    """The entries of ``subset`` its score file lists as failed."""
    return {e["id"] for e in lines(files, score_file(files, subset))[1:]}


def put_subset(
    files: Files, subset: str, entries: list[dict[str, Any]], failed: set[str], group: str
) -> None:
    """A subset the run did not answer written as bfcl-eval writes one (its result file under
    ``group`` holding ``entries``, its score file failing ``failed``), as :func:`rescored`
    rewrites one it did."""
    for folder, kind in ((RESULTS, "result"), (SCORES, "score")):
        files[f"{folder}{group}/bfcl_v4_{subset}_{kind}.json"] = (b"", "application/json")
    rescored(files, subset, entries, failed)
