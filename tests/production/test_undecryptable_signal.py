"""A signal nobody here can decrypt is dropped and recorded; the call stays answerable (#25 item 5).

Any Temporal client can signal a call. One that holds other keys, or none, can send a payload
that claims ``binary/encrypted`` but does not decrypt here. Decoding happens for the whole
workflow task, so one such signal used to fail every task of the call for good (``status``,
``answer`` and ``cancel`` all stopped). Now it is dropped, the refusal is kept in status, and
no WorkflowTaskFailed reaches history.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from helpers.waiting import wait_for_phase, wait_until_async, workflow_task_failures
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from production.keys import client_with_keys, new_key_entry
from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.wire import ANSWER, STAGE_ANSWER, AnswerInput, StagedAnswer
from scope_tool.workers import build_worker


@pytest.mark.timeout(120)
async def test_an_undecryptable_signal_is_dropped_and_recorded(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    keys = new_key_entry("k1")
    calls = ToolCalls(client_with_keys(temporal_client, keys), task_queue=task_queue)
    # Same key id, other key: the ciphertext fails authentication here.
    impostor = client_with_keys(temporal_client, new_key_entry("k1"))
    # No codec at all: a raw payload that only claims to be sealed, shorter than a nonce.
    keyless = client_with_keys(temporal_client, None)
    request = Request(name="secret_note", arguments=json.dumps({"note": "n"}))
    handle = await calls.start(request, call_id=f"note-{uuid.uuid4()}")
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        request_id = waiting.pending.request_id
        forged = AnswerInput(request_id=request_id, response=b'{"approve": true, "comment": "x"}')
        await impostor.get_workflow_handle(handle.call_id).signal(ANSWER, forged)
        short = Payload(
            metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k1"}, data=b"abc"
        )
        await keyless.get_workflow_handle(handle.call_id).signal(ANSWER, RawValue(short))
        await impostor.get_workflow_handle(handle.call_id).signal(
            STAGE_ANSWER, StagedAnswer(response=b"{}")
        )

        async def recorded() -> bool:
            return len((await handle.status()).refused) >= 3

        await wait_until_async(recorded)
        status = await handle.status()
        assert status.phase is Phase.AWAITING_INPUT
        reasons = {each.reason for each in status.refused}
        assert reasons == {"undecryptable"}
        assert any("does not decrypt" in each.message for each in status.refused)

        await handle.answer({"approve": True, "comment": "fine"}, answered_by="alice")
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert await workflow_task_failures(handle) == []


@pytest.mark.timeout(120)
async def test_a_signal_with_no_payload_or_several_is_dropped(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red-team pass of #25: ``answer`` and ``stage_answer`` with zero or two payloads.

    The SDK calls a named handler with as many arguments as the signal carried; one declared
    ``(self, raw)`` then raised ``TypeError`` on every workflow task, so any Temporal client,
    keys or not, wedged a call for good with ``signal(ANSWER)`` and no argument.
    """
    monkeypatch.delenv("SCOPE_TOOL_ENCRYPTION_KEYS", raising=False)
    keys = new_key_entry("k1")
    calls = ToolCalls(client_with_keys(temporal_client, keys), task_queue=task_queue)
    keyless = client_with_keys(temporal_client, None)
    request = Request(name="secret_note", arguments=json.dumps({"note": "n"}))
    handle = await calls.start(request, call_id=f"note-{uuid.uuid4()}")
    async with build_worker(calls.client, REGISTRY, task_queue=task_queue):
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        request_id = waiting.pending.request_id
        hostile = keyless.get_workflow_handle(handle.call_id)
        one = {"request_id": request_id, "response": "dHJ1ZQ=="}
        for name in (ANSWER, STAGE_ANSWER):
            await hostile.signal(name)
            await hostile.signal(name, args=[one, one])
        await hostile.signal("no_such_signal", args=[one])
        status = await handle.status()
        assert status.phase is Phase.AWAITING_INPUT
        await handle.answer({"approve": True, "comment": "fine"}, answered_by="alice")
        outcome = await handle.result()
    assert outcome.phase is Phase.COMPLETED
    assert await workflow_task_failures(handle) == []
