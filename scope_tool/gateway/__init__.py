"""The MCP gateway: tools of the MCP servers people already run, as durable scope-tool calls.

``scope-tool worker --gateway gateway.json`` serves them, ``scope-tool mcp --gateway
gateway.json`` lists them to any MCP client, and Python code gets the same
:class:`~scope_tool.Registry` from :func:`load_gateway`. Each upstream ``tools/call`` runs in a
round of a durable call, carries an idempotency key in ``_meta``, and is never sent twice: a
worker lost while it is in flight ends the call "outcome unknown" with that key. Per-tool policy
(run at once, approve first, hide) comes from the config file; see ``docs/gateway.md``.

Needs the ``[mcp]`` extra (the MCP SDK); ``import scope_tool`` and a worker without
``--gateway`` never import it.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as _error:  # pragma: no cover - depends on the install
    raise ImportError(
        f"scope_tool.gateway needs the mcp extra: pip install 'scope-tool[mcp]' ({_error})"
    ) from _error

from scope_tool.gateway._config import GatewayConfig, Policy, ToolPolicy, UpstreamConfig
from scope_tool.gateway._gateway import Gateway, load_gateway
from scope_tool.gateway._tools import ELICITATION_PROMPT_KIND, UpstreamTool, idempotency_key
from scope_tool.gateway._upstream import IDEMPOTENCY_META_KEY
from scope_tool.gateway.errors import (
    GatewayConfigError,
    GatewayError,
    UpstreamCallLostError,
    UpstreamError,
)

__all__ = [
    "ELICITATION_PROMPT_KIND",
    "IDEMPOTENCY_META_KEY",
    "Gateway",
    "GatewayConfig",
    "GatewayConfigError",
    "GatewayError",
    "Policy",
    "ToolPolicy",
    "UpstreamCallLostError",
    "UpstreamConfig",
    "UpstreamError",
    "UpstreamTool",
    "idempotency_key",
    "load_gateway",
]
