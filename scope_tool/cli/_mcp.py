"""``scope-tool mcp``: hands off to the optional :mod:`scope_tool.mcp` package (``[mcp]`` extra)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from scope_tool.serving._errors import CommandError

if TYPE_CHECKING:
    from scope_tool import Registry
    from scope_tool.client import ToolCalls

__all__ = ["add_mcp_arguments", "gateway_tools", "run_mcp", "start_dev_mcp"]

_MISSING = "scope-tool mcp needs the mcp extra: pip install 'scope-tool[mcp]' ({error})"


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """The package's own flags when it is installed; ``--tools`` alone otherwise."""
    try:
        from scope_tool.mcp import add_arguments
    except ImportError:
        parser.add_argument("--tools", help="the Registry to serve, as module:attribute")
        return
    add_arguments(parser)


async def run_mcp(args: argparse.Namespace) -> int:
    """Serve the registry over MCP; a missing extra or a bad setting is one clear line."""
    try:
        from scope_tool.mcp import McpSettingsError, run
    except ImportError as error:
        raise CommandError(_MISSING.format(error=error)) from None
    try:
        return await run(args)
    except McpSettingsError as error:
        raise CommandError.usage(error) from None


async def gateway_tools(path: str) -> Registry | str:
    """``scope-tool dev --gateway --mcp-port``: the gateway's tools for the MCP endpoint, or why not.

    Listed before ``dev`` says it is ready, so the endpoint serves them from its first request.
    """
    try:
        from scope_tool.mcp._serve import gateway_registry
    except ImportError as error:
        return f"not available ({error}); pip install 'scope-tool[mcp]'"
    try:
        return await asyncio.to_thread(gateway_registry, path)
    except ValueError as error:
        return f"not started: {error}"


def start_dev_mcp(
    calls: ToolCalls,
    *,
    tools: str,
    ip: str,
    port: int,
    data_dir: Path,
    inbox_url: str | None,
    gateway: Registry | str | None = None,
) -> asyncio.Task[None] | str:
    """``scope-tool dev --mcp-port``: the MCP server over HTTP as a task, or why it is not running.

    The sealing key lives in the data folder, so a restarted ``dev`` accepts the state its
    predecessor sealed.
    """
    try:
        from scope_tool.mcp import McpOptions, read_state_key, serve_http
    except ImportError as error:
        return f"not available ({error}); pip install 'scope-tool[mcp]'"
    from scope_tool.serving._dev_server import port_is_free
    from scope_tool.workers import load_registry

    if not 0 < port < 65536:
        return f"not started: --mcp-port must be a TCP port, got {port}"
    if not port_is_free(ip, port):
        return f"not started: port {port} is in use (choose another with --mcp-port)"
    from scope_tool.mcp._access import HttpAccess, check_bind

    try:
        check_bind(ip, HttpAccess())  # dev serves MCP without credentials: loopback only
        registry = load_registry(tools) if gateway is None else None
        options = McpOptions(
            state_keys=(read_state_key(data_dir / "mcp-state.key"),), inbox_url=inbox_url
        )
    except ValueError as error:
        return f"not started: {error}"
    if isinstance(gateway, str):
        return gateway  # why the gateway's tools could not be listed
    if gateway is not None:
        registry = gateway
    assert registry is not None
    return asyncio.create_task(serve_http(calls, registry, options, host=ip, port=port))
