"""Sigstore trust roots: the shipped, hash-pinned ones, or a file named explicitly.

The verifier trusts exactly the bytes it was given: a shipped root (``production``, the default,
or ``staging``) whose SHA-256 must equal the line for it in ``verify/trust/SHA256SUMS``, or a file
passed with ``--trusted-root``. It never reads sigstore's cache in the user's home directory and
never fetches a root over the network. A shipped root is replaced only by
``audit trust-root update`` (docs/signing.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable

from bundle_schema.errors import InvalidInput
from verify._source import read_capped

__all__ = [
    "DEFAULT_ROOT",
    "MAX_TRUST_ROOT_SIZE",
    "PINS_FILE",
    "SHIPPED_ROOTS",
    "TRUSTED_ROOT_MEDIA_TYPE",
    "TrustRoot",
    "pinned_digests",
    "shipped_root",
    "trust_root_from_bytes",
    "trust_root_from_file",
]

DEFAULT_ROOT = "production"
SHIPPED_ROOTS = (DEFAULT_ROOT, "staging")
TRUSTED_ROOT_MEDIA_TYPE = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
MAX_TRUST_ROOT_SIZE = 4 << 20
PINS_FILE = "SHA256SUMS"


@dataclass(frozen=True)
class TrustRoot:
    """A trusted_root.json as bytes, where it came from, and its digest."""

    name: str
    """``production``, ``staging``, or the path of the file given."""
    data: bytes
    digest: str


def _file_name(name: str) -> str:
    return f"{name}.trusted_root.json"


def pinned_digests(sums: bytes) -> dict[str, str]:
    """Parse SHA256SUMS (``<64 hex>  <file name>`` lines) into ``{file name: sha256:<hex>}``.

    Raises:
        InvalidInput: a line is not in that form.
    """
    pins: dict[str, str] = {}
    for number, line in enumerate(sums.decode("ascii", "replace").splitlines(), 1):
        hexdigest, _, name = line.partition("  ")
        if len(hexdigest) != 64 or not name or any(c not in "0123456789abcdef" for c in hexdigest):
            raise InvalidInput(f"verify/trust/{PINS_FILE}: line {number} is not '<sha256>  <file>'")
        pins[name] = "sha256:" + hexdigest
    return pins


def trust_root_from_bytes(data: bytes, name: str) -> TrustRoot:
    """Check that bytes are a Sigstore trusted root (media type 0.1) and wrap them.

    Raises:
        InvalidInput: too large, not JSON, or not a trusted root; the message names ``name``.
    """
    if len(data) > MAX_TRUST_ROOT_SIZE:
        raise InvalidInput(f"{name}: over {MAX_TRUST_ROOT_SIZE >> 20} MiB; not a trusted root")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{name}: not JSON: {exc}") from None
    media_type = value.get("mediaType") if isinstance(value, dict) else None
    if media_type != TRUSTED_ROOT_MEDIA_TYPE:
        raise InvalidInput(
            f"{name}: not a Sigstore trusted root: mediaType is {media_type!r}, "
            f"expected {TRUSTED_ROOT_MEDIA_TYPE!r}"
        )
    return TrustRoot(name, data, "sha256:" + hashlib.sha256(data).hexdigest())


def shipped_root(name: str = DEFAULT_ROOT, folder: Traversable | None = None) -> TrustRoot:
    """Load a shipped trust root and check its bytes against the pinned digest.

    Args:
        name: ``production`` or ``staging``.
        folder: where the roots and SHA256SUMS are; default: the installed ``verify/trust``.

    Raises:
        InvalidInput: an unknown name, or the file differs from its pin (a changed installation).
    """
    if name not in SHIPPED_ROOTS:
        raise InvalidInput(f"unknown trust root {name!r}; shipped: {', '.join(SHIPPED_ROOTS)}")
    folder = folder if folder is not None else resources.files("verify") / "trust"
    pins = pinned_digests((folder / PINS_FILE).read_bytes())
    data = (folder / _file_name(name)).read_bytes()
    root = trust_root_from_bytes(data, f"verify/trust/{_file_name(name)}")
    expected = pins.get(_file_name(name))
    if root.digest != expected:
        raise InvalidInput(
            f"verify/trust/{_file_name(name)}: sha256 is {root.digest}, but {PINS_FILE} pins "
            f"{expected}; the installation was changed (restore it, or replace the root with "
            "audit trust-root update)"
        )
    return TrustRoot(name, root.data, root.digest)


def trust_root_from_file(path: str | os.PathLike[str]) -> TrustRoot:
    """Read a trusted_root.json given explicitly (``--trusted-root``).

    Raises:
        InvalidInput: unreadable, too large, or not a trusted root.
    """
    data = read_capped(path, MAX_TRUST_ROOT_SIZE, "a trusted root")
    return trust_root_from_bytes(data, os.fspath(path))
