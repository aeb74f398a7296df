"""The sequential latency harness benchmarks 1 and 2 share: alternate the sides, then report.

Calls are strictly sequential and alternate between the sides (the order rotates every
iteration), after a warm-up, so all sides see the same server state, machine load and warm caches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from bench_report import BenchReport, Figure, GoalKind
from bench_runs import CallSide, run_token
from bench_stats import summarize_latencies

__all__ = ["alternate_sequentially", "record_latency_figures"]


async def alternate_sequentially(
    sides: Sequence[CallSide],
    *,
    measured: int,
    warm_up: int,
    one_call: Callable[[CallSide, str, int], Awaitable[float]],
) -> dict[str, list[float]]:
    """Seconds per measured call, by side name: ``one_call(side, call_id, iteration)`` times one."""
    token = run_token()
    samples: dict[str, list[float]] = {side.name: [] for side in sides}
    for iteration in range(warm_up + measured):
        shift = iteration % len(sides)
        order = [*sides[shift:], *sides[:shift]]
        for side in order:
            elapsed = await one_call(side, f"{token}-{side.name}-{iteration}", iteration)
            if iteration >= warm_up:
                samples[side.name].append(elapsed)
    return samples


def record_latency_figures(
    report: BenchReport,
    samples: dict[str, list[float]],
    *,
    benchmark: str,
    bound: float | None,
    note: str,
    baseline_name: str = "baseline",
) -> tuple[Figure, Figure]:
    """Record the median and p95 of engine against ``baseline_name``.

    Each is judged as ratio <= ``bound``; with ``bound=None`` they are recorded without a goal.
    """
    engine = summarize_latencies(samples["engine"])
    baseline = summarize_latencies(samples[baseline_name])
    if engine.samples != baseline.samples:
        raise AssertionError(f"{benchmark}: {engine.samples} engine vs {baseline.samples} samples")
    figures = tuple(
        Figure(
            benchmark=benchmark,
            metric=f"latency {statistic}"
            + ("" if baseline_name == "baseline" else f" vs {baseline_name}"),
            unit="ms",
            engine=engine_ms,
            baseline=baseline_ms,
            goal=GoalKind.NONE if bound is None else GoalKind.RATIO_AT_MOST,
            bound=bound,
            note=note,
        )
        for statistic, engine_ms, baseline_ms in (
            ("median", engine.median_ms, baseline.median_ms),
            ("p95", engine.p95_ms, baseline.p95_ms),
        )
    )
    for figure in figures:
        report.record(figure)
    return figures[0], figures[1]
