"""Benchmark: what a quorum costs per vote, against a single answer, in the same run.

Both sides are the engine on the session's server with one in-process worker serving a gated
tool. Single answer: a call waiting for approval, timed from ``handle.answer`` to
``handle.result()``. Quorum: the same call with ``ApprovalPolicy(quorum=3)``, timed from the first
of three votes (by three voters, one after another) to ``handle.result()``; per vote is that time
divided by three. Sequential and alternating, after a warm-up; medians.
"""

from __future__ import annotations

import statistics
import uuid

import pytest
from bench_report import Figure, GoalKind
from bench_runs import run_token
from pydantic import BaseModel

from scope_tool import ApprovalPolicy, Func, Registry, Request
from scope_tool.client import Phase, ToolCalls
from scope_tool.testing import start_worker, wait_for_phase

WARM_UP = 5
VOTERS = ("alice", "bob", "carol")
APPROVE = {"decision": "approve"}


class PayInput(BaseModel):
    amount: int


def pay(value: PayInput) -> str:
    return f"paid {value.amount}"


REGISTRY = Registry(Func(pay, name="pay", description="Pay an amount.")).with_approval(
    names={"pay"}
)


async def _one(calls: ToolCalls, *, quorum: bool, iteration: int) -> float:
    import time

    policy = ApprovalPolicy(quorum=len(VOTERS), voters=VOTERS) if quorum else None
    handle = await calls.start(
        Request(name="pay", arguments=f'{{"amount": {iteration}}}'),
        call_id=f"bench-quorum-{uuid.uuid4().hex}",
        policy=policy,
    )
    await wait_for_phase(handle, Phase.AWAITING_INPUT, within=60)
    started = time.perf_counter()
    for voter in VOTERS if quorum else VOTERS[:1]:
        await handle.answer(APPROVE, answered_by=voter)
    outcome = await handle.result()
    elapsed = time.perf_counter() - started
    assert outcome.phase is Phase.COMPLETED
    return elapsed


@pytest.mark.timeout(1800)
async def test_quorum_cost_per_vote(bench_server, bench_settings, bench_report):
    calls = ToolCalls(bench_server.client, task_queue=f"bench-quorum-{run_token()}")
    measured = max(10, bench_settings.sequential_calls // 4)
    single: list[float] = []
    quorum: list[float] = []
    async with start_worker(bench_server.client, REGISTRY, task_queue=calls.task_queue):
        for iteration in range(WARM_UP + measured):
            first, second = (False, True) if iteration % 2 == 0 else (True, False)
            for is_quorum in (first, second):
                seconds = await _one(calls, quorum=is_quorum, iteration=iteration)
                if iteration >= WARM_UP:
                    (quorum if is_quorum else single).append(seconds)
    single_ms = statistics.median(single) * 1000
    quorum_ms = statistics.median(quorum) * 1000
    note = f"{measured} calls per side, after {WARM_UP} warm-up; quorum of {len(VOTERS)}"
    bench_report.record(
        Figure(
            benchmark="quorum",
            metric="per vote vs single answer (median)",
            unit="ms",
            engine=quorum_ms / len(VOTERS),
            baseline=single_ms,
            goal=GoalKind.NONE,
            note=note,
        )
    )
    bench_report.record(
        Figure(
            benchmark="quorum",
            metric=f"{len(VOTERS)} votes to result vs one answer (median)",
            unit="ms",
            engine=quorum_ms,
            baseline=single_ms,
            goal=GoalKind.NONE,
            note=note,
        )
    )
    print(
        f"\nquorum of {len(VOTERS)}: {quorum_ms:.1f} ms to result, {quorum_ms / len(VOTERS):.1f} ms"
        f" per vote; single answer {single_ms:.1f} ms;"
        f" per-vote ratio {quorum_ms / len(VOTERS) / single_ms:.2f}"
    )
