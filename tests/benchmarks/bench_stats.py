"""Summaries of timed samples: median and 95th percentile, and the engine/baseline ratio."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LatencySummary", "ratio", "summarize_latencies"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencySummary:
    """Latency of ``samples`` timed operations, in milliseconds."""

    samples: int
    median_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float


def summarize_latencies(seconds: Sequence[float]) -> LatencySummary:
    """Median, p95 (inclusive method, as numpy's default), mean and max of durations in seconds.

    Raises:
        ValueError: fewer than two samples; a percentile of one sample says nothing.
    """
    if len(seconds) < 2:
        raise ValueError(f"need at least two latency samples, got {len(seconds)}")
    millis = [value * 1000.0 for value in seconds]
    return LatencySummary(
        samples=len(millis),
        median_ms=statistics.median(millis),
        p95_ms=statistics.quantiles(millis, n=100, method="inclusive")[94],
        mean_ms=statistics.fmean(millis),
        max_ms=max(millis),
    )


def ratio(engine: float, baseline: float) -> float:
    """Engine figure over baseline figure; lower is better for latency, higher for throughput."""
    if baseline <= 0:
        raise ValueError(f"baseline figure must be positive to form a ratio, got {baseline}")
    return engine / baseline
