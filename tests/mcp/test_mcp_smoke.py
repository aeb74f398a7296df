"""Smoke: the SDK's own client lists the tools and completes ``add`` over stdio."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from mcp import Client
from mcp_harness import free_port, http_server, stdio_parameters


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


async def test_a_lone_surrogate_in_arguments_is_invalid_params_not_an_internal_error(
    temporal_address, task_queue, tmp_path: Path
):
    # The SDK's client refuses to encode a lone surrogate, so the 2026-07-28 (stateless)
    # request is written by hand: ``"\ud800"`` is valid JSON text that decodes to a str UTF-8
    # cannot carry.
    port = free_port()
    server = await http_server(temporal_address, task_queue, tmp_path, port).start().ready()
    version = "2026-07-28"
    envelope = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }
    body = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add",'
        '"arguments":{"a":1,"b":2,"note":"\\ud800"},"_meta":' + json.dumps(envelope) + "}}"
    )
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": version,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "add",
    }
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(
                f"http://127.0.0.1:{port}/mcp", content=body, headers=headers
            )
    finally:
        server.stop()
    text = response.text
    reply = json.loads(text[text.index("{") :]) if not text.startswith("{") else response.json()
    error = reply["error"]
    assert error["code"] == -32602, reply  # INVALID_PARAMS, not -32603 "Internal server error"
    assert "surrogate" in error["message"], reply
