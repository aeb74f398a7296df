"""Errors of the MCP gateway.

They derive from the protocol's one base, so ``except ToolError`` catches everything scope-tool
raises for a reason of its own::

    scope_tool.errors.ToolError
    └── GatewayError
        ├── GatewayConfigError     the config file is malformed (nothing started)
        ├── UpstreamError          an upstream server cannot be started, reached or listed,
        │                          or lists a tool the gateway cannot serve (named)
        └── UpstreamCallLostError  an upstream call's outcome is unknown; carries its key
"""

from __future__ import annotations

from scope_tool.errors import ToolError

__all__ = ["GatewayConfigError", "GatewayError", "UpstreamCallLostError", "UpstreamError"]


class GatewayError(ToolError):
    """Base of the errors raised by :mod:`scope_tool.gateway`."""


class GatewayConfigError(GatewayError, ValueError):
    """The gateway config is malformed; the message names the file, the member and the value."""


class UpstreamError(GatewayError):
    """An upstream server could not be started, reached or listed, or one of its tools cannot
    be served (its schema does not compile, its name clashes); the message names which."""


class UpstreamCallLostError(GatewayError):
    """An upstream call was sent and its outcome is unknown: it is never sent again blindly.

    Attributes:
        idempotency_key: the key the call carried in ``_meta``; ask the upstream about it.
    """

    def __init__(self, message: str, *, idempotency_key: str) -> None:
        super().__init__(f"outcome unknown: {message}; idempotency key {idempotency_key}")
        self.idempotency_key = idempotency_key
