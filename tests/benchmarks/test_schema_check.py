"""``make bench`` entry for bench_schema_check.py: a 1 MiB answer of decimals, before/after.

The goal (after <= 0.5 s) fails the run only in strict mode (``SCOPE_TOOL_BENCH_STRICT=1``),
like the other benchmarks: figures from a shared machine are noisy.
"""

from __future__ import annotations

import pytest
from bench_report import Figure, GoalKind
from bench_schema_check import CASES, GOAL_SECONDS, measure, report, runs_from_environment


@pytest.mark.timeout(900)
def test_checking_a_large_answer_of_decimals(bench_report, check_goal):
    timings = [measure(case, runs=runs_from_environment()) for case in CASES]
    print("\n" + report(timings))
    for timing in timings:
        assert timing.after_s < timing.before_s
        figure = bench_report.record(
            Figure(
                benchmark="schema check (1 MiB decimals)",
                metric=timing.case.name,
                unit="s",
                engine=timing.after_s,
                baseline=timing.before_s,
                goal=GoalKind.ENGINE_AT_MOST,
                bound=GOAL_SECONDS,
                note="baseline: python-jsonschema with exact numbers (the engine before)",
            )
        )
        check_goal(figure)
