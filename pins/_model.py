"""The frozen pin-set model: what a scoring generation fixes, checked when a pin set is read."""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from bundle_schema.errors import InvalidInput
from bundle_schema.models import (
    ENV_NAME_PATTERN,
    ComponentName,
    Digest,
    EnvName,
    EnvValue,
    GitCommit,
    Identifier,
    canonical_distribution,
    repeated_distribution,
)
from pins._probes import PROBE_CONTRACTS

__all__ = [
    "COMPONENTS",
    "GATE_PARSERS",
    "DirectProbeContract",
    "Harness",
    "HermesPins",
    "PinSet",
    "Placeholders",
    "Profile",
    "ReferencePins",
    "Thresholds",
    "Upstream",
    "missing_requirements",
    "other_files",
]

COMPONENTS: tuple[ComponentName, ...] = (
    "coding",
    "hermes",
    "tool_instruction",
    "reliability",
    "performance",
)
"""The five components of the deployment score, in the seed's order."""

GATE_PARSERS = ("bfcl-eval", "inspect-ai", "lm-eval")
"""The readers of a supplementary harness, one run beside a component's upstream as a gate of
that component (``[gate_upstreams]``): under gx10 its outputs are never a score input
(ADR 0013 §6, ADR 0022)."""

Weight = Annotated[int, Field(strict=True, ge=0, le=100)]
Bound = (
    Annotated[float, Field(strict=True, ge=0, le=100)]
    | Annotated[int, Field(strict=True, ge=0, le=100)]
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Thresholds(_Frozen):
    """A profile's minimum scores (each met at or above the bound)."""

    aggregate: Bound
    coding: Bound
    hermes: Bound
    tool_instruction: Bound
    reliability: Bound


class DirectProbeContract(_Frozen):
    """The direct-probe contract: one uniform completion ceiling for every model and policy."""

    contract: Identifier
    total_completion_ceiling_tokens: Annotated[int, Field(strict=True, ge=1)]


class Profile(_Frozen):
    """The components a profile selects."""

    components: tuple[ComponentName, ...]


CheckoutPath = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+@-]*(/[A-Za-z0-9_][A-Za-z0-9_.+@-]*)*$",
        max_length=1024,
    ),
]
"""A directory of a repository, relative to its top (``a/b``): each part starts with a letter,
digit or ``_`` (so no ``.``, ``..`` or option), and holds no character git's patterns give a
meaning."""


class Upstream(_Frozen):
    """An upstream harness pinned at an exact commit."""

    repository: Annotated[str, StringConstraints(min_length=1, max_length=512)]
    commit: GitCommit
    paths: tuple[CheckoutPath, ...] = ()
    """The directories of the commit that are checked out and kept, each whole, with the files
    at the top of the repository (git's sparse checkout, cone mode); empty: the whole tree.
    For a harness that lives in one directory of a large repository (bfcl-eval in gorilla):
    the listing still names every file of the commit by its blob id, so the commit pins them
    all; the files outside are neither on disk while the harness runs nor in the bundle."""

    @model_validator(mode="after")
    def _distinct_paths(self) -> Upstream:
        if len(set(self.paths)) != len(self.paths):
            raise ValueError("paths: a directory named twice")
        return self

    def holds(self, path: str, *, directory: bool) -> bool:
        """Whether ``path`` (relative to the checkout's top, ``.`` the top itself) is checked
        out: under one of :attr:`paths`; the top directory and a file at the top (cone mode
        keeps them: a harness whose code is at the top of a repository with large directories
        it does not read); or anywhere when there are no paths."""
        if not self.paths or path == "." or (not directory and "/" not in path):
            return True
        return any(path == p or path.startswith(f"{p}/") for p in self.paths)


Requirement = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?==[A-Za-z0-9][A-Za-z0-9.+!_-]*$",
        max_length=256,
    ),
]
"""An exact distribution pin, ``name==version``."""
DistributionName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$", max_length=256),
]
"""A distribution's name (any spelling of its PEP 503 name)."""


def missing_requirements(requirements: Sequence[str], distributions: Sequence[str]) -> list[str]:
    """The requirements (``name==version``) no distribution of ``distributions`` satisfies."""
    held = {canonical_distribution(d) for d in distributions}
    return [r for r in requirements if canonical_distribution(r) not in held]


def other_files(
    pinned: Mapping[str, str], installed: Mapping[str, str] | None, unknown: str
) -> tuple[str, str, str | None] | None:
    """Whether an environment's ``installed`` (distributions by their metadata's spelling)
    shows every pinned files digest (``name==version`` -> ``sha256:...``): None if so, else
    what the first differing requirement (in the pins' order) says, ``installed NAME as FOUND,
    not the pinned DIGEST`` (``unknown`` for a digest not there; how many more differ), with
    the pinned digest and the one found."""
    held = {canonical_distribution(name): digest for name, digest in (installed or {}).items()}
    found = ((pin, digest, held.get(canonical_distribution(pin))) for pin, digest in pinned.items())
    others = sorted((pin, digest, got) for pin, digest, got in found if got != digest)
    if not others:
        return None
    pin, digest, got = others[0]
    more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
    return f"installed {pin} as {got or unknown}, not the pinned {digest}{more}", digest, got


SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
"""An environment variable whose name says it holds a secret: redacted in every environment
record, and never pinned."""
URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/?#\s]|[\t\r\n])*@")
"""A URL's user information (``scheme://user:password@``): a credential whatever the name,
redacted in every environment record, and never pinned. It runs to the last ``@`` of the
authority (``https://a@b@host``: the user information is ``a@b``) and through the tabs and
line breaks that URL parsers drop (``urllib.parse.urlsplit`` reads ``u:se<TAB>cret@h`` as the
password ``secret``)."""
RUNNER_VARIABLES = frozenset({"PATH", "HOME", "PYTHONDONTWRITEBYTECODE"})
"""The variables the runner sets for every harness itself (the sandbox's own)."""
ENV_NAME = re.compile(ENV_NAME_PATTERN)
"""An environment variable's name, as a pin set and ``audit run --env`` take it."""

DataName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
"""A harness data directory's name: lower case, as it appears in evidence names."""


class Placeholders(NamedTuple):
    """What ``audit run`` fills in a harness command besides ``{data[NAME]}``: its values, one
    field a placeholder (a placeholder added here is one the runner must fill)."""

    python: str
    """The harness's interpreter."""
    endpoint: str
    """The observer's address as the sandbox sees it."""
    model: str
    """The runtime model id."""
    out: str
    """The directory the harness's outputs go to."""
    tasks: str
    """The Hermes tasks the pin set selects (``[hermes] tasks``), their ids joined by commas: a
    placeholder of the Hermes harness's command alone, which must give it whenever the pin set
    selects tasks (a harness not told which would run them all)."""


PLACEHOLDERS = Placeholders._fields
"""The names of the placeholders ``audit run`` fills besides ``{data[NAME]}``."""


def _fields(part: str) -> list[tuple[str, str | None, str | None]]:
    """The replacement fields of a command part: name, format spec, conversion.

    Raises:
        ValueError: the part is no format string (a lone brace).
    """
    return [
        (name, spec, conversion)
        for _, name, spec, conversion in string.Formatter().parse(part)
        if name is not None
    ]


class Harness(_Frozen):
    """How an upstream harness is run: its command and working directory (in its checkout),
    the output files it must write, the parser of its outputs, its limits."""

    command: tuple[Annotated[str, StringConstraints(min_length=1, max_length=1024)], ...]
    workdir: str = "."
    outputs: tuple[str, ...] = ()
    parser: Literal[
        "spark", "hermes", "benchlocal", "bfcl", "spark-bench", "benchlocal-cli", "infermark",
        "bfcl-eval", "inspect-ai", "lm-eval",
    ]  # fmt: skip
    inactivity_s: (
        Annotated[float, Field(strict=True, gt=0)] | Annotated[int, Field(strict=True, gt=0)]
    )
    wall_s: Annotated[float, Field(strict=True, gt=0)] | Annotated[int, Field(strict=True, gt=0)]
    requirements: tuple[Requirement, ...] = ()
    """The distributions the harness's interpreter must hold, each ``name==version``: the
    runner records the interpreter's installed distributions beside the checkout
    (``upstreams/<name>/environment.json``) and fails the harness's components when one is
    missing; the verifier refuses a completed component whose recorded environment lacks one.
    Before the harness starts, each one's own declared dependencies (``Requires-Dist``) must be
    installed too, at versions that satisfy them."""
    omitted_dependencies: tuple[DistributionName, ...] = ()
    """Distributions that a pinned one declares but that the pinned command never imports,
    left out of the harness's interpreter on purpose (bfcl-eval's memory backends, which only
    the categories the command does not run load): the dependency check does not require them,
    nor what only they would bring. A reviewed part of the pin set, as its digest covers it."""
    data: dict[DataName, Digest] = Field(default_factory=dict)
    """The data directories the harness reads outside its checkout (data sets, caches), each
    pinned by the digest of its listing (every file's path, size and SHA-256): given to
    ``audit run`` as ``--data NAME=PATH`` and to the command as ``{data[NAME]}``; the runner
    keeps the listing at ``upstreams/<name>/data/<NAME>.jsonl`` and fails the harness's
    components when it is not the pinned one; the verifier holds a completed component to it."""
    installed: dict[Requirement, Digest] = Field(default_factory=dict)
    """Of pinned ``requirements``, the files each must have installed: its files digest (the
    environment record's ``installed``: its RECORD's rows inside its install directory, less
    the bytecode and files an installer writes for one install, the same wherever it is
    installed; ADR 0042). The runner reads those distributions' files back and fails the
    harness's components before it starts when one differs, naming the digest it found; the
    verifier holds a completed component to the pins."""
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    """Environment variables the harness runs with, pinned (``HF_DATASETS_OFFLINE = "1"``):
    the runner gives them to the harness and records them in its environment record
    (``upstreams/<name>/environment.json``); the verifier refuses a completed component whose
    record does not show each with its pinned value. A secret is never pinned (its record is
    redacted): give it to ``audit run --env NAME=VALUE``."""

    @property
    def placeholders(self) -> frozenset[str]:
        """The names of the placeholders its command uses (``data[NAME]`` as written)."""
        return frozenset(name for part in self.command for name, _, _ in _fields(part))

    @model_validator(mode="after")
    def _known_placeholders(self) -> Harness:
        """Each ``{...}`` of the command is one the runner fills (:data:`PLACEHOLDERS`, or
        ``{data[NAME]}`` of a pinned data directory): an unknown one would stop a run midway."""
        for part in self.command:
            try:
                fields = _fields(part)
            except ValueError as exc:
                raise ValueError(
                    f"command part {part!r}: {exc} (write a brace as {{{{ or }}}})"
                ) from None
            for name, spec, conversion in fields:
                data = re.fullmatch(r"data\[([^\]]*)\]", name)
                if data is not None and data[1].isdigit():
                    raise ValueError(
                        f"command part {part!r}: {{{name}}}: a data directory named by digits "
                        "alone is read as a number there; give it a name with a letter"
                    )
                known = name in PLACEHOLDERS or (data is not None and data[1] in self.data)
                if not known or spec or conversion:
                    raise ValueError(
                        f"command part {part!r}: {{{name}}} is no placeholder the runner fills "
                        f"(it fills {', '.join('{' + p + '}' for p in PLACEHOLDERS)} and "
                        "{data[NAME]} of a pinned data directory)"
                    )
        return self

    @model_validator(mode="after")
    def _installed_of_requirements(self) -> Harness:
        """Each distribution is required once (two versions of one could never both be
        installed), and files are pinned only of a distribution the harness requires, at that
        version, once: a digest of another version, of a distribution nothing requires, or a
        second digest of one could never hold."""
        if twice := repeated_distribution(self.requirements):  # which would the harness run?
            raise ValueError(f"requirements name one distribution twice: {twice[0]} and {twice[1]}")
        required = {canonical_distribution(r) for r in self.requirements}
        pinned: dict[str, str] = {}
        for pin in self.installed:
            canonical = canonical_distribution(pin)
            if canonical not in required:
                raise ValueError(
                    f"installed pins {pin}, which is not among its requirements "
                    f"({', '.join(self.requirements) or 'none'})"
                )
            if canonical in pinned:  # two spellings of one name: two digests for one thing
                raise ValueError(f"installed pins {pinned[canonical]} and {pin}: one distribution")
            pinned[canonical] = pin
        return self

    @field_validator("env")
    @classmethod
    def _no_secret_or_runner_variable(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if SECRET_NAME.search(name):
                raise ValueError(
                    f"{name} names a secret: a secret is never pinned (environment records "
                    "redact it); give it to audit run --env NAME=VALUE"
                )
            if name in RUNNER_VARIABLES:
                raise ValueError(f"{name} is set by the runner for every harness")
            if URL_CREDENTIALS.search(value):
                raise ValueError(
                    f"{name} holds a URL with credentials: a secret is never pinned (environment "
                    "records redact it); give it to audit run --env NAME=VALUE"
                )
        return env


Limit = Annotated[float, Field(strict=True, gt=0)] | Annotated[int, Field(strict=True, gt=0)]


class HermesPins(_Frozen):
    """What decides a run's Hermes tasks: the task manifest inside the pinned Hermes checkout
    (its ``[[task]]`` tables give each task's id and frozen allowed-change patterns, and may
    give its own limits) and the per-task limits where the manifest gives none."""

    upstream: Identifier
    tasks_manifest: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    inactivity_s: Limit
    wall_s: Limit
    tasks: tuple[Identifier, ...] | None = None
    """The selected tasks, by id (default: every task of the manifest); at least one, each
    once."""

    @field_validator("tasks")
    @classmethod
    def _a_selection(cls, tasks: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if tasks is not None and not tasks:
            raise ValueError("selects no task: leave tasks out to run every task")
        if tasks is not None and len(set(tasks)) != len(tasks):
            twice = next(t for t in tasks if tasks.count(t) > 1)
            raise ValueError(f"selects {twice!r} twice")
        return tasks


class ReferencePins(_Frozen):
    """A demo-only pin set's reference deployment: the embedded reference endpoint's model.

    The pin set's harnesses are the project's reference harnesses, which score synthetic
    answers; its results are never ranked, and only this model can be judged under it."""

    runtime_model_id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    model_digest: Digest


class PinSet(_Frozen):
    """A scoring generation's pins (seed 000): every number a verdict depends on."""

    id: Identifier
    scoring_generation: Identifier
    hermes_evaluator: Identifier
    historical: StrictBool = False
    """A superseded generation: its results are historical diagnostics, never ranked."""
    standard_profile: Identifier
    weights: dict[ComponentName, Weight]
    thresholds: dict[Identifier, Thresholds]
    direct_probe: DirectProbeContract
    profiles: dict[Identifier, Profile]
    component_upstreams: dict[ComponentName, Identifier]
    gate_upstreams: dict[ComponentName, tuple[Identifier, ...]] = Field(default_factory=dict)
    """Supplementary harnesses run beside a component's upstream, each a gate of that
    component: its outputs must read and aggregate, or the component fails as infrastructure;
    its figures are non-scoring metrics (ADR 0022)."""
    upstreams: dict[Identifier, Upstream]
    harnesses: dict[Identifier, Harness] = Field(default_factory=dict)
    hermes: HermesPins | None = None
    reference: ReferencePins | None = None
    """Present in a demo-only pin set (the embedded default's): see :attr:`demo_only`."""

    @property
    def demo_only(self) -> bool:
        """Whether this pin set runs reference harnesses: a ``[reference]`` table, or any
        upstream at a ``reference://`` repository. Its results are never ranked, and a model
        other than its reference deployment's is never judged under it."""
        return self.reference is not None or any(
            u.repository.startswith("reference://") for u in self.upstreams.values()
        )

    def judges(self, runtime_model_id: str, digest: str) -> bool:
        """Whether a run of this model may be judged under this pin set: always, unless the
        pin set is demo only and the model is not its reference deployment's."""
        if not self.demo_only:
            return True
        reference = self.reference
        return (
            reference is not None
            and runtime_model_id == reference.runtime_model_id
            and digest == reference.model_digest
        )

    @model_validator(mode="after")
    def _consistent(self) -> PinSet:  # noqa: PLR0912 - one branch per rule of the pin set
        missing = [c for c in COMPONENTS if c not in self.weights]
        if missing:
            raise ValueError(f"weights: no weight for {', '.join(missing)}")
        total = sum(self.weights.values())
        if total != 100:  # seed 000's weights are percentages
            raise ValueError(f"weights: they sum to {total}, not 100")
        if self.standard_profile not in self.profiles:
            raise ValueError(f"standard_profile: {self.standard_profile!r} is not a profile")
        for component, upstream in self.component_upstreams.items():
            if upstream not in self.upstreams:
                raise ValueError(
                    f"component_upstreams.{component}: {upstream!r} is not an upstream"
                )
        self._gates()
        for name, harness in self.harnesses.items():
            if name not in self.upstreams:
                raise ValueError(f"harnesses.{name}: not an upstream")
            for path in (harness.workdir, *harness.outputs):
                parts = path.split("/")
                if path.startswith("/") or ".." in parts or not path:
                    raise ValueError(f"harnesses.{name}: {path!r} must stay inside its directory")
            if not self.upstreams[name].holds(harness.workdir.removeprefix("./"), directory=True):
                raise ValueError(
                    f"harnesses.{name}: workdir {harness.workdir!r} is not under the "
                    f"directories upstreams.{name}.paths checks out"
                )
        if self.direct_probe.contract not in PROBE_CONTRACTS:
            known = ", ".join(PROBE_CONTRACTS)
            raise ValueError(
                f"direct_probe.contract: {self.direct_probe.contract!r} is not {known}"
            )
        if self.hermes is not None:
            if self.hermes.upstream not in self.upstreams:
                raise ValueError(f"hermes.upstream: {self.hermes.upstream!r} is not an upstream")
            runs = self.component_upstreams.get("hermes")
            if runs is not None and runs != self.hermes.upstream:
                raise ValueError(
                    f"hermes.upstream: {self.hermes.upstream!r}, and component_upstreams.hermes "
                    f"is {runs!r}: the task manifest is the checkout of the harness that runs them"
                )
            parts = self.hermes.tasks_manifest.split("/")
            if self.hermes.tasks_manifest.startswith("/") or ".." in parts or "" in parts:
                raise ValueError("hermes.tasks_manifest: must be a path inside the checkout")
            if not self.upstreams[self.hermes.upstream].holds(
                self.hermes.tasks_manifest, directory=False
            ):
                raise ValueError(
                    "hermes.tasks_manifest: not under the directories "
                    f"upstreams.{self.hermes.upstream}.paths checks out"
                )
        self._task_selection()
        for name in self.thresholds:
            if name not in self.profiles:
                raise ValueError(f"thresholds.{name}: not a profile")
        return self

    def _task_selection(self) -> None:
        """``{tasks}`` is in the Hermes harness's command exactly when the pin set selects
        tasks: a harness not told the selection runs every task, and a selection of none
        gives the placeholder nothing to say."""
        hermes = self.hermes
        selects = hermes is not None and hermes.tasks is not None
        for name, harness in self.harnesses.items():
            uses = "tasks" in harness.placeholders
            if hermes is None or name != hermes.upstream:
                if uses:
                    owner = f"hermes.upstream is {hermes.upstream!r}" if hermes else "none here"
                    raise ValueError(
                        f"harnesses.{name}: {{tasks}} is the Hermes harness's placeholder alone "
                        f"({owner})"
                    )
            elif selects and not uses:
                raise ValueError(
                    f"harnesses.{name}: hermes.tasks selects tasks, and the command does not "
                    "pass {tasks}: the harness would not be told which (it would run them all)"
                )
            elif uses and not selects:
                raise ValueError(
                    f"harnesses.{name}: {{tasks}} in the command, and hermes.tasks selects none "
                    "(every task of the manifest runs): select tasks or drop the placeholder"
                )

    def _gates(self) -> None:
        """A gate upstream is an upstream with a harness whose reader is a gate's, never the
        upstream of a scored component; a gate's reader is never a scored component's."""
        for component, upstream in self.component_upstreams.items():
            harness = self.harnesses.get(upstream)
            if harness is not None and harness.parser in GATE_PARSERS:
                raise ValueError(
                    f"component_upstreams.{component}: {upstream!r} runs {harness.parser}, whose "
                    "outputs are no score input under gx10: name it in gate_upstreams"
                )
        scored = set(self.component_upstreams.values())
        for component, gates in self.gate_upstreams.items():
            where = f"gate_upstreams.{component}"
            if component == "performance" and gates:
                raise ValueError(
                    f"{where}: performance's exchanges are its measurement: a gate's requests "
                    "beside it would be counted in it"
                )
            for upstream in gates:
                if upstream not in self.upstreams:
                    close = difflib.get_close_matches(upstream, sorted(self.upstreams), n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise ValueError(f"{where}: {upstream!r} is not an upstream{hint}")
                if gates.count(upstream) > 1:
                    raise ValueError(f"{where}: {upstream!r} twice")
                if upstream in scored:
                    raise ValueError(
                        f"{where}: {upstream!r} is the upstream of a scored component: under "
                        "gx10 a supplementary harness is a gate, never a score input"
                    )
                harness = self.harnesses.get(upstream)
                if harness is None:
                    raise ValueError(
                        f"{where}: {upstream!r} has no harness block (harnesses.{upstream}): a "
                        "gate is a harness run beside the component's upstream"
                    )
                if harness.parser not in GATE_PARSERS:
                    raise ValueError(
                        f"{where}: {upstream!r} is read by {harness.parser}, not a gate's reader "
                        f"({', '.join(GATE_PARSERS)})"
                    )
                if component not in self.component_upstreams:
                    raise ValueError(
                        f"{where}: {component} has no upstream (component_upstreams) to run "
                        f"{upstream!r} beside"
                    )

    def gates_of(self, component: str) -> tuple[str, ...]:
        """The supplementary harnesses that gate ``component`` (none when it has none)."""
        return next((g for c, g in self.gate_upstreams.items() if c == component), ())


_MODELS: tuple[type[BaseModel], ...] = (
    DirectProbeContract, Harness, HermesPins, Profile, Thresholds, Upstream,
)  # fmt: skip


def _known_keys() -> set[str]:
    keys = set(PinSet.model_fields)
    for model in _MODELS:
        keys |= set(model.model_fields)
    return keys | {"runtime_model_id", "model_digest"}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _line_of(text: str | None, loc: Sequence[Any]) -> int | None:
    """The line of the TOML text that sets the innermost key of ``loc`` (after the line of the
    key before it, where that one is found); None when it cannot be told."""
    if text is None:
        return None
    lines = text.splitlines()
    start, found = 0, None
    for key in (str(k) for k in loc if not isinstance(k, int)):
        if not key:  # an empty key ("" = ...) is on the line of the key before it
            continue
        quoted = re.escape(key)
        setting = re.compile(rf'^\s*(?:"{quoted}"|{quoted})\s*=|^\s*\[\[?[^\]]*\b{quoted}\b')
        for number in range(start, len(lines)):
            if setting.search(lines[number]):
                start, found = number, number + 1
                break
    return found


def pin_set_model(data: Mapping[str, Any], where: str, text: str | None = None) -> PinSet:
    """Build the frozen model of a pin set's data; no I/O.

    Args:
        data: the pin set's data.
        where: the file, for messages.
        text: its TOML text, to name the line of the key a message is about.

    Raises:
        InvalidInput: the data is not a pin set; one line naming the file, the line where it can
            be told, the key, what was expected and what was given (an unknown key with the
            known one it is closest to).
    """
    try:
        return PinSet.model_validate(dict(data))
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown key is the likelier cause of a missing one beside it (a typo): name it first
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = _in_data(data, first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden" and loc:
            message = f"unknown key {str(loc[-1])!r}"
            close = difflib.get_close_matches(str(loc[-1]), sorted(_known_keys()), n=1)
            message += f"; did you mean {close[0]!r}?" if close else ""
        elif first["type"] not in ("value_error", "missing") and "input" in first:
            message += f" (got {_shown(first['input'])})"
        if not loc and ": " in message:  # a rule of the whole pin set names its key first
            key, rest = message.split(": ", 1)
            if re.fullmatch(r"[a-z_]+(?:\.[A-Za-z0-9_-]+)*", key):
                loc, message = tuple(key.split(".")), rest
        field = ".".join(str(p) for p in loc)
        line = _line_of(text, loc)
        place = f"{where}:{line}" if line is not None else where
        raise InvalidInput(f"{place}: {field + ': ' if field else ''}{message}") from None


def _in_data(data: Any, loc: Sequence[Any]) -> tuple[Any, ...]:
    """The part of an error's location that names keys and indexes of the data (pydantic adds
    the names of union members, such as ``constrained-float``, after them)."""
    path: list[Any] = []
    node = data
    for part in loc:
        keyed = isinstance(node, Mapping) and part in node
        indexed = isinstance(node, list | tuple) and isinstance(part, int) and part < len(node)
        if keyed or indexed:
            node = node[part]
        elif isinstance(node, Mapping):  # a key that is missing or unknown: the last one named
            path.append(part)
            break
        else:
            break
        path.append(part)
    return tuple(path)
