"""Waiting for a call to reach a phase, and answering it once it asks, each within a bound.

A call's status is a query: polling it is how a test learns that the tool asked a question,
since nothing pushes that to the caller. Each wait fails with an ``AssertionError`` after
``within`` seconds (a test failure naming the call and the phase it stayed in), never hangs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scope_tool.client import AnswerReceipt, CallStatus, Phase, ToolCallHandle

__all__ = ["answer_when_asked", "wait_for_input", "wait_for_phase"]

_POLL_INTERVAL = 0.05


async def wait_for_phase(handle: ToolCallHandle, phase: Phase, *, within: float = 20) -> CallStatus:
    """Poll the call's status until it is in ``phase``; return that status.

    Raises:
        AssertionError: the call was not in ``phase`` within ``within`` seconds, or it ended
            in another phase (an ended call never changes again).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        status = await handle.status()
        if status.phase is phase:
            return status
        if status.phase.is_terminal:
            message = status.outcome.message if status.outcome is not None else ""
            raise AssertionError(
                f"call {handle.call_id} ended {status.phase}, expected {phase}: {message}"
            )
        if loop.time() > deadline:
            raise AssertionError(f"call {handle.call_id} stayed {status.phase}, expected {phase}")
        await asyncio.sleep(_POLL_INTERVAL)


async def wait_for_input(handle: ToolCallHandle, *, within: float = 20) -> CallStatus:
    """Wait until the call asks for input; the status's ``pending`` holds the question."""
    return await wait_for_phase(handle, Phase.AWAITING_INPUT, within=within)


async def answer_when_asked(
    handle: ToolCallHandle,
    response: Any,
    *,
    answered_by: str | None = None,
    within: float = 20,
) -> AnswerReceipt:
    """Wait until the call asks, then answer its pending question through the one answer path.

    Args:
        response: the answer, as for :meth:`ToolCallHandle.answer` (``True``, ``{"ok": 1}``).
        answered_by: who answers (checked against the call's ``allowed_answerers``).
        within: seconds to wait for the question.

    Raises:
        AnswerRejectedError: the call refused the answer (``.reason`` says why).
    """
    status = await wait_for_input(handle, within=within)
    assert status.pending is not None  # AWAITING_INPUT always carries its question
    return await handle.answer(
        response, request_id=status.pending.request_id, answered_by=answered_by
    )
