"""Each round's tool runs on its own event loop in its own thread.

Why: round heartbeats, workflow tasks and every other round of a worker share the worker's
event loop. An ``async def`` tool that blocks that loop (a ``time.sleep``, CPU-bound work) for
longer than the heartbeat timeout used to make every other round in flight end ERRORED "outcome
unknown" while their effects went on. Run on a loop of its own, a blocking tool stalls only its
own round; the worker's loop keeps heartbeating the others.

Detection: the tool's loop ticks a clock every :data:`TICK_SECONDS`; a watchdog on the worker's
loop warns (logger ``scope_tool.workers``) when the clock stops for longer than ``warn_after``, naming the
tool, the call and the round, once per round.

Cancellation: the tool's task is cancelled on its own loop. An ``async def`` tool sees it at its
next ``await``; a synchronous function (``Func`` runs it in a thread) cannot be interrupted, so
the runner waits up to ``grace`` for it and reports what it did (:attr:`RoundEnd.note`).

Cost: one event loop per round, on a thread of its own. Threads are kept and reused: a round
takes an idle one (starting a thread costs more than the rest of a short round), and a thread idle
for :data:`IDLE_SECONDS` ends. A thread runs one round at a time and each round starts in an empty
context, so a reused thread carries nothing from the round before. A tool needing a resource bound
to one loop (an async client created at import) must create it inside the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, TypeVar

__all__ = ["IDLE_SECONDS", "TICK_SECONDS", "RoundEnd", "run_isolated"]

TICK_SECONDS: Final = 0.1
"""How often a tool's loop proves it is not blocked."""

IDLE_SECONDS: Final = 60.0
"""How long a round's thread waits for the next round before it ends."""

_LOG = logging.getLogger("scope_tool.workers")

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEnd(Generic[T]):
    """How a tool's coroutine ended on its own loop.

    Exactly one of ``value`` / ``error`` is set unless the tool ended by cancellation (or had
    not ended ``grace`` seconds after it), when both are ``None``. ``cancelled`` says whether
    the round was cancelled while the tool ran; ``note`` then tells what the tool did after it.
    """

    value: T | None = None
    error: BaseException | None = None
    cancelled: bool = False
    note: str = ""


class _ToolThread(Generic[T]):
    def __init__(
        self, make: Callable[[], Coroutine[Any, Any, T]], *, label: str, owner: Any
    ) -> None:
        self._make = make
        self._context = contextvars.copy_context()
        self._owner: asyncio.AbstractEventLoop = owner
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[T] | None = None
        self.last_tick = time.monotonic()
        self.ended: asyncio.Future[RoundEnd[T]] = owner.create_future()
        self.ended_at = 0.0
        self.exited: asyncio.Future[float] = owner.create_future()
        self._label = label

    def start(self) -> None:
        _Carrier.take().run(self._main, name=f"scope-tool {self._label}")

    def cancel(self) -> None:
        def cancel_task() -> None:
            if self._task is not None:
                self._task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop already closed: nothing to cancel
            self._loop.call_soon_threadsafe(cancel_task)

    def _main(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            task = loop.create_task(self._make(), context=self._context)
            self._task = task
            ticker = loop.create_task(self._tick())
            try:
                end: RoundEnd[T] = RoundEnd(value=loop.run_until_complete(task))
            except asyncio.CancelledError:
                end = RoundEnd()
            except BaseException as exc:  # handed to the activity, which classifies it
                end = RoundEnd(error=exc)
            ticker.cancel()
            self.ended_at = time.monotonic()
            self._post(self.ended, end)
            # Threads the tool started (a sync Func's) are waited for here, not abandoned.
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
            self._post(self.exited, time.monotonic())

    async def _tick(self) -> None:
        while True:
            self.last_tick = time.monotonic()
            await asyncio.sleep(TICK_SECONDS)

    def _post(self, future: asyncio.Future[Any], value: Any) -> None:
        def settle() -> None:
            if not future.done():
                future.set_result(value)

        with contextlib.suppress(RuntimeError):  # the worker's loop is gone (process exit)
            self._owner.call_soon_threadsafe(settle)


class _Carrier:
    """A thread that runs rounds one at a time, waiting idle in between (see the module doc)."""

    _idle: ClassVar[list[_Carrier]] = []
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], str]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="scope-tool idle", daemon=True).start()

    @classmethod
    def take(cls) -> _Carrier:
        """An idle thread, else a new one; it runs the next job handed to it."""
        with cls._lock:
            if cls._idle:
                return cls._idle.pop()
        return cls()

    def run(self, job: Callable[[], None], *, name: str) -> None:
        self._jobs.put((job, name))

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                job, name = self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self in self._idle:
                        self._idle.remove(self)
                        return
                # Taken just as the wait ended: its job is on the way.
                job, name = self._jobs.get()
            me.name = name
            try:
                # An empty context, as a new thread has: nothing of an earlier round leaks in.
                contextvars.Context().run(job)
            finally:
                with self._lock:
                    me.name = "scope-tool idle"
                    self._idle.append(self)


async def run_isolated(
    make: Callable[[], Coroutine[Any, Any, T]],
    *,
    label: str,
    warn_after: float,
    grace: float,
) -> RoundEnd[T]:
    """Run ``make()`` on a new event loop in a thread of its own and wait for it without blocking.

    Args:
        make: builds the tool's coroutine (called in the new thread, in a copy of this context).
        label: names the tool, call and round in the blocked-loop warning.
        warn_after: seconds the tool's loop may stay blocked before the warning.
        grace: after a cancellation, how long to wait for the tool (and its threads) to end.

    Returns:
        How the tool ended. Cancellation of the caller is reported, not raised.
    """
    runner = _ToolThread(make, label=label, owner=asyncio.get_running_loop())
    watchdog = asyncio.create_task(_watch(runner, label=label, warn_after=warn_after))
    runner.start()
    try:
        try:
            return await asyncio.shield(runner.ended)
        except asyncio.CancelledError:
            cancelled_at = time.monotonic()
            runner.cancel()
        return await _after_cancel(runner, cancelled_at=cancelled_at, grace=grace)
    finally:
        watchdog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watchdog


async def _after_cancel(
    runner: _ToolThread[T], *, cancelled_at: float, grace: float
) -> RoundEnd[T]:
    deadline = cancelled_at + grace
    try:
        end = await _wait(runner.ended, deadline)
    except TimeoutError:
        return RoundEnd(
            cancelled=True,
            note=f"the tool had not stopped {grace:g} s after the cancellation (an async tool"
            " that does not await, or one that ignores cancellation); its effect may still happen",
        )
    try:
        exited_at = await _wait(runner.exited, deadline)
    except TimeoutError:
        return RoundEnd(
            value=end.value,
            error=end.error,
            cancelled=True,
            note="the tool's thread (a synchronous function cannot be interrupted) was still"
            f" running {grace:g} s after the cancellation; its effect may still happen",
        )
    lingered = exited_at - runner.ended_at
    if end.value is None and end.error is None and lingered > 2 * TICK_SECONDS:
        note = (
            "the tool's thread (a synchronous function cannot be interrupted) kept running after"
            f" the cancellation and finished {exited_at - cancelled_at:.1f} s later; its effect"
            " may have happened, its result was discarded"
        )
    elif end.value is None and end.error is None:
        note = "the tool stopped at the cancellation"
    else:
        note = "the tool finished after the cancellation"
    return RoundEnd(value=end.value, error=end.error, cancelled=True, note=note)


async def _wait(future: asyncio.Future[Any], deadline: float) -> Any:
    """``future``'s result by ``deadline`` (monotonic); further cancellations are ignored."""
    while True:
        remaining = deadline - time.monotonic()
        if future.done():
            return future.result()
        if remaining <= 0:
            raise TimeoutError
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([future], timeout=remaining)


async def _watch(runner: _ToolThread[Any], *, label: str, warn_after: float) -> None:
    every = min(TICK_SECONDS * 5, warn_after / 2)
    while True:
        await asyncio.sleep(every)
        if runner.ended.done():
            return
        stalled = time.monotonic() - runner.last_tick
        if stalled > warn_after:
            _LOG.warning(
                "%s has blocked its event loop for %.1f s: an async def tool must not block"
                " (use a def tool, which runs in a thread, or asyncio.to_thread); other calls"
                " on this worker are not affected",
                label,
                stalled,
            )
            return
