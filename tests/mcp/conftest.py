"""Fixtures of the MCP tests: a ledger file and a worker process on the test's task queue.

The Temporal server is the session's (``tests/conftest.py``); each test gets its own task
queue, so its worker, its MCP server and its calls see nobody else's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_harness import Process, worker


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """The side-effect ledger: one line per effect ``approve_write`` really performed."""
    path = tmp_path / "ledger.txt"
    path.touch()
    return path


@pytest.fixture
async def worker_process(
    temporal_address: str, task_queue: str, tmp_path: Path, ledger: Path
) -> AsyncIterator[Process]:
    """A ready ``python -m scope_tool.workers`` serving the test tools; stopped (or found dead) after."""
    process = await worker(temporal_address, task_queue, tmp_path, ledger).start().ready()
    try:
        yield process
    finally:
        process.stop()
