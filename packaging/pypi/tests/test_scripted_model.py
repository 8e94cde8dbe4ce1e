"""The scripted model server, proven against each framework with a trivial tool of its own.

Each test drives one framework's real model client against `ScriptedModel` on 127.0.0.1 and
checks the tool-call round trip: the tool runs with the scripted arguments and sees the scripted
tool call id, and the next request carries the tool's result under that id. These also pin the
framework behaviour the `ask_user` adapters rely on (tool call ids, LangGraph interrupt/resume,
Pydantic AI deferred calls).
"""

import json
import urllib.error
import urllib.request
from typing import Annotated, Any

import pytest
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.tool_context import ToolContext
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Interrupt, interrupt
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import (
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
)
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from scripted_model import (
    ScriptedModel,
    scripted_model,  # noqa: F401 - the fixture
    text,
    tool_call,
    tool_calls,
    tool_result,
    tool_results,
    user_messages,
)

# --- the server itself --------------------------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_server_scripts_models_and_exhaustion() -> None:
    model = ScriptedModel([text("hello")])
    with pytest.raises(AssertionError, match="script has only 1 step"):
        with model:
            with urllib.request.urlopen(model.base_url + "/models", timeout=10) as response:
                assert json.load(response)["data"][0]["id"] == "scripted"
            status, raw = _post(
                model.base_url + "/chat/completions",
                {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert status == 200
            reply = json.loads(raw)
            assert reply["choices"][0]["message"]["content"] == "hello"
            assert reply["choices"][0]["finish_reason"] == "stop"
            status, raw = _post(
                f"http://127.0.0.1:{model.port}/chat/completions",  # no /v1 works too
                {"model": "scripted", "messages": []},
            )
            assert status == 500
            assert b"script exhausted at request 2" in raw
    assert user_messages(model.requests[0]) == ["hi"]


@pytest.mark.asyncio
async def test_server_streams_tool_calls(scripted_model) -> None:  # noqa: F811

    model = scripted_model(
        [tool_calls(("f", {"x": 1}, "call_a"), ("g", {"y": "two"}, "call_b")), text("done")]
    )
    client = AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0)
    stream = await client.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "go"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    calls: dict[int, dict[str, str]] = {}
    finish = None
    usage = None
    async for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    assert finish == "tool_calls"
    assert usage is not None and usage.total_tokens == 2
    assert calls == {
        0: {"id": "call_a", "name": "f", "arguments": '{"x": 1}'},
        1: {"id": "call_b", "name": "g", "arguments": '{"y": "two"}'},
    }
    reply = await client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "again"}], stream=True
    )
    content = "".join([c.choices[0].delta.content or "" async for c in reply if c.choices])
    assert content == "done"
    await client.close()


# --- OpenAI Agents SDK --------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_openai_agents_function_tool(scripted_model, streamed: bool) -> None:  # noqa: F811

    set_tracing_disabled(True)
    seen: list[tuple[str, str, str, int, int]] = []

    @function_tool
    async def add(ctx: ToolContext[Any], a: int, b: int) -> str:
        """Add two integers."""
        seen.append((ctx.tool_call_id, ctx.tool_name, ctx.tool_arguments, a, b))
        return str(a + b)

    model = scripted_model(
        [tool_call("add", {"a": 2, "b": 3}, "call_add_1"), text("The sum is 5.")]
    )
    client = AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0)
    agent = OpenAIAgent(
        name="adder",
        instructions="Use the add tool.",
        tools=[add],
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )
    if streamed:
        run = Runner.run_streamed(agent, "What is 2 + 3?")
        async for _ in run.stream_events():
            pass
        final = run.final_output
    else:
        final = (await Runner.run(agent, "What is 2 + 3?")).final_output
    await client.close()

    assert final == "The sum is 5."
    assert seen == [("call_add_1", "add", '{"a": 2, "b": 3}', 2, 3)]
    first, second = model.requests
    assert bool(first.get("stream")) is streamed  # Runner.run does not stream
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    assert user_messages(first) == ["What is 2 + 3?"]
    assert tool_result(second, "call_add_1") == "5"


# --- LangGraph ----------------------------------------------------------------------------------


def _langgraph_app(model: ScriptedModel, tool: Any, *, streaming: bool = False) -> Any:

    llm = ChatOpenAI(
        base_url=model.base_url,
        api_key="test",
        model="scripted",
        max_retries=0,
        streaming=streaming,
    ).bind_tools([tool])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await llm.ainvoke(state["messages"])]}


    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent))
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def _check_langgraph_round(
    model: ScriptedModel, runs: list[tuple[str, str]], first: Any, final: Any
) -> None:

    # The run stops at the interrupt; the state's "__interrupt__" is a list of Interrupt.
    [pending] = first["__interrupt__"]
    assert isinstance(pending, Interrupt)
    assert pending.value == {"question": "Proceed?", "tool_call_id": "call_confirm_1"}
    assert isinstance(pending.id, str) and pending.id
    # The tool ran twice from its start (before the interrupt, then on resume) with one id,
    # and only the resumed run got past interrupt().
    assert runs == [
        ("start", "call_confirm_1"),
        ("start", "call_confirm_1"),
        ("resumed", "call_confirm_1"),
    ]
    # The resumed value is what the tool returned to the model, under the same id.
    assert len(model.requests) == 2
    assert tool_result(model.requests[1], "call_confirm_1") == "answer: yes"
    assert final["messages"][-1].content == "Confirmed."


def test_langgraph_interrupt_resume_sync(scripted_model) -> None:  # noqa: F811

    runs: list[tuple[str, str]] = []

    @tool
    def confirm(question: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Ask the user to confirm."""
        runs.append(("start", tool_call_id))
        answer = interrupt({"question": question, "tool_call_id": tool_call_id})
        runs.append(("resumed", tool_call_id))
        return f"answer: {answer}"

    model = scripted_model(
        [tool_call("confirm", {"question": "Proceed?"}, "call_confirm_1"), text("Confirmed.")]
    )
    app = _langgraph_app(model, confirm)
    config = {"configurable": {"thread_id": "sync"}}
    first = app.invoke({"messages": [("user", "Do it")]}, config)
    assert len(model.requests) == 1
    state = app.get_state(config)
    assert state.next == ("tools",)
    assert [i.value for i in state.interrupts] == [first["__interrupt__"][0].value]
    final = app.invoke(Command(resume="yes"), config)
    _check_langgraph_round(model, runs, first, final)
    assert "stream" not in model.requests[0] or not model.requests[0]["stream"]


@pytest.mark.asyncio
@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streaming"])
async def test_langgraph_interrupt_resume_async(scripted_model, streaming: bool) -> None:  # noqa: F811

    runs: list[tuple[str, str]] = []

    @tool
    async def confirm(question: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Ask the user to confirm."""
        runs.append(("start", tool_call_id))
        answer = interrupt({"question": question, "tool_call_id": tool_call_id})
        runs.append(("resumed", tool_call_id))
        return f"answer: {answer}"

    model = scripted_model(
        [tool_call("confirm", {"question": "Proceed?"}, "call_confirm_1"), text("Confirmed.")]
    )
    app = _langgraph_app(model, confirm, streaming=streaming)
    config = {"configurable": {"thread_id": "async"}}
    first = await app.ainvoke({"messages": [("user", "Do it")]}, config)
    pending = first["__interrupt__"][0]
    # Resuming by interrupt id (a dict) works as well as a bare value.
    final = await app.ainvoke(Command(resume={pending.id: "yes"}), config)
    _check_langgraph_round(model, runs, first, final)
    assert bool(model.requests[0].get("stream")) is streaming


# --- Pydantic AI --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_pydantic_ai_call_deferred(scripted_model) -> None:  # noqa: F811

    model = scripted_model(
        [tool_call("ask", {"question": "Color?"}, "call_ask_1"), text("You said: blue.")]
    )
    client = AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0)
    agent = PydanticAgent(
        OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=client)),
        output_type=[str, DeferredToolRequests],
    )
    seen: list[str | None] = []

    @agent.tool
    async def ask(ctx: RunContext[None], question: str) -> str:
        """Ask the user a question."""
        seen.append(ctx.tool_call_id)
        raise CallDeferred(metadata={"question": question}, kind="question")

    first = await agent.run("Ask me my favourite color.")
    assert seen == ["call_ask_1"]
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.calls
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.tool_call_id, call.args_as_dict()) == (
        "ask",
        "call_ask_1",
        {"question": "Color?"},
    )
    assert requests.approvals == []
    assert requests.metadata == {"call_ask_1": {"question": "Color?"}}
    assert requests.kind("call_ask_1") == "question"
    assert len(model.requests) == 1
    assert not model.requests[0].get("stream")

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(calls={"call_ask_1": "blue"}),
    )
    await client.close()
    assert second.output == "You said: blue."
    assert seen == ["call_ask_1"]  # the tool is not run again
    assert tool_result(model.requests[1], "call_ask_1") == "blue"
    assert list(tool_results(model.requests[1])) == ["call_ask_1"]


@pytest.mark.asyncio
async def test_pydantic_ai_provider_base_url(scripted_model) -> None:  # noqa: F811
    """The brief's form: OpenAIProvider(base_url=..., api_key=...) without a client of our own."""

    model = scripted_model([tool_call("double", {"n": 21}, "call_d"), text("42")])
    agent = PydanticAgent(
        OpenAIChatModel(
            "scripted", provider=OpenAIProvider(base_url=model.base_url, api_key="test")
        )
    )
    seen: list[tuple[str | None, int]] = []

    @agent.tool
    def double(ctx: RunContext[None], n: int) -> int:
        """Double n."""
        seen.append((ctx.tool_call_id, n))
        return 2 * n

    result = await agent.run("double 21")
    assert result.output == "42"
    assert seen == [("call_d", 21)]
    assert tool_result(model.requests[1], "call_d") == "42"
