"""Routing: each round reaches only a worker with its tool (and, later, its contract).

Two workers with different tools share one task queue; a tool nobody serves ends INVALID within
seconds; the catalog lists what the polling workers serve; a call stuck on a missing contract
says so and can be cancelled at once.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from helpers.waiting import wait_for_phase, wait_until_async
from pydantic import BaseModel, ConfigDict
from temporalio.client import Client

from runtime.example_tools import CHANGED_REGISTRY, REGISTRY, ledger_lines
from runtime.round_history import round_attempts
from scope_tool import Func, Registry, Request
from scope_tool.client import DATA_CONVERTER, Phase, ToolCalls
from scope_tool.wire import CALL_TOOL_ACTIVITY, CALL_TOOL_HERE_ACTIVITY, NOT_SERVED_HERE, tool_queue
from scope_tool.workers import build_worker


class GreetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


def greet(value: GreetInput) -> str:
    return f"Hello, {value.name}!"


OTHER = Registry(Func(greet, name="greet", description="greet someone by name"))


async def test_two_workers_with_different_tools_on_one_task_queue(
    calls: ToolCalls, temporal_client: Any, temporal_address: str, task_queue: str
) -> None:
    # Two worker processes in production; here a second client, since one client's workers
    # may not share a task queue (the SDK refuses overlapping workers per client).
    other_client = await Client.connect(temporal_address, data_converter=DATA_CONVERTER)
    async with build_worker(other_client, OTHER, task_queue=task_queue):
        async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
            await _run_both_tools_and_list(calls, task_queue)
        # The stopped worker withdrew its catalog on the way out; the other's stays. The
        # catalog is eventually consistent (a signal to the catalog workflow), so wait for it.
        listed: list[str] = []
        for _ in range(150):
            listed = [tool.name for tool in await calls.tools()]
            if listed == ["greet"]:
                break
            await asyncio.sleep(0.2)
        assert listed == ["greet"]


async def _run_both_tools_and_list(calls: ToolCalls, task_queue: str) -> None:
    """Eight calls of each registry's tool complete; the listing has both registries.

    Whichever worker ran the workflow task, a round ran on the main queue only where that was
    served; a worker without the tool refused it there and it ran from the tool's queue.
    """
    handles = []
    for number in range(8):
        handles.append(
            (
                f"echo: {number}",
                await calls.start(
                    Request(name="echo", arguments=json.dumps({"text": str(number)})),
                    call_id=f"echo-{number}-{uuid.uuid4()}",
                ),
            )
        )
        handles.append(
            (
                f"Hello, {number}!",
                await calls.start(
                    Request(name="greet", arguments=json.dumps({"name": str(number)})),
                    call_id=f"greet-{number}-{uuid.uuid4()}",
                ),
            )
        )
    outcomes = await asyncio.gather(*(handle.result() for _, handle in handles))
    for (expected, _), outcome in zip(handles, outcomes, strict=True):
        assert outcome.phase is Phase.COMPLETED, outcome
        assert outcome.output.text() == expected
    for expected, handle in handles:
        name = "echo" if expected.startswith("echo") else "greet"
        attempts = [
            (each.activity, each.task_queue, each.ended) for each in await round_attempts(handle)
        ]
        assert attempts in (
            [(CALL_TOOL_HERE_ACTIVITY, task_queue, "completed")],
            [
                (CALL_TOOL_HERE_ACTIVITY, task_queue, NOT_SERVED_HERE),
                (CALL_TOOL_ACTIVITY, tool_queue(task_queue, name), "completed"),
            ],
        ), attempts

    tools = await calls.tools()
    names = sorted(d.name for d in (*REGISTRY.definitions(), *OTHER.definitions()))
    assert [tool.name for tool in tools] == names
    listed = {tool.name: tool for tool in tools}
    greet_contract = OTHER.resolve("greet").contract  # type: ignore[union-attr]
    assert listed["greet"].description == "greet someone by name"
    assert listed["greet"].input_schema == greet_contract.definition.input_schema
    assert listed["greet"].contract_digests == (greet_contract.digest,)
    assert await calls.serves("greet")
    assert not await calls.serves("gret")


async def test_a_tool_no_worker_serves_ends_invalid_within_seconds(
    calls: ToolCalls, worker: Any
) -> None:
    started = time.monotonic()
    handle = await calls.start(
        Request(name="ecoh", arguments='{"text":"hi"}'), call_id=f"typo-{uuid.uuid4()}"
    )
    outcome = await handle.result()
    assert time.monotonic() - started < 30  # UNSERVED_TIMEOUT_NOW (10 s) plus a loaded server
    assert outcome.phase is Phase.INVALID
    assert "no worker serves tool 'ecoh'" in outcome.message
    assert outcome.output.text() is not None
    assert "no worker serves tool 'ecoh'" in (outcome.output.text() or "")


async def _cli(capsys: Any, *args: str, address: str, queue: str) -> str:
    """Run one ``scope-tool`` command in a thread (it runs its own event loop); its stdout."""
    from scope_tool.cli.__main__ import run

    capsys.readouterr()
    code = await asyncio.to_thread(run, [*args, "--address", address, "--task-queue", queue])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


async def test_a_call_waiting_for_a_worker_is_cancelled_promptly(
    calls: ToolCalls,
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
    capsys: Any,
) -> None:
    """Status and pending say which worker the call waits for; cancel ends it at once."""
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "db"})
    )
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(request, call_id=f"stuck-{uuid.uuid4()}")
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
    async with build_worker(temporal_client, CHANGED_REGISTRY, task_queue=task_queue):
        await handle.answer({"approve": True})

        async def stuck() -> bool:
            return (await handle.status()).waiting_for_worker is not None

        await wait_until_async(stuck)
        shown = await _cli(
            capsys, "status", handle.call_id, address=temporal_address, queue=task_queue
        )
        assert "stuck" in shown
        assert "waiting for a worker with tool deploy_plan, contract" in shown
        assert f"scope-tool cancel {handle.call_id}" in shown
        listed = await _cli(capsys, "pending", address=temporal_address, queue=task_queue)
        assert "WAITING FOR A WORKER" in listed
        assert handle.call_id in listed
        as_json = json.loads(
            await _cli(capsys, "pending", "--json", address=temporal_address, queue=task_queue)
        )
        [entry] = [each for each in as_json if each["call_id"] == handle.call_id]
        assert entry["waiting_for_worker"]["tool"] == "deploy_plan"
        cancelled_at = time.monotonic()
        await handle.cancel()
        outcome = await asyncio.wait_for(handle.result(), timeout=10)
        assert time.monotonic() - cancelled_at < 5
    assert outcome.phase is Phase.CANCELLED
    assert ledger_lines(ledger) == ["plan"]


async def test_one_worker_serves_two_versions(
    calls: ToolCalls, temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    """New calls run on the newest contract; a call started on the old one finishes on it."""
    old_ledger, new_ledger = tmp_path / "old", tmp_path / "new"

    def plan(ledger: Path) -> Request:
        return Request(
            name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "db"})
        )

    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        old = await calls.start(plan(old_ledger), call_id=f"old-{uuid.uuid4()}")
        await wait_for_phase(old, Phase.AWAITING_INPUT)
    async with build_worker(temporal_client, [CHANGED_REGISTRY, REGISTRY], task_queue=task_queue):
        new = await calls.start(plan(new_ledger), call_id=f"new-{uuid.uuid4()}")
        await wait_for_phase(new, Phase.AWAITING_INPUT)
        for handle in (old, new):
            await handle.answer({"approve": True})
            status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
            while status.round != 2:
                status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
            await handle.answer('"confirm"')
        outcomes = [await old.result(), await new.result()]
        listed: dict[str, Any] = {}

        async def newest_listed() -> bool:
            # The catalog is eventually consistent: its next workflow task after the first
            # worker stopped waits out that worker's sticky queue (about 10 s).
            listed.clear()
            listed.update({tool.name: tool for tool in await calls.tools()})
            plan = listed.get("deploy_plan")
            return plan is not None and plan.description == "a changed contract"

        await wait_until_async(newest_listed, within=30)
    assert [outcome.phase for outcome in outcomes] == [Phase.COMPLETED, Phase.COMPLETED]
    assert ledger_lines(old_ledger) == ["plan", "prepare", "write"]
    assert ledger_lines(new_ledger) == ["plan", "prepare", "write"]
    new_digest = CHANGED_REGISTRY.resolve("deploy_plan").contract.digest  # type: ignore[union-attr]
    old_digest = REGISTRY.resolve("deploy_plan").contract.digest  # type: ignore[union-attr]
    assert listed["deploy_plan"].description == "a changed contract"
    assert listed["deploy_plan"].contract_digests == (new_digest, old_digest)
    # The one worker serves both contracts, so every round ran on the main queue (eagerly), each
    # in the version its call's contract pins (round 1 in the newest holding the tool).
    for handle, digest in ((old, old_digest), (new, new_digest)):
        assert [
            (each.round, each.activity, each.task_queue, each.contract_digest, each.ended)
            for each in await round_attempts(handle)
        ] == [
            (1, CALL_TOOL_HERE_ACTIVITY, task_queue, None, "completed"),
            (2, CALL_TOOL_HERE_ACTIVITY, task_queue, digest, "completed"),
            (3, CALL_TOOL_HERE_ACTIVITY, task_queue, digest, "completed"),
        ]


async def test_a_started_worker_is_served_at_once(temporal_client: Any) -> None:
    """Once ``async with`` returns (the CLI's "worker ready"), the server lists its pollers, so
    ``serves`` and ``scope-tool call`` see every tool with no wait (a CI run once refused a call
    made right after "worker ready": the first poll had not reached the server)."""
    queue = f"fresh-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(temporal_client, task_queue=queue)
    for _ in range(3):
        async with build_worker(temporal_client, OTHER, task_queue=queue):
            assert await calls.serves("greet")
        queue = f"fresh-{uuid.uuid4().hex[:8]}"
        calls = ToolCalls(temporal_client, task_queue=queue)
