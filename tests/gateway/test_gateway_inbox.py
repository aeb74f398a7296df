"""An upstream server's question answered by a person in the inbox.

server-everything (npm, none of it written here) asks through MCP elicitation during
``trigger-elicitation-request``; the gateway makes it the durable call's question, the inbox
shows it as a form built from the upstream's own schema, a reviewer fills it in, and the answer
goes back upstream, whose result names what the person typed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path

import httpx
import pytest
from gateway_harness import gateway_worker, only

from scope_tool import Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.inbox import AllowedHosts, InboxAuth, create_app

pytestmark = pytest.mark.slow

HEADER = "X-Forwarded-User"


async def test_an_upstream_elicitation_is_answered_from_the_inbox(
    temporal_address, temporal_client, task_queue, tmp_path: Path, gateway_config: Path
):
    gateway_config = only(gateway_config, "every")
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    call_id = f"inbox-ask-{uuid.uuid4().hex[:8]}"
    app = create_app(
        calls,
        auth=InboxAuth(identity_header=HEADER),
        allowed_hosts=AllowedHosts.parse(["inbox.test"]),
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    try:
        handle = await calls.start(
            Request(name="every_trigger-elicitation-request", arguments="{}"), call_id=call_id
        )
        deadline = time.monotonic() + 60
        status = await handle.status()
        while status.pending is None:
            assert time.monotonic() < deadline, f"the upstream never asked: {status}"
            await asyncio.sleep(0.2)
            status = await handle.status()
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
            listed = await http.get("/", headers={HEADER: "alice"})
            assert call_id in listed.text
            page = (await http.get(f"/calls/{call_id}", headers={HEADER: "alice"})).text
            assert "Please provide inputs" in page  # the upstream's own question
            assert 'name="/name"' in page  # a form field of the upstream's schema
            csrf = re.search(r'name="_csrf" value="([0-9a-f]+)"', page)
            assert csrf is not None
            fields = {
                "_csrf": csrf.group(1),
                "_request_id": status.pending.request_id,
                "_form": "fields",
            }
            # Without the required name the inbox refuses it before anything is sent.
            refused = await http.post(
                f"/calls/{call_id}/answer", headers={HEADER: "alice"}, data=fields
            )
            assert refused.status_code == 422, refused.text
            assert (await handle.status()).answers == ()
            answered = await http.post(
                f"/calls/{call_id}/answer",
                headers={HEADER: "alice"},
                data={**fields, "/name": "Ada Lovelace"},
            )
            assert answered.status_code == 303, answered.text
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        text = outcome.output.text() or ""
        assert "Ada Lovelace" in text  # the upstream received what the person typed
        assert "accept" in text
        history = await handle.history()
        [answer] = history.answers
        assert answer.answered_by == "alice"
        assert json.loads(answer.response)["name"] == "Ada Lovelace"
    finally:
        worker.stop()
