"""`import ask_user`: the SPEC scenarios that make sense from Python, through the public API."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

import ask_user
from ask_user import AskUserError, Host
from conftest import ask_user_command
from helpers import InboxPage

DB = {"questions": [{"id": "db", "question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]}


def log_records(path: str | None) -> list[dict]:
    assert path is not None
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def tool_results(path: str | None, call_id: str) -> list[dict]:
    return [r for r in log_records(path) if r.get("type") == "tool/result" and r.get("data", r).get("message", {}).get("toolCallId") == call_id]


async def test_in_window_answer_from_a_python_answerer(state_dir: Path) -> None:
    host = Host.open("s1", state_dir=state_dir, timeout=5)
    seen: list[ask_user.AnswerRequest] = []

    async def chat(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        seen.append(request)
        return {"db": "SQLite"}

    host.add_answerer(chat, name="chat")
    with host.turn() as late:
        assert late == []
        outcome = await host.call_tool("call_1", json.dumps(DB))
    assert not outcome.pending and not outcome.is_error
    assert outcome.text == '{"answers":[{"id":"db","selected":["SQLite"]}]}'
    assert outcome.answers is not None and outcome.answers.text("db") == "SQLite"
    assert seen[0].call_id == "call_1" and seen[0].timed and seen[0].questions[0]["id"] == "db"
    assert host.standing("call_1") == "settled"
    assert host.answers("call_1") == ask_user.Answers([{"id": "db", "selected": ["SQLite"]}])
    # The log is the reference's: the call and its result, with who answered.
    assert Path(host.log_path or "").name == "s1.jsonl"
    assert "chat" in Path(host.log_path or "").read_text()


async def test_pending_then_late_answer_admitted_once() -> None:
    host = Host.in_memory(timeout=1)
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
    assert outcome.pending and outcome.value["callId"] == "call_1"
    assert host.standing("call_1") == "continued"
    assert [q.call_id for q in host.pending()] == ["call_1"]

    host.answer_late("call_1", {"db": "Postgres"}, by="chat")
    # A second answer while the first is on its way is refused.
    with pytest.raises(AskUserError) as queued:
        host.answer_late("call_1", {"db": "SQLite"})
    assert queued.value.code == "REPLY_QUEUED"
    reply = await host.wait_late("call_1", timeout=5)
    assert reply.call_id == "call_1"

    with host.turn() as late:
        assert [r.call_id for r in late] == ["call_1"]
    message = json.loads(late[0].text)
    assert message["kind"] == "answer_to_pending_question"
    assert message["answers"] == [{"id": "db", "selected": ["Postgres"]}]
    assert late[0].as_message() == {"role": "user", "content": late[0].text}
    assert host.standing("call_1") == "settled"
    # Admitted once: the next turn claims nothing, and the question takes no more answers.
    with host.turn() as again:
        assert again == []
    with pytest.raises(AskUserError) as done:
        host.answer_late("call_1", {"db": "SQLite"})
    assert done.value.code == "NOT_WAITING"


async def test_cancelling_the_task_withdraws_the_question(state_dir: Path) -> None:
    host = Host.open("s1", state_dir=state_dir, timeout=30)
    cancelled = asyncio.Event()

    async def slow(request: ask_user.AnswerRequest, next: ask_user.Next) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    host.add_answerer(slow, name="slow")
    with pytest.raises(asyncio.CancelledError):
        with host.turn():
            task = asyncio.ensure_future(host.call_tool("call_1", DB))
            await asyncio.sleep(0.3)
            task.cancel()
            await task
    await asyncio.wait_for(cancelled.wait(), 5)
    # Withdrawn: not pending, takes no late answer, and the log says the call was cancelled.
    assert host.standing("call_1") == "unknown"
    assert host.pending() == []
    with pytest.raises(AskUserError) as refused:
        host.answer_late("call_1", {"db": "SQLite"})
    assert refused.value.code == "NOT_WAITING"
    results = tool_results(host.log_path, "call_1")
    assert len(results) == 1 and results[0]["data"]["message"]["isError"], results
    turn_ends = [r for r in log_records(host.log_path) if r.get("type") == "turn/end"]
    assert turn_ends and turn_ends[-1]["data"]["reason"]["kind"] == "cancelled"


async def test_an_answerer_slower_than_the_window_is_cancelled_and_the_call_goes_pending() -> None:
    host = Host.in_memory(timeout=1)
    cancelled = asyncio.Event()

    async def slow(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"db": "SQLite"}

    host.add_answerer(slow, name="slow")
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
    assert outcome.pending
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_the_waterfall_runs_python_answerers_in_order_with_next() -> None:
    host = Host.in_memory(timeout=5)
    order: list[str] = []

    async def first(request: ask_user.AnswerRequest, next: ask_user.Next) -> ask_user.Answers:
        order.append("first")
        answers = await next()  # the rest answers; passing it on keeps who answered
        order.append(f"first saw {answers.text('db')}")
        return answers

    async def declines(request: ask_user.AnswerRequest, next: ask_user.Next) -> None:
        order.append("declines")
        return None

    async def last(request: ask_user.AnswerRequest, next: ask_user.Next) -> list[dict]:
        order.append("last")
        return [{"id": "db", "selected": ["Postgres"], "custom": "on a big box"}]

    host.add_answerer(first, name="first")
    host.add_answerer(declines, name="declines")
    registration = host.add_answerer(last, name="last")
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
        assert outcome.value == {"answers": [{"id": "db", "selected": ["Postgres"], "custom": "on a big box"}]}
        assert order == ["first", "declines", "last", "first saw on a big box"]
        # Nobody left to answer: `next()` raises NO_PROVIDER, and the window decides.
        registration.remove()
        order.clear()
        outcome = await host.call_tool("call_2", {**DB, "timeout": 1})
    assert outcome.pending
    assert order == ["first", "declines"]


async def test_a_failing_answerer_is_an_error_result_the_model_reads(caplog: pytest.LogCaptureFixture) -> None:
    host = Host.in_memory(mode="legacy")

    async def broken(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        raise RuntimeError("the chat is down")

    host.add_answerer(broken, name="broken")
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
    assert outcome.is_error and outcome.text.startswith("Error: ")
    # The model reads what failed, not the exception's text; the log has it all.
    assert "RuntimeError" in outcome.text and "the chat is down" not in outcome.text
    assert any("the chat is down" in (record.exc_text or "") or "the chat is down" in str(record.exc_info) for record in caplog.records)


async def test_an_answer_that_does_not_fit_is_refused() -> None:
    host = Host.in_memory(timeout=1)
    with host.turn():
        await host.call_tool("call_1", DB)
    with pytest.raises(AskUserError) as bad:
        host.answer_late("call_1", {"nope": "SQLite"})
    assert bad.value.code == "BAD_ANSWER"
    with pytest.raises(AskUserError) as shape:
        host.answer_late("call_1", 42)  # type: ignore[arg-type]
    assert shape.value.code == "BAD_ANSWER"
    assert host.standing("call_1") == "continued"  # nothing was lost


async def test_errors_carry_their_spec_code() -> None:
    host = Host.in_memory(timeout=1)
    # Outside a turn and a step.
    with pytest.raises(AskUserError) as order:
        await host.call_tool("call_1", DB)
    assert order.value.code == "OUT_OF_ORDER"
    with host.turn():
        # Arguments the model got wrong: an error result the model reads, not an exception.
        outcome = await host.call_tool("call_2", '{"questions": "not a list"}')
        assert outcome.is_error and outcome.error_code == "INVALID_ARGS"
        await host.call_tool("call_3", DB)
        with pytest.raises(AskUserError) as again:
            await host.call_tool("call_3", DB)
        assert again.value.code == "DUPLICATE_CALL_ID"
    with pytest.raises(AskUserError) as mode:
        Host.in_memory(mode="fast")  # type: ignore[arg-type]
    assert mode.value.code == "BAD_CONFIG"
    with pytest.raises(AskUserError) as window:
        Host.in_memory(timeout=0)
    assert window.value.code == "BAD_CONFIG"
    with pytest.raises(AskUserError) as unknown:
        host.answer_late("never-asked", {"db": "SQLite"})
    assert unknown.value.code == "NOT_WAITING"


def test_the_tool_definition_in_each_providers_format() -> None:
    timed = ask_user.tool_definition("timed", 120, "raw")
    legacy = ask_user.tool_definition("legacy", 120, "raw")
    assert timed["name"] == legacy["name"] == "ask_user_question"
    assert "timeout" in timed["parameters"]["properties"]
    assert "timeout" not in legacy["parameters"]["properties"]
    chat = ask_user.tool_definition(api="chat")
    assert chat == {"type": "function", "function": timed}
    assert ask_user.tool_definition(api="responses") == {"type": "function", **timed, "strict": False}
    assert ask_user.tool_definition(api="anthropic") == {"name": timed["name"], "description": timed["description"], "input_schema": timed["parameters"]}
    assert ask_user.tool_definition(api="mcp")["inputSchema"] == timed["parameters"]
    assert Host.in_memory().tool_definition("gemini") == {"name": timed["name"], "description": timed["description"], "parameters": timed["parameters"]}
    with pytest.raises(AskUserError):
        ask_user.tool_definition(api="cobol")  # type: ignore[arg-type]


async def test_a_pending_question_survives_the_process_and_takes_a_shell_answer(state_dir: Path, shell) -> None:
    host = Host.open("agent", state_dir=state_dir, timeout=1)
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
    assert outcome.pending
    del host
    gc.collect()  # the process's session ends: the log is free

    listed = shell("pending")
    assert "call_1" in listed.stdout and "Which database?" in listed.stdout
    shell("answer", "call_1", "--pick", "db=Postgres")

    again = Host.open("agent", state_dir=state_dir, timeout=1)
    assert again.standing("call_1") == "settled"  # the shell settled it in a turn of its own
    assert again.answers("call_1") == ask_user.Answers([{"id": "db", "selected": ["Postgres"]}])


async def test_a_question_asked_from_python_is_answered_on_the_inbox_page(state_dir: Path) -> None:
    page = InboxPage(state_dir)
    try:
        host = Host.open("agent", state_dir=state_dir, timeout=30)
        link = host.link_inbox()  # the session's own state directory: the page's
        await link.wait_connected(15)
        with host.turn():
            # In its window: the page's answer is the call's own result.
            call = asyncio.ensure_future(host.call_tool("call_1", DB))
            session = await page.wait_card("call_1", "open")
            assert session == "agent.jsonl"
            await asyncio.to_thread(page.answer, session, "call_1", [{"id": "db", "selected": ["Postgres"]}])
            outcome = await asyncio.wait_for(call, 10)
            assert not outcome.pending and outcome.answers == ask_user.Answers([{"id": "db", "selected": ["Postgres"]}])
            # After its window: the page's answer is queued as a late answer.
            outcome = await host.call_tool("call_2", {**DB, "timeout": 1})
            assert outcome.pending
        await page.wait_card("call_2", "continued")
        await asyncio.to_thread(page.answer, "agent.jsonl", "call_2", [{"id": "db", "selected": ["SQLite"]}])
        reply = await host.wait_late("call_2", timeout=10)
        with host.turn() as late:
            assert [r.id for r in late] == [reply.id]
        assert json.loads(late[0].text)["answers"] == [{"id": "db", "selected": ["SQLite"]}]
        assert host.standing("call_2") == "settled"
        await link.close()
    finally:
        page.close()


def test_the_wheel_gives_the_command_too(shell) -> None:
    done = shell("pending")
    assert done.returncode == 0
    version = subprocess.run([ask_user_command(), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"ask-user {ask_user.__version__}"
    usage = subprocess.run([ask_user_command(), "answer"], capture_output=True, text=True)
    assert usage.returncode == 2 and "error[BAD_USAGE]" in usage.stderr


async def test_a_session_in_postgresql_takes_a_late_answer_from_the_ledger(shell) -> None:
    url = os.environ.get("ASK_USER_PG_URL")
    if url is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ASK_USER_PG_URL is not set: this test needs a PostgreSQL server (.ci/run starts one)")
        pytest.skip("ASK_USER_PG_URL is not set")
    schema = f"py_{uuid.uuid4().hex[:12]}"
    host = Host.open("pg-agent", postgres=url, schema=schema, timeout=1)
    assert host.log_path is None
    with host.turn():
        outcome = await host.call_tool("call_1", DB)
    assert outcome.pending
    listed = shell("pending", "--pg", url, "--pg-schema", schema)
    assert "call_1" in listed.stdout and "pg-agent" in listed.stdout, listed.stdout
    # The shell's answer goes into the database's ledger, which delivers it to the live session.
    shell("answer", "--pg", url, "--pg-schema", schema, "pg-agent", "call_1", "--pick", "db=Postgres")
    reply = await host.wait_late("call_1", timeout=20)
    with host.turn() as late:
        assert [r.id for r in late] == [reply.id]
    assert host.standing("call_1") == "settled"
    assert host.answers("call_1") == ask_user.Answers([{"id": "db", "selected": ["Postgres"]}])


async def test_an_answerer_that_stops_waiting_for_next_answers_itself() -> None:
    host = Host.in_memory(timeout=5)

    async def impatient(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        try:
            return await asyncio.wait_for(next(), 0.2)
        except asyncio.TimeoutError:
            return {"db": "SQLite"}  # its own answer, while the rest still runs

    async def slow(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        await asyncio.sleep(30)
        return {"db": "Postgres"}

    host.add_answerer(impatient, name="impatient")
    host.add_answerer(slow, name="slow")
    with host.turn():
        started = asyncio.get_running_loop().time()
        outcome = await host.call_tool("call_1", DB)
    assert outcome.answers == ask_user.Answers([{"id": "db", "selected": ["SQLite"]}])
    assert asyncio.get_running_loop().time() - started < 3


async def test_an_answerer_cancelling_itself_does_not_hang_the_call() -> None:
    host = Host.in_memory(mode="legacy")

    async def gives_up(request: ask_user.AnswerRequest, next: ask_user.Next) -> dict:
        raise asyncio.CancelledError

    host.add_answerer(gives_up, name="gives-up")
    with host.turn():
        outcome = await asyncio.wait_for(host.call_tool("call_1", DB), 5)
    assert outcome.is_error


async def test_wait_late_says_when_no_answer_can_come() -> None:
    host = Host.in_memory(timeout=1)
    with pytest.raises(AskUserError) as nothing:
        await host.wait_late(timeout=5)
    assert nothing.value.code == "NOT_WAITING"
    with host.turn():
        await host.call_tool("call_1", DB)
    with pytest.raises(asyncio.TimeoutError):
        await host.wait_late("call_1", timeout=0.3)
    host.answer_late("call_1", {"db": "SQLite"})
    with host.turn():
        pass
    with pytest.raises(AskUserError) as settled:
        await host.wait_late("call_1", timeout=5)
    assert settled.value.code == "NOT_WAITING"


async def test_a_turn_left_with_a_call_running_is_refused_and_stays_open() -> None:
    host = Host.in_memory(timeout=30)
    with pytest.raises(AskUserError) as early:
        with host.turn():
            call = asyncio.ensure_future(host.call_tool("call_1", DB))
            await asyncio.sleep(0.2)
    assert early.value.code == "OUT_OF_ORDER" and "call_1" in early.value.message
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    host.end_step()
    host.end_turn("cancelled")
    with host.turn() as late:  # the host goes on
        assert late == []


async def test_answer_late_in_the_window_says_so_and_bad_inputs_are_refused() -> None:
    host = Host.in_memory(timeout=30)
    with host.turn():
        call = asyncio.ensure_future(host.call_tool("call_1", DB))
        await asyncio.sleep(0.2)
        with pytest.raises(AskUserError) as open_:
            host.answer_late("call_1", {"db": "SQLite"})
        assert open_.value.code == "NOT_WAITING" and "in its window" in open_.value.message
        for bad_id in ("", "   ", 42):
            with pytest.raises(AskUserError) as bad:
                await host.call_tool(bad_id, DB)  # type: ignore[arg-type]
            assert bad.value.code == "BAD_ARGUMENT"
        with pytest.raises(AskUserError) as unserialisable:
            await host.call_tool("call_2", {"questions": {1}})
        assert unserialisable.value.code == "BAD_ARGUMENT"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call


async def test_close_ends_the_session_and_frees_its_log(state_dir: Path) -> None:
    host = Host.open("closing", state_dir=state_dir, timeout=1)

    async def chat(request: ask_user.AnswerRequest, next: ask_user.Next) -> None:
        return None

    host.add_answerer(chat, name="chat")  # it holds the host through its closure
    with host.turn():
        assert (await host.call_tool("call_1", DB)).pending
    host.close()
    host.close()
    with pytest.raises(AskUserError) as closed:
        host.standing("call_1")
    assert closed.value.code == "CLOSED"
    gc.collect()
    with Host.open("closing", state_dir=state_dir, timeout=1) as again:  # the log is free
        assert again.standing("call_1") == "continued"


def test_text_from_a_model_is_shown_escaped() -> None:
    assert ask_user.visible("ok\x1b]0;owned\x07\nnext") == "ok\\u{1b}]0;owned\\u{7}\nnext"
    assert ask_user.visible("a\nb", keep_lines=False) == "a\\u{a}b"
    error = AskUserError("NOT_WAITING", "call \x1b[2Jx is not pending")
    assert "\x1b" not in str(error) and "\\u{1b}[2Jx" in error.message
