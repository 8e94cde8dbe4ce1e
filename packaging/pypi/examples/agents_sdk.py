"""An OpenAI Agents SDK agent that asks through ask_user, and takes a late answer in its next run.

Run against any OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL). With
`ask-user inbox` running, the question shows on the inbox page (and a phone): answer it there in
its window, or late, after the window passed and the agent went on.
"""

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI

import ask_user
from ask_user.openai_agents import ask_user_tool, run


async def main() -> None:
    set_tracing_disabled(True)
    host = ask_user.Host.open("agents-sdk-example")
    link = host.link_inbox()
    model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "gpt-4.1"), openai_client=AsyncOpenAI())
    agent = Agent(name="setup", instructions="Ask the user what you cannot decide.", tools=[ask_user_tool(host)], model=model)
    result = await run(host, agent, "Set up the project's database.")
    print("agent:", ask_user.visible(str(result.final_output)))
    for question in host.pending():
        print("pending:", ask_user.visible(question.call_id), "- answer it on the inbox page")
        await host.wait_late(question.call_id)
    if host.waiting():
        result = await run(host, agent, result.to_input_list())  # the late answer is in this run
        print("agent:", ask_user.visible(str(result.final_output)))
    await link.close()


asyncio.run(main())
