"""``python -m scope_tool.workers --tools module:attribute``: run a tool-call worker until SIGTERM/SIGINT.

``--gateway gateway.json`` instead serves the tools of the upstream MCP servers a gateway config
names (``scope_tool.gateway``, the ``[mcp]`` extra; see docs/gateway.md).

``--tools`` may be repeated to serve several versions of a registry, newest first: new calls use
the newest version of each tool, and calls that started on an older contract finish on it.
The current directory is importable (``--tools my_tools:registry`` finds ``./my_tools.py``).

Every option also comes from the environment, read by ``scope_tool.config.settings.Settings`` exactly as
the CLI reads it (``SCOPE_TOOL_ADDRESS``, ``SCOPE_TOOL_NAMESPACE``, ``SCOPE_TOOL_TASK_QUEUE``; for
a secured cluster ``SCOPE_TOOL_TLS=1``, ``SCOPE_TOOL_TLS_CA``, ``SCOPE_TOOL_TLS_CERT``,
``SCOPE_TOOL_TLS_KEY`` (PEM files) and ``SCOPE_TOOL_API_KEY``).
Errors are one line on stderr starting ``scope-tool: error:`` (``scope-tool worker`` becomes this
process), with the command's exit codes: 2 for a bad command line or setting (a malformed
``--tools``), 1 for a refusal or failure (a module or attribute ``--tools`` names that is not
there, a server it cannot reach); a signal drains the worker and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scope_tool import Registry
from scope_tool.config.settings import DEFAULT_ADDRESS, DEFAULT_TASK_QUEUE, Settings, add_env_option
from scope_tool.wire.identity import identity_secret_from_environment
from scope_tool.workers._worker import build_worker, load_registry
from scope_tool.workers.telemetry import connect_options, shutdown_telemetry

if TYPE_CHECKING:
    from scope_tool.gateway import Gateway


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scope_tool.workers", description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--tools",
        action="append",
        help="module:attribute of a scope_tool.Registry (repeatable: versions, newest first)",
    )
    source.add_argument(
        "--gateway",
        metavar="CONFIG",
        help="a gateway config (mcpServers JSON): serve the tools of those MCP servers",
    )
    parser.add_argument("--address", help=f"default: $SCOPE_TOOL_ADDRESS or {DEFAULT_ADDRESS}")
    parser.add_argument("--namespace", help="default: $SCOPE_TOOL_NAMESPACE or default")
    parser.add_argument(
        "--task-queue", help=f"default: $SCOPE_TOOL_TASK_QUEUE or {DEFAULT_TASK_QUEUE}"
    )
    parser.add_argument(
        "--retry-safe",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool that may run again if its worker is lost mid-round (repeatable)",
    )
    add_env_option(
        parser,
        "--metrics",
        "SCOPE_TOOL_METRICS",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics",
    )
    return parser.parse_args(argv)


_NO_SECRET = (
    "scope-tool: warning: SCOPE_TOOL_IDENTITY_SECRET is not set: this worker ({identity}) cannot"
    " verify identity tokens, so an answer to a call started with --require-verified"
    " (require_verified=True) is refused not_verified whenever this worker checks it; give"
    " every worker on task queue {queue!r} the same secret"
)
"""Said once at start: the answer check runs on whichever worker holds the call, so one worker
without the secret breaks verified answers for every call it happens to check."""


class _RegistryMissing(Exception):
    """A ``--tools`` that is well formed but names nothing loadable (exit 1, not 2)."""


def _load(specs: Sequence[str]) -> list[Registry]:
    registries = []
    for spec in specs:
        module, separator, attribute = spec.partition(":")
        # load_registry puts the current folder first: `--tools my_tools:registry` finds ./my_tools.py
        try:
            registries.append(load_registry(spec))
        except ValueError as error:
            if not separator or not module or not attribute:
                raise
            raise _RegistryMissing(str(error)) from error
    return registries


async def _serve(args: argparse.Namespace) -> None:
    settings = Settings.from_env(
        address=args.address, namespace=args.namespace, task_queue=args.task_queue
    )
    identity_secret_from_environment()  # a malformed SCOPE_TOOL_IDENTITY_SECRET fails here, early
    gateway = _start_gateway(args.gateway) if args.gateway else None
    try:
        registries = [gateway.registry] if gateway is not None else _load(args.tools)
        await _serve_registries(args, settings, registries)
    finally:
        if gateway is not None:
            gateway.close()


def _start_gateway(path: str) -> Gateway:
    """Start the upstream MCP servers a gateway config names (the ``[mcp]`` extra)."""
    try:
        from scope_tool.gateway import GatewayConfigError, UpstreamError, load_gateway
    except ImportError as error:
        raise _RegistryMissing(str(error)) from None
    try:
        gateway = load_gateway(path)
    except GatewayConfigError as error:
        raise ValueError(str(error)) from None
    except UpstreamError as error:
        raise _RegistryMissing(str(error)) from None
    return gateway


async def _serve_registries(
    args: argparse.Namespace, settings: Settings, registries: list[Registry]
) -> None:
    # Tracing and metrics (scope_tool.workers.telemetry): interceptors, and a Prometheus runtime on --metrics.
    client = await settings.connect(**connect_options(metrics=args.metrics))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for each in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(each, stop.set)
    names = sorted({d.name for registry in registries for d in registry.definitions()})

    worker = build_worker(
        client,
        registries,
        task_queue=settings.task_queue,
        retry_safe=args.retry_safe,
        notify_secret=settings.notify_secret,
        notify_allowed=settings.notify_allowed,
    )
    async with worker:  # polling from here; leaving drains the work in flight
        print(
            f"worker ready: task queue {settings.task_queue!r} on {settings.address}"
            f" ({len(names)} tools: {', '.join(names)}; {len(worker.queues)} queues)",
            file=sys.stderr,
            flush=True,
        )
        if identity_secret_from_environment() is None:
            print(
                _NO_SECRET.format(identity=client.identity, queue=settings.task_queue),
                file=sys.stderr,
                flush=True,
            )
        await stop.wait()
    shutdown_telemetry()
    print("worker stopped", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = _arguments(argv)
    try:
        asyncio.run(_serve(args))
    except ValueError as exc:
        print(f"scope-tool: error: {exc}", file=sys.stderr)
        return 2
    except (_RegistryMissing, RuntimeError) as exc:
        print(f"scope-tool: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())
