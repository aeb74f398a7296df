"""``make bench`` entry for bench_prepare.py: Contract.prepare vs pydantic's validate_json.

Records the figure in the session's benchmark table; the goal (ratio <= 3) fails the run only
in strict mode (``SCOPE_TOOL_BENCH_STRICT=1``), like the other benchmarks.
"""

from __future__ import annotations

import pytest
from bench_prepare import GOAL_RATIO, calls_from_environment, measure, profile, report
from bench_report import Figure, GoalKind


@pytest.mark.timeout(600)
def test_prepare_against_pydantic_validate_json(bench_report, check_goal):
    figures = measure(calls_from_environment())
    print("\n" + report(figures))
    assert figures.prepare_us > 0
    assert figures.baseline_us > 0
    # prepare runs the baseline's decode as one of its steps, so it cannot be cheaper.
    assert figures.prepare_us > figures.baseline_us
    figure = bench_report.record(
        Figure(
            benchmark="prepare",
            metric="per call",
            unit="us",
            engine=figures.prepare_us,
            baseline=figures.baseline_us,
            goal=GoalKind.RATIO_AT_MOST,
            bound=GOAL_RATIO,
            note="Contract.prepare vs TypeAdapter.validate_json, seed add tool",
        )
    )
    check_goal(figure)


def test_prepare_profile_is_printed():
    summary = profile(2_000)
    print("\n" + summary)
    assert "function calls" in summary
    assert "prepare" in summary
