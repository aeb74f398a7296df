"""``scope-tool dev --mcp-port``: the whole stack in one command, an MCP client approving a write."""

from __future__ import annotations

import signal
from pathlib import Path

import mcp_types as types
from e2e._cli import free_port, start_dev
from mcp import Client


async def test_dev_serves_mcp_over_http_and_a_client_approves_write_file(tmp_path: Path):
    port = free_port()
    dev = start_dev(tmp_path / "data", "--mcp-port", str(port))
    shown: list[types.ElicitRequestParams] = []

    async def person(ctx, params):
        shown.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    try:
        assert f"MCP (HTTP)           http://localhost:{port}/mcp" in dev.text
        async with Client(f"http://127.0.0.1:{port}/mcp", elicitation_callback=person) as client:
            added = await client.call_tool("add", {"a": 20, "b": 22})
            wrote = await client.call_tool("write_file", {"path": "a.txt", "content": "from mcp"})
    finally:
        code = dev.stop(signal.SIGINT)
    assert code == 0, dev.text
    assert added.content[0].text == "42"
    assert wrote.content[0].text == "wrote 8 bytes to a.txt"
    assert "Write this exact content to a.txt?" in shown[0].message
    assert (tmp_path / "data" / "files" / "a.txt").read_text() == "from mcp"
    assert (tmp_path / "data" / "mcp-state.key").stat().st_mode & 0o777 == 0o600
