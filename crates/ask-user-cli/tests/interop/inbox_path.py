#!/usr/bin/env python3
"""Two agents, one inbox, as processes: `ask-user inbox` and two `ask-user mcp` processes.

    python inbox_path.py --binary PATH --state-dir DIR

* client A is the official MCP Python SDK (`mcp.Client`) over stdio, with no form support;
* client B is a bare JSON-RPC client on protocol 2025-06-18 that declares `roots`;
* the inbox sends ntfy pushes (to a receiver here) with answer buttons.

Both timed questions show on one page with their session's client (and B's folder); the inbox is
killed with SIGKILL and started again (same address and token, both questions shown again); B's
window closes (pending, continued on the page); B's MCP process is killed with SIGKILL; A is
answered on the page within its window, B by pressing an ntfy answer button, which settles it
in its log. Every question settles exactly once.

Prints `ok: ...` per check; exits 0 when all pass, 1 at the first failure.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

WAIT = 30.0


class CheckFailed(Exception):
    pass


def ok(message: str) -> None:
    print(f"ok: {message}", flush=True)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def question(qid: str, text: str) -> dict[str, Any]:
    return {
        "questions": [
            {
                "id": qid,
                "question": text,
                "header": qid.title(),
                "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
            }
        ]
    }


# --- ntfy receiver ---------------------------------------------------------------------------

PUSHES: "queue.Queue[dict[str, Any]]" = queue.Queue()
SEEN_PUSHES: list[dict[str, Any]] = []


class Ntfy(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the handler's name)
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        try:
            PUSHES.put(json.loads(body))
        except ValueError:
            pass
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def ntfy_server() -> str:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ntfy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def forget_pushes() -> None:
    """Drops every push received so far (their buttons were a dead inbox's grants)."""
    SEEN_PUSHES.clear()
    while True:
        try:
            PUSHES.get_nowait()
        except queue.Empty:
            return


def button_for(call_id: str, label: str) -> dict[str, Any]:
    """The newest push's answer button choosing `label` for `call_id`."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            SEEN_PUSHES.append(PUSHES.get(timeout=0.2))
        except queue.Empty:
            pass
        for push in reversed(SEEN_PUSHES):
            for action in push.get("actions", []):
                if f"/cards/{call_id}/answer" in action.get("url", "") and action.get("label") == label:
                    return action
    raise CheckFailed(f"no push with a {label!r} button for {call_id}; pushes: {SEEN_PUSHES}")


# --- the inbox -------------------------------------------------------------------------------


class InboxProcess:
    def __init__(self, binary: str, state_dir: str, ntfy: str, fresh: bool = True) -> None:
        # A first start on a free port; a restart where the last one served (the bookmark).
        where = ["--addr", "127.0.0.1:0"] if fresh else []
        cmd = [
            binary, "inbox", "--state-dir", state_dir, *where,
            "--ntfy", "inbox-test", "--ntfy-server", ntfy, "--notify-after", "0",
        ]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        check(line.startswith("http://127.0.0.1:"), f"the inbox printed no URL: {line!r}")
        self.url = line
        base, token = line.split("/?token=")
        self.base, self.token = base, token

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def snapshot(self) -> list[dict[str, Any]]:
        """The cards a page gets when it connects."""
        req = urllib.request.Request(f"{self.base}/events?token={self.token}&client=inbox-test-page")
        with urllib.request.urlopen(req, timeout=10) as response:
            buf = b""
            while b"event: snapshot" not in buf or b"\n\n" not in buf.split(b"event: snapshot", 1)[1]:
                chunk = response.read1(65536)
                if not chunk:
                    break
                buf += chunk
        event = buf.split(b"event: snapshot", 1)[1].split(b"\n\n", 1)[0].decode()
        data = next(line[len("data: "):] for line in event.splitlines() if line.startswith("data: "))
        return json.loads(data)["cards"]

    def cards_until(self, want: Any, what: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + WAIT
        cards: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            cards = self.snapshot()
            if want(cards):
                return cards
            time.sleep(0.2)
        raise CheckFailed(f"the page never showed {what}; it shows {json.dumps(cards)}")

    def answer(self, card: dict[str, Any], qid: str, label: str) -> dict[str, Any]:
        body = json.dumps({"session": card["session"], "client": "inbox-test-page", "answers": [{"id": qid, "selected": [label]}]}).encode()
        req = urllib.request.Request(
            f"{self.base}/cards/{card['callId']}/answer?token={self.token}",
            data=body,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=WAIT) as response:
            return json.loads(response.read())


def press(action: dict[str, Any]) -> dict[str, Any]:
    """An ntfy `http` action as the app sends it: no page token, no origin."""
    req = urllib.request.Request(
        action["url"], data=action["body"].encode(), headers=action.get("headers", {}), method=action["method"]
    )
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return {"status": refused.code, **json.loads(refused.read() or b"{}")}


# --- client B: bare JSON-RPC on 2025-06-18 ---------------------------------------------------


class RawClient:
    def __init__(self, binary: str, state_dir: str, root: str) -> None:
        self.proc = subprocess.Popen(
            [binary, "mcp", "--mode", "timed", "--inbox", "--state-dir", state_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )
        self.root = root
        self.responses: dict[int, "queue.Queue[dict[str, Any]]"] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("method") == "roots/list":
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": [{"uri": f"file://{self.root}", "name": "b"}]}})
            elif "id" in message and "method" not in message:
                self.box(message["id"]).put(message)

    def box(self, id_: int) -> "queue.Queue[dict[str, Any]]":
        with self.lock:
            return self.responses.setdefault(id_, queue.Queue())

    def request(self, id_: int, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})

    def response(self, id_: int, timeout: float = WAIT) -> dict[str, Any]:
        try:
            return self.box(id_).get(timeout=timeout)
        except queue.Empty:
            raise CheckFailed(f"no response to request {id_}") from None

    def start(self) -> None:
        self.request(1, "initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": False}},
            "clientInfo": {"name": "raw-client", "version": "1"},
        })
        init = self.response(1)
        check(init["result"]["protocolVersion"] == "2025-06-18", f"negotiated {init}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


# --- the run ---------------------------------------------------------------------------------


def settled_once(binary: str, log: str, call_id: str) -> dict[str, Any]:
    view = json.loads(subprocess.run([binary, "pending", log, "--json"], capture_output=True, text=True, check=True).stdout)
    settled = [s for s in view["settled"] if s["callId"] == call_id]
    check(len(settled) == 1, f"{call_id} settled {len(settled)} times in {log}: {view}")
    check(all(a["callId"] != call_id for a in view["active"]), f"{call_id} still active: {view}")
    return settled[0]


async def run(binary: str, state_dir: str) -> None:
    ntfy = ntfy_server()
    inbox = InboxProcess(binary, state_dir, ntfy)
    ok(f"inbox serving {inbox.base}")
    raw: RawClient | None = None
    try:
        server = StdioServerParameters(command=binary, args=["mcp", "--mode", "timed", "--inbox", "--state-dir", state_dir])
        async with Client(server) as client:
            result: dict[str, Any] = {}

            async def ask_a() -> None:
                result["a"] = await client.call_tool("ask_user_question", {**question("db", "Which database for A?"), "timeout": 120})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ask_a)
                raw = RawClient(binary, state_dir, "/work/agent-b")
                raw.start()
                raw.request(2, "tools/call", {"name": "ask_user_question", "arguments": {**question("store", "Which store for B?"), "timeout": 6}})

                def both_open(cards: list[dict[str, Any]]) -> bool:
                    return len(cards) == 2 and all(c["state"] == "open" for c in cards)

                def labelled(cards: list[dict[str, Any]]) -> bool:
                    # B's folder comes from its answer to `roots/list`, a moment after its call.
                    return both_open(cards) and any("/work/agent-b" in (c.get("label") or "") for c in cards)

                cards = await anyio.to_thread.run_sync(lambda: inbox.cards_until(labelled, "both questions open, B's with its folder"))
                by_q = {c["questions"][0]["id"]: c for c in cards}
                check(by_q["db"]["session"] != by_q["store"]["session"], f"one session for both: {cards}")
                # A declares no roots: its folder is its server's working directory (this one's).
                a_label = by_q["db"].get("label") or ""
                check(
                    a_label.startswith("mcp ") and a_label.endswith(" · " + os.getcwd()),
                    f"A's card names no client version or folder: {by_q['db']}",
                )
                check(by_q["store"].get("label") == "raw-client 1 · /work/agent-b", f"B's card: {by_q['store']}")
                check(isinstance(by_q["db"].get("askedAtMs"), int), f"no age: {by_q['db']}")
                # The time left in each host's window, as the host told the inbox.
                for card in cards:
                    left = card.get("remainingMs")
                    check(isinstance(left, int) and 0 < left <= 120_000, f"no time left: {card}")
                ok("both sessions' questions on one page, with their clients, folders, ages and time left")

                # The inbox dies and is started again: same address and token, same questions.
                # Its answer buttons die with it: only the new inbox's pushes count from here.
                inbox.kill()
                forget_pushes()
                again = InboxProcess(binary, state_dir, ntfy, fresh=False)
                check(again.url == inbox.url, f"the address changed: {inbox.url} -> {again.url}")
                inbox = again
                await anyio.to_thread.run_sync(lambda: inbox.cards_until(both_open, "both questions after the restart"))
                ok("the inbox killed and started again: the same URL shows both questions again")

                # B's window closes: pending for its model, continued on the page.
                pending = await anyio.to_thread.run_sync(lambda: raw.response(2))
                texts = [b["text"] for b in pending["result"]["content"]]
                check(len(texts) == 1 and '"pending":true' in texts[0], f"B's result: {pending}")
                call_b = json.loads(texts[0])["callId"]

                def b_continued(cards: list[dict[str, Any]]) -> bool:
                    return any(c["callId"] == call_b and c["state"] == "continued" for c in cards)

                await anyio.to_thread.run_sync(lambda: inbox.cards_until(b_continued, "B continued"))
                ok(f"B's window closed: pending for its model (one text block), continued on the page ({call_b})")
                raw.kill()
                ok("B's MCP process killed with SIGKILL")

                # A, in its window, answered on the page.
                card_a = by_q["db"]
                reply = await anyio.to_thread.run_sync(lambda: inbox.answer(card_a, "db", "SQLite"))
                check(reply.get("ok") is True and reply.get("path") == "foreground", f"the page's answer: {reply}")

            answer_a = [b.text for b in result["a"].content]
            check(answer_a == ['{"answers":[{"id":"db","selected":["SQLite"]}]}'], f"A got {answer_a}")
            ok("A answered on the page in its window: its model got the answer")

        # B, whose host is gone, answered by an ntfy answer button.
        action = await anyio.to_thread.run_sync(lambda: button_for(call_b, "PostgreSQL"))
        pressed = await anyio.to_thread.run_sync(lambda: press(action))
        check(pressed.get("ok") is True, f"the button press: {pressed}")
        again = await anyio.to_thread.run_sync(lambda: press(action))
        check(again.get("ok") is not True and again.get("status") == 403, f"a second press answered again: {again}")
        ok("B answered late by an ntfy answer button (once; a second press is refused)")

        logs = [os.path.join(state_dir, name) for name in os.listdir(state_dir) if name.endswith(".jsonl")]
        check(len(logs) == 2, f"logs: {logs}")
        found = {}
        for log in logs:
            view = json.loads(subprocess.run([binary, "pending", log, "--json"], capture_output=True, text=True, check=True).stdout)
            for settled in view["settled"]:
                found[settled["callId"]] = log
        call_a = next(c for c in found if c != call_b)
        settled_a = settled_once(binary, found[call_a], call_a)
        settled_b = settled_once(binary, found[call_b], call_b)
        check(settled_a["answers"] == [{"id": "db", "selected": ["SQLite"]}], f"A: {settled_a}")
        check(settled_b["answers"] == [{"id": "store", "selected": ["PostgreSQL"]}], f"B: {settled_b}")
        ok("every question settled exactly once, with the answer given")
    finally:
        if raw is not None and raw.proc.poll() is None:
            raw.kill()
        inbox.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--state-dir", required=True)
    args = parser.parse_args()
    try:
        anyio.run(run, args.binary, args.state_dir)
    except CheckFailed as failed:
        print(f"FAILED: {failed}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
