"""Inbox fixtures: a facade on the test's task queue and an in-process worker serving ``ask``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from inbox.ask_tools import REGISTRY
from workers import build_worker
from workflows import ToolCalls


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    """The facade on this test's task queue."""
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    """One in-process worker with the ``ask`` tool."""
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
        yield running
