"""Ask a person from a Python agent, and get the answer back to the model, even late.

The ``ask_user_question`` tool for Python agents: the same durable host as the ``ask-user``
command (a JSONL log in the state directory ``ask-user pending`` and ``ask-user answer`` read,
PostgreSQL, or memory), in-process. A timed question waits its window for an answer; unanswered,
it goes pending and the model works on; the person's late answer is queued and reaches the model
in the next turn, exactly once.

    import asyncio, ask_user

    async def main():
        host = ask_user.Host.open("my-agent")           # ~/.local/state/ask-user/mcp/my-agent.jsonl
        tools = [host.tool_definition("chat")]          # for the model's request
        with host.turn() as late:                       # late replies, for this turn's request
            outcome = await host.call_tool("call_1", '{"questions":[{"id":"db","question":"Which database?"}]}')
            print(outcome.text)                         # what the model reads: answers, or pending

    asyncio.run(main())

See the package README for the whole story, and ``ask_user.openai_agents``,
``ask_user.langgraph`` and ``ask_user.pydantic_ai`` for the framework adapters.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from . import _native
from ._errors import AskUserError

__all__ = [
    "AnswerRequest",
    "Answerer",
    "Answers",
    "AskUserError",
    "Host",
    "InboxLink",
    "LateReply",
    "Next",
    "PendingQuestion",
    "Registration",
    "ToolOutcome",
    "default_state_dir",
    "tool_definition",
    "visible",
]

__version__: str = _native.__version__

# No thread of the library calls into Python once the interpreter is exiting (see the crate's
# `bridge` module); the threads inside are waited for, at most 2 s.
atexit.register(_native.shutdown, 2.0)

Mode = Literal["timed", "legacy"]
"""The tool's mode: ``timed`` (a window, then pending) or ``legacy`` (waits for the answer)."""

Api = Literal["chat", "responses", "anthropic", "gemini", "mcp", "raw"]
"""Whose tool format: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini's
function declarations, MCP's ``tools/list``, or the bare ``{name, description, parameters}``."""

Standing = Literal["open", "continued", "settled", "unknown"]
"""Where a call stands: its window is open; it went pending (a late answer settles it); it is
answered; or this session does not know it."""

AnswerValue = Union[str, Sequence[str], None]
AnswersLike = Union[Mapping[str, AnswerValue], Sequence[Mapping[str, Any]], "Answers"]
"""Answers as Python code gives them: ``{"db": "SQLite"}`` (an option's label selects it, any
other text is the person's own answer), ``{"langs": ["Rust", "Go"]}`` (labels of a multi-select
question), ``{"db": None}`` (skipped), or the answer items themselves
(``[{"id": "db", "selected": ["SQLite"]}]``)."""


def visible(text: str, *, keep_lines: bool = True) -> str:
    """``text`` safe to print on a terminal: every control or invisible format character (an
    escape sequence a model wrote, say) shown as its escape, ``\\u{1b}``; line breaks kept unless
    ``keep_lines=False``. Print what a model or a person wrote through it."""
    return _native.visible(text, keep_lines)


def default_state_dir() -> str:
    """The state directory ``ask-user mcp``, ``ask-user pending`` and ``ask-user answer`` use
    by default (``$XDG_STATE_HOME/ask-user/mcp``, else ``~/.local/state/ask-user/mcp``)."""
    found = _native.default_state_dir()
    if found is None:
        raise AskUserError("BAD_CONFIG", "no state directory: neither XDG_STATE_HOME nor HOME is set")
    return found


def _format(definition: Mapping[str, Any], api: Api) -> dict[str, Any]:
    name, description, parameters = definition["name"], definition["description"], definition["parameters"]
    if api == "chat":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
    if api == "responses":
        return {"type": "function", "name": name, "description": description, "parameters": parameters, "strict": False}
    if api == "anthropic":
        return {"name": name, "description": description, "input_schema": parameters}
    if api == "gemini":
        return {"name": name, "description": description, "parameters": parameters}
    if api == "mcp":
        return {"name": name, "description": description, "inputSchema": parameters}
    if api == "raw":
        return {"name": name, "description": description, "parameters": parameters}
    raise AskUserError("BAD_CONFIG", f"unknown api {api!r}: chat, responses, anthropic, gemini, mcp or raw")


def tool_definition(mode: Mode = "timed", timeout: int = 120, api: Api = "chat") -> dict[str, Any]:
    """The ``ask_user_question`` tool as ``api``'s request takes it, for ``mode`` with a default
    window of ``timeout`` seconds (``-1``: no window). The same JSON Schema in every format."""
    return _format(json.loads(_native.definition(mode, timeout)), api)


def _labels(question: Mapping[str, Any]) -> list[str]:
    return [option.get("label", "") for option in question.get("options") or []]


def _items(answers: AnswersLike, questions: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Answer items from what Python code gives (see ``AnswersLike``)."""
    if isinstance(answers, Answers):
        return [dict(item) for item in answers.items]
    by_id = {question.get("id"): question for question in questions}
    if isinstance(answers, Mapping):
        items = []
        for qid, value in answers.items():
            if not isinstance(qid, str):
                raise AskUserError("BAD_ANSWER", f"a question id is text, not {qid!r}")
            if value is None:
                items.append({"id": qid, "selected": []})
            elif isinstance(value, str):
                if value in _labels(by_id.get(qid, {})):
                    items.append({"id": qid, "selected": [value]})
                else:
                    items.append({"id": qid, "selected": [], "custom": value})
            elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)) and all(isinstance(v, str) for v in value):
                items.append({"id": qid, "selected": list(value)})
            else:
                raise AskUserError("BAD_ANSWER", f"the answer to {qid!r} is text, a list of labels or None, not {value!r}")
        return items
    if isinstance(answers, Sequence) and not isinstance(answers, (str, bytes)):
        items = []
        for item in answers:
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise AskUserError("BAD_ANSWER", f"an answer item is a mapping with an \"id\", not {item!r}")
            items.append({key: item[key] for key in ("id", "selected", "custom") if key in item})
            items[-1].setdefault("selected", [])
        return items
    raise AskUserError("BAD_ANSWER", f"answers are a mapping of question ids or a list of answer items, not {answers!r}")


def _settled_text(host: Host, call_id: str) -> str:
    """A settled call's answers as the tool's result text (``{"answers":[...]}``): what an
    adapter returns when a framework runs an answered call again."""
    answers = host.answers(call_id)
    return json.dumps({"answers": [] if answers is None else answers.items}, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Answers:
    """An answer batch: one item per question, ``{"id", "selected", "custom"?}``."""

    items: list[dict[str, Any]]

    def get(self, question_id: str) -> dict[str, Any] | None:
        """The item answering ``question_id``."""
        return next((item for item in self.items if item.get("id") == question_id), None)

    def text(self, question_id: str) -> str | None:
        """The answer to ``question_id`` as one text: the person's own words, else the labels."""
        item = self.get(question_id)
        if item is None:
            return None
        return item.get("custom") or ", ".join(item.get("selected", []))


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one ``ask_user_question`` call."""

    call_id: str
    text: str
    """What the model reads, as the tool's result: the answers' JSON, the pending object, or
    ``Error: ...``."""
    is_error: bool
    pending: bool
    """The window passed unanswered: the question waits for a late answer."""
    value: Any
    """The parsed result (the answers or the pending object); ``None`` for an error."""
    error_code: str | None = None
    """The SPEC code of an error result (``INVALID_ARGS``, ``BAD_QUESTIONS``, ``ASK_ABORTED``,
    ...), when typed."""

    @property
    def answers(self) -> Answers | None:
        """The answers given in the window."""
        if self.is_error or self.pending or not isinstance(self.value, Mapping):
            return None
        return Answers(list(self.value.get("answers", [])))


@dataclass(frozen=True)
class LateReply:
    """A message the model reads in a turn: a late reply (``kind`` ``user-question-reply``, the
    ``call_id`` it answers, ``text`` the ``answer_to_pending_question`` JSON)."""

    id: str
    kind: str
    call_id: str | None
    text: str

    def as_message(self) -> dict[str, str]:
        """``{"role": "user", "content": text}``: the message of most chat APIs."""
        return {"role": "user", "content": self.text}

    @staticmethod
    def _list(text: str) -> list[LateReply]:
        return [LateReply(m["id"], m["kind"], m["callId"], m["text"]) for m in json.loads(text)]


@dataclass(frozen=True)
class PendingQuestion:
    """A question of the session that is open (its window runs) or continued (pending)."""

    call_id: str
    state: Literal["open", "continued"]
    questions: list[dict[str, Any]]


@dataclass(frozen=True)
class AnswerRequest:
    """What an answerer receives: the questions (``{"id", "question", "header"?, "options"?,
    "multiSelect"?}``), the call, whether it has a window, and the session."""

    questions: list[dict[str, Any]]
    call_id: str | None
    timed: bool
    session_id: str | None

    @staticmethod
    def _from_json(text: str) -> AnswerRequest:
        raw = json.loads(text)
        return AnswerRequest(raw["questions"], raw.get("callId"), bool(raw.get("timed")), raw.get("sessionId"))


class Next:
    """The rest of the waterfall. ``await next()`` runs it (once) and returns its answers, or
    raises ``AskUserError`` (``NO_PROVIDER`` when nobody is left to ask). Returning its answers
    from the answerer keeps who gave them."""

    def __init__(self, native: Any, request: AnswerRequest) -> None:
        self._native = native
        self._request = request
        self._result: Answers | None = None

    async def __call__(self) -> Answers:
        self._result = Answers(json.loads(await self._native.run()))
        return self._result


Answerer = Callable[[AnswerRequest, Next], Awaitable[Union[AnswersLike, None]]]
"""An answerer: ``async def answer(request, next)`` returning answers (``AnswersLike``), ``None``
to pass the question on, or ``await next()``'s answers; raising fails the question's waterfall."""


class Registration:
    """An answerer in a session's waterfall, until ``remove()`` or the host's end."""

    def __init__(self, native: Any, held: list[Registration]) -> None:
        self._native = native
        self._held = held
        held.append(self)

    def remove(self) -> None:
        """Questions asked from now on skip this answerer."""
        self._native.remove()
        if self in self._held:
            self._held.remove(self)


class InboxLink:
    """The session's link to the machine's inbox (``ask-user inbox``): its questions show on the
    inbox page and a phone while it lasts. ``await close()`` unlinks once the inbox knows how
    every question ended; dropping it cuts at once."""

    def __init__(self, native: Any) -> None:
        self._native = native

    @property
    def connected(self) -> bool:
        """Whether the inbox is reached now (never, once its host is closed)."""
        return self._native is not None and bool(self._native.connected)

    async def wait_connected(self, timeout: float = 10.0) -> None:
        """Waits until the inbox is reached; ``AskUserError("NO_INBOX")`` after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.connected:
            if loop.time() >= deadline:
                raise AskUserError("NO_INBOX", f"no inbox answered within {timeout} s (is `ask-user inbox` running?)")
            await asyncio.sleep(0.02)

    async def close(self, within: float = 2.0) -> None:
        """Unlinks, once the inbox was told how every question ended (at most ``within`` s)."""
        if self._native is not None:
            await self._native.close(within)


class Host:
    """One agent session: its questions, its log and its late answers.

    Make one with ``Host.open`` (a durable log) or ``Host.in_memory``. A call runs inside a turn
    and a step, as the model's requests do: ``with host.turn() as late:`` opens both (and ends
    them), and gives the late replies the turn claimed, which the model must read in it.
    """

    def __init__(self, native: Any, state_dir: str | None) -> None:
        self.__native: Any = native
        self._state_dir = state_dir
        self._registrations: list[Registration] = []
        self._links: list[InboxLink] = []
        self._outcomes: dict[str, str] = {}

    @property
    def _native(self) -> Any:
        if self.__native is None:
            raise AskUserError("CLOSED", "this host is closed")
        return self.__native

    def close(self) -> None:
        """Ends the session in this process: its answerers and inbox links go, and the log is
        freed once no call of it runs (reopen it with ``Host.open``). Late answers still reach
        its pending questions through the log. Closing twice does nothing."""
        if self.__native is None:
            return
        for registration in list(self._registrations):
            registration.remove()
        for link in self._links:
            link._native = None
        self._links.clear()
        self.__native = None

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    @classmethod
    def open(
        cls,
        session: str,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        mode: Mode = "timed",
        timeout: int = 120,
        postgres: str | None = None,
        schema: str | None = None,
    ) -> Host:
        """The session ``session``, durable: its log ``<state_dir>/<session>.jsonl``, created or
        reopened (what a process that died left open is closed, and its pending questions still
        take late answers). ``state_dir`` defaults to ``ask-user mcp``'s, so ``ask-user pending``
        and ``ask-user answer`` in a shell see these questions too. With ``postgres`` (a
        connection URL), the session lives in that database instead, tables in ``schema``."""
        directory = os.fspath(state_dir) if state_dir is not None else default_state_dir()
        native = _native.Host.open(session, directory, mode, timeout, postgres, schema)
        return cls(native, None if postgres else directory)

    @classmethod
    def in_memory(cls, *, mode: Mode = "timed", timeout: int = 120, session: str = "python") -> Host:
        """A session in memory: nothing outlives the process."""
        return cls(_native.Host.in_memory(mode, timeout, session), None)

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._native.session_id

    @property
    def log_path(self) -> str | None:
        """The JSONL log, for a session in a state directory."""
        path = self._native.log_path
        return None if path is None else os.fspath(path)

    @property
    def mode(self) -> Mode:
        """The tool's mode."""
        return self._native.mode

    def tool_definition(self, api: Api = "chat") -> dict[str, Any]:
        """This session's ``ask_user_question`` tool in ``api``'s format (see ``Api``)."""
        return _format(json.loads(self._native.definition()), api)

    # Turns and steps.

    def begin_turn(self) -> list[LateReply]:
        """Starts a turn; returns the late replies it claimed (put them in this turn's request:
        ``reply.as_message()``). The turn's first step admits them, settling their questions."""
        return LateReply._list(self._native.begin_turn())

    def begin_step(self) -> None:
        """Starts a step: a request to the model and the calls it asks for (``turn()`` opens one
        for the whole turn)."""
        self._native.begin_step()

    def end_step(self) -> None:
        """Ends the step."""
        self._native.end_step()

    def end_turn(self, reason: str = "completed") -> None:
        """Ends the turn: ``completed``, ``error`` or ``cancelled``."""
        self._native.end_turn(reason)

    @contextlib.contextmanager
    def turn(self, *, claim: bool = True) -> Iterator[list[LateReply]]:
        """A turn with one step open: yields the late replies the turn claimed (already admitted
        when the block starts). Ends the step and the turn on the way out, ``completed``, or
        ``error``/``cancelled`` when the block raised.

        ``claim=False``: the turn claims nothing and yields ``[]``; the replies wait for
        ``take_late`` (a framework that hands a late answer back to the call that asked, as the
        LangGraph and Pydantic AI adapters do).

        A claimed reply is admitted (its question settled) when the block starts: if the
        request that should carry it then fails, ``host.answers(call_id)`` still has the answer.
        Every ``call_tool`` is awaited inside its turn: leaving the block with one still running
        raises ``AskUserError("OUT_OF_ORDER")`` and leaves the turn open (``end_turn`` closes it
        once the calls have ended)."""
        if claim:
            replies = self.begin_turn()
        else:
            self._native.begin_turn_unclaimed()
            replies = []
        reason = "completed"
        try:
            self.begin_step()
            self._native.log_request_header()
            yield replies
        except (asyncio.CancelledError, KeyboardInterrupt):
            reason = "cancelled"
            raise
        except BaseException:
            reason = "error"
            raise
        finally:
            running = self._native.running()
            if running:
                raise AskUserError("OUT_OF_ORDER", f"the turn ended with calls still running ({', '.join(running)}): await each call_tool inside its turn, then end_turn()")
            if self._native.step_open():
                self.end_step()
            self.end_turn(reason)

    def assistant_text(self, text: str) -> None:
        """Logs the model's text of the current step."""
        self._native.assistant_text(text)

    # The tool.

    async def call_tool(self, call_id: str, arguments: str | Mapping[str, Any]) -> ToolOutcome:
        """Runs the model's ``ask_user_question`` call ``call_id`` with its ``arguments`` (the
        model's JSON text, or a mapping) inside the current step, and returns what the model
        reads. Answerers ask in order; a timed call's window that passes gives ``pending``.

        Cancelling the awaiting task withdraws the question (its call is logged cancelled, as a
        cancelled turn does) and raises ``CancelledError`` once that is recorded; a cancel that
        comes as the answer does finds the call answered (``host.answers(call_id)``). An
        argument the model got wrong is an error *result* the model reads; a call out of turn
        order, a call id used before or arguments that are no JSON raise ``AskUserError``."""
        if not isinstance(call_id, str) or not call_id.strip():
            raise AskUserError("BAD_ARGUMENT", f"a call id is non-empty text, not {call_id!r}")
        try:
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            text.encode("utf-8")
            call_id.encode("utf-8")
        except (TypeError, ValueError) as error:
            raise AskUserError("BAD_ARGUMENT", f"the call's id and arguments are JSON text: {error}") from None
        future = self._native.call_tool(call_id, text, asyncio.get_running_loop())
        try:
            raw = json.loads(await asyncio.shield(future))
        except asyncio.CancelledError:
            self._native.cancel_call(call_id)
            with contextlib.suppress(BaseException):
                await future
            raise
        error = raw.get("error") or {}
        if not raw["pending"]:
            self._outcomes[call_id] = raw["text"]
        return ToolOutcome(call_id, raw["text"], raw["isError"], raw["pending"], raw["value"], error.get("code"))

    def outcome_text(self, call_id: str) -> str | None:
        """What the model read from a call this process ran to an end (answers or an error), for
        a framework that runs the same call again: ``None`` for a call it did not run here or
        that went pending."""
        return self._outcomes.get(call_id)

    # Questions.

    def standing(self, call_id: str) -> Standing:
        """Where the call stands (see ``Standing``)."""
        return self._native.standing(call_id)

    def active(self) -> list[PendingQuestion]:
        """The questions open or continued in this session."""
        return [PendingQuestion(q["callId"], q["state"], q["questions"]) for q in json.loads(self._native.active())]

    def pending(self) -> list[PendingQuestion]:
        """The continued questions: pending, each waiting for a late answer."""
        return [q for q in self.active() if q.state == "continued"]

    def questions(self, call_id: str) -> list[dict[str, Any]] | None:
        """The questions of an open or continued call."""
        return next((q.questions for q in self.active() if q.call_id == call_id), None)

    def answers(self, call_id: str) -> Answers | None:
        """The answers that settled the call."""
        raw = self._native.settled(call_id)
        return None if raw is None else Answers(json.loads(raw)["answers"])

    # The way back.

    def answer_late(self, call_id: str, answers: AnswersLike, *, by: str = "python") -> None:
        """Queues a person's late answer to the continued call ``call_id``; the next turn gives
        it to the model. ``by`` names where it came from (a chat, a pager). Refused with
        ``AskUserError``: ``NOT_WAITING`` (not pending, or settled), ``REPLY_QUEUED`` (an
        answer is already on its way), ``BAD_ANSWER`` (does not fit the questions)."""
        if self.standing(call_id) == "open":
            raise AskUserError("NOT_WAITING", f"the call {call_id!r} is in its window: a late answer is taken once the window has passed (answer in the window through an answerer or the inbox page)")
        items = _items(answers, self.questions(call_id) or [])
        self._native.queue_late(call_id, json.dumps(items), by)

    def waiting(self) -> list[LateReply]:
        """The late replies queued and not yet given to the model."""
        return LateReply._list(self._native.waiting())

    def take_late(self, call_id: str | None = None) -> list[LateReply]:
        """Takes waiting replies (``call_id``'s, or all) into the current step, admitted."""
        return LateReply._list(self._native.take_late(call_id))

    def settle(self, call_id: str) -> LateReply | None:
        """Admits ``call_id``'s waiting reply in a turn of its own (no turn may be open), for an
        application with no next turn to run; ``None`` when nothing waits."""
        raw = self._native.settle(call_id)
        return None if raw is None else LateReply._list(f"[{raw}]")[0]

    async def wait_late(self, call_id: str | None = None, timeout: float | None = None) -> LateReply:
        """Waits until a late reply (``call_id``'s, or any) is queued, and returns it without
        taking it: the next turn does. ``asyncio.TimeoutError`` after ``timeout`` seconds;
        ``AskUserError("NOT_WAITING")`` when no such reply can come (the call is not pending, or
        no question of the session is open or pending)."""

        def nothing_can_come() -> bool:
            if call_id is not None:
                return self.standing(call_id) not in ("open", "continued")
            return not self.active()

        async def wait() -> LateReply:
            while True:
                woke = asyncio.ensure_future(self._native.wait_for_input())
                try:
                    for reply in self.waiting():
                        if call_id is None or reply.call_id == call_id:
                            return reply
                    if nothing_can_come():
                        raise AskUserError("NOT_WAITING", f"no late answer can come for {call_id!r}" if call_id else "no question of this session is open or pending")
                    # The wake-up is a hint; a short poll covers one that came before the wait.
                    await asyncio.wait({woke}, timeout=0.25)
                finally:
                    woke.cancel()

        return await asyncio.wait_for(wait(), timeout)

    # Answerers and surfaces.

    def add_answerer(self, answerer: Answerer, *, name: str = "python") -> Registration:
        """Puts ``answerer`` (``async def answer(request, next)``) in the session's waterfall,
        after those added before it; ``name`` is who answered, in the log. It runs on the event
        loop of the ``call_tool`` that asked; when the window closes or the call is cancelled,
        its task is cancelled."""
        if not callable(answerer):
            raise AskUserError("BAD_CONFIG", f"an answerer is an async callable, not {answerer!r}")
        return Registration(self._native.add_answerer(answerer, name), self._registrations)

    def link_inbox(self, state_dir: str | os.PathLike[str] | None = None) -> InboxLink:
        """Links the session to the inbox of ``state_dir`` (default: the session's own state
        directory, else ``ask-user mcp``'s), whenever one runs (``ask-user inbox``; none is
        started): its questions show on the inbox page and phone, racing the other answerers,
        and an answer given there late comes back as a late answer."""
        directory = os.fspath(state_dir) if state_dir is not None else (self._state_dir or default_state_dir())
        link = InboxLink(self._native.link_inbox(directory))
        self._links.append(link)
        return link

    def _add_fixed_answerer(self, answers: AnswersLike) -> Registration:
        return Registration(self._native._add_fixed_answerer(json.dumps(_items(answers))), self._registrations)
