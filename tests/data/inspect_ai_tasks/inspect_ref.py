"""A small stand-in that writes what Inspect AI 0.3.285 writes, for `audit run`'s tests.

It reads the task's own data set (``arithmetic.jsonl`` beside it, the one ``arithmetic.py``
reads with ``json_dataset``), asks the model each sample's input through the endpoint it is
given (the sandbox's only network path), scores the reply as Inspect's ``match`` does at its
simplest (the reply, stripped of trailing punctuation and case-folded, ends with the target) and
writes one JSON log as ``inspect eval --log-format json --log-dir OUT/logs`` does: ``version``,
``status``, ``eval`` (task, model, packages, dataset), ``results`` (the accuracy), ``samples``
(each one's score, C or I) and ``reductions``. ``--broken`` reports an accuracy of 1.0 whatever
the samples scored. Standard library only: `make test` needs no Inspect AI.

Usage: python inspect_ref.py --endpoint URL --model ID --out DIR [--broken]
"""

import argparse
import json
import os
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def ask(endpoint, model, text):
    body = {"model": model, "temperature": 0, "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(  # noqa: S310 - the sandbox's loopback endpoint only
        endpoint + "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:  # noqa: S310
        return json.loads(reply.read())["choices"][0]["message"].get("content") or ""


def matches(reply, target):
    return reply.strip().rstrip(".!?").strip().lower().endswith(target.lower())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--broken", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(HERE, "arithmetic.jsonl"), encoding="utf-8") as f:
        dataset = [json.loads(line) for line in f if line.strip()]
    samples, reductions = [], []
    for item in dataset:
        reply = ask(args.endpoint, args.model, item["input"])
        value = "C" if matches(reply, item["target"]) else "I"
        samples.append({
            "id": item["id"], "epoch": 1, "input": item["input"], "target": item["target"],
            "output": {"completion": reply},
            "scores": {"match": {"value": value, "answer": reply}},
        })  # fmt: skip
        reductions.append({"value": 1.0 if value == "C" else 0.0, "sample_id": item["id"]})
    n = len(samples)
    hits = sum(s["scores"]["match"]["value"] == "C" for s in samples)
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "task": "arithmetic",
            "task_file": "arithmetic.py",
            "dataset": {"name": "arithmetic", "location": "arithmetic.jsonl", "samples": n,
                        "sample_ids": [item["id"] for item in dataset]},
            "model": f"openai-api/local/{args.model}",
            "config": {"epochs": 1},
            "packages": {"inspect_ai": "0.3.285"},
        },
        "results": {
            "total_samples": n,
            "completed_samples": n,
            "scores": [{
                "name": "match", "scorer": "match", "scored_samples": n, "unscored_samples": 0,
                "metrics": {"accuracy": {"name": "accuracy",
                                         "value": 1.0 if args.broken else hits / n}},
            }],
        },
        "samples": samples,
        "reductions": [{"scorer": "match", "samples": reductions}],
    }  # fmt: skip
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    name = os.path.join(args.out, "logs", "2026-01-01T00-00-00-00-00_arithmetic_ref.json")
    with open(name, "w", encoding="utf-8") as f:
        json.dump(log, f, indent=2)


if __name__ == "__main__":
    main()
