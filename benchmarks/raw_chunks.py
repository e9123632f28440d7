"""What reading a streamed exchange costs when its chunks keep their bytes (``raw``).

One transport-exchange line of about 16 MiB (the record-line cap) made of streamed chunks, read
the way the verifier reads a record (``parse_document``: the canonical check, then the model,
whose validator reads every chunk's bytes again when any has ``raw``), three ways:

- ``text``: chunks of ASCII text, no ``raw`` (what every stream recorded so far is);
- ``raw-half``: every chunk half a character (a two-byte character split across chunks), each
  with ``raw``: the most ``raw`` a line can hold;
- ``raw-long``: chunks of 7 or 8 characters, each ending in half a character, each with
  ``raw``: as many bytes in fewer, longer chunks.

Reported: seconds and seconds per MiB of line, the best of three reads each; seconds per chunk
tell whether the cost grows with the chunks alone (``stream_chunks`` is one pass).

Run: make bench   (or .venv/bin/python -m benchmarks.raw_chunks)
"""

from __future__ import annotations

import base64
import time

from bundle_schema import KINDS, canonical_bytes
from bundle_schema.documents import parse_document

LINE = 15 << 20
"""About the size of the line to read (under the 16 MiB record-line cap)."""


def _line(chunks: list[dict[str, object]]) -> bytes:
    return canonical_bytes({
        "schema_version": 1, "id": 0, "started": 0.0, "method": "POST",
        "path": "/v1/chat/completions", "chunks": chunks,
    })  # fmt: skip


def _fill(chunk: list[dict[str, object]]) -> bytes:
    """Repeat ``chunk`` (a list of chunk records) to about :data:`LINE` bytes."""
    each = len(_line(chunk * 2)) - len(_line(chunk))  # one repetition, without the record
    return _line(chunk * max(1, LINE // each))


def _best(line: bytes) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        parse_document(KINDS["transport-exchange"], line, "bench")
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    split = [{"t": 0.1, "data": "", "raw": "ww=="}, {"t": 0.1, "data": "\u00e9", "raw": "qQ=="}]
    text = [{"t": 0.1, "data": 'data: {"choices":[]}\n\n'}]
    fewer = base64.b64encode(("\u00e9" * 7).encode() + b"\xc3").decode()
    eight = [{"t": 0.1, "data": "\u00e9" * 7, "raw": fewer},
             {"t": 0.1, "data": "\u00e9" * 8, "raw": base64.b64encode(
                 b"\xa9" + ("\u00e9" * 7).encode() + b"\xc3").decode()},
             {"t": 0.1, "data": "\u00e9", "raw": "qQ=="}]  # fmt: skip
    cases = {"text": text, "raw-half": split, "raw-long": eight}
    print(f"{'case':10} {'MiB':>6} {'chunks':>9} {'s':>7} {'s/MiB':>7} {'us/chunk':>9}")
    for name, chunk in cases.items():
        line = _fill(chunk)
        count = line.count(b'"t":')
        seconds = _best(line)
        mib = len(line) / (1 << 20)
        per = seconds / count * 1e6
        print(f"{name:10} {mib:6.1f} {count:9d} {seconds:7.2f} {seconds / mib:7.3f} {per:9.1f}")


if __name__ == "__main__":
    main()
