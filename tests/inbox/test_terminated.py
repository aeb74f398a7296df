"""A call terminated by an operator leaves the inbox list and reads as ERRORED (issue 17 item 5)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from inbox.ask_tools import start_waiting
from scope_tool.client import ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

HEADER = "X-Forwarded-User"


@pytest.fixture
async def http(calls: ToolCalls, worker: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


async def _pending_ids(http: httpx.AsyncClient) -> list[str]:
    listed = (await http.get("/api/pending", headers={HEADER: "alice"})).json()
    return [entry["call_id"] for entry in listed["calls"]]


async def test_a_terminated_call_leaves_the_inbox(
    calls: ToolCalls, http: httpx.AsyncClient
) -> None:
    call_id = f"inbox-term-{uuid.uuid4()}"
    await start_waiting(calls, call_id, "Refund order 7?", {"type": "boolean"})
    for _ in range(100):  # visibility is eventually consistent
        if call_id in await _pending_ids(http):
            break
        await asyncio.sleep(0.1)
    assert call_id in await _pending_ids(http)
    await calls.get(call_id).workflow_handle.terminate(reason="duplicate refund request")
    for _ in range(100):
        if call_id not in await _pending_ids(http):
            break
        await asyncio.sleep(0.1)
    assert call_id not in await _pending_ids(http)
    shown = (await http.get(f"/api/calls/{call_id}", headers={HEADER: "alice"})).json()
    assert shown["phase"] == "ERRORED", shown
    assert shown["pending"] is None
    assert "duplicate refund request" in shown["outcome"]["message"]
    page = await http.get(f"/calls/{call_id}", headers={HEADER: "alice"})
    assert page.status_code == 200
    assert "ERRORED" in page.text
    assert 'name="_csrf"' not in page.text  # no answer form for a closed call
