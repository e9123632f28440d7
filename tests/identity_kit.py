"""What the tests of identity replies share (tests/verify/test_reported_digests.py,
tests/hostile/test_attacks_2026_12_05_k.py): an answered exchange of a given reply, and the
digests it reports, the full and the slim (bounded) exchange agreeing."""

from __future__ import annotations

import base64
import json
from typing import Any

from bundle_schema.models import Body, TransportExchange
from verify._facts import reported_digests, slim_exchange

__all__ = ["identity_exchange", "reported_both"]


def identity_exchange(
    reply: Any,
    *,
    method: str = "GET",
    path: str = "/api/tags",
    request: Any = None,
    status: int = 200,
    base64_body: bool = False,
) -> TransportExchange:
    """An exchange whose reply is ``reply`` (JSON, or text as given), kept as base64 if asked,
    to a request whose body is ``request`` as JSON (none if None)."""
    data = reply if isinstance(reply, str) else json.dumps(reply)
    body = (
        Body(encoding="base64", data=base64.b64encode(data.encode()).decode())
        if base64_body
        else Body(encoding="utf-8", data=data)
    )
    asked = None if request is None else Body(encoding="utf-8", data=json.dumps(request))
    return TransportExchange(
        schema_version=1, id=1, started=0.0, ended=0.1, method=method, path=path,
        status=status, request_body=asked, response_body=body,
    )  # fmt: skip


def reported_both(record: TransportExchange) -> frozenset[tuple[str, str]]:
    """What the full exchange reports, checked equal to what its slim copy keeps."""
    full = reported_digests(record)
    assert reported_digests(slim_exchange(record, None)) == full
    return full
