"""Faults during load, small: SIGKILL a worker mid-tool, then SIGKILL and restart the server.

``approve_write`` is not safe to retry. Whatever breaks, its effect must never happen twice, a
COMPLETED call must have its effect, and the calls the dead worker abandoned inside the tool
must end ERRORED "outcome unknown" (counted), not be silently re-run or left hanging.
Small (40 calls) in ``make test``; full (1,000 calls) with ``SCOPE_TOOL_TEST_SIZE=full``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from helpers.servers import DedicatedDevServer
from temporalio.client import Client

from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, Phase, ToolCalls

from ._figures import record_figures
from ._ledger import SideEffectLedger
from ._load import run_load
from ._processes import WorkerProcess
from ._sizes import SIZE
from .conftest import HEARTBEAT_TIMEOUT


@pytest.mark.timeout(SIZE.test_timeout_seconds)
async def test_worker_and_server_kills_lose_and_duplicate_nothing(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    report = await run_load(
        server=fresh_server,
        workdir=tmp_path,
        calls=SIZE.fault_calls,
        workers=2,
        hold_seconds=SIZE.fault_hold_seconds,
        faults=SIZE.fault_plan,
        heartbeat_timeout=SIZE.heartbeat_timeout,
        budget_seconds=SIZE.fault_budget_seconds,
    )
    print(report.summary())
    if SIZE.record_figures:
        record_figures(
            "faults",
            {
                "calls": SIZE.fault_calls,
                "scope_tool.workers": 2,
                "seconds": round(report.seconds, 1),
                "calls_per_second": round(report.calls_per_second, 1),
                "faults": list(report.faults),
                "phases": report.phases,
                "caught_in_tool": len(report.caught_in_tool),
                "outcome_unknown": report.outcome_unknown,
                "unknown_by_round": report.unknown_by_round,
                "effects": report.audit.effects,
                "lost": len(report.audit.lost),
                "duplicated": len(report.audit.duplicated),
                "misrouted": len(report.audit.misrouted),
                "workflow_task_failed": len(report.workflow_task_failures),
                "rounds_rerun": len(report.rounds_rerun),
                "longest_pause_between_effects_s": round(report.longest_pause_seconds, 1),
                "answerer": report.answerer,
            },
        )

    assert len(report.faults) == 4, report.faults  # worker kill, replacement, server kill, restart
    assert fresh_server.starts == 2
    assert report.not_terminal == ()
    assert set(report.phases) <= {Phase.COMPLETED.value, Phase.ERRORED.value}, report.phases
    # The kill landed inside the tool, and every call caught there ended "outcome unknown".
    assert report.caught_in_tool, "the worker kill caught no call inside the tool"
    assert set(report.caught_in_tool.values()) == {Phase.ERRORED.value}, report.caught_in_tool
    assert report.outcome_unknown == report.phases.get(Phase.ERRORED.value, 0)
    assert report.outcome_unknown >= len(report.caught_in_tool)
    assert report.audit.lost == ()
    assert report.audit.duplicated == ()
    assert report.audit.misrouted == ()
    assert report.audit.strangers == ()
    assert report.audit.effects >= report.phases.get(Phase.COMPLETED.value, 0)
    assert report.workflow_task_failures == ()
    assert report.rounds_rerun == (), "a tool round was scheduled twice for one call"


async def test_retry_safe_tool_is_run_again_when_its_worker_dies(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    """The opt-in works both ways: a tool served as retry-safe is re-run elsewhere and the
    call COMPLETES, where ``approve_write`` above ends "outcome unknown"."""
    ledger = SideEffectLedger(tmp_path / "ledger.db")
    task_queue = f"retry-safe-{uuid.uuid4().hex[:8]}"
    workers = [
        WorkerProcess(
            address=fresh_server.address,
            task_queue=task_queue,
            ledger_file=ledger.path,
            log_file=tmp_path / f"worker-{index}.log",
            hold_seconds=2.0,
            retry_safe=("idempotent_write",),
        )
        for index in range(2)
    ]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            await asyncio.to_thread(worker.wait_ready, timeout=60.0)
        client = await Client.connect(fresh_server.address, data_converter=DATA_CONVERTER)
        calls = ToolCalls(client, task_queue=task_queue, heartbeat_timeout=HEARTBEAT_TIMEOUT)
        call_id = f"retry-safe-{uuid.uuid4().hex[:8]}"
        handle = await calls.start(
            Request(name="idempotent_write", arguments=json.dumps({"key": call_id})),
            call_id=call_id,
        )
        victim = None
        for _ in range(400):
            entered = await asyncio.to_thread(ledger.entered_by, call_key=call_id)
            if entered:
                victim = next(
                    worker
                    for worker in workers
                    if worker.process is not None and worker.process.pid == entered[0]
                )
                break
            await asyncio.sleep(0.02)
        assert victim is not None, "the tool never started"
        # Retry-safety travels in the round's heartbeat: kill once the server holds it (a kill
        # before that ends "outcome unknown", as for a tool not declared retry-safe).
        for _ in range(400):
            described = await client.get_workflow_handle(call_id).describe()
            pending = described.raw_description.pending_activities
            if any(activity.HasField("heartbeat_details") for activity in pending):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the round's heartbeat never reached the server")
        victim.kill()

        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        survivor = next(worker for worker in workers if worker is not victim)
        counts = await asyncio.to_thread(ledger.effect_counts)
        assert counts[call_id] == 1  # the victim died before its write; the survivor wrote
        assert survivor.alive
    finally:
        for worker in workers:
            worker.stop()


async def test_graceful_worker_stop_drains_the_tool_in_flight(
    fresh_server: DedicatedDevServer, tmp_path: Path
) -> None:
    """SIGTERM is a deploy, not a crash: the worker promises to drain in-flight work, so a
    tool already running finishes and its call COMPLETES, rather than ending "outcome unknown"."""
    ledger = SideEffectLedger(tmp_path / "ledger.db")
    task_queue = f"drain-{uuid.uuid4().hex[:8]}"

    def worker(name: str) -> WorkerProcess:
        return WorkerProcess(
            address=fresh_server.address,
            task_queue=task_queue,
            ledger_file=ledger.path,
            log_file=tmp_path / f"{name}.log",
            hold_seconds=2.0,
        )

    stopping, successor = worker("stopping"), worker("successor")
    try:
        stopping.start()
        await asyncio.to_thread(stopping.wait_ready, timeout=60.0)
        client = await Client.connect(fresh_server.address, data_converter=DATA_CONVERTER)
        calls = ToolCalls(client, task_queue=task_queue, heartbeat_timeout=HEARTBEAT_TIMEOUT)
        call_id = f"drain-{uuid.uuid4().hex[:8]}"
        handle = await calls.start(
            Request(name="approve_write", arguments=json.dumps({"key": call_id})),
            call_id=call_id,
        )
        for _ in range(400):
            if (await handle.status()).phase is Phase.AWAITING_INPUT:
                break
            await asyncio.sleep(0.05)
        await handle.answer({"approve": True, "key": call_id}, request_id=f"{call_id}/r1")
        assert stopping.process is not None
        for _ in range(400):
            if await asyncio.to_thread(ledger.inflight, pid=stopping.process.pid):
                break
            await asyncio.sleep(0.02)
        exit_code = await asyncio.to_thread(stopping.stop)  # SIGTERM, inside the tool
        successor.start()  # the workflow itself still needs a worker to finish

        outcome = await asyncio.wait_for(handle.result(), 60)
        assert exit_code == 0
        assert outcome.phase is Phase.COMPLETED, outcome.message
        assert (await asyncio.to_thread(ledger.effect_counts))[call_id] == 1
    finally:
        stopping.stop()
        successor.stop()
