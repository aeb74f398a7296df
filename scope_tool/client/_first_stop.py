"""Start a call and return at its first stop: one update-with-start round trip.

The workflow's ``first_stop`` update completes once the call is not RUNNING (it ended, or waits
for a person) and returns the ``status`` value. Sent with the start as update-with-start
(``WorkflowIDConflictPolicy.USE_EXISTING``), a new call and a running call of the same id both
answer in one round trip, where ``start`` plus polling ``status`` needs several.

``start``'s rules hold unchanged:

* a running call with this id is attached to; its ``first_stop`` validator refuses the update
  when the call was started for another request (the update id carries the request's digest,
  ``wire.first_stop_update_id``), which becomes :class:`~scope_tool.wire.errors.CallConflictError`;
* a finished call with this id (``REJECT_DUPLICATE`` refuses the start) and a server without
  update-with-start both fall back to ``start`` (which attaches, checking the request from the
  call's history) and the polled ``status``.

A first stop can be minutes away for want of a worker (every worker stopped, or none serves the
tool any more). It is not silent: after :data:`WORKER_WAIT_REPORT_AFTER` a watcher looks (a
describe every few seconds, no RPC before) and reports the call id and the worker it waits for,
once per wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, TypedDict

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from scope_tool.client._routing import workflow_task_wait
from scope_tool.wire import (
    FIRST_STOP,
    PHASE_KEY,
    TOOL_KEY,
    WORKFLOW_NAME,
    ToolCallInput,
    first_stop_update_id,
)
from scope_tool.wire._status import CallOutcome, CallStatus, Phase, WorkerWait
from scope_tool.wire.errors import CallConflictError, ToolCallsError
from scope_tool.wire.web_ui_text import start_details, start_summary

if TYPE_CHECKING:
    from scope_tool.client._handle import ToolCallHandle

__all__ = [
    "WORKER_WAIT_REPORT_AFTER",
    "StartOptions",
    "WorkerWaitReport",
    "refused_start",
    "start_at_first_stop",
    "start_options",
    "wait_for_stop",
]

_FIRST_POLL: Final = 0.01
_MAX_POLL: Final = 0.25
_POLL_GROWTH: Final = 1.5

_NOT_SUPPORTED: Final = (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.PERMISSION_DENIED)
"""How a server without (or with disabled) update-with-start refuses ExecuteMultiOperation."""

WORKER_WAIT_REPORT_AFTER: Final = timedelta(seconds=4)
"""How long a first stop waits before looking whether the call waits for a worker (a round a
polling worker takes starts within milliseconds), and then how often it looks again."""

WorkerWaitReport = Callable[[str, WorkerWait], object]
"""Told the call id and the worker it waits for (``start_and_wait(on_worker_wait=...)``)."""

_log = logging.getLogger("scope_tool.client")


class StartOptions(TypedDict):
    """The workflow options of a call's start, the same for ``start`` and update-with-start."""

    id: str
    task_queue: str
    result_type: type[CallOutcome]
    id_conflict_policy: WorkflowIDConflictPolicy
    id_reuse_policy: WorkflowIDReusePolicy
    search_attributes: TypedSearchAttributes
    static_summary: str
    static_details: str


def start_options(call: ToolCallInput, *, task_queue: str) -> StartOptions:
    """How ``call`` starts: its id attaches to a running call and never reuses a finished one;
    it is listed by its tool, phase RUNNING, and described in the Web UI."""
    attributes = [
        SearchAttributePair(TOOL_KEY, call.tool),
        SearchAttributePair(PHASE_KEY, Phase.RUNNING.value),
    ]
    return {
        "id": call.call_id,
        "task_queue": task_queue,
        "result_type": CallOutcome,
        "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
        "id_reuse_policy": WorkflowIDReusePolicy.REJECT_DUPLICATE,
        "search_attributes": TypedSearchAttributes(attributes),
        "static_summary": start_summary(call.tool),
        "static_details": start_details(call.tool, call.arguments),
    }


async def start_at_first_stop(
    client: Client,
    task_queue: str,
    get: Callable[[str], ToolCallHandle],
    call: ToolCallInput,
    start: Callable[[], Awaitable[ToolCallHandle]],
    *,
    max_wait: timedelta | None,
    on_worker_wait: WorkerWaitReport | None = None,
) -> tuple[ToolCallHandle, CallStatus]:
    """Update-with-start ``first_stop`` for the checked input ``call``; see the module docstring.

    ``get`` is ``ToolCalls.get`` (a handle on a call id); ``start`` is ``ToolCalls.start`` bound
    to the same arguments: the fallback path. ``on_worker_wait`` is told when the call waits
    for a worker (``None``: a warning of the ``scope_tool.client`` logger says so).
    """
    watcher = asyncio.create_task(
        _watch_for_worker(client, task_queue, get, call, on_worker_wait or _warn_worker_wait)
    )
    try:
        return await _first_stop(client, task_queue, get, call, start, max_wait=max_wait)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


def _warn_worker_wait(call_id: str, wait: WorkerWait) -> None:
    _log.warning(
        "call %s is %s; it goes on when such a worker runs (or end it: scope-tool cancel %s)",
        call_id,
        wait.message,
        call_id,
    )


async def _watch_for_worker(
    client: Client,
    task_queue: str,
    get: Callable[[str], ToolCallHandle],
    call: ToolCallInput,
    report: WorkerWaitReport,
) -> None:
    """Report each new wait of the call for a worker, until cancelled (best effort: a look
    that fails is tried again next time, never raised into the first stop)."""
    told: str | None = None
    while True:
        await asyncio.sleep(WORKER_WAIT_REPORT_AFTER.total_seconds())
        handle = get(call.call_id)
        try:
            wait = await workflow_task_wait(
                client, handle.workflow_handle, tool=call.tool, task_queue=task_queue
            )
            if wait is None:
                status = await handle.status(wait_for_worker=WORKER_WAIT_REPORT_AFTER)
                wait = status.waiting_for_worker
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the call not created yet, a query nobody answered...
            _log.debug("looking whether call %s waits for a worker: %s", call.call_id, err)
            continue
        if wait is not None and wait.message != told:
            told = wait.message
            report(call.call_id, wait)


async def _first_stop(
    client: Client,
    task_queue: str,
    get: Callable[[str], ToolCallHandle],
    call: ToolCallInput,
    start: Callable[[], Awaitable[ToolCallHandle]],
    *,
    max_wait: timedelta | None,
) -> tuple[ToolCallHandle, CallStatus]:
    operation: WithStartWorkflowOperation[Any, CallOutcome] = WithStartWorkflowOperation(
        WORKFLOW_NAME, call, **start_options(call, task_queue=task_queue)
    )
    update_id = first_stop_update_id(call.tool, call.arguments, nonce=uuid.uuid4().hex)
    update = client.execute_update_with_start_workflow(
        FIRST_STOP, start_workflow_operation=operation, id=update_id, result_type=CallStatus
    )
    timed_out = False
    try:
        if max_wait is None:
            status: CallStatus = await update
        else:
            status = await asyncio.wait_for(update, max_wait.total_seconds())
    except WorkflowAlreadyStartedError:
        pass  # the call has finished: start attaches to it (or finds the conflict)
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        timed_out = True  # still running at max_wait (started or not, start is idempotent)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == "CallConflict":
            existing = str(cause.details[0]) if cause.details else ""
            raise CallConflictError(
                call.call_id, existing_tool=existing, same_tool=existing == call.tool
            ) from None
        raise ToolCallsError(f"first stop of call {call.call_id!r} failed: {cause}") from err
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            raise refused_start(call.call_id, call.tool, err) from None
        if err.status not in _NOT_SUPPORTED:
            raise
        # No update-with-start on this server: start and poll.
    else:
        return get(call.call_id), status
    finally:
        _settle_start(operation)
    handle = await start()
    if timed_out:
        return handle, await handle.status()
    return handle, await wait_for_stop(handle, max_wait=max_wait)


def _settle_start(operation: WithStartWorkflowOperation[Any, CallOutcome]) -> None:
    """Retrieve the start handle's failure, if the update left one there.

    When the update fails before the server confirms the start (cancelled at ``max_wait``,
    "already started" on attach, an RPC error), the SDK fails the operation's start handle
    with the same error. Nothing else awaits that handle, so asyncio would log "Future
    exception was never retrieved", with a traceback, whenever it is collected.

    temporalio offers only ``await operation.workflow_handle()``, which would wait forever on
    a start that was never attempted, so this reads the handle's future when it is done. If a
    later SDK renames it, this does nothing and the test of the timed-out first stop fails.
    """
    started = getattr(operation, "_workflow_handle", None)
    if isinstance(started, asyncio.Future) and started.done() and not started.cancelled():
        started.exception()


def refused_start(call_id: str, tool: str, err: RPCError) -> ValueError:
    """The server refused the call's shape (``INVALID_ARGUMENT``): nothing was started.

    For instance a tool name too long for its search attribute, or arguments past the payload
    limit; the start and the update-with-start both raise this.
    """
    return ValueError(f"call {call_id[:80]!r} of tool {tool[:80]!r} was not started: {err.message}")


async def wait_for_stop(handle: ToolCallHandle, *, max_wait: timedelta | None = None) -> CallStatus:
    """Poll ``status`` until the call stops (ended or waiting), or ``max_wait`` passes."""
    deadline = None if max_wait is None else time.monotonic() + max_wait.total_seconds()
    delay = _FIRST_POLL
    while True:
        status = await handle.status()
        if status.phase is not Phase.RUNNING:
            return status
        if deadline is not None and time.monotonic() >= deadline:
            return status
        pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
        await asyncio.sleep(pause)
        delay = min(delay * _POLL_GROWTH, _MAX_POLL)
