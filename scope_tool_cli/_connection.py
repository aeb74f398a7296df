"""Where the Temporal cluster is and how to reach it: flags, environment, one clear failure.

Every command that talks to Temporal takes the same options, each with an environment variable so
an operator sets them once (``SCOPE_TOOL_ADDRESS``, ``SCOPE_TOOL_NAMESPACE``,
``SCOPE_TOOL_TASK_QUEUE``, ``SCOPE_TOOL_TLS``, ``SCOPE_TOOL_TLS_CERT``, ``SCOPE_TOOL_TLS_KEY``,
``SCOPE_TOOL_TLS_CA``, ``SCOPE_TOOL_API_KEY``). Flags win over the environment.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.service import TLSConfig

from scope_tool_cli._errors import EXIT_FAILED, EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from workflows import ToolCalls

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "ConnectionOptions",
    "add_connection_arguments",
    "connect",
]

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK_QUEUE = "scope-tools"

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionOptions:
    """Everything needed to open a client; built once from flags and environment."""

    address: str
    namespace: str
    task_queue: str
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    api_key: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConnectionOptions:
        """Read the parsed flags (which already carry the environment defaults)."""
        cert = Path(args.tls_cert) if args.tls_cert else None
        key = Path(args.tls_key) if args.tls_key else None
        ca = Path(args.tls_ca) if args.tls_ca else None
        if (cert is None) != (key is None):
            raise CommandError(
                "--tls-cert and --tls-key go together (mutual TLS needs both)", exit_code=EXIT_USAGE
            )
        return cls(
            address=args.address,
            namespace=args.namespace,
            task_queue=args.task_queue,
            tls=bool(args.tls) or cert is not None or ca is not None,
            tls_cert=cert,
            tls_key=key,
            tls_ca=ca,
            api_key=args.api_key or None,
        )

    def tls_config(self) -> TLSConfig | bool:
        """``False`` for plain text, ``True`` for system roots, or a config with files read."""
        if not self.tls:
            return False
        if self.tls_cert is None and self.tls_ca is None:
            return True
        return TLSConfig(
            server_root_ca_cert=_read(self.tls_ca, "--tls-ca") if self.tls_ca else None,
            client_cert=_read(self.tls_cert, "--tls-cert") if self.tls_cert else None,
            client_private_key=_read(self.tls_key, "--tls-key") if self.tls_key else None,
        )


def _read(path: Path, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CommandError(
            f"cannot read {flag} file {str(path)!r}: {error.strerror}", exit_code=EXIT_USAGE
        ) from None


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value else default


def add_connection_arguments(parser: argparse.ArgumentParser, *, with_address: bool = True) -> None:
    """Add the shared connection flags (defaults from ``SCOPE_TOOL_*``) to ``parser``."""
    group = parser.add_argument_group("connection (flags override SCOPE_TOOL_* environment)")
    if with_address:
        group.add_argument(
            "--address",
            default=_env("SCOPE_TOOL_ADDRESS", DEFAULT_ADDRESS),
            help="Temporal frontend host:port (env SCOPE_TOOL_ADDRESS, default %(default)s)",
        )
    group.add_argument(
        "--namespace",
        default=_env("SCOPE_TOOL_NAMESPACE", DEFAULT_NAMESPACE),
        help="Temporal namespace (env SCOPE_TOOL_NAMESPACE, default %(default)s)",
    )
    group.add_argument(
        "--task-queue",
        default=_env("SCOPE_TOOL_TASK_QUEUE", DEFAULT_TASK_QUEUE),
        help="task queue the workers poll (env SCOPE_TOOL_TASK_QUEUE, default %(default)s)",
    )
    if not with_address:
        return
    group.add_argument(
        "--tls",
        action="store_true",
        default=(_env("SCOPE_TOOL_TLS", "") or "").lower() in _TRUE_WORDS,
        help="connect with TLS using the system roots (env SCOPE_TOOL_TLS=1)",
    )
    group.add_argument(
        "--tls-cert", default=_env("SCOPE_TOOL_TLS_CERT"), help="client certificate (PEM) for mTLS"
    )
    group.add_argument(
        "--tls-key", default=_env("SCOPE_TOOL_TLS_KEY"), help="client private key (PEM) for mTLS"
    )
    group.add_argument(
        "--tls-ca", default=_env("SCOPE_TOOL_TLS_CA"), help="server root CA (PEM), if not public"
    )
    group.add_argument(
        "--api-key",
        default=_env("SCOPE_TOOL_API_KEY"),
        help="API key, e.g. for Temporal Cloud (env SCOPE_TOOL_API_KEY; prefer the env var)",
    )


async def connect(options: ConnectionOptions) -> ToolCalls:
    """Open the facade, turning every way of not reaching the server into one clear line."""
    from workflows import ToolCalls
    from workflows.errors import EncryptionConfigError, TelemetryConfigError

    tls = options.tls_config()
    try:
        return await ToolCalls.connect(
            options.address,
            namespace=options.namespace,
            task_queue=options.task_queue,
            tls=tls if tls else None,
            api_key=options.api_key,
        )
    except (EncryptionConfigError, TelemetryConfigError) as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None
    except Exception as error:
        raise CommandError(
            f"cannot reach Temporal at {options.address} (is `scope-tool dev` running?): "
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
