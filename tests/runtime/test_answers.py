"""Answering: the multi-round approval, every refused answer, duplicates, signals, answerers."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, wait_until
from temporalio.api.enums.v1 import EventType

from runtime.example_tools import ledger_lines
from scope_tool import MAX_INPUT_BYTES, InputRequest, Request
from scope_tool.client import AnswerRejectedError, AnswerText, Phase, ToolCalls, encode_answer
from scope_tool.wire._questions import read_question


def _plan(ledger: Path) -> Request:
    return Request(
        name="deploy_plan", arguments=json.dumps({"ledger": str(ledger), "service": "api"})
    )


async def _accepted_updates(handle: Any) -> int:
    history = await handle.workflow_handle.fetch_history()
    return sum(
        1
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )


async def test_two_questions_then_one_write(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    handle = await calls.start(_plan(ledger), call_id=f"plan-{uuid.uuid4()}")
    first = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert first.round == 1
    assert first.pending.request_id == f"{handle.call_id}/r1"
    assert json.loads(first.pending.prompt)["question"] == "approve this plan?"
    assert json.loads(first.pending.response_schema)["required"] == ["approve"]
    assert first.pending.deadline is None

    receipt = await handle.answer({"approve": True}, answered_by="alice")
    assert receipt.request_id == f"{handle.call_id}/r1"
    assert not receipt.duplicate

    second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    while second.round != 2:
        second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    assert json.loads(second.pending.prompt)["write"]["path"] == "/etc/api.yaml"
    with pytest.raises(AnswerRejectedError, match="send '\"confirm\"'"):
        await handle.answer("confirm", request_id=second.pending.request_id)
    await handle.answer('"confirm"', request_id=second.pending.request_id, answered_by="bob")

    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "wrote /etc/api.yaml"
    assert outcome.rounds == 3
    assert ledger_lines(ledger) == ["plan", "prepare", "write"]
    status = await handle.status()
    assert [(a.request_id, a.answered_by, a.response) for a in status.answers] == [
        (f"{handle.call_id}/r1", "alice", b'{"approve":true}'),
        (f"{handle.call_id}/r2", "bob", b'"confirm"'),
    ]
    assert all(a.answered_at is not None for a in status.answers)


@pytest.mark.parametrize(
    ("response", "request_suffix", "answered_by", "reason", "fragment"),
    [
        ({"approve": "yes"}, None, None, "schema", '"required":["approve"]'),
        ({"approve": True, "extra": 1}, None, None, "schema", "response schema"),
        (b'{"approve": tru', None, None, "invalid_json", "not one I-JSON document"),
        (b'{"approve":true,"approve":false}', None, None, "invalid_json", "duplicate"),
        ({"approve": True}, "/r7", None, "stale_request", "is not the pending one"),
        ({"approve": True}, "other-call/r1", None, "stale_request", "does not belong"),
        ({"approve": True}, None, "mallory", "not_allowed", "may not answer"),
        (b'"' + b"x" * MAX_INPUT_BYTES + b'"', None, None, "too_large", "the limit is"),
    ],
)
async def test_bad_answer_is_refused_and_changes_nothing(
    calls: ToolCalls,
    worker: Any,
    tmp_path: Path,
    response: Any,
    request_suffix: str | None,
    answered_by: str | None,
    reason: str,
    fragment: str,
) -> None:
    handle = await calls.start(
        _plan(tmp_path / "ledger"),
        call_id=f"bad-{uuid.uuid4()}",
        allowed_answerers=("alice", "bob"),
    )
    before = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    request_id = None
    if request_suffix is not None:
        request_id = (
            request_suffix
            if not request_suffix.startswith("/")
            else handle.call_id + request_suffix
        )
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer(response, request_id=request_id, answered_by=answered_by or "alice")
    assert caught.value.reason == reason
    assert fragment in str(caught.value)
    assert handle.call_id in str(caught.value)
    assert await handle.status() == before
    assert await _accepted_updates(handle) == 0
    await handle.cancel()


async def test_answer_when_nothing_is_pending(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    arguments = json.dumps({"ledger": str(ledger), "seconds": 30})
    handle = await calls.start(
        Request(name="slow", arguments=arguments), call_id=f"np-{uuid.uuid4()}"
    )
    await wait_until(lambda: ledger_lines(ledger) == ["start"])
    before = await handle.status()
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer(True)
    assert caught.value.reason == "not_waiting"
    assert "is not waiting for input (phase RUNNING)" in str(caught.value)
    assert await handle.status() == before
    assert await _accepted_updates(handle) == 0
    await handle.cancel()
    # The running tool hears of it at its next heartbeat (a worker shutting down first would
    # wait out the tool's 30 s instead).
    assert (await handle.result()).phase is Phase.CANCELLED
    assert ledger_lines(ledger) == ["start"]


async def test_answer_to_a_finished_call(calls: ToolCalls, worker: Any) -> None:
    handle = await calls.start(
        Request(name="echo", arguments='{"text":"x"}'), call_id=f"done-{uuid.uuid4()}"
    )
    await handle.result()
    before = await handle.status()
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer(True)
    assert caught.value.reason == "finished"
    assert await handle.status() == before


async def test_a_repeated_answer_is_accepted_once(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await calls.start(_plan(ledger), call_id=f"dup-{uuid.uuid4()}")
    pending = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending
    first = await handle.answer({"approve": False}, request_id=pending.request_id)
    again = await handle.answer({"approve": False}, request_id=pending.request_id)
    assert first.request_id == again.request_id == pending.request_id
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.output.text() == "the plan was not approved; nothing written"
    assert outcome.rounds == 2
    assert len((await handle.status()).answers) == 1
    assert ledger_lines(ledger) == ["plan"]


async def test_a_different_second_answer_to_an_answered_request_is_refused(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"dup2-{uuid.uuid4()}")
    pending = (await wait_for_phase(handle, Phase.AWAITING_INPUT)).pending
    await handle.answer({"approve": True}, request_id=pending.request_id)
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer({"approve": False}, request_id=pending.request_id)
    assert caught.value.reason == "stale_request"
    assert "already answered" in str(caught.value)
    await handle.cancel()


async def test_signal_answers_bad_is_recorded_good_is_taken(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    handle = await calls.start(_plan(ledger), call_id=f"sig-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.signal_answer({"approve": "maybe"}, answered_by="carol")
    await handle.signal_answer({"approve": "maybe"}, answered_by="carol")
    status = await handle.status()
    while len(status.refused) < 2:
        status = await handle.status()
    assert status.phase is Phase.AWAITING_INPUT
    assert [r.reason for r in status.refused] == ["schema", "schema"]
    assert status.refused[0].answered_by == "carol"
    await handle.signal_answer({"approve": False}, answered_by="carol")
    outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert outcome.rounds == 2
    assert [a.answered_by for a in (await handle.status()).answers] == ["carol"]


async def test_allowed_answerer_is_recorded(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    handle = await calls.start(
        _plan(tmp_path / "ledger"), call_id=f"who-{uuid.uuid4()}", allowed_answerers=("alice",)
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer({"approve": False})
    assert caught.value.reason == "not_allowed"
    assert "None may not answer" in str(caught.value)
    await handle.answer({"approve": False}, answered_by="alice")
    assert (await handle.result()).phase is Phase.COMPLETED
    assert (await handle.status()).answers[0].answered_by == "alice"


async def test_status_reports_who_may_answer(calls: ToolCalls, worker: Any, tmp_path: Path) -> None:
    restricted = await calls.start(
        _plan(tmp_path / "restricted"),
        call_id=f"who-{uuid.uuid4()}",
        allowed_answerers=("bob", "alice"),
    )
    anyone = await calls.start(_plan(tmp_path / "anyone"), call_id=f"any-{uuid.uuid4()}")
    waiting = await wait_for_phase(restricted, Phase.AWAITING_INPUT)
    assert waiting.allowed_answerers == ("bob", "alice")
    assert (await wait_for_phase(anyone, Phase.AWAITING_INPUT)).allowed_answerers == ()
    await restricted.answer({"approve": False}, answered_by="alice")
    assert (await restricted.result()).phase is Phase.COMPLETED
    assert (await restricted.status()).allowed_answerers == ("bob", "alice")
    await anyone.cancel()
    assert (await anyone.result()).phase is Phase.CANCELLED
    assert (await anyone.status()).allowed_answerers == ()


async def test_unserialisable_answer_is_refused_before_sending(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"nan-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer({"approve": float("nan")})
    assert caught.value.reason == "invalid_json"
    assert await _accepted_updates(handle) == 0
    await handle.cancel()


async def test_checked_answer_text_is_sent_as_it_is_and_the_workflow_still_decides(
    calls: ToolCalls, worker: Any, tmp_path: Path
) -> None:
    """encode_answer's AnswerText is not checked again by the handle: the workflow decides."""
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"text-{uuid.uuid4()}")
    waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    checked = encode_answer('{"approve": true}', call_id=handle.call_id)
    assert isinstance(checked, AnswerText)
    # Text that never went through encode_answer but claims to have: the handle sends it, so
    # the refusal is the workflow's own, naming the pending question.
    with pytest.raises(AnswerRejectedError) as caught:
        await handle.answer(AnswerText(b'{"approve": tru'))
    assert caught.value.reason == "invalid_json"
    assert caught.value.detail.pending_request_id == waiting.pending.request_id
    assert await _accepted_updates(handle) == 0
    await handle.cancel()


async def test_the_next_round_reuses_the_question_the_workflow_read(
    calls: ToolCalls, worker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question is parsed and its schema compiled once per worker, not again to re-enter."""
    read: list[bytes] = []
    original = InputRequest.from_json.__func__  # type: ignore[attr-defined]

    def counted(cls: type[InputRequest], data: bytes | str) -> InputRequest:
        read.append(data if isinstance(data, bytes) else data.encode())
        return original(cls, data)  # type: ignore[no-any-return]

    read_question.cache_clear()
    monkeypatch.setattr(InputRequest, "from_json", classmethod(counted))
    handle = await calls.start(_plan(tmp_path / "ledger"), call_id=f"once-{uuid.uuid4()}")
    await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.answer({"approve": True}, answered_by="alice")
    second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    while second.round != 2:
        second = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    await handle.answer('"confirm"', request_id=second.pending.request_id, answered_by="bob")
    assert (await handle.result()).phase is Phase.COMPLETED
    # Two questions, each read once: by the workflow when asked (the worker's activity that
    # re-entered the tool took the same one).
    assert len(read) == 2, [text[:60] for text in read]
    assert len(set(read)) == 2
