"""``ask_user_question`` for LangGraph (``pip install langgraph``).

LangGraph's ``interrupt()`` stops the graph until ``Command(resume=...)``, and re-runs the whole
node on resume. This tool waits its window in-process first, and interrupts only when the window
passes unanswered; on resume it asks nothing again (the call id is the model's, the same in the
re-run) and returns the late answer, admitted once in the session log. A sibling call of the
same node that was answered in its window returns its answers again without asking.

    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command
    import ask_user
    from ask_user.langgraph import ask_user_tool, pending_calls, resume

    host = ask_user.Host.open("graph-agent")
    tools = ToolNode([ask_user_tool(host)])                  # with a model bound to the same tool
    with host.turn():
        state = await graph.ainvoke({"messages": [...]}, config)
    for call in pending_calls(state):                         # the window passed: interrupted
        await host.wait_late(call["callId"])                  # the person answers later
    with host.turn(claim=False):                              # the tool takes the reply itself
        state = await graph.ainvoke(resume(host, state), config)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import Command, interrupt

from . import AskUserError, Host, _settled_text

__all__ = ["INTERRUPT_KIND", "AskUserTool", "ask_user_tool", "pending_calls", "resume"]

INTERRUPT_KIND = "ask_user_pending"
"""The ``kind`` of the value this tool interrupts with: ``{"kind", "callId", "questions",
"pending"}`` (``pending`` is the pending result's text)."""


class AskUserTool(BaseTool):
    """The tool. Run it as a tool call (``ToolNode`` does): it needs the model's call id."""

    name: str = "ask_user_question"
    description: str = ""
    host: Any = None
    args_schema: Any = None

    def _run(self, *args: Any, **kwargs: Any) -> str:
        raise AskUserError("BAD_USAGE", "ask_user_question runs asynchronously: use ainvoke (ToolNode does)")

    async def _arun(self, *args: Any, **kwargs: Any) -> str:
        raise AskUserError("BAD_USAGE", "ask_user_question runs as a tool call with its id (a ToolNode runs it so)")

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if not (isinstance(input, Mapping) and input.get("type") == "tool_call" and input.get("id")):
            return await self._arun()
        call_id, arguments = str(input["id"]), dict(input.get("args") or {})
        text = await self._ask(call_id, arguments)
        return ToolMessage(content=text, tool_call_id=call_id, name=self.name)

    async def _ask(self, call_id: str, arguments: dict[str, Any]) -> str:
        host: Host = self.host
        standing = host.standing(call_id)
        if standing == "unknown":
            earlier = host.outcome_text(call_id)
            if earlier is not None:
                # The node runs again after a resume: this call ended before (an error result,
                # or a cancel), and the model reads the same again.
                return earlier
            try:
                outcome = await host.call_tool(call_id, arguments)
            except AskUserError as error:
                if error.code != "DUPLICATE_CALL_ID":
                    raise
                return f"Error: the call {call_id} ended before, without an answer"
            if not outcome.pending:
                return outcome.text
            pending = outcome.text
        elif standing == "settled":
            # The node runs again after a resume: this call was answered (in its window, or
            # late and admitted by a turn that claimed it). Nothing is asked again.
            return _settled_text(host, call_id)
        elif standing == "open":
            raise AskUserError("DUPLICATE_CALL_ID", f"the call {call_id!r} is in its window in another run")
        else:
            pending = None
        # Continued: interrupted now, or the node's re-run after a resume (the same call id).
        resumed = interrupt({"kind": INTERRUPT_KIND, "callId": call_id, "questions": host.questions(call_id), "pending": pending})
        if isinstance(resumed, (Mapping, list)) and not isinstance(resumed, str):
            # The application's own answers: queued as the person's late answer.
            host.answer_late(call_id, resumed, by="langgraph")
        taken = host.take_late(call_id)
        if taken:
            return taken[0].text
        if host.standing(call_id) == "settled":
            return _settled_text(host, call_id)
        raise AskUserError("NOT_WAITING", f"resumed, but no late answer to {call_id!r} waits: queue one first (Host.answer_late, the inbox, the shell)")


def ask_user_tool(host: Host) -> AskUserTool:
    """``ask_user_question`` asking through ``host``, for a ``ToolNode`` (bind the same tool to
    the model: its schema is the host's)."""
    definition = host.tool_definition("raw")
    return AskUserTool(name=definition["name"], description=definition["description"], host=host, args_schema=definition["parameters"])


def pending_calls(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The questions a graph's result is interrupted on: ``{"callId", "questions", "pending",
    "interrupt": <its id>}`` each."""
    found = []
    for item in state.get("__interrupt__", ()) or ():
        value = getattr(item, "value", None)
        if isinstance(value, Mapping) and value.get("kind") == INTERRUPT_KIND:
            found.append({**value, "interrupt": item.id})
    return found


def resume(host: Host, state: Mapping[str, Any]) -> Command:
    """The ``Command`` resuming every question ``state`` is interrupted on with its late reply,
    each by its interrupt's id. ``AskUserError("NOT_WAITING")`` names one without a reply yet."""
    values = {}
    waiting = {reply.call_id: reply for reply in host.waiting()}
    for call in pending_calls(state):
        reply = waiting.get(call["callId"])
        if reply is None:
            raise AskUserError("NOT_WAITING", f"no late answer to {call['callId']!r} yet: wait for it (Host.wait_late)")
        values[call["interrupt"]] = reply.text
    return Command(resume=values)
