"""How the MCP server behaves: one frozen value the CLI fills from its flags."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["McpOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class McpOptions:
    """How the server behaves; every field has the CLI's default.

    Attributes:
        wait_seconds: how long one request follows a call before answering "still running".
        inbox_url: base URL of the web inbox, for URL-mode elicitation (``None``: no URL mode).
        answered_by: the identity recorded for answers given through MCP without credentials
            (with them, the answer is recorded as the token's principal).
        state_keys: keys sealing ``requestState`` (first seals, all unseal); shared by every
            ``scope-tool mcp`` process that may receive a repeated call.
        state_ttl_seconds: how long a sealed ``requestState`` stays valid.
        reviewer_role: a principal holding this role may follow and answer every principal's
            calls through MCP (``None``: only each call's own principal).
    """

    wait_seconds: float = 8.0
    inbox_url: str | None = None
    answered_by: str = "mcp-client"
    state_keys: tuple[bytes, ...]
    state_ttl_seconds: float = 7 * 24 * 3600.0
    reviewer_role: str | None = None
