"""The engine side of every benchmark: scope-tool calls through the ``ToolCalls`` facade."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from bench_functions import approval_outcome, echo_text
from temporalio.client import Client
from worker_process import WorkerProcess

from scope_tool import Request
from scope_tool.client import Phase, ToolCallHandle, ToolCalls

__all__ = ["EngineParkedCall", "EngineSide"]

_TERMINAL = frozenset(Phase) - {Phase.RUNNING, Phase.AWAITING_INPUT}


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineParkedCall:
    """A started ``approve`` call and the text it was started with."""

    call_id: str
    text: str
    handle: ToolCallHandle


class EngineSide:
    """Drives the engine on its own task queue, served by one ``python -m scope_tool.workers`` process."""

    name = "engine"

    def __init__(
        self, *, calls: ToolCalls, client: Client, task_queue: str, worker: WorkerProcess
    ) -> None:
        self.calls = calls
        self.client = client
        self.task_queue = task_queue
        self.worker = worker

    @classmethod
    async def create(
        cls, *, client: Client, address: str, namespace: str, task_queue: str, log_dir: Path
    ) -> EngineSide:
        """A side whose worker is not started yet; the facade connects with its own converter."""
        worker = WorkerProcess.python_module(
            "scope_tool.workers",
            "--tools",
            "bench_tools:registry",
            "--address",
            address,
            "--namespace",
            namespace,
            "--task-queue",
            task_queue,
            name=f"engine-{task_queue}",
            log_dir=log_dir,
        )
        calls = await ToolCalls.connect(address, namespace=namespace, task_queue=task_queue)
        return cls(calls=calls, client=client, task_queue=task_queue, worker=worker)

    async def echo(self, call_id: str, text: str) -> None:
        """One completing call, start to result; raises unless it COMPLETED with the echo."""
        handle = await self.calls.start(
            Request(name="echo", arguments=json.dumps({"text": text})), call_id=call_id
        )
        outcome = await handle.result()
        if outcome.phase != Phase.COMPLETED or outcome.output.text() != echo_text(text):
            raise AssertionError(f"engine echo {call_id}: expected {text!r}, got {outcome!r}")

    async def park(self, call_id: str, text: str) -> EngineParkedCall:
        """Start a call that asks for input; returns once the server accepted the start."""
        handle = await self.calls.start(
            Request(name="approve", arguments=json.dumps({"text": text})), call_id=call_id
        )
        return EngineParkedCall(call_id=call_id, text=text, handle=handle)

    async def wait_parked(self, parked: EngineParkedCall) -> None:
        """Poll the status query until the call is AWAITING_INPUT; raise if it ended instead."""
        while True:
            status = await parked.handle.status()
            if status.phase == Phase.AWAITING_INPUT:
                return
            if status.phase in _TERMINAL:
                raise AssertionError(f"engine approve {parked.call_id} ended early: {status!r}")
            await asyncio.sleep(0.005)

    async def answer_and_finish(self, parked: EngineParkedCall, *, approved: bool) -> None:
        """Answer the pending request and wait for the outcome; raises if it is wrong."""
        await parked.handle.answer(approved)
        outcome = await parked.handle.result()
        expected = approval_outcome(parked.text, approved=approved)
        if outcome.phase != Phase.COMPLETED or outcome.output.text() != expected:
            raise AssertionError(
                f"engine approve {parked.call_id}: expected {expected!r}, got {outcome!r}"
            )

    async def count_in_phase(self, phase: Phase) -> int:
        """How many calls on this side's task queue the visibility store shows in ``phase``."""
        count = await self.client.count_workflows(
            f"TaskQueue = '{self.task_queue}' AND ScopeToolPhase = '{phase.value}'"
        )
        return count.count
