"""Eager rounds: a routed round is offered on the main queue first, and falls back when refused.

A worker serving every tool runs each round from the main queue (Temporal hands it to the worker
that completed the workflow task); a worker without the tool (round 1) or the call's contract
(a re-entry) refuses it there before running anything, and the round runs from its tool or
contract queue as routing always did. Every history here also replays.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase, wait_until_async
from temporalio.client import Client

from runtime.example_tools import CHANGED_REGISTRY, REGISTRY, ledger_lines
from runtime.round_history import round_attempts
from runtime.test_routing import OTHER
from scope_tool import Request
from scope_tool.client import DATA_CONVERTER, Phase, ToolCalls
from scope_tool.wire import (
    CALL_TOOL_ACTIVITY,
    CALL_TOOL_HERE_ACTIVITY,
    NOT_SERVED_HERE,
    contract_queue,
    tool_queue,
)
from scope_tool.workers import build_worker


def _attempts(found: list[Any]) -> list[tuple[int, str, str, str]]:
    return [(each.round, each.activity, each.task_queue, each.ended) for each in found]


async def test_a_worker_serving_the_tool_runs_every_round_on_the_main_queue(
    calls: ToolCalls, worker: Any, task_queue: str, tmp_path: Path
) -> None:
    plan = await calls.start(
        Request(
            name="deploy_plan",
            arguments=json.dumps({"ledger": str(tmp_path / "ledger"), "service": "db"}),
        ),
        call_id=f"eager-plan-{uuid.uuid4()}",
    )
    await wait_for_phase(plan, Phase.AWAITING_INPUT)
    await plan.answer({"approve": True})
    status = await wait_for_phase(plan, Phase.AWAITING_INPUT)
    while status.round != 2:
        status = await wait_for_phase(plan, Phase.AWAITING_INPUT)
    await plan.answer('"confirm"')
    echo = await calls.start(
        Request(name="echo", arguments='{"text":"here"}'), call_id=f"eager-echo-{uuid.uuid4()}"
    )
    assert (await plan.result()).phase is Phase.COMPLETED
    assert (await echo.result()).output.text() == "echo: here"
    assert ledger_lines(tmp_path / "ledger") == ["plan", "prepare", "write"]
    # Scheduled on the workflow's own queue, and none was refused or re-sent elsewhere.
    assert _attempts(await round_attempts(plan)) == [
        (number, CALL_TOOL_HERE_ACTIVITY, task_queue, "completed") for number in (1, 2, 3)
    ]
    assert _attempts(await round_attempts(echo)) == [
        (1, CALL_TOOL_HERE_ACTIVITY, task_queue, "completed")
    ]
    await assert_replays(plan)
    # The input says the rounds are eager: no patch marker, no TemporalChangeVersion upsert.
    history = await echo.workflow_handle.fetch_history()
    assert [
        event for event in history.events if event.HasField("marker_recorded_event_attributes")
    ] == []
    upserted = {
        key
        for event in history.events
        if event.HasField("upsert_workflow_search_attributes_event_attributes")
        for key in event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    }
    assert upserted == {"ScopeToolPhase"}


async def test_round_one_refused_by_a_worker_without_the_tool_runs_from_the_tool_queue(
    calls: ToolCalls, temporal_client: Any, temporal_address: str, task_queue: str
) -> None:
    """Only the greet worker runs workflows when the echo call starts: it refuses the round."""
    other_client = await Client.connect(temporal_address, data_converter=DATA_CONVERTER)
    async with build_worker(other_client, OTHER, task_queue=task_queue):
        handle = await calls.start(
            Request(name="echo", arguments='{"text":"routed"}'),
            call_id=f"refused-echo-{uuid.uuid4()}",
        )

        async def refused_here() -> bool:
            return [each.ended for each in await round_attempts(handle)][:1] == [NOT_SERVED_HERE]

        await wait_until_async(refused_here)
        status = await handle.status()
        assert status.phase is Phase.RUNNING
        assert status.route is not None
        assert status.route.task_queue == tool_queue(task_queue, "echo")
        async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
            outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED, outcome
    assert outcome.output.text() == "echo: routed"
    assert _attempts(await round_attempts(handle)) == [
        (1, CALL_TOOL_HERE_ACTIVITY, task_queue, NOT_SERVED_HERE),
        (1, CALL_TOOL_ACTIVITY, tool_queue(task_queue, "echo"), "completed"),
    ]
    await assert_replays(handle)


async def test_a_re_entry_refused_by_a_worker_without_the_contract_runs_from_its_queue(
    calls: ToolCalls,
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    tmp_path: Path,
) -> None:
    """The call started on the old contract; only a worker with the new one takes the answer."""
    ledger = tmp_path / "ledger"
    request = Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "db"})
    )
    old_digest = REGISTRY.resolve("deploy_plan").contract.digest  # type: ignore[union-attr]
    old_queue = contract_queue(task_queue, "deploy_plan", old_digest)
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(request, call_id=f"refused-plan-{uuid.uuid4()}")
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
    other_client = await Client.connect(temporal_address, data_converter=DATA_CONVERTER)
    async with build_worker(other_client, CHANGED_REGISTRY, task_queue=task_queue):
        await handle.answer({"approve": True})

        async def refused_here() -> bool:
            ended = [(each.round, each.ended) for each in await round_attempts(handle)]
            return (2, NOT_SERVED_HERE) in ended

        await wait_until_async(refused_here, within=40)
        status = await handle.status()
        assert status.route is not None
        assert status.route.task_queue == old_queue
        assert ledger_lines(ledger) == ["plan"]  # the refusal ran nothing
        async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
            status = await wait_for_phase(handle, Phase.AWAITING_INPUT, within=40)
            while status.round != 2:
                status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
            await handle.answer('"confirm"')
            outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED, outcome
    assert ledger_lines(ledger) == ["plan", "prepare", "write"]
    attempts = _attempts(await round_attempts(handle))
    assert attempts[:3] == [
        (1, CALL_TOOL_HERE_ACTIVITY, task_queue, "completed"),
        (2, CALL_TOOL_HERE_ACTIVITY, task_queue, NOT_SERVED_HERE),
        (2, CALL_TOOL_ACTIVITY, old_queue, "completed"),
    ]
    # Round 3 ran here if the old-contract worker ran the workflow task, else from its queue.
    assert attempts[3:] in (
        [(3, CALL_TOOL_HERE_ACTIVITY, task_queue, "completed")],
        [
            (3, CALL_TOOL_HERE_ACTIVITY, task_queue, NOT_SERVED_HERE),
            (3, CALL_TOOL_ACTIVITY, old_queue, "completed"),
        ],
    )
    await assert_replays(handle)


async def test_a_round_with_no_free_slot_on_the_main_queue_runs_from_the_tool_queue(
    calls: ToolCalls, temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    """``max_concurrent_activities`` stays a cap per queue: a full main queue does not hold a
    round that the tool's own queue has a slot for (it waits there at most ``_HERE_WAIT``)."""
    first_ledger, second_ledger = tmp_path / "first", tmp_path / "second"

    def slow(ledger: Path) -> Request:
        return Request(name="slow", arguments=json.dumps({"ledger": str(ledger), "seconds": 8}))

    async with build_worker(
        temporal_client, REGISTRY, task_queue=task_queue, max_concurrent_activities=1
    ):
        first = await calls.start(slow(first_ledger), call_id=f"slot-1-{uuid.uuid4()}")

        async def first_started() -> bool:
            return ledger_lines(first_ledger) == ["start"]

        await wait_until_async(first_started)
        second = await calls.start(slow(second_ledger), call_id=f"slot-2-{uuid.uuid4()}")

        async def both_running() -> bool:
            return ledger_lines(second_ledger) == ["start"]

        await wait_until_async(both_running, within=7)  # before the first one ends
        assert ledger_lines(first_ledger) == ["start"]
        outcomes = [await first.result(), await second.result()]
    assert [outcome.phase for outcome in outcomes] == [Phase.COMPLETED, Phase.COMPLETED]
    assert _attempts(await round_attempts(first)) == [
        (1, CALL_TOOL_HERE_ACTIVITY, task_queue, "completed")
    ]
    assert _attempts(await round_attempts(second)) == [
        (1, CALL_TOOL_HERE_ACTIVITY, task_queue, "timed_out:TIMEOUT_TYPE_SCHEDULE_TO_START"),
        (1, CALL_TOOL_ACTIVITY, tool_queue(task_queue, "slow"), "completed"),
    ]
    await assert_replays(second)
