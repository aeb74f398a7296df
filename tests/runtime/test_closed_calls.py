"""Calls closed by an operator or the server agree in every view (issue 17 item 5).

The probe: after ``temporal workflow terminate`` a waiting call stayed ``AWAITING_INPUT`` in
``ToolCalls.list``, ``scope-tool pending`` and the inbox; ``status()`` replayed its question;
``answer`` said "finished" while ``result`` said "has not finished; answer it".
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import CliRun, run_cli
from helpers.waiting import wait_for_phase, wait_until_async
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from runtime.example_tools import ledger_lines
from scope_tool import Request
from scope_tool.client import AnswerRejectedError, CallOutcome, Phase, RefusalReason, ToolCalls
from scope_tool.config._embedded_server import temporal_cli
from scope_tool.wire import PHASE_KEY, TOOL_KEY, WORKFLOW_NAME, ToolCallInput


def _plan(ledger: Path) -> Request:
    return Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "web"})
    )


async def _listed(calls: ToolCalls, call_id: str, phase: Phase | None = None) -> list[Phase]:
    return [row.phase for row in await calls.list(phase=phase) if row.call_id == call_id]


async def _assert_every_view_says_closed(
    calls: ToolCalls, handle: Any, *, expect: str, address: str
) -> None:
    call_id = handle.call_id

    async def settled() -> bool:
        return await _listed(calls, call_id, Phase.AWAITING_INPUT) == [] and await _listed(
            calls, call_id, Phase.ERRORED
        ) == [Phase.ERRORED]

    await wait_until_async(settled)
    assert await _listed(calls, call_id) == [Phase.ERRORED]
    status = await handle.status()
    assert status.phase is Phase.ERRORED
    assert status.pending is None
    assert status.outcome is not None
    assert expect in status.outcome.message
    assert status.round == 1  # replayed by the worker: the round it had reached
    outcome = await handle.result()
    assert outcome.phase is Phase.ERRORED
    assert expect in outcome.message
    with pytest.raises(AnswerRejectedError) as refused:
        await handle.answer({"approve": True})
    assert refused.value.reason is RefusalReason.FINISHED
    fresh = calls.get(call_id)  # no status read before: the answer pins nothing
    with pytest.raises(AnswerRejectedError) as refused_fresh:
        await fresh.answer({"approve": True})
    assert refused_fresh.value.reason is RefusalReason.FINISHED
    # The CLI renders the same facade: not pending, and result prints the outcome.
    environment = {"SCOPE_TOOL_ADDRESS": address, "SCOPE_TOOL_TASK_QUEUE": calls.task_queue}
    pending = await asyncio.to_thread(_cli, "pending", "--json", env=environment)
    assert call_id not in pending.stdout
    result = await asyncio.to_thread(_cli, "result", call_id, env=environment)
    assert "has not finished" not in result.stdout + result.stderr
    assert "ERRORED" in result.stdout + result.stderr
    assert expect in result.stdout + result.stderr


def _cli(*args: str, env: dict[str, str]) -> CliRun:
    """The command run in-process with ``env`` over this process's environment."""
    return run_cli(*args, env={**os.environ, **env})


async def test_a_terminated_waiting_call_is_errored_in_every_view(
    calls: ToolCalls, worker: Any, tmp_path: Path, temporal_address: str
) -> None:
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"term-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.workflow_handle.terminate(reason="stuck deploy, by hand")
    await _assert_every_view_says_closed(
        calls,
        handle,
        expect="terminated by an operator",
        address=temporal_address,
    )
    assert "stuck deploy, by hand" in (await handle.result()).message


async def test_a_terminated_call_keeps_the_record_of_refused_answers(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    """The closed snapshot drops what is pending, never the count of answers it refused."""
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"termref-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    sent = 23  # more than the 20 refusals a status lists
    for index in range(sent):
        await handle.signal_answer({"approve": f"not a boolean {index}"}, answered_by="mallory")

    async def all_refused() -> bool:
        status = await handle.status()
        return len(status.refused) + status.refused_dropped == sent

    await wait_until_async(all_refused)
    waiting = await handle.status()
    await handle.workflow_handle.terminate(reason="cleanup")
    closed = await handle.status()
    assert closed.phase is Phase.ERRORED
    assert closed.pending is None
    assert [r.message for r in closed.refused] == [r.message for r in waiting.refused]
    assert closed.refused_dropped == waiting.refused_dropped == sent - len(waiting.refused) > 0


async def test_terminated_with_the_temporal_cli(
    calls: ToolCalls, worker: Any, tmp_path: Path, temporal_address: str
) -> None:
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"termcli-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    done = await asyncio.to_thread(
        subprocess.run,
        [
            str(temporal_cli()),
            "workflow",
            "terminate",
            "--address",
            temporal_address,
            "--workflow-id",
            handle.call_id,
            "--reason",
            "cleanup via cli",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    await _assert_every_view_says_closed(
        calls, handle, expect="cleanup via cli", address=temporal_address
    )


async def test_a_call_past_its_execution_timeout_is_errored_in_every_view(
    calls: ToolCalls, worker: Any, tmp_path: Path, temporal_address: str
) -> None:
    """An operator's workflow execution timeout (set here directly on the workflow start)."""
    call_id = f"timeout-{uuid.uuid4()}"
    request = _plan(tmp_path / "ledger")
    await calls.client.start_workflow(
        WORKFLOW_NAME,
        ToolCallInput(call_id=call_id, tool=request.name, arguments=request.arguments),
        id=call_id,
        task_queue=calls.task_queue,
        result_type=CallOutcome,
        execution_timeout=timedelta(seconds=3),
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(TOOL_KEY, request.name),
                SearchAttributePair(PHASE_KEY, Phase.RUNNING.value),
            ]
        ),
    )
    handle = calls.get(call_id)
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    outcome = await handle.result()  # the timeout closes it after 3 s
    assert outcome.phase is Phase.ERRORED
    await _assert_every_view_says_closed(
        calls, handle, expect="execution timed out", address=temporal_address
    )


async def test_a_reset_call_is_listed_once_as_its_new_run(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await calls.start(_plan(ledger), call_id=f"reset-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    first_run = (await handle.workflow_handle.describe()).run_id
    history = await handle.workflow_handle.fetch_history()
    first_task = next(
        event.event_id
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    )
    client = calls.client
    await client.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=handle.call_id, run_id=first_run),
            reason="operator reset",
            workflow_task_finish_event_id=first_task,
            request_id=str(uuid.uuid4()),
        )
    )

    async def new_run_waits() -> bool:
        latest = await handle.workflow_handle.describe()
        return latest.run_id != first_run and (await handle.status()).phase is Phase.AWAITING_INPUT

    await wait_until_async(new_run_waits)

    async def listed_once() -> bool:
        return await _listed(calls, handle.call_id) == [Phase.AWAITING_INPUT]

    await wait_until_async(listed_once)
    assert await _listed(calls, handle.call_id, Phase.ERRORED) == []
    assert await _listed(calls, handle.call_id, Phase.AWAITING_INPUT) == [Phase.AWAITING_INPUT]
    await handle.answer({"approve": False})
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["plan", "plan"]  # the reset re-ran round 1, as resets do
