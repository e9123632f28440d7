"""Model identity: the runtime model id and an immutable digest, or a refusal.

The digest comes from ``--model-digest`` or from the weights themselves (``--weights``: a file,
or a directory of files, streamed through SHA-256). The endpoint is asked what it serves
(``/v1/models``) and, where it answers them, llama.cpp server's ``/props``, Ollama's
``/api/show`` and vLLM's ``/version``; these requests go through the observer, so the answers
are transport evidence. A model named only by a moving tag, with no digest, is refused.

The runtime model id is the model's name, not the path of its weights: llama.cpp servers list
that path as the id when no alias is given, and the id recorded is then its file name (the
path stays in the recorded model list; the verifier takes the two for one model).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundle_schema import canonical_bytes, digest_of
from bundle_schema.errors import InvalidInput
from bundle_schema.models import DIGEST_PATTERN, ModelIdentity
from verify.replies import runtime_name, same_model

__all__ = ["WeightsDigest", "resolve_identity", "weights_digest"]

_CHUNK = 1 << 20
_PROBES = (("GET", "/props", None), ("POST", "/api/show", "name"), ("GET", "/version", None))


@dataclass(frozen=True)
class WeightsDigest:
    """The digest of a weights file or directory, and the per-file digests behind it."""

    digest: str
    files: dict[str, str]


def _file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_CHUNK):
            sha.update(block)
    return "sha256:" + sha.hexdigest()


def weights_digest(path: Path) -> WeightsDigest:
    """Stream weights through SHA-256.

    A file's digest is the SHA-256 of its bytes. A directory's is the SHA-256 of the canonical
    JSON of ``{relative path: file digest}`` over every regular file in it (symbolic links are
    refused: they could point anywhere).

    Raises:
        InvalidInput: the path does not exist, holds no file, or holds a symbolic link.
    """
    if path.is_symlink():
        raise InvalidInput(f"--weights {path}: a symbolic link; give the file itself")
    if path.is_file():
        digest = _file_digest(path)
        return WeightsDigest(digest, {path.name: digest})
    if not path.is_dir():
        raise InvalidInput(f"--weights {path}: no such file or directory")
    files: dict[str, str] = {}
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if (Path(root) / d).is_symlink()]:
            child = Path(root) / name
            relative = child.relative_to(path).as_posix()
            if child.is_symlink():
                raise InvalidInput(f"--weights {path}: {relative} is a symbolic link")
            files[relative] = _file_digest(child)
    if not files:
        raise InvalidInput(f"--weights {path}: holds no file")
    return WeightsDigest(digest_of(canonical_bytes(files)), files)


def _send(base: str, method: str, path: str, body: dict[str, Any] | None) -> bytes:
    """One request to the endpoint through the observer (``base``): the answer's body.

    Raises:
        urllib.error.HTTPError: it answered another status than 2xx.
        OSError: no answer.
    """
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(  # noqa: S310 - the observer on loopback
        base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return bytes(response.read())


def _ask(base: str, method: str, path: str, body: dict[str, Any] | None) -> Any:
    """A probe's JSON answer, or None (another status, no answer, not JSON)."""
    try:
        return json.loads(_send(base, method, path, body))
    except urllib.error.HTTPError as exc:
        exc.close()
        return None
    except (OSError, ValueError):
        return None


def _listing(observer_url: str, endpoint: str) -> Any:
    """The endpoint's ``GET /v1/models``, asked through the observer.

    Raises:
        InvalidInput: no listing came, saying why as a practitioner can act on it: nothing
            answered (the observer's own 502), a credential asked for (401, 403), another
            status, or an answer that is not JSON.
    """
    asked = f"{endpoint}: GET /v1/models"
    try:
        data = _send(observer_url, "GET", "/v1/models", None)
    except urllib.error.HTTPError as exc:
        status, reason = exc.code, exc.reason
        exc.close()
        if status == 502:  # the observer's answer: the endpoint did not answer it
            raise InvalidInput(
                f"{endpoint}: no answer (nothing listens there, or it closed the connection): "
                "start the server, or correct --endpoint (http://127.0.0.1:PORT)"
            ) from None
        if status in (401, 403):
            raise InvalidInput(
                f"{asked} answered {status} {reason}: the server asks for a credential (an API "
                "key), which neither audit run nor the pinned harnesses send; serve the model "
                "without one on loopback"
            ) from None
        raise InvalidInput(f"{asked} answered {status} {reason}: no model listing") from None
    except OSError as exc:  # urllib.error.URLError among them
        raise InvalidInput(f"{asked}: no answer: {exc}") from None
    try:
        return json.loads(data)
    except ValueError:
        raise InvalidInput(f"{asked}: the answer is not JSON: {data[:80]!r}") from None


def resolve_identity(
    observer_url: str,
    *,
    model: str | None,
    model_digest: str | None,
    weights: Path | None,
    endpoint: str,
) -> ModelIdentity:
    """Resolve the runtime model and its digest, asking the endpoint through the observer.

    Raises:
        InvalidInput: no digest (a moving tag alone), a malformed digest, an endpoint that does
            not answer, asks for a credential or lists no models (:func:`_listing`), that does
            not list the model, or several served models and no ``--model``.
    """
    if model_digest is not None and not re.match(DIGEST_PATTERN, model_digest):
        raise InvalidInput(f"--model-digest {model_digest!r}: not sha256:<64 lowercase hex>")
    if model_digest is None and weights is None:
        shown = model or "the served model"
        raise InvalidInput(
            f"{shown}: a model named only by a tag is not an identity; give --model-digest or "
            "--weights"
        )
    listing = _listing(observer_url, endpoint)
    data = listing.get("data") if isinstance(listing, dict) else None
    served = [m.get("id") for m in data or () if isinstance(m, dict) and m.get("id")]
    if model is None:
        if len(served) != 1:
            raise InvalidInput(
                f"{endpoint}: serves {len(served)} models "
                f"({', '.join(map(str, served)) or 'none'}); name one with --model"
            )
        model = runtime_name(str(served[0]))  # the weights' file name, not their path
    elif not any(same_model(str(s), model) for s in served):
        raise InvalidInput(f"{endpoint}: does not serve {model!r} (it lists {served or 'nothing'})")
    else:
        model = runtime_name(model)
    answers = {path: _ask(observer_url, method, path, {key: model} if key else None)
               for method, path, key in _PROBES}  # fmt: skip
    props = answers["/props"]
    version = answers["/version"]
    engine, engine_version = None, None
    if isinstance(props, dict) and "build_info" in props:
        engine, engine_version = "llama.cpp", str(props["build_info"])[:128]
    elif isinstance(version, dict) and "version" in version:
        engine, engine_version = "vllm", str(version["version"])[:128]
    elif isinstance(answers["/api/show"], dict):
        engine = "ollama"
    if weights is not None:
        digest, source = weights_digest(weights).digest, "weights"
        if model_digest is not None and model_digest != digest:
            raise InvalidInput(
                f"--model-digest {model_digest} is not the digest of --weights ({digest})"
            )
    else:
        digest, source = str(model_digest), "declared"
    return ModelIdentity(
        runtime_model_id=model,
        digest=digest,
        digest_source=source,
        engine=_identifier(engine),
        engine_version=_identifier(engine_version),
        endpoint=endpoint,
    )


def _identifier(value: str | None) -> str | None:
    """An engine name or version as an Identifier (other characters become '-')."""
    if value is None:
        return None
    cleaned = re.sub(r"[^A-Za-z0-9._:+-]", "-", value).strip("-.")[:128]
    return cleaned if cleaned and cleaned[0].isalnum() else None
