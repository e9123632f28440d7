"""Model identity through the observer, against the reference endpoint."""

from __future__ import annotations

import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from audit.demo.reference_endpoint import MODEL_ID, serve
from audit.identity import resolve_identity, weights_digest
from audit.observer import observe
from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import InvalidInput
from tests.engines import Engine, serve_engine

DECLARED = "sha256:" + "12" * 32


def test_a_weights_file_is_its_sha256(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF" + bytes(range(256)) * 5000)
    expected = "sha256:" + hashlib.sha256(weights.read_bytes()).hexdigest()
    assert weights_digest(weights).digest == expected


def test_a_weights_directory_is_the_digest_of_its_file_digests(tmp_path: Path) -> None:
    (tmp_path / "w" / "sub").mkdir(parents=True)
    (tmp_path / "w" / "a.safetensors").write_bytes(b"a" * 10)
    (tmp_path / "w" / "sub" / "b.json").write_bytes(b"{}")
    files = {
        "a.safetensors": "sha256:" + hashlib.sha256(b"a" * 10).hexdigest(),
        "sub/b.json": "sha256:" + hashlib.sha256(b"{}").hexdigest(),
    }
    result = weights_digest(tmp_path / "w")
    assert result.files == files
    assert result.digest == digest_of(canonical_bytes(files))


def test_weights_with_a_symbolic_link_are_refused(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.bin").write_bytes(b"x")
    (tmp_path / "w" / "link").symlink_to("/etc/passwd")
    with pytest.raises(InvalidInput, match="link is a symbolic link"):
        weights_digest(tmp_path / "w")


def test_identity_is_resolved_and_its_answers_recorded(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"weights")
    with serve() as endpoint, observe(endpoint.url) as observer:
        identity = resolve_identity(
            observer.url, model=None, model_digest=None, weights=weights, endpoint=endpoint.url
        )
        paths = [(e.method, e.path, e.status) for e in observer.exchanges()]
    assert identity.runtime_model_id == MODEL_ID
    assert identity.digest == weights_digest(weights).digest
    assert (identity.digest_source, identity.engine, identity.engine_version) == (
        "weights",
        "llama.cpp",
        "reference-1",
    )
    assert paths == [
        ("GET", "/v1/models", 200),
        ("GET", "/props", 200),
        ("POST", "/api/show", 404),
        ("GET", "/version", 404),
    ]


@pytest.mark.parametrize(
    ("model", "digest", "message"),
    [
        ("qwen3:latest", None, "a model named only by a tag is not an identity"),
        (None, "sha256:abc", "not sha256:<64 lowercase hex>"),
        ("other-model", DECLARED, "does not serve 'other-model'"),
    ],
)
def test_identity_refusals(model: str | None, digest: str | None, message: str) -> None:
    with (
        serve() as endpoint,
        observe(endpoint.url) as observer,
        pytest.raises(InvalidInput, match=message),
    ):
        resolve_identity(
            observer.url, model=model, model_digest=digest, weights=None, endpoint=endpoint.url
        )


def test_a_declared_digest_must_match_the_weights(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"weights")
    with (
        serve() as endpoint,
        observe(endpoint.url) as observer,
        pytest.raises(InvalidInput, match="is not the digest of --weights"),
    ):
        resolve_identity(
            observer.url,
            model=MODEL_ID,
            model_digest=DECLARED,
            weights=weights,
            endpoint=endpoint.url,
        )


# --- real engines' shapes: the weights' path as the model id, no /props --------------------------

WEIGHTS_PATH = "/models/SmolLM2-135M-Instruct-Q4_1.gguf"


@pytest.mark.parametrize("given", [None, "SmolLM2-135M-Instruct-Q4_1.gguf", WEIGHTS_PATH])
def test_a_model_listed_by_its_path_is_recorded_by_its_file_name(given: str | None) -> None:
    llama_server = Engine(listed=WEIGHTS_PATH, props={"build_info": "b6500-abcdef",
                                                       "model_path": WEIGHTS_PATH})  # fmt: skip
    with serve_engine(llama_server) as server, observe(server.url) as observer:
        identity = resolve_identity(observer.url, model=given, model_digest="sha256:" + "12" * 32,
                                    weights=None, endpoint=server.url)  # fmt: skip
        exchanges = observer.exchanges()
    assert identity.runtime_model_id == "SmolLM2-135M-Instruct-Q4_1.gguf"
    assert (identity.engine, identity.engine_version) == ("llama.cpp", "b6500-abcdef")
    assert WEIGHTS_PATH in (exchanges[0].response_body.data if exchanges[0].response_body else "")


def test_an_engine_without_props_still_resolves() -> None:
    llama_cpp_python = Engine(listed=WEIGHTS_PATH, echoes=True)  # no /props, no /version
    with serve_engine(llama_cpp_python) as server, observe(server.url) as observer:
        identity = resolve_identity(observer.url, model=None, model_digest="sha256:" + "12" * 32,
                                    weights=None, endpoint=server.url)  # fmt: skip
        statuses = {e.path: e.status for e in observer.exchanges()}
    assert identity.runtime_model_id == "SmolLM2-135M-Instruct-Q4_1.gguf"
    assert identity.engine is None  # nothing names it: recorded as unknown, never guessed
    assert statuses["/props"] == 404


def test_a_model_the_endpoint_does_not_list_is_refused_even_by_file_name() -> None:
    with (
        serve_engine(Engine(listed=WEIGHTS_PATH)) as server,
        observe(server.url) as observer,
        pytest.raises(InvalidInput, match=r"does not serve 'other\.gguf'"),
    ):
        resolve_identity(observer.url, model="other.gguf", model_digest="sha256:" + "12" * 32,
                         weights=None, endpoint=server.url)  # fmt: skip


class _Locked(BaseHTTPRequestHandler):
    """A server that asks every request for a credential, as llama-server --api-key does."""

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        body = b'{"error":{"message":"Invalid API Key","type":"authentication_error"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


def test_an_endpoint_nothing_answers_on_is_named_so() -> None:
    """Not "serves 0 models": the practitioner's server is not running, or the port is wrong."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    with observe(endpoint) as observer, pytest.raises(InvalidInput) as refused:
        resolve_identity(
            observer.url, model=None, model_digest=DECLARED, weights=None, endpoint=endpoint
        )
    assert refused.value.message.startswith(f"{endpoint}: no answer (nothing listens there")


def test_an_endpoint_that_asks_for_a_credential_is_named_so() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Locked)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with observe(endpoint) as observer, pytest.raises(InvalidInput) as refused:
            resolve_identity(
                observer.url, model=None, model_digest=DECLARED, weights=None, endpoint=endpoint
            )
    finally:
        server.shutdown()
        server.server_close()
    assert refused.value.message.startswith(
        f"{endpoint}: GET /v1/models answered 401 Unauthorized: the server asks for a credential"
    )
