"""Restarts are the test: a waiting task survives the MCP server's and the worker's SIGKILL.

The SDK's own client (2026-07-28, declaring the tasks extension) calls ``approve_write``; the
call becomes a task that waits ``input_required``. Then one process is SIGKILLed and started
again; a NEW client connection finds the same task still ``input_required``, answers it with
``tasks/update``, and reads the tool's output from ``tasks/get``. The side-effect ledger proves
the tool ran exactly once.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mcp import Client
from mcp_harness import (
    TasksExtension,
    free_port,
    get_task,
    http_server,
    kill_pid_file,
    stdio_parameters,
    update_task,
    wait_task,
    worker,
)

pytestmark = pytest.mark.slow


async def _never(ctx, params):
    raise AssertionError("task questions come through tasks/get, not elicitation/create")


def _ledger_rows(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines()


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("victim", ["mcp-server", "worker"])
async def test_waiting_task_survives_a_killed_process(
    temporal_address, task_queue, tmp_path: Path, ledger: Path, transport: str, victim: str
):
    key = f"record-{uuid.uuid4().hex[:8]}"
    workers = [await worker(temporal_address, task_queue, tmp_path, ledger).start().ready()]
    servers = []
    pid_file = tmp_path / "mcp.pid"

    async def connect():
        if transport == "stdio":
            target = stdio_parameters(temporal_address, task_queue, tmp_path, pid_file)
        else:
            if not servers or servers[-1].process.poll() is not None:
                servers.append(
                    await http_server(
                        temporal_address, task_queue, tmp_path, port, name=f"mcp{len(servers)}"
                    )
                    .start()
                    .ready()
                )
            target = f"http://127.0.0.1:{port}/mcp"
        # The elicitation callback declares the capability; task questions are answered with
        # tasks/update below, so it is never called.
        return Client(target, extensions=[TasksExtension()], elicitation_callback=_never)

    port = free_port()
    try:
        async with await connect() as client:
            created = await client.session.call_tool(
                "approve_write", {"key": key}, allow_claimed=True
            )
            assert created.result_type == "task"
            task_id = created.task_id
            waiting = await wait_task(client.session, task_id, until={"input_required"})
            ((request_key, request),) = waiting.input_requests.items()
            assert request["method"] == "elicitation/create"
            assert request["params"]["mode"] == "form"
            assert "approve" in request["params"]["requestedSchema"]["properties"]
            assert f"Write the record {key}?" in request["params"]["message"]
            if victim == "mcp-server" and transport == "stdio":
                kill_pid_file(pid_file)
        if victim == "mcp-server" and transport == "http":
            servers[-1].kill()
        if victim == "worker":
            workers[-1].kill()
            workers.append(
                await worker(temporal_address, task_queue, tmp_path, ledger, name="worker2")
                .start()
                .ready()
            )
        assert _ledger_rows(ledger) == []

        async with await connect() as client:
            again = await get_task(client.session, task_id)
            assert again.status == "input_required"
            assert list(again.input_requests) == [request_key]
            await update_task(
                client.session,
                task_id,
                {request_key: {"action": "accept", "content": {"approve": True}}},
            )
            done = await wait_task(
                client.session, task_id, until={"completed", "failed", "cancelled"}
            )
        assert done.status == "completed"
        assert done.result["isError"] is False
        assert done.result["structuredContent"] == {"written": key}
        assert _ledger_rows(ledger) == [key]
    finally:
        for process in [*servers, *workers]:
            process.stop()


async def test_sealed_request_state_survives_a_restart_of_the_http_server(
    temporal_address, task_queue, tmp_path: Path, worker_process
):
    """2026-07-28 without tasks: the repeat of a call reaches a NEW server process."""
    import mcp_types as types

    port = free_port()
    first = (
        await http_server(temporal_address, task_queue, tmp_path, port, name="a").start().ready()
    )
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", elicitation_callback=_never) as client:
            asked = await client.session.call_tool(
                "pick", {"service": "api"}, allow_input_required=True
            )
        assert isinstance(asked, types.InputRequiredResult)
        (key,) = asked.input_requests
        assert asked.request_state.startswith("v1.")  # sealed by the SDK, opaque to the client
        assert "mcp-pick-" not in asked.request_state
    finally:
        first.kill()
    second = (
        await http_server(temporal_address, task_queue, tmp_path, port, name="b").start().ready()
    )
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", elicitation_callback=_never) as client:
            done = await client.session.call_tool(
                "pick",
                {"service": "api"},
                input_responses={
                    key: types.ElicitResult(action="accept", content={"value": "canary"})
                },
                request_state=asked.request_state,
                allow_input_required=True,
            )
    finally:
        second.stop()
    assert isinstance(done, types.CallToolResult)
    assert done.content[0].text == "picked canary"


async def test_a_client_named_call_attaches_instead_of_running_twice(
    temporal_address, task_queue, tmp_path: Path, worker_process, ledger: Path
):
    meta = {"scope-tool/call-id": "job-1"}
    parameters = stdio_parameters(temporal_address, task_queue, tmp_path, tmp_path / "pid")
    async with Client(
        parameters, extensions=[TasksExtension()], elicitation_callback=_never
    ) as client:
        first = await client.session.call_tool(
            "approve_write", {"key": "once"}, meta=meta, allow_claimed=True
        )
        retry = await client.session.call_tool(
            "approve_write", {"key": "once"}, meta=meta, allow_claimed=True
        )
        assert first.task_id == retry.task_id == "mcp-approve_write-job-1"
        waiting = await wait_task(client.session, first.task_id, until={"input_required"})
        (key,) = waiting.input_requests
        await update_task(
            client.session, first.task_id, {key: {"action": "accept", "content": {"approve": True}}}
        )
        await wait_task(client.session, first.task_id, until={"completed"})
        late = await client.session.call_tool(
            "approve_write", {"key": "once"}, meta=meta, allow_claimed=True
        )
        assert late.task_id == first.task_id
        assert late.status == "completed"
    assert _ledger_rows(ledger) == ["once"]
