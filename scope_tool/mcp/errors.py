"""Errors of the MCP front end.

They derive from the protocol's one base, so ``except ToolError`` catches everything scope-tool
raises for a reason of its own::

    scope_tool.errors.ToolError
    └── McpFrontEndError
        ├── McpSettingsError   a setting of `scope-tool mcp` is malformed (nothing started)
        └── NoWorkerError      no worker polls the task queue, so a call would never run
"""

from __future__ import annotations

from scope_tool.errors import ToolError

__all__ = ["McpFrontEndError", "McpSettingsError", "NoWorkerError"]


class McpFrontEndError(ToolError):
    """Base of the errors raised by :mod:`scope_tool.mcp`."""


class McpSettingsError(McpFrontEndError, ValueError):
    """A setting is malformed; the message names the setting and the value."""


class NoWorkerError(McpFrontEndError):
    """No worker polls the task queue: a started call would wait forever, so none is started.

    Attributes:
        task_queue: the queue that has no poller.
        call_id: the existing call that cannot progress, or ``None`` when none was started.
    """

    def __init__(self, task_queue: str, *, call_id: str | None = None) -> None:
        consequence = (
            "no call was started"
            if call_id is None
            else f"call {call_id} is kept in Temporal and goes on when a worker polls"
        )
        super().__init__(
            f"no worker polls task queue {task_queue!r}: start one for the same registry"
            f" (`scope-tool worker --tools module:attr --task-queue {task_queue}`); {consequence}"
        )
        self.task_queue = task_queue
        self.call_id = call_id
