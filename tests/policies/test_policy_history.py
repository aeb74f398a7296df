"""`scope-tool history` and `CallHistory` list a question's policy events in order, read from
the workflow's history: each vote, the rules' verdict, each deadline step, a withdrawal. The
deadline steps the reader rebuilds equal the ones the workflow's status lists."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from e2e._cli import run_cli_here
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase, wait_until_async

from policies.policy_tools import REGISTRY
from scope_tool import ApprovalPolicy, Condition, Request, Rule
from scope_tool.cli._history import render_history
from scope_tool.client import Phase, ToolCalls
from scope_tool.client.history import PolicyEventKind
from scope_tool.testing import start_worker

HOUR = 3600.0
SMALL = Rule(
    name="small-refunds", effect="allow", tool="refund", where=(Condition("/amount", "<=", 100),)
)


def _refund(ledger: Path, amount: int = 40, order: str = "o-1") -> Request:
    arguments = {"ledger": str(ledger), "order": order, "amount": amount}
    return Request(name="refund", arguments=json.dumps(arguments))


async def test_votes_the_shadow_verdict_and_a_withdrawal_are_listed_in_order(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"), rules=(SMALL,), shadow=True)
    handle = await calls.start(_refund(tmp_path / "l"), call_id=f"ph-{uuid.uuid4()}", policy=policy)
    asked = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending
    assert asked is not None
    await handle.answer({"decision": "approve"}, answered_by="alice")
    await handle.signal_answer({"decision": "deny", "reason": "no"}, answered_by="mallory")
    await handle.answer({"decision": "approve"}, answered_by="alice")  # a repeat: no vote
    await handle.withdraw("the customer cancelled", withdrawn_by="agent-7")
    assert (await handle.result()).phase is Phase.WITHDRAWN
    history = await handle.history()
    events = history.policy_events
    assert [(e.kind, e.by, e.decision, e.decided) for e in events] == [
        (PolicyEventKind.RULES, None, "allow", False),
        (PolicyEventKind.VOTE, "alice", "approve", False),
        (PolicyEventKind.WITHDRAWAL, "agent-7", None, False),
    ]
    rules, vote, withdrawal = events
    assert rules.text == "shadow: auto-approved by rule small-refunds: amount <= 100"
    assert rules.at == asked.asked_at
    assert vote.text == "1 of 2: alice; waiting for one of: bob, carol"
    assert vote.request_id == asked.request_id
    assert not vote.verified
    assert withdrawal.text == "the customer cancelled"
    assert withdrawal.request_id == asked.request_id
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert [r.answered_by for r in history.refusals] == ["mallory"]  # not a voter
    # The command: text rows in order, and the JSON.
    text = render_history(history)
    lines = [line.strip() for line in text.splitlines()]
    rows = [line.split("  ", 1)[1].split()[0] for line in lines if line.startswith("20")]
    assert rows == ["asked", "rules", "vote", "refused", "withdrawn"], text
    assert f"vote      {asked.request_id} by alice" in text
    assert ": approve (1 of 2: alice; waiting for one of: bob, carol)" in text
    assert f"withdrawn {asked.request_id} by agent-7" in text
    assert ": the customer cancelled" in text
    run = await asyncio.to_thread(
        run_cli_here,
        "history",
        handle.call_id,
        "--json",
        "--task-queue",
        task_queue,
        address=temporal_address,
    )
    assert run.code == 0, run.stderr
    shown = json.loads(run.stdout)
    assert [e["kind"] for e in shown["policy_events"]] == ["rules", "vote", "withdrawal"]
    assert shown["policy_events"][1]["by"] == "alice"
    assert shown["policy_events"][1]["verified"] is False
    assert shown["policy_events"][2]["text"] == "the customer cancelled"


async def test_a_deciding_vote_and_a_rule_decision_are_marked_decided(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "l"
    vote = await calls.start(
        _refund(ledger, 500),
        call_id=f"pv-{uuid.uuid4()}",
        policy=ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"), rules=(SMALL,)),
    )
    await wait_for_phase(vote, Phase.AWAITING_INPUT)
    await vote.answer({"decision": "approve"}, answered_by="bob")
    await vote.answer({"decision": "approve"}, answered_by="carol")
    await vote.result()
    events = (await vote.history()).policy_events
    assert [(e.kind, e.by, e.decided) for e in events] == [
        (PolicyEventKind.RULES, None, False),
        (PolicyEventKind.VOTE, "bob", False),
        (PolicyEventKind.VOTE, "carol", True),
    ]
    assert events[0].text == "no rule matched: a person decides"
    assert events[2].text == "2 of 2: bob, carol; decided"
    ruled = await calls.start(
        _refund(ledger, 5, order="o-2"),
        call_id=f"pr-{uuid.uuid4()}",
        policy=ApprovalPolicy(rules=(SMALL,)),
    )
    await ruled.result()
    (decision,) = (await ruled.history()).policy_events
    assert (decision.kind, decision.by, decision.decision, decision.decided) == (
        PolicyEventKind.RULES,
        "rule:small-refunds",
        "allow",
        True,
    )


async def test_deadline_steps_in_history_are_the_ones_the_workflow_took(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(
        reminders=(2 * HOUR, HOUR),
        escalate_to=("erin", "frank"),
        escalation_timeout=3 * HOUR,
        max_extension=HOUR,
    )
    env = time_skipping_env
    async with start_worker(env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"steps-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=3),
            allowed_answerers=("alice", "bob"),
            policy=policy,
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await env.sleep(timedelta(hours=1, minutes=10))  # past the first reminder

        async def steps(count: int) -> bool:
            return len((await handle.status()).deadline_steps) == count

        await wait_until_async(lambda: steps(1))
        await handle.extend(timedelta(minutes=30), extended_by="alice")
        await handle.delegate(["dave"], delegated_by="bob")
        await env.sleep(timedelta(hours=2, minutes=30))  # past the second reminder, the deadline
        await wait_until_async(lambda: steps(5))
        # A signal answer from bob, who delegated: refused, as the workflow refused it.
        await handle.signal_answer({"decision": "approve"}, answered_by="bob")
        await handle.answer({"decision": "approve"}, answered_by="erin")
        await handle.result()
        status = await handle.status()
        history = await handle.history()
        await assert_replays(handle)
    kinds = ["reminder", "extension", "delegation", "reminder", "escalation"]
    assert [s.kind for s in status.deadline_steps] == kinds
    assert history.deadline_steps == status.deadline_steps
    events = history.policy_events
    assert [e.kind.value for e in events] == kinds
    extension, delegation, escalation = events[1], events[2], events[4]
    assert (extension.by, extension.deadline) == ("alice", status.deadline_steps[1].deadline)
    assert (delegation.by, delegation.assignees) == ("bob", ("dave",))
    assert escalation.assignees == ("erin", "frank")
    assert [r.answered_by for r in history.refusals] == ["bob"]
    (answer,) = history.answers
    assert answer.answered_by == "erin"
    assert history.allowed_answerers == ("alice", "bob")  # as started
    text = render_history(history)
    rows = [
        line.strip().split("  ", 1)[1] for line in text.splitlines() if line.strip()[:2] == "20"
    ]
    request = f"{handle.call_id}/r1"
    assert [row.split()[0] for row in rows] == [
        "asked",
        "reminder",
        "extended",
        "delegated",
        "reminder",
        "escalated",
        "refused",
        "answered",
    ], text
    assert f"reminder  {request} sent again, 2h before its deadline" in text
    assert f"reminder  {request} sent again, 1h before its deadline" in text
    assert f"extended  {request} by alice from client " in text
    assert f"delegated {request} by bob from client " in text
    assert " to dave" in text
    assert f"escalated {request} to erin, frank: deadline now" in text


async def test_a_history_recorded_before_assignee_attribute_reads_the_same_steps() -> None:
    """The reader on a history a worker recorded before ``assignee_attribute`` and the
    DeadlineClock (tests/runtime/histories): the same steps, in order."""
    from temporalio.client import WorkflowHistory

    from scope_tool.client import DATA_CONVERTER
    from scope_tool.client.history import read_history

    name = "deadline_steps_extended_delegated_escalated"
    file = Path(__file__).parent.parent / "runtime" / "histories" / f"{name}.json"
    text = file.read_text(encoding="utf-8")
    call_id = re.search(r"replay-steps-[0-9a-f-]{36}", text)
    assert call_id is not None
    recorded = WorkflowHistory.from_json(call_id.group(), text)
    history = await read_history(recorded.workflow_id, recorded.events, DATA_CONVERTER)
    assert [(e.kind.value, e.by) for e in history.policy_events] == [
        ("reminder", None),
        ("extension", "alice"),
        ("delegation", "bob"),
        ("reminder", None),
        ("escalation", None),
    ]
    reminder_1, extension, delegation, reminder_2, escalation = history.deadline_steps
    assert (reminder_1.before_seconds, reminder_2.before_seconds) == (2 * HOUR, HOUR)
    assert reminder_2.deadline == extension.deadline  # the reminder followed the extension
    assert extension.deadline is not None
    assert escalation.deadline is not None
    assert extension.deadline <= escalation.at < extension.deadline + timedelta(seconds=30)
    assert escalation.deadline == escalation.at + timedelta(hours=1)  # escalation_timeout
    assert delegation.assignees == ("dave",)
    assert escalation.assignees == ("erin",)
    assert [s.occasion for s in history.deadline_steps] == [1, 1, 2, 3, 4]
    (answer,) = history.answers
    assert answer.answered_by == "erin"


async def test_an_answer_in_the_task_its_reminder_timer_fired_in_takes_no_step(
    temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    """The workflow runs an update before a timer of the same task: the answer wins, no
    reminder is sent, and the history shows none either (the update's events come after the
    task's, so the reader waits for them before taking the timer's step)."""
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    policy = ApprovalPolicy(reminders=(15,))  # 5 s after the question
    async with start_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"race-{uuid.uuid4()}",
            answer_timeout=timedelta(seconds=20),
            allowed_answerers=("alice",),
            policy=policy,
        )
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert waiting.pending is not None
    # No worker: the reminder's timer fires, and its task waits with the answer for a worker.
    reminder_at = waiting.pending.asked_at + timedelta(seconds=5)
    await asyncio.sleep(max(0.0, (reminder_at - datetime.now(UTC)).total_seconds()) + 1.5)
    answering = asyncio.ensure_future(handle.answer({"decision": "approve"}, answered_by="alice"))
    await asyncio.sleep(1)
    async with start_worker(temporal_client, REGISTRY, task_queue=task_queue):
        await answering
        await handle.result()
        status = await handle.status()
        history = await handle.history()
    events = (await handle.workflow_handle.fetch_history()).events
    assert sum(1 for e in events if e.HasField("timer_fired_event_attributes")) == 1
    assert history.deadline_steps == status.deadline_steps == ()
    assert history.policy_events == ()
    assert [a.answered_by for a in history.answers] == ["alice"]
