"""A LangGraph agent that asks through ask_user: it interrupts only when the question's window
passes, and resumes with the late answer, asking nothing twice.

Run against any OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL), with
`ask-user inbox` running to answer on its page (or a phone).
"""

import asyncio
import os

from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import ask_user
from ask_user.langgraph import ask_user_tool, pending_calls, resume


async def main() -> None:
    host = ask_user.Host.open("langgraph-example")
    link = host.link_inbox()
    llm = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4.1")).bind_tools([host.tool_definition("chat")])

    async def agent(state: MessagesState) -> dict:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([ask_user_tool(host)]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "example"}}

    with host.turn():
        state = await app.ainvoke({"messages": [("user", "Set up the project's database.")]}, config)
    for call in pending_calls(state):
        print("pending:", ask_user.visible(call["callId"]), "- answer it on the inbox page")
        await host.wait_late(call["callId"])
    if pending_calls(state):
        with host.turn(claim=False):  # the tool takes the late answer itself
            state = await app.ainvoke(resume(host, state), config)
    print("agent:", ask_user.visible(str(state["messages"][-1].content)))
    await link.close()


asyncio.run(main())
