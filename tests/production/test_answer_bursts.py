"""Answers that cost workflow CPU cannot wedge a call (second red-team pass of #25).

Any Temporal client may signal ``answer`` to a waiting call. Each answer up to
``WORKFLOW_CHECK_BYTES`` is parsed and checked in workflow code, and Temporal hands a call
every signal that arrived since its last workflow task in one activation. A burst of answers
that are slow to parse (deep nesting) made one activation run past the SDK's two-second
deadlock detector: the workflow task failed, and failed again on every retry and replay (the
signals are in history), so ``status``, ``answer`` and ``cancel`` stopped for good.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, workflow_task_failures

from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.wire import ANSWER, AnswerInput
from scope_tool.workers import build_worker

_DEEP = b'{"a":' * 9990 + b"1" + b"}" * 9990
"""Just under ``WORKFLOW_CHECK_BYTES`` and ``MAX_DEPTH``: slow to parse, refused by the schema."""


@pytest.mark.timeout(120)
async def test_a_burst_of_slow_answers_does_not_fail_the_workflow_task(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    request = Request(name="secret_note", arguments=json.dumps({"note": "n"}))
    handle = await calls.start(request, call_id=f"note-{uuid.uuid4()}")
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
    # No worker now: every signal below reaches the call in one workflow task.
    hostile = temporal_client.get_workflow_handle(handle.call_id)
    slow = AnswerInput(request_id=waiting.pending.request_id, response=_DEEP, answered_by="x")
    for _ in range(80):
        await hostile.signal(ANSWER, slow)
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        # Before the budget this query never came back: every workflow task of the call failed.
        # It waits for the task that takes the burst (the new worker replays 80 large answers
        # first); on a loaded machine that took over the status read's default 10 s.
        status = await asyncio.wait_for(
            handle.status(wait_for_worker=timedelta(seconds=60)), timeout=75
        )
        assert status.phase is Phase.AWAITING_INPUT
        await handle.answer({"approve": True, "comment": "fine"}, answered_by="alice")
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert await workflow_task_failures(handle) == []
