"""Content attacks on a real bundle: evidence edited, spliced, truncated or swapped, then resealed
so that integrity holds. The replay must still catch each one (exit 1 with a located one-line
reason), or, where only a published digest can tell, `--expect-digest` must."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit import BundleWriter
from audit.cli import main
from bundle_schema.models import Manifest
from pins import load_builtin
from verify import parse_manifest
from verify._source import open_source

Files = dict[str, tuple[bytes, str]]
Attack = Callable[[Files, dict[str, Any], dict[str, Path]], None]


def read_bundle(path: Path) -> tuple[Manifest, Files]:
    manifest = parse_manifest(open_source(path).manifest_bytes()).model
    files = {
        name: ((path / "blobs" / "sha256" / entry.digest[7:]).read_bytes(), entry.media_type)
        for name, entry in manifest.evidence.items()
    }
    return manifest, files


def reseal(target: Path, manifest: Manifest, files: Files, fields: dict[str, Any]) -> str:
    """Write the (attacked) evidence and manifest fields as a new, internally consistent bundle."""
    writer = BundleWriter(target, durable=False)
    for name, (data, media) in sorted(files.items()):
        writer.add_bytes(name, data, media)
    seal = {
        key: getattr(manifest, key)
        for key in ("run_id", "created_at", "runner", "scoring_generation", "profile", "pin_set",
                    "model", "upstreams", "components", "claims")
    }  # fmt: skip
    for key, value in fields.items():
        seal[key] = (
            type(seal[key]).model_validate(value) if hasattr(seal[key], "model_validate") else value
        )
    return writer.seal(**seal)


def lines(files: Files, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in files[name][0].splitlines()]


def put_lines(files: Files, name: str, values: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(v, separators=(",", ":"), sort_keys=True).encode() + b"\n"
                    for v in values)  # fmt: skip
    files[name] = (data, files[name][1])


def put_json(files: Files, name: str, value: dict[str, Any]) -> None:
    files[name] = (
        json.dumps(value, separators=(",", ":"), sort_keys=True).encode(),
        files[name][1],
    )


def _claims(**changes: Any) -> Attack:
    def attack(_files: Files, fields: dict[str, Any], _others: dict[str, Path]) -> None:
        fields["claims"] = fields["claims"] | changes

    return attack


def _pin_set(pin_id: str) -> Attack:
    def attack(_files: Files, fields: dict[str, Any], _others: dict[str, Path]) -> None:
        fields["pin_set"] = {"id": pin_id, "digest": load_builtin(pin_id).digest}

    return attack


def _splice(files: Files, _fields: dict[str, Any], others: dict[str, Path]) -> None:
    _, donor = read_bundle(others["gx10-spark-quarantined"])
    files["transport/exchanges.jsonl"] = donor["transport/exchanges.jsonl"]


def _truncate(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    put_lines(files, "transport/exchanges.jsonl", lines(files, "transport/exchanges.jsonl")[:-1])


def _drop_ledger_line(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    entries = lines(files, "network/socket-ledger.jsonl")
    put_lines(files, "network/socket-ledger.jsonl", entries[:2] + entries[3:])


def _probe_to_nowhere(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    probe = json.loads(files["probes/direct-response.json"][0])
    put_json(files, "probes/direct-response.json", probe | {"exchange": 99})


def _protected_input(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    tasks = lines(files, "components/hermes/tasks.jsonl")
    tasks[0]["protected_inputs"]["after"] = "sha256:" + "9" * 64
    put_lines(files, "components/hermes/tasks.jsonl", tasks)


def _observer_count(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    config = json.loads(files["run/config.json"][0])
    config["observer"]["exchanges"] = 4
    put_json(files, "run/config.json", config)


def _quality(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    quality = json.loads(files["components/coding/spark-quality.json"][0])
    put_json(files, "components/coding/spark-quality.json", quality | {"code_domain_quality": 99})


def _fallback(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    exchanges = lines(files, "transport/exchanges.jsonl")
    exchanges[3]["response_model"] = "another-model-7b"
    put_lines(files, "transport/exchanges.jsonl", exchanges)


def _outside(files: Files, _fields: dict[str, Any], _others: dict[str, Path]) -> None:
    entries = lines(files, "network/socket-ledger.jsonl")
    entries[1]["address"] = "203.0.113.9"
    put_lines(files, "network/socket-ledger.jsonl", entries)


CASES: list[tuple[str, Attack, int, str]] = [
    ("claimed score edited", _claims(aggregate_score=99.0), 1,
     "claims differ from the replay: aggregate_score: claimed 99"),
    ("claimed outcome edited", _claims(outcome="NOT_QUALIFIED"), 1,
     "claims differ from the replay: outcome: claimed NOT_QUALIFIED, replayed QUALIFIED"),
    ("pin set swapped for v4", _pin_set("gx10-qualification-v4"), 1,
     "rankable: claimed True, replayed False"),
    ("evidence spliced from another run", _splice, 1, "outcome: claimed QUALIFIED"),
    ("transport log truncated", _truncate, 1, "outcome: claimed QUALIFIED, replayed INFRA_ERROR"),
    ("socket-ledger line removed", _drop_ledger_line, 1,
     "outcome: claimed QUALIFIED, replayed INFRA_ERROR"),
    ("probe naming a missing exchange", _probe_to_nowhere, 1, "replayed INFRA_ERROR"),
    ("protected input changed", _protected_input, 1, "replayed NOT_QUALIFIED"),
    ("observer count edited", _observer_count, 1, "replayed INFRA_ERROR"),
    ("harness score edited", _quality, 1, "aggregate_score: claimed 87.835, replayed 96.075"),
    ("reply from another model", _fallback, 1, "replayed INFRA_ERROR"),
    ("outside attempt recorded", _outside, 1, "replayed INFRA_ERROR"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "attack", "code", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_a_resealed_content_attack_is_caught(  # noqa: PLR0917
    built_examples: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    attack: Attack,
    code: int,
    fragment: str,
) -> None:
    manifest, files = read_bundle(built_examples["gx10-full-qualified"])
    fields: dict[str, Any] = {"claims": manifest.claims.model_dump(mode="json")}
    attack(files, fields, built_examples)
    reseal(tmp_path / "attacked", manifest, files, fields)
    assert main(["verify", str(tmp_path / "attacked")]) == code, name
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert fragment in err


def test_a_substituted_model_is_caught_by_the_published_digest(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = built_examples["gx10-full-qualified"]
    published = parse_manifest(open_source(original).manifest_bytes()).bundle_digest
    manifest, files = read_bundle(original)
    model = manifest.model.model_dump(mode="json") | {"digest": "sha256:" + "5" * 64}
    reseal(tmp_path / "swapped", manifest, files, {"model": model})
    # Internally consistent, and its replay holds: only the published digest can tell.
    assert main(["verify", str(tmp_path / "swapped")]) == 0
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "swapped"), "--expect-digest", published]) == 1
    assert f"expected {published}" in capsys.readouterr().err
