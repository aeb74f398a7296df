"""The gateway: upstream servers' tools as one :class:`~scope_tool.Registry`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Mapping
from typing import Final

from scope_tool._approval import require_approval
from scope_tool._contract import bind
from scope_tool._registry import Registry
from scope_tool._tool import Tool
from scope_tool.errors import InvalidToolError
from scope_tool.gateway._config import GatewayConfig, Policy
from scope_tool.gateway._tools import UpstreamTool
from scope_tool.gateway._upstream import Hub, Upstream
from scope_tool.gateway.errors import UpstreamError

__all__ = ["Gateway", "load_gateway"]

_START_SECONDS: Final = 120.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Gateway:
    """Started upstream servers and the registry of their tools.

    Use :func:`load_gateway` (or :meth:`start`); :attr:`registry` is what a worker serves and
    what ``scope-tool mcp`` lists. The upstream connections live as long as the gateway
    (:meth:`close`); the worker keeps it for its lifetime.

    Attributes:
        config: what was started.
        registry: every served tool, gated ones wrapped in :func:`~scope_tool.require_approval`.
        policies: the policy each served tool got, by served name.
    """

    def __init__(self, config: GatewayConfig, hub: Hub, upstreams: Mapping[str, Upstream]) -> None:
        self.config = config
        self._hub = hub
        self._upstreams = dict(upstreams)
        tools: list[Tool] = []
        policies: dict[str, Policy] = {}
        served: dict[str, str] = {}
        problems: list[str] = []
        for server in config.servers:
            upstream = self._upstreams[server.name]
            for listed in sorted(upstream.tools.values(), key=lambda tool: tool.name):
                annotations = listed.annotations
                read_only = bool(annotations is not None and annotations.read_only_hint)
                policy = server.policy.decide(listed.name, read_only_hint=read_only)
                if policy is Policy.HIDE:
                    continue
                name = _served_name(server.prefix, listed.name)
                if name in served:
                    problems.append(
                        f"tool {listed.name!r} of {server.name!r} and {served[name]} are both"
                        f" served as {name!r}"
                    )
                    continue
                served[name] = f"tool {listed.name!r} of {server.name!r}"
                try:
                    tool: Tool = UpstreamTool(upstream, listed, name=name)
                    bind(tool)  # compiles the input schema now: at start-up, not at call time
                    if policy is Policy.APPROVE:
                        tool = require_approval(
                            tool,
                            allow_edit=server.policy.allow_edit,
                            policy=server.policy.approval_policy(listed.name),
                        )
                except InvalidToolError as exc:
                    problems.append(
                        f"tool {listed.name!r} of upstream server {server.name!r} cannot be"
                        f" served: {exc}"
                    )
                    continue
                except (UpstreamError, ValueError) as exc:
                    problems.append(str(exc))
                    continue
                tools.append(tool)
                policies[name] = policy
        if problems:
            self.close()
            raise UpstreamError(
                f"gateway {config.source}: {len(problems)} upstream tool(s) cannot be served: "
                + "; ".join(problems)
            )
        self.registry = Registry(*tools)
        self.policies = policies

    @classmethod
    def start(cls, config: GatewayConfig, *, timeout: float = _START_SECONDS) -> Gateway:
        """Start every upstream server, list its tools, and build the registry.

        Blocks the calling thread (the connections live on the gateway's own thread).

        Raises:
            UpstreamError: a server does not start or list its tools within its ``timeout``,
                or a tool cannot be served (every such tool named, with its server).
        """
        hub = Hub()
        upstreams = {server.name: Upstream(server, hub) for server in config.servers}

        async def list_all() -> None:
            # Side by side: a gateway of three servers starts in the time of its slowest.
            await asyncio.gather(*(upstream.list_tools() for upstream in upstreams.values()))

        try:
            hub.run_sync(list_all(), timeout)
        except BaseException:
            _close(hub, upstreams.values())
            raise
        return cls(config, hub, upstreams)

    def close(self) -> None:
        """Close every upstream connection (stdio servers exit) and stop the gateway's thread."""
        _close(self._hub, self._upstreams.values())

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Gateway({', '.join(server.name for server in self.config.servers)})"


def load_gateway(path: str | os.PathLike[str]) -> Gateway:
    """Read a gateway config file and start it (see :class:`Gateway` and ``docs/gateway.md``).

    Raises:
        GatewayConfigError: the file is malformed (nothing started).
        UpstreamError: as :meth:`Gateway.start`.
    """
    return Gateway.start(GatewayConfig.load(path))


def _served_name(prefix: str, upstream_name: str) -> str:
    return (prefix + _UNSAFE.sub("_", upstream_name))[:64]


def _close(hub: Hub, upstreams: object) -> None:
    async def close_all() -> None:
        # Calls still in flight (a question unanswered) end here: their sessions close.
        tasks = [call.task for call in hub.pending.values() if call.task is not None]
        for call in list(hub.pending.values()):
            await call.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for upstream in list(upstreams):  # type: ignore[call-overload]
            await upstream.close()

    with contextlib.suppress(Exception):  # best effort: the hub's thread is a daemon
        hub.run_sync(close_all(), 30)
    hub.stop()
