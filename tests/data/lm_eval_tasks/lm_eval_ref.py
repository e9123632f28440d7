"""A small stand-in that writes what lm-evaluation-harness 0.4.13 writes, for `audit run`'s tests.

It reads the task's own data set (``arithmetic.jsonl`` beside it, the one ``arithmetic.yaml``
names in ``dataset_kwargs.data_files``), asks the model each item's input as one chat message
through the endpoint it is given (the sandbox's only network path), takes the reply's last word
(the task's ``last-word`` regex filter) and scores it ``exact_match`` against the target (case
and punctuation ignored), and writes, as ``lm_eval run --output_path OUT --log_samples`` does,
``OUT/<model>/results_<date>.json`` (``results``, ``n-samples``, ``lm_eval_version``,
``model_name``, ...) and ``OUT/<model>/samples_arithmetic_local_<date>.jsonl`` (one document a
line). ``--broken`` reports an exact_match of 1.0 whatever the samples scored. Standard library
only: `make test` needs no lm-evaluation-harness.

Usage: python lm_eval_ref.py --endpoint URL --model ID --out DIR [--broken]
"""

import argparse
import json
import os
import re
import string
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TASK = "arithmetic_local"
DATE = "2026-01-01T00-00-00.000000"


def ask(endpoint, model, text):
    body = {"model": model, "temperature": 0, "max_tokens": 128,
            "messages": [{"role": "user", "content": text}]}  # fmt: skip
    request = urllib.request.Request(  # noqa: S310 - the sandbox's loopback endpoint only
        endpoint + "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:  # noqa: S310
        return json.loads(reply.read())["choices"][0]["message"].get("content") or ""


def normal(text):
    return text.lower().translate(str.maketrans("", "", string.punctuation))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--broken", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(HERE, "arithmetic.jsonl"), encoding="utf-8") as f:
        dataset = [json.loads(line) for line in f if line.strip()]
    samples = []
    for index, doc in enumerate(dataset):
        reply = ask(args.endpoint, args.model, doc["input"])
        words = re.findall(r"(\w+)", reply)
        filtered = words[-1] if words else ""
        samples.append({
            "doc_id": index, "doc": doc, "target": doc["target"], "resps": [[reply]],
            "filtered_resps": [filtered], "filter": "last-word", "metrics": ["exact_match"],
            "exact_match": 1.0 if normal(filtered) == normal(doc["target"]) else 0.0,
        })  # fmt: skip
    n = len(samples)
    hits = sum(s["exact_match"] for s in samples)
    results = {
        "results": {TASK: {"name": TASK, "alias": TASK, "sample_len": n,
                           "exact_match,last-word": 1.0 if args.broken else hits / n}},
        "group_subtasks": {},
        "versions": {TASK: 1},
        "n-shot": {TASK: 0},
        "n-samples": {TASK: {"original": n, "effective": n}},
        "lm_eval_version": "0.4.13",
        "model_source": "local-chat-completions",
        "model_name": args.model,
        "model_name_sanitized": args.model.replace("/", "__"),
    }  # fmt: skip
    directory = os.path.join(args.out, args.model.replace("/", "__"))
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"results_{DATE}.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(directory, f"samples_{TASK}_{DATE}.jsonl"), "w", encoding="utf-8") as f:
        for sample in samples:
            f.write(json.dumps(sample) + "\n")


if __name__ == "__main__":
    main()
