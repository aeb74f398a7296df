"""How the benchmarks drive load: timing one operation, and keeping N operations in flight."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from worker_process import WorkerProcess, process_cpu_seconds

__all__ = ["CallSide", "CpuUse", "cpu_use", "run_lanes", "run_token", "timed"]


class CallSide(Protocol):
    """What engine and baseline both offer, so each benchmark runs the same code on both."""

    name: str
    worker: WorkerProcess

    async def echo(self, call_id: str, text: str) -> None: ...

    async def park(self, call_id: str, text: str) -> Any: ...

    async def wait_parked(self, parked: Any) -> None: ...

    async def answer_and_finish(self, parked: Any, *, approved: bool) -> None: ...


def run_token() -> str:
    """A short random token keeping workflow ids and task queues unique per run."""
    return uuid.uuid4().hex[:8]


async def timed(awaitable: Awaitable[Any]) -> float:
    """Seconds ``awaitable`` took, on the monotonic high-resolution clock."""
    started = time.perf_counter()
    await awaitable
    return time.perf_counter() - started


async def run_lanes(
    count: int, *, concurrency: int, operation: Callable[[int], Awaitable[None]]
) -> float:
    """Run ``operation(0..count-1)`` with ``concurrency`` in flight at all times; wall seconds.

    Each lane takes the next index as soon as its previous operation finished, so the load stays
    at ``concurrency`` until the queue of indices runs dry. The first exception propagates.
    """
    indices = iter(range(count))

    async def lane() -> None:
        for index in indices:
            await operation(index)

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, count)):
            group.create_task(lane())
    return time.perf_counter() - started


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuUse:
    """CPU seconds used by the three processes of a call: client (this one), worker, server.

    Subtract two snapshots for what happened in between. Where wall time says how fast, this
    says which process paid, which is what points at the cause when the engine is slower.
    """

    client: float
    worker: float
    server: float

    def __sub__(self, earlier: CpuUse) -> CpuUse:
        return CpuUse(
            client=self.client - earlier.client,
            worker=self.worker - earlier.worker,
            server=self.server - earlier.server,
        )

    def __add__(self, other: CpuUse) -> CpuUse:
        return CpuUse(
            client=self.client + other.client,
            worker=self.worker + other.worker,
            server=self.server + other.server,
        )

    @property
    def total(self) -> float:
        return self.client + self.worker + self.server


def cpu_use(*, worker: WorkerProcess, server_pid: int) -> CpuUse:
    """A snapshot of the CPU seconds the client, ``worker`` and the server have used so far."""
    return CpuUse(
        client=time.process_time(),
        worker=worker.cpu_seconds(),
        server=process_cpu_seconds(server_pid),
    )
