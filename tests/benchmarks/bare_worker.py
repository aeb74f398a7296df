"""The baseline's worker process: ``python -m bare_worker --address HOST:PORT --task-queue Q``.

It is the twin of ``python -m workers``: one process, one ``temporalio.worker.Worker`` with every
option at its default, so the engine's worker and the baseline's are measured the same way (wall
clock from the client, resident memory from ``/proc/PID/status``).

``--progress-file`` makes it write, a few times a second, how many distinct workflows it has
started executing. The parked-calls benchmark needs to know when all baseline workflows are
waiting, and a bare workflow (unlike an engine call) publishes no search attribute saying so.
The count comes from a workflow interceptor and costs one set insertion per activation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from bare_workflows import (
    BareApprovalWorkflow,
    BareEchoWorkflow,
    echo_activity,
    finish_approval_activity,
)
from temporalio.client import Client
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

# Lives outside the workflow sandbox: the interceptor class is defined here, so its methods see
# this module's globals even when instantiated inside the sandbox.
_started_workflow_ids: set[str] = set()


class _StartedWorkflowsInbound(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        from temporalio import workflow

        _started_workflow_ids.add(workflow.info().workflow_id)
        return await super().execute_workflow(input)


class _CountStartedWorkflows(Interceptor):
    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _StartedWorkflowsInbound


async def _write_progress(path: Path) -> None:
    written = -1
    while True:
        count = len(_started_workflow_ids)
        if count != written:
            scratch = path.with_suffix(".tmp")
            scratch.write_text(str(count))
            os.replace(scratch, path)
            written = count
        await asyncio.sleep(0.2)


async def _serve(arguments: argparse.Namespace) -> None:
    client = await Client.connect(arguments.address, namespace=arguments.namespace)
    interceptors = [_CountStartedWorkflows()] if arguments.progress_file else []
    worker = Worker(
        client,
        task_queue=arguments.task_queue,
        workflows=[BareEchoWorkflow, BareApprovalWorkflow],
        activities=[echo_activity, finish_approval_activity],
        interceptors=interceptors,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop.set)
    progress = (
        asyncio.create_task(_write_progress(Path(arguments.progress_file)))
        if arguments.progress_file
        else None
    )
    async with worker:
        await stop.wait()
    if progress is not None:
        progress.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(prog="bare_worker", description=__doc__)
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--progress-file", default=None)
    asyncio.run(_serve(parser.parse_args()))


if __name__ == "__main__":
    main()
