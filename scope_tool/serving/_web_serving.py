"""Serving an ASGI app with uvicorn until cancelled, for the front ends the CLI starts.

The inbox (``scope_tool.inbox``) and the MCP server (``scope_tool.mcp``) serve the same way:
bind the socket here, so a port in use is an ``OSError`` naming the address (uvicorn alone
would ``sys.exit`` from inside the event loop); leave SIGINT and SIGTERM to the caller, so
``scope-tool dev`` can run several servers beside each other; stop when the task is cancelled,
after closing the socket and finishing requests in flight.

Only those optional packages import this module (and ``scope-tool inbox``, lazily, once it
found the inbox installed), and both bring uvicorn: the rest of the CLI, the core packages and a
worker never load it, so they install without a web stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any, Literal

import uvicorn

__all__ = ["AsgiServer", "serve_until_signalled"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AsgiServer:
    """How one front end is served: the settings that differ between the inbox and MCP.

    Attributes:
        name: Who cannot listen, in the bind error ("the inbox", "scope-tool mcp").
        lifespan: Whether the app has startup and shutdown handlers to run.
        graceful_seconds: How long requests in flight may take to finish once cancelled.
    """

    name: str
    lifespan: Literal["on", "off"]
    graceful_seconds: int

    async def serve(
        self,
        app: Any,
        *,
        host: str,
        port: int,
        on_listening: Callable[[str, int], None] | None = None,
    ) -> None:
        """Serve ``app`` at ``host:port`` until this coroutine is cancelled.

        ``port`` ``0`` picks a free one; ``on_listening`` is called with the bound host and port
        once connections are accepted. An IPv6 ``host`` may be given in brackets.

        Raises:
            OSError: The address cannot be bound (the message names it), before anything serves.
        """
        listener = _bind(host, port, server_name=self.name)
        config = uvicorn.Config(
            app,
            lifespan=self.lifespan,
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=self.graceful_seconds,
        )
        server = _CallerOwnsSignals(config)
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        try:
            while not server.started:
                if serving.done():
                    await serving
                    return
                await asyncio.sleep(0.01)
            if on_listening is not None:
                bound_host, bound_port = listener.getsockname()[:2]
                on_listening(str(bound_host), int(bound_port))
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await serving
            raise
        finally:
            listener.close()


async def serve_until_signalled(serving: Coroutine[Any, Any, None]) -> bool:
    """Run ``serving`` until it ends or Ctrl-C / SIGTERM cancels it.

    Returns:
        True when a signal (or a cancellation of the caller) stopped it, False when it ended on
        its own. Its errors propagate.
    """
    task = asyncio.create_task(serving)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


def _bind(host: str, port: int, *, server_name: str) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host.strip("[]"), port), family=family, reuse_port=False)
    except OSError as error:
        raise OSError(
            error.errno, f"{server_name} cannot listen on {host}:{port}: {error.strerror}"
        ) from None


class _CallerOwnsSignals(uvicorn.Server):
    """uvicorn without its own signal handlers: the caller owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield
