"""require_approval through the durable runtime, against the session's real Temporal server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_tools import ledger_lines

from scope_tool import Request
from scope_tool.agents import model_result
from scope_tool.client import AnswerRejectedError, Phase, ToolCalls


def note(ledger: Path, text: str = "hello") -> Request:
    return Request(name="write_note", arguments=json.dumps({"ledger": str(ledger), "text": text}))


async def test_approve_runs_the_typed_function_once(calls: ToolCalls, worker: Any, tmp_path: Path):
    ledger = tmp_path / "ledger"
    call_id = f"approve-{uuid.uuid4()}"
    _, status = await calls.start_and_wait(note(ledger), call_id=call_id)
    assert status.phase is Phase.AWAITING_INPUT
    prompt = json.loads(status.pending.prompt)  # type: ignore[union-attr]
    assert prompt["kind"] == "scope_tool.approval"
    assert prompt["arguments"] == {"ledger": str(ledger), "text": "hello"}
    assert ledger_lines(ledger) == []  # nothing ran before the approval
    handle = calls.get(call_id)
    await handle.answer({"decision": "approve"}, answered_by="alice")
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert model_result(outcome).text == "noted 'hello'"
    assert ledger_lines(ledger) == ["hello"]
    # A retried start attaches to the finished call; the function does not run again.
    _, again = await calls.start_and_wait(note(ledger), call_id=call_id)
    assert again.phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["hello"]


async def test_deny_ends_rejected_with_the_reason_model_visible(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    call_id = f"deny-{uuid.uuid4()}"
    await calls.start_and_wait(note(ledger), call_id=call_id)
    await calls.get(call_id).answer({"decision": "deny", "reason": "not in prod"})
    outcome = await calls.get(call_id).result()
    assert outcome.phase is Phase.REJECTED
    result = model_result(outcome)
    assert result.is_error
    assert result.text == (
        'error: the call of tool "write_note" was denied by its reviewer: not in prod'
    )
    assert ledger_lines(ledger) == []


async def test_an_edit_breaking_the_schema_is_refused_as_an_answer_and_changes_nothing(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    ledger = tmp_path / "ledger"
    call_id = f"edit-{uuid.uuid4()}"
    _, waiting = await calls.start_and_wait(note(ledger), call_id=call_id)
    handle = calls.get(call_id)
    bad = {"decision": "edit", "arguments": {"ledger": str(ledger), "text": 7}}
    with pytest.raises(AnswerRejectedError) as raised:
        await handle.answer(bad)
    assert raised.value.reason == "schema"
    assert "/arguments/text" in str(raised.value)
    after = await handle.status()
    assert after.phase is Phase.AWAITING_INPUT
    assert after.pending == waiting.pending  # same question, same round: nothing changed
    assert after.answers == ()
    edited = {"decision": "edit", "arguments": {"ledger": str(ledger), "text": "edited"}}
    await handle.answer(edited)
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["edited"]


async def test_an_edit_only_the_functions_validator_refuses_asks_again(
    calls: ToolCalls, worker: Any, tmp_path: Path
):
    """The runtime checks answers against the schema only; the validator's refusal re-asks."""
    ledger = tmp_path / "ledger"
    call_id = f"revalidate-{uuid.uuid4()}"
    await calls.start_and_wait(note(ledger), call_id=call_id)
    handle = calls.get(call_id)
    await handle.answer({"decision": "edit", "arguments": {"ledger": str(ledger), "text": "LOUD"}})
    _, again = await calls.start_and_wait(note(ledger), call_id=call_id)
    assert again.phase is Phase.AWAITING_INPUT
    assert again.round == 2
    prompt = json.loads(again.pending.prompt)  # type: ignore[union-attr]
    assert "text must not be all upper case" in prompt["refused_edit"]
    assert ledger_lines(ledger) == []
    await handle.answer({"decision": "approve"})
    assert (await handle.result()).phase is Phase.COMPLETED
    assert ledger_lines(ledger) == ["hello"]
