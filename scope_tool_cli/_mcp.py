"""``scope-tool mcp``: hands off to the optional :mod:`scope_tool_mcp` package (``[mcp]`` extra)."""

from __future__ import annotations

import argparse

from scope_tool_cli._errors import EXIT_USAGE, CommandError

__all__ = ["add_mcp_arguments", "run_mcp"]

_MISSING = "scope-tool mcp needs the mcp extra: pip install 'scope-tool[mcp]' ({error})"


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """The package's own flags when it is installed; ``--tools`` alone otherwise."""
    try:
        from scope_tool_mcp import add_arguments
    except ImportError:
        parser.add_argument("--tools", help="the Registry to serve, as module:attribute")
        return
    add_arguments(parser)


async def run_mcp(args: argparse.Namespace) -> int:
    """Serve the registry over MCP; a missing extra or a bad setting is one clear line."""
    try:
        from scope_tool_mcp import McpSettingsError, run
    except ImportError as error:
        raise CommandError(_MISSING.format(error=error)) from None
    try:
        return await run(args)
    except McpSettingsError as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None
