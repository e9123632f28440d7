"""Read a pin set from TOML bytes and name it by the digest of its canonical JSON."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import InvalidInput
from pins._model import PinSet, pin_set_model

BUILTIN = ("gx10-qualification-v4", "gx10-qualification-v5", "gx10-reference-v5")
"""Pin sets shipped with the project, by id."""
CURRENT = "gx10-qualification-v5"
"""The active scoring generation's pin set for real deployments: the real upstream harnesses,
the one the public ranking is made under."""
DEMO = "gx10-reference-v5"
"""The embedded default's pin set: the active generation's numbers with the reference
harnesses. Demo only: never ranked, and only the reference endpoint's model is judged under it."""


@dataclass(frozen=True)
class PinSetSource:
    """A pin set's id, digest and data, as read, and its frozen model."""

    id: str
    digest: str
    data: Mapping[str, Any]
    pins: PinSet


def pin_set_digest(data: Mapping[str, Any]) -> str:
    """``sha256:`` of the canonical JSON of a pin set's data."""
    return digest_of(canonical_bytes(dict(data)))


def parse_pin_set(raw: bytes, where: str) -> PinSetSource:
    """Parse pin-set TOML bytes.

    Raises:
        InvalidInput: not UTF-8 TOML, or not a pin set (the message names the field).
    """
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(f"{where}: not a TOML pin set: {exc}") from None
    return pin_set_source(data, where, raw.decode("utf-8"))


def pin_set_source(data: Mapping[str, Any], where: str, text: str | None = None) -> PinSetSource:
    """A pin set from its data (read from TOML, or made in code): its id, digest and model.

    Args:
        data: the pin set's data.
        where: where it came from, for messages.
        text: its TOML text, to name the line a message is about.

    Raises:
        InvalidInput: not a pin set (the message names the field).
    """
    pin_id = data.get("id")
    if not isinstance(pin_id, str) or not pin_id:
        raise InvalidInput(f"{where}: 'id' must be a non-empty string")
    try:
        digest = pin_set_digest(data)
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    pins = pin_set_model(data, where, text)
    return PinSetSource(id=pin_id, digest=digest, data=data, pins=pins)


def load_builtin(pin_id: str) -> PinSetSource:
    """Load one of the pin sets shipped in this package.

    Raises:
        InvalidInput: no shipped pin set has that id.
    """
    if pin_id not in BUILTIN:
        raise InvalidInput(f"unknown pin set {pin_id!r}; shipped: {', '.join(BUILTIN)}")
    raw = (resources.files("pins") / f"{pin_id}.toml").read_bytes()
    return parse_pin_set(raw, f"pins/{pin_id}.toml")


def _spelled(pin_id: str) -> str:
    """An id as it reads: in any case, with no separator at its end."""
    return pin_id.casefold().rstrip(".+:_-")


_SHIPPED_AS_READ = {_spelled(pin_id): pin_id for pin_id in BUILTIN}


@functools.cache
def _shipped_digest(pin_id: str) -> str:
    return load_builtin(pin_id).digest


def takes_a_shipped_id(pin_id: str, digest: str) -> str | None:
    """Why the pin set ``pin_id`` of ``digest`` is not the shipped pin set its id reads as (in
    any case, a separator at its end aside: ``GX10-QUALIFICATION-V5.``), or None (its id reads
    as no shipped one's, or it is the shipped pin set). Nothing ranks under such a pin set:
    rankings and verification summaries name a pin set by id, and its id reads as the shipped
    one's."""
    shipped_id = _SHIPPED_AS_READ.get(_spelled(pin_id))
    if shipped_id is None:
        return None
    shipped = _shipped_digest(shipped_id)
    if (pin_id, digest) == (shipped_id, shipped):
        return None
    return (
        f"pin set {pin_id} {digest} takes the id of a shipped pin set with other content "
        f"(shipped: {shipped_id} {shipped})"
    )
