"""Runs a Python answerer for the native waterfall (called from ``ask_user._native``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from typing import Any

from ._errors import AskUserError


def start(answerer: Any, request_json: str, native_next: Any, done: Any, loop: asyncio.AbstractEventLoop) -> concurrent.futures.Future[None]:
    """Schedules ``answerer(request, next)`` on ``loop``; its end is reported to ``done``."""
    from . import AnswerRequest, Answers, Next, _items

    async def run() -> None:
        request = AnswerRequest._from_json(request_json)
        nxt = Next(native_next, request)
        try:
            result = await answerer(request, nxt)
        except asyncio.CancelledError:
            # Cancelled by the waterfall (nothing waits for it then), or by the answerer itself:
            # either way the question is not left waiting for it.
            done.raised("ASK_ABORTED", "the answerer was cancelled")
            raise
        except AskUserError as error:
            done.raised(error.code, error.message)
            return
        except Exception as error:  # noqa: BLE001 - reported to the waterfall as a failure
            # The model reads the failure's kind; the developer reads the whole of it, logged.
            logging.getLogger("ask_user").exception("the answerer %r failed", answerer)
            done.raised(None, f"the answerer failed ({type(error).__name__})")
            return
        except BaseException:
            done.raised(None, "the answerer was stopped")
            raise
        if result is None:
            done.declined()
        elif isinstance(result, Answers) and result is nxt._result:
            done.passed_on()
        else:
            try:
                items = _items(result, request.questions)
            except AskUserError as error:
                done.raised(error.code, error.message)
                return
            done.answers(json.dumps(items))

    return asyncio.run_coroutine_threadsafe(run(), loop)


def resolve(future: asyncio.Future[Any], value: str | None, error: tuple[str, str] | None) -> None:
    """Ends ``future`` on its loop (scheduled by ``ask_user._native``): with ``value``, or
    raising ``AskUserError(*error)``. A future cancelled meanwhile stays cancelled."""
    if future.done():
        return
    if error is not None:
        future.set_exception(AskUserError(*error))
    else:
        future.set_result(value)
