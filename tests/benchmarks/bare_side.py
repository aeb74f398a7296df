"""The baseline side of every benchmark: bare Temporal workflows driven by a plain client."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from pathlib import Path

from bare_workflows import ApprovalCall, BareApprovalWorkflow, BareEchoWorkflow
from bench_functions import approval_outcome, echo_text
from temporalio.client import Client, WorkflowHandle
from worker_process import WorkerProcess

from scope_tool.client._busy import retry_while_busy

__all__ = ["BareParkedCall", "BareSide"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BareParkedCall:
    """A started ``bare.Approval`` workflow and the text it was started with."""

    call_id: str
    text: str
    handle: WorkflowHandle[BareApprovalWorkflow, str]


class BareSide:
    """Drives ``bare_workflows`` on its own task queue, served by one ``bare_worker`` process."""

    def __init__(
        self,
        *,
        client: Client,
        task_queue: str,
        worker: WorkerProcess,
        progress_file: Path | None,
        ask_first: bool = False,
        keep_phase: bool = False,
    ) -> None:
        self.client = client
        self._ask_first = ask_first
        self._keep_phase = keep_phase
        self.task_queue = task_queue
        self.worker = worker
        self._progress_file = progress_file

    @property
    def name(self) -> str:
        """How the figures label this side."""
        return "baseline+phase" if self._keep_phase else "baseline"

    @classmethod
    def create(
        cls,
        *,
        client: Client,
        address: str,
        namespace: str,
        task_queue: str,
        log_dir: Path,
        ask_first: bool = False,
    ) -> BareSide:
        """A side whose worker is not started yet.

        ``ask_first`` makes each approval run a ``bare.ask`` activity before it waits (the twin
        of the engine's first round) and adds the worker's waiting-workflows counter; only the
        parked-calls benchmark uses it, so the timed benchmarks run without any interceptor.
        """
        progress_file = log_dir / f"{task_queue}.progress" if ask_first else None
        progress_arguments = ("--progress-file", str(progress_file)) if progress_file else ()
        worker = WorkerProcess.python_module(
            "bare_worker",
            "--address",
            address,
            "--namespace",
            namespace,
            "--task-queue",
            task_queue,
            *progress_arguments,
            name=f"bare-{task_queue}",
            log_dir=log_dir,
        )
        return cls(
            client=client,
            task_queue=task_queue,
            worker=worker,
            progress_file=progress_file,
            ask_first=ask_first,
        )

    def keeping_phase(self) -> BareSide:
        """The same worker and queue, its approvals keeping ``ScopeToolPhase`` as the engine does."""
        twin = copy.copy(self)
        twin._keep_phase = True
        return twin

    async def echo(self, call_id: str, text: str) -> None:
        """One completing call, start to result; raises if the result is not the echo."""
        result = await self.client.execute_workflow(
            BareEchoWorkflow.run, text, id=call_id, task_queue=self.task_queue
        )
        if result != echo_text(text):
            raise AssertionError(f"bare.Echo {call_id}: expected {text!r}, got {result!r}")

    async def park(self, call_id: str, text: str) -> BareParkedCall:
        """Start a call that waits for an answer; returns once the server accepted the start."""
        handle = await self.client.start_workflow(
            BareApprovalWorkflow.run,
            ApprovalCall(text=text, ask_first=self._ask_first, keep_phase=self._keep_phase),
            id=call_id,
            task_queue=self.task_queue,
        )
        return BareParkedCall(call_id=call_id, text=text, handle=handle)

    async def wait_parked(self, parked: BareParkedCall) -> None:
        """Poll until the workflow's first task ran and it is waiting for the answer."""
        # A query is the only way to see inside a bare workflow; polling it is the point.
        while True:
            if await parked.handle.query(BareApprovalWorkflow.waiting):
                return
            await asyncio.sleep(0.005)

    async def answer_and_finish(self, parked: BareParkedCall, *, approved: bool) -> None:
        """Answer by update and wait for the result; raises if the result is wrong.

        Like the engine, the update has an id and is retried while the server turns it away
        for load (``scope_tool.client._busy``): on a server overloaded by 10,000 parked calls a
        workflow task times out now and then, and neither side should fail for that alone.
        """

        async def send() -> None:
            await parked.handle.execute_update(
                BareApprovalWorkflow.answer, approved, id=f"answer:{parked.call_id}"
            )

        await retry_while_busy(send)
        result = await parked.handle.result()
        expected = approval_outcome(parked.text, approved=approved)
        if result != expected:
            raise AssertionError(
                f"bare.Approval {parked.call_id}: expected {expected!r}, got {result!r}"
            )

    async def count_waiting(self) -> int:
        """How many approvals got their question and wait for an answer (the progress file)."""
        if self._progress_file is None:
            raise RuntimeError("this baseline worker writes no progress file")
        try:
            return int(self._progress_file.read_text() or 0)
        except FileNotFoundError:
            return 0
