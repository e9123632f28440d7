"""Where a claimed document differs from its replay: numbers within a tolerance, the rest
exactly. Shared by the scorers that compare a run's published numbers with their replay."""

from __future__ import annotations

import math
from collections.abc import Iterator

__all__ = ["differences"]


def differences(claimed: object, replayed: object, path: str, tolerance: float) -> Iterator[str]:
    """Yield one line per difference, located by JSON path, in a stable order.

    Floats agree within ``tolerance``, absolute or relative; everything else (strings, counts,
    booleans, nulls, the keys of objects and the lengths of arrays) must be equal.
    """
    if isinstance(claimed, dict) and isinstance(replayed, dict):
        for key in sorted(set(claimed) | set(replayed), key=str):
            if key not in claimed or key not in replayed:
                yield f"{path}.{key}: {'missing' if key not in claimed else 'not in the replay'}"
            else:
                yield from differences(claimed[key], replayed[key], f"{path}.{key}", tolerance)
    elif isinstance(claimed, list | tuple) and isinstance(replayed, list | tuple):
        if len(claimed) != len(replayed):
            yield f"{path}: {len(claimed)} entries claimed, {len(replayed)} replayed"
            return
        for index, (one, other) in enumerate(zip(claimed, replayed, strict=True)):
            yield from differences(one, other, f"{path}[{index}]", tolerance)
    elif isinstance(claimed, float) and isinstance(replayed, float):
        if not math.isclose(claimed, replayed, rel_tol=tolerance, abs_tol=tolerance):
            yield f"{path}: claimed {claimed!r}, replayed {replayed!r}"
    elif claimed != replayed or type(claimed) is not type(replayed):
        yield f"{path}: claimed {claimed!r}, replayed {replayed!r}"
