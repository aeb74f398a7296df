"""``scope_tool.Notify``: deliver one webhook notice with retries, apart from the call.

A call starts one of these per notice as a child workflow it abandons
(``ParentClosePolicy.ABANDON``): the call's outcome never waits for a receiver, and a notice
still being retried when the call ends keeps being retried. A notice the worker refuses (a URL
outside ``SCOPE_TOOL_NOTIFY_ALLOWED``) is not retried. The delivery's fate is this workflow's
own result (id ``{call_id}/notify/{event}/r{round}``); the call records the failures of the
notices it was still running for (``status().notify_errors``).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from scope_tool.wire import NOTIFY_ACTIVITY, NOTIFY_WORKFLOW, NotifyDelivery

__all__ = ["NOTIFY_REFUSED", "NotifyWorkflow"]

NOTIFY_REFUSED = "NotifyRefused"
"""The error type of a notice the worker will not send; never retried."""


@workflow.defn(name=NOTIFY_WORKFLOW, sandboxed=False)
class NotifyWorkflow:
    """One notice, retried with exponential backoff up to ``attempts`` times."""

    @workflow.run
    async def run(self, delivery: NotifyDelivery) -> None:
        """POST the notice through the ``scope_tool.notify`` activity.

        A notice that fails every try is counted here, once, as
        ``scope_tool_notifications_failed{tool, event}`` (the call may have ended long before).
        """
        try:
            await self._deliver(delivery)
        except ActivityError:
            workflow.metric_meter().create_counter(
                "scope_tool_notifications_failed", "webhook notices that failed every retry"
            ).add(
                1,
                {
                    "tool": delivery.metric_tool or delivery.notice.tool,
                    "event": delivery.notice.event,
                },
            )
            raise

    async def _deliver(self, delivery: NotifyDelivery) -> None:
        await workflow.execute_activity(
            NOTIFY_ACTIVITY,
            delivery.notice,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=delivery.initial_interval_seconds),
                backoff_coefficient=2.0,
                maximum_attempts=delivery.attempts,
                non_retryable_error_types=[NOTIFY_REFUSED],
            ),
            summary=f"notify {delivery.notice.event}",
        )
