"""Each round runs on a loop of its own in a thread of its own; threads are reused, rounds never share.

No server: ``run_isolated`` is exercised directly (see workers/_isolation.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

from scope_tool.workers._isolation import run_isolated

_MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


async def _where() -> tuple[int, int, str, str]:
    seen = _MARK.get()
    _MARK.set("set by an earlier round")  # must not reach the next round on this thread
    loop = asyncio.get_running_loop()
    return threading.get_ident(), id(loop), seen, threading.current_thread().name


async def _until_idle(ident: int) -> None:
    """Wait until the thread ``ident`` has closed its round's loop and waits for the next."""
    for _ in range(1000):
        if any(t.ident == ident and t.name == "scope-tool idle" for t in threading.enumerate()):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the round's thread never became idle")


async def test_a_thread_is_reused_with_a_new_loop_and_nothing_carried_over() -> None:
    first = await run_isolated(_where, label="tool t call c round 1", warn_after=5, grace=1)
    assert first.value is not None
    await _until_idle(first.value[0])
    second = await run_isolated(_where, label="tool t call c round 2", warn_after=5, grace=1)
    assert first.value is not None
    assert second.value is not None
    thread_1, loop_1, seen_1, name_1 = first.value
    thread_2, loop_2, seen_2, name_2 = second.value
    assert thread_1 != threading.get_ident()  # never the worker's own loop thread
    assert thread_2 == thread_1  # the idle thread took the second round
    assert (seen_1, seen_2) == ("unset", "unset")  # each round starts in an empty context
    assert (name_1, name_2) == (
        "scope-tool tool t call c round 1",
        "scope-tool tool t call c round 2",
    )
    del loop_1, loop_2  # a loop's id may be reused once closed; the loop itself is per round


async def test_rounds_in_flight_together_get_threads_of_their_own() -> None:
    # Both rounds must reach the barrier at once: impossible if one thread served both in turn.
    barrier = threading.Barrier(2, timeout=5)

    async def meet() -> int:
        barrier.wait()
        return threading.get_ident()

    ends = await asyncio.wait_for(
        asyncio.gather(
            run_isolated(meet, label="a", warn_after=5, grace=1),
            run_isolated(meet, label="b", warn_after=5, grace=1),
        ),
        timeout=10,
    )
    assert ends[0].error is None, ends[0].error
    assert ends[1].error is None, ends[1].error
    assert ends[0].value != ends[1].value


async def test_a_blocked_round_holds_only_its_own_thread() -> None:
    release = threading.Event()

    async def blocks() -> str:
        release.wait(timeout=10)  # blocks its own loop on purpose
        return "released"

    async def quick() -> str:
        return "quick"

    blocked = asyncio.create_task(run_isolated(blocks, label="blocks", warn_after=5, grace=1))
    try:
        done = await asyncio.wait_for(
            run_isolated(quick, label="quick", warn_after=5, grace=1), timeout=5
        )
        assert done.value == "quick"
    finally:
        release.set()
    assert (await blocked).value == "released"
