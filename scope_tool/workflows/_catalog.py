"""``scope_tool.Catalog``: which tools the workers of one task queue serve.

Each worker process signals its catalog (``publish``: tool definitions and contract digests) to
the one catalog workflow of its task queue at startup, starting it if needed
(signal-with-start), and withdraws it (``withdraw``) when it stops. ``ToolCalls.tools()`` reads
its memo ``catalog`` (kept equal to the state on every change, so listing needs a describe, not
a worker to answer a query; the ``catalog`` query gives the same) and keeps only tools whose
queues have live pollers, so a worker killed without withdrawing drops out of the listing once
the server forgets its pollers.

The workflow only holds state: it waits until its history grows and continues as new with the
catalog as its input. Deterministic like ``ToolCallWorkflow``, and unsandboxed for the same
reason (see ``scope_tool.workers.workflow_runner``).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from scope_tool.wire import (
        CATALOG,
        CATALOG_MEMO,
        CATALOG_WORKFLOW_NAME,
        PUBLISH,
        WITHDRAW,
        CatalogInput,
        WorkerCatalog,
    )

__all__ = ["CatalogWorkflow"]

_MAX_WORKERS = 500
"""Catalogs kept; the oldest published go first (a killed worker never withdraws its own)."""

_HISTORY_EVENTS = 2000
"""Continue as new past this many events (each publish or withdraw is a few)."""


@workflow.defn(name=CATALOG_WORKFLOW_NAME, sandboxed=False)
class CatalogWorkflow:
    """Holds the catalogs of the worker processes of one task queue, newest last."""

    @workflow.init
    def __init__(self, state: CatalogInput) -> None:
        self._task_queue = state.task_queue
        self._workers: dict[str, WorkerCatalog] = {each.worker_id: each for each in state.workers}

    @workflow.run
    async def run(self, state: CatalogInput) -> None:
        """Wait for the history to grow, then carry the catalog into a fresh run."""
        await workflow.wait_condition(
            lambda: (
                workflow.info().is_continue_as_new_suggested()
                or workflow.info().get_current_history_length() > _HISTORY_EVENTS
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self.catalog(), memo={CATALOG_MEMO: self.catalog()})

    @workflow.signal(name=PUBLISH)
    def publish(self, catalog: WorkerCatalog) -> None:
        """Record (or replace) one worker's catalog, stamped with the workflow's time."""
        self._workers.pop(catalog.worker_id, None)
        self._workers[catalog.worker_id] = WorkerCatalog(
            worker_id=catalog.worker_id, tools=catalog.tools, published_at=workflow.now()
        )
        while len(self._workers) > _MAX_WORKERS:
            del self._workers[next(iter(self._workers))]
        workflow.upsert_memo({CATALOG_MEMO: self.catalog()})

    @workflow.signal(name=WITHDRAW)
    def withdraw(self, worker_id: str) -> None:
        """Forget a stopping worker's catalog."""
        if self._workers.pop(worker_id, None) is not None:
            workflow.upsert_memo({CATALOG_MEMO: self.catalog()})

    @workflow.query(name=CATALOG)
    def catalog(self) -> CatalogInput:
        """Every worker catalog held, oldest published first."""
        return CatalogInput(task_queue=self._task_queue, workers=tuple(self._workers.values()))
