"""``scope-tool mcp``: flags, the sealing key, and serving over stdio or streamable HTTP.

Over stdio, stdout is the protocol channel: everything this process says goes to stderr. The
key that seals ``requestState`` is read from ``SCOPE_TOOL_MCP_STATE_KEY`` or a key file (made
once, mode 0600), so a restarted server, or another replica given the same key, accepts the
state an earlier process sealed.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

from scope_tool import Registry
from scope_tool.client import ToolCalls
from scope_tool.config.settings import add_env_option
from scope_tool.mcp._engine import connect_calls
from scope_tool.mcp._server import McpOptions, build_server
from scope_tool.mcp.errors import McpSettingsError
from scope_tool.serving._web_serving import AsgiServer, serve_until_signalled

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

_SERVER = AsgiServer(name="scope-tool mcp", lifespan="on", graceful_seconds=2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``scope-tool mcp`` flags (the connection flags are added by the caller)."""
    parser.add_argument("--tools", required=True, help="the Registry to serve, as module:attribute")
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
    try:
        registry = load_registry(args.tools)
    except ValueError as error:
        raise McpSettingsError(str(error)) from None
    calls = await connect_calls(args)
    if endpoint is None:
        from mcp.server.stdio import stdio_server

        server = build_server(calls, registry, options)
        _say(f"scope-tool mcp: serving {args.tools} over stdio (task queue {calls.task_queue})")
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return 0
    host, port = endpoint

    def listening(bound_host: str, bound_port: int) -> None:
        _say(f"scope-tool mcp: listening on http://{bound_host}:{bound_port}/mcp (Ctrl-C stops it)")

    try:
        stopped = await serve_until_signalled(
            serve_http(calls, registry, options, host=host, port=port, on_listening=listening)
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
    on_listening: Callable[[str, int], None] | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until this coroutine is cancelled.

    The caller owns SIGINT / SIGTERM (``scope-tool dev`` runs this beside its other children).

    Raises:
        OSError: the address cannot be bound (the message names it), before anything serves.
    """
    app = build_server(calls, registry, options).streamable_http_app(host=host)
    await _SERVER.serve(app, host=host, port=port, on_listening=on_listening)


def read_state_key(path: Path) -> bytes:
    """The sealing key: ``SCOPE_TOOL_MCP_STATE_KEY``, else ``path`` (made, mode 0600, if missing)."""
    return _state_key(str(path))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
