"""An upstream that asks by ``InputRequiredResult`` (MCP 2026-07-28) instead of a mid-call request.

A probe server written with the MCP SDK's own ``MCPServer`` resolves a tool parameter with
``Elicit``: on the 2026-07-28 protocol the SDK returns an ``InputRequiredResult`` and the client
retries the call with the answer. Through the gateway that question is the durable call's
question like any elicitation; the answer, checked against the upstream's schema, goes back and
the retried call's result names it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from gateway_harness import gateway_worker

from scope_tool import Request
from scope_tool.client import AnswerRejectedError, Phase, RefusalReason, ToolCalls

pytestmark = pytest.mark.slow

_PROBE = '''
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("probe")


class Recipient(BaseModel):
    name: str


def ask_recipient() -> Elicit[Recipient]:
    return Elicit("Who should receive the parcel?", Recipient)


@server.tool()
async def ship(parcel: str, recipient: Annotated[Recipient, Resolve(ask_recipient)]) -> str:
    """Ship a parcel to the person the user names."""
    return f"shipped {parcel} to {recipient.name}"


server.run()
'''


async def test_an_input_required_result_is_the_calls_question(
    temporal_address, temporal_client, task_queue, tmp_path: Path
):
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "probe": {
                        "command": sys.executable,
                        "args": [str(probe)],
                        "policy": {"default": "run"},
                    }
                }
            }
        )
    )
    worker = await gateway_worker(temporal_address, task_queue, tmp_path, config).start().ready()
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    try:
        handle = await calls.start(
            Request(name="probe_ship", arguments='{"parcel": "p-7"}'),
            call_id=f"input-required-{uuid.uuid4().hex[:8]}",
        )
        deadline = time.monotonic() + 60
        status = await handle.status()
        while status.pending is None:
            assert status.phase is Phase.RUNNING, status
            assert time.monotonic() < deadline, "the upstream never asked"
            await asyncio.sleep(0.2)
            status = await handle.status()
        prompt = json.loads(status.pending.prompt)
        assert prompt["kind"] == "scope_tool.gateway.elicitation"
        assert prompt["question"] == "Who should receive the parcel?"
        assert json.loads(status.pending.response_schema)["required"] == ["name"]
        with pytest.raises(AnswerRejectedError) as refused:
            await handle.answer({"nom": "Ada"})
        assert refused.value.reason is RefusalReason.SCHEMA
        await handle.answer({"name": "Ada Lovelace"})
        outcome = await asyncio.wait_for(handle.result(), 60)
        assert outcome.phase is Phase.COMPLETED, outcome
        assert outcome.output.text() == "shipped p-7 to Ada Lovelace"
    finally:
        worker.stop()
