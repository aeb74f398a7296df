"""Polling helpers (a call's phase, a ledger's content), each failing loudly after a bound.

A call's phase is waited for by :mod:`scope_tool.testing`, the kit users test with too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scope_tool import testing
from scope_tool.client import Phase


async def wait_for_phase(handle: Any, phase: Phase, within: float = 20) -> Any:
    """Poll ``status`` until the call reaches ``phase`` (the testing kit's, ``within`` positional)."""
    return await testing.wait_for_phase(handle, phase, within=within)


async def wait_until(predicate: Any, within: float = 20) -> None:
    """Poll ``predicate()`` until true (fail after ``within`` seconds)."""
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.05)


async def wait_until_async(predicate: Any, within: float = 20) -> None:
    """Poll the coroutine function ``predicate`` until it returns true."""
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.1)


async def workflow_task_failures(handle: Any) -> list[Any]:
    """The ``WorkflowTaskFailed`` events of a call's history (a healthy call has none)."""
    from temporalio.api.enums.v1 import EventType

    history = await handle.workflow_handle.fetch_history()
    return [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]
