"""Where the Temporal cluster is and how to reach it: flags over ``scope_tool.config.settings``.

Every command that talks to Temporal takes the same flags; each falls back to its
``SCOPE_TOOL_*`` variable and then to the default, read by :class:`scope_tool.config.settings.Settings`
(the one settings reader, shared with ``python -m scope_tool.workers`` and ``dev``). Flags win over the
environment. A wrong setting is one line and exit code 2; an unreachable server one line and 1.
"""

from __future__ import annotations

import argparse

from scope_tool.client import ToolCalls
from scope_tool.config.settings import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    Settings,
)
from scope_tool.serving._errors import EXIT_FAILED, CommandError
from scope_tool.wire.errors import EncryptionConfigError, SettingsError, TelemetryConfigError

__all__ = ["add_connection_arguments", "connect", "connection_flags", "settings_from_args"]


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings of this command: environment and defaults, overridden by its flags.

    TLS files are read here, so a missing one is a usage error before anything connects.
    """
    try:
        settings = Settings.from_env(
            address=getattr(args, "address", None),
            namespace=args.namespace,
            task_queue=args.task_queue,
            tls=True if getattr(args, "tls", False) else None,
            tls_cert=getattr(args, "tls_cert", None),
            tls_key=getattr(args, "tls_key", None),
            tls_ca=getattr(args, "tls_ca", None),
            api_key=getattr(args, "api_key", None),
        )
        settings.tls_config()
    except SettingsError as error:
        raise CommandError.usage(error) from None
    return settings


def connection_flags(args: argparse.Namespace) -> str:
    """The connection flags given on this command line, to append to a command it prints.

    A suggested ``scope-tool answer ...`` pasted into the same shell sees the same
    ``SCOPE_TOOL_*`` environment, but not this command's flags: without them it would talk to
    another server.
    """
    parts = []
    for flag in ("address", "namespace"):
        value = getattr(args, flag, None)
        if value:
            parts.append(f" --{flag} {value}")
    return "".join(parts)


def add_connection_arguments(parser: argparse.ArgumentParser, *, with_address: bool = True) -> None:
    """Add the shared connection flags to ``parser`` (unset flags defer to the environment)."""
    group = parser.add_argument_group("connection (flags override SCOPE_TOOL_* environment)")
    if with_address:
        group.add_argument(
            "--address",
            help=f"Temporal frontend host:port (env SCOPE_TOOL_ADDRESS, default {DEFAULT_ADDRESS})",
        )
    group.add_argument(
        "--namespace",
        help=f"Temporal namespace (env SCOPE_TOOL_NAMESPACE, default {DEFAULT_NAMESPACE})",
    )
    group.add_argument(
        "--task-queue",
        help="task queue the workers poll"
        f" (env SCOPE_TOOL_TASK_QUEUE, default {DEFAULT_TASK_QUEUE})",
    )
    if not with_address:
        return
    group.add_argument(
        "--tls",
        action="store_true",
        default=False,
        help="connect with TLS using the system roots (env SCOPE_TOOL_TLS=1)",
    )
    group.add_argument("--tls-cert", help="client certificate (PEM) for mTLS")
    group.add_argument("--tls-key", help="client private key (PEM) for mTLS")
    group.add_argument("--tls-ca", help="server root CA (PEM), if not public")
    group.add_argument(
        "--api-key",
        help="API key, e.g. for Temporal Cloud (env SCOPE_TOOL_API_KEY; prefer the env var)",
    )


async def connect(settings: Settings) -> ToolCalls:
    """Open the facade, turning every way of not reaching the server into one clear line."""
    try:
        return await ToolCalls.from_settings(settings)
    except (SettingsError, EncryptionConfigError, TelemetryConfigError) as error:
        raise CommandError.usage(error) from None
    except Exception as error:
        raise CommandError(
            f"cannot reach Temporal at {settings.address} (is `scope-tool dev` running?): "
            f"{_first_line(error)}",
            exit_code=EXIT_FAILED,
        ) from None


def _first_line(error: BaseException) -> str:
    """The gist of a connection failure (the SDK's text nests transport errors)."""
    text = str(error).strip() or type(error).__name__
    if "Connection refused" in text or "ConnectionRefused" in text:
        return "connection refused"
    if "dns error" in text.lower() or "failed to lookup address" in text.lower():
        return "unknown host"
    first = text.splitlines()[0]
    return first if len(first) <= 200 else first[:199] + "…"
