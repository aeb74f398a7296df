"""The client side of routing: which tools are served, and why a round waits.

The workflow cannot see workers; the server can. ``DescribeTaskQueue`` lists a queue's pollers
(with the last time each polled; the server forgets a poller about five minutes after its last
poll), and the catalog workflow (``scope_tool.workflows._catalog``) holds what each worker published. This
module reads both for the facade: :func:`list_tools` (``ToolCalls.tools``),
:class:`ServedTools` (the start-time check, cached so the hot path adds no RPC) and
:func:`worker_wait` (the "waiting for a worker" line of a call's status).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from scope_tool._definition import NAME_PATTERN
from scope_tool.wire import (
    CATALOG_MEMO,
    ROUND_ACTIVITIES,
    CatalogInput,
    catalog_workflow_id,
    contract_queue,
    tool_queue,
)
from scope_tool.wire._status import CallStatus, Phase, RoundProgress, WorkerWait

__all__ = [
    "STUCK_AFTER",
    "ServedTools",
    "ToolInfo",
    "last_poll",
    "list_tools",
    "worker_wait",
    "workflow_task_wait",
]

STUCK_AFTER = timedelta(seconds=3)
"""A round scheduled this long ago and not started is waiting for a worker (a polling worker
with a free slot takes a round within milliseconds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInfo:
    """One tool the workers of a task queue serve now.

    ``description`` and ``input_schema`` are what new calls are admitted by (the newest version
    published); ``contract_digests`` lists every contract some live worker serves, the newest
    first, so calls started on an older one can still re-enter it.
    """

    name: str
    description: str
    input_schema: bytes
    contract_digests: tuple[str, ...]


async def last_poll(
    client: Client,
    queue: str,
    *,
    kind: TaskQueueType.ValueType = TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
) -> datetime | bool | None:
    """When a worker last polled ``queue`` for ``kind`` tasks (activities unless told): a time,
    ``None`` (no poller known), or ``False`` when the server could not say (the caller then
    assumes nothing)."""
    try:
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=kind,
            ),
            timeout=timedelta(seconds=5),
        )
    except RPCError:
        return False
    times = [
        poller.last_access_time.ToDatetime(tzinfo=UTC)
        for poller in response.pollers
        if poller.HasField("last_access_time")
    ]
    if times:
        return max(times)
    return None if not response.pollers else datetime.now(UTC)


async def list_tools(client: Client, task_queue: str) -> list[ToolInfo]:
    """The tools live workers serve on ``task_queue``, by name (empty when no worker published).

    A tool is listed when its own queue has pollers; its contracts when theirs have.
    """
    handle: WorkflowHandle[object, object] = client.get_workflow_handle(
        catalog_workflow_id(task_queue)
    )
    try:
        described = await handle.describe(rpc_timeout=timedelta(seconds=10))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return []  # no worker ever published on this task queue
        raise
    catalog: CatalogInput | None = await described.memo_value(
        CATALOG_MEMO, None, type_hint=CatalogInput
    )
    if catalog is None:
        return []
    newest: dict[str, tuple[int, str, bytes]] = {}
    digests: dict[str, list[tuple[int, str]]] = {}
    for order, worker in enumerate(catalog.workers):
        for tool in worker.tools:
            if tool.newest:
                newest[tool.name] = (order, tool.description, tool.input_schema)
            digests.setdefault(tool.name, []).append(
                (order if tool.newest else -1, tool.contract_digest)
            )
    names = sorted(newest)
    polled = await asyncio.gather(
        *(last_poll(client, tool_queue(task_queue, name)) for name in names)
    )
    found: list[ToolInfo] = []
    for name, seen in zip(names, polled, strict=True):
        if seen is None:
            continue
        ordered = [digest for _, digest in sorted(digests[name], reverse=True)]
        unique = list(dict.fromkeys(ordered))
        live = await asyncio.gather(
            *(last_poll(client, contract_queue(task_queue, name, digest)) for digest in unique)
        )
        _, description, schema = newest[name]
        found.append(
            ToolInfo(
                name=name,
                description=description,
                input_schema=schema,
                contract_digests=tuple(
                    digest for digest, seen in zip(unique, live, strict=True) if seen is not None
                ),
            )
        )
    return found


class ServedTools:
    """Whether a tool's queue has pollers, remembered for a while once it had.

    The facade asks once per tool per ``remember`` (a describe RPC), so starting calls of a
    served tool adds no RPC on the hot path; a tool with no pollers is asked again next time.
    """

    def __init__(self, client: Client, task_queue: str, *, remember: timedelta) -> None:
        self._client = client
        self._task_queue = task_queue
        self._remember = remember.total_seconds()
        self._served_until: dict[str, float] = {}

    async def served(self, tool: str) -> bool:
        """False only when the server says no worker polls the tool's queue."""
        if NAME_PATTERN.fullmatch(tool) is None:
            return False  # not a tool name: no worker serves it (and no queue is named so)
        now = time.monotonic()
        if self._served_until.get(tool, 0.0) > now:
            return True
        seen = await last_poll(self._client, tool_queue(self._task_queue, tool))
        if seen is None:
            return False
        if len(self._served_until) > 10_000:
            self._served_until.clear()
        self._served_until[tool] = now + self._remember
        return True


async def worker_wait(
    client: Client, handle: WorkflowHandle[object, object], status: CallStatus
) -> WorkerWait | None:
    """Why ``status``'s round has not started, if it has waited :data:`STUCK_AFTER` already.

    No RPC unless the workflow reports a round scheduled that long ago; then one describe of
    the call (is the round's activity still only scheduled?) and one of its queue.
    """
    route = status.route
    if status.phase is not Phase.RUNNING or route is None:
        return None
    if datetime.now(UTC) - route.scheduled_at < STUCK_AFTER:
        return None
    description = await handle.describe()
    scheduled = [
        activity
        for activity in description.raw_description.pending_activities
        if activity.activity_type.name in ROUND_ACTIVITIES
        and activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
    ]
    if not scheduled:
        return None
    seen = await last_poll(client, route.task_queue)
    return WorkerWait(
        tool=status.tool,
        contract_digest=route.contract_digest,
        task_queue=route.task_queue,
        waiting_since=route.scheduled_at,
        last_poll_at=seen if isinstance(seen, datetime) else None,
    )


async def round_progress(
    client: Client, handle: WorkflowHandle[object, object], status: CallStatus
) -> RoundProgress | None:
    """The running round's last heartbeat details, when its tool reported anything.

    One describe of the call, only while it is RUNNING (a waiting or ended call has no round
    in flight).
    """
    if status.phase is not Phase.RUNNING:
        return None
    description = await handle.describe()
    for activity in description.raw_description.pending_activities:
        if activity.activity_type.name not in ROUND_ACTIVITIES:
            continue
        if not activity.HasField("heartbeat_details") or not activity.heartbeat_details.payloads:
            continue
        try:
            (details,) = await client.data_converter.decode(activity.heartbeat_details.payloads[:1])
        except Exception:
            return None
        if not isinstance(details, dict):
            return None
        progress = RoundProgress(
            idempotency_key=_text_or_none(details.get("idempotency_key")),
            progress=_number_or_none(details.get("progress")),
            total=_number_or_none(details.get("total")),
            message=_text_or_none(details.get("message")),
        )
        return progress if progress != RoundProgress() else None
    return None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number_or_none(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def workflow_task_wait(
    client: Client, handle: WorkflowHandle[object, object], *, tool: str, task_queue: str
) -> WorkerWait | None:
    """Whether the call's own workflow task has waited :data:`STUCK_AFTER` for a worker.

    That is the wait :func:`worker_wait` cannot see: with no worker on the main queue at all
    (every worker stopped), the ``status`` query has nobody to answer it either, so this reads
    the call's description instead (one describe, and one of the queue when it waits).
    """
    description = await handle.describe()
    raw = description.raw_description
    if not raw.HasField("pending_workflow_task"):
        return None
    task = raw.pending_workflow_task
    if task.state != PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED:
        return None
    since = task.scheduled_time.ToDatetime(tzinfo=UTC)
    if datetime.now(UTC) - since < STUCK_AFTER:
        return None
    seen = await last_poll(client, task_queue, kind=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    return WorkerWait(
        tool=tool,
        contract_digest=None,
        task_queue=task_queue,
        waiting_since=since,
        last_poll_at=seen if isinstance(seen, datetime) else None,
    )
