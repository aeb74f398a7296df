"""Policy fixtures: the facade on the test's task queue and an in-process worker for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from policies.policy_tools import REGISTRY
from policies.webhook_receiver import receiver

__all__ = ["calls", "receiver", "worker"]
from scope_tool.client import ToolCalls
from scope_tool.testing import start_worker


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str) -> AsyncIterator[Any]:
    async with start_worker(temporal_client, REGISTRY, task_queue=task_queue) as started:
        yield started.worker
