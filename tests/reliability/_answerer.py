"""The answering side of the load scenarios, run as its own process.

``python -m reliability._answerer --address A --task-queue Q --keys-file F`` reads call ids
(one per line), waits for each call to ask, answers it through the client facade, and prints
one JSON report on its last stdout line. It is a separate process on purpose: answers must
reach the right call through Temporal alone, not through shared memory with the starter.

It keeps going through outages: while the dev server is SIGKILLed and restarted, RPCs fail
and are retried with backoff. An answer whose reply was lost in the outage is sent again
with the same request id; the engine must then accept it once and report the repeat as a
duplicate, which the report counts.
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

from workflows import Phase, ToolCalls
from workflows.errors import AnswerRejectedError

_MAX_BACKOFF = 2.0


async def _answer_one(
    calls: ToolCalls,
    call_id: str,
    *,
    deadline: float,
    tally: Counter[str],
    latencies: list[float],
) -> None:
    handle = calls.get(call_id)
    backoff = 0.05
    answered_round = 0
    while time.monotonic() < deadline:
        try:
            status = await handle.status()
        except Exception:  # transport errors while the server restarts: retry
            tally["status_errors"] += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)
            continue
        if status.phase.is_terminal:
            tally[f"seen_{status.phase.value.lower()}"] += 1
            return
        pending = status.pending
        if status.phase is not Phase.AWAITING_INPUT or pending is None:
            await asyncio.sleep(backoff)
            backoff = min(backoff * 1.5, _MAX_BACKOFF)
            continue
        if status.round <= answered_round:
            # our answer to this round was accepted; the call has not moved on yet
            await asyncio.sleep(backoff)
            continue
        asked_at = time.monotonic()
        try:
            receipt = await handle.answer(
                {"approve": True, "key": call_id},
                request_id=pending.request_id,
                answered_by=f"answerer-{os.getpid()}",
            )
        except AnswerRejectedError as error:
            tally["rejected"] += 1
            tally[f"rejected_{error.reason}"] += 1
            await asyncio.sleep(backoff)
            continue
        except Exception:
            tally["answer_errors"] += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)
            continue
        latencies.append(time.monotonic() - asked_at)
        answered_round = status.round
        tally["answered"] += 1
        if getattr(receipt, "duplicate", False):
            tally["duplicate_receipts"] += 1
        backoff = 0.05
    tally["timed_out"] += 1


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
    tally: Counter[str] = Counter()
    latencies: list[float] = []
    gate = asyncio.Semaphore(arguments.concurrency)

    async def guarded(call_id: str) -> None:
        async with gate:
            await _answer_one(calls, call_id, deadline=deadline, tally=tally, latencies=latencies)

    await asyncio.gather(*(guarded(key) for key in keys))
    latencies.sort()
    return {
        "keys": len(keys),
        "seconds": round(time.monotonic() - started, 3),
        "answer_p50_ms": round(1000 * latencies[len(latencies) // 2], 1) if latencies else None,
        "answer_p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 1)
        if latencies
        else None,
        **dict(tally),
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
