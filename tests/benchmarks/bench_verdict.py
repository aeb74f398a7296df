"""How long a costly answer waits for its verdict, end to end, against a real server (#17 item 1).

The issue's answer: ``[1.23, ...]`` just under ``MAX_INPUT_BYTES`` against an
``items``/``anyOf``/``multipleOf`` schema (``DECIMALS_SCHEMA``), too costly to check in workflow
code, so the update's handler checks it in the ``scope_tool.check_answer`` activity. Timed:
``ToolCallHandle.answer`` from the client call to the receipt (accepted) or the
``AnswerRejectedError`` (refused, reason ``schema``), on a call already waiting.

Baseline, same server, same run: ``bare.Verdict``, a bare workflow whose update handler checks
the same text in one activity with a check written by hand for this one schema (exact decimals,
no I-JSON strictness, no generic engine). Engine and baseline alternate, one answer at a time,
after a warm-up; each figure is the median of ``SCOPE_TOOL_BENCH_VERDICT_RUNS`` answers
(default 5). The goal is the issue's: a verdict within 2 s.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from dataclasses import dataclass

from bare_workflows import BareVerdictWorkflow
from bench_functions import decimals_answer
from temporalio.client import Client, WorkflowUpdateFailedError

from scope_tool import Request
from scope_tool.client import AnswerRejectedError, Phase, ToolCalls

__all__ = ["GOAL_SECONDS", "VerdictTimes", "measure_verdicts", "runs_from_environment"]

GOAL_SECONDS = 2.0
WARM_UP = 1
_TERMINAL = frozenset(Phase) - {Phase.RUNNING, Phase.AWAITING_INPUT}


def runs_from_environment() -> int:
    raw = os.environ.get("SCOPE_TOOL_BENCH_VERDICT_RUNS", "5")
    runs = int(raw)
    if runs < 1:
        raise ValueError(f"SCOPE_TOOL_BENCH_VERDICT_RUNS must be at least 1, got {raw!r}")
    return runs


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictTimes:
    """Seconds to a verdict for each answer, by side (engine, baseline) and verdict."""

    engine_accept: list[float]
    engine_refuse: list[float]
    baseline_accept: list[float]
    baseline_refuse: list[float]


async def engine_verdict(calls: ToolCalls, *, refused: bool) -> float:
    """Seconds from ``answer`` to its verdict on a waiting ``ask_decimals`` call."""
    handle = await calls.start(Request(name="ask_decimals", arguments="{}"), call_id=_id("engine"))
    while (status := await handle.status()).phase is not Phase.AWAITING_INPUT:
        if status.phase in _TERMINAL:
            raise AssertionError(f"ask_decimals {handle.call_id} ended early: {status!r}")
        await asyncio.sleep(0.01)
    answer = decimals_answer(refused=refused)
    started = time.perf_counter()
    try:
        receipt = await handle.answer(answer)
    except AnswerRejectedError as error:
        elapsed = time.perf_counter() - started
        if not refused or error.reason != "schema" or "1.234" not in error.detail.problem:
            raise
        await handle.cancel()
    else:
        elapsed = time.perf_counter() - started
        if refused or receipt.duplicate:
            raise AssertionError(f"{handle.call_id}: accepted {receipt!r}")
    # The call finishes (round 2, or the cancellation) before the next answer is timed.
    outcome = await handle.result()
    expected = Phase.CANCELLED if refused else Phase.COMPLETED
    if outcome.phase is not expected:
        raise AssertionError(f"{handle.call_id}: {outcome!r}")
    return elapsed


async def baseline_verdict(client: Client, task_queue: str, *, refused: bool) -> float:
    """The same for ``bare.Verdict``: update to its result (or its failure)."""
    handle = await client.start_workflow(
        BareVerdictWorkflow.run, id=_id("bare"), task_queue=task_queue
    )
    # A query is the only way to see inside a bare workflow; polling it is the point.
    while True:
        if await handle.query(BareVerdictWorkflow.waiting):
            break
        await asyncio.sleep(0.01)
    answer = decimals_answer(refused=refused).decode("utf-8")
    started = time.perf_counter()
    try:
        await handle.execute_update(BareVerdictWorkflow.answer, answer)
    except WorkflowUpdateFailedError as error:
        elapsed = time.perf_counter() - started
        if not refused or "1.234" not in str(error.cause):
            raise
        await handle.terminate("refused answer timed")
        return elapsed
    elapsed = time.perf_counter() - started
    if refused:
        raise AssertionError(f"bare.Verdict {handle.id} accepted the refused answer")
    if await handle.result() != len(answer):
        raise AssertionError(f"bare.Verdict {handle.id}: wrong result")
    return elapsed


async def measure_verdicts(
    calls: ToolCalls, client: Client, bare_queue: str, *, runs: int
) -> VerdictTimes:
    """Alternate engine and baseline, accepted then refused, ``runs`` times after a warm-up."""
    times = VerdictTimes(engine_accept=[], engine_refuse=[], baseline_accept=[], baseline_refuse=[])
    for iteration in range(WARM_UP + runs):
        measured = iteration >= WARM_UP
        for refused in (False, True):
            engine = await engine_verdict(calls, refused=refused)
            bare = await baseline_verdict(client, bare_queue, refused=refused)
            if measured:
                (times.engine_refuse if refused else times.engine_accept).append(engine)
                (times.baseline_refuse if refused else times.baseline_accept).append(bare)
    return times


def report(times: VerdictTimes) -> str:
    lines = [f"{'verdict':<8} {'engine s (median/max)':>22} {'baseline s':>16} {'ratio':>6}"]
    for name, engine, bare in (
        ("accept", times.engine_accept, times.baseline_accept),
        ("refuse", times.engine_refuse, times.baseline_refuse),
    ):
        lines.append(
            f"{name:<8} {statistics.median(engine):>13.3f} / {max(engine):.3f}"
            f" {statistics.median(bare):>8.3f} / {max(bare):.3f}"
            f" {statistics.median(engine) / statistics.median(bare):>5.1f}x"
        )
    return "\n".join(lines)


def _id(side: str) -> str:
    return f"verdict-{side}-{uuid.uuid4().hex}"
