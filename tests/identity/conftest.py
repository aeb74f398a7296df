"""Identity fixtures: the facade on the test's task queue, a worker serving ``guarded_ask``, and
a worker process that verifies identity tokens with a known secret.

The secret is installed the way ``python -m scope_tool.workers`` does it (``build_worker`` reads
``SCOPE_TOOL_IDENTITY_SECRET``); it is removed again after each test so no other test's worker
in this process verifies with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from identity.tools import REGISTRY
from scope_tool.client import ToolCalls
from scope_tool.wire.identity import SECRET_VARIABLE, install_identity_secret
from scope_tool.workers import build_worker

SECRET = "test-identity-secret-0123456789"


@pytest.fixture
def calls(temporal_client: Any, task_queue: str) -> ToolCalls:
    return ToolCalls(temporal_client, task_queue=task_queue)


@pytest.fixture
def identity_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``SCOPE_TOOL_IDENTITY_SECRET`` set for this test (workers built now install it)."""
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    yield SECRET
    install_identity_secret(None)


@pytest.fixture
async def worker(temporal_client: Any, task_queue: str, identity_secret: str) -> AsyncIterator[Any]:
    """An in-process worker serving ``guarded_ask``, verifying tokens with ``SECRET``."""
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue) as running:
        yield running
