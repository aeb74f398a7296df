"""A call's webhook notices, as the workflow sends them (deterministic workflow code).

Each notice is a ``scope_tool.Notify`` child workflow the call abandons
(``ParentClosePolicy.ABANDON``): the call waits only for the child to *start*, never for the
receiver, so a dead receiver no longer holds ``result()`` for the retry schedule (15 s). The
failure of a waiting notice is recorded in ``status().notify_errors`` while the call still runs;
a finished notice's fate is its own workflow's result (``{call_id}/notify/finished/r{round}``).

Calls started before this existed ran the notify activity themselves and waited for it; the
``workflow.patched`` marker keeps that path for their replay.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from scope_tool.wire import (
        ANNOUNCE_WORKFLOW,
        NOTIFY_ACTIVITY,
        NOTIFY_WORKFLOW,
        AnnounceInput,
        NotifyDelivery,
        NotifyInput,
        ToolCallInput,
    )

__all__ = ["NOTIFY_ATTEMPTS", "Notices"]

NOTIFY_ATTEMPTS = 5
_BY_CHILD = "notify-by-abandoned-child-workflow"

_Started = asyncio.Future["workflow.ChildWorkflowHandle[object, None] | None"]


class Notices:
    """The notices of one call: started, watched, and their failures."""

    def __init__(self, call: ToolCallInput) -> None:
        self._call = call
        self._errors: list[str] = []
        self._starting: list[asyncio.Task[None]] = []
        self._watching: list[asyncio.Task[None]] = []
        self._legacy: list[asyncio.Task[None]] = []

    def errors(self) -> tuple[str, ...]:
        """``"{event}: {what went wrong}"`` for each notice known to have failed."""
        return tuple(self._errors)

    def send(
        self, notice: NotifyInput, *, round_number: int, metric_tool: str, occasion: int = 0
    ) -> None:
        """Start delivering ``notice`` without waiting for it; ``occasion`` (a reminder's or an
        escalation's number within the round) makes its id its own."""
        if not workflow.patched(_BY_CHILD):
            self._legacy.append(asyncio.ensure_future(self._run_activity(notice)))
            return
        started: _Started = asyncio.get_running_loop().create_future()
        self._starting.append(
            asyncio.ensure_future(
                self._start(
                    notice,
                    started,
                    round_number=round_number,
                    metric_tool=metric_tool,
                    occasion=occasion,
                )
            )
        )
        if notice.event == "awaiting_input":
            # Left running when the call ends: the call records what it still sees.
            self._watching.append(asyncio.ensure_future(self._watch(notice, started)))

    def announce(self, question: AnnounceInput, *, round_number: int) -> None:
        """Start sending ``question`` through the call's channels (``scope_tool.Announce``,
        abandoned like a notice) without waiting for it."""
        self._starting.append(asyncio.ensure_future(self._announce(question, round_number)))

    async def _announce(self, question: AnnounceInput, round_number: int) -> None:
        try:
            await workflow.start_child_workflow(
                ANNOUNCE_WORKFLOW,
                question,
                id=f"{self._call.call_id}/announce/r{round_number}"
                + (f"/{question.occasion}" if question.occasion else ""),
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=f"announce {question.request_id} by {', '.join(question.channels)}",
            )
        except (WorkflowAlreadyStartedError, ChildWorkflowError) as err:
            self._errors.append(f"announce: not started: {describe(err)}")

    async def handed_over(self) -> None:
        """Wait until every notice has been started (the old path: delivered)."""
        if self._starting:
            await asyncio.gather(*self._starting)
        if self._legacy:
            await asyncio.gather(*self._legacy)

    async def _start(
        self,
        notice: NotifyInput,
        started: _Started,
        *,
        round_number: int,
        metric_tool: str,
        occasion: int,
    ) -> None:
        try:
            handle = await workflow.start_child_workflow(
                NOTIFY_WORKFLOW,
                NotifyDelivery(
                    notice=notice,
                    initial_interval_seconds=self._call.notify_initial_interval_seconds,
                    attempts=NOTIFY_ATTEMPTS,
                    metric_tool=metric_tool,
                ),
                id=f"{self._call.call_id}/notify/{notice.event}/r{round_number}"
                + (f"/{occasion}" if occasion else ""),
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=f"notify {notice.event} of {self._call.call_id}",
            )
        except (WorkflowAlreadyStartedError, ChildWorkflowError) as err:
            self._errors.append(f"{notice.event}: not started: {describe(err)}")
            started.set_result(None)
            return
        started.set_result(handle)

    async def _watch(self, notice: NotifyInput, started: _Started) -> None:
        handle = await started
        if handle is None:
            return
        try:
            await handle
        except ChildWorkflowError as err:
            self._errors.append(f"{notice.event}: {describe(err)}")

    async def _run_activity(self, notice: NotifyInput) -> None:
        try:
            await workflow.execute_activity(
                NOTIFY_ACTIVITY,
                notice,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=self._call.notify_initial_interval_seconds),
                    backoff_coefficient=2.0,
                    maximum_attempts=NOTIFY_ATTEMPTS,
                ),
                summary=f"notify {notice.event}",
            )
        except ActivityError as err:
            self._errors.append(f"{notice.event}: {describe(err)}")


def describe(err: BaseException) -> str:
    """An error and its causes, one line (at most four links)."""
    parts: list[str] = []
    current: BaseException | None = err
    while current is not None and len(parts) < 4:
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__
    return "; ".join(parts)
