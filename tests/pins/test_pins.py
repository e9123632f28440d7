"""Pin sets are validated like the pins they are: one line naming the file, the line, the key,
what was expected and what was given; exit 2, never a traceback; ``--pins FILE|ID`` alike in
every command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.cli import main
from bundle_schema.errors import InvalidInput
from pins import CURRENT, DEMO, parse_pin_set
from tests.paths import EXAMPLES, PINS

SHIPPED = PINS / f"{CURRENT}.toml"
RECORDED = EXAMPLES / "recorded"


def _edited(old: str, new: str) -> bytes:
    text = SHIPPED.read_text("utf-8")
    assert len(re.findall(old, text, re.M)) >= 1
    return re.sub(old, new, text, count=1, flags=re.M).encode()


def _line(data: bytes, pattern: str) -> int:
    lines = data.decode().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if re.search(pattern, line))


@pytest.mark.parametrize(
    ("old", "new", "line_of", "message"),
    [
        ("^coding = 40$", "coding = 45", r"^\[weights\]$", "weights: they sum to 105, not 100"),
        (
            "^hermes_evaluator = ",
            "hermes_evalutor = ",
            "^hermes_evalutor",
            "hermes_evalutor: unknown key 'hermes_evalutor'; did you mean 'hermes_evaluator'?",
        ),
        (
            "^inactivity_s = 300$",
            'inactivity_s = "300"',
            '^inactivity_s = "300"',
            "harnesses.infermark.inactivity_s: Input should be a valid number (got '300')",
        ),
        (
            "^wall_s = 1800$",
            "wal_s = 1800",
            "^wal_s",
            "harnesses.infermark.wal_s: unknown key 'wal_s'; did you mean 'wall_s'?",
        ),
    ],
    ids=["weights", "typo", "type", "nested-typo"],
)
def test_a_bad_pin_set_is_one_located_line(old: str, new: str, line_of: str, message: str) -> None:
    data = _edited(old, new)
    with pytest.raises(InvalidInput) as raised:
        parse_pin_set(data, "mine.toml")
    assert str(raised.value) == f"mine.toml:{_line(data, line_of)}: {message}"


def test_the_cli_refuses_a_bad_pin_set_with_exit_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "mine.toml"
    bad.write_bytes(_edited("^coding = 40$", "coding = 45"))
    tar = str(RECORDED / "llamacpp-smollm2-135m.tar")
    for argv in (["verify", tar], ["show", tar], ["rank", tar], ["rejudge", tar]):
        assert main([*argv, "--pins", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{bad}:" in err and "sum to 105" in err, err
    bad.write_text("id = [\n", "utf-8")
    assert main(["verify", tar, "--pins", str(bad)]) == 2
    assert "not a TOML pin set" in capsys.readouterr().err


def test_pins_takes_a_file_or_a_shipped_id_in_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tar = str(RECORDED / "llamacpp-smollm2-135m.tar")
    for pins in (CURRENT, str(SHIPPED)):
        for argv in (
            ["verify", tar, "--json"],
            ["show", tar],
            ["diff", tar, tar],
            ["rank", tar, "--json"],
            ["rejudge", tar],
        ):
            assert main([*argv, "--pins", pins]) == 0, (argv, pins)
            capsys.readouterr()
    assert main(["verify", tar, "--pins", "gx10-no-such"]) == 2
    assert capsys.readouterr().err == (
        "audit verify: unknown pin set 'gx10-no-such'; shipped: gx10-qualification-v4, "
        f"gx10-qualification-v5, {DEMO}\n"
    )


DEMO_FILE = PINS / f"{DEMO}.toml"
HERMES_COMMAND = (
    'command = ["{python}", "-m", "hermes.run", "--endpoint", "{endpoint}", "--model", "{model}", '
    '"--out", "{out}"'
)


def _demo_edited(*edits: tuple[str, str]) -> bytes:
    text = DEMO_FILE.read_text("utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text.encode()


MANIFEST = 'tasks_manifest = "tasks/manifest.toml"\n'
SELECTS = (MANIFEST, MANIFEST + 'tasks = ["fix-date-parser"]\n')
PASSES = (HERMES_COMMAND, HERMES_COMMAND + ', "--tasks", "{tasks}"')


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ((SELECTS,), "hermes.tasks selects tasks, and the command does not pass {tasks}"),
        ((PASSES,), "{tasks} in the command, and hermes.tasks selects none"),
        (
            (SELECTS, PASSES, ('"spark.run", ', '"spark.run", "{tasks}", ')),
            "harnesses.sparkbench: {tasks} is the Hermes harness's placeholder alone",
        ),
    ],
    ids=["selected-not-passed", "passed-not-selected", "another-harness"],
)
def test_tasks_is_passed_to_the_hermes_harness_exactly_when_selected(
    edits: tuple[tuple[str, str], ...], message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        parse_pin_set(_demo_edited(*edits), "mine.toml")
    assert parse_pin_set(_demo_edited(SELECTS, PASSES), "mine.toml").pins.hermes is not None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ((MANIFEST, MANIFEST + "tasks = []\n"), "hermes.tasks: selects no task"),
        (
            (MANIFEST, MANIFEST + 'tasks = ["fix-date-parser", "fix-date-parser"]\n'),
            "hermes.tasks: selects 'fix-date-parser' twice",
        ),
        (
            ('upstream = "hermesbench"\n', 'upstream = "benchlocal"\n'),
            "hermes.upstream: 'benchlocal', and component_upstreams.hermes is 'hermesbench'",
        ),
    ],
    ids=["none", "twice", "another-harness"],
)
def test_a_hermes_selection_is_one_of_tasks_of_the_harness_that_runs_them(
    edit: tuple[str, str], message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        parse_pin_set(_demo_edited(edit), "mine.toml")


def test_an_empty_key_is_named_on_the_line_of_its_table() -> None:
    """``installed = { "" = ... }``: the message names the line that sets ``installed``, not
    the next line that sets anything."""
    table = "[harnesses.sparkbench]\n"
    edited = _demo_edited((table, f'{table}installed = {{ "" = "sha256:x" }}\n')).decode()
    line = edited.splitlines().index('installed = { "" = "sha256:x" }') + 1
    with pytest.raises(
        InvalidInput, match=rf"^mine\.toml:{line}: harnesses\.sparkbench\.installed"
    ):
        parse_pin_set(edited.encode(), "mine.toml")
