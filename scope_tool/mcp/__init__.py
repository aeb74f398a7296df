"""``scope-tool mcp``: any MCP client gets durable, approvable tool calls.

Install with the ``[mcp]`` extra. :func:`build_server` turns a :class:`~scope_tool.Registry`
and a connected :class:`~scope_tool.client.ToolCalls` into an MCP server (the official ``mcp`` SDK)
whose every ``tools/call`` is one durable call; ``scope-tool mcp --tools module:attr`` serves
it over stdio or, with ``--http HOST:PORT``, over streamable HTTP.
"""

from scope_tool.mcp._forms import FormKind, FormPlan, plan_form
from scope_tool.mcp._options import McpOptions
from scope_tool.mcp._serve import STATE_KEY_ENV, add_arguments, read_state_key, run, serve_http
from scope_tool.mcp._server import (
    CALL_ID_META_KEY,
    STATUS_TOOL,
    TASKS_EXTENSION,
    build_server,
)
from scope_tool.mcp.errors import McpFrontEndError, McpSettingsError, NoWorkerError

__all__ = [
    "CALL_ID_META_KEY",
    "STATE_KEY_ENV",
    "STATUS_TOOL",
    "TASKS_EXTENSION",
    "FormKind",
    "FormPlan",
    "McpFrontEndError",
    "McpOptions",
    "McpSettingsError",
    "NoWorkerError",
    "add_arguments",
    "build_server",
    "plan_form",
    "read_state_key",
    "run",
    "serve_http",
]
