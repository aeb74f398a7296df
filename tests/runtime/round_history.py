"""Where each round of a call was scheduled and how that attempt ended, read from its history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType, TimeoutType

from scope_tool.client import DATA_CONVERTER
from scope_tool.wire import ROUND_ACTIVITIES, CallToolInput

__all__ = ["RoundAttempt", "round_attempts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundAttempt:
    """One scheduled round activity: its round, type, task queue, pinned contract and ending.

    ``ended`` is ``completed``, ``running``, ``cancelled``, the application failure's type
    (``NotServedHere``...), or ``timed_out:<TIMEOUT_TYPE>``.
    """

    round: int
    activity: str
    task_queue: str
    contract_digest: str | None
    ended: str


async def round_attempts(handle: Any) -> list[RoundAttempt]:
    """Every round activity the call scheduled, in order."""
    history = await handle.workflow_handle.fetch_history()
    scheduled: dict[int, tuple[CallToolInput, str, str]] = {}
    ended: dict[int, str] = {}
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name not in ROUND_ACTIVITIES:
                continue
            [round_input] = await DATA_CONVERTER.decode(attributes.input.payloads, [CallToolInput])
            scheduled[event.event_id] = (
                round_input,
                attributes.activity_type.name,
                attributes.task_queue.name,
            )
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            ended[event.activity_task_completed_event_attributes.scheduled_event_id] = "completed"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failed = event.activity_task_failed_event_attributes
            info = failed.failure.application_failure_info
            ended[failed.scheduled_event_id] = info.type or "failed"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            timed_out = event.activity_task_timed_out_event_attributes
            timeout = timed_out.failure.timeout_failure_info.timeout_type
            ended[timed_out.scheduled_event_id] = f"timed_out:{TimeoutType.Name(timeout)}"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
            ended[event.activity_task_canceled_event_attributes.scheduled_event_id] = "cancelled"
    return [
        RoundAttempt(
            round=round_input.round,
            activity=activity,
            task_queue=queue,
            contract_digest=round_input.contract_digest,
            ended=ended.get(event_id, "running"),
        )
        for event_id, (round_input, activity, queue) in scheduled.items()
    ]
