"""One bad answer, four front ends, one refusal: the facade decides, every front end renders.

The same schema-violating answer goes through ``ToolCallHandle.answer``, the inbox JSON API,
the inbox page and ``scope-tool answer``; each must report the same reason and the same detail
(the violation's JSON path and message), and the call must stay unanswered.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from e2e._cli import run_cli

from inbox.ask_tools import start_waiting
from scope_tool.client import AnswerRejectedError, Phase, RefusalDetail, RefusalReason, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

HEADER = "X-Forwarded-User"
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 500}},
    "required": ["amount"],
    "additionalProperties": False,
}
BAD_ANSWER = '{"amount":9000}'


@pytest.fixture
async def http(calls: ToolCalls, worker: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        refresh_seconds=0.5,
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


async def test_the_same_bad_answer_gets_the_same_refusal_everywhere(
    calls: ToolCalls, http: httpx.AsyncClient, temporal_address: str, task_queue: str
) -> None:
    call_id = f"one-refusal-{uuid.uuid4()}"
    status = await start_waiting(calls, call_id, "How much?", SCHEMA)
    request_id = status.pending.request_id

    with pytest.raises(AnswerRejectedError) as caught:
        await calls.get(call_id).answer(BAD_ANSWER, answered_by="alice")
    facade = caught.value
    assert facade.reason is RefusalReason.SCHEMA
    expected = RefusalDetail(
        problem=facade.detail.problem,
        schema_path="/amount",
        pending_request_id=request_id,
        phase="AWAITING_INPUT",
    )
    assert facade.detail == expected
    assert "500" in facade.detail.problem

    api = await http.post(
        f"/api/calls/{call_id}/answer",
        headers={HEADER: "alice"},
        json={"response": {"amount": 9000}},
    )
    assert api.status_code == 422
    assert api.json()["reason"] == "schema"
    assert RefusalDetail.from_json(api.json()["detail"]) == expected

    page = await http.get(f"/calls/{call_id}", headers={HEADER: "alice"})
    token = re.search(r'name="_csrf" value="([0-9a-f]+)"', page.text)
    assert token is not None
    posted = await http.post(
        f"/calls/{call_id}/answer",
        headers={HEADER: "alice"},
        data={
            "_csrf": token.group(1),
            "_request_id": request_id,
            "_form": "fields",
            "/amount": "9000",
        },
    )
    assert posted.status_code == 422
    assert f"(schema): at /amount: {expected.problem}" in posted.text

    terminal = await asyncio.to_thread(
        run_cli,
        "answer",
        call_id,
        BAD_ANSWER,
        "--by",
        "alice",
        "--task-queue",
        task_queue,
        address=temporal_address,
    )
    assert terminal.code == 1, terminal
    assert f"answer refused (schema): at /amount: {expected.problem}" in terminal.stderr

    after = await calls.get(call_id).status()
    assert after.phase is Phase.AWAITING_INPUT
    assert after.answers == ()
