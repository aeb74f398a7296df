"""The audit trail read from history: every question, answer and refusal, with no worker running."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e._cli import run_cli
from helpers.waiting import wait_for_phase, wait_until_async
from runtime.example_tools import REGISTRY

from scope_tool import Request
from scope_tool.client import CallNotFoundError, Phase, ToolCalls
from scope_tool.client.history import AnswerVia
from scope_tool.workers import build_worker


async def test_the_trail_of_a_finished_call_outlives_its_worker(
    temporal_client: Any, temporal_address: str, task_queue: str, tmp_path: Path
) -> None:
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    call_id = f"plan-{uuid.uuid4()}"
    arguments = json.dumps({"ledger": str(tmp_path / "ledger"), "service": "api"})
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="deploy_plan", arguments=arguments),
            call_id=call_id,
            allowed_answerers=("alice", "bob"),
        )
        first = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        await handle.signal_answer({"approve": True}, answered_by="mallory")
        await wait_until_async(lambda: _refused(handle))
        await handle.answer({"approve": True}, answered_by="alice")
        second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        while second.round != 2:
            second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        confirm = second.pending.request_id
        await handle.signal_answer('"confirm"', request_id=confirm, answered_by="bob")
        await handle.signal_answer('"confirm"', request_id=confirm, answered_by="bob")
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED

    # No worker polls this task queue any more: the trail comes from history alone.
    trail = await calls.get(call_id).history()
    assert trail.call_id == call_id
    assert trail.tool == "deploy_plan"
    assert trail.arguments == arguments.encode()
    assert trail.started_by  # the starting client's identity (pid@host)
    assert trail.allowed_answerers == ("alice", "bob")
    assert [q.request_id for q in trail.questions] == [f"{call_id}/r1", f"{call_id}/r2"]
    assert trail.questions[0].prompt == first.pending.prompt
    assert trail.questions[0].asked_at == first.pending.asked_at
    assert json.loads(trail.questions[1].response_schema) == json.loads(
        second.pending.response_schema
    )

    assert [(a.request_id, a.answered_by, a.via, a.duplicate) for a in trail.answers] == [
        (f"{call_id}/r1", "alice", AnswerVia.UPDATE, False),
        (confirm, "bob", AnswerVia.SIGNAL, False),
        (confirm, "bob", AnswerVia.SIGNAL, True),
    ]
    assert json.loads(trail.answers[0].response) == {"approve": True}
    assert trail.answers[1].response == b'"confirm"'
    assert all(a.client_identity for a in trail.answers)
    assert trail.answers[0].answered_at <= trail.answers[1].answered_at

    [refusal] = trail.refusals
    assert refusal.reason == "not_allowed"
    assert refusal.answered_by == "mallory"
    assert "'mallory' may not answer" in refusal.message
    assert refusal.via is AnswerVia.SIGNAL

    assert trail.outcome == outcome
    assert trail.rounds == 3
    assert trail.execution_status == "COMPLETED"
    assert trail.ended_at is not None
    assert trail.ended_at >= trail.answers[-1].answered_at

    shown = trail.to_json()
    assert shown["arguments"] == json.loads(arguments)
    assert shown["answers"][0]["via"] == "update"
    assert shown["refusals"][0]["reason"] == "not_allowed"
    assert shown["outcome"]["phase"] == "COMPLETED"
    assert shown["started_at"].endswith("Z")

    text = run_cli("history", call_id, address=temporal_address, env=_env(task_queue))
    assert text.code == 0, text.stderr
    assert f"answered  {call_id}/r1 by alice via update" in text.stdout
    assert f"answered  {confirm} by bob via signal" in text.stdout
    assert "(repeat, no effect)" in text.stdout
    assert "refused   (pending) from mallory via signal (not_allowed)" in text.stdout
    assert "approve this plan?" in text.stdout
    assert "wrote /etc/api.yaml" in text.stdout
    as_json = run_cli("history", call_id, "--json", address=temporal_address)
    assert as_json.code == 0, as_json.stderr
    assert json.loads(as_json.stdout) == shown


async def test_the_trail_of_a_running_call_shows_its_open_question(
    temporal_client: Any, task_queue: str, tmp_path: Path
) -> None:
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    arguments = json.dumps({"ledger": str(tmp_path / "ledger"), "service": "db"})
    async with build_worker(temporal_client, REGISTRY, task_queue=task_queue):
        handle = await calls.start(
            Request(name="deploy_plan", arguments=arguments), call_id=f"plan-{uuid.uuid4()}"
        )
        await wait_for_phase(handle, Phase.AWAITING_INPUT)
        trail = await handle.history()
        await handle.workflow_handle.cancel()
    assert trail.execution_status == "RUNNING"
    assert trail.outcome is None
    assert len(trail.questions) == 1
    assert trail.answers == ()


async def test_history_of_an_unknown_call_is_call_not_found(
    temporal_client: Any, temporal_address: str, task_queue: str
) -> None:
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    with pytest.raises(CallNotFoundError):
        await calls.get(f"missing-{uuid.uuid4()}").history()
    result = run_cli("history", "no-such-call", address=temporal_address)
    assert result.code == 1
    assert "no call with id 'no-such-call'" in result.stderr


async def _refused(handle: Any) -> bool:
    return bool((await handle.status()).refused)


def _env(task_queue: str) -> dict[str, str]:
    import os

    return {**os.environ, "SCOPE_TOOL_TASK_QUEUE": task_queue}
