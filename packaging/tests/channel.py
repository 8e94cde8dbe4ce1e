#!/usr/bin/env python3
"""One install channel, end to end, as a newcomer meets it: the official MCP Python SDK client
starts the server through the channel's runner line, lists the tools and asks a timed question;
nobody answers in the window, so it goes pending; a shell answers it with `ask-user answer`
(through the same channel), and the companion tool hands the answer to the model.

    python channel.py --name uvx --state-dir DIR -- uvx --offline --find-links D ask-user

Everything after `--` is the runner line of `ask-user` (the server gets `mcp --mode timed …`,
the shell `answer CALL_ID …`). Prints a transcript; exits 0 when every check held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

TOOL = "ask_user_question"
ANSWER_TOOL = "ask_user_question_answer"
WINDOW_SECS = 2
ARGUMENTS = {
    "questions": [
        {
            "id": "go",
            "question": "Ship the release?",
            "header": "Release",
            "options": [{"label": "yes"}, {"label": "no"}],
        }
    ]
}


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def say(name: str, line: str) -> None:
    print(f"[{name}] {line}", flush=True)


def text_of(result: CallToolResult) -> str:
    blocks = [b.text for b in result.content if isinstance(b, TextContent)]
    check(len(blocks) == len(result.content) and blocks, f"expected text blocks, got {result!r}")
    return "\n".join(blocks)


async def run(name: str, runner: list[str], state_dir: str) -> None:
    env = dict(os.environ)
    server = StdioServerParameters(
        command=runner[0],
        args=[*runner[1:], "mcp", "--mode", "timed", "--timeout", str(WINDOW_SECS), "--state-dir", state_dir],
        env=env,
    )
    say(name, "server: " + " ".join([server.command, *server.args]))
    started = time.monotonic()
    async with Client(server) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        say(name, f"tools/list after {time.monotonic() - started:.1f} s: {tools}")
        check(TOOL in tools and ANSWER_TOOL in tools, f"the timed server lists {tools}")

        asked = time.monotonic()
        result = await client.call_tool(TOOL, ARGUMENTS)
        pending = json.loads(text_of(result))
        say(name, f"{TOOL} after {time.monotonic() - asked:.1f} s: {json.dumps(pending)[:160]}")
        check(pending.get("pending") is True, f"the call did not go pending: {pending}")
        call_id: Any = pending.get("callId")
        check(isinstance(call_id, str) and call_id.startswith("call_"), f"no callId: {pending}")

        answer = [*runner, "answer", call_id, "--state-dir", state_dir, "--pick", "go=yes"]
        shell = subprocess.run(answer, capture_output=True, text=True, env=env, timeout=120)
        say(name, "shell: " + " ".join(answer))
        for line in (shell.stdout + shell.stderr).splitlines():
            say(name, f"  | {line}")
        check(shell.returncode == 0, f"ask-user answer exited {shell.returncode}")

        result = await client.call_tool(ANSWER_TOOL, {"callId": call_id})
        reply = text_of(result)
        say(name, f"{ANSWER_TOOL}: {reply[:200]}")
        check(not result.is_error and "yes" in reply and '"pending"' not in reply, f"no answer: {reply}")
    say(name, f"ok: asked, pending, answered from the shell, delivered ({time.monotonic() - started:.1f} s)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("runner", nargs="+")
    args = parser.parse_args()
    try:
        anyio.run(run, args.name, args.runner, args.state_dir)
    except CheckFailed as failure:
        say(args.name, f"FAILED: {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
