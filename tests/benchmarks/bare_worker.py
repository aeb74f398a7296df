"""The baseline's worker process: ``python -m bare_worker --address HOST:PORT --task-queue Q``.

It is the twin of ``python -m scope_tool.workers``: one process, one ``temporalio.worker.Worker`` with every
option at its default, so the engine's worker and the baseline's are measured the same way (wall
clock from the client, resident memory from ``/proc/PID/status``).

``--progress-file`` makes it write, a few times a second, how many distinct workflows have got
the result of their ``bare.ask`` activity, i.e. are waiting for the answer. The parked-calls
benchmark needs to know when all baseline workflows wait, and a bare workflow (unlike an engine
call) publishes no search attribute saying so. The count comes from a workflow interceptor and
costs one set insertion per asking workflow.
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
    BareVerdictWorkflow,
    ask_activity,
    check_decimals_activity,
    echo_activity,
    finish_approval_activity,
)
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import (
    Interceptor,
    StartActivityInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

# Lives outside the workflow sandbox: the interceptor class is defined here, so its methods see
# this module's globals even when instantiated inside the sandbox.
_waiting_workflow_ids: set[str] = set()


class _AskResolvedOutbound(WorkflowOutboundInterceptor):
    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        handle = super().start_activity(input)
        if input.activity == "bare.ask":
            workflow_id = workflow.info().workflow_id
            # Resolved inside the activation that hands the workflow the question, right
            # before it reaches its wait for the answer.
            handle.add_done_callback(lambda _: _waiting_workflow_ids.add(workflow_id))
        return handle


class _AskResolvedInbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_AskResolvedOutbound(outbound))


class _CountWaitingWorkflows(Interceptor):
    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _AskResolvedInbound


async def _write_progress(path: Path) -> None:
    written = -1
    while True:
        count = len(_waiting_workflow_ids)
        if count != written:
            scratch = path.with_suffix(".tmp")
            scratch.write_text(str(count))
            os.replace(scratch, path)
            written = count
        await asyncio.sleep(0.2)


async def _serve(arguments: argparse.Namespace) -> None:
    client = await Client.connect(arguments.address, namespace=arguments.namespace)
    interceptors = [_CountWaitingWorkflows()] if arguments.progress_file else []
    worker = Worker(
        client,
        task_queue=arguments.task_queue,
        workflows=[BareEchoWorkflow, BareApprovalWorkflow, BareVerdictWorkflow],
        activities=[ask_activity, echo_activity, finish_approval_activity, check_decimals_activity],
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
