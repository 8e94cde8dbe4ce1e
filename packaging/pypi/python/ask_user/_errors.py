"""The one exception type of the package."""

from __future__ import annotations


class AskUserError(Exception):
    """An error of the ask-user library, carrying its SPEC code.

    ``code`` is the stable code (``OUT_OF_ORDER``, ``DUPLICATE_CALL_ID``, ``NOT_WAITING``,
    ``REPLY_QUEUED``, ``BAD_ANSWER``, ``BAD_CONFIG``, ``STORE``, ...); ``message`` is the text
    a person reads, control characters escaped (a call id or an answer from a model may carry
    them). ``str(error)`` is ``"CODE: message"``.
    """

    def __init__(self, code: str, message: str) -> None:
        from ._native import visible

        code, message = visible(code, keep_lines=False), visible(message, keep_lines=False)
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
