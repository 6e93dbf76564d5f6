#!/usr/bin/env python3
"""A small agent for `sgfs eval` over any OpenAI-compatible chat-completions endpoint (standard library only).

    sgfs eval 1-3 --agent 'python3 scripts/openai_agent.py' --out run

Reads the prompt on stdin, lets the model run shell commands in the repository (the working directory, a
read-only mount) through one `shell` tool, and writes {"answer", "usage", "tool_calls"} to $SGFS_ANSWER_FILE.
Configuration: OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY, SGFS_AGENT_MODEL
(default gpt-4o-mini), SGFS_AGENT_MAX_TURNS (default 20). Protocol: docs/eval.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

SYSTEM = (
    "You answer questions about a scientific data repository in your working directory, using the shell tool "
    "(ls, cat, head, find, grep, python3 with pandas if installed...). Be exact. When done, reply with only "
    'the JSON {"answer": ...}.'
)
SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a shell command in the repository directory; returns stdout and stderr (truncated).",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
OUTPUT_LIMIT = 8000


def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    body = {"model": os.environ.get("SGFS_AGENT_MODEL", "gpt-4o-mini"), "messages": messages, "tools": [SHELL_TOOL]}
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        reply: dict[str, Any] = json.load(response)
    return reply


def shell(command: str) -> str:
    try:
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return "error: the command timed out after 120 s"
    output = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else "")
    return output[:OUTPUT_LIMIT] + ("\n[truncated]" if len(output) > OUTPUT_LIMIT else "")


def main() -> int:
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(__doc__)
        return 0
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": sys.stdin.read()},
    ]
    usage = {"input_tokens": 0, "output_tokens": 0}
    tool_calls = 0
    text = ""
    for _ in range(int(os.environ.get("SGFS_AGENT_MAX_TURNS", "20"))):
        reply = chat(messages)
        usage["input_tokens"] += int(reply.get("usage", {}).get("prompt_tokens", 0))
        usage["output_tokens"] += int(reply.get("usage", {}).get("completion_tokens", 0))
        message = reply["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        text = message.get("content") or ""
        if not calls:
            break
        for call in calls:
            tool_calls += 1
            arguments = json.loads(call["function"].get("arguments") or "{}")
            result = shell(str(arguments.get("command", "")))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    answer: Any = text
    try:
        parsed = json.loads(text[text.index("{") : text.rindex("}") + 1])
        if isinstance(parsed, dict) and "answer" in parsed:
            answer = parsed["answer"]
    except ValueError:
        pass
    record = {"answer": answer, "usage": usage, "tool_calls": tool_calls}
    target = os.environ.get("SGFS_ANSWER_FILE")
    if target:
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
