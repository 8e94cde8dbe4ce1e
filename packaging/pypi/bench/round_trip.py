"""The round trip of one `ask_user_question` call answered in its window: from Python
(`await host.call_tool`) against the same call from Rust (`Host::call_tool`), in one process and
one run, on the same runtime, each on an in-memory timed host whose one answerer is the same
fixed Rust rule. The difference is what crossing into Python costs a call. A Python answerer's
call (an async function in the waterfall, run on the event loop) is timed as well.

    python packaging/pypi/bench/round_trip.py            # ASK_USER_BENCH_CALLS=2000, 5 rounds
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time

import ask_user
from ask_user import _native

CALLS = int(os.environ.get("ASK_USER_BENCH_CALLS", "2000"))
ROUNDS = int(os.environ.get("ASK_USER_BENCH_ROUNDS", "5"))
ARGUMENTS = json.dumps({"questions": [{"id": "db", "question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]})
ANSWERS = [{"id": "db", "selected": ["SQLite"]}]


async def python_calls(python_answerer: bool) -> float:
    host = ask_user.Host.in_memory(timeout=120)
    if python_answerer:

        async def answer(request: ask_user.AnswerRequest, next: ask_user.Next) -> list[dict]:
            return ANSWERS

        host.add_answerer(answer, name="python")
    else:
        host._add_fixed_answerer(ANSWERS)
    with host.turn():
        started = time.perf_counter()
        for i in range(CALLS):
            outcome = await host.call_tool(f"py-{i}", ARGUMENTS)
            assert not outcome.pending and not outcome.is_error, outcome
        return time.perf_counter() - started


def main() -> None:
    rust, python, python_answerer = [], [], []
    for _ in range(ROUNDS):
        rust.append(_native.rust_round_trips(CALLS, ARGUMENTS, json.dumps(ANSWERS)))
        python.append(asyncio.run(python_calls(False)))
        python_answerer.append(asyncio.run(python_calls(True)))
    per_call = lambda seconds: statistics.median(seconds) / CALLS * 1e6  # noqa: E731
    r, p, a = per_call(rust), per_call(python), per_call(python_answerer)
    print(f"round trip of one call answered in its window ({CALLS} calls, median of {ROUNDS} rounds)")
    print(f"  from Rust (Host::call_tool, the anchor):        {r:8.1f} us a call")
    print(f"  from Python (await host.call_tool):             {p:8.1f} us a call   {p / r:5.2f}x Rust, +{p - r:.1f} us")
    print(f"  from Python, a Python answerer answering:       {a:8.1f} us a call   {a / r:5.2f}x Rust, +{a - r:.1f} us")


if __name__ == "__main__":
    main()
