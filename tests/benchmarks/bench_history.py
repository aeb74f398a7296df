"""What one call costs in Temporal's own units: history events, workflow tasks, billable actions.

Latency says how fast; these say how much work the server does per call, which is what a call
costs to store and, on Temporal Cloud, to run (its Actions). Both sides' histories are read after
the timed runs, so counting never slows a measured call.

``actions`` counts the history events of the Action categories Temporal Cloud lists (workflow
started, activity started, timer started, signal, update); an upserted search attribute and a
recorded marker are counted apart (``upserts``, ``markers``) because whether they bill depends on
the plan, and queries (a status poll) leave no event. See docs/performance.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bench_report import BenchReport, Figure
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

__all__ = ["CallCost", "call_cost", "record_call_costs"]

_ACTION_EVENTS = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        EventType.EVENT_TYPE_TIMER_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallCost:
    """Counts over one call's whole history."""

    events: int
    workflow_tasks: int
    actions: int
    upserts: int
    markers: int


async def call_cost(client: Client, workflow_id: str) -> CallCost:
    """The cost of the (closed) workflow ``workflow_id``, read from its history."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    kinds = Counter(event.event_type for event in history.events)
    return CallCost(
        events=len(history.events),
        workflow_tasks=kinds[EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED],
        actions=sum(kinds[kind] for kind in _ACTION_EVENTS),
        upserts=kinds[EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES],
        markers=kinds[EventType.EVENT_TYPE_MARKER_RECORDED],
    )


def record_call_costs(
    report: BenchReport, *, benchmark: str, engine: CallCost, baseline: CallCost, note: str
) -> None:
    """One figure per count, engine beside the bare baseline (no goal: they explain latency)."""
    for metric in ("events", "workflow_tasks", "actions", "upserts", "markers"):
        report.record(
            Figure(
                benchmark=benchmark,
                metric=f"{metric.replace('_', ' ')} per call",
                unit="",
                engine=float(getattr(engine, metric)),
                baseline=float(getattr(baseline, metric)),
                note=note,
            )
        )
