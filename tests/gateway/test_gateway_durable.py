"""Upstream calls are durable calls: crashes and people in between, real upstream servers.

* a worker SIGKILLed while an upstream call is in flight (server-everything's long-running
  operation, its progress visible in status) ends the call "outcome unknown" with the call's
  idempotency key in history, and the upstream call is never sent again;
* a worker SIGKILLed while a gated ``git_commit`` waits for approval: approved later, the
  commit happens once;
* an upstream elicitation is answered with ``scope-tool answer`` (the CLI), checked against the
  upstream's schema, and passed back upstream;
* the gateway's MCP server SIGKILLed while a person thinks: a new client connection re-attaches
  to the same waiting call and approves it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from gateway_harness import REPOSITORY, commits, gateway_stdio, gateway_worker, only
from mcp import Client
from mcp_harness import TasksExtension, get_task, kill_pid_file, update_task, wait_task

from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.gateway import idempotency_key

pytestmark = pytest.mark.slow


def _calls(temporal_client, task_queue: str) -> ToolCalls:
    # A short heartbeat timeout: a SIGKILLed worker's round is found lost in seconds.
    return ToolCalls(temporal_client, task_queue=task_queue, heartbeat_timeout=timedelta(seconds=3))


async def _until(check, *, within: float = 60.0, what: str):
    deadline = time.monotonic() + within
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.2)


async def _rounds_scheduled(temporal_client, call_id: str) -> int:
    history = await temporal_client.get_workflow_handle(call_id).fetch_history()
    return sum(
        1
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name.startswith(
            "scope_tool.call_tool"
        )
    )


async def test_worker_killed_mid_upstream_call_ends_outcome_unknown_with_its_key(
    temporal_address, temporal_client, task_queue, tmp_path: Path, gateway_config: Path
):
    gateway_config = only(gateway_config, "every")
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    calls = _calls(temporal_client, task_queue)
    call_id = f"long-{uuid.uuid4().hex[:8]}"
    arguments = json.dumps({"duration": 120, "steps": 120}, separators=(",", ":"))
    key = idempotency_key(call_id, "every", "trigger-long-running-operation", arguments.encode())
    replacement = None
    try:
        handle = await calls.start(
            Request(name="every_trigger-long-running-operation", arguments=arguments),
            call_id=call_id,
        )

        async def progressing():
            status = await handle.status()
            note = status.progress
            return note if note is not None and (note.progress or 0) >= 1 else None

        note = await _until(progressing, what="the upstream's progress in status")
        assert note.idempotency_key == key
        assert note.total == 120
        worker.kill()  # SIGKILL, the upstream call in flight
        replacement = (
            await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config, "worker2")
            .start()
            .ready()
        )
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.ERRORED
        assert "outcome unknown" in outcome.message
        assert key in outcome.message
        history = await temporal_client.get_workflow_handle(call_id).fetch_history()
        # In history twice: the lost round's last heartbeat and the call's recorded outcome.
        lost = [
            event.activity_task_timed_out_event_attributes.failure
            for event in history.events
            if event.HasField("activity_task_timed_out_event_attributes")
        ]
        assert len(lost) == 1
        heartbeat = lost[0].timeout_failure_info.last_heartbeat_details.payloads
        assert key.encode() in b"".join(payload.data for payload in heartbeat)
        ended = [
            payload.data
            for event in history.events
            if event.HasField("workflow_execution_completed_event_attributes")
            for payload in event.workflow_execution_completed_event_attributes.result.payloads
        ]
        assert key.encode() in b"".join(ended)
        assert await _rounds_scheduled(temporal_client, call_id) == 1  # never sent again
    finally:
        worker.stop()
        if replacement is not None:
            replacement.stop()


async def test_worker_killed_while_an_approval_waits_then_the_commit_happens_once(
    temporal_address,
    temporal_client,
    task_queue,
    tmp_path: Path,
    git_repo: Path,
    gateway_config: Path,
):
    gateway_config = only(gateway_config, "git")
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    calls = _calls(temporal_client, task_queue)
    replacement = None
    message = "approved after a crash"
    try:
        handle = await calls.start(
            Request(
                name="git_git_commit",
                arguments=json.dumps({"repo_path": str(git_repo), "message": message}),
            ),
            call_id=f"commit-{uuid.uuid4().hex[:8]}",
        )

        async def waiting():
            status = await handle.status()
            return status if status.pending is not None else None

        status = await _until(waiting, what="the approval question")
        assert message in status.pending.prompt.decode()
        worker.kill()
        replacement = (
            await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config, "worker2")
            .start()
            .ready()
        )
        assert commits(git_repo, message) == 0
        await handle.answer({"decision": "approve"}, answered_by="alice")
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert "Changes committed successfully" in (outcome.output.text() or "")
        assert commits(git_repo, message) == 1
    finally:
        worker.stop()
        if replacement is not None:
            replacement.stop()


async def test_upstream_elicitation_is_answered_with_the_cli(
    temporal_address, temporal_client, task_queue, tmp_path: Path, gateway_config: Path
):
    gateway_config = only(gateway_config, "every")
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    calls = _calls(temporal_client, task_queue)
    call_id = f"ask-{uuid.uuid4().hex[:8]}"
    try:
        handle = await calls.start(
            Request(name="every_trigger-elicitation-request", arguments="{}"), call_id=call_id
        )

        async def waiting():
            status = await handle.status()
            return status if status.pending is not None else None

        status = await _until(waiting, what="the upstream's question")
        assert "Please provide inputs" in status.pending.prompt.decode()
        schema = json.loads(status.pending.response_schema)
        assert schema["required"] == ["name"]  # the upstream's own schema

        def answer(text: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "scope_tool.cli", "answer", call_id, text]
            command += ["--address", temporal_address, "--task-queue", task_queue]
            return subprocess.run(
                command, capture_output=True, text=True, cwd=REPOSITORY, timeout=60, check=False
            )

        refused = await asyncio.to_thread(answer, '{"check": true}')  # no name: the schema says no
        assert refused.returncode != 0
        assert "name" in refused.stderr
        accepted = await asyncio.to_thread(answer, '{"name": "Ada Lovelace", "integer": 7}')
        assert accepted.returncode == 0, accepted.stderr
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        text = outcome.output.text() or ""
        assert "Ada Lovelace" in text
        assert "accept" in text
    finally:
        worker.stop()


async def test_gateway_killed_while_a_person_thinks_the_client_reattaches(
    temporal_address, task_queue, tmp_path: Path, git_repo: Path, gateway_config: Path
):
    gateway_config = only(gateway_config, "git")
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    pid_file = tmp_path / "mcp.pid"
    message = "approved after the gateway died"

    async def never(context, params):
        raise AssertionError("task questions come through tasks/get")

    def connect() -> Client:
        parameters = gateway_stdio(temporal_address, task_queue, tmp_path, gateway_config, pid_file)
        return Client(parameters, extensions=[TasksExtension()], elicitation_callback=never)

    try:
        async with connect() as client:
            created = await client.session.call_tool(
                "git_git_commit",
                {"repo_path": str(git_repo), "message": message},
                allow_claimed=True,
            )
            assert created.result_type == "task"
            waiting = await wait_task(client.session, created.task_id, until={"input_required"})
            ((request_key, request),) = waiting.input_requests.items()
            assert message in request["params"]["message"]
            kill_pid_file(pid_file)  # the gateway's MCP server dies while the person thinks
        assert commits(git_repo, message) == 0
        async with connect() as client:
            again = await get_task(client.session, created.task_id)
            assert again.status == "input_required"
            await update_task(
                client.session,
                created.task_id,
                {request_key: {"action": "accept", "content": {"decision": "approve"}}},
            )
            done = await wait_task(
                client.session, created.task_id, until={"completed", "failed", "cancelled"}
            )
        assert done.status == "completed", done
        assert commits(git_repo, message) == 1
    finally:
        worker.stop()
