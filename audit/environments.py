"""The environment a harness runs in: its interpreter and the distributions installed in it.

A real upstream harness (Spark Bench, benchlocal-cli, Infermark) needs its own dependencies, so
it may run with an interpreter of its own (``audit run --harness-python NAME=PATH``). Before the
harness starts, the runner asks that interpreter for its version and every installed
distribution (``name==version``: the lock actually in effect) and keeps the answer as evidence
beside the checkout, with the environment variables the harness is given (secrets redacted).
The pin set's ``requirements`` for the harness must all be among the distributions.

A distribution installed without its own dependencies (``pip install --no-deps``) is among
them, and its harness would die at its first import, deep into the run. So the interpreter also
answers, for each distribution, its declared dependencies (``Requires-Dist``, read from its
metadata: nothing of the harness's code is imported outside the sandbox, where an import that
touches the network would escape the ledger) and its PEP 508 marker environment; the runner
walks from each pinned distribution through what it requires, as ``pip check`` judges a
requirement (markers evaluated for that interpreter, an extra only where one is asked for,
prereleases allowed), and refuses the harness before it starts when one is missing or installed
at a version outside its specifier (:func:`unmet_dependencies`). The declared dependencies and
the marker environment are the runner's check only: they are not kept in the environment
record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import tempfile
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import Requirement
from pydantic import ValidationError

from bundle_schema import canonical_bytes
from bundle_schema.errors import InvalidInput, one_line
from bundle_schema.models import HarnessEnvironment, canonical_name
from pins import SECRET_NAME, URL_CREDENTIALS

__all__ = [
    "ENVIRONMENT_MEDIA_TYPE",
    "Environment",
    "EnvironmentUnavailable",
    "data_listing",
    "describe_python",
    "unmet_dependencies",
]

ENVIRONMENT_MEDIA_TYPE = "application/json"


# A distribution's files digest (``installed`` in the environment record, and what a pin set's
# ``installed`` pins): the SHA-256 of the compact JSON array (separators "," and ":", ASCII)
# of its RECORD's rows ``[path, hash, size]``, sorted, that name a file inside the directory the
# distribution lives in, less what an installer writes there for this one install: the
# bytecode it compiles (anything under __pycache__: it holds its source's absolute path) and the
# dist-info's RECORD, INSTALLER, REQUESTED, direct_url.json and uv_cache.json (uv's, holding the
# installed file's modification time). Rows outside that directory
# (../../../bin/NAME: a console script, whose first line names the venv's interpreter by its
# absolute path) are left out too. So one wheel installed in two places has one digest. Of the
# distributions named on the probe's command line (those a pin set pins), each file is read
# back and its row's hash and size are what is on disk (hashed with the row's algorithm; a
# file that cannot be read is "unreadable"): the same digest when the files are what RECORD
# says, another when one is not (a wheel patched under its own RECORD, a file another
# distribution overwrote or someone edited). The others' rows are RECORD's word, unread: reading
# every file of a venv costs seconds a run (ADR 0042).
#
# Run by the harness's interpreter: its version, its installed distributions and, of each one,
# its files digest, as JSON. Of a
# distribution found twice on the path (by its PEP 503 name, in two versions or one), the
# first (the one imports find) is recorded. Also, for the runner's dependency check (not
# recorded): each distribution's declared requirements (its metadata's Requires-Dist, read, never
# imported) and the PEP 508 marker environment, computed as packaging.markers'
# default_environment computes it.
PLACES = "[sys.prefix, sys.base_prefix, *sys.path]"
"""Where an interpreter reads from, as an expression it evaluates (``sys`` imported): its
prefixes and import paths. The probe answers it as ``paths``; the sandbox asks the runner's own
interpreter the same (``audit.sandbox._interpreter_places``)."""
_PROBE = (
    "import base64, csv, hashlib, importlib.metadata as m, json, os, platform, re, sys\n"
    "AT_INSTALL = ('RECORD', 'INSTALLER', 'REQUESTED', 'direct_url.json', 'uv_cache.json')\n"
    "READ_BACK = {re.sub(r'[-_.]+', '-', n).lower() for n in sys.argv[1:]}\n"
    "def on_disk(d, path, stated, size):\n"
    "    algorithm, _, value = stated.partition('=')\n"
    "    if not value:\n"
    "        return [stated, size]\n"
    "    try:\n"
    "        digest, length = hashlib.new(algorithm), 0\n"
    "        with open(d.locate_file(path), 'rb') as file:\n"
    "            while block := file.read(1 << 20):\n"
    "                digest.update(block)\n"
    "                length += len(block)\n"
    "    except (OSError, ValueError):\n"
    "        return ['unreadable', '']\n"
    "    value = base64.urlsafe_b64encode(digest.digest()).rstrip(b'=').decode()\n"
    "    return [algorithm + '=' + value, str(length) if size else '']\n"
    "def files(d, record, read_back):\n"
    "    rows = []\n"
    "    for row in csv.reader(record.splitlines()):\n"
    "        parts = row[0].split('/') if row else []\n"
    "        if not row or row[0].startswith('/') or '..' in parts or '__pycache__' in parts:\n"
    "            continue\n"
    "        if len(parts) == 2 and parts[0].endswith('.dist-info') and parts[1] in AT_INSTALL:\n"
    "            continue\n"
    "        stated, size = (row[1:3] + ['', ''])[:2]\n"
    "        if read_back:\n"
    "            stated, size = on_disk(d, row[0], stated, size)\n"
    "        rows.append([row[0], stated, size])\n"
    "    return json.dumps(sorted(rows), separators=(',', ':')).encode()\n"
    "installed, requires, seen = {}, {}, set()\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    canonical = re.sub(r'[-_.]+', '-', name or '').lower()\n"
    "    if not name or canonical in seen:\n"
    "        continue\n"
    "    seen.add(canonical)\n"
    '    key = f"{name}=={d.version}"\n'
    "    record = d.read_text('RECORD')\n"
    "    try:\n"
    "        listed = None if record is None else files(d, record, canonical in READ_BACK)\n"
    "        digest = None if listed is None else hashlib.sha256(listed).hexdigest()\n"
    "    except csv.Error:\n"
    "        digest = None\n"
    "    installed[key] = digest\n"
    "    try:\n"
    "        requires[key] = list(d.requires or ())\n"
    "    except Exception:\n"
    "        requires[key] = []\n"
    "v = sys.implementation.version\n"
    "iver = f'{v.major}.{v.minor}.{v.micro}'\n"
    "if v.releaselevel != 'final':\n"
    "    iver += v.releaselevel[0] + str(v.serial)\n"
    "markers = {'implementation_name': sys.implementation.name, 'implementation_version': iver,\n"
    "           'os_name': os.name, 'platform_machine': platform.machine(),\n"
    "           'platform_release': platform.release(), 'platform_system': platform.system(),\n"
    "           'platform_version': platform.version(),\n"
    "           'python_full_version': platform.python_version(),\n"
    "           'platform_python_implementation': platform.python_implementation(),\n"
    "           'python_version': '.'.join(platform.python_version_tuple()[:2]),\n"
    "           'sys_platform': sys.platform}\n"
    "print(json.dumps({'executable': sys.executable, 'python_version': sys.version,\n"
    "                  'distributions': sorted(installed), 'installed': installed,\n"
    "                  'requires': requires, 'markers': markers,\n"
    f"                  'paths': {PLACES}}}))\n"
)

MARKER_NAMES = (
    "implementation_name", "implementation_version", "os_name", "platform_machine",
    "platform_release", "platform_system", "platform_version", "python_full_version",
    "platform_python_implementation", "python_version", "sys_platform",
)  # fmt: skip
"""The PEP 508 marker variables the interpreter is asked for."""
MAX_REQUIRES = 4096
"""Of a distribution's declared requirements, at most this many are read (the rest ignored)."""
MAX_REQUIREMENT_CHARS = 4096
"""A declared requirement longer than this is skipped, as an unparseable one is."""
SHOWN_UNMET = 5
"""How many unmet dependencies a refusal names (the rest are counted)."""
MAX_EVALUATIONS = 200_000
"""The most declared requirements (each with each extra it is reached with) the dependency
check judges: a real interpreter's are a few thousand; an answer made to make the check run
for hours is refused."""
MAX_PATHS = 4096
MAX_PATH_CHARS = 4096
"""Of the interpreter's places (its prefixes and ``sys.path``), at most this many, each at
most this long: a real one has a dozen."""
MAX_ANSWER = 64 << 20
"""The probe's answer is at most this large (a real one is tens of kilobytes)."""


class EnvironmentUnavailable(InvalidInput):
    """The harness's interpreter could not be asked what it holds; the message says why."""


@dataclass(frozen=True)
class Environment:
    """A harness's interpreter as it answered, and the environment it is given."""

    upstream: str
    executable: str
    python_version: str
    distributions: tuple[str, ...]
    variables: Mapping[str, str]
    installed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """``name==version`` -> the distribution's files digest, ``sha256:...`` (the comment
    above ``_PROBE``; one without a RECORD is not named)."""
    requires: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """``name==version`` -> the distribution's declared requirements (``Requires-Dist``), as
    its metadata gives them: for the dependency check, not recorded."""
    markers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The interpreter's PEP 508 marker environment (:data:`MARKER_NAMES`): for the dependency
    check, not recorded."""
    paths: tuple[str, ...] = ()
    """Where the interpreter reads from: its prefixes and import paths (``-I``: none of the
    working directory's or of ``PYTHONPATH``), shown to the harness in the sandbox though
    under ``/tmp`` (ADR 0047); not recorded."""

    def evidence(self) -> bytes:
        """The canonical JSON kept at ``upstreams/<upstream>/environment.json``."""
        record = HarnessEnvironment(
            schema_version=1,
            upstream=self.upstream,
            executable=self.executable,
            python_version=self.python_version,
            distributions=self.distributions,
            variables=dict(sorted(self.variables.items())),
            installed=dict(sorted(self.installed.items())),
        )
        return canonical_bytes(record.model_dump(mode="json"))


def _redacted(variables: Mapping[str, str]) -> dict[str, str]:
    """Secrets out of the record: the value of a secret's name, and a URL's credentials in
    any value (``HTTPS_PROXY=http://user:password@host``)."""
    return {
        k: "[redacted]" if SECRET_NAME.search(k) else URL_CREDENTIALS.sub(r"\1[redacted]@", v)
        for k, v in variables.items()
    }


def describe_python(
    upstream: str,
    python: str,
    variables: Mapping[str, str],
    timeout: float = 60.0,
    read_back: Sequence[str] = (),
) -> Environment:
    """Ask ``python`` what it is and holds; of the distributions ``read_back`` names, its files
    digest from the files as they are on disk (the comment above ``_PROBE``).

    Raises:
        EnvironmentUnavailable: it does not run, fails, or answers something else.
    """
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        try:
            done = subprocess.run(  # the interpreter the operator named
                [python, "-I", "-c", _PROBE, *read_back],
                stdout=stdout,
                stderr=stderr,
                timeout=timeout,
                check=False,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentUnavailable(f"{python}: does not run: {exc}") from None
        if done.returncode != 0:
            size = stderr.seek(0, os.SEEK_END)
            stderr.seek(max(0, size - 200))
            tail = stderr.read().decode("utf-8", "replace")
            raise EnvironmentUnavailable(f"{python}: exited {done.returncode}: {tail}")
        if stdout.seek(0, os.SEEK_END) > MAX_ANSWER:
            raise EnvironmentUnavailable(
                f"{python}: answered over {MAX_ANSWER >> 20} MiB; not a Python interpreter's answer"
            )
        stdout.seek(0)
        text = stdout.read()
    try:
        answer: Any = json.loads(text)
        distributions: Sequence[str] = answer["distributions"]
        executable, version = str(answer["executable"]), str(answer["python_version"])
        installed = {
            str(name): f"sha256:{digest}"
            for name, digest in answer["installed"].items()
            if digest is not None
        }
        markers = _markers(answer["markers"])
        requires = {str(name): _declared(lines) for name, lines in answer["requires"].items()}
        paths = tuple(_paths(answer["paths"]))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise EnvironmentUnavailable(f"{python}: not a Python interpreter's answer") from None
    environment = Environment(
        upstream=upstream,
        executable=executable,
        python_version=version,
        distributions=tuple(str(d) for d in distributions),
        variables=_redacted(variables),
        installed=installed,
        requires=requires,
        markers=markers,
        paths=paths,
    )
    try:  # what cannot be kept as the verifier reads the record is refused here, not later
        environment.evidence()
    except ValidationError as exc:
        problem = one_line(str(exc.errors()[0]["msg"]), 200)
        raise EnvironmentUnavailable(
            f"{python}: its answer cannot be recorded: {problem}"
        ) from None
    return environment


def _paths(given: Any) -> list[str]:
    """The interpreter's places as it answered them, each a string (at most
    :data:`MAX_PATHS`, each :data:`MAX_PATH_CHARS` characters)."""
    if not isinstance(given, list) or len(given) > MAX_PATHS:
        raise TypeError("not a list of places")
    if not all(isinstance(p, str) and 0 < len(p) <= MAX_PATH_CHARS for p in given):
        raise TypeError("a place that is not a path")
    try:
        for place in given:
            if "\0" in place:
                raise TypeError("a place with a NUL")
            os.fsencode(place)  # a lone surrogate names no file
    except UnicodeEncodeError:
        raise TypeError("a place that is not a path") from None
    return list(given)


def _markers(given: Any) -> dict[str, str]:
    """The marker environment as the interpreter answered it: every one of
    :data:`MARKER_NAMES`, each a string (a variable missing would be the runner's own)."""
    markers = {name: given[name] for name in MARKER_NAMES}
    if not all(isinstance(value, str) for value in markers.values()):
        raise TypeError("a marker variable that is not a string")
    return markers


def _declared(lines: object) -> tuple[str, ...]:
    """A distribution's declared requirements as the interpreter answered them: its strings,
    at most :data:`MAX_REQUIRES`, none over :data:`MAX_REQUIREMENT_CHARS` (anything else read
    as none)."""
    if not isinstance(lines, list):
        return ()
    kept = (line for line in lines[:MAX_REQUIRES] if isinstance(line, str))
    return tuple(line for line in kept if len(line) <= MAX_REQUIREMENT_CHARS and _text(line))


def _text(line: str) -> bool:
    """Whether a line is text a message can carry (a lone surrogate from JSON is not)."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class _Installed:
    name: str
    version: str
    requires: tuple[str, ...]


def _held(environment: Environment) -> dict[str, _Installed]:
    """The interpreter's distributions by PEP 503 name (the first of a name)."""
    held: dict[str, _Installed] = {}
    for pin in environment.distributions:
        name, _, version = pin.partition("==")
        requires = environment.requires.get(pin, ())
        held.setdefault(canonical_name(name), _Installed(name, version, requires))
    return held


def _applies(requirement: Requirement, markers: Mapping[str, str], extra: str) -> bool:
    """Whether a declared requirement applies for the interpreter with ``extra`` asked for
    (``""``: none). A marker that cannot be evaluated does not apply (the line is skipped)."""
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**markers, "extra": extra})
    except (ValueError, TypeError, RecursionError, UndefinedEnvironmentName):
        return False


def _satisfied(requirement: Requirement, version: str) -> bool:
    """Whether ``version`` is within the requirement's specifier, as ``pip check`` judges it
    (a prerelease satisfies a specifier it falls within)."""
    if not requirement.specifier:
        return True
    try:
        return requirement.specifier.contains(version, prereleases=True)
    except ValueError:
        return False


def _shown(requirement: Requirement) -> str:
    """A requirement as a message names it: name, extras and specifier (its marker held)."""
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"


def unmet_dependencies(
    requirements: Sequence[str], environment: Environment, omitted: Sequence[str] = ()
) -> str | None:
    """Why the interpreter cannot run the distributions ``requirements`` pins (``name==version``)
    for want of their dependencies, or None when it can.

    From each pinned distribution the interpreter holds (one it lacks is the presence check's,
    :func:`pins.missing_requirements`), through each declared requirement that applies (its
    marker true for the interpreter; one under an extra only where that extra is asked for) to
    the distribution it names, each distribution's requirements read once: a requirement is
    unmet when nothing of its name is installed, or what is has a version outside its
    specifier. A requirement line that does not parse is skipped. The message names the first
    :data:`SHOWN_UNMET` unmet ones (by the requiring distribution's name, then the requirement)
    with who needs them, and counts the rest. A requirement of a distribution named in
    ``omitted`` (the pin set's ``omitted_dependencies``) is not required, nor followed.
    """
    held = _held(environment)
    walk = _Walk(held, environment.markers, {canonical_name(name) for name in omitted})
    for pin in requirements:
        walk.start(canonical_name(pin.partition("==")[0]))
    if not walk.run():
        return (
            f"its interpreter {environment.executable} declares more requirements than the "
            f"dependency check reads ({MAX_EVALUATIONS} markers judged); not a harness's "
            "interpreter"
        )
    unmet, chains = walk.unmet, walk.chains
    if not unmet:
        return None
    ordered = [unmet[key] for key in sorted(unmet)]
    more = len(ordered) - SHOWN_UNMET
    shown = "; ".join(ordered[:SHOWN_UNMET]) + (f"; and {more} more" if more > 0 else "")
    involved = {(chains[name] or (name,))[0] for name, _ in unmet}
    pinned = [pin for pin in requirements if canonical_name(pin.partition("==")[0]) in involved]
    return (
        f"its interpreter {environment.executable} lacks what the pinned distributions "
        f"require: {shown} (install them with their dependencies: pip install "
        f"{' '.join(pinned)})"
    )


class _Walk:
    """The walk of :func:`unmet_dependencies`: from the pinned distributions through what they
    declare, each line parsed once, each judged for the extras it is reached with, at most
    :data:`MAX_EVALUATIONS` judgements in all."""

    def __init__(
        self, held: Mapping[str, _Installed], markers: Mapping[str, str], left_out: set[str]
    ) -> None:
        self.held, self.markers, self.left_out = held, markers, left_out
        self.done: dict[str, set[str]] = {}  # distribution -> extras its lines were read for
        self.judged: dict[str, set[int]] = {}  # distribution -> its lines already judged
        self.chains: dict[str, tuple[str, ...]] = {}  # distribution -> what it is reached by
        self.parsed: dict[tuple[str, int], Requirement | None] = {}
        self.queue: deque[tuple[str, frozenset[str]]] = deque()
        self.unmet: dict[tuple[str, str], str] = {}
        self.budget = MAX_EVALUATIONS

    def start(self, name: str) -> None:
        if name in self.held and name not in self.chains:
            self.chains[name] = ()
            self.queue.append((name, frozenset()))

    def _line(self, name: str, index: int, line: str) -> Requirement | None:
        key = (name, index)
        if key not in self.parsed:
            try:
                self.parsed[key] = Requirement(line)
            except (ValueError, RecursionError):
                self.parsed[key] = None
        return self.parsed[key]

    def run(self) -> bool:
        """Walk to the end; False when the judgements ran out first."""
        while self.queue:
            name, extras = self.queue.popleft()
            asked = {"", *extras} - self.done.setdefault(name, set())
            if not asked:
                continue
            self.done[name] |= asked
            lines = self.judged.setdefault(name, set())
            for index, line in enumerate(self.held[name].requires):
                if index in lines:
                    continue
                requirement = self._line(name, index, line)
                if requirement is None:  # a line that does not parse is skipped
                    lines.add(index)
                    continue
                self.budget -= len(asked)
                if self.budget < 0:
                    return False
                if not any(_applies(requirement, self.markers, e) for e in sorted(asked)):
                    continue  # judged again if the distribution is reached with another extra
                lines.add(index)
                self._follow(name, requirement)
        return True

    def _follow(self, name: str, requirement: Requirement) -> None:
        """A requirement of ``name`` that applies: unmet, or met and walked through."""
        wanted = canonical_name(requirement.name)
        if wanted in self.left_out:
            return
        target, distribution = self.held.get(wanted), self.held[name]
        if target is None or not _satisfied(requirement, target.version):
            chain = self.chains[name]
            via = f" (through {', '.join(self.held[c].name for c in chain)})" if chain else ""
            found = "not installed" if target is None else f"installed at {target.version}"
            self.unmet.setdefault((name, _shown(requirement)), (
                f"{distribution.name} {distribution.version}{via} requires "
                f"{_shown(requirement)}, {found}"
            ))  # fmt: skip
        if target is not None:
            self.chains.setdefault(wanted, (*self.chains[name], name))
            self.queue.append((wanted, frozenset(requirement.extras)))


MAX_DATA_FILES = 1_000_000
"""A harness data directory of more files than this is refused (its listing would be huge)."""


def data_listing(path: Path) -> tuple[bytes, str]:
    """The listing of a harness data directory and its digest: one canonical JSON line per
    regular file, by relative path (``path``, ``size``, ``sha256``). The same files give the
    same bytes, wherever the directory is.

    Raises:
        EnvironmentUnavailable: it is not a directory, or holds a link or a special file (a
            listing must say what the harness read), or too many files.
    """
    if not path.is_dir():
        raise EnvironmentUnavailable(f"{path}: not a directory")
    found: list[tuple[str, Path]] = []
    for directory, dirs, names in os.walk(path):
        here = Path(directory)
        for name in sorted(dirs + names):
            entry = here / name
            if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
                kind = "symbolic link" if entry.is_symlink() else "special file"
                raise EnvironmentUnavailable(f"{entry}: a {kind} in a data directory")
            if entry.is_file():
                found.append((entry.relative_to(path).as_posix(), entry))
        if len(found) > MAX_DATA_FILES:
            raise EnvironmentUnavailable(f"{path}: over {MAX_DATA_FILES} files")
    lines = []
    for relative, entry in sorted(found):
        digest = hashlib.sha256()
        with entry.open("rb") as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
        size = entry.stat().st_size
        lines.append(
            canonical_bytes({"path": relative, "sha256": digest.hexdigest(), "size": size}) + b"\n"
        )
    data = b"".join(lines)
    return data, "sha256:" + hashlib.sha256(data).hexdigest()
