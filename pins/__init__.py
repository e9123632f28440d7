"""Pin sets as data: scoring generation, weights, thresholds, probe contract and upstream commits.

This layer holds the pin-set files and their identity (id and digest). The full frozen pin-set
model is built on top of :func:`pin_set_digest` and :func:`load_builtin`.
"""

from pins._loader import BUILTIN, PinSetSource, load_builtin, parse_pin_set, pin_set_digest

__all__ = ["BUILTIN", "PinSetSource", "load_builtin", "parse_pin_set", "pin_set_digest"]
