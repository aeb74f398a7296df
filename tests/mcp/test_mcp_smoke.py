"""Smoke: the SDK's own client lists the tools and completes ``add`` over stdio."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_harness import stdio_parameters


async def test_stdio_lists_tools_and_adds(
    temporal_address, task_queue, tmp_path: Path, worker_process
):
    parameters = stdio_parameters(temporal_address, task_queue, tmp_path, tmp_path / "pid")
    async with Client(parameters) as client:
        tools = await client.list_tools()
        names = {tool.name for tool in tools.tools}
        assert {"add", "approve_write", "pick", "scope_tool_call_status"} <= names
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error
    assert result.content[0].text == "5"
    assert result.structured_content is None
