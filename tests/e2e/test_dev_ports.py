"""``scope-tool dev`` as a newcomer starts it: own tools from their own folder, non-default ports.

Its ports follow one another from ``--port`` (Web UI +1000, then inbox and codec server), or
from ``--ui-port`` when that is given; a port it cannot have stops it before anything starts,
naming the flag to change. With ``--tools`` the ready banner suggests a call of a tool that
registry has; ``--mcp-port`` imports the registry from the folder ``dev`` runs in.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

from scope_tool.cli._parser import build_parser

from ._cli import assert_user_error, free_port, run_cli, start_dev
from .test_own_tools import readme_my_tools


def _ports(*flags: str) -> tuple[int, int, int, int]:
    from scope_tool.cli._dev import dev_ports

    return dev_ports(build_parser().parse_args(["dev", *flags]))


def test_ports_follow_one_another() -> None:
    assert _ports() == (7233, 8233, 8234, 8235)
    assert _ports("--port", "7244") == (7244, 8244, 8245, 8246)  # make run PORT=7244
    assert _ports("--ui-port", "8244") == (7233, 8244, 8245, 8246)  # the README's ARGS example
    assert _ports("--port", "7244", "--inbox-port", "9000") == (7244, 8244, 9000, 8246)


def test_a_busy_inbox_port_stops_dev_before_it_starts(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        inbox_port = busy.getsockname()[1]
        result = run_cli(
            "dev",
            "--port",
            str(free_port()),
            "--ui-port",
            str(free_port()),
            "--inbox-port",
            str(inbox_port),
            "--data-dir",
            str(tmp_path / "data"),
            timeout=30,
        )
    assert_user_error(result, code=1, contains=f"port {inbox_port}")
    assert "--inbox-port" in result.stderr, result.stderr
    assert not (tmp_path / "data" / "dev.db").exists()  # no server was started


def test_dev_with_own_tools_from_their_folder_serves_mcp_and_suggests_their_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "my_tools.py").write_text(readme_my_tools())
    mcp_port = free_port()
    dev = start_dev(
        tmp_path / "data",
        "--tools",
        "my_tools:registry",
        "--mcp-port",
        str(mcp_port),
        cwd=tmp_path,  # the installed scope-tool command, run in the folder of my_tools.py
    )
    try:
        assert f"MCP (HTTP)           http://localhost:{mcp_port}/mcp" in dev.text, dev.text
        suggestions = dev.text[dev.text.index("From a second terminal") :]
        assert "write_file" not in suggestions, suggestions
        assert re.search(r"scope-tool call (greet|refund) '\{", suggestions), suggestions
        assert f"--address localhost:{dev.port}" in suggestions, suggestions
    finally:
        dev.stop()
