#!/usr/bin/env python3
"""Interoperability check of `ask-user mcp` against the official MCP Python SDK.

    python mcp_client.py --binary PATH --state-dir DIR --transport stdio|http
    python mcp_client.py --binary PATH --state-dir DIR --transport https \
        --config FILE --ca CA_FILE --token TOKEN

Two server runs per invocation, each in its own subdirectory of DIR:

* legacy mode, with a client that advertises form elicitation: the tool list, one
  call whose elicitation is accepted and one whose elicitation is declined;
* timed mode (`--mode timed --timeout 1`), with a client that has no elicitation
  callback: the tool list, a call that comes back pending, and a poll through
  `ask_user_question_answer` that is still pending.

Over `https` the server reads its certificate, key and bearer token from the
configuration file given (`[mcp] tls_cert`, `tls_key`, `tokens`); the client
trusts only CA_FILE and sends `Authorization: Bearer TOKEN`. A request without
the token must be refused (401 with a `WWW-Authenticate` challenge), and a client
that does not trust the CA must fail its handshake.

Prints `ok: ...` per check; exits 0 when all pass, 1 at the first failure.
Needs only the `mcp` package (see requirements.txt) and the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.types import CallToolResult, ElicitResult, ErrorData, TextContent

TOOL = "ask_user_question"
ANSWER_TOOL = "ask_user_question_answer"
ARGUMENTS: dict[str, Any] = {
    "questions": [
        {
            "id": "db",
            "question": "Which database?",
            "header": "Database",
            "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
        }
    ]
}
ACCEPTED_TEXT = '{"answers":[{"id":"db","selected":["SQLite"]}]}'
DECLINED_PREFIX = "Error: The person declined"
SERVING_RE = re.compile(r"serving MCP at (https?://\S+/mcp)")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def ok(message: str) -> None:
    print(f"ok: {message}", flush=True)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def texts(result: CallToolResult) -> list[str]:
    """The text of each content block, failing on any block that is not text."""
    out = []
    for block in result.content:
        check(isinstance(block, TextContent), f"expected only text blocks, got {block!r}")
        assert isinstance(block, TextContent)
        out.append(block.text)
    return out


def dump(result: CallToolResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def keys_named(value: Any, name: str, path: str = "$") -> list[str]:
    """Paths of every object key called `name`, anywhere inside `value`."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            if key == name:
                found.append(f"{path}.{key}")
            found.extend(keys_named(child, name, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found.extend(keys_named(child, name, f"{path}[{i}]"))
    return found


# --- Servers ---------------------------------------------------------------------------------


@asynccontextmanager
async def http_server(binary: str, args: list[str], deadline: float) -> AsyncIterator[str]:
    """Run `binary mcp --http 127.0.0.1:0 ARGS`, yield its URL, terminate it afterwards."""
    cmd = [binary, "mcp", "--http", "127.0.0.1:0", *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    url: list[str] = []

    def drain() -> None:
        # Keeps reading after the URL line so the server never blocks on a full stderr pipe.
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if not url and (m := SERVING_RE.search(line)):
                url.append(m.group(1))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        while not url:
            if proc.poll() is not None:
                reader.join(timeout=2)
                raise CheckFailed(
                    f"server exited with {proc.returncode} before `serving MCP at`; stderr:\n" + "\n".join(lines)
                )
            if time.monotonic() > deadline:
                raise CheckFailed("no `serving MCP at` line on stderr in time; stderr so far:\n" + "\n".join(lines))
            await anyio.sleep(0.05)
        ok(f"http server started: {url[0]}")
        yield url[0]
    except BaseException:
        if lines:
            print("server stderr:\n  " + "\n  ".join(lines), file=sys.stderr, flush=True)
        raise
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=2)


# Set by main() for `--transport https`: the server's configuration file, the CA to trust and
# the bearer token to send.
HTTPS: dict[str, str] = {}


async def check_refusals(url: str) -> None:
    """Over https: no token is 401 with a challenge; a client trusting only the system CAs fails."""
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(verify=ssl_context()) as bare:
        response = await bare.post(url, json=body, headers=headers)
    challenge = response.headers.get("www-authenticate", "")
    check(response.status_code == 401, f"no token: expected 401, got {response.status_code}: {response.text}")
    check(challenge.startswith("Bearer"), f"no token: the challenge is {challenge!r}")
    ok(f"a request without the token is refused: 401, WWW-Authenticate: {challenge}")
    try:
        async with httpx2.AsyncClient() as untrusting:
            await untrusting.post(url, json=body, headers=headers)
    except httpx2.ConnectError as error:
        ok(f"a client that does not trust the test CA fails its handshake: {type(error).__name__}")
    else:
        raise CheckFailed("a client that does not trust the test CA was served")


def ssl_context() -> Any:
    import ssl

    return ssl.create_default_context(cafile=HTTPS["ca"])


@asynccontextmanager
async def connect(
    binary: str, transport: str, args: list[str], deadline: float, **client_kwargs: Any
) -> AsyncIterator[Client]:
    """A connected `mcp.Client` (default `mode="auto"`) on a fresh server run."""
    if transport == "https":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with http_server(binary, ["--config", HTTPS["config"], *args], deadline) as url:
            check(url.startswith("https://"), f"the server does not serve https: {url}")
            await check_refusals(url)
            auth = {"Authorization": f"Bearer {HTTPS['token']}"}
            async with httpx2.AsyncClient(verify=ssl_context(), headers=auth, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http), **client_kwargs) as client:
                    describe(client, f"streamable HTTP over TLS with a bearer token at {url}")
                    yield client
        return
    if transport == "stdio":
        server = StdioServerParameters(command=binary, args=["mcp", *args])
        async with Client(server, **client_kwargs) as client:
            describe(client, f"stdio ({binary} mcp {' '.join(args)})")
            yield client
    else:
        async with http_server(binary, args, deadline) as url:
            async with Client(url, **client_kwargs) as client:
                describe(client, f"streamable HTTP at {url}")
                yield client


def describe(client: Client, how: str) -> None:
    session = client.session
    handshake = "initialize" if session.initialize_result is not None else "server/discover"
    info = client.server_info
    name = f"{info.name} {info.version}" if info else "anonymous server"
    ok(f"connected over {how}: protocol {client.protocol_version} via {handshake}, {name}")


# --- Checks ----------------------------------------------------------------------------------


async def list_tools(client: Client, expected: set[str]) -> dict[str, Any]:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    missing = expected - tools.keys()
    check(not missing, f"tools/list lacks {sorted(missing)}; it has {sorted(tools)}")
    for name in sorted(expected):
        tool = tools[name]
        check(bool(tool.description and tool.description.strip()), f"tool {name} has an empty description")
        check(isinstance(tool.input_schema, dict), f"tool {name} has no inputSchema object")
    schema = tools[TOOL].input_schema
    check(
        "questions" in schema.get("properties", {}),
        f"{TOOL} inputSchema has no `questions` property: {json.dumps(schema)}",
    )
    ok(f"tools/list has {', '.join(sorted(expected))} (described, {TOOL} takes `questions`)")
    return tools


def check_form(params: Any) -> None:
    """The requested schema of the database question, as the brief describes it."""
    check(getattr(params, "mode", None) == "form", f"elicitation is not form mode: {params!r}")
    schema = params.requested_schema
    raw = json.dumps(schema)
    props = schema.get("properties", {})
    check("q01" in props, f"requestedSchema has no q01 property: {raw}")
    one_of = props["q01"].get("oneOf")
    check(isinstance(one_of, list), f"requestedSchema q01 has no oneOf list: {raw}")
    consts = [entry.get("const") for entry in one_of if isinstance(entry, dict)]
    check("SQLite" in consts, f"requestedSchema q01.oneOf has no const SQLite (consts {consts}): {raw}")
    defaults = keys_named(schema, "default")
    check(not defaults, f"requestedSchema has `default` keys at {defaults}: {raw}")


class Answerer:
    """An elicitation callback that checks the form, then answers with a fixed ElicitResult.

    A failed check is kept and raised after the call (raising inside the callback would only
    reach the server as an error response), and the form is declined so the call ends.
    """

    def __init__(self, answer: ElicitResult) -> None:
        self.answer = answer
        self.calls = 0
        self.failure: CheckFailed | None = None

    async def __call__(self, context: ClientRequestContext, params: Any) -> ElicitResult | ErrorData:
        self.calls += 1
        try:
            check_form(params)
        except CheckFailed as e:
            self.failure = self.failure or e
            return ElicitResult(action="decline")
        return self.answer

    def verify(self, what: str) -> None:
        if self.failure:
            raise self.failure
        check(self.calls == 1, f"{what}: expected one elicitation/create, got {self.calls}")


async def run_legacy(binary: str, transport: str, state_dir: str, deadline: float) -> None:
    answerer = Answerer(ElicitResult(action="accept", content={"q01": "SQLite"}))

    async def elicit(context: ClientRequestContext, params: Any) -> ElicitResult | ErrorData:
        return await answerer(context, params)

    async with connect(binary, transport, ["--state-dir", state_dir], deadline, elicitation_callback=elicit) as client:
        await list_tools(client, {TOOL})

        result = await client.call_tool(TOOL, ARGUMENTS)
        answerer.verify("accepted call")
        ok("elicitation/create is a form whose q01 has oneOf const SQLite and no `default` anywhere")
        check(not result.is_error, f"accepted call: isError is true: {dump(result)}")
        check(texts(result) == [ACCEPTED_TEXT], f"accepted call: expected text {ACCEPTED_TEXT}, got {dump(result)}")
        ok(f"accepted call returned {ACCEPTED_TEXT}")

        answerer = Answerer(ElicitResult(action="decline"))
        result = await client.call_tool(TOOL, ARGUMENTS)
        answerer.verify("declined call")
        check(result.is_error, f"declined call: isError is not true: {dump(result)}")
        blocks = texts(result)
        check(
            bool(blocks) and blocks[0].startswith(DECLINED_PREFIX),
            f"declined call: text does not start with {DECLINED_PREFIX!r}: {dump(result)}",
        )
        ok(f"declined call returned an error result: {blocks[0]!r}")


def pending_of(result: CallToolResult, what: str) -> dict[str, Any]:
    check(not result.is_error, f"{what}: isError is true: {dump(result)}")
    blocks = texts(result)
    check(bool(blocks), f"{what}: no content: {dump(result)}")
    try:
        pending = json.loads(blocks[0])
    except json.JSONDecodeError:
        raise CheckFailed(f"{what}: first block is not JSON: {dump(result)}") from None
    check(isinstance(pending, dict) and pending.get("pending") is True, f"{what}: not pending: {dump(result)}")
    call_id = pending.get("callId")
    check(isinstance(call_id, str) and call_id.startswith("call_"), f"{what}: bad callId: {dump(result)}")
    return pending


async def run_timed(binary: str, transport: str, state_dir: str, deadline: float) -> None:
    args = ["--mode", "timed", "--timeout", "1", "--state-dir", state_dir]
    async with connect(binary, transport, args, deadline) as client:
        await list_tools(client, {TOOL, ANSWER_TOOL})

        started = time.monotonic()
        result = await client.call_tool(TOOL, ARGUMENTS)
        elapsed = time.monotonic() - started
        pending = pending_of(result, "timed call")
        call_id = pending["callId"]
        blocks = texts(result)
        check(len(blocks) == 1, f"timed call: expected 1 text block, got {len(blocks)}: {dump(result)}")
        check(ANSWER_TOOL in pending["message"], f"timed call: the pending result does not name {ANSWER_TOOL}: {dump(result)}")
        check("user message" not in blocks[0], f"timed call: the pending result promises a user message: {dump(result)}")
        check(0.5 <= elapsed <= 15, f"timed call: returned after {elapsed:.2f} s, expected about 1 s")
        ok(f"timed call returned pending after {elapsed:.2f} s, naming {ANSWER_TOOL}: {blocks[0]}")

        result = await client.call_tool(ANSWER_TOOL, {"callId": call_id})
        again = pending_of(result, ANSWER_TOOL)
        check(again["callId"] == call_id, f"{ANSWER_TOOL}: callId {again['callId']!r} is not {call_id!r}")
        ok(f"{ANSWER_TOOL} for {call_id} is still pending: {texts(result)[0]}")


async def main_async(args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.timeout
    with anyio.fail_after(args.timeout):
        for name, run in (("legacy", run_legacy), ("timed", run_timed)):
            state_dir = os.path.join(args.state_dir, f"{args.transport}-{name}")
            os.makedirs(state_dir, exist_ok=True)
            await run(args.binary, args.transport, state_dir, deadline)


def first_failure(error: BaseException) -> BaseException:
    """The CheckFailed (else the first leaf) inside a possibly nested exception group."""
    if isinstance(error, BaseExceptionGroup):
        leaves = [first_failure(e) for e in error.exceptions]
        return next((e for e in leaves if isinstance(e, CheckFailed)), leaves[0])
    return error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, help="the ask-user binary")
    parser.add_argument("--state-dir", required=True, help="a scratch directory for the servers' logs")
    parser.add_argument("--transport", required=True, choices=["stdio", "http", "https"])
    parser.add_argument("--config", help="https: the server's configuration file")
    parser.add_argument("--ca", help="https: the CA certificate to trust")
    parser.add_argument("--token", help="https: the bearer token to send")
    parser.add_argument("--timeout", type=float, default=60.0, help="hard limit in seconds for everything")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)
    if args.transport == "https":
        if not (args.config and args.ca and args.token):
            print("FAIL: --transport https needs --config, --ca and --token", file=sys.stderr)
            return 1
        HTTPS.update(config=args.config, ca=args.ca, token=args.token)
    check_binary = os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)
    if not check_binary:
        print(f"FAIL: {args.binary} is not an executable file", file=sys.stderr)
        return 1

    def backstop(_signum: int, _frame: Any) -> None:
        # Only reached when cancellation itself hangs (a stuck subprocess or pipe).
        print(f"FAIL: still running {args.timeout + 15:.0f} s after start; giving up", file=sys.stderr, flush=True)
        os._exit(1)

    signal.signal(signal.SIGALRM, backstop)
    signal.alarm(int(args.timeout) + 15)
    try:
        anyio.run(main_async, args)
    except BaseException as raw:  # noqa: BLE001 - the report is the point
        if isinstance(raw, (KeyboardInterrupt, SystemExit)):
            raise
        error = first_failure(raw)
        if isinstance(error, CheckFailed):
            print(f"FAIL ({args.transport}): {error}", file=sys.stderr, flush=True)
        elif isinstance(error, TimeoutError):
            print(f"FAIL ({args.transport}): timed out after {args.timeout:.0f} s", file=sys.stderr, flush=True)
        else:
            print(f"FAIL ({args.transport}): {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        signal.alarm(0)
    print(f"ok: all checks passed over {args.transport}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
