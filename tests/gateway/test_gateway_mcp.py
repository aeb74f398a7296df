"""The official MCP client, through ``scope-tool mcp --gateway``, uses real upstream servers.

It lists the upstream tools (prefixed, hidden ones absent), runs ungated ones at once, gets an
approval question for ``git_commit`` and, on approval, sees the upstream's result once: the
commit exists once in the repository.
"""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
from gateway_harness import commits, gateway_stdio, gateway_worker
from mcp import Client


async def test_mcp_client_lists_runs_and_approves_through_the_gateway(
    temporal_address, task_queue, tmp_path: Path, git_repo: Path, gateway_config: Path
):
    worker = (
        await gateway_worker(temporal_address, task_queue, tmp_path, gateway_config).start().ready()
    )
    shown: list[types.ElicitRequestParams] = []

    async def person(context, params):
        shown.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    parameters = gateway_stdio(
        temporal_address, task_queue, tmp_path, gateway_config, tmp_path / "pid"
    )
    try:
        async with Client(parameters, elicitation_callback=person) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {
                "git_git_status",
                "git_git_commit",
                "time_get_current_time",
                "every_trigger-long-running-operation",
            } <= names
            assert "git_git_reset" not in names
            assert "git_git_checkout" not in names

            status = await client.call_tool("git_git_status", {"repo_path": str(git_repo)})
            assert not status.is_error, status
            assert "staged.txt" in status.content[0].text
            now = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            assert not now.is_error, now
            assert "UTC" in now.content[0].text
            assert shown == []  # neither asked anybody

            commit = await client.call_tool(
                "git_git_commit", {"repo_path": str(git_repo), "message": "via the gateway"}
            )
            assert not commit.is_error, commit
            assert "Changes committed successfully" in commit.content[0].text
        assert len(shown) == 1
        assert "git_git_commit" in shown[0].message
        assert "via the gateway" in shown[0].message  # the exact arguments are shown
        assert commits(git_repo, "via the gateway") == 1
    finally:
        worker.stop()
