"""Benchmark 4: many calls parked waiting for a person at once, then all answered.

``SCOPE_TOOL_BENCH_PARKED`` calls (default 10,000) are started on each side and left waiting. The
worker process's resident memory (VmRSS from ``/proc/PID/status``) is sampled as the parked count
grows: it should be bounded by the worker's workflow cache (``max_cached_workflows``), not by the
number of calls, and stay under 300 MiB. Then every call is answered (100 answers in flight);
every result is checked against the text its call was started with, so a lost or crossed answer
fails the benchmark. Baseline first, engine second, each with a fresh worker process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from bare_side import BareSide
from bench_report import Figure, GoalKind
from bench_runs import CallSide, CpuUse, cpu_use, run_lanes, run_token
from engine_side import EngineSide
from worker_process import ProcessMemory, WorkerProcess

from scope_tool.client import Phase

START_CONCURRENCY = 50
ANSWER_CONCURRENCY = 100
MEMORY_GOAL_MIB = 300.0
CHECKPOINTS = (0.25, 0.5, 0.75, 1.0)
_ENDED_EARLY = ", ".join(
    f"'{phase.value}'"
    for phase in Phase
    if phase.is_terminal and phase is not Phase.COMPLETED  # the warm-up call completes
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedRun:
    """What one side did with N parked calls."""

    idle: ProcessMemory
    at_checkpoints: tuple[float, ...]  # RSS MiB when 25/50/75/100 % were parked
    all_parked: ProcessMemory
    peak_rss_mib: float  # highest sampled RSS over parking and resuming
    park_rate: float  # calls/s from the first start to all waiting
    resume_rate: float  # calls/s from the first answer to the last checked result
    cpu: CpuUse  # over parking and resuming


class _MemoryWatch:
    """Samples a worker's RSS every half second and keeps the highest value."""

    def __init__(self, worker: WorkerProcess) -> None:
        self._worker = worker
        self.peak_rss_bytes = 0

    async def run(self) -> None:
        while True:
            self.peak_rss_bytes = max(self.peak_rss_bytes, self._worker.memory().rss_bytes)
            await asyncio.sleep(0.5)


async def _park_and_resume(
    side: CallSide,
    *,
    count: int,
    token: str,
    count_parked: Callable[[], Awaitable[int]],
    server_pid: int,
) -> ParkedRun:
    worker = side.worker
    await worker.watch(side.echo(f"parked-warm-up-{token}-{side.name}", "warm up"), within=120)
    idle = worker.memory()
    watch = _MemoryWatch(worker)
    sampler = asyncio.create_task(watch.run())
    parked_calls: list[object] = [None] * count
    checkpoint_rss: list[float] = []

    async def start_one(index: int) -> None:
        parked_calls[index] = await side.park(
            f"parked-{token}-{side.name}-{index}", f"request {index}"
        )

    async def until_all_parked() -> None:
        while True:
            parked = await count_parked()
            while (
                len(checkpoint_rss) < len(CHECKPOINTS)
                and parked >= CHECKPOINTS[len(checkpoint_rss)] * count
            ):
                checkpoint_rss.append(worker.memory().rss_mib)
            if parked >= count:
                return
            await asyncio.sleep(0.5)

    budget = 300 + count / 10
    cpu_before = cpu_use(worker=worker, server_pid=server_pid)
    started = time.perf_counter()
    waiting = asyncio.create_task(until_all_parked())
    try:
        await worker.watch(
            run_lanes(count, concurrency=START_CONCURRENCY, operation=start_one), within=budget
        )
        await worker.watch(waiting, within=budget)
        park_rate = count / (time.perf_counter() - started)
        await asyncio.sleep(2)  # let the last activations settle before the headline sample
        all_parked = worker.memory()

        failures: list[str] = []

        async def answer_one(index: int) -> None:
            try:
                await side.answer_and_finish(parked_calls[index], approved=index % 2 == 0)
            except Exception as error:
                failures.append(f"call {index}: {error!r}")

        resume_elapsed = await worker.watch(
            run_lanes(count, concurrency=ANSWER_CONCURRENCY, operation=answer_one), within=budget
        )
        assert not failures, (
            f"{len(failures)} of {count} {side.name} calls lost or wrong: {failures[:5]}"
        )
        cpu = cpu_use(worker=worker, server_pid=server_pid) - cpu_before
    finally:
        sampler.cancel()
        waiting.cancel()
    return ParkedRun(
        idle=idle,
        at_checkpoints=tuple(checkpoint_rss),
        all_parked=all_parked,
        peak_rss_mib=max(watch.peak_rss_bytes, all_parked.rss_bytes) / (1 << 20),
        park_rate=park_rate,
        resume_rate=count / resume_elapsed,
        cpu=cpu,
    )


@pytest.mark.timeout(7200)
async def test_parked_calls_at_scale(bench_server, bench_settings, bench_report, check_goal):
    count = bench_settings.parked_calls
    token = run_token()
    bare = BareSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"parked-bare-{token}",
        log_dir=bench_server.log_dir,
        ask_first=True,
    )
    engine = await EngineSide.create(
        client=bench_server.client,
        address=bench_server.address,
        namespace=bench_server.namespace,
        task_queue=f"parked-engine-{token}",
        log_dir=bench_server.log_dir,
    )

    async def engine_parked() -> int:
        # A call that ended before its question (a round that could not report back to an
        # overloaded server ends ERRORED "outcome unknown") never parks: say so now, instead
        # of waiting out the budget for a count that cannot be reached.
        ended = await engine.client.count_workflows(
            f"TaskQueue = '{engine.task_queue}' AND ScopeToolPhase IN ({_ENDED_EARLY})"
        )
        assert ended.count == 0, (
            f"{ended.count} engine calls ended before they were answered (see their outcome"
            " in the Web UI); on an overloaded server a round 1 that cannot report back in its"
            " heartbeat timeout ends ERRORED 'outcome unknown'. Use fewer calls"
            " (SCOPE_TOOL_BENCH_PARKED) on this machine."
        )
        return await engine.count_in_phase(Phase.AWAITING_INPUT)

    runs: dict[str, ParkedRun] = {}
    for side, count_parked in ((bare, bare.count_waiting), (engine, engine_parked)):
        await side.worker.start()
        try:
            runs[side.name] = await _park_and_resume(
                side,
                count=count,
                token=token,
                count_parked=count_parked,
                server_pid=bench_server.pid,
            )
        finally:
            await side.worker.stop()

    # Visibility agrees with the client: every engine call ended COMPLETED, none is still waiting.
    deadline = time.monotonic() + 60
    while (completed := await engine.count_in_phase(Phase.COMPLETED)) < count + 1:
        assert time.monotonic() < deadline, f"visibility shows {completed} of {count + 1} completed"
        await asyncio.sleep(0.5)
    assert await engine.count_in_phase(Phase.AWAITING_INPUT) == 0

    engine_run, bare_run = runs["engine"], runs["baseline"]
    checkpoints = {
        name: "/".join(f"{value:.0f}" for value in run.at_checkpoints) for name, run in runs.items()
    }
    figures = (
        Figure(
            benchmark=f"4 parked x{count}",
            metric="worker RSS, all waiting",
            unit="MiB",
            engine=engine_run.all_parked.rss_mib,
            baseline=bare_run.all_parked.rss_mib,
            goal=GoalKind.ENGINE_AT_MOST,
            bound=MEMORY_GOAL_MIB,
            note=(
                f"idle {engine_run.idle.rss_mib:.0f} vs {bare_run.idle.rss_mib:.0f} MiB; "
                f"RSS at 25/50/75/100% parked: engine {checkpoints['engine']}, "
                f"baseline {checkpoints['baseline']} MiB"
            ),
        ),
        Figure(
            benchmark=f"4 parked x{count}",
            metric="worker peak RSS",
            unit="MiB",
            engine=engine_run.peak_rss_mib,
            baseline=bare_run.peak_rss_mib,
            note="highest 0.5 s sample over parking and resuming",
        ),
        Figure(
            benchmark=f"4 parked x{count}",
            metric="park rate (start->waiting)",
            unit="/s",
            engine=engine_run.park_rate,
            baseline=bare_run.park_rate,
            note=f"{START_CONCURRENCY} starts in flight",
        ),
        Figure(
            benchmark=f"4 parked x{count}",
            metric="resume rate (answer->result)",
            unit="/s",
            engine=engine_run.resume_rate,
            baseline=bare_run.resume_rate,
            note=f"{ANSWER_CONCURRENCY} answers in flight; every result checked",
        ),
        Figure(
            benchmark=f"4 parked x{count}",
            metric="CPU per call (all processes)",
            unit="ms",
            engine=1000 * engine_run.cpu.total / count,
            baseline=1000 * bare_run.cpu.total / count,
            note=(
                "client/worker/server ms: engine "
                + "/".join(f"{1000 * value / count:.1f}" for value in _parts(engine_run.cpu))
                + ", baseline "
                + "/".join(f"{1000 * value / count:.1f}" for value in _parts(bare_run.cpu))
            ),
        ),
    )
    for figure in figures:
        bench_report.record(figure)
    for figure in figures:
        check_goal(figure)


def _parts(cpu: CpuUse) -> tuple[float, float, float]:
    return (cpu.client, cpu.worker, cpu.server)
