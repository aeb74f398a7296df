"""Who may answer a waiting call, where an operator looks: the ScopeToolAssignee search
attribute (one visibility query, at no extra history event) and the Web UI's current details
(who may answer now, the next reminder or escalation)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase, wait_until_async
from temporalio.api.enums.v1 import EventType

from policies.policy_tools import REGISTRY
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.client._first_stop import start_options
from scope_tool.testing import start_worker
from scope_tool.wire import ASSIGNEE_KEY, PHASE_KEY, WORKFLOW_NAME

HOUR = 3600.0


def _refund(ledger: Path, order: str = "o-1") -> Request:
    arguments = {"ledger": str(ledger), "order": order, "amount": 5}
    return Request(name="refund", arguments=json.dumps(arguments))


async def _events(handle: Any) -> list[Any]:
    return list((await handle.workflow_handle.fetch_history()).events)


_TASK_EVENTS = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    }
)


def _kinds(events: list[Any]) -> list[int]:
    """The events' types but for workflow tasks, whose number depends on timing (a round
    offered eagerly may take one task more or less), not on what the call did."""
    return [e.event_type for e in events if e.event_type not in _TASK_EVENTS]


async def _assignees(handle: Any) -> list[str] | None:
    described = await handle.workflow_handle.describe()
    value = described.typed_search_attributes.get(ASSIGNEE_KEY)
    return list(value) if value is not None else None


async def _details(handle: Any) -> str:
    metadata = await handle.workflow_handle.query("__temporal_workflow_metadata")
    return str(metadata.current_details)


async def test_a_waiting_call_is_found_by_its_assignee_at_no_extra_history_event(
    calls: ToolCalls, worker: Any, temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4()
    ledger = tmp_path / "ledger"
    handle = await calls.start(
        _refund(ledger, "o-1"), call_id=f"carol-{tag}", allowed_answerers=("carol",)
    )
    # The same call as a client before assignee_attribute started it (the field's default).
    new_input = await calls._call_input(
        _refund(ledger, "o-2"),
        call_id=f"carol-old-{tag}",
        options={"allowed_answerers": ("carol",)},
    )
    assert new_input.assignee_attribute
    old_input = replace(new_input, assignee_attribute=False)
    await temporal_client.start_workflow(
        WORKFLOW_NAME, old_input, **start_options(old_input, task_queue=task_queue)
    )
    old = calls.get(old_input.call_id)
    for each in (handle, old):
        await wait_for_phase(each, Phase.AWAITING_INPUT)
    query = f'ScopeToolAssignee = "carol" AND TaskQueue = "{task_queue}"'

    async def found() -> list[str]:
        return [each.id async for each in temporal_client.list_workflows(query)]

    await wait_until_async(lambda: _listed(found(), [handle.call_id]))
    assert await _assignees(old) is None  # started before the field: never written
    # Waiting, both histories have the same events: the assignee rode on the phase's upsert.
    waiting_new, waiting_old = await _events(handle), await _events(old)
    assert _kinds(waiting_new) == _kinds(waiting_old)
    upserts = [
        e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        for e in waiting_new
        if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]
    assert [sorted(fields) for fields in upserts][-1] == sorted([PHASE_KEY.name, ASSIGNEE_KEY.name])
    assert "**Who may answer now** `carol`" in await _details(handle)
    for each in (handle, old):
        await each.answer({"decision": "approve"}, answered_by="carol")
        await each.result()
    # Answered and finished: the attribute is cleared with the phase, in the same upsert.
    assert await _assignees(handle) is None
    done_new, done_old = await _events(handle), await _events(old)
    assert _kinds(done_new) == _kinds(done_old)
    # Counted: started, round 1 (3), the upsert that says waiting (phase and assignee), the
    # answer (2), round 2 (3), the upsert that says COMPLETED (and unsets the assignee), done.
    assert len(_kinds(done_new)) == 12
    upsert = EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    assert _kinds(done_new).count(upsert) == 2
    await wait_until_async(lambda: _listed(found(), []))
    await assert_replays(handle)
    await assert_replays(old)


async def _listed(value: Any, expected: list[str]) -> bool:
    return sorted(await value) == sorted(expected)


async def test_pending_for_narrows_by_the_attribute_and_keeps_calls_anyone_may_answer(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    tag = uuid.uuid4()
    ledger = tmp_path / "ledger"
    carol = "carol.x+ops@example-corp.com"  # the punctuation a query may carry
    for_carol = await calls.start(
        _refund(ledger, "o-1"), call_id=f"c-{tag}", allowed_answerers=(carol,)
    )
    for_dan = await calls.start(
        _refund(ledger, "o-2"), call_id=f"d-{tag}", allowed_answerers=("dan",)
    )
    anyone = await calls.start(_refund(ledger, "o-3"), call_id=f"a-{tag}")
    voters = await calls.start(
        _refund(ledger, "o-4"),
        call_id=f"v-{tag}",
        policy=ApprovalPolicy(quorum=2, voters=(carol, "dan")),
    )
    for each in (for_carol, for_dan, anyone, voters):
        await wait_for_phase(each, Phase.AWAITING_INPUT)
    assert await _assignees(voters) == [carol, "dan"]  # the policy's voters
    mine = {for_carol.call_id, anyone.call_id, voters.call_id}

    async def listed() -> set[str]:
        found = await calls.list(phase=Phase.AWAITING_INPUT, assignee=carol, limit=1000)
        return {each.call_id for each in found if str(tag) in each.call_id}

    async def settled() -> bool:
        return await listed() == mine

    await wait_until_async(settled)
    with pytest.raises(ValueError, match="assignee must be"):
        await calls.list(phase=Phase.AWAITING_INPUT, assignee="o'brien\\")  # not searchable
    for each in (for_carol, for_dan, anyone, voters):
        await each.cancel()


async def test_the_details_show_who_may_answer_and_the_next_step(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(
        reminders=(HOUR,), escalate_to=("erin",), escalation_timeout=HOUR, max_extension=HOUR
    )
    env = time_skipping_env
    async with start_worker(env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"details-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=2),
            allowed_answerers=("alice", "bob"),
            policy=policy,
        )
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        assert status.pending is not None
        asked = status.pending.asked_at

        def at(hours: float) -> str:
            return (asked + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S UTC")

        details = await _details(handle)
        assert "**Who may answer now** `alice`, `bob`" in details
        assert f"**Next reminder** {at(1)}" in details
        await handle.extend(timedelta(minutes=30), extended_by="alice")
        assert f"**Next reminder** {at(1.5)}" in await _details(handle)
        await env.sleep(timedelta(hours=1, minutes=35))  # past the reminder

        async def escalation_next() -> bool:
            return f"**Escalation** to `erin` at {at(2.5)} unless answered" in await _details(
                handle
            )

        await wait_until_async(escalation_next)
        await env.sleep(timedelta(hours=1))  # past the deadline: escalated to erin

        async def escalated() -> bool:
            shown = await _details(handle)
            return (
                "**Who may answer now** `alice`, `bob`, `erin`" in shown
                and "(then it expires)" in shown
            )

        await wait_until_async(escalated)
        assert await _assignees(handle) == ["alice", "bob", "erin"]
        await handle.answer({"decision": "approve"}, answered_by="erin")
        await handle.result()
        assert await _assignees(handle) is None
