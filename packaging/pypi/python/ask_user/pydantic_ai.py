"""``ask_user_question`` for Pydantic AI (``pip install pydantic-ai-slim``).

Pydantic AI defers a tool call with ``CallDeferred`` and takes its result later as
``DeferredToolResults``. This tool waits its window in-process first and defers only when the
window passes unanswered; the person's late answer, queued in the session, is then the deferred
call's result, admitted once in the session log.

    from pydantic_ai import Agent, DeferredToolRequests
    import ask_user
    from ask_user.pydantic_ai import ask_user_tool, deferred_results

    host = ask_user.Host.open("pydantic-agent")
    agent = Agent(model, tools=[ask_user_tool(host)], output_type=[str, DeferredToolRequests])
    with host.turn():
        first = await agent.run("Set up the database.")
    if isinstance(first.output, DeferredToolRequests):          # the window passed
        for call in first.output.calls:
            await host.wait_late(call.tool_call_id)               # the person answers later
        with host.turn(claim=False):                             # the results take the replies
            results = deferred_results(host, first.output)
            second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import CallDeferred, DeferredToolRequests, DeferredToolResults, RunContext, Tool

from . import AskUserError, Host, _settled_text

__all__ = ["ask_user_tool", "deferred_results"]


def ask_user_tool(host: Host) -> Tool[Any]:
    """``ask_user_question`` asking through ``host``; the call is deferred (``kind="question"``,
    metadata ``{"callId", "questions", "pending"}``) when its window passes."""
    definition = host.tool_definition("raw")

    async def ask_user_question(ctx: RunContext[Any], **arguments: Any) -> str:
        call_id = ctx.tool_call_id
        if not call_id:
            raise AskUserError("BAD_USAGE", "ask_user_question needs the model's tool call id")
        if host.standing(call_id) == "settled":
            return _settled_text(host, call_id)
        outcome = await host.call_tool(call_id, arguments)
        if not outcome.pending:
            return outcome.text
        raise CallDeferred(metadata={"callId": call_id, "questions": host.questions(call_id), "pending": outcome.text}, kind="question")

    return Tool.from_schema(
        ask_user_question,
        name=definition["name"],
        description=definition["description"],
        json_schema=definition["parameters"],
        takes_ctx=True,
    )


def deferred_results(host: Host, requests: DeferredToolRequests) -> DeferredToolResults:
    """The late replies to the deferred ``ask_user_question`` calls of ``requests``, taken into
    the current step (inside ``host.turn(claim=False)``), as the calls' results (a call settled
    before, by a run that failed after taking its reply, gets its answers). A call without a
    reply yet is left out (``requests.remaining(results)`` lists it): the next run defers it
    again."""
    calls: dict[str, Any] = {}
    for call in requests.calls:
        if call.tool_name != "ask_user_question":
            continue
        taken = host.take_late(call.tool_call_id)
        if taken:
            calls[call.tool_call_id] = taken[0].text
        elif host.standing(call.tool_call_id) == "settled":
            # Admitted before (a run that failed after taking it): the answers, again.
            calls[call.tool_call_id] = _settled_text(host, call.tool_call_id)
    return DeferredToolResults(calls=calls)
