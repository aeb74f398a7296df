"""Connections to upstream MCP servers, held on one event loop of their own.

A tool's round runs on an event loop of its own in a thread of its own (the worker isolates
tools), while an MCP connection (its transport, its reader task) belongs to the loop that opened
it. So every upstream connection lives on the gateway's hub loop, in a daemon thread, and a round
hands its coroutines over with :meth:`Hub.run`. A connection is leased to one upstream call at a
time, so a question the upstream asks on it (elicitation) belongs to exactly that call; idle
connections are kept for the next call.

An upstream call that asked a question stays in flight on the hub, as a :class:`PendingCall`,
until its answer comes back in a later round of the same durable call, in this process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

from scope_tool.gateway._config import UpstreamConfig
from scope_tool.gateway.errors import UpstreamError

__all__ = ["IDEMPOTENCY_META_KEY", "Asked", "Finished", "Hub", "PendingCall", "Upstream"]

IDEMPOTENCY_META_KEY: Final = "dev.scope-tool/idempotency-key"
"""The ``_meta`` member of every upstream ``tools/call`` that carries the call's key."""

_IDLE_KEPT: Final = 4
_RELEASED_WITHIN: Final = 30.0
"""Seconds a released call (its question cancelled) may take to end before it is cancelled."""
_LISTEN_VERSIONS: Final = frozenset({"2026-07-28"})
"""Protocol versions whose servers announce tool changes only on ``subscriptions/listen``."""
T = TypeVar("T")
Progress = Callable[[float, float | None, str | None], None]


@dataclass(frozen=True, slots=True)
class Asked:
    """The upstream asked a question (elicitation) and waits for the answer."""

    params: types.ElicitRequestFormParams


@dataclass(frozen=True, slots=True)
class Finished:
    """The upstream call ended: its result, or the error that ended it."""

    result: types.CallToolResult | None
    error: BaseException | None


class Hub:
    """A daemon thread running the event loop every upstream connection lives on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pending: dict[str, PendingCall] = {}
        self._thread = threading.Thread(target=self._run, name="scope-tool-gateway", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the hub and wait for it from any other loop."""
        return await asyncio.wrap_future(self.submit(coroutine))

    def run_sync(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the hub and block this thread until it ends."""
        future = self.submit(coroutine)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class PendingCall:
    """One upstream ``tools/call`` in flight on the hub; lives on the hub's loop."""

    def __init__(self, hub: Hub, key: str) -> None:
        self.id = uuid.uuid4().hex
        self.key = key
        self.progress: Progress | None = None
        self._hub = hub
        self._events: asyncio.Queue[Asked | Finished] = asyncio.Queue()
        self._answer: asyncio.Future[types.ElicitResult] | None = None
        self.task: asyncio.Task[None] | None = None
        hub.pending[self.id] = self

    async def ask(self, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        self._answer = asyncio.get_running_loop().create_future()
        await self._events.put(Asked(params))
        return await self._answer

    async def answer(self, content: dict[str, Any]) -> None:
        """Pass the answer upstream; a call that stopped waiting (the upstream's own request
        timed out, say) is left to report how it ended instead."""
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(types.ElicitResult(action="accept", content=content))

    async def release(self, reason: str) -> None:
        """No answer will come (the durable call ended ``reason``): the upstream's question is
        cancelled (MCP's ``cancel`` action), and a call that still does not end within
        :data:`_RELEASED_WITHIN` is cancelled too, so its connection is not held for good."""
        self._hub.pending.pop(self.id, None)
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(types.ElicitResult(action="cancel"))
        task = self.task
        if task is not None and not task.done():
            asyncio.get_running_loop().call_later(_RELEASED_WITHIN, task.cancel)

    async def next_event(self, progress: Progress | None) -> Asked | Finished:
        """The next thing the call does; a finished call is forgotten."""
        self.progress = progress
        event = await self._events.get()
        if isinstance(event, Finished):
            self._hub.pending.pop(self.id, None)
        self.progress = None
        return event

    async def cancel(self) -> None:
        self._hub.pending.pop(self.id, None)
        if self.task is not None:
            self.task.cancel()

    def finish(self, event: Finished) -> None:
        self._events.put_nowait(event)


class _Connection:
    """One open MCP client session, held open by a task on the hub's loop."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.current: PendingCall | None = None
        self.client: Client | None = None
        self.broken = False
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> _Connection:
        self._task = asyncio.create_task(self._hold())
        await asyncio.wait_for(asyncio.shield(self._ready), self.upstream.config.timeout)
        return self

    async def _hold(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                self.client = await stack.enter_async_context(self.upstream.client_for(self, stack))
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.broken = True

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 10)

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        call = self.current
        if call is None or not isinstance(params, types.ElicitRequestFormParams):
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="the scope-tool gateway forwards form elicitation during a tools/call only",
            )
        return await call.ask(params)

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.upstream.list_changed()


class Upstream:
    """One upstream server: its listed tools and a pool of connections (on the hub's loop)."""

    def __init__(self, config: UpstreamConfig, hub: Hub) -> None:
        self.config = config
        self.hub = hub
        self.tools: dict[str, types.Tool] = {}
        self._idle: list[_Connection] = []
        self._relisting: asyncio.Task[None] | None = None
        self._watching: asyncio.Task[None] | None = None

    def client_for(self, connection: _Connection, stack: contextlib.AsyncExitStack) -> Client:
        """A client for one connection; what it opens besides is closed with ``stack``."""
        config = self.config
        server: Any
        if config.command is not None:
            server = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) if config.env is not None else None,
                cwd=config.cwd,
            )
        else:
            assert config.url is not None
            server = config.url
            if config.headers:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                http = httpx2.AsyncClient(headers=dict(config.headers))
                stack.push_async_callback(http.aclose)
                server = streamable_http_client(config.url, http_client=http)
        return Client(
            server,
            elicitation_callback=connection.elicit,
            message_handler=connection.on_message,
            cache=None,
        )

    async def lease(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.broken:
                return connection
        try:
            return await _Connection(self).open()
        except Exception as exc:
            raise UpstreamError(
                f"upstream server {self.config.name!r} ({self.config.transport}) did not start"
                f" or answer within {self.config.timeout:g}s: {type(exc).__name__}: {exc}"
            ) from None

    async def release(self, connection: _Connection) -> None:
        connection.current = None
        if connection.broken or len(self._idle) >= _IDLE_KEPT:
            await connection.close()
        else:
            self._idle.append(connection)

    async def list_tools(self) -> dict[str, types.Tool]:
        """List the upstream's tools now (every page) and keep them as the current listing."""
        connection = await self.lease()
        try:
            assert connection.client is not None
            found: dict[str, types.Tool] = {}
            cursor: str | None = None
            while True:
                page = await asyncio.wait_for(
                    connection.client.list_tools(cursor=cursor), self.config.timeout
                )
                found.update((tool.name, tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except UpstreamError:
            raise
        except Exception as exc:
            connection.broken = True
            raise UpstreamError(
                f"upstream server {self.config.name!r} could not list its tools:"
                f" {type(exc).__name__}: {exc}"
            ) from None
        finally:
            version = connection.client.session.protocol_version if connection.client else None
            await self.release(connection)
        self.tools = found
        if version in _LISTEN_VERSIONS:
            self.watch()  # its changes come only on a subscriptions/listen stream
        return found

    def list_changed(self) -> None:
        """The upstream said its tools changed: list them again (in the background)."""
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.create_task(self._relist())

    async def _relist(self) -> None:
        with contextlib.suppress(Exception):
            await self.list_tools()

    def watch(self) -> None:
        """Follow the upstream's tool changes on a ``subscriptions/listen`` stream (2026-07-28).

        Earlier servers send ``notifications/tools/list_changed`` on any open session instead
        (handled by :meth:`list_changed`); for them the stream is refused and nothing more is
        done. A dropped stream is opened again after a pause, and the tools listed again, since
        events are not replayed.
        """
        if self._watching is None or self._watching.done():
            self._watching = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        from mcp.client.subscriptions import ListenNotSupportedError

        pause = 1.0
        while True:
            connection: _Connection | None = None
            try:
                connection = await _Connection(self).open()
                assert connection.client is not None
                async with connection.client.listen(tools_list_changed=True) as events:
                    pause = 1.0
                    await self._relist()  # what changed before the stream was acknowledged
                    async for _event in events:
                        await self._relist()
            except ListenNotSupportedError:
                return  # an earlier protocol: its sessions carry list_changed notifications
            except asyncio.CancelledError:
                raise
            except Exception:
                pass  # the stream or the server went away: listen again after a pause
            finally:
                if connection is not None:
                    await connection.close()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 60.0)

    async def start_call(self, name: str, arguments: dict[str, Any], *, key: str) -> PendingCall:
        """Send ``tools/call`` with the key in ``_meta``; the call goes on in the background."""
        connection = await self.lease()
        call = PendingCall(self.hub, key)
        connection.current = call

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if call.progress is not None:
                call.progress(value, total, message)

        async def send() -> None:
            assert connection.client is not None
            try:
                meta: Any = {IDEMPOTENCY_META_KEY: key}
                report: Any = progress
                result = await connection.client.call_tool(
                    name, arguments, progress_callback=report, meta=meta
                )
            except asyncio.CancelledError:
                connection.broken = True
                call.finish(Finished(None, UpstreamError("the upstream call was cancelled")))
                raise
            except BaseException as exc:
                connection.broken = not _answered(exc)
                call.finish(Finished(None, exc))
            else:
                call.finish(Finished(result, None))
            finally:
                await self.release(connection)

        call.task = asyncio.create_task(send())
        return call

    async def close(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(BaseException):
                await self._watching
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()


def _answered(error: BaseException) -> bool:
    """Whether the upstream itself answered with this error (the connection is still sound)."""
    from mcp.shared.exceptions import MCPError

    return isinstance(error, MCPError)


def definition_digest(tool: types.Tool) -> str:
    """What the gateway pins of an upstream tool: description, schemas, annotations."""
    pinned = tool.model_dump(
        mode="json",
        by_alias=True,
        include={"name", "description", "input_schema", "output_schema", "annotations"},
    )
    text = json.dumps(pinned, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
