"""A Pydantic AI agent that asks through ask_user: the call is deferred only when the question's
window passes, and the late answer is its deferred result.

Run against any OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL), with
`ask-user inbox` running to answer on its page (or a phone).
"""

import asyncio
import os

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel

import ask_user
from ask_user.pydantic_ai import ask_user_tool, deferred_results


async def main() -> None:
    host = ask_user.Host.open("pydantic-example")
    link = host.link_inbox()
    model = OpenAIChatModel(os.environ.get("OPENAI_MODEL", "gpt-4.1"))
    agent = Agent(model, tools=[ask_user_tool(host)], output_type=[str, DeferredToolRequests])
    with host.turn():
        result = await agent.run("Set up the project's database.")
    if isinstance(result.output, DeferredToolRequests):
        for call in result.output.calls:
            print("pending:", ask_user.visible(call.tool_call_id), "- answer it on the inbox page")
            await host.wait_late(call.tool_call_id)
        with host.turn(claim=False):  # the deferred results take the late answers
            results = deferred_results(host, result.output)
            result = await agent.run(message_history=result.all_messages(), deferred_tool_results=results)
    print("agent:", ask_user.visible(str(result.output)))
    await link.close()


asyncio.run(main())
