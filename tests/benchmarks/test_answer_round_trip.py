"""Benchmark 2: human-in-the-loop round trip, answer -> result, for a call waiting on a person.

Engine: an ``approve`` call is started and polled until ``AWAITING_INPUT``; then the timed part
is ``handle.answer(...)`` (the validated update) + ``handle.result()``, which re-enters the tool
from its checkpoint. Baseline: a bare workflow waiting on an update, then running one activity
with the answer; timed the same way (``execute_update`` + ``result``) once a query says it waits.
Sides alternate per iteration (order flipping), after a warm-up.
"""

from __future__ import annotations

import pytest
from bench_report import Figure, GoalKind
from bench_runs import run_token, timed
from bench_stats import summarize_latencies

WARM_UP_CALLS = 10


@pytest.mark.timeout(1800)
async def test_answer_round_trip(bench_sides, bench_settings, bench_report, check_goal):
    sides = (bench_sides.engine, bench_sides.bare)
    token = run_token()
    samples: dict[str, list[float]] = {side.name: [] for side in sides}
    for iteration in range(WARM_UP_CALLS + bench_settings.sequential_calls):
        order = sides if iteration % 2 == 0 else sides[::-1]
        for side in order:
            call_id = f"round-trip-{token}-{side.name}-{iteration}"
            parked = await side.worker.watch(side.park(call_id, f"change {iteration}"), within=60)
            await side.worker.watch(side.wait_parked(parked), within=60)
            elapsed = await side.worker.watch(
                # Every third call is declined, so both branches of the tool run.
                timed(side.answer_and_finish(parked, approved=iteration % 3 != 0)),
                within=60,
            )
            if iteration >= WARM_UP_CALLS:
                samples[side.name].append(elapsed)

    engine = summarize_latencies(samples["engine"])
    baseline = summarize_latencies(samples["baseline"])
    assert engine.samples == baseline.samples == bench_settings.sequential_calls
    note = f"{engine.samples} sequential round trips each, after {WARM_UP_CALLS} warm-up"
    figures = (
        Figure(
            benchmark="2 answer round trip",
            metric="latency median",
            unit="ms",
            engine=engine.median_ms,
            baseline=baseline.median_ms,
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.1,
            note=note,
        ),
        Figure(
            benchmark="2 answer round trip",
            metric="latency p95",
            unit="ms",
            engine=engine.p95_ms,
            baseline=baseline.p95_ms,
            goal=GoalKind.RATIO_AT_MOST,
            bound=1.1,
            note=note,
        ),
    )
    for figure in figures:
        bench_report.record(figure)
    for figure in figures:
        check_goal(figure)
