"""The gx10-qualification replay (seed 000): hard gates, component scores, the verdict axes,
rankability, and the comparison with the runner's claims, all from raw evidence.

Pure: :func:`replay` takes a :class:`~bundle_schema.models.Gx10Evidence` (assembled from a bundle
by the shell, or read from one file by ``audit score gx10``) and a trusted pin set, and returns a
:class:`~bundle_schema.models.Gx10Replay`. Every gate is a small function of the evidence; a
failure is the model's or the deployment's (``fail``) or the infrastructure's (``infra``) exactly
as the seed classifies it. The claims are read only at the end, to be compared.

The package by concern: :mod:`._context` (what the gates read), :mod:`.gates` (the run-level
gates and :data:`GATES`), :mod:`.hermes` (the Hermes task evaluator), :mod:`.scores` (component
scores, thresholds, diagnostics), :mod:`.ranking` (rankability) and :mod:`.decision` (the
replay). The readers of a reply's body and stream, shared with the runner, are
:mod:`verify.replies` and :mod:`verify._facts`.
"""

from verify._facts import is_loopback, off_sandbox
from verify.gx10._context import Check, Gate, Run
from verify.gx10.decision import GX10_VERSION, replay
from verify.gx10.gates import GATES, Fallback, fallback
from verify.gx10.hermes import path_allowed
from verify.gx10.scores import performance_score
from verify.replies import first_tool_call, read_reply

__all__ = [
    "GATES",
    "GX10_VERSION",
    "Check",
    "Fallback",
    "Gate",
    "Run",
    "fallback",
    "first_tool_call",
    "is_loopback",
    "off_sandbox",
    "path_allowed",
    "performance_score",
    "read_reply",
    "replay",
]
