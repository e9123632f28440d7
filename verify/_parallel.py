"""A huge transport log's lines validated and reduced in helper processes (ADR 0012).

On the bounded path every line of the transport log is parsed, proven canonical, validated and
reduced to the facts the gates read (:func:`verify._facts.slim_exchange`); reading a streamed
reply for its facts is most of that work. For a large log the lines are sent, in batches and in
order, to helper processes that do exactly what the calling process would do (the same
functions, on the same bytes), and the reduced exchanges come back in order: the first invalid
line still ends the record with the same reason, and nothing after it is kept. At most
``2 x helpers`` batches are in flight, so memory stays bounded by the batch size.
"""

from __future__ import annotations

import concurrent.futures
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from bundle_schema.documents import KINDS, DocumentKind
from bundle_schema.models import RunConfig, TransportExchange
from verify._core import validate_documents
from verify._facts import slim_exchange
from verify._hashing import _process_context

__all__ = ["PARALLEL_FROM", "slim_in_helpers"]

PARALLEL_FROM = 64 << 20
"""A transport log of at least this many bytes is read by helpers (smaller ones in process)."""
BATCH_BYTES = 4 << 20
BATCH_LINES = 4096


def _slim_batch(
    kind_name: str,
    batch: list[bytes],
    first: int,
    where: str,
    *,
    config: RunConfig | None,
    whole: frozenset[int],
) -> list[BaseModel | str]:
    """One batch of lines (``first``: the line number of its first), validated and reduced."""
    return [
        slim_exchange(model, config)
        if isinstance(model, TransportExchange) and model.id not in whole
        else model
        for model in validate_documents(KINDS[kind_name], batch, where, start=first)
    ]


def _batches(lines: Iterable[bytes]) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= BATCH_BYTES or len(batch) >= BATCH_LINES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def slim_in_helpers(
    kind: DocumentKind[Any],
    lines: Iterable[bytes],
    where: str,
    *,
    config: RunConfig | None,
    whole: set[int],
    helpers: int,
) -> Iterator[BaseModel | str]:
    """The transport log's lines validated and reduced by ``helpers`` processes, in order, as
    :func:`verify._core.validate_documents` yields them (a probe's exchange whole)."""
    kept = frozenset(whole)
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=helpers, mp_context=_process_context()
    ) as pool:
        pending: deque[concurrent.futures.Future[list[BaseModel | str]]] = deque()
        number = 1
        batches = _batches(lines)
        deferred: BaseException | None = None
        try:
            while True:
                while deferred is None and len(pending) < 2 * helpers:
                    try:
                        batch = next(batches, None)
                    except Exception as exc:  # raised in turn, where the in-process reader raises
                        deferred = exc
                        break
                    if batch is None:
                        break
                    pending.append(
                        pool.submit(
                            _slim_batch, kind.name, batch, number, where, config=config, whole=kept
                        )
                    )
                    number += len(batch)
                if not pending:
                    break
                for model in pending.popleft().result():
                    yield model
                    if isinstance(model, str):
                        return
        finally:
            for future in pending:
                future.cancel()
        if deferred is not None:
            # the reader failed after the lines before it were read (and all were valid): the
            # in-process reader would have failed there too
            raise deferred
