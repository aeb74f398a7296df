"""A rolling deploy during waiting calls, with real worker processes stopped by SIGTERM.

Calls wait for answers on version 1; version 1 stops; version 2 (a changed contract) starts and
the answers are given: those calls stay waiting for a worker with their contract and say so,
while new calls run on version 2. Then a worker serving both versions starts: every call
completes exactly once (its ledger), none ends INVALID or ERRORED because of the deploy.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from helpers.waiting import wait_for_phase, wait_until_async
from helpers.workers import worker_process

from runtime.example_tools import REGISTRY, ledger_lines
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls

V1 = "runtime.example_tools:REGISTRY"
V2 = "runtime.example_tools:CHANGED_REGISTRY"


def _plan(ledger: Path) -> Request:
    return Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "db"})
    )


async def _until_question(handle: Any, round_number: int) -> None:
    async def asked() -> bool:
        status = await handle.status()
        return status.phase is Phase.AWAITING_INPUT and status.round == round_number

    await wait_until_async(asked, within=30)


async def test_rolling_deploy_keeps_waiting_calls_alive(
    calls: ToolCalls, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    old_digest = REGISTRY.resolve("deploy_plan").contract.digest  # type: ignore[union-attr]
    ledgers = {f"old-{n}": tmp_path / f"old-{n}" for n in range(3)}

    async with worker_process(temporal_address, task_queue, tmp_path / "v1.log", tools=V1):
        old = {
            name: await calls.start(_plan(ledger), call_id=f"{name}-{uuid.uuid4()}")
            for name, ledger in ledgers.items()
        }
        for handle in old.values():
            await wait_for_phase(handle, Phase.AWAITING_INPUT)
    # Version 1 stopped by SIGTERM (the context's exit); version 2 takes over.
    async with worker_process(temporal_address, task_queue, tmp_path / "v2.log", tools=V2):
        for handle in old.values():
            await handle.answer({"approve": True}, answered_by="alice")

        async def all_stuck() -> bool:
            statuses = await asyncio.gather(*(handle.status() for handle in old.values()))
            return all(status.waiting_for_worker is not None for status in statuses)

        await wait_until_async(all_stuck, within=30)
        for handle in old.values():
            status = await handle.status()
            assert status.phase is Phase.RUNNING
            assert status.waiting_for_worker is not None
            assert status.waiting_for_worker.message.startswith(
                f"waiting for a worker with tool deploy_plan, contract {old_digest[:12]}"
            )
        # New calls run on version 2 meanwhile.
        ledgers["new"] = tmp_path / "new"
        new = await calls.start(_plan(ledgers["new"]), call_id=f"new-{uuid.uuid4()}")
        await wait_for_phase(new, Phase.AWAITING_INPUT)
        await new.answer({"approve": True}, answered_by="bob")
        await _until_question(new, 2)
        assert all(ledger_lines(ledgers[name]) == ["plan"] for name in old)

    # A worker serving both versions: the old calls drain on their own contract.
    async with worker_process(temporal_address, task_queue, tmp_path / "v3.log", tools=(V2, V1)):
        handles = {**old, "new": new}
        for handle in handles.values():
            await _until_question(handle, 2)
            await handle.answer('"confirm"', answered_by="carol")
        outcomes = {name: await handle.result() for name, handle in handles.items()}

    for name, outcome in outcomes.items():
        assert outcome.phase is Phase.COMPLETED, (name, outcome)
        assert ledger_lines(ledgers[name]) == ["plan", "prepare", "write"], name
    for log in ("v1.log", "v2.log", "v3.log"):
        assert "Traceback" not in (tmp_path / log).read_text(), log
