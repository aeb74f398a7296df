"""Which queues a worker polls for its tools, and the worker that polls them all.

A registry's tool ``t`` with contract digest ``d`` is served on two queues: ``task_queue@t``
(round 1 of new calls) and ``task_queue@t@d[:16]`` (later rounds of calls that started on that
contract). With several versions of a registry (newest first), the first version holding ``t``
serves ``task_queue@t``, and every distinct contract of ``t`` serves its own queue: calls that
started on an old contract drain on it while new calls use the new one.

:class:`RoundsHere` is the round activity of the main queue itself: a routed round is offered
there first, so Temporal can hand it to the worker that just ran the workflow task (eager
dispatch, no server round trip); it serves every tool and contract of every version, and refuses
(``NOT_SERVED_HERE``, before running anything) a round this worker cannot run as routed.

:class:`ToolWorker` runs one Temporal worker per queue on one client and publishes its catalog
to the task queue's catalog workflow at startup (signal-with-start), withdrawing it on the way
out, so ``scope-tool tools`` lists what the running workers serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.service import RPCError
from temporalio.worker import Worker

from scope_tool import Registry
from scope_tool.wire import (
    CALL_TOOL_ACTIVITY,
    CALL_TOOL_HERE_ACTIVITY,
    CATALOG_WORKFLOW_NAME,
    NOT_SERVED_HERE,
    PUBLISH,
    RELEASE_ROUND_ACTIVITY,
    WITHDRAW,
    CallToolInput,
    CatalogInput,
    CatalogTool,
    ReleaseInput,
    RoundErrored,
    RoundResult,
    WorkerCatalog,
    catalog_workflow_id,
    contract_queue,
    tool_queue,
)
from scope_tool.workers._activities import Releases, ToolActivities

__all__ = ["PinnedRounds", "RoundsHere", "Route", "ToolWorker", "new_worker_id", "route_plan"]

_log = logging.getLogger(__name__)

_CATALOG_RPC_TIMEOUT = timedelta(seconds=5)
_POLLED_WITHIN = timedelta(seconds=10)
"""Publishing or withdrawing never holds up a worker's start or stop for longer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """One queue a worker polls: for which registry version, and the tool it publishes.

    ``tool`` is set on the contract queue (one catalog entry per version of a tool).
    """

    queue: str
    version: int
    tool: CatalogTool | None = None


def route_plan(versions: Sequence[Registry], *, task_queue: str) -> list[Route]:
    """The tool and contract queues for ``versions`` (newest first), each queue once."""
    routes: list[Route] = []
    queues: set[str] = set()
    for index, registry in enumerate(versions):
        for definition in registry.definitions():
            binding = registry.resolve(definition.name)
            assert binding is not None  # a registry resolves each of its definitions
            digest = binding.contract.digest
            newest = tool_queue(task_queue, definition.name)
            if newest not in queues:
                queues.add(newest)
                routes.append(Route(queue=newest, version=index))
            contract = contract_queue(task_queue, definition.name, digest)
            if contract in queues:
                continue
            queues.add(contract)
            routes.append(
                Route(
                    queue=contract,
                    version=index,
                    tool=CatalogTool(
                        name=definition.name,
                        description=definition.description,
                        input_schema=definition.input_schema,
                        contract_digest=digest,
                        newest=_first_holder(versions, definition.name) == index,
                    ),
                )
            )
    return routes


def new_worker_id() -> str:
    """This worker's id: host, process and a random part (unique across restarts)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _first_holder(versions: Sequence[Registry], name: str) -> int:
    return next(index for index, each in enumerate(versions) if each.resolve(name) is not None)


class RoundsHere:
    """The main queue's round activity: runs a round as its own queue's worker would, or refuses.

    Round 1 runs in the first version holding the tool (the one serving ``task_queue@tool``); a
    re-entry in the version whose contract has the call's digest (the one serving its contract
    queue). Anything else is refused with a non-retryable ``NOT_SERVED_HERE`` error of category
    BENIGN (logged at debug level, no failure metric): nothing has run, and the workflow sends
    the round to the routed queue, where only a worker that serves it takes it.
    """

    def __init__(self, versions: Sequence[Registry], activities: Sequence[ToolActivities]) -> None:
        self._versions = tuple(versions)
        self._activities = tuple(activities)

    def version_for(self, tool: str, contract_digest: str | None) -> int | None:
        """Which version runs this round here (None: this worker does not serve it)."""
        for index, registry in enumerate(self._versions):
            binding = registry.resolve(tool)
            if binding is None:
                continue
            if contract_digest is None or binding.contract.digest == contract_digest:
                return index
        return None

    @activity.defn(name=CALL_TOOL_HERE_ACTIVITY)
    async def call_tool_here(self, round_input: CallToolInput) -> RoundResult:
        """Run the round if this worker serves its tool and contract; else refuse at once."""
        index = self.version_for(round_input.tool, round_input.contract_digest)
        if index is None:
            what = (
                f"contract {round_input.contract_digest[:12]} of tool {round_input.tool!r}"
                if round_input.contract_digest is not None
                else f"tool {round_input.tool!r}"
            )
            raise ApplicationError(
                f"this worker does not serve {what}; the round goes to its own queue",
                type=NOT_SERVED_HERE,
                non_retryable=True,
                category=ApplicationErrorCategory.BENIGN,
            )
        return await self._activities[index].call_tool(round_input)


class PinnedRounds:
    """The round activity of this process's own queue (``wire.process_queue``): the rounds
    whose tool pinned them here (``RoundContext.pin_next_round``), in the version whose
    contract asked."""

    def __init__(self, here: RoundsHere, releases: Releases) -> None:
        self._here = here
        self._releases = releases

    @activity.defn(name=CALL_TOOL_ACTIVITY)
    async def call_tool(self, round_input: CallToolInput) -> RoundResult:
        if self._here.version_for(round_input.tool, round_input.contract_digest) is None:
            return RoundErrored(
                message=f"the contract of tool {round_input.tool!r} that pinned this round to"
                " this worker process is not served by it"
            )
        return await self._here.call_tool_here(round_input)

    @activity.defn(name=RELEASE_ROUND_ACTIVITY)
    async def release(self, released: ReleaseInput) -> bool:
        """Let the tool go of a question its call will never answer (False: nothing held)."""
        return self._releases.release(released.call_id, released.round, released.reason)


class ToolWorker:
    """The Temporal workers of one scope-tool worker, started and stopped together.

    ``async with`` starts them all and publishes the catalog; leaving withdraws the catalog
    first (so listings drop it at once), then shuts every worker down in parallel, letting
    running tools finish within the graceful-shutdown time.
    """

    def __init__(
        self,
        client: Client,
        workers: Sequence[Worker],
        *,
        task_queue: str,
        catalog: Sequence[CatalogTool],
        worker_id: str | None = None,
    ) -> None:
        self._client = client
        self._workers = tuple(workers)
        self._task_queue = task_queue
        self._catalog = tuple(catalog)
        self._stack: contextlib.AsyncExitStack | None = None
        self.worker_id = worker_id if worker_id is not None else new_worker_id()

    @property
    def workers(self) -> tuple[Worker, ...]:
        """The Temporal workers, the main queue's first."""
        return self._workers

    @property
    def queues(self) -> tuple[str, ...]:
        """Every task queue polled, the main one first."""
        return tuple(worker.task_queue for worker in self._workers)

    async def __aenter__(self) -> ToolWorker:
        stack = contextlib.AsyncExitStack()
        try:
            for worker in self._workers:
                await stack.enter_async_context(worker)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        await self._publish()
        await self._polled()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._withdraw()
        stack, self._stack = self._stack, None
        if stack is None:
            return
        # Every worker drains at the same time (an exit stack would stop them one by one).
        await asyncio.gather(*(worker.shutdown() for worker in self._workers))
        await stack.aclose()

    async def _publish(self) -> None:
        """Signal-with-start the catalog workflow; a failure is logged, never fatal."""
        try:
            await self._client.start_workflow(
                CATALOG_WORKFLOW_NAME,
                CatalogInput(task_queue=self._task_queue),
                id=catalog_workflow_id(self._task_queue),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                start_signal=PUBLISH,
                start_signal_args=[WorkerCatalog(worker_id=self.worker_id, tools=self._catalog)],
                static_summary=f"tools served on task queue {self._task_queue}",
                rpc_timeout=_CATALOG_RPC_TIMEOUT,
            )
        except Exception as err:  # the tools still run; only `scope-tool tools` misses them
            _log.warning("could not publish this worker's tool catalog: %s", err)

    async def _polled(self) -> None:
        """Wait until the server lists a poller on every tool queue (at most
        :data:`_POLLED_WITHIN`), so a worker that says it is ready is one ``serves`` sees.

        The Temporal workers poll from a task of their own; their first poll can reach the
        server a moment after ``async with`` returned. A server that cannot say (an RPC error,
        the time-skipping test server) ends the wait at once; a slow one only delays it.
        """
        queues = sorted({tool_queue(self._task_queue, tool.name) for tool in self._catalog})
        deadline = asyncio.get_running_loop().time() + _POLLED_WITHIN.total_seconds()
        while queues and asyncio.get_running_loop().time() < deadline:
            seen = await asyncio.gather(*(self._has_poller(queue) for queue in queues))
            if None in seen:
                return  # the server could not say
            queues = [queue for queue, polled in zip(queues, seen, strict=True) if not polled]
            if queues:
                await asyncio.sleep(0.02)

    async def _has_poller(self, queue: str) -> bool | None:
        try:
            response = await self._client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=self._client.namespace,
                    task_queue=TaskQueue(name=queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
                ),
                timeout=_CATALOG_RPC_TIMEOUT,
            )
        except RPCError:
            return None
        return bool(response.pollers)

    async def _withdraw(self) -> None:
        try:
            handle = self._client.get_workflow_handle(catalog_workflow_id(self._task_queue))
            await handle.signal(WITHDRAW, self.worker_id, rpc_timeout=_CATALOG_RPC_TIMEOUT)
        except Exception as err:
            _log.warning("could not withdraw this worker's tool catalog: %s", err)
