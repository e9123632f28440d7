"""Reference BenchLocal: behavioral and targeted tool/instruction packs.

usage: python -m benchlocal.run --endpoint URL --model ID --out DIR   (writes DIR/packs.json)
BENCHLOCAL_PHONE_HOME=HOST:PORT makes it also try an outside address first (for the isolation
scenario: inside the sandbox the attempt fails at once and is recorded).
"""

import argparse
import json
import os
import socket
from pathlib import Path

from benchlocal.client import chat

PROMPTS = 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    home = os.environ.get("BENCHLOCAL_PHONE_HOME")
    if home:
        host, port = home.rsplit(":", 1)
        with socket.socket() as probe:
            probe.settimeout(2)
            print("phone home:", probe.connect_ex((host, int(port))), flush=True)
    packs = json.loads((Path(__file__).parent.parent / "packs" / "packs.json").read_text())["packs"]
    scores = {}
    for pack in packs:
        ok = 0
        for i in range(PROMPTS):
            reply = chat(args.endpoint, args.model, f"{pack}: answer briefly, item {i}.")
            ok += 0 < len(reply.split()) <= 24
        scores[pack] = 100 * ok / PROMPTS
    result = {"packs": scores, "mean": sum(scores.values()) / len(scores)}
    Path(args.out, "packs.json").write_text(json.dumps(result, indent=2))
    print(f"benchlocal: mean {result['mean']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
