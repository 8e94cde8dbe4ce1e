"""A scripted OpenAI-compatible Chat Completions server on loopback, for the adapter tests.

Each POST to ``/v1/chat/completions`` (or ``/chat/completions``) is answered with the next step of
a script, so a test drives an agent framework through the exact tool calls it wants, with no
real model and no network beyond 127.0.0.1::

    with ScriptedModel([tool_call("add", {"a": 1, "b": 2}, "call_1"), text("3")]) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="test")
        ...
        assert tool_result(model.requests[1], "call_1") == "3"

A step is ``tool_call(...)``, ``tool_calls(...)``, ``text(...)``, or a callable taking the request
body (parsed JSON) and returning one of those. Every request body is kept in ``.requests``.
Requests with ``"stream": true`` get Server-Sent Events chunks ending with ``data: [DONE]``.
When the script runs out, the server answers HTTP 500 naming the request, records the error in
``.errors``, and leaving the ``with`` block then raises ``AssertionError`` (OpenAI clients retry
a 500, so pass ``max_retries=0`` to the client to fail at once).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ScriptedModel",
    "text",
    "tool_call",
    "tool_calls",
    "tool_result",
    "tool_results",
    "user_messages",
]

MODEL_NAME = "scripted"

Step = dict[str, Any]


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> Step:
    """An assistant turn with one tool call (finish_reason ``tool_calls``)."""
    return tool_calls((name, arguments, call_id))


def tool_calls(*calls: tuple[str, dict[str, Any], str]) -> Step:
    """An assistant turn with several tool calls, each ``(name, arguments, call_id)``."""
    return {
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments, call_id in calls
        ],
        "finish_reason": "tool_calls",
    }


def text(content: str) -> Step:
    """An assistant turn with text content (finish_reason ``stop``)."""
    return {"content": content, "tool_calls": None, "finish_reason": "stop"}


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def tool_results(request: dict[str, Any]) -> dict[str, str]:
    """The tool messages of a request body, as ``{tool_call_id: content text}``."""
    return {
        message["tool_call_id"]: _content_text(message.get("content"))
        for message in request.get("messages", [])
        if message.get("role") == "tool"
    }


def tool_result(request: dict[str, Any], call_id: str) -> str:
    """The content text of the tool message answering ``call_id`` in a request body."""
    results = tool_results(request)
    if call_id not in results:
        raise AssertionError(
            f"no tool message for tool_call_id {call_id!r}; the request has {sorted(results)}"
        )
    return results[call_id]


def user_messages(request: dict[str, Any]) -> list[str]:
    """The content texts of the user messages of a request body, in order."""
    return [
        _content_text(message.get("content"))
        for message in request.get("messages", [])
        if message.get("role") == "user"
    ]


class ScriptedModel:
    """The server; a context manager. ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, script: Iterable[Step | Callable[[dict[str, Any]], Step]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedModel:
        handler = type("_Handler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.stop()
        if exc_type is None and self.errors:
            raise AssertionError("scripted model: " + "; ".join(self.errors))

    @property
    def port(self) -> int:
        assert self._server is not None, "ScriptedModel not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """How many steps have not been served yet."""
        with self._lock:
            return len(self.script) - len(self.requests)

    # --- serving ---------------------------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> tuple[int, Step | None]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            if index >= len(self.script):
                self.errors.append(
                    f"request {index + 1} arrived but the script has only "
                    f"{len(self.script)} step(s); last messages: {body.get('messages', [])[-2:]}"
                )
                return index, None
            step = self.script[index]
        if callable(step):
            step = step(body)
        return index, step


class _Handler(BaseHTTPRequestHandler):
    model: ScriptedModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "tests"}
                    ],
                },
            )
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "body is not JSON"}})
            return
        index, step = self.model._next(body)
        if step is None:
            self._send_json(
                500,
                {
                    "error": {
                        "message": f"scripted model: script exhausted at request {index + 1} "
                        f"(script has {len(self.model.script)} steps)",
                        "type": "script_exhausted",
                    }
                },
            )
            return
        completion_id = f"chatcmpl-scripted-{index + 1}"
        model_name = body.get("model") or MODEL_NAME
        created = int(time.time())
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if body.get("stream"):
            self._stream(step, completion_id, model_name, created, body, usage)
            return
        message: dict[str, Any] = {"role": "assistant", "content": step["content"]}
        if step["tool_calls"]:
            message["tool_calls"] = step["tool_calls"]
        self._send_json(
            200,
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model_name,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": step["finish_reason"],
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            },
        )

    def _stream(
        self,
        step: Step,
        completion_id: str,
        model_name: str,
        created: int,
        body: dict[str, Any],
        usage: dict[str, int],
    ) -> None:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_name,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
                ],
            }

        events = [chunk({"role": "assistant", "content": "" if step["tool_calls"] else None})]
        if step["content"]:
            events.append(chunk({"content": step["content"]}))
        for i, call in enumerate(step["tool_calls"] or []):
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": call["id"],
                                "type": "function",
                                "function": {
                                    "name": call["function"]["name"],
                                    "arguments": call["function"]["arguments"],
                                },
                            }
                        ]
                    }
                )
            )
        events.append(chunk({}, step["finish_reason"]))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model_name,
                    "choices": [],
                    "usage": usage,
                }
            )
        payload = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
        payload += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


try:  # a pytest fixture, for tests that `from scripted_model import scripted_model`
    import pytest
except ImportError:  # pragma: no cover - the server itself needs only the standard library
    pass
else:

    @pytest.fixture
    def scripted_model():
        """A factory: ``model = scripted_model([...steps])`` starts a server, stopped (and its
        errors raised) when the test ends."""
        started: list[ScriptedModel] = []

        def start(script: Iterable[Step | Callable[[dict[str, Any]], Step]]) -> ScriptedModel:
            model = ScriptedModel(script).start()
            started.append(model)
            return model

        yield start
        errors = []
        for model in started:
            model.stop()
            errors.extend(model.errors)
        if errors:
            raise AssertionError("scripted model: " + "; ".join(errors))
