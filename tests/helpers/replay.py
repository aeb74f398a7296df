"""Replaying a call's recorded history with today's workflow code."""

from __future__ import annotations

from typing import Any

from temporalio.worker import Replayer

from scope_tool.client import DATA_CONVERTER
from scope_tool.workers import workflow_runner
from scope_tool.workflows import ToolCallWorkflow


async def assert_replays(handle: Any) -> None:
    """The call's history replays with today's ``ToolCallWorkflow`` (no non-determinism)."""
    history = await handle.workflow_handle.fetch_history()
    replayer = Replayer(
        workflows=[ToolCallWorkflow],
        data_converter=DATA_CONVERTER,
        workflow_runner=workflow_runner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
