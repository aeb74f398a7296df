"""Fixtures of the gateway tests: real upstream MCP servers, none written here.

``mcp-server-git`` and ``mcp-server-time`` (PyPI, in the test venv) and
``@modelcontextprotocol/server-everything`` (npm, installed by ``make test`` into
``.cache/mcp-upstream``, run with the machine's ``node``). A missing one fails the test loudly.
The Temporal server is the session's (``tests/conftest.py``); each test has its own task queue.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from gateway_harness import REPOSITORY, git

EVERYTHING = (
    REPOSITORY
    / ".cache/mcp-upstream/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


@pytest.fixture(scope="session")
def everything_js() -> Path:
    """server-everything's entry point; fails (never skips) when node or the package is missing."""
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH: the gateway tests run server-everything with it")
    if not EVERYTHING.is_file():
        pytest.fail(
            f"{EVERYTHING} is missing: run `make upstream-mcp` (make test does) to install"
            " @modelcontextprotocol/server-everything"
        )
    return EVERYTHING


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A repository with one commit and one staged file, ready to be committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "Test")
    (repo / "README").write_text("start\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    (repo / "staged.txt").write_text("to commit\n")
    git(repo, "add", "staged.txt")
    return repo


@pytest.fixture
def gateway_config(tmp_path: Path, git_repo: Path, everything_js: Path) -> Path:
    """git (commit gated, reset hidden), time (read-only: runs at once), everything (runs)."""
    config = {
        "mcpServers": {
            "git": {
                "command": sys.executable,
                "args": ["-m", "mcp_server_git", "--repository", str(git_repo)],
                "policy": {
                    "run": ["git_status", "git_log", "git_diff*", "git_show"],
                    "approve": ["git_commit", "git_add"],
                    "hide": ["git_reset", "git_checkout"],
                },
            },
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
            "every": {
                "command": "node",
                "args": [str(everything_js), "stdio"],
                "policy": {"default": "run"},
            },
        }
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config, indent=2))
    return path
