"""``scope_tool.Announce``: send one waiting question through the call's channels, apart from it.

A call started with ``channels`` (``"email"``, ``"slack"``) starts one of these each time it
starts waiting, as a child workflow it abandons (id ``{call_id}/announce/r{round}``, so a
question is announced once however often the call's workflow task replays). It runs one
activity per channel, each retried; the activities keep a ledger so a retry after a crash
sends no message twice (see ``scope_tool.workers._channels``). Its fate never changes or
delays the call: a person can always answer from the inbox or the CLI.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from scope_tool.wire import (
        ANNOUNCE_WORKFLOW,
        POST_SLACK_ACTIVITY,
        SEND_EMAIL_ACTIVITY,
        AnnounceInput,
    )

__all__ = ["CHANNEL_REFUSED", "AnnounceWorkflow"]

CHANNEL_REFUSED = "ChannelRefused"
"""The error type of a message the worker cannot send as configured; never retried."""

_ACTIVITIES = {"email": SEND_EMAIL_ACTIVITY, "slack": POST_SLACK_ACTIVITY}


@workflow.defn(name=ANNOUNCE_WORKFLOW, sandboxed=False)
class AnnounceWorkflow:
    """One question, sent through each of its channels (activities in parallel, retried)."""

    @workflow.run
    async def run(self, announce: AnnounceInput) -> None:
        """Run each channel's activity; the first channel that failed every try fails this."""
        sends = [
            workflow.execute_activity(
                _ACTIVITIES[channel],
                announce,
                start_to_close_timeout=timedelta(minutes=2),
                # A live sender heartbeats every second; a lost one is retried within seconds.
                heartbeat_timeout=timedelta(seconds=5),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=1),
                    backoff_coefficient=2.0,
                    maximum_interval=timedelta(minutes=5),
                    maximum_attempts=12,
                    non_retryable_error_types=[CHANNEL_REFUSED],
                ),
                summary=f"{channel} {announce.request_id}",
            )
            for channel in announce.channels
            if channel in _ACTIVITIES
        ]
        results = await asyncio.gather(*sends, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
