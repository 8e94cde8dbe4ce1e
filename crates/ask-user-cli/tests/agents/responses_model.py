"""A scripted stand-in for the OpenAI Responses API, for driving a real Codex on loopback.

    python3 responses_model.py PORT LOG CALLS_JSON

Every request is appended to LOG (one JSON object a line). CALLS_JSON is a list of tool calls
(`{"name": …, "arguments": {…}}` for a function tool, `{"name": …, "input": "…"}` for a
free-form one); the first one whose tool the request offers and that has no output in the
conversation yet is made. Once every call offered has its output, the outputs are written to
LOG.result (a JSON list) and the model ends its turn with "done". Anything else gets "ok".
Replies are streamed (SSE). It never talks to the network.
"""

import http.server
import json
import sys

PORT, LOG, CALLS = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])


def event(data):
    return b"event: " + data["type"].encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def reply(item):
    response = {"id": "resp_scripted", "object": "response", "status": "completed", "output": [item],
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 15}}
    return b"".join([
        event({"type": "response.created", "response": dict(response, status="in_progress", output=[])}),
        event({"type": "response.output_item.added", "output_index": 0, "item": item}),
        event({"type": "response.output_item.done", "output_index": 0, "item": item}),
        event({"type": "response.completed", "response": response}),
    ])


def tool_names(body):
    return {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}


class Model(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        data = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        items = [i for i in body.get("input", []) if isinstance(i, dict)]
        outputs = {i.get("call_id"): i for i in items
                   if i.get("type") in ("function_call_output", "custom_tool_call_output")}
        offered = tool_names(body)
        item = None
        for n, call in enumerate(CALLS):
            call_id = "call_scripted_%d" % n
            if call["name"] not in offered or call_id in outputs:
                continue
            if "input" in call:
                item = {"type": "custom_tool_call", "id": "ctc_%d" % n, "status": "completed",
                        "call_id": call_id, "name": call["name"], "input": call["input"]}
            else:
                item = {"type": "function_call", "id": "fc_%d" % n, "status": "completed",
                        "call_id": call_id, "name": call["name"],
                        "arguments": json.dumps(call["arguments"])}
            break
        if item is None:
            if outputs:
                with open(LOG + ".result", "w") as out:
                    out.write(json.dumps(list(outputs.values())))
            text = "done" if outputs else "ok"
            item = {"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        data = reply(item)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Model).serve_forever()
