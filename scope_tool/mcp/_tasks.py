"""The MCP tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28), backed by calls.

The ``mcp`` SDK carries task types but no task runtime, so this module serves the extension's
three methods itself. A task *is* a durable call: the task id is the call id, ``tasks/get``
reads the call's status (``working`` / ``input_required`` with the pending question as an
elicitation / the final result), ``tasks/update`` answers through the call's validated answer
path, ``tasks/cancel`` cancels the call. Nothing is kept in the MCP process, so a task id
survives a restart of the server, of the worker, and of the client.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import Field

from scope_tool.client import CallStatus, Phase, ToolCallHandle
from scope_tool.mcp._asking import apply_reply, question_for
from scope_tool.mcp._forms import prompt_message
from scope_tool.mcp._options import McpOptions
from scope_tool.mcp._results import outcome_result


class ScopeToolServer(Protocol):
    """What the tasks handlers need of the server (its options, and how it finds a call)."""

    options: McpOptions

    async def owned(self, ctx: ServerRequestContext[Any], call_id: str) -> ToolCallHandle: ...

    def answerer(self, ctx: ServerRequestContext[Any]) -> str: ...

    async def status_of(self, handle: ToolCallHandle) -> CallStatus: ...


__all__ = ["created_task", "register_tasks"]

_POLL_INTERVAL_MS = 1000


class TaskIdParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel`` params."""

    task_id: str


class UpdateTaskParams(TaskIdParams):
    """``tasks/update`` params: replies keyed by the input request keys we issued."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


async def created_task(server: ScopeToolServer, handle: ToolCallHandle) -> dict[str, Any]:
    """The ``CreateTaskResult`` for a started call (``start`` returned: the task exists)."""
    task = await _task(server, handle, detailed=False)
    return {"resultType": "task", **task}


def register_tasks(lowlevel: Server[Any], server: ScopeToolServer) -> None:
    """Serve ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on ``lowlevel``."""

    async def get(ctx: ServerRequestContext[Any], params: TaskIdParams) -> dict[str, Any]:
        handle = await server.owned(ctx, params.task_id)
        return await _task(server, handle, detailed=True, ctx=ctx)

    async def update(ctx: ServerRequestContext[Any], params: UpdateTaskParams) -> dict[str, Any]:
        handle = await server.owned(ctx, params.task_id)
        status = await server.status_of(handle)
        pending = status.pending
        if pending is None:
            return {}  # nothing outstanding: replies to unknown keys are ignored (spec)
        reply = params.input_responses.get(pending.request_id)
        question = question_for(
            pending,
            call_id=handle.call_id,
            tool=status.tool,
            capabilities=ctx.session.client_capabilities,
            inbox_url=server.options.inbox_url,
        )
        if reply is None or question is None:
            return {}
        outcome = await apply_reply(handle, question, reply, answered_by=server.answerer(ctx))
        if outcome.refusal is not None and outcome.reason != "stale_request":
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=outcome.refusal,
                data={"reason": outcome.reason, "taskId": handle.call_id},
            )
        return {}

    async def cancel(ctx: ServerRequestContext[Any], params: TaskIdParams) -> dict[str, Any]:
        handle = await server.owned(ctx, params.task_id)
        await server.status_of(handle)  # a missing task is an error, not a silent ack
        await handle.cancel()
        return {}

    lowlevel.add_request_handler("tasks/get", TaskIdParams, get)
    lowlevel.add_request_handler("tasks/update", UpdateTaskParams, update)
    lowlevel.add_request_handler("tasks/cancel", TaskIdParams, cancel)


async def _task(
    server: ScopeToolServer,
    handle: ToolCallHandle,
    *,
    detailed: bool,
    ctx: ServerRequestContext[Any] | None = None,
) -> dict[str, Any]:
    status = await server.status_of(handle)
    description = await handle.workflow_handle.describe()
    created = description.start_time or datetime.now(UTC)
    updated = description.close_time or (status.pending.asked_at if status.pending else None)
    task: dict[str, Any] = {
        "taskId": handle.call_id,
        "status": "working",
        "createdAt": created.isoformat(),
        "lastUpdatedAt": (updated or datetime.now(UTC)).isoformat(),
        "ttlMs": None,
        "pollIntervalMs": _POLL_INTERVAL_MS,
    }
    if status.phase.is_terminal:
        outcome = status.outcome or await handle.result()
        cancelled = outcome.phase is Phase.CANCELLED
        task["status"] = "cancelled" if cancelled else "completed"
        task["statusMessage"] = f"call {handle.call_id} ended {outcome.phase.value}"
        if detailed and not cancelled:
            result = outcome_result(outcome, call_id=handle.call_id)
            task["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return task
    if status.pending is None:
        task["statusMessage"] = f"call {handle.call_id} is running"
        return task
    task["status"] = "input_required"
    task["statusMessage"] = f"call {handle.call_id} waits for a person's answer"
    if detailed and ctx is not None:
        question = question_for(
            status.pending,
            call_id=handle.call_id,
            tool=status.tool,
            capabilities=ctx.session.client_capabilities,
            inbox_url=server.options.inbox_url,
        )
        if question is not None:
            task["inputRequests"] = {
                question.request_id: question.elicitation.model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
            }
        else:
            # A client without elicitation cannot show a form: give it the question as text
            # and where a person answers it.
            task["inputRequests"] = {}
            task["statusMessage"] = _answer_elsewhere(
                prompt_message(status.pending.prompt, call_id=handle.call_id, tool=status.tool),
                call_id=handle.call_id,
                inbox_url=server.options.inbox_url,
            )
    return task


def _answer_elsewhere(question: str, *, call_id: str, inbox_url: str | None) -> str:
    """The question as text, then the inbox page (when configured) and the CLI command."""
    lines = [f"call {call_id} waits for a person's answer.", question]
    if inbox_url:
        lines.append(f"Answer it on the inbox page: {inbox_url.rstrip('/')}/calls/{quote(call_id)}")
    lines.append(f"Or: scope-tool answer {call_id} '<JSON answer>'")
    return "\n\n".join(lines)
