"""A worker for a registry on a fresh task queue, for the length of a test."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client

from scope_tool import Registry
from scope_tool.client import ToolCalls
from scope_tool.workers import ToolWorker, build_worker

__all__ = ["StartedWorker", "start_worker"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StartedWorker:
    """An in-process worker polling its own task queue, and the facade that starts calls there."""

    calls: ToolCalls
    """Calls started here run on :attr:`worker` (and only on workers of the same queue)."""
    worker: ToolWorker

    @property
    def task_queue(self) -> str:
        """The queue the worker polls (fresh per :func:`start_worker`, unless one was given)."""
        return self.calls.task_queue


@contextlib.asynccontextmanager
async def start_worker(
    client: Client,
    registry: Registry | Sequence[Registry],
    *,
    task_queue: str | None = None,
    retry_safe: Collection[str] = (),
    heartbeat_timeout: timedelta = timedelta(seconds=10),
) -> AsyncIterator[StartedWorker]:
    """Run :func:`scope_tool.workers.build_worker` for ``registry`` for the block.

    Each block gets a fresh task queue unless one is given, so tests sharing one server never
    see each other's calls. The worker is the one production runs, in this process: tools
    run exactly as they will under ``python -m scope_tool.workers``.

    Args:
        client: a client of the server (:attr:`StartedServer.client`).
        registry: the tools to serve, or several versions of them, newest first.
        task_queue: the queue to poll; ``None`` makes a fresh ``test-<uuid>`` one.
        retry_safe: tool names that may run again if the worker is lost mid-round.
        heartbeat_timeout: how long a silent tool may go before the call ends "outcome
            unknown" (the facade's setting; shorten it to test a lost worker quickly).
    """
    queue = task_queue if task_queue is not None else f"test-{uuid.uuid4()}"
    async with build_worker(client, registry, task_queue=queue, retry_safe=retry_safe) as worker:
        yield StartedWorker(
            calls=ToolCalls(client, task_queue=queue, heartbeat_timeout=heartbeat_timeout),
            worker=worker,
        )
