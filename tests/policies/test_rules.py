"""Approval rules: a small refund approved by rule, a large one asked, shadow mode beside a person."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.replay import assert_replays
from helpers.waiting import wait_for_phase

from policies.policy_tools import ledger_lines
from scope_tool import (
    ApprovalPolicy,
    Condition,
    InvalidPolicyError,
    Principal,
    Request,
    Rule,
)
from scope_tool._rules import evaluate
from scope_tool.client import Phase, ToolCalls
from scope_tool.client.history import AnswerVia

SMALL = Rule(
    name="small-refunds", effect="allow", tool="refund", where=(Condition("/amount", "<=", 100),)
)
BLOCKED = Rule(
    name="blocked-orders",
    effect="deny",
    tool="refund",
    where=(Condition("/order", "in", ["o-666"]),),
)


def _refund(ledger: Path, amount: float, order: str = "o-1") -> Request:
    return Request(
        name="refund",
        arguments=json.dumps({"ledger": str(ledger), "order": order, "amount": amount}),
    )


def test_rules_match_by_tool_arguments_principal_and_roles() -> None:
    clerk = Principal(user="ann", roles=("clerk",))
    rules = (
        BLOCKED,
        Rule(name="managers", effect="allow", roles=("manager",)),
        SMALL,
        Rule(name="ann-asks", effect="ask", user="ann"),
    )
    small = b'{"order": "o-1", "amount": 100}'
    assert evaluate(rules, "refund", small, clerk).reason == (
        "auto-approved by rule small-refunds: amount <= 100"
    )
    assert evaluate(rules, "refund", b'{"order": "o-666", "amount": 1}', None).effect == "deny"
    boss = Principal(user="bo", roles=("manager",))
    assert evaluate(rules, "refund", b'{"amount": 5000}', boss).rule.name == "managers"
    assert evaluate(rules, "refund", b'{"amount": 5000}', clerk).rule.name == "ann-asks"
    nobody = evaluate(rules, "refund", b'{"amount": 5000}', None)
    assert (nobody.effect, nobody.rule) == ("ask", None)
    assert evaluate(rules, "other", small, None).rule is None  # rules name their tool
    assert evaluate((SMALL,), "refund", b'{"amount": true}', None).rule is None  # not a number


def test_malformed_rules_are_refused() -> None:
    with pytest.raises(InvalidPolicyError, match="compares numbers"):
        Condition("/amount", "<=", "100")
    with pytest.raises(InvalidPolicyError, match="starts with '/'"):
        Condition("amount", "==", 1)
    with pytest.raises(InvalidPolicyError, match="effect must be allow, deny or ask"):
        Rule(name="x", effect="maybe")  # type: ignore[arg-type]
    with pytest.raises(InvalidPolicyError, match="names small-refunds more than once"):
        ApprovalPolicy(rules=(SMALL, SMALL))
    policy = ApprovalPolicy(rules=(SMALL, BLOCKED), shadow=True)
    assert ApprovalPolicy.from_json_dict(json.loads(json.dumps(policy.to_json_dict()))) == policy


async def test_a_rule_approves_a_small_refund_and_a_large_one_is_asked(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(rules=(BLOCKED, SMALL))
    small = await calls.start(_refund(ledger, 40), call_id=f"r-{uuid.uuid4()}", policy=policy)
    outcome = await small.result()
    assert outcome.phase is Phase.COMPLETED
    (answer,) = (await small.status()).answers
    assert answer.answered_by == "rule:small-refunds"
    assert answer.reason == "auto-approved by rule small-refunds: amount <= 100"
    history = await small.history()
    assert [(a.via, a.reason) for a in history.answers] == [
        (AnswerVia.RULE, "auto-approved by rule small-refunds: amount <= 100")
    ]
    assert history.questions  # the question was asked, and answered by the rule
    await assert_replays(small)

    large = await calls.start(_refund(ledger, 500), call_id=f"r-{uuid.uuid4()}", policy=policy)
    waiting = await wait_for_phase(large, Phase.AWAITING_INPUT)
    assert waiting.rule_verdict == "no rule matched: a person decides"
    await large.answer({"decision": "approve"}, answered_by="alice")
    assert (await large.result()).phase is Phase.COMPLETED

    blocked = await calls.start(
        _refund(ledger, 1, order="o-666"), call_id=f"r-{uuid.uuid4()}", policy=policy
    )
    denied = await blocked.result()
    assert denied.phase is Phase.REJECTED
    assert ledger_lines(ledger) == ["refund o-1 40", "refund o-1 500"]


async def test_shadow_mode_records_the_rules_verdict_beside_the_persons_answer(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(rules=(SMALL,), shadow=True)
    handle = await calls.start(_refund(ledger, 40), call_id=f"s-{uuid.uuid4()}", policy=policy)
    waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)  # shadow: a person is asked
    verdict = "shadow: auto-approved by rule small-refunds: amount <= 100"
    assert waiting.rule_verdict == verdict
    await handle.answer({"decision": "deny", "reason": "duplicate refund"}, answered_by="bob")
    assert (await handle.result()).phase is Phase.REJECTED
    (answer,) = (await handle.status()).answers
    assert (answer.answered_by, answer.rule_verdict, answer.reason) == ("bob", verdict, "")
    (recorded,) = (await handle.history()).answers
    assert (recorded.answered_by, recorded.rule_verdict) == ("bob", verdict)
    assert ledger_lines(ledger) == []
    await assert_replays(handle)


async def test_a_rule_change_releases_nothing_until_an_operator_reevaluates(
    calls: ToolCalls, worker: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    import asyncio
    import os

    from e2e._cli import run_cli

    from scope_tool.client import ToolCallsError

    ledger = tmp_path / "ledger"
    # Started under rules that ask for anything over 100.
    policy = ApprovalPolicy(rules=(SMALL,))
    large = await calls.start(_refund(ledger, 150), call_id=f"re-{uuid.uuid4()}", policy=policy)
    other = await calls.start(_refund(ledger, 160), call_id=f"re-{uuid.uuid4()}", policy=policy)
    asked = (await wait_for_phase(large, Phase.AWAITING_INPUT)).pending.request_id
    await wait_for_phase(other, Phase.AWAITING_INPUT)
    # The team raises the limit to 200 for new calls: the waiting ones stay waiting.
    raised = Rule(
        name="small-refunds-200",
        effect="allow",
        tool="refund",
        where=(Condition("/amount", "<=", 200),),
    )
    newer = await calls.start(
        _refund(ledger, 150),
        call_id=f"re-{uuid.uuid4()}",
        policy=ApprovalPolicy(rules=(raised,)),
    )
    assert (await newer.result()).phase is Phase.COMPLETED
    assert (await large.status()).phase is Phase.AWAITING_INPUT
    # An operator re-evaluates one of them with an ask rule first: recorded, still waiting.
    ask_all = Rule(name="ask-all", effect="ask")
    kept = await large.reevaluate((ask_all,), by="ops")
    assert kept.decided is False
    assert kept.verdict == "asked by rule ask-all: any call (re-evaluated by ops)"
    assert (await large.status()).rule_verdict == kept.verdict
    receipt = await large.reevaluate((raised,), by="ops")
    assert (receipt.request_id, receipt.decided) == (asked, True)
    assert receipt.verdict == (
        "auto-approved by rule small-refunds-200: amount <= 200 (re-evaluated by ops)"
    )
    assert (await large.result()).phase is Phase.COMPLETED
    (answer,) = (await large.history()).answers
    assert (answer.answered_by, answer.via, answer.reason) == (
        "rule:small-refunds-200",
        AnswerVia.RULE,
        receipt.verdict,
    )
    await assert_replays(large)
    with pytest.raises(ToolCallsError, match=r"refused \(finished\)"):
        await large.reevaluate((raised,), by="ops")
    # The command line, for the other waiting call.
    env = {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
    rules = json.dumps({"rules": [raised.to_json_dict()]})
    done = await asyncio.to_thread(
        run_cli,
        "reevaluate",
        other.call_id,
        "--rules",
        rules,
        "--by",
        "ops",
        address=temporal_address,
        env=env,
    )
    assert done.code == 0, done.stderr
    assert "decided: auto-approved by rule small-refunds-200" in done.stdout
    assert (await other.result()).phase is Phase.COMPLETED
    assert sorted(ledger_lines(ledger)) == ["refund o-1 150", "refund o-1 150", "refund o-1 160"]
