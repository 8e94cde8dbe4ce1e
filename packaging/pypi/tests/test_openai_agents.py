"""The OpenAI Agents SDK adapter, end to end against a scripted Chat Completions model."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI

import ask_user
from helpers import ASK, admitted_replies, db_question, tool_calls_of
from ask_user.openai_agents import ask_user_tool, run
from scripted_model import scripted_model, text, tool_call, tool_result, user_messages  # noqa: F401

set_tracing_disabled(True)


def agent_for(host: ask_user.Host, base_url: str) -> Agent:
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    return Agent(
        name="setup",
        instructions="Ask the user when you must.",
        tools=[ask_user_tool(host)],
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )


async def test_a_question_answered_late_reaches_the_next_run(scripted_model, state_dir: Path) -> None:
    model = scripted_model([
        tool_call(ASK, db_question(1), "call_ask_1"),
        text("No answer yet; I set up everything else."),
        text("Postgres it is."),
    ])
    host = ask_user.Host.open("agents-sdk", state_dir=state_dir)
    agent = agent_for(host, model.base_url)
    first = await run(host, agent, "Set up the database.")
    assert first.final_output == "No answer yet; I set up everything else."
    # The model read the pending result, under its own call id.
    pending = json.loads(tool_result(model.requests[1], "call_ask_1"))
    assert pending["pending"] is True and pending["callId"] == "call_ask_1"
    assert host.standing("call_ask_1") == "continued"

    host.answer_late("call_ask_1", {"db": "Postgres"}, by="chat")  # the person, in a chat
    second = await run(host, agent, first.to_input_list())
    assert second.final_output == "Postgres it is."
    late = json.loads(user_messages(model.requests[2])[-1])
    assert late["kind"] == "answer_to_pending_question" and late["callId"] == "call_ask_1"
    assert late["answers"] == [{"id": "db", "selected": ["Postgres"]}]
    assert host.standing("call_ask_1") == "settled"
    assert len(tool_calls_of(host.log_path, "call_ask_1")) == 1
    assert len(admitted_replies(host.log_path, "call_ask_1")) == 1


async def test_a_question_answered_in_its_window_is_the_tools_result(scripted_model) -> None:
    model = scripted_model([tool_call(ASK, db_question(30), "call_ask_1"), text("SQLite, then.")])
    host = ask_user.Host.in_memory()

    async def chat(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        return {"db": "SQLite"}

    host.add_answerer(chat, name="chat")
    result = await run(host, agent_for(host, model.base_url), "Set up the database.")
    assert result.final_output == "SQLite, then."
    assert tool_result(model.requests[1], "call_ask_1") == '{"answers":[{"id":"db","selected":["SQLite"]}]}'
    assert host.standing("call_ask_1") == "settled"
