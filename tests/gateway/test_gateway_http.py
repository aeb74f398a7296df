"""A streamable HTTP upstream (server-everything's ``streamableHttp`` transport), in-process.

The gateway's :class:`~scope_tool.Registry` is what Python code serves: here an in-process
worker runs it, and the calls are durable calls like any other. A header comes from the
environment (``${NAME}``), never from the call. A waiting call whose upstream tool changed its
listing since the worker started is refused re-entry, as a changed local contract is: nothing
is sent upstream.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from mcp_harness import free_port

from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.gateway import Gateway, GatewayConfig
from scope_tool.workers import build_worker


@pytest.fixture
def everything_http(everything_js: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = tmp_path / "everything-http.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["node", str(everything_js), "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while "listening on port" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"server-everything over HTTP did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def http_gateway(everything_http: str) -> Iterator[Gateway]:
    config = GatewayConfig.from_dict(
        {
            "mcpServers": {
                "web": {
                    "url": everything_http,
                    "headers": {"X-Team": "${GATEWAY_TEST_TEAM}"},
                    "policy": {
                        "run": ["get-sum"],
                        "approve": ["echo"],
                        "readOnly": "hide",
                        "default": "hide",
                    },
                }
            }
        },
        environ={"GATEWAY_TEST_TEAM": "tests"},
    )
    with Gateway.start(config) as gateway:
        yield gateway


async def _until_waiting(handle, within: float = 60.0):
    deadline = time.monotonic() + within
    while True:
        status = await handle.status()
        if status.pending is not None:
            return status
        assert time.monotonic() < deadline, "the call never asked"
        await asyncio.sleep(0.2)


async def test_http_upstream_calls_run_durably(temporal_client, task_queue, http_gateway: Gateway):
    assert sorted(d.name for d in http_gateway.registry.definitions()) == [
        "web_echo",
        "web_get-sum",
    ]
    calls = ToolCalls(
        temporal_client, task_queue=task_queue, heartbeat_timeout=timedelta(seconds=5)
    )
    async with build_worker(temporal_client, http_gateway.registry, task_queue=task_queue):
        handle = await calls.start(
            Request(name="web_get-sum", arguments='{"a": 2, "b": 40}'),
            call_id=f"sum-{uuid.uuid4().hex[:8]}",
        )
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert "42" in (outcome.output.text() or "")

        echo = await calls.start(
            Request(name="web_echo", arguments='{"message": "hello"}'),
            call_id=f"echo-{uuid.uuid4().hex[:8]}",
        )
        await _until_waiting(echo)
        await echo.answer({"decision": "edit", "arguments": {"message": "edited"}})
        outcome = await asyncio.wait_for(echo.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert "edited" in (outcome.output.text() or "")
        assert "hello" not in (outcome.output.text() or "")


async def test_a_waiting_call_whose_upstream_tool_changed_is_refused_re_entry(
    temporal_client, task_queue, http_gateway: Gateway
):
    calls = ToolCalls(
        temporal_client, task_queue=task_queue, heartbeat_timeout=timedelta(seconds=5)
    )
    upstream = http_gateway._upstreams["web"]
    async with build_worker(temporal_client, http_gateway.registry, task_queue=task_queue):
        handle = await calls.start(
            Request(name="web_echo", arguments='{"message": "before the change"}'),
            call_id=f"echo-{uuid.uuid4().hex[:8]}",
        )
        await _until_waiting(handle)
        # What a tools/list after notifications/tools/list_changed would have brought: the
        # same tool with another input schema (server-everything never changes its own tools).
        listed = upstream.tools["echo"]
        changed = listed.model_copy(
            update={"input_schema": {**listed.input_schema, "required": ["message", "loud"]}}
        )
        upstream.tools = {**upstream.tools, "echo": changed}
        await handle.answer({"decision": "approve"})
        outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.ERRORED, outcome
    assert "changed its listing since this worker started" in outcome.message
    assert json.loads(json.dumps(outcome.message))  # one plain line for operators
