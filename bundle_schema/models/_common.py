"""Types every model module shares: the schema version, the constrained scalars and the frozen,
closed base model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StringConstraints,
)

__all__ = [
    "DIGEST_PATTERN",
    "IDENTIFIER_PATTERN",
    "LOGICAL_NAME_PATTERN",
    "MAX_SAFE_INTEGER",
    "SCHEMA_VERSION",
    "Count",
    "Digest",
    "GitCommit",
    "Identifier",
    "LogicalName",
    "MediaType",
    "Metric",
    "MetricName",
    "One",
    "SchemaVersion",
    "Score",
    "Seconds",
    "Size",
    "Text",
    "Timestamp",
    "python_pattern",
]

SCHEMA_VERSION = 1
"""The one document version this code writes and reads."""


def _integer(value: object) -> object:
    """An integer literal is an integer, never ``true`` or ``1.0`` (which Python's ``==`` and
    pydantic's Literal would take for one): as strict as the committed schema's ``const``."""
    if type(value) is not int:
        raise ValueError(f"expected the integer, not {value!r}")
    return value


One = Annotated[Literal[1], BeforeValidator(_integer)]
"""The integer 1, exactly."""
SchemaVersion = One
"""The one ``schema_version`` this code reads and writes."""

MAX_SAFE_INTEGER = 2**53 - 1

LOGICAL_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"

Digest = Annotated[str, StringConstraints(pattern=DIGEST_PATTERN)]
"""``sha256:`` and 64 lowercase hex digits."""

LogicalName = Annotated[str, StringConstraints(pattern=LOGICAL_NAME_PATTERN, max_length=256)]
"""A slash-separated evidence name: lowercase segments, no empty, ``.`` or ``..`` segment."""

IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
MetricName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}$")]
GitCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]


def python_pattern(pattern: str) -> Callable[[str], str]:
    """A check that ``pattern`` matches as Python's ``re`` matches it (and so as the committed
    schema's jsonschema does). pydantic matches a pattern with the Rust ``regex`` crate, whose
    digit class holds the decimal digits of a newer Unicode than this Python's: alone, it took
    digits the schema refuses (U+10D40 and 99 more on Python 3.11). A pattern with a digit
    class carries this check beside its ``StringConstraints``, so that the model accepts only
    what both engines accept; the generated schema is unchanged."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if compiled.search(value) is None:
            raise ValueError(f"String should match pattern '{pattern}'")
        return value

    return check


_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"
Timestamp = Annotated[
    str, StringConstraints(pattern=_TIMESTAMP), AfterValidator(python_pattern(_TIMESTAMP))
]
"""RFC 3339 in UTC with a ``Z`` suffix (its digits as Python's ``re`` reads them:
:func:`python_pattern`)."""
MediaType = Annotated[
    str,
    StringConstraints(
        pattern=r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*"
        r"(; ?[a-z0-9_-]+=[A-Za-z0-9._-]+)*$",
        max_length=255,
    ),
]
Text = Annotated[str, StringConstraints(max_length=4096)]
# Scalars are strict: lax pydantic would take true for 1 or "1" for 1; the JSON Schema does not.
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SAFE_INTEGER)]
"""A non-negative integer that JSON carries exactly (at most :data:`MAX_SAFE_INTEGER`)."""
Size = Count
"""A byte size, a blob count, an exchange id or a ledger sequence number: a :data:`Count`."""
Score = Annotated[float, Field(strict=True, ge=0, le=100)]
MAX_SECONDS = 1e10
"""The largest time a record holds, in seconds (past year 2286 as a Unix time; a run's
relative times are far below it): a sum of two stays a number (``1.7e308`` twice is infinity,
which canonical JSON cannot write)."""
Seconds = Annotated[float, Field(strict=True, ge=0, le=MAX_SECONDS)]
Metric = StrictFloat | StrictInt | None


class _Model(BaseModel):
    # Not pydantic-strict as a whole: its strict mode refuses JSON arrays for tuple fields. The
    # scalar types are strict one by one instead (Size, Score, StrictBool, ...).
    model_config = ConfigDict(frozen=True, extra="forbid")
