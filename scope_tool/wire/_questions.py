"""A round's question, read once per process: the workflow and the next round share it.

A question crosses Temporal as its JSON text (``RoundInputRequested.input_request``, then
``CallToolInput.input_request``). Reading it compiles its response schema (about 20 us for an
approval form, more for a large schema); the workflow reads it when the question is asked, and
the next round's activity, most often on the same worker (the round is first offered on the
main queue), reads the same text again to re-enter the tool. :func:`read_question` keeps the
questions a process read last, so the activity takes the question the workflow already read
instead of parsing and compiling it again. ``InputRequest`` is immutable and its compiled
schema safe to share between threads, and reading is pure, so a kept one is the one a fresh
read would give.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from scope_tool import InputRequest

__all__ = ["QUESTIONS_KEPT", "read_question"]

QUESTIONS_KEPT: Final = 512
"""How many distinct questions a process keeps (the calls waiting on one worker at once)."""


@lru_cache(maxsize=QUESTIONS_KEPT)
def read_question(text: bytes) -> InputRequest:
    """The question whose JSON text is ``text`` (read once, then kept).

    Raises:
        InvalidInputRequestError: the text is not a valid input request (not kept).
    """
    return InputRequest.from_json(text)
