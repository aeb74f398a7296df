"""``make bench`` entry for bench_verdict.py: a 1 MiB costly answer's verdict, engine vs bare.

The goal (a verdict within 2 s, accepted and refused) fails the run only in strict mode
(``SCOPE_TOOL_BENCH_STRICT=1``), like the other benchmarks: figures from a shared machine are
noisy. Correctness (the verdicts themselves) is asserted inside every timed answer.
"""

from __future__ import annotations

import statistics

import pytest
from bench_report import Figure, GoalKind
from bench_verdict import GOAL_SECONDS, measure_verdicts, report, runs_from_environment


@pytest.mark.timeout(900)
async def test_costly_answer_verdict(bench_sides, bench_report, check_goal):
    runs = runs_from_environment()
    times = await bench_sides.engine.worker.watch(
        measure_verdicts(
            bench_sides.engine.calls,
            bench_sides.bare.client,
            bench_sides.bare.task_queue,
            runs=runs,
        ),
        within=600,
    )
    print("\n" + report(times))
    assert len(times.engine_accept) == len(times.baseline_refuse) == runs
    for metric, engine, bare in (
        ("accept median", times.engine_accept, times.baseline_accept),
        ("refuse median", times.engine_refuse, times.baseline_refuse),
    ):
        figure = bench_report.record(
            Figure(
                benchmark="verdict (1 MiB decimals)",
                metric=metric,
                unit="s",
                engine=statistics.median(engine),
                baseline=statistics.median(bare),
                goal=GoalKind.ENGINE_AT_MOST,
                bound=GOAL_SECONDS,
                note=f"{runs} answers each after a warm-up; baseline: bare update + one activity"
                " checking by hand",
            )
        )
        check_goal(figure)
