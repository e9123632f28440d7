"""A small OpenAI-compatible client (standard library only)."""

import json
import urllib.request


def chat(endpoint, model, prompt, ref=None, **extra):
    body = {"model": model, "temperature": 0, "max_tokens": 256,
            "messages": [{"role": "user", "content": prompt}], **extra}
    headers = {"Content-Type": "application/json"}
    if ref:
        headers["X-Evidence-Ref"] = ref  # lets the runner tie the request to its record
    request = urllib.request.Request(endpoint + "/v1/chat/completions", json.dumps(body).encode(),
                                     headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        reply = json.loads(response.read())
    return reply["choices"][0]["message"].get("content") or ""
