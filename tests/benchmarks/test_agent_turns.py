"""Benchmarks for agents: a whole turn against its slowest call, and start-to-first-stop.

Turn: a model turn of five ``sleep`` calls (0.2 s to 1.0 s) through ``run_turn``, against the
slowest of them (1.0 s) alone through ``ToolCalls.start_and_wait``; goal: the turn takes at
most 1.2x.

First stop: how long from "start this call" to "it completed or waits for a person", through
``ToolCalls.start_and_wait`` (one update-with-start round trip of the workflow's ``first_stop``
update) against ``start`` plus the ``status`` query polled with backoff (``wait_for_stop``),
alternating, for a completing tool (``echo``) and an asking tool (``approve``).

Workers run in this process (both paths share them, so the comparison is like for like).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from bench_report import Figure, GoalKind
from bench_tools import registry as bench_registry
from helpers.agent_tools import PLAIN

from scope_tool import Request
from scope_tool.agents import ModelToolCall, run_turn, wait_for_stop
from scope_tool.client import CallStatus, Phase, ToolCalls, with_scope_tool_converter
from scope_tool.workers import build_worker

TURN_REPEATS = 8
FIRST_STOP_CALLS = 40
WARM_UP = 5
SLEEPS = (0.2, 0.4, 0.6, 0.8, 1.0)


async def polled_first_stop(calls: ToolCalls, request: Request, call_id: str) -> CallStatus:
    """The path before the fast one: start (one eager RPC), then poll ``status`` with backoff."""
    handle = await calls.start(request, call_id=call_id)
    return await wait_for_stop(handle)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


async def alternate(
    paths: dict[str, Callable[[int], Awaitable[Any]]], *, calls: int, warm_up: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for index in range(warm_up + calls):
        order = list(paths.items()) if index % 2 == 0 else list(reversed(paths.items()))
        for name, run in order:
            started = time.perf_counter()
            await run(index)
            if index >= warm_up:
                samples[name].append(time.perf_counter() - started)
    return samples


@pytest.mark.timeout(900)
async def test_a_five_call_turn_takes_about_as_long_as_its_slowest_call(
    bench_server, bench_report, check_goal
):
    client = with_scope_tool_converter(bench_server.client)
    task_queue = f"bench-turns-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(client, task_queue=task_queue)
    token = uuid.uuid4().hex[:8]

    async def turn(index: int) -> None:
        tool_calls = [
            ModelToolCall(
                tool_call_id=f"call_{n}",
                name="sleep",
                arguments={"seconds": seconds, "label": f"{index}-{n}"},
            )
            for n, seconds in enumerate(SLEEPS)
        ]
        result = await run_turn(calls, f"bench-turn-{token}-{index}", tool_calls, registry=PLAIN)
        assert result.complete, result

    async def slowest(index: int) -> None:
        request = Request(
            name="sleep", arguments=json.dumps({"seconds": max(SLEEPS), "label": str(index)})
        )
        _, status = await calls.start_and_wait(request, call_id=f"bench-single-{token}-{index}")
        assert status.phase is Phase.COMPLETED, status

    async with build_worker(client, PLAIN, task_queue=task_queue):
        samples = await alternate({"turn": turn, "slowest": slowest}, calls=TURN_REPEATS, warm_up=1)
    figure = bench_report.record(
        Figure(
            benchmark="agents: 5-call turn",
            metric="turn vs slowest single call (median wall time)",
            unit="ms",
            engine=median_ms(samples["turn"]),
            baseline=median_ms(samples["slowest"]),
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.2,
            note=f"sleeps {SLEEPS} s; {TURN_REPEATS} turns and singles, alternating",
        )
    )
    print(f"\nturn {figure.engine:.0f} ms vs slowest {figure.baseline:.0f} ms: {figure.ratio:.3f}x")
    check_goal(figure)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("tool", ["echo", "approve"])
async def test_start_to_first_stop_update_with_start_vs_polling(
    bench_server, bench_report, check_goal, tool
):
    client = with_scope_tool_converter(bench_server.client)
    task_queue = f"bench-first-stop-{uuid.uuid4().hex[:8]}"
    calls = ToolCalls(client, task_queue=task_queue)
    token = uuid.uuid4().hex[:8]
    expected = Phase.COMPLETED if tool == "echo" else Phase.AWAITING_INPUT

    def request(index: int) -> Request:
        return Request(name=tool, arguments=json.dumps({"text": f"t{index}"}))

    async def polling(index: int) -> None:
        call_id = f"poll-{token}-{index}"
        status = await polled_first_stop(calls, request(index), call_id)
        assert status.phase is expected, status

    async def fast(index: int) -> None:
        call_id = f"fast-{token}-{index}"
        _, status = await calls.start_and_wait(request(index), call_id=call_id)
        assert status.phase is expected, status

    async with build_worker(client, bench_registry, task_queue=task_queue):
        samples = await alternate(
            {"update-with-start": fast, "start + polling": polling},
            calls=FIRST_STOP_CALLS,
            warm_up=WARM_UP,
        )
        if tool == "approve":  # leave nothing waiting behind
            await asyncio.gather(
                *(
                    calls.get(f"{prefix}-{token}-{index}").cancel()
                    for prefix in ("fast", "poll")
                    for index in range(WARM_UP + FIRST_STOP_CALLS)
                )
            )
    figure = bench_report.record(
        Figure(
            benchmark=f"agents: first stop ({tool})",
            metric="update-with-start vs start + status polling (median)",
            unit="ms",
            engine=median_ms(samples["update-with-start"]),
            baseline=median_ms(samples["start + polling"]),
            goal=GoalKind.NONE,
            note=f"{FIRST_STOP_CALLS} calls each after {WARM_UP} warm-up, alternating;"
            " ToolCalls.start_and_wait vs start + wait_for_stop",
        )
    )
    print(
        f"\nfirst stop ({tool}): update-with-start {figure.engine:.1f} ms,"
        f" start + polling {figure.baseline:.1f} ms, ratio {figure.ratio:.3f}"
    )
