"""Pin sets as data: scoring generation, weights, thresholds, probe contract and upstream commits.

A pin set is a TOML file; :func:`parse_pin_set` reads one into its id, its digest (sha256 of its
canonical JSON, named by every verdict) and its frozen model (:class:`PinSet`).
"""

from pins._loader import (
    BUILTIN,
    CURRENT,
    DEMO,
    PinSetSource,
    load_builtin,
    parse_pin_set,
    pin_set_digest,
    pin_set_source,
    takes_a_shipped_id,
)
from pins._model import (
    COMPONENTS,
    ENV_NAME,
    GATE_PARSERS,
    RUNNER_VARIABLES,
    SECRET_NAME,
    URL_CREDENTIALS,
    DirectProbeContract,
    Harness,
    PinSet,
    Placeholders,
    ReferencePins,
    Upstream,
    missing_requirements,
    other_files,
    pin_set_model,
)
from pins._probes import PROBE_CONTRACTS, ProbeContract

__all__ = [
    "BUILTIN",
    "COMPONENTS",
    "CURRENT",
    "DEMO",
    "ENV_NAME",
    "GATE_PARSERS",
    "PROBE_CONTRACTS",
    "RUNNER_VARIABLES",
    "SECRET_NAME",
    "URL_CREDENTIALS",
    "DirectProbeContract",
    "Harness",
    "PinSet",
    "PinSetSource",
    "Placeholders",
    "ProbeContract",
    "ReferencePins",
    "Upstream",
    "load_builtin",
    "missing_requirements",
    "other_files",
    "parse_pin_set",
    "pin_set_digest",
    "pin_set_model",
    "pin_set_source",
    "takes_a_shipped_id",
]
