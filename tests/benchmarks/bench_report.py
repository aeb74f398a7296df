"""The figures a benchmark run produced, printed as one table and written as JSON.

Every benchmark records ``Figure`` values into the session's ``BenchReport`` (the ``bench_report``
fixture); at the end of the session the table is printed and ``test-artifacts/bench.json`` is
written, so the numbers in the README can be traced to one run.
"""

from __future__ import annotations

import json
import os
import platform
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from bench_stats import ratio

__all__ = ["BenchReport", "Figure", "GoalKind", "machine_description"]


class GoalKind(StrEnum):
    """How a figure is judged against its goal."""

    RATIO_AT_MOST = "ratio<="
    RATIO_AT_LEAST = "ratio>="
    ENGINE_AT_MOST = "engine<="
    NONE = "none"

    def met(self, *, engine: float, ratio: float | None, bound: float) -> bool:
        """Whether the figure meets a bound of this kind (a ratio-free figure misses a ratio goal)."""
        if self is GoalKind.ENGINE_AT_MOST:
            return engine <= bound
        if ratio is None:
            return False
        if self is GoalKind.RATIO_AT_MOST:
            return ratio <= bound
        return ratio >= bound


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One measured quantity, for the engine and (when it has one) the bare-Temporal baseline."""

    benchmark: str
    metric: str
    unit: str
    engine: float
    baseline: float | None = None
    goal: GoalKind = GoalKind.NONE
    bound: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline <= 0:
            return None
        return ratio(self.engine, self.baseline)

    @property
    def goal_met(self) -> bool | None:
        """True/False against the goal; None when the figure has no goal."""
        if self.goal is GoalKind.NONE or self.bound is None:
            return None
        return self.goal.met(engine=self.engine, ratio=self.ratio, bound=self.bound)

    def goal_text(self) -> str:
        if self.goal is GoalKind.NONE or self.bound is None:
            return ""
        verdict = "met" if self.goal_met else "MISSED"
        return f"{self.goal.value} {self.bound:g}: {verdict}"

    def as_json(self) -> dict[str, object]:
        record = asdict(self)
        record["goal"] = self.goal.value
        record["ratio"] = self.ratio
        record["goal_met"] = self.goal_met
        return record


def machine_description() -> dict[str, object]:
    """Cores, memory, load and versions: what a reader needs to weigh the figures."""
    memory_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_kib = int(line.split()[1])
    load_1, load_5, load_15 = os.getloadavg()
    import temporalio

    return {
        "cpu_cores": os.cpu_count(),
        "memory_gib": round(memory_kib / (1 << 20), 1),
        "load_average": [round(load_1, 2), round(load_5, 2), round(load_15, 2)],
        "python": platform.python_version(),
        "temporalio": temporalio.__version__,
        "platform": platform.platform(),
    }


@dataclass(slots=True, kw_only=True)
class BenchReport:
    """Figures collected over one pytest session (thread-safe; tests may record from threads)."""

    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    server: str = ""
    machine_at_start: dict[str, object] = field(default_factory=machine_description)
    figures: list[Figure] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, figure: Figure) -> Figure:
        with self._lock:
            self.figures.append(figure)
        print(f"\n[bench] {_row(figure)}", flush=True)
        return figure

    def table(self) -> str:
        header = (
            "benchmark",
            "metric",
            "engine",
            "baseline",
            "ratio",
            "goal",
        )
        rows = [header, *(_cells(figure) for figure in self.figures)]
        widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
        lines = [
            " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            for row in rows
        ]
        lines.insert(1, "-+-".join("-" * width for width in widths))
        return "\n".join(lines)

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "started_at": self.started_at,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "server": self.server,
            "machine_at_start": self.machine_at_start,
            "machine_at_end": machine_description(),
            "figures": [figure.as_json() for figure in self.figures],
        }
        path.write_text(json.dumps(document, indent=2) + "\n")


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return f"{text} {unit}".strip()


def _cells(figure: Figure) -> tuple[str, str, str, str, str, str]:
    return (
        figure.benchmark,
        figure.metric,
        _number(figure.engine, figure.unit),
        _number(figure.baseline, figure.unit),
        "-" if figure.ratio is None else f"{figure.ratio:.2f}",
        figure.goal_text(),
    )


def _row(figure: Figure) -> str:
    benchmark, metric, engine, baseline, measured, goal = _cells(figure)
    note = f" ({figure.note})" if figure.note else ""
    return (
        f"{benchmark} {metric}: engine {engine}, baseline {baseline}, ratio {measured} {goal}{note}"
    )
