"""Benchmark 1: start -> result latency of a call whose tool returns at once.

Engine: ``ToolCalls.start`` + ``handle.result()`` for the ``echo`` tool. Baseline: the bare
``execute_workflow`` of a workflow running the same function as one activity. Calls are strictly
sequential and alternate engine/baseline (the order flips every iteration), after a warm-up, so
both sides see the same server state, the same machine load and warm caches.
"""

from __future__ import annotations

import pytest
from bench_report import Figure, GoalKind
from bench_runs import run_token, timed
from bench_stats import summarize_latencies

WARM_UP_CALLS = 20


@pytest.mark.timeout(1200)
async def test_completing_call_latency(bench_sides, bench_settings, bench_report, check_goal):
    sides = (bench_sides.engine, bench_sides.bare)
    token = run_token()
    samples: dict[str, list[float]] = {side.name: [] for side in sides}
    for iteration in range(WARM_UP_CALLS + bench_settings.sequential_calls):
        order = sides if iteration % 2 == 0 else sides[::-1]
        for side in order:
            call_id = f"latency-{token}-{side.name}-{iteration}"
            elapsed = await side.worker.watch(
                timed(side.echo(call_id, f"echo {iteration}")), within=60
            )
            if iteration >= WARM_UP_CALLS:
                samples[side.name].append(elapsed)

    engine = summarize_latencies(samples["engine"])
    baseline = summarize_latencies(samples["baseline"])
    assert engine.samples == baseline.samples == bench_settings.sequential_calls
    note = f"{engine.samples} sequential calls each, after {WARM_UP_CALLS} warm-up"
    figures = (
        Figure(
            benchmark="1 completing call",
            metric="latency median",
            unit="ms",
            engine=engine.median_ms,
            baseline=baseline.median_ms,
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.0,
            note=note,
        ),
        Figure(
            benchmark="1 completing call",
            metric="latency p95",
            unit="ms",
            engine=engine.p95_ms,
            baseline=baseline.p95_ms,
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.0,
            note=note,
        ),
    )
    for figure in figures:
        bench_report.record(figure)
    for figure in figures:
        check_goal(figure)
