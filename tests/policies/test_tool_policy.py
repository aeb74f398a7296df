"""A policy carried by the tool (``require_approval(tool, policy=...)``) on a real server: it
decides the questions of calls started without one, a call's own policy replaces it, status
says whose applies, and a tool policy the call cannot carry ends the call saying what to set."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase

from policies.policy_tools import TOOL_POLICY, TOOL_POLICY_REGISTRY, ledger_lines, refund
from scope_tool import (
    ApprovalPolicy,
    Func,
    InvalidToolError,
    Registry,
    bind,
    require_approval,
)
from scope_tool.cli._render import render_status
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCalls
from scope_tool.testing import start_worker

APPROVE = {"decision": "approve"}


def _refund(ledger: Path, amount: float, tool: str = "refund") -> Any:
    from scope_tool import Request

    return Request(
        name=tool,
        arguments=json.dumps({"ledger": str(ledger), "order": "o-1", "amount": amount}),
    )


@pytest.fixture
async def tool_calls(temporal_client: Any, task_queue: str) -> AsyncIterator[ToolCalls]:
    async with start_worker(temporal_client, TOOL_POLICY_REGISTRY, task_queue=task_queue):
        yield ToolCalls(temporal_client, task_queue=task_queue)


async def test_the_tools_quorum_decides_a_call_started_without_a_policy(
    tool_calls: ToolCalls, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await tool_calls.start(_refund(ledger, 250), call_id=f"tool-q-{uuid.uuid4()}")
    status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert status.policy == TOOL_POLICY
    assert status.policy_source == "tool"
    assert status.to_json_dict()["policy_source"] == "tool"
    assert status.rule_verdict == "no rule matched: a person decides"
    shown = render_status(status)  # `scope-tool status`
    assert "policy from the tool" in shown
    assert "quorum 2 of alice, bob, carol" in shown
    receipt = await handle.answer(APPROVE, answered_by="alice")
    assert (receipt.decided, receipt.tally) == (
        False,
        "1 of 2: alice; waiting for one of: bob, carol",
    )
    with pytest.raises(AnswerRejectedError) as outsider:
        await handle.answer(APPROVE, answered_by="mallory")
    assert outsider.value.reason is RefusalReason.NOT_ALLOWED
    assert ledger_lines(ledger) == []
    receipt = await handle.answer(APPROVE, answered_by="bob")
    assert (receipt.decided, receipt.voters) == (True, ("alice", "bob"))
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-1 250"]
    history = await handle.history()
    assert [(each.answered_by, each.decided) for each in history.answers] == [
        ("alice", False),
        ("bob", True),
    ]
    assert history.policy == TOOL_POLICY
    await assert_replays(handle)


async def test_the_tools_rule_approves_a_small_refund(
    tool_calls: ToolCalls, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await tool_calls.start(_refund(ledger, 40), call_id=f"tool-r-{uuid.uuid4()}")
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    (answer,) = (await handle.status()).answers
    assert answer.answered_by == "rule:small-refunds"
    assert answer.reason == "auto-approved by rule small-refunds: amount <= 100"
    assert ledger_lines(ledger) == ["refund o-1 40"]
    await assert_replays(handle)


async def test_a_calls_policy_replaces_the_tools(tool_calls: ToolCalls, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    own = ApprovalPolicy(quorum=1)  # one answer decides, and no rules: the tool's are not used
    handle = await tool_calls.start(
        _refund(ledger, 40), call_id=f"tool-c-{uuid.uuid4()}", policy=own
    )
    status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert (status.policy, status.policy_source) == (own, "call")
    assert "(policy from the call)" in render_status(status)
    receipt = await handle.answer(APPROVE, answered_by="mallory")
    assert receipt.decided
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["refund o-1 40"]


async def test_a_tool_policy_with_reminders_on_a_call_without_a_deadline_ends_it_invalid(
    tool_calls: ToolCalls, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await tool_calls.start(
        _refund(ledger, 40, tool="refund_reminded"), call_id=f"tool-d-{uuid.uuid4()}"
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert "tool 'refund_reminded' carries an approval policy with reminders" in outcome.message
    assert "start the call with an answer deadline (answer_timeout=" in outcome.message
    assert outcome.output.text().startswith("error: ")
    status = await handle.status()
    assert (status.pending, status.answers) == (None, ())
    assert ledger_lines(ledger) == []
    history = await handle.history()
    assert history.questions == ()
    await assert_replays(handle)


async def test_a_tool_policy_the_calls_deadline_cannot_carry_ends_it_invalid(
    tool_calls: ToolCalls, tmp_path: Path
) -> None:
    from datetime import timedelta

    handle = await tool_calls.start(
        _refund(tmp_path / "ledger", 40, tool="refund_reminded"),
        call_id=f"tool-e-{uuid.uuid4()}",
        answer_timeout=timedelta(seconds=30),  # the reminder is 60 s before the deadline
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert "reminders must fall before the deadline" in outcome.message


async def test_a_tool_policy_naming_voters_the_call_leaves_out_ends_it_invalid(
    tool_calls: ToolCalls, tmp_path: Path
) -> None:
    handle = await tool_calls.start(
        _refund(tmp_path / "ledger", 250),
        call_id=f"tool-v-{uuid.uuid4()}",
        allowed_answerers=("alice", "bob"),
    )
    outcome = await handle.result()
    assert outcome.phase is Phase.INVALID
    assert "allowed_answerers leave out: carol" in outcome.message


def test_the_policy_a_tool_carries_is_resolved_once_at_bind() -> None:
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob"))
    plain = Func(refund, name="refund")
    assert bind(plain).approval_policy is None
    assert bind(require_approval(plain, policy=policy)).approval_policy == policy
    gated = Registry(plain).with_approval(names={"refund"}, policy=policy)
    binding = gated.resolve("refund")
    assert binding is not None
    assert binding.approval_policy == policy
    assert "policy=ApprovalPolicy(quorum=2" in repr(require_approval(plain, policy=policy))
    with pytest.raises(InvalidToolError, match=r"policy must be a scope_tool\.ApprovalPolicy"):
        require_approval(plain, policy={"quorum": 2})  # type: ignore[arg-type]

    class Carrying:
        """A hand-written tool carrying a policy (the PolicyCarryingTool capability)."""

        def __init__(self, carried: object) -> None:
            self._carried = carried
            self._func = Func(refund, name="refund")

        def definition(self) -> Any:
            return self._func.definition()

        async def call(self, invocation: Any) -> Any:
            raise AssertionError("not run")

        def approval_policy(self) -> Any:
            return self._carried

    assert bind(Carrying(policy)).approval_policy == policy
    # The gate takes the wrapped tool's policy when it has none of its own; its own wins.
    assert bind(require_approval(Carrying(policy))).approval_policy == policy
    other = ApprovalPolicy(quorum=1)
    assert bind(require_approval(Carrying(policy), policy=other)).approval_policy == other
    with pytest.raises(InvalidToolError, match=r"approval_policy\(\) returned dict"):
        bind(Carrying({"quorum": 2}))


async def test_the_tools_reminder_is_sent_once_on_a_call_with_a_deadline(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    from datetime import timedelta

    from helpers.waiting import wait_until_async

    env = time_skipping_env
    async with start_worker(env.client, TOOL_POLICY_REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger", 40, tool="refund_reminded"),
            call_id=f"tool-t-{uuid.uuid4()}",
            answer_timeout=timedelta(minutes=5),
        )
        status = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        assert status.policy_source == "tool"
        await env.sleep(timedelta(minutes=4, seconds=30))  # past the reminder, 60 s before

        async def reminded() -> bool:
            return [s.kind for s in (await handle.status()).deadline_steps] == ["reminder"]

        await wait_until_async(reminded)
        await assert_replays(handle)
        await handle.answer(APPROVE, answered_by="alice")
        assert (await handle.result()).phase is Phase.COMPLETED
        # Sent once: the reminder's step is the only one, after the answer too.
        assert [s.kind for s in (await handle.status()).deadline_steps] == ["reminder"]
    assert ledger_lines(tmp_path / "ledger") == ["refund o-1 40"]
