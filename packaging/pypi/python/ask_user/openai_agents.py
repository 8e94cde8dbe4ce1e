"""``ask_user_question`` for the OpenAI Agents SDK (``pip install openai-agents``).

The SDK's own human-in-the-loop is a yes/no approval of a tool call; this gives the agent a
question tool with a window: answered in it, the tool returns the answers; not, it returns
``pending`` and the run goes on; the person's late answer is queued in the session and becomes a
user message of the next run.

    from agents import Agent
    import ask_user
    from ask_user.openai_agents import ask_user_tool, run

    host = ask_user.Host.open("support-bot")
    agent = Agent(name="bot", instructions="...", tools=[ask_user_tool(host)])
    result = await run(host, agent, "Set up the database.")      # one run, one turn of the host
    ...                                                          # the person answers late
    result = await run(host, agent, result.to_input_list())      # the late answer is in this run

The tool's call id is the model's own (``ToolContext.tool_call_id``), so the session log and
``ask-user pending`` name the call as the model did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents import Agent, FunctionTool, Runner, RunResult
from agents.tool_context import ToolContext

from . import Host, LateReply

__all__ = ["ask_user_tool", "run", "with_late_replies"]


def ask_user_tool(host: Host) -> FunctionTool:
    """``ask_user_question`` as a function tool asking through ``host``. It runs inside a turn of
    the host: use ``run`` (or ``with host.turn():`` around ``Runner.run``)."""
    definition = host.tool_definition("raw")

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        outcome = await host.call_tool(context.tool_call_id, arguments)
        return outcome.text

    return FunctionTool(
        name=definition["name"],
        description=definition["description"],
        params_json_schema=definition["parameters"],
        on_invoke_tool=invoke,
        # The schema has optional members (header, options, timeout): not OpenAI's strict mode.
        strict_json_schema=False,
    )


def with_late_replies(input: str | Sequence[Any] | None, replies: Sequence[LateReply]) -> list[Any]:
    """A run's input with the late replies a turn claimed: after the history (a list), before a
    new message (a text)."""
    late = [reply.as_message() for reply in replies]
    if input is None:
        return late
    if isinstance(input, str):
        return [*late, {"role": "user", "content": input}]
    return [*input, *late]


async def run(host: Host, agent: Agent[Any], input: str | Sequence[Any] | None = None, **kwargs: Any) -> RunResult:
    """``Runner.run(agent, input, **kwargs)`` as one turn of ``host``: the late replies queued
    since the last run are claimed and added to the input (``with_late_replies``), and settle
    their questions."""
    with host.turn() as late:
        return await Runner.run(agent, with_late_replies(input, late), **kwargs)
