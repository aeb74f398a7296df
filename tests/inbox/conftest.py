"""Inbox fixtures: a facade on the test's task queue and an in-process worker serving ``ask``.

The worker fixture cancels the calls a test left waiting before it stops, so the inbox lists of
later tests never hold calls whose worker is gone (their status could no longer be read).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from inbox.ask_tools import REGISTRY
from scope_tool.client import ToolCalls, ToolCallsError
from scope_tool.workers import build_worker


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    """The facade on this test's task queue."""
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str, calls: ToolCalls) -> AsyncIterator[Any]:
    """One in-process worker with the ``ask`` tool; calls still running are cancelled after."""
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
        yield running
        query = (  # the calls, not the task queue's long-lived tool catalog workflow
            f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
            " AND WorkflowType = 'scope_tool.ToolCall'"
        )
        async for execution in temporal_client.list_workflows(query):
            handle = calls.get(execution.id)
            try:
                await handle.cancel()
                await asyncio.wait_for(handle.result(), timeout=10)
            except ToolCallsError:
                pass  # it finished in the meantime
