"""The Pydantic AI adapter, end to end against a scripted Chat Completions model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import ask_user
from helpers import ASK, admitted_replies, db_question, tool_calls_of
from ask_user.pydantic_ai import ask_user_tool, deferred_results
from scripted_model import scripted_model, text, tool_call, tool_result  # noqa: F401


def agent_for(host: ask_user.Host, base_url: str) -> Agent:
    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=base_url, api_key="test"))
    return Agent(model, tools=[ask_user_tool(host)], output_type=[str, DeferredToolRequests])


async def test_the_window_passes_the_call_is_deferred_and_the_late_answer_is_its_result(scripted_model, state_dir: Path) -> None:
    model = scripted_model([tool_call(ASK, db_question(1), "call_ask_1"), text("Postgres it is.")])
    host = ask_user.Host.open("pydantic", state_dir=state_dir)
    agent = agent_for(host, model.base_url)
    with host.turn():
        first = await agent.run("Set up the database.")
    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.calls
    assert call.tool_call_id == "call_ask_1"
    assert first.output.kind("call_ask_1") == "question"
    assert first.output.metadata["call_ask_1"]["questions"][0]["id"] == "db"

    host.answer_late("call_ask_1", {"db": "Postgres"}, by="chat")
    await host.wait_late("call_ask_1", timeout=5)
    with host.turn(claim=False):
        results = deferred_results(host, first.output)
        second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == "Postgres it is."
    late = json.loads(tool_result(model.requests[1], "call_ask_1"))
    assert late["kind"] == "answer_to_pending_question" and late["answers"] == [{"id": "db", "selected": ["Postgres"]}]
    assert len(tool_calls_of(host.log_path, "call_ask_1")) == 1
    assert len(admitted_replies(host.log_path, "call_ask_1")) == 1
    assert host.standing("call_ask_1") == "settled"


async def test_a_call_without_its_answer_yet_stays_deferred(scripted_model) -> None:
    model = scripted_model([tool_call(ASK, db_question(1), "call_ask_1")])
    host = ask_user.Host.in_memory()
    agent = agent_for(host, model.base_url)
    with host.turn():
        first = await agent.run("Set up the database.")
    with host.turn(claim=False):
        results = deferred_results(host, first.output)
    assert results.calls == {} and [c.tool_call_id for c in first.output.remaining(results).calls] == ["call_ask_1"]
    assert host.standing("call_ask_1") == "continued"


async def test_a_question_answered_in_its_window_is_the_tools_result(scripted_model) -> None:
    model = scripted_model([tool_call(ASK, db_question(30), "call_ask_1"), text("SQLite, then.")])
    host = ask_user.Host.in_memory()

    async def chat(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        return {"db": "SQLite"}

    host.add_answerer(chat, name="chat")
    with host.turn():
        result = await agent_for(host, model.base_url).run("Set up the database.")
    assert result.output == "SQLite, then."
    assert tool_result(model.requests[1], "call_ask_1") == '{"answers":[{"id":"db","selected":["SQLite"]}]}'


async def test_a_run_that_fails_after_taking_the_answer_gets_it_again(scripted_model) -> None:
    model = scripted_model([tool_call(ASK, db_question(1), "call_ask_1")])  # the 2nd request fails
    host = ask_user.Host.in_memory()
    agent = agent_for(host, model.base_url)
    with host.turn():
        first = await agent.run("Set up the database.")
    host.answer_late("call_ask_1", {"db": "Postgres"})
    with host.turn(claim=False):
        results = deferred_results(host, first.output)
        with pytest.raises(Exception):
            await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    model.errors.clear()  # that failure was the test's
    assert host.standing("call_ask_1") == "settled"
    with host.turn(claim=False):
        again = deferred_results(host, first.output)
    assert json.loads(again.calls["call_ask_1"]) == {"answers": [{"id": "db", "selected": ["Postgres"]}]}
