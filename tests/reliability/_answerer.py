"""The answering side of the load scenarios, run as its own process.

``python -m reliability._answerer --address A --task-queue Q --keys-file F`` reads call ids
(one per line), finds the calls that wait for input the way an operator's inbox does (the
``ScopeToolPhase`` search attribute, through ``ToolCalls.list``), answers each through the
client facade, and prints one JSON report on its last stdout line. It is a separate process on
purpose: answers must reach the right call through Temporal alone, not through shared memory
with the starter. It never polls a call's status query, so the workers only see real work.

Every answer names its question (``{call_id}/r1``), so it is idempotent. The answerer keeps
going through outages: while the dev server is SIGKILLed and restarted, RPCs fail and are
retried. An answer whose reply was lost in the outage is sent again with the same request id;
the engine must accept it once (the repeat is reported, not re-applied).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from scope_tool.client import Phase, ToolCalls
from scope_tool.wire.errors import AnswerRejectedError

_SCAN_INTERVAL = 0.3
_LIST_LIMIT = 5_000


class _Answerer:
    def __init__(self, calls: ToolCalls, keys: list[str], *, concurrency: int) -> None:
        self.calls = calls
        self.waiting_for = set(keys)
        self.in_flight: set[str] = set()
        self.tally: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.gate = asyncio.Semaphore(concurrency)
        self.tasks: set[asyncio.Task[None]] = set()

    async def answer(self, call_id: str) -> None:
        try:
            async with self.gate:
                started = time.monotonic()
                receipt = await self.calls.get(call_id).answer(
                    {"approve": True, "key": call_id},
                    request_id=f"{call_id}/r1",
                    answered_by=f"answerer-{os.getpid()}",
                )
            self.latencies.append(time.monotonic() - started)
            self.tally["answered"] += 1
            if receipt.duplicate:
                self.tally["duplicate_receipts"] += 1
            self.waiting_for.discard(call_id)
        except AnswerRejectedError as error:
            self.tally[f"rejected_{error.reason}"] += 1
            if error.reason == "finished":
                self.waiting_for.discard(call_id)
        except Exception as error:  # transport trouble during an outage: try again later
            self.tally[f"answer_error_{type(error).__name__}"] += 1
        finally:
            self.in_flight.discard(call_id)

    async def scan(self) -> None:
        """One pass: answer every listed waiting call, forget the calls that have ended."""
        try:
            waiting = await self.calls.list(
                phase=Phase.AWAITING_INPUT, tool="approve_write", limit=_LIST_LIMIT
            )
            ended = [
                execution.id
                async for execution in self.calls.client.list_workflows(
                    f"TaskQueue = '{self.calls.task_queue}' AND ExecutionStatus != 'Running'",
                    limit=_LIST_LIMIT,
                )
            ]
        except Exception as error:
            self.tally[f"list_error_{type(error).__name__}"] += 1
            return
        for call_id in ended:
            self.waiting_for.discard(call_id)
        for summary in waiting:
            call_id = summary.call_id
            if call_id in self.waiting_for and call_id not in self.in_flight:
                self.in_flight.add(call_id)
                task = asyncio.create_task(self.answer(call_id))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)


async def _main(arguments: argparse.Namespace, keys: list[str]) -> dict[str, object]:
    started = time.monotonic()
    deadline = started + arguments.deadline
    calls: ToolCalls | None = None
    while calls is None:
        try:
            calls = await ToolCalls.connect(arguments.address, task_queue=arguments.task_queue)
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
    answerer = _Answerer(calls, keys, concurrency=arguments.concurrency)
    while answerer.waiting_for and time.monotonic() < deadline:
        await answerer.scan()
        await asyncio.sleep(_SCAN_INTERVAL)
    if answerer.tasks:
        await asyncio.gather(*answerer.tasks)
    latencies = sorted(answerer.latencies)
    return {
        "keys": len(keys),
        "seconds": round(time.monotonic() - started, 3),
        "unanswered_open": len(answerer.waiting_for),
        "answer_p50_ms": round(1000 * latencies[len(latencies) // 2], 1) if latencies else None,
        "answer_p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 1)
        if latencies
        else None,
        **dict(answerer.tally),
    }


def main() -> None:
    """Parse flags, answer everything, print the JSON report, exit hard (sdk-python #300)."""
    parser = argparse.ArgumentParser(prog="reliability._answerer")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--keys-file", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--deadline", type=float, default=600.0)
    arguments = parser.parse_args()
    keys = [line for line in Path(arguments.keys_file).read_text().splitlines() if line]
    report = asyncio.run(_main(arguments, keys))
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
