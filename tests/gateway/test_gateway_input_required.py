"""An upstream that asks by ``InputRequiredResult`` (MCP 2026-07-28) instead of a mid-call request.

A probe server written with the MCP SDK's own ``MCPServer`` resolves a tool parameter with
``Elicit``: on the 2026-07-28 protocol the SDK returns an ``InputRequiredResult`` and the client
retries the call with the answer. Through the gateway that question is the durable call's
question like any elicitation; the answer, checked against the upstream's schema, goes back and
the retried call's result names it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from gateway_harness import gateway_worker
from temporalio.client import Client
from temporalio.runtime import Runtime, TelemetryConfig

from scope_tool import Request
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCalls
from scope_tool.gateway import Gateway, GatewayConfig
from scope_tool.wire import (
    CALL_TOOL_ACTIVITY,
    CALL_TOOL_HERE_ACTIVITY,
    RELEASE_ROUND_ACTIVITY,
    process_queue,
)
from scope_tool.workers import build_worker
from scope_tool.workers._routes import ToolWorker

pytestmark = pytest.mark.slow

_PROBE = '''
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("probe")


class Recipient(BaseModel):
    name: str


def ask_recipient() -> Elicit[Recipient]:
    return Elicit("Who should receive the parcel?", Recipient)


@server.tool()
async def ship(parcel: str, recipient: Annotated[Recipient, Resolve(ask_recipient)]) -> str:
    """Ship a parcel to the person the user names."""
    return f"shipped {parcel} to {recipient.name}"


server.run()
'''


async def test_an_input_required_result_is_the_calls_question(
    temporal_address, temporal_client, task_queue, tmp_path: Path
):
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "probe": {
                        "command": sys.executable,
                        "args": [str(probe)],
                        "policy": {"default": "run"},
                    }
                }
            }
        )
    )
    worker = await gateway_worker(temporal_address, task_queue, tmp_path, config).start().ready()
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    try:
        handle = await calls.start(
            Request(name="probe_ship", arguments='{"parcel": "p-7"}'),
            call_id=f"input-required-{uuid.uuid4().hex[:8]}",
        )
        deadline = time.monotonic() + 60
        status = await handle.status()
        while status.pending is None:
            assert status.phase is Phase.RUNNING, status
            assert time.monotonic() < deadline, "the upstream never asked"
            await asyncio.sleep(0.2)
            status = await handle.status()
        prompt = json.loads(status.pending.prompt)
        assert prompt["kind"] == "scope_tool.gateway.elicitation"
        assert prompt["question"] == "Who should receive the parcel?"
        assert json.loads(status.pending.response_schema)["required"] == ["name"]
        with pytest.raises(AnswerRejectedError) as refused:
            await handle.answer({"nom": "Ada"})
        assert refused.value.reason is RefusalReason.SCHEMA
        await handle.answer({"name": "Ada Lovelace"})
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert outcome.output.text() == "shipped p-7 to Ada Lovelace"
    finally:
        worker.stop()


def _probe_config(tmp_path: Path) -> GatewayConfig:
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    return GatewayConfig.from_dict(
        {
            "mcpServers": {
                "probe": {
                    "command": sys.executable,
                    "args": [str(probe)],
                    "policy": {"default": "run"},
                }
            }
        }
    )


async def _asked(handle):
    deadline = time.monotonic() + 60
    status = await handle.status()
    while status.pending is None:
        assert status.phase is Phase.RUNNING, status
        assert time.monotonic() < deadline, "the upstream never asked"
        await asyncio.sleep(0.1)
        status = await handle.status()
    return status


async def _round_queues(temporal_client, call_id: str) -> list[str]:
    history = await temporal_client.get_workflow_handle(call_id).fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.task_queue.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name
        in (CALL_TOOL_ACTIVITY, CALL_TOOL_HERE_ACTIVITY)
    ]


async def test_an_answer_reaches_the_process_whose_upstream_asked_not_another_worker(
    temporal_address, temporal_client, task_queue, tmp_path: Path
):
    # Two gateways in one process are two processes' worth of upstream sessions: each holds
    # only the questions its own sessions asked. Worker A asks; then A's workflow worker stops
    # (its tool queues and its own queue still polled) and worker B runs the workflows: an
    # answer's round that followed the workflow to B, or went to any worker with the
    # contract, would find no upstream session there and end "outcome unknown".
    config = _probe_config(tmp_path)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    # A second SDK runtime, as a second process has (one runtime runs one worker per queue).
    elsewhere = await Client.connect(
        temporal_address,
        runtime=Runtime(telemetry=TelemetryConfig()),
        data_converter=temporal_client.data_converter,
    )
    with Gateway.start(config) as first, Gateway.start(config) as second:
        a = build_worker(temporal_client, first.registry, task_queue=task_queue)
        workflows, *rounds = a.workers
        a_rounds = ToolWorker(
            temporal_client, rounds, task_queue=task_queue, catalog=(), worker_id=a.worker_id
        )
        async with a_rounds:
            async with workflows:
                handles = [
                    await calls.start(
                        Request(name="probe_ship", arguments=json.dumps({"parcel": f"p-{n}"})),
                        call_id=f"pinned-{n}-{uuid.uuid4().hex[:8]}",
                    )
                    for n in range(4)
                ]
                for handle in handles:
                    await _asked(handle)
            async with build_worker(elsewhere, second.registry, task_queue=task_queue):
                for n, handle in enumerate(handles):
                    await handle.answer({"name": f"person {n}"})
                outcomes = await asyncio.wait_for(
                    asyncio.gather(*(handle.result() for handle in handles)), 90
                )
    for n, (handle, outcome) in enumerate(zip(handles, outcomes, strict=True)):
        assert outcome.phase is Phase.COMPLETED, outcome
        assert outcome.output.text() == f"shipped p-{n} to person {n}"
        queues = await _round_queues(temporal_client, handle.call_id)
        # Round 2 ran on the queue only A polls.
        assert queues[-1] == process_queue(task_queue, a.worker_id), queues


async def test_an_answer_whose_asking_process_is_gone_ends_outcome_unknown_with_the_key(
    temporal_client, task_queue, tmp_path: Path
):
    config = _probe_config(tmp_path)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    with Gateway.start(config) as asking, Gateway.start(config) as other:
        async with build_worker(
            temporal_client,
            asking.registry,
            task_queue=task_queue,
            pinned_wait=timedelta(seconds=2),
        ):
            handle = await calls.start(
                Request(name="probe_ship", arguments='{"parcel": "p-gone"}'),
                call_id=f"pinned-gone-{uuid.uuid4().hex[:8]}",
            )
            await _asked(handle)
        # The asking worker is gone; another one, with the same tools, is not where it asked.
        async with build_worker(temporal_client, other.registry, task_queue=task_queue):
            await handle.answer({"name": "Ada"})
            outcome = await asyncio.wait_for(handle.result(), 60)
    assert outcome.phase is Phase.ERRORED, outcome
    assert "outcome unknown" in outcome.message
    assert "worker process that asked" in outcome.message
    assert "idempotency key stk-" in outcome.message
    # Round 2 never started anywhere: the only rounds scheduled are round 1 and the pinned one.
    queues = await _round_queues(temporal_client, handle.call_id)
    assert "@@" in queues[-1], queues


async def _released(temporal_client, call_id: str) -> list[bool]:
    """The results of the call's release activities (the holder's answers)."""
    history = await temporal_client.get_workflow_handle(call_id).fetch_history()
    scheduled = {
        event.event_id
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name
        == RELEASE_ROUND_ACTIVITY
    }
    results = []
    for event in history.events:
        if event.HasField("activity_task_completed_event_attributes"):
            done = event.activity_task_completed_event_attributes
            if done.scheduled_event_id in scheduled:
                (value,) = await temporal_client.data_converter.decode(done.result.payloads)
                results.append(value)
    return results


async def test_a_withdrawn_or_cancelled_question_is_cancelled_upstream(
    temporal_client, task_queue, tmp_path: Path
):
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    with Gateway.start(_probe_config(tmp_path)) as gateway:
        hub = gateway._hub
        async with build_worker(temporal_client, gateway.registry, task_queue=task_queue):
            for ending in ("withdrawn", "cancelled"):
                handle = await calls.start(
                    Request(name="probe_ship", arguments='{"parcel": "p-left"}'),
                    call_id=f"released-{ending}-{uuid.uuid4().hex[:8]}",
                )
                await _asked(handle)
                (pending,) = hub.pending.values()
                if ending == "withdrawn":
                    await handle.withdraw("the agent found the address itself")
                else:
                    await handle.cancel()
                outcome = await asyncio.wait_for(handle.result(), 30)
                assert outcome.phase.value == ending.upper(), outcome
                # The worker holding the question was told, and said it let go of it.
                assert await _released(temporal_client, handle.call_id) == [True]
                assert not hub.pending
                # The upstream got MCP's "cancel" and ended its call (its connection is free
                # again), well before the gateway's own deadline for that.
                deadline = time.monotonic() + 10
                while not (pending.task is not None and pending.task.done()):
                    assert time.monotonic() < deadline, "the upstream call did not end"
                    await asyncio.sleep(0.05)
                assert not pending.task.cancelled()
