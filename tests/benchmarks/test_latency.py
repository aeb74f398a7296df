"""Benchmark 1: start -> result latency of a call whose tool returns at once.

Engine: ``ToolCalls.start`` + ``handle.result()`` for the ``echo`` tool. Baseline: the bare
``execute_workflow`` of a workflow running the same function as one activity. Sequential,
alternating sides after a warm-up (``bench_latency``). Afterwards one call of each side is read
back from history: events, workflow tasks and actions per call (``bench_history``).
"""

from __future__ import annotations

import pytest
from bench_history import call_cost, record_call_costs
from bench_latency import alternate_sequentially, record_latency_figures
from bench_runs import CallSide, timed

WARM_UP_CALLS = 20


@pytest.mark.timeout(1200)
async def test_completing_call_latency(bench_sides, bench_settings, bench_report, check_goal):
    last_call: dict[str, str] = {}

    async def one_call(side: CallSide, call_id: str, iteration: int) -> float:
        last_call[side.name] = f"latency-{call_id}"
        return await side.worker.watch(
            timed(side.echo(f"latency-{call_id}", f"echo {iteration}")), within=60
        )

    samples = await alternate_sequentially(
        (bench_sides.engine, bench_sides.bare),
        measured=bench_settings.sequential_calls,
        warm_up=WARM_UP_CALLS,
        one_call=one_call,
    )
    assert len(samples["engine"]) == bench_settings.sequential_calls
    figures = record_latency_figures(
        bench_report,
        samples,
        benchmark="1 completing call",
        bound=1.0,
        note=f"{bench_settings.sequential_calls} sequential calls each, after {WARM_UP_CALLS} warm-up",
    )
    record_call_costs(
        bench_report,
        benchmark="1 completing call",
        engine=await call_cost(bench_sides.engine.client, last_call["engine"]),
        baseline=await call_cost(bench_sides.bare.client, last_call["baseline"]),
        note="start to result",
    )
    for figure in figures:
        check_goal(figure)
