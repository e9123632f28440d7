"""atheris harnesses for the two readers a hostile bundle meets first: the manifest and the archive.

Each ``check_*`` takes bytes and must either accept them or raise the project's own
:class:`~bundle_schema.errors.EvidenceAuditError` (a refusal); any other exception is a crash.

Fuzz with atheris (opt-in, ``make fuzz``)::

    tests/fuzz/fuzz_manifest NEW_DIR tests/fuzz/corpus/manifest -max_total_time=600
    tests/fuzz/fuzz_archive NEW_DIR tests/fuzz/corpus/archive -max_total_time=600

and keep what adds coverage with ``-merge=1 tests/fuzz/corpus/<name> NEW_DIR``.

The committed corpora are the seeds (``python -m tests.fuzz.harness seed``, from the project's
own writer) and what fuzzing found worth keeping; ``make test`` replays every one of them
through the harnesses and fuzzes each harness for a few thousand runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
_SCRATCH = Path(tempfile.gettempdir()) / f"evidence-audit-fuzz-{os.getpid()}.tar"


def check_manifest(data: bytes) -> None:
    """Parse bytes as a manifest: canonical JSON, version, schema, model."""
    # Imported here, not at the top: under atheris, only after instrumentation is set up.
    from bundle_schema.errors import EvidenceAuditError  # noqa: PLC0415
    from verify import parse_manifest  # noqa: PLC0415

    with contextlib.suppress(EvidenceAuditError):
        parse_manifest(data)


def check_archive(data: bytes) -> None:
    """Open bytes as a bundle tar: screen every member, then read and parse its manifest."""
    from bundle_schema.errors import EvidenceAuditError  # noqa: PLC0415
    from verify import open_source, parse_manifest  # noqa: PLC0415

    _SCRATCH.write_bytes(data)
    try:
        source = open_source(_SCRATCH)
        parse_manifest(source.manifest_bytes())
    except EvidenceAuditError:
        pass
    finally:
        _SCRATCH.unlink(missing_ok=True)


HARNESSES: dict[str, Callable[[bytes], None]] = {
    "manifest": check_manifest,
    "archive": check_archive,
}


def seed() -> None:
    """Write the seed inputs: a valid manifest and a valid tar, from the project's writer."""
    from audit._archive import pack  # noqa: PLC0415
    from tests.factories import write_small_bundle  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as scratch:
        bundle = Path(scratch) / "bundle"
        write_small_bundle(bundle)
        pack(bundle, Path(scratch) / "bundle.tar")
        (CORPUS / "manifest").mkdir(parents=True, exist_ok=True)
        (CORPUS / "archive").mkdir(parents=True, exist_ok=True)
        (CORPUS / "manifest" / "seed-small").write_bytes((bundle / "manifest.json").read_bytes())
        (CORPUS / "archive" / "seed-small").write_bytes((Path(scratch) / "bundle.tar").read_bytes())


def fuzz(name: str, argv: list[str]) -> None:
    """Run atheris on one harness (libFuzzer arguments in ``argv``)."""
    import atheris  # noqa: PLC0415 - an opt-in tool

    # Coverage of the project's own code: instrumenting every library too takes half a minute.
    with atheris.instrument_imports(include=["bundle_schema", "pins", "verify"]):
        import verify  # noqa: F401, PLC0415
    # The wrapper script is argv[0]: libFuzzer runs it again for -merge and -fork.
    atheris.Setup([str(Path(__file__).with_name(f"fuzz_{name}")), *argv], HARNESSES[name])
    atheris.Fuzz()


if __name__ == "__main__":
    if sys.argv[1:] == ["seed"]:
        seed()
    else:
        fuzz(sys.argv[1], sys.argv[2:])
