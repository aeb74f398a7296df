"""Reminders and escalation across a worker SIGKILL, on the real server: each notice once."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from helpers.replay import assert_replays
from helpers.waiting import wait_until
from helpers.workers import worker_process

from policies.policy_tools import ledger_lines
from policies.webhook_receiver import Receiver
from scope_tool import ApprovalPolicy, Request
from scope_tool.client import Phase, ToolCalls

TOOLS = "policies.policy_tools:REGISTRY"


async def test_no_reminder_or_escalation_is_sent_twice_across_a_worker_sigkill(
    calls: ToolCalls,
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    # Reminders 2 s and 5 s after asking, escalation at 8 s; the timers are the server's.
    policy = ApprovalPolicy(
        reminders=(6, 3), escalate_to=("erin",), escalation_timeout=300, escalation_replaces=True
    )
    arguments = json.dumps({"ledger": str(ledger), "order": "o-8", "amount": 8})
    async with worker_process(
        temporal_address, task_queue, tmp_path / "w1.log", tools=TOOLS, retry_safe=()
    ) as first:
        handle = await calls.start(
            Request(name="refund", arguments=arguments),
            call_id=f"deadline-crash-{uuid.uuid4()}",
            answer_timeout=timedelta(seconds=8),
            allowed_answerers=("alice",),
            notify_url=receiver.url,
            policy=policy,
        )
        await wait_until(lambda: receiver.events() == ["awaiting_input", "reminder"], within=30)
        # Killed once the reminder's delivery is recorded (its notice workflow completed): a
        # worker killed between the POST and that record delivers it again (webhook notices are
        # at least once, see docs/approvals.md). What this test proves is that the call's own
        # replay never sends a reminder or an escalation a second time.
        [step] = (await handle.status()).deadline_steps
        notice = f"{handle.call_id}/notify/reminder/r1" + (
            f"/{step.occasion}" if step.occasion else ""
        )
        await asyncio.wait_for(temporal_client.get_workflow_handle(notice).result(), 30)
        first.kill()  # a genuine crash, right after the first reminder
    async with worker_process(
        temporal_address, task_queue, tmp_path / "w2.log", tools=TOOLS, retry_safe=()
    ):
        # The new worker replays the call's history: the first notice and the first reminder
        # are not sent again; the second reminder and the escalation are sent once each.
        await wait_until(lambda: len(receiver.notices) >= 4, within=60)
        status = await handle.status()
        assert [step.kind for step in status.deadline_steps] == [
            "reminder",
            "reminder",
            "escalation",
        ]
        assert status.allowed_answerers == ("erin",)
        await handle.answer({"decision": "approve"}, answered_by="erin")
        outcome = await handle.result()
        await wait_until(lambda: len(receiver.notices) >= 5, within=30)
        await assert_replays(handle)
    assert outcome.phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-8 8"]
    # Each notice is its own child workflow, delivered in no fixed order: count them.
    assert Counter(receiver.events()) == Counter(
        {"awaiting_input": 1, "reminder": 2, "escalated": 1, "finished": 1}
    )
