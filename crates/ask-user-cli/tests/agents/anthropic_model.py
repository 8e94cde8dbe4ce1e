"""A scripted stand-in for the Anthropic Messages API, for driving a real Claude Code on loopback.

    python3 anthropic_model.py PORT LOG TOOL_JSON

Every request is appended to LOG (one JSON object a line). A conversation whose tools include
TOOL_JSON's `name` and that holds no tool result yet gets one `tool_use` of that tool with
TOOL_JSON's `input`; once a tool result is in the conversation, it is written to LOG.result and
the model ends its turn with "done". Anything else (a title, a quota check) gets "ok".
Streaming (SSE) and plain JSON replies both work. It never talks to the network.
"""

import http.server
import json
import sys

PORT, LOG, TOOL = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])


def sse(events):
    return b"".join(
        b"event: " + name.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"
        for name, data in events
    )


def stream(content, stop):
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for i, block in enumerate(content):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 5}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


class Model(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        messages = body.get("messages", [])
        tools = [t.get("name") for t in body.get("tools", [])]
        results = [b for m in messages if m.get("role") == "user" and isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            with open(LOG + ".result", "w") as out:
                out.write(json.dumps(results[-1]))
            content, stop = [{"type": "text", "text": "done"}], "end_turn"
        elif TOOL["name"] in tools:
            content = [{"type": "tool_use", "id": "toolu_scripted", "name": TOOL["name"], "input": TOOL["input"]}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "ok"}], "end_turn"
        if body.get("stream"):
            data, kind = stream(content, stop), "text/event-stream"
        else:
            data = json.dumps({"id": "msg_scripted", "type": "message", "role": "assistant", "model": "x",
                               "content": content, "stop_reason": stop,
                               "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Model).serve_forever()
