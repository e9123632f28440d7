"""The dependency check of a harness's interpreter: what its pinned distributions declare they
require (their metadata's ``Requires-Dist``, markers evaluated for that interpreter, an extra only
where one is asked for) must be installed at versions that satisfy it, transitively, before the
harness starts; read from metadata, never imported.

The interpreters are real (``python -m venv``); their distributions are written into
site-packages as ``*.dist-info`` directories: no network, no package index."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment

from audit.environments import (
    MAX_ANSWER,
    MAX_EVALUATIONS,
    MAX_PATH_CHARS,
    MAX_PATHS,
    MAX_REQUIREMENT_CHARS,
    Environment,
    EnvironmentUnavailable,
    describe_python,
    unmet_dependencies,
)
from tests.data.hostile.kit import Files, read_bundle
from tests.factories import bare_venv, smoke_run, sparkbench_pins
from verify import verify_bundle

DISTRIBUTIONS: dict[tuple[str, str], list[str]] = {
    # missing: absent is installed nowhere
    ("lonely", "1.0"): ["absent>=1"],
    # at a wrong version
    ("alpha", "1.0"): ["beta>=2"],
    ("beta", "1.0"): [],
    # behind a false marker: not needed
    ("marked", "1.0"): ['absent; python_version < "3"', "beta"],
    # behind an extra: needed only where the extra is asked for
    ("extras-host", "1.0"): ['absent>=3; extra == "full"', "beta==1.0"],
    ("asker", "1.0"): ["Extras_Host[full]>=1"],
    # a cycle
    ("ying", "1.0"): ["yang==1.0"],
    ("yang", "1.0"): ["ying==1.0"],
    # a cycle with something unmet beyond it
    ("circle-a", "1.0"): ["circle-b"],
    ("circle-b", "1.0"): ["circle-a", "beta>1"],
    # garbage lines beside a good one
    ("messy", "1.0"): ["not a requirement !!!", 'beta; frobnication == "1"', "beta (>=1.0)",
                       "x" * (MAX_REQUIREMENT_CHARS + 1), "beta[", "beta<0.5"],
    # transitive
    ("top", "1.0"): ["mid"],
    ("mid", "2.0"): ["absent<1", "beta>=1"],
    # a prerelease within a specifier
    ("pre-user", "1.0"): ["pre-dep>=1.0"],
    ("pre-dep", "2.0rc1"): [],
    # satisfied, through an extra too
    ("fine", "1.0"): ["beta>=1,<2", "ying", "extras-host[lite]"],
    # many unmet
    ("needy", "1.0"): [f"gone{i}" for i in range(7)],
}  # fmt: skip


def _write_distribution(site: Path, name: str, version: str, requires: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {line}" for line in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text(f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real interpreter (a venv, no pip) holding :data:`DISTRIBUTIONS` and nothing else."""
    python, site = bare_venv(tmp_path_factory.mktemp("harness-venv") / "venv")
    for (name, version), requires in DISTRIBUTIONS.items():
        _write_distribution(site, name, version, requires)
    return str(python)


@pytest.fixture(scope="module")
def environment(interpreter: str) -> Environment:
    return describe_python("x", interpreter, {})


def _hint(*pins: str) -> str:
    return f" (install them with their dependencies: pip install {' '.join(pins)})"


def test_the_interpreter_answers_what_each_distribution_declares(
    environment: Environment,
) -> None:
    assert environment.requires["alpha==1.0"] == ("beta>=2",)
    assert environment.requires["pre-dep==2.0rc1"] == ()
    # the over-long line is not kept; the other garbage lines are, and skipped when judged
    assert len(environment.requires["messy==1.0"]) == 5
    # the declared requirements and the marker environment are not evidence
    recorded = json.loads(environment.evidence())
    assert not {"requires", "markers", "paths"} & set(recorded)


def test_the_marker_environment_is_the_one_packaging_computes() -> None:
    assert describe_python("x", sys.executable, {}).markers == default_environment()


def test_the_interpreter_says_where_it_reads_from() -> None:
    # shown to the harness in the sandbox though under /tmp (ADR 0047); -I: no working directory
    paths = describe_python("x", sys.executable, {}).paths
    assert paths[:2] == (sys.prefix, sys.base_prefix)
    assert set(paths[2:]) <= {p for p in sys.path if p}
    assert any(p.endswith("site-packages") for p in paths)


@pytest.mark.parametrize(
    ("pins", "expected"),
    [
        (["lonely==1.0"], "lonely 1.0 requires absent>=1, not installed" + _hint("lonely==1.0")),
        (["alpha==1.0"], "alpha 1.0 requires beta>=2, installed at 1.0" + _hint("alpha==1.0")),
        (["asker==1.0"], "extras-host 1.0 (through asker) requires absent>=3, not installed"
                         + _hint("asker==1.0")),
        (["circle-a==1.0"], "circle-b 1.0 (through circle-a) requires beta>1, installed at 1.0"
                            + _hint("circle-a==1.0")),
        (["messy==1.0"], "messy 1.0 requires beta<0.5, installed at 1.0" + _hint("messy==1.0")),
        (["top==1.0"], "mid 2.0 (through top) requires absent<1, not installed"
                       + _hint("top==1.0")),
        (["needy==1.0"], "; ".join(f"needy 1.0 requires gone{i}, not installed" for i in range(5))
                         + "; and 2 more" + _hint("needy==1.0")),
        # pinned in this order: the unmet in name order, the hint naming each pin whose
        # dependencies are unmet, in the pin set's order
        (["top==1.0", "fine==1.0", "alpha==1.0"],
         "alpha 1.0 requires beta>=2, installed at 1.0; "
         "mid 2.0 (through top) requires absent<1, not installed"
         + _hint("top==1.0", "alpha==1.0")),
    ],
)  # fmt: skip
def test_an_unmet_dependency_is_named_with_who_requires_it(
    environment: Environment, pins: list[str], expected: str
) -> None:
    assert unmet_dependencies(pins, environment) == (
        f"its interpreter {environment.executable} lacks what the pinned distributions "
        f"require: {expected}"
    )


@pytest.mark.parametrize(
    "pins",
    [
        ["marked==1.0"],  # behind a false marker
        ["extras-host==1.0"],  # behind an extra not asked for
        ["ying==1.0"],  # a cycle
        ["pre-user==1.0"],  # a prerelease within the specifier
        ["fine==1.0", "beta==1.0", "yang==1.0"],
        [],
    ],
)
def test_met_dependencies_pass(environment: Environment, pins: list[str]) -> None:
    assert unmet_dependencies(pins, environment) is None


@pytest.mark.parametrize(
    ("pins", "omitted", "expected"),
    [
        (["lonely==1.0"], ["Absent"], None),  # any spelling of its name
        (["top==1.0"], ["absent"], None),  # through another
        (["alpha==1.0"], ["beta"], None),  # installed at a wrong version: not judged either
        (["circle-a==1.0"], ["beta"], None),
        (["needy==1.0"], [f"gone{i}" for i in range(6)],
         "needy 1.0 requires gone6, not installed" + _hint("needy==1.0")),
        (["top==1.0"], ["beta"],  # what the omitted one would bring is not required; others are
         "mid 2.0 (through top) requires absent<1, not installed" + _hint("top==1.0")),
    ],
)  # fmt: skip
def test_a_dependency_the_pin_set_omits_is_not_required(
    environment: Environment, pins: list[str], omitted: list[str], expected: str | None
) -> None:
    unmet = unmet_dependencies(pins, environment, omitted)
    if expected is None:
        assert unmet is None
    else:
        assert unmet == (
            f"its interpreter {environment.executable} lacks what the pinned distributions "
            f"require: {expected}"
        )
    assert unmet_dependencies(pins, environment) is not None  # without the pin set's word


def test_the_pinned_bfcl_block_omits_the_memory_backends_bfcl_venv_leaves_out() -> None:
    from pins import load_builtin  # noqa: PLC0415 - the shipped pin set

    harness = load_builtin("gx10-qualification-v5").pins.harnesses["bfcl"]
    assert harness.omitted_dependencies == ("faiss-cpu", "sentence-transformers")
    python = Path(".venv-bfcl/bin/python")
    if not python.exists():  # made by `make bfcl-venv` (the live target), not by `make test`
        return
    environment = describe_python("bfcl", str(python), {})
    assert unmet_dependencies(harness.requirements, environment) is not None
    assert (
        unmet_dependencies(harness.requirements, environment, harness.omitted_dependencies) is None
    )


def test_a_pin_the_interpreter_lacks_is_left_to_the_presence_check(
    environment: Environment,
) -> None:
    assert unmet_dependencies(["absent==1.0", "ying==1.0"], environment) is None


def _answering(tmp_path: Path, answer: object) -> str:
    """An "interpreter" that answers ``answer`` whatever it is asked."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(answer)}\nEOF\n")
    script.chmod(0o755)
    return str(script)


def _answer(**changes: object) -> dict[str, object]:
    honest = {
        "executable": "/x/bin/python", "python_version": "3.11.7",
        "distributions": ["a==1", "b==1"], "installed": {"a==1": None, "b==1": None},
        "requires": {"a==1": ["b>=2"], "b==1": []}, "markers": default_environment(),
        "paths": ["/x", "/x/lib/python3.11/site-packages"],
    }  # fmt: skip
    return honest | changes


def test_the_answer_is_untrusted_input(tmp_path: Path) -> None:
    env = describe_python("x", _answering(tmp_path, _answer()), {})
    assert unmet_dependencies(["a==1"], env) == (
        "its interpreter /x/bin/python lacks what the pinned distributions require: a 1 requires "
        "b>=2, installed at 1" + _hint("a==1")
    )
    odd = _answer(requires={"a==1": ["b>=2", 7, None, ["b<1"]], "b==1": "b"})
    env = describe_python("x", _answering(tmp_path, odd), {})
    assert env.requires == {"a==1": ("b>=2",), "b==1": ()}
    for broken in (_answer(requires=["a"]), _answer(markers={"os_name": "posix"}),
                   _answer(markers={**default_environment(), "os_name": 1}),
                   _answer(paths="/x"), _answer(paths=["/x", 1]), _answer(paths=[""]),
                   _answer(paths=["/x"] * (MAX_PATHS + 1)),
                   _answer(paths=["/" + "x" * MAX_PATH_CHARS]), _answer(paths=["/x\x00y"]),
                   _answer(paths=["/\ud800"])):  # fmt: skip
        with pytest.raises(EnvironmentUnavailable, match="not a Python interpreter's answer"):
            describe_python("x", _answering(tmp_path, broken), {})


def test_a_hostile_answer_is_refused_or_read_bounded(tmp_path: Path) -> None:
    """Made to break the runner: a requirement holding a lone surrogate (JSON's escape) is not
    read (no message can carry it); an answer nested past Python's recursion limit, or larger
    than MAX_ANSWER, is refused as no interpreter's; a walk made to run for hours (lines
    re-judged for each of thousands of extras) stops at MAX_EVALUATIONS and refuses."""
    lone = _answer(requires={"a==1": ["b===\ud800", "b>=2"], "b==1": []})
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(lone)}\nEOF\n")
    script.chmod(0o755)
    assert describe_python("x", str(script), {}).requires["a==1"] == ("b>=2",)
    deep = tmp_path / "deep"
    deep.write_text('#!/bin/sh\nexec python3 -c \'print("[" * 100000 + "]" * 100000)\'\n')
    deep.chmod(0o755)
    with pytest.raises(EnvironmentUnavailable, match="not a Python interpreter's answer"):
        describe_python("x", str(deep), {})
    big = tmp_path / "big"
    big.write_text(f"#!/bin/sh\nhead -c {MAX_ANSWER + 1} /dev/zero\n")
    big.chmod(0o755)
    with pytest.raises(EnvironmentUnavailable, match="answered over 64 MiB"):
        describe_python("x", str(big), {})
    extras = [",".join(f"e{i}x{j}" for j in range(300)) for i in range(40)]  # each line new ones
    walked = Environment(
        upstream="x", executable="/x/bin/python", python_version="3.11",
        distributions=("root==1", "x==1"), variables={},
        requires={"root==1": tuple(f"x[{e}]" for e in extras),
                  "x==1": tuple(f'y; extra == "no{k}"' for k in range(200))},
        markers=default_environment(),
    )  # fmt: skip
    assert unmet_dependencies(["root==1"], walked) == (
        "its interpreter /x/bin/python declares more requirements than the dependency check "
        f"reads ({MAX_EVALUATIONS} markers judged); not a harness's interpreter"
    )


def test_markers_are_evaluated_for_the_harness_interpreter_not_the_runner(tmp_path: Path) -> None:
    other = {**default_environment(), "sys_platform": "win32", "python_version": "2.7"}
    requires = {"a==1": ['b; sys_platform == "win32"', f'c; sys_platform == "{sys.platform}"',
                         'd; python_version < "3"'], "b==1": []}  # fmt: skip
    answer = _answer(markers=other, requires=requires)
    env = describe_python("x", _answering(tmp_path, answer), {})
    assert unmet_dependencies(["a==1"], env) == (
        "its interpreter /x/bin/python lacks what the pinned distributions require: a 1 requires "
        "d, not installed" + _hint("a==1")
    )


def test_audit_run_refuses_an_interpreter_lacking_a_dependency_before_the_harness_starts(
    tmp_path: Path, mirrors: dict[str, Path], interpreter: str
) -> None:
    python = interpreter
    pins = sparkbench_pins(requirements=["top==1.0"])
    bundle = smoke_run(tmp_path / "bundle", mirrors, pins, harness_python={"sparkbench": python})
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert verdict.outcome == "INFRA_ERROR"
    assert (
        f"coding failed: sparkbench: its interpreter {python} lacks what the pinned "
        "distributions require: mid 2.0 (through top) requires absent<1, not installed"
        + _hint("top==1.0")
    ) in verdict.reasons, verdict.reasons
    _, files = read_bundle(bundle)
    # its environment is kept; the harness never started: no log, trace or raw output of it,
    # no connection in the ledger, no start time
    assert "upstreams/sparkbench/environment.json" in files
    assert not _traces_of_sparkbench(files)
    result = json.loads(files["components/coding/result.json"][0])
    assert result["status"] == "FAILED"
    assert (result.get("started_at"), result.get("raw_outputs", [])) == (None, [])


def _traces_of_sparkbench(files: Files) -> list[str]:
    """What a started SparkBench leaves in a bundle: its logs, its connect() trace, its raw
    outputs, its ledger entries."""
    ledger = files["network/socket-ledger.jsonl"][0].decode().splitlines()
    return [
        *(n for n in files if n.startswith(("logs/sparkbench.", "components/coding/raw/"))),
        *(n for n in files if n.startswith("network/strace/") and n.endswith("-coding.txt")),
        *(line for line in ledger if json.loads(line)["component"] == "coding"),
    ]


def test_audit_run_runs_a_harness_whose_dependencies_are_met(
    tmp_path: Path, mirrors: dict[str, Path], interpreter: str
) -> None:
    python = interpreter
    pins = sparkbench_pins(requirements=["fine==1.0", "marked==1.0", "ying==1.0"])
    bundle = smoke_run(tmp_path / "bundle", mirrors, pins, harness_python={"sparkbench": python})
    verdict = verify_bundle(bundle, pins=pins).verdict
    assert (verdict.outcome, verdict.integrity.status) == ("QUALIFIED", "ok"), verdict.reasons
    _, files = read_bundle(bundle)
    traces = _traces_of_sparkbench(files)
    assert "logs/sparkbench.stderr.txt" in traces and "components/coding/raw/quality.json" in traces
