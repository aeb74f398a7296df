"""``scope-tool mcp``: flags, the sealing key, and serving over stdio or streamable HTTP.

Over stdio, stdout is the protocol channel: everything this process says goes to stderr. The
key that seals ``requestState`` is read from ``SCOPE_TOOL_MCP_STATE_KEY`` or a key file (made
once, mode 0600), so a restarted server, or another replica given the same key, accepts the
state an earlier process sealed. Over HTTP, who may connect is :mod:`._access`'s decision:
static team tokens (``--auth-tokens`` / ``SCOPE_TOOL_MCP_TOKENS``) or OAuth 2.1 access tokens
(``--oauth-issuer``), required for any address but loopback; Host and Origin checked always.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from scope_tool import Registry
from scope_tool.client import ToolCalls
from scope_tool.config.settings import add_env_option
from scope_tool.mcp._access import (
    HttpAccess,
    auth_settings,
    check_bind,
    is_loopback,
    resource_url,
    transport_security,
)
from scope_tool.mcp._engine import connect_calls
from scope_tool.mcp._server import McpOptions, build_server
from scope_tool.mcp._tokens import JwtVerifier, StaticTokens
from scope_tool.mcp.errors import McpSettingsError
from scope_tool.serving._web_serving import AsgiServer, serve_until_signalled

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = [
    "STATE_KEY_ENV",
    "add_arguments",
    "options_from_args",
    "read_state_key",
    "run",
    "serve_http",
    "split_host_port",
]

STATE_KEY_ENV = "SCOPE_TOOL_MCP_STATE_KEY"
TOKENS_ENV = "SCOPE_TOOL_MCP_TOKENS"

_SERVER = AsgiServer(name="scope-tool mcp", lifespan="on", graceful_seconds=2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``scope-tool mcp`` flags (the connection flags are added by the caller)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tools", help="the Registry to serve, as module:attribute")
    source.add_argument(
        "--gateway",
        metavar="CONFIG",
        help="serve the tools of the MCP servers a gateway config names (docs/gateway.md);"
        " the workers need the same config",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    add_env_option(
        parser,
        "--inbox-url",
        "SCOPE_TOOL_INBOX_URL",
        help="base URL of the web inbox, for URL-mode elicitation",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=8.0,
        metavar="SECONDS",
        help="how long one request follows a call before saying it still runs (%(default)s)",
    )
    parser.add_argument(
        "--answered-by",
        default="mcp-client",
        help="identity recorded for answers given through MCP (%(default)s)",
    )
    http = parser.add_argument_group("who may connect over --http (see docs/mcp.md, Trust model)")
    http.add_argument(
        "--auth-tokens",
        metavar="FILE",
        help=(
            "static bearer tokens for one team: lines of NAME TOKEN [ROLE,ROLE]"
            f" (env {TOKENS_ENV} holds the lines themselves)"
        ),
    )
    http.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help="accept OAuth 2.1 access tokens (JWT) of this issuer, checked against its JWKS",
    )
    http.add_argument(
        "--oauth-jwks-url",
        metavar="URL",
        help="the issuer's JWKS (default: its jwks_uri, from its metadata)",
    )
    http.add_argument(
        "--resource-url",
        metavar="URL",
        help=(
            "this server's public URL: the audience its OAuth tokens must name"
            " (default http://HOST:PORT/mcp; required off loopback)"
        ),
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a Host header to accept besides loopback and the bound address (repeatable)",
    )
    http.add_argument(
        "--reviewer-role",
        metavar="ROLE",
        help="principals with this role may follow and answer everyone's calls",
    )
    parser.add_argument(
        "--state-key-file",
        default=None,
        help=(
            f"file holding the key that seals requestState (env {STATE_KEY_ENV} wins;"
            " default .scope-tool/mcp-state.key, created when missing)"
        ),
    )


def split_host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as a pair; a clear error for anything else."""
    host, separator, port = text.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise McpSettingsError(f"--http must be HOST:PORT (e.g. 127.0.0.1:8236), got {text!r}")
    return host.strip("[]"), int(port)


def options_from_args(args: argparse.Namespace) -> McpOptions:
    """Check the flags and read the sealing key; raises :class:`McpSettingsError`."""
    if not args.wait > 0:
        raise McpSettingsError(f"--wait must be a positive number of seconds, got {args.wait}")
    if args.inbox_url and not str(args.inbox_url).startswith(("http://", "https://")):
        raise McpSettingsError(f"--inbox-url must be an http(s) URL, got {args.inbox_url!r}")
    if not args.answered_by:
        raise McpSettingsError("--answered-by must not be empty")
    return McpOptions(
        wait_seconds=float(args.wait),
        inbox_url=args.inbox_url or None,
        answered_by=args.answered_by,
        state_keys=(_state_key(args.state_key_file),),
        reviewer_role=getattr(args, "reviewer_role", None) or None,
    )


def access_from_args(args: argparse.Namespace, *, host: str, port: int) -> HttpAccess:
    """Who may connect over HTTP, from the flags; raises :class:`McpSettingsError`.

    Refuses a non-loopback address without credentials, both credential kinds at once, and
    OAuth off loopback without ``--resource-url`` (the audience must be the URL clients use).
    """
    tokens_file = getattr(args, "auth_tokens", None)
    tokens_text = os.environ.get(TOKENS_ENV, "")
    issuer = getattr(args, "oauth_issuer", None)
    public_url = getattr(args, "resource_url", None)
    if public_url is not None and not public_url.startswith(("http://", "https://")):
        raise McpSettingsError(f"--resource-url must be an http(s) URL, got {public_url!r}")
    if issuer and (tokens_file or tokens_text):
        raise McpSettingsError(
            f"choose one credential: --oauth-issuer or --auth-tokens / {TOKENS_ENV}, not both"
        )
    access = HttpAccess(
        resource_url=public_url, allowed_hosts=tuple(getattr(args, "allowed_host", ()) or ())
    )
    if issuer:
        if public_url is None and not is_loopback(host):
            raise McpSettingsError(
                "--oauth-issuer off loopback needs --resource-url: the URL clients reach this"
                " server by, which its tokens must name as their audience"
            )
        verifier: JwtVerifier | StaticTokens = JwtVerifier(
            issuer=issuer,
            audience=resource_url(host, port, access),
            jwks_url=getattr(args, "oauth_jwks_url", None),
        )
    elif tokens_file:
        verifier = StaticTokens.from_file(Path(tokens_file))
    elif tokens_text.strip():
        verifier = StaticTokens.parse(tokens_text, source=TOKENS_ENV)
    else:
        check_bind(host, access)
        return access
    return HttpAccess(
        verifier=verifier, resource_url=public_url, allowed_hosts=access.allowed_hosts
    )


def _state_key(path_text: str | None) -> bytes:
    from_env = os.environ.get(STATE_KEY_ENV)
    if from_env:
        if len(from_env.encode()) < 32:
            raise McpSettingsError(f"{STATE_KEY_ENV} must hold at least 32 bytes of secret")
        return from_env.encode()
    path = Path(path_text or os.path.join(".scope-tool", "mcp-state.key"))
    try:
        key = path.read_bytes().strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_hex(32).encode()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(key)
        return key
    except OSError as error:
        raise McpSettingsError(f"cannot read --state-key-file {str(path)!r}: {error}") from None
    if len(key) < 32:
        raise McpSettingsError(f"--state-key-file {str(path)!r} holds fewer than 32 bytes")
    return key


async def run(args: argparse.Namespace) -> int:
    """Serve until stdin closes (stdio) or Ctrl-C / SIGTERM (HTTP); returns the exit code."""
    from scope_tool.workers import load_registry

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    endpoint = split_host_port(args.http) if args.http else None
    options = options_from_args(args)
    access = access_from_args(args, host=endpoint[0], port=endpoint[1]) if endpoint else None
    if endpoint is None and (
        getattr(args, "auth_tokens", None) or getattr(args, "oauth_issuer", None)
    ):
        raise McpSettingsError(
            "--auth-tokens and --oauth-issuer apply to --http; stdio is the launching process's own"
        )
    gateway = getattr(args, "gateway", None)
    try:
        registry = gateway_registry(gateway) if gateway else load_registry(args.tools)
    except ValueError as error:
        raise McpSettingsError(str(error)) from None
    calls = await connect_calls(args)
    if endpoint is None:
        from mcp.server.stdio import stdio_server

        server = build_server(calls, registry, options)
        served = f"gateway {gateway}" if gateway else args.tools
        _say(f"scope-tool mcp: serving {served} over stdio (task queue {calls.task_queue})")
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return 0
    host, port = endpoint
    assert access is not None

    def listening(bound_host: str, bound_port: int) -> None:
        _say(
            f"scope-tool mcp: listening on http://{bound_host}:{bound_port}/mcp"
            f" ({access.mode}; Ctrl-C stops it)"
        )

    try:
        stopped = await serve_until_signalled(
            serve_http(
                calls,
                registry,
                options,
                host=host,
                port=port,
                access=access,
                on_listening=listening,
            )
        )
    except OSError as error:
        raise McpSettingsError(str(error.strerror or error)) from None
    if stopped:
        _say("scope-tool mcp: stopped")
    return 0


async def serve_http(
    calls: ToolCalls,
    registry: Registry,
    options: McpOptions,
    *,
    host: str,
    port: int,
    access: HttpAccess | None = None,
    on_listening: Callable[[str, int], None] | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until this coroutine is cancelled.

    The caller owns SIGINT / SIGTERM (``scope-tool dev`` runs this beside its other children).
    ``access`` says who may connect (default: nobody but loopback, without credentials).

    Raises:
        McpSettingsError: ``host`` is not loopback and ``access`` has no credential check.
        OSError: the address cannot be bound (the message names it), before anything serves.
    """
    app = http_app(calls, registry, options, host=host, port=port, access=access or HttpAccess())
    await _SERVER.serve(app, host=host, port=port, on_listening=on_listening)


def http_app(
    calls: ToolCalls,
    registry: Registry,
    options: McpOptions,
    *,
    host: str,
    port: int,
    access: HttpAccess,
) -> Starlette:
    """The ASGI app: Host/Origin checked, bearer tokens required when ``access`` has a verifier.

    With OAuth, the SDK serves the RFC 9728 metadata at
    ``/.well-known/oauth-protected-resource/mcp`` (and this adds the same document at the bare
    ``/.well-known/oauth-protected-resource``), and a request without a valid token gets 401
    with ``WWW-Authenticate: Bearer ..., resource_metadata="..."``.
    """
    from mcp.server.auth.routes import create_protected_resource_routes
    from starlette.routing import Route

    check_bind(host, access)
    settings = auth_settings(host, port, access)
    extra: list[Route] = []
    if settings is not None and settings.resource_server_url is not None:
        for route in create_protected_resource_routes(
            resource_url=settings.resource_server_url,
            authorization_servers=[settings.issuer_url],
        ):
            extra.append(
                Route("/.well-known/oauth-protected-resource", route.endpoint, methods=["GET"])
            )
    return build_server(calls, registry, options).streamable_http_app(
        host=host,
        transport_security=transport_security(host, port, access),
        auth=settings,
        token_verifier=access.verifier,
        custom_starlette_routes=extra,
    )


def read_state_key(path: Path) -> bytes:
    """The sealing key: ``SCOPE_TOOL_MCP_STATE_KEY``, else ``path`` (made, mode 0600, if missing)."""
    return _state_key(str(path))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def gateway_registry(path: str) -> Registry:
    """The registry a gateway config serves, for listing: its upstreams are closed again.

    The MCP server only lists the tools and starts durable calls; the workers (started with the
    same ``--gateway``) hold the upstream connections and run the calls.

    Raises:
        ValueError: the config is malformed or an upstream cannot be listed (one line).
    """
    from scope_tool.gateway import GatewayError, load_gateway

    try:
        gateway = load_gateway(path)
    except GatewayError as error:
        raise ValueError(str(error)) from None
    gateway.close()
    return gateway.registry
