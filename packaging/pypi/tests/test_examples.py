"""The package README's agent and each adapter's example, run as a person would: against a
scripted OpenAI-compatible model, the question answered late on the inbox page."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ASK, InboxPage, db_question
from scripted_model import scripted_model, text, tool_call, tool_result, user_messages  # noqa: F401

PACKAGE = Path(__file__).resolve().parents[1]
# The model's last words, with an escape sequence that would retitle a terminal: printed escaped.
FINAL = "Postgres it is.\x1b]0;owned\x07"


def readme_agent(tmp_path: Path) -> Path:
    readme = (PACKAGE / "README.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", readme, re.S)
    path = tmp_path / "readme_agent.py"
    path.write_text(code)
    return path


# name: (the script, the model's script, where the model reads the late answer)
CASES = {
    "readme": (readme_agent, "user message", [text("I will wait for your answer."), text(FINAL)]),
    "agents_sdk": (lambda _: PACKAGE / "examples/agents_sdk.py", "user message", [text("I will wait for your answer."), text(FINAL)]),
    "langgraph_agent": (lambda _: PACKAGE / "examples/langgraph_agent.py", "tool result", [text(FINAL)]),
    "pydantic_agent": (lambda _: PACKAGE / "examples/pydantic_agent.py", "tool result", [text(FINAL)]),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_the_example_gets_its_late_answer_from_the_inbox_page(name: str, scripted_model, tmp_path: Path) -> None:
    script_of, read_as, rest = CASES[name]
    call_id = f"call_{name}_1"
    model = scripted_model([tool_call(ASK, db_question(1), call_id), *rest])
    xdg = tmp_path / "xdg"
    state_dir = xdg / "ask-user" / "mcp"  # the default state directory under this XDG_STATE_HOME
    state_dir.mkdir(parents=True, mode=0o700)
    page = InboxPage(state_dir)
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(xdg),
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "test",
        "OPENAI_MODEL": "scripted",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    agent = await asyncio.create_subprocess_exec(
        sys.executable, str(script_of(tmp_path)), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        session = await page.wait_card(call_id, "continued")  # the window passed: pending
        await asyncio.to_thread(page.answer, session, call_id, [{"id": "db", "selected": ["Postgres"]}])
        output, _ = await asyncio.wait_for(agent.communicate(), 60)
    finally:
        if agent.returncode is None:
            agent.kill()
            await agent.wait()
        page.close()
    said = output.decode()
    assert agent.returncode == 0, said
    assert "Postgres it is.\\u{1b}]0;owned\\u{7}" in said, said
    assert "\x1b" not in said and "\x07" not in said, said
    last = model.requests[-1]
    late = tool_result(last, call_id) if read_as == "tool result" else user_messages(last)[-1]
    reply = json.loads(late)
    assert reply["kind"] == "answer_to_pending_question" and reply["callId"] == call_id, late
    assert reply["answers"] == [{"id": "db", "selected": ["Postgres"]}]
    # The session's log says the question was settled by that answer, once.
    listed = subprocess.run([sys.executable, "-m", "ask_user", "pending", "--state-dir", str(state_dir)], capture_output=True, text=True, env=env)
    assert listed.returncode == 0, listed
    assert call_id not in listed.stdout, listed.stdout
