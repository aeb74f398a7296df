"""The five-minute path of docs/gateway.md: ``scope-tool dev --gateway`` + an MCP client.

``dev`` starts the server, a ``--gateway`` worker (which starts ``mcp-server-git``) and the MCP
endpoint; the official client runs ``git_status`` at once and approves a ``git_commit``, which
then exists once in the repository.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import mcp_types as types
from e2e._cli import free_port, start_dev
from gateway_harness import commits
from mcp import Client


async def test_dev_with_a_gateway_serves_git_and_a_client_approves_a_commit(
    tmp_path: Path, git_repo: Path
):
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {
                        "command": sys.executable,
                        "args": ["-m", "mcp_server_git", "--repository", str(git_repo)],
                        "policy": {"run": ["git_status"], "approve": ["git_commit"]},
                    }
                }
            }
        )
    )
    port = free_port()
    dev = start_dev(tmp_path / "data", "--gateway", str(config), "--mcp-port", str(port))
    shown: list[types.ElicitRequestParams] = []

    async def person(context, params):
        shown.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    try:
        assert f"tools of gateway {config}" in dev.text
        async with Client(f"http://127.0.0.1:{port}/mcp", elicitation_callback=person) as client:
            status = await client.call_tool("git_git_status", {"repo_path": str(git_repo)})
            committed = await client.call_tool(
                "git_git_commit", {"repo_path": str(git_repo), "message": "from dev"}
            )
    finally:
        code = dev.stop(signal.SIGINT)
    assert code == 0, dev.text
    assert "staged.txt" in status.content[0].text
    assert "Changes committed successfully" in committed.content[0].text
    assert len(shown) == 1
    assert "from dev" in shown[0].message
    assert commits(git_repo, "from dev") == 1
