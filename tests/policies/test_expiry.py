"""Expiry under a policy: a declared safe default answer at the deadline, on the time-skipping
server; expiry stays its own outcome otherwise (never a denial)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from policies.policy_tools import REGISTRY, ledger_lines
from scope_tool import ApprovalPolicy, InvalidPolicyError, Request
from scope_tool.client import Phase
from scope_tool.client.history import AnswerVia
from scope_tool.testing import start_worker

SAFE = '{"decision": "deny", "reason": "no answer in time"}'


def _refund(ledger: Path) -> Request:
    return Request(
        name="refund", arguments=json.dumps({"ledger": str(ledger), "order": "o-9", "amount": 9})
    )


async def test_the_deadline_takes_the_policys_safe_default(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    policy = ApprovalPolicy(quorum=2, voters=("alice", "bob", "carol"), expiry_answer=SAFE)
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(ledger),
            call_id=f"expiry-{uuid.uuid4()}",
            answer_timeout=timedelta(days=2),
            policy=policy,
        )
        outcome = await handle.result()  # the test server skips the two days
        status = await handle.status()
        history = await handle.history()
    assert outcome.phase is Phase.REJECTED  # the tool saw the safe default: a denial
    assert "no answer in time" in (outcome.output.text() or "")
    (answer,) = status.answers
    assert answer.answered_by == "policy:expiry"
    assert answer.reason == "no answer before the deadline: the policy's expiry_answer was taken"
    assert [(a.answered_by, a.via) for a in history.answers] == [
        ("policy:expiry", AnswerVia.POLICY)
    ]
    assert ledger_lines(ledger) == []


async def test_a_default_the_question_refuses_ends_expired_saying_so(
    time_skipping_env: Any, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(expiry_answer='"later"')
    async with start_worker(time_skipping_env.client, REGISTRY) as started:
        handle = await started.calls.start(
            _refund(tmp_path / "ledger"),
            call_id=f"expiry-{uuid.uuid4()}",
            answer_timeout=timedelta(hours=3),
            policy=policy,
        )
        outcome = await handle.result()
    assert outcome.phase is Phase.EXPIRED
    assert "the policy's expiry_answer does not satisfy the question's schema" in outcome.message


def test_a_malformed_default_is_refused() -> None:
    with pytest.raises(InvalidPolicyError, match="expiry_answer is not one JSON document"):
        ApprovalPolicy(expiry_answer="deny")
