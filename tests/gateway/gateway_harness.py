"""Real processes of the gateway tests: a worker and ``scope-tool mcp`` with ``--gateway``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp"))

from mcp import StdioServerParameters
from mcp_harness import REPOSITORY, Process, _quote, environment

__all__ = ["REPOSITORY", "commits", "gateway_mcp_command", "gateway_stdio", "gateway_worker", "git"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def commits(repo: Path, message: str) -> int:
    """How many commits of ``repo`` carry exactly ``message``."""
    return git(repo, "log", "--format=%s").splitlines().count(message)


def gateway_worker(
    address: str, task_queue: str, tmp: Path, config: Path, name: str = "worker"
) -> Process:
    return Process(
        command=[
            sys.executable,
            "-m",
            "scope_tool.workers",
            "--gateway",
            str(config),
            "--address",
            address,
            "--task-queue",
            task_queue,
        ],
        log=tmp / f"{name}.log",
        env=environment(),
        ready_text="worker ready",
    )


def gateway_mcp_command(address: str, task_queue: str, tmp: Path, config: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scope_tool.cli",
        "mcp",
        "--gateway",
        str(config),
        "--address",
        address,
        "--task-queue",
        task_queue,
        "--state-key-file",
        str(tmp / "mcp-state.key"),
        "--wait",
        "5",
    ]


def gateway_stdio(
    address: str, task_queue: str, tmp: Path, config: Path, pid_file: Path
) -> StdioServerParameters:
    """``scope-tool mcp --gateway`` over stdio, through ``sh`` recording the server's pid."""
    command = " ".join(
        _quote(part) for part in gateway_mcp_command(address, task_queue, tmp, config)
    )
    return StdioServerParameters(
        command="/bin/sh",
        args=[
            "-c",
            f"echo $$ > {_quote(str(pid_file))}; exec {command} 2>>{_quote(str(tmp / 'stdio.log'))}",
        ],
        env=environment(),
        cwd=str(REPOSITORY),
    )


def only(config: Path, *servers: str) -> Path:
    """A copy of ``config`` with just ``servers``: a worker starts only the upstreams its test
    calls (each one is a process to start and to list)."""
    document = json.loads(config.read_text())
    document["mcpServers"] = {name: document["mcpServers"][name] for name in servers}
    path = config.with_name(f"gateway-{'-'.join(servers)}.json")
    path.write_text(json.dumps(document, indent=2))
    return path
