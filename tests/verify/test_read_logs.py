"""A transport log read lately is not read again (verify/_shell.py `_READ_LOGS`): bundles that
share one are verified as if each were the first, and what is kept depends on the run config,
so a bundle whose config differs has the log read anew."""

from __future__ import annotations

import json
from pathlib import Path

from tests.data.hostile.kit import put_json, read_bundle, reseal
from verify import verdict_json, verify_bundle
from verify._shell import _READ_LOGS, _READ_LOGS_KEPT


def _verdict(bundle: Path) -> bytes:
    return verdict_json(verify_bundle(bundle).verdict)


def test_a_log_shared_by_bundles_is_read_once_and_judged_as_if_read_anew(
    built_examples: dict[str, Path], tmp_path: Path
) -> None:
    honest = built_examples["gx10-full-qualified"]
    manifest, files = read_bundle(honest)
    config = json.loads(files["run/config.json"][0])
    # the switch named elsewhere in the request: what the exchanges' facts hold changes
    config["reasoning_policy"]["serialization"]["path"] = "think"
    put_json(files, "run/config.json", config)
    other = tmp_path / "other-config"
    reseal(other, manifest, files, {})

    _READ_LOGS.clear()
    first = _verdict(honest)
    (kept,) = _READ_LOGS.values()
    assert _verdict(honest) == first
    (again,) = _READ_LOGS.values()
    assert again is kept  # the same log, the same config: not read again

    shared = _verdict(other)  # the same log, read under another config
    assert len(_READ_LOGS) == 2
    _READ_LOGS.clear()
    assert _verdict(other) == shared  # as the first bundle verified in a fresh process
    assert shared != first
    assert b"think" in shared


def test_only_the_last_logs_are_kept(built_examples: dict[str, Path]) -> None:
    _READ_LOGS.clear()
    for name in sorted(built_examples):
        _verdict(built_examples[name])
        assert len(_READ_LOGS) <= _READ_LOGS_KEPT
    assert len(_READ_LOGS) == _READ_LOGS_KEPT
