"""ToolCalls.start_and_wait: start a call and return at its first stop in one round trip."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_tools import ledger_lines
from temporalio.service import RPCError, RPCStatusCode

from scope_tool import Request
from scope_tool.client import CallConflictError, CallNotFoundError, Phase, ToolCalls, WorkerWait


def note(ledger: Path, text: str) -> Request:
    return Request(name="write_note", arguments=json.dumps({"ledger": str(ledger), "text": text}))


def sleep(seconds: float, label: str = "x") -> Request:
    return Request(name="sleep", arguments=json.dumps({"seconds": seconds, "label": label}))


async def test_a_completing_call_returns_its_outcome(calls: ToolCalls, worker: Any):
    call_id = f"fs-{uuid.uuid4()}"
    handle, status = await calls.start_and_wait(sleep(0, "done"), call_id=call_id)
    assert handle.call_id == call_id
    assert status.phase is Phase.COMPLETED
    assert status.outcome is not None
    assert status.outcome.output.text() == "slept done"
    assert (await handle.result()).phase is Phase.COMPLETED


async def test_an_asking_call_returns_its_question_then_attaches(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    call_id = f"fs-{uuid.uuid4()}"
    handle, status = await calls.start_and_wait(note(ledger, "once"), call_id=call_id)
    assert status.phase is Phase.AWAITING_INPUT
    assert status.pending is not None
    assert status.pending.request_id == f"{call_id}/r1"
    assert ledger_lines(ledger) == []
    # Again while it waits: attaches to the same question, runs nothing.
    _, again = await calls.start_and_wait(note(ledger, "once"), call_id=call_id)
    assert again.phase is Phase.AWAITING_INPUT
    assert again.pending == status.pending
    await handle.answer({"decision": "approve"})
    assert (await handle.result()).phase is Phase.COMPLETED
    # The finished call: its status, not a second run.
    attached, finished = await calls.start_and_wait(note(ledger, "once"), call_id=call_id)
    assert attached.attached
    assert finished.phase is Phase.COMPLETED
    assert finished.round == 2
    assert ledger_lines(ledger) == ["once"]


async def test_a_call_id_of_another_request_is_a_conflict(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    waiting_id = f"fs-{uuid.uuid4()}"
    _, status = await calls.start_and_wait(note(ledger, "first"), call_id=waiting_id)
    assert status.phase is Phase.AWAITING_INPUT
    with pytest.raises(CallConflictError, match="other arguments") as other_arguments:
        await calls.start_and_wait(note(ledger, "second"), call_id=waiting_id)
    assert other_arguments.value.existing_tool == "write_note"
    with pytest.raises(CallConflictError, match="tool 'write_note'"):
        await calls.start_and_wait(sleep(0), call_id=waiting_id)
    # The refused attach changed nothing: still the first request, still waiting.
    still = await calls.get(waiting_id).status()
    assert still.phase is Phase.AWAITING_INPUT
    assert still.pending == status.pending
    finished_id = f"fs-{uuid.uuid4()}"
    _, done = await calls.start_and_wait(sleep(0, "a"), call_id=finished_id)
    assert done.phase is Phase.COMPLETED
    with pytest.raises(CallConflictError, match="other arguments"):
        await calls.start_and_wait(sleep(0, "b"), call_id=finished_id)
    assert ledger_lines(ledger) == []
    await calls.get(waiting_id).cancel()


async def test_concurrent_first_stops_of_one_call_run_the_tool_once(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    call_id = f"fs-{uuid.uuid4()}"
    request = Request(name="write_note", arguments=json.dumps({"ledger": str(ledger), "text": "x"}))
    results = await asyncio.gather(
        *(calls.start_and_wait(request, call_id=call_id) for _ in range(4))
    )
    assert {status.phase for _, status in results} == {Phase.AWAITING_INPUT}
    await calls.get(call_id).answer({"decision": "approve"})
    await calls.get(call_id).result()
    again = await asyncio.gather(
        *(calls.start_and_wait(request, call_id=call_id) for _ in range(3))
    )
    assert {status.phase for _, status in again} == {Phase.COMPLETED}
    assert ledger_lines(ledger) == ["x"]


async def test_max_wait_returns_a_running_call(calls: ToolCalls, worker: Any):
    call_id = f"fs-{uuid.uuid4()}"
    handle, status = await calls.start_and_wait(
        sleep(3, "slow"), call_id=call_id, max_wait=timedelta(seconds=0.5)
    )
    assert status.phase is Phase.RUNNING
    assert (await handle.result()).phase is Phase.COMPLETED


async def test_a_timed_out_or_attached_first_stop_leaves_no_unretrieved_exception(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    # The update-with-start's own start handle fails with the update (cancelled at max_wait,
    # or "already started" on attach); nobody else awaits it, so asyncio would log "Future
    # exception was never retrieved" with a traceback whenever it is collected.
    loop = asyncio.get_running_loop()
    gc.collect()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        timed_out_id = f"fs-{uuid.uuid4()}"
        handle, status = await calls.start_and_wait(
            sleep(2, "slow"), call_id=timed_out_id, max_wait=timedelta(seconds=0.3)
        )
        assert status.phase is Phase.RUNNING
        assert (await handle.result()).phase is Phase.COMPLETED
        attached, finished = await calls.start_and_wait(sleep(2, "slow"), call_id=timed_out_id)
        assert attached.attached
        assert finished.phase is Phase.COMPLETED
        del handle, attached
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [context.get("message") for context in reported] == []


async def test_bad_input_is_refused_before_anything_starts(calls: ToolCalls, worker: Any):
    with pytest.raises(ValueError, match="call_id must be a non-empty string"):
        await calls.start_and_wait(sleep(0), call_id=" ")
    call_id = f"fs-{uuid.uuid4()}"
    with pytest.raises(ValueError, match="max_wait must be positive"):
        await calls.start_and_wait(sleep(0), call_id=call_id, max_wait=timedelta(0))
    with pytest.raises(CallNotFoundError):
        await calls.get(call_id).status()


async def test_a_server_without_update_with_start_falls_back_to_polling(
    calls: ToolCalls, worker: Any, monkeypatch: pytest.MonkeyPatch
):
    async def unsupported(*args: Any, **kwargs: Any) -> Any:
        raise RPCError("ExecuteMultiOperation is disabled", RPCStatusCode.UNIMPLEMENTED, b"")

    monkeypatch.setattr(calls.client, "execute_update_with_start_workflow", unsupported)
    call_id = f"fs-{uuid.uuid4()}"
    handle, status = await calls.start_and_wait(sleep(0, "polled"), call_id=call_id)
    assert status.phase is Phase.COMPLETED
    assert status.outcome is not None
    assert status.outcome.output.text() == "slept polled"
    assert handle.call_id == call_id


async def test_a_call_no_worker_takes_is_reported_with_its_call_id_after_a_few_seconds(
    calls: ToolCalls, temporal_client: Any, task_queue: str, caplog: pytest.LogCaptureFixture
):
    # The worker stopped: nothing polls the task queue, so the first stop would wait silently.
    call_id = f"fs-{uuid.uuid4()}"
    reported: list[tuple[str, WorkerWait]] = []
    began = time.monotonic()
    first_stop = asyncio.create_task(
        calls.start_and_wait(
            sleep(0),
            call_id=call_id,
            on_worker_wait=lambda call, wait: reported.append((call, wait)),
        )
    )
    for _ in range(75):
        if reported:
            break
        await asyncio.sleep(0.2)
    assert not first_stop.done()  # it keeps waiting; it only says so
    first_stop.cancel()
    [(reported_id, wait)] = reported
    assert reported_id == call_id
    assert wait.task_queue == task_queue
    assert "waiting for a worker with tool sleep" in wait.message
    assert time.monotonic() - began < 10
    # Without a callback the facade says so itself, as a warning of ``scope_tool.client``.
    other_id = f"fs-{uuid.uuid4()}"
    with caplog.at_level(logging.WARNING, logger="scope_tool.client"):
        quiet = asyncio.create_task(calls.start_and_wait(sleep(0), call_id=other_id))
        for _ in range(75):
            if caplog.records:
                break
            await asyncio.sleep(0.2)
        quiet.cancel()
    [line] = [record.getMessage() for record in caplog.records if other_id in record.getMessage()]
    assert "waiting for a worker" in line
    assert f"scope-tool cancel {other_id}" in line
    for each in (call_id, other_id):
        await temporal_client.get_workflow_handle(each).terminate("test over")
