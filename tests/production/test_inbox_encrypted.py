"""The inbox, over a facade with keys, shows a call's secret prompt and takes its answer.

(The inbox moves to its own package on another branch; only the import below changes then.)
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from helpers.waiting import wait_for_phase

from production.keys import new_key_entry
from production.tools import REGISTRY
from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app
from scope_tool.workers import build_worker

HEADER = "X-Forwarded-User"


async def test_inbox_shows_the_decrypted_prompt_and_answers(
    temporal_client: Any, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_TOOL_ENCRYPTION_KEYS", new_key_entry("inbox1"))
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    marker = f"SECRET-{uuid.uuid4().hex}"
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with (
        build_worker(calls.client, REGISTRY, task_queue=task_queue),
        httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http,
    ):
        handle = await calls.start(
            Request(name="secret_note", arguments=json.dumps({"note": marker})),
            call_id=f"note-{uuid.uuid4()}",
        )
        waiting = await wait_for_phase(handle, Phase.AWAITING_INPUT)
        shown = await http.get(f"/api/calls/{handle.call_id}", headers={HEADER: "ops"})
        assert shown.status_code == 200, shown.text
        assert marker in shown.text
        page = await http.get(f"/calls/{handle.call_id}", headers={HEADER: "ops"})
        assert marker in page.text
        answered = await http.post(
            f"/api/calls/{handle.call_id}/answer",
            headers={HEADER: "ops"},
            json={
                "request_id": waiting.pending.request_id,
                "response": {"approve": True, "comment": "ok"},
            },
        )
        assert answered.status_code == 200, answered.text
        outcome = await handle.result()
    assert outcome.output.text() == f"filed {marker}: ok"
