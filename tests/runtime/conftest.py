"""Runtime fixtures: a facade on the test's task queue and an in-process worker for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from runtime.example_tools import REGISTRY
from scope_tool.client import ToolCalls
from scope_tool.testing import start_worker


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    """The facade on this test's task queue, with a short heartbeat timeout."""
    return ToolCalls(
        temporal_client,
        task_queue=task_queue,
        heartbeat_timeout=timedelta(seconds=2),
        notify_initial_interval=timedelta(milliseconds=100),
    )


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    """One in-process worker with the example tools (``slow_safe`` marked retry-safe)."""
    async with start_worker(
        temporal_client, REGISTRY, task_queue=task_queue, retry_safe=("slow_safe",)
    ) as started:
        yield started.worker
