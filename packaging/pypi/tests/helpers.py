"""What the tests share: the question, the log's view of a call, the inbox page."""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import ask_user_command

ASK = "ask_user_question"


def db_question(timeout: int) -> dict[str, Any]:
    return {
        "questions": [{"id": "db", "question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}],
        "timeout": timeout,
    }


def records(log_path: str | None) -> list[dict[str, Any]]:
    assert log_path is not None
    return [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]


def tool_calls_of(log_path: str | None, call_id: str) -> list[dict[str, Any]]:
    """The `tool/call` records of `call_id`: one per question asked."""
    return [r for r in records(log_path) if r["type"] == "tool/call" and r["data"]["callId"] == call_id]


def admitted_replies(log_path: str | None, call_id: str) -> list[dict[str, Any]]:
    """The late replies to `call_id` admitted (`user/message`): the model read each."""
    found = []
    for r in records(log_path):
        if r["type"] == "user/message":
            source = r["data"].get("message", r["data"]).get("source", {})
            if source.get("callId") == call_id:
                found.append(r)
    return found


class InboxPage:
    """`ask-user inbox` for a state directory, and its page's routes as the page's script uses
    them (the token, `GET /pending`, `POST /cards/{callId}/answer`)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.process = subprocess.Popen(
            [ask_user_command(), "inbox", "--addr", "127.0.0.1:0", "--state-dir", str(state_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "?token=" in line:
                self.base, self.token = line.strip().split("/?token=")
                break
        else:
            pytest.fail("`ask-user inbox` printed no page address")

    def pending(self) -> dict:
        with urllib.request.urlopen(f"{self.base}/pending?token={self.token}", timeout=10) as response:
            return json.loads(response.read())

    def card(self, call_id: str) -> tuple[str, str] | None:
        for session in self.pending()["sessions"]:
            for question in session["active"]:
                if question["callId"] == call_id:
                    return session["session"], question["state"]
        return None

    async def wait_card(self, call_id: str, state: str) -> str:
        for _ in range(200):
            card = await asyncio.to_thread(self.card, call_id)
            if card is not None and card[1] == state:
                return card[0]
            await asyncio.sleep(0.05)
        pytest.fail(f"{call_id} never showed {state} on the page: {self.pending()}")

    def answer(self, session: str, call_id: str, answers: list[dict]) -> dict:
        request = urllib.request.Request(
            f"{self.base}/cards/{call_id}/answer?token={self.token}",
            data=json.dumps({"session": session, "answers": answers}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            pytest.fail(f"the page refused the answer to {call_id}: {error.code} {error.read().decode()}")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)
