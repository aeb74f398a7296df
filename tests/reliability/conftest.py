"""Fixtures of the reliability scenarios: servers and workers this suite may break.

Everything runs against real processes. A session-wide dedicated dev server and one worker
*process* serve the quick scenarios (hostile input, answer integrity, authorization), so a
crash of that worker is visible as a dead process rather than hidden inside the test process.
Scenarios that SIGKILL the server get a fresh one of their own (``fresh_server``). If a server
cannot start, the fixture raises: the test errors loudly, it never skips.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.servers import DedicatedDevServer
from temporalio.client import Client

from scope_tool.client import DATA_CONVERTER, ToolCalls

from ._ledger import SideEffectLedger
from ._processes import WorkerProcess

HEARTBEAT_TIMEOUT = timedelta(seconds=3)
"""Short, so a killed worker's abandoned rounds end within seconds in the small scenarios."""


@pytest.fixture(scope="session")
def reliability_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the session's server database, ledgers and process logs."""
    return tmp_path_factory.mktemp("reliability")


@pytest.fixture(scope="session")
def reliability_server(reliability_dir: Path) -> Iterator[DedicatedDevServer]:
    """A dev server owned by this suite (never killed; see ``fresh_server`` for that)."""
    server = DedicatedDevServer(
        db_file=reliability_dir / "shared.db", log_file=reliability_dir / "shared-server.log"
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_ledger(reliability_dir: Path) -> SideEffectLedger:
    """The ledger the session worker's tools write to."""
    return SideEffectLedger(reliability_dir / "shared-ledger.db")


@pytest.fixture(scope="session")
def tool_worker(
    reliability_server: DedicatedDevServer, reliability_dir: Path, shared_ledger: SideEffectLedger
) -> Iterator[WorkerProcess]:
    """One ``python -m scope_tool.workers`` process serving the reliability tools for the session."""
    worker = WorkerProcess(
        address=reliability_server.address,
        task_queue=f"reliability-shared-{uuid.uuid4().hex[:8]}",
        ledger_file=shared_ledger.path,
        log_file=reliability_dir / "shared-worker.log",
    )
    worker.start()
    worker.wait_ready(timeout=60.0)
    yield worker
    worker.stop()


@pytest.fixture(scope="session")
async def reliability_calls(
    reliability_server: DedicatedDevServer, tool_worker: WorkerProcess
) -> ToolCalls:
    """The client facade on the session worker's task queue."""
    client = await Client.connect(reliability_server.address, data_converter=DATA_CONVERTER)
    return ToolCalls(client, task_queue=tool_worker.task_queue, heartbeat_timeout=HEARTBEAT_TIMEOUT)


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[DedicatedDevServer]:
    """A dev server for one scenario, which may SIGKILL and restart it."""
    server = DedicatedDevServer(db_file=tmp_path / "server.db", log_file=tmp_path / "server.log")
    server.start()
    yield server
    server.stop()
