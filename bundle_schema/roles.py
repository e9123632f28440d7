"""Evidence roles: which logical names a bundle may use, what each holds, and how many fill it.

The format gives every kind of evidence a place. A role is a logical-name pattern (literal
segments, ``{component}`` for a gx10 component, ``{upstream}`` and ``{name}`` for one segment of
the allowed characters, ``**`` for any rest of the path) and the media types an entry there may
have. A role that names one fixed place holds at most one entry (the manifest's evidence map
cannot hold a name twice); an evidence record of a known kind anywhere else, or an entry at a
role's place under another media type, is a finding: a second transport log under another name is
not a second chance, it is a refusal to choose.

The table is the format's: docs/bundle-format.md lists the same roles, the runner writes these
names, and the verifier reads each fact from the one entry its role allows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import get_args

from bundle_schema.documents import KINDS, RECORD_MEDIA_TYPES
from bundle_schema.models import ComponentName

TRACE_MEDIA_TYPE = "text/plain; charset=utf-8"
"""The media type of a socket trace (the sandbox's raw connect() trace, ADR 0017)."""

__all__ = [
    "COMPONENT_NAMES",
    "DATA_LISTING_MEDIA_TYPE",
    "REFERENCE_HEADER",
    "ROLES",
    "TRACE_MEDIA_TYPE",
    "Placement",
    "Role",
    "place",
]

COMPONENT_NAMES: tuple[str, ...] = get_args(ComponentName)
"""The components of gx10-qualification (seed 000), the only ones a bundle may name."""

REFERENCE_HEADER = "x-evidence-ref"
"""The request header (lower case, as recorded) by which a harness names the record an exchange
is made for (``hermes/<task>``, ``bfcl/<shard>``); the verifier checks each claim against it."""

_SEGMENT = r"[a-z0-9][a-z0-9._-]*"
DATA_LISTING_MEDIA_TYPE = "application/vnd.evidence-audit.data-listing+jsonl"
"""A harness data directory's listing: one canonical JSON line per file, by path."""


@dataclass(frozen=True)
class Role:
    """One place of the format.

    Attributes:
        id: the role's name in findings and docs.
        pattern: the logical-name pattern.
        kind: the evidence record kind that fills it, or None for a file of no record kind.
        read: whether the verifier's gates read it (else it is kept, and listed as unread).
        fills: the field of the gx10-evidence document its record fills (None: no field).
            A ``{component}`` place fills that component's entry of the field, a
            ``{component}``/``{upstream}`` place that upstream's entry under it, and places
            of no such segment that share a field fill it in this table's order, by role;
            a JSON Lines record fills it with all its lines. The runner and the verifier
            both assemble the evidence from this (``verify.evidence.EvidenceRecords``).
        variant: the ``kind`` the record at this place must name (a direct probe's).
        many: whether the pattern admits many entries (a ``{name}`` or ``**`` in it).
    """

    id: str
    pattern: str
    kind: str | None
    read: bool = True
    media: str | None = None
    """For a place of no record kind: the one media type it takes (None: any but a record's)."""
    fills: str | None = None
    variant: str | None = None

    @property
    def many(self) -> bool:
        return "{name}" in self.pattern or "**" in self.pattern

    @property
    def media_type(self) -> str | None:
        return self.media if self.kind is None else KINDS[self.kind].media_type

    def compiled(self) -> re.Pattern[str]:
        out = []
        for part in re.split(r"(\{component\}|\{upstream\}|\{name\}|\*\*)", self.pattern):
            if part == "{component}":
                out.append("(?P<component>" + "|".join(COMPONENT_NAMES) + ")")
            elif part == "{upstream}":
                out.append(f"(?P<upstream>{_SEGMENT})")
            elif part == "{name}":
                out.append(f"(?P<name>{_SEGMENT})")
            elif part == "**":
                out.append(f"(?P<rest>{_SEGMENT}(?:/{_SEGMENT})*)")
            else:
                out.append(re.escape(part))
        return re.compile("".join(out))


ROLES: tuple[Role, ...] = (
    Role("transport log", "transport/exchanges.jsonl", "transport-exchange", fills="transport"),
    Role(
        "socket ledger", "network/socket-ledger.jsonl", "socket-ledger-entry", fills="socket_ledger"
    ),
    # the raw connect() traces the ledger was parsed from, re-parsed against it (ADR 0017)
    Role("socket trace", "network/strace/{name}", None, media=TRACE_MEDIA_TYPE),
    Role("run config", "run/config.json", "run-config", fills="config"),
    Role(
        "response probe",
        "probes/direct-response.json",
        "direct-probe",
        fills="probes",
        variant="response",
    ),
    Role(
        "tool-call probe",
        "probes/tool-call.json",
        "direct-probe",
        fills="probes",
        variant="tool_call",
    ),
    Role(
        "component result",
        "components/{component}/result.json",
        "component-result",
        fills="results",
    ),
    Role(
        "quarantine marker",
        "components/{component}/quarantine.json",
        "quarantine-marker",
        fills="quarantines",
    ),
    Role(
        "spark quality",
        "components/coding/spark-quality.json",
        "spark-quality",
        fills="spark_quality",
    ),
    Role(
        "spark repeat",
        "components/reliability/spark-repeat.json",
        "spark-repeat",
        fills="spark_repeat",
    ),
    Role("hermes tasks", "components/hermes/tasks.jsonl", "hermes-task", fills="hermes_tasks"),
    Role(
        "benchlocal packs",
        "components/tool_instruction/benchlocal-packs.json",
        "benchlocal-packs",
        fills="benchlocal",
    ),
    Role(
        "infermark streaming",
        "components/performance/infermark-c1.json",
        "infermark-streaming",
        fills="infermark",
    ),
    # BFCL shards are validated as records but scored by no gx10 component yet: unread
    Role("bfcl plan", "components/{component}/bfcl/plan.json", "bfcl-plan", read=False),
    Role("bfcl shard", "components/{component}/bfcl/{name}", "bfcl-shard", read=False),
    Role("raw output", "components/{component}/raw/**", None),
    # a supplementary harness run beside a component's upstream as its gate (ADR 0022): the
    # tallies its reader made, and what it wrote
    Role(
        "gate tallies",
        "components/{component}/gates/{upstream}/bfcl-eval.json",
        "bfcl-shard",
        fills="supplementary",
    ),
    Role(
        "gate task tallies",
        "components/{component}/gates/{upstream}/tasks.json",
        "task-tallies",
        fills="supplementary",
    ),
    Role("gate raw output", "components/{component}/gates/{upstream}/raw/**", None),
    Role("harness log", "logs/{name}", None, read=False),
    Role("identity reply", "identity/{name}", None, read=False),
    Role("checkout listing", "upstreams/{upstream}/tree.txt", None),
    Role("checkout state", "upstreams/{upstream}/checkout.json", None),
    Role("checkout commit", "upstreams/{upstream}/commit.txt", None),
    Role("checkout file", "upstreams/{upstream}/files/{name}", None),
    # the interpreter a harness ran with and its installed distributions (its lock in effect)
    # read only where the pin set gives the harness requirements or variables
    # (verify._consistency.pinned_environments)
    Role("harness environment", "upstreams/{upstream}/environment.json", None, read=False),
    # a data directory a harness read, listed file by file (its digest is the pin set's)
    Role(
        "harness data listing",
        "upstreams/{upstream}/data/{name}",
        None,
        read=False,  # read only where the pin set pins it (verify._consistency.pinned_listings)
        media=DATA_LISTING_MEDIA_TYPE,
    ),
)
"""Every place of the format, in the order docs/bundle-format.md lists them."""

_COMPILED = tuple((role, role.compiled()) for role in ROLES)


@dataclass(frozen=True)
class Placement:
    """Where an entry stands: its role (None: no place of the format) and the role's values."""

    role: Role | None
    component: str | None = None
    upstream: str | None = None
    problem: str | None = None
    """Why the entry is misplaced: a record of a known kind off its place, or an entry at a
    place under a media type the place does not take."""


def place(name: str, media_type: str) -> Placement:
    """The role a logical name and media type fill, or why they fill none.

    A record kind's media type is taken only at its role's place; a place of a record kind takes
    only that kind's media type; a place of no record kind takes any media type but a record
    kind's. An entry that matches no place and is no record is kept, unread.
    """
    kind = RECORD_MEDIA_TYPES.get(media_type)
    for role, pattern in _COMPILED:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        groups: Mapping[str, str | None] = match.groupdict()
        found = Placement(role, groups.get("component"), groups.get("upstream"))
        if role.kind is not None and (kind is None or kind.name != role.kind):
            return Placement(
                role,
                found.component,
                found.upstream,
                f"the {role.id} at {name} must be {role.media_type}, not {media_type}",
            )
        if role.kind is None and role.media is not None and media_type != role.media:
            return Placement(
                role,
                found.component,
                found.upstream,
                f"the {role.id} at {name} must be {role.media}, not {media_type}",
            )
        if role.kind is None and kind is not None:
            return Placement(
                role,
                found.component,
                found.upstream,
                f"a {kind.name} record at {name}, the place of a {role.id}",
            )
        return found
    if kind is not None:
        homes = [r.pattern for r in ROLES if r.kind == kind.name]
        return Placement(
            None,
            problem=f"a {kind.name} record at {name}; the format gives it "
            f"{' or '.join(homes) or 'no place'}",
        )
    return Placement(None)
