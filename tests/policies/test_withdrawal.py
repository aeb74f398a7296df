"""Withdrawing a pending question: the call ends WITHDRAWN (not a denial), answers then refused."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import run_cli
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase

from policies.policy_tools import ledger_lines
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import (
    AnswerRejectedError,
    Phase,
    RefusalReason,
    ToolCalls,
    WithdrawalRefusedError,
)

APPROVE = {"decision": "approve"}


def _refund(ledger: Path) -> Request:
    return Request(
        name="refund", arguments=json.dumps({"ledger": str(ledger), "order": "o-2", "amount": 5})
    )


async def test_a_withdrawn_question_ends_the_call_withdrawn_and_refuses_later_answers(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"))
    handle = await calls.start(_refund(ledger), call_id=f"wd-{uuid.uuid4()}", policy=policy)
    asked = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending.request_id
    await handle.answer(APPROVE, answered_by="alice")
    with pytest.raises(WithdrawalRefusedError) as stale:
        await handle.withdraw("superseded", request_id=f"{asked}x")
    assert stale.value.reason is RefusalReason.STALE_REQUEST
    with pytest.raises(ValueError, match="reason must be text of 1 to 1000 characters"):
        await handle.withdraw("  ")
    receipt = await handle.withdraw("the customer cancelled the order", withdrawn_by="agent-7")
    assert receipt.request_id == asked
    outcome = await handle.result()
    assert outcome.phase is Phase.WITHDRAWN
    assert outcome.message == f"{asked} was withdrawn by agent-7: the customer cancelled the order"
    assert outcome.output.text() == "withdrawn: the customer cancelled the order"
    with pytest.raises(AnswerRejectedError) as late:
        await handle.answer(APPROVE, answered_by="bob")
    assert late.value.reason is RefusalReason.FINISHED
    with pytest.raises(WithdrawalRefusedError) as again:
        await handle.withdraw("twice")
    assert again.value.reason is RefusalReason.FINISHED
    assert ledger_lines(ledger) == []
    history = await handle.history()
    assert history.outcome is not None
    assert history.outcome.phase is Phase.WITHDRAWN
    await assert_replays(handle)


async def test_withdraw_by_the_command_line(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    handle = await calls.start(_refund(tmp_path / "ledger"), call_id=f"wd-cli-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    done = await asyncio.to_thread(
        run_cli,
        "withdraw",
        handle.call_id,
        "--reason",
        "not needed",
        "--by",
        "ops",
        address=temporal_address,
        env=env,
    )
    assert done.code == 0, done.stderr
    assert "ends WITHDRAWN" in done.stdout
    assert (await handle.result()).phase is Phase.WITHDRAWN
    refused = await asyncio.to_thread(
        run_cli, "withdraw", handle.call_id, "--reason", "x", address=temporal_address, env=env
    )
    assert refused.code == 1
    assert "withdrawal refused (finished)" in refused.stderr
