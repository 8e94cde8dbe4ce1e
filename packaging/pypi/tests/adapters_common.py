"""What the adapter tests share: the question, the log's view of a call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
