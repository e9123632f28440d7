"""A small harness that writes what bfcl-eval 2026.3.23 writes, for `audit run`'s tests.

It asks the model (through the endpoint it is given, the sandbox's only network path) each test
entry of the subsets ``--test-category`` names (comma-separated, as bfcl-eval takes them; its
small data in ``bfcl_eval/data/``, as bfcl-eval keeps its own, holds simple_python, irrelevance
and live_simple: the default) its question with a function offered as a tool, and writes
bfcl-eval's
files under OUT: ``result/<model>/<group>/BFCL_v4_<subset>_result.json`` (one answer a line),
``score/<model>/<group>/BFCL_v4_<subset>_score.json`` (the header, then one line per failed
entry) and ``score/data_overall.csv`` (BFCL V4's overall, a subset not run counting zero). An
entry of a non-irrelevance subset passes when the reply calls a tool, an irrelevance entry when
it calls none, as bfcl-eval's checkers do at their coarsest. ``--broken`` writes a score header
whose correct_count exceeds its total_count. Standard library only.

Usage: python bfcl_ref.py --endpoint URL --model ID --out DIR [--test-category A,B] [--broken]
"""

import argparse
import json
import os
import urllib.request

GROUP = {"simple_python": "non_live", "irrelevance": "non_live", "live_simple": "live"}
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bfcl_eval", "data")
TOOL = {
    "type": "function",
    "function": {
        "name": "calculate_triangle_area",
        "parameters": {"type": "object", "properties": {"base": {"type": "integer"}}},
    },
}
HEADER = (
    "Rank,Overall Acc,Model,Model Link,Total Cost ($),Latency Mean (s),Latency Standard "
    "Deviation (s),Latency 95th Percentile (s),Non-Live AST Acc,Non-Live Simple AST,Non-Live "
    "Multiple AST,Non-Live Parallel AST,Non-Live Parallel Multiple AST,Live Acc,Live Simple AST,"
    "Live Multiple AST,Live Parallel AST,Live Parallel Multiple AST,Multi Turn Acc,Multi Turn "
    "Base,Multi Turn Miss Func,Multi Turn Miss Param,Multi Turn Long Context,Web Search Acc,Web "
    "Search Base,Web Search No Snippet,Memory Acc,Memory KV,Memory Vector,Memory Recursive "
    "Summarization,Relevance Detection,Irrelevance Detection,Format Sensitivity Max Delta,Format "
    "Sensitivity Standard Deviation,Organization,License"
)


def entries(subset):
    """The subset's test entries (id, question), from this harness's data as bfcl-eval keeps
    its own (bfcl_eval/data/BFCL_v4_<subset>.json: one test entry a line)."""
    with open(os.path.join(DATA, f"BFCL_v4_{subset}.json"), encoding="utf-8") as f:
        tests = [json.loads(line) for line in f]
    return [(test["id"], test["question"][0][-1]["content"]) for test in tests]


def ask(endpoint, model, prompt):
    body = {
        "model": model,
        "temperature": 0,
        "tools": [TOOL],
        "messages": [{"role": "user", "content": prompt}],
    }
    request = urllib.request.Request(  # noqa: S310 - the sandbox's loopback endpoint only
        endpoint + "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:  # noqa: S310
        answer = json.loads(reply.read())
    return answer["choices"][0]["message"], answer["usage"]


def recorded(entry, message, usage):
    """The result line bfcl-eval's OpenAI handler writes: the reply's tool calls as
    [{name: arguments}] where it has a tool_calls list, else its content; the reply's tokens."""
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        result = [{c["function"]["name"]: c["function"]["arguments"]} for c in calls]
    else:
        result = message.get("content")
    return {
        "id": entry,
        "result": result,
        "input_token_count": usage["prompt_tokens"],
        "output_token_count": usage["completion_tokens"],
        "latency": 0.0,
    }


def write_lines(path, entries):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for entry in entries:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--test-category", default="simple_python,irrelevance,live_simple")
    parser.add_argument("--broken", action="store_true")
    args = parser.parse_args()
    directory = args.model.replace("/", "_")
    accuracy = dict.fromkeys(GROUP, 0.0)  # a subset not run counts zero
    for subset in args.test_category.split(","):
        group, asked = GROUP[subset], entries(subset)
        results, failures = [], []
        for entry, prompt in asked:
            message, usage = ask(args.endpoint, args.model, prompt)
            results.append(recorded(entry, message, usage))
            called = bool(message.get("tool_calls"))
            if called == (subset == "irrelevance"):
                failures.append(
                    {
                        "id": entry,
                        "model_name": args.model,
                        "test_category": subset,
                        "valid": False,
                        "error": ["no function call" if not called else "a function call"],
                    }
                )
        total = len(asked)
        correct = total - len(failures) + (total + 1 if args.broken else 0)
        header = {"accuracy": correct / total, "correct_count": correct, "total_count": total}
        root = os.path.join(args.out, "{}", directory, group)
        write_lines(os.path.join(root.format("result"), f"BFCL_v4_{subset}_result.json"), results)
        write_lines(
            os.path.join(root.format("score"), f"BFCL_v4_{subset}_score.json"), [header, *failures]
        )
        accuracy[subset] = correct / total
    # BFCL V4's overall: 10% non-live, 10% live, 10% irrelevance (live_irrelevance not run: 0)
    non_live = (accuracy["simple_python"] + 0 + 0) / 3 / 4
    live = accuracy["live_simple"] * 1 / (1 + 1053 + 16 + 24)
    irrelevance = accuracy["irrelevance"] / 2
    overall = 0.1 * non_live + 0.1 * live + 0.1 * irrelevance
    row = ["1", f"{overall * 100:.2f}%", args.model] + ["N/A"] * 33
    with open(os.path.join(args.out, "score", "data_overall.csv"), "w") as f:
        f.write(HEADER + "\n" + ",".join(row))


if __name__ == "__main__":
    main()
