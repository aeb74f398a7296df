"""The MCP front end's only doors into the engine: connecting, refusals, pollers, call ids.

Each concern that another part of the project is reshaping goes through one small function
here, so when the connection settings move into ``workflows`` or refusals become a typed
``RefusalReason``, this module is the one place that changes.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import time
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from scope_tool.client import AnswerRejectedError, ToolCalls

__all__ = ["WorkerCheck", "connect_calls", "derive_call_id", "refusal_reason"]

_RECENT_POLL = timedelta(seconds=120)
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
        """True when a worker polled the queue's workflow tasks in the last two minutes."""
        if time.monotonic() - self._seen_at < self._remember:
            return True
        client = self._calls.client
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=self._calls.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        now = datetime.now(UTC)
        for poller in response.pollers:
            seen = poller.last_access_time.ToDatetime(tzinfo=UTC)
            if now - seen <= _RECENT_POLL:
                self._seen_at = time.monotonic()
                return True
        return False


def derive_call_id(
    *, tool: str, arguments: bytes, scope: str, request_id: object, client_key: str | None
) -> str:
    """The durable call id of one ``tools/call``.

    A client that names the call (``_meta["scope-tool/call-id"]``) gets exactly that key, so
    any retry it makes, on any connection and any server process, attaches to the same call.
    Otherwise the id digests what the protocol gives: the connection scope (the Streamable
    HTTP session id, or this server process for stdio and stateless requests), the JSON-RPC
    request id, the tool and its arguments. A transport-level retry of the same message on the
    same session therefore attaches; a new request (new id) is a new call.

    Raises:
        ValueError: ``client_key`` is not 1-200 characters of ``[A-Za-z0-9._:-]``.
    """
    if client_key is not None:
        if not _KEY.match(client_key):
            raise ValueError(
                "_meta['scope-tool/call-id'] must be 1-200 characters of [A-Za-z0-9._:-],"
                f" got {client_key[:80]!r}"
            )
        return f"mcp-{tool}-{client_key}"
    digest = hashlib.sha256()
    for part in (scope, repr(request_id), tool):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    digest.update(arguments)
    return f"mcp-{tool}-{digest.hexdigest()[:24]}"
