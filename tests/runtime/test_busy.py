"""An answer turned away for load is retried; one turned away for its content is not."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from scope_tool.client import ToolCallsError
from scope_tool.client._busy import retry_while_busy, server_busy
from scope_tool.client._handle import ToolCallHandle

IN_FLIGHT = RPCError(
    "limit on number of concurrent in-flight updates has been reached (10)",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)
ABORTED = RPCError("workflow update was aborted", RPCStatusCode.UNAVAILABLE, b"")
CLOSING = RPCError(
    "workflow operation can not be applied because workflow is closing",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)
NOT_FOUND = RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")
TASK_FAILING = RPCError(
    "Unable to perform workflow execution update due to Workflow Task in failed state.",
    RPCStatusCode.FAILED_PRECONDITION,
    b"",
)
PAUSED = RPCError(
    "Workflow is paused. Cannot update the workflow.", RPCStatusCode.FAILED_PRECONDITION, b""
)


def test_busy_means_load_not_content() -> None:
    assert server_busy(IN_FLIGHT)
    assert server_busy(ABORTED)
    assert server_busy(TASK_FAILING)
    assert not server_busy(CLOSING)
    assert not server_busy(NOT_FOUND)
    assert not server_busy(PAUSED)  # FAILED_PRECONDITION for another reason: not retried


async def test_busy_is_retried_until_it_goes_through() -> None:
    turned_away = [IN_FLIGHT, ABORTED, TASK_FAILING, IN_FLIGHT]
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        if turned_away:
            raise turned_away.pop(0)
        return "verdict"

    assert await retry_while_busy(send) == "verdict"
    assert attempts == 5


@pytest.mark.parametrize(
    "error", [CLOSING, NOT_FOUND, PAUSED], ids=["closing", "not-found", "paused"]
)
async def test_other_errors_reach_the_caller_at_once(error: RPCError) -> None:
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        raise error

    with pytest.raises(RPCError) as raised:
        await retry_while_busy(send)
    assert raised.value is error
    assert attempts == 1


async def test_a_server_busy_past_the_budget_reaches_the_caller() -> None:
    attempts = 0

    async def send() -> str:
        nonlocal attempts
        attempts += 1
        raise IN_FLIGHT

    with pytest.raises(RPCError) as raised:
        await retry_while_busy(send, budget_seconds=0.3)
    assert raised.value is IN_FLIGHT
    assert 2 <= attempts < 40


_TASKS_FAIL = {"now": True}


@workflow.defn(name="TaskFailsForAWhile", sandboxed=False)
class _TaskFailsForAWhile:
    """Its workflow task fails until the test lets it through (a worker crashing mid-task)."""

    def __init__(self) -> None:
        self._answer: str | None = None

    @workflow.run
    async def run(self) -> str:
        if _TASKS_FAIL["now"]:
            raise RuntimeError("this workflow task fails, as on a worker that keeps crashing")
        await workflow.wait_condition(lambda: self._answer is not None)
        assert self._answer is not None
        return self._answer

    @workflow.update
    async def answer(self, value: str) -> str:
        self._answer = value
        return value


async def test_an_answer_waits_out_a_failing_workflow_task(
    temporal_client: Client, task_queue: str
) -> None:
    """Past its second failed attempt Temporal refuses updates and queries outright (FAILED_
    PRECONDITION, "Workflow Task in failed state"); the answer is retried and goes through once
    a worker completes the task, and status says why it cannot be read meanwhile."""
    _TASKS_FAIL["now"] = True
    async with Worker(temporal_client, task_queue=task_queue, workflows=[_TaskFailsForAWhile]):
        call_id = f"failing-task-{uuid.uuid4()}"
        handle: Any = await temporal_client.start_workflow(
            _TaskFailsForAWhile.run, id=call_id, task_queue=task_queue
        )
        refusals: list[RPCError] = []

        async def send() -> str:
            try:
                verdict: str = await handle.execute_update(
                    _TaskFailsForAWhile.answer, "approved", id="answer-1"
                )
            except RPCError as err:
                if server_busy(err):
                    refusals.append(err)
                raise
            return verdict

        answering = asyncio.create_task(retry_while_busy(send, budget_seconds=90))
        for _ in range(600):  # the third attempt comes about 12 s after the start
            if refusals:
                break
            await asyncio.sleep(0.1)
        assert refusals, "the server never refused the update for the failing task"
        assert refusals[0].status == RPCStatusCode.FAILED_PRECONDITION
        with pytest.raises(ToolCallsError, match="workflow task keeps failing on the workers"):
            await ToolCallHandle(handle).status()
        _TASKS_FAIL["now"] = False  # the next attempt of the task succeeds
        assert await answering == "approved"
        assert await handle.result() == "approved"
