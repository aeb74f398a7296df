"""Batch decisions: checked as one (every request current, the actor allowed), then applied."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_for_phase

from policies.policy_tools import ledger_lines
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import (
    BatchItem,
    BatchRefusedError,
    Phase,
    RefusalReason,
    ToolCallHandle,
    ToolCalls,
)

APPROVE = {"decision": "approve"}


async def _waiting_calls(
    calls: ToolCalls, ledger: Path, count: int, **options: Any
) -> list[tuple[ToolCallHandle, str]]:
    """``count`` refunds waiting for approval, with the request id each waits on."""
    prefix = uuid.uuid4().hex[:8]

    async def one(number: int) -> tuple[ToolCallHandle, str]:
        arguments = json.dumps({"ledger": str(ledger), "order": f"o-{number}", "amount": number})
        handle = await calls.start(
            Request(name="refund", arguments=arguments),
            call_id=f"batch-{prefix}-{number}",
            **options,
        )
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT, 60)
        return handle, status.pending.request_id

    return list(await asyncio.gather(*(one(number) for number in range(count))))


async def _history_answers(handle: ToolCallHandle) -> int:
    return len((await handle.history()).answers)


async def test_a_batch_of_twenty_with_one_stale_request_writes_nothing_and_names_it(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    waiting = await _waiting_calls(calls, ledger, 20)
    # The reviewer selected these; meanwhile someone else decides call 7.
    stale_handle, stale_request = waiting[7]
    await stale_handle.answer({"decision": "deny", "reason": "no"}, answered_by="carol")
    await stale_handle.result()
    items = [BatchItem(call_id=h.call_id, request_id=r) for h, r in waiting]
    with pytest.raises(BatchRefusedError) as refused:
        await calls.answer_batch(items, APPROVE, answered_by="alice")
    assert refused.value.call_ids == (stale_handle.call_id,)
    (problem,) = refused.value.problems
    assert problem.reason is RefusalReason.STALE_REQUEST
    assert stale_request in problem.message
    assert f"{stale_handle.call_id}: stale_request" in str(refused.value)
    # Nothing written: the other 19 still wait, with no answer in their histories.
    for handle, request_id in waiting[:7] + waiting[8:]:
        status = await handle.status()
        assert status.phase is Phase.AWAITING_INPUT
        assert status.pending.request_id == request_id
        assert await _history_answers(handle) == 0
    assert ledger_lines(ledger) == []


async def test_a_batch_of_twenty_current_requests_decides_all_twenty(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    waiting = await _waiting_calls(calls, ledger, 20)
    items = [BatchItem(call_id=h.call_id, request_id=r) for h, r in waiting]
    receipt = await calls.answer_batch(items, APPROVE, answered_by="alice")
    assert receipt.refused == ()
    assert [call_id for call_id, _ in receipt.receipts] == [h.call_id for h, _ in waiting]
    outcomes = await asyncio.gather(*(handle.result() for handle, _ in waiting))
    assert {outcome.phase for outcome in outcomes} == {Phase.COMPLETED}
    assert sorted(ledger_lines(ledger)) == sorted(f"refund o-{n} {n}" for n in range(20))


async def test_an_actor_not_allowed_on_one_call_refuses_the_whole_batch(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    open_calls = await _waiting_calls(calls, ledger, 2)
    voted = await _waiting_calls(
        calls, ledger, 1, policy=ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    )
    closed = await _waiting_calls(calls, ledger, 1, allowed_answerers=("bob",))
    await voted[0][0].answer(APPROVE, answered_by="alice")
    items = [BatchItem(call_id=h.call_id) for h, _ in open_calls + voted + closed]
    with pytest.raises(BatchRefusedError) as refused:
        await calls.answer_batch(items, APPROVE, answered_by="alice")
    assert [(p.call_id, p.reason) for p in refused.value.problems] == [
        (voted[0][0].call_id, RefusalReason.DUPLICATE_VOTER),
        (closed[0][0].call_id, RefusalReason.NOT_ALLOWED),
    ]
    with pytest.raises(BatchRefusedError) as schema:
        await calls.answer_batch(items[:2], {"decision": "maybe"}, answered_by="alice")
    assert {p.reason for p in schema.value.problems} == {RefusalReason.SCHEMA}
    for handle, _ in open_calls + closed:
        assert await _history_answers(handle) == 0
    with pytest.raises(ValueError, match="repeated"):
        await calls.answer_batch(items[:1] * 2, APPROVE, answered_by="alice")


async def test_a_batch_by_the_command_line(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    import os

    from e2e._cli import run_cli

    ledger = tmp_path / "ledger"
    waiting = await _waiting_calls(calls, ledger, 3)
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    ids = [handle.call_id for handle, _ in waiting]
    stale = f"{ids[1]}/r9"
    refused = await asyncio.to_thread(
        run_cli,
        "answer",
        *ids,
        '{"decision": "approve"}',
        "--by",
        "alice",
        "--request-id",
        stale,
        address=temporal_address,
        env=env,
    )
    assert refused.code == 1
    assert "batch of 3 refused, nothing was written" in refused.stderr
    assert f"{ids[1]}: stale_request" in refused.stderr
    assert ids[0] not in refused.stderr
    for handle, _ in waiting:
        assert await _history_answers(handle) == 0
    done = await asyncio.to_thread(
        run_cli,
        "answer",
        *ids,
        '{"decision": "approve"}',
        "--by",
        "alice",
        address=temporal_address,
        env=env,
    )
    assert done.code == 0, done.stderr
    assert "batch of 3: 3 answered, 0 refused" in done.stdout
    outcomes = await asyncio.gather(*(handle.result() for handle, _ in waiting))
    assert {outcome.phase for outcome in outcomes} == {Phase.COMPLETED}
