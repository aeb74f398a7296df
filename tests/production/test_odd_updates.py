"""Updates and queries with odd payloads never fail a call's workflow task (red-team of #25).

Any Temporal client may send ``answer`` with no payload, several, or one that does not
convert, or an update name the call has no handler for (``first_stop`` with arguments only reads), and
query an unknown name (``status`` with arguments only reads). Each is refused to its sender; the
call keeps answering ``status`` and takes the right answer, and no WorkflowTaskFailed reaches
its history.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, workflow_task_failures

from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.wire import ANSWER, FIRST_STOP, STATUS
from scope_tool.workers import build_worker


@pytest.mark.timeout(120)
async def test_odd_updates_and_queries_are_refused_to_their_sender(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    request = Request(name="secret_note", arguments=json.dumps({"note": "n"}))
    handle = await calls.start(request, call_id=f"note-{uuid.uuid4()}")
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        hostile = temporal_client.get_workflow_handle(handle.call_id)
        one = {"request_id": waiting.pending.request_id, "response": '{"approve": true}'}
        odd: list[tuple[str, list[Any]]] = [
            (ANSWER, []),
            (ANSWER, [one, one]),
            (ANSWER, [{"response": 5}]),
            (ANSWER, ["not an object"]),
            (ANSWER, [None]),
            ("no_such_update", [one]),
        ]
        for name, args in odd:
            with pytest.raises(Exception):  # noqa: B017 - any refusal will do, the call must live
                await asyncio.wait_for(hostile.execute_update(name, args=args), timeout=30)
        # first_stop only reads; the SDK drops arguments it does not take.
        await asyncio.wait_for(hostile.execute_update(FIRST_STOP, args=[one, one]), timeout=30)
        await asyncio.wait_for(hostile.query(STATUS, args=[one, one]), timeout=30)
        with pytest.raises(Exception):  # noqa: B017
            await asyncio.wait_for(hostile.query("no_such_query", args=[one]), timeout=30)
        status = await asyncio.wait_for(handle.status(), timeout=30)
        assert status.phase is Phase.AWAITING_INPUT
        await handle.answer({"approve": True, "comment": "fine"}, answered_by="alice")
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert await workflow_task_failures(handle) == []
