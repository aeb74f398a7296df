"""Quorum calls on a real server: distinct voters, refusals that change nothing, crash safety."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.replay import assert_replays
from helpers.servers import DedicatedDevServer
from helpers.waiting import wait_for_phase
from helpers.workers import worker_process
from temporalio.client import Client

from policies.policy_tools import ledger_lines
from scope_tool import ApprovalPolicy, InvalidPolicyError, Request
from scope_tool.client import DATA_CONVERTER, AnswerRejectedError, Phase, RefusalReason, ToolCalls

APPROVE = {"decision": "approve"}
TOOLS = "policies.policy_tools:REGISTRY"


def _refund(ledger: Path, amount: float = 250) -> Request:
    return Request(
        name="refund",
        arguments=json.dumps({"ledger": str(ledger), "order": "o-1", "amount": amount}),
    )


async def test_two_of_three_with_a_duplicate_vote_and_a_worker_killed_between_votes(
    calls: ToolCalls, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    call_id = f"quorum-{uuid.uuid4()}"
    async with worker_process(
        temporal_address, task_queue, tmp_path / "w1.log", tools=TOOLS, retry_safe=()
    ) as first:
        handle = await calls.start(_refund(ledger), call_id=call_id, policy=policy)
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        assert status.policy == policy
        assert status.tally == "0 of 2; waiting for 2 of: alice, bob, carol"
        receipt = await handle.answer(APPROVE, answered_by="alice")
        assert (receipt.decided, receipt.voters) == (False, ("alice",))
        assert receipt.tally == "1 of 2: alice; waiting for one of: bob, carol"
        # The same voter again, with another text (the same text is the same update): refused.
        with pytest.raises(AnswerRejectedError) as refused:
            await handle.answer({"decision": "approve", "note": "again"}, answered_by="alice")
        assert refused.value.reason is RefusalReason.DUPLICATE_VOTER
        first.kill()
    assert ledger_lines(ledger) == []
    async with worker_process(
        temporal_address, task_queue, tmp_path / "w2.log", tools=TOOLS, retry_safe=()
    ):
        # Alice's vote survived the crash: Bob's is the second of two, and decides.
        receipt = await handle.answer(APPROVE, answered_by="bob")
        assert (receipt.decided, receipt.voters) == (True, ("alice", "bob"))
        outcome = await asyncio.wait_for(handle.result(), timeout=30)
        # Carol's vote comes after the decision: refused, nothing changes.
        with pytest.raises(AnswerRejectedError) as late:
            await handle.answer(APPROVE, answered_by="carol")
        assert late.value.reason is RefusalReason.FINISHED
    assert outcome.phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-1 250"]  # ran once
    history = await handle.history()
    assert [(each.answered_by, each.decided) for each in history.answers] == [
        ("alice", False),
        ("bob", True),
    ]
    assert history.answers[-1].voters == ("alice", "bob")
    assert history.policy == policy
    await assert_replays(handle)


async def test_bad_votes_are_refused_and_change_nothing(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    handle = await calls.start(
        _refund(tmp_path / "ledger"), call_id=f"bad-{uuid.uuid4()}", policy=policy
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    with pytest.raises(AnswerRejectedError) as unknown:
        await handle.answer(APPROVE, answered_by="mallory")
    assert unknown.value.reason is RefusalReason.NOT_ALLOWED
    assert unknown.value.detail.allowed_answerers == ("alice", "bob", "carol")
    with pytest.raises(AnswerRejectedError) as anonymous:
        await handle.answer(APPROVE)
    assert anonymous.value.reason is RefusalReason.NOT_ALLOWED
    assert "say who votes" in str(anonymous.value)
    status = await handle.status()
    assert status.votes == ()
    assert status.phase is Phase.AWAITING_INPUT


async def test_a_malformed_policy_starts_nothing(calls: ToolCalls, tmp_path: Path) -> None:
    with pytest.raises(InvalidPolicyError, match=r"policy must be a scope_tool\.ApprovalPolicy"):
        await calls.start(_refund(tmp_path / "l"), call_id="never", policy={"quorum": 2})  # type: ignore[typeddict-item]
    with pytest.raises(InvalidPolicyError, match="allowed_answerers leave out: carol"):
        await calls.start(
            _refund(tmp_path / "l"),
            call_id="never",
            policy=ApprovalPolicy(quorum=2, voters=("alice", "carol")),
            allowed_answerers=("alice", "bob"),
        )


async def test_a_deny_ends_the_vote_denied(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    handle = await calls.start(_refund(ledger), call_id=f"deny-{uuid.uuid4()}", policy=policy)
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.answer(APPROVE, answered_by="alice")
    receipt = await handle.answer({"decision": "deny", "reason": "too much"}, answered_by="bob")
    assert (receipt.decided, receipt.voters) == (True, ("bob",))
    outcome = await handle.result()
    assert outcome.phase is Phase.REJECTED
    assert ledger_lines(ledger) == []


async def test_the_web_ui_details_show_the_votes(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    handle = await calls.start(
        _refund(tmp_path / "ledger"), call_id=f"ui-{uuid.uuid4()}", policy=policy
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.answer(APPROVE, answered_by="carol")
    metadata = await handle.workflow_handle.query("__temporal_workflow_metadata")
    assert "**Votes** 1 of 2: carol; waiting for one of: alice, bob" in metadata.current_details


async def test_an_edit_restarts_the_vote_on_the_new_arguments(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    handle = await calls.start(_refund(ledger), call_id=f"edit-{uuid.uuid4()}", policy=policy)
    asked = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending.request_id
    await handle.answer(APPROVE, request_id=asked, answered_by="alice")
    edit = {
        "decision": "edit",
        "arguments": {"ledger": str(ledger), "order": "o-1", "amount": 99},
    }
    await handle.answer(edit, request_id=asked, answered_by="bob")
    status = await handle.status()
    assert status.pending.request_id == f"{asked}e1"
    assert [(v.voter, v.kind, v.superseded) for v in status.votes] == [
        ("alice", "approve", True),
        ("bob", "edit", False),
    ]
    # Carol approves what she saw before the edit: bound to the old request, refused.
    with pytest.raises(AnswerRejectedError) as stale:
        await handle.answer(APPROVE, request_id=asked, answered_by="carol")
    assert stale.value.reason is RefusalReason.STALE_REQUEST
    # Alice approves the new arguments (her earlier vote was on the old ones).
    receipt = await handle.answer(APPROVE, request_id=f"{asked}e1", answered_by="alice")
    assert receipt.voters == ("bob", "alice")
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-1 99"]
    history = await handle.history()
    assert [(a.answered_by, a.request_id, a.decided) for a in history.answers] == [
        ("alice", asked, False),
        ("bob", asked, False),
        ("alice", f"{asked}e1", True),
    ]
    await assert_replays(handle)


@pytest.mark.slow
async def test_two_of_three_survives_a_server_killed_between_votes(tmp_path: Path) -> None:
    """Alice's vote is history: the Temporal server SIGKILLed and restarted on its database
    still has it; Bob's vote decides, the refund runs once, and both voters are in history."""
    server = DedicatedDevServer(db_file=tmp_path / "server.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        queue = f"quorum-restart-{uuid.uuid4().hex[:8]}"
        ledger = tmp_path / "ledger"
        policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
        client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
        calls = ToolCalls(client, task_queue=queue)
        async with worker_process(
            server.address, queue, tmp_path / "w.log", tools=TOOLS, retry_safe=()
        ):
            handle = await calls.start(_refund(ledger), call_id="quorum-restart", policy=policy)
            await wait_for_phase(handle, Phase.AWAITING_INPUT)
            receipt = await handle.answer(APPROVE, answered_by="alice")
            assert (receipt.decided, receipt.voters) == (False, ("alice",))
            await asyncio.to_thread(server.kill)
            await asyncio.to_thread(server.start)
            client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            calls = ToolCalls(client, task_queue=queue)
            handle = calls.get("quorum-restart")
            status = await wait_for_phase(handle, Phase.AWAITING_INPUT, within=60)
            assert status.tally == "1 of 2: alice; waiting for one of: bob, carol"
            with pytest.raises(AnswerRejectedError) as again:
                await handle.answer({"decision": "approve", "note": "again"}, answered_by="alice")
            assert again.value.reason is RefusalReason.DUPLICATE_VOTER
            receipt = await handle.answer(APPROVE, answered_by="bob")
            assert (receipt.decided, receipt.voters) == (True, ("alice", "bob"))
            outcome = await asyncio.wait_for(handle.result(), timeout=60)
        assert outcome.phase is Phase.COMPLETED
        assert ledger_lines(ledger) == ["refund o-1 250"]
        history = await handle.history()
        assert [(each.answered_by, each.decided) for each in history.answers] == [
            ("alice", False),
            ("bob", True),
        ]
        await assert_replays(handle)
    finally:
        await asyncio.to_thread(server.stop)
