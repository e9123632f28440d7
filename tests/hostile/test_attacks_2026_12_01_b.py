"""Hostile tests of the second set of changes of 2026-12-01: every evidence record kind read
model first (``MODEL_FIRST``, ``validate_document``), the manifest's seal from the whole-document
canonical test (``loads_canonical_without``), and the sandbox that hands its listening socket to
the observer and traces the harness under ``strace --seccomp-bpf``.

The publisher controls every byte of a bundle; a harness is pinned upstream code, but may be
buggy or hostile. Each test asserts the safe behaviour. What they found when written:

- held: the model accepts no document of any model-first kind that the committed schema refuses
  under lax scalars, Unicode digits, odd timestamps, extra or missing members; the canonical
  fast path answers every odd byte form as the member-by-member check did, and the seal covers
  the same bytes; a harness cannot take the observer's port or find its listening socket; a
  connect() by the i386 ABI, under another process name, or from a child made with
  ``CLONE_UNTRACED`` (which escaped the ptrace-only strace) is recorded or fails closed;
- holes, fixed: a harness process that left the command's process group (``setsid``) outlived
  the limits and held the run until it chose to exit (``audit/sandbox.py`` now kills every
  process left in the namespace); a base64 body with a final newline, taken by the schema and
  the model alike and refused by every decoder of the verifier (a traceback in ``audit show
  --exchange``; the model refuses it now);
- holes left open, each a strict xfail that says why: connections made without connect()
  (``sendto`` with ``MSG_FASTOPEN``, UDP datagrams; closed on 2026-12-06, ADR 0047 point 15:
  a send that names an address is an entry). Closed later too: ``io_uring`` and a harness's
  own seccomp filter whose user notification outranks strace's (2026-12-06, ADR 0047:
  ``seccomp()`` is absent in the sandbox), and, for a runner that runs as root, a harness that
  enters the runner's network namespace (ADR 0045).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from audit.sandbox import SandboxLimits, SandboxResult
from audit.sandbox import run_sandboxed as _run_sandboxed
from bundle_schema import KINDS
from bundle_schema.canonical import digest_of, loads_canonical, loads_canonical_without
from bundle_schema.documents import MODEL_FIRST, validate_document
from bundle_schema.errors import DefectiveBundle, DocumentError
from bundle_schema.layout import SEAL_FIELD
from tests.host_processes import kill_marked, marked
from tests.verify.test_record_fast_paths import (
    _VALID_MANIFEST,
    _check_model_first,
    _check_without,
)
from verify._core import parse_manifest

# --- the model first: the model accepts nothing the committed schema refuses ------------------

_DIGEST = "sha256:" + "b" * 64
_STAMP = "2026-12-01T10:00:00.5Z"

VALID: dict[str, dict[str, Any]] = {
    "manifest": _VALID_MANIFEST,
    "transport-exchange": {
        "schema_version": 1, "id": 3, "component": "coding", "started": 1.5, "ended": 2,
        "method": "POST", "path": "/v1/chat/completions", "status": 200,
        "request_headers": {"content-type": "application/json"}, "response_headers": {},
        "request_body": {"encoding": "utf-8", "data": "{}"},
        "response_body": {"encoding": "base64", "data": "QUJD"},
        "chunks": [{"t": 0.25, "data": "data: {}"}], "error": None, "redirect": None,
        "response_model": "m",
    },
    "socket-ledger-entry": {
        "schema_version": 1, "seq": 0, "t": 0.5, "pid": 7, "process": "python3",
        "family": "AF_INET", "address": "127.0.0.1", "port": 18080, "outcome": "connected",
        "component": "coding",
    },
    "run-config": {
        "schema_version": 1, "track": "primary",
        "reasoning_policy": {"effective": "off", "serialization": {
            "path": "chat_template_kwargs.enable_thinking", "value": False}},
        "observer": {"status": "complete", "exchanges": 4, "reason": None},
        "ledger": {"entries": 2}, "cleanup": "removed",
    },
    "direct-probe": {
        "kind": "tool_call", "contract": "tool-v1", "ceiling_tokens": 64, "exchange": 1,
        "expected": {"name": "f", "arguments": {"x": [1, 2.5, None, True]}},
        "finish_reason": "tool_calls", "completion_tokens": 12, "got": "f",
    },
    "component-result": {
        "schema_version": 1, "component": "coding", "status": "COMPLETED",
        "started_at": "2026-12-01T09:00:00Z", "ended_at": _STAMP,
        "raw_outputs": ["components/coding/raw/out.json"],
        "metrics": {"score": 71.5, "tasks": 3, "missing": None}, "quarantine": None,
        "reason": None,
    },
    "quarantine-marker": {
        "schema_version": 1, "component": "coding", "upstream_reason": "flaky",
        "provisional_metrics": {"score": 1}, "source": "components/coding/raw/marker.json",
    },
    "spark-quality": {
        "generation": "v2", "code_domain_quality": 80.5, "tasks": 10, "passed": 8,
        "golden_gate": "PASS", "self_integrity": "PASS", "run_valid": True,
        "sampling_contamination": False,
        "tier2": {"status": "AVAILABLE", "decode_tokens_per_second": 40.5,
                  "prefill_tokens_per_second": 900, "ttft_seconds": 0.25},
    },
    "spark-repeat": {"repeats": 3, "repeat_reliability": 100, "agreement": [1, 0.5]},
    "hermes-task": {
        "task": "t1", "outcome": "PASS", "inactivity_limit_s": 120, "max_inactivity_s": 2.5,
        "wall_limit_s": 600, "wall_s": 30.5, "evaluator": "ev", "evaluator_isolated": True,
        "evidence": {"process": {"present": True, "trusted": True}},
        "cases": [{"case": "c1", "kind": "correctness", "passed": True,
                   "requirements": ["r1"]}],
        "completion_claim": True, "changed_paths": ["src/a.py"], "allowed_changes": ["src/*"],
        "protected_inputs": {"before": _DIGEST, "after": _DIGEST}, "cleanup": "removed",
        "trajectory": "present", "final_response": "done", "exchanges": [1, 2],
    },
    "benchlocal-packs": {"packs": {"p1": 50, "p2": 75.5}, "mean": 62.75},
    "infermark-streaming": {
        "concurrency": 1, "visible_chunks": 100, "wall_seconds": 2.5, "tokens_per_second": 40,
        "ttft_p50_seconds": 0.125, "itl_mean_seconds": None, "requests": 4, "errors": 0,
    },
    "bfcl-plan": {"shards": [_DIGEST]},
    "bfcl-shard": {
        "subset_totals": {"simple": {"hits": 3, "n": 4}}, "shard_id": "s0",
        "sample_ids": ["simple_0"], "exchanges": [5],
    },
    "task-tallies": {
        "harness": "lm-eval", "version": "0.4.2", "model": "m",
        "tasks": {"arith_local": {"hits": 1, "n": 2}},
    },
}  # fmt: skip
"""One document of every model-first kind that both the model and the committed schema take."""

_RUST_ONLY_DIGITS = [
    chr(start + i)
    for start, count in ((0x10D40, 10), (0x116D0, 20), (0x11BF0, 10), (0x11F50, 10),
                         (0x16130, 10), (0x16D70, 10), (0x1CCF0, 10), (0x1E4F0, 10),
                         (0x1E5F1, 10))
    for i in range(count)
]  # fmt: skip
"""The decimal digits of Unicode 15 and 16: pydantic's Rust regex has them in ``\\d``, Python
3.11's ``re`` (and so the committed schema's jsonschema) does not."""

ATTACKS: list[Any] = [
    # lax scalars: a bool, a float or a string for an integer, and the other way round
    True, False, 0, 1, 1.0, -0.0, 0.5, -1, 2**53 - 1, 2**53, 2**64, 1e308, "1", "1.5", "true",
    "null", None, [], {}, [1], {"a": 1}, ["a"],
    # strings next to valid ones: a final newline, Unicode look-alikes, controls, surrogates
    "", "a\n", "\n", "a\r", "a\u2028", "a\x00", "A", "é", "\ufeff", "\ud800", "😀", "a" * 129,
    "a" * 4097, "-a", "a b", "../a", "a//b", "Coding", "coding\n",
    # odd timestamps and enum spellings
    "2026-12-01T10:00:00+00:00", "2026-12-01T10:00:00z", "2026-12-01t10:00:00Z",
    "20261201T100000Z", "2026-12-01T10:00:00.1234567890Z", _STAMP + "\n", " " + _STAMP,
    "2026-12-01T10:00:00\u0660Z", 1796160000, "qualified", "QUALIFIED ", "Completed", "completed",
    "PASS\n", "pass", "af_inet", "AF_INET6 ", "sha256:" + "B" * 64, _DIGEST + "\n",
]  # fmt: skip


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every member and item of a document, by its path from the root (the root excluded)."""
    children = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in children:
        yield (*path, key)
        if isinstance(child, dict | list):
            yield from _places(child, (*path, key))


def _bent(document: dict[str, Any], path: tuple[Any, ...], replacement: Any) -> dict[str, Any]:
    value = copy.deepcopy(document)
    node = value
    for key in path[:-1]:
        node = node[key]
    if replacement is _REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = replacement
    return value


_REMOVE = object()


def test_every_model_first_kind_is_attacked() -> None:
    assert set(VALID) == MODEL_FIRST
    for name, document in VALID.items():
        _check_model_first(name, document)
        assert KINDS[name].model.model_validate(document) is not None, name


@pytest.mark.parametrize("kind", sorted(VALID))
def test_no_value_at_any_place_is_taken_by_the_model_alone(kind: str) -> None:
    """Every member and item of a valid document replaced by each attack value, or removed; and
    an unknown member added to every object: the model accepts nothing the schema refuses, and
    ``validate_document`` answers as the schema-then-model path did."""
    document = VALID[kind]
    for path in _places(document):
        for replacement in [*ATTACKS, _REMOVE]:
            _check_model_first(kind, _bent(document, path, replacement))
    objects = [(), *(p for p in _places(document) if isinstance(_at(document, p), dict))]
    for path in objects:
        for extra in ("extra", "Content_digest", "schema_version", "content_digest"):
            value = copy.deepcopy(document)
            node = _at(value, path)
            if extra not in node:
                node[extra] = "x"
                _check_model_first(kind, value)


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def test_no_digit_only_the_rust_regex_knows_passes_in_any_timestamp() -> None:
    """pydantic's Rust regex reads ``\\d`` as the digits of Unicode 16, Python 3.11's as those of
    Unicode 14 (the committed schema's): each of the 100 digits between them, at every digit of
    every timestamp of a manifest and a component result, is refused by the model too."""
    rust_only = [c for c in _RUST_ONLY_DIGITS if not re.fullmatch(r"\d", c)]
    assert len(rust_only) == 100, "another Python: its re knows other digits"
    stamp = "2026-12-01T10:00:00.5Z"
    digits = [i for i, c in enumerate(stamp) if c.isdigit()]
    for kind, path in (
        ("manifest", ("created_at",)),
        ("component-result", ("started_at",)),
        ("component-result", ("ended_at",)),
    ):
        for digit in rust_only:
            for i in digits:
                _check_model_first(
                    kind, _bent(VALID[kind], path, stamp[:i] + digit + stamp[i + 1 :])
                )


def test_a_str_subclass_is_no_other_string_to_the_model() -> None:
    """A library caller's str subclass (no JSON parser makes one) reads as its text."""

    class Sly(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    _check_model_first("socket-ledger-entry", _bent(VALID["socket-ledger-entry"], ("family",),
                                                    Sly("AF_PACKET")))  # fmt: skip


@pytest.mark.parametrize("data", ["QUJD\n", "QUI=\n", "\n"])
def test_a_base64_body_with_a_final_newline_is_no_base64(data: str) -> None:
    """The base64 pattern's ``$`` also matches before a final newline (in Python's ``re``, as in
    the committed schema), and the model's own check used it so: a body the verifier's decoders
    (``b64decode(validate=True)``) refuse was taken, and ``audit show --exchange`` of it ended in
    a traceback. The model refuses it now, with the message of a body that is no base64."""
    exchange = _bent(VALID["transport-exchange"], ("response_body", "data"), data)
    _check_model_first("transport-exchange", exchange)
    with pytest.raises(DocumentError, match="a base64 body whose data is not base64"):
        validate_document(KINDS["transport-exchange"], exchange, "log")


# --- the manifest's seal from its bytes -----------------------------------------------------


def _sealed(manifest: dict[str, Any]) -> bytes:
    """The manifest's canonical bytes with its seal computed by the ``rfc8785`` package."""
    rest = {k: v for k, v in manifest.items() if k != SEAL_FIELD}
    return rfc8785.dumps({**rest, SEAL_FIELD: digest_of(rfc8785.dumps(rest))})


@pytest.mark.parametrize(
    "reasons",
    [["plain"], ["😀 beyond the BMP"], ["\u2028 and \x7f and \x1f"], ["é", "\ue000", '\\"/']],
    ids=["ascii", "non-bmp", "separators", "escapes"],
)
@pytest.mark.parametrize("score", [50.5, 1e-07, 100, 0, 12.000001, 99.99999999999999])
def test_the_seal_covers_exactly_the_other_members(reasons: list[str], score: float) -> None:
    """On both paths (the whole-document test takes ASCII text and plain floats, the rest goes
    member by member) the sealed bytes are the rfc8785 package's of the manifest less its seal,
    and one changed byte of any other member breaks the seal."""
    manifest = copy.deepcopy(_VALID_MANIFEST)
    manifest["claims"]["reasons"] = reasons
    manifest["claims"]["aggregate_score"] = score
    data = _sealed(manifest)
    parsed = parse_manifest(data)
    assert parsed.sealed_digest == parsed.model.content_digest
    forged = copy.deepcopy(json.loads(data))
    forged["claims"]["rankable"] = True
    assert parse_manifest(rfc8785.dumps(forged)).sealed_digest != parsed.model.content_digest


def _manifest_text(**replace: str) -> bytes:
    text = _sealed(copy.deepcopy(_VALID_MANIFEST)).decode()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text.encode()


@pytest.mark.parametrize(
    "data",
    [
        _manifest_text(**{'"content_digest"': '"content\\u005fdigest"'}),
        _manifest_text(**{'"content_digest":': '"content_digest":"sha256:' + "0" * 64 + '",'
                          '"content_digest":'}),
        _manifest_text(**{'"claims":{': '"claims":{"content_digest":"sha256:' + "0" * 64 + '",'}),
        _manifest_text(**{'"run_id":"run-1"': '"run_id":"run\\u002d1"'}),
        _manifest_text(**{'"executed_weight":40': '"executed_weight":40.0'}),
        _manifest_text(**{'"executed_weight":40': '"executed_weight":4e1'}),
        _manifest_text(**{'"executed_weight":40': '"executed_weight":-0'}),
        _manifest_text(**{'"schema_version":1': '"schema_version":1.0'}),
        _manifest_text(**{'{"claims"': '{ "claims"'}),
        _manifest_text(**{'"aggregate_score":50.5': '"aggregate_score":5.05e1'}),
        _manifest_text(**{'"aggregate_score":50.5': '"aggregate_score":1e400'}),
        b"\xef\xbb\xbf" + _manifest_text(),
        _manifest_text() + b"\n",
        _manifest_text() + b" ",
        _manifest_text() + b"{}",
        _manifest_text() + b"\x00",
        _manifest_text(**{'"reasons":["r"]': '"reasons":["\\ud800"]'}),
        _manifest_text(**{'"reasons":["r"]': '"reasons":["\\ud83d\\ude00"]'}),
        _manifest_text(**{'"reasons":["r"]': '"reasons":["\\u2028"]'}),
        _manifest_text(**{'"reasons":["r"]': '"reasons":["\\/"]'}),
        _manifest_text(**{'"reasons":["r"]': '"reasons":["\\u001F"]'}),
    ],
    ids=[
        "seal key spelled with an escape", "seal twice", "seal nested in the claims",
        "escape in a value", "integral float", "exponent", "negative zero", "version 1.0",
        "whitespace", "exponent float", "infinite float", "bom", "final newline", "final space",
        "trailing document", "trailing nul", "lone surrogate", "surrogate pair escape",
        "escaped line separator", "escaped solidus", "uppercase escape",
    ],
)  # fmt: skip
def test_a_manifest_that_means_two_things_or_is_not_canonical_is_refused(data: bytes) -> None:
    with pytest.raises(DefectiveBundle):
        parse_manifest(data)
    _check_without(data)


def test_keys_beyond_the_bmp_are_ordered_by_utf16_on_the_whole_document_path() -> None:
    """A direct probe's free ``expected`` object with a key beyond the BMP: canonical only in
    UTF-16 order (U+1F600 before U+FF61), which code point order reverses."""
    probe = copy.deepcopy(VALID["direct-probe"])
    probe["expected"] = {"\uff61": 1, "\U0001f600": 2}
    canonical = rfc8785.dumps(probe)
    assert canonical.index("\U0001f600".encode()) < canonical.index("\uff61".encode())
    assert loads_canonical(canonical, "probe") == probe
    by_code_point = json.dumps(probe, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(DocumentError):
        loads_canonical(by_code_point.encode(), "probe")
    for data in (canonical, by_code_point.encode()):
        _check_without(data)
    value, rest = loads_canonical_without(canonical, "probe", "exchange")
    assert rest == rfc8785.dumps({k: v for k, v in value.items() if k != "exchange"})


# --- the sandbox, from a harness's side ----------------------------------------------------------

PORT = 18097
LIMITS = SandboxLimits(inactivity_s=20, wall_s=60)
OUTSIDE = ("10.9.8.7", 80)
"""A non-local address, only ever tried from inside the sandbox's own network namespace (no
route: ENETUNREACH)."""

PROBE_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct sockaddr_in target(const char *ip, int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}
static int plain(const char *ip, int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = target(ip, port);
    int r = connect(s, (struct sockaddr *)&a, sizeof a);
    int e = r ? errno : 0;
    close(s);
    return e;
}
static int notify_fd = -1;
static void *answer(void *arg) {
    (void)arg;
    for (;;) {
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof req);
        if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR) continue;
            return NULL;
        }
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}
/* the harness's own filter: connect() is a user notification, which outranks strace's
   SECCOMP_RET_TRACE; its other thread lets every such call go on */
static int notified(const char *ip, int port) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    pthread_t thread;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -errno;
    notify_fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                        &prog);
    if (notify_fd < 0) return -errno;
    pthread_create(&thread, NULL, answer, NULL);
    return plain(ip, port);
}
static int untraced(const char *ip, int port) {
    int status;
    long pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        printf("untraced child: %d\n", plain(ip, port));
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    return 0;
}
static int fastopen(const char *ip, int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = target(ip, port);
    ssize_t r = sendto(s, "GET / HTTP/1.0\r\n\r\n", 18, MSG_FASTOPEN, (struct sockaddr *)&a,
                       sizeof a);
    int e = r < 0 ? errno : 0;
    close(s);
    return e;
}
static int datagram(const char *ip, int port) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = target(ip, port);
    ssize_t r = sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a);
    int e = r < 0 ? errno : 0;
    close(s);
    return e;
}
static int renamed(const char *ip, int port, const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
    return plain(ip, port);
}
/* the i386 ABI from a 64-bit process: connect (362) and socketcall (102, SYS_CONNECT 3) */
static int i386(const char *ip, int port, int multiplexed) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    unsigned *low = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
                         -1, 0);
    struct sockaddr_in *a = (struct sockaddr_in *)(low + 16);
    long r;
    if (low == MAP_FAILED) return -1;
    *a = target(ip, port);
    low[0] = s;
    low[1] = (unsigned)(unsigned long)a;
    low[2] = sizeof *a;
    if (multiplexed)
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(102L), "b"(3L), "c"((long)low) : "memory");
    else
        __asm__ volatile("int $0x80" : "=a"(r)
                         : "a"(362L), "b"((long)s), "c"((long)a), "d"((long)sizeof *a)
                         : "memory");
    return r < 0 ? (int)-r : 0;
}
static int uring(const char *ip, int port) {
    static struct sockaddr_in a;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = syscall(__NR_io_uring_setup, 4, &p);
    if (fd < 0) return -errno;
    char *sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
                    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe),
                                     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                                     IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) return -1000;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    a = target(ip, port);
    memset(&sqes[0], 0, sizeof sqes[0]);
    sqes[0].opcode = IORING_OP_CONNECT;
    sqes[0].fd = s;
    sqes[0].addr = (unsigned long)&a;
    sqes[0].off = sizeof a;
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned mask = *(unsigned *)(sq + p.sq_off.ring_mask);
    ((unsigned *)(sq + p.sq_off.array))[*tail & mask] = 0;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) return -errno;
    unsigned head = *(unsigned *)(cq + p.cq_off.head);
    unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
    int res = ((struct io_uring_cqe *)(cq + p.cq_off.cqes))[head & cmask].res;
    return res < 0 ? -res : 0;
}
int main(int argc, char **argv) {
    const char *mode = argv[1], *ip = argv[2];
    int port = atoi(argv[3]), e = -1;
    if (!strcmp(mode, "connect")) e = plain(ip, port);
    else if (!strcmp(mode, "notified")) e = notified(ip, port);
    else if (!strcmp(mode, "untraced")) e = untraced(ip, port);
    else if (!strcmp(mode, "fastopen")) e = fastopen(ip, port);
    else if (!strcmp(mode, "datagram")) e = datagram(ip, port);
    else if (!strcmp(mode, "renamed") && argc > 4) e = renamed(ip, port, argv[4]);
    else if (!strcmp(mode, "i386")) e = i386(ip, port, 0);
    else if (!strcmp(mode, "socketcall")) e = i386(ip, port, 1);
    else if (!strcmp(mode, "uring")) e = uring(ip, port);
    printf("%s: %d\n", mode, e);
    return 0;
}
"""
"""A harness that tries each way to a socket; it prints ``<mode>: <errno>`` (0: connected)."""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, sandbox: None) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler for the probe harness")
    root = tmp_path_factory.mktemp("probe")
    (root / "probe.c").write_text(PROBE_C)
    subprocess.run(
        [compiler, "-O1", "-o", str(root / "probe"), str(root / "probe.c"), "-lpthread"],
        check=True, capture_output=True,
    )  # fmt: skip
    return root / "probe"


def _sandboxed(command: list[str], tmp_path: Path, **kwargs: Any) -> SandboxResult:
    options: dict[str, Any] = {"serve": None, "port": PORT, "limits": LIMITS, **kwargs}
    return _run_sandboxed(command, cwd=tmp_path, component="coding", **options)


def _attempts(result: SandboxResult) -> set[tuple[str, str, int | None]]:
    return {(e.family, e.address, e.port) for e in result.ledger}


def _tried(probe: Path, tmp_path: Path, mode: str, *extra: str) -> tuple[str, SandboxResult]:
    result = _sandboxed([str(probe), mode, OUTSIDE[0], str(OUTSIDE[1]), *extra], tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode(), result


def test_a_plain_connect_outside_is_refused_and_recorded(probe: Path, tmp_path: Path) -> None:
    out, result = _tried(probe, tmp_path, "connect")
    assert out == "connect: 101\n"  # ENETUNREACH
    assert ("AF_INET", *OUTSIDE) in _attempts(result)


@pytest.mark.parametrize("mode", ["i386", "socketcall"])
def test_a_connect_by_the_i386_abi_is_recorded(probe: Path, tmp_path: Path, mode: str) -> None:
    """``int 0x80`` from a 64-bit process (connect, and connect inside socketcall): strace's
    seccomp filter traces every personality's connect, so the attempt is in the ledger."""
    out, result = _tried(probe, tmp_path, mode)
    if out == f"{mode}: 38\n":
        pytest.skip("no i386 system calls on this kernel")
    assert out == f"{mode}: 101\n"
    assert ("AF_INET", *OUTSIDE) in _attempts(result)


@pytest.mark.parametrize("name", ["a>b", "x\ny 1.0 conn", "<unfinished", "1.0 connect("])
def test_a_process_named_to_break_the_trace_lines_is_still_recorded(
    probe: Path, tmp_path: Path, name: str
) -> None:
    """The process name is in every trace line (``-Y``); strace escapes what would end it."""
    out, result = _tried(probe, tmp_path, "renamed", name)
    assert out == "renamed: 101\n"
    assert ("AF_INET", *OUTSIDE) in _attempts(result)


def test_a_child_made_untraceable_cannot_connect_at_all(probe: Path, tmp_path: Path) -> None:
    """``clone(CLONE_UNTRACED)``: strace is not attached to the child. Under the ptrace-only
    strace the child's connect() went through unrecorded; under ``--seccomp-bpf`` it inherits
    strace's filter, and a SECCOMP_RET_TRACE with no tracer fails the call with ENOSYS."""
    out, result = _tried(probe, tmp_path, "untraced")
    assert "untraced child: 38\n" in out  # ENOSYS: the call never ran
    assert ("AF_INET", *OUTSIDE) not in _attempts(result)


def test_a_harness_cannot_put_a_seccomp_listener_before_strace(probe: Path, tmp_path: Path) -> None:
    """A harness's own seccomp filter returning SECCOMP_RET_USER_NOTIF for connect() outranks
    strace's SECCOMP_RET_TRACE, and its listener let the call go on
    (SECCOMP_USER_NOTIF_FLAG_CONTINUE) unseen: a strict expected failure from 2026-12-01 to
    2026-12-06. Now ``seccomp()`` is absent in the sandbox, as on an old kernel (strace injects
    ENOSYS, ADR 0047): no listener, no connect()."""
    out, result = _tried(probe, tmp_path, "notified")
    assert out == "notified: -38\n"  # ENOSYS: no filter, no listener, and the probe stops
    assert ("AF_INET", *OUTSIDE) not in _attempts(result)


def test_an_io_uring_connect_cannot_be_made(probe: Path, tmp_path: Path) -> None:
    """An io_uring ``IORING_OP_CONNECT`` makes no connect() call (a strict expected failure
    until 2026-12-06); now ``io_uring_setup`` is absent in the sandbox (ENOSYS, ADR 0047)."""
    out, result = _tried(probe, tmp_path, "uring")
    assert out == "uring: -38\n"
    assert ("AF_INET", *OUTSIDE) not in _attempts(result)


@pytest.mark.parametrize("mode", ["fastopen", "datagram"])
def test_an_attempt_without_connect_is_recorded(probe: Path, tmp_path: Path, mode: str) -> None:
    """A TCP connection by ``sendto(MSG_FASTOPEN)`` and a UDP datagram make no ``connect()``
    call: a strict expected failure until 2026-12-06, when ``sendto`` and ``sendmsg`` that
    name an address became entries of the ledger too (ADR 0047 point 15)."""
    out, result = _tried(probe, tmp_path, mode)
    assert out == f"{mode}: 101\n"  # each reached the kernel's routing: no route out
    assert ("AF_INET", *OUTSIDE) in _attempts(result)


PORT_GRAB = f"""
import os, socket
out = []
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0")):
    for option in (socket.SO_REUSEADDR, socket.SO_REUSEPORT):
        s = socket.socket(family)
        s.setsockopt(socket.SOL_SOCKET, option, 1)
        try:
            s.bind((host, {PORT}))
            s.listen()
            out.append("bound")
        except OSError as exc:
            out.append(exc.errno)
        s.close()
listening = []
for fd in os.listdir("/proc/self/fd"):
    try:
        s = socket.socket(fileno=int(fd))
    except OSError:
        continue
    try:
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            listening.append(fd)
    finally:
        s.detach()
print(out, listening)
"""


def test_the_harness_can_neither_take_the_port_nor_find_the_listening_socket(
    sandbox: None, tmp_path: Path
) -> None:
    """The namespace's listening socket is the supervisor's once handed over: the command holds
    no descriptor of it or of the channel, and cannot bind the port (with SO_REUSEADDR or
    SO_REUSEPORT, on the address or the wildcard) to answer its own requests."""
    with _Holding() as serve:
        result = _sandboxed([sys.executable, "-c", PORT_GRAB], tmp_path, serve=serve)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == "[98, 98, 98, 98] []\n"  # EADDRINUSE each time


class _Holding:
    """A stand-in for the observer's ``serving``: it holds the listener, accepts nothing."""

    def __enter__(self) -> Any:
        return self._serve

    def __exit__(self, *exc: object) -> None:
        for listener in self.listeners:
            listener.close()

    def __init__(self) -> None:
        self.listeners: list[socket.socket] = []

    def _serve(self, listener: socket.socket) -> Any:
        self.listeners.append(listener)
        return _Nothing()


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


ESCAPE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()  # out of the command's process group, which the limits kill
    print("forked", flush=True)
    time.sleep(20)
    os._exit(0)
time.sleep(20)
"""


def test_a_process_that_leaves_the_group_is_killed_at_the_limit(
    sandbox: None, tmp_path: Path
) -> None:
    """A harness that forks a child into a session of its own: at the wall limit the group is
    killed, strace with it, and the child lived on holding the command's stdout, so the
    supervisor waited for it (as long as it liked; 20 s here) and it could go on talking to the
    observer while a later component ran. Every process left in the namespace is killed now."""
    mark = str(tmp_path / "escape")  # the child's argument too: how the host finds it
    started = time.monotonic()
    limits = SandboxLimits(inactivity_s=30, wall_s=2)
    try:
        result = _sandboxed([sys.executable, "-c", ESCAPE, mark], tmp_path, limits=limits)
        left = marked(mark)
    finally:
        kill_marked(mark)
    assert time.monotonic() - started < 15
    assert result.timeout == "wall"
    assert result.stdout == b"forked\n"
    assert left == []


def test_a_process_left_behind_after_a_clean_exit_is_killed(sandbox: None, tmp_path: Path) -> None:
    """The command exits as soon as its setsid child has started; the child does not, and
    nothing of the namespace outlives the run (it ends with the command now: the command's PID
    namespace ends with it, ADR 0047; before, strace waited for the child until the wall
    limit)."""
    flag = tmp_path / "started"
    child = "import sys, time; print('started', flush=True); open(sys.argv[1], 'w').close(); "
    child += "time.sleep(20)"
    command = ["sh", "-c", f'setsid {sys.executable} -c "{child}" "$0" & '
               'while [ ! -e "$0" ]; do sleep 0.05; done', str(flag)]  # fmt: skip
    started = time.monotonic()
    try:
        result = _sandboxed(command, tmp_path, limits=SandboxLimits(inactivity_s=30, wall_s=10))
        left = marked(str(flag))
    finally:
        kill_marked(str(flag))
    assert time.monotonic() - started < 15
    assert result.timeout is None
    assert result.stdout == b"started\n"
    assert left == []


NSENTER = """
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
entered = libc.setns(fd, 0x40000000)  # CLONE_NEWNET
s = socket.socket()
print(entered, s.connect_ex(("127.0.0.1", int(sys.argv[2]))))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a harness without root cannot enter the namespace")
def test_a_root_harness_cannot_reach_the_runner_s_loopback(sandbox: None, tmp_path: Path) -> None:
    """The test's own server on 127.0.0.1, in the namespace the runner runs in, and that
    namespace's file in the harness's reach (bind-mounted in its directory: the sandbox's /proc
    shows no process of the runner's). Closed 2026-12-06: the harness runs in a user namespace
    of its own (ADR 0045), with no capability over the runner's network namespace, so setns()
    is refused; until then a root runner's harness entered it and reached the port."""
    server = socket.create_server(("127.0.0.1", 0))
    reached: list[bool] = []

    def accept() -> None:
        server.settimeout(30)
        try:
            connection, _ = server.accept()
        except OSError:
            return
        reached.append(True)
        connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    netns = tmp_path / "runner-netns"
    netns.touch()
    subprocess.run(["mount", "--bind", "/proc/self/ns/net", str(netns)], check=True)
    try:
        with server:
            port = server.getsockname()[1]
            command = [sys.executable, "-c", NSENTER, str(netns), str(port)]
            result = _sandboxed(command, tmp_path)
            server.close()
    finally:
        subprocess.run(["umount", str(netns)], check=True)
    thread.join(5)
    assert result.returncode == 0, result.stderr.decode()
    assert not reached, result.stdout
