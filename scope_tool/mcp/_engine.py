"""The MCP front end's only doors into the engine: connecting, refusals, pollers, call ids.

Each concern that another part of the project is reshaping goes through one small function
here, so when the connection settings move into ``workflows`` or refusals become a typed
``RefusalReason``, this module is the one place that changes.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import time
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.service import RPCError, RPCStatusCode

from scope_tool import Principal, wire
from scope_tool.client import AnswerRejectedError, ToolCallHandle, ToolCalls

__all__ = ["CallOwners", "WorkerCheck", "connect_calls", "derive_call_id", "refusal_reason"]

_RECENT_POLL = timedelta(seconds=120)
_SETTLE_SECONDS = 3.0
"""How long an empty poller list is asked again before "no worker" counts."""
"""A poller seen this recently counts as alive (an idle worker re-polls about every minute)."""

_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


async def connect_calls(args: argparse.Namespace) -> ToolCalls:
    """Connect with the same flags and ``SCOPE_TOOL_*`` settings as every other command."""
    from scope_tool.serving._connection import connect, settings_from_args

    return await connect(settings_from_args(args))


def refusal_reason(error: AnswerRejectedError) -> str:
    """Why an answer was refused, as its stable string value (``"schema"``, ...)."""
    return str(getattr(error.reason, "value", error.reason))


class WorkerCheck:
    """Whether any worker polls the task queue, remembered for a few seconds.

    A call started with no worker would wait silently; asking Temporal for the queue's pollers
    (``DescribeTaskQueue``) first turns that into a clear error.
    """

    def __init__(self, calls: ToolCalls, *, remember_seconds: float = 5.0) -> None:
        self._calls = calls
        self._remember = remember_seconds
        self._seen_at = float("-inf")

    async def has_worker(self) -> bool:
        """True when a worker polled the queue's workflow tasks in the last two minutes.

        A worker that has just started (``scope-tool dev`` prints ready once its worker says
        so) may not have reached the server with its first poll yet, so an empty answer is
        asked again for up to :data:`_SETTLE_SECONDS` before it counts.
        """
        if time.monotonic() - self._seen_at < self._remember:
            return True
        deadline = time.monotonic() + _SETTLE_SECONDS
        while True:
            if await self._polled():
                self._seen_at = time.monotonic()
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.25)

    async def _polled(self) -> bool:
        client = self._calls.client
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=self._calls.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        now = datetime.now(UTC)
        return any(
            now - poller.last_access_time.ToDatetime(tzinfo=UTC) <= _RECENT_POLL
            for poller in response.pollers
        )


class CallOwners:
    """Who started each call (its :class:`~scope_tool.Principal`), read from its history.

    The principal is in the workflow's start input, so it is read from the first history event
    and needs no worker (a status query would, and its error would then differ for a call that
    exists). A call's owner never changes, so answers are remembered.
    """

    def __init__(self, calls: ToolCalls, *, remember: int = 4096) -> None:
        self._calls = calls
        self._known: dict[str, Principal | None] = {}
        self._remember = remember

    async def owner(self, handle: ToolCallHandle) -> Principal | None:
        """The call's principal; raises ``LookupError`` when there is no such call."""
        call_id = handle.call_id
        if call_id in self._known:
            return self._known[call_id]
        first = None
        try:
            async for event in handle.workflow_handle.fetch_history_events(page_size=1):
                first = event
                break
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise LookupError(call_id) from None
            raise
        if first is None or not first.HasField("workflow_execution_started_event_attributes"):
            raise LookupError(call_id)
        payloads = first.workflow_execution_started_event_attributes.input.payloads
        [started] = await self._calls.client.data_converter.decode(payloads, [wire.ToolCallInput])
        owner = started.principal if isinstance(started, wire.ToolCallInput) else None
        if len(self._known) >= self._remember:
            self._known.pop(next(iter(self._known)))
        self._known[call_id] = owner
        return owner


def owner_tag(owner: Principal | None) -> str:
    """A short, stable tag of a principal, scoping the call ids its clients name."""
    text = "\x00".join((owner.user, owner.tenant or "")) if owner is not None else ""
    return hashlib.sha256(b"scope-tool/mcp-owner\x00" + text.encode("utf-8")).hexdigest()[:16]


def derive_call_id(
    *,
    tool: str,
    arguments: bytes,
    scope: str,
    request_id: object,
    client_key: str | None,
    owner: Principal | None = None,
) -> str:
    """The durable call id of one ``tools/call``; two principals never share one.

    A client that names the call (``_meta["scope-tool/call-id"]``) gets that key scoped by its
    principal: ``mcp-<tool>-<key>`` without credentials, ``mcp-<tool>-<key>@<owner tag>``
    with them (``@`` is outside the key's alphabet, so no key reaches another principal's id).
    Any retry it makes, on any connection and any server process, attaches to the same call.
    Otherwise the id digests the principal, the connection scope (the Streamable HTTP session
    id, or a nonce the server draws for each stateless request), the JSON-RPC request id, the
    tool and its arguments: a transport-level retry on the same session attaches, a new request
    is a new call, and two clients that both start at request id 1 get two calls.

    Raises:
        ValueError: ``client_key`` is not 1-200 characters of ``[A-Za-z0-9._:-]``.
    """
    if client_key is not None:
        if not _KEY.match(client_key):
            raise ValueError(
                "_meta['scope-tool/call-id'] must be 1-200 characters of [A-Za-z0-9._:-],"
                f" got {client_key[:80]!r}"
            )
        if owner is None:
            return f"mcp-{tool}-{client_key}"
        return f"mcp-{tool}-{client_key}@{owner_tag(owner)}"
    digest = hashlib.sha256()
    for part in (owner_tag(owner), scope, repr(request_id), tool):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    digest.update(arguments)
    return f"mcp-{tool}-{digest.hexdigest()[:24]}"
