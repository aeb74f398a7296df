"""Retrying an update the server turned away for load, not for its content.

Temporal admits at most ``history.maxInFlightUpdates`` (10 by default) updates per workflow at
once and answers the next with RESOURCE_EXHAUSTED; it aborts admitted updates with UNAVAILABLE
"workflow update was aborted" when it reloads the workflow's state; and once a workflow task has
failed or timed out twice in a row (a worker killed mid-task, a server too slow to record it) it
refuses updates and queries with FAILED_PRECONDITION "... Workflow Task in failed state" until a
worker completes one. None says anything about the answer, and all are safe to retry: an answer
carries an update id, so a retry that reaches an update already applied gets that update's
verdict, never a second application.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

BUSY_RETRY_BUDGET_SECONDS = 30.0
"""How long an answer keeps retrying a busy server before its error reaches the caller."""

_FIRST_DELAY = 0.05
_MAX_DELAY = 1.0

_CLOSING = "workflow is closing"
"""RESOURCE_EXHAUSTED with these words means the call is finishing, not that it is busy."""


_TASK_FAILING = "Workflow Task in failed state"
"""FAILED_PRECONDITION with these words: the call's workflow task keeps failing for now."""


def task_failing(err: RPCError) -> bool:
    """True when the server refused because the call's workflow task keeps failing."""
    return err.status == RPCStatusCode.FAILED_PRECONDITION and _TASK_FAILING in err.message


def server_busy(err: RPCError) -> bool:
    """True when the server turned the update away for load, a reload or a failing task,
    not for its content."""
    if err.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return _CLOSING not in err.message
    return err.status == RPCStatusCode.UNAVAILABLE or task_failing(err)


async def retry_while_busy(
    send: Callable[[], Awaitable[T]],
    *,
    budget_seconds: float = BUSY_RETRY_BUDGET_SECONDS,
) -> T:
    """``send()``, again after a jittered backoff while the server says it is busy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_seconds
    delay = _FIRST_DELAY
    while True:
        try:
            return await send()
        except RPCError as err:
            if not server_busy(err) or loop.time() + delay > deadline:
                raise
        # Full jitter: a crowd of answers turned away together does not come back together.
        await asyncio.sleep(random.uniform(0, delay))
        delay = min(delay * 2, _MAX_DELAY)
