"""The LangGraph adapter, end to end against a scripted Chat Completions model."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import ask_user
from helpers import ASK, admitted_replies, db_question, tool_calls_of
from ask_user.langgraph import AskUserTool, ask_user_tool, pending_calls, resume
from scripted_model import scripted_model, text, tool_call, tool_calls, tool_result  # noqa: F401


def graph_for(host: ask_user.Host, base_url: str, runs: list[str]):
    tool = ask_user_tool(host)
    original = AskUserTool._ask

    async def counted(self: AskUserTool, call_id: str, arguments: dict) -> str:
        runs.append(call_id)  # every run of the tool, re-runs included
        return await original(self, call_id, arguments)

    AskUserTool._ask = counted  # type: ignore[method-assign]
    llm = ChatOpenAI(base_url=base_url, api_key="test", model="scripted", max_retries=0).bind_tools([host.tool_definition("chat")])

    async def agent(state: MessagesState) -> dict:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver()), (lambda: setattr(AskUserTool, "_ask", original))


async def test_the_window_passes_interrupts_and_the_late_answer_resumes_without_a_second_question(scripted_model, state_dir: Path) -> None:
    model = scripted_model([tool_call(ASK, db_question(1), "call_ask_1"), text("Postgres it is.")])
    host = ask_user.Host.open("langgraph", state_dir=state_dir)
    runs: list[str] = []
    app, restore = graph_for(host, model.base_url, runs)
    try:
        config = {"configurable": {"thread_id": "t1"}}
        with host.turn():
            state = await app.ainvoke({"messages": [("user", "Set up the database.")]}, config)
        [call] = pending_calls(state)
        assert call["callId"] == "call_ask_1" and call["questions"][0]["id"] == "db"
        assert json.loads(call["pending"])["pending"] is True
        assert len(model.requests) == 1  # interrupted: the model was not asked again

        host.answer_late("call_ask_1", {"db": "Postgres"}, by="chat")
        reply = await host.wait_late("call_ask_1", timeout=5)
        with host.turn(claim=False):
            final = await app.ainvoke(resume(host, state), config)
        assert final["messages"][-1].content == "Postgres it is."
        # The node ran again with the same call id, and asked nothing again.
        assert runs == ["call_ask_1", "call_ask_1"]
        assert len(tool_calls_of(host.log_path, "call_ask_1")) == 1
        # The model read the late answer as the tool's result, admitted once in the log.
        assert tool_result(model.requests[1], "call_ask_1") == reply.text
        assert json.loads(reply.text)["answers"] == [{"id": "db", "selected": ["Postgres"]}]
        assert len(admitted_replies(host.log_path, "call_ask_1")) == 1
        assert host.standing("call_ask_1") == "settled"
    finally:
        restore()


async def test_two_questions_of_one_step_one_answered_in_its_window(scripted_model) -> None:
    model = scripted_model([
        tool_calls((ASK, db_question(30), "call_a"), (ASK, db_question(1), "call_b")),
        text("Done."),
    ])
    host = ask_user.Host.in_memory()

    async def only_a(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict | None:
        return {"db": "SQLite"} if request.call_id == "call_a" else None

    host.add_answerer(only_a, name="chat")
    runs: list[str] = []
    app, restore = graph_for(host, model.base_url, runs)
    try:
        config = {"configurable": {"thread_id": "t2"}}
        with host.turn():
            state = await app.ainvoke({"messages": [("user", "Two things.")]}, config)
        assert [c["callId"] for c in pending_calls(state)] == ["call_b"]
        host.answer_late("call_b", {"db": "Postgres"})
        with host.turn(claim=False):
            await app.ainvoke(resume(host, state), config)
        # call_a re-ran with its answer, asking nothing; call_b took its late answer.
        assert tool_result(model.requests[1], "call_a") == '{"answers":[{"id":"db","selected":["SQLite"]}]}'
        assert json.loads(tool_result(model.requests[1], "call_b"))["answers"] == [{"id": "db", "selected": ["Postgres"]}]
        assert sorted(runs) == ["call_a", "call_a", "call_b", "call_b"]
        assert host.standing("call_a") == host.standing("call_b") == "settled"
    finally:
        restore()


async def test_a_sibling_call_that_ended_in_an_error_is_not_asked_again_on_resume(scripted_model) -> None:
    model = scripted_model([
        tool_calls((ASK, {"questions": "not a list"}, "call_bad"), (ASK, db_question(1), "call_b")),
        text("Done."),
    ])
    host = ask_user.Host.in_memory()
    runs: list[str] = []
    app, restore = graph_for(host, model.base_url, runs)
    try:
        config = {"configurable": {"thread_id": "t3"}}
        with host.turn():
            state = await app.ainvoke({"messages": [("user", "Two things.")]}, config)
        host.answer_late("call_b", {"db": "Postgres"})
        with host.turn(claim=False):
            await app.ainvoke(resume(host, state), config)
        bad = tool_result(model.requests[1], "call_bad")
        assert bad.startswith("Error: "), bad
        assert json.loads(tool_result(model.requests[1], "call_b"))["answers"] == [{"id": "db", "selected": ["Postgres"]}]
    finally:
        restore()
