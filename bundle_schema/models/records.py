"""The evidence records a run writes into its bundle: transport exchanges, socket-ledger entries,
component results and quarantine markers, the component evidence of gx10-qualification (seed 000),
the run's configuration, and the tallies of BFCL shards and supplementary harnesses.
"""

from __future__ import annotations

import base64
import codecs
import copy
import re
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from bundle_schema.models._common import (
    Count,
    Digest,
    GitCommit,
    Identifier,
    LogicalName,
    Metric,
    MetricName,
    One,
    SchemaVersion,
    Seconds,
    Size,
    Text,
    Timestamp,
    _Model,
)

__all__ = [
    "BASE64_PATTERN",
    "ENV_NAME_PATTERN",
    "GONE_BEFORE_THE_ANSWER",
    "GONE_BEFORE_THE_STREAM",
    "GONE_MID_STREAM",
    "HERMES_EVIDENCE_KINDS",
    "MAX_ENV_VALUE",
    "RUN_ENDED_FIRST",
    "BenchLocalPacks",
    "BfclPlan",
    "BfclShard",
    "Body",
    "CheckoutState",
    "Chunk",
    "ComponentResult",
    "DirectProbe",
    "EnvName",
    "EnvValue",
    "EvidenceTrust",
    "GateStatus",
    "HarnessEnvironment",
    "HermesCase",
    "HermesEvidenceKind",
    "HermesTask",
    "InfermarkStreaming",
    "LedgerRecord",
    "ObserverRecord",
    "Percent",
    "QuarantineMarker",
    "ReasoningPolicy",
    "ReasoningSerialization",
    "RunConfig",
    "SocketLedgerEntry",
    "SparkQuality",
    "SparkRepeat",
    "SubsetName",
    "Tally",
    "TaskName",
    "TaskTallies",
    "Tier2",
    "TransportExchange",
    "canonical_distribution",
    "canonical_name",
    "repeated_distribution",
    "stream_chunks",
]

BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with its padding, nothing else (no line breaks, no URL-safe alphabet)."""
_BASE64 = re.compile(BASE64_PATTERN)


class Body(_Model):
    """An HTTP body: UTF-8 text as it was, or base64 when it was not valid UTF-8 (then its
    data must be base64: bytes that decode to nothing are no evidence of a body)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"encoding": {"const": "base64"}}},
            "then": {"properties": {"data": {"pattern": BASE64_PATTERN}}},
        },
    )

    encoding: Literal["utf-8", "base64"]
    data: str

    @model_validator(mode="after")
    def _decodable(self) -> Body:
        # fullmatch: the pattern's $ also matches before a final newline, which the schema's
        # pattern (Python's re) takes and every base64 decoder of the verifier refuses
        if self.encoding == "base64" and not _BASE64.fullmatch(self.data):
            raise ValueError("a base64 body whose data is not base64")
        return self


def _absent(value: object) -> bool:
    return value is None


class Chunk(_Model):
    """One streamed chunk, as its bytes arrived, ``t`` seconds after the request started:
    ``data``, its text as a UTF-8 reader of the whole stream gets it (see :func:`stream_chunks`);
    ``raw``, its bytes in base64, only when they are not the UTF-8 encoding of ``data`` (bytes
    that are not UTF-8, a character split across chunks); absent otherwise, never null."""

    t: Seconds
    data: str
    raw: Annotated[
        str | None, WithJsonSchema({"type": "string", "pattern": BASE64_PATTERN, "minLength": 1})
    ] = Field(default=None, exclude_if=_absent)

    @field_validator("raw", mode="before")
    @classmethod
    def _base64(cls, value: object) -> object:
        # given, it is base64 text (null is no value: absent is how a chunk says "none")
        if not isinstance(value, str) or not value or not _BASE64.fullmatch(value):
            raise ValueError("raw is the chunk's bytes in base64 (absent when they are its text)")
        return value

    def received(self) -> bytes:
        """The bytes of the chunk as they arrived.

        Raises:
            ValueError: ``data`` holds a lone surrogate and no ``raw`` says what arrived.
        """
        if self.raw is not None:
            return base64.b64decode(self.raw, validate=True)
        return self.data.encode("utf-8")


def stream_chunks(pieces: Sequence[tuple[float, bytes]]) -> tuple[Chunk, ...]:
    """The chunks of a stream whose pieces arrived as given (time, bytes): each one's text as a
    UTF-8 reader of the whole stream gets it (bytes that are not UTF-8 as U+FFFD, a character
    split across pieces in the piece that completes it, an unfinished one at the end as U+FFFD
    in the last), with its bytes kept as ``raw`` where they are not that text's encoding. The
    observer records a stream with it, and the verifier reads a recorded one back with it. A
    piece of no bytes is no chunk."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    arrived = [(t, data) for t, data in pieces if data]
    last = len(arrived) - 1
    chunks = []
    for index, (t, data) in enumerate(arrived):
        text = decoder.decode(data, final=index == last)
        if text.encode("utf-8") == data:
            chunks.append(Chunk(t=t, data=text))
        else:
            chunks.append(Chunk(t=t, data=text, raw=base64.b64encode(data).decode("ascii")))
    return tuple(chunks)


GONE_BEFORE_THE_ANSWER = "the client disconnected before the answer"
"""An exchange's ``error`` when its whole answer came after its harness had closed the
connection (a client's time-out): recorded with the answer, which the harness never had."""
GONE_BEFORE_THE_STREAM = "the client disconnected before the stream began"
GONE_MID_STREAM = "the client disconnected mid-stream"
RUN_ENDED_FIRST = "the run ended before the exchange did"
"""The start of an exchange's ``error`` when the run stopped its harness while the endpoint had
yet to answer (``... (the client had disconnected)`` when the harness had gone before)."""


class TransportExchange(_Model):
    """One HTTP exchange between harness and model, as the observer saw it (one JSONL line)."""

    schema_version: SchemaVersion
    id: Size
    component: Identifier | None = None
    started: Seconds
    """Monotonic seconds since the observer started."""
    ended: Seconds | None = None
    method: Annotated[str, StringConstraints(pattern=r"^[A-Z]{1,16}$")]
    path: Annotated[str, StringConstraints(pattern=r"^/", max_length=4096)]
    status: Annotated[int, Field(strict=True, ge=100, le=599)] | None = None
    request_headers: dict[str, Text] = Field(default_factory=dict)
    response_headers: dict[str, Text] = Field(default_factory=dict)
    request_body: Body | None = None
    response_body: Body | None = None
    chunks: tuple[Chunk, ...] = ()
    error: Text | None = None
    redirect: Text | None = None
    response_model: Annotated[str, StringConstraints(max_length=256)] | None = None

    @model_validator(mode="after")
    def _chunks_as_read(self) -> TransportExchange:
        # A chunk recorded with its bytes: every chunk's text must be what reading the bytes
        # gives (a stream with none is text that arrived as it reads: nothing to reconcile)
        if any(chunk.raw is not None for chunk in self.chunks):
            pieces = [(chunk.t, chunk.received()) for chunk in self.chunks]
            if stream_chunks(pieces) != self.chunks:
                raise ValueError(
                    "the streamed chunks' texts are not the UTF-8 reading of their bytes"
                )
        return self


class SocketLedgerEntry(_Model):
    """One attempt by any process of a sandboxed harness to reach an address (one JSONL line):
    a ``connect()``, or a ``sendto()`` or ``sendmsg()`` naming where it sends (a datagram, TCP
    Fast Open)."""

    schema_version: SchemaVersion
    seq: Size
    t: Seconds
    pid: Annotated[int, Field(strict=True, ge=1)]
    process: Annotated[str, StringConstraints(max_length=256)]
    family: Annotated[str, StringConstraints(pattern=r"^(AF_[A-Z0-9_]{1,29}|unreadable)$")]
    """``AF_INET``, ``AF_INET6``, ``AF_UNIX``; any other family strace names (``AF_VSOCK``: the
    address is then strace's fields); ``unreadable``: strace could not read the address (the
    address is the pointer it showed)."""
    address: Annotated[str, StringConstraints(max_length=256)]
    port: Annotated[int, Field(strict=True, ge=0, le=65535)] | None = None
    outcome: Annotated[str, StringConstraints(pattern=r"^(connected|in-progress|sent|E[A-Z0-9]+)$")]
    """``connected`` or ``in-progress`` (a ``connect()``), ``sent`` (a send that named the
    address went out), or the error the call failed with (``EUNKNOWN``: never seen to end)."""
    component: Identifier | None = None


class ComponentResult(_Model):
    """What one component produced: its status, raw outputs and headline metrics."""

    schema_version: SchemaVersion
    component: Identifier
    status: Literal["COMPLETED", "PARTIAL", "FAILED", "QUARANTINED", "NOT_RUN"]
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    raw_outputs: tuple[LogicalName, ...] = ()
    metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    quarantine: LogicalName | None = None
    reason: Text | None = None


class QuarantineMarker(_Model):
    """An upstream quarantine marker: authoritative, with the upstream reason and metrics."""

    schema_version: SchemaVersion
    component: Identifier
    upstream_reason: Text
    provisional_metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    source: LogicalName | None = None
    """Evidence entry holding the raw upstream marker file."""


# --- component evidence of gx10-qualification (seed 000) --------------------------------------

GateStatus = Literal["PASS", "FAIL"]
Percent = (
    Annotated[float, Field(strict=True, ge=0, le=100)]
    | Annotated[int, Field(strict=True, ge=0, le=100)]
)


class Tier2(_Model):
    """SparkBench tier2 serving performance: non-scoring; failed fields are null."""

    status: Literal["AVAILABLE", "PARTIAL", "UNAVAILABLE"]
    decode_tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | None = None
    prefill_tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | None = None
    ttft_seconds: Annotated[float, Field(strict=True, ge=0)] | None = None


class SparkQuality(_Model):
    """SparkBench's code-domain quality output, with its own integrity gates."""

    generation: Identifier
    code_domain_quality: Percent
    tasks: Count
    passed: Count
    golden_gate: GateStatus
    self_integrity: GateStatus
    run_valid: StrictBool
    sampling_contamination: StrictBool
    tier2: Tier2 | None = None


class SparkRepeat(_Model):
    """SparkBench's repeat-reliability output."""

    repeats: Count
    repeat_reliability: Percent
    agreement: tuple[Annotated[float, Field(strict=True, ge=0, le=1)], ...] = ()


class EvidenceTrust(_Model):
    """One kind of Hermes execution evidence: whether it exists and can be trusted."""

    present: StrictBool
    trusted: StrictBool


class HermesCase(_Model):
    """One frozen evaluator test case and the requirement ids it is mapped to."""

    case: Identifier
    kind: Literal["correctness", "security"]
    passed: StrictBool
    requirements: tuple[Identifier, ...] = ()


HermesEvidenceKind = Literal["process", "checkpoint", "model_response", "task_state", "evaluator"]
HERMES_EVIDENCE_KINDS: tuple[str, ...] = get_args(HermesEvidenceKind)
"""The kinds of evidence a Hermes task's record vouches for, in the seed's order."""


class HermesTask(_Model):
    """One Hermes task of a run (one JSONL line), as the harness and its evaluator recorded it."""

    task: Identifier
    outcome: Literal["PASS", "FAIL", "TIMEOUT", "HARNESS_ERROR"]
    inactivity_limit_s: Seconds
    max_inactivity_s: Seconds | None
    wall_limit_s: Seconds
    wall_s: Seconds | None
    evaluator: Identifier
    evaluator_isolated: StrictBool
    evidence: dict[HermesEvidenceKind, EvidenceTrust]
    cases: tuple[HermesCase, ...]
    completion_claim: StrictBool | None
    changed_paths: tuple[Annotated[str, StringConstraints(min_length=1, max_length=1024)], ...]
    allowed_changes: tuple[Annotated[str, StringConstraints(min_length=1, max_length=1024)], ...]
    protected_inputs: dict[Literal["before", "after"], Digest | None]
    cleanup: Literal["removed", "failed", "not_run"]
    trajectory: Literal["present", "missing", "malformed"] = "missing"
    final_response: Text | None = None
    exchanges: tuple[Size, ...] = ()
    """The transport exchanges the task's agent made (by id), where the runner could tell."""

    def trusts(self, kinds: Sequence[str] = HERMES_EVIDENCE_KINDS) -> bool:
        """Whether each of ``kinds`` of evidence is present and trusted."""
        return all(
            (trust := self.evidence.get(kind)) is not None  # type: ignore[call-overload]
            and trust.present
            and trust.trusted
            for kind in kinds
        )


class BenchLocalPacks(_Model):
    """BenchLocal behavioral/targeted pack scores."""

    packs: dict[Identifier, Percent]
    mean: Percent | None = None
    """As the harness printed it; the replay recomputes it."""


class InfermarkStreaming(_Model):
    """Infermark's legacy concurrency-1 streaming fields.

    ``tokens_per_second`` counts non-empty visible ``delta.content`` chunks over the whole
    concurrency-level wall: it is reported as E2E visible chunk/s, never as token/s.
    """

    concurrency: One
    visible_chunks: Count
    wall_seconds: Seconds
    tokens_per_second: Annotated[float, Field(strict=True, ge=0)] | Count
    ttft_p50_seconds: Seconds | None
    """The median time to the first visible content chunk of the requests that streamed one;
    None when none did (no TTFT was measured)."""
    itl_mean_seconds: Seconds | None
    requests: Count
    errors: Count


class DirectProbe(_Model):
    """A direct probe: the exchange it made and what it expected; ``finish_reason``,
    ``completion_tokens`` and ``got`` are the runner's reading of that exchange."""

    kind: Literal["response", "tool_call"]
    contract: Identifier
    ceiling_tokens: Count
    exchange: Size
    expected: str | dict[str, object]
    finish_reason: Annotated[str, StringConstraints(max_length=64)] | None = None
    completion_tokens: Count | None = None
    got: str | dict[str, object] | None = None


_DOTTED_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class ReasoningSerialization(_Model):
    """Where and how the effective reasoning policy is written into every completion request."""

    path: Annotated[str, StringConstraints(pattern=_DOTTED_PATH)]
    value: StrictBool | str | StrictInt

    # The one reading of ``path`` (``a.b.c``: key ``c`` of object ``b`` of object ``a`` of a
    # request body), for the observer that writes the policy and the verifier that reads it.

    def carried_by(self, body: object) -> bool:
        """Whether the request body ``body`` (a JSON value) holds this value, of this JSON
        type, at the path (``1`` is not ``true``, nor ``1.0``)."""
        value = body
        for part in self.path.split("."):
            if not isinstance(value, dict) or part not in value:
                return False
            value = value[part]
        return type(value) is type(self.value) and value == self.value

    def write_into(self, body: dict[str, Any]) -> dict[str, Any]:
        """Write the value into ``body`` at the path, making the objects on the way (and
        replacing what is not one); returns ``body``."""
        node = body
        *parents, leaf = self.path.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = self.value
        return body

    def removed_from(self, body: object) -> dict[str, Any]:
        """A deep copy of the request body ``body`` (an object, else an empty one) without
        what is at the path, and without the objects on the way that are left empty: the body
        before :meth:`write_into`, when ``write_into`` made them."""
        copied = copy.deepcopy(body) if isinstance(body, dict) else {}
        *parents, leaf = self.path.split(".")
        nodes = [copied]
        for part in parents:
            child = nodes[-1].get(part)
            if not isinstance(child, dict):
                return copied
            nodes.append(child)
        nodes[-1].pop(leaf, None)
        for node, part in zip(reversed(nodes[:-1]), reversed(parents), strict=True):
            if node.get(part) == {}:
                del node[part]
        return copied


class ReasoningPolicy(_Model):
    """The run's effective reasoning policy and its serialization evidence."""

    effective: Literal["off", "on", "low", "medium", "high"]
    serialization: ReasoningSerialization | None


class ObserverRecord(_Model):
    """The transport observer's own account: complete, with how many exchanges it wrote."""

    status: Literal["complete", "failed"]
    exchanges: Count
    reason: Text | None = None


class LedgerRecord(_Model):
    """The supervisor's closing record of the socket ledger, written after the last traced
    process exited: how many attempts the ledger holds, so that a cut tail shows."""

    entries: Count


class RunConfig(_Model):
    """How the run was configured: its track, reasoning policy, observer and ledger."""

    schema_version: SchemaVersion
    track: Literal["primary", "controlled"]
    reasoning_policy: ReasoningPolicy
    observer: ObserverRecord
    ledger: LedgerRecord | None = None
    cleanup: Literal["removed", "failed", "not_run"]
    """Run-owned processes and files, removed after the evidence was preserved."""


# --- tallies of BFCL shards and supplementary harnesses -------------------------------------------

SubsetName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class Tally(_Model):
    """Hits and scored samples of one BFCL subset (every sample scores exactly 0 or 1)."""

    hits: Count
    n: Count


class BfclShard(_Model):
    """One BFCL shard report: per-subset tallies, as the shard's run wrote them (seed 003).

    ``sample_ids``, where the shard recorded them, lets overlapping shards be detected.
    """

    subset_totals: dict[SubsetName, Tally]
    shard_id: Identifier | None = None
    sample_ids: (
        tuple[Annotated[str, StringConstraints(min_length=1, max_length=256)], ...] | None
    ) = None
    exchanges: tuple[Size, ...] | None = None
    """The transport exchanges the shard's samples were scored from, where the runner recorded
    them (the harness names them ``bfcl/<shard_id>``)."""


TaskName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+/-]{0,127}$")]
"""A harness's task name (``arithmetic``, ``inspect_evals/gsm8k``, ``arith_local``)."""


class TaskTallies(_Model):
    """Per task, (hits, n) as a supplementary harness reported them, each checked by its reader
    against the harness's own per-sample records: Inspect AI's log, lm-evaluation-harness's
    results (ADR 0027). Every sample scores exactly 0 or 1."""

    harness: Literal["inspect-ai", "lm-eval"]
    version: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    """The harness's version, as its output reports it."""
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    """The model name the harness reports it evaluated."""
    tasks: dict[TaskName, Tally]


class BfclPlan(_Model):
    """The shards a BFCL run was split into, by the digest of each shard report's bytes."""

    shards: tuple[Digest, ...]


# --- an upstream's own records: its checkout's state and its harness's environment -------------

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
"""An environment variable's name, as a pin set, ``audit run --env`` and the record take it."""
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
MAX_ENV_VALUE = 4096
"""The longest environment variable value a pin set, ``audit run --env`` or a record holds."""
EnvValue = Annotated[str, StringConstraints(max_length=MAX_ENV_VALUE, pattern=r"^[^\x00]*$")]
_GitText = Annotated[str, StringConstraints(max_length=1 << 20)]
"""What git printed (``git status --porcelain``, ``git submodule status``): up to 1 MiB."""
_Place = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
_Distribution = Annotated[str, StringConstraints(min_length=1, max_length=512)]
"""An installed distribution as ``name==version``."""


class CheckoutState(_Model):
    """``upstreams/<upstream>/checkout.json``: how the runner found the checkout (its commit,
    tree, ``git status --porcelain``, submodules, the remote git names and where it was cloned
    from). Read strictly: a member it does not know, or one of another type, is not a
    checkout record."""

    commit: GitCommit
    tree: GitCommit
    porcelain: _GitText
    submodules: _GitText
    remote_url: Annotated[str, StringConstraints(max_length=4096)]
    source: _Place
    repository: _Place


class HarnessEnvironment(_Model):
    """``upstreams/<upstream>/environment.json``: the harness's interpreter as it answered
    (its executable, version and every installed distribution, ``name==version``) and the
    environment variables the harness was given, secrets redacted. ``upstream`` names the
    harness it is of: a record of another harness at this one's place is not this one's."""

    schema_version: SchemaVersion
    upstream: Identifier
    executable: _Place
    python_version: Text
    distributions: Annotated[tuple[_Distribution, ...], Field(max_length=100_000)]
    variables: dict[EnvName, EnvValue]
    installed: Annotated[dict[_Distribution, Digest], Field(max_length=100_000)] | None = None
    """Each distribution's files digest, ``name==version`` -> ``sha256:...``: the SHA-256 of
    its RECORD's rows (path, hash, size) inside its install directory, sorted, less the bytecode
    and files an installer writes for one install, and of a distribution the pin set pins each
    file read back (ADR 0042): what was installed, file for file,
    where the name and version alone say what was asked for, the same wherever it was
    installed. Every name is among ``distributions``. Records written before it was recorded
    have none; those written before 2026-12-05 hold the SHA-256 of the RECORD file itself."""

    @model_validator(mode="after")
    def _one_meaning(self) -> HarnessEnvironment:
        if twice := repeated_distribution(self.distributions):  # which did it run with?
            raise ValueError(f"distribution {canonical_name(twice[1].partition('==')[0])!r} "
                             "listed twice")  # fmt: skip
        unknown = sorted(set(self.installed or ()) - set(self.distributions))
        if unknown:
            raise ValueError(f"installed names {unknown[0]!r}, not among the distributions")
        return self


def canonical_name(name: str) -> str:
    """A distribution's name normalized as PEP 503 does (case, ``-``, ``_``, ``.``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def repeated_distribution(pins: Iterable[str]) -> tuple[str, str] | None:
    """The first two of ``pins`` (``name==version``) that name one distribution (by its PEP 503
    name, whatever the versions), or None."""
    seen: dict[str, str] = {}
    for pin in pins:
        name = canonical_name(pin.partition("==")[0])
        if name in seen:
            return seen[name], pin
        seen[name] = pin
    return None


def canonical_distribution(pin: str) -> str:
    """``name==version`` with the name normalized as PEP 503 does (:func:`canonical_name`)."""
    name, _, version = pin.partition("==")
    return f"{canonical_name(name)}=={version}"
