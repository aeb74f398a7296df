"""Deadlines that warn and escalate, on the time-skipping server: reminders before the answer
deadline and an escalation at it each send one notice, the call's history replays at each step,
and the escalated group's answer decides."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.replay import assert_replays
from helpers.waiting import wait_until, wait_until_async

from policies.policy_tools import REGISTRY, ledger_lines
from policies.webhook_receiver import Receiver
from scope_tool import ApprovalPolicy, InvalidPolicyError, Request
from scope_tool.cli._calls import may_answer_now
from scope_tool.cli._render import render_status
from scope_tool.client import AnswerRejectedError, Phase, ToolCallsError
from scope_tool.testing import start_worker
from scope_tool.wire import ASSIGNEE_KEY

HOUR = 3600.0


def _refund(ledger: Path) -> Request:
    return Request(
        name="refund", arguments=json.dumps({"ledger": str(ledger), "order": "o-7", "amount": 70})
    )


async def _steps(handle: Any) -> list[str]:
    return [step.kind for step in (await handle.status()).deadline_steps]


async def test_reminders_and_escalation_each_notify_once_and_the_escalated_group_decides(
    time_skipping_env: Any, receiver: Receiver, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(
        reminders=(2 * HOUR, HOUR),
        escalate_to=("erin", "frank"),
        escalation_timeout=3 * HOUR,
        escalation_replaces=True,
    )
    queue = f"test-{uuid.uuid4()}"
    env = time_skipping_env
    async with start_worker(env.client, REGISTRY, task_queue=queue) as started:
        handle = await started.calls.start(
            _refund(ledger),
            call_id=f"deadline-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=3),
            allowed_answerers=("alice", "bob"),
            notify_url=receiver.url,
            policy=policy,
        )
        await wait_until(lambda: receiver.events() == ["awaiting_input"])
        assert await _assignees(handle) == ["alice", "bob"]
        await env.sleep(timedelta(hours=1, minutes=30))  # past the first reminder (2 h before)
        await wait_until_async(lambda: _has(handle, ["reminder"]))
        # A replay of the history so far takes the same step and sends nothing (the replayer
        # runs no commands; a new command there would be a non-determinism failure).
        await assert_replays(handle)
        await env.sleep(timedelta(hours=1, minutes=40))  # past the second reminder and deadline
        await wait_until_async(lambda: _has(handle, ["reminder", "reminder", "escalation"]))
        await wait_until(lambda: len(receiver.notices) == 4)
        status = await handle.status()
        assert status.phase is Phase.AWAITING_INPUT
        assert status.allowed_answerers == ("erin", "frank")
        assert await _assignees(handle) == ["erin", "frank"]
        # `scope-tool pending --for` follows the escalation.
        assert may_answer_now(status, "erin")
        assert not may_answer_now(status, "alice")
        shown = render_status(status)  # `scope-tool status`
        assert shown.count("reminder ") == 2
        assert "to erin, frank, until" in shown
        reminder_1, reminder_2, escalation = status.deadline_steps
        asked_at = status.pending.asked_at if status.pending is not None else None
        assert asked_at is not None
        assert _about(reminder_1.at - asked_at, hours=1)
        assert _about(reminder_2.at - asked_at, hours=2)
        assert (reminder_1.before_seconds, reminder_2.before_seconds) == (2 * HOUR, HOUR)
        assert [s.occasion for s in status.deadline_steps] == [1, 2, 3]
        assert _about(escalation.at - asked_at, hours=3)
        assert escalation.assignees == ("erin", "frank")
        assert status.pending is not None
        assert status.pending.deadline == escalation.at + timedelta(hours=3)
        # The first group was replaced (escalation_replaces): alice is refused, nothing changes.
        with pytest.raises(AnswerRejectedError, match="may not answer"):
            await handle.answer({"decision": "approve"}, answered_by="alice")
        await handle.answer({"decision": "approve"}, answered_by="erin")
        outcome = await handle.result()
        await wait_until(lambda: len(receiver.notices) == 5)
        await assert_replays(handle)
        (answer,) = (await handle.status()).answers
        assert await _assignees(handle) is None  # answered: nobody's to answer
    assert answer.answered_by == "erin"
    assert outcome.phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-7 70"]
    # Each notice is its own child workflow, delivered in no fixed order: count them.
    assert Counter(receiver.events()) == Counter(
        {"awaiting_input": 1, "reminder": 2, "escalated": 1, "finished": 1}
    )
    assert {n["request_id"] for n in receiver.notices[:4]} == {f"{handle.call_id}/r1"}


async def _assignees(handle: Any) -> list[str] | None:
    """The call's ScopeToolAssignee search attribute (the server's state)."""
    described = await handle.workflow_handle.describe()
    value = described.typed_search_attributes.get(ASSIGNEE_KEY)
    return list(value) if value is not None else None


def _about(elapsed: timedelta, *, hours: int) -> bool:
    """A timer's step runs in the workflow task after it fired: a moment after its time."""
    return timedelta(hours=hours) <= elapsed < timedelta(hours=hours, seconds=30)


async def _has(handle: Any, kinds: list[str]) -> bool:
    return await _steps(handle) == kinds


async def test_the_first_group_may_still_answer_after_escalation_unless_replaced(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(escalate_to=("erin",), escalation_timeout=HOUR)
    env = time_skipping_env
    async with start_worker(env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"deadline-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=3),
            allowed_answerers=("alice",),
            policy=policy,
        )
        await env.sleep(timedelta(hours=3, minutes=1))
        await wait_until_async(lambda: _has(handle, ["escalation"]))
        assert (await handle.status()).allowed_answerers == ("alice", "erin")
        assert await _assignees(handle) == ["alice", "erin"]
        await handle.answer({"decision": "deny", "reason": "too late"}, answered_by="alice")
        outcome = await handle.result()
    assert outcome.phase is Phase.REJECTED


async def test_an_unanswered_escalation_expires(time_skipping_env: Any, tmp_path: Path) -> None:
    policy = ApprovalPolicy(reminders=(HOUR,), escalate_to=("erin",), escalation_timeout=HOUR)
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"deadline-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=2),
            policy=policy,
        )
        outcome = await handle.result()  # the server skips both deadlines
        status = await handle.status()
    assert outcome.phase is Phase.EXPIRED
    assert [step.kind for step in status.deadline_steps] == ["reminder", "escalation"]
    assert status.answers == ()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"reminders": (0,)}, "each of reminders must be a positive number"),
        ({"reminders": (60, 60)}, "more than once"),
        ({"escalate_to": ("erin",)}, "escalate_to needs an escalation_timeout"),
        ({"escalation_timeout": 60}, "escalation_timeout needs escalate_to"),
        (
            {"escalate_to": ("erin",), "escalation_timeout": 60, "quorum": 2, "voters": ("a", "b")},
            "cannot be combined with a quorum",
        ),
    ],
)
def test_malformed_deadline_steps_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPolicyError, match=message):
        ApprovalPolicy(**fields)


async def test_steps_need_a_deadline_they_fit_before(temporal_client: Any, tmp_path: Path) -> None:
    from scope_tool.client import ToolCalls

    calls = ToolCalls(temporal_client, task_queue=f"test-{uuid.uuid4()}")
    with pytest.raises(InvalidPolicyError, match="need the call's answer_timeout"):
        await calls.start(
            _refund(tmp_path / "l"), call_id="x-1", policy=ApprovalPolicy(reminders=(60,))
        )
    with pytest.raises(InvalidPolicyError, match="must fall before the deadline"):
        await calls.start(
            _refund(tmp_path / "l"),
            call_id="x-2",
            answer_timeout=timedelta(hours=1),
            policy=ApprovalPolicy(reminders=(HOUR,)),
        )


def test_the_policy_round_trips_as_json() -> None:
    policy = ApprovalPolicy(
        reminders=(HOUR, 2 * HOUR),
        escalate_to=("erin",),
        escalation_timeout=HOUR,
        escalation_replaces=True,
    )
    assert policy.reminders == (2 * HOUR, HOUR)  # earliest first
    assert ApprovalPolicy.from_json_dict(policy.to_json_dict()) == policy


async def test_an_allowed_person_extends_the_deadline_and_the_reminders_move_with_it(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(reminders=(HOUR,), max_extension=2 * HOUR)
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"deadline-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=2),
            allowed_answerers=("alice",),
            policy=policy,
        )
        await wait_until_async(lambda: _waiting(handle))
        with pytest.raises(ToolCallsError, match=r"not_allowed.*'mallory' may not extend"):
            await handle.extend(timedelta(hours=1), extended_by="mallory")
        with pytest.raises(ToolCallsError, match="stale_request"):
            await handle.extend(timedelta(hours=1), extended_by="alice", request_id="other/r1")
        receipt = await handle.extend(timedelta(hours=1), extended_by="alice")
        status = await handle.status()
        assert status.pending is not None
        asked_at = status.pending.asked_at
        assert receipt.deadline == asked_at + timedelta(hours=3) == status.pending.deadline
        with pytest.raises(
            ToolCallsError, match="may be extended by 7200 s in all; 3600 s are used"
        ):
            await handle.extend(timedelta(hours=1, seconds=1), extended_by="alice")
        outcome = await handle.result()  # the server skips to the extended deadline
        status = await handle.status()
    assert outcome.phase is Phase.EXPIRED
    extension, reminder = status.deadline_steps
    assert (extension.kind, extension.by) == ("extension", "alice")
    assert extension.deadline == asked_at + timedelta(hours=3)
    # The reminder an hour before the deadline came an hour later than first set.
    assert reminder.kind == "reminder"
    assert _about(reminder.at - asked_at, hours=2)


async def test_a_policy_without_max_extension_refuses_extensions(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"deadline-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=2),
            policy=ApprovalPolicy(reminders=(HOUR,)),
        )
        await wait_until_async(lambda: _waiting(handle))
        with pytest.raises(ToolCallsError, match="allows no extension"):
            await handle.extend(timedelta(minutes=5), extended_by="alice")
        assert (await handle.status()).deadline_steps == ()
        await handle.cancel()


async def _waiting(handle: Any) -> bool:
    return (await handle.status()).phase is Phase.AWAITING_INPUT
