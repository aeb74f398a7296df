"""Who may reach ``scope-tool mcp`` over HTTP, as whom, and whose calls each identity may touch.

The trust model, in one place (docs/mcp.md "Trust model" says the same for people):

* **The port.** HTTP bound to a loopback address may run without credentials (whoever can reach
  loopback is the machine's user). Bound to anything else, it refuses to start unless requests
  carry a credential: static team tokens or OAuth 2.1 access tokens.
* **Host and Origin** are checked in every mode (the SDK only does so by itself for the literal
  hosts ``127.0.0.1``, ``localhost`` and ``::1``): loopback names, the host of the resource URL,
  the bound address (unless a wildcard) and each ``--allowed-host``; anything else is 421/403.
  That stops a web page that DNS-rebinds its name to this port.
* **Calls.** Each call belongs to the :class:`~scope_tool.Principal` that started it (``None``
  without credentials). Only that principal, or one holding the configured reviewer role, may
  follow it, read its question or answer it through MCP; to anyone else the call does not exist
  (the same reply as an unknown id).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings

from scope_tool import Principal
from scope_tool.mcp._tokens import JwtVerifier, principal_of_token
from scope_tool.mcp.errors import McpSettingsError

__all__ = [
    "HttpAccess",
    "auth_settings",
    "check_bind",
    "is_loopback",
    "may_follow",
    "principal_of",
    "transport_security",
]

_LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_NO_ISSUER = "http://127.0.0.1/"
"""AuthSettings needs an issuer; static tokens have none and serve no metadata."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpAccess:
    """How HTTP requests are let in.

    Attributes:
        verifier: checks bearer tokens (:class:`~._tokens.StaticTokens` or
            :class:`~._tokens.JwtVerifier`); ``None`` lets every request in (loopback only).
        resource_url: this server's public URL (OAuth: the audience tokens must name and the
            ``resource`` of the protected-resource metadata); ``None``: ``http://HOST:PORT/mcp``.
        allowed_hosts: extra ``Host`` values to accept (``name`` or ``name:port``).
    """

    verifier: TokenVerifier | None = None
    resource_url: str | None = None
    allowed_hosts: tuple[str, ...] = field(default=())

    @property
    def mode(self) -> str:
        """``"oauth"``, ``"static tokens"`` or ``"no credentials"`` (for the startup line)."""
        if isinstance(self.verifier, JwtVerifier):
            return f"OAuth (issuer {self.verifier.issuer})"
        return "static tokens" if self.verifier is not None else "no credentials"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and every loopback IP (``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, access: HttpAccess) -> None:
    """Refuse to serve a non-loopback address without credentials.

    Raises:
        McpSettingsError: ``host`` is not loopback and ``access`` has no verifier.
    """
    if access.verifier is None and not is_loopback(host):
        raise McpSettingsError(
            f"--http {host} is not a loopback address, and without credentials anyone who"
            " reaches it could run and approve every tool: pass --auth-tokens FILE (or"
            " SCOPE_TOOL_MCP_TOKENS) or --oauth-issuer URL, or bind 127.0.0.1"
        )


def transport_security(host: str, port: int, access: HttpAccess) -> TransportSecuritySettings:
    """Host/Origin checking on, whatever the bound address (see the module docstring)."""
    hosts = list(_LOOPBACK_HOSTS)
    if host not in _WILDCARDS:
        name = f"[{host}]" if ":" in host else host
        hosts += [name, f"{name}:{port}"]
    if access.resource_url:
        netloc = urlsplit(access.resource_url).netloc.rpartition("@")[2]
        if netloc:
            hosts.append(netloc)
    hosts += list(access.allowed_hosts)
    origins = [f"{scheme}://{each}" for each in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(set(hosts)),
        allowed_origins=sorted(set(origins)),
    )


def resource_url(host: str, port: int, access: HttpAccess) -> str:
    """This server's URL as clients name it (the audience of its OAuth tokens)."""
    if access.resource_url:
        return access.resource_url
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}/mcp"


def auth_settings(host: str, port: int, access: HttpAccess) -> AuthSettings | None:
    """The SDK's settings: bearer checks, and RFC 9728 metadata when an issuer is known."""
    verifier = access.verifier
    if verifier is None:
        return None
    if isinstance(verifier, JwtVerifier):
        return AuthSettings(
            issuer_url=verifier.issuer,
            resource_server_url=verifier.audience,
            validate_token_resource=False,  # JwtVerifier checks ``aud`` itself
        )
    return AuthSettings(
        issuer_url=_NO_ISSUER,
        resource_server_url=None,
        validate_token_resource=False,
    )


def principal_of(ctx: ServerRequestContext[Any]) -> Principal | None:
    """The principal whose token this request carried, or ``None`` without credentials."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    principal = principal_of_token(user.access_token)
    if principal is None:  # the verifiers refuse such tokens; never fall back to "nobody"
        raise PermissionError("the token names no usable principal")
    return principal


def bound_principal(ctx: ServerRequestContext[Any]) -> str | None:
    """``requestState`` binding: the requester's principal as its canonical JSON."""
    principal = principal_of(ctx)
    return principal.to_json().decode("utf-8") if principal is not None else None


def may_follow(
    requester: Principal | None, owner: Principal | None, *, reviewer_role: str | None
) -> bool:
    """Whether ``requester`` may see, follow and answer a call ``owner`` started.

    The owner may; so may a holder of ``reviewer_role`` (when one is configured). A call
    started without credentials belongs to every request without credentials (the loopback
    user), and to nobody with one but reviewers.
    """
    if requester is not None and reviewer_role and requester.has_role(reviewer_role):
        return True
    if requester is None or owner is None:
        return requester is None and owner is None
    return (requester.user, requester.tenant) == (owner.user, owner.tenant)
