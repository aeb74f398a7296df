"""Crash safety with real processes: workers SIGKILLed, the server SIGKILLed and restarted.

The side-effect ledger proves that nothing which completed before a crash runs again, and
that a tool not marked retry-safe never runs twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.servers import DedicatedDevServer
from helpers.waiting import wait_for_phase, wait_until
from helpers.workers import worker_process
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from runtime.example_tools import ledger_lines
from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, Phase, ToolCalls

HEARTBEAT = timedelta(seconds=2)


def _plan(ledger: Path, service: str = "api") -> Request:
    return Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": service})
    )


async def _heartbeat_recorded(handle: Any) -> bool:
    description = await handle.workflow_handle.describe()
    pending = description.raw_description.pending_activities
    return bool(pending) and bool(pending[0].heartbeat_details.payloads)


async def _kill_worker_inside_tool(
    calls: ToolCalls,
    request: Request,
    *,
    call_id: str,
    ledger: Path,
    temporal_address: str,
    task_queue: str,
    log: Path,
    after_first_heartbeat: bool,
) -> Any:
    """Start ``request``, SIGKILL its worker once the tool wrote "start"; return the handle.

    With ``after_first_heartbeat`` the kill waits until the server holds the round's first
    heartbeat (a retry-safe tool sends it before running); without, it comes at once, so
    usually before the round's first periodic heartbeat (a third of ``HEARTBEAT`` in).
    """
    async with worker_process(temporal_address, task_queue, log) as worker:
        handle = await calls.start(request, call_id=call_id)
        await wait_until(lambda: ledger_lines(ledger) == ["start"])
        if after_first_heartbeat:
            for _ in range(100):
                if await _heartbeat_recorded(handle):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the retry-safe round never heartbeat before running")
        worker.kill()
        await asyncio.to_thread(worker.process.wait)
    return handle


async def test_worker_killed_while_waiting_then_answered_with_no_worker(
    calls: ToolCalls, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    async with worker_process(temporal_address, task_queue, tmp_path / "w1.log") as first:
        handle = await calls.start(_plan(ledger), call_id=f"crash-wait-{uuid.uuid4()}")
        pending = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending
        first.kill()
        await asyncio.to_thread(first.process.wait)
    # No worker runs: the update is accepted by the server and waits for one.
    answering = asyncio.create_task(
        handle.answer({"approve": True}, request_id=pending.request_id, answered_by="alice")
    )
    await asyncio.sleep(1.0)
    assert not answering.done()
    async with worker_process(temporal_address, task_queue, tmp_path / "w2.log"):
        receipt = await asyncio.wait_for(answering, timeout=30)
        assert receipt.request_id == pending.request_id
        second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        while second.round != 2:
            second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await handle.answer('"confirm"', request_id=second.pending.request_id)
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.rounds == 3
    assert ledger_lines(ledger) == ["plan", "prepare", "write"]  # round 1 did not run again


async def test_tool_not_safe_to_retry_ends_outcome_unknown(
    calls: ToolCalls, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 60})
    # Killed at once (this tool sends no heartbeat before running): a round lost without
    # retry-safe details must count as not retry-safe, whether or not a periodic one arrived.
    handle = await _kill_worker_inside_tool(
        calls,
        Request(name="slow", arguments=arguments),
        call_id=f"crash-tool-{uuid.uuid4()}",
        ledger=ledger,
        temporal_address=temporal_address,
        task_queue=task_queue,
        log=tmp_path / "w1.log",
        after_first_heartbeat=False,
    )
    killed_at = datetime.now(UTC)
    async with worker_process(temporal_address, task_queue, tmp_path / "w2.log"):
        outcome = await asyncio.wait_for(handle.result(), timeout=40)
    # The server declared the round lost one heartbeat timeout after the kill (plus the
    # heartbeat interval); the result itself may come later, once the dead worker's sticky
    # queue times out and the workflow task moves to the new worker.
    history = await handle.workflow_handle.fetch_history()
    timed_out = [
        event.event_time.ToDatetime(UTC)
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT
    ]
    assert len(timed_out) == 1
    # (slack for a busy shared machine; the start-to-close timeout alone would be 24 h)
    assert (timed_out[0] - killed_at).total_seconds() < HEARTBEAT.total_seconds() + 3
    assert outcome.phase is Phase.ERRORED
    assert outcome.message.startswith("outcome unknown: round 1 of tool 'slow'")
    assert "not marked retry-safe" in outcome.message
    assert ledger_lines(ledger) == ["start"]  # never executed a second time


async def test_retry_safe_tool_completes_on_another_worker(
    calls: ToolCalls, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 2})
    handle = await _kill_worker_inside_tool(
        calls,
        Request(name="slow_safe", arguments=arguments),
        call_id=f"crash-safe-{uuid.uuid4()}",
        ledger=ledger,
        temporal_address=temporal_address,
        task_queue=task_queue,
        log=tmp_path / "w1.log",
        after_first_heartbeat=True,
    )
    async with worker_process(temporal_address, task_queue, tmp_path / "w2.log"):
        outcome = await asyncio.wait_for(handle.result(), timeout=40)
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "slow done"
    assert ledger_lines(ledger) == ["start", "start", "end"]


@pytest.mark.slow
async def test_server_killed_and_restarted_while_calls_wait(tmp_path: Path) -> None:
    server = DedicatedDevServer(db_file=tmp_path / "server.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        task_queue = f"restart-{uuid.uuid4()}"
        client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
        calls = ToolCalls(client, task_queue=task_queue, heartbeat_timeout=HEARTBEAT)
        ledgers = [tmp_path / f"ledger-{index}" for index in range(3)]
        async with worker_process(server.address, task_queue, tmp_path / "w1.log"):
            handles = [
                await calls.start(_plan(ledger, f"s{index}"), call_id=f"restart-{index}")
                for index, ledger in enumerate(ledgers)
            ]
            for handle in handles:
                await wait_for_phase(handle, Phase.AWAITING_INPUT)
            await asyncio.to_thread(server.kill)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(server.start)
            client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            calls = ToolCalls(client, task_queue=task_queue, heartbeat_timeout=HEARTBEAT)
            for handle in handles:
                revived = calls.get(handle.call_id)
                status = await wait_for_phase(revived, Phase.AWAITING_INPUT, within=60)
                await revived.answer({"approve": False}, request_id=status.pending.request_id)
            outcomes = [await calls.get(handle.call_id).result() for handle in handles]
        assert [outcome.phase for outcome in outcomes] == [Phase.COMPLETED] * 3
        assert [ledger_lines(ledger) for ledger in ledgers] == [["plan"]] * 3
    finally:
        await asyncio.to_thread(server.stop)


async def test_worker_process_stops_cleanly_on_sigterm(
    temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "w.log"
    async with worker_process(temporal_address, task_queue, log) as worker:
        worker.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(asyncio.to_thread(worker.process.wait), timeout=20)
    assert code == 0
    assert "worker stopped" in log.read_text()


async def test_worker_process_refuses_a_bad_registry(temporal_address: str, tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scope_tool.workers",
        "--tools",
        "json:dumps",
        "--address",
        temporal_address,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    # docs/cli.md: an attribute that is not a Registry is refused (exit 1), one prefixed line.
    assert process.returncode == 1
    assert (
        stderr.decode().strip()
        == "scope-tool: error: json:dumps is a function, not a scope_tool.Registry"
    )
