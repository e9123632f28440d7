"""Reference BenchLocal: behavioral and targeted tool/instruction packs.

usage: python -m benchlocal.run --endpoint URL --model ID --out DIR   (writes DIR/packs.json)
"""

import argparse
import json
from pathlib import Path

from benchlocal.client import chat

PROMPTS = 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
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
