"""Pydantic AI's MCP client drives tools through ``scope-tool mcp`` (offline: ``FunctionModel``).

The scripted model calls ``add``, then ``approve_write``, which waits for a person: the tool
result names the call id. A person answers in the meantime (through the engine's facade, as the
inbox or ``scope-tool answer`` would); the model then calls the status tool with that call id and
gets the tool's real output. The ledger proves the write happened once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastmcp.client.transports import StdioTransport
from mcp_harness import REPOSITORY, environment, mcp_command
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from scope_tool.client import ToolCalls


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        for part in getattr(message, "parts", ())
        if isinstance(part, ToolReturnPart)
    ]


def _text(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)


async def test_pydantic_ai_agent_calls_tools_through_scope_tool_mcp(
    temporal_address, task_queue, tmp_path: Path, worker_process, temporal_client, ledger
):
    calls = ToolCalls(temporal_client, task_queue=task_queue)
    seen: dict[str, str] = {}

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _returns(messages)
        if not returns:
            assert {"add", "approve_write", "scope_tool_call_status"} <= {
                tool.name for tool in info.function_tools
            }
            return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3})])
        if len(returns) == 1:
            seen["add"] = _text(returns[0].content)
            return ModelResponse(parts=[ToolCallPart("approve_write", {"key": "from-agent"})])
        if len(returns) == 2:
            waiting = _text(returns[1].content)
            seen["waiting"] = waiting
            call_id = re.search(r"mcp-approve_write-[0-9a-f]+", waiting).group(0)
            await calls.get(call_id).answer(True, answered_by="alice")  # the person, elsewhere
            return ModelResponse(
                parts=[ToolCallPart("scope_tool_call_status", {"call_id": call_id})]
            )
        seen["final"] = _text(returns[2].content)
        return ModelResponse(parts=[TextPart(f"done: {seen['final']}")])

    transport = StdioTransport(
        command=mcp_command(temporal_address, task_queue, tmp_path)[0],
        args=mcp_command(temporal_address, task_queue, tmp_path)[1:],
        env=environment(),
        cwd=str(REPOSITORY),
    )
    agent = Agent(
        FunctionModel(model), toolsets=[MCPToolset(transport, init_timeout=60, read_timeout=60)]
    )
    result = await agent.run("add 2 and 3, then write the record from-agent")
    assert seen["add"] == "5"
    # What the model saw (Pydantic AI shows structuredContent when there is one) tells it
    # what to do next, not only the phase.
    assert "waits for a person's answer" in seen["waiting"]
    assert "Call the scope_tool_call_status tool with this call_id" in seen["waiting"]
    assert "from-agent" in seen["final"]
    assert result.output.startswith("done:")
    assert ledger.read_text() == "from-agent\n"
