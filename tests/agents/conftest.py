"""Agents fixtures: the facade on the test's task queue and an in-process worker for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.agent_tools import REGISTRY

from scope_tool.client import ToolCalls
from scope_tool.workers import build_worker


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
        yield running
