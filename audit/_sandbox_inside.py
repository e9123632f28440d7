"""The part of the sandbox that runs inside the fresh network namespace.

``python -m audit._sandbox_inside PORT SOCKET LEDGER -- COMMAND...``: bring loopback up, serve a
forwarder on ``127.0.0.1:PORT`` whose every connection is piped to the observer's Unix
``SOCKET`` (the namespace's only way to the model), then run ``COMMAND`` under
``strace -f -e trace=connect``, appending every connect() attempt of every process to ``LEDGER``
(after the header line the supervisor wrote),
and exit with the command's status. The forwarder's own connections are not traced.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

_BUFFER = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_BUFFER):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _forward(port: int, socket_path: str, ready: threading.Event) -> None:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    server = await asyncio.start_server(connection, "127.0.0.1", port)
    ready.set()
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    """Run the command inside the namespace; the exit status is the command's (126: setup)."""
    port, socket_path, ledger, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: python -m audit._sandbox_inside PORT SOCKET LEDGER -- CMD...\n")
        return 2
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    ready = threading.Event()
    thread = threading.Thread(
        target=asyncio.run, args=(_forward(int(port), socket_path, ready),), daemon=True
    )
    thread.start()
    if not ready.wait(10):
        sys.stderr.write("sandbox: the forwarder did not start\n")
        return 126
    # -A: after the header line the supervisor wrote (verify/socket_trace.py)
    traced = ["strace", "-f", "-qq", "-Y", "-ttt", "-e", "trace=connect", "-e", "signal=none",
              "-A", "-o", ledger, "--", *command]  # fmt: skip
    return subprocess.run(traced, check=False).returncode


if __name__ == "__main__":  # pragma: no cover - run as a module inside the namespace
    raise SystemExit(main(sys.argv[1:]))
