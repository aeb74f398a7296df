"""A worker whose server goes away says so in one plain line every few seconds.

Temporal's core retries every poll while the server restarts and, left to itself, writes each
retry to stderr as a coloured ``WARN temporalio_client::retry ... ConnectionRefused`` line. The
worker process forwards the core's log to a Python logger that writes one plain line per few
seconds instead (as the CLI keeps them off its terminal).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import AsyncIterator

import pytest
from e2e._cli import free_port
from runtime.example_tools import REGISTRY

from scope_tool.config._converter import DATA_CONVERTER
from scope_tool.workers import build_worker
from scope_tool.workers._core_logs import CORE_LOGGER_NAME, OneLineEvery
from scope_tool.workers.telemetry import connect_options


class _Proxy:
    """A TCP proxy to the test server that can be cut, as a server restart cuts it."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()


@pytest.fixture
async def proxy(temporal_address: str) -> AsyncIterator[_Proxy]:
    running = _Proxy(temporal_address)
    await running.start()
    yield running
    running.cut()


async def test_a_server_going_away_gives_one_plain_line_every_few_seconds(
    proxy: _Proxy, task_queue: str, capfd: pytest.CaptureFixture[str]
):
    from temporalio.client import Client

    client = await Client.connect(
        f"127.0.0.1:{proxy.port}", data_converter=DATA_CONVERTER, **connect_options(metrics=None)
    )
    async with build_worker(client, REGISTRY, task_queue=task_queue):
        await asyncio.sleep(1)
        capfd.readouterr()
        proxy.cut()
        await asyncio.sleep(12)  # the core starts warning about 5 s after the cut
        out, err = capfd.readouterr()  # the core's own logger writes to stdout
        await proxy.start()  # the server is back: the worker drains and stops
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert "\x1b[" not in out + err
    assert "temporalio_client::retry" not in out + err
    assert 1 <= len(lines) <= 3, lines
    assert all(line.startswith("scope-tool: temporal: ") for line in lines), lines


def test_repeats_are_held_back_and_counted() -> None:
    stream = io.StringIO()
    handler = OneLineEvery(stream, every=60.0)
    logger = logging.getLogger(f"{CORE_LOGGER_NAME}.unit")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for attempt in range(20):
            logger.warning(
                "gRPC call poll_workflow_task_queue retried %d times {'error': 'Status {"
                ' code: Unavailable, message: "tcp connect error", source: Some(tonic::'
                "transport::Error(Transport, ConnectError(Os { kind: ConnectionRefused }))) }'}",
                attempt,
            )
        handler.every = 0.0
        logger.warning("gRPC call poll_activity_task_queue retried 21 times")
    finally:
        logger.removeHandler(handler)
    first, second = stream.getvalue().splitlines()
    assert first == (
        "scope-tool: temporal: cannot reach the Temporal server (connection refused); retrying"
    )
    assert second.startswith("scope-tool: temporal: WARNING: gRPC call poll_activity")
    assert second.endswith("(19 similar lines held back)")
